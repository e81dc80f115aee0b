//! A Redis stream: a [`Dict`] in stream form, whose body is a B-tree of
//! entries by ID.
//!
//! ```text
//!  Dict { stream: StreamBody { entries: BTreeMap<StreamId, fields>,
//!                              meta: { last_id, max_deleted, entries_added } } }
//! ```
//!
//! - **O(log n) per entry, appends cheapest.** XADD, XDEL and trims touch
//!   one entry; ranges cost O(log n + returned). IDs are stored inline
//!   (16 bytes, compared without a pointer chase), which is what makes an
//!   append cheap: an earlier form keyed a hash table and an ordered
//!   index by heap copies of the ID and spent its time in their lookups.
//! - **One body type for every keyed collection.** As a [`Dict`], a stream
//!   gets the store's accounting, eviction, COPY, RENAME and MEMORY USAGE
//!   unchanged.
//! - **An entry's fields are one element**: every field and value as a
//!   4-byte little-endian length and its bytes ([`encode_fields`]). An
//!   entry of at least the store's `pooled_element_min` bytes goes to pool
//!   memory like a large hash value, and replies reference its large
//!   fields and values (sub-slices of the slot) instead of copying them.
//! - **Costs:** [`STREAM_ENTRY_BYTES`](super::dict::STREAM_ENTRY_BYTES)
//!   per entry besides its fields' allocation. Redis packs small entries
//!   tighter (listpacks sharing field names).
//! - **Consumer groups** live beside the entries (`stream_groups.rs`),
//!   charged to the same limit.
//! - **Not built:** blocking reads (`XREAD BLOCK`): granola-kv has no
//!   blocking commands.

use super::dict::{Charge, Dict, DictEdit};
use super::element::Element;
use super::stream_groups::Groups;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Bound, Range};

/// A stream entry's ID: milliseconds, then a sequence number within them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// Milliseconds (Unix time for generated IDs).
    pub ms: u64,
    /// Sequence number within `ms`.
    pub seq: u64,
}

impl StreamId {
    /// `0-0`, below every entry.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The ID as the table stores it (sorts like the ID).
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    /// The ID of stored bytes (None unless 16 bytes).
    pub fn from_bytes(b: &[u8]) -> Option<StreamId> {
        let b: &[u8; 16] = b.try_into().ok()?;
        let (ms, seq) = b.split_at(8);
        Some(StreamId {
            ms: u64::from_be_bytes(ms.try_into().ok()?),
            seq: u64::from_be_bytes(seq.try_into().ok()?),
        })
    }

    /// The next ID (None after [`MAX`](Self::MAX)).
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_add(1)?,
                seq: 0,
            }),
        }
    }

    /// The previous ID (None before [`MIN`](Self::MIN)).
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId { ms: self.ms, seq }),
            None => Some(StreamId {
                ms: self.ms.checked_sub(1)?,
                seq: u64::MAX,
            }),
        }
    }
}

impl StreamId {
    /// `ms-seq` into `buf` (no allocation); the written part.
    pub fn format(self, buf: &mut [u8; 41]) -> &[u8] {
        let mut ms = itoa::Buffer::new();
        let mut seq = itoa::Buffer::new();
        let (ms, seq) = (
            ms.format(self.ms).as_bytes(),
            seq.format(self.seq).as_bytes(),
        );
        let n = ms.len() + 1 + seq.len();
        buf[..ms.len()].copy_from_slice(ms);
        buf[ms.len()] = b'-';
        buf[ms.len() + 1..n].copy_from_slice(seq);
        &buf[..n]
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// What a stream keeps besides its entries (what `XINFO STREAM` shows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamMeta {
    /// The largest ID ever added: the next must be greater, even after
    /// that entry is deleted.
    pub last_id: StreamId,
    /// The largest ID deleted (by XDEL or a trim).
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
}

/// One entry, borrowed from its stream.
#[derive(Clone, Copy)]
pub struct StreamEntry<'a> {
    /// Its ID.
    pub id: StreamId,
    /// Its fields and values, encoded (see [`encode_fields`]).
    pub fields: &'a Element,
}

impl StreamEntry<'_> {
    /// Where each field and value lies in `fields`, in order.
    pub fn parts(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        field_ranges(self.fields.bytes())
    }

    /// Number of fields and values (twice the pairs).
    pub fn part_count(&self) -> usize {
        self.parts().count()
    }
}

