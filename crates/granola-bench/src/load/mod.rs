//! The load generator: open-loop Poisson or closed-loop load over TCP or
//! UDP in memcached text, RESP2 or the native granola protocol (with
//! granola's payloads or, as `native:prost|flatbuffers|capnp`, those of
//! granola-kv's baseline serializers), with every response checked.
//!
//! # Method
//!
//! * **Open loop** ([`Mode::Open`]): each client thread draws its own
//!   Poisson arrivals at `rate / threads` ([`schedule`]), spreads them over
//!   its connections round robin, and sends each op when the schedule says,
//!   whatever is outstanding; a thread that falls behind sends every due op
//!   in one batch. **Latency = response arrival − scheduled send time**, so
//!   queueing in the client, the kernel or the server all count (no
//!   coordinated omission). Ops scheduled during the warm-up are checked and
//!   counted apart ([`LoadReport::warmup`]), not in the latency histogram.
//! * **Closed loop** ([`Mode::Closed`]): `depth` ops outstanding on every
//!   connection (pipelining); latency from the actual send.
//! * An **op** is one arrival; it may be several wire requests (a CDN
//!   object's sub-objects, the pieces of a split value); its latency is that
//!   of its last response, and rates count ops (objects/s).
//! * **Checking** ([`value`]): values are a deterministic function of (key,
//!   element, length), written by a loader phase ([`load`]) before
//!   measuring; every returned value is compared byte for byte, keys are
//!   compared where the protocol returns them, and errors, misses, timeouts
//!   (a per-request deadline) and late responses are counted
//!   ([`stats::Counts`]), never dropped.
//! * **Achieved load** = ops completed correctly (hits or misses) per
//!   second of the measurement window; **offered** = the target rate.
//!   [`sweep`] runs a list of offered loads and picks the **knee**: the
//!   highest achieved load among runs whose achieved/offered ≥ 95%
//!   ([`knee`], the Cornflakes rule).
//!
//! # Use from code
//!
//! ```no_run
//! use granola_bench::load::{self, LoadConfig, Mode, Protocol};
//! use granola_bench::workload::WorkloadSpec;
//!
//! let w = "ycsb:keys=10000,value=4096".parse::<WorkloadSpec>()?.build()?;
//! let cfg = LoadConfig {
//!     addr: "127.0.0.1:6379".parse().unwrap(),
//!     protocol: Protocol::Resp,
//!     mode: Mode::Open { rate: 50_000.0 },
//!     ..LoadConfig::default()
//! };
//! load::load(&cfg, w.as_ref())?;                    // SET every key
//! let report = load::run(&cfg, w.as_ref())?;        // one measurement
//! println!("{} ops/s, p99 {} us", report.achieved_rps, report.latency_us.p99);
//! let curve = load::sweep(&cfg, w.as_ref(), &[20e3, 40e3, 80e3], false)?;
//! println!("knee: {:?}", curve.knee);
//! # Ok::<(), String>(())
//! ```

pub mod codec;
mod engine;
pub mod schedule;
pub mod stats;
pub mod value;

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::workload::{Op, Workload};
use codec::Codec;
use engine::{Conn, Drive, Plan, Sock, ThreadResult, Worker};
pub use granola_kv::server::baselines::Serializer;
use stats::{new_histogram, Counts, Latency};

/// The RNG used everywhere (seedable, portable).
pub type Rng64 = rand::rngs::Xoshiro256PlusPlus;

/// The knee rule's ratio: achieved/offered at least this.
pub const KNEE_RATIO: f64 = 0.95;

/// Wire protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Memcached text.
    Memcached,
    /// RESP2 (Redis).
    Resp,
    /// granola-net frames carrying kv.proto messages.
    Native,
    /// The native protocol's frames with another serializer's payloads
    /// (`granola-kv --serializer prost|flatbuffers|capnp`), through
    /// granola-kv's client codecs ([`codec::baseline`]).
    NativeWith(Serializer),
}

