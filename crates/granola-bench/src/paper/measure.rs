//! Measurement primitives shared by the experiments: one run against one
//! server with its CPU time, sweeps, the knee rules, capacity ("highest
//! achieved throughput") and the median summaries.

use serde::Serialize;

use crate::load::stats::Latency;
use crate::load::{self, LoadConfig, LoadReport, Mode, KNEE_RATIO};
use crate::workload::Workload;

use super::env;
use super::servers::Server;
use super::Settings;

/// One measured run (the JSON `runs[]` objects).
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Experiment case (workload / shape).
    pub case: String,
    /// System (server variant) label.
    pub system: String,
    /// Repetition index.
    pub rep: usize,
    /// What the run was for: "closed", "estimate", "sweep", "fixed".
    pub kind: String,
    /// `closed` or `open`.
    pub mode: &'static str,
    /// Closed loop: ops outstanding per connection.
    pub depth: Option<u32>,
    /// Connections.
    pub conns: usize,
    /// Open loop: offered load, ops/s.
    pub offered_rps: Option<f64>,
    /// Ops completed correctly per second.
    pub achieved_rps: f64,
    /// Wire requests answered correctly per second.
    pub requests_per_s: f64,
    /// Op latency, µs.
    pub latency_us: Latency,
    /// Ops whose requests all succeeded.
    pub ops_ok: u64,
    /// Ops with a miss.
    pub ops_miss: u64,
    /// Failed requests (errors + timeouts), warm-up included.
    pub errors: u64,
    /// Server CPU time (user + system, all threads) during the run, s.
    pub server_cpu_s: f64,
    /// Server CPU time / wall time of the run.
    pub server_util: f64,
    /// Server CPU time per answered wire request (warm-up included), µs.
    pub server_cpu_us_per_req: f64,
    /// Client CPU time / wall time.
    pub client_util: f64,
    /// Measurement window, s.
    pub window_s: f64,
    /// Wall time of the whole run (warm-up, window, drain), s.
    pub wall_s: f64,
    /// Busy fraction of every CPU during the run.
    pub cpu_busy: Vec<f64>,
    /// Interrupt + softirq fraction of every CPU (loopback TCP's stack
    /// work, which `/proc/PID/stat` does not charge to the process).
    pub cpu_irq: Vec<f64>,
    /// CPU time of *other* tasks (and hypervisor steal) on the server's and
    /// the client's CPU during the run, as fractions: the machine's other
    /// load. Runs above [`DISTURBED`] are repeated.
    pub foreign: [f64; 2],
    /// Attempts made (more than 1: earlier ones were disturbed by other
    /// load; the least disturbed is kept).
    pub attempts: u32,
}

/// A run whose server or client CPU spent more than this fraction on other
/// tasks (or stolen by the hypervisor) is disturbed and repeated.
pub const DISTURBED: f64 = 0.2;

impl Point {
    /// The larger of the two foreign shares.
    pub fn disturbance(&self) -> f64 {
        self.foreign[0].max(self.foreign[1])
    }

    /// achieved / offered (1 for closed loop).
    pub fn ratio(&self) -> f64 {
        match self.offered_rps {
            Some(o) if o > 0.0 => self.achieved_rps / o,
            _ => 1.0,
        }
    }
}

