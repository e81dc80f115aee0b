//! [`Item`]: one stored key and its value, in one pool slot.
//!
//! ```text
//!  string item (one slot, immutable once stored)
//!   0      1       2         4       8           12              20      28
//!   | kind | marks | key_len | flags | value_len | expires_at_ms | cas   | key | value |
//!     u8     u8      u16       u32     u32         u64             u64
//!
//!  collection head item (list, hash, set): the value is the id of the
//!  collection's body (list.rs, dict.rs)
//!   | header (value_len = 8) | key | body id u64 |
//!
//!  small list, whole in one item (kind 7): at most INLINE_LIST_BYTES of
//!  value area, an end offset per element, then the elements
//!   | header | key | count u32 | end u32 x count | element bytes |
//! ```
//!
//! A list is created inline when it fits and stays inline while writes
//! keep it small: a push or pop writes a new item (O(its size), at most
//! 8 KiB, as Redis rewrites a listpack). A write that would make it larger
//! moves it to a chunked body (`list.rs`); a pop that leaves it at half
//! that size or less makes it one item again. Reading an
//! inline list touches the index and this one slot, where a chunked list
//! also touches its body and a chunk per 2 KiB element.
//!
//! All integers are little-endian and unaligned. The 28-byte header keeps a
//! 20 B key + 100 B value item at 148 B, inside the pool's 160 B class.
//!
//! Because a string item is one slot, every value handed out is a
//! zero-copy sub-[`Buf`] of that slot: it keeps the entire item alive, and
//! nothing about the item changes while anyone holds it. A list's elements
//! live in chunks (see `list.rs`); the store attaches the body to the head
//! item it hands out, and every element is a sub-`Buf` of its chunk.
//!
//! An item read by a lock-free reader may come from a slot that was freed
//! and reused (by another item, or by other pool users) after the reader
//! loaded its handle, so [`Item::parse`] checks every length against the
//! slot before anything is sliced; the reader then re-checks the index
//! entry (see the store docs) before trusting it.

use super::dict::Dict;
use super::list::{ListBody, ListElem};
use granola::{Buf, BufMut, Pool};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

/// Bytes of the item header.
pub(crate) const HEADER_LEN: usize = 28;
const KIND_STRING: u8 = 1;
const KIND_LIST: u8 = 2;
// 3 is a list chunk (list.rs).
const KIND_HASH: u8 = 4;
const KIND_SET: u8 = 5;
const KIND_ZSET: u8 = 6;
const KIND_LIST_INLINE: u8 = 7;
const KIND_STREAM: u8 = 8;

/// Most bytes of an inline list's value area (count, offsets, elements);
/// Redis keeps a list in one listpack up to the same size.
pub(crate) const INLINE_LIST_BYTES: usize = 8192;

/// Bytes of the inline encoding of `values`.
fn inline_list_len(values: &[&[u8]]) -> usize {
    4 + 4 * values.len() + values.iter().map(|v| v.len()).sum::<usize>()
}

/// memcached meta-protocol marks of a string item (header byte 1): set
/// by `md ... I` (invalidate) and `mg` (the recache win), cleared by the
/// next plain store.
pub struct Marks;

impl Marks {
    /// Invalidated (`md I`, or `ms I` with an older CAS): served with `X`.
    pub const STALE: u8 = 1;
    /// A client was handed the recache win (`W`); later ones get `Z`.
    pub const WIN_SENT: u8 = 2;
    /// The key was stored base64-encoded (meta `b`): a fetch that returns
    /// the key (`k`) returns it so, with `b`, as memcached does.
    pub const BINARY_KEY: u8 = 4;
}

/// What a key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A byte string (memcached value, Redis string).
    String,
    /// A list of byte strings (Redis list, native GetList/PutList).
    List,
    /// A Redis hash: fields and values.
    Hash,
    /// A Redis set.
    Set,
    /// A Redis sorted set.
    ZSet,
    /// A Redis stream.
    Stream,
}

