//! String commands: GET SET (every option) SETNX SETEX PSETEX GETSET
//! GETDEL GETEX MGET MSET MSETNX APPEND STRLEN GETRANGE SETRANGE INCR DECR
//! INCRBY DECRBY INCRBYFLOAT.
//!
//! Read-modify-write commands (APPEND, SETRANGE, INCR...) read the item and
//! write it back with a CAS, retrying if another writer came in between.

use super::expiry::{self, Bad, When};
use super::{parse_i64, Ctx};
use crate::command::storage::Storage;
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Item, Stamp};
use crate::store::{Kind, Meta, SetMode, StoreError};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `GET key`.
pub fn get(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(item) = ctx.string(arg(cmd, 1)) {
        match item {
            Some(i) => ctx.bulk_item(&i),
            None => ctx.null(),
        }
    }
    Step::Done
}

/// Most keys an MGET reads as one snapshot (one held item reference and
/// stamp each, about 90 B, for the length of the command).
const SNAPSHOT_KEYS: usize = 4096;
/// Most value bytes a snapshot holds while its reply goes out: items held
/// by a paused MGET stay allocated even if overwritten meanwhile, so a
/// client that reads slowly must not pin more than this.
const SNAPSHOT_BYTES: usize = 16 << 20;
/// A snapshot buffer larger than this is not kept for the next MGET.
const SNAPSHOT_KEEP: usize = 64;

/// `MGET key...`: one snapshot, as in Redis (see [`snapshot`]), up to
/// [`SNAPSHOT_KEYS`] keys and [`SNAPSHOT_BYTES`] of values; its reply
/// pauses when the reply queue fills and goes on from the items it read.
/// Beyond those bounds each key is read as of its own moment, pausing
/// likewise: it sees a multi-key write whole, as every command does, but
/// not necessarily the order of single-key writes landing between its
/// keys.
pub fn mget(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let keys = cmd.len() - 1;
    let resume = ctx.resume;
    if resume == 0 {
        if keys <= SNAPSHOT_KEYS {
            let mut read = std::mem::take(&mut ctx.conn.snapshot);
            let tries = ctx.shared.config.mget_snapshot_tries.max(1);
            let whole = snapshot(ctx.db, cmd, &mut read, tries);
            let bytes: usize = read
                .iter()
                .filter_map(|(i, _)| i.as_ref().map(|i| i.value_len()))
                .sum();
            if bytes <= SNAPSHOT_BYTES {
                if !whole && !ctx.conn.alone {
                    // Writers kept outrunning the check: read again alone
                    // in the gate, where no RESP write lands in between.
                    release(ctx, read);
                    ctx.conn.wants_alone = true;
                    return Step::Done;
                }
                ctx.array(keys);
                return reply_snapshot(ctx, read, 0);
            }
            release(ctx, read);
        }
        ctx.array(keys);
    } else if !ctx.conn.snapshot.is_empty() {
        let read = std::mem::take(&mut ctx.conn.snapshot);
        return reply_snapshot(ctx, read, resume - 1);
    }
    // Key by key; `Pause(n)`: go on at argument n (the first key is 1).
    let from = resume.max(1);
    for (n, key) in cmd.args().enumerate().skip(from) {
        if n > from && ctx.full() {
            return Step::Pause(n);
        }
        match ctx.db.get(key) {
            Some(i) if i.kind() == Kind::String => ctx.bulk_item(&i),
            _ => ctx.null(),
        }
    }
    Step::Done
}

/// Answers the snapshot `read` from its item `from` on; when the reply
/// queue fills before item `i`, keeps `read` in the connection and returns
/// `Pause(i + 1)`.
fn reply_snapshot(ctx: &mut Ctx<'_>, read: Vec<(Option<Item>, Stamp)>, from: usize) -> Step {
    for (i, (item, _)) in read.iter().enumerate().skip(from) {
        if i > from && ctx.full() {
            ctx.conn.snapshot = read;
            return Step::Pause(i + 1);
        }
        match item {
            Some(item) if item.kind() == Kind::String => ctx.bulk_item(item),
            _ => ctx.null(),
        }
    }
    release(ctx, read);
    Step::Done
}

/// Drops a snapshot's items and keeps its buffer for the next MGET unless
/// it grew large.
fn release(ctx: &mut Ctx<'_>, mut read: Vec<(Option<Item>, Stamp)>) {
    read.clear();
    if read.capacity() <= SNAPSHOT_KEEP {
        ctx.conn.snapshot = read;
    }
}

