//! The body of a hash, a set or a sorted set: a hash table on the heap;
//! and of a stream, in the same type (`stream.rs`).
//!
//! ```text
//!  index entry ──► head item [header (kind hash|set|zset|stream) | key | body id u64]
//!                       │ id
//!  Store::bodies[id] ──► Body::Dict(Dict { entries: IndexMap<field, value>,
//!                                          order: (sorted sets) BTreeSet<(score, member)>,
//!                                          stream: (streams) entries by ID })
//! ```
//!
//! - **O(1) per field.** HSET, HDEL, SADD, SREM, HGET, SISMEMBER touch one
//!   entry, whatever the size; nothing is rebuilt. (Hashes and sets used
//!   to be lists with a type marker, rewritten whole on every write: an
//!   HSET on a 100k-field hash copied 100k fields.)
//! - **Small elements on the heap, large ones in pool memory.** Fields,
//!   values and members are usually small (below the size where a
//!   reference beats a copy): they are boxed byte strings and replies copy
//!   them. One of at least the store's `pooled_element_min` (the server's
//!   copy threshold) gets a pool slot of its own, and replies reference it
//!   as they do strings and list elements (`element.rs`). Everything is
//!   charged to the store's limit like item slots: a heap allocation at
//!   its malloc size ([`heap_cost`]), a pool slot at its slot size, plus
//!   the table's per-slot bytes ([`SLOT_BYTES`]) for its capacity, so `-m`
//!   bounds hashes, sets and sorted sets alike.
//! - **Insertion-ordered with O(1) removal** (`IndexMap::swap_remove`: the
//!   last entry takes the removed one's place), which also gives O(1)
//!   random members (SPOP, SRANDMEMBER) and cursors by position.
//! - **Scan cursors count down** from the end: a cursor is the number of
//!   positions not yet visited. Removal only ever moves the *last* entry
//!   into the hole, and the last entry has already been visited, so an
//!   entry present for the whole scan is returned at least once, as
//!   HSCAN/SSCAN promise (entries added during a scan may be missed).
//! - **Sorted sets** keep member → score (8 bytes) in the table and an
//!   ordered index of (score, member) beside it: O(log n) per member,
//!   score ranges O(log n + returned), ranks O(rank) (the B-tree keeps no
//!   subtree counts). The index holds a small member's own heap copy, and
//!   a pooled member's slot by a second reference ([`Member`]): no second
//!   copy, and range replies reference it.
//! - Like a list body, a dict is behind its own mutex, taken by writers
//!   (who hold the key's shard lock) and briefly by readers; eviction
//!   skips a body that is locked.

use super::element::{Element, Placer};
use super::stream::StreamBody;
use granola::Buf;
use indexmap::map::MutableKeys;
use indexmap::IndexMap;
use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::ops::Bound;

/// Heap bytes per table slot: the entry (hash + two [`Element`]s, 16 bytes
/// each) and its index in the hash table, with the table's spare control
/// bytes.
pub(crate) const SLOT_BYTES: usize = 8 + 2 * 16 + 16;

/// The bytes malloc takes for an allocation of `n` bytes (glibc: 8 bytes
/// of header, 16-byte granules, 32 at least; nothing for an empty box).
pub(crate) fn heap_cost(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n + 8).next_multiple_of(16).max(32)
    }
}

/// Heap bytes per entry of a sorted set's order index, besides its
/// member's copy: the score, the member and the B-tree's nodes (11
/// entries of 24 bytes per node, about two thirds full: twice the entry).
pub(crate) const ORDER_BYTES: usize = 2 * std::mem::size_of::<(u64, Member)>();

/// Heap bytes per stream entry besides its fields: the ID and the
/// element in the B-tree (32 bytes), whose nodes an append-only stream
/// leaves about half full.
pub(crate) const STREAM_ENTRY_BYTES: usize = 2 * 32;

/// A sorted set member as its order index holds it: a heap copy of a
/// small member, or a second reference to a pooled member's slot (the
/// table's [`Element`] owns the slot's handle; this keeps the bytes for a
/// reply even after the member is removed). Ordered by its bytes.
#[derive(Debug)]
pub enum Member {
    /// Copied into replies.
    Heap(Box<[u8]>),
    /// Referenced by replies (boxed: both variants are 16 bytes, so the
    /// index of small members costs what it did).
    Shared(Box<Buf>),
}

