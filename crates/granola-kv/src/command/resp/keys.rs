//! Keyspace commands: DEL UNLINK EXISTS TOUCH TYPE EXPIRE PEXPIRE EXPIREAT
//! PEXPIREAT (with NX XX GT LT) PERSIST TTL PTTL EXPIRETIME PEXPIRETIME
//! KEYS SCAN RANDOMKEY RENAME RENAMENX COPY OBJECT.

use super::expiry;
use super::strings::bad_expire;
use super::{glob, parse_i64, Ctx};
use crate::command::{Step, Storage};
use crate::protocol::resp::{self, Command};
use crate::store::{Item, Kind, Meta, SetMode};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `DEL key...` / `UNLINK key...`.
pub fn del(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let db = ctx.db;
    let deleted = cmd.args().skip(1).filter(|k| db.delete(k)).count();
    ctx.int(deleted as i64);
    Step::Done
}

/// `EXISTS key...` / `TOUCH key...`.
pub fn exists(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let db = ctx.db;
    let found = cmd.args().skip(1).filter(|k| db.get(k).is_some()).count();
    ctx.int(found as i64);
    Step::Done
}

/// The Redis type name of an item.
pub fn type_name(item: Option<&Item>) -> &'static str {
    match item {
        None => "none",
        Some(i) => super::collections::ctype(i).map_or("string", |t| t.name()),
    }
}

/// `TYPE key`.
pub fn type_(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let item = ctx.db.get(arg(cmd, 1));
    ctx.simple(type_name(item.as_ref()).as_bytes());
    Step::Done
}

/// `EXPIRE key seconds [NX | XX | GT | LT]`.
pub fn expire(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    set_expiry(ctx, cmd, 1000, false, "expire")
}

/// `PEXPIRE key ms [NX | XX | GT | LT]`.
pub fn pexpire(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    set_expiry(ctx, cmd, 1, false, "pexpire")
}

/// `EXPIREAT key unix-seconds [NX | XX | GT | LT]`.
pub fn expireat(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    set_expiry(ctx, cmd, 1000, true, "expireat")
}

/// `PEXPIREAT key unix-ms [NX | XX | GT | LT]`.
pub fn pexpireat(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    set_expiry(ctx, cmd, 1, true, "pexpireat")
}

fn set_expiry(ctx: &mut Ctx<'_>, cmd: &Command<'_>, unit: i64, absolute: bool, name: &str) -> Step {
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for o in cmd.args().skip(3) {
        let o = o.to_ascii_uppercase();
        match &o[..] {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            _ => {
                let text = format!("ERR Unsupported option {}", String::from_utf8_lossy(&o));
                ctx.error(text.as_bytes());
                return Step::Done;
            }
        }
    }
    if nx && (xx || gt || lt) {
        ctx.error(b"ERR NX and XX, GT or LT options at the same time are not compatible");
        return Step::Done;
    }
    if gt && lt {
        ctx.error(b"ERR GT and LT options at the same time are not compatible");
        return Step::Done;
    }
    let now = ctx.db.now_ms();
    let at = match expiry::parse(arg(cmd, 2), unit, absolute, now) {
        Ok(w) => w.at_ms(now),
        Err(b) => {
            bad_expire(ctx, b, name);
            return Step::Done;
        }
    };
    let key = arg(cmd, 1);
    let Some(item) = ctx.db.get(key) else {
        ctx.int(0);
        return Step::Done;
    };
    // No expiry counts as infinite for GT/LT.
    let current = match item.expires_at_ms() {
        0 => None,
        t => Some(t as i64),
    };
    let allowed = (!nx || current.is_none())
        && (!xx || current.is_some())
        && (!gt || current.is_some_and(|c| at > c))
        && (!lt || current.is_none_or(|c| at < c));
    if !allowed {
        ctx.int(0);
        return Step::Done;
    }
    let done = if at <= now as i64 {
        ctx.db.delete(key)
    } else {
        ctx.db.expire(key, at as u64).is_some()
    };
    ctx.int(i64::from(done));
    Step::Done
}

/// `PERSIST key`: 1 if an expiry was removed.
pub fn persist(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let key = arg(cmd, 1);
    let had = ctx
        .db
        .get(key)
        .is_some_and(|i| i.expires_at_ms() != 0 && ctx.db.expire(key, 0).is_some());
    ctx.int(i64::from(had));
    Step::Done
}

