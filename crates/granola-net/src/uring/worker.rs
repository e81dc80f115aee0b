//! The io_uring event loop: the same listeners, sessions and TX queues as
//! the epoll loop, driven by completions. Each loop turn is one
//! `io_uring_enter` that submits every connection's new sends and receive
//! re-arms and waits for completions; receives are multishot into the
//! provided-buffer ring (pool slots), accepts are multishot, and a
//! connection has at most one send in flight (every reply queued meanwhile
//! goes out in the next one, gathered). With idle naps configured, a turn
//! that served input is followed by a look without waiting and maybe a nap
//! before that wait (see [`crate::nap`]).
//!
//! UDP endpoints receive on the ring too: a multishot `RECVMSG` per socket
//! into a buffer group of pool slots (each datagram is decoded in the slot
//! the kernel wrote), and each reply datagram is one `SENDMSG` submitted
//! with the turn's other requests. Where the kernel refuses multishot
//! `RECVMSG` (before 6.0), an endpoint falls back to a multishot poll and
//! the `recvmmsg`/`sendmmsg` batches of the epoll loop, with a log line.

use super::ring::{self, split, user_data, Cqe, Op, Ring, UdpReceived};
use crate::datapath::Datapath;
use crate::nap::IdleNap;
use crate::park::{ConnWaker, Deadlines, Park, Wakeups};
use crate::rx::RxBuffer;
use crate::server::{
    ConnIo, ServerConfig, ServerStats, Service, Session, UdpEndpoint, WorkerParts,
};
use crate::sys::Waker;
use crate::timeouts::{ConnTimer, Limits, Verdict, SWEEP_EVERY};
use crate::tx::TxQueue;
use granola::{Buf, Pool};
use std::io::{self, IoSlice};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Receive buffers per worker, and their size.
const RECV_BUFS: u16 = 64;
const RECV_BUF_LEN: usize = 16 << 10;
/// Submission queue entries.
const RING_ENTRIES: u32 = 256;
/// UDP receive slots per worker, shared by its UDP ports (each holds a
/// datagram of any size, as the epoll loop's `recvmmsg` batch does: 80 KiB
/// slots, so 1.25 MiB of the connection share per worker). A slot is
/// replaced as soon as its datagram completes; if the kernel finds none,
/// the datagrams wait in the socket buffer until the receive is re-armed.
const UDP_RECV_BUFS: u16 = 16;

/// Poll indexes: 0 is the waker, 1.. the UDP endpoints.
const POLL_WAKER: usize = 0;

struct Conn {
    stream: TcpStream,
    rx: RxBuffer,
    tx: TxQueue,
    session: Box<dyn Session>,
    peer: SocketAddr,
    service: usize,
    gen: u32,
    /// A multishot receive is active.
    recv_armed: bool,
    /// A cancel of the receive was asked for (back-pressure or close).
    recv_cancelling: bool,
    /// Set when the session or the peer ended the connection: no more
    /// input is handled; it closes once its replies are out.
    closing: Option<String>,
    closing_since: Option<Instant>,
    /// Shut down: waiting for the receive and the send to finish before
    /// the slot is reused.
    dead: bool,
    /// The session stopped early because of back-pressure.
    paused: bool,
    /// Write and idle timeouts, TX buffer release.
    timer: ConnTimer,
    /// Wakes the session while it is parked.
    waker: ConnWaker,
    /// The parked session's deadline already queued in `deadlines` (an
    /// entry that comes due ends that wait: the session answers its
    /// timeout, so it is never queued twice).
    deadline_queued: Option<Instant>,
}

