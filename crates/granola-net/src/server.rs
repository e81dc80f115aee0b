//! An epoll server: worker threads, each with its own epoll instance and its
//! own `SO_REUSEPORT` socket per listening address (the kernel spreads
//! connections and datagrams over them), running protocol sessions.
//!
//! Per connection the loop is: read what is there (bounded per wake-up, so
//! one busy connection cannot starve the others, and stopping after a short
//! read, which emptied the socket), hand the unconsumed bytes to the
//! [`Session`] after each read, and flush once — so every reply to a
//! pipelined batch goes out in one gathering `sendmsg`, and an unpipelined
//! request costs one `recv` and one `sendmsg` (the `ServerStats` counters
//! show it; a test holds it). When a peer stops
//! reading and its queued replies pass the back-pressure mark, the server
//! stops reading that connection until the queue drains; a session that
//! checks [`ConnIo::tx_full`] also stops answering the requests it has
//! already received, and is called again for them once the queue drains.
//! A session error closes only its own connection, with a log line saying
//! why.

pub use crate::backend::DatapathKind;
use crate::datapath::{Datapath, TcpDatapath};
use crate::nap::IdleNap;
use crate::park::{ConnWaker, Deadlines, Park, Wakeups};
use crate::rx::{RxBuffer, DEFAULT_RX_CHUNK};
use crate::sys::{Epoll, Event, Waker};
use crate::timeouts::{ConnTimer, Limits, Verdict, SWEEP_EVERY};
use crate::tx::{Flushed, TxConfig, TxQueue};
use crate::udp::{Datagram, UdpRx, UdpTx, MAX_DATAGRAM};
use granola::Pool;
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Why a session wants its connection closed.
#[derive(Debug, Clone)]
pub struct Close {
    /// For the log line; empty for a close that is no fault (one the
    /// client asked for): no log line then.
    pub reason: String,
}

impl Close {
    /// A close with this reason.
    pub fn new(reason: impl Into<String>) -> Close {
        Close {
            reason: reason.into(),
        }
    }
}

/// A connection's I/O as a session sees it.
pub struct ConnIo<'a> {
    /// Received, unconsumed input.
    pub rx: &'a mut RxBuffer,
    /// Queue replies here; the server flushes after the session returns.
    pub tx: &'a mut TxQueue,
    /// The peer.
    pub peer: SocketAddr,
    /// The back-pressure mark ([`ServerConfig::backpressure_bytes`]).
    pub backpressure: usize,
    /// Runs this session again while it is parked (see [`crate::park`]).
    pub waker: &'a ConnWaker,
}

impl ConnIo<'_> {
    /// True once more reply bytes are queued than the back-pressure mark. A
    /// session that checks this before each request and returns (leaving
    /// the rest of the input in `rx`) bounds what one read can queue — a
    /// peer that pipelines requests and never reads gets at most about the
    /// mark queued, not one reply per request in the receive buffer. The
    /// server calls [`Session::on_input`] again, without new input, once the
    /// queue has drained.
    pub fn tx_full(&self) -> bool {
        self.tx.queued_bytes() > self.backpressure
    }
}

/// One connection's protocol state.
pub trait Session: Send {
    /// Input arrived (or more of it). Consume every complete request from
    /// `io.rx`, queue replies on `io.tx`, leave incomplete input in place.
    /// `Err` closes the connection after flushing what was queued.
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close>;

    /// `Some` while the session waits for something other than its input
    /// (see [`crate::park`]): the server calls [`on_input`](Self::on_input)
    /// again, without new input, when the connection's
    /// [`ConnIo::waker`] is called or the deadline passes.
    fn park(&self) -> Option<Park> {
        None
    }

    /// True while the session has replies it has not written because the
    /// TX queue was over the back-pressure mark (Pub/Sub messages): like a
    /// session paused on unread input, it is called again once the queue
    /// drains.
    fn has_output(&self) -> bool {
        false
    }
}

/// A new connection, as [`Service::session`] is told of it.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The peer's address.
    pub peer: SocketAddr,
    /// The local address it connected to (`None` if the kernel would not
    /// say).
    pub local: Option<SocketAddr>,
    /// Its socket's file descriptor, to name it (Redis's `CLIENT LIST`
    /// shows it); the datapath owns the socket.
    pub fd: i32,
    /// Runs its session (see [`park`](crate::park)), from the start: another
    /// connection may need to wake it before it has sent anything.
    pub waker: ConnWaker,
}

impl Accepted {
    /// What `stream`, accepted from `peer`, is; `waker` runs its session.
    pub(crate) fn of(stream: &std::net::TcpStream, peer: SocketAddr, waker: ConnWaker) -> Accepted {
        use std::os::fd::AsRawFd;
        Accepted {
            peer,
            local: stream.local_addr().ok(),
            fd: stream.as_raw_fd(),
            waker,
        }
    }
}

/// A TCP protocol: makes a session per accepted connection.
pub trait Service: Send + Sync {
    /// Name for log lines ("memcached", "resp", ...).
    fn name(&self) -> &str;
    /// A session for a new connection.
    fn session(&self, conn: &Accepted) -> Box<dyn Session>;
    /// The line a connection over the connection limit gets before it is
    /// closed (memcached: `ERROR Too many open connections`); `None` closes
    /// it silently.
    fn refusal(&self) -> Option<&[u8]> {
        None
    }
}