/// Fields and values as one entry: each as a 4-byte little-endian length
/// and its bytes. None if one is longer than 4 GiB.
pub fn encode_fields<'a>(parts: impl Iterator<Item = &'a [u8]> + Clone) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(parts.clone().map(|p| p.len() + 4).sum());
    for p in parts {
        out.extend_from_slice(&u32::try_from(p.len()).ok()?.to_le_bytes());
        out.extend_from_slice(p);
    }
    Some(out)
}

/// The parts of an entry [`encode_fields`] wrote, as ranges of `blob`
/// (stops at the first length that runs past the end: none does).
pub fn field_ranges(blob: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let len = blob.get(at..at + 4)?;
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        let start = at + 4;
        let end = start.checked_add(len).filter(|&e| e <= blob.len())?;
        at = end;
        Some(start..end)
    })
}

/// A stream's entries, bookkeeping and consumer groups.
#[derive(Clone, Default)]
pub(crate) struct StreamBody {
    entries: BTreeMap<StreamId, Element>,
    meta: StreamMeta,
    groups: Groups,
}

impl StreamBody {
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Bytes of the entries' fields ([`Element::cost`]) and of the groups.
    pub(super) fn payload(&self) -> usize {
        self.entries.values().map(Element::cost).sum::<usize>() + self.groups.cost()
    }

    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut Element> {
        self.entries.values_mut()
    }
}

impl Dict {
    /// An empty stream.
    pub fn stream() -> Dict {
        let mut d = Dict::default();
        d.stream = Some(Box::default());
        d
    }

    /// True for a stream.
    pub fn is_stream(&self) -> bool {
        self.stream.is_some()
    }

    /// A stream's last ID, deletions and count of additions (None for
    /// other kinds).
    pub fn stream_meta(&self) -> Option<StreamMeta> {
        self.stream.as_ref().map(|s| s.meta)
    }