impl Kind {
    /// True for the kinds whose head item names a body.
    pub fn is_collection(self) -> bool {
        self != Kind::String
    }

    /// True for hashes, sets, sorted sets and streams (a [`Dict`] body).
    pub fn is_dict(self) -> bool {
        matches!(self, Kind::Hash | Kind::Set | Kind::ZSet | Kind::Stream)
    }
}

/// A collection's body.
pub(crate) enum Body {
    /// A list's chunks.
    List(ListBody),
    /// A hash's, set's or sorted set's table.
    Dict(Dict),
}

impl Body {
    /// Moves the chunk or pooled element whose slot pool handle `handle`
    /// names to another free slot of its size (see [`ListBody::relocate`]
    /// and [`Dict::relocate`]).
    pub(crate) fn relocate(&mut self, handle: u32) -> Option<bool> {
        match self {
            Body::List(l) => l.relocate(handle),
            Body::Dict(d) => d.relocate(handle),
        }
    }

    /// Whether [`relocate`](Self::relocate) can move this body's slots.
    pub(crate) fn relocatable(&self) -> bool {
        match self {
            Body::List(_) => true,
            Body::Dict(d) => d.relocatable(),
        }
    }
}

/// A collection's body, shared by the store and the items it hands out.
pub(crate) type SharedBody = Arc<Mutex<Body>>;

/// Locks a body (a panic while holding it cannot leave it inconsistent
/// in a way later readers could observe as unsafe: keep going).
pub(crate) fn lock_body(b: &SharedBody) -> MutexGuard<'_, Body> {
    b.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on a locked body if it is a list.
fn with_list<R>(b: &SharedBody, f: impl FnOnce(&mut ListBody) -> R) -> Option<R> {
    match &mut *lock_body(b) {
        Body::List(l) => Some(f(l)),
        Body::Dict(_) => None,
    }
}

/// A stored item: key, value (or list) and metadata, in one pool slot.
///
/// Cheap to clone (one reference-count increment); holding it keeps the
/// bytes intact even after the key is overwritten or deleted.
#[derive(Clone)]
pub struct Item {
    buf: Buf,
    kind: Kind,
    key_len: u16,
    value_len: u32,
    /// The slot's access word when this item was read (`access.rs`).
    seen: u32,
    body: Option<SharedBody>,
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Item")
            .field("key", &String::from_utf8_lossy(self.key()))
            .field("kind", &self.kind)
            .field("len", &self.value_len)
            .field("flags", &self.flags())
            .field("cas", &self.cas())
            .field("expires_at_ms", &self.expires_at_ms())
            .finish()
    }
}

