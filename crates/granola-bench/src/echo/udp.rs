//! Part 4: the Figure 2 echo over UDP, served on kernel sockets or on
//! AF_XDP (issue 14), between two network namespaces joined by a veth
//! pair that the benchmark creates and deletes.
//!
//! ```text
//!   client namespace (--client-cpu)            server namespace (--server-cpu)
//!   ┌──────────────────────────────┐  veth   ┌───────────────────────────────┐
//!   │ XdpClient: `ports` UDP ports ├────────►│ granola-net UDP server, one    │
//!   │ × `depth` requests in flight │         │ worker: kernel sockets (epoll) │
//!   │ replies: verify every byte   │◄────────┤ or AF_XDP; the variant's       │
//!   └──────────────────────────────┘         │ handler (`fig2`) per datagram  │
//!                                            └───────────────────────────────┘
//! ```
//!
//! A request is one datagram: a frame header (its id) and the variant's
//! encoding of a list of 2 × 2048 B; the reply is the same. Both are
//! larger than the veth's 1500 B MTU, so they travel as IPv4 fragments:
//! the server's XDP program steers fragments to its socket and the worker
//! reassembles them, and the client's AF_XDP socket does the same for
//! replies (see `granola_net::xdp::XdpClient`). The client is the same for
//! both server datapaths, so the comparison is the server's.
//!
//! UDP may lose a datagram: a request unanswered after
//! [`LOST_AFTER`] is counted lost and its slot reused (a run fails if more
//! than 1 % are). Server CPU per message is the worker thread's CPU time
//! over the window (read from `/proc/self/task/<tid>/schedstat`, the tid
//! reported by the handler) divided by the requests it served in it.

use std::collections::HashMap;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use granola::Pool;
use granola_net::server::{DatagramHandler, DatagramService, Server, ServerConfig};
use granola_net::udp::{Datagram, UdpTx};
use granola_net::xdp::{Sent, XdpClient};
use granola_net::{DatapathKind, FrameHeader, TxConfig, XdpConfig, FRAME_HEADER_LEN};
use granola_tests::netns::Veth;
use hdrhistogram::Histogram;

use super::fig2::{EchoHandler, Fig2Variant};
use super::harness::{request_header, RunResult, RunSpec};
use super::reply::{ReplyTo, Request};

/// A request unanswered this long is counted lost.
pub const LOST_AFTER: Duration = Duration::from_millis(200);
/// Client UDP ports (flows); `depth` requests are in flight on each.
pub const PORTS: usize = 4;

/// The server's datapath in part 4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerPath {
    /// Kernel UDP sockets (epoll, `recvmmsg`/`sendmmsg`).
    Kernel,
    /// AF_XDP (the kernel's choice of zero-copy or copy mode).
    Xdp,
}

impl ServerPath {
    /// Both, in report order.
    pub const ALL: [ServerPath; 2] = [ServerPath::Kernel, ServerPath::Xdp];

    /// Name in tables and JSON (the record's group).
    pub fn name(self) -> &'static str {
        match self {
            ServerPath::Kernel => "udp-kernel",
            ServerPath::Xdp => "udp-af_xdp",
        }
    }
}

/// What the server's handler shares with the client: the worker's tid
/// and the requests it served.
#[derive(Default)]
struct Meter {
    tid: AtomicU32,
    served: AtomicU64,
}

struct EchoService {
    variant: Fig2Variant,
    cpu: Option<usize>,
    meter: Arc<Meter>,
}

impl DatagramService for EchoService {
    fn name(&self) -> &str {
        "echo"
    }

    fn handler(&self) -> Box<dyn DatagramHandler> {
        Box::new(UdpEcho {
            handler: self.variant.echo_handler(),
            cpu: self.cpu,
            meter: self.meter.clone(),
            pinned: false,
        })
    }
}

struct UdpEcho {
    handler: Box<dyn EchoHandler>,
    cpu: Option<usize>,
    meter: Arc<Meter>,
    pinned: bool,
}

impl DatagramHandler for UdpEcho {
    fn on_datagram(&mut self, d: &Datagram, out: &mut UdpTx) {
        if !self.pinned {
            // The first datagram runs on the worker thread: pin it there
            // and tell the client which thread to measure.
            super::harness::pin(self.cpu);
            self.meter.tid.store(thread_id(), Ordering::Relaxed);
            self.pinned = true;
        }
        let Some(h) = FrameHeader::read(&d.data) else {
            return;
        };
        let payload = d.data.slice(FRAME_HEADER_LEN..);
        let req = Request {
            id: h.id,
            payload: &payload,
        };
        if let Err(e) = self.handler.echo(req, &mut ReplyTo::Udp(out, d.from)) {
            // The client counts the request lost; say why once per kind.
            eprintln!("echo over UDP: {e}");
        }
        self.meter.served.fetch_add(1, Ordering::Relaxed);
    }
}

