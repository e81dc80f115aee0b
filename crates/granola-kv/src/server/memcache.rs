//! memcached: the text and meta protocols over TCP, `get`/`gets` over UDP.
//!
//! Commands come from [`crate::protocol::memcache::parse`]; this module runs
//! them against the store and writes the replies. A `VALUE` line is copied
//! into the TX chunk, the value itself goes through [`ReplySink::value`]:
//! by reference at or above the copy threshold. Pipelined requests are all
//! answered before the connection flushes, so they leave in one `sendmsg`.

use crate::protocol::memcache::{
    self as mc, expiry, ArithMode, Command, DeleteResult, Expiry, GetKind, MeInfo, MetaItem,
    MissResult, StoreMode, StoreResult, UdpHeader, KEY_BUF_LEN,
};
use crate::protocol::{Limits, Parsed, Recovery, ReplySink};
use crate::server::sink::TxSink;
use crate::server::Shared;
use crate::store::{Item, Kind, Meta, SetMode, StoreError};
use granola::Buf;
use granola_net::server::{Close, ConnIo, DatagramHandler, Session};
use granola_net::udp::{Datagram, UdpTx};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Version string reported by `version` and `stats`.
pub const VERSION: &[u8] = concat!(env!("CARGO_PKG_VERSION"), "-granola-kv").as_bytes();

/// Command counters shared by all memcached connections.
#[derive(Default, Debug)]
pub struct McCounters {
    /// Retrieval commands (one per key, as memcached counts `cmd_get`).
    pub cmd_get: AtomicU64,
    /// Storage commands.
    pub cmd_set: AtomicU64,
    /// `touch`/`gat` commands.
    pub cmd_touch: AtomicU64,
    /// `flush_all` commands.
    pub cmd_flush: AtomicU64,
    /// The pending delayed `flush_all`, shared with its timer thread.
    delayed_flush: Arc<DelayedFlush>,
}

/// One pending `flush_all <delay>` (memcached keeps one flush time: a later
/// command replaces it) and whether its timer thread is running — at most
/// one, however many delayed flushes clients send.
#[derive(Default, Debug)]
struct DelayedFlush {
    /// Deadline in store milliseconds; 0 = none pending.
    at_ms: AtomicU64,
    /// A timer thread is running.
    timer: AtomicBool,
}

fn limits(shared: &Shared) -> Limits {
    Limits {
        max_value_len: shared.config.max_item_size,
        ..Limits::default()
    }
}

fn now_unix(shared: &Shared) -> u64 {
    shared.store.now_ms() / 1000
}

/// memcached `exptime` → the store's absolute expiry in ms (0 = never; an
/// already expired time becomes 1 ms after the epoch: in the past).
fn expires_ms(shared: &Shared, exptime: i64) -> u64 {
    match expiry(exptime, now_unix(shared)) {
        Expiry::Never => 0,
        Expiry::Expired => 1,
        Expiry::At(s) => s.saturating_mul(1000),
    }
}

/// Remaining TTL in seconds as meta commands report it (-1 = never).
fn ttl_secs(shared: &Shared, item: &Item) -> i64 {
    match item.expires_at_ms() {
        0 => -1,
        at => (at.saturating_sub(shared.store.now_ms()) / 1000) as i64,
    }
}

fn string_item(item: Option<Item>) -> Option<Item> {
    item.filter(|i| i.kind() == Kind::String)
}

fn store_result(r: &Result<u64, StoreError>) -> Option<StoreResult> {
    match r {
        Ok(_) => Some(StoreResult::Stored),
        Err(StoreError::NotStored) | Err(StoreError::WrongType) => Some(StoreResult::NotStored),
        Err(StoreError::Exists) => Some(StoreResult::Exists),
        Err(StoreError::NotFound) => Some(StoreResult::NotFound),
        Err(_) => None,
    }
}

fn write_store_error<S: ReplySink>(sink: &mut S, e: StoreError) {
    match e {
        StoreError::TooLarge => sink.copy(b"SERVER_ERROR object too large for cache\r\n"),
        StoreError::NotNumeric => sink.copy(mc::NON_NUMERIC),
        _ => sink.copy(mc::OUT_OF_MEMORY),
    }
}

fn set_mode(mode: StoreMode, cas: Option<u64>) -> SetMode {
    match mode {
        StoreMode::Set => SetMode::Set,
        StoreMode::Add => SetMode::Add,
        StoreMode::Replace => SetMode::Replace,
        StoreMode::Append => SetMode::Append,
        StoreMode::Prepend => SetMode::Prepend,
        StoreMode::Cas => SetMode::Cas(cas.unwrap_or(0)),
    }
}

