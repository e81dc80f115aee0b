//! One measured run: an echo server (granola-net's epoll [`Server`], one
//! worker thread) and a closed-loop client thread, pinned to different
//! cores, over TCP loopback.
//!
//! ```text
//!   client thread (--client-cpu)                server worker (--server-cpu)
//!   ┌───────────────────────────┐   requests   ┌──────────────────────────┐
//!   │ EchoClient::request ×depth├─────────────►│ RxBuffer → Frame          │
//!   │ TxQueue::flush            │              │ FrameHandler::handle      │
//!   │ RxBuffer → verify + RTT   │◄─────────────┤ TxQueue (one sendmsg per  │
//!   └───────────────────────────┘   replies    │ wake-up)                  │
//!                                              └──────────────────────────┘
//! ```
//!
//! The client keeps `depth` requests in flight, checks that replies come
//! back in order with the right id, and hands each payload to
//! [`EchoClient::verify`] (every byte). A run is a warm-up, a measured
//! window (bounded by time and by a message count) and a drain. The client
//! tells the server when the window opens through a shared flag, so the
//! server's CPU time per message (from `/proc/thread-self/schedstat`) covers
//! the same requests as the client's count. Both sides block in
//! `epoll_wait` when idle, so CPU time is work, not spinning.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use granola::Pool;
use granola_net::frame::DEFAULT_MAX_FRAME;
use granola_net::os::Epoll;
use granola_net::server::{Accepted, Close, ConnIo, Server, ServerConfig, Service, Session};
use granola_net::{
    Flushed, Frame, FrameHeader, Prefetch, RxBuffer, TcpDatapath, TxConfig, TxQueue, FLAG_RESPONSE,
    FRAME_HEADER_LEN,
};
use hdrhistogram::Histogram;
use serde::Serialize;

/// The server half of an echo variant: handles one request frame.
pub trait FrameHandler: Send {
    /// Decodes `frame`, builds the reply and queues it on `tx` (the server
    /// flushes once per wake-up).
    fn handle(&mut self, frame: &Frame, tx: &mut TxQueue) -> Result<(), String>;
}

/// Makes a fresh [`FrameHandler`] for a connection.
pub type HandlerFactory = Arc<dyn Fn() -> Box<dyn FrameHandler> + Send + Sync>;

/// The client half of an echo variant.
pub trait EchoClient: Send {
    /// Queues request `id` on `tx` (one frame with that id).
    fn request(&mut self, id: u32, tx: &mut TxQueue) -> Result<(), String>;
    /// Checks every byte of the reply payload to request `id`.
    fn verify(&mut self, id: u32, payload: &[u8]) -> Result<(), String>;
}

/// The header of the reply to request `id` (`len` is filled in by the
/// send call).
pub fn reply_header(id: u32) -> FrameHeader {
    FrameHeader {
        len: 0,
        kind: 0,
        flags: FLAG_RESPONSE,
        id,
    }
}

/// The header of request `id`.
pub fn request_header(id: u32) -> FrameHeader {
    FrameHeader {
        len: 0,
        kind: 0,
        flags: 0,
        id,
    }
}

/// How a run is driven.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// CPU of the server worker thread (`None`: not pinned).
    pub server_cpu: Option<usize>,
    /// CPU of the client thread (`None`: not pinned).
    pub client_cpu: Option<usize>,
    /// Requests in flight.
    pub depth: usize,
    /// Unmeasured time before the window. The warm-up also lasts until a
    /// first full round (`depth` replies) has come back, so a slow start
    /// (first page faults, a busy machine) is not measured.
    pub warmup: Duration,
    /// Length of the measured window. The window also stays open until it
    /// holds one reply, so a stalled machine gives a long window rather
    /// than an empty one (the 10 s no-progress guard still bounds it).
    pub measure: Duration,
    /// The window also closes after this many replies.
    pub max_messages: u64,
    /// The server's TX queue settings.
    pub tx: TxConfig,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            server_cpu: None,
            client_cpu: None,
            depth: 16,
            warmup: Duration::from_millis(200),
            measure: Duration::from_secs(1),
            max_messages: 5_000_000,
            tx: TxConfig::default(),
        }
    }
}

