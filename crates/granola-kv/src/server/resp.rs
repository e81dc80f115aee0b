//! RESP2 (the Redis protocol): the commands caches and redis-benchmark use.
//!
//! A bulk string's `$<len>\r\n` is copied into the TX chunk; the value is
//! handed to [`ReplySink::value`], so a stored value at or above the copy
//! threshold leaves by reference (Cornflakes' Redis integration, seed 000
//! §6.2). Pipelined commands are all answered before the flush.
//!
//! Differences from Redis, by design: one database (`SELECT 0` only);
//! `MSET` is not atomic across keys; lists are copy-on-write (see
//! [`crate::store`]), so `RPUSH` on a long list costs O(length).

use crate::protocol::resp::{self, Command};
use crate::protocol::{Limits, Parsed, Recovery, ReplySink};
use crate::server::sink::TxSink;
use crate::server::Shared;
use crate::store::{Item, Kind, Meta, SetMode, StoreError};
use granola_net::server::{Close, ConnIo, Session};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A RESP connection.
pub struct RespSession {
    shared: Arc<Shared>,
    limits: Limits,
}

impl RespSession {
    /// A session over the shared state.
    pub fn new(shared: Arc<Shared>) -> RespSession {
        let limits = Limits {
            max_bulk: shared.config.max_item_size,
            max_value_len: shared.config.max_item_size,
            ..Limits::default()
        };
        RespSession { shared, limits }
    }
}

impl Session for RespSession {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        loop {
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
            match resp::parse(data, &self.limits) {
                Parsed::Done { cmd, consumed } => {
                    let quit = !cmd.is_empty() && exec(&self.shared, &cmd, &mut sink);
                    io.rx.consume(consumed);
                    if quit {
                        return Err(Close::new(""));
                    }
                }
                Parsed::Incomplete { need } => {
                    if need.is_some_and(|n| n > io.rx.max()) {
                        resp::write_error(&mut sink, b"ERR Protocol error: request too large");
                        return Err(Close::new("resp: request larger than the receive buffer"));
                    }
                    return Ok(());
                }
                Parsed::Invalid(e) => {
                    e.write_reply(&mut sink);
                    match e.recovery() {
                        Recovery::Skip(n) => io.rx.consume(n.min(data.len())),
                        Recovery::Close => {
                            return Err(Close::new(format!(
                                "resp: protocol error: {:?}",
                                e.kind()
                            )));
                        }
                    }
                }
            }
        }
    }
}

