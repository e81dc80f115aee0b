//! `memcached`: Hippos §3 (Fig. 7, Fig. 10) and issue 4's memcached target.
//!
//! granola-kv's memcached port (`-t 1`) against `memcached -t 1`, same
//! client, server on CPU 0 and client on CPU 1.
//!
//! 1. **20 B GET, closed loop** (issue 4): 20 B keys and values, 8
//!    connections, pipeline 1 and 16; highest throughput and server CPU
//!    time per request.
//! 2. **Peak throughput with mean latency < 1 ms** (Hippos' rule): for 20 B
//!    GETs (TCP, and UDP in the full run, as Hippos sends GETs) and the
//!    Facebook pools USR, ETC, APP, VAR, SYS — a closed-loop estimate of
//!    each system's capacity, then an open-loop Poisson sweep at fractions
//!    of it (systems interleaved at every level), and the knee restricted
//!    to mean latency < 1 ms. Each system also runs at one **common
//!    load** (half the smaller estimate), where server CPU time per
//!    request compares the two at equal work — Hippos' power argument,
//!    from `/proc` since this VM has no counters.
//!
//! Hippos moved memcached into the kernel and measured on 1/10 GbE with 8
//! cores; here both servers run in user space over loopback on one core.

use serde_json::json;

use crate::load::{LoadConfig, Mode, Protocol, Transport};

use super::super::measure::{self, summarize, Method};
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::{Kind, ServerSpec};
use super::super::Settings;
use super::{
    bound_notes, curve, disturbed_notes, error_notes, interleave, memory_mb, start_and_load,
    sweep_systems, workload, SweepPlan, System,
};

/// Hippos' peak-throughput ratios over memcached (Fig. 7 and 10, 1 Gbps;
/// 10 Gbps where given).
const HIPPOS: [(&str, f64, Option<f64>); 6] = [
    ("get-20B", 2.0, Some(4.0)),
    ("usr", 1.98, None),
    ("etc", 1.41, Some(2.4)),
    ("app", 1.15, Some(2.0)),
    ("var", 2.5, None),
    ("sys", 1.33, Some(6.9)),
];

/// Mean latency bound of the peak (µs).
const MEAN_BOUND_US: f64 = 1000.0;

fn fractions(quick: bool) -> &'static [f64] {
    if quick {
        &[0.2, 0.5]
    } else {
        &[0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 1.0]
    }
}

