//! One client thread: its connections, its schedule, its event loop.
//!
//! The loop, each turn:
//!
//! 1. **issue** every op whose scheduled time has come (open loop: all that
//!    are due, even with earlier responses outstanding — a late thread
//!    catches up in one batch), or refill connections to their depth
//!    (closed loop, loader);
//! 2. **flush** each connection's transmit buffer with one `write` (TCP:
//!    everything issued this turn goes out together) or one `send` per
//!    datagram (UDP);
//! 3. **expire** requests past their deadline (counted as timeouts);
//! 4. **poll** (mio/epoll): without a timeout when the next arrival is less
//!    than ~1 ms away (epoll's timeout has millisecond resolution), else
//!    sleeping until then; then read every readable socket dry and check
//!    each complete response where it lies in the receive buffer.
//!
//! Buffers (transmit, receive, the per-request expectation table) grow to
//! the largest need and are reused, so the steady state does not allocate.

use std::io::{ErrorKind as IoKind, Read, Write};
use std::time::{Duration, Instant};

use granola_net::xdp::{Sent, XdpClient};
use hdrhistogram::Histogram;
use mio::net::{TcpStream, UdpSocket};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use std::os::fd::AsRawFd;

use super::codec::{Codec, EncodeError, Expect, Outcome, Peek, ReqSlot, Sink, Step};
use super::schedule::PoissonSchedule;
use super::stats::{new_histogram, Counts, ErrorKind};
use super::value::ValueSpec;
use super::Rng64;
use crate::workload::{Cmd, KeyRef, Op, Workload};
use rand::SeedableRng;

/// Initial receive buffer size per connection.
const RX_INITIAL: usize = 256 << 10;
/// Largest expectation table per connection (requests in flight).
const MAX_TABLE: usize = 1 << 20;
/// Memcached UDP request ids are 16 bits.
const MC_UDP_TABLE: usize = 1 << 16;
/// Below this gap to the next arrival the loop polls without sleeping.
const SPIN_BELOW_NS: u64 = 1_200_000;
/// Poll token of the AF_XDP socket (connections use their index).
const XDP_TOKEN: Token = Token(usize::MAX);
/// Poll token of the AF_XDP client's kernel sockets (fragmented replies).
const XDP_KERNEL_TOKEN: Token = Token(usize::MAX - 1);
/// Frames taken from the AF_XDP RX ring per call.
const XDP_RX_BATCH: usize = 256;

/// A connected socket.
pub(crate) enum Sock {
    /// TCP stream.
    Tcp(TcpStream),
    /// Connected UDP socket.
    Udp(UdpSocket),
    /// A local UDP port of the worker's AF_XDP client.
    Xdp(u16),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Free,
    Live,
    /// Past its deadline; kept (TCP) so the late response still matches.
    TimedOut,
}

/// One outstanding wire request.
#[derive(Debug, Default)]
struct Pending {
    id: u64,
    state: State,
    expect: Expect,
    aux: u32,
    sched: u64,
    op: u32,
    measured: bool,
    /// A single-key GET's key and length, to refill on a miss.
    fill: Option<(KeyRef, u32)>,
    specs: Vec<ValueSpec>,
    /// Memcached UDP reassembly.
    asm: Vec<u8>,
    asm_next: u16,
}

/// Outstanding requests of a connection, indexed by `id & mask`; ids are
/// issued in order, so the live window `[oldest, next)` never collides
/// with itself.
struct Table {
    e: Vec<Pending>,
    mask: u64,
    next: u64,
    oldest: u64,
    tcursor: u64,
    fixed: bool,
}

impl Table {
    fn new(cap: usize, fixed: bool) -> Table {
        let mut e = Vec::new();
        e.resize_with(cap, Pending::default);
        Table {
            e,
            mask: cap as u64 - 1,
            next: 0,
            oldest: 0,
            tcursor: 0,
            fixed,
        }
    }

    fn alloc(&mut self, sched: u64, op: u32, measured: bool) -> Option<usize> {
        let mut idx = (self.next & self.mask) as usize;
        if self.e[idx].state != State::Free {
            if self.fixed || self.e.len() >= MAX_TABLE {
                return None;
            }
            self.grow();
            idx = (self.next & self.mask) as usize;
        }
        let p = &mut self.e[idx];
        p.id = self.next;
        p.state = State::Live;
        p.expect = Expect::Value;
        p.aux = 0;
        p.sched = sched;
        p.op = op;
        p.measured = measured;
        p.fill = None;
        p.specs.clear();
        p.asm.clear();
        p.asm_next = 0;
        self.next += 1;
        Some(idx)
    }

