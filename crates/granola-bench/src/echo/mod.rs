//! The echo benchmark (issue #3): `granola-bench echo`.
//!
//! An echo server (granola-net's epoll server, one worker thread) and a
//! closed-loop client run on two cores (`--server-cpu`, `--client-cpu`) over
//! TCP loopback; the client keeps `--depth` requests in flight, checks every
//! reply byte, and reports messages/s, p50/p99 round-trip time and both
//! threads' CPU time per message (see [`harness`]). Three parts:
//!
//! 1. [`fig2`]: the paper's echo application on the Cornflakes Figure 2
//!    shape (a list of 2 × 2048 B) — granola fused serialize-and-send,
//!    non-fused, only-copy, two-copy, prost, flatbuffers, capnp;
//! 2. [`pieces`]: seed 004 §5.0.1 — raw messages of 64 B … 256 KiB split
//!    into 1, 2, 8, 32 cold pieces, sent as a contiguous copy or gathered,
//!    with and without prefetch, and granola's hybrid rule;
//! 3. [`pieces`] again: `MSG_ZEROCOPY` vs plain for 4 KiB, 64 KiB, 256 KiB;
//! 4. [`udp`]: part 1's variants over UDP, the server on kernel sockets or
//!    on AF_XDP, between two network namespaces (root; not in the default
//!    parts: `--parts 4`).
//!
//! Within a group (a shape, a size × pieces configuration) the variants run
//! interleaved — A B C … A B C … — `--reps` times, each run a fresh server
//! and connection; tables show medians over the repetitions and their
//! spread ((max − min) / median). Every loop is bounded by a message count
//! and by time.
//!
//! # Metrics
//!
//! * **msgs/s**, **p50/p99**: what the client sees. With depth 16 on one
//!   connection the two threads mostly take turns (a batch of 16 requests,
//!   one `sendmsg` of 16 replies), so a run's throughput is the inverse of
//!   the batch round trip — wake-ups and the kernel included — and on a
//!   shared machine it carries all of the scheduling noise.
//! * **server ns/msg**: the server thread's CPU time
//!   (`/proc/thread-self/schedstat`) per request in the window — receive,
//!   handler, send, and the loopback delivery the sending thread pays for.
//!   Idle time is not in it (the server blocks in `epoll_wait`).
//! * **handler ns/msg** (part 1 table): wall time inside the variant's
//!   handler — decode, build the reply, queue it (serialize, copy) — per
//!   request, timed around each batch: the user-space part that differs
//!   between the variants, without the syscalls.

pub mod fig2;
pub mod harness;
pub mod pieces;
pub mod reply;
pub mod udp;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use granola::{Pool, PoolConfig};
use serde::Serialize;

use fig2::Fig2Variant;
use harness::{median, RunResult, RunSpec};
use pieces::{PieceSet, PieceVariant};

/// Message sizes of part 2 (bytes).
pub const PART2_SIZES: [usize; 5] = [64, 1024, 4096, 100 << 10, 256 << 10];
/// Piece counts of part 2.
pub const PART2_PIECES: [usize; 4] = [1, 2, 8, 32];
/// Message sizes of part 3 (bytes).
pub const PART3_SIZES: [usize; 3] = [4096, 64 << 10, 256 << 10];

/// Arguments of `granola-bench echo`.
#[derive(clap::Args, Debug, Clone)]
pub struct EchoArgs {
    /// Write every measurement as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Short smoke run (seconds): 1 repetition, short windows, small spread.
    #[arg(long)]
    pub quick: bool,
    /// Repetitions of every variant (interleaved); default 5, quick 1.
    #[arg(long)]
    pub reps: Option<usize>,
    /// Requests the client keeps in flight.
    #[arg(long, default_value_t = 16)]
    pub depth: usize,
    /// CPU the server worker thread is pinned to.
    #[arg(long, default_value_t = 0)]
    pub server_cpu: usize,
    /// CPU the client thread is pinned to.
    #[arg(long, default_value_t = 1)]
    pub client_cpu: usize,
    /// Do not pin threads.
    #[arg(long)]
    pub no_pin: bool,
    /// Measured seconds per run; default 1.0, quick 0.15.
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Warm-up per run in milliseconds; default 200, quick 50.
    #[arg(long)]
    pub warmup_ms: Option<u64>,
    /// A run's window also closes after this many replies.
    #[arg(long, default_value_t = 5_000_000)]
    pub max_messages: u64,
    /// Parts to run (comma separated): 1 = Figure 2 shape, 2 = copy vs
    /// gather, 3 = MSG_ZEROCOPY, 4 = the Figure 2 shape over UDP, kernel
    /// sockets vs AF_XDP (root; default 1,2,3).
    #[arg(long, value_delimiter = ',')]
    pub parts: Vec<u32>,
    /// Variants to run (names as printed; default: all).
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<String>,
    /// Part 2 message sizes in bytes (default 64,1024,4096,102400,262144).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<usize>,
    /// Part 2 piece counts (default 1,2,8,32).
    #[arg(long, value_delimiter = ',')]
    pub pieces: Vec<usize>,
    /// Pool memory (MiB) the pieces of one part 2/3 configuration are spread
    /// over; default 128 (4× the LLC), quick 16.
    #[arg(long)]
    pub spread_mib: Option<usize>,
    /// Seed for request contents and piece placement.
    #[arg(long, default_value_t = 0x0065_6368_6f21)]
    pub seed: u64,
}

