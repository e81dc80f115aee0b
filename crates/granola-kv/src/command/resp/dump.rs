//! DUMP and RESTORE: a key's value in Redis's RDB serialization
//! (`protocol/rdb.rs`), so values move between granola-kv and Redis or
//! Valkey either way (`redis-cli --pipe` of RESTOREs, migration tools).
//!
//! - DUMP writes the plain RDB types (RDB version 9): every Redis since 5
//!   and Valkey restore them. A stream goes as `STREAM_LISTPACKS_2` (RDB
//!   version 10, Redis 7.0 and later and Valkey), with its groups, their
//!   pending entries and consumers (why that type: `protocol/rdb.rs`).
//! - RESTORE reads what Redis 7.x dumps, listpack and intset encodings and
//!   LZF-compressed strings included, and streams of every type Redis 5
//!   to 7.2 and Valkey write. A payload that would decode to more than the
//!   memory limit is refused before it is decoded.
//! - `IDLETIME` and `FREQ` are checked as Redis checks them and set the
//!   restored key's idle time (under a policy other than LFU) or its LFU
//!   counter (under an LFU policy); the other one is ignored, as in Redis.

use super::{parse_i64, Ctx};
use crate::command::{Step, Storage};
use crate::protocol::rdb::{
    self, Dump, DumpType, RdbConsumer, RdbError, RdbGroup, RdbPending, RdbStream, RdbValue,
    StreamDump,
};
use crate::protocol::resp::{self, Command};
use crate::store::{encode_fields, Dict, Item, Kind, Meta, SetMode, StoreError, UseHistory};
use std::ops::Bound;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `DUMP key`: the serialized value, or nil.
pub fn dump(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match ctx.db.get(arg(cmd, 1)) {
        None => ctx.null(),
        Some(item) => match serialize(&item) {
            Some(payload) => ctx.bytes(&payload),
            None => ctx.null(),
        },
    }
    Step::Done
}

/// The length of `item`'s value in the RDB format DUMP writes (the
/// payload without its type byte, version and checksum; `None` if its
/// body is gone): `DEBUG OBJECT`'s `serializedlength`.
pub(super) fn serialized_len(item: &Item) -> Option<usize> {
    serialize(item).map(|p| p.len().saturating_sub(11))
}

/// `item`'s DUMP payload (`None` if its body is gone).
pub(super) fn payload(item: &Item) -> Option<Vec<u8>> {
    serialize(item)
}

fn serialize(item: &Item) -> Option<Vec<u8>> {
    match item.kind() {
        Kind::String => Some(Dump::string(item.value_bytes())),
        Kind::List => {
            let elems: Vec<granola::Buf> = item.list_range(0, -1).collect();
            let mut d = Dump::new(DumpType::List, elems.len());
            for e in &elems {
                d.element(e);
            }
            Some(d.finish())
        }
        Kind::Hash | Kind::Set | Kind::ZSet => item.read_dict(|dict| {
            let kind = match item.kind() {
                Kind::Hash => DumpType::Hash,
                Kind::Set => DumpType::Set,
                _ => DumpType::ZSet,
            };
            let mut d = Dump::new(kind, dict.len());
            for (k, v) in dict.iter() {
                d.element(k.bytes());
                match kind {
                    DumpType::Hash => d.element(v.bytes()),
                    DumpType::ZSet => d.score(dict.score(k.bytes()).unwrap_or(0.0)),
                    _ => {}
                }
            }
            d.finish()
        }),
        Kind::Stream => item.read_dict(dump_stream),
    }
}

