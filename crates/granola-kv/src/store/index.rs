//! The index: key → one `u64` entry naming the item's pool slot.
//!
//! ```text
//!  entry (AtomicU64, 0 = empty)
//!   63         62     61        60 .. 32             31 .. 0
//!   | OCCUPIED | REF | EXPIRES | tag (29 hash bits) | slot handle (granola::Pool) |
//!
//!  shard s (of `shards`, picked by the hash's top bits)
//!   lock: Mutex       writers of this shard only; readers never take it
//!   level: AtomicU32  the shard has 2^level buckets
//!   version           odd while the shard is growing (a seqlock for misses)
//!   segs[0..=MAX_LEVEL]  bucket arrays, never moved or freed until drop:
//!     segs[0]: bucket 0, segs[k]: buckets 2^(k-1) .. 2^k
//!   bucket = 8 entries = one 64 B cache line
//! ```
//!
//! **Two choices.** A key may live in bucket `t1 & (2^level - 1)` or
//! `t2 & (2^level - 1)` (`t1`, `t2`: two independent 29-bit hashes). Writers
//! put a new key in the first bucket with a free entry; the entry's tag is
//! the hash that chose its bucket, so a reader compares `t1` in the first
//! bucket and `t2` in the second, and growth knows where every entry goes.
//! Two-choice 8-way buckets fill to well over 80 % before both buckets of a
//! key are full.
//!
//! **Cuckoo step.** When both buckets of a new key are full, the writer
//! first tries to move one of their 16 entries to that entry's other bucket
//! (one displacement, no chains); this keeps the table ~90 % full before it
//! grows, where first-fit alone grows at 30–50 % on large tables.
//!
//! **Growth.** When no entry can move either, the shard doubles
//! (under its lock): it allocates the next segment, moves every entry whose
//! tag has bit `level` set from bucket `b` to `b + 2^level`, then publishes
//! the new level. Moved entries (growth and cuckoo moves alike) get their
//! CLOCK reference bit set: a move can carry an entry from behind the
//! eviction hand to ahead of it, and without the bit the hand would evict
//! a key written a moment ago in the same turn that cleared it (one more
//! turn for the moved entries is the price; moves are rare). Segments are only ever added, so a reader never touches
//! freed index memory and no reclamation scheme is needed. The index never
//! shrinks (documented limitation).
//!
//! **Lock-free reads.** A reader loads the entry, takes its own reference
//! with [`granola::Pool::try_acquire`], checks the key in the item, then
//! re-loads the entry: unchanged (ignoring REF) means the slot it holds is
//! the one the index owned at that moment — the slot cannot have been
//! recycled while the index owned it, and it cannot be recycled now that
//! the reader owns a reference — so the item was current at the re-load. Any
//! change (replace, delete, a growth move) sends the reader back to the
//! start. A miss is trusted only if the shard's version shows that no
//! growth or cuckoo move overlapped the probe; every other write is a single atomic store of one
//! entry, so a probe that finds nothing linearises at the moment it read the
//! entry that would have held the key.
//!
//! The index owns one reference per stored item as a raw pool handle
//! ([`granola::Pool::into_handle`]); writers release it when they replace or
//! remove the entry.

use super::item::Item;
use granola::Pool;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

pub(crate) const OCCUPIED: u64 = 1 << 63;
pub(crate) const REF: u64 = 1 << 62;
/// The item has an expiry time: active expiry reads only these items,
/// and the rest of an index walk touches nothing but the buckets.
pub(crate) const EXPIRES: u64 = 1 << 61;
const TAG_SHIFT: u32 = 32;
const TAG_BITS: u32 = 29;
const TAG_MASK: u32 = (1 << TAG_BITS) - 1;
/// Entries per bucket (one cache line).
pub(crate) const WAYS: usize = 8;
/// Largest level: 2^24 buckets per shard (128 Mi entries; with 512 shards
/// far beyond any memory this machine class has). Must stay below TAG_BITS.
const MAX_LEVEL: usize = 24;
/// Bytes of one bucket.
pub(crate) const BUCKET_BYTES: usize = std::mem::size_of::<Bucket>();

/// Eight entries, one cache line.
#[repr(align(64))]
#[derive(Default)]
pub(crate) struct Bucket(pub(crate) [AtomicU64; WAYS]);

/// A key's hashes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hashed {
    pub shard: usize,
    /// Both bucket tags in one word (`t1` low, `t2` high), written by one
    /// store: the probes read them together, and a wide load of two
    /// narrower stores misses store-to-load forwarding (a stall per
    /// lookup).
    tags: u64,
}

impl Hashed {
    /// The first bucket's tag.
    #[inline(always)]
    pub(crate) fn t1(&self) -> u32 {
        self.tags as u32
    }