/// What the connection does after a command.
enum After {
    Continue,
    Quit,
}

/// Runs one command, writing its reply (if any) to `sink`.
fn exec<S: ReplySink>(shared: &Shared, cmd: Command<'_>, sink: &mut S) -> After {
    let store = &shared.store;
    let counters = &shared.memcache;
    match cmd {
        Command::Get(g) => {
            let cas = g.with_cas();
            let touch = g.exptime.map(|e| expires_ms(shared, i64::from(e)));
            if g.kind == GetKind::Gat || g.kind == GetKind::Gats {
                counters.cmd_touch.fetch_add(1, Ordering::Relaxed);
            }
            for key in g.keys {
                counters.cmd_get.fetch_add(1, Ordering::Relaxed);
                let item = match touch {
                    Some(at) => store.touch(key, at),
                    None => store.get(key),
                };
                if let Some(item) = string_item(item) {
                    mc::write_value(
                        sink,
                        key,
                        item.flags(),
                        &item.value(),
                        cas.then(|| item.cas()),
                    );
                }
            }
            sink.copy(mc::END);
        }
        Command::Store(s) => {
            counters.cmd_set.fetch_add(1, Ordering::Relaxed);
            let meta = Meta {
                flags: s.flags,
                expires_at_ms: expires_ms(shared, i64::from(s.exptime)),
            };
            let r = store.set(s.key, s.data, meta, set_mode(s.mode, s.cas));
            if !s.noreply {
                match (store_result(&r), r) {
                    (Some(res), _) => mc::write_store_result(sink, res),
                    (None, Err(e)) => write_store_error(sink, e),
                    (None, Ok(_)) => unreachable!("Ok maps to Stored"),
                }
            }
        }
        Command::Delete { key, noreply } => {
            let deleted = store.delete(key);
            if !noreply {
                sink.copy(if deleted { mc::DELETED } else { mc::NOT_FOUND });
            }
        }
        Command::Arith {
            key,
            decr,
            delta,
            noreply,
        } => {
            let r = store.incr_decr(key, delta, !decr);
            if !noreply {
                match r {
                    Ok(n) => mc::write_number(sink, n),
                    Err(StoreError::NotFound) | Err(StoreError::WrongType) => {
                        sink.copy(mc::NOT_FOUND)
                    }
                    Err(e) => write_store_error(sink, e),
                }
            }
        }
        Command::Touch {
            key,
            exptime,
            noreply,
        } => {
            counters.cmd_touch.fetch_add(1, Ordering::Relaxed);
            let touched = store
                .touch(key, expires_ms(shared, i64::from(exptime)))
                .is_some();
            if !noreply {
                sink.copy(if touched { mc::TOUCHED } else { mc::NOT_FOUND });
            }
        }
        Command::FlushAll { delay, noreply } => {
            counters.cmd_flush.fetch_add(1, Ordering::Relaxed);
            flush_all(shared, delay);
            if !noreply {
                sink.copy(mc::OK);
            }
        }
        Command::Stats { args } => {
            if args.is_empty() {
                write_stats(shared, sink);
            }
            // Sub-statistics (items, slabs, settings...) are memcached
            // internals with no granola counterpart: an empty listing.
            sink.copy(mc::END);
        }
        Command::Version => mc::write_version(sink, VERSION),
        Command::Verbosity { noreply, .. } => {
            if !noreply {
                sink.copy(mc::OK);
            }
        }
        Command::Quit => return After::Quit,
        Command::MetaGet(m) => {
            let mut kb = [0u8; KEY_BUF_LEN];
            let key = m.key.bytes(&mut kb);
            counters.cmd_get.fetch_add(1, Ordering::Relaxed);
            let mut item = string_item(match m.ttl {
                Some(t) => store.touch(key, expires_ms(shared, i64::from(t))),
                None => store.get(key),
            });
            let mut win = false;
            if item.is_none() {
                if let Some(t) = m.vivify {
                    // N: create an empty placeholder; this client "wins"
                    // the right to fill it.
                    let meta = Meta {
                        flags: 0,
                        expires_at_ms: expires_ms(shared, i64::from(t)),
                    };
                    if store.set(key, b"", meta, SetMode::Add).is_ok() {
                        item = string_item(store.get(key));
                        win = true;
                    }
                }
            }
            match item {
                Some(item) => {
                    let info = MetaItem {
                        client_flags: item.flags(),
                        cas: item.cas(),
                        ttl: ttl_secs(shared, &item),
                        last_access: 0,
                        fetched: false,
                        win,
                        stale: false,
                        token_sent: false,
                    };
                    m.write_hit(sink, &item.value(), &info);
                }
                None => m.write_miss(sink),
            }
        }
        Command::MetaSet(m) => {
            counters.cmd_set.fetch_add(1, Ordering::Relaxed);
            let mut kb = [0u8; KEY_BUF_LEN];
            let key = m.key.bytes(&mut kb);
            let meta = Meta {
                flags: m.client_flags,
                expires_at_ms: expires_ms(shared, i64::from(m.exptime)),
            };
            let mode = match m.compare_cas {
                Some(c) => SetMode::Cas(c),
                None => set_mode(m.store_mode(), None),
            };
            let r = store.set(key, m.data, meta, mode);
            match (store_result(&r), r) {
                (Some(res), r) => m.write_result(sink, res, r.unwrap_or(0)),
                (None, Err(e)) => write_store_error(sink, e),
                (None, Ok(_)) => unreachable!("Ok maps to Stored"),
            }
        }
        Command::MetaDelete(m) => {
            let mut kb = [0u8; KEY_BUF_LEN];
            let key = m.key.bytes(&mut kb);
            let result = match (m.compare_cas, string_item(store.get(key))) {
                (_, None) => DeleteResult::NotFound,
                (Some(c), Some(item)) if item.cas() != c => DeleteResult::Exists,
                _ => {
                    if store.delete(key) {
                        DeleteResult::Deleted
                    } else {
                        DeleteResult::NotFound
                    }
                }
            };
            m.write_result(sink, result);
        }
        Command::MetaArith(m) => {
            let mut kb = [0u8; KEY_BUF_LEN];
            let key = m.key.bytes(&mut kb);
            let incr = m.mode == ArithMode::Incr;
            let mut r = store.incr_decr(key, m.delta, incr);
            if r == Err(StoreError::NotFound) {
                if let Some(t) = m.vivify {
                    let meta = Meta {
                        flags: 0,
                        expires_at_ms: expires_ms(shared, i64::from(t)),
                    };
                    let init = m.initial.to_string();
                    r = store
                        .set(key, init.as_bytes(), meta, SetMode::Add)
                        .map(|_| m.initial);
                }
            }
            match r {
                Ok(n) => {
                    let (cas, ttl) = match string_item(store.get(key)) {
                        Some(item) => (item.cas(), ttl_secs(shared, &item)),
                        None => (0, -1),
                    };
                    m.write_value(sink, n, cas, ttl);
                }
                Err(StoreError::NotFound) | Err(StoreError::WrongType) => {
                    m.write_miss(sink, MissResult::NotFound)
                }
                Err(StoreError::Exists) => m.write_miss(sink, MissResult::Exists),
                Err(StoreError::NotStored) => m.write_miss(sink, MissResult::NotStored),
                Err(e) => write_store_error(sink, e),
            }
        }
        Command::MetaDebug(m) => {
            let mut kb = [0u8; KEY_BUF_LEN];
            let key = m.key.bytes(&mut kb);
            match string_item(store.get(key)) {
                Some(item) => {
                    let info = MeInfo {
                        exp: ttl_secs(shared, &item),
                        la: 0,
                        cas: item.cas(),
                        fetched: false,
                        cls: 0,
                        size: item.value_len() as u64,
                    };
                    m.write_hit(sink, &info);
                }
                None => sink.copy(mc::EN),
            }
        }
        Command::MetaNoop => sink.copy(mc::MN),
    }
    After::Continue
}