/// What one run measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunResult {
    /// Replies received (and verified) in the measured window.
    pub msgs: u64,
    /// Length of the window in seconds.
    pub secs: f64,
    /// `msgs / secs`.
    pub msgs_per_s: f64,
    /// Median round-trip time (request queued → reply verified), µs.
    pub p50_us: f64,
    /// 99th percentile round-trip time, µs.
    pub p99_us: f64,
    /// Server worker CPU time per request in the window, ns.
    pub server_ns_per_msg: f64,
    /// Of which in the variant's handler (decode, build, queue the reply:
    /// user space, without the receive and send syscalls), ns; wall time
    /// around each batch of requests.
    pub server_app_ns_per_msg: f64,
    /// Client thread CPU time per request in the window, ns.
    pub client_ns_per_msg: f64,
    /// Replies verified over the whole run (warm-up and drain included).
    pub verified_total: u64,
    /// Server: reply bytes copied into TX chunks, per request (whole run).
    pub copied_bytes_per_msg: f64,
    /// Server: reply bytes sent by reference, per request (whole run).
    pub referenced_bytes_per_msg: f64,
    /// Server: gathering `sendmsg` calls per request (whole run).
    pub sendmsg_per_msg: f64,
    /// Server: `MSG_ZEROCOPY` completions (sends) received.
    pub zc_completed: u64,
    /// ... of which the kernel flagged `SO_EE_CODE_ZEROCOPY_COPIED`.
    pub zc_copied: u64,
    /// Requests never answered (UDP only: counted lost after a timeout).
    pub lost: u64,
}

/// CPU time of the calling thread in ns (`/proc/thread-self/schedstat`).
pub fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Pins the calling thread to `cpu` (if given).
pub(crate) fn pin(cpu: Option<usize>) {
    if let Some(id) = cpu {
        if !core_affinity::set_for_current(core_affinity::CoreId { id }) {
            eprintln!("warning: could not pin a thread to CPU {id}");
        }
    }
}

/// Phases of a run, shared by client and server through one atomic.
const PHASE_WARMUP: u8 = 0;
const PHASE_MEASURE: u8 = 1;

/// What the server session saw, written when the connection closes.
#[derive(Clone, Debug, Default)]
struct ServerReport {
    /// CPU ns from the window's start to the close.
    cpu_ns: u64,
    /// ns spent in the handler over the same span.
    app_ns: u64,
    /// Requests handled in that span.
    served: u64,
    /// Why the session failed, if it did.
    error: Option<String>,
}

struct EchoService {
    make: HandlerFactory,
    cpu: Option<usize>,
    phase: Arc<AtomicU8>,
    report: Arc<Mutex<Option<ServerReport>>>,
}

impl Service for EchoService {
    fn name(&self) -> &str {
        "echo"
    }

    fn session(&self, _conn: &Accepted) -> Box<dyn Session> {
        // Called on the worker thread at accept: the place to pin it.
        pin(self.cpu);
        Box::new(EchoSession {
            handler: (self.make)(),
            frames: Vec::new(),
            phase: self.phase.clone(),
            start: None,
            served: 0,
            app_ns: 0,
            error: None,
            report: self.report.clone(),
        })
    }
}

struct EchoSession {
    handler: Box<dyn FrameHandler>,
    frames: Vec<Frame>,
    phase: Arc<AtomicU8>,
    /// (CPU ns, served) when the window opened.
    start: Option<(u64, u64)>,
    served: u64,
    /// Handler time since the window opened.
    app_ns: u64,
    error: Option<String>,
    report: Arc<Mutex<Option<ServerReport>>>,
}

impl Session for EchoSession {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        if self.start.is_none() && self.phase.load(Ordering::Relaxed) >= PHASE_MEASURE {
            self.start = Some((thread_cpu_ns(), self.served));
        }
        self.frames.clear();
        if let Err(e) = io.rx.take_frames(DEFAULT_MAX_FRAME, &mut self.frames) {
            self.error = Some(format!("bad request framing: {e}"));
            return Err(Close::new(e.to_string()));
        }
        let t = Instant::now();
        for f in self.frames.drain(..) {
            if let Err(e) = self.handler.handle(&f, io.tx) {
                self.error = Some(e.clone());
                return Err(Close::new(e));
            }
            self.served += 1;
        }
        if self.start.is_some() {
            self.app_ns += t.elapsed().as_nanos() as u64;
        }
        Ok(())
    }
}