#[inline]
fn u16_at(b: &[u8], at: usize) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[at..at + 2]);
    u16::from_le_bytes(a)
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Item {
    /// Interprets `buf` (a slot) as an item, checking every length against
    /// it. `None` if the bytes cannot be an item.
    #[inline]
    pub(crate) fn parse(buf: Buf) -> Option<Item> {
        if buf.len() < HEADER_LEN {
            return None;
        }
        let kind = match buf[0] {
            KIND_STRING => Kind::String,
            KIND_LIST | KIND_LIST_INLINE => Kind::List,
            KIND_HASH => Kind::Hash,
            KIND_SET => Kind::Set,
            KIND_ZSET => Kind::ZSet,
            KIND_STREAM => Kind::Stream,
            _ => return None,
        };
        let key_len = u16_at(&buf, 2);
        let value_len = u32_at(&buf, 8);
        let end = HEADER_LEN + key_len as usize + value_len as usize;
        if end > buf.len() {
            return None;
        }
        if buf[0] == KIND_LIST_INLINE {
            // The count and offset table fit; each offset is checked when
            // it is read.
            let v = &buf[end - value_len as usize..end];
            if v.len() < 4 || 4 + 4 * u32_at(v, 0) as usize > v.len() {
                return None;
            }
        } else if kind.is_collection() && value_len != 8 {
            return None;
        }
        let seen = buf.slot_word().load(Ordering::Relaxed);
        Some(Item {
            buf,
            kind,
            key_len,
            value_len,
            seen,
            body: None,
        })
    }

    /// The slot's access word as this item was read, before the read's own
    /// mark (`access.rs`).
    #[inline]
    pub(crate) fn seen(&self) -> u32 {
        self.seen
    }

    /// This item as if read when its access word was `word` (a writer that
    /// has just set it).
    pub(crate) fn seen_as(mut self, word: u32) -> Item {
        self.seen = word;
        self
    }

    /// Bytes of the whole item: header, key and value area.
    pub fn total_len(&self) -> usize {
        HEADER_LEN + self.key_len as usize + self.value_len as usize
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.buf[HEADER_LEN..HEADER_LEN + self.key_len as usize]
    }

    /// String or list.
    #[inline]
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The client's opaque flags (memcached).
    #[inline]
    pub fn flags(&self) -> u32 {
        u32_at(&self.buf, 4)
    }

    /// The CAS unique: new on every modification of the key.
    #[inline]
    pub fn cas(&self) -> u64 {
        // A collection is written in place: its body holds the CAS of its
        // last write (0 until then: the head item's holds).
        let body = self.body.as_ref().map_or(0, |b| match &*lock_body(b) {
            Body::List(l) => l.cas(),
            Body::Dict(d) => d.cas(),
        });
        match body {
            0 => u64_at(&self.buf, 20),
            cas => cas,
        }
    }

    /// The item's [`Marks`] bits.
    pub fn marks(&self) -> u8 {
        self.buf[1]
    }

    /// Absolute expiry in Unix milliseconds; 0 = never.
    #[inline]
    pub fn expires_at_ms(&self) -> u64 {
        u64_at(&self.buf, 12)
    }

    /// True if the item has expired at `now_ms`.
    #[inline]
    pub(crate) fn expired(&self, now_ms: u64) -> bool {
        let e = self.expires_at_ms();
        e != 0 && e <= now_ms
    }

    #[inline]
    fn value_start(&self) -> usize {
        HEADER_LEN + self.key_len as usize
    }

    /// The value as a zero-copy [`Buf`] sharing the item's slot. For a list
    /// this is the encoded list area (element table + elements); use the
    /// `list_*` accessors instead.
    #[inline]
    pub fn value(&self) -> Buf {
        let s = self.value_start();
        self.buf.slice(s..s + self.value_len as usize)
    }

    /// The value's bytes (see [`value`](Self::value)).
    #[inline]
    pub fn value_bytes(&self) -> &[u8] {
        let s = self.value_start();
        &self.buf[s..s + self.value_len as usize]
    }

    /// Length of the value in bytes (the encoded area for lists).
    #[inline]
    pub fn value_len(&self) -> usize {
        self.value_len as usize
    }

    /// The id of a collection's body (None for strings and inline lists).
    pub(crate) fn body_id(&self) -> Option<u64> {
        (self.kind.is_collection() && !self.is_inline_list()).then(|| u64_at(self.value_bytes(), 0))
    }

    /// True for a small list kept whole in this item (see the module
    /// docs); OBJECT ENCODING calls it a listpack.
    #[inline]
    pub fn is_inline_list(&self) -> bool {
        self.buf[0] == KIND_LIST_INLINE
    }

    /// The elements of an inline list, borrowed from the item (no
    /// reference count per element, unlike [`list_range`](Self::list_range)).
    pub(crate) fn inline_elems(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let n = if self.is_inline_list() {
            self.inline_count()
        } else {
            0
        };
        (0..n).map_while(|i| self.inline_elem(i).map(|r| &self.buf[r]))
    }

    /// Element bytes `keep` of an inline list: their byte range in its
    /// value area, and the data offset they start at. `None` if the
    /// offsets do not fit the item.
    fn inline_run(&self, keep: std::ops::Range<usize>) -> Option<(std::ops::Range<usize>, u32)> {
        let v = self.value_bytes();
        let n = self.inline_count();
        if keep.start > keep.end || keep.end > n {
            return None;
        }
        let data = 4 + 4 * n;
        let end_of = |k: usize| u32_at(v, 4 + 4 * k);
        let base = if keep.start == 0 {
            0
        } else {
            end_of(keep.start - 1)
        };
        let last = if keep.is_empty() {
            base
        } else {
            end_of(keep.end - 1)
        };
        let run = data + base as usize..data + last as usize;
        (base <= last && run.end <= v.len()).then_some((run, base))
    }

    /// The value area of [`Content::InlineSplice`] of this inline list;
    /// `None` if its offsets do not fit it.
    pub(crate) fn inline_splice_len(
        &self,
        keep: std::ops::Range<usize>,
        front: &[&[u8]],
        back: &[&[u8]],
    ) -> Option<usize> {
        let kept = keep.len();
        let (run, _) = self.inline_run(keep)?;
        let added: usize = front.iter().chain(back).map(|v| v.len()).sum();
        Some(4 + 4 * (front.len() + kept + back.len()) + run.len() + added)
    }

    /// Elements of an inline list.
    fn inline_count(&self) -> usize {
        u32_at(self.value_bytes(), 0) as usize
    }

    /// The byte range of inline element `i` in the slot; `None` past the
    /// end (or if the offsets do not fit the item).
    fn inline_elem(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let v = self.value_bytes();
        let n = self.inline_count();
        if i >= n {
            return None;
        }
        let data = 4 + 4 * n;
        let end_of = |k: usize| u32_at(v, 4 + 4 * k) as usize;
        let start = if i == 0 { 0 } else { end_of(i - 1) };
        let end = end_of(i);
        (start <= end && data + end <= v.len()).then(|| {
            let base = self.value_start() + data;
            base + start..base + end
        })
    }

    /// Runs `f` on a hash's or set's table, under its lock (None for other
    /// kinds). Keep `f` short: writers of this key wait for it.
    pub fn read_dict<R>(&self, f: impl FnOnce(&Dict) -> R) -> Option<R> {
        match &*lock_body(self.body.as_ref()?) {
            Body::Dict(d) => Some(f(d)),
            Body::List(_) => None,
        }
    }

    /// Bytes this key holds against the memory limit, as `MEMORY USAGE`
    /// reports: its item's pool slot, its index cell, and a collection's
    /// body (list chunks and their spans, or a table's heap bytes and its
    /// large elements' slots; a
    /// collection is locked for the moment it takes to read its size).
    pub fn memory_usage(&self) -> usize {
        const INDEX_CELL: usize = 8;
        let body = self.body.as_ref().map_or(0, |b| match &*lock_body(b) {
            Body::List(l) => l.slot_bytes(),
            Body::Dict(d) => d.bytes().bytes,
        });
        self.buf.slot_size() + INDEX_CELL + body
    }

    /// Entries of a hash or set (0 for other kinds).
    pub fn dict_len(&self) -> usize {
        self.read_dict(Dict::len).unwrap_or(0)
    }

    /// Attaches the collection's body (the store does, before handing it
    /// out).
    pub(crate) fn with_body(mut self, body: SharedBody) -> Item {
        self.set_body(body);
        self
    }

    /// Attaches the collection's body in place.
    pub(crate) fn set_body(&mut self, body: SharedBody) {
        self.body = Some(body);
    }

    /// The collection's body, if attached.
    pub(crate) fn body(&self) -> Option<&SharedBody> {
        self.body.as_ref()
    }

    /// Number of list elements (0 for strings).
    pub fn list_len(&self) -> usize {
        if self.is_inline_list() {
            return self.inline_count();
        }
        self.body
            .as_ref()
            .and_then(|b| with_list(b, |l| l.len()))
            .unwrap_or(0)
    }

    /// Element `index` of a list (negative counts from the end, as Redis
    /// LINDEX), as a zero-copy `Buf` sharing its chunk.
    pub fn list_get(&self, index: i64) -> Option<Buf> {
        if self.is_inline_list() {
            let i = normalize(index, self.inline_count())?;
            return self.inline_elem(i).map(|r| self.buf.slice(r));
        }
        with_list(self.body.as_ref()?, |b| {
            let i = normalize(index, b.len())?;
            b.get(i)
        })?
    }

    /// The positions `from..to` that LRANGE `start end` covers (Redis
    /// semantics, see [`list_range`](Self::list_range)).
    pub fn list_bounds(&self, start: i64, end: i64) -> (usize, usize) {
        range_bounds(start, end, self.list_len())
    }

    /// Visits list elements at positions `from..to` under the body's lock
    /// (see [`ListElem`]); `f` returns false to stop. How many were
    /// visited (0 for other kinds). Keep `f` short: writers wait.
    pub fn list_visit(
        &self,
        from: usize,
        to: usize,
        mut f: impl FnMut(ListElem<'_>) -> bool,
    ) -> usize {
        if self.is_inline_list() {
            let mut seen = 0;
            for i in from..to.min(self.inline_count()) {
                let Some(r) = self.inline_elem(i) else {
                    break;
                };
                seen += 1;
                if !f(ListElem::inline(&self.buf, r)) {
                    break;
                }
            }
            return seen;
        }
        self.body
            .as_ref()
            .and_then(|b| with_list(b, |l| l.visit(from, to, &mut f)))
            .unwrap_or(0)
    }

    /// Elements `start..=end` with Redis LRANGE semantics: negative indices
    /// count from the end, out-of-range indices are clamped, an empty range
    /// yields nothing. Each element is a zero-copy `Buf` sharing its chunk;
    /// they are collected under the body's lock, so the range is one
    /// consistent state of the list.
    pub fn list_range(&self, start: i64, end: i64) -> impl Iterator<Item = Buf> + '_ {
        if self.is_inline_list() {
            let (from, to) = range_bounds(start, end, self.inline_count());
            let elems: Vec<Buf> = (from..to)
                .map_while(|i| self.inline_elem(i).map(|r| self.buf.slice(r)))
                .collect();
            return elems.into_iter();
        }
        let elems = match &self.body {
            Some(b) => with_list(b, |b| {
                let (from, to) = range_bounds(start, end, b.len());
                b.range(from, to)
            })
            .unwrap_or_default(),
            None => Vec::new(),
        };
        elems.into_iter()
    }

    /// The item's buffer (shares the slot).
    pub(crate) fn buf(&self) -> &Buf {
        &self.buf
    }
}