    fn grow(&mut self) {
        let cap = self.e.len() * 2;
        let mut e = Vec::new();
        e.resize_with(cap, Pending::default);
        let mask = cap as u64 - 1;
        for p in self.e.iter_mut() {
            if p.state != State::Free {
                let i = (p.id & mask) as usize;
                e[i] = std::mem::take(p);
            }
        }
        self.e = e;
        self.mask = mask;
    }

    /// The oldest request not yet answered (TCP: responses come in order).
    fn head(&mut self) -> Option<usize> {
        while self.oldest < self.next
            && self.e[(self.oldest & self.mask) as usize].state == State::Free
        {
            self.oldest += 1;
        }
        (self.oldest < self.next).then_some((self.oldest & self.mask) as usize)
    }

    /// The request whose id has low bits `wire` (under `wire_mask`).
    fn lookup(&self, wire: u64, wire_mask: u64) -> Option<usize> {
        let i = (wire & self.mask) as usize;
        let p = self.e.get(i)?;
        (p.state != State::Free && p.id & wire_mask == wire).then_some(i)
    }

    /// Marks requests past their deadline; pushes `(op, measured)` of each.
    fn expire(&mut self, now: u64, timeout: u64, keep: bool, out: &mut Vec<(u32, bool)>) {
        self.tcursor = self.tcursor.max(self.oldest);
        while self.tcursor < self.next {
            let p = &mut self.e[(self.tcursor & self.mask) as usize];
            if p.state == State::Live {
                if p.sched.saturating_add(timeout) > now {
                    break;
                }
                out.push((p.op, p.measured));
                p.state = if keep { State::TimedOut } else { State::Free };
            }
            self.tcursor += 1;
        }
    }
}

/// A connection and its buffers.
pub(crate) struct Conn {
    sock: Sock,
    tx: Vec<u8>,
    tx_off: usize,
    /// UDP: start offsets of the datagrams in `tx`.
    starts: Vec<usize>,
    next_dgram: usize,
    rx: Vec<u8>,
    r_start: usize,
    r_end: usize,
    table: Table,
    dead: bool,
}

impl Conn {
    pub(crate) fn new(sock: Sock, udp_mc: bool) -> Conn {
        let table = match (&sock, udp_mc) {
            (Sock::Udp(_) | Sock::Xdp(_), true) => Table::new(MC_UDP_TABLE, true),
            _ => Table::new(1024, false),
        };
        Conn {
            sock,
            tx: Vec::with_capacity(64 << 10),
            tx_off: 0,
            starts: Vec::new(),
            next_dgram: 0,
            rx: vec![0; RX_INITIAL],
            r_start: 0,
            r_end: 0,
            table,
            dead: false,
        }
    }

    fn is_tcp(&self) -> bool {
        matches!(self.sock, Sock::Tcp(_))
    }

    /// The bytes of the next datagram to send, if any.
    fn next_datagram(&self) -> Option<&[u8]> {
        let a = *self.starts.get(self.next_dgram)?;
        let b = self
            .starts
            .get(self.next_dgram + 1)
            .copied()
            .unwrap_or(self.tx.len());
        Some(&self.tx[a..b])
    }

    /// Forgets the datagrams once all are sent.
    fn datagrams_sent(&mut self) {
        if self.next_dgram == self.starts.len() {
            self.tx.clear();
            self.starts.clear();
            self.next_dgram = 0;
        }
    }
}

/// Writes requests of one op into one connection.
struct ConnSink<'a> {
    conn: &'a mut Conn,
    op: u32,
    sched: u64,
    measured: bool,
    created: u32,
    last: usize,
}

impl Sink for ConnSink<'_> {
    fn begin(&mut self) -> Option<ReqSlot<'_>> {
        let idx = self.conn.table.alloc(self.sched, self.op, self.measured)?;
        self.created += 1;
        self.last = idx;
        let Conn {
            tx,
            starts,
            table,
            sock,
            ..
        } = &mut *self.conn;
        if !matches!(sock, Sock::Tcp(_)) {
            starts.push(tx.len());
        }
        let p = &mut table.e[idx];
        Some(ReqSlot {
            id: p.id,
            tx,
            specs: &mut p.specs,
            expect: &mut p.expect,
            aux: &mut p.aux,
        })
    }
}