/// JSON reports hold the protocol's [name](Protocol::name) (`"native"`,
/// `"native:prost"`).
impl Serialize for Protocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Protocol {
    /// Parses `memcached`/`mc`, `resp`/`redis`, `native`/`granola`, and
    /// `native:SERIALIZER` for granola-kv's `--serializer` (`prost`,
    /// `flatbuffers`, `capnp`; `granola`, `granola-copy` and `granola-ref`
    /// share granola's wire format, so they are plain `native`).
    pub fn parse(s: &str) -> Result<Protocol, String> {
        match s {
            "memcached" | "mc" => Ok(Protocol::Memcached),
            "resp" | "redis" => Ok(Protocol::Resp),
            "native" | "granola" => Ok(Protocol::Native),
            _ => match s.split_once(':') {
                Some(("native" | "granola", ser)) => {
                    let ser: Serializer = ser.parse()?;
                    Ok(if ser.is_granola() {
                        Protocol::Native
                    } else {
                        Protocol::NativeWith(ser)
                    })
                }
                _ => Err(format!(
                    "unknown protocol {s:?} (memcached, resp, native, native:prost, native:flatbuffers, native:capnp)"
                )),
            },
        }
    }

    /// Name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Memcached => "memcached",
            Protocol::Resp => "resp",
            Protocol::Native => "native",
            Protocol::NativeWith(ser) => codec::baseline::name(ser),
        }
    }

    /// Whether the server side is granola-kv's native port (any
    /// serializer).
    pub fn is_native(self) -> bool {
        matches!(self, Protocol::Native | Protocol::NativeWith(_))
    }

    /// A codec for `transport`.
    pub fn codec(self, transport: Transport) -> Result<Box<dyn Codec>, String> {
        let udp = transport.is_datagram();
        Ok(match self {
            Protocol::Memcached => Box::new(codec::memcached::Memcached::new(udp)),
            Protocol::Resp if udp => return Err("RESP runs over TCP only".into()),
            Protocol::Resp => Box::new(codec::resp::Resp::new()),
            Protocol::Native => {
                Box::new(codec::native::Native::new().map_err(|e| format!("pool: {e}"))?)
            }
            Protocol::NativeWith(ser) => {
                Box::new(codec::baseline::Baseline::new(ser).map_err(|e| format!("pool: {e}"))?)
            }
        })
    }
}

/// Transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// TCP.
    Tcp,
    /// UDP (memcached with its 8-byte frame header; native: one frame per
    /// datagram).
    Udp,
    /// UDP datagrams as [`Transport::Udp`], sent and received over AF_XDP
    /// (`granola_net::xdp::XdpClient`) on [`LoadConfig::xdp`]'s interface,
    /// so the client's kernel stack is not what limits a run. One client
    /// thread (one AF_XDP socket on one queue).
    Xdp,
}

impl Transport {
    /// Parses `tcp` / `udp` / `xdp`.
    pub fn parse(s: &str) -> Result<Transport, String> {
        match s {
            "tcp" => Ok(Transport::Tcp),
            "udp" => Ok(Transport::Udp),
            "xdp" => Ok(Transport::Xdp),
            _ => Err(format!("unknown transport {s:?} (tcp, udp, xdp)")),
        }
    }

    /// `tcp`, `udp` or `xdp`.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::Udp => "udp",
            Transport::Xdp => "xdp",
        }
    }

    /// UDP datagrams, over kernel sockets or AF_XDP.
    pub fn is_datagram(self) -> bool {
        self != Transport::Tcp
    }
}

/// Open or closed loop.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "loop")]
pub enum Mode {
    /// Poisson arrivals at `rate` ops/s in total.
    Open {
        /// Offered load, ops/s.
        rate: f64,
    },
    /// `depth` ops outstanding per connection.
    Closed {
        /// Outstanding ops per connection.
        depth: u32,
    },
}