/// One io_uring worker.
pub(crate) struct Worker {
    pool: Pool,
    cfg: ServerConfig,
    ring: Ring,
    tcp: Vec<(TcpListener, Arc<dyn Service>)>,
    udp: Vec<UdpEndpoint>,
    /// Per UDP endpoint: received on the ring (else polled and served with
    /// `recvmmsg`/`sendmmsg`).
    udp_on_ring: Vec<bool>,
    /// UDP endpoints with replies queued this turn.
    udp_dirty: Vec<usize>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    next_gen: u32,
    dirty: Vec<usize>,
    waker: Arc<Waker>,
    stop: Arc<AtomicBool>,
    stats: Arc<ServerStats>,
    cqes: Vec<Cqe>,
    /// Multishot accepts and polls that are armed.
    armed_other: usize,
    /// Pauses accepting while the process is out of descriptors.
    accept_backoff: crate::limits::AcceptBackoff,
    /// Listeners whose multishot accept ended on EMFILE/ENFILE, re-armed
    /// when the back-off is over.
    paused_listeners: Vec<usize>,
    /// The time after the last `io_uring_enter` (input timestamps).
    now: Instant,
    /// When the next timeout sweep is due.
    next_sweep: Instant,
    /// The next `io_uring_enter` returns on the first completion (see
    /// [`Ring::enter`]).
    eager: bool,
    /// Parked connections woken by other sessions (see [`crate::park`]).
    wakeups: Arc<Wakeups>,
    /// Parked connections' deadlines.
    deadlines: Deadlines,
    /// Scratch: the connections to run again this turn.
    woken: Vec<(usize, u64)>,
    /// When to nap instead of blocking (see [`crate::nap`]).
    nap: IdleNap,
}

impl Worker {
    /// Sets up the ring and arms the listeners; gives the parts back (for
    /// the epoll fallback) if the ring cannot be set up.
    pub(crate) fn new(parts: WorkerParts) -> Result<Worker, Box<(WorkerParts, io::Error)>> {
        let mut ring = match Ring::new(&parts.pool, RING_ENTRIES, RECV_BUFS, RECV_BUF_LEN) {
            Ok(r) => r,
            Err(e) => return Err(Box::new((parts, e))),
        };
        let udp_ring = !parts.udp.is_empty()
            && match ring.enable_udp(&parts.pool, UDP_RECV_BUFS, crate::udp::MAX_DATAGRAM) {
                Ok(()) => true,
                Err(e) => {
                    log::warn!(
                        "io_uring: UDP buffer ring refused ({e}); UDP uses recvmmsg/sendmmsg"
                    );
                    false
                }
            };
        let WorkerParts {
            pool,
            cfg,
            tcp,
            udp,
            waker,
            stop,
            stats,
        } = parts;
        let wakeups = Wakeups::new(waker.clone());
        let cfg_nap = cfg.idle_nap;
        let udp = udp
            .into_iter()
            .map(|(sock, svc)| {
                // Zero-copy on UDP stays with the epoll loop.
                let tx = crate::tx::TxConfig {
                    zerocopy: false,
                    ..cfg.tx
                };
                UdpEndpoint::new(&pool, &cfg, tx, sock, &*svc)
            })
            .collect::<Vec<_>>();
        let mut w = Worker {
            pool,
            cfg,
            ring,
            tcp,
            udp_on_ring: vec![udp_ring; udp.len()],
            udp_dirty: Vec::new(),
            udp,
            conns: Vec::new(),
            free: Vec::new(),
            next_gen: 0,
            dirty: Vec::new(),
            waker,
            stop,
            stats,
            cqes: Vec::with_capacity(1024),
            armed_other: 0,
            accept_backoff: Default::default(),
            paused_listeners: Vec::new(),
            now: Instant::now(),
            next_sweep: Instant::now() + SWEEP_EVERY,
            eager: false,
            wakeups,
            deadlines: Deadlines::default(),
            woken: Vec::new(),
            nap: IdleNap::new(cfg_nap),
        };
        if let Err(e) = w.arm_all() {
            log::error!("io_uring worker: arming listeners failed: {e}");
        }
        Ok(w)
    }

    fn arm_all(&mut self) -> io::Result<()> {
        let waker_fd = self.waker.fd();
        self.ring
            .poll_multi(waker_fd, user_data(Op::Poll, POLL_WAKER, 0))?;
        self.armed_other += 1;
        for i in 0..self.tcp.len() {
            self.ring
                .accept_multi(self.tcp[i].0.as_fd(), user_data(Op::Accept, i, 0))?;
            self.armed_other += 1;
        }
        for i in 0..self.udp.len() {
            self.arm_udp(i)?;
        }
        Ok(())
    }

    /// Arms UDP endpoint `i`: a multishot receive on the ring, or a
    /// multishot poll where it fell back to `recvmmsg`.
    fn arm_udp(&mut self, i: usize) -> io::Result<()> {
        let fd = self.udp[i].sock.as_fd();
        if self.udp_on_ring[i] {
            self.ring.udp_recv_multi(fd, user_data(Op::UdpRecv, i, 0))?;
        } else {
            self.ring.poll_multi(fd, user_data(Op::Poll, i + 1, 0))?;
        }
        self.armed_other += 1;
        Ok(())
    }