/// `flush_all [delay]`: now, or after `delay` seconds on a timer thread
/// (memcached marks items older than the deadline instead; the observable
/// behaviour — everything set before the flush time is gone after it — is
/// the same). A later `flush_all` replaces a pending one, and there is at
/// most one timer thread.
fn flush_all(shared: &Shared, delay: i32) {
    let pending = &shared.memcache.delayed_flush;
    let at_ms = match expiry(i64::from(delay), now_unix(shared)) {
        Expiry::Never | Expiry::Expired => {
            pending.at_ms.store(0, Ordering::SeqCst);
            shared.store.flush_all();
            return;
        }
        Expiry::At(s) => s.saturating_mul(1000).max(1),
    };
    pending.at_ms.store(at_ms, Ordering::SeqCst);
    if pending.timer.swap(true, Ordering::SeqCst) {
        return; // the running timer picks up the new deadline
    }
    let pending = pending.clone();
    let store = shared.store.clone();
    std::thread::spawn(move || loop {
        let at = pending.at_ms.load(Ordering::SeqCst);
        if at == 0 {
            // Nothing pending: stop, unless a deadline arrived meanwhile and
            // no other timer has claimed it.
            pending.timer.store(false, Ordering::SeqCst);
            if pending.at_ms.load(Ordering::SeqCst) == 0
                || pending.timer.swap(true, Ordering::SeqCst)
            {
                return;
            }
            continue;
        }
        let now = store.now_ms();
        if now >= at {
            if pending
                .at_ms
                .compare_exchange(at, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                store.flush_all();
            }
            continue;
        }
        // Short naps: a replaced (earlier or cancelled) deadline is seen.
        std::thread::sleep(std::time::Duration::from_millis((at - now).min(100)));
    });
}