/// One run's parameters.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Server address (use 127.0.0.1 for tests).
    pub addr: SocketAddr,
    /// Protocol.
    pub protocol: Protocol,
    /// Transport of the measured run (the loader always uses TCP).
    pub transport: Transport,
    /// Open or closed loop.
    pub mode: Mode,
    /// Client threads.
    pub threads: usize,
    /// Connections (sockets) per thread.
    pub conns: usize,
    /// Measurement window.
    pub duration: Duration,
    /// Warm-up before the window (checked, not in the latency histogram).
    pub warmup: Duration,
    /// Cap on measured ops (the run ends at the cap or the duration).
    pub requests: Option<u64>,
    /// Per-request deadline.
    pub timeout: Duration,
    /// CPUs to pin client threads to (thread i on `cpus[i % len]`); empty:
    /// no pinning.
    pub cpus: Vec<usize>,
    /// Seed of the workload RNGs (thread i uses `seed + i`).
    pub seed: u64,
    /// Loader: outstanding SETs per connection.
    pub load_depth: u32,
    /// Loader: time limit.
    pub load_timeout: Duration,
    /// [`Transport::Xdp`]: interface, queue, attach mode, neighbours (the
    /// server's MAC is read from the kernel's neighbour table when not
    /// given).
    pub xdp: granola_net::XdpConfig,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 11211)),
            protocol: Protocol::Memcached,
            transport: Transport::Tcp,
            mode: Mode::Open { rate: 10_000.0 },
            threads: 1,
            conns: 4,
            duration: Duration::from_secs(10),
            warmup: Duration::from_secs(1),
            requests: None,
            timeout: Duration::from_secs(1),
            cpus: Vec::new(),
            seed: 1,
            load_depth: 32,
            load_timeout: Duration::from_secs(600),
            xdp: granola_net::XdpConfig::default(),
        }
    }
}

/// The parameters a report was made with.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReportConfig {
    /// [`Workload::describe`].
    pub workload: String,
    /// Protocol.
    pub protocol: Protocol,
    /// Transport.
    pub transport: Transport,
    /// Server address.
    pub addr: String,
    /// Loop and its parameter.
    pub mode: Mode,
    /// Client threads.
    pub threads: usize,
    /// Connections per thread.
    pub conns: usize,
    /// Measurement window, s.
    pub duration_s: f64,
    /// Warm-up, s.
    pub warmup_s: f64,
    /// Deadline, ms.
    pub timeout_ms: f64,
    /// Op cap.
    pub requests: Option<u64>,
    /// Pinned CPUs.
    pub cpus: Vec<usize>,
    /// Seed.
    pub seed: u64,
}

/// One run's results (one JSON object per run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadReport {
    /// What was run.
    pub config: ReportConfig,
    /// Offered load (target), ops/s; `None` for closed loop.
    pub offered_rps: Option<f64>,
    /// Ops actually scheduled per second of the window.
    pub scheduled_rps: f64,
    /// Ops completed correctly (hits + misses) per second of the window.
    pub achieved_rps: f64,
    /// Wire requests answered correctly per second.
    pub requests_per_s: f64,
    /// Length of the measurement window, s.
    pub window_s: f64,
    /// Op latency percentiles (µs) of the measured ops.
    pub latency_us: Latency,
    /// Counts of the measured ops.
    pub counts: Counts,
    /// Counts of the warm-up ops.
    pub warmup: Counts,
    /// Failed requests (errors + timeouts), warm-up included.
    pub errors: u64,
    /// Client CPU time (user + system) over the run, s.
    pub client_cpu_s: f64,
    /// Wall time of the run, s.
    pub wall_s: f64,
}

impl LoadReport {
    /// achieved / offered (1 for closed loop).
    pub fn ratio(&self) -> f64 {
        match self.offered_rps {
            Some(o) if o > 0.0 => self.achieved_rps / o,
            _ => 1.0,
        }
    }