/// A Redis index (negative from the end) to a position in `0..len`.
fn normalize(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 {
        index.checked_add(len)?
    } else {
        index
    };
    (0..len).contains(&i).then_some(i as usize)
}

/// LRANGE `start..=end` to a half-open range of positions in `0..len`.
pub(crate) fn range_bounds(start: i64, end: i64, len: usize) -> (usize, usize) {
    let n = len as i64;
    let s = if start < 0 {
        start.saturating_add(n)
    } else {
        start
    }
    .max(0);
    let e = if end < 0 { end.saturating_add(n) } else { end }.min(n - 1);
    if s > e || s >= n {
        return (0, 0);
    }
    (s as usize, e as usize + 1)
}

/// What a new item holds.
pub(crate) enum Content<'a> {
    /// A string, the concatenation of these parts.
    Str(&'a [&'a [u8]]),
    /// A collection's head (list, hash or set) for the body with this id.
    Head(Kind, u64),
    /// A copy of another item's value area (same kind).
    CopyOf(&'a Item),
    /// A small list, whole (at most [`INLINE_LIST_BYTES`] of value area).
    InlineList(&'a [&'a [u8]]),
    /// A small list made of `front`, then the elements `keep` of the
    /// inline list `old` (copied as one run), then `back`. The caller
    /// checked `old`'s offsets ([`Item::inline_splice_len`]).
    InlineSplice {
        old: &'a Item,
        keep: std::ops::Range<usize>,
        front: &'a [&'a [u8]],
        back: &'a [&'a [u8]],
    },
}