impl Drop for EchoSession {
    fn drop(&mut self) {
        let (cpu0, served0) = self.start.unwrap_or((thread_cpu_ns(), self.served));
        let r = ServerReport {
            cpu_ns: thread_cpu_ns().saturating_sub(cpu0),
            app_ns: self.app_ns,
            served: self.served - served0,
            error: self.error.take(),
        };
        if let Ok(mut slot) = self.report.lock() {
            *slot = Some(r);
        }
    }
}

/// What the client measured.
struct ClientReport {
    msgs: u64,
    secs: f64,
    cpu_ns: u64,
    verified_total: u64,
    p50_ns: u64,
    p99_ns: u64,
}

/// Runs one echo measurement: starts a one-thread server whose connections
/// use `make` to handle requests, runs `client` against it on its own
/// thread, and collects both sides' numbers. `server_pool` holds the
/// server's receive and TX buffers (and whatever the handlers reference);
/// `client_pool` the client's.
pub fn run(
    spec: &RunSpec,
    server_pool: &Pool,
    client_pool: &Pool,
    make: HandlerFactory,
    client: Box<dyn EchoClient>,
) -> Result<RunResult, String> {
    let phase = Arc::new(AtomicU8::new(PHASE_WARMUP));
    let report = Arc::new(Mutex::new(None));
    let service = EchoService {
        make,
        cpu: spec.server_cpu,
        phase: phase.clone(),
        report: report.clone(),
    };
    let cfg = ServerConfig {
        threads: 1,
        tx: spec.tx,
        ..ServerConfig::default()
    };
    let addr: SocketAddr = "127.0.0.1:0".parse().expect("literal address");
    let handle = Server::new(server_pool.clone(), cfg)
        .tcp(addr, Arc::new(service))
        .start()
        .map_err(|e| format!("start echo server: {e}"))?;
    let addr = handle.tcp_addrs[0];
    let client_spec = spec.clone();
    let pool = client_pool.clone();
    let client_thread = std::thread::Builder::new()
        .name("echo-client".into())
        .spawn(move || {
            pin(client_spec.client_cpu);
            let mut client = client;
            client_loop(addr, &client_spec, &pool, &mut *client, &phase)
        })
        .map_err(|e| format!("spawn client: {e}"))?;
    let client_result = client_thread
        .join()
        .map_err(|_| "client thread panicked".to_string())?;
    // The session reports when the server sees the client's close (or when
    // it failed, which is usually why the client failed: wait a little for
    // its reason).
    let wait = if client_result.is_ok() { 5 } else { 1 };
    let deadline = Instant::now() + Duration::from_secs(wait);
    let server = loop {
        if let Some(r) = report.lock().map_err(|_| "report lock")?.take() {
            break Some(r);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    handle.shutdown();
    let stats = handle.stats.clone();
    handle.join();
    if let Some(e) = server.as_ref().and_then(|s| s.error.clone()) {
        return Err(format!("server: {e}"));
    }
    let c = client_result?;
    let server = server.ok_or("the server session did not report")?;
    let total = c.verified_total.max(1) as f64;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    Ok(RunResult {
        msgs: c.msgs,
        secs: c.secs,
        msgs_per_s: c.msgs as f64 / c.secs,
        p50_us: c.p50_ns as f64 / 1e3,
        p99_us: c.p99_ns as f64 / 1e3,
        server_ns_per_msg: server.cpu_ns as f64 / server.served.max(1) as f64,
        server_app_ns_per_msg: server.app_ns as f64 / server.served.max(1) as f64,
        client_ns_per_msg: c.cpu_ns as f64 / c.msgs.max(1) as f64,
        verified_total: c.verified_total,
        copied_bytes_per_msg: load(&stats.bytes_copied) as f64 / total,
        referenced_bytes_per_msg: load(&stats.bytes_referenced) as f64 / total,
        sendmsg_per_msg: load(&stats.send_calls) as f64 / total,
        zc_completed: load(&stats.zc_completed),
        zc_copied: load(&stats.zc_copied),
        lost: 0,
    })
}

fn io_err(what: &str) -> impl FnOnce(io::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// The closed-loop client: `depth` requests in flight, warm-up, measured
/// window, drain.
fn client_loop(
    addr: SocketAddr,
    spec: &RunSpec,
    pool: &Pool,
    client: &mut dyn EchoClient,
    phase: &AtomicU8,
) -> Result<ClientReport, String> {
    let stream = TcpStream::connect(addr).map_err(io_err("connect"))?;
    let mut dp = TcpDatapath::new(stream).map_err(io_err("socket setup"))?;
    let mut tx = TxQueue::new(
        pool.clone(),
        TxConfig {
            prefetch: Prefetch::Off,
            ..TxConfig::default()
        },
    );
    let mut rx = RxBuffer::new(pool.clone(), 64 << 10, DEFAULT_MAX_FRAME + FRAME_HEADER_LEN);
    let mut epoll = Epoll::new(4).map_err(io_err("epoll"))?;
    epoll
        .add(dp.stream().as_fd(), 0, true, false)
        .map_err(io_err("epoll add"))?;
    let mut events = Vec::with_capacity(4);
    let mut frames = Vec::new();
    let mut in_flight: VecDeque<(u32, Instant)> = VecDeque::with_capacity(spec.depth);
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
        .map_err(|e| format!("histogram: {e}"))?;
    let depth = spec.depth.max(1);
    let start = Instant::now();
    let mut next_id: u32 = 0;
    let mut measuring = false;
    let mut draining = false;
    let mut window_start = start;
    let mut window_end = start;
    let mut cpu_start = 0;
    let mut cpu_end = 0;
    let mut msgs = 0u64;
    let mut verified_total = 0u64;
    let mut want_write = false;
    let mut registered_write = false;
    let mut last_progress = start;
    loop {
        let now = Instant::now();
        if !measuring && !draining && now - start >= spec.warmup && verified_total >= depth as u64 {
            measuring = true;
            window_start = now;
            cpu_start = thread_cpu_ns();
            phase.store(PHASE_MEASURE, Ordering::Relaxed);
        }
        if measuring
            && msgs > 0
            && (now - window_start >= spec.measure || msgs >= spec.max_messages)
        {
            measuring = false;
            draining = true;
            window_end = now;
            cpu_end = thread_cpu_ns();
        }
        if draining && in_flight.is_empty() {
            break;
        }
        if !draining {
            while in_flight.len() < depth {
                client.request(next_id, &mut tx)?;
                in_flight.push_back((next_id, Instant::now()));
                next_id = next_id.wrapping_add(1);
            }
        }
        if !tx.is_empty() {
            match tx.flush(&mut dp).map_err(io_err("send"))? {
                Flushed::All => want_write = false,
                Flushed::Blocked => want_write = true,
            }
        }
        let mut got = 0;
        for _ in 0..8 {
            match rx.read_from(&mut dp) {
                Ok(st) if st.eof => {
                    return Err("the server closed the connection".into());
                }
                Ok(_) => {
                    rx.take_frames(DEFAULT_MAX_FRAME, &mut frames)
                        .map_err(|e| format!("bad reply framing: {e}"))?;
                    let done = Instant::now();
                    for f in frames.drain(..) {
                        let (id, sent) = in_flight.pop_front().ok_or("a reply nobody asked for")?;
                        if f.header.id != id || !f.header.is_response() {
                            return Err(format!(
                                "reply out of order: expected id {id}, got {:?}",
                                f.header
                            ));
                        }
                        client.verify(id, &f.payload)?;
                        verified_total += 1;
                        got += 1;
                        if measuring {
                            msgs += 1;
                            let ns = (done - sent).as_nanos().max(1) as u64;
                            hist.saturating_record(ns);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("receive: {e}")),
            }
        }
        if got > 0 {
            last_progress = now;
        } else {
            if now - last_progress > Duration::from_secs(10) {
                return Err(format!(
                    "no reply for 10 s ({} requests in flight)",
                    in_flight.len()
                ));
            }
            if want_write != registered_write {
                epoll
                    .modify(dp.stream().as_fd(), 0, true, want_write)
                    .map_err(io_err("epoll modify"))?;
                registered_write = want_write;
            }
            events.clear();
            epoll.wait(&mut events, 50).map_err(io_err("epoll wait"))?;
        }
    }
    let secs = (window_end - window_start).as_secs_f64().max(1e-9);
    Ok(ClientReport {
        msgs,
        secs,
        cpu_ns: cpu_end.saturating_sub(cpu_start),
        verified_total,
        p50_ns: hist.value_at_quantile(0.50),
        p99_ns: hist.value_at_quantile(0.99),
    })
}

/// Median of `v` (mean of the middle two for an even count); 0 if empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