    /// One human-readable line.
    pub fn summary(&self) -> String {
        let offered = self
            .offered_rps
            .map_or("closed".to_owned(), |o| format!("{:.0}", o));
        let c = &self.counts;
        format!(
            "offered {offered:>9} achieved {:>9.0} ops/s  p50 {:>8.1} p99 {:>8.1} p99.9 {:>8.1} mean {:>8.1} us  \
             ok {} miss {} err {} timeout {}",
            self.achieved_rps,
            self.latency_us.p50,
            self.latency_us.p99,
            self.latency_us.p999,
            self.latency_us.mean,
            c.req_ok,
            c.req_miss,
            c.errors.total(),
            c.req_timeout
        )
    }
}

/// The knee of a sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Knee {
    /// Index into [`SweepReport::runs`].
    pub index: usize,
    /// Offered load there.
    pub offered_rps: f64,
    /// Achieved load there.
    pub achieved_rps: f64,
    /// p99 there (µs).
    pub p99_us: f64,
}

/// A throughput–latency curve.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SweepReport {
    /// One run per offered load, in the order given.
    pub runs: Vec<LoadReport>,
    /// The knee ([`knee`]), if any run met the 95% rule.
    pub knee: Option<Knee>,
}

/// The knee rule: among `(offered, achieved)` points whose
/// achieved/offered ≥ [`KNEE_RATIO`], the index of the highest achieved
/// load (the first such on ties); `None` when no point qualifies.
pub fn knee(points: &[(f64, f64)]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, &(offered, achieved)) in points.iter().enumerate() {
        if offered > 0.0
            && achieved >= KNEE_RATIO * offered
            && best.is_none_or(|b| achieved > points[b].1)
        {
            best = Some(i);
        }
    }
    best
}

/// Parses a rate: `50000`, `50k`, `1.5M`.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1e3),
        Some('m' | 'M') => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse().map_err(|e| format!("rate {s:?}: {e}"))?;
    if !(v * mult > 0.0 && (v * mult).is_finite()) {
        return Err(format!("rate {s:?} must be positive"));
    }
    Ok(v * mult)
}

/// Parses a count: `1000000`, `1000k`, `1M`.
pub fn parse_count(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1e3),
        Some('m' | 'M') => (&s[..s.len() - 1], 1e6),
        _ => (s, 1.0),
    };
    let v: f64 = num.parse().map_err(|e| format!("count {s:?}: {e}"))?;
    if v < 0.0 || !v.is_finite() {
        return Err(format!("count {s:?} must be non-negative"));
    }
    Ok((v * mult).round())
}

/// Parses a byte size: `4096`, `4k` (4096), `1m` (1 MiB).
pub fn parse_size(s: &str) -> Result<u32, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .strip_suffix("ib")
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(&t)
        .to_owned();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('m') => (&t[..t.len() - 1], 1 << 20),
        _ => (&t[..], 1),
    };
    let v: f64 = num.parse().map_err(|e| format!("size {s:?}: {e}"))?;
    let bytes = v * mult as f64;
    if !(0.0..=f64::from(u32::MAX)).contains(&bytes) {
        return Err(format!("size {s:?} out of range"));
    }
    Ok(bytes.round() as u32)
}

/// Parses a duration: `10s`, `500ms`, `100us`, `2m`, `1.5` (seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|e| format!("duration {s:?}: {e}"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("duration {s:?} must be non-negative"));
    }
    Ok(Duration::from_secs_f64(v * unit))
}

/// Parses `start:end:steps` into `steps` evenly spaced rates (inclusive).
pub fn parse_sweep(s: &str) -> Result<Vec<f64>, String> {
    let parts: Vec<&str> = s.split(':').collect();
    let [a, b, n] = parts[..] else {
        return Err(format!("sweep {s:?}: expected start:end:steps"));
    };
    let (a, b) = (parse_rate(a)?, parse_rate(b)?);
    let n: usize = n.parse().map_err(|e| format!("sweep {s:?}: {e}"))?;
    match n {
        0 => Err(format!("sweep {s:?}: at least one step")),
        1 => Ok(vec![a]),
        _ => Ok((0..n)
            .map(|i| a + (b - a) * i as f64 / (n - 1) as f64)
            .collect()),
    }
}