/// Metadata of a new item.
///
/// In C order, the CAS before the expiry: the item header has them the
/// other way round, so writing one into the other cannot be merged into
/// one 16-byte copy. A header is usually written a few instructions
/// before it is read, each field by its own store, and a load spanning
/// two stores misses store-to-load forwarding (a stall on every INCR and
/// in-place SET).
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct Header {
    pub cas: u64,
    pub expires_at_ms: u64,
    pub flags: u32,
    /// [`Marks`] bits.
    pub marks: u8,
}

impl Content<'_> {
    /// Bytes of the value area.
    pub(crate) fn value_len(&self) -> usize {
        match self {
            Content::Str(parts) => parts.iter().map(|p| p.len()).sum(),
            Content::Head(..) => 8,
            Content::CopyOf(item) => item.value_len(),
            Content::InlineList(values) => inline_list_len(values),
            Content::InlineSplice {
                old,
                keep,
                front,
                back,
            } => old
                .inline_splice_len(keep.clone(), front, back)
                .unwrap_or(usize::MAX),
        }
    }

    /// The header's kind byte.
    fn kind_byte(&self) -> u8 {
        match self {
            Content::Str(_) => KIND_STRING,
            Content::Head(kind, _) => match kind {
                Kind::String => KIND_STRING,
                Kind::List => KIND_LIST,
                Kind::Hash => KIND_HASH,
                Kind::Set => KIND_SET,
                Kind::ZSet => KIND_ZSET,
                Kind::Stream => KIND_STREAM,
            },
            // The same kind and encoding as the original.
            Content::CopyOf(item) => item.buf[0],
            Content::InlineList(_) | Content::InlineSplice { .. } => KIND_LIST_INLINE,
        }
    }
}

