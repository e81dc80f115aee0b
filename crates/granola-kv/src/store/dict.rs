//! The body of a hash or a set: a hash table on the heap.
//!
//! ```text
//!  index entry ──► head item [header (kind hash|set) | key | body id u64]
//!                       │ id
//!  Store::bodies[id] ──► Body::Dict(Dict { entries: IndexMap<field, value> })
//! ```
//!
//! - **O(1) per field.** HSET, HDEL, SADD, SREM, HGET, SISMEMBER touch one
//!   entry, whatever the size; nothing is rebuilt. (Hashes and sets used
//!   to be lists with a type marker, rewritten whole on every write: an
//!   HSET on a 100k-field hash copied 100k fields.)
//! - **On the heap, copied into replies.** Fields and members are usually
//!   small (below the size where a reference beats a copy), so they are
//!   boxed byte strings and replies copy them; strings and list elements
//!   stay zero-copy in pool memory. The heap bytes are charged to the
//!   store's limit like item slots: every allocation at its malloc size
//!   ([`heap_cost`]) plus the table's per-slot bytes ([`SLOT_BYTES`]) for
//!   its capacity, so `-m` bounds hashes and sets too.
//! - **Insertion-ordered with O(1) removal** (`IndexMap::swap_remove`: the
//!   last entry takes the removed one's place), which also gives O(1)
//!   random members (SPOP, SRANDMEMBER) and cursors by position.
//! - **Scan cursors count down** from the end: a cursor is the number of
//!   positions not yet visited. Removal only ever moves the *last* entry
//!   into the hole, and the last entry has already been visited, so an
//!   entry present for the whole scan is returned at least once, as
//!   HSCAN/SSCAN promise (entries added during a scan may be missed).
//! - Like a list body, a dict is behind its own mutex, taken by writers
//!   (who hold the key's shard lock) and briefly by readers; eviction
//!   skips a body that is locked.

use indexmap::IndexMap;
use std::collections::hash_map::RandomState;

/// Heap bytes per table slot: the entry (hash + two boxed slices) and its
/// index in the hash table, with the table's spare control bytes.
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

/// A hash's fields and values, or a set's members (empty values).
#[derive(Default, Clone)]
pub struct Dict {
    entries: IndexMap<Box<[u8]>, Box<[u8]>, RandomState>,
    /// Heap bytes of the keys and values (at [`heap_cost`]).
    payload: usize,
    /// Bumped by every write (the store gives a changed dict a new CAS).
    writes: u64,
    /// The CAS unique of the last write (0: none since the head item's).
    cas: u64,
}

impl std::fmt::Debug for Dict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dict").field("len", &self.len()).finish()
    }
}

impl Dict {
    /// Entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.entries.get(field).map(|v| &v[..])
    }

    /// True if `field` is there.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.entries.contains_key(field)
    }

    /// Sets `field` to `value`; true if the field is new.
    pub fn insert(&mut self, field: &[u8], value: &[u8]) -> bool {
        self.writes += 1;
        match self.entries.get_mut(field) {
            Some(v) => {
                if v.len() != value.len() {
                    self.payload = self.payload - heap_cost(v.len()) + heap_cost(value.len());
                    *v = value.into();
                } else {
                    v.copy_from_slice(value);
                }
                false
            }
            None => {
                self.payload += heap_cost(field.len()) + heap_cost(value.len());
                self.entries.insert(field.into(), value.into());
                true
            }
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.entries.swap_remove_entry(field) {
            Some((k, v)) => {
                self.writes += 1;
                self.payload -= heap_cost(k.len()) + heap_cost(v.len());
                true
            }
            None => false,
        }
    }

    /// Keeps the entries whose field `keep` accepts.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        let mut freed = 0;
        self.entries.retain(|k, v| {
            let keep = keep(k);
            if !keep {
                freed += heap_cost(k.len()) + heap_cost(v.len());
            }
            keep
        });
        if freed > 0 {
            self.payload -= freed;
            self.writes += 1;
        }
    }

    /// Removes the entry at position `i` (see [`Dict::at`]); its field.
    pub fn remove_at(&mut self, i: usize) -> Option<Box<[u8]>> {
        let (k, v) = self.entries.swap_remove_index(i)?;
        self.writes += 1;
        self.payload -= heap_cost(k.len()) + heap_cost(v.len());
        Some(k)
    }

    /// The entry at position `i` (`0..len`; positions change on removal).
    pub fn at(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.entries.get_index(i).map(|(k, v)| (&k[..], &v[..]))
    }

    /// Every entry, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.entries.iter().map(|(k, v)| (&k[..], &v[..]))
    }

    /// One step of a scan: visits up to `count` entries before position
    /// `cursor` (0 starts a scan), calling `f` on each; returns the next
    /// cursor (0: done). See the module docs for why it counts down.
    pub fn scan<'d>(
        &'d self,
        cursor: u64,
        count: usize,
        mut f: impl FnMut(&'d [u8], &'d [u8]),
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

    /// Heap bytes the dict holds, as charged to the store's limit.
    pub(crate) fn heap_bytes(&self) -> usize {
        if self.entries.capacity() == 0 {
            return 0;
        }
        self.payload + self.entries.capacity() * SLOT_BYTES
    }

    /// An upper bound on how much [`heap_bytes`](Self::heap_bytes) can grow
    /// when up to `entries` new entries holding `bytes` bytes in all (fields
    /// plus values) go in: their allocations plus a table that doubles.
    pub(crate) fn growth_bound(&self, entries: usize, bytes: usize) -> usize {
        // Two allocations per entry, each at most 23 bytes (or 32) over.
        let payload = bytes + entries * 64;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_and_charge() {
        let mut d = Dict::default();
        assert_eq!(d.heap_bytes(), 0);
        assert!(d.insert(b"f", b"v"));
        assert!(!d.insert(b"f", b"value two"));
        assert_eq!(d.get(b"f"), Some(&b"value two"[..]));
        let bound = Dict::default().growth_bound(1, 10);
        assert!(d.heap_bytes() <= bound, "{} > {bound}", d.heap_bytes());
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
            let (before, bound) = (d.heap_bytes(), d.growth_bound(batch.len(), bytes));
            for f in &batch {
                d.insert(f, f);
            }
            assert!(d.heap_bytes() - before <= bound, "round {round}");
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
            assert!(seen.contains(k), "survivor {k:?} missed");
        }
    }
}