impl Member {
    /// The index's form of the table's `e`.
    fn of(e: &Element) -> Member {
        match e.buf() {
            Some(b) => Member::Shared(Box::new(b.clone())),
            None => Member::Heap(e.bytes().into()),
        }
    }

    /// A key to look `member` up by.
    fn probe(member: &[u8]) -> Member {
        Member::Heap(member.into())
    }

    /// The member's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Member::Heap(b) => b,
            Member::Shared(b) => b,
        }
    }

    /// The member as a zero-copy `Buf`, if it is in pool memory.
    pub fn buf(&self) -> Option<&Buf> {
        match self {
            Member::Heap(_) => None,
            Member::Shared(b) => Some(b),
        }
    }

    /// Heap bytes charged for it besides [`ORDER_BYTES`]: its copy, or
    /// the boxed reference (a shared member's slot is charged once, to its
    /// table element).
    fn cost(&self) -> usize {
        match self {
            Member::Heap(b) => heap_cost(b.len()),
            Member::Shared(_) => heap_cost(std::mem::size_of::<Buf>()),
        }
    }
}

impl Clone for Member {
    /// A heap copy, as [`Element`]'s clones are (a copy of the dict must
    /// not hold its original's slots).
    fn clone(&self) -> Member {
        Member::Heap(self.bytes().into())
    }
}

impl std::ops::Deref for Member {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl PartialEq for Member {
    fn eq(&self, o: &Member) -> bool {
        self.bytes() == o.bytes()
    }
}

impl Eq for Member {}

impl PartialOrd for Member {
    fn partial_cmp(&self, o: &Member) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Member {
    fn cmp(&self, o: &Member) -> std::cmp::Ordering {
        self.bytes().cmp(o.bytes())
    }
}

/// A score as a key that sorts like `f64::total_cmp` (-0.0 before 0.0;
/// scores are never NaN).
fn order_key(score: f64) -> u64 {
    let b = score.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

fn score_of(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

/// A hash's fields and values, a set's members (empty values), or a sorted
/// set's members and scores (8-byte values, see [`Dict::sorted`]).
#[derive(Default)]
pub struct Dict {
    entries: IndexMap<Element, Element, RandomState>,
    /// Bytes of the keys and values ([`Element::cost`]) and of a sorted
    /// set's order copies.
    payload: usize,
    /// The part of `payload` in pool slots ([`Element::pool_bytes`]).
    pooled: usize,
    /// Bumped by every write (the store gives a changed dict a new CAS).
    pub(super) writes: u64,
    /// The CAS unique of the last write (0: none since the head item's).
    cas: u64,
    /// A sorted set's (score, member) order; `None` for the other kinds.
    order: Option<BTreeSet<(u64, Member)>>,
    /// A stream's entries and bookkeeping (`stream.rs`; then `entries`
    /// and `order` stay empty); `None` for the other kinds.
    pub(super) stream: Option<Box<StreamBody>>,
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dict").field("len", &self.len()).finish()
    }
}

impl Clone for Dict {
    /// A copy whose elements are all on the heap (see `element.rs`); the
    /// store places the large ones again for the copy's owner.
    fn clone(&self) -> Dict {
        let entries = self.entries.clone();
        let order = self.order.clone();
        let stream = self.stream.clone();
        let order_payload = order.iter().flatten().map(|(_, m)| m.cost()).sum::<usize>();
        let payload = entries
            .iter()
            .map(|(k, v)| k.cost() + v.cost())
            .sum::<usize>()
            + order_payload
            + stream.as_ref().map_or(0, |s| s.payload());
        Dict {
            entries,
            payload,
            pooled: 0,
            writes: self.writes,
            cas: self.cas,
            order,
            stream,
        }
    }
}

impl Dict {
    /// Entries.
    pub fn len(&self) -> usize {
        match &self.stream {
            Some(s) => s.len(),
            None => self.entries.len(),
        }
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.entries.get(field).map(|v| &v[..])
    }

    /// The value of `field` as stored (for a reply that may reference it).
    pub fn value(&self, field: &[u8]) -> Option<&Element> {
        self.entries.get(field)
    }

    /// True if `field` is there.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.entries.contains_key(field)
    }

    /// Sets `field` to `value`; true if the field is new. For hashes and
    /// sets: a sorted set keeps its order index with
    /// [`set_score`](Self::set_score), [`remove_scored`](Self::remove_scored)
    /// and [`pop_scored`](Self::pop_scored) instead.
    /// Everything goes on the heap; [`DictEdit::insert`] places large
    /// elements in pool memory.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.insert_with(field, value, &mut Element::heap)
    }