fn parse_i64(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn string_or_wrongtype<S: ReplySink>(item: Option<Item>, sink: &mut S) -> Result<Option<Item>, ()> {
    match item {
        Some(i) if i.kind() != Kind::String => {
            sink.copy(resp::ERR_WRONGTYPE);
            Err(())
        }
        other => Ok(other),
    }
}

fn list_or_wrongtype<S: ReplySink>(item: Option<Item>, sink: &mut S) -> Result<Option<Item>, ()> {
    match item {
        Some(i) if i.kind() != Kind::List => {
            sink.copy(resp::ERR_WRONGTYPE);
            Err(())
        }
        other => Ok(other),
    }
}

fn write_store_error<S: ReplySink>(sink: &mut S, e: StoreError) {
    match e {
        StoreError::WrongType => sink.copy(resp::ERR_WRONGTYPE),
        StoreError::TooLarge => resp::write_error(sink, b"ERR value too large"),
        StoreError::OutOfMemory => resp::write_error(
            sink,
            b"OOM command not allowed when used memory > 'maxmemory'.",
        ),
        StoreError::NotNumeric => sink.copy(resp::ERR_NOT_INTEGER),
        StoreError::NotStored | StoreError::Exists | StoreError::NotFound => {
            resp::write_error(sink, b"ERR write refused")
        }
    }
}

/// Runs one command; returns true for QUIT.
fn exec<S: ReplySink>(shared: &Shared, cmd: &Command<'_>, sink: &mut S) -> bool {
    let store = &shared.store;
    let n = cmd.len();
    let name = cmd.name();
    let arity = |ok: bool, sink: &mut S| {
        if !ok {
            resp::write_wrong_arity(sink, name);
        }
        ok
    };
    let arg = |i: usize| cmd.arg(i).unwrap_or_default();
    if cmd.is(b"GET") {
        if arity(n == 2, sink) {
            if let Ok(item) = string_or_wrongtype(store.get(arg(1)), sink) {
                match item {
                    Some(i) => resp::write_bulk(sink, &i.value()),
                    None => resp::write_null_bulk(sink),
                }
            }
        }
    } else if cmd.is(b"SET") {
        if arity(n >= 3, sink) {
            set(shared, cmd, sink);
        }
    } else if cmd.is(b"MGET") {
        if arity(n >= 2, sink) {
            resp::write_array_header(sink, n - 1);
            for key in cmd.args().skip(1) {
                match store.get(key) {
                    Some(i) if i.kind() == Kind::String => resp::write_bulk(sink, &i.value()),
                    _ => resp::write_null_bulk(sink),
                }
            }
        }
    } else if cmd.is(b"MSET") {
        if arity(n >= 3 && n % 2 == 1, sink) {
            let mut args = cmd.args().skip(1);
            let mut failed = None;
            while let (Some(k), Some(v)) = (args.next(), args.next()) {
                if let Err(e) = store.set(k, v, Meta::default(), SetMode::Set) {
                    failed = Some(e);
                }
            }
            match failed {
                None => sink.copy(resp::OK),
                Some(e) => write_store_error(sink, e),
            }
        }
    } else if cmd.is(b"DEL") || cmd.is(b"UNLINK") {
        if arity(n >= 2, sink) {
            let deleted = cmd.args().skip(1).filter(|k| store.delete(k)).count();
            resp::write_integer(sink, deleted as i64);
        }
    } else if cmd.is(b"EXISTS") {
        if arity(n >= 2, sink) {
            let found = cmd
                .args()
                .skip(1)
                .filter(|k| store.get(k).is_some())
                .count();
            resp::write_integer(sink, found as i64);
        }
    } else if cmd.is(b"INCR") || cmd.is(b"DECR") {
        if arity(n == 2, sink) {
            incr_by(shared, arg(1), if cmd.is(b"INCR") { 1 } else { -1 }, sink);
        }
    } else if cmd.is(b"INCRBY") || cmd.is(b"DECRBY") {
        if arity(n == 3, sink) {
            match parse_i64(arg(2)) {
                Some(d) if cmd.is(b"INCRBY") => incr_by(shared, arg(1), d, sink),
                Some(d) if d != i64::MIN => incr_by(shared, arg(1), -d, sink),
                _ => sink.copy(resp::ERR_NOT_INTEGER),
            }
        }
    } else if cmd.is(b"EXPIRE") || cmd.is(b"PEXPIRE") {
        if arity(n == 3, sink) {
            match parse_i64(arg(2)) {
                Some(t) => {
                    let ms = if cmd.is(b"EXPIRE") {
                        t.saturating_mul(1000)
                    } else {
                        t
                    };
                    let at = if ms <= 0 {
                        1
                    } else {
                        store.now_ms().saturating_add(ms as u64)
                    };
                    let done = store.touch(arg(1), at).is_some();
                    if ms <= 0 && done {
                        store.delete(arg(1));
                    }
                    resp::write_integer(sink, i64::from(done));
                }
                None => sink.copy(resp::ERR_NOT_INTEGER),
            }
        }
    } else if cmd.is(b"TTL") || cmd.is(b"PTTL") {
        if arity(n == 2, sink) {
            let v = match store.get(arg(1)) {
                None => -2,
                Some(i) if i.expires_at_ms() == 0 => -1,
                Some(i) => {
                    let left = i.expires_at_ms().saturating_sub(store.now_ms()) as i64;
                    if cmd.is(b"TTL") {
                        (left + 500) / 1000
                    } else {
                        left
                    }
                }
            };
            resp::write_integer(sink, v);
        }
    } else if cmd.is(b"RPUSH") || cmd.is(b"LPUSH") {
        if arity(n >= 3, sink) {
            let values: Vec<&[u8]> = cmd.args().skip(2).collect();
            match store.list_push(arg(1), &values, cmd.is(b"LPUSH")) {
                Ok(len) => resp::write_integer(sink, len as i64),
                Err(e) => write_store_error(sink, e),
            }
        }
    } else if cmd.is(b"LRANGE") {
        if arity(n == 4, sink) {
            match (parse_i64(arg(2)), parse_i64(arg(3))) {
                (Some(a), Some(b)) => {
                    if let Ok(item) = list_or_wrongtype(store.get(arg(1)), sink) {
                        match item {
                            Some(l) => {
                                let count = l.list_range(a, b).count();
                                resp::write_array_header(sink, count);
                                for v in l.list_range(a, b) {
                                    resp::write_bulk(sink, &v);
                                }
                            }
                            None => sink.copy(resp::EMPTY_ARRAY),
                        }
                    }
                }
                _ => sink.copy(resp::ERR_NOT_INTEGER),
            }
        }
    } else if cmd.is(b"LLEN") {
        if arity(n == 2, sink) {
            if let Ok(item) = list_or_wrongtype(store.get(arg(1)), sink) {
                resp::write_integer(sink, item.map_or(0, |l| l.list_len() as i64));
            }
        }
    } else if cmd.is(b"LINDEX") {
        if arity(n == 3, sink) {
            match parse_i64(arg(2)) {
                Some(i) => {
                    if let Ok(item) = list_or_wrongtype(store.get(arg(1)), sink) {
                        match item.and_then(|l| l.list_get(i)) {
                            Some(v) => resp::write_bulk(sink, &v),
                            None => resp::write_null_bulk(sink),
                        }
                    }
                }
                None => sink.copy(resp::ERR_NOT_INTEGER),
            }
        }
    } else if cmd.is(b"PING") {
        if arity(n <= 2, sink) {
            match cmd.arg(1) {
                Some(m) => resp::write_bulk_bytes(sink, m),
                None => sink.copy(resp::PONG),
            }
        }
    } else if cmd.is(b"ECHO") {
        if arity(n == 2, sink) {
            resp::write_bulk_bytes(sink, arg(1));
        }
    } else if cmd.is(b"DBSIZE") {
        resp::write_integer(sink, store.len() as i64);
    } else if cmd.is(b"FLUSHALL") || cmd.is(b"FLUSHDB") {
        store.flush_all();
        sink.copy(resp::OK);
    } else if cmd.is(b"SELECT") {
        if arity(n == 2, sink) {
            match parse_i64(arg(1)) {
                Some(0) => sink.copy(resp::OK),
                Some(_) => resp::write_error(sink, b"ERR DB index is out of range"),
                None => sink.copy(resp::ERR_NOT_INTEGER),
            }
        }
    } else if cmd.is(b"INFO") {
        resp::write_bulk_bytes(sink, info(shared).as_bytes());
    } else if cmd.is(b"CONFIG") {
        config(cmd, sink);
    } else if cmd.is(b"COMMAND") {
        // redis-cli asks for command docs at start; an empty listing makes
        // it fall back to plain completion. `COMMAND COUNT` gets 0.
        if cmd.arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"COUNT")) {
            resp::write_integer(sink, 0);
        } else {
            sink.copy(resp::EMPTY_ARRAY);
        }
    } else if cmd.is(b"CLIENT") {
        // CLIENT SETNAME / SETINFO (redis-py sends it on connect): accepted.
        sink.copy(resp::OK);
    } else if cmd.is(b"QUIT") {
        sink.copy(resp::OK);
        return true;
    } else {
        resp::write_unknown_command(sink, cmd);
    }
    false
}