/// Client CPU time of this process (user + system), in seconds.
fn cpu_time() -> f64 {
    // Fields 14 and 15 of /proc/self/stat, in clock ticks (100 Hz on Linux).
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // rest starts at field 3 (state): utime is field 14 -> index 11.
    (tick(11) + tick(12)) / 100.0
}

/// One client thread's sockets.
type ThreadSockets = (Vec<Conn>, Option<granola_net::xdp::XdpClient>);

fn connect(
    cfg: &LoadConfig,
    transport: Transport,
    udp_mc: bool,
) -> Result<Vec<ThreadSockets>, String> {
    if transport == Transport::Xdp {
        return connect_xdp(cfg, udp_mc).map(|t| vec![t]);
    }
    let mut all = Vec::new();
    for _ in 0..cfg.threads.max(1) {
        let mut conns = Vec::new();
        for _ in 0..cfg.conns.max(1) {
            let sock = match transport {
                Transport::Tcp => {
                    let s = std::net::TcpStream::connect_timeout(&cfg.addr, Duration::from_secs(2))
                        .map_err(|e| format!("connect {}: {e}", cfg.addr))?;
                    s.set_nodelay(true).map_err(|e| e.to_string())?;
                    s.set_nonblocking(true).map_err(|e| e.to_string())?;
                    Sock::Tcp(mio::net::TcpStream::from_std(s))
                }
                Transport::Udp | Transport::Xdp => {
                    let local: SocketAddr = if cfg.addr.is_ipv4() {
                        if cfg.addr.ip().is_loopback() {
                            "127.0.0.1:0".parse().expect("addr")
                        } else {
                            "0.0.0.0:0".parse().expect("addr")
                        }
                    } else {
                        "[::]:0".parse().expect("addr")
                    };
                    let s =
                        std::net::UdpSocket::bind(local).map_err(|e| format!("bind udp: {e}"))?;
                    s.connect(cfg.addr)
                        .map_err(|e| format!("connect udp {}: {e}", cfg.addr))?;
                    s.set_nonblocking(true).map_err(|e| e.to_string())?;
                    Sock::Udp(mio::net::UdpSocket::from_std(s))
                }
            };
            conns.push(Conn::new(sock, udp_mc));
        }
        all.push((conns, None));
    }
    Ok(all)
}

/// UMEM of the AF_XDP client: the fill ring's frames (2048 x 4 KiB) and
/// the requests in flight, with room for a segment per size class.
const XDP_CLIENT_POOL: usize = 64 << 20;

/// The AF_XDP client: one socket, one local port per connection.
fn connect_xdp(cfg: &LoadConfig, udp_mc: bool) -> Result<ThreadSockets, String> {
    if cfg.threads > 1 {
        return Err("--transport xdp runs one client thread (one AF_XDP socket)".into());
    }
    if cfg.xdp.interface.is_empty() {
        return Err("--transport xdp needs --xdp-if (the client's interface)".into());
    }
    let SocketAddr::V4(server) = cfg.addr else {
        return Err("--transport xdp is IPv4 only".into());
    };
    let pool = granola::Pool::with_capacity(XDP_CLIENT_POOL).map_err(|e| format!("pool: {e}"))?;
    let client = granola_net::xdp::XdpClient::open(&cfg.xdp, pool, server, cfg.conns.max(1))
        .map_err(|e| format!("AF_XDP client on {}: {e}", cfg.xdp.interface))?;
    let info = client.info();
    eprintln!(
        "AF_XDP client on {} queue {}: {} mode, XDP program attached in {} mode",
        info.interface,
        info.queue_id,
        info.mode.name(),
        info.attach
    );
    let conns = client
        .ports()
        .iter()
        .map(|&p| Conn::new(Sock::Xdp(p), udp_mc))
        .collect();
    Ok((conns, Some(client)))
}