/// Runs `cfg` (its address replaced by the server's) and records the
/// server's CPU time around it. A run that other tasks disturbed (see
/// [`DISTURBED`]) is repeated, after a second's pause, up to the settings'
/// retries; the least disturbed attempt is returned.
pub fn run_point(
    s: &Settings,
    server: &Server,
    cfg: &LoadConfig,
    workload: &dyn Workload,
    case: &str,
    rep: usize,
    kind: &str,
) -> Result<Point, String> {
    let cfg = LoadConfig {
        addr: server.addr(cfg.protocol, cfg.transport)?,
        ..cfg.clone()
    };
    let mut best: Option<Point> = None;
    // While the machine stays busy (the last runs were all disturbed),
    // repeating only costs time: one attempt then.
    let retries = if s.busy_streak.get() >= BUSY_STREAK {
        0
    } else {
        s.retries
    };
    let mut attempts = 0;
    for attempt in 0..=retries {
        attempts += 1;
        if attempt > 0 {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        let ticks0 = env::cpu_ticks();
        let cpu0 = server.cpu_s();
        let r =
            load::run(&cfg, workload).map_err(|e| format!("{} {case}: {e}", server.spec.label))?;
        let cpu = (server.cpu_s() - cpu0).max(0.0);
        let share = env::cpu_share(&ticks0, &env::cpu_ticks());
        let p = point_of(&r, &cfg, server, case, rep, kind, cpu, &share, s);
        let calm = p.disturbance() <= DISTURBED;
        if best
            .as_ref()
            .is_none_or(|b| p.disturbance() < b.disturbance())
        {
            best = Some(p);
        }
        if calm {
            break;
        }
        if attempt < retries {
            s.say(&format!(
                "  ({case} / {}: other load {:.0}% / {:.0}% on the server / client CPU; repeating)",
                server.spec.label,
                best.as_ref().map_or(0.0, |b| b.foreign[0]) * 100.0,
                best.as_ref().map_or(0.0, |b| b.foreign[1]) * 100.0
            ));
        }
    }
    let mut best = best.expect("at least one attempt");
    best.attempts = attempts;
    if best.disturbance() > DISTURBED {
        s.busy_streak.set(s.busy_streak.get() + 1);
        if s.busy_streak.get() == BUSY_STREAK && s.retries > 0 {
            s.say("  (the machine stays busy: disturbed runs are no longer repeated until one is calm)");
        }
    } else {
        s.busy_streak.set(0);
    }
    Ok(best)
}

/// After this many disturbed runs in a row, runs are not repeated.
pub const BUSY_STREAK: u32 = 3;

#[allow(clippy::too_many_arguments)]
fn point_of(
    r: &LoadReport,
    cfg: &LoadConfig,
    server: &Server,
    case: &str,
    rep: usize,
    kind: &str,
    cpu: f64,
    share: &[env::CpuShare],
    s: &Settings,
) -> Point {
    let wall = r.wall_s.max(1e-9);
    let (server_util, client_util) = (cpu / wall, r.client_cpu_s / wall);
    let other = |c: usize, mine: f64| {
        share
            .get(c)
            .map_or(0.0, |x| (x.task + x.steal - mine).max(0.0))
    };
    let answered = r.counts.req_ok + r.counts.req_miss + r.warmup.req_ok + r.warmup.req_miss;
    Point {
        case: case.into(),
        system: server.spec.label.clone(),
        rep,
        kind: kind.into(),
        mode: match cfg.mode {
            Mode::Open { .. } => "open",
            Mode::Closed { .. } => "closed",
        },
        depth: match cfg.mode {
            Mode::Closed { depth } => Some(depth),
            Mode::Open { .. } => None,
        },
        conns: cfg.conns * cfg.threads.max(1),
        offered_rps: r.offered_rps,
        achieved_rps: r.achieved_rps,
        requests_per_s: r.requests_per_s,
        latency_us: r.latency_us.clone(),
        ops_ok: r.counts.ops_ok,
        ops_miss: r.counts.ops_miss,
        errors: r.errors,
        server_cpu_s: cpu,
        server_util,
        server_cpu_us_per_req: if answered > 0 {
            cpu * 1e6 / answered as f64
        } else {
            0.0
        },
        client_util,
        window_s: r.window_s,
        wall_s: r.wall_s,
        cpu_busy: share.iter().map(|x| x.busy).collect(),
        cpu_irq: share.iter().map(|x| x.irq).collect(),
        foreign: [
            other(s.server_cpu, server_util),
            other(s.client_cpu, client_util),
        ],
        attempts: 1,
    }
}

/// Loads the workload's keys into the server (over `cfg`'s protocol).
pub fn load_into(
    server: &Server,
    cfg: &LoadConfig,
    workload: &dyn Workload,
) -> Result<LoadReport, String> {
    if workload.load_count() == 0 {
        return Err("nothing to load".into());
    }
    let cfg = LoadConfig {
        addr: server.addr(cfg.protocol, crate::load::Transport::Tcp)?,
        transport: crate::load::Transport::Tcp,
        ..cfg.clone()
    };
    let r = load::load(&cfg, workload).map_err(|e| format!("load {}: {e}", server.spec.label))?;
    if r.errors > 0 {
        return Err(format!(
            "load {}: {} of {} load requests failed ({:?})",
            server.spec.label, r.errors, r.counts.requests, r.counts.errors
        ));
    }
    Ok(r)
}

/// The knee among `(offered, achieved, mean latency µs)` points: the
/// highest achieved load whose achieved/offered ≥ 95% and, with
/// `max_mean_us`, whose mean latency is below it (Hippos' "peak throughput
/// with mean latency under 1 ms"). `None` when no point qualifies.
pub fn knee_with(points: &[(f64, f64, f64)], max_mean_us: Option<f64>) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &(offered, achieved, mean)) in points.iter().enumerate() {
        let ok = offered > 0.0
            && achieved >= KNEE_RATIO * offered
            && max_mean_us.is_none_or(|m| mean < m);
        if ok && best.is_none_or(|b| achieved > points[b].1) {
            best = Some(i);
        }
    }
    best
}