/// `TTL key`.
pub fn ttl(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    ttl_in(ctx, cmd, 1000)
}

/// `PTTL key`.
pub fn pttl(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    ttl_in(ctx, cmd, 1)
}

fn ttl_in(ctx: &mut Ctx<'_>, cmd: &Command<'_>, unit: i64) -> Step {
    let v = match ctx.db.get(arg(cmd, 1)) {
        None => -2,
        Some(i) if i.expires_at_ms() == 0 => -1,
        Some(i) => {
            let left = i.expires_at_ms().saturating_sub(ctx.db.now_ms()) as i64;
            (left + unit / 2) / unit
        }
    };
    ctx.int(v);
    Step::Done
}

/// `EXPIRETIME key`.
pub fn expiretime(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    expire_time(ctx, cmd, 1000)
}

/// `PEXPIRETIME key`.
pub fn pexpiretime(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    expire_time(ctx, cmd, 1)
}

fn expire_time(ctx: &mut Ctx<'_>, cmd: &Command<'_>, unit: u64) -> Step {
    let v = match ctx.db.get(arg(cmd, 1)) {
        None => -2,
        Some(i) if i.expires_at_ms() == 0 => -1,
        // Rounded to the nearest second, as Redis rounds it (and TTL).
        Some(i) => (i.expires_at_ms().saturating_add(unit / 2) / unit) as i64,
    };
    ctx.int(v);
    Step::Done
}

/// `KEYS pattern`.
pub fn keys(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let pattern = arg(cmd, 1);
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = ctx.db.scan(cursor, 4096, &mut |k, _| {
            if glob::matches(pattern, k, false) {
                found.push(k.to_vec());
            }
        });
        if cursor == 0 {
            break;
        }
    }
    ctx.array(found.len());
    for k in &found {
        ctx.bytes(k);
    }
    Step::Done
}

/// Index buckets a SCAN call walks at least while it finds too few keys
/// (a few microseconds of empty buckets).
const SPARSE_WALK: usize = 1024;

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub fn scan(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(cursor) = std::str::from_utf8(arg(cmd, 1))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        ctx.error(b"ERR invalid cursor");
        return Step::Done;
    };
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut want_type: Option<Vec<u8>> = None;
    let mut opts = cmd.args().skip(2);
    while let Some(o) = opts.next() {
        let Some(v) = opts.next() else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        };
        if o.eq_ignore_ascii_case(b"MATCH") {
            pattern = Some(v);
        } else if o.eq_ignore_ascii_case(b"COUNT") {
            match parse_i64(v) {
                Some(n) if n >= 1 => count = n as usize,
                Some(_) => {
                    ctx.raw(resp::ERR_SYNTAX);
                    return Step::Done;
                }
                None => {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return Step::Done;
                }
            }
        } else if o.eq_ignore_ascii_case(b"TYPE") {
            want_type = Some(v.to_ascii_lowercase());
        } else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    }
    let mut found: Vec<Vec<u8>> = Vec::new();
    // COUNT is in keys, as Redis means it; an index bucket holds up to 8.
    // As Redis, a call goes on past empty buckets until it has seen COUNT
    // keys (before MATCH and TYPE) or walked ten times its share; and at
    // least SPARSE_WALK buckets, for the index is sized for the memory
    // limit, not for the keys: a small database is then one call, as in
    // Redis, not hundreds of empty pages.
    let buckets = count.div_ceil(4).max(1);
    let budget = buckets.saturating_mul(10).max(SPARSE_WALK);
    let (mut next, mut walked, mut seen) = (cursor, 0, 0);
    loop {
        next = ctx.db.scan(next, buckets, &mut |k, item| {
            seen += 1;
            let type_ok = want_type
                .as_deref()
                .is_none_or(|t| t == type_name(Some(item)).as_bytes());
            if type_ok && pattern.is_none_or(|p| glob::matches(p, k, false)) {
                found.push(k.to_vec());
            }
        });
        walked += buckets;
        if next == 0 || seen >= count || walked >= budget {
            break;
        }
    }
    ctx.array(2);
    ctx.bytes(next.to_string().as_bytes());
    ctx.array(found.len());
    for k in &found {
        ctx.bytes(k);
    }
    Step::Done
}