/// How a thread generates ops.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Drive {
    /// Poisson arrivals at this rate (ops/s) for this thread.
    Open { rate: f64 },
    /// `depth` ops outstanding per connection.
    Closed { depth: u32 },
    /// Load ops `first, first + step, …` below `count`, `depth` per connection.
    Load {
        first: u64,
        step: u64,
        count: u64,
        depth: u32,
    },
}

/// What one thread is asked to do.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub drive: Drive,
    /// Ops scheduled before this (ns since start) are warm-up.
    pub warmup_ns: u64,
    /// No op is scheduled at or after this.
    pub send_end_ns: u64,
    /// Measured ops this thread may issue.
    pub max_ops: Option<u64>,
    /// Per-request deadline.
    pub timeout_ns: u64,
    /// The loop ends by this time whatever is outstanding.
    pub hard_end_ns: u64,
    pub seed: u64,
    pub cpu: Option<usize>,
}

/// What one thread measured.
#[derive(Debug)]
pub(crate) struct ThreadResult {
    pub hist: Histogram<u64>,
    pub counts: Counts,
    pub warm: Counts,
    /// When this thread stopped issuing ops (ns since start).
    pub stopped_ns: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct OpState {
    remaining: u32,
    sched: u64,
    conn: u32,
    measured: bool,
    /// 0 ok, 1 miss, 2 error, 3 timeout.
    worst: u8,
}

fn level(o: Outcome) -> u8 {
    match o {
        Outcome::Ok => 0,
        Outcome::Miss => 1,
        Outcome::Err(_) => 2,
    }
}

/// One client thread.
pub(crate) struct Worker {
    plan: Plan,
    codec: Box<dyn Codec>,
    workload: Box<dyn Workload>,
    rng: Rng64,
    op: Op,
    conns: Vec<Conn>,
    poll: Poll,
    ops: Vec<OpState>,
    free_ops: Vec<u32>,
    hist: Histogram<u64>,
    counts: Counts,
    warm: Counts,
    live: u64,
    start: Instant,
    expired: Vec<(u32, bool)>,
    reissue: Vec<u32>,
    udp_buf: Vec<u8>,
    /// Closed loop / load: still issuing.
    sending: bool,
    measured_ops: u64,
    next_load: u64,
    rr: usize,
    stopped_ns: u64,
    /// Refill missed single-key GETs with a SET (look-aside cache).
    demand_fill: bool,
    /// The AF_XDP client the [`Sock::Xdp`] connections send through.
    xdp: Option<XdpClient>,
    /// Local port -> connection, for replies taken from the AF_XDP client.
    xdp_conns: Vec<(u16, usize)>,
    /// Receive buffer for the AF_XDP client's kernel sockets.
    kernel_buf: Vec<u8>,
}

impl Worker {
    pub(crate) fn new(
        plan: Plan,
        codec: Box<dyn Codec>,
        workload: Box<dyn Workload>,
        mut conns: Vec<Conn>,
        xdp: Option<XdpClient>,
        start: Instant,
    ) -> std::io::Result<Worker> {
        let poll = Poll::new()?;
        let mut xdp_conns = Vec::new();
        for (i, c) in conns.iter_mut().enumerate() {
            let interest = Interest::READABLE | Interest::WRITABLE;
            match &mut c.sock {
                Sock::Tcp(s) => poll.registry().register(s, Token(i), interest)?,
                Sock::Udp(s) => poll.registry().register(s, Token(i), interest)?,
                Sock::Xdp(port) => xdp_conns.push((*port, i)),
            }
        }
        if let Some(x) = &xdp {
            let fd = x.fd().as_raw_fd();
            poll.registry()
                .register(&mut SourceFd(&fd), XDP_TOKEN, Interest::READABLE)?;
            for k in x.kernel_fds() {
                let fd = k.as_raw_fd();
                poll.registry().register(
                    &mut SourceFd(&fd),
                    XDP_KERNEL_TOKEN,
                    Interest::READABLE,
                )?;
            }
        }
        let demand_fill = workload.demand_fill() && !matches!(plan.drive, Drive::Load { .. });
        let next_load = match plan.drive {
            Drive::Load { first, .. } => first,
            _ => 0,
        };
        Ok(Worker {
            rng: Rng64::seed_from_u64(plan.seed),
            plan,
            codec,
            workload,
            op: Op::default(),
            conns,
            poll,
            ops: Vec::new(),
            free_ops: Vec::new(),
            hist: new_histogram(),
            counts: Counts::default(),
            warm: Counts::default(),
            live: 0,
            start,
            expired: Vec::new(),
            reissue: Vec::new(),
            udp_buf: vec![0; 65536],
            sending: true,
            measured_ops: 0,
            next_load,
            rr: 0,
            stopped_ns: 0,
            demand_fill,
            kernel_buf: if xdp.is_some() {
                vec![0; 65536]
            } else {
                Vec::new()
            },
            xdp,
            xdp_conns,
        })
    }