    /// The second bucket's tag.
    #[inline(always)]
    pub(crate) fn t2(&self) -> u32 {
        (self.tags >> 32) as u32
    }

    /// Both tags, the first bucket's first.
    #[inline(always)]
    pub(crate) fn tags(&self) -> [u32; 2] {
        [self.t1(), self.t2()]
    }
}

/// A seeded 64-bit hash of a key (8-byte words, multiply-rotate, a final
/// murmur3 mix). Not collision-resistant against an attacker who can learn
/// the seed; the seed is random per store.
#[inline]
pub(crate) fn hash(seed: u64, key: &[u8], shards: usize) -> Hashed {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(K);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(a)).wrapping_mul(K).rotate_left(31);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // The last word is loaded straight from the key, never copied to
        // the stack and read back whole: a wide load of narrower stores
        // misses store-to-load forwarding (a stall of a dozen cycles on
        // every lookup of a key whose length is not a multiple of 8).
        let w = if let Some(last) = key.last_chunk::<8>() {
            // The key's last 8 bytes, overlapping its last full word.
            u64::from_le_bytes(*last)
        } else if let (Some(lo), Some(hi)) = (key.first_chunk::<4>(), key.last_chunk::<4>()) {
            u64::from(u32::from_le_bytes(*lo)) | u64::from(u32::from_le_bytes(*hi)) << 32
        } else {
            let n = key.len();
            u64::from(key[0]) | u64::from(key[n / 2]) << 8 | u64::from(key[n - 1]) << 16
        };
        h = (h ^ w).wrapping_mul(K).rotate_left(31);
    }
    h = fmix(h);
    let h2 = fmix(h ^ K);
    Hashed {
        shard: (((h >> 32) * shards as u64) >> 32) as usize,
        tags: u64::from(h as u32 & TAG_MASK) | u64::from(h2 as u32 & TAG_MASK) << 32,
    }
}

#[inline]
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[inline]
pub(crate) fn make_entry(handle: u32, tag: u32) -> u64 {
    OCCUPIED | (tag as u64) << TAG_SHIFT | handle as u64
}

#[inline]
pub(crate) fn entry_handle(e: u64) -> u32 {
    e as u32
}

#[inline]
pub(crate) fn entry_tag(e: u64) -> u32 {
    (e >> TAG_SHIFT) as u32 & TAG_MASK
}

/// Occupied and carrying this tag?
#[inline]
fn matches(e: u64, tag: u32) -> bool {
    e & OCCUPIED != 0 && entry_tag(e) == tag
}

/// Same entry, ignoring the CLOCK bit?
#[inline]
pub(crate) fn same(a: u64, b: u64) -> bool {
    (a ^ b) & !REF == 0
}

/// Where an entry sits in its shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub bucket: usize,
    pub way: usize,
}

/// An entry found by a writer: its position, value and item.
pub(crate) struct Found {
    pub pos: Pos,
    pub entry: u64,
    pub item: Item,
}

/// Result of a lock-free probe.
pub(crate) enum Probe {
    Hit(Item, Pos, u64),
    Miss,
}

/// One shard of the index.
pub(crate) struct Shard {
    lock: Mutex<()>,
    level: AtomicU32,
    version: AtomicU32,
    segs: [OnceLock<Box<[Bucket]>>; MAX_LEVEL + 1],
    /// Successful writes under this shard's lock (the store's `sets`).
    /// Only the lock holder writes it, with a plain load and store: no
    /// locked instruction on the write path, and no line shared by all
    /// writers.
    writes: AtomicU64,
}

/// Proof that the caller holds a shard's writer lock.
pub(crate) struct Locked<'a> {
    pub shard: &'a Shard,
    pub index: usize,
    _guard: MutexGuard<'a, ()>,
}

impl Shard {
    pub(crate) fn new() -> Shard {
        let s = Shard {
            lock: Mutex::new(()),
            level: AtomicU32::new(0),
            version: AtomicU32::new(0),
            segs: std::array::from_fn(|_| OnceLock::new()),
            writes: AtomicU64::new(0),
        };
        let _ = s.segs[0].set(Box::new([Bucket::default()]));
        s
    }

    /// Successful writes counted under this shard's lock.
    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// Buckets currently in use.
    #[inline]
    pub(crate) fn buckets(&self) -> usize {
        1 << self.level.load(Ordering::Acquire)
    }

    /// Bucket `b` (< buckets()).
    #[inline]
    pub(crate) fn bucket(&self, b: usize) -> &Bucket {
        let seg = (usize::BITS - b.leading_zeros()) as usize;
        let off = if seg == 0 { 0 } else { b - (1 << (seg - 1)) };
        match self.segs[seg].get() {
            Some(s) => &s[off],
            None => unreachable!("segment {seg} is published with its level"),
        }
    }