/// A UDP protocol's per-thread handler.
pub trait DatagramHandler: Send {
    /// One datagram arrived; queue replies on `out`.
    fn on_datagram(&mut self, dgram: &Datagram, out: &mut UdpTx);
}

/// A UDP protocol: makes a handler per worker thread.
pub trait DatagramService: Send + Sync {
    /// Name for log lines.
    fn name(&self) -> &str;
    /// A handler for one worker thread.
    fn handler(&self) -> Box<dyn DatagramHandler>;
}

/// Server settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Worker threads.
    pub threads: usize,
    /// TX queue settings of every connection.
    pub tx: TxConfig,
    /// First receive buffer size.
    pub rx_chunk: usize,
    /// Most unconsumed input per connection (a request larger than this
    /// closes the connection).
    pub rx_max: usize,
    /// Most open connections (over all threads); more are accepted,
    /// answered with [`Service::refusal`] and closed. Lowered at start to
    /// what `RLIMIT_NOFILE` allows (see `limits`).
    pub max_conns: usize,
    /// Stop reading a connection while more than this many reply bytes are
    /// queued for it.
    pub backpressure_bytes: usize,
    /// Datagrams per `recvmmsg`.
    pub udp_batch: usize,
    /// Largest UDP reply datagram.
    pub udp_max_datagram: usize,
    /// The event-loop backend; one the kernel does not allow falls back to
    /// epoll with a log line (see [`crate::backend`]).
    pub datapath: DatapathKind,
    /// Close a connection whose peer has read none of its queued replies
    /// for this long (`None`: never). See [`crate::timeouts`].
    pub write_timeout: Option<std::time::Duration>,
    /// Close a connection that has sent no input for this long and has
    /// nothing queued (`None`: never, memcached's default).
    pub idle_timeout: Option<std::time::Duration>,
    /// The longest idle nap of a worker, epoll or io_uring (`None`, the
    /// default: block at once when nothing is ready; 50 µs where naps are
    /// wanted: several pipelined batches of a busy client, short beside
    /// their round trip). See [`crate::nap`].
    pub idle_nap: Option<std::time::Duration>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            tx: TxConfig::default(),
            rx_chunk: DEFAULT_RX_CHUNK,
            rx_max: crate::frame::DEFAULT_MAX_FRAME + crate::frame::FRAME_HEADER_LEN,
            max_conns: 4096,
            backpressure_bytes: 4 << 20,
            udp_batch: 32,
            udp_max_datagram: MAX_DATAGRAM,
            datapath: DatapathKind::Epoll,
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            idle_timeout: None,
            idle_nap: None,
        }
    }
}

/// Counters shared by all workers.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Connections currently open.
    pub conns_open: AtomicU64,
    /// Connections accepted since start.
    pub conns_total: AtomicU64,
    /// Connections refused because of `max_conns`.
    pub conns_refused: AtomicU64,
    /// Connections closed because of bad input or errors.
    pub conns_errored: AtomicU64,
    /// Reply bytes copied into TX buffers.
    pub bytes_copied: AtomicU64,
    /// Reply bytes sent by reference.
    pub bytes_referenced: AtomicU64,
    /// Gathering syscalls.
    pub send_calls: AtomicU64,
    /// Receive syscalls on connections (epoll) or receive completions
    /// handled (io_uring, where no syscall is made per receive).
    pub recv_calls: AtomicU64,
    /// Bytes received on connections (Redis's `total_net_input_bytes`).
    pub bytes_received: AtomicU64,
    /// Waits for events: `epoll_wait` or `io_uring_enter` calls.
    pub wait_calls: AtomicU64,
    /// Idle naps taken (see [`crate::nap`]); each adds up to two
    /// `epoll_wait` calls that do not block.
    pub naps: AtomicU64,
    /// `epoll_ctl` calls after a connection's registration (interest
    /// changes).
    pub ctl_calls: AtomicU64,
    /// Zero-copy completions, and how many the kernel had copied.
    pub zc_completed: AtomicU64,
    /// ... of which copied.
    pub zc_copied: AtomicU64,
    /// Datagrams dropped by the server: received but unusable (larger than
    /// a receive slot, no pool memory for a slot) or replies the kernel
    /// refused or that found the send queue full.
    pub udp_dropped: AtomicU64,
}

/// Builds and starts a server.
pub struct Server {
    pool: Pool,
    cfg: ServerConfig,
    tcp: Vec<(SocketAddr, Arc<dyn Service>)>,
    udp: Vec<(SocketAddr, Arc<dyn DatagramService>)>,
}

