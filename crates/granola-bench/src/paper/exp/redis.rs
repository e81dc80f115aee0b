//! `redis`: Cornflakes Table 3 and issue 4's Redis targets.
//!
//! granola-kv's RESP port against a real redis-server, both driven by the
//! same client (ours), pipelined: a closed loop with 8 connections × 16
//! requests outstanding. Cases: `get` (one 4 KiB value), `mget-2` (two
//! keys of 2 KiB), `lrange-2` (a 2-element list of 2 KiB), YCSB keys with
//! Zipf 0.99; and issue 4's 20 B GET (20 B keys) at pipeline 1 and 16.
//! Reported: median highest throughput over the repetitions, p99 at it,
//! the ratio to Redis, and server CPU per request.
//!
//! The paper ran Redis over its DPDK UDP stack with Cornflakes inside
//! Redis; here both are unmodified servers over loopback TCP.

use serde_json::json;

use crate::load::{LoadConfig, Mode, Protocol};

use super::super::measure::{self, summarize, Method, Summary};
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::{Kind, ServerSpec};
use super::super::Settings;
use super::{
    bound_notes, disturbed_notes, error_notes, interleave, memory_mb, start_and_load, workload,
    System,
};

/// Published: Table 3, Gbps at the highest throughput.
const PAPER: [(&str, f64, f64); 3] = [
    ("get", 23.37, 18.49),
    ("mget-2", 14.12, 12.27),
    ("lrange-2", 15.07, 10.75),
];