/// The settled configuration of a benchmark run.
#[derive(Clone, Debug, Serialize)]
pub struct EchoConfig {
    /// Repetitions per variant.
    pub reps: usize,
    /// Requests in flight.
    pub depth: usize,
    /// Server CPU (None: unpinned).
    pub server_cpu: Option<usize>,
    /// Client CPU (None: unpinned).
    pub client_cpu: Option<usize>,
    /// Measured seconds per run.
    pub seconds: f64,
    /// Warm-up per run, ms.
    pub warmup_ms: u64,
    /// Message cap per window.
    pub max_messages: u64,
    /// Parts run.
    pub parts: Vec<u32>,
    /// Part 2 sizes.
    pub sizes: Vec<usize>,
    /// Part 2 piece counts.
    pub pieces: Vec<usize>,
    /// Spread of the pieces, bytes.
    pub spread_bytes: usize,
    /// Seed.
    pub seed: u64,
    /// Variant filter (empty: all).
    pub variants: Vec<String>,
}

impl EchoConfig {
    /// Resolves defaults (and `--quick`) of `args`.
    pub fn from_args(args: &EchoArgs) -> EchoConfig {
        let q = args.quick;
        let pin = |cpu| (!args.no_pin).then_some(cpu);
        EchoConfig {
            reps: args.reps.unwrap_or(if q { 1 } else { 5 }).max(1),
            depth: args.depth.max(1),
            server_cpu: pin(args.server_cpu),
            client_cpu: pin(args.client_cpu),
            seconds: args.seconds.unwrap_or(if q { 0.15 } else { 1.0 }),
            warmup_ms: args.warmup_ms.unwrap_or(if q { 50 } else { 200 }),
            max_messages: args.max_messages.max(1),
            parts: if args.parts.is_empty() {
                vec![1, 2, 3]
            } else {
                args.parts.clone()
            },
            sizes: if args.sizes.is_empty() {
                PART2_SIZES.to_vec()
            } else {
                args.sizes.clone()
            },
            pieces: if args.pieces.is_empty() {
                PART2_PIECES.to_vec()
            } else {
                args.pieces.clone()
            },
            spread_bytes: args.spread_mib.unwrap_or(if q { 16 } else { 128 }) << 20,
            seed: args.seed,
            variants: args.variants.clone(),
        }
    }

    /// The run settings for a server TX configuration.
    pub fn run_spec(&self, tx: granola_net::TxConfig) -> RunSpec {
        RunSpec {
            server_cpu: self.server_cpu,
            client_cpu: self.client_cpu,
            depth: self.depth,
            warmup: Duration::from_millis(self.warmup_ms),
            measure: Duration::from_secs_f64(self.seconds),
            max_messages: self.max_messages,
            tx,
        }
    }

    fn wants(&self, variant: &str) -> bool {
        self.variants.is_empty() || self.variants.iter().any(|v| v == variant)
    }
}

/// Medians over a variant's repetitions.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Median messages/s.
    pub msgs_per_s: f64,
    /// (max − min) / median of messages/s over the repetitions.
    pub msgs_per_s_spread: f64,
    /// Median p50 round trip, µs.
    pub p50_us: f64,
    /// Median p99 round trip, µs.
    pub p99_us: f64,
    /// Median server CPU ns per message.
    pub server_ns_per_msg: f64,
    /// (max − min) / median of the server CPU per message.
    pub server_ns_spread: f64,
    /// Median server handler (user-space) ns per message.
    pub server_app_ns_per_msg: f64,
    /// (max − min) / median of the handler ns per message.
    pub server_app_ns_spread: f64,
    /// Median client CPU ns per message.
    pub client_ns_per_msg: f64,
    /// Median bytes copied by the server per message.
    pub copied_bytes_per_msg: f64,
    /// Median bytes referenced by the server per message.
    pub referenced_bytes_per_msg: f64,
    /// Median `sendmsg` calls per message.
    pub sendmsg_per_msg: f64,
    /// Zero-copy completions over all repetitions.
    pub zc_completed: u64,
    /// ... flagged "copied" by the kernel.
    pub zc_copied: u64,
}