/// A running server.
pub struct ServerHandle {
    /// Bound TCP addresses, in the order they were added (port 0 resolved).
    pub tcp_addrs: Vec<SocketAddr>,
    /// Bound UDP addresses.
    pub udp_addrs: Vec<SocketAddr>,
    /// Shared counters.
    pub stats: Arc<ServerStats>,
    /// The backend that runs (the configured one, or epoll after a failed
    /// probe).
    pub datapath: DatapathKind,
    /// The AF_XDP worker's mode, when the datapath is xdp.
    pub xdp: Option<crate::xdp::XdpInfo>,
    /// The AF_XDP worker's counters.
    pub xdp_stats: Arc<crate::xdp::XdpStats>,
    stop: Arc<AtomicBool>,
    wakers: Vec<Arc<Waker>>,
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// Asks every worker to stop (they close their connections and exit).
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for w in &self.wakers {
            w.wake();
        }
    }

    /// A closure that triggers [`shutdown`](Self::shutdown), for signal
    /// handlers running on another thread.
    pub fn stopper(&self) -> impl Fn() + Send + Sync + 'static {
        let stop = self.stop.clone();
        let wakers = self.wakers.clone();
        move || {
            stop.store(true, Ordering::SeqCst);
            for w in &wakers {
                w.wake();
            }
        }
    }

    /// Waits for the workers to exit.
    pub fn join(mut self) {
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The first of a UDP address's sockets (all bound with `SO_REUSEPORT`).
/// Port 0 is resolved by a probe socket bound without it: a reuseport
/// bind to port 0 may be handed a port that another reuseport group of
/// the same user serves. The probe closes before the real socket binds,
/// and another socket can take the port in between; a port-0 bind that
/// finds it taken therefore tries a new port (a few times).
fn first_udp_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let mut tries = 0;
    loop {
        let claimed = crate::listen::claim(addr, crate::listen::Transport::Udp)?;
        match crate::udp::bind(claimed, true) {
            Err(e) if e.kind() == io::ErrorKind::AddrInUse && addr.port() == 0 && tries < 8 => {
                tries += 1;
            }
            bound => return bound,
        }
    }
}

fn tcp_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let domain = socket2::Domain::for_address(addr);
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    s.listen(1024)?;
    Ok(s.into())
}

impl Server {
    /// A server drawing buffers from `pool`.
    pub fn new(pool: Pool, cfg: ServerConfig) -> Server {
        Server {
            pool,
            cfg,
            tcp: Vec::new(),
            udp: Vec::new(),
        }
    }

    /// Serves `service` on TCP `addr`.
    pub fn tcp(mut self, addr: SocketAddr, service: Arc<dyn Service>) -> Server {
        self.tcp.push((addr, service));
        self
    }

    /// Serves `service` on UDP `addr`.
    pub fn udp(mut self, addr: SocketAddr, service: Arc<dyn DatagramService>) -> Server {
        self.udp.push((addr, service));
        self
    }