fn write_stats<S: ReplySink>(shared: &Shared, sink: &mut S) {
    let s = shared.store.stats();
    let c = &shared.memcache;
    let net = shared.net.get();
    let load = |a: Option<&AtomicU64>| a.map_or(0, |a| a.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"pid", u64::from(std::process::id()));
    mc::write_stat_u64(sink, b"uptime", shared.started.elapsed().as_secs());
    mc::write_stat_u64(sink, b"time", now_unix(shared));
    mc::write_stat(sink, b"version", VERSION);
    mc::write_stat_u64(sink, b"threads", shared.threads as u64);
    mc::write_stat_u64(sink, b"curr_connections", load(net.map(|n| &n.conns_open)));
    mc::write_stat_u64(
        sink,
        b"total_connections",
        load(net.map(|n| &n.conns_total)),
    );
    mc::write_stat_u64(
        sink,
        b"rejected_connections",
        load(net.map(|n| &n.conns_refused)),
    );
    mc::write_stat_u64(sink, b"cmd_get", c.cmd_get.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"cmd_set", c.cmd_set.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"cmd_touch", c.cmd_touch.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"cmd_flush", c.cmd_flush.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"get_hits", s.hits);
    mc::write_stat_u64(sink, b"get_misses", s.misses);
    mc::write_stat_u64(sink, b"get_expired", s.expired);
    mc::write_stat_u64(sink, b"evictions", s.evictions);
    mc::write_stat_u64(sink, b"curr_items", s.items as u64);
    mc::write_stat_u64(sink, b"bytes", s.bytes as u64);
    mc::write_stat_u64(sink, b"limit_maxbytes", s.limit as u64);
    mc::write_stat_u64(
        sink,
        b"reply_bytes_copied",
        load(net.map(|n| &n.bytes_copied)),
    );
    mc::write_stat_u64(
        sink,
        b"reply_bytes_referenced",
        load(net.map(|n| &n.bytes_referenced)),
    );
    mc::write_stat_u64(sink, b"send_calls", load(net.map(|n| &n.send_calls)));
    mc::write_stat_u64(sink, b"copy_threshold", shared.copy_threshold as u64);
}

/// A memcached TCP connection.
pub struct MemcacheSession {
    shared: Arc<Shared>,
    limits: Limits,
    /// Input bytes still to discard after an error (memcached's swallow).
    swallow: usize,
}

impl MemcacheSession {
    /// A session over the shared state.
    pub fn new(shared: Arc<Shared>) -> MemcacheSession {
        let limits = limits(&shared);
        MemcacheSession {
            shared,
            limits,
            swallow: 0,
        }
    }
}

impl Session for MemcacheSession {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        loop {
            if self.swallow > 0 {
                let n = self.swallow.min(io.rx.data().len());
                io.rx.consume(n);
                self.swallow -= n;
                if self.swallow > 0 {
                    return Ok(());
                }
            }
            if io.tx_full() {
                // Back-pressure: the rest of the input waits until the
                // replies queued so far have drained.
                return Ok(());
            }
            let data = io.rx.data();
            if data.is_empty() {
                return Ok(());
            }
            let mut sink = TxSink(&mut *io.tx);
            match mc::parse(data, &self.limits) {
                Parsed::Done { cmd, consumed } => {
                    let after = exec(&self.shared, cmd, &mut sink);
                    io.rx.consume(consumed);
                    if let After::Quit = after {
                        return Err(Close::new(""));
                    }
                }
                Parsed::Incomplete { need } => {
                    if need.is_some_and(|n| n > io.rx.max()) {
                        sink.copy(b"SERVER_ERROR request too large\r\n");
                        return Err(Close::new(
                            "memcached: request larger than the receive buffer",
                        ));
                    }
                    return Ok(());
                }
                Parsed::Invalid(e) => {
                    e.write_reply(&mut sink);
                    match e.recovery() {
                        Recovery::Skip(n) => {
                            let k = n.min(data.len());
                            io.rx.consume(k);
                            self.swallow = n - k;
                        }
                        Recovery::Close => {
                            return Err(Close::new(format!(
                                "memcached: protocol error: {:?}",
                                e.kind()
                            )));
                        }
                    }
                }
            }
        }
    }
}