    /// [`insert`](Self::insert), with `place` making each new element.
    fn insert_with(
        &mut self,
        field: &[u8],
        value: &[u8],
        place: &mut dyn FnMut(&[u8]) -> Element,
    ) -> bool {
        self.writes += 1;
        match self.entries.get_mut(field) {
            Some(Element::Heap(v)) if v.len() == value.len() => {
                // Heap bytes are only read under the body's lock (replies
                // copy them): safe to overwrite.
                v.copy_from_slice(value);
                false
            }
            Some(v) => {
                // A pooled value is never written again: a reply may hold it.
                let new = place(value);
                let (gone, now) = (Charge::of(v), Charge::of(&new));
                *v = new;
                self.uncharge(gone);
                self.charge(now);
                false
            }
            None => {
                let (k, v) = (place(field), place(value));
                self.charge(Charge::of(&k) + Charge::of(&v));
                self.entries.insert(k, v);
                true
            }
        }
    }

    /// Moves every large heap element into pool memory (for a copy the
    /// store is about to own: see `element.rs`); a sorted set's order
    /// index then shares its placed members.
    pub(crate) fn place_all(&mut self, placer: &mut Placer<'_>) {
        let (mut gone, mut now) = (Charge::default(), Charge::default());
        for (k, v) in self.entries.iter_mut2() {
            for e in [k, v] {
                if matches!(e, Element::Heap(b) if b.len() >= placer.min) {
                    let placed = placer.place(e);
                    gone = gone + Charge::of(e);
                    now = now + Charge::of(&placed);
                    // The same bytes: the key's hash and position hold.
                    *e = placed;
                }
            }
        }
        if let Some(stream) = self.stream.as_deref_mut() {
            for e in stream.values_mut() {
                if matches!(e, Element::Heap(b) if b.len() >= placer.min) {
                    let placed = placer.place(e);
                    gone = gone + Charge::of(e);
                    now = now + Charge::of(&placed);
                    *e = placed;
                }
            }
        }
        self.uncharge(gone);
        self.charge(now);
        if let Some(order) = self.order.take() {
            let mut order_cost = 0;
            let order = order
                .into_iter()
                .map(|(key, m)| {
                    self.payload -= m.cost();
                    let m = match self.entries.get_key_value(m.bytes()) {
                        Some((e, _)) => Member::of(e),
                        None => m,
                    };
                    order_cost += m.cost();
                    (key, m)
                })
                .collect();
            self.payload += order_cost;
            self.order = Some(order);
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.entries.swap_remove_entry(field) {
            Some((k, v)) => {
                self.writes += 1;
                self.uncharge(Charge::of(&k) + Charge::of(&v));
                true
            }
            None => false,
        }
    }

    /// Keeps the entries whose field `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        let mut freed = Charge::default();
        self.entries.retain(|k, v| {
            let keep = keep(k);
            if !keep {
                freed = freed + Charge::of(k) + Charge::of(v);
            }
            keep
        });
        if freed.bytes > 0 {
            self.uncharge(freed);
            self.writes += 1;
        }
    }

    /// Removes the entry at position `i` (see [`Dict::at`]); its field.
    pub fn remove_at(&mut self, i: usize) -> Option<Element> {
        let (k, v) = self.entries.swap_remove_index(i)?;
        self.writes += 1;
        self.uncharge(Charge::of(&k) + Charge::of(&v));
        Some(k)
    }

    /// The entry at position `i` (`0..len`; positions change on removal).
    pub fn at(&self, i: usize) -> Option<(&Element, &Element)> {
        self.entries.get_index(i)
    }

    /// Every entry, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (&Element, &Element)> + '_ {
        self.entries.iter()
    }