    /// Binds every address (one socket per worker thread) and starts the
    /// workers.
    pub fn start(mut self) -> io::Result<ServerHandle> {
        let threads = self.cfg.threads.max(1);
        let per_thread_fds = self.tcp.len() + self.udp.len() + 2;
        self.cfg.max_conns = crate::limits::fit_conn_limit(
            self.cfg.max_conns,
            crate::limits::RESERVED_FDS + threads * per_thread_fds,
        );
        let mut per_thread_tcp: Vec<Vec<(TcpListener, Arc<dyn Service>)>> =
            (0..threads).map(|_| Vec::new()).collect();
        let mut per_thread_udp: Vec<Vec<(UdpSocket, Arc<dyn DatagramService>)>> =
            (0..threads).map(|_| Vec::new()).collect();
        let mut tcp_addrs = Vec::new();
        let mut udp_addrs = Vec::new();
        for (addr, svc) in &self.tcp {
            // Port 0: the kernel picks a free port (never one of another
            // listener's SO_REUSEPORT group) and the first socket holds it
            // at once. A probe closed first would leave a window in which
            // a client's connect can take that port as its own.
            let first = if addr.port() == 0 {
                tcp_listener(*addr)?
            } else {
                tcp_listener(crate::listen::claim(*addr, crate::listen::Transport::Tcp)?)?
            };
            let bound = first.local_addr()?;
            tcp_addrs.push(bound);
            per_thread_tcp[0].push((first, svc.clone()));
            for t in per_thread_tcp.iter_mut().skip(1) {
                t.push((tcp_listener(bound)?, svc.clone()));
            }
        }
        for (addr, svc) in &self.udp {
            let first = first_udp_socket(*addr)?;
            let bound = first.local_addr()?;
            udp_addrs.push(bound);
            per_thread_udp[0].push((first, svc.clone()));
            for t in per_thread_udp.iter_mut().skip(1) {
                t.push((crate::udp::bind(bound, true)?, svc.clone()));
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(ServerStats::default());
        let mut datapath = crate::backend::resolve(&self.cfg.datapath);
        // Workers that set up a backend on their own thread report here
        // whether it worked (false: they run epoll).
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<bool>();
        let mut wakers = Vec::new();
        let mut handles = Vec::new();
        let mut xdp = None;
        let xdp_stats = Arc::new(crate::xdp::XdpStats::default());
        if let DatapathKind::Xdp(x) = &datapath {
            // UDP services move to one AF_XDP worker (TCP stays on epoll);
            // it keeps clones of the first thread's sockets to hold the ports.
            let waker = Arc::new(Waker::new()?);
            let udp = per_thread_udp[0]
                .iter()
                .map(|(s, svc)| Ok((s.try_clone()?, svc.clone())))
                .collect::<io::Result<Vec<_>>>()?;
            let parts = WorkerParts {
                pool: self.pool.clone(),
                cfg: self.cfg.clone(),
                tcp: Vec::new(),
                udp,
                waker: waker.clone(),
                stop: stop.clone(),
                stats: stats.clone(),
            };
            match crate::xdp::start(parts, x, xdp_stats.clone()) {
                Ok((info, run)) => {
                    wakers.push(waker);
                    handles.push(
                        std::thread::Builder::new()
                            .name("granola-xdp".into())
                            .spawn(run)?,
                    );
                    per_thread_udp.iter_mut().for_each(Vec::clear);
                    xdp = Some(info);
                }
                Err(e) => {
                    log::warn!("datapath xdp unavailable ({e}); falling back to epoll");
                    datapath = DatapathKind::Epoll;
                }
            }
        }
        for (i, (tcp, udp)) in per_thread_tcp.into_iter().zip(per_thread_udp).enumerate() {
            let waker = Arc::new(Waker::new()?);
            wakers.push(waker.clone());
            let parts = WorkerParts {
                pool: self.pool.clone(),
                cfg: self.cfg.clone(),
                tcp,
                udp,
                waker,
                stop: stop.clone(),
                stats: stats.clone(),
            };
            let run: Box<dyn FnOnce() + Send> = match &datapath {
                DatapathKind::Uring => {
                    let ready = ready_tx.clone();
                    Box::new(move || {
                        // The ring is made on the thread that submits to it
                        // (single-issuer rings).
                        match crate::uring::Worker::new(parts) {
                            Ok(mut w) => {
                                let _ = ready.send(true);
                                drop(ready);
                                w.run()
                            }
                            Err(failed) => {
                                let (parts, e) = *failed;
                                log::warn!(
                                    "io_uring worker setup failed ({e}); falling back to epoll"
                                );
                                let w = Worker::new(parts);
                                let _ = ready.send(false);
                                drop(ready);
                                match w {
                                    Ok(mut w) => w.run(),
                                    Err(e) => log::error!("worker setup failed: {e}"),
                                }
                            }
                        }
                    })
                }
                // `resolve` only returns the kinds built in.
                DatapathKind::Epoll | DatapathKind::Xdp(_) => {
                    let mut worker = Worker::new(parts)?;
                    Box::new(move || worker.run())
                }
            };
            handles.push(
                std::thread::Builder::new()
                    .name(format!("granola-{datapath}-{i}"))
                    .spawn(run)?,
            );
        }
        drop(ready_tx);
        if datapath == DatapathKind::Uring {
            // Wait for the rings (so their pool slots are taken before
            // start returns); if any worker fell back, say epoll.
            let all_ok = (0..threads).all(|_| ready_rx.recv().unwrap_or(false));
            if !all_ok {
                datapath = DatapathKind::Epoll;
            }
        }
        Ok(ServerHandle {
            tcp_addrs,
            udp_addrs,
            stats,
            datapath,
            xdp,
            xdp_stats,
            stop,
            wakers,
            threads: handles,
        })
    }
}

/// The default [`ServerConfig::write_timeout`].
pub const DEFAULT_WRITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a closing connection may wait for its peer to read the last
/// replies before it is dropped.
pub const CLOSE_LINGER: std::time::Duration = std::time::Duration::from_secs(5);

const TOKEN_WAKER: u64 = 0;
const TOKEN_TCP_BASE: u64 = 1;
const TOKEN_UDP_BASE: u64 = 1 << 16;
const TOKEN_CONN_BASE: u64 = 1 << 32;

struct Conn {
    dp: TcpDatapath,
    rx: RxBuffer,
    tx: TxQueue,
    session: Box<dyn Session>,
    peer: SocketAddr,
    service: usize,
    reading: bool,
    writing: bool,
    /// Whether EPOLLOUT is registered (it must be whenever a flush is
    /// blocked, whatever happens to the read interest).
    write_registered: bool,
    closing: Option<String>,
    /// The session stopped with input left in `rx` because the TX queue was
    /// over the back-pressure mark: call it again when the queue drains (no
    /// readiness event announces bytes already read).
    paused: bool,
    /// When closing began while replies were still queued (a peer that
    /// never reads them is dropped after [`CLOSE_LINGER`]).
    closing_since: Option<std::time::Instant>,
    /// Write and idle timeouts, TX buffer release.
    timer: ConnTimer,
    /// Tells this connection from a later one in the same slot.
    stamp: u64,
    /// Wakes the session while it is parked.
    waker: ConnWaker,
    /// The parked session's deadline already queued in `deadlines` (an
    /// entry that comes due ends that wait: the session answers its
    /// timeout, so it is never queued twice).
    deadline_queued: Option<Instant>,
}

/// A UDP service port as a worker serves it (epoll, io_uring, and the
/// kernel-socket side of AF_XDP): its socket, receive batches, reply queue
/// and handler.
pub(crate) struct UdpEndpoint {
    name: String,
    pub(crate) sock: UdpSocket,
    rx: UdpRx,
    pub(crate) tx: UdpTx,
    handler: Box<dyn DatagramHandler>,
    /// The receive batch, reused across wake-ups.
    batch: Vec<Datagram>,
}

impl UdpEndpoint {
    /// An endpoint for `sock` with a handler from `svc`.
    pub(crate) fn new(
        pool: &Pool,
        cfg: &ServerConfig,
        tx: TxConfig,
        sock: UdpSocket,
        svc: &dyn DatagramService,
    ) -> UdpEndpoint {
        UdpEndpoint {
            name: svc.name().to_string(),
            rx: UdpRx::new(pool.clone(), cfg.udp_batch, MAX_DATAGRAM + 1),
            tx: UdpTx::new(pool.clone(), tx, cfg.udp_max_datagram),
            handler: svc.handler(),
            batch: Vec::with_capacity(cfg.udp_batch),
            sock,
        }
    }

    /// The service's name, for log lines.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Answers one datagram received outside [`serve`](Self::serve) (the
    /// io_uring loop receives on the ring); the reply is queued on `tx`.
    pub(crate) fn handle(&mut self, d: &Datagram) {
        self.handler.on_datagram(d, &mut self.tx);
    }

    /// Serves what waits on the socket: batches of `recvmmsg`, each
    /// answered with one flush, bounded per wake-up; returns the datagrams
    /// served.
    pub(crate) fn serve(&mut self, udp_batch: usize, stats: &ServerStats) -> usize {
        let mut served = 0;
        for _ in 0..8 {
            self.batch.clear();
            match self.rx.recv_batch(&self.sock, &mut self.batch) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    log::warn!("udp receive failed: {e}");
                    break;
                }
            }
            for d in &self.batch {
                self.handler.on_datagram(d, &mut self.tx);
            }
            served += self.batch.len();
            if let Err(e) = self.tx.flush(&self.sock) {
                log::warn!("udp send failed: {e}");
            }
            account(stats, &self.tx.take_stats());
            if self.batch.len() < udp_batch {
                // A short batch emptied the socket: no recvmmsg for EAGAIN.
                break;
            }
        }
        // The received slots go back to the pool now, not at the next
        // wake-up.
        self.batch.clear();
        let dropped = std::mem::take(&mut self.rx.truncated) + std::mem::take(&mut self.tx.dropped);
        if dropped > 0 {
            stats.udp_dropped.fetch_add(dropped, Ordering::Relaxed);
        }
        served
    }
}