/// [`knee_with`] over sweep points.
pub fn knee_of(points: &[Point], max_mean_us: Option<f64>) -> Option<usize> {
    let v: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|p| {
            (
                p.offered_rps.unwrap_or(0.0),
                p.achieved_rps,
                p.latency_us.mean,
            )
        })
        .collect();
    knee_with(&v, max_mean_us)
}

/// How "highest achieved throughput" is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A closed loop with many requests outstanding saturates the server;
    /// its achieved rate is the capacity.
    Closed,
    /// A closed-loop estimate, then an open-loop sweep around it; the knee
    /// (achieved ≥ 95% of offered) is the capacity (Cornflakes' rule).
    Knee,
}

impl Method {
    /// Parses `closed` / `knee`.
    pub fn parse(s: &str) -> Result<Method, String> {
        match s {
            "closed" => Ok(Method::Closed),
            "knee" => Ok(Method::Knee),
            _ => Err(format!("unknown method {s:?} (closed, knee)")),
        }
    }
}

/// A capacity measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Capacity {
    /// Highest achieved load (ops/s) by the method's rule.
    pub rps: f64,
    /// p99 latency there, µs.
    pub p99_us: f64,
    /// Mean latency there, µs.
    pub mean_us: f64,
    /// Server CPU per request there, µs.
    pub server_cpu_us_per_req: f64,
    /// Index into the points of the run that gave it.
    pub at: Option<usize>,
    /// That run's [`Point::disturbance`].
    pub disturbance: f64,
}

impl Capacity {
    /// The capacity a run shows.
    pub fn of(p: &Point, at: Option<usize>) -> Capacity {
        Capacity {
            rps: p.achieved_rps,
            p99_us: p.latency_us.p99,
            mean_us: p.latency_us.mean,
            server_cpu_us_per_req: p.server_cpu_us_per_req,
            at,
            disturbance: p.disturbance(),
        }
    }

    /// No knee in `sweep`: zero, disturbed as much as its worst run.
    pub fn none(sweep: &[Point]) -> Capacity {
        Capacity {
            rps: 0.0,
            p99_us: f64::NAN,
            mean_us: f64::NAN,
            server_cpu_us_per_req: f64::NAN,
            at: None,
            disturbance: sweep.iter().map(Point::disturbance).fold(0.0, f64::max),
        }
    }
}

/// Offered loads of a knee sweep, as fractions of the closed-loop estimate.
pub fn sweep_fractions(quick: bool) -> &'static [f64] {
    if quick {
        &[0.7, 0.9, 1.0]
    } else {
        &[0.5, 0.7, 0.8, 0.9, 0.95, 1.0, 1.05]
    }
}

/// Measures the capacity of `server` under `workload` by `method`.
/// `closed` is the saturating closed-loop configuration; the open-loop
/// sweep (for [`Method::Knee`]) uses the same connections and the
/// settings' sweep window. Every run is appended to `out`.
#[allow(clippy::too_many_arguments)]
pub fn capacity(
    s: &Settings,
    server: &Server,
    closed: &LoadConfig,
    workload: &dyn Workload,
    method: Method,
    case: &str,
    rep: usize,
    out: &mut Vec<Point>,
) -> Result<Capacity, String> {
    let est = run_point(s, server, closed, workload, case, rep, "closed")?;
    s.progress(&est);
    let base = out.len();
    out.push(est.clone());
    if method == Method::Closed {
        return Ok(Capacity::of(&est, Some(base)));
    }
    out.last_mut().expect("pushed").kind = "estimate".into();
    let rates: Vec<f64> = sweep_fractions(s.quick)
        .iter()
        .map(|f| f * est.achieved_rps)
        .filter(|r| *r > 0.0)
        .collect();
    let sweep = sweep(s, server, closed, workload, &rates, case, rep)?;
    let knee = knee_of(&sweep, None);
    let first = out.len();
    out.extend(sweep.iter().cloned());
    Ok(match knee {
        Some(i) => Capacity::of(&sweep[i], Some(first + i)),
        None => Capacity::none(&sweep),
    })
}