    pub(crate) fn run(&mut self) {
        self.wakeups.set_owner();
        if self.nap.enabled() {
            if let Err(e) = crate::sys::set_timer_slack(crate::nap::TIMER_SLACK) {
                log::warn!("cannot shorten the timer slack ({e}); idle naps may run long");
            }
        }
        let mut enters_seen = 0;
        // The last turn served input (only then may the worker nap).
        let mut served = false;
        while !self.stop.load(Ordering::Relaxed) {
            self.cqes.clear();
            let mut cqes = std::mem::take(&mut self.cqes);
            let wait_ms = if self.wakeups.pending() {
                0
            } else {
                self.deadlines.wait_ms(100, Instant::now())
            };
            if let Err(e) = self.next_completions(&mut cqes, served, wait_ms) {
                log::error!("io_uring_enter failed: {e}; worker exits");
                self.cqes = cqes;
                break;
            }
            served = self.nap.enabled() && cqes.iter().any(Cqe::is_input);
            self.now = Instant::now();
            for c in &cqes {
                self.complete(c);
            }
            self.cqes = cqes;
            self.serve_woken();
            self.turn_end();
            if self.now >= self.next_sweep {
                self.next_sweep = self.now + SWEEP_EVERY;
                self.sweep();
                self.nap.refresh();
            }
            let enters = self.ring.enters;
            self.stats
                .wait_calls
                .fetch_add(enters - enters_seen, Ordering::Relaxed);
            enters_seen = enters;
        }
        self.shutdown();
    }

    /// This turn's completions: after a turn that `served` input, first a
    /// look and maybe an idle nap ([`look_then_nap`](Self::look_then_nap)),
    /// then, if no input came, one `io_uring_enter` that waits up to
    /// `wait_ms` (see [`Ring::enter`]).
    fn next_completions(
        &mut self,
        cqes: &mut Vec<Cqe>,
        served: bool,
        wait_ms: i32,
    ) -> io::Result<()> {
        // Not while a connection waits on a send's completion (`eager`):
        // that completion is what it needs, not a nap.
        if served && wait_ms != 0 && !self.eager {
            self.look_then_nap(cqes)?;
        }
        if !cqes.iter().any(Cqe::is_input) {
            self.ring.enter(
                Duration::from_millis(wait_ms.max(0) as u64),
                std::mem::take(&mut self.eager),
                cqes,
            )?;
        }
        Ok(())
    }

    /// After a turn that served input (it began at `self.now`): the
    /// completions there are now, and if none is input, after an idle nap
    /// if one is due (see [`crate::nap`]), those there are then. Submits
    /// the turn's sends either way; `cqes` holds no input if none came, and
    /// the caller then waits.
    fn look_then_nap(&mut self, cqes: &mut Vec<Cqe>) -> io::Result<()> {
        let Some(nap) = self.nap.length(self.now) else {
            return Ok(());
        };
        self.ring.look(cqes)?;
        if !cqes.iter().any(Cqe::is_input) {
            std::thread::sleep(nap);
            self.stats.naps.fetch_add(1, Ordering::Relaxed);
            self.ring.look(cqes)?;
        }
        Ok(())
    }

    fn complete(&mut self, c: &Cqe) {
        let (op, idx, tag) = split(c.user_data);
        match op {
            Some(Op::Accept) => self.on_accept(idx, c),
            Some(Op::Recv) => self.on_recv(idx, tag, c),
            Some(Op::Send) | Some(Op::SendZc) => self.on_send(idx, tag, c),
            Some(Op::Poll) => self.on_poll(idx, c),
            Some(Op::UdpRecv) => self.on_udp_recv(idx, c),
            Some(Op::UdpSend) => self.on_udp_send(idx, tag, c),
            Some(Op::Cancel) | None => {}
        }
    }