/// Total item size for a key and content (header + key + value area).
pub(crate) fn item_len(key: &[u8], content: &Content<'_>) -> usize {
    HEADER_LEN + key.len() + content.value_len()
}

/// An item's header bytes.
fn header(kind: u8, key_len: usize, value_len: usize, h: &Header) -> [u8; HEADER_LEN] {
    let mut head = [0u8; HEADER_LEN];
    head[0] = kind;
    head[1] = h.marks;
    head[2..4].copy_from_slice(&(key_len as u16).to_le_bytes());
    head[4..8].copy_from_slice(&h.flags.to_le_bytes());
    head[8..12].copy_from_slice(&(value_len as u32).to_le_bytes());
    head[12..20].copy_from_slice(&h.expires_at_ms.to_le_bytes());
    head[20..28].copy_from_slice(&h.cas.to_le_bytes());
    head
}

impl Item {
    /// Writes the string concatenated `parts` with header `h` over this
    /// item, in its own slot and under its own key, when the pool allows
    /// it (nothing but the index's handle and this item refers to the
    /// slot; see [`Pool::rewrite_in_place`]) and the new item needs a slot
    /// of the same size; the slot's access word becomes `word`. The key's
    /// bytes are left where they are. True if it did (this item then
    /// describes the new value), false if nothing changed. By reference:
    /// a writer that found the item moves nothing (see
    /// [`Pool::rewrite_in_place`]). Inlined into the writer, which has
    /// just built `h`: its fields are then read from registers, where a
    /// call read the CAS and the expiry with one wide load of their two
    /// fresh stores, which misses store-to-load forwarding.
    #[inline(always)]
    pub(crate) fn rewrite_str(
        &mut self,
        pool: &Pool,
        parts: &[&[u8]],
        h: &Header,
        word: u32,
    ) -> bool {
        let new_len: usize = parts.iter().map(|p| p.len()).sum();
        let value_at = self.value_start();
        if self.kind != Kind::String
            || self.body.is_some()
            || Pool::slot_size_for(value_at + new_len) != self.buf.len()
        {
            return false;
        }
        let head = header(KIND_STRING, self.key_len as usize, new_len, h);
        let write = |bytes: &mut [u8]| {
            bytes[..HEADER_LEN].copy_from_slice(&head);
            let mut rest = &mut bytes[value_at..];
            for p in parts {
                let (v, tail) = rest.split_at_mut(p.len());
                granola::copy_short(v, p);
                rest = tail;
            }
        };
        if !pool.rewrite_in_place(&mut self.buf, Some(word), write) {
            return false;
        }
        self.value_len = new_len as u32;
        self.seen = word;
        true
    }