/// Checks that the protocol can express the workload's commands (a few
/// sampled ops and the first load op).
fn check_support(
    cfg: &LoadConfig,
    workload: &dyn Workload,
    codec: &dyn Codec,
) -> Result<(), String> {
    use rand::SeedableRng;
    let mut w = workload.fork(0, 1);
    let mut rng = Rng64::seed_from_u64(cfg.seed);
    let mut op = Op::default();
    let mut cmds = Vec::new();
    for _ in 0..16 {
        w.next_op(&mut rng, &mut op);
        cmds.extend(op.cmds.iter().copied());
    }
    if workload.load_count() > 0 {
        workload.load_op(0, &mut op);
        cmds.extend(op.cmds.iter().copied());
    }
    match cmds.iter().find(|c| !codec.supports(c)) {
        Some(c) => Err(format!(
            "{} cannot express {c:?} of workload {}",
            codec.name(),
            workload.describe()
        )),
        None => Ok(()),
    }
}

fn execute(
    cfg: &LoadConfig,
    workload: &dyn Workload,
    transport: Transport,
    plans: Vec<Plan>,
) -> Result<(Vec<ThreadResult>, f64, f64), String> {
    let probe = cfg.protocol.codec(transport)?;
    check_support(cfg, workload, probe.as_ref())?;
    let udp_mc = probe.udp_frame_header();
    let conns = connect(cfg, transport, udp_mc)?;
    let threads = plans.len();
    let mut workers = Vec::new();
    let start = Instant::now();
    for (i, (plan, (conns, xdp))) in plans.into_iter().zip(conns).enumerate() {
        let codec = cfg.protocol.codec(transport)?;
        let w = workload.fork(i, threads);
        workers.push(
            Worker::new(plan, codec, w, conns, xdp, start).map_err(|e| format!("poll: {e}"))?,
        );
    }
    let cpu0 = cpu_time();
    let start = Instant::now();
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|w| s.spawn(move || w.run()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join())
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(|_| "a client thread panicked".to_owned())?;
    Ok((results, start.elapsed().as_secs_f64(), cpu_time() - cpu0))
}

fn split(total: Option<u64>, parts: usize, i: usize) -> Option<u64> {
    total.map(|t| t / parts as u64 + u64::from((i as u64) < t % parts as u64))
}

/// Runs one measurement (no loading; see [`load`]).
pub fn run(cfg: &LoadConfig, workload: &dyn Workload) -> Result<LoadReport, String> {
    let threads = cfg.threads.max(1);
    let warmup_ns = cfg.warmup.as_nanos() as u64;
    let send_end_ns = warmup_ns + cfg.duration.as_nanos() as u64;
    let timeout_ns = cfg.timeout.as_nanos() as u64;
    let plans = (0..threads)
        .map(|i| Plan {
            drive: match cfg.mode {
                Mode::Open { rate } => engine::Drive::Open {
                    rate: rate / threads as f64,
                },
                Mode::Closed { depth } => Drive::Closed {
                    depth: depth.max(1),
                },
            },
            warmup_ns,
            send_end_ns,
            max_ops: split(cfg.requests, threads, i),
            timeout_ns,
            hard_end_ns: send_end_ns + timeout_ns + 200_000_000,
            seed: cfg.seed.wrapping_add(i as u64),
            cpu: (!cfg.cpus.is_empty()).then(|| cfg.cpus[i % cfg.cpus.len()]),
        })
        .collect();
    if let Mode::Open { rate } = cfg.mode {
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(format!("rate {rate} must be positive"));
        }
    }
    let (results, wall, cpu) = execute(cfg, workload, cfg.transport, plans)?;
    Ok(report(cfg, workload, results, wall, cpu, cfg.transport))
}