/// A stream's payload: its entries, bookkeeping and groups.
fn dump_stream(dict: &Dict) -> Vec<u8> {
    let mut d = StreamDump::new();
    let mut parts: Vec<&[u8]> = Vec::new();
    for e in dict.stream_range(Bound::Unbounded, Bound::Unbounded) {
        let fields = e.fields.bytes();
        parts.clear();
        parts.extend(e.parts().map(|r| &fields[r]));
        d.entry(e.id, &parts);
    }
    let groups: Vec<RdbGroup> = dict
        .stream_groups()
        .into_iter()
        .flat_map(|gs| gs.iter())
        .map(|(name, g)| {
            let consumers: Vec<RdbConsumer> = g
                .consumers()
                .map(|(name, c)| RdbConsumer {
                    name: name.to_vec(),
                    seen_ms: c.seen_ms,
                    active_ms: c.active_ms,
                })
                .collect();
            let pending = g
                .pending()
                .iter()
                .filter_map(|(&id, p)| {
                    // Consumers are in name order, as the group keeps them.
                    let consumer = consumers
                        .binary_search_by(|c| c.name.as_slice().cmp(&p.consumer))
                        .ok()?;
                    Some(RdbPending {
                        id,
                        delivered_ms: p.delivered_ms,
                        deliveries: p.deliveries,
                        consumer,
                    })
                })
                .collect();
            RdbGroup {
                name: name.to_vec(),
                last_delivered: g.last_delivered,
                entries_read: g.entries_read,
                pending,
                consumers,
            }
        })
        .collect();
    d.finish(&dict.stream_meta().unwrap_or_default(), &groups)
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]`.
pub fn restore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let key = arg(cmd, 1);
    let mut replace = false;
    let mut absttl = false;
    let mut history = None;
    let mut i = 4;
    while let Some(o) = cmd.arg(i) {
        let more = i + 1 < cmd.len();
        if o.eq_ignore_ascii_case(b"REPLACE") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"ABSTTL") {
            absttl = true;
        } else if o.eq_ignore_ascii_case(b"IDLETIME")
            && more
            && !matches!(history, Some(UseHistory::Frequency(_)))
        {
            match parse_i64(arg(cmd, i + 1)) {
                None => return error(ctx, resp::ERR_NOT_INTEGER),
                Some(n) if n < 0 => {
                    return error(ctx, b"-ERR Invalid IDLETIME value, must be >= 0\r\n")
                }
                Some(n) => history = Some(UseHistory::IdleSeconds(n as u64)),
            }
            i += 1;
        } else if o.eq_ignore_ascii_case(b"FREQ")
            && more
            && !matches!(history, Some(UseHistory::IdleSeconds(_)))
        {
            let Some(n) = parse_i64(arg(cmd, i + 1)) else {
                return error(ctx, resp::ERR_NOT_INTEGER);
            };
            match u8::try_from(n) {
                Ok(f) => history = Some(UseHistory::Frequency(f)),
                Err(_) => {
                    return error(ctx, b"-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n")
                }
            }
            i += 1;
        } else {
            return error(ctx, resp::ERR_SYNTAX);
        }
        i += 1;
    }
    if !replace && ctx.db.get(key).is_some() {
        return error(ctx, b"-BUSYKEY Target key name already exists.\r\n");
    }
    let ttl = match parse_i64(arg(cmd, 2)) {
        None => return error(ctx, resp::ERR_NOT_INTEGER),
        Some(t) if t < 0 => return error(ctx, b"-ERR Invalid TTL value, must be >= 0\r\n"),
        Some(t) => t as u64,
    };
    let budget = ctx.shared.config.memory_bytes();
    let value = match rdb::decode(arg(cmd, 3), budget) {
        Ok(v) => v,
        Err(RdbError::Footer) => {
            return error(ctx, b"-ERR DUMP payload version or checksum are wrong\r\n")
        }
        Err(RdbError::Format) => return error(ctx, b"-ERR Bad data format\r\n"),
        Err(RdbError::TooLarge) => {
            ctx.store_error(StoreError::OutOfMemory);
            return Step::Done;
        }
    };
    let now = ctx.db.now_ms();
    let expires_at_ms = match (ttl, absttl) {
        (0, _) => 0,
        (t, true) => t,
        (t, false) => t.saturating_add(now),
    };
    if expires_at_ms != 0 && expires_at_ms <= now {
        // Already expired: nothing is created (REPLACE still removes).
        if replace {
            ctx.db.delete(key);
        }
        ctx.ok();
        return Step::Done;
    }
    let meta = Meta {
        flags: 0,
        expires_at_ms,
    };
    match put(ctx.db, key, value, meta) {
        Ok(()) => {
            if let (Some(h), Some(item)) = (history, ctx.db.peek(key)) {
                ctx.shared.store.set_use_history(&item, h);
            }
            ctx.ok()
        }
        Err(Some(e)) => ctx.store_error(e),
        Err(None) => ctx.raw(b"-ERR Bad data format\r\n"),
    }
    Step::Done
}

fn error(ctx: &mut Ctx<'_>, reply: &[u8]) -> Step {
    ctx.raw(reply);
    Step::Done
}

/// Stores `value` as `key`, replacing what is there. `Err(None)` for a
/// value Redis would refuse too: repeated members or fields.
fn put(
    db: &dyn Storage,
    key: &[u8],
    value: RdbValue,
    meta: Meta,
) -> Result<(), Option<StoreError>> {
    let (kind, dict) = match value {
        RdbValue::String(v) => {
            return db
                .set(key, &v, meta, SetMode::Set)
                .map(|_| ())
                .map_err(Some)
        }
        RdbValue::List(l) => {
            let slices: Vec<&[u8]> = l.iter().map(|e| &e[..]).collect();
            return db.put_list(key, &slices, meta).map_err(Some);
        }
        RdbValue::Set(members) => {
            let mut d = Dict::default();
            for m in &members {
                if d.contains(m) {
                    return Err(None);
                }
                d.insert(m, b"");
            }
            (Kind::Set, d)
        }
        RdbValue::Hash(pairs) => {
            let mut d = Dict::default();
            for (f, v) in &pairs {
                if d.contains(f) {
                    return Err(None);
                }
                d.insert(f, v);
            }
            (Kind::Hash, d)
        }
        RdbValue::Stream(s) => (Kind::Stream, stream(*s).ok_or(None)?),
        RdbValue::ZSet(pairs) => {
            let mut d = Dict::sorted();
            for (m, s) in &pairs {
                if d.score(m).is_some() {
                    return Err(None);
                }
                d.set_score(m, *s);
            }
            (Kind::ZSet, d)
        }
    };
    db.put_dict(key, kind, &dict, meta).map_err(Some)
}

/// A decoded stream as a stream to store (None for an entry too large to
/// keep).
fn stream(s: RdbStream) -> Option<Dict> {
    let mut d = Dict::stream();
    for (id, parts) in &s.entries {
        d.stream_push(*id, encode_fields(parts.iter().map(|p| &p[..]))?);
    }
    d.set_stream_meta(s.meta);
    d.edit_stream_groups(|gs| {
        for g in &s.groups {
            gs.create(&g.name, g.last_delivered, g.entries_read);
            gs.edit(&g.name, |e| {
                for c in &g.consumers {
                    e.touch_consumer(&c.name, c.seen_ms);
                    if let Some(at) = c.active_ms {
                        e.activate(&c.name, at);
                    }
                }
                for p in &g.pending {
                    if let Some(c) = g.consumers.get(p.consumer) {
                        e.transfer(p.id, &c.name, p.delivered_ms, p.deliveries);
                    }
                }
            });
        }
    });
    Some(d)
}