struct Case {
    name: &'static str,
    spec: String,
    /// (row label, pipeline depth, payload bytes per op, issue-4 target ratio)
    runs: Vec<(&'static str, u32, u64, Option<f64>)>,
    items: u64,
    bytes: u64,
}

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc(
        "redis",
        "Redis commands (Cornflakes Table 3, issue 4): granola-kv RESP vs redis-server",
    );
    let keys = s.keys_or(100_000, 10_000);
    let cases = vec![
        Case {
            name: "get",
            spec: format!("ycsb:keys={keys},value=4096"),
            runs: vec![("get 4 KiB", 16, 4096, Some(1.3))],
            items: keys,
            bytes: 4096,
        },
        Case {
            name: "mget-2",
            spec: format!("ycsb:keys={keys},value=4096,shape=multi:2"),
            runs: vec![("mget-2 (2 × 2 KiB)", 16, 4096, Some(1.4))],
            items: keys,
            bytes: 2048,
        },
        Case {
            name: "lrange-2",
            spec: format!("ycsb:keys={keys},value=4096,shape=list:2"),
            runs: vec![("lrange-2 (2 × 2 KiB)", 16, 4096, Some(1.4))],
            items: keys,
            bytes: 4096,
        },
        Case {
            name: "get-20B",
            spec: format!("ycsb:keys={keys},value=20,key_len=20"),
            runs: vec![
                ("get 20 B, pipeline 1", 1, 20, None),
                ("get 20 B, pipeline 16", 16, 20, Some(1.2)),
            ],
            items: keys,
            bytes: 20,
        },
    ];
    let redis_missing = s.peer_missing(Kind::Redis);
    if let Some(why) = &redis_missing {
        eprintln!("skipped: {why}; measuring granola-kv alone");
        doc.notes.push(format!("skipped Redis: {why}"));
    }
    let mut table = Table::new(&[
        "case",
        "granola-kv ops/s",
        "p99 µs",
        "Redis ops/s",
        "p99 µs",
        "ratio",
        "target",
        "paper ratio",
        "granola Gbit/s",
        "Redis Gbit/s",
        "granola CPU µs/req",
        "Redis CPU µs/req",
        "CPU/req Redis ÷ granola",
    ]);
    let mut summaries: Vec<Summary> = Vec::new();
    let mut bars_cat = Vec::new();
    let mut bars_g = Vec::new();
    let mut bars_r = Vec::new();
    for case in &cases {
        if !s.want(case.name) {
            continue;
        }
        s.say(&format!("-- {} ({})", case.name, case.spec));
        let w = workload(&case.spec)?;
        let mut systems = vec![System::new(
            ServerSpec::granola("granola-kv").memory(memory_mb(case.items, case.bytes)),
            Protocol::Resp,
        )];
        if redis_missing.is_none() {
            systems.push(System::new(ServerSpec::redis(), Protocol::Resp));
        }
        let mut servers = start_and_load(s, &systems, w.as_ref())?;
        for &(label, depth, payload, target) in &case.runs {
            let cfg = LoadConfig {
                mode: Mode::Closed { depth },
                ..s.client(Protocol::Resp)
            };
            let caps = interleave(&mut servers, s.reps, |_, srv, rep| {
                measure::capacity(
                    s,
                    srv,
                    &cfg,
                    w.as_ref(),
                    Method::Closed,
                    label,
                    rep,
                    &mut doc.runs,
                )
            })?;
            let sum: Vec<Summary> = systems
                .iter()
                .zip(&caps)
                .map(|(sys, c)| summarize(label, sys.label(), c))
                .collect();
            let g = &sum[0];
            let r = sum.get(1);
            let ratio = r.map_or(f64::NAN, |r| g.rps / r.rps);
            let paper = PAPER
                .iter()
                .find(|p| p.0 == case.name)
                .map_or(f64::NAN, |p| p.1 / p.2);
            let gbps = |x: f64| x * payload as f64 * 8.0 / 1e9;
            table.row(vec![
                text(label),
                round(g.rps, 0),
                round(g.p99_us, 1),
                r.map_or(serde_json::Value::Null, |r| round(r.rps, 0)),
                r.map_or(serde_json::Value::Null, |r| round(r.p99_us, 1)),
                round(ratio, 2),
                target.map_or(text("—"), |t| text(format!("≥ {t}×"))),
                round(paper, 2),
                round(gbps(g.rps), 2),
                r.map_or(serde_json::Value::Null, |r| round(gbps(r.rps), 2)),
                round(g.server_cpu_us_per_req, 2),
                r.map_or(serde_json::Value::Null, |r| {
                    round(r.server_cpu_us_per_req, 2)
                }),
                r.map_or(serde_json::Value::Null, |r| {
                    round(r.server_cpu_us_per_req / g.server_cpu_us_per_req, 2)
                }),
            ]);
            if let (Some(t), true) = (target, ratio.is_finite()) {
                doc.notes.push(format!(
                    "{label}: {:.2}× Redis, target ≥ {t}× — {}",
                    ratio,
                    if ratio >= t { "met" } else { "MISSED" }
                ));
            }
            bars_cat.push(label.to_owned());
            bars_g.push(Some(g.rps));
            bars_r.push(r.map(|r| r.rps));
            summaries.extend(sum);
        }
        for srv in servers {
            srv.stop();
        }
    }
    doc.notes.extend(bound_notes(&doc.runs));
    doc.notes.extend(error_notes(&doc.runs));
    doc.notes.extend(disturbed_notes(&doc.runs));
    doc.notes.push(
        "Method: closed loop, 1 client thread on CPU 1, 8 connections, pipeline depth as given; server on CPU 0 (granola-kv -t 1; redis-server 7, no persistence). The paper's Redis ran over Cornflakes' DPDK UDP stack; here both servers are unmodified over loopback TCP, so the kernel's per-segment cost is in both.".into(),
    );
    doc.params = s.params(json!({
        "keys": keys, "zipf": 0.99, "conns": 8, "method": "closed",
    }));
    doc.paper = json!({
        "source": "Cornflakes (SOSP'23) Table 3, Gbps at highest throughput, 4096 B payloads",
        "rows": PAPER.iter().map(|(c, cf, r)| json!({"case": c, "cornflakes_gbps": cf, "redis_gbps": r, "ratio": cf / r})).collect::<Vec<_>>(),
        "issue4_targets": {"get-20B-p16": 1.2, "get": 1.3, "mget-2": 1.4, "lrange-2": 1.4},
    });
    doc.extra = json!({ "summaries": summaries });
    doc.table = table;
    let mut series = vec![("granola-kv".to_owned(), bars_g)];
    if redis_missing.is_none() {
        series.push(("Redis".to_owned(), bars_r));
    }
    let fig = Figure::Bars {
        title: "Redis commands: highest throughput (closed loop, 8 conns)".into(),
        y_label: "throughput (ops/s)".into(),
        categories: bars_cat,
        series,
    };
    for p in plot::save(&fig, &s.fig_dir.join("redis"))? {
        doc.figures.push(p.display().to_string());
    }
    Ok(doc)
}