    pub(crate) fn lock(&self, index: usize) -> Locked<'_> {
        Locked {
            shard: self,
            index,
            _guard: self.lock.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    pub(crate) fn try_lock(&self, index: usize) -> Option<Locked<'_>> {
        let guard = match self.lock.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        Some(Locked {
            shard: self,
            index,
            _guard: guard,
        })
    }

    /// Lock-free lookup (see the module docs). The caller marks the CLOCK
    /// bit.
    #[inline]
    pub(crate) fn probe(&self, pool: &Pool, h: &Hashed, key: &[u8]) -> Probe {
        'retry: loop {
            let v1 = self.version.load(Ordering::Acquire);
            let mask = (1usize << self.level.load(Ordering::Acquire)) - 1;
            for tag in h.tags() {
                let b = tag as usize & mask;
                for (way, cell) in self.bucket(b).0.iter().enumerate() {
                    let e = cell.load(Ordering::Acquire);
                    if !matches(e, tag) {
                        continue;
                    }
                    let item = pool.try_acquire(entry_handle(e)).and_then(Item::parse);
                    // Whatever we got, it is the entry's item only if the
                    // entry still holds the same handle.
                    if !same(cell.load(Ordering::Acquire), e) {
                        continue 'retry;
                    }
                    match item {
                        Some(item) if granola::eq_short(item.key(), key) => {
                            return Probe::Hit(item, Pos { bucket: b, way }, e)
                        }
                        Some(_) => {} // another key with the same tag
                        // The slot was free or being written when we tried,
                        // yet the entry names it again: replaced and reused
                        // in between (ABA). Start over.
                        None => continue 'retry,
                    }
                }
                if h.t1() == h.t2() {
                    break;
                }
            }
            fence(Ordering::Acquire);
            let v2 = self.version.load(Ordering::Relaxed);
            if v1 == v2 && v1 & 1 == 0 {
                return Probe::Miss;
            }
            std::hint::spin_loop();
        }
    }

    /// Sets the CLOCK bit of the entry at `pos` (read as `e`), if clear.
    #[inline]
    pub(crate) fn touch_ref(&self, pos: Pos, e: u64) {
        if e & REF == 0 {
            // fetch_or, not a store: a store could resurrect an entry a
            // writer just replaced. On an entry that changed meanwhile the
            // bit is a harmless hint (and ignored on empty entries).
            self.bucket(pos.bucket).0[pos.way].fetch_or(REF, Ordering::Relaxed);
        }
    }
}