struct Worker {
    pool: Pool,
    cfg: ServerConfig,
    epoll: Epoll,
    tcp: Vec<(TcpListener, Arc<dyn Service>)>,
    udp: Vec<UdpEndpoint>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    /// Closed connections whose zero-copy sends have not completed: the
    /// kernel may still read their pages, so their TX queues (holding the
    /// references) and sockets (delivering the completions) are kept until
    /// it is done.
    lingering: Vec<(TcpDatapath, TxQueue)>,
    /// Connections with `closing_since` set.
    closing_pending: usize,
    /// Accepting paused after running out of descriptors; the listeners
    /// taken out of epoll meanwhile.
    accept_backoff: crate::limits::AcceptBackoff,
    paused_listeners: Vec<usize>,
    waker: Arc<Waker>,
    stop: Arc<AtomicBool>,
    stats: Arc<ServerStats>,
    /// The time after the last `epoll_wait` (input timestamps).
    now: Instant,
    /// When the next timeout sweep is due.
    next_sweep: Instant,
    /// Parked connections woken by other sessions (see [`crate::park`]).
    wakeups: Arc<Wakeups>,
    /// Parked connections' deadlines.
    deadlines: Deadlines,
    /// The next connection's stamp.
    next_stamp: u64,
    /// Scratch: the connections to run again this turn.
    woken: Vec<(usize, u64)>,
    /// When to nap instead of blocking (see [`crate::nap`]).
    nap: IdleNap,
}

/// What every backend's worker starts from: its share of the listening
/// sockets and the server-wide state.
pub(crate) struct WorkerParts {
    pub(crate) pool: Pool,
    pub(crate) cfg: ServerConfig,
    pub(crate) tcp: Vec<(TcpListener, Arc<dyn Service>)>,
    pub(crate) udp: Vec<(UdpSocket, Arc<dyn DatagramService>)>,
    pub(crate) waker: Arc<Waker>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) stats: Arc<ServerStats>,
}

impl Worker {
    fn new(parts: WorkerParts) -> io::Result<Worker> {
        let WorkerParts {
            pool,
            cfg,
            tcp,
            udp,
            waker,
            stop,
            stats,
        } = parts;
        let cfg_nap = cfg.idle_nap;
        let epoll = Epoll::new(256)?;
        epoll.add(waker.fd(), TOKEN_WAKER, true, false)?;
        for (i, (l, _)) in tcp.iter().enumerate() {
            epoll.add(l.as_fd(), TOKEN_TCP_BASE + i as u64, true, false)?;
        }
        let mut endpoints = Vec::new();
        for (i, (sock, svc)) in udp.into_iter().enumerate() {
            epoll.add(sock.as_fd(), TOKEN_UDP_BASE + i as u64, true, false)?;
            let mut txcfg = cfg.tx;
            if txcfg.zerocopy {
                if let Err(e) = crate::udp::enable_zerocopy(&sock) {
                    log::warn!(
                        "{}: MSG_ZEROCOPY unavailable on UDP ({e}); using plain sends",
                        svc.name()
                    );
                    txcfg.zerocopy = false;
                }
            }
            endpoints.push(UdpEndpoint::new(&pool, &cfg, txcfg, sock, &*svc));
        }
        let wakeups = Wakeups::new(waker.clone());
        Ok(Worker {
            pool,
            cfg,
            epoll,
            tcp,
            udp: endpoints,
            conns: Vec::new(),
            free: Vec::new(),
            lingering: Vec::new(),
            closing_pending: 0,
            accept_backoff: Default::default(),
            paused_listeners: Vec::new(),
            waker,
            stop,
            stats,
            now: Instant::now(),
            next_sweep: Instant::now() + SWEEP_EVERY,
            wakeups,
            deadlines: Deadlines::default(),
            next_stamp: 0,
            woken: Vec::new(),
            nap: IdleNap::new(cfg_nap),
        })
    }