impl Summary {
    fn of(reps: &[RunResult]) -> Summary {
        let m = |f: fn(&RunResult) -> f64| median(reps.iter().map(f).collect());
        let spread = |f: fn(&RunResult) -> f64| {
            let mid = m(f);
            let (lo, hi) = reps
                .iter()
                .map(f)
                .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(x), hi.max(x)));
            if mid > 0.0 {
                (hi - lo) / mid
            } else {
                0.0
            }
        };
        Summary {
            msgs_per_s: m(|r| r.msgs_per_s),
            msgs_per_s_spread: spread(|r| r.msgs_per_s),
            p50_us: m(|r| r.p50_us),
            p99_us: m(|r| r.p99_us),
            server_ns_per_msg: m(|r| r.server_ns_per_msg),
            server_ns_spread: spread(|r| r.server_ns_per_msg),
            server_app_ns_per_msg: m(|r| r.server_app_ns_per_msg),
            server_app_ns_spread: spread(|r| r.server_app_ns_per_msg),
            client_ns_per_msg: m(|r| r.client_ns_per_msg),
            copied_bytes_per_msg: m(|r| r.copied_bytes_per_msg),
            referenced_bytes_per_msg: m(|r| r.referenced_bytes_per_msg),
            sendmsg_per_msg: m(|r| r.sendmsg_per_msg),
            zc_completed: reps.iter().map(|r| r.zc_completed).sum(),
            zc_copied: reps.iter().map(|r| r.zc_copied).sum(),
        }
    }
}

/// Every repetition of one variant in one group, and their medians.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// 1, 2 or 3.
    pub part: u32,
    /// The group: `list-2x2048`, or `<size>/<pieces>`.
    pub group: String,
    /// Variant name.
    pub variant: String,
    /// Payload bytes per reply (part 1: the variant's encoding).
    pub msg_bytes: usize,
    /// Pieces per message (part 1: values).
    pub pieces: usize,
    /// Bytes per piece.
    pub piece_bytes: usize,
    /// One entry per repetition, in run order.
    pub reps: Vec<RunResult>,
    /// Medians.
    pub median: Summary,
}

/// One target of the issue, evaluated on two metrics: messages/s (what
/// the client sees; on a shared 2-vCPU machine it also carries scheduling
/// noise) and server CPU time per message (the cost of the path being
/// compared; steadier). Each is compared with the best reference variant
/// on that metric.
#[derive(Clone, Debug, Serialize)]
pub struct TargetCheck {
    /// What is compared.
    pub what: String,
    /// The fused/hybrid variant.
    pub variant: String,
    /// The rule: `beats` (margin > 0) or `within 3%` (margin ≥ −3%).
    pub rule: &'static str,
    /// The reference with the most messages/s.
    pub against: String,
    /// msgs/s of ours over that reference's, minus 1 (positive = faster).
    pub margin: f64,
    /// The rule holds on messages/s.
    pub met: bool,
    /// The reference with the least server CPU per message.
    pub against_cpu: String,
    /// That reference's server CPU per message over ours, minus 1
    /// (positive = ours is cheaper).
    pub cpu_margin: f64,
    /// The rule holds on server CPU per message.
    pub cpu_met: bool,
    /// Part 1 only: the reference with the least handler time per message
    /// (decode + build + queue, user space; the kernel's share of the send
    /// is not in it, so this favours gathering somewhat).
    pub against_handler: Option<String>,
    /// That reference's handler time over ours, minus 1.
    pub handler_margin: Option<f64>,
    /// The rule holds on handler time.
    pub handler_met: Option<bool>,
}

/// The whole output.
#[derive(Clone, Debug, Serialize)]
pub struct EchoReport {
    /// "echo".
    pub benchmark: &'static str,
    /// UTC date the run started.
    pub date: String,
    /// CPU model, kernel, CPUs.
    pub machine: String,
    /// `/proc/loadavg` before and after.
    pub loadavg: [String; 2],
    /// Settings.
    pub config: EchoConfig,
    /// Wall-clock seconds.
    pub wall_secs: f64,
    /// Every measurement.
    pub records: Vec<Record>,
    /// The targets.
    pub targets: Vec<TargetCheck>,
}

fn human_size(b: usize) -> String {
    if b >= 1024 && b % 1024 == 0 {
        format!("{}KiB", b / 1024)
    } else {
        format!("{b}B")
    }
}

