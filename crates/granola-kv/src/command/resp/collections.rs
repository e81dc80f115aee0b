//! How each Redis collection type is stored, and the helpers its commands
//! share.
//!
//! - **Lists** are store lists (`store/list.rs`): chunked, O(1) at both
//!   ends, elements sent by reference.
//! - **Hashes and sets** are the store's hash tables (`store/dict.rs`),
//!   edited in place under the key's lock: O(1) per field or member;
//!   replies copy small fields, values and members and reference large
//!   ones (in pool memory: `store/element.rs`), as they do strings.
//! - **Sorted sets** are the same tables (member → score) plus an ordered
//!   index of (score, member): O(log n) per member.
//! - **Streams** are B-trees of entries by ID, in the same body type
//!   (`store/stream.rs`): O(log n) per entry.

use crate::store::{Item, Kind};

/// A stored collection's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CType {
    /// A list.
    List,
    /// A hash.
    Hash,
    /// A set.
    Set,
    /// A sorted set.
    ZSet,
    /// A stream.
    Stream,
}

impl CType {
    /// The store kind of a hash, set, sorted set or stream.
    pub fn dict_kind(self) -> Option<Kind> {
        match self {
            CType::Hash => Some(Kind::Hash),
            CType::Set => Some(Kind::Set),
            CType::ZSet => Some(Kind::ZSet),
            CType::Stream => Some(Kind::Stream),
            CType::List => None,
        }
    }

    /// Redis' TYPE name.
    pub fn name(self) -> &'static str {
        match self {
            CType::List => "list",
            CType::Hash => "hash",
            CType::Set => "set",
            CType::ZSet => "zset",
            CType::Stream => "stream",
        }
    }
}

/// The collection type of `item` (None for a string).
pub fn ctype(item: &Item) -> Option<CType> {
    match item.kind() {
        Kind::String => None,
        Kind::Hash => Some(CType::Hash),
        Kind::Set => Some(CType::Set),
        Kind::ZSet => Some(CType::ZSet),
        Kind::Stream => Some(CType::Stream),
        Kind::List => Some(CType::List),
    }
}

/// A list's elements, copied.
fn body(item: &Item) -> Vec<Vec<u8>> {
    item.list_range(0, -1).map(|b| b.to_vec()).collect()
}

use super::{Ctx, Replied};
use crate::command::Storage;
use crate::protocol::resp;
use crate::store::{Dict, DictEdit, Element, Growth, ListEdit, StoreError};

impl Ctx<'_> {
    /// The collection at `key` if it is of type `t`; `Err` (WRONGTYPE
    /// written) if the key holds something else.
    pub fn coll(&mut self, key: &[u8], t: CType) -> Result<Option<Item>, Replied> {
        match self.db.get(key) {
            Some(i) if ctype(&i) != Some(t) => {
                self.raw(resp::ERR_WRONGTYPE);
                Err(Replied)
            }
            other => Ok(other),
        }
    }
}

/// Read-modify-write of the list at `key`, under the key's lock (O(n):
/// for edits in the middle): `f` gets its elements (None if absent) and
/// returns the new elements (None: unchanged; empty: the key is removed)
/// and a result. WRONGTYPE and store errors are written and returned as
/// `Err`.
pub fn update_list<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    mut f: impl FnMut(Option<Vec<Vec<u8>>>) -> (Option<Vec<Vec<u8>>>, R),
) -> Result<R, Replied> {
    let mut result = None;
    let mut wrong = false;
    let r = ctx.db.update_list(key, &mut |item| {
        let current = match item {
            Some(i) if i.kind() != Kind::List => {
                wrong = true;
                return ListEdit::Keep;
            }
            Some(i) => Some(body(i)),
            None => None,
        };
        let (new, r) = f(current);
        result = Some(r);
        match new {
            None => ListEdit::Keep,
            Some(b) => ListEdit::Replace(b),
        }
    });
    if wrong {
        ctx.raw(resp::ERR_WRONGTYPE);
        return Err(Replied);
    }
    if let Err(e) = r {
        ctx.store_error(e);
        return Err(Replied);
    }
    result.ok_or(Replied)
}

/// Runs `f` on the hash, set or sorted set (`t`) at `key`, in place, creating it if
/// absent (see [`crate::store::Store::update_dict`]). `growth` bounds what
/// `f` adds. WRONGTYPE and store errors are written and returned as `Err`.
pub fn edit<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    t: CType,
    growth: Growth,
    f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
) -> Result<R, Replied> {
    let kind = t.dict_kind().expect("a hash, set or sorted set");
    run_once(ctx, f, |db, f| db.update_dict(key, kind, growth, f))?.ok_or(Replied)
}

/// [`edit`] for an edit that only removes: on a missing key `f` does not
/// run and the result is `R::default()` (nothing removed, nothing popped),
/// without building a table to throw away.
pub fn shrink<R: Default>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    t: CType,
    f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
) -> Result<R, Replied> {
    let kind = t.dict_kind().expect("a hash, set or sorted set");
    Ok(run_once(ctx, f, |db, f| db.shrink_dict(key, kind, f))?.unwrap_or_default())
}

