//! `hybrid`: Cornflakes Table 4 and Fig. 12 — the hybrid copy threshold
//! against only reference (threshold 0, every field its own iovec) and only
//! copy (threshold `usize::MAX`).
//!
//! granola-kv's native protocol with `--copy-threshold` default (1024 B),
//! `0` and `usize::MAX`, on YCSB values of one 4 KiB field and a list of
//! 2 × 2 KiB, the Google protobuf size buckets in lists of 1, 1–4, 1–8 and
//! 1–16 (Table 4), and the synthetic Twitter workload (Fig. 12). Reported:
//! the highest achieved throughput (closed-loop saturation, or with
//! `--method knee` the open-loop knee: see [`Method`]), median over
//! repetitions.

use serde_json::json;

use crate::load::Protocol;

use super::super::measure::Method;
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::{threshold, ServerSpec};
use super::super::Settings;
use super::{
    bound_notes, capacity_cases, disturbed_notes, error_notes, memory_mb, pct, CaseDef, System,
};

/// Table 4 (krps): (case, hybrid, only SG, only copy).
const PAPER: [(&str, f64, f64, f64); 4] = [
    ("google-1", 844.7, 846.9, 819.0),
    ("google-1-4", 727.2, 717.2, 693.2),
    ("google-1-8", 584.5, 557.4, 547.4),
    ("google-1-16", 441.2, 387.1, 411.8),
];

/// The three variants, as native-protocol systems.
pub fn variants() -> Vec<System> {
    vec![
        System::new(ServerSpec::granola("hybrid (1024 B)"), Protocol::Native),
        System::new(
            ServerSpec::granola("only-reference").threshold(threshold::ONLY_REF),
            Protocol::Native,
        ),
        System::new(
            ServerSpec::granola("only-copy").threshold(threshold::ONLY_COPY),
            Protocol::Native,
        ),
    ]
}

/// The cases: YCSB shapes, Google lists, Twitter.
pub fn cases(s: &Settings) -> Vec<CaseDef> {
    let keys = s.keys_or(100_000, 10_000);
    let mut v = vec![
        CaseDef {
            name: "ycsb-1x4KiB".into(),
            spec: format!("ycsb:keys={keys},value=4096"),
            memory_mb: memory_mb(keys, 4096),
        },
        CaseDef {
            name: "ycsb-2x2KiB".into(),
            spec: format!("ycsb:keys={keys},value=4096,shape=list:2"),
            memory_mb: memory_mb(keys, 4096),
        },
    ];
    for l in ["1", "1-4", "1-8", "1-16"] {
        v.push(CaseDef {
            name: format!("google-{l}"),
            spec: format!("google:keys={keys},list={l}"),
            memory_mb: memory_mb(keys, 8192),
        });
    }
    v.push(CaseDef {
        name: "twitter".into(),
        spec: format!("twitter:keys={keys}"),
        memory_mb: memory_mb(keys, 6000),
    });
    if s.quick {
        v.retain(|c| c.name == "ycsb-2x2KiB" || c.name == "google-1-8");
    }
    v
}

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc(
        "hybrid",
        "Hybrid vs only-reference vs only-copy (Cornflakes Table 4 / Fig. 12)",
    );
    let method = s.method_or(Method::Closed);
    let systems = variants();
    let cases = cases(s);
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
        "hybrid ops/s",
        "only-reference ops/s",
        "only-copy ops/s",
        "hybrid vs ref %",
        "hybrid vs copy %",
        "paper hybrid vs SG %",
        "paper hybrid vs copy %",
        "hybrid p99 µs",
    ]);
    let mut cats = Vec::new();
    let mut series: Vec<(String, Vec<Option<f64>>)> = systems
        .iter()
        .map(|s| (s.label().to_owned(), Vec::new()))
        .collect();
    for (case, sums) in &res {
        let (h, r, c) = (&sums[0], &sums[1], &sums[2]);
        let paper = PAPER.iter().find(|p| p.0 == case);
        table.row(vec![
            text(case.as_str()),
            round(h.rps, 0),
            round(r.rps, 0),
            round(c.rps, 0),
            round(pct(h.rps, r.rps), 1),
            round(pct(h.rps, c.rps), 1),
            match (paper, case.as_str()) {
                (Some(p), _) => round(pct(p.1, p.2), 1),
                (None, "twitter") => text("+3.1 (max), +2.3–3.9 at 50 µs"),
                _ => text("—"),
            },
            paper.map_or(text("—"), |p| round(pct(p.1, p.3), 1)),
            round(h.p99_us, 1),
        ]);
        cats.push(case.clone());
        for (j, sm) in sums.iter().enumerate() {
            series[j].1.push(Some(sm.rps));
        }
    }
    doc.notes.extend(bound_notes(&doc.runs));
    doc.notes.extend(error_notes(&doc.runs));
    doc.notes.extend(disturbed_notes(&doc.runs));
    doc.notes.push(format!(
        "Capacity by {method:?}: {}. Native protocol over loopback TCP, 8 connections × 16 outstanding; the paper used its DPDK UDP stack and a ConnectX-5 (threshold 512 B there, 1024 B granola's default here).",
        match method {
            Method::Knee => "closed-loop estimate, then an open-loop sweep; the knee at achieved ≥ 95% offered",
            Method::Closed => "closed loop saturating the server (highest achieved)",
        }
    ));
    doc.table = table;
    doc.params = s.params(json!({
        "method": method, "conns": 8, "depth": 16,
        "cases": cases.iter().map(|c| json!({"name": c.name, "spec": c.spec})).collect::<Vec<_>>(),
        "thresholds": {"hybrid": "default (1024)", "only-reference": 0, "only-copy": threshold::ONLY_COPY},
    }));
    doc.paper = json!({
        "source": "Cornflakes Table 4 (krps, Google buckets) and Fig. 12 (Twitter: hybrid +2.3-3.9% over only-SG at ~50 us p99, +3.1% highest)",
        "table4": PAPER.iter().map(|(c, h, sg, cp)| json!({"case": c, "hybrid": h, "only_sg": sg, "only_copy": cp})).collect::<Vec<_>>(),
    });
    doc.extra = json!({ "summaries": res });
    let fig = Figure::Bars {
        title: "Hybrid vs only-reference vs only-copy: highest throughput".into(),
        y_label: "throughput (ops/s)".into(),
        categories: cats,
        series,
    };
    for p in plot::save(&fig, &s.fig_dir.join("hybrid"))? {
        doc.figures.push(p.display().to_string());
    }
    Ok(doc)
}