/// `SET key value [EX s | PX ms] [NX | XX]`.
fn set<S: ReplySink>(shared: &Shared, cmd: &Command<'_>, sink: &mut S) {
    let store = &shared.store;
    let mut mode = SetMode::Set;
    let mut expires = 0u64;
    let mut opts = cmd.args().skip(3);
    while let Some(o) = opts.next() {
        let ttl_unit = if o.eq_ignore_ascii_case(b"EX") {
            Some(1000)
        } else if o.eq_ignore_ascii_case(b"PX") {
            Some(1)
        } else {
            None
        };
        if let Some(unit) = ttl_unit {
            match opts.next().and_then(parse_i64) {
                Some(t) if t > 0 && expires == 0 => {
                    expires = store
                        .now_ms()
                        .saturating_add((t as u64).saturating_mul(unit));
                }
                Some(t) if t <= 0 => {
                    resp::write_error(sink, b"ERR invalid expire time in 'set' command");
                    return;
                }
                _ => {
                    sink.copy(resp::ERR_SYNTAX);
                    return;
                }
            }
        } else if o.eq_ignore_ascii_case(b"NX") && mode == SetMode::Set {
            mode = SetMode::Add;
        } else if o.eq_ignore_ascii_case(b"XX") && mode == SetMode::Set {
            mode = SetMode::Replace;
        } else {
            sink.copy(resp::ERR_SYNTAX);
            return;
        }
    }
    let key = cmd.arg(1).unwrap_or_default();
    let value = cmd.arg(2).unwrap_or_default();
    // Redis SET replaces a list too; the store's Set mode does the same.
    match store.set(
        key,
        value,
        Meta {
            flags: 0,
            expires_at_ms: expires,
        },
        mode,
    ) {
        Ok(_) => sink.copy(resp::OK),
        Err(StoreError::NotStored) | Err(StoreError::NotFound) | Err(StoreError::Exists) => {
            resp::write_null_bulk(sink)
        }
        Err(e) => write_store_error(sink, e),
    }
}