    #[inline]
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn counts_for(&mut self, measured: bool) -> &mut Counts {
        if measured {
            &mut self.counts
        } else {
            &mut self.warm
        }
    }

    /// Whether another op may be issued (closed loop, load).
    fn may_issue(&mut self, now: u64) -> bool {
        if !self.sending {
            return false;
        }
        let ok = match self.plan.drive {
            Drive::Load { count, .. } => self.next_load < count && now < self.plan.hard_end_ns,
            _ => {
                now < self.plan.send_end_ns
                    && self.plan.max_ops.is_none_or(|m| self.measured_ops < m)
            }
        };
        if !ok {
            self.sending = false;
            self.stopped_ns = now.min(self.plan.send_end_ns);
        }
        ok
    }

    /// Draws (or, loading, takes) the next op and writes it to `conn_i`.
    fn issue(&mut self, conn_i: usize, sched: u64, measured: bool) {
        match self.plan.drive {
            Drive::Load { step, .. } => {
                let i = self.next_load;
                self.next_load += step;
                self.workload.load_op(i, &mut self.op);
            }
            _ => self.workload.next_op(&mut self.rng, &mut self.op),
        }
        if measured {
            self.measured_ops += 1;
        }
        let opi = match self.free_ops.pop() {
            Some(i) => i,
            None => {
                self.ops.push(OpState::default());
                (self.ops.len() - 1) as u32
            }
        };
        self.ops[opi as usize] = OpState {
            remaining: 0,
            sched,
            conn: conn_i as u32,
            measured,
            worst: 0,
        };
        let mut worst = 0u8;
        let mut failed = [0u64; 3]; // connection, overflow, unsupported
        let created = {
            let conn = &mut self.conns[conn_i];
            if conn.dead {
                failed[0] += self.op.cmds.len() as u64;
                worst = 2;
                0
            } else {
                let mut sink = ConnSink {
                    conn,
                    op: opi,
                    sched,
                    measured,
                    created: 0,
                    last: 0,
                };
                for cmd in &self.op.cmds {
                    let before = sink.created;
                    match self.codec.encode(&self.op, cmd, &mut sink) {
                        Ok(()) => {
                            if let (Cmd::Get { key, len }, true) = (cmd, self.demand_fill) {
                                if sink.created == before + 1 {
                                    sink.conn.table.e[sink.last].fill = Some((*key, *len));
                                }
                            }
                        }
                        Err(EncodeError::Overflow) => {
                            failed[1] += 1;
                            worst = 2;
                        }
                        Err(EncodeError::Unsupported(_)) => {
                            failed[2] += 1;
                            worst = 2;
                        }
                    }
                }
                sink.created
            }
        };
        let c = self.counts_for(measured);
        c.ops += 1;
        c.requests += u64::from(created);
        c.errors.connection += failed[0];
        c.errors.overflow += failed[1];
        c.errors.unsupported += failed[2];
        self.live += u64::from(created);
        let o = &mut self.ops[opi as usize];
        o.remaining = created;
        o.worst = worst;
        if created == 0 {
            let now = self.now();
            self.finish_op(opi, now);
        }
    }

    fn finish_op(&mut self, opi: u32, now: u64) {
        let o = self.ops[opi as usize];
        self.free_ops.push(opi);
        let c = self.counts_for(o.measured);
        match o.worst {
            0 => c.ops_ok += 1,
            1 => c.ops_miss += 1,
            2 => c.ops_error += 1,
            _ => c.ops_timeout += 1,
        }
        if o.worst <= 1 && o.measured {
            self.hist
                .saturating_record(now.saturating_sub(o.sched).max(1));
        }
        if !matches!(self.plan.drive, Drive::Open { .. }) {
            self.reissue.push(o.conn);
        }
    }