/// An open-loop sweep over `rates` with the settings' sweep window;
/// `base` gives protocol, connections and threads.
pub fn sweep(
    s: &Settings,
    server: &Server,
    base: &LoadConfig,
    workload: &dyn Workload,
    rates: &[f64],
    case: &str,
    rep: usize,
) -> Result<Vec<Point>, String> {
    let mut pts = Vec::with_capacity(rates.len());
    for &rate in rates {
        let cfg = LoadConfig {
            mode: Mode::Open { rate },
            duration: s.sweep_duration,
            warmup: s.sweep_warmup,
            ..base.clone()
        };
        let p = run_point(s, server, &cfg, workload, case, rep, "sweep")?;
        s.progress(&p);
        pts.push(p);
    }
    Ok(pts)
}

/// Median of `v` (mean of the middle two for even lengths); NaN if empty.
pub fn median(v: &[f64]) -> f64 {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Median over repetitions of one (case, system).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Case.
    pub case: String,
    /// System.
    pub system: String,
    /// Repetitions.
    pub n: usize,
    /// Repetitions the medians are over: the undisturbed ones when there
    /// are any, else all.
    pub n_used: usize,
    /// Median throughput, ops/s.
    pub rps: f64,
    /// Smallest and largest over the repetitions.
    pub rps_min: f64,
    /// Largest.
    pub rps_max: f64,
    /// Median p99 at it, µs.
    pub p99_us: f64,
    /// Median mean latency, µs.
    pub mean_us: f64,
    /// Median server CPU per request, µs.
    pub server_cpu_us_per_req: f64,
}

/// Summarizes capacities (one per repetition): medians over the
/// repetitions other load did not disturb, or over all when every one was.
pub fn summarize(case: &str, system: &str, all: &[Capacity]) -> Summary {
    let calm: Vec<Capacity> = all
        .iter()
        .filter(|c| c.disturbance <= DISTURBED)
        .cloned()
        .collect();
    let caps: &[Capacity] = if calm.is_empty() { all } else { &calm };
    let rps: Vec<f64> = caps.iter().map(|c| c.rps).collect();
    Summary {
        case: case.into(),
        system: system.into(),
        n: all.len(),
        n_used: caps.len(),
        rps: median(&rps),
        rps_min: rps.iter().copied().fold(f64::INFINITY, f64::min),
        rps_max: rps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        p99_us: median(&caps.iter().map(|c| c.p99_us).collect::<Vec<_>>()),
        mean_us: median(&caps.iter().map(|c| c.mean_us).collect::<Vec<_>>()),
        server_cpu_us_per_req: median(
            &caps
                .iter()
                .map(|c| c.server_cpu_us_per_req)
                .collect::<Vec<_>>(),
        ),
    }
}

/// The order systems run in repetition `rep`: rotated by `rep`, so no
/// system always runs first (interleaving against drift in the machine).
pub fn rotation(n: usize, rep: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (i + rep) % n.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knee_rules() {
        // (offered, achieved, mean µs)
        let pts = [
            (100e3, 99e3, 50.0),
            (200e3, 196e3, 300.0),
            (300e3, 290e3, 1500.0),
            (400e3, 310e3, 9000.0),
        ];
        assert_eq!(knee_with(&pts, None), Some(2));
        // Mean under 1 ms rules out the 300k point.
        assert_eq!(knee_with(&pts, Some(1000.0)), Some(1));
        assert_eq!(knee_with(&pts, Some(10.0)), None);
        assert_eq!(knee_with(&[], None), None);
        // Exactly 95% qualifies.
        assert_eq!(knee_with(&[(100.0, 95.0, 1.0)], Some(2.0)), Some(0));
    }

    #[test]
    fn medians_and_rotation() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
        assert_eq!(rotation(3, 0).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(rotation(3, 1).collect::<Vec<_>>(), vec![1, 2, 0]);
        assert_eq!(rotation(3, 5).collect::<Vec<_>>(), vec![2, 0, 1]);
    }
}