/// Runs `variants` interleaved, `reps` times; `run` does one measurement.
fn interleave<V: Copy>(
    cfg: &EchoConfig,
    label: &str,
    variants: &[V],
    name: impl Fn(V) -> String,
    mut run: impl FnMut(V) -> Result<RunResult, String>,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Vec<RunResult>>, String> {
    let mut out = vec![Vec::with_capacity(cfg.reps); variants.len()];
    for rep in 0..cfg.reps {
        for (i, &v) in variants.iter().enumerate() {
            let r = run(v).map_err(|e| format!("{label} {}: {e}", name(v)))?;
            log(&format!(
                "  {label} rep {}/{} {:<28} {:>9.0} msg/s  p50 {:>7.1} µs  p99 {:>7.1} µs  server {:>6.0} ns/msg",
                rep + 1,
                cfg.reps,
                name(v),
                r.msgs_per_s,
                r.p50_us,
                r.p99_us,
                r.server_ns_per_msg
            ));
            out[i].push(r);
        }
    }
    Ok(out)
}

/// Runs the benchmark as configured and returns every measurement.
/// `log` receives progress lines.
pub fn run(cfg: &EchoConfig, log: &mut dyn FnMut(&str)) -> Result<Vec<Record>, String> {
    let server_pool = Pool::new(PoolConfig {
        capacity: 8 << 30,
        huge_pages: true,
        budget: None,
    })
    .map_err(|e| format!("reserve the server pool: {e}"))?;
    let client_pool = Pool::new(PoolConfig {
        capacity: 2 << 30,
        huge_pages: true,
        budget: None,
    })
    .map_err(|e| format!("reserve the client pool: {e}"))?;
    let mut records = Vec::new();

    if cfg.parts.contains(&1) {
        let variants: Vec<Fig2Variant> = Fig2Variant::ALL
            .into_iter()
            .filter(|v| cfg.wants(v.name()))
            .collect();
        log(&format!(
            "part 1: list of {}×{} B, {} variants",
            fig2::VALUES,
            fig2::VALUE_LEN,
            variants.len()
        ));
        let reps = interleave(
            cfg,
            "list-2x2048",
            &variants,
            |v| v.name().to_string(),
            |v| {
                harness::run(
                    &cfg.run_spec(granola_net::TxConfig::default()),
                    &server_pool,
                    &client_pool,
                    v.handler_factory(),
                    v.client(cfg.seed),
                )
            },
            log,
        )?;
        for (v, reps) in variants.iter().zip(reps) {
            records.push(Record {
                part: 1,
                group: "list-2x2048".into(),
                variant: v.name().into(),
                msg_bytes: fig2::wire_len(*v),
                pieces: fig2::VALUES,
                piece_bytes: fig2::VALUE_LEN,
                median: Summary::of(&reps),
                reps,
            });
        }
    }

    let mut piece_part = |part: u32,
                          sizes: &[usize],
                          counts: &[usize],
                          variants: &[PieceVariant],
                          log: &mut dyn FnMut(&str)|
     -> Result<(), String> {
        let variants: Vec<PieceVariant> = variants
            .iter()
            .copied()
            .filter(|v| cfg.wants(v.name()))
            .collect();
        if variants.is_empty() {
            return Ok(());
        }
        for &size in sizes {
            for &n in counts {
                if n == 0 || size % n != 0 {
                    log(&format!("skipping {size} B in {n} pieces (not divisible)"));
                    continue;
                }
                let group = format!("{}/{n}", human_size(size));
                let t = Instant::now();
                let set = Arc::new(PieceSet::new(
                    &server_pool,
                    size,
                    n,
                    cfg.spread_bytes,
                    cfg.seed ^ ((size as u64) << 8) ^ n as u64,
                )?);
                log(&format!(
                    "part {part}: {group}: {} messages of {n} × {} B over {} MiB of pool slots (set up in {:.2} s)",
                    set.messages(),
                    size / n,
                    cfg.spread_bytes >> 20,
                    t.elapsed().as_secs_f64()
                ));
                let reps = interleave(
                    cfg,
                    &group,
                    &variants,
                    |v| v.name().to_string(),
                    |v| {
                        harness::run(
                            &cfg.run_spec(v.tx_config()),
                            &server_pool,
                            &client_pool,
                            v.handler_factory(&set),
                            v.client(&set),
                        )
                    },
                    log,
                )?;
                for (v, reps) in variants.iter().zip(reps) {
                    records.push(Record {
                        part,
                        group: group.clone(),
                        variant: v.name().into(),
                        msg_bytes: size,
                        pieces: n,
                        piece_bytes: size / n,
                        median: Summary::of(&reps),
                        reps,
                    });
                }
            }
        }
        Ok(())
    };
    if cfg.parts.contains(&2) {
        piece_part(2, &cfg.sizes, &cfg.pieces, &PieceVariant::PART2, log)?;
    }
    if cfg.parts.contains(&3) {
        piece_part(3, &PART3_SIZES, &[1], &PieceVariant::PART3, log)?;
    }
    if cfg.parts.contains(&4) {
        records.extend(udp_part(cfg, log)?);
    }
    Ok(records)
}

/// Part 4: every part-1 variant on each server datapath, all interleaved.
fn udp_part(cfg: &EchoConfig, log: &mut dyn FnMut(&str)) -> Result<Vec<Record>, String> {
    let variants: Vec<Fig2Variant> = Fig2Variant::ALL
        .into_iter()
        .filter(|v| cfg.wants(v.name()))
        .collect();
    // Small pools: AF_XDP registers (and so pins) the whole region.
    let pool = |mib: usize| {
        Pool::new(PoolConfig {
            capacity: mib << 20,
            huge_pages: false,
            budget: None,
        })
        .map_err(|e| format!("reserve a pool: {e}"))
    };
    let (server_pool, client_pool) = (pool(256)?, pool(256)?);
    let veth = udp::veth()?;
    log(&format!(
        "part 4: list of {}×{} B over UDP between namespaces {} and {} (veth), {} variants × {:?}",
        fig2::VALUES,
        fig2::VALUE_LEN,
        veth.server_ns,
        veth.client_ns,
        variants.len(),
        udp::ServerPath::ALL.map(udp::ServerPath::name)
    ));
    let cases: Vec<(udp::ServerPath, Fig2Variant)> = udp::ServerPath::ALL
        .into_iter()
        .flat_map(|p| variants.iter().map(move |&v| (p, v)))
        .collect();
    // Per run: `depth` requests in flight on each of the client's ports.
    let spec = RunSpec {
        depth: cfg.depth.div_ceil(udp::PORTS).max(1),
        ..cfg.run_spec(udp::tx_config())
    };
    let reps = interleave(
        cfg,
        "udp",
        &cases,
        |(p, v)| format!("{} {}", p.name(), v.name()),
        |(p, v)| udp::run(&spec, &veth, p, v, cfg.seed, &server_pool, &client_pool),
        log,
    )?;
    Ok(cases
        .iter()
        .zip(reps)
        .map(|(&(p, v), reps)| Record {
            part: 4,
            group: p.name().into(),
            variant: v.name().into(),
            msg_bytes: fig2::wire_len(v),
            pieces: fig2::VALUES,
            piece_bytes: fig2::VALUE_LEN,
            median: Summary::of(&reps),
            reps,
        })
        .collect())
}

fn find<'r>(records: &'r [Record], part: u32, group: &str, variant: &str) -> Option<&'r Record> {
    records
        .iter()
        .find(|r| r.part == part && r.group == group && r.variant == variant)
}

