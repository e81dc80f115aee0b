//! `large`: the zFlatBuffers regime (§VI) — messages of 1 KiB … 128 KiB,
//! far beyond one packet, sent as one framed message.
//!
//! Ping-pong: one connection, one request outstanding (closed loop,
//! depth 1), native Get of values of each size from granola-kv, hybrid
//! (values ≥ 1 KiB referenced: the reply is a header iovec plus the stored
//! value's own iovec) against only-copy (the value copied into the TX
//! buffer, as a serialization library building one contiguous buffer
//! would). Reported per size: median p50 and p99 latency and throughput
//! (ops/s and MB/s of payload).
//!
//! zFlatBuffers measured RDMA RPCs (eRPC, zRPC) on 56/100 Gb NICs; here the
//! kernel TCP stack over loopback copies every byte once on each side in
//! either variant, so only the server's own copy differs.

use serde_json::json;

use crate::load::{LoadConfig, Mode, Protocol};

use super::super::measure::{median, Method};
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::{threshold, ServerSpec};
use super::super::Settings;
use super::{
    bound_notes, capacity_cases, disturbed_notes, error_notes, memory_mb, pct, CaseDef, System,
};

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc(
        "large",
        "Large messages, ping-pong (zFlatBuffers §VI): hybrid vs only-copy",
    );
    let sizes: Vec<u64> = if s.quick {
        vec![1 << 10, 16 << 10, 128 << 10]
    } else {
        (10..=17).map(|p| 1u64 << p).collect()
    };
    let set: u64 = if s.quick { 16 << 20 } else { 64 << 20 };
    let systems = vec![
        System::new(ServerSpec::granola("hybrid (1024 B)"), Protocol::Native),
        System::new(
            ServerSpec::granola("only-copy").threshold(threshold::ONLY_COPY),
            Protocol::Native,
        ),
    ];
    let closed = LoadConfig {
        mode: Mode::Closed { depth: 1 },
        conns: 1,
        ..s.client(Protocol::Native)
    };
    let cases: Vec<CaseDef> = sizes
        .iter()
        .map(|&sz| {
            let keys = s.keys.unwrap_or((set / sz).clamp(256, 10_000));
            CaseDef {
                name: format!("{}KiB", sz >> 10),
                spec: format!("ycsb:keys={keys},value={sz}"),
                memory_mb: memory_mb(keys, sz),
            }
        })
        .collect();
    let res = capacity_cases(
        s,
        &cases,
        &systems,
        &closed,
        Method::Closed,
        s.reps,
        &mut doc.runs,
    )?;
    let p50 = |runs: &[super::super::measure::Point], case: &str, sys: &str| {
        median(
            &runs
                .iter()
                .filter(|p| p.case == case && p.system == sys)
                .map(|p| p.latency_us.p50)
                .collect::<Vec<_>>(),
        )
    };
    let mut table = Table::new(&[
        "size",
        "hybrid p50 µs",
        "hybrid p99 µs",
        "hybrid ops/s",
        "hybrid MB/s",
        "only-copy p50 µs",
        "only-copy p99 µs",
        "only-copy ops/s",
        "only-copy MB/s",
        "throughput gain %",
        "p50 change %",
    ]);
    let mut lat: Vec<(String, Vec<(f64, f64)>)> = vec![
        ("hybrid p50".into(), vec![]),
        ("only-copy p50".into(), vec![]),
        ("hybrid p99".into(), vec![]),
        ("only-copy p99".into(), vec![]),
    ];
    let mut thr: Vec<(String, Vec<(f64, f64)>)> =
        vec![("hybrid".into(), vec![]), ("only-copy".into(), vec![])];
    for ((case, sums), &sz) in res.iter().zip(&sizes) {
        let (h, c) = (&sums[0], &sums[1]);
        let (h50, c50) = (
            p50(&doc.runs, case, &h.system),
            p50(&doc.runs, case, &c.system),
        );
        let mbs = |x: f64| x * sz as f64 / 1e6;
        table.row(vec![
            text(case.as_str()),
            round(h50, 1),
            round(h.p99_us, 1),
            round(h.rps, 0),
            round(mbs(h.rps), 1),
            round(c50, 1),
            round(c.p99_us, 1),
            round(c.rps, 0),
            round(mbs(c.rps), 1),
            round(pct(h.rps, c.rps), 1),
            round(pct(h50, c50), 1),
        ]);
        let kib = sz as f64 / 1024.0;
        lat[0].1.push((kib, h50));
        lat[1].1.push((kib, c50));
        lat[2].1.push((kib, h.p99_us));
        lat[3].1.push((kib, c.p99_us));
        thr[0].1.push((kib, mbs(h.rps)));
        thr[1].1.push((kib, mbs(c.rps)));
    }
    doc.notes.extend(bound_notes(&doc.runs));
    doc.notes.extend(error_notes(&doc.runs));
    doc.notes.extend(disturbed_notes(&doc.runs));
    doc.notes.push("One connection, one request outstanding, so throughput = 1 / round trip; the round trip is dominated by cross-core wake-ups (~60 µs on this VM, MEASUREMENTS.md) at small sizes.".into());
    doc.table = table;
    doc.params = s.params(json!({
        "sizes": sizes, "conns": 1, "depth": 1, "working_set_bytes": set,
    }));
    doc.paper = json!({
        "source": "zFlatBuffers §VI: eRPC throughput +11.2-33.7% and latency -3-18% for messages > 1 KiB; zRPC throughput +5.8-53.6% (1 KiB-128 KiB)",
        "erpc_throughput_gain_pct": [11.2, 33.7], "erpc_latency_cut_pct": [3.0, 18.0],
        "zrpc_throughput_gain_pct": [5.8, 53.6],
    });
    doc.extra = json!({ "summaries": res });
    let figs = [
        (
            "large-latency",
            Figure::Lines {
                title: "Ping-pong latency by value size (1 connection, depth 1)".into(),
                x_label: "value size (KiB)".into(),
                y_label: "latency (µs)".into(),
                series: lat,
                log_x: true,
                log_y: false,
            },
        ),
        (
            "large-throughput",
            Figure::Lines {
                title: "Ping-pong throughput by value size".into(),
                x_label: "value size (KiB)".into(),
                y_label: "payload throughput (MB/s)".into(),
                series: thr,
                log_x: true,
                log_y: false,
            },
        ),
    ];
    for (stem, fig) in &figs {
        for p in plot::save(fig, &s.fig_dir.join(stem))? {
            doc.figures.push(p.display().to_string());
        }
    }
    Ok(doc)
}