    /// One request of `conn_i` (table slot `idx`) got `outcome`.
    fn on_response(&mut self, conn_i: usize, idx: usize, outcome: Outcome, now: u64) {
        let p = &mut self.conns[conn_i].table.e[idx];
        let (state, opi, measured, fill) = (p.state, p.op, p.measured, p.fill.take());
        p.state = State::Free;
        let c = self.counts_for(measured);
        match outcome {
            Outcome::Ok => c.req_ok += 1,
            Outcome::Miss => c.req_miss += 1,
            Outcome::Err(k) => *c.errors.get_mut(k) += 1,
        }
        if state == State::TimedOut {
            c.late += 1;
            return;
        }
        self.live -= 1;
        if let (Outcome::Miss, Some((key, len))) = (outcome, fill) {
            // Demand fill: the op also waits for the SET.
            let sched = self.ops[opi as usize].sched;
            let conn = &mut self.conns[conn_i];
            if !conn.dead {
                let mut sink = ConnSink {
                    conn,
                    op: opi,
                    sched,
                    measured,
                    created: 0,
                    last: 0,
                };
                let _ = self
                    .codec
                    .encode(&self.op, &Cmd::Set { key, len }, &mut sink);
                let n = sink.created;
                self.ops[opi as usize].remaining += n;
                self.live += u64::from(n);
                self.counts_for(measured).requests += u64::from(n);
            }
        }
        let o = &mut self.ops[opi as usize];
        o.worst = o.worst.max(level(outcome));
        o.remaining -= 1;
        if o.remaining == 0 {
            self.finish_op(opi, now);
        }
    }

    fn on_timeouts(&mut self, now: u64) {
        for i in 0..self.expired.len() {
            let (opi, measured) = self.expired[i];
            self.counts_for(measured).req_timeout += 1;
            self.live -= 1;
            let o = &mut self.ops[opi as usize];
            o.worst = 3;
            o.remaining -= 1;
            if o.remaining == 0 {
                self.finish_op(opi, now);
            }
        }
        self.expired.clear();
    }

    /// Closes `conn_i`, failing everything outstanding on it with `kind`.
    fn kill(&mut self, conn_i: usize, kind: ErrorKind) {
        let now = self.now();
        let conn = &mut self.conns[conn_i];
        if conn.dead {
            return;
        }
        conn.dead = true;
        let _ = match &mut conn.sock {
            Sock::Tcp(s) => self.poll.registry().deregister(s),
            Sock::Udp(s) => self.poll.registry().deregister(s),
            Sock::Xdp(_) => Ok(()),
        };
        conn.tx.clear();
        conn.tx_off = 0;
        conn.starts.clear();
        conn.next_dgram = 0;
        for p in conn.table.e.iter_mut() {
            if p.state == State::TimedOut {
                p.state = State::Free; // already counted as a timeout
            }
        }
        let idxs: Vec<usize> = (0..conn.table.e.len())
            .filter(|&i| conn.table.e[i].state == State::Live)
            .collect();
        for i in idxs {
            self.on_response(conn_i, i, Outcome::Err(kind), now);
        }
    }

    fn flush(&mut self, conn_i: usize) {
        let conn = &mut self.conns[conn_i];
        if conn.dead {
            return;
        }
        let mut fail = None;
        let mut refused = 0u64;
        match &conn.sock {
            Sock::Tcp(s) => {
                // mio writes through a shared reference.
                let mut s: &TcpStream = s;
                while conn.tx_off < conn.tx.len() {
                    match s.write(&conn.tx[conn.tx_off..]) {
                        Ok(n) => conn.tx_off += n,
                        Err(e) if e.kind() == IoKind::WouldBlock => break,
                        Err(e) if e.kind() == IoKind::Interrupted => {}
                        Err(_) => {
                            fail = Some(ErrorKind::Connection);
                            break;
                        }
                    }
                }
                if conn.tx_off == conn.tx.len() {
                    conn.tx.clear();
                    conn.tx_off = 0;
                }
            }
            Sock::Udp(s) => {
                while let Some(dgram) = conn.next_datagram() {
                    match s.send(dgram) {
                        Ok(_) => conn.next_dgram += 1,
                        Err(e) if e.kind() == IoKind::WouldBlock => break,
                        Err(e) if e.kind() == IoKind::Interrupted => {}
                        // ICMP port unreachable from an earlier datagram:
                        // this one was not sent; it will time out.
                        Err(e) if e.kind() == IoKind::ConnectionRefused => {
                            refused += 1;
                            conn.next_dgram += 1;
                        }
                        Err(_) => {
                            fail = Some(ErrorKind::Connection);
                            break;
                        }
                    }
                }
                conn.datagrams_sent();
            }
            Sock::Xdp(port) => {
                let port = *port;
                let x = self.xdp.as_mut().expect("AF_XDP connections have a client");
                while let Some(dgram) = conn.next_datagram() {
                    match x.send(port, dgram) {
                        Ok(Sent::Queued) => conn.next_dgram += 1,
                        // The ring is full until completions come back:
                        // the next turn's flush continues.
                        Ok(Sent::Full) => break,
                        Err(_) => {
                            fail = Some(ErrorKind::Connection);
                            break;
                        }
                    }
                }
                conn.datagrams_sent();
            }
        }
        self.counts.errors.connection += refused;
        if let Some(k) = fail {
            self.kill(conn_i, k);
        }
    }