    fn on_udp_recv(&mut self, i: usize, c: &Cqe) {
        if !c.more() {
            self.armed_other -= 1;
        }
        if c.result >= 0 {
            if let Some(bid) = c.buffer() {
                match self.ring.udp_received(bid, c.result as usize) {
                    UdpReceived::Datagram(from, data) => {
                        self.udp[i].handle(&crate::udp::Datagram { from, data });
                        self.udp_dirty.push(i);
                    }
                    UdpReceived::Dropped(why) => {
                        log::debug!("{}: datagram dropped: {why}", self.udp[i].name());
                        self.stats.udp_dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        } else if c.result != -libc::ENOBUFS && c.result != -libc::ECANCELED && self.udp_on_ring[i]
        {
            // The kernel refuses multishot RECVMSG (EINVAL before 6.0), or
            // the socket fails: re-arming could fail the same way on every
            // turn, so this endpoint goes back to polling and `recvmmsg`,
            // which report errors their own way. (ENOBUFS: more datagrams
            // arrived in one turn than there are slots; re-armed below.)
            log::warn!(
                "{}: multishot RECVMSG failed ({}); using recvmmsg/sendmmsg",
                self.udp[i].name(),
                io::Error::from_raw_os_error(-c.result)
            );
            self.udp_on_ring[i] = false;
        }
        if !c.more() && !self.stop.load(Ordering::Relaxed) {
            if let Err(e) = self.arm_udp(i) {
                log::error!("{}: cannot re-arm the UDP receive: {e}", self.udp[i].name());
            }
        }
    }

    fn on_udp_send(&mut self, i: usize, tag: u32, c: &Cqe) {
        self.ring.udp_send_done(tag);
        if c.result < 0 {
            if let Some(ep) = self.udp.get(i) {
                log::debug!(
                    "{}: datagram send failed: {}",
                    ep.name(),
                    io::Error::from_raw_os_error(-c.result)
                );
            }
            self.stats.udp_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Submits the replies UDP endpoints queued this turn, one `SENDMSG`
    /// per datagram.
    fn flush_udp(&mut self) {
        let mut dirty = std::mem::take(&mut self.udp_dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for &i in &dirty {
            let Worker {
                udp, ring, stats, ..
            } = self;
            let ep = &mut udp[i];
            if ep.tx.take_out_of_memory() {
                // A datagram that could not be composed was not queued.
                log::debug!("{}: pool exhausted composing a reply", ep.name());
                stats.udp_dropped.fetch_add(1, Ordering::Relaxed);
            }
            let fd = ep.sock.as_fd();
            ep.tx
                .drain_pieces(|to, pieces| match ring.udp_send(fd, i, to, pieces) {
                    Ok(true) => {}
                    Ok(false) => {
                        stats.udp_dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        log::warn!("udp send to {to} not submitted: {e}");
                        stats.udp_dropped.fetch_add(1, Ordering::Relaxed);
                    }
                });
            crate::server::account(stats, &ep.tx.take_stats());
        }
        dirty.clear();
        self.udp_dirty = dirty;
    }

    fn on_poll(&mut self, idx: usize, c: &Cqe) {
        if !c.more() {
            self.armed_other -= 1;
        }
        if idx == POLL_WAKER {
            self.waker.drain();
        } else if let Some(ep) = self.udp.get_mut(idx - 1) {
            ep.serve(self.cfg.udp_batch, &self.stats);
        }
        if !c.more() && !self.stop.load(Ordering::Relaxed) {
            let fd = if idx == POLL_WAKER {
                self.waker.fd()
            } else {
                self.udp[idx - 1].sock.as_fd()
            };
            if self.ring.poll_multi(fd, c.user_data).is_ok() {
                self.armed_other += 1;
            }
        }
    }

    fn on_accept(&mut self, li: usize, c: &Cqe) {
        let out_of_fds = c.result < 0
            && crate::limits::is_resource_error(&io::Error::from_raw_os_error(-c.result));
        if out_of_fds {
            // Re-arming now would fail again at once and spin: pause, and
            // let `turn_end` re-arm once the back-off is over.
            let name = self.tcp[li].1.name().to_string();
            let e = io::Error::from_raw_os_error(-c.result);
            self.accept_backoff.failed(&name, &e, Instant::now());
        }
        if !c.more() {
            self.armed_other -= 1;
            if out_of_fds {
                if !self.paused_listeners.contains(&li) {
                    self.paused_listeners.push(li);
                }
            } else if !self.stop.load(Ordering::Relaxed)
                && self
                    .ring
                    .accept_multi(self.tcp[li].0.as_fd(), c.user_data)
                    .is_ok()
            {
                self.armed_other += 1;
            }
        }
        if c.result < 0 {
            let e = io::Error::from_raw_os_error(-c.result);
            if c.result != -libc::ECANCELED && !out_of_fds {
                log::warn!("{}: accept failed: {e}", self.tcp[li].1.name());
            }
            return;
        }
        let stream = ring::accepted(c.result);
        let peer = match stream.peer_addr() {
            Ok(p) => p,
            Err(e) => {
                log::warn!("accepted socket without a peer: {e}");
                return;
            }
        };
        let svc = &*self.tcp[li].1;
        let Some(stream) = crate::limits::admit(&self.stats, self.cfg.max_conns, svc, stream, peer)
        else {
            return;
        };
        if let Err(e) = stream.set_nodelay(true) {
            log::warn!("{peer}: socket setup failed: {e}");
            return;
        }
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.conns.push(None);
                self.conns.len() - 1
            }
        };
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        if let Err(e) = self
            .ring
            .recv_multi(stream.as_fd(), user_data(Op::Recv, idx, gen))
        {
            log::warn!("{peer}: arming the receive failed: {e}");
            self.free.push(idx);
            return;
        }
        let waker = ConnWaker::new(self.wakeups.clone(), idx, u64::from(gen));
        let accepted = crate::server::Accepted::of(&stream, peer, waker.clone());
        let conn = Conn {
            stream,
            rx: RxBuffer::new(self.pool.clone(), self.cfg.rx_chunk, self.cfg.rx_max),
            tx: TxQueue::new(self.pool.clone(), self.cfg.tx),
            session: self.tcp[li].1.session(&accepted),
            peer,
            service: li,
            gen,
            recv_armed: true,
            recv_cancelling: false,
            closing: None,
            closing_since: None,
            dead: false,
            paused: false,
            timer: ConnTimer::new(self.now),
            waker,
            deadline_queued: None,
        };
        self.conns[idx] = Some(conn);
        self.stats.conns_open.fetch_add(1, Ordering::Relaxed);
        self.stats.conns_total.fetch_add(1, Ordering::Relaxed);
    }

    fn on_recv(&mut self, idx: usize, gen: u32, c: &Cqe) {
        let bp = self.cfg.backpressure_bytes;
        let bid = c.buffer();
        let Some(conn) = self
            .conns
            .get_mut(idx)
            .and_then(Option::as_mut)
            .filter(|conn| conn.gen == gen)
        else {
            // A stale completion (cannot happen while the slot waits for
            // its receive to end, but never keep a buffer).
            if let Some(bid) = bid {
                let _ = self.ring.received(bid, 0);
                self.ring.recycle(bid);
            }
            return;
        };
        self.stats.recv_calls.fetch_add(1, Ordering::Relaxed);
        if c.result > 0 {
            self.stats
                .bytes_received
                .fetch_add(c.result as u64, Ordering::Relaxed);
        }
        if !c.more() {
            conn.recv_armed = false;
            conn.recv_cancelling = false;
        }
        if c.result > 0 {
            let bid = bid.expect("a receive with data names its buffer");
            let bytes = self.ring.received(bid, c.result as usize);
            conn.timer.last_input = self.now;
            if conn.closing.is_none() && !conn.dead {
                if let Err(e) = feed(conn, bytes, bp) {
                    conn.closing = Some(format!("read: {e}"));
                }
            }
            self.ring.recycle(bid);
        } else if c.result == 0 {
            if conn.closing.is_none() {
                conn.closing = Some(String::new());
            }
        } else {
            match -c.result {
                // Out of receive buffers, or our cancel: re-armed below
                // when wanted.
                libc::ENOBUFS | libc::ECANCELED => {}
                e => {
                    if conn.closing.is_none() && !conn.dead {
                        conn.closing = Some(format!("read: {}", io::Error::from_raw_os_error(e)));
                    }
                }
            }
        }
        self.dirty.push(idx);
    }

    fn on_send(&mut self, idx: usize, tag: u32, c: &Cqe) {
        if c.notif() {
            // A zero-copy send's notification: its references go.
            let released = self.ring.zc_complete(tag);
            self.stats
                .zc_completed
                .fetch_add(released, Ordering::Relaxed);
            return;
        }
        self.ring.send_done(idx, c);
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        if c.result >= 0 {
            conn.tx.complete_send(c.result as usize);
        } else if conn.closing.is_none() && !conn.dead {
            conn.closing = Some(format!(
                "write: {}",
                io::Error::from_raw_os_error(-c.result)
            ));
            conn.tx.clear();
        } else {
            conn.tx.clear();
        }
        self.dirty.push(idx);
    }

    /// After a turn's completions: sends, re-arms, closes.
    fn turn_end(&mut self) {
        if !self.paused_listeners.is_empty()
            && self.accept_backoff.resume_due(Instant::now())
            && !self.stop.load(Ordering::Relaxed)
        {
            for li in std::mem::take(&mut self.paused_listeners) {
                match self
                    .ring
                    .accept_multi(self.tcp[li].0.as_fd(), user_data(Op::Accept, li, 0))
                {
                    Ok(()) => self.armed_other += 1,
                    Err(e) => {
                        log::error!("{}: cannot resume accepting: {e}", self.tcp[li].1.name())
                    }
                }
            }
        }
        self.flush_udp();
        let bp = self.cfg.backpressure_bytes;
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort_unstable();
        dirty.dedup();
        for &idx in &dirty {
            self.settle(idx, bp);
        }
        dirty.clear();
        self.dirty = dirty;
        self.expire_closing();
    }

    /// Runs again the parked sessions that were woken or whose deadline
    /// passed (see [`crate::park`]); `turn_end` sends what they answered
    /// and queues the deadline again for those that still wait.
    fn serve_woken(&mut self) {
        let mut woken = std::mem::take(&mut self.woken);
        crate::park::due_now(&self.wakeups, &mut self.deadlines, &mut woken);
        let bp = self.cfg.backpressure_bytes;
        for &(idx, stamp) in &woken {
            let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
                continue;
            };
            if u64::from(conn.gen) != stamp
                || conn.dead
                || conn.closing.is_some()
                || conn.session.park().is_none()
            {
                continue; // a later connection, or no longer waiting
            }
            run_session(conn, bp);
            self.dirty.push(idx);
        }
        woken.clear();
        self.woken = woken;
    }

    fn settle(&mut self, idx: usize, bp: usize) {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        if let Some(Park { deadline: Some(d) }) = conn.session.park() {
            if conn.deadline_queued != Some(d) {
                conn.deadline_queued = Some(d);
                self.deadlines.add(d, idx, u64::from(conn.gen));
            }
        }
        // A session paused on back-pressure goes on once the queue drained.
        if conn.paused && conn.closing.is_none() && !conn.dead && conn.tx.queued_bytes() <= bp {
            run_session(conn, bp);
        }
        let busy = self.ring.send_busy(idx);
        if !busy && !conn.dead && !conn.tx.is_empty() {
            let mut bufs: Vec<Buf> = Vec::new();
            let head = conn.tx.stage(&mut bufs);
            let staged = bufs.iter().map(|b| b.len()).sum::<usize>() - head;
            // More queued than this send carries, or a session waiting for
            // the queue to drain: the completion should end the next wait.
            self.eager |= conn.paused || conn.closing.is_some() || conn.tx.queued_bytes() > staged;
            let zc = conn.tx.config().zerocopy;
            if let Err(e) = self
                .ring
                .send(idx, conn.stream.as_fd(), bufs, head, zc, conn.gen)
            {
                conn.closing.get_or_insert(format!("write: {e}"));
            }
        }
        let tx_stats = conn.tx.take_stats();
        crate::server::account(&self.stats, &tx_stats);
        let busy = self.ring.send_busy(idx);
        if let Some(reason) = conn.closing.clone() {
            if !conn.dead && (conn.tx.is_empty() || reason.starts_with("write")) && !busy {
                self.shut(idx, reason);
                return self.maybe_free(idx);
            }
            if conn.closing_since.is_none() {
                conn.closing_since = Some(Instant::now());
            }
        }
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        let want_read = conn.closing.is_none() && !conn.dead && conn.tx.queued_bytes() <= bp;
        if want_read && !conn.recv_armed {
            match self
                .ring
                .recv_multi(conn.stream.as_fd(), user_data(Op::Recv, idx, conn.gen))
            {
                Ok(()) => conn.recv_armed = true,
                Err(e) => conn.closing = Some(format!("read: {e}")),
            }
        } else if !want_read && conn.recv_armed && !conn.recv_cancelling && !conn.dead {
            conn.recv_cancelling = true;
            let _ = self.ring.cancel(
                user_data(Op::Recv, idx, conn.gen),
                user_data(Op::Cancel, idx, 0),
            );
        }
        self.maybe_free(idx);
    }

    /// Ends a connection: shut the socket (its receive completes) and log.
    fn shut(&mut self, idx: usize, reason: String) {
        let Some(conn) = self.conns.get_mut(idx).and_then(Option::as_mut) else {
            return;
        };
        conn.dead = true;
        let _ = conn.stream.shutdown(std::net::Shutdown::Both);
        if conn.recv_armed && !conn.recv_cancelling {
            conn.recv_cancelling = true;
            let _ = self.ring.cancel(
                user_data(Op::Recv, idx, conn.gen),
                user_data(Op::Cancel, idx, 0),
            );
        }
        if !reason.is_empty() {
            self.stats.conns_errored.fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "{}: closing connection from {}: {reason}",
                self.tcp[conn.service].1.name(),
                conn.peer
            );
        }
    }

    /// Frees a dead connection's slot once nothing in the kernel refers to
    /// it.
    fn maybe_free(&mut self, idx: usize) {
        let done = self.conns[idx]
            .as_ref()
            .is_some_and(|c| c.dead && !c.recv_armed)
            && !self.ring.send_busy(idx);
        if done {
            let conn = self.conns[idx].take().expect("checked");
            crate::server::account(&self.stats, &conn.tx.stats());
            self.stats.conns_open.fetch_sub(1, Ordering::Relaxed);
            self.free.push(idx);
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
        for idx in 0..self.conns.len() {
            let Some(conn) = self.conns[idx].as_mut() else {
                continue;
            };
            if conn.dead || conn.closing.is_some() {
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
                Verdict::Close(reason) => {
                    self.shut(idx, reason);
                    self.maybe_free(idx);
                }
            }
        }
    }

    fn expire_closing(&mut self) {
        let now = Instant::now();
        for idx in 0..self.conns.len() {
            let expired = self.conns[idx].as_ref().is_some_and(|c| {
                !c.dead
                    && c.closing_since
                        .is_some_and(|t| now.duration_since(t) > crate::server::CLOSE_LINGER)
            });
            if expired {
                let queued = self.conns[idx].as_ref().map_or(0, |c| c.tx.queued_bytes());
                self.shut(
                    idx,
                    format!("peer did not read its last {queued} reply bytes"),
                );
                self.maybe_free(idx);
            }
        }
    }

    /// Closes every connection and waits (bounded) for the kernel to finish
    /// every request; leaks the ring's memory if it does not.
    fn shutdown(&mut self) {
        for idx in 0..self.conns.len() {
            if self.conns[idx].as_ref().is_some_and(|c| !c.dead) {
                self.shut(idx, String::new());
            }
        }
        let _ = self.ring.cancel_all();
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let mut cqes = std::mem::take(&mut self.cqes);
            cqes.clear();
            let _ = self.ring.enter(Duration::from_millis(10), true, &mut cqes);
            for c in &cqes {
                self.complete(c);
            }
            self.cqes = cqes;
            for idx in 0..self.conns.len() {
                self.maybe_free(idx);
            }
            let busy = self.conns.iter().any(Option::is_some)
                || self.armed_other > 0
                || self.ring.zc_in_flight() > 0
                || self.ring.udp_in_flight() > 0;
            if !busy {
                return;
            }
            if Instant::now() > deadline {
                break;
            }
            let _ = self.ring.cancel_all();
        }
        self.ring.leak_on_drop();
    }
}

/// Copies received bytes into the connection's receive buffer and runs the
/// session after each fill.
fn feed(conn: &mut Conn, mut bytes: &[u8], bp: usize) -> io::Result<()> {
    while !bytes.is_empty() {
        let mut src = SliceSource { bytes };
        conn.rx.read_from(&mut src)?;
        bytes = src.bytes;
        run_session(conn, bp);
        if conn.closing.is_some() {
            break;
        }
    }
    Ok(())
}

/// A [`Datapath`] that "receives" from a byte slice (a provided buffer).
struct SliceSource<'a> {
    bytes: &'a [u8],
}

impl Datapath for SliceSource<'_> {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }

    fn send_gather(&mut self, _iov: &[IoSlice<'_>]) -> io::Result<usize> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

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