impl Locked<'_> {
    /// Counts a successful write (the store's `sets`).
    #[inline]
    pub(crate) fn count_write(&self) {
        let n = self.shard.writes.load(Ordering::Relaxed) + 1;
        self.shard.writes.store(n, Ordering::Relaxed);
    }

    /// Finds `key` (under the lock, so entries change only by us, apart
    /// from REF bits).
    #[inline(always)]
    pub(crate) fn find(&self, pool: &Pool, h: &Hashed, key: &[u8]) -> Option<Found> {
        let mask = self.shard.buckets() - 1;
        for tag in h.tags() {
            let b = tag as usize & mask;
            for (way, cell) in self.shard.bucket(b).0.iter().enumerate() {
                let e = cell.load(Ordering::Acquire);
                if !matches(e, tag) {
                    continue;
                }
                if let Some(item) = pool.try_acquire(entry_handle(e)).and_then(Item::parse) {
                    if granola::eq_short(item.key(), key) {
                        return Some(Found {
                            pos: Pos { bucket: b, way },
                            entry: e,
                            item,
                        });
                    }
                }
            }
        }
        None
    }

    /// The entry at `pos`.
    #[inline]
    pub(crate) fn cell(&self, pos: Pos) -> &AtomicU64 {
        &self.shard.bucket(pos.bucket).0[pos.way]
    }

    /// A free entry for a new key, with the tag to store there; `None` if
    /// both buckets are full (grow, then ask again).
    pub(crate) fn free_slot(&self, h: &Hashed) -> Option<(Pos, u32)> {
        let mask = self.shard.buckets() - 1;
        for tag in h.tags() {
            let b = tag as usize & mask;
            for (way, cell) in self.shard.bucket(b).0.iter().enumerate() {
                if cell.load(Ordering::Relaxed) & OCCUPIED == 0 {
                    return Some((Pos { bucket: b, way }, tag));
                }
            }
        }
        None
    }

    /// Makes room for a key whose two buckets are full by moving one entry
    /// of those buckets to its own other bucket (one cuckoo step), under
    /// the seqlock like a growth. Returns the freed entry and the tag to
    /// store there, or `None` if no entry can move (grow then).
    pub(crate) fn displace(
        &self,
        pool: &Pool,
        h: &Hashed,
        rehash: impl Fn(&[u8]) -> Hashed,
    ) -> Option<(Pos, u32)> {
        let sh = self.shard;
        let mask = sh.buckets() - 1;
        for tag in h.tags() {
            let b = tag as usize & mask;
            for (way, cell) in sh.bucket(b).0.iter().enumerate() {
                let e = cell.load(Ordering::Relaxed);
                let Some(item) = pool.try_acquire(entry_handle(e)).and_then(Item::parse) else {
                    continue;
                };
                let xh = rehash(item.key());
                let alt = if entry_tag(e) == xh.t1() {
                    xh.t2()
                } else {
                    xh.t1()
                };
                let ab = alt as usize & mask;
                if ab == b {
                    continue;
                }
                let Some(free) = sh
                    .bucket(ab)
                    .0
                    .iter()
                    .position(|c| c.load(Ordering::Relaxed) & OCCUPIED == 0)
                else {
                    continue;
                };
                // Copy first, clear second (Release): a reader that sees the
                // cleared entry also sees the copy; one that misses both
                // sees the odd/changed version and retries.
                let v = sh.version.load(Ordering::Relaxed);
                sh.version.store(v.wrapping_add(1), Ordering::Relaxed);
                fence(Ordering::Release);
                sh.bucket(ab).0[free].store(
                    make_entry(entry_handle(e), alt) | (e & EXPIRES) | REF,
                    Ordering::Release,
                );
                cell.store(0, Ordering::Release);
                sh.version.store(v.wrapping_add(2), Ordering::Release);
                return Some((Pos { bucket: b, way }, tag));
            }
        }
        None
    }

    /// Bytes the next growth would allocate; `None` at the maximum level.
    pub(crate) fn growth_bytes(&self) -> Option<usize> {
        let level = self.shard.level.load(Ordering::Relaxed) as usize;
        (level < MAX_LEVEL).then(|| (1usize << level) * BUCKET_BYTES)
    }

    /// Doubles the shard's buckets (see the module docs). The caller has
    /// accounted [`growth_bytes`](Self::growth_bytes).
    pub(crate) fn grow(&self) {
        let sh = self.shard;
        let level = sh.level.load(Ordering::Relaxed);
        let n = 1usize << level;
        let seg: Box<[Bucket]> = (0..n).map(|_| Bucket::default()).collect();
        assert!(
            sh.segs[level as usize + 1].set(seg).is_ok(),
            "a segment is added once"
        );
        // Seqlock writer: odd version, Release fence, moves, even version.
        let v = sh.version.load(Ordering::Relaxed);
        sh.version.store(v.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for b in 0..n {
            let mut next_way = 0;
            for cell in sh.bucket(b).0.iter() {
                let e = cell.load(Ordering::Relaxed);
                if e & OCCUPIED == 0 || entry_tag(e) as usize & n == 0 {
                    continue;
                }
                // Only bucket b feeds bucket b + n, so there is room.
                sh.bucket(b + n).0[next_way].store(e | REF, Ordering::Release);
                next_way += 1;
                cell.store(0, Ordering::Release);
            }
        }
        sh.level.store(level + 1, Ordering::Release);
        sh.version.store(v.wrapping_add(2), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_addressing_covers_every_segment() {
        let s = Shard::new();
        for _ in 0..4 {
            s.lock(0).grow();
        }
        assert_eq!(s.buckets(), 16);
        let mut seen = std::collections::HashSet::new();
        for b in 0..16 {
            assert!(seen.insert(s.bucket(b) as *const Bucket));
        }
    }

    #[test]
    fn every_byte_of_every_length_moves_the_hash() {
        // The last partial word is loaded in pieces (overlapping, or three
        // single bytes): each byte must still count, wherever it is.
        let key: Vec<u8> = (1..=40).collect();
        for n in 1..=key.len() {
            let base = hash(9, &key[..n], 1 << 20);
            for at in 0..n {
                let mut k = key[..n].to_vec();
                k[at] ^= 0x5a;
                let h = hash(9, &k, 1 << 20);
                assert!(
                    (h.shard, h.tags) != (base.shard, base.tags),
                    "length {n}, byte {at}"
                );
            }
        }
    }

    #[test]
    fn hash_spreads_and_tags_differ() {
        let h = hash(1, b"user:1", 512);
        assert!(h.shard < 512);
        assert_ne!(h.t1(), h.t2());
        let mut shards = [0u32; 16];
        for i in 0..16_000u32 {
            shards[hash(7, &i.to_le_bytes(), 16).shard] += 1;
        }
        assert!(
            shards.iter().all(|&c| (800..1200).contains(&c)),
            "{shards:?}"
        );
    }
}