    fn read_tcp(&mut self, conn_i: usize) {
        loop {
            let conn = &mut self.conns[conn_i];
            if conn.dead {
                return;
            }
            if conn.r_end == conn.rx.len() {
                if conn.r_start > 0 {
                    conn.rx.copy_within(conn.r_start..conn.r_end, 0);
                    conn.r_end -= conn.r_start;
                    conn.r_start = 0;
                } else {
                    let n = conn.rx.len() * 2;
                    conn.rx.resize(n, 0);
                }
            }
            let Sock::Tcp(s) = &mut conn.sock else { return };
            match s.read(&mut conn.rx[conn.r_end..]) {
                Ok(0) => {
                    self.kill(conn_i, ErrorKind::Connection);
                    return;
                }
                Ok(n) => {
                    conn.r_end += n;
                    self.parse_stream(conn_i);
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(_) => {
                    self.kill(conn_i, ErrorKind::Connection);
                    return;
                }
            }
        }
    }

    /// Checks every complete response in `conn_i`'s receive buffer.
    fn parse_stream(&mut self, conn_i: usize) {
        let now = self.now();
        loop {
            let conn = &mut self.conns[conn_i];
            let buf = &conn.rx[conn.r_start..conn.r_end];
            if buf.is_empty() {
                conn.r_start = 0;
                conn.r_end = 0;
                return;
            }
            let (idx, step) = match self.codec.peek(buf) {
                Peek::NeedMore => return,
                Peek::Fifo => {
                    let Some(idx) = conn.table.head() else {
                        self.kill(conn_i, ErrorKind::Protocol);
                        return;
                    };
                    let p = &conn.table.e[idx];
                    (Some(idx), self.codec.check(buf, p.expect, p.aux, &p.specs))
                }
                Peek::Id { id, len } => {
                    if buf.len() < len {
                        return;
                    }
                    match conn.table.lookup(u64::from(id), u64::from(u32::MAX)) {
                        Some(idx) => {
                            let p = &conn.table.e[idx];
                            (
                                Some(idx),
                                self.codec.check(&buf[..len], p.expect, p.aux, &p.specs),
                            )
                        }
                        None => {
                            conn.r_start += len;
                            self.counts.late += 1;
                            continue;
                        }
                    }
                }
            };
            match step {
                Step::NeedMore => return,
                Step::Done { len, outcome } => {
                    self.conns[conn_i].r_start += len;
                    if let Some(idx) = idx {
                        self.on_response(conn_i, idx, outcome, now);
                    }
                }
                Step::Fatal(_) => {
                    self.kill(conn_i, ErrorKind::Protocol);
                    return;
                }
            }
        }
    }

    fn read_udp(&mut self, conn_i: usize) {
        loop {
            let conn = &mut self.conns[conn_i];
            if conn.dead {
                return;
            }
            let Sock::Udp(s) = &mut conn.sock else { return };
            match s.recv(&mut self.udp_buf) {
                Ok(n) => self.on_datagram(conn_i, n),
                Err(e) if e.kind() == IoKind::WouldBlock => return,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) if e.kind() == IoKind::ConnectionRefused => {
                    self.counts.errors.connection += 1
                }
                Err(_) => {
                    self.kill(conn_i, ErrorKind::Connection);
                    return;
                }
            }
        }
    }