/// The items of `cmd`'s keys as of one moment: reads every key, then
/// checks that each key but the last still holds what it read (the same
/// index entry, or still nothing: one load per key). If so, each earlier
/// key held its item from its read to its check, an interval containing
/// the last key's read, so all of them held these items at that instant.
/// Otherwise a write landed in between: read again, up to `tries` times
/// (the server's `mget_snapshot_tries`, 32); false if writers rewriting these keys without
/// pause outran every try (then [`mget`] runs again alone in the gate;
/// memcached and native writers, which the gate does not stop, can still
/// outrun that one, and its last read is answered). An absent key that is
/// written and deleted again between the two reads goes unnoticed.
fn snapshot(
    db: &dyn Storage,
    cmd: &Command<'_>,
    read: &mut Vec<(Option<Item>, Stamp)>,
    tries: usize,
) -> bool {
    for _ in 0..tries {
        read.clear();
        read.extend(cmd.args().skip(1).map(|k| db.get_stamped(k)));
        let unchanged = cmd
            .args()
            .skip(1)
            .zip(read.iter())
            .take(read.len().saturating_sub(1))
            .all(|(k, (_, stamp))| db.unchanged(k, stamp));
        if unchanged {
            return true;
        }
    }
    false
}

/// `MSET key value [key value ...]`; with two or more pairs the
/// dispatcher runs it alone in the gate (`gate.rs`), so it lands at once.
pub fn mset(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() % 2 == 0 {
        resp::write_wrong_arity(ctx.out, cmd.name());
        return Step::Done;
    }
    let mut args = cmd.args().skip(1);
    let mut failed = None;
    while let (Some(k), Some(v)) = (args.next(), args.next()) {
        if let Err(e) = ctx.db.set(k, v, Meta::default(), SetMode::Set) {
            failed = Some(e);
        }
    }
    match failed {
        None => ctx.ok(),
        Some(e) => ctx.store_error(e),
    }
    Step::Done
}

/// Writes the error for a refused expiry argument of `cmd`.
pub fn bad_expire(ctx: &mut Ctx<'_>, bad: Bad, cmd: &str) {
    match bad {
        Bad::NotInteger => ctx.raw(resp::ERR_NOT_INTEGER),
        Bad::Range => ctx.error(format!("ERR invalid expire time in '{cmd}' command").as_bytes()),
    }
}

/// What SET does with the key's expiry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ttl {
    /// No expiry.
    None,
    /// Keep the current one (KEEPTTL).
    Keep,
    /// This one.
    Set(When),
}

/// SET's and GETEX's expiry options: name, unit in ms, absolute.
const TIMED: [(&[u8], i64, bool); 4] = [
    (b"EX", 1000, false),
    (b"PX", 1, false),
    (b"EXAT", 1000, true),
    (b"PXAT", 1, true),
];

/// SET's (`set`) or GETEX's options, read as Redis reads them: the
/// syntax first, every value later. An option may repeat (the last time
/// counts); NX and XX, KEEPTTL or PERSIST and a time, or two kinds of
/// time exclude each other.
#[derive(Default)]
struct StringOpts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    persist: bool,
    /// The time's text, its unit in ms, absolute, and which of [`TIMED`].
    timed: Option<(&'a [u8], i64, bool, usize)>,
}