/// A reply under construction for UDP: copied bytes and referenced values,
/// in order, so it can be cut into datagrams without copying the values.
#[derive(Default)]
struct Recorded {
    bytes: Vec<u8>,
    /// (offset in the reply, piece).
    pieces: Vec<(usize, Piece)>,
    len: usize,
}

enum Piece {
    Copied(std::ops::Range<usize>),
    Shared(Buf),
}

impl ReplySink for Recorded {
    fn copy(&mut self, bytes: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        match self.pieces.last_mut() {
            Some((_, Piece::Copied(r))) if r.end == start => r.end = self.bytes.len(),
            _ => self
                .pieces
                .push((self.len, Piece::Copied(start..self.bytes.len()))),
        }
        self.len += bytes.len();
    }

    fn value(&mut self, value: &Buf) {
        self.pieces.push((self.len, Piece::Shared(value.clone())));
        self.len += value.len();
    }
}

/// memcached over UDP: `get`/`gets` only (as the issue and memcached's own
/// guidance limit it), one request per datagram, replies split into
/// datagrams of at most 1400 bytes with the 8-byte frame header.
///
/// Anti-amplification: a reply is never more than `--udp-amplification`
/// times the request's size (an unverified source could be spoofed);
/// larger replies get `SERVER_ERROR reply too large for UDP`.
pub struct MemcacheUdp {
    shared: Arc<Shared>,
    limits: Limits,
}

impl MemcacheUdp {
    /// A per-thread handler.
    pub fn new(shared: Arc<Shared>) -> MemcacheUdp {
        let limits = limits(&shared);
        MemcacheUdp { shared, limits }
    }
}

impl DatagramHandler for MemcacheUdp {
    fn on_datagram(&mut self, dgram: &Datagram, out: &mut UdpTx) {
        let data: &[u8] = &dgram.data;
        let Some((header, body)) = UdpHeader::parse(data) else {
            log::debug!("memcached-udp: runt datagram from {}", dgram.from);
            return;
        };
        if !header.is_single() {
            // Multi-datagram requests are not supported (nor by memcached).
            return;
        }
        let mut reply = Recorded::default();
        match mc::parse(body, &self.limits) {
            Parsed::Done {
                cmd: cmd @ Command::Get(_),
                ..
            } => {
                exec(&self.shared, cmd, &mut reply);
            }
            Parsed::Done { .. } => {
                reply.copy(b"SERVER_ERROR only get and gets are served over UDP\r\n")
            }
            Parsed::Incomplete { .. } => reply.copy(mc::ERROR),
            Parsed::Invalid(e) => e.write_reply(&mut reply),
        }
        let amp = self.shared.config.udp_amplification;
        if amp > 0 && reply.len > amp.saturating_mul(data.len()) {
            reply = Recorded::default();
            reply.copy(b"SERVER_ERROR reply too large for UDP\r\n");
        }
        send_udp_reply(header.request_id, &reply, dgram, out);
    }
}

fn send_udp_reply(request_id: u16, reply: &Recorded, dgram: &Datagram, out: &mut UdpTx) {
    let frames = match mc::udp_frames(request_id, reply.len, mc::UDP_MAX_DATAGRAM) {
        Ok(f) => f,
        Err(e) => {
            log::debug!("memcached-udp: reply to {} not sent: {e:?}", dgram.from);
            return;
        }
    };
    for frame in frames {
        let mut d = out.datagram(dgram.from);
        let mut ok = d.copy(&frame.header).is_ok();
        // Pieces overlapping this frame's range of the reply.
        for (off, piece) in &reply.pieces {
            let plen = match piece {
                Piece::Copied(r) => r.len(),
                Piece::Shared(b) => b.len(),
            };
            let (a, b) = (frame.range.start.max(*off), frame.range.end.min(off + plen));
            if a >= b {
                continue;
            }
            let (ra, rb) = (a - off, b - off);
            ok &= match piece {
                Piece::Copied(r) => d.copy(&reply.bytes[r.start + ra..r.start + rb]).is_ok(),
                Piece::Shared(buf) => d.value(&buf.slice(ra..rb)).is_ok(),
            };
        }
        if !ok || d.finish().is_err() {
            log::warn!(
                "memcached-udp: could not queue a reply datagram to {}",
                dgram.from
            );
            return;
        }
    }
}