    /// Entries with IDs within `lo..hi`, ascending (`.rev()` for
    /// descending). O(log n + returned).
    pub fn stream_range(
        &self,
        lo: Bound<StreamId>,
        hi: Bound<StreamId>,
    ) -> impl DoubleEndedIterator<Item = StreamEntry<'_>> + '_ {
        let empty = match (lo, hi) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                // BTreeMap::range panics on an inverted or empty-exclusive range.
                a > b
                    || (a == b
                        && !(matches!(lo, Bound::Included(_)) && matches!(hi, Bound::Included(_))))
            }
            _ => false,
        };
        let range = match &self.stream {
            Some(s) if !empty => Some(s.entries.range((lo, hi))),
            _ => None,
        };
        range
            .into_iter()
            .flatten()
            .map(|(&id, fields)| StreamEntry { id, fields })
    }

    /// The first entry.
    pub fn stream_first(&self) -> Option<StreamEntry<'_>> {
        let (&id, fields) = self.stream.as_ref()?.entries.first_key_value()?;
        Some(StreamEntry { id, fields })
    }

    /// The last entry.
    pub fn stream_last(&self) -> Option<StreamEntry<'_>> {
        let (&id, fields) = self.stream.as_ref()?.entries.last_key_value()?;
        Some(StreamEntry { id, fields })
    }

    /// Deletes entry `id` (XDEL); true if it was there. O(log n). The
    /// largest ID so deleted is remembered ([`StreamMeta::max_deleted`]).
    pub fn stream_remove(&mut self, id: StreamId) -> bool {
        let removed = self.stream_take(id);
        if let (true, Some(s)) = (removed, self.stream.as_deref_mut()) {
            s.meta.max_deleted = s.meta.max_deleted.max(id);
        }
        removed
    }

    /// Deletes entry `id` without marking it deleted: a trim's removal,
    /// which Redis 7.0 does not count as a tombstone (a gap only XDEL
    /// makes), so the groups' lag stays known after one.
    fn stream_take(&mut self, id: StreamId) -> bool {
        let Some(s) = self.stream.as_deref_mut() else {
            return false;
        };
        let Some(e) = s.entries.remove(&id) else {
            return false;
        };
        self.uncharge(Charge::of(&e));
        self.writes += 1;
        true
    }

    /// Deletes entries from the oldest while `drop(id, entries left)` says
    /// so, at most `limit`; how many it deleted.
    pub fn stream_trim(
        &mut self,
        limit: usize,
        mut drop: impl FnMut(StreamId, usize) -> bool,
    ) -> usize {
        let mut removed = 0;
        while removed < limit {
            let Some(first) = self.stream_first().map(|e| e.id) else {
                break;
            };
            if !drop(first, self.len()) {
                break;
            }
            self.stream_take(first);
            removed += 1;
        }
        removed
    }

    /// True if a deleted entry (XDEL's tombstone) may lie at or after
    /// `from`: the largest deleted ID is not below `from` and not below
    /// the first entry. Only the largest is remembered, so this is the
    /// test Redis makes, not an exact one.
    fn stream_tombstone_from(&self, from: StreamId) -> bool {
        let Some(meta) = self.stream_meta() else {
            return false;
        };
        let first = self.stream_first().map_or(StreamId::MIN, |e| e.id);
        !self.is_empty()
            && meta.max_deleted != StreamId::MIN
            && first <= meta.max_deleted
            && from <= meta.max_deleted
    }

    /// How many entries were added up to and including `id`, where that
    /// can be known without counting: for an untouched stream, its end,
    /// or an ID at or before its first entry with no deletion after it.
    /// None when not knowable (an ID within the entries, or past the end).
    /// Arithmetic wraps as Redis's unsigned counters do.
    pub fn stream_reads_up_to(&self, id: StreamId) -> Option<u64> {
        let meta = self.stream_meta().unwrap_or_default();
        if meta.entries_added == 0 {
            return Some(0);
        }
        let len = self.len() as u64;
        if len == 0 && id <= meta.last_id {
            return Some(meta.entries_added);
        }
        if id == meta.last_id {
            return Some(meta.entries_added);
        }
        if id > meta.last_id {
            return None;
        }
        let first = self.stream_first().map_or(StreamId::MIN, |e| e.id);
        if meta.max_deleted == StreamId::MIN || meta.max_deleted < first {
            let before_first = meta.entries_added.wrapping_sub(len);
            if id < first {
                return Some(before_first);
            }
            if id == first {
                return Some(before_first.wrapping_add(1));
            }
        }
        None
    }

    /// A group's entries read after it was delivered entry `id` (above
    /// its last delivered ID), given what it had read before: one more
    /// while no deletion could lie ahead, else what can be known at `id`
    /// ([`stream_reads_up_to`](Self::stream_reads_up_to)).
    pub fn stream_read_after(&self, read: Option<u64>, id: StreamId) -> Option<u64> {
        let added = self.stream_meta().unwrap_or_default().entries_added;
        match read {
            Some(n) if !self.stream_tombstone_from(id) => Some(n.wrapping_add(1)),
            _ if added != 0 => self.stream_reads_up_to(id),
            other => other,
        }
    }

    /// The lag of a group (entries not yet delivered to it) that has read
    /// `read` entries up to `last_delivered`: None when a deletion ahead
    /// of it, or an unknown count it cannot be worked out from, makes it
    /// unknowable. Signed: a count set by hand (ENTRIESREAD) may exceed
    /// the entries added.
    pub fn stream_lag(&self, last_delivered: StreamId, read: Option<u64>) -> Option<i64> {
        let added = self.stream_meta().unwrap_or_default().entries_added;
        if added == 0 {
            return Some(0);
        }
        let read = match read {
            Some(n) if !self.stream_tombstone_from(last_delivered) => n,
            _ => self.stream_reads_up_to(last_delivered)?,
        };
        Some((added as i64).wrapping_sub(read as i64))
    }

    /// The stream's consumer groups (None for other kinds).
    pub fn stream_groups(&self) -> Option<&Groups> {
        self.stream.as_ref().map(|s| &s.groups)
    }

    /// Runs `f` on the stream's consumer groups (None for other kinds),
    /// charging what they grow by; counts as a write.
    pub fn edit_stream_groups<R>(&mut self, f: impl FnOnce(&mut Groups) -> R) -> Option<R> {
        let s = self.stream.as_deref_mut()?;
        let before = s.groups.cost();
        let r = f(&mut s.groups);
        let after = s.groups.cost();
        let heap = |bytes| Charge { bytes, pool: 0 };
        if after >= before {
            self.charge(heap(after - before));
        } else {
            self.uncharge(heap(before - after));
        }
        self.writes += 1;
        Some(r)
    }

    /// The entry `id`, if the stream has it.
    pub fn stream_get(&self, id: StreamId) -> Option<StreamEntry<'_>> {
        let fields = self.stream.as_ref()?.entries.get(&id)?;
        Some(StreamEntry { id, fields })
    }

    /// Adds an entry to a stream not yet stored (RESTORE builds one so):
    /// `fields` from [`encode_fields`], kept on the heap (storing the
    /// stream places large entries in pool memory), the bookkeeping moved
    /// as [`DictEdit::stream_append`] moves it. An entry already at `id`
    /// is replaced.
    pub fn stream_push(&mut self, id: StreamId, fields: Vec<u8>) {
        let Some(s) = self.stream.as_deref_mut() else {
            return;
        };
        let e = Element::Heap(fields.into_boxed_slice());
        let charge = Charge::of(&e);
        let old = s.entries.insert(id, e);
        s.meta.last_id = s.meta.last_id.max(id);
        s.meta.entries_added += 1;
        self.charge(charge);
        if let Some(old) = old {
            self.uncharge(Charge::of(&old));
        }
        self.writes += 1;
    }

    /// Sets a stream's last ID and bookkeeping (XSETID); the caller checks
    /// that `last_id` is not below the last entry's.
    pub fn set_stream_meta(&mut self, meta: StreamMeta) {
        if let Some(s) = self.stream.as_deref_mut() {
            s.meta = meta;
            self.writes += 1;
        }
    }
}