/// `RANDOMKEY`: a key from a random place of the index.
pub fn randomkey(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let start = u64::from(random_u32() % 512) << 40;
    let mut found: Option<Vec<u8>> = None;
    for from in [start, 0] {
        let mut cursor = from;
        loop {
            cursor = ctx.db.scan(cursor, 64, &mut |k, _| {
                if found.is_none() {
                    found = Some(k.to_vec());
                }
            });
            if found.is_some() || cursor == 0 {
                break;
            }
        }
        if found.is_some() {
            break;
        }
    }
    match found {
        Some(k) => ctx.bytes(&k),
        None => ctx.null(),
    }
    Step::Done
}

fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(ctx_time());
    h.finish() as u32
}

fn ctx_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Writes a copy of `item` at `key` of `db` (same value or elements, same
/// expiry). `only_if_absent`: NotStored if `key` exists.
fn put_copy(
    db: &dyn Storage,
    key: &[u8],
    item: &Item,
    only_if_absent: bool,
) -> Result<(), crate::store::StoreError> {
    let meta = Meta {
        flags: item.flags(),
        expires_at_ms: item.expires_at_ms(),
    };
    match item.kind() {
        Kind::String => {
            let mode = if only_if_absent {
                SetMode::Add
            } else {
                SetMode::Set
            };
            db.set(key, item.value_bytes(), meta, mode).map(|_| ())
        }
        Kind::Hash | Kind::Set | Kind::ZSet | Kind::Stream => {
            if only_if_absent && db.get(key).is_some() {
                return Err(crate::store::StoreError::NotStored);
            }
            let copy = item.read_dict(Clone::clone).unwrap_or_default();
            db.put_dict(key, item.kind(), &copy, meta)
        }
        Kind::List => {
            if only_if_absent && db.get(key).is_some() {
                return Err(crate::store::StoreError::NotStored);
            }
            let elems: Vec<granola::Buf> = item.list_range(0, -1).collect();
            let slices: Vec<&[u8]> = elems.iter().map(|b| &b[..]).collect();
            db.put_list(key, &slices, meta)
        }
    }
}

/// `RENAME key newkey`.
pub fn rename(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    rename_to(ctx, cmd, false)
}

/// `RENAMENX key newkey`.
pub fn renamenx(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    rename_to(ctx, cmd, true)
}

fn rename_to(ctx: &mut Ctx<'_>, cmd: &Command<'_>, nx: bool) -> Step {
    let (src, dst) = (arg(cmd, 1), arg(cmd, 2));
    let Some(item) = ctx.db.get(src) else {
        ctx.error(b"ERR no such key");
        return Step::Done;
    };
    if src == dst {
        if nx {
            ctx.int(0);
        } else {
            ctx.ok();
        }
        return Step::Done;
    }
    match put_copy(ctx.db, dst, &item, nx) {
        Ok(()) => {
            ctx.db.delete(src);
            if nx {
                ctx.int(1);
            } else {
                ctx.ok();
            }
        }
        Err(crate::store::StoreError::NotStored) => ctx.int(0),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `COPY source destination [DB n] [REPLACE]`.
pub fn copy(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (src, dst) = (arg(cmd, 1), arg(cmd, 2));
    let mut replace = false;
    let mut target = ctx.conn.info.db;
    let mut opts = cmd.args().skip(3);
    while let Some(o) = opts.next() {
        if o.eq_ignore_ascii_case(b"REPLACE") {
            replace = true;
        } else if o.eq_ignore_ascii_case(b"DB") && opts.len() > 0 {
            // An int, as Redis reads it: beyond 32 bits is not a number.
            match opts
                .next()
                .and_then(parse_i64)
                .filter(|n| i32::try_from(*n).is_ok())
            {
                Some(n) if (0..i64::from(ctx.shared.config.databases)).contains(&n) => {
                    target = n as u8
                }
                Some(_) => {
                    ctx.error(b"ERR DB index is out of range");
                    return Step::Done;
                }
                None => {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return Step::Done;
                }
            }
        } else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    }
    if src == dst && target == ctx.conn.info.db {
        ctx.error(b"ERR source and destination objects are the same");
        return Step::Done;
    }
    let Some(item) = ctx.db.get(src) else {
        ctx.int(0);
        return Step::Done;
    };
    let to = ctx.shared.dbs.db(&ctx.shared.store, target);
    match put_copy(&to, dst, &item, !replace) {
        Ok(()) => ctx.int(1),
        Err(crate::store::StoreError::NotStored) => ctx.int(0),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `SWAPDB index1 index2`: every RESP client of either database sees the
/// other's keys from now on, in O(1) (`databases.rs`'s map). It runs
/// alone in the gate, so no RESP command sees half a swap.
pub fn swapdb(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let dbs = i64::from(ctx.shared.config.databases);
    let index = |i: usize| parse_i64(arg(cmd, i)).filter(|n| i32::try_from(*n).is_ok());
    let Some(a) = index(1) else {
        ctx.error(b"ERR invalid first DB index");
        return Step::Done;
    };
    let Some(b) = index(2) else {
        ctx.error(b"ERR invalid second DB index");
        return Step::Done;
    };
    if !(0..dbs).contains(&a) || !(0..dbs).contains(&b) {
        ctx.error(b"ERR DB index is out of range");
        return Step::Done;
    }
    ctx.shared.dbs.swap(a as u8, b as u8);
    ctx.shared.waiters.wake_all();
    ctx.ok();
    Step::Done
}

/// `MOVE key db`: 1 if the key moved to database `db` (it was there and
/// `db` did not have it), else 0.
pub fn move_key(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let key = arg(cmd, 1);
    let Some(target) = parse_i64(arg(cmd, 2)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    if !(0..i64::from(ctx.shared.config.databases)).contains(&target) {
        ctx.error(b"ERR DB index is out of range");
        return Step::Done;
    }
    if target == i64::from(ctx.conn.info.db) {
        ctx.error(b"ERR source and destination objects are the same");
        return Step::Done;
    }
    let Some(item) = ctx.db.get(key) else {
        ctx.int(0);
        return Step::Done;
    };
    let to = ctx.shared.dbs.db(&ctx.shared.store, target as u8);
    match put_copy(&to, key, &item, true) {
        Ok(()) => {
            ctx.db.delete(key);
            ctx.int(1);
        }
        Err(crate::store::StoreError::NotStored) => ctx.int(0),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// What `OBJECT ENCODING` names `item`'s encoding.
pub(super) fn encoding(item: &Item) -> &'static [u8] {
    match item.kind() {
        // As Redis 7: one listpack while small, a quicklist of nodes
        // (here: chunks) beyond.
        Kind::List if item.is_inline_list() => b"listpack",
        Kind::List => b"quicklist",
        Kind::Hash | Kind::Set => b"hashtable",
        Kind::ZSet => b"skiplist",
        Kind::Stream => b"stream",
        Kind::String if parse_i64(item.value_bytes()).is_some() => b"int",
        Kind::String if item.value_len() <= 44 => b"embstr",
        Kind::String => b"raw",
    }
}

/// `OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT key`, `OBJECT HELP`.
pub fn object(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = arg(cmd, 1).to_ascii_uppercase();
    if sub == b"HELP" {
        ctx.help(&[
            b"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            b"ENCODING <key>",
            b"FREQ <key>",
            b"IDLETIME <key>",
            b"REFCOUNT <key>",
        ]);
        return Step::Done;
    }
    if cmd.len() != 3 {
        ctx.unknown_subcommand("OBJECT", arg(cmd, 1));
        return Step::Done;
    }
    // As Redis: looking at a key does not count as using it.
    let Some(item) = ctx.db.peek(arg(cmd, 2)) else {
        ctx.null();
        return Step::Done;
    };
    match &sub[..] {
        b"ENCODING" => ctx.bytes(encoding(&item)),
        // Items keep either their idle time or their LFU counter, by the
        // policy, and Redis answers for the one it keeps.
        b"IDLETIME" if ctx.shared.store.policy().tracks_frequency() => ctx.error(
            b"ERR An LFU maxmemory policy is selected, idle time not tracked. \
              Please note that when switching between policies at runtime LRU and LFU data \
              will take some time to adjust.",
        ),
        b"IDLETIME" => ctx.int(ctx.db.access(&item).idle_s as i64),
        b"FREQ" => match ctx.shared.store.frequency(&item) {
            Some(n) => ctx.int(i64::from(n)),
            None => ctx.error(
                b"ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
                  Please note that when switching between policies at runtime LRU and LFU data \
                  will take some time to adjust.",
            ),
        },
        b"REFCOUNT" => ctx.int(1),
        _ => {
            ctx.unknown_subcommand("OBJECT", arg(cmd, 1));
        }
    }
    Step::Done
}