fn groups(records: &[Record], part: u32) -> Vec<String> {
    let mut g: Vec<String> = Vec::new();
    for r in records.iter().filter(|r| r.part == part) {
        if !g.contains(&r.group) {
            g.push(r.group.clone());
        }
    }
    g
}

/// Evaluates the targets: fused beats every copying variant for the
/// 2×2048 shape and for pieces ≥ 1 KiB, and is within 3% of the best
/// variant for smaller pieces. In part 2 "fused" is granola's hybrid rule:
/// `hybrid` (the batch `TxQueue::values`) and `hybrid-1by1` (`value` per
/// piece), each checked against the non-hybrid variants.
pub fn check_targets(records: &[Record]) -> Vec<TargetCheck> {
    let mut out = Vec::new();
    let mut check = |what: String, ours: &Record, refs: &[&Record], rule: Rule, app: bool| {
        let by_tput = refs
            .iter()
            .max_by(|a, b| a.median.msgs_per_s.total_cmp(&b.median.msgs_per_s));
        let by_cpu = refs.iter().min_by(|a, b| {
            a.median
                .server_ns_per_msg
                .total_cmp(&b.median.server_ns_per_msg)
        });
        let (Some(t), Some(c)) = (by_tput, by_cpu) else {
            return;
        };
        let margin = ours.median.msgs_per_s / t.median.msgs_per_s - 1.0;
        let cpu_margin = c.median.server_ns_per_msg / ours.median.server_ns_per_msg - 1.0;
        let holds = |m: f64| match rule {
            Rule::Within3 => m >= -0.03,
            Rule::Beats => m > 0.0,
            Rule::AtLeast115 => m >= 0.15 - 1e-9,
        };
        let by_app = refs.iter().filter(|_| app).min_by(|a, b| {
            a.median
                .server_app_ns_per_msg
                .total_cmp(&b.median.server_app_ns_per_msg)
        });
        let handler_margin = by_app
            .map(|a| a.median.server_app_ns_per_msg / ours.median.server_app_ns_per_msg - 1.0);
        out.push(TargetCheck {
            what,
            variant: ours.variant.clone(),
            rule: rule.name(),
            against: t.variant.clone(),
            margin,
            met: holds(margin),
            against_cpu: c.variant.clone(),
            cpu_margin,
            cpu_met: holds(cpu_margin),
            against_handler: by_app.map(|a| a.variant.clone()),
            handler_margin,
            handler_met: handler_margin.map(holds),
        });
    };
    let shape = "list-2x2048";
    if let Some(fused) = find(records, 1, shape, Fig2Variant::Fused.name()) {
        let copying: Vec<&Record> = Fig2Variant::ALL
            .into_iter()
            .filter(|v| v.copies())
            .filter_map(|v| find(records, 1, shape, v.name()))
            .collect();
        check(
            "part 1, list of 2×2048 B: beats every copying variant".into(),
            fused,
            &copying,
            Rule::Beats,
            true,
        );
    }
    for group in groups(records, 2) {
        let in_group = |r: &&Record| r.part == 2 && r.group == group;
        let is = |r: &Record, f: fn(PieceVariant) -> bool| {
            PieceVariant::PART2
                .iter()
                .any(|v| v.name() == r.variant && f(*v))
        };
        for hybrid in records
            .iter()
            .filter(in_group)
            .filter(|r| is(r, PieceVariant::is_hybrid))
        {
            let big = hybrid.piece_bytes >= 1024;
            let refs: Vec<&Record> = records
                .iter()
                .filter(in_group)
                .filter(|r| !is(r, PieceVariant::is_hybrid))
                .filter(|r| !big || is(r, PieceVariant::copies))
                .collect();
            let what = if big {
                format!(
                    "part 2, {group} ({} B pieces): beats copying",
                    hybrid.piece_bytes
                )
            } else {
                format!(
                    "part 2, {group} ({} B pieces): within 3% of the best",
                    hybrid.piece_bytes
                )
            };
            let rule = if big { Rule::Beats } else { Rule::Within3 };
            check(what, hybrid, &refs, rule, false);
        }
    }
    for group in groups(records, 4) {
        let Some(fused) = find(records, 4, &group, Fig2Variant::Fused.name()) else {
            continue;
        };
        let copying: Vec<&Record> = Fig2Variant::ALL
            .into_iter()
            .filter(|v| v.copies())
            .filter_map(|v| find(records, 4, &group, v.name()))
            .collect();
        // The target is for AF_XDP; over kernel sockets fused has
        // to beat the copying variants, as in part 1.
        let (rule, text) = if group == udp::ServerPath::Xdp.name() {
            (Rule::AtLeast115, "at least 1.15× the best copying variant")
        } else {
            (Rule::Beats, "beats every copying variant")
        };
        check(
            format!("part 4, list of 2×2048 B, {group}: {text}"),
            fused,
            &copying,
            rule,
            false,
        );
    }
    out
}