    fn run(&mut self) {
        self.wakeups.set_owner();
        let mut events = Vec::with_capacity(256);
        if self.nap.enabled() {
            if let Err(e) = crate::sys::set_timer_slack(crate::nap::TIMER_SLACK) {
                log::warn!("cannot shorten the timer slack ({e}); idle naps may run long");
            }
        }
        // The last turn served something (only then may the worker nap).
        let mut served = false;
        while !self.stop.load(Ordering::Relaxed) {
            events.clear();
            // A timeout so zero-copy completions are collected even on an
            // idle connection.
            let wait_ms = if self.wakeups.pending() {
                0
            } else {
                self.deadlines.wait_ms(100, Instant::now())
            };
            if let Err(e) = self.next_events(&mut events, served, wait_ms) {
                log::error!("epoll_wait failed: {e}; worker exits");
                break;
            }
            served = !events.is_empty();
            self.now = Instant::now();
            for ev in &events {
                self.dispatch(*ev);
            }
            self.serve_woken();
            if self.now >= self.next_sweep {
                self.next_sweep = self.now + SWEEP_EVERY;
                self.sweep();
                self.nap.refresh();
            }
            if self.cfg.tx.zerocopy {
                self.poll_zerocopy();
            }
            if self.closing_pending > 0 {
                self.expire_closing();
            }
            if self.accept_backoff.paused() {
                self.resume_accepting();
            }
        }
        for i in 0..self.conns.len() {
            if self.conns[i].is_some() {
                self.close(i, None);
            }
        }
        // Give outstanding zero-copy sends a moment to complete; whatever is
        // still in flight after that is leaked by the queues' Drop, never
        // returned to the pool under the kernel.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while std::time::Instant::now() < deadline {
            self.poll_zerocopy();
            let udp_busy = self.udp.iter().any(|ep| ep.tx.zerocopy_in_flight() > 0);
            if self.lingering.is_empty() && !udp_busy {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// What is ready: after a turn that `served` something, first a look
    /// and maybe an idle nap ([`look_then_nap`](Self::look_then_nap)), then,
    /// if nothing is, a wait of up to `wait_ms`.
    fn next_events(
        &mut self,
        events: &mut Vec<Event>,
        served: bool,
        wait_ms: i32,
    ) -> io::Result<()> {
        if served && wait_ms != 0 {
            self.look_then_nap(events)?;
        }
        if events.is_empty() {
            self.wait(events, wait_ms)?;
        }
        Ok(())
    }

    /// After a turn that served something (it began at `self.now`): what
    /// is ready now, else, after an idle nap if one is due (see
    /// [`crate::nap`]), what is ready then. `events` stays empty if
    /// nothing is: the caller then blocks.
    fn look_then_nap(&mut self, events: &mut Vec<Event>) -> io::Result<()> {
        let Some(nap) = self.nap.length(self.now) else {
            return Ok(());
        };
        self.wait(events, 0)?;
        if events.is_empty() {
            std::thread::sleep(nap);
            self.stats.naps.fetch_add(1, Ordering::Relaxed);
            self.wait(events, 0)?;
        }
        Ok(())
    }

    /// One `epoll_wait` (counted), appending to `events`.
    fn wait(&mut self, events: &mut Vec<Event>, timeout_ms: i32) -> io::Result<()> {
        self.stats.wait_calls.fetch_add(1, Ordering::Relaxed);
        self.epoll.wait(events, timeout_ms).map(drop)
    }

    /// Runs again the parked sessions that were woken or whose deadline
    /// passed (see [`crate::park`]).
    fn serve_woken(&mut self) {
        let mut woken = std::mem::take(&mut self.woken);
        crate::park::due_now(&self.wakeups, &mut self.deadlines, &mut woken);
        let bp = self.cfg.backpressure_bytes;
        for &(idx, stamp) in &woken {
            let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
                continue;
            };
            if conn.stamp != stamp || conn.closing.is_some() || conn.session.park().is_none() {
                continue; // a later connection, or no longer waiting
            }
            run_session(conn, bp);
            // Flushes what it answered, settles the interest set and queues
            // the deadline again if it still waits.
            self.conn_event(
                idx,
                Event {
                    token: TOKEN_CONN_BASE + idx as u64,
                    readable: false,
                    writable: false,
                },
            );
        }
        woken.clear();
        self.woken = woken;
    }

    /// Closes connections that have been closing for longer than
    /// [`CLOSE_LINGER`] because their peer does not read the last replies.
    fn expire_closing(&mut self) {
        let now = std::time::Instant::now();
        for i in 0..self.conns.len() {
            let expired = self.conns[i]
                .as_ref()
                .and_then(|c| c.closing_since)
                .is_some_and(|t| now.duration_since(t) > CLOSE_LINGER);
            if expired {
                let queued = self.conns[i].as_ref().map_or(0, |c| c.tx.queued_bytes());
                self.close(
                    i,
                    Some(format!("peer did not read its last {queued} reply bytes")),
                );
            }
        }
    }

    /// Applies the write and idle timeouts and takes idle connections' TX
    /// buffers back (see [`crate::timeouts`]).
    fn sweep(&mut self) {
        let limits = Limits {
            write: self.cfg.write_timeout,
            idle: self.cfg.idle_timeout,
        };
        let now = self.now;
        for i in 0..self.conns.len() {
            let Some(conn) = self.conns[i].as_mut() else {
                continue;
            };
            if conn.closing.is_some() {
                continue; // CLOSE_LINGER applies
            }
            if conn.session.park().is_some() {
                // Waiting for another client (a blocking command) is not
                // idleness: the idle timeout spares it, as Redis's does.
                conn.timer.last_input = now;
            }
            match conn.timer.sweep(&conn.tx, now, limits) {
                Verdict::Keep => {}
                Verdict::Release => {
                    conn.rx.release_idle();
                    conn.tx.release_idle_buffer();
                }
                Verdict::Close(reason) => self.close(i, Some(reason)),
            }
        }
    }

    fn dispatch(&mut self, ev: Event) {
        match ev.token {
            TOKEN_WAKER => self.waker.drain(),
            t if t >= TOKEN_CONN_BASE => self.conn_event((t - TOKEN_CONN_BASE) as usize, ev),
            t if t >= TOKEN_UDP_BASE => self.udp_event((t - TOKEN_UDP_BASE) as usize),
            t => self.accept((t - TOKEN_TCP_BASE) as usize),
        }
    }

    /// Puts listeners paused by the accept back-off back into epoll once
    /// the pause is over.
    fn resume_accepting(&mut self) {
        if !self.accept_backoff.resume_due(std::time::Instant::now()) {
            return;
        }
        for li in std::mem::take(&mut self.paused_listeners) {
            let fd = self.tcp[li].0.as_fd();
            if let Err(e) = self.epoll.add(fd, TOKEN_TCP_BASE + li as u64, true, false) {
                log::error!("{}: cannot resume accepting: {e}", self.tcp[li].1.name());
            }
        }
    }

    fn accept(&mut self, li: usize) {
        // Bounded per wake-up; the level-triggered listener fires again.
        for _ in 0..64 {
            let (stream, peer) = match self.tcp[li].0.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if crate::limits::is_resource_error(&e) => {
                    // Out of descriptors: retrying now would fail again and
                    // spin. Take the listener out of epoll for a pause.
                    let name = self.tcp[li].1.name().to_string();
                    self.accept_backoff
                        .failed(&name, &e, std::time::Instant::now());
                    if !self.paused_listeners.contains(&li) {
                        let _ = self.epoll.delete(self.tcp[li].0.as_fd());
                        self.paused_listeners.push(li);
                    }
                    return;
                }
                Err(e) => {
                    log::warn!("{}: accept failed: {e}", self.tcp[li].1.name());
                    return;
                }
            };
            let svc = &*self.tcp[li].1;
            let Some(stream) =
                crate::limits::admit(&self.stats, self.cfg.max_conns, svc, stream, peer)
            else {
                continue;
            };
            let local = stream.local_addr().ok();
            let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
            let mut dp = match TcpDatapath::new(stream) {
                Ok(dp) => dp,
                Err(e) => {
                    log::warn!("{peer}: socket setup failed: {e}");
                    continue;
                }
            };
            let mut tx = TxQueue::new(self.pool.clone(), self.cfg.tx);
            if self.cfg.tx.zerocopy {
                if let Err(e) = dp.enable_zerocopy() {
                    log::warn!("{peer}: MSG_ZEROCOPY unavailable ({e}); using plain sends");
                    tx.disable_zerocopy();
                }
            }
            let idx = match self.free.pop() {
                Some(i) => i,
                None => {
                    self.conns.push(None);
                    self.conns.len() - 1
                }
            };
            self.next_stamp += 1;
            let waker = ConnWaker::new(self.wakeups.clone(), idx, self.next_stamp);
            let session = self.tcp[li].1.session(&Accepted {
                peer,
                local,
                fd,
                waker: waker.clone(),
            });
            let conn = Conn {
                dp,
                rx: RxBuffer::new(self.pool.clone(), self.cfg.rx_chunk, self.cfg.rx_max),
                tx,
                session,
                peer,
                service: li,
                reading: true,
                writing: false,
                write_registered: false,
                closing: None,
                paused: false,
                closing_since: None,
                timer: ConnTimer::new(self.now),
                stamp: self.next_stamp,
                waker,
                deadline_queued: None,
            };
            if let Err(e) = self.epoll.add(
                conn.dp.stream().as_fd(),
                TOKEN_CONN_BASE + idx as u64,
                true,
                false,
            ) {
                log::warn!("{peer}: epoll registration failed: {e}");
                self.free.push(idx);
                continue;
            }
            self.conns[idx] = Some(conn);
            self.stats.conns_open.fetch_add(1, Ordering::Relaxed);
            self.stats.conns_total.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn conn_event(&mut self, idx: usize, ev: Event) {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return; // closed earlier in this batch
        };
        let mut fatal: Option<String> = None;
        let bp = self.cfg.backpressure_bytes;
        let now = self.now;
        if ev.readable && conn.reading && conn.closing.is_none() && !conn.paused {
            // Bounded reads per wake-up for fairness. A short read emptied
            // the socket: stop there rather than pay a recv for EAGAIN (the
            // listener is level-triggered, so bytes that arrive meanwhile
            // are reported by the next epoll_wait).
            let mut recvs = 0;
            let mut received = 0;
            for _ in 0..8 {
                recvs += 1;
                match conn.rx.read_from(&mut conn.dp) {
                    Ok(st) if st.eof => {
                        conn.closing = Some(String::new());
                        break;
                    }
                    Ok(st) => {
                        received += st.bytes as u64;
                        conn.timer.last_input = now;
                        run_session(conn, bp);
                        if conn.closing.is_some()
                            || conn.tx.queued_bytes() > bp
                            || conn.dp.drained()
                        {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        fatal = Some(format!("read: {e}"));
                        break;
                    }
                }
            }
            self.stats.recv_calls.fetch_add(recvs, Ordering::Relaxed);
            self.stats
                .bytes_received
                .fetch_add(received, Ordering::Relaxed);
        }
        // Flush; while the session is paused on input it has already
        // received, let it go on each time the queue drains (bounded per
        // wake-up; a still-paused connection keeps EPOLLOUT registered so
        // it is called again).
        for round in 0..8 {
            if fatal.is_some() {
                break;
            }
            match conn.tx.flush(&mut conn.dp) {
                Ok(Flushed::All) => conn.writing = false,
                Ok(Flushed::Blocked) => conn.writing = true,
                Err(e) => fatal = Some(format!("write: {e}")),
            }
            if round == 7
                || fatal.is_some()
                || !conn.paused
                || conn.closing.is_some()
                || conn.tx.queued_bytes() > bp
            {
                break;
            }
            run_session(conn, bp);
        }
        let stats = conn.tx.take_stats();
        account(&self.stats, &stats);
        if let Some(reason) = fatal {
            self.close(idx, Some(reason));
            return;
        }
        let done_closing = conn.closing.is_some() && (conn.tx.is_empty() || !conn.writing);
        if conn.closing.is_some() && !done_closing && conn.closing_since.is_none() {
            conn.closing_since = Some(std::time::Instant::now());
            self.closing_pending += 1;
        }
        if done_closing {
            let reason = conn.closing.take().filter(|r| !r.is_empty());
            self.close(idx, reason);
            return;
        }
        if let Some(Park { deadline: Some(d) }) = conn.session.park() {
            if conn.deadline_queued != Some(d) {
                conn.deadline_queued = Some(d);
                self.deadlines.add(d, idx, conn.stamp);
            }
        }
        let want_read = conn.closing.is_none() && !conn.paused && conn.tx.queued_bytes() <= bp;
        let want_write = conn.writing
            || (conn.paused && conn.closing.is_none())
            || (conn.closing.is_some() && !conn.tx.is_empty());
        if want_read != conn.reading || want_write != conn.write_registered {
            conn.reading = want_read;
            conn.write_registered = want_write;
            self.stats.ctl_calls.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = self.epoll.modify(
                conn.dp.stream().as_fd(),
                TOKEN_CONN_BASE + idx as u64,
                want_read,
                want_write,
            ) {
                self.close(idx, Some(format!("epoll: {e}")));
            }
        }
    }

    fn close(&mut self, idx: usize, reason: Option<String>) {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::take) else {
            return;
        };
        if conn.closing_since.is_some() {
            self.closing_pending -= 1;
        }
        let _ = self.epoll.delete(conn.dp.stream().as_fd());
        let name = self.tcp[conn.service].1.name().to_string();
        if let Some(r) = reason {
            self.stats.conns_errored.fetch_add(1, Ordering::Relaxed);
            log::warn!("{name}: closing connection from {}: {r}", conn.peer);
        }
        account(&self.stats, &conn.tx.stats());
        self.stats.conns_open.fetch_sub(1, Ordering::Relaxed);
        self.free.push(idx);
        if conn.tx.zerocopy_in_flight() > 0 {
            // The peer sees the close now; the references stay until the
            // kernel's completions arrive (see `poll_zerocopy`).
            let _ = conn.dp.stream().shutdown(std::net::Shutdown::Both);
            self.lingering.push((conn.dp, conn.tx));
        }
    }

    fn udp_event(&mut self, ui: usize) {
        if let Some(ep) = self.udp.get_mut(ui) {
            ep.serve(self.cfg.udp_batch, &self.stats);
        }
    }

    fn poll_zerocopy(&mut self) {
        for conn in self.conns.iter_mut().flatten() {
            if conn.tx.zerocopy_in_flight() > 0 {
                let _ = conn.tx.poll_completions(&mut conn.dp);
            }
        }
        for ep in &mut self.udp {
            let _ = ep.tx.poll_completions(&ep.sock);
        }
        self.lingering.retain_mut(|(dp, tx)| {
            let _ = tx.poll_completions(dp);
            tx.zerocopy_in_flight() > 0
        });
    }
}

/// Hands the connection's unconsumed input to its session and notes
/// whether it stopped early because of back-pressure.
fn run_session(conn: &mut Conn, backpressure: usize) {
    let mut io = ConnIo {
        rx: &mut conn.rx,
        tx: &mut conn.tx,
        peer: conn.peer,
        backpressure,
        waker: &conn.waker,
    };
    if let Err(c) = conn.session.on_input(&mut io) {
        conn.closing = Some(c.reason);
    }
    conn.paused = conn.closing.is_none()
        && conn.tx.queued_bytes() > backpressure
        && (!conn.rx.data().is_empty() || conn.session.has_output());
}

/// Folds a TX queue's counters into the shared ones.
pub(crate) fn account(stats: &ServerStats, s: &crate::tx::TxStats) {
    stats
        .bytes_copied
        .fetch_add(s.gather.bytes_copied, Ordering::Relaxed);
    stats
        .bytes_referenced
        .fetch_add(s.gather.bytes_referenced, Ordering::Relaxed);
    stats.send_calls.fetch_add(s.syscalls, Ordering::Relaxed);
    stats
        .zc_completed
        .fetch_add(s.zc_completed, Ordering::Relaxed);
    stats.zc_copied.fetch_add(s.zc_copied, Ordering::Relaxed);
}