    /// Takes every reply waiting on the AF_XDP client (and, when
    /// `kernel`, the fragmented ones on its kernel sockets).
    fn read_xdp(&mut self, kernel: bool) {
        let Some(mut x) = self.xdp.take() else {
            return;
        };
        let deliver = |w: &mut Worker, port: u16, payload: &[u8]| {
            let Some(&(_, conn_i)) = w.xdp_conns.iter().find(|(p, _)| *p == port) else {
                return;
            };
            if w.conns[conn_i].dead {
                return;
            }
            let n = payload.len().min(w.udp_buf.len());
            w.udp_buf[..n].copy_from_slice(&payload[..n]);
            w.on_datagram(conn_i, n);
        };
        while x.recv(XDP_RX_BATCH, |port, payload| deliver(self, port, payload)) > 0 {}
        if kernel {
            let mut buf = std::mem::take(&mut self.kernel_buf);
            x.recv_kernel(&mut buf, |port, payload| deliver(self, port, payload));
            self.kernel_buf = buf;
        }
        self.xdp = Some(x);
    }

    fn on_datagram(&mut self, conn_i: usize, n: usize) {
        let now = self.now();
        let dg = &self.udp_buf[..n];
        let conn = &mut self.conns[conn_i];
        if self.codec.udp_frame_header() {
            if n < 8 {
                self.counts.errors.reassembly += 1;
                return;
            }
            let id = u64::from(u16::from_be_bytes([dg[0], dg[1]]));
            let seq = u16::from_be_bytes([dg[2], dg[3]]);
            let total = u16::from_be_bytes([dg[4], dg[5]]);
            let Some(idx) = conn.table.lookup(id, 0xffff) else {
                self.counts.late += 1;
                return;
            };
            let p = &mut conn.table.e[idx];
            let outcome = if total <= 1 && seq == 0 {
                step_outcome(self.codec.check(&dg[8..], p.expect, p.aux, &p.specs))
            } else if seq != p.asm_next {
                Outcome::Err(ErrorKind::Reassembly)
            } else {
                p.asm.extend_from_slice(&dg[8..]);
                p.asm_next += 1;
                if p.asm_next < total {
                    return;
                }
                step_outcome(self.codec.check(&p.asm, p.expect, p.aux, &p.specs))
            };
            self.on_response(conn_i, idx, outcome, now);
        } else {
            let Peek::Id { id, len } = self.codec.peek(dg) else {
                self.counts.errors.malformed += 1;
                return;
            };
            let Some(idx) = conn.table.lookup(u64::from(id), u64::from(u32::MAX)) else {
                self.counts.late += 1;
                return;
            };
            let p = &conn.table.e[idx];
            let outcome = if len != n {
                Outcome::Err(ErrorKind::Malformed)
            } else {
                step_outcome(self.codec.check(dg, p.expect, p.aux, &p.specs))
            };
            self.on_response(conn_i, idx, outcome, now);
        }
    }

    fn expire_all(&mut self, now: u64) {
        let timeout = self.plan.timeout_ns;
        for c in self.conns.iter_mut() {
            let keep = c.is_tcp();
            c.table.expire(now, timeout, keep, &mut self.expired);
        }
        if !self.expired.is_empty() {
            self.on_timeouts(now);
        }
    }

    fn fill(&mut self, conn_i: usize, depth: u32) {
        for _ in 0..depth {
            let now = self.now();
            if !self.may_issue(now) {
                return;
            }
            let measured =
                matches!(self.plan.drive, Drive::Load { .. }) || now >= self.plan.warmup_ns;
            self.issue(conn_i, now, measured);
        }
    }