fn report(
    cfg: &LoadConfig,
    workload: &dyn Workload,
    results: Vec<ThreadResult>,
    wall: f64,
    cpu: f64,
    transport: Transport,
) -> LoadReport {
    let mut hist = new_histogram();
    let mut counts = Counts::default();
    let mut warm = Counts::default();
    let mut stopped = 0u64;
    for r in &results {
        hist.add(&r.hist).expect("same histogram bounds");
        counts.add(&r.counts);
        warm.add(&r.warm);
        stopped = stopped.max(r.stopped_ns);
    }
    let warmup_ns = cfg.warmup.as_nanos() as u64;
    let window = (stopped.saturating_sub(warmup_ns) as f64 / 1e9).max(1e-9);
    let per_s = |n: u64| n as f64 / window;
    LoadReport {
        config: ReportConfig {
            workload: workload.describe(),
            protocol: cfg.protocol,
            transport,
            addr: cfg.addr.to_string(),
            mode: cfg.mode,
            threads: cfg.threads.max(1),
            conns: cfg.conns.max(1),
            duration_s: cfg.duration.as_secs_f64(),
            warmup_s: cfg.warmup.as_secs_f64(),
            timeout_ms: cfg.timeout.as_secs_f64() * 1e3,
            requests: cfg.requests,
            cpus: cfg.cpus.clone(),
            seed: cfg.seed,
        },
        offered_rps: match cfg.mode {
            Mode::Open { rate } => Some(rate),
            Mode::Closed { .. } => None,
        },
        scheduled_rps: per_s(counts.ops),
        achieved_rps: per_s(counts.ops_good()),
        requests_per_s: per_s(counts.req_ok + counts.req_miss),
        window_s: window,
        latency_us: Latency::of(&hist),
        errors: counts.failures() + warm.failures(),
        counts,
        warmup: warm,
        client_cpu_s: cpu,
        wall_s: wall,
    }
}

/// The loader phase: writes every key of the workload (its
/// [`Workload::load_op`]s) over TCP, `load_depth` ops outstanding per
/// connection, all responses checked. The report counts the load ops.
pub fn load(cfg: &LoadConfig, workload: &dyn Workload) -> Result<LoadReport, String> {
    let count = workload.load_count();
    let threads = cfg.threads.max(1);
    let plans = (0..threads)
        .map(|i| Plan {
            drive: Drive::Load {
                first: i as u64,
                step: threads as u64,
                count,
                depth: cfg.load_depth.max(1),
            },
            warmup_ns: 0,
            send_end_ns: u64::MAX,
            max_ops: None,
            timeout_ns: cfg.timeout.as_nanos() as u64,
            hard_end_ns: cfg.load_timeout.as_nanos() as u64,
            seed: cfg.seed.wrapping_add(i as u64),
            cpu: (!cfg.cpus.is_empty()).then(|| cfg.cpus[i % cfg.cpus.len()]),
        })
        .collect();
    let (results, wall, cpu) = execute(cfg, workload, Transport::Tcp, plans)?;
    let mut c = cfg.clone();
    c.mode = Mode::Closed {
        depth: cfg.load_depth,
    };
    c.warmup = Duration::ZERO;
    c.duration = Duration::from_secs_f64(wall);
    let mut r = report(&c, workload, results, wall, cpu, Transport::Tcp);
    r.window_s = wall;
    r.achieved_rps = r.counts.ops_good() as f64 / wall.max(1e-9);
    Ok(r)
}

