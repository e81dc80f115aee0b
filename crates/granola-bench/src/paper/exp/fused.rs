//! `fused`: Cornflakes Table 5 — serialize-and-send against the non-fused
//! path.
//!
//! granola-kv's native replies normally go through `send_object`, which
//! writes headers and copied fields straight into the TX buffer and queues
//! each referenced field; `--no-fused` first materialises the reply as a
//! scatter-gather list (`Message::to_sga`: a head vector plus cloned
//! `Buf`s) and queues that (`send_sga`: the head copied again, the entries
//! referenced). Workloads as in Table 5: Google lists of 1–4, the
//! synthetic Twitter workload, and YCSB lists of 4 × 1 KiB.

use serde_json::json;

use crate::load::Protocol;

use super::super::measure::Method;
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::ServerSpec;
use super::super::Settings;
use super::{
    bound_notes, capacity_cases, disturbed_notes, error_notes, memory_mb, pct, CaseDef, System,
};

/// Table 5: (case, with, without, unit).
const PAPER: [(&str, f64, f64, &str); 3] = [
    ("google-1-4", 727.0, 675.0, "krps"),
    ("twitter", 899.0, 814.0, "krps"),
    ("ycsb-4x1KiB", 18.9, 16.1, "Gbps"),
];

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc("fused", "Serialize-and-send on vs off (Cornflakes Table 5)");
    let method = s.method_or(Method::Closed);
    let keys = s.keys_or(100_000, 10_000);
    let systems = vec![
        System::new(ServerSpec::granola("serialize-and-send"), Protocol::Native),
        System::new(
            ServerSpec {
                no_fused: true,
                ..ServerSpec::granola("to_sga + send_sga")
            },
            Protocol::Native,
        ),
    ];
    let mut cases = vec![
        CaseDef {
            name: "google-1-4".into(),
            spec: format!("google:keys={keys},list=1-4"),
            memory_mb: memory_mb(keys, 8192),
        },
        CaseDef {
            name: "twitter".into(),
            spec: format!("twitter:keys={keys}"),
            memory_mb: memory_mb(keys, 6000),
        },
        CaseDef {
            name: "ycsb-4x1KiB".into(),
            spec: format!("ycsb:keys={keys},value=4096,shape=list:4"),
            memory_mb: memory_mb(keys, 4096),
        },
    ];
    if s.quick {
        cases.retain(|c| c.name != "twitter");
    }
    let res = capacity_cases(
        s,
        &cases,
        &systems,
        &s.client(Protocol::Native),
        method,
        s.reps,
        &mut doc.runs,
    )?;
    let mut table = Table::new(&[
        "case",
        "serialize-and-send ops/s",
        "to_sga + send_sga ops/s",
        "gain %",
        "paper with / without",
        "paper gain %",
        "fused server CPU µs/req",
        "non-fused CPU µs/req",
    ]);
    let mut cats = Vec::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (case, sums) in &res {
        let (f, n) = (&sums[0], &sums[1]);
        let paper = PAPER.iter().find(|p| p.0 == case);
        table.row(vec![
            text(case.as_str()),
            round(f.rps, 0),
            round(n.rps, 0),
            round(pct(f.rps, n.rps), 1),
            paper.map_or(text("—"), |p| text(format!("{} / {} {}", p.1, p.2, p.3))),
            paper.map_or(text("—"), |p| round(pct(p.1, p.2), 1)),
            round(f.server_cpu_us_per_req, 2),
            round(n.server_cpu_us_per_req, 2),
        ]);
        cats.push(case.clone());
        a.push(Some(f.rps));
        b.push(Some(n.rps));
    }
    doc.notes.extend(bound_notes(&doc.runs));
    doc.notes.extend(error_notes(&doc.runs));
    doc.notes.extend(disturbed_notes(&doc.runs));
    doc.notes.push(format!("Capacity by {method:?}; native protocol over loopback TCP, 8 connections × 16 outstanding. In the paper the non-fused path also cost one more NIC scatter-gather entry; here the frame header is copied into the same TX chunk either way, so the difference is the intermediate head vector and `Buf` clones."));
    doc.table = table;
    doc.params = s.params(json!({
        "method": method, "keys": keys, "conns": 8, "depth": 16,
        "cases": cases.iter().map(|c| json!({"name": c.name, "spec": c.spec})).collect::<Vec<_>>(),
    }));
    doc.paper = json!({
        "source": "Cornflakes Table 5: with / without serialize-and-send",
        "rows": PAPER.iter().map(|(c, w, wo, u)| json!({"case": c, "with": w, "without": wo, "unit": u})).collect::<Vec<_>>(),
    });
    doc.extra = json!({ "summaries": res });
    let fig = Figure::Bars {
        title: "Serialize-and-send vs to_sga + send_sga: highest throughput".into(),
        y_label: "throughput (ops/s)".into(),
        categories: cats,
        series: vec![
            ("serialize-and-send".into(), a),
            ("to_sga + send_sga".into(), b),
        ],
    };
    for p in plot::save(&fig, &s.fig_dir.join("fused"))? {
        doc.figures.push(p.display().to_string());
    }
    Ok(doc)
}