    /// One step of a scan: visits up to `count` entries before position
    /// `cursor` (0 starts a scan), calling `f` on each; returns the next
    /// cursor (0: done). See the module docs for why it counts down.
    pub fn scan<'d>(
        &'d self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'d Element, &'d Element),
    ) -> u64 {
        let len = self.len();
        let end = match usize::try_from(cursor) {
            Ok(0) | Err(_) => len,
            Ok(c) => c.min(len),
        };
        let start = end.saturating_sub(count.max(1));
        for i in (start..end).rev() {
            if let Some((k, v)) = self.at(i) {
                f(k, v);
            }
        }
        start as u64
    }

    /// An empty sorted set.
    pub fn sorted() -> Dict {
        Dict {
            order: Some(BTreeSet::new()),
            ..Dict::default()
        }
    }

    /// True for a sorted set.
    pub fn is_sorted(&self) -> bool {
        self.order.is_some()
    }

    /// Moves the pooled field, value or member whose slot pool handle
    /// `handle` names to another free slot of the same size (a
    /// compaction, `Store::compact_segment`; see
    /// [`Element::relocate`]): `Some(true)` if it moved, `Some(false)` if
    /// the pool had no free slot, `None` if it is not this body's. A sorted
    /// set's order index then holds the moved member, not the old slot.
    /// O(entries). A stream's entries do not move (`None`).
    pub(crate) fn relocate(&mut self, handle: u32) -> Option<bool> {
        if self.stream.is_some() {
            return None;
        }
        let mut moved_key = None;
        for (i, (k, v)) in self.entries.iter_mut2().enumerate() {
            if let Some(moved) = v.relocate(handle) {
                return Some(moved);
            }
            if let Some(moved) = k.relocate(handle) {
                moved_key = Some((i, moved));
                break;
            }
        }
        let (i, moved) = moved_key?;
        if let (true, Some(order)) = (moved, self.order.as_mut()) {
            let (member, score) = self.entries.get_index(i).expect("found above");
            let score = f64::from_be_bytes(<[u8; 8]>::try_from(&score[..]).expect("a score"));
            let at = (order_key(score), Member::probe(member));
            if let Some((key, old)) = order.take(&at) {
                debug_assert_eq!(old.cost(), Member::of(member).cost());
                order.insert((key, Member::of(member)));
            }
        }
        Some(moved)
    }

    /// Whether [`relocate`](Self::relocate) can move this body's pooled
    /// elements (a stream's stay where they are).
    pub(crate) fn relocatable(&self) -> bool {
        self.stream.is_none()
    }

    /// A sorted set member's score.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        let v = self.entries.get(member)?;
        Some(f64::from_be_bytes(<[u8; 8]>::try_from(&v[..]).ok()?))
    }

    /// Sets a sorted set member's score (not NaN); true if the member is
    /// new. O(log n). Members go on the heap;
    /// [`DictEdit::set_score`] places large ones in pool memory.
    pub fn set_score(&mut self, member: &[u8], score: f64) -> bool {
        self.set_score_with(member, score, &mut Element::heap)
    }

    /// [`set_score`](Self::set_score), with `place` making a new member.
    fn set_score_with(
        &mut self,
        member: &[u8],
        score: f64,
        place: &mut dyn FnMut(&[u8]) -> Element,
    ) -> bool {
        debug_assert!(!score.is_nan());
        // -0 and 0 are one score (as in Redis), stored as 0.
        let score = if score == 0.0 { 0.0 } else { score };
        let old = self.score(member);
        if old.is_some_and(|o| o.to_bits() == score.to_bits()) {
            self.writes += 1;
            return false;
        }
        // The score is 8 bytes: always on the heap, rewritten in place.
        let new = self.insert_with(member, &score.to_be_bytes(), place);
        let order = self.order.get_or_insert_with(BTreeSet::new);
        let indexed = match old {
            Some(o) => order.take(&(order_key(o), Member::probe(member))),
            None => None,
        };
        let m = indexed.map_or_else(
            || {
                let (e, _) = self.entries.get_key_value(member).expect("just inserted");
                let m = Member::of(e);
                self.payload += m.cost();
                m
            },
            |(_, m)| m,
        );
        order.insert((order_key(score), m));
        new
    }

    /// Removes a sorted set member; true if it was there. O(log n).
    pub fn remove_scored(&mut self, member: &[u8]) -> bool {
        let Some(score) = self.score(member) else {
            return false;
        };
        if let Some((_, m)) = self
            .order
            .as_mut()
            .and_then(|o| o.take(&(order_key(score), Member::probe(member))))
        {
            self.payload -= m.cost();
        }
        self.remove(member)
    }

    /// Sorted set members at ranks `from..to` (ascending), with scores.
    /// Walks from the nearer end: O(log n + distance + count).
    pub fn ranked(&self, from: usize, to: usize) -> Vec<(&Member, f64)> {
        let Some(order) = &self.order else {
            return Vec::new();
        };
        let to = to.min(order.len());
        if from >= to {
            return Vec::new();
        }
        fn pick((k, m): &(u64, Member)) -> (&Member, f64) {
            (m, score_of(*k))
        }
        if from <= order.len() - to {
            order.iter().skip(from).take(to - from).map(pick).collect()
        } else {
            let mut v: Vec<_> = order
                .iter()
                .rev()
                .skip(order.len() - to)
                .take(to - from)
                .map(pick)
                .collect();
            v.reverse();
            v
        }
    }

    /// A sorted set member's rank (0 = lowest score). O(rank): the order
    /// index is a B-tree without subtree counts.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        let order = self.order.as_ref()?;
        Some(
            order
                .range(..(order_key(score), Member::probe(member)))
                .count(),
        )
    }

    /// Sorted set members whose score lies within `lo..hi`, ascending (use
    /// `.rev()` for descending), with their scores. O(log n + returned).
    pub fn by_score(
        &self,
        lo: Bound<f64>,
        hi: Bound<f64>,
    ) -> impl DoubleEndedIterator<Item = (&Member, f64)> + '_ {
        // Keys are whole u64s, so "after score s" is "from key(s) + 1".
        let start = match lo {
            Bound::Unbounded => 0,
            Bound::Included(s) => order_key(s),
            Bound::Excluded(s) => order_key(s).saturating_add(1),
        };
        let end = match hi {
            Bound::Unbounded => u64::MAX,
            Bound::Included(s) => order_key(s),
            Bound::Excluded(s) => order_key(s).saturating_sub(1),
        };
        let range = match &self.order {
            Some(order) if start <= end && !order.is_empty() => {
                let from = Bound::Included((start, Member::probe(&[])));
                let to = match end.checked_add(1) {
                    Some(e) => Bound::Excluded((e, Member::probe(&[]))),
                    None => Bound::Unbounded,
                };
                Some(order.range((from, to)))
            }
            _ => None,
        };
        range.into_iter().flatten().map(|(k, m)| (m, score_of(*k)))
    }

    /// Sorted set members within the lexicographic range `lo..hi`, with
    /// their scores, in index order (`rev`: reversed): what ZRANGEBYLEX
    /// means when every member has the same score (then O(log n +
    /// returned)). With mixed scores Redis leaves the result unspecified;
    /// this gives what Redis gives for a small set: the run of members
    /// that starts at the first one (from the end for `rev`) on the near
    /// side of the range and ends before the first one past it, and
    /// nothing if the set's last member is below the minimum or its first
    /// above the maximum.
    pub fn by_lex(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>, rev: bool) -> Vec<(&Member, f64)> {
        let Some(order) = &self.order else {
            return Vec::new();
        };
        let (Some((first_k, first)), Some((last_k, last))) = (order.first(), order.last()) else {
            return Vec::new();
        };
        let above = |m: &[u8]| match lo {
            Bound::Unbounded => true,
            Bound::Included(l) => m >= l,
            Bound::Excluded(l) => m > l,
        };
        let below = |m: &[u8]| match hi {
            Bound::Unbounded => true,
            Bound::Included(h) => m <= h,
            Bound::Excluded(h) => m < h,
        };
        let empty = match (lo, hi) {
            (Bound::Included(l), Bound::Included(h)) => l > h,
            (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => {
                l >= h
            }
            _ => false,
        };
        if empty || !above(last.bytes()) || !below(first.bytes()) {
            return Vec::new();
        }
        fn pick((k, m): &(u64, Member)) -> (&Member, f64) {
            (m, score_of(*k))
        }
        if first_k == last_k {
            // One score: the index is in member order; seek the range.
            let k = *first_k;
            let from = match lo {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(l) => Bound::Included((k, Member::probe(l))),
                Bound::Excluded(l) => Bound::Excluded((k, Member::probe(l))),
            };
            let to = match hi {
                Bound::Unbounded => Bound::Unbounded,
                Bound::Included(h) => Bound::Included((k, Member::probe(h))),
                Bound::Excluded(h) => Bound::Excluded((k, Member::probe(h))),
            };
            let hits = order.range((from, to));
            return if rev {
                hits.rev().map(pick).collect()
            } else {
                hits.map(pick).collect()
            };
        }
        if rev {
            order
                .iter()
                .rev()
                .skip_while(|(_, m)| !below(m.bytes()))
                .take_while(|(_, m)| above(m.bytes()))
                .map(pick)
                .collect()
        } else {
            order
                .iter()
                .skip_while(|(_, m)| !above(m.bytes()))
                .take_while(|(_, m)| below(m.bytes()))
                .map(pick)
                .collect()
        }
    }

    /// Removes up to `count` members from the low (`min`) or high end, in
    /// pop order, with their scores (a pooled member's bytes stay valid in
    /// the returned [`Member`] for the reply).
    pub fn pop_scored(&mut self, count: usize, min: bool) -> Vec<(Member, f64)> {
        let mut out = Vec::new();
        while out.len() < count {
            let Some(order) = self.order.as_mut() else {
                break;
            };
            let Some((k, m)) = (if min {
                order.pop_first()
            } else {
                order.pop_last()
            }) else {
                break;
            };
            self.payload -= m.cost();
            self.remove(m.bytes());
            out.push((m, score_of(k)));
        }
        out
    }

    /// The CAS unique of the table's last write, 0 if it has had none
    /// since its head item was stored. Writes do not rewrite the head
    /// item, so this, not the head's, is the hash's or set's CAS.
    pub fn cas(&self) -> u64 {
        self.cas
    }

    pub(crate) fn set_cas(&mut self, cas: u64) {
        self.cas = cas;
    }

    /// How many writes the dict has had.
    pub(crate) fn writes(&self) -> u64 {
        self.writes
    }

    /// Bytes the dict holds, as charged to the store's limit: its heap
    /// bytes and its elements' pool slots.
    pub(crate) fn bytes(&self) -> Charge {
        if let Some(stream) = &self.stream {
            return Charge {
                bytes: self.payload + stream.len() * STREAM_ENTRY_BYTES,
                pool: self.pooled,
            };
        }
        if self.entries.capacity() == 0 {
            return Charge::default();
        }
        let order = self.order.as_ref().map_or(0, |o| o.len() * ORDER_BYTES);
        Charge {
            bytes: self.payload + self.entries.capacity() * SLOT_BYTES + order,
            pool: self.pooled,
        }
    }

    pub(super) fn charge(&mut self, c: Charge) {
        self.payload += c.bytes;
        self.pooled += c.pool;
    }

    pub(super) fn uncharge(&mut self, c: Charge) {
        self.payload -= c.bytes;
        self.pooled -= c.pool;
    }

    /// What [`bytes`](Self::bytes) can grow by when up to
    /// `entries` new entries holding `bytes` bytes in all (fields plus
    /// values) go in: their allocations plus, if they do not fit the
    /// table's capacity, a table that doubles. Not a strict bound: a table
    /// whose free slots are used up by removed entries' tombstones may
    /// also grow when an insert fits its capacity (the store settles that
    /// after the write; see `Store::update_dict`).
    pub(crate) fn growth_bound(&self, entries: usize, bytes: usize) -> usize {
        if self.stream.is_some() {
            // One allocation (or slot) per entry, and its tree entry.
            return bytes + entries * (32 + STREAM_ENTRY_BYTES);
        }
        // Two allocations per entry, each at most 23 bytes (or 32) over;
        // a sorted set's order index copies the member once more.
        let payload = match self.order {
            None => bytes + entries * 64,
            Some(_) => 2 * bytes + entries * (96 + ORDER_BYTES),
        };
        let needed = self.len() + entries;
        let cap = self.entries.capacity();
        let table = if needed > cap {
            // The table grows to the power-of-two bucket count that holds
            // at least one more entry at 7/8 load (4 buckets at least):
            // below twice this.
            (2 * needed.max(cap + 1)).next_power_of_two().max(4) * SLOT_BYTES
        } else {
            0
        };
        payload + table
    }
}

