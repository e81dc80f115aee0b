//! `threshold`: the Cornflakes §5 study (Fig. 5) — when does referencing a
//! field beat copying it, on this machine?
//!
//! For every cell of a grid of list lengths (1…32 values) × total payload
//! sizes, granola-kv's native GetList serves YCSB lists of that shape
//! (Zipf 0.99) from two servers: `--copy-threshold 0` (only reference:
//! every value its own iovec) and `--copy-threshold usize::MAX` (only copy).
//! Each cell reports the % difference of highest throughput,
//! `(reference − copy) / copy`. Per row, the **crossover** is the element
//! size where the difference turns positive for good (interpolated in log
//! size between the two cells around the sign change); the **recommended
//! threshold** is the median crossover over the rows, rounded to a power of
//! two. Rows that never cross (or are positive throughout) give a bound.
//!
//! Minutes, not days: each cell is one short closed-loop saturation run per
//! variant and repetition (`--method knee` makes it an open-loop sweep).

use serde_json::json;

use crate::load::{LoadConfig, Protocol};

use super::super::measure::Method;
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::{threshold, ServerSpec};
use super::super::Settings;
use super::{
    bound_notes, capacity_cases, disturbed_notes, error_notes, memory_mb, pct, CaseDef, System,
};

/// Where one row crosses over.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Crossover {
    /// Values per list.
    pub n: u32,
    /// Element size (bytes) where referencing starts to win; for bounds,
    /// the bound.
    pub elem_bytes: f64,
    /// `exact` (interpolated), `below` (positive from the smallest size:
    /// the crossover is at most `elem_bytes`), `above` (never positive:
    /// more than `elem_bytes`).
    pub kind: &'static str,
    /// x position in heatmap cell coordinates (column centre = i + 0.5).
    pub x: f64,
}

/// Finds a row's crossover. `diff[c]` is the % difference at total
/// `totals[c]` (None = not measured); elements are `totals[c] / n` bytes.
pub fn crossover(n: u32, totals: &[u64], diff: &[Option<f64>]) -> Option<Crossover> {
    let cells: Vec<(usize, f64)> = diff
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.filter(|d| d.is_finite()).map(|d| (i, d)))
        .collect();
    let (&(first_i, _), &(last_i, last_d)) = (cells.first()?, cells.last()?);
    let elem = |i: usize| totals[i] as f64 / f64::from(n);
    if last_d <= 0.0 {
        return Some(Crossover {
            n,
            elem_bytes: elem(last_i),
            kind: "above",
            x: last_i as f64 + 1.0,
        });
    }
    // The last non-positive cell: the crossover lies after it.
    let Some(k) = cells.iter().rposition(|&(_, d)| d <= 0.0) else {
        return Some(Crossover {
            n,
            elem_bytes: elem(first_i),
            kind: "below",
            x: first_i as f64,
        });
    };
    let (i0, d0) = cells[k];
    let (i1, d1) = cells[k + 1];
    let f = d0 / (d0 - d1); // 0..1, where the line through both hits 0
    let (l0, l1) = (elem(i0).log2(), elem(i1).log2());
    Some(Crossover {
        n,
        elem_bytes: (l0 + f * (l1 - l0)).exp2(),
        kind: "exact",
        x: i0 as f64 + 0.5 + f * (i1 - i0) as f64,
    })
}

/// The recommended threshold: the median of the rows' crossovers (bounds
/// count at their bound), rounded to the nearest power of two.
pub fn recommend(rows: &[Crossover]) -> Option<u64> {
    let v: Vec<f64> = rows.iter().map(|c| c.elem_bytes.log2()).collect();
    let m = super::super::measure::median(&v);
    m.is_finite()
        .then(|| 1u64 << m.round().clamp(0.0, 40.0) as u32)
}