/// The calling thread's id (`/proc/thread-self` links to `<pid>/task/<tid>`).
fn thread_id() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// CPU ns of thread `tid` of this process.
fn task_cpu_ns(tid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The veth pair for part 4, or why there is none.
pub fn veth() -> Result<Veth, String> {
    Veth::create().map_err(|e| format!("part 4 needs network namespaces (root): {e}"))
}

/// One measurement of `variant` with the server on `path`.
pub fn run(
    spec: &RunSpec,
    veth: &Veth,
    path: ServerPath,
    variant: Fig2Variant,
    seed: u64,
    server_pool: &Pool,
    client_pool: &Pool,
) -> Result<RunResult, String> {
    let meter = Arc::new(Meter::default());
    let service = Arc::new(EchoService {
        variant,
        cpu: spec.server_cpu,
        meter: meter.clone(),
    });
    let datapath = match path {
        ServerPath::Kernel => DatapathKind::Epoll,
        ServerPath::Xdp => DatapathKind::Xdp(XdpConfig {
            interface: veth.server_if.clone(),
            ..XdpConfig::default()
        }),
    };
    let cfg = ServerConfig {
        threads: 1,
        datapath: datapath.clone(),
        tx: spec.tx,
        ..ServerConfig::default()
    };
    let ip = veth.server_ip.clone();
    let pool = server_pool.clone();
    let handle = Veth::in_ns(&veth.server_ns, granola_net::xdp::enter_netns, move || {
        Server::new(pool, cfg)
            .udp(format!("{ip}:0").parse().expect("an address"), service)
            .start()
    })
    .map_err(|e| format!("start the UDP echo server: {e}"))?;
    if handle.datapath != datapath {
        let running = handle.datapath.clone();
        handle.shutdown();
        handle.join();
        return Err(format!(
            "asked for {datapath}, the server fell back to {running}"
        ));
    }
    let server = match handle.udp_addrs[0] {
        SocketAddr::V4(a) => a,
        a => return Err(format!("server bound {a}")),
    };
    let requests = variant.requests(seed);
    let client_cfg = XdpConfig {
        interface: veth.client_if.clone(),
        ..XdpConfig::default()
    };
    let pool = client_pool.clone();
    let spec2 = spec.clone();
    let result = Veth::in_ns(&veth.client_ns, granola_net::xdp::enter_netns, move || {
        super::harness::pin(spec2.client_cpu);
        client_loop(&spec2, &client_cfg, pool, server, &requests, &meter)
    });
    handle.shutdown();
    let stats = handle.stats.clone();
    handle.join();
    let mut r = result?;
    let total = r.verified_total.max(1) as f64;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    r.copied_bytes_per_msg = load(&stats.bytes_copied) as f64 / total;
    r.referenced_bytes_per_msg = load(&stats.bytes_referenced) as f64 / total;
    Ok(r)
}

/// The closed-loop client over AF_XDP: `depth` requests in flight on each
/// of [`PORTS`] ports; warm-up, measured window, drain.
fn client_loop(
    spec: &RunSpec,
    cfg: &XdpConfig,
    pool: Pool,
    server: SocketAddrV4,
    requests: &[Vec<u8>],
    meter: &Meter,
) -> Result<RunResult, String> {
    let mut c = XdpClient::open(cfg, pool, server, PORTS)
        .map_err(|e| format!("open the AF_XDP client: {e}"))?;
    let ports = c.ports().to_vec();
    let depth = spec.depth.max(1);
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)
        .map_err(|e| format!("histogram: {e}"))?;
    // id -> (port, sent at)
    let mut in_flight: HashMap<u32, (u16, Instant)> = HashMap::new();
    let mut per_port: HashMap<u16, usize> = ports.iter().map(|&p| (p, 0)).collect();
    let mut wire = Vec::new();
    let mut kbuf = vec![0u8; 70_000];
    let mut replies: Vec<(u32, Vec<u8>)> = Vec::new();
    let start = Instant::now();
    let mut next_id: u32 = 0;
    let (mut measuring, mut draining) = (false, false);
    let (mut window_start, mut window_end) = (start, start);
    let (mut cpu_start, mut cpu_end, mut served_start, mut served_end) = (0, 0, 0, 0);
    let (mut msgs, mut verified_total, mut lost, mut sent_total) = (0u64, 0u64, 0u64, 0u64);
    let mut last_progress = start;
    loop {
        let now = Instant::now();
        let tid = meter.tid.load(Ordering::Relaxed);
        // As in the TCP harness: the warm-up lasts until a first round of
        // replies is back, and the window until it holds one reply.
        if !measuring && !draining && now - start >= spec.warmup && verified_total >= depth as u64 {
            if tid == 0 {
                return Err("no request reached the server during the warm-up".into());
            }
            measuring = true;
            window_start = now;
            cpu_start = task_cpu_ns(tid);
            served_start = meter.served.load(Ordering::Relaxed);
        }
        if measuring
            && msgs > 0
            && (now - window_start >= spec.measure || msgs >= spec.max_messages)
        {
            measuring = false;
            draining = true;
            window_end = now;
            cpu_end = task_cpu_ns(tid);
            served_end = meter.served.load(Ordering::Relaxed);
        }
        if draining && in_flight.is_empty() {
            break;
        }
        // Requests unanswered for too long are lost: free their slots.
        in_flight.retain(|_, (port, sent)| {
            let keep = now - *sent < LOST_AFTER;
            if !keep {
                lost += 1;
                *per_port.get_mut(port).expect("a port") -= 1;
            }
            keep
        });
        if !draining {
            'fill: for &port in &ports {
                while per_port[&port] < depth {
                    let req = &requests[next_id as usize % requests.len()];
                    wire.clear();
                    wire.extend_from_slice(
                        &FrameHeader {
                            len: req.len() as u32,
                            ..request_header(next_id)
                        }
                        .to_bytes(),
                    );
                    wire.extend_from_slice(req);
                    match c.send(port, &wire).map_err(|e| format!("send: {e}"))? {
                        Sent::Queued => {}
                        Sent::Full => break 'fill,
                    }
                    in_flight.insert(next_id, (port, Instant::now()));
                    *per_port.get_mut(&port).expect("a port") += 1;
                    next_id = next_id.wrapping_add(1);
                    sent_total += 1;
                }
            }
        }
        c.flush().map_err(|e| format!("flush: {e}"))?;
        replies.clear();
        c.recv(64, |_, p| take_reply(&mut replies, p));
        // Nothing should arrive here (see the module docs); read it anyway.
        c.recv_kernel(&mut kbuf, |_, p| take_reply(&mut replies, p));
        let done = Instant::now();
        for (id, payload) in replies.drain(..) {
            // A reply to a request already counted lost is dropped.
            let Some((port, sent)) = in_flight.remove(&id) else {
                continue;
            };
            *per_port.get_mut(&port).expect("a port") -= 1;
            let want = &requests[id as usize % requests.len()];
            if payload != *want {
                return Err(format!(
                    "reply {id} differs from its request ({} vs {} bytes)",
                    payload.len(),
                    want.len()
                ));
            }
            verified_total += 1;
            last_progress = done;
            if measuring {
                msgs += 1;
                hist.saturating_record((done - sent).as_nanos().max(1) as u64);
            }
        }
        if done - last_progress > Duration::from_secs(5) {
            return Err(format!(
                "no reply for 5 s ({} requests in flight)",
                in_flight.len()
            ));
        }
    }
    if lost * 100 > sent_total.max(1) {
        return Err(format!("{lost} of {sent_total} requests lost (over 1 %)"));
    }
    let secs = (window_end - window_start).as_secs_f64().max(1e-9);
    let served = served_end.saturating_sub(served_start).max(1);
    Ok(RunResult {
        msgs,
        secs,
        msgs_per_s: msgs as f64 / secs,
        p50_us: hist.value_at_quantile(0.50) as f64 / 1e3,
        p99_us: hist.value_at_quantile(0.99) as f64 / 1e3,
        server_ns_per_msg: cpu_end.saturating_sub(cpu_start) as f64 / served as f64,
        verified_total,
        lost,
        ..RunResult::default()
    })
}

/// Keeps a reply datagram's id and payload.
fn take_reply(replies: &mut Vec<(u32, Vec<u8>)>, datagram: &[u8]) {
    if let Some(h) = FrameHeader::read(datagram) {
        replies.push((h.id, datagram[FRAME_HEADER_LEN..].to_vec()));
    }
}

/// The server TX settings of part 4 (the defaults: the copy threshold
/// decides what the granola variants reference).
pub fn tx_config() -> TxConfig {
    TxConfig::default()
}