/// What a dict (or an element) is charged: `bytes` in all, `pool` of
/// them in pool slots (the rest is on the heap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Charge {
    pub bytes: usize,
    pub pool: usize,
}

impl Charge {
    pub(super) fn of(e: &Element) -> Charge {
        Charge {
            bytes: e.cost(),
            pool: e.pool_bytes(),
        }
    }

    /// The heap part.
    pub fn heap(self) -> usize {
        self.bytes - self.pool
    }
}

impl std::ops::Add for Charge {
    type Output = Charge;
    fn add(self, o: Charge) -> Charge {
        Charge {
            bytes: self.bytes + o.bytes,
            pool: self.pool + o.pool,
        }
    }
}

/// A hash, set or sorted set being written: what
/// [`Store::update_dict`](super::Store::update_dict) hands the writer.
/// Reads and removals go to the [`Dict`]; [`insert`](Self::insert) also
/// places large elements in pool memory.
pub struct DictEdit<'a, 'p> {
    dict: &'a mut Dict,
    placer: &'a mut Placer<'p>,
}

impl<'a, 'p> DictEdit<'a, 'p> {
    /// Writes to `dict`, placing large elements with `placer`.
    pub(crate) fn new(dict: &'a mut Dict, placer: &'a mut Placer<'p>) -> Self {
        DictEdit { dict, placer }
    }