    /// Writes header `h` over this item's own (flags, expiry, CAS and
    /// marks; kind, key and value stay), when the pool allows it (see
    /// [`Item::rewrite_str`]). The slot's access word stays. `Err(self)`
    /// unchanged otherwise.
    pub(crate) fn rewrite_header(mut self, pool: &Pool, h: Header) -> Result<Item, Item> {
        let head = header(
            self.buf[0],
            self.key_len as usize,
            self.value_len as usize,
            &h,
        );
        if pool.rewrite_in_place(&mut self.buf, None, |bytes| {
            bytes[..HEADER_LEN].copy_from_slice(&head);
        }) {
            Ok(self)
        } else {
            Err(self)
        }
    }
}

/// Writes a new item into a fresh pool slot and freezes it. The caller has
/// checked that the sizes fit (key <= u16::MAX, value area <= u32::MAX).
/// `None` if the pool has no room.
pub(crate) fn build(pool: &Pool, key: &[u8], content: &Content<'_>, h: Header) -> Option<Item> {
    build_in(pool, key, content, h, 0)
}

/// [`build`] in a slot of at least `min_slot` bytes (a larger size class
/// than the item needs, when its own has no room).
pub(crate) fn build_in(
    pool: &Pool,
    key: &[u8],
    content: &Content<'_>,
    h: Header,
    min_slot: usize,
) -> Option<Item> {
    let value_len = content.value_len();
    let total = HEADER_LEN + key.len() + value_len;
    let mut w: BufMut = pool.alloc(total.max(min_slot))?;
    w.extend_from_slice(&header(content.kind_byte(), key.len(), value_len, &h));
    w.extend_from_slice(key);
    match content {
        Content::Str(parts) => {
            for p in parts.iter() {
                w.extend_from_slice(p);
            }
        }
        Content::Head(_, id) => w.extend_from_slice(&id.to_le_bytes()),
        Content::CopyOf(item) => w.extend_from_slice(item.value_bytes()),
        Content::InlineSplice {
            old,
            keep,
            front,
            back,
        } => {
            let (run, base) = old.inline_run(keep.clone())?;
            let count = front.len() + keep.len() + back.len();
            w.extend_from_slice(&(count as u32).to_le_bytes());
            // The offsets, written in place (one pass, no call per entry).
            let at = w.len();
            let old_v = old.value_bytes();
            {
                let table = &mut w.as_full_mut_slice()[at..at + 4 * count];
                let mut slots = table.chunks_exact_mut(4);
                let mut end = 0u32;
                for v in front.iter() {
                    end += v.len() as u32;
                    slots.next()?.copy_from_slice(&end.to_le_bytes());
                }
                for k in keep.clone() {
                    let e = end.wrapping_add(u32_at(old_v, 4 + 4 * k).wrapping_sub(base));
                    slots.next()?.copy_from_slice(&e.to_le_bytes());
                }
                end += (run.end - run.start) as u32;
                for v in back.iter() {
                    end += v.len() as u32;
                    slots.next()?.copy_from_slice(&end.to_le_bytes());
                }
            }
            w.set_len(at + 4 * count);
            for v in front.iter() {
                w.extend_from_slice(v);
            }
            w.extend_from_slice(&old_v[run]);
            for v in back.iter() {
                w.extend_from_slice(v);
            }
        }
        Content::InlineList(values) => {
            w.extend_from_slice(&(values.len() as u32).to_le_bytes());
            let mut end = 0u32;
            for v in values.iter() {
                end += v.len() as u32;
                w.extend_from_slice(&end.to_le_bytes());
            }
            for v in values.iter() {
                w.extend_from_slice(v);
            }
        }
    }
    let item = Item::parse(w.freeze());
    debug_assert!(item.is_some(), "a freshly built item parses");
    item
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lrange_bounds_follow_redis() {
        assert_eq!(range_bounds(0, -1, 5), (0, 5));
        assert_eq!(range_bounds(1, 2, 5), (1, 3));
        assert_eq!(range_bounds(-2, -1, 5), (3, 5));
        assert_eq!(range_bounds(-100, 100, 5), (0, 5));
        assert_eq!(range_bounds(3, 1, 5), (0, 0));
        assert_eq!(range_bounds(5, 10, 5), (0, 0));
        assert_eq!(range_bounds(0, -6, 5), (0, 0));
        assert_eq!(range_bounds(0, -1, 0), (0, 0));
        assert_eq!(range_bounds(i64::MIN, i64::MAX, 3), (0, 3));
    }

    #[test]
    fn normalize_negative_indices() {
        assert_eq!(normalize(0, 3), Some(0));
        assert_eq!(normalize(-1, 3), Some(2));
        assert_eq!(normalize(-3, 3), Some(0));
        assert_eq!(normalize(-4, 3), None);
        assert_eq!(normalize(3, 3), None);
        assert_eq!(normalize(i64::MIN, 3), None);
    }

    #[test]
    fn parse_rejects_garbage() {
        let pool = Pool::with_capacity(4 << 20).unwrap();
        assert!(Item::parse(pool.alloc_copy(&[0u8; 64]).unwrap()).is_none());
        let mut bad = [0u8; 64];
        bad[0] = KIND_STRING;
        bad[8..12].copy_from_slice(&1000u32.to_le_bytes());
        assert!(Item::parse(pool.alloc_copy(&bad).unwrap()).is_none());
        bad[0] = KIND_LIST;
        bad[8..12].copy_from_slice(&12u32.to_le_bytes()); // a head holds 8 bytes
        assert!(Item::parse(pool.alloc_copy(&bad).unwrap()).is_none());
    }

    #[test]
    fn build_and_read_back() {
        let pool = Pool::with_capacity(4 << 20).unwrap();
        let h = Header {
            marks: 0,
            flags: 7,
            expires_at_ms: 99,
            cas: 5,
        };
        let s = build(&pool, b"k", &Content::Str(&[b"ab", b"cd"]), h).unwrap();
        assert_eq!(s.key(), b"k");
        assert_eq!(s.value_bytes(), b"abcd");
        assert_eq!(s.kind(), Kind::String);
        assert_eq!((s.flags(), s.expires_at_ms(), s.cas()), (7, 99, 5));
        let l = build(&pool, b"list", &Content::Head(Kind::List, 42), h).unwrap();
        assert_eq!((l.kind(), l.body_id()), (Kind::List, Some(42)));
        assert_eq!(l.list_len(), 0, "no body attached");
        let copy = build(&pool, b"list", &Content::CopyOf(&l), h).unwrap();
        assert_eq!(copy.body_id(), Some(42));
        // An item of exactly HEADER + 20 + 100 bytes takes a 160 B slot.
        let v = [1u8; 100];
        let it = build(&pool, &[2u8; 20], &Content::Str(&[&v]), h).unwrap();
        assert_eq!(pool.slot_size(it.buf()), 160);
    }
}