/// Runs `cfg` at each offered load of `rates` (open loop; `cfg.mode` is
/// replaced) and finds the knee. With `progress`, shows a progress bar on
/// stderr when it is a terminal, else prints each run's summary there.
pub fn sweep(
    cfg: &LoadConfig,
    workload: &dyn Workload,
    rates: &[f64],
    progress: bool,
) -> Result<SweepReport, String> {
    let bar = if progress && std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(rates.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
            )
            .expect("template"),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut runs = Vec::with_capacity(rates.len());
    for &rate in rates {
        bar.set_message(format!("offered {rate:.0} ops/s"));
        let c = LoadConfig {
            mode: Mode::Open { rate },
            ..cfg.clone()
        };
        let r = run(&c, workload)?;
        if bar.is_hidden() {
            if progress {
                eprintln!("{}", r.summary());
            }
        } else {
            bar.println(r.summary());
        }
        runs.push(r);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let points: Vec<(f64, f64)> = runs
        .iter()
        .map(|r| (r.offered_rps.unwrap_or(0.0), r.achieved_rps))
        .collect();
    let knee = knee(&points).map(|i| Knee {
        index: i,
        offered_rps: points[i].0,
        achieved_rps: points[i].1,
        p99_us: runs[i].latency_us.p99,
    });
    Ok(SweepReport { runs, knee })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knee_rule() {
        // Achieved tracks offered until 300k, then saturates.
        let pts = [
            (100e3, 99e3),
            (200e3, 197e3),
            (300e3, 290e3),
            (400e3, 330e3),
            (500e3, 335e3),
        ];
        assert_eq!(knee(&pts), Some(2));
        // Exactly 95% qualifies; 94.9% does not.
        assert_eq!(knee(&[(100.0, 95.0)]), Some(0));
        assert_eq!(knee(&[(100.0, 94.9)]), None);
        // The highest achieved among qualifying points, not the last one.
        assert_eq!(
            knee(&[(100.0, 99.0), (300.0, 290.0), (200.0, 199.0)]),
            Some(1)
        );
        // Order does not matter; nothing qualifies -> None.
        assert_eq!(knee(&[(500e3, 335e3), (100e3, 99e3)]), Some(1));
        assert_eq!(knee(&[]), None);
        assert_eq!(knee(&[(0.0, 0.0)]), None);
    }

    #[test]
    fn parsers() {
        assert_eq!(parse_rate("50k").unwrap(), 50_000.0);
        assert_eq!(parse_rate("1.5M").unwrap(), 1.5e6);
        assert!(parse_rate("0").is_err() && parse_rate("x").is_err());
        assert_eq!(parse_count("1M").unwrap(), 1e6);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("300").unwrap(), 300);
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(
            parse_sweep("10k:50k:5").unwrap(),
            vec![10e3, 20e3, 30e3, 40e3, 50e3]
        );
        assert!(parse_sweep("1:2").is_err());
        assert!(cpu_time() >= 0.0);
    }

    #[test]
    fn protocols() {
        for (s, p, name) in [
            ("mc", Protocol::Memcached, "memcached"),
            ("redis", Protocol::Resp, "resp"),
            ("native", Protocol::Native, "native"),
            ("native:granola-ref", Protocol::Native, "native"),
            (
                "native:prost",
                Protocol::NativeWith(Serializer::Prost),
                "native:prost",
            ),
            (
                "granola:flatbuffers",
                Protocol::NativeWith(Serializer::Flatbuffers),
                "native:flatbuffers",
            ),
            (
                "native:capnp",
                Protocol::NativeWith(Serializer::Capnp),
                "native:capnp",
            ),
        ] {
            assert_eq!(Protocol::parse(s), Ok(p), "{s}");
            assert_eq!(p.name(), name);
            assert_eq!(Protocol::parse(name), Ok(p), "{name} round-trips");
            assert_eq!(serde_json::to_value(p).unwrap(), name);
            assert_eq!(p.codec(Transport::Tcp).unwrap().name(), name);
        }
        assert!(Protocol::parse("native:json").is_err());
        assert!(Protocol::parse("resp:prost").is_err());
        assert!(Protocol::Resp.codec(Transport::Udp).is_err());
    }
}