impl<'a> StringOpts<'a> {
    /// None on a syntax error.
    fn parse(mut words: impl Iterator<Item = &'a [u8]>, set: bool) -> Option<StringOpts<'a>> {
        let mut o = StringOpts::default();
        while let Some(w) = words.next() {
            let is = |name: &[u8]| w.eq_ignore_ascii_case(name);
            let kind = TIMED.iter().position(|(name, _, _)| is(name));
            if set && is(b"NX") && !o.xx {
                o.nx = true;
            } else if set && is(b"XX") && !o.nx {
                o.xx = true;
            } else if set && is(b"GET") {
                o.get = true;
            } else if set && is(b"KEEPTTL") && o.timed.is_none() {
                o.keep_ttl = true;
            } else if !set && is(b"PERSIST") && o.timed.is_none() {
                o.persist = true;
            } else if let Some(k) = kind
                .filter(|&k| !o.keep_ttl && !o.persist && o.timed.is_none_or(|(.., had)| had == k))
            {
                let (_, unit, absolute) = TIMED[k];
                o.timed = Some((words.next()?, unit, absolute, k));
            } else {
                return None;
            }
        }
        Some(o)
    }
}

/// `SET key value [NX | XX] [GET] [EX s | PX ms | EXAT t | PXAT t |
/// KEEPTTL]`.
pub fn set(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    // Plain `SET key value` (nearly every SET) skips the option walk.
    let parsed = match cmd.len() {
        3 => Some(StringOpts::default()),
        _ => StringOpts::parse(cmd.args().skip(3), true),
    };
    let Some(o) = parsed else {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    };
    let ttl = match o.timed {
        Some((a, unit, absolute, _)) => match expiry::parse(a, unit, absolute, ctx.db.now_ms()) {
            Ok(w) if matches!(w, When::In(ms) | When::At(ms) if ms > 0) => Ttl::Set(w),
            Ok(_) | Err(Bad::Range) => return invalid_set_expire(ctx),
            Err(Bad::NotInteger) => {
                ctx.raw(resp::ERR_NOT_INTEGER);
                return Step::Done;
            }
        },
        None if o.keep_ttl => Ttl::Keep,
        None => Ttl::None,
    };
    let cond = if o.nx {
        SetMode::Add
    } else if o.xx {
        SetMode::Replace
    } else {
        SetMode::Set
    };
    let get = o.get;
    let (key, value) = (arg(cmd, 1), arg(cmd, 2));
    if let Ok((applied, old)) = set_string(ctx, key, value, cond, ttl, get) {
        match (get, applied) {
            (true, _) => match old {
                Some(v) => ctx.bulk_item(&v),
                None => ctx.null(),
            },
            (false, true) => ctx.ok(),
            (false, false) => ctx.null(),
        }
    }
    Step::Done
}

fn invalid_set_expire(ctx: &mut Ctx<'_>) -> Step {
    ctx.error(b"ERR invalid expire time in 'set' command");
    Step::Done
}

/// Stores `value` at `key` under condition `cond` (Set/Add/Replace) with
/// expiry `ttl`; returns whether it applied and, when `want_old`, the
/// string it replaced. Errors are written (WRONGTYPE for GET on a
/// non-string, store errors).
fn set_string(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    value: &[u8],
    cond: SetMode,
    ttl: Ttl,
    want_old: bool,
) -> Result<(bool, Option<Item>), super::Replied> {
    let simple = !want_old && ttl != Ttl::Keep;
    for _ in 0..64 {
        let old = if simple { None } else { ctx.db.get(key) };
        if want_old && old.as_ref().is_some_and(|i| i.kind() != Kind::String) {
            ctx.raw(resp::ERR_WRONGTYPE);
            return Err(super::Replied);
        }
        let expires_at_ms = match ttl {
            Ttl::None => 0,
            Ttl::Keep => old.as_ref().map_or(0, Item::expires_at_ms),
            Ttl::Set(w) => w.at_ms(ctx.db.now_ms()).max(1) as u64,
        };
        let meta = Meta {
            flags: 0,
            expires_at_ms,
        };
        // With the old item read, write only over that very item.
        let mode = match (&old, cond) {
            (_, _) if simple => cond,
            (Some(_), SetMode::Add) => return Ok((false, old)),
            (None, SetMode::Replace) => return Ok((false, None)),
            (Some(i), _) => SetMode::Cas(i.cas()),
            (None, _) => SetMode::Add,
        };
        match ctx.db.set(key, value, meta, mode) {
            Ok(_) => return Ok((true, old)),
            Err(StoreError::NotStored | StoreError::NotFound | StoreError::Exists) if simple => {
                return Ok((false, None))
            }
            // Changed in between: read again.
            Err(StoreError::NotStored | StoreError::NotFound | StoreError::Exists) => {}
            Err(e) => {
                ctx.store_error(e);
                return Err(super::Replied);
            }
        }
    }
    ctx.error(b"ERR too much contention on key");
    Err(super::Replied)
}

/// `SETNX key value`: 1 if set.
pub fn setnx(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok((applied, _)) = set_string(
        ctx,
        arg(cmd, 1),
        arg(cmd, 2),
        SetMode::Add,
        Ttl::None,
        false,
    ) {
        ctx.int(i64::from(applied));
    }
    Step::Done
}

/// `SETEX key seconds value`.
pub fn setex(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    set_expiring(ctx, cmd, 1000, "setex")
}

/// `PSETEX key ms value`.
pub fn psetex(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    set_expiring(ctx, cmd, 1, "psetex")
}

fn set_expiring(ctx: &mut Ctx<'_>, cmd: &Command<'_>, unit: i64, name: &str) -> Step {
    let now = ctx.db.now_ms();
    match expiry::parse(arg(cmd, 2), unit, false, now) {
        Ok(When::In(ms)) if ms > 0 => {
            let ttl = Ttl::Set(When::In(ms));
            if set_string(ctx, arg(cmd, 1), arg(cmd, 3), SetMode::Set, ttl, false).is_ok() {
                ctx.ok();
            }
        }
        Ok(_) => bad_expire(ctx, Bad::Range, name),
        Err(b) => bad_expire(ctx, b, name),
    }
    Step::Done
}

/// `GETSET key value`.
pub fn getset(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok((_, old)) = set_string(ctx, arg(cmd, 1), arg(cmd, 2), SetMode::Set, Ttl::None, true) {
        match old {
            Some(v) => ctx.bulk_item(&v),
            None => ctx.null(),
        }
    }
    Step::Done
}

/// `GETDEL key`.
pub fn getdel(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(item) = ctx.string(arg(cmd, 1)) {
        match item {
            Some(i) => {
                ctx.db.delete(arg(cmd, 1));
                ctx.bulk_item(&i);
            }
            None => ctx.null(),
        }
    }
    Step::Done
}

/// `GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST]`.
pub fn getex(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let key = arg(cmd, 1);
    let now = ctx.db.now_ms();
    // In Redis's order: the options' syntax, the key (missing: nil, not a
    // string: WRONGTYPE), then the time's value.
    let Some(o) = StringOpts::parse(cmd.args().skip(2), false) else {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    };
    let Ok(item) = ctx.string(key) else {
        return Step::Done;
    };
    let Some(i) = item else {
        ctx.null();
        return Step::Done;
    };
    let change = match o.timed {
        Some((a, unit, absolute, _)) => match expiry::parse(a, unit, absolute, now) {
            Ok(w) if matches!(w, When::In(ms) | When::At(ms) if ms > 0) => {
                Some(w.at_ms(now).max(1) as u64)
            }
            Ok(_) => return bad_expire_done(ctx, Bad::Range, "getex"),
            Err(b) => return bad_expire_done(ctx, b, "getex"),
        },
        None if o.persist => Some(0),
        None => None,
    };
    if let Some(at) = change {
        if at != 0 && at <= now {
            ctx.db.delete(key);
        } else {
            ctx.db.expire(key, at);
        }
    }
    ctx.bulk_item(&i);
    Step::Done
}

fn bad_expire_done(ctx: &mut Ctx<'_>, b: Bad, name: &str) -> Step {
    bad_expire(ctx, b, name);
    Step::Done
}

/// `MSETNX key value [key value ...]`: all or nothing (1), or nothing if
/// any key exists (0).
pub fn msetnx(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() % 2 == 0 {
        resp::write_wrong_arity(ctx.out, cmd.name());
        return Step::Done;
    }
    let db = ctx.db;
    if cmd.args().skip(1).step_by(2).any(|k| db.get(k).is_some()) {
        ctx.int(0);
        return Step::Done;
    }
    let mut args = cmd.args().skip(1);
    let mut written: Vec<&[u8]> = Vec::new();
    while let (Some(k), Some(v)) = (args.next(), args.next()) {
        // A key named twice is ours already: its later value wins, as in
        // Redis.
        let mode = if written.contains(&k) {
            SetMode::Set
        } else {
            SetMode::Add
        };
        match db.set(k, v, Meta::default(), mode) {
            Ok(_) => written.push(k),
            Err(e) => {
                // Someone else created a key meanwhile (or no memory):
                // undo ours, nothing applies.
                for k in written {
                    db.delete(k);
                }
                match e {
                    StoreError::NotStored => ctx.int(0),
                    e => ctx.store_error(e),
                }
                return Step::Done;
            }
        }
    }
    ctx.int(1);
    Step::Done
}

/// `STRLEN key`.
pub fn strlen(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(item) = ctx.string(arg(cmd, 1)) {
        ctx.int(item.map_or(0, |i| i.value_len() as i64));
    }
    Step::Done
}

/// Read-modify-write of a string: `f(old bytes or None)` gives the new
/// value (or an error already written); CAS retry loop. Returns the new
/// length.
pub(super) fn rewrite(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    mut f: impl FnMut(&mut Ctx<'_>, Option<&[u8]>) -> Option<Vec<u8>>,
) -> Option<usize> {
    for _ in 0..64 {
        let old = match ctx.string(key) {
            Ok(o) => o,
            Err(super::Replied) => return None,
        };
        let new = f(ctx, old.as_ref().map(Item::value_bytes))?;
        let (mode, meta) = match &old {
            Some(i) => (
                SetMode::Cas(i.cas()),
                Meta {
                    flags: i.flags(),
                    expires_at_ms: i.expires_at_ms(),
                },
            ),
            None => (SetMode::Add, Meta::default()),
        };
        match ctx.db.set(key, &new, meta, mode) {
            Ok(_) => return Some(new.len()),
            Err(StoreError::Exists | StoreError::NotStored | StoreError::NotFound) => {}
            Err(e) => {
                ctx.store_error(e);
                return None;
            }
        }
    }
    ctx.error(b"ERR too much contention on key");
    None
}

/// `APPEND key value`: the new length.
pub fn append(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let tail = arg(cmd, 2);
    if let Some(n) = rewrite(ctx, arg(cmd, 1), |_, old| {
        let mut v = Vec::with_capacity(old.map_or(0, <[u8]>::len) + tail.len());
        v.extend_from_slice(old.unwrap_or_default());
        v.extend_from_slice(tail);
        Some(v)
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `GETRANGE key start end` (negative offsets count from the end).
pub fn getrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (Some(a), Some(b)) = (parse_i64(arg(cmd, 2)), parse_i64(arg(cmd, 3))) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let Ok(item) = ctx.string(arg(cmd, 1)) else {
        return Step::Done;
    };
    let Some(item) = item else {
        ctx.bytes(b"");
        return Step::Done;
    };
    let len = item.value_len() as i64;
    if len == 0 || (a < 0 && b < 0 && a > b) {
        ctx.bytes(b"");
        return Step::Done;
    }
    let s = if a < 0 { (len + a).max(0) } else { a };
    let e = if b < 0 { (len + b).max(0) } else { b }.min(len - 1);
    if s > e || s >= len {
        ctx.bytes(b"");
    } else {
        let v = item.value();
        ctx.bulk(&v.slice(s as usize..e as usize + 1));
    }
    Step::Done
}

/// `SETRANGE key offset value`: the new length.
pub fn setrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(off) = parse_i64(arg(cmd, 2)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    if off < 0 {
        ctx.error(b"ERR offset is out of range");
        return Step::Done;
    }
    let patch = arg(cmd, 3);
    let off = off as usize;
    let max = ctx.shared.config.max_bulk();
    if patch.is_empty() {
        // Redis: no change, the current length (0 if absent).
        if let Ok(item) = ctx.string(arg(cmd, 1)) {
            ctx.int(item.map_or(0, |i| i.value_len() as i64));
        }
        return Step::Done;
    }
    if off.saturating_add(patch.len()) > max {
        ctx.error(b"ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return Step::Done;
    }
    if let Some(n) = rewrite(ctx, arg(cmd, 1), |_, old| {
        let old = old.unwrap_or_default();
        let mut v = old.to_vec();
        if v.len() < off + patch.len() {
            v.resize(off + patch.len(), 0);
        }
        v[off..off + patch.len()].copy_from_slice(patch);
        Some(v)
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `INCRBYFLOAT key increment`.
pub fn incrbyfloat(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(delta) = parse_float(arg(cmd, 2)) else {
        ctx.error(b"ERR value is not a valid float");
        return Step::Done;
    };
    let mut result = String::new();
    let done = rewrite(ctx, arg(cmd, 1), |ctx, old| {
        let cur = match old {
            None => 0.0,
            Some(b) => match parse_float(b) {
                Some(f) => f,
                None => {
                    ctx.error(b"ERR value is not a valid float");
                    return None;
                }
            },
        };
        let next = cur + delta;
        if !next.is_finite() {
            ctx.error(b"ERR increment would produce NaN or Infinity");
            return None;
        }
        result = resp::format_double(next);
        Some(result.clone().into_bytes())
    });
    if done.is_some() {
        ctx.bytes(result.as_bytes());
    }
    Step::Done
}

/// A float argument as Redis reads it (no NaN; `inf` allowed).
pub fn parse_float(b: &[u8]) -> Option<f64> {
    if let Some(f) = small_integer(b) {
        return Some(f);
    }
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let word = |w: &str| s.eq_ignore_ascii_case(w);
    let f: f64 = if word("inf") || word("+inf") || word("infinity") {
        f64::INFINITY
    } else if word("-inf") || word("-infinity") {
        f64::NEG_INFINITY
    } else {
        s.parse().ok()?
    };
    (!f.is_nan()).then_some(f)
}

/// An optionally signed run of at most 15 decimal digits as the float it
/// names, exactly (every such integer is one), `-0` included; `None` for
/// anything else. Scores and increments are mostly such integers, and this
/// spares them the general float parse.
fn small_integer(b: &[u8]) -> Option<f64> {
    let (negative, digits) = match b.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 15 {
        return None;
    }
    let mut n = 0u64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(d - b'0');
    }
    let f = n as f64;
    Some(if negative { -f } else { f })
}

/// `INCR key`.
pub fn incr(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    incr_by(ctx, arg(cmd, 1), 1);
    Step::Done
}

/// `DECR key`.
pub fn decr(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    incr_by(ctx, arg(cmd, 1), -1);
    Step::Done
}

/// `INCRBY key delta`.
pub fn incrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match parse_i64(arg(cmd, 2)) {
        Some(d) => incr_by(ctx, arg(cmd, 1), d),
        None => ctx.raw(resp::ERR_NOT_INTEGER),
    }
    Step::Done
}

/// `DECRBY key delta`.
pub fn decrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match parse_i64(arg(cmd, 2)) {
        Some(d) if d != i64::MIN => incr_by(ctx, arg(cmd, 1), -d),
        _ => ctx.raw(resp::ERR_NOT_INTEGER),
    }
    Step::Done
}

/// INCR/DECR with Redis semantics (signed 64-bit, missing key = 0,
/// overflow is an error), read and written under the key's lock.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) {
    // The reply, `:<n>\r\n`: its digits are what is stored, formatted once.
    let mut line = [0u8; 24];
    let mut outcome: Result<usize, &'static [u8]> = Err(resp::ERR_NOT_INTEGER);
    let r = ctx.db.update_string(key, &mut |cur, store| {
        let cur = match cur {
            None => 0,
            Some(v) => match parse_i64(v) {
                Some(v) => v,
                None => {
                    outcome = Err(resp::ERR_NOT_INTEGER);
                    return;
                }
            },
        };
        let Some(next) = cur.checked_add(delta) else {
            outcome = Err(resp::ERR_OVERFLOW);
            return;
        };
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(next).as_bytes();
        let end = 1 + digits.len();
        line[0] = b':';
        granola::copy_short(&mut line[1..end], digits);
        store(&line[1..end]);
        line[end..end + 2].copy_from_slice(b"\r\n");
        outcome = Ok(end + 2);
    });
    match (r, outcome) {
        (Err(e), _) => ctx.store_error(e),
        (Ok(()), Ok(len)) => resp::write_line(ctx.out, &line[..len]),
        (Ok(()), Err(error)) => ctx.raw(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The general parse, which the integer fast path must agree with.
    fn general(s: &str) -> Option<f64> {
        s.parse::<f64>().ok().filter(|f| !f.is_nan())
    }

    proptest! {
        #[test]
        fn integers_parse_as_the_general_parse_does(
            sign in prop::sample::select(vec!["", "-", "+"]),
            digits in "[0-9]{1,17}",
        ) {
            let s = format!("{sign}{digits}");
            let (fast, slow) = (parse_float(s.as_bytes()), general(&s));
            // Bit for bit: `-0` is negative zero in both.
            prop_assert_eq!(fast.map(f64::to_bits), slow.map(f64::to_bits), "{}", s);
        }
    }

    #[test]
    fn words_and_refusals() {
        assert_eq!(
            parse_float(b"-0").map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        assert_eq!(parse_float(b"+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_float(b"-INFINITY"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_float(b"1.5e3"), Some(1500.0));
        for bad in [
            &b""[..],
            b"-",
            b"+",
            b" 1",
            b"1 ",
            b"nan",
            b"1x",
            b"--1",
            b"0x10",
        ] {
            assert_eq!(parse_float(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