impl DictEdit<'_, '_> {
    /// Appends an entry to a stream: `id` above its last ID (the caller
    /// checks), `fields` from [`encode_fields`]. Fields of at least the
    /// store's `pooled_element_min` bytes go to pool memory.
    pub fn stream_append(&mut self, id: StreamId, fields: Vec<u8>) {
        let (dict, placer) = self.parts();
        if dict.stream.is_none() {
            return;
        }
        let e = if fields.len() < placer.min {
            // The encoded bytes themselves, not a copy of them.
            Element::Heap(fields.into_boxed_slice())
        } else {
            placer.place(&fields)
        };
        dict.charge(Charge::of(&e));
        dict.writes += 1;
        let s = dict.stream.as_deref_mut().expect("a stream");
        let old = s.entries.insert(id, e);
        s.meta.last_id = s.meta.last_id.max(id);
        s.meta.entries_added += 1;
        if let Some(old) = old {
            // Not reached (IDs only grow), but keep the charge right.
            dict.uncharge(Charge::of(&old));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    fn add(d: &mut Dict, i: StreamId, parts: &[&[u8]]) {
        let e = Element::heap(&encode_fields(parts.iter().copied()).unwrap());
        d.charge(Charge::of(&e));
        let s = d.stream.as_deref_mut().unwrap();
        s.entries.insert(i, e);
        s.meta.last_id = s.meta.last_id.max(i);
        s.meta.entries_added += 1;
    }

    #[test]
    fn ids_sort_as_bytes_and_step() {
        let ids = [id(0, 1), id(1, 0), id(1, 255), id(1, 256), id(u64::MAX, 0)];
        for w in ids.windows(2) {
            assert!(w[0] < w[1]);
            assert!(w[0].to_bytes() < w[1].to_bytes());
            assert_eq!(StreamId::from_bytes(&w[0].to_bytes()), Some(w[0]));
        }
        assert_eq!(id(3, u64::MAX).next(), Some(id(4, 0)));
        assert_eq!(id(4, 0).prev(), Some(id(3, u64::MAX)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::MIN.prev(), None);
        assert_eq!(id(5, 7).to_string(), "5-7");
        assert_eq!(
            StreamId::MAX.format(&mut [0; 41]),
            StreamId::MAX.to_string().as_bytes()
        );
    }

    #[test]
    fn fields_round_trip() {
        let parts: [&[u8]; 4] = [b"f", b"", b"value", &[0xff; 300]];
        let blob = encode_fields(parts.iter().copied()).unwrap();
        let got: Vec<&[u8]> = field_ranges(&blob).map(|r| &blob[r]).collect();
        assert_eq!(got, parts);
        // A truncated blob yields its whole parts only.
        assert_eq!(field_ranges(&blob[..blob.len() - 1]).count(), 3);
    }

    #[test]
    fn lag_is_known_only_without_a_deletion_ahead() {
        let mut d = Dict::stream();
        // Nothing ever added: every count and lag is 0.
        assert_eq!(d.stream_reads_up_to(id(9, 0)), Some(0));
        assert_eq!(d.stream_lag(StreamId::MIN, None), Some(0));
        for ms in 1..=5 {
            add(&mut d, id(ms, 0), &[b"n", b"v"]);
        }
        // Before the first entry, at it, at the end; within or past: unknown.
        assert_eq!(d.stream_reads_up_to(StreamId::MIN), Some(0));
        assert_eq!(d.stream_reads_up_to(id(1, 0)), Some(1));
        assert_eq!(d.stream_reads_up_to(id(5, 0)), Some(5));
        assert_eq!(d.stream_reads_up_to(id(3, 0)), None);
        assert_eq!(d.stream_reads_up_to(id(6, 0)), None);
        assert_eq!(d.stream_lag(StreamId::MIN, None), Some(5));
        assert_eq!(d.stream_lag(id(3, 0), None), None);
        assert_eq!(d.stream_lag(id(3, 0), Some(3)), Some(2));
        // A count set beyond the entries added: a negative lag.
        assert_eq!(d.stream_lag(id(1, 0), Some(9)), Some(-4));

        // A trim is no deletion: counts stay good.
        d.stream_trim(1, |_, _| true);
        assert_eq!(d.stream_meta().unwrap().max_deleted, StreamId::MIN);
        assert_eq!(d.stream_lag(id(3, 0), Some(3)), Some(2));
        assert_eq!(d.stream_reads_up_to(id(1, 0)), Some(1));
        assert_eq!(d.stream_read_after(Some(3), id(4, 0)), Some(4));

        // A deletion at 4-0: behind 5-0 it does not matter, ahead of 3-0
        // it makes the lag and the next count unknowable.
        assert!(d.stream_remove(id(4, 0)));
        assert_eq!(d.stream_lag(id(5, 0), Some(5)), Some(0));
        assert_eq!(d.stream_lag(id(3, 0), Some(3)), None);
        assert_eq!(d.stream_read_after(Some(2), id(3, 0)), None);
        // Read to the end: known again.
        assert_eq!(d.stream_read_after(None, id(5, 0)), Some(5));
        assert_eq!(d.stream_read_after(Some(4), id(5, 0)), Some(5));

        // Once the first entry is past the deletion, it no longer counts.
        d.stream_trim(usize::MAX, |i, _| i < id(5, 0));
        assert_eq!(d.stream_lag(id(3, 0), None), Some(1));
        // An emptied stream: every ID up to the last has read everything.
        assert!(d.stream_remove(id(5, 0)));
        assert_eq!(d.stream_lag(StreamId::MIN, None), Some(0));
        assert_eq!(d.stream_reads_up_to(id(9, 0)), None);
    }

    #[test]
    fn ranges_deletes_and_trims() {
        let mut d = Dict::stream();
        for ms in 1..=10 {
            add(&mut d, id(ms, 0), &[b"n", ms.to_string().as_bytes()]);
        }
        let ids = |it: &mut dyn Iterator<Item = StreamEntry<'_>>| -> Vec<u64> {
            it.map(|e| e.id.ms).collect()
        };
        let all = ids(&mut d.stream_range(Bound::Unbounded, Bound::Unbounded));
        assert_eq!(all, (1..=10).collect::<Vec<_>>());
        let mid = ids(&mut d.stream_range(Bound::Excluded(id(3, 0)), Bound::Included(id(6, 0))));
        assert_eq!(mid, vec![4, 5, 6]);
        let back = ids(&mut d
            .stream_range(Bound::Included(id(8, 0)), Bound::Unbounded)
            .rev());
        assert_eq!(back, vec![10, 9, 8]);
        // Inverted and empty ranges are empty, not a panic.
        assert!(d
            .stream_range(Bound::Included(id(6, 0)), Bound::Included(id(3, 0)))
            .next()
            .is_none());
        assert!(d
            .stream_range(Bound::Excluded(id(6, 0)), Bound::Excluded(id(6, 0)))
            .next()
            .is_none());
        assert_eq!(
            d.stream_range(Bound::Included(id(6, 0)), Bound::Included(id(6, 0)))
                .count(),
            1
        );

        assert!(d.stream_remove(id(5, 0)));
        assert!(!d.stream_remove(id(5, 0)));
        assert_eq!(d.len(), 9);
        assert_eq!(d.stream_meta().unwrap().max_deleted, id(5, 0));
        // Trim to 3 entries, at most 4 removals: 9 - 4 = 5 remain.
        assert_eq!(d.stream_trim(4, |_, left| left > 3), 4);
        assert_eq!(d.stream_first().unwrap().id, id(6, 0));
        assert_eq!(d.stream_trim(usize::MAX, |i, _| i < id(8, 0)), 2);
        assert_eq!(d.len(), 3);
        let e = d.stream_last().unwrap();
        let parts: Vec<&[u8]> = e.parts().map(|r| &e.fields.bytes()[r]).collect();
        assert_eq!(parts, [&b"n"[..], b"10"]);
        let meta = d.stream_meta().unwrap();
        assert_eq!((meta.last_id, meta.entries_added), (id(10, 0), 10));
        // Deleting everything leaves an empty stream that still remembers.
        d.stream_trim(usize::MAX, |_, _| true);
        assert!(d.is_empty() && d.is_stream());
        assert_eq!(d.stream_meta().unwrap().last_id, id(10, 0));
        assert_eq!(d.bytes(), Charge::default());
    }
}