/// Hands `f` to one of the storage's table edits (`call`) and returns its
/// result (None if the edit did not run it); a store error is written and
/// returned as `Err`.
fn run_once<R>(
    ctx: &mut Ctx<'_>,
    f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
    call: impl FnOnce(&dyn Storage, &mut dyn FnMut(&mut DictEdit<'_, '_>)) -> Result<(), StoreError>,
) -> Result<Option<R>, Replied> {
    let mut f = Some(f);
    let mut result = None;
    let r = call(ctx.db, &mut |d| {
        if let Some(f) = f.take() {
            result = Some(f(d));
        }
    });
    if let Err(e) = r {
        ctx.store_error(e);
        return Err(Replied);
    }
    Ok(result)
}

/// The growth of writing these fields or members (and values).
pub fn growth_of<'a>(entries: usize, parts: impl IntoIterator<Item = &'a [u8]>) -> Growth {
    Growth {
        entries,
        bytes: parts.into_iter().map(<[u8]>::len).sum(),
    }
}

/// Reads the hash, set or sorted set (`t`) at `key` with `f` (None if absent, under
/// the table's lock); `Err` (WRONGTYPE written) if the key holds something
/// else.
pub fn read<R, F>(ctx: &mut Ctx<'_>, key: &[u8], t: CType, f: F) -> Result<R, Replied>
where
    F: FnOnce(&mut Ctx<'_>, Option<&Dict>) -> R,
{
    let Some(item) = ctx.coll(key, t)? else {
        return Ok(f(ctx, None));
    };
    let mut f = Some(f);
    let run = |f: &mut Option<F>| f.take().expect("runs once");
    if let Some(r) = item.read_dict(|d| run(&mut f)(ctx, Some(d))) {
        return Ok(r);
    }
    // Not reachable (a hash or set read has its table attached), but
    // reading it as absent is the safe answer.
    Ok(run(&mut f)(ctx, None))
}

/// The largest `|count|` SRANDMEMBER and HRANDFIELD accept: a reply is
/// built whole, so a count must not make it unboundedly large (Redis
/// refuses only counts beyond ±2^62).
pub const MAX_RANDOM_COUNT: u64 = 1 << 20;

/// A pseudo-random number in `0..n` (SPOP, SRANDMEMBER, HRANDFIELD need
/// no cryptographic one).
pub fn random(n: usize) -> usize {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(n);
    (h.finish() as usize) % n.max(1)
}

/// Positions for SRANDMEMBER/HRANDFIELD over `len` entries, as Redis
/// picks them: `None` one (if any), `count >= 0` up to `count` distinct,
/// `count < 0` exactly `|count|` with repeats (none from an empty one).
/// The caller has checked `|count| <= MAX_RANDOM_COUNT`.
pub fn random_positions(len: usize, count: Option<i64>) -> Vec<usize> {
    match count {
        _ if len == 0 => Vec::new(),
        None => vec![random(len)],
        Some(c) if c < 0 => (0..c.unsigned_abs()).map(|_| random(len)).collect(),
        Some(c) => {
            let n = (c as usize).min(len);
            if n * 2 >= len {
                // Most of them: a partial shuffle of every position.
                let mut all: Vec<usize> = (0..len).collect();
                for k in 0..n {
                    all.swap(k, k + random(len - k));
                }
                all.truncate(n);
                all
            } else {
                // Few of many: draw until n distinct ones came up.
                let mut seen = std::collections::HashSet::with_capacity(n);
                let mut out = Vec::with_capacity(n);
                while out.len() < n {
                    let i = random(len);
                    if seen.insert(i) {
                        out.push(i);
                    }
                }
                out
            }
        }
    }
}

/// Replies with random entries of `d` as SRANDMEMBER, HRANDFIELD and
/// ZRANDMEMBER pick them ([`random_positions`]): without a count one
/// entry's key (nil if none); with one an array of keys, each followed by
/// its `second` part (a field's value, a member's score) when `pairs`,
/// in RESP3 as `[key, second]` pairs.
pub fn reply_random(
    ctx: &mut Ctx<'_>,
    d: Option<&Dict>,
    count: Option<i64>,
    pairs: bool,
    second: impl Fn(&mut Ctx<'_>, &Element),
) {
    let picks = random_positions(d.map_or(0, Dict::len), count);
    // Positions come from the table's length: every one is there.
    let mut entries = picks.iter().filter_map(|&i| d.and_then(|d| d.at(i)));
    match count {
        None => match entries.next() {
            Some((k, _)) => ctx.element(k),
            None => ctx.null(),
        },
        Some(_) if pairs && ctx.version() == resp::Version::Resp3 => {
            ctx.array(picks.len());
            for (k, v) in entries {
                ctx.array(2);
                ctx.element(k);
                second(ctx, v);
            }
        }
        Some(_) => {
            ctx.array(picks.len() * if pairs { 2 } else { 1 });
            for (k, v) in entries {
                ctx.element(k);
                if pairs {
                    second(ctx, v);
                }
            }
        }
    }
}