    /// Sets `field` to `value`; true if the field is new (see
    /// [`Dict::insert`]). Elements of at least the store's
    /// `pooled_element_min` bytes go to pool memory.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        if self.dict.is_sorted() {
            return self.dict.insert(field, value);
        }
        let p = &mut *self.placer;
        self.dict.insert_with(field, value, &mut |b| p.place(b))
    }

    /// Sets a sorted set member's score (see [`Dict::set_score`]); a new
    /// member of at least the store's `pooled_element_min` bytes goes to
    /// pool memory, shared by the table and the order index.
    pub fn set_score(&mut self, member: &[u8], score: f64) -> bool {
        let p = &mut *self.placer;
        self.dict.set_score_with(member, score, &mut |b| p.place(b))
    }
}

impl<'p> DictEdit<'_, 'p> {
    /// The dict and the placer, apart.
    pub(super) fn parts(&mut self) -> (&mut Dict, &mut Placer<'p>) {
        (self.dict, self.placer)
    }
}

impl std::ops::Deref for DictEdit<'_, '_> {
    type Target = Dict;
    fn deref(&self) -> &Dict {
        self.dict
    }
}

impl std::ops::DerefMut for DictEdit<'_, '_> {
    fn deref_mut(&mut self) -> &mut Dict {
        self.dict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_and_charge() {
        let mut d = Dict::default();
        assert_eq!(d.bytes().bytes, 0);
        assert!(d.insert(b"f", b"v"));
        assert!(!d.insert(b"f", b"value two"));
        assert_eq!(d.get(b"f"), Some(&b"value two"[..]));
        let bound = Dict::default().growth_bound(1, 10);
        assert!(d.bytes().bytes <= bound, "{} > {bound}", d.bytes().bytes);
        assert!(d.remove(b"f"));
        assert!(!d.remove(b"f"));
        assert_eq!(d.payload, 0);
    }

    #[test]
    fn growth_bound_covers_any_batch() {
        let mut d = Dict::default();
        for round in 0..50usize {
            let batch: Vec<Vec<u8>> = (0..round % 7 + 1)
                .map(|i| format!("field-{round}-{i}-{}", "x".repeat(round)).into_bytes())
                .collect();
            let bytes = batch.iter().map(|f| 2 * f.len()).sum();
            let (before, bound) = (d.bytes().bytes, d.growth_bound(batch.len(), bytes));
            for f in &batch {
                d.insert(f, f);
            }
            assert!(d.bytes().bytes - before <= bound, "round {round}");
        }
    }

    #[test]
    fn scan_returns_survivors_despite_removals() {
        let mut d = Dict::default();
        for i in 0..100u32 {
            d.insert(&i.to_be_bytes(), b"");
        }
        let mut seen = std::collections::HashSet::new();
        let mut cursor = 0;
        let mut removed = 0u32;
        loop {
            cursor = d.scan(cursor, 7, |k, _| {
                seen.insert(k.to_vec());
            });
            // Remove entries both visited and not yet visited.
            for victim in [removed * 3 % 100, 99 - removed * 5 % 100] {
                if d.remove(&victim.to_be_bytes()) {
                    seen.remove(victim.to_be_bytes().as_slice());
                }
            }
            removed += 1;
            if cursor == 0 {
                break;
            }
        }
        for (k, _) in d.iter() {
            assert!(seen.contains(k.bytes()), "survivor {k:?} missed");
        }
    }

    #[test]
    fn scores_order_like_total_cmp() {
        let scores = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
        ];
        for w in scores.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{w:?}");
        }
        for s in scores {
            assert_eq!(score_of(order_key(s)).to_bits(), s.to_bits());
        }
    }

    #[test]
    fn sorted_set_ranks_pops_and_charges() {
        let mut z = Dict::sorted();
        let mut want: Vec<(f64, Vec<u8>)> = Vec::new();
        for i in 0..500u32 {
            let m = format!("m{}", i * 7919 % 500).into_bytes();
            let s = f64::from(i % 37) - 10.0;
            let grow = z.growth_bound(1, m.len());
            let before = z.bytes().bytes;
            assert!(z.set_score(&m, s));
            assert!(z.bytes().bytes - before <= grow);
            want.push((s, m));
        }
        // Rescore some, remove some.
        for (i, (s, m)) in want.iter_mut().enumerate().filter(|(i, _)| i % 5 == 0) {
            *s = -(i as f64);
            assert!(!z.set_score(m, *s));
        }
        let gone: Vec<Vec<u8>> = want.iter().step_by(7).map(|(_, m)| m.clone()).collect();
        for m in &gone {
            assert!(z.remove_scored(m));
        }
        want.retain(|(_, m)| !gone.contains(m));
        want.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let all: Vec<(Vec<u8>, f64)> = z
            .ranked(0, z.len())
            .iter()
            .map(|(m, s)| (m.to_vec(), *s))
            .collect();
        let expect: Vec<(Vec<u8>, f64)> = want.iter().map(|(s, m)| (m.clone(), *s)).collect();
        assert_eq!(all, expect);
        assert_eq!(
            z.ranked(400, 410)
                .into_iter()
                .map(|(m, s)| (m.bytes(), s))
                .collect::<Vec<_>>(),
            expect[400..410]
                .iter()
                .map(|(m, s)| (&m[..], *s))
                .collect::<Vec<_>>()
        );
        let top = z.pop_scored(3, false);
        assert_eq!(top[0].0[..], expect[expect.len() - 1].0[..]);
        let low = z.pop_scored(2, true);
        assert_eq!(low[1].0[..], expect[1].0[..]);
        assert_eq!(z.len(), expect.len() - 5);
        let rest: Vec<Vec<u8>> = z
            .ranked(0, z.len())
            .iter()
            .map(|(m, _)| m.to_vec())
            .collect();
        for m in &rest {
            assert!(z.remove_scored(m));
        }
        assert_eq!(z.payload, 0, "every byte uncharged");
        // The order index of small members costs what it did before it
        // could share pooled ones.
        assert_eq!(std::mem::size_of::<Member>(), 16);
        assert_eq!(ORDER_BYTES, 48);
    }

    #[test]
    fn score_ranges_and_ranks() {
        let mut z = Dict::sorted();
        for (m, sc) in [
            ("a", 1.0),
            ("b", 2.0),
            ("c", 2.0),
            ("d", 3.5),
            ("e", f64::INFINITY),
        ] {
            z.set_score(m.as_bytes(), sc);
        }
        let names = |it: Vec<(&Member, f64)>| -> String {
            it.iter()
                .map(|(m, _)| std::str::from_utf8(m).unwrap())
                .collect()
        };
        use Bound::*;
        assert_eq!(
            names(z.by_score(Included(2.0), Included(3.5)).collect()),
            "bcd"
        );
        assert_eq!(names(z.by_score(Excluded(2.0), Unbounded).collect()), "de");
        assert_eq!(names(z.by_score(Unbounded, Excluded(2.0)).collect()), "a");
        assert_eq!(
            names(z.by_score(Included(3.0), Included(1.0)).collect()),
            ""
        );
        assert_eq!(
            names(z.by_score(Unbounded, Unbounded).rev().collect()),
            "edcba"
        );
        assert_eq!(
            names(z.by_score(Included(f64::INFINITY), Unbounded).collect()),
            "e"
        );
        assert_eq!(z.rank(b"a"), Some(0));
        assert_eq!(z.rank(b"c"), Some(2));
        assert_eq!(z.rank(b"e"), Some(4));
        assert_eq!(z.rank(b"zz"), None);
    }
}