/// How a target compares ours with the best reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Ahead (margin > 0).
    Beats,
    /// At most 3 % behind.
    Within3,
    /// At least 1.15× (margin ≥ 15 %).
    AtLeast115,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Beats => "beats",
            Rule::Within3 => "within 3%",
            Rule::AtLeast115 => "at least 1.15x",
        }
    }
}

/// `r`'s messages/s against the fused variant's in the same part and
/// group, as a signed percentage.
fn vs_fused(records: &[Record], r: &Record) -> String {
    find(records, r.part, &r.group, Fig2Variant::Fused.name()).map_or(String::from("-"), |f| {
        format!(
            "{:+.1}%",
            (r.median.msgs_per_s / f.median.msgs_per_s - 1.0) * 100.0
        )
    })
}

/// The tables, as Markdown.
pub fn format_tables(records: &[Record], targets: &[TargetCheck]) -> String {
    let mut s = String::new();
    if records.iter().any(|r| r.part == 1) {
        let _ = writeln!(
            s,
            "\n### Part 1: echo of a list of 2 × 2048 B\n\n\
             | variant | msgs/s | ± | p50 µs | p99 µs | server ns/msg | ± | of which handler | ± | client ns/msg | copied B/msg | referenced B/msg | sendmsg/msg | vs fused |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in records.iter().filter(|r| r.part == 1) {
            let m = &r.median;
            let vs = vs_fused(records, r);
            let _ = writeln!(
                s,
                "| {} | {:.0} | {:.0}% | {:.1} | {:.1} | {:.0} | {:.0}% | {:.0} | {:.0}% | {:.0} | {:.0} | {:.0} | {:.3} | {} |",
                r.variant,
                m.msgs_per_s,
                m.msgs_per_s_spread * 100.0,
                m.p50_us,
                m.p99_us,
                m.server_ns_per_msg,
                m.server_ns_spread * 100.0,
                m.server_app_ns_per_msg,
                m.server_app_ns_spread * 100.0,
                m.client_ns_per_msg,
                m.copied_bytes_per_msg,
                m.referenced_bytes_per_msg,
                m.sendmsg_per_msg,
                vs
            );
        }
    }
    let part2 = groups(records, 2);
    if !part2.is_empty() {
        let names: Vec<&str> = PieceVariant::PART2
            .iter()
            .map(|v| v.name())
            .filter(|n| records.iter().any(|r| r.part == 2 && r.variant == *n))
            .collect();
        let header = |s: &mut String, title: &str| {
            let _ = write!(s, "\n{title}\n\n| message | piece |");
            for n in &names {
                let _ = write!(s, " {n} |");
            }
            let _ = write!(s, "\n|---|---:|");
            for _ in &names {
                let _ = write!(s, "---:|");
            }
            s.push('\n');
        };
        let rows = |s: &mut String, cell: &dyn Fn(&Record) -> String| {
            for g in &part2 {
                let Some(first) = records.iter().find(|r| r.part == 2 && &r.group == g) else {
                    continue;
                };
                let _ = write!(
                    s,
                    "| {} in {} | {} B |",
                    human_size(first.msg_bytes),
                    first.pieces,
                    first.piece_bytes
                );
                for n in &names {
                    let c = find(records, 2, g, n).map_or(String::from("-"), cell);
                    let _ = write!(s, " {c} |");
                }
                s.push('\n');
            }
        };
        header(
            &mut s,
            "### Part 2: copy vs gather, cold pieces — server CPU ns per message (± spread over reps)",
        );
        rows(&mut s, &|r| {
            format!(
                "{:.0} ±{:.0}%",
                r.median.server_ns_per_msg,
                r.median.server_ns_spread * 100.0
            )
        });
        header(&mut s, "#### Part 2: thousand msgs/s (± spread over reps)");
        rows(&mut s, &|r| {
            format!(
                "{:.1} ±{:.0}%",
                r.median.msgs_per_s / 1e3,
                r.median.msgs_per_s_spread * 100.0
            )
        });
        header(&mut s, "#### Part 2: round trip p50 / p99 µs");
        rows(&mut s, &|r| {
            format!("{:.0} / {:.0}", r.median.p50_us, r.median.p99_us)
        });
    }
    if records.iter().any(|r| r.part == 3) {
        let _ = writeln!(
            s,
            "\n### Part 3: MSG_ZEROCOPY vs plain (one referenced piece per message)\n\n\
             | message | variant | msgs/s | ± | p50 µs | p99 µs | server ns/msg | ± | zc completions | flagged copied |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in records.iter().filter(|r| r.part == 3) {
            let m = &r.median;
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {:.0}% | {:.1} | {:.1} | {:.0} | {:.0}% | {} | {} |",
                human_size(r.msg_bytes),
                r.variant,
                m.msgs_per_s,
                m.msgs_per_s_spread * 100.0,
                m.p50_us,
                m.p99_us,
                m.server_ns_per_msg,
                m.server_ns_spread * 100.0,
                m.zc_completed,
                m.zc_copied
            );
        }
    }
    if records.iter().any(|r| r.part == 4) {
        let _ = writeln!(
            s,
            "\n### Part 4: echo of a list of 2 × 2048 B over UDP (veth, IPv4 fragments), AF_XDP client\n\n\
             | server datapath | variant | msgs/s | ± | p50 µs | p99 µs | server ns/msg | ± | copied B/msg | referenced B/msg | lost | vs fused |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for r in records.iter().filter(|r| r.part == 4) {
            let m = &r.median;
            let vs = vs_fused(records, r);
            let lost: u64 = r.reps.iter().map(|x| x.lost).sum();
            let _ = writeln!(
                s,
                "| {} | {} | {:.0} | {:.0}% | {:.1} | {:.1} | {:.0} | {:.0}% | {:.0} | {:.0} | {} | {} |",
                r.group,
                r.variant,
                m.msgs_per_s,
                m.msgs_per_s_spread * 100.0,
                m.p50_us,
                m.p99_us,
                m.server_ns_per_msg,
                m.server_ns_spread * 100.0,
                m.copied_bytes_per_msg,
                m.referenced_bytes_per_msg,
                lost,
                vs
            );
        }
    }
    if !targets.is_empty() {
        let _ = writeln!(
            s,
            "\n### Targets\n\n\
             | target | variant | msgs/s: vs best | margin | met | server CPU: vs best | margin | met | handler: vs best | margin | met |\n\
             |---|---|---|---:|---|---|---:|---|---|---:|---|"
        );
        let yes = |m: bool| if m { "yes" } else { "**no**" };
        for t in targets {
            let (hv, hm, hok) = match (&t.against_handler, t.handler_margin, t.handler_met) {
                (Some(v), Some(m), Some(ok)) => {
                    (v.as_str(), format!("{:+.1}%", m * 100.0), yes(ok))
                }
                _ => ("-", "-".to_string(), "-"),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:+.1}% | {} | {} | {:+.1}% | {} | {} | {} | {} |",
                t.what,
                t.variant,
                t.against,
                t.margin * 100.0,
                yes(t.met),
                t.against_cpu,
                t.cpu_margin * 100.0,
                yes(t.cpu_met),
                hv,
                hm,
                hok
            );
        }
    }
    s
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{model}, {cpus} CPUs, Linux {}",
        read_trimmed("/proc/sys/kernel/osrelease")
    )
}