    /// Runs the loop to its end.
    pub(crate) fn run(mut self) -> ThreadResult {
        if let Some(cpu) = self.plan.cpu {
            if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
                eprintln!("warning: could not pin a client thread to CPU {cpu}");
            }
        }
        let mut sched = None;
        match self.plan.drive {
            Drive::Open { rate } => {
                let mut s = PoissonSchedule::new(rate);
                s.start(&mut self.rng);
                sched = Some(s);
            }
            Drive::Closed { depth } | Drive::Load { depth, .. } => {
                for c in 0..self.conns.len() {
                    self.fill(c, depth);
                }
            }
        }
        let mut events = Events::with_capacity(256);
        let n_conns = self.conns.len();
        loop {
            let mut now = self.now();
            // 1. Issue.
            if let Some(s) = sched.as_mut() {
                while self.sending && s.peek() <= now {
                    let t = s.advance(&mut self.rng);
                    let limit = self.plan.max_ops.is_some_and(|m| self.measured_ops >= m);
                    if t >= self.plan.send_end_ns || limit {
                        self.sending = false;
                        self.stopped_ns = t.min(self.plan.send_end_ns);
                        break;
                    }
                    let c = self.rr;
                    self.rr = (self.rr + 1) % n_conns;
                    self.issue(c, t, t >= self.plan.warmup_ns);
                }
            }
            while let Some(c) = self.reissue.pop() {
                self.fill(c as usize, 1);
            }
            // 2. Flush.
            for c in 0..n_conns {
                let conn = &self.conns[c];
                if !conn.tx.is_empty() {
                    self.flush(c);
                }
            }
            if let Some(x) = self.xdp.as_mut() {
                if let Err(e) = x.flush() {
                    eprintln!("error: AF_XDP transmit: {e}");
                    break;
                }
            }
            // 3. Expire.
            now = self.now();
            self.expire_all(now);
            // 4. Done?
            if !self.sending && self.live == 0 && self.reissue.is_empty() {
                break;
            }
            if now >= self.plan.hard_end_ns {
                if self.sending {
                    self.sending = false;
                    self.stopped_ns = now.min(self.plan.send_end_ns);
                }
                // Whatever is still outstanding times out now.
                self.plan.timeout_ns = 0;
                self.expire_all(u64::MAX);
                break;
            }
            // 5. Poll.
            let wait = match &sched {
                Some(s) if self.sending => {
                    let gap = s.peek().saturating_sub(now);
                    if gap < SPIN_BELOW_NS {
                        Duration::ZERO
                    } else {
                        Duration::from_millis((gap - 1_000_000) / 1_000_000)
                    }
                }
                _ => Duration::from_millis(1),
            };
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != IoKind::Interrupted {
                    eprintln!("error: poll: {e}");
                    break;
                }
            }
            // The AF_XDP ring is read every turn: it is one load of the
            // producer index, and its readiness is edge-triggered.
            let kernel = events.iter().any(|ev| ev.token() == XDP_KERNEL_TOKEN);
            if self.xdp.is_some() {
                self.read_xdp(kernel);
            }
            for ev in events.iter() {
                let c = ev.token().0;
                if ev.token() == XDP_TOKEN || ev.token() == XDP_KERNEL_TOKEN {
                    continue;
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    if self.conns[c].is_tcp() {
                        self.read_tcp(c);
                    } else {
                        self.read_udp(c);
                    }
                }
            }
        }
        ThreadResult {
            hist: self.hist,
            counts: self.counts,
            warm: self.warm,
            stopped_ns: self.stopped_ns,
        }
    }
}

fn step_outcome(s: Step) -> Outcome {
    match s {
        Step::Done { outcome, .. } => outcome,
        Step::NeedMore => Outcome::Err(ErrorKind::Reassembly),
        Step::Fatal(_) => Outcome::Err(ErrorKind::Protocol),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_ids_grow_expire_and_lookup() {
        let mut t = Table::new(4, false);
        let idx: Vec<usize> = (0..4)
            .map(|i| t.alloc(i * 10, i as u32, true).unwrap())
            .collect();
        assert_eq!(idx, vec![0, 1, 2, 3]);
        // A fifth request doubles the table and keeps the others findable.
        let i5 = t.alloc(40, 4, true).unwrap();
        assert_eq!(t.e.len(), 8);
        assert_eq!(t.e[i5].id, 4);
        for id in 0..5u64 {
            let i = t.lookup(id, u64::from(u32::MAX)).unwrap();
            assert_eq!(t.e[i].id, id);
        }
        assert_eq!(t.head(), t.lookup(0, u64::MAX));
        // Expire: everything scheduled at or before now - timeout.
        let mut out = Vec::new();
        t.expire(25, 10, true, &mut out);
        assert_eq!(out, vec![(0, true), (1, true)]);
        let h = t.head().unwrap();
        assert_eq!(
            t.e[h].state,
            State::TimedOut,
            "TCP keeps timed-out requests in order"
        );
        t.e[h].state = State::Free;
        let h = t.head().unwrap();
        assert_eq!(t.e[h].id, 1);
        // A fixed table refuses instead of growing.
        let mut f = Table::new(2, true);
        assert!(f.alloc(0, 0, true).is_some() && f.alloc(0, 0, true).is_some());
        assert!(f.alloc(0, 0, true).is_none());
        assert_eq!(f.lookup(1, 0xffff), Some(1));
        assert_eq!(f.lookup(3, 0xffff), None);
    }
}