/// INCR/DECR with Redis semantics (signed 64-bit, missing key = 0, overflow
/// is an error): read, compute, write back with a CAS so concurrent
/// increments are not lost.
fn incr_by<S: ReplySink>(shared: &Shared, key: &[u8], delta: i64, sink: &mut S) {
    let store = &shared.store;
    for _ in 0..64 {
        let (current, mode, meta) = match store.get(key) {
            None => (0, SetMode::Add, Meta::default()),
            Some(i) if i.kind() != Kind::String => {
                sink.copy(resp::ERR_WRONGTYPE);
                return;
            }
            Some(i) => match parse_i64(i.value_bytes()) {
                Some(v) => (
                    v,
                    SetMode::Cas(i.cas()),
                    Meta {
                        flags: i.flags(),
                        expires_at_ms: i.expires_at_ms(),
                    },
                ),
                None => {
                    sink.copy(resp::ERR_NOT_INTEGER);
                    return;
                }
            },
        };
        let Some(next) = current.checked_add(delta) else {
            sink.copy(resp::ERR_OVERFLOW);
            return;
        };
        match store.set(key, next.to_string().as_bytes(), meta, mode) {
            Ok(_) => {
                resp::write_integer(sink, next);
                return;
            }
            // Someone else wrote in between: retry.
            Err(StoreError::Exists) | Err(StoreError::NotStored) | Err(StoreError::NotFound) => {}
            Err(e) => {
                write_store_error(sink, e);
                return;
            }
        }
    }
    resp::write_error(sink, b"ERR too much contention on key");
}

fn config<S: ReplySink>(cmd: &Command<'_>, sink: &mut S) {
    let sub = cmd.arg(1).unwrap_or_default();
    if !sub.eq_ignore_ascii_case(b"GET") || cmd.len() != 3 {
        if sub.eq_ignore_ascii_case(b"SET") || sub.eq_ignore_ascii_case(b"RESETSTAT") {
            sink.copy(resp::OK);
        } else {
            resp::write_error(sink, b"ERR unsupported CONFIG subcommand");
        }
        return;
    }
    let param = cmd.arg(2).unwrap_or_default();
    // What redis-benchmark and clients ask for at start.
    let known: &[(&[u8], &[u8])] = &[(b"save", b""), (b"appendonly", b"no"), (b"databases", b"1")];
    match known.iter().find(|(k, _)| param.eq_ignore_ascii_case(k)) {
        Some((k, v)) => {
            resp::write_array_header(sink, 2);
            resp::write_bulk_bytes(sink, k);
            resp::write_bulk_bytes(sink, v);
        }
        None => sink.copy(resp::EMPTY_ARRAY),
    }
}

fn info(shared: &Shared) -> String {
    let s = shared.store.stats();
    let net = shared.net.get();
    let load = |f: fn(&granola_net::server::ServerStats) -> &std::sync::atomic::AtomicU64| {
        net.map_or(0, |n| f(n).load(Ordering::Relaxed))
    };
    format!(
        "# Server\r\nredis_version:7.0.15\r\ngranola_kv_version:{}\r\nprocess_id:{}\r\nuptime_in_seconds:{}\r\n\
         \r\n# Clients\r\nconnected_clients:{}\r\n\
         \r\n# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\n\
         \r\n# Stats\r\ntotal_connections_received:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\nevicted_keys:{}\r\nexpired_keys:{}\r\n\
         reply_bytes_copied:{}\r\nreply_bytes_referenced:{}\r\nsend_calls:{}\r\ncopy_threshold:{}\r\n\
         \r\n# Keyspace\r\ndb0:keys={},expires=0,avg_ttl=0\r\n",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        shared.started.elapsed().as_secs(),
        load(|n| &n.conns_open),
        s.bytes,
        s.limit,
        load(|n| &n.conns_total),
        s.hits,
        s.misses,
        s.evictions,
        s.expired,
        load(|n| &n.bytes_copied),
        load(|n| &n.bytes_referenced),
        load(|n| &n.send_calls),
        shared.copy_threshold,
        s.items,
    )
}