fn size_label(b: u64) -> String {
    if b >= 1024 && b % 1024 == 0 {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc(
        "threshold",
        "Copy vs reference crossover (Cornflakes §5, Fig. 5)",
    );
    let (lists, totals): (Vec<u32>, Vec<u64>) = if s.quick {
        (vec![1, 4, 16], vec![512, 2048, 8192])
    } else {
        (
            vec![1, 2, 4, 8, 16, 32],
            vec![512, 1024, 2048, 4096, 8192, 16384, 32768],
        )
    };
    let set_mib: u64 = if s.quick { 8 } else { 64 };
    let method = s.method.unwrap_or(Method::Closed);
    // Three repetitions: with two, the median is their mean and one
    // disturbed run sets a heatmap cell.
    let reps = s.reps_or(3);
    let (window, warmup) = s.window_or(1.5);
    let closed = LoadConfig {
        duration: window,
        warmup,
        ..s.client(Protocol::Native)
    };
    let systems = vec![
        System::new(
            ServerSpec::granola("only-reference").threshold(threshold::ONLY_REF),
            Protocol::Native,
        ),
        System::new(
            ServerSpec::granola("only-copy").threshold(threshold::ONLY_COPY),
            Protocol::Native,
        ),
    ];
    let mut diff = vec![vec![None; totals.len()]; lists.len()];
    let mut cells = Vec::new();
    for (r, &n) in lists.iter().enumerate() {
        for (c, &total) in totals.iter().enumerate() {
            let keys = s.keys.unwrap_or_else(|| {
                ((set_mib << 20) / total).clamp(if s.quick { 1_000 } else { 4_000 }, 100_000)
            });
            let case = CaseDef {
                name: format!("n{n}-{total}"),
                spec: format!("ycsb:keys={keys},value={total},shape=list:{n}"),
                memory_mb: memory_mb(keys * u64::from(n), total / u64::from(n) + 64),
            };
            let res = capacity_cases(s, &[case], &systems, &closed, method, reps, &mut doc.runs)?;
            if let Some((name, sums)) = res.into_iter().next() {
                let d = pct(sums[0].rps, sums[1].rps);
                diff[r][c] = Some(d);
                s.say(&format!(
                    "  {name}: reference {:.0} vs copy {:.0} ops/s: {d:+.1}%",
                    sums[0].rps, sums[1].rps
                ));
                cells.push(json!({
                    "n": n, "total": total, "elem": total / u64::from(n), "keys": keys,
                    "only_reference_rps": sums[0].rps, "only_copy_rps": sums[1].rps, "diff_pct": d,
                }));
            }
        }
    }
    let xs: Vec<Crossover> = lists
        .iter()
        .enumerate()
        .filter_map(|(r, &n)| crossover(n, &totals, &diff[r]))
        .collect();
    let rec = recommend(&xs);
    let mut cols: Vec<String> = vec!["values per list".into()];
    cols.extend(totals.iter().map(|t| format!("{} total", size_label(*t))));
    cols.push("crossover element size".into());
    let mut table = Table {
        columns: cols,
        rows: Vec::new(),
    };
    for (r, &n) in lists.iter().enumerate() {
        let mut row = vec![text(n.to_string())];
        row.extend(
            diff[r]
                .iter()
                .map(|d| d.map_or(serde_json::Value::Null, |d| round(d, 1))),
        );
        row.push(match xs.iter().find(|x| x.n == n) {
            Some(x) => text(match x.kind {
                "exact" => format!("{:.0} B", x.elem_bytes),
                "below" => format!("≤ {:.0} B", x.elem_bytes),
                _ => format!("> {:.0} B", x.elem_bytes),
            }),
            None => text("—"),
        });
        table.row(row);
    }
    doc.table = table;
    match rec {
        Some(t) => doc.notes.push(format!(
            "Recommended copy threshold for this machine: {t} B (median crossover over the rows, nearest power of two); granola-kv's default is 1024 B, `--copy-threshold auto` measures a datapath-only crossover at start."
        )),
        None => doc.notes.push("No crossover found.".into()),
    }
    doc.notes.push("Cells are % difference of highest throughput, (only-reference − only-copy) / only-copy: positive = referencing wins.".into());
    doc.notes.extend(bound_notes(&doc.runs));
    doc.notes.extend(error_notes(&doc.runs));
    doc.notes.extend(disturbed_notes(&doc.runs));
    doc.params = s.params(json!({
        "method": method, "reps": reps, "window_s": window.as_secs_f64(),
        "lists": lists, "totals": totals, "working_set_mib": set_mib,
        "conns": 8, "depth": 16, "zipf": 0.99,
    }));
    doc.paper = json!({
        "source": "Cornflakes §5 Fig. 5 (CX-5, DPDK): scatter-gather wins when each field is at least about 512 B; threshold 512 B",
        "threshold_bytes": 512,
    });
    doc.extra = json!({
        "lists": lists, "totals": totals, "diff_pct": diff, "cells": cells,
        "crossover": xs, "recommended_threshold": rec,
    });
    let fig = Figure::Heatmap {
        title: format!(
            "Only-reference vs only-copy: % throughput difference{}",
            rec.map_or(String::new(), |t| format!(" (recommended threshold {t} B)"))
        ),
        x_label: "total payload per response".into(),
        y_label: "values per list".into(),
        x_ticks: totals.iter().map(|t| size_label(*t)).collect(),
        y_ticks: lists.iter().map(|n| n.to_string()).collect(),
        values: diff.clone(),
        crossover: xs
            .iter()
            .map(|x| {
                let r = lists.iter().position(|&n| n == x.n).unwrap_or(0);
                (x.x.clamp(0.0, totals.len() as f64), r as f64 + 0.5)
            })
            .collect(),
        crossover_label: "crossover (reference ≥ copy to the right)".into(),
    };
    for p in plot::save(&fig, &s.fig_dir.join("threshold"))? {
        doc.figures.push(p.display().to_string());
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossover_rules() {
        let totals = [512, 1024, 2048, 4096];
        // -10 at 1 KiB elements, +10 at 2 KiB: crossover at sqrt(1k*2k).
        let x = crossover(
            1,
            &totals,
            &[Some(-30.0), Some(-10.0), Some(10.0), Some(20.0)],
        )
        .unwrap();
        assert_eq!(x.kind, "exact");
        assert!(
            (x.elem_bytes - (1024.0f64 * 2048.0).sqrt()).abs() < 1.0,
            "{x:?}"
        );
        assert!((x.x - 2.0).abs() < 1e-9);
        // A positive blip before the last sign change does not count.
        let x = crossover(2, &totals, &[Some(5.0), Some(-1.0), Some(3.0), Some(4.0)]).unwrap();
        assert_eq!(x.kind, "exact");
        assert!(x.elem_bytes > 512.0 && x.elem_bytes < 1024.0);
        // All positive: at most the smallest element; all negative: above.
        let x = crossover(4, &totals, &[Some(1.0), Some(2.0), None, Some(3.0)]).unwrap();
        assert_eq!((x.kind, x.elem_bytes), ("below", 128.0));
        let x = crossover(4, &totals, &[Some(-1.0), Some(-2.0), Some(-3.0), None]).unwrap();
        assert_eq!((x.kind, x.elem_bytes), ("above", 512.0));
        assert_eq!(crossover(1, &totals, &[None; 4]), None);
        // Median of the rows, nearest power of two.
        let rows = [
            Crossover {
                n: 1,
                elem_bytes: 1400.0,
                kind: "exact",
                x: 0.0,
            },
            Crossover {
                n: 2,
                elem_bytes: 700.0,
                kind: "exact",
                x: 0.0,
            },
            Crossover {
                n: 4,
                elem_bytes: 2048.0,
                kind: "above",
                x: 0.0,
            },
        ];
        assert_eq!(recommend(&rows), Some(1024));
        assert_eq!(recommend(&[]), None);
    }
}
