//! The experiments, one module each, and the steps they share: start the
//! systems of a case, load them, measure them interleaved.

pub mod cdn;
pub mod fused;
pub mod google;
pub mod hybrid;
pub mod kvmem;
pub mod kvmem_collections;
pub mod kvmem_drift;
pub mod large;
pub mod memcached;
pub mod redis;
pub mod redis_benchmark;
pub mod threshold;
pub mod twitter;

use std::time::Instant;

use crate::load::Protocol;
use crate::workload::{Workload, WorkloadSpec};

use super::measure::{self, median, Capacity, Point};
use super::servers::{Server, ServerSpec};
use super::Settings;

/// A system under test: how to start its server and which protocol the
/// client speaks to it.
#[derive(Clone, Debug)]
pub struct System {
    /// The server.
    pub spec: ServerSpec,
    /// The client's protocol.
    pub protocol: Protocol,
}

impl System {
    /// A system from its server and protocol.
    pub fn new(spec: ServerSpec, protocol: Protocol) -> System {
        System { spec, protocol }
    }

    /// Its label.
    pub fn label(&self) -> &str {
        &self.spec.label
    }
}

/// Builds a workload from its spec string.
pub fn workload(spec: &str) -> Result<Box<dyn Workload>, String> {
    spec.parse::<WorkloadSpec>()?.build()
}

/// A memory limit (MiB) for `items` values of `bytes` each: room for the
/// values, keys and overhead twice over, plus 128 MiB.
pub fn memory_mb(items: u64, bytes: u64) -> usize {
    let need = items.saturating_mul(bytes + 256).saturating_mul(2);
    ((need >> 20) as usize + 128).max(256)
}

/// Starts every system's server (pinned to the server CPU) and loads the
/// workload into each over its protocol.
pub fn start_and_load(
    s: &Settings,
    systems: &[System],
    w: &dyn Workload,
) -> Result<Vec<Server>, String> {
    let mut servers = Vec::with_capacity(systems.len());
    for sys in systems {
        servers.push(Server::start(
            &sys.spec,
            &s.programs,
            s.server_cpu,
            &s.log_dir,
        )?);
    }
    if w.load_count() > 0 {
        for (srv, sys) in servers.iter().zip(systems) {
            let t = Instant::now();
            let r = measure::load_into(srv, &s.client(sys.protocol), w)?;
            s.say(&format!(
                "  loaded {} ops into {} in {:.1} s",
                r.counts.ops,
                sys.label(),
                t.elapsed().as_secs_f64()
            ));
        }
    }
    // An unrecorded closed-loop run per server first: the first measured
    // run of a fresh server was ~20-30% slower than the next ones
    // (connection buffers, page faults, caches), which would count against
    // whichever system runs first.
    for (srv, sys) in servers.iter().zip(systems) {
        let prime = crate::load::LoadConfig {
            addr: srv.addr(sys.protocol, crate::load::Transport::Tcp)?,
            duration: s.warmup.max(std::time::Duration::from_millis(200)),
            warmup: std::time::Duration::ZERO,
            ..s.client(sys.protocol)
        };
        crate::load::run(&prime, w).map_err(|e| format!("prime {}: {e}", sys.label()))?;
    }
    Ok(servers)
}

/// Runs `f(system index, server, rep)` for every repetition and system,
/// the systems rotated by the repetition; returns `caps[system][rep]`.
pub fn interleave(
    servers: &mut [Server],
    reps: usize,
    mut f: impl FnMut(usize, &Server, usize) -> Result<Capacity, String>,
) -> Result<Vec<Vec<Capacity>>, String> {
    let n = servers.len();
    let mut caps: Vec<Vec<Capacity>> = vec![Vec::new(); n];
    for rep in 0..reps.max(1) {
        for i in measure::rotation(n, rep) {
            if !servers[i].alive() {
                return Err(format!(
                    "{} died; see {}",
                    servers[i].spec.label,
                    servers[i].log.display()
                ));
            }
            caps[i].push(f(i, &servers[i], rep)?);
        }
    }
    Ok(caps)
}