/// One system's result on one sweep workload.
#[derive(Clone, Debug, serde::Serialize)]
struct Peak {
    workload: String,
    system: String,
    transport: &'static str,
    /// Median over repetitions of the peak under 1 ms mean.
    peak_rps: f64,
    mean_us: f64,
    p99_us: f64,
    /// Server CPU per request at the common load.
    common_rps: f64,
    common_cpu_us_per_req: f64,
    /// Closed-loop estimate.
    estimate_rps: f64,
}

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc(
        "memcached",
        "memcached comparison (Hippos §3, issue 4): granola-kv vs memcached -t 1",
    );
    let mc_missing = s.peer_missing(Kind::Memcached);
    if let Some(why) = &mc_missing {
        eprintln!("skipped: {why}; measuring granola-kv alone");
        doc.notes.push(format!("skipped memcached: {why}"));
    }
    let keys = s.keys_or(100_000, 10_000);
    let udp = !s.quick;
    let mut closed_table = Table::new(&[
        "case",
        "granola-kv ops/s",
        "p99 µs",
        "memcached ops/s",
        "p99 µs",
        "ratio",
        "target",
        "granola CPU µs/req",
        "memcached CPU µs/req",
    ]);
    let mut peaks: Vec<Peak> = Vec::new();
    let mut closed_bars: Vec<(String, f64, Option<f64>)> = Vec::new();
    let mut curves: Vec<(String, Vec<(f64, f64)>)> = Vec::new();

    let mut pools: Vec<(&str, String)> =
        vec![("get-20B", format!("ycsb:keys={keys},value=20,key_len=20"))];
    let pool_names: &[&str] = if s.quick {
        &["usr", "etc"]
    } else {
        &["usr", "etc", "app", "var", "sys"]
    };
    for p in pool_names {
        pools.push((p, format!("{p}:keys={keys}")));
    }

    for (name, spec) in &pools {
        if !s.want(name) {
            continue;
        }
        s.say(&format!("-- {name} ({spec})"));
        let w = workload(spec)?;
        let is_get = *name == "get-20B";
        let mut systems = vec![System::new(
            ServerSpec {
                udp: is_get && udp,
                ..ServerSpec::granola("granola-kv").memory(memory_mb(keys, 1024))
            },
            Protocol::Memcached,
        )];
        if mc_missing.is_none() {
            systems.push(System::new(
                ServerSpec {
                    udp: is_get && udp,
                    ..ServerSpec::memcached().memory(memory_mb(keys, 1024))
                },
                Protocol::Memcached,
            ));
        }
        let mut servers = start_and_load(s, &systems, w.as_ref())?;
        if is_get {
            for (label, depth, target) in [
                ("get 20 B, pipeline 1", 1u32, None),
                ("get 20 B, pipeline 16", 16, Some(5.0)),
            ] {
                let cfg = LoadConfig {
                    mode: Mode::Closed { depth },
                    ..s.client(Protocol::Memcached)
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
                let g = summarize(label, "granola-kv", &caps[0]);
                let m = caps.get(1).map(|c| summarize(label, "memcached", c));
                let ratio = m.as_ref().map_or(f64::NAN, |m| g.rps / m.rps);
                closed_table.row(vec![
                    text(label),
                    round(g.rps, 0),
                    round(g.p99_us, 1),
                    m.as_ref()
                        .map_or(serde_json::Value::Null, |m| round(m.rps, 0)),
                    m.as_ref()
                        .map_or(serde_json::Value::Null, |m| round(m.p99_us, 1)),
                    round(ratio, 2),
                    target.map_or(text("—"), |t| text(format!("≥ {t}×"))),
                    round(g.server_cpu_us_per_req, 2),
                    m.as_ref().map_or(serde_json::Value::Null, |m| {
                        round(m.server_cpu_us_per_req, 2)
                    }),
                ]);
                if let (Some(t), true) = (target, ratio.is_finite()) {
                    doc.notes.push(format!(
                        "{label}: {ratio:.2}× memcached, target ≥ {t}× — {}",
                        if ratio >= t { "met" } else { "MISSED" }
                    ));
                }
                closed_bars.push((label.to_owned(), g.rps, m.map(|m| m.rps)));
            }
        }
        let transports: &[Transport] = if is_get && udp {
            &[Transport::Tcp, Transport::Udp]
        } else {
            &[Transport::Tcp]
        };
        for &tr in transports {
            let label = match tr {
                Transport::Tcp => (*name).to_owned(),
                _ => format!("{name}-{}", tr.name()),
            };
            let plan = SweepPlan {
                label: &label,
                transport: tr,
                fractions: fractions(s.quick),
                max_mean_us: Some(MEAN_BOUND_US),
                reps: sweep_reps(s),
                common_load: true,
            };
            let got: Vec<Peak> =
                sweep_systems(s, &mut servers, &systems, w.as_ref(), &plan, &mut doc.runs)?
                    .into_iter()
                    .map(|r| Peak {
                        workload: label.clone(),
                        system: r.system,
                        transport: tr.name(),
                        peak_rps: r.knee.rps,
                        mean_us: r.knee.mean_us,
                        p99_us: r.knee.p99_us,
                        common_rps: r.common.map_or(f64::NAN, |c| c.0),
                        common_cpu_us_per_req: r.common.map_or(f64::NAN, |c| c.1),
                        estimate_rps: r.estimate_rps,
                    })
                    .collect();
            if matches!(label.as_str(), "get-20B" | "etc" | "usr") {
                for p in &got {
                    let pts = curve(&doc.runs, &label, &p.system, |r| r.latency_us.mean);
                    curves.push((format!("{} {label}", p.system), pts));
                }
            }
            peaks.extend(got);
        }
        for srv in servers {
            srv.stop();
        }
    }

    let mut peak_table = Table::new(&[
        "workload",
        "granola-kv peak ops/s (mean < 1 ms)",
        "mean µs",
        "memcached peak ops/s",
        "mean µs",
        "ratio",
        "Hippos ratio (1 GbE / 10 GbE)",
        "common load ops/s",
        "granola CPU µs/req",
        "memcached CPU µs/req",
    ]);
    let mut peak_cats = Vec::new();
    let (mut pg, mut pm) = (Vec::new(), Vec::new());
    let mut wl: Vec<String> = peaks.iter().map(|p| p.workload.clone()).collect();
    wl.dedup();
    for w in &wl {
        let g = peaks
            .iter()
            .find(|p| &p.workload == w && p.system == "granola-kv");
        let m = peaks
            .iter()
            .find(|p| &p.workload == w && p.system == "memcached");
        let Some(g) = g else { continue };
        let base = w.trim_end_matches("-udp");
        let hip = HIPPOS.iter().find(|h| h.0 == base);
        let v = |x: Option<f64>, d: i32| x.map_or(serde_json::Value::Null, |x| round(x, d));
        peak_table.row(vec![
            text(w.as_str()),
            round(g.peak_rps, 0),
            round(g.mean_us, 1),
            v(m.map(|m| m.peak_rps), 0),
            v(m.map(|m| m.mean_us), 1),
            v(m.map(|m| g.peak_rps / m.peak_rps), 2),
            hip.map_or(text("—"), |h| {
                text(match h.2 {
                    Some(ten) => format!("{:.2} / {:.1}", h.1, ten),
                    None => format!("{:.2} / —", h.1),
                })
            }),
            round(g.common_rps, 0),
            round(g.common_cpu_us_per_req, 2),
            v(m.map(|m| m.common_cpu_us_per_req), 2),
        ]);
        peak_cats.push(w.clone());
        pg.push(Some(g.peak_rps));
        pm.push(m.map(|m| m.peak_rps));
    }
    let mut table = closed_table.clone();
    table.columns = vec![
        "case".into(),
        "granola-kv ops/s".into(),
        "p99 µs".into(),
        "memcached ops/s".into(),
        "p99 µs".into(),
        "ratio".into(),
        "target / Hippos ratio".into(),
        "granola CPU µs/req".into(),
        "memcached CPU µs/req".into(),
    ];
    for r in &peak_table.rows {
        table.row(vec![
            text(format!("{} peak, mean < 1 ms", r[0].as_str().unwrap_or(""))),
            r[1].clone(),
            text(format!("mean {}", cell_num(&r[2]))),
            r[3].clone(),
            text(format!("mean {}", cell_num(&r[4]))),
            r[5].clone(),
            r[6].clone(),
            r[8].clone(),
            r[9].clone(),
        ]);
    }
    doc.table = table;
    doc.extra = json!({
        "closed": closed_table,
        "peaks": peak_table,
        "peak_details": peaks,
        "mean_bound_us": MEAN_BOUND_US,
        "sweep_fractions": fractions(s.quick),
    });
    doc.notes.extend(bound_notes(&doc.runs));
    doc.notes.extend(error_notes(&doc.runs));
    doc.notes.extend(disturbed_notes(&doc.runs));
    doc.notes.push("CPU µs/req in the peak rows is measured at the common load (half the smaller closed-loop estimate), where both servers do the same work; in the closed-loop rows it is at saturation.".into());
    doc.notes.push("Hippos sent GETs over UDP to a kernel module on 8-core Xeons with 1/10 GbE NICs and multiport memcached; here both servers are unmodified user-space processes on one core over loopback, GETs over TCP (and UDP for 20 B GETs in the full run), SETs over TCP.".into());
    doc.params = s.params(json!({
        "keys": keys, "conns": 8, "closed_depth": 16, "mean_bound_us": MEAN_BOUND_US,
        "sweep_fractions": fractions(s.quick), "sweep_reps": sweep_reps(s),
    }));
    doc.paper = json!({
        "source": "Hippos (2014) Fig. 7 (20 B GET peak 480k vs 240k req/s at 1 GbE, > 4x at 10 GbE) and Fig. 10 / §3.2 (peak with mean latency <= 1 ms per Facebook pool)",
        "peak_ratio_1gbe_10gbe": HIPPOS.iter().map(|(w, a, b)| json!({"workload": w, "ratio_1gbe": a, "ratio_10gbe": b})).collect::<Vec<_>>(),
        "issue4_targets": {"get-20B-p16": 5.0},
    });
    let have_mc = mc_missing.is_none();
    let mut series = vec![(
        "granola-kv".to_owned(),
        closed_bars.iter().map(|b| Some(b.1)).collect::<Vec<_>>(),
    )];
    if have_mc {
        series.push((
            "memcached".to_owned(),
            closed_bars.iter().map(|b| b.2).collect(),
        ));
    }
    let figs = [
        (
            "memcached-get20",
            Figure::Bars {
                title: "20 B GET, closed loop, 8 connections".into(),
                y_label: "throughput (ops/s)".into(),
                categories: closed_bars.iter().map(|b| b.0.clone()).collect(),
                series,
            },
        ),
        (
            "memcached-peak",
            Figure::Bars {
                title: "Peak throughput with mean latency < 1 ms".into(),
                y_label: "throughput (ops/s)".into(),
                categories: peak_cats,
                series: if have_mc {
                    vec![("granola-kv".into(), pg), ("memcached".into(), pm)]
                } else {
                    vec![("granola-kv".into(), pg)]
                },
            },
        ),
        (
            "memcached-latency",
            Figure::Lines {
                title: "Mean latency vs achieved load (open loop, Poisson)".into(),
                x_label: "achieved (ops/s)".into(),
                y_label: "mean latency (µs)".into(),
                series: curves,
                log_x: false,
                log_y: true,
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

fn cell_num(v: &serde_json::Value) -> String {
    v.as_f64().map_or("—".into(), |x| format!("{x:.0}"))
}

fn sweep_reps(s: &Settings) -> usize {
    s.reps.div_ceil(2).max(1)
}