/// Today's UTC date as YYYY-MM-DD.
fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Civil-from-days (H. Hinnant).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `granola-bench echo`: runs the benchmark, prints the tables and the
/// target check, writes the JSON.
pub fn main(args: EchoArgs) -> Result<(), String> {
    let cfg = EchoConfig::from_args(&args);
    let known: Vec<&str> = Fig2Variant::ALL
        .iter()
        .map(|v| v.name())
        .chain(PieceVariant::PART2.iter().map(|v| v.name()))
        .chain(PieceVariant::PART3.iter().map(|v| v.name()))
        .collect();
    if let Some(bad) = cfg.variants.iter().find(|v| !known.contains(&v.as_str())) {
        return Err(format!(
            "unknown variant {bad:?}; known: {}",
            known.join(",")
        ));
    }
    if let Some(bad) = cfg.parts.iter().find(|p| !(1..=4).contains(*p)) {
        return Err(format!("unknown part {bad}; parts are 1, 2, 3, 4"));
    }
    let load_before = read_trimmed("/proc/loadavg");
    let date = utc_date();
    let t = Instant::now();
    let records = run(&cfg, &mut |m| eprintln!("{m}"))?;
    let targets = check_targets(&records);
    print!("{}", format_tables(&records, &targets));
    let report = EchoReport {
        benchmark: "echo",
        date,
        machine: machine(),
        loadavg: [load_before, read_trimmed("/proc/loadavg")],
        config: cfg,
        wall_secs: t.elapsed().as_secs_f64(),
        records,
        targets,
    };
    eprintln!(
        "{} in {:.0} s; load average before: {}; after: {}",
        report.machine, report.wall_secs, report.loadavg[0], report.loadavg[1]
    );
    if let Some(path) = args.json {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(part: u32, group: &str, variant: &str, piece_bytes: usize, tput: f64) -> Record {
        Record {
            part,
            group: group.into(),
            variant: variant.into(),
            msg_bytes: 4096,
            pieces: 4096 / piece_bytes,
            piece_bytes,
            reps: Vec::new(),
            median: Summary {
                msgs_per_s: tput,
                server_ns_per_msg: 1e9 / tput,
                ..Summary::default()
            },
        }
    }

    #[test]
    fn targets_compare_against_the_right_variants() {
        let g = "list-2x2048";
        let records = vec![
            rec(1, g, "granola-fused", 2048, 100.0),
            rec(1, g, "granola-sga", 2048, 120.0), // not a copying variant
            rec(1, g, "granola-copy", 2048, 90.0),
            rec(1, g, "prost", 2048, 95.0),
            // big pieces: only the copying variants count
            rec(2, "4KiB/2", "copy", 2048, 80.0),
            rec(2, "4KiB/2", "gather", 2048, 200.0),
            rec(2, "4KiB/2", "hybrid", 2048, 100.0),
            // small pieces: within 3% of the best of all
            rec(2, "4KiB/32", "copy+pf", 128, 100.0),
            rec(2, "4KiB/32", "hybrid", 128, 97.5),
        ];
        let t = check_targets(&records);
        assert_eq!(t.len(), 3);
        assert!(t[0].met && t[0].against == "prost", "{:?}", t[0]);
        assert!((t[0].margin - (100.0 / 95.0 - 1.0)).abs() < 1e-9);
        // CPU is 1e9 / msgs/s here: the cheapest copying variant is prost.
        assert!(t[0].cpu_met && t[0].against_cpu == "prost", "{:?}", t[0]);
        assert!(t[1].met && t[1].against == "copy", "{:?}", t[1]);
        assert!(t[2].met && t[2].against == "copy+pf", "{:?}", t[2]);
        assert!((t[2].margin + 0.025).abs() < 1e-9, "{:?}", t[2]);
        assert_eq!(t[2].rule, "within 3%");
        assert!(t[0].handler_margin.is_some() && t[1].handler_margin.is_none());
        let table = format_tables(&records, &t);
        assert!(table.contains("| granola-fused | 100 |"), "{table}");
    }

    #[test]
    fn dates_are_civil() {
        let d = utc_date();
        assert_eq!(d.len(), 10, "{d}");
        assert!(d.starts_with("20"), "{d}");
    }
}