/// Notes on runs where the client rather than the server was the limit
/// (client CPU ≥ 85% busy while the server's was < 85%).
pub fn bound_notes(points: &[Point]) -> Vec<String> {
    let mut keys: Vec<(String, String)> = points
        .iter()
        .filter(|p| p.mode == "closed")
        .map(|p| (p.case.clone(), p.system.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    let mut notes = Vec::new();
    for (case, system) in keys {
        let pts: Vec<&Point> = points
            .iter()
            .filter(|p| p.mode == "closed" && p.case == case && p.system == system)
            .collect();
        let cli = median(&pts.iter().map(|p| p.client_util).collect::<Vec<_>>());
        let srv = median(&pts.iter().map(|p| p.server_util).collect::<Vec<_>>());
        if cli >= 0.85 && srv < 0.85 {
            notes.push(format!(
                "{case} / {system}: client-bound (client CPU {:.0}%, server CPU {:.0}%): the number is a lower bound of the server's capacity",
                cli * 100.0,
                srv * 100.0
            ));
        }
    }
    notes
}

/// A note on runs that stayed disturbed by other load after their retries.
pub fn disturbed_notes(points: &[Point]) -> Vec<String> {
    let bad: Vec<&Point> = points
        .iter()
        .filter(|p| p.disturbance() > measure::DISTURBED)
        .collect();
    if bad.is_empty() {
        return Vec::new();
    }
    let worst = bad.iter().map(|p| p.disturbance()).fold(0.0, f64::max);
    vec![format!(
        "{} of {} runs were disturbed by other load on the machine even after retries (other tasks or steal took more than {:.0}% of the server's or client's CPU, at worst {:.0}%); medians leave out disturbed repetitions where undisturbed ones exist, but rerun on a quiet machine before quoting",
        bad.len(),
        points.len(),
        measure::DISTURBED * 100.0,
        worst * 100.0
    )]
}

/// Notes on failed requests, one per (case, system): the runs with
/// failures at or below their offered load, and apart from them the
/// overloaded sweep points (achieved < 95% of offered), where timeouts are
/// how overload shows.
pub fn error_notes(points: &[Point]) -> Vec<String> {
    let overloaded = |p: &Point| p.mode == "open" && p.ratio() < crate::load::KNEE_RATIO;
    let mut keys: Vec<(String, String)> = points
        .iter()
        .filter(|p| p.errors > 0 && !overloaded(p))
        .map(|p| (p.case.clone(), p.system.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    let mut notes = Vec::new();
    for (case, system) in keys {
        let bad: Vec<&Point> = points
            .iter()
            .filter(|p| p.errors > 0 && !overloaded(p) && p.case == case && p.system == system)
            .collect();
        let total: u64 = bad.iter().map(|p| p.errors).sum();
        let requests: f64 = bad
            .iter()
            .map(|p| p.requests_per_s * p.window_s)
            .sum::<f64>()
            .max(1.0);
        notes.push(format!(
            "{case} / {system}: {} runs had failed requests ({total} in all, {:.3}% of their requests; over UDP these are lost datagrams)",
            bad.len(),
            total as f64 * 100.0 / requests
        ));
    }
    let over = points
        .iter()
        .filter(|p| p.errors > 0 && overloaded(p))
        .count();
    if over > 0 {
        notes.push(format!(
            "{over} overloaded sweep points (achieved < 95% of offered) had failed requests (timeouts, full queues): expected past a system's capacity, and not part of any knee"
        ));
    }
    notes
}

/// Percent difference `(a − b) / b × 100`.
pub fn pct(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        (a - b) / b * 100.0
    } else {
        f64::NAN
    }
}

/// One case of a capacity table.
#[derive(Clone, Debug)]
pub struct CaseDef {
    /// Name (also the `--cases` filter key).
    pub name: String,
    /// Workload spec string.
    pub spec: String,
    /// Memory limit for the servers, MiB.
    pub memory_mb: usize,
}

/// For every case: starts all systems (with the case's memory limit),
/// loads them, and measures each one's capacity by `method` with the
/// closed-loop client `closed` (protocol taken from the system),
/// interleaved over `reps` repetitions. Returns `(case name, summaries per
/// system)` for the cases run; every run goes into `runs`.
pub fn capacity_cases(
    s: &Settings,
    cases: &[CaseDef],
    systems: &[System],
    closed: &crate::load::LoadConfig,
    method: measure::Method,
    reps: usize,
    runs: &mut Vec<Point>,
) -> Result<Vec<(String, Vec<measure::Summary>)>, String> {
    let mut out = Vec::new();
    for case in cases {
        if !s.want(&case.name) {
            continue;
        }
        s.say(&format!("-- {} ({})", case.name, case.spec));
        let w = workload(&case.spec)?;
        let systems: Vec<System> = systems
            .iter()
            .map(|sys| {
                let mut sys = sys.clone();
                sys.spec.memory_mb = case.memory_mb;
                sys
            })
            .collect();
        let mut servers = start_and_load(s, &systems, w.as_ref())?;
        let caps = interleave(&mut servers, reps, |i, srv, rep| {
            let cfg = crate::load::LoadConfig {
                protocol: systems[i].protocol,
                ..closed.clone()
            };
            measure::capacity(s, srv, &cfg, w.as_ref(), method, &case.name, rep, runs)
        })?;
        for srv in servers {
            srv.stop();
        }
        out.push((
            case.name.clone(),
            systems
                .iter()
                .zip(&caps)
                .map(|(sys, c)| measure::summarize(&case.name, sys.label(), c))
                .collect(),
        ));
    }
    Ok(out)
}

/// An interleaved open-loop sweep of several systems ([`sweep_systems`]).
#[derive(Clone, Debug)]
pub struct SweepPlan<'a> {
    /// Case label in the runs.
    pub label: &'a str,
    /// Transport of the sweep and its closed-loop estimate.
    pub transport: crate::load::Transport,
    /// Offered loads as fractions of each system's own estimate.
    pub fractions: &'a [f64],
    /// Knee restricted to mean latency below this (µs).
    pub max_mean_us: Option<f64>,
    /// Repetitions of the sweep.
    pub reps: usize,
    /// Also run every system at one common load (half the smaller
    /// estimate), for CPU per request at equal work.
    pub common_load: bool,
}

/// One system's sweep result.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SweepResult {
    /// System label.
    pub system: String,
    /// Closed-loop estimate, ops/s.
    pub estimate_rps: f64,
    /// Median knee over the repetitions.
    pub knee: measure::Summary,
    /// (common load, median server CPU µs per request there).
    pub common: Option<(f64, f64)>,
}

/// Estimates every system's capacity (closed loop, 8 × 16, over the
/// sweep's transport), then sweeps
/// open-loop offered loads at `plan.fractions` of each system's own
/// estimate — at every load level all systems in turn, rotated — and
/// takes the knee (achieved ≥ 95% of offered, and mean below
/// `plan.max_mean_us`) per repetition; the result is the median knee.
pub fn sweep_systems(
    s: &Settings,
    servers: &mut [Server],
    systems: &[System],
    w: &dyn Workload,
    plan: &SweepPlan<'_>,
    runs: &mut Vec<Point>,
) -> Result<Vec<SweepResult>, String> {
    use crate::load::{LoadConfig, Mode};
    let n = servers.len();
    let est = interleave(servers, 1, |i, srv, rep| {
        // Over the sweep's own transport: UDP has no pipelining to batch.
        let closed = LoadConfig {
            transport: plan.transport,
            ..s.client(systems[i].protocol)
        };
        let mut pts = Vec::new();
        let c = measure::capacity(
            s,
            srv,
            &closed,
            w,
            measure::Method::Closed,
            plan.label,
            rep,
            &mut pts,
        )?;
        for p in &mut pts {
            p.kind = "estimate".into();
        }
        runs.extend(pts);
        Ok(c)
    })?;
    let est: Vec<f64> = est.iter().map(|c| c[0].rps).collect();
    let common = 0.5 * est.iter().copied().fold(f64::INFINITY, f64::min);
    let open = |i: usize, rate: f64| LoadConfig {
        transport: plan.transport,
        mode: Mode::Open {
            rate: rate.max(100.0),
        },
        duration: s.sweep_duration,
        warmup: s.sweep_warmup,
        ..s.client(systems[i].protocol)
    };
    let mut caps: Vec<Vec<Capacity>> = vec![Vec::new(); n];
    let mut common_cpu: Vec<Vec<f64>> = vec![Vec::new(); n];
    for rep in 0..plan.reps.max(1) {
        let mut sweeps: Vec<Vec<Point>> = vec![Vec::new(); n];
        for (k, f) in plan.fractions.iter().enumerate() {
            for i in measure::rotation(n, rep + k) {
                if !servers[i].alive() {
                    return Err(format!(
                        "{} died; see {}",
                        servers[i].spec.label,
                        servers[i].log.display()
                    ));
                }
                let p = measure::run_point(
                    s,
                    &servers[i],
                    &open(i, f * est[i]),
                    w,
                    plan.label,
                    rep,
                    "sweep",
                )?;
                s.progress(&p);
                sweeps[i].push(p);
            }
        }
        if plan.common_load {
            for i in measure::rotation(n, rep) {
                let p = measure::run_point(
                    s,
                    &servers[i],
                    &open(i, common),
                    w,
                    plan.label,
                    rep,
                    "fixed",
                )?;
                s.progress(&p);
                common_cpu[i].push(p.server_cpu_us_per_req);
                runs.push(p);
            }
        }
        for i in 0..n {
            let k = measure::knee_of(&sweeps[i], plan.max_mean_us);
            caps[i].push(match k {
                // A sweep is as disturbed as its worst point up to the knee.
                Some(k) => Capacity {
                    disturbance: sweeps[i][..=k]
                        .iter()
                        .map(Point::disturbance)
                        .fold(0.0, f64::max),
                    ..Capacity::of(&sweeps[i][k], None)
                },
                None => Capacity::none(&sweeps[i]),
            });
            runs.extend(sweeps[i].iter().cloned());
        }
    }
    Ok((0..n)
        .map(|i| SweepResult {
            system: systems[i].label().to_owned(),
            estimate_rps: est[i],
            knee: measure::summarize(plan.label, systems[i].label(), &caps[i]),
            common: plan
                .common_load
                .then(|| (common, measure::median(&common_cpu[i]))),
        })
        .collect())
}

/// A throughput–latency curve of one (case, system) from its sweep runs:
/// runs at the same offered load (the repetitions) are merged by their
/// medians, only loads whose median achieved/offered meets the 95% rule
/// are kept (as the paper plots them), ordered by achieved load.
pub fn curve(
    points: &[Point],
    case: &str,
    system: &str,
    latency: impl Fn(&Point) -> f64,
) -> Vec<(f64, f64)> {
    let mut pts: Vec<&Point> = points
        .iter()
        .filter(|p| p.case == case && p.system == system && p.kind == "sweep")
        .collect();
    pts.sort_by(|a, b| {
        a.offered_rps
            .unwrap_or(0.0)
            .total_cmp(&b.offered_rps.unwrap_or(0.0))
    });
    let mut out = Vec::new();
    let mut i = 0;
    while i < pts.len() {
        let offered = pts[i].offered_rps.unwrap_or(0.0);
        let same: Vec<&Point> = pts[i..]
            .iter()
            .take_while(|p| (p.offered_rps.unwrap_or(0.0) - offered).abs() <= 1e-6 * offered)
            .copied()
            .collect();
        i += same.len().max(1);
        let achieved = median(&same.iter().map(|p| p.achieved_rps).collect::<Vec<_>>());
        if offered > 0.0 && achieved >= crate::load::KNEE_RATIO * offered {
            out.push((
                achieved,
                median(&same.iter().map(|p| latency(p)).collect::<Vec<_>>()),
            ));
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}
