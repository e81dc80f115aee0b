//! Hashes, sets and sorted sets are stored as list items whose first
//! element is a type marker (no text client can send its leading 0xff
//! 0x00... as a list element by accident; a binary one could, and would
//! make that list read as a hash). The rest of the list: a hash's field,
//! value, field, value...; a set's members; a sorted set's member, score
//! pairs (score as 8 big-endian bytes of an f64) in (score, member)
//! order. Every change rewrites the item under the key's lock
//! (copy-on-write, O(size)), like list pushes; elements are sent by
//! reference like strings.

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
}

const HASH: &[u8] = b"\xff\x00granola:hash";
const SET: &[u8] = b"\xff\x00granola:set";
const ZSET: &[u8] = b"\xff\x00granola:zset";

impl CType {
    /// The marker element a collection of this type starts with.
    pub fn marker(self) -> Option<&'static [u8]> {
        match self {
            CType::List => None,
            CType::Hash => Some(HASH),
            CType::Set => Some(SET),
            CType::ZSet => Some(ZSET),
        }
    }

    /// Redis' TYPE name.
    pub fn name(self) -> &'static str {
        match self {
            CType::List => "list",
            CType::Hash => "hash",
            CType::Set => "set",
            CType::ZSet => "zset",
        }
    }
}

/// The collection type of `item` (None for a string).
pub fn ctype(item: &Item) -> Option<CType> {
    if item.kind() != Kind::List {
        return None;
    }
    Some(item.with_list_first(|first| match first {
        Some(HASH) => CType::Hash,
        Some(SET) => CType::Set,
        Some(ZSET) => CType::ZSet,
        _ => CType::List,
    }))
}

/// The elements after the marker (all of them for a list), copied.
pub fn body(item: &Item, t: CType) -> Vec<Vec<u8>> {
    let skip = usize::from(t != CType::List);
    item.list_range(0, -1)
        .skip(skip)
        .map(|b| b.to_vec())
        .collect()
}

/// A collection of type `t` with these body elements (marker first).
pub fn with_marker(t: CType, mut body: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    match t.marker() {
        Some(m) if !body.is_empty() => {
            body.insert(0, m.to_vec());
            body
        }
        _ => body,
    }
}

use super::{Ctx, Replied};
use crate::protocol::resp;
use crate::store::ListEdit;
use granola::Buf;

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

/// The body elements of a collection item, by reference (marker skipped).
pub fn elements(item: &Item, t: CType) -> impl Iterator<Item = Buf> + '_ {
    item.list_range(0, -1).skip(usize::from(t != CType::List))
}

/// Read-modify-write of the collection of type `t` at `key`, under the
/// key's lock: `f` gets its body (None if absent) and returns the new body
/// (None: unchanged; empty: the key is removed) and a result. WRONGTYPE and
/// store errors are written and returned as `Err`.
pub fn update<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    t: CType,
    mut f: impl FnMut(Option<Vec<Vec<u8>>>) -> (Option<Vec<Vec<u8>>>, R),
) -> Result<R, Replied> {
    let mut result = None;
    let mut wrong = false;
    let r = ctx.db.update_list(key, &mut |item| {
        let current = match item {
            Some(i) if ctype(i) != Some(t) => {
                wrong = true;
                return ListEdit::Keep;
            }
            Some(i) => Some(body(i, t)),
            None => None,
        };
        let (new, r) = f(current);
        result = Some(r);
        match new {
            None => ListEdit::Keep,
            Some(b) => ListEdit::Replace(with_marker(t, b)),
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
