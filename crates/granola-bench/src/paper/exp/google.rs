//! `google`: Cornflakes Table 1 — lists of values with sizes from Google's
//! fleet-wide protobuf bytes-field histogram (≈ 94% below 512 B), lists of
//! 1, 1–4, 1–8 and 1–16 values under 64 B keys, read whole with GetList.
//!
//! granola-kv's native protocol with the default hybrid threshold, its
//! only-copy / only-reference variants, and the paper's peers ([`baselines`]):
//! the same server with `--serializer prost|flatbuffers|capnp`, each driven
//! by the load generator's client codec for that serializer
//! (`native:prost`, ...), so a row differs from granola's only in how
//! requests and replies are encoded.

use serde_json::json;

use crate::load::{Protocol, Serializer};

use super::super::measure::Method;
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::ServerSpec;
use super::super::Settings;
use super::{
    bound_notes, capacity_cases, disturbed_notes, error_notes, memory_mb, pct, CaseDef, System,
};

/// Table 1 (krps): (system, 1, 1-4, 1-8, 1-16).
const PAPER: [(&str, [f64; 4]); 4] = [
    ("Cornflakes", [844.7, 727.2, 584.5, 441.2]),
    ("Protobuf", [852.5, 741.9, 583.8, 402.0]),
    ("Cap'n Proto", [678.9, 612.9, 507.1, 412.0]),
    ("FlatBuffers", [778.1, 646.4, 516.8, 388.9]),
];

/// The paper's peers as systems: granola-kv with `--serializer prost`,
/// `flatbuffers` and `capnp` (one store, one datapath; see
/// `granola_kv::server::baselines`), each spoken to by the client codec of
/// its serializer, and labelled by it.
pub fn baselines() -> Vec<System> {
    [
        Serializer::Prost,
        Serializer::Flatbuffers,
        Serializer::Capnp,
    ]
    .into_iter()
    .map(|ser| {
        System::new(
            ServerSpec::granola(ser.name()).serializer(ser.name()),
            Protocol::NativeWith(ser),
        )
    })
    .collect()
}

/// The note on how the peers ran.
pub fn baselines_note() -> String {
    "prost, flatbuffers and capnp are granola-kv with --serializer prost|flatbuffers|capnp: the same store, datapath and request handling, only the payload encoding differs (prost decodes requests into owned messages and copies values into owned replies encoded into the TX chunk; flatbuffers and capnp build replies in their own builders, copied once into the TX chunk); the load generator speaks each with that library's client codec (--protocol native:prost etc.) and checks every value byte for byte.".into()
}

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc(
        "google",
        "Google protobuf size buckets (Cornflakes Table 1)",
    );
    let keys = s.keys_or(100_000, 10_000);
    let method = s.method_or(Method::Closed);
    let mut systems = super::hybrid::variants();
    systems.extend(baselines());
    let lists: &[&str] = if s.quick {
        &["1", "1-8"]
    } else {
        &["1", "1-4", "1-8", "1-16"]
    };
    let cases: Vec<CaseDef> = lists
        .iter()
        .map(|l| CaseDef {
            name: format!("google-{l}"),
            spec: format!("google:keys={keys},list={l}"),
            memory_mb: memory_mb(keys, 8192),
        })
        .collect();
    let res = capacity_cases(
        s,
        &cases,
        &systems,
        &s.client(Protocol::Native),
        method,
        s.reps,
        &mut doc.runs,
    )?;
    let mut cols = vec!["system".to_owned()];
    cols.extend(res.iter().map(|(c, _)| format!("{c} ops/s")));
    cols.extend(res.iter().map(|(c, _)| format!("{c} vs hybrid %")));
    let mut table = Table {
        columns: cols,
        rows: Vec::new(),
    };
    let mut series: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for (j, sys) in systems.iter().enumerate() {
        let mut row = vec![text(sys.label())];
        row.extend(res.iter().map(|(_, sums)| round(sums[j].rps, 0)));
        row.extend(
            res.iter()
                .map(|(_, sums)| round(pct(sums[j].rps, sums[0].rps), 1)),
        );
        table.row(row);
        series.push((
            sys.label().to_owned(),
            res.iter().map(|(_, sums)| Some(sums[j].rps)).collect(),
        ));
    }
    doc.notes.extend(bound_notes(&doc.runs));
    doc.notes.extend(error_notes(&doc.runs));
    doc.notes.extend(disturbed_notes(&doc.runs));
    doc.notes.push(baselines_note());
    doc.notes.push(format!("Capacity by {method:?}; lists' sizes redrawn above 8 KiB total (the paper: above one MTU); loopback TCP, 8 connections × 16 outstanding."));
    doc.table = table;
    doc.params = s.params(json!({
        "keys": keys, "method": method, "conns": 8, "depth": 16,
        "cases": cases.iter().map(|c| json!({"name": c.name, "spec": c.spec})).collect::<Vec<_>>(),
    }));
    doc.paper = json!({
        "source": "Cornflakes Table 1, krps (1, 1-4, 1-8, 1-16 values per list)",
        "rows": PAPER.iter().map(|(k, v)| json!({"system": k, "krps": v})).collect::<Vec<_>>(),
    });
    doc.extra = json!({ "summaries": res });
    let fig = Figure::Bars {
        title: "Google size buckets: highest throughput".into(),
        y_label: "throughput (ops/s)".into(),
        categories: res.iter().map(|(c, _)| c.clone()).collect(),
        series,
    };
    for p in plot::save(&fig, &s.fig_dir.join("google"))? {
        doc.figures.push(p.display().to_string());
    }
    Ok(doc)
}
