//! The body of a list: a deque of immutable chunks in pool memory.
//!
//! ```text
//!  index entry ──► head item [header | key | list id u64]     (item.rs)
//!                       │ id
//!  Store::bodies[id] ──► ListBody { chunks: VecDeque<Chunk>, len }
//!                                     │
//!   chunk slot: | 3 | 0 | key_len u16 | count u32 | list id u64 | key | end[count] u32 | elements |
//!               └─ a Chunk views elements lo..hi of it (pops move lo/hi, no copy)
//! ```
//!
//! - **Chunks are never written after they are built.** A push rebuilds at
//!   most the end chunk it lands in (at most [`CHUNK_BYTES`] of payload)
//!   and starts new chunks past that, so a push costs O(1) amortized
//!   whatever the list's length; a pop only moves the chunk's live range.
//!   Every element handed out is a sub-[`Buf`] of its chunk, so a reply in
//!   flight keeps exactly the bytes it was given, whatever writers do next:
//!   no reply ever sees a torn list.
//! - **The body is mutable, under its own mutex**, taken by writers (who
//!   already hold the key's shard lock) and, briefly, by readers collecting
//!   the `Buf`s they reply with. A writer holds it across the allocations
//!   of a push, and eviction skips a list whose body is locked, so a list
//!   is never evicted half-modified.
//! - **Chunks live in item memory**: each chunk slot has a pool handle,
//!   owned by the body, and is charged to the store's limit like an item.
//!   A segment drain that meets a chunk reads the owner's key and list id
//!   from the chunk and evicts that list.

use granola::{Buf, BufMut, Pool};
use std::collections::VecDeque;

/// Payload (end table + element bytes) a chunk is filled up to. An element
/// larger than this gets a chunk of its own.
pub(crate) const CHUNK_BYTES: usize = 2048;
/// Bytes of a chunk's own header, before the key.
const CHUNK_HEADER: usize = 16;
const KIND_CHUNK: u8 = 3;

/// One chunk: a frozen slot and the live range of its elements.
struct Chunk {
    buf: Buf,
    handle: u32,
    lo: u32,
    hi: u32,
}

impl Chunk {
    fn live(&self) -> usize {
        (self.hi - self.lo) as usize
    }

    fn count(&self) -> usize {
        u32_at(&self.buf, 4) as usize
    }

    fn table(&self) -> usize {
        CHUNK_HEADER + u16_at(&self.buf, 2) as usize
    }

    /// Byte span of element `i` (0..count) inside the slot.
    fn span(&self, i: usize) -> (usize, usize) {
        let t = self.table();
        let data = t + 4 * self.count();
        let start = if i == 0 {
            0
        } else {
            u32_at(&self.buf, t + 4 * (i - 1)) as usize
        };
        (data + start, data + u32_at(&self.buf, t + 4 * i) as usize)
    }

    /// Live element `k` (0..live()) as a sub-Buf of the slot.
    fn get(&self, k: usize) -> Buf {
        let (s, e) = self.span(self.lo as usize + k);
        self.buf.slice(s..e)
    }

    fn bytes(&self, k: usize) -> &[u8] {
        let (s, e) = self.span(self.lo as usize + k);
        &self.buf[s..e]
    }

    /// Payload of the live elements (end table + bytes), as a rebuild
    /// would lay them out.
    fn live_payload(&self) -> usize {
        if self.live() == 0 {
            return 0;
        }
        let (s, _) = self.span(self.lo as usize);
        let (_, e) = self.span(self.hi as usize - 1);
        4 * self.live() + (e - s)
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

/// Slot bytes a chunk of `payload` bytes for `key` needs.
fn chunk_len(key: &[u8], payload: usize) -> usize {
    CHUNK_HEADER + key.len() + payload
}

/// Splits `elems` into runs that each fill one chunk (greedy, in order).
fn pack(elems: &[&[u8]]) -> Vec<(usize, usize, usize)> {
    let mut runs = Vec::new();
    let (mut start, mut payload) = (0, 0);
    for (i, e) in elems.iter().enumerate() {
        let add = 4 + e.len();
        if i > start && payload + add > CHUNK_BYTES {
            runs.push((start, i, payload));
            (start, payload) = (i, 0);
        }
        payload += add;
    }
    if start < elems.len() {
        runs.push((start, elems.len(), payload));
    }
    runs
}

/// Where a list body gets its chunk slots: the store passes an allocator
/// that evicts to make room.
pub(crate) type Alloc<'a> = dyn FnMut(usize) -> Option<BufMut> + 'a;

/// The owner (list id, key) written in a chunk slot; `None` if `slot` is
/// not a chunk. Checks every length (the slot may have been reused).
pub(crate) fn chunk_owner(slot: &[u8]) -> Option<(u64, &[u8])> {
    if slot.len() < CHUNK_HEADER || slot[0] != KIND_CHUNK {
        return None;
    }
    let key_len = u16_at(slot, 2) as usize;
    let key = slot.get(CHUNK_HEADER..CHUNK_HEADER + key_len)?;
    let mut id = [0u8; 8];
    id.copy_from_slice(&slot[8..16]);
    Some((u64::from_le_bytes(id), key))
}

/// A list's elements.
pub(crate) struct ListBody {
    pool: Pool,
    id: u64,
    chunks: VecDeque<Chunk>,
    len: usize,
    slot_bytes: usize,
}

impl Drop for ListBody {
    fn drop(&mut self) {
        for c in self.chunks.drain(..) {
            self.pool.release_handle(c.handle);
        }
    }
}

impl ListBody {
    /// An empty body for list `id`.
    pub(crate) fn new(pool: Pool, id: u64) -> ListBody {
        ListBody {
            pool,
            id,
            chunks: VecDeque::new(),
            len: 0,
            slot_bytes: 0,
        }
    }

    /// The list's id (what its head item and chunks carry).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Number of chunks.
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Pool slot bytes of the chunks (charged to the store's limit).
    pub(crate) fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Element `i` (0..len).
    pub(crate) fn get(&self, mut i: usize) -> Option<Buf> {
        for c in &self.chunks {
            if i < c.live() {
                return Some(c.get(i));
            }
            i -= c.live();
        }
        None
    }

    /// Elements `from..to` (clamped to the list), O(chunks skipped + k).
    pub(crate) fn range(&self, from: usize, to: usize) -> Vec<Buf> {
        let to = to.min(self.len);
        let mut out = Vec::with_capacity(to.saturating_sub(from));
        let mut skip = from;
        for c in &self.chunks {
            if out.len() >= to.saturating_sub(from) {
                break;
            }
            if skip >= c.live() {
                skip -= c.live();
                continue;
            }
            for k in skip..c.live() {
                if out.len() >= to - from {
                    break;
                }
                out.push(c.get(k));
            }
            skip = 0;
        }
        out
    }

    /// Slot bytes the push of `values` would add, before the chunk it
    /// replaces is released (what the caller reserves).
    pub(crate) fn push_cost(&self, key: &[u8], values: &[&[u8]], front: bool) -> usize {
        let (merge, _) = self.merge_plan(values, front);
        let mut seq: Vec<&[u8]> = Vec::new();
        self.sequence(values, front, merge, &mut seq);
        pack(&seq)
            .iter()
            .map(|&(_, _, p)| Pool::slot_size_for(chunk_len(key, p)))
            .sum()
    }

    /// Whether the end chunk is rebuilt with the new values (it has room
    /// for the first of them), and its payload.
    fn merge_plan(&self, values: &[&[u8]], front: bool) -> (bool, usize) {
        let end = if front {
            self.chunks.front()
        } else {
            self.chunks.back()
        };
        let Some(c) = end else {
            return (false, 0);
        };
        let first = if front { values.last() } else { values.first() };
        let add = first.map_or(0, |v| 4 + v.len());
        let p = c.live_payload();
        (p + add <= CHUNK_BYTES, p)
    }

    /// The elements the new chunks hold, in list order.
    fn sequence<'a>(
        &'a self,
        values: &[&'a [u8]],
        front: bool,
        merge: bool,
        out: &mut Vec<&'a [u8]>,
    ) {
        if front {
            out.extend(values.iter().rev());
            if merge {
                let c = &self.chunks[0];
                out.extend((0..c.live()).map(|k| c.bytes(k)));
            }
        } else {
            if merge {
                let c = &self.chunks[self.chunks.len() - 1];
                out.extend((0..c.live()).map(|k| c.bytes(k)));
            }
            out.extend(values.iter());
        }
    }

    /// Adds `values` at the back (RPUSH) or front (LPUSH: the last value
    /// ends up first). Returns the slot bytes released (the rebuilt end
    /// chunk), or `None` if a chunk could not be allocated (the list is
    /// unchanged).
    pub(crate) fn push(
        &mut self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
        alloc: &mut Alloc<'_>,
    ) -> Option<usize> {
        if values.is_empty() {
            return Some(0);
        }
        let (merge, _) = self.merge_plan(values, front);
        let mut seq: Vec<&[u8]> = Vec::new();
        self.sequence(values, front, merge, &mut seq);
        let built = build_chunks(&self.pool, self.id, key, &seq, alloc)?;
        let added: usize = built.iter().map(|c| self.pool.slot_size(&c.buf)).sum();
        let mut released = 0;
        if merge {
            let old = if front {
                self.chunks.pop_front()
            } else {
                self.chunks.pop_back()
            };
            if let Some(old) = old {
                released = self.drop_chunk(old);
            }
        }
        if front {
            for c in built.into_iter().rev() {
                self.chunks.push_front(c);
            }
        } else {
            self.chunks.extend(built);
        }
        self.len += values.len();
        self.slot_bytes += added;
        Some(released)
    }

    /// Removes up to `count` elements from the front (LPOP) or back
    /// (RPOP), in pop order, zero-copy. Returns them and the slot bytes
    /// released (emptied chunks).
    pub(crate) fn pop(&mut self, count: usize, front: bool) -> (Vec<Buf>, usize) {
        let n = count.min(self.len);
        let mut out = Vec::with_capacity(n);
        let mut released = 0;
        while out.len() < n {
            let c = if front {
                self.chunks.front_mut()
            } else {
                self.chunks.back_mut()
            };
            let Some(c) = c else { break };
            if front {
                out.push(c.get(0));
                c.lo += 1;
            } else {
                out.push(c.get(c.live() - 1));
                c.hi -= 1;
            }
            if c.live() == 0 {
                let empty = if front {
                    self.chunks.pop_front()
                } else {
                    self.chunks.pop_back()
                };
                if let Some(empty) = empty {
                    released += self.drop_chunk(empty);
                }
            }
        }
        self.len -= out.len();
        (out, released)
    }

    /// Replaces every element (for the edits that rewrite a list: LSET,
    /// LREM, LTRIM, LINSERT, hash and set writes). Returns the slot bytes
    /// released, or `None` (unchanged) if chunks could not be allocated.
    pub(crate) fn replace(
        &mut self,
        key: &[u8],
        elems: &[&[u8]],
        alloc: &mut Alloc<'_>,
    ) -> Option<usize> {
        let built = build_chunks(&self.pool, self.id, key, elems, alloc)?;
        let released = self.slot_bytes;
        for c in std::mem::take(&mut self.chunks) {
            self.pool.release_handle(c.handle);
        }
        self.slot_bytes = built.iter().map(|c| self.pool.slot_size(&c.buf)).sum();
        self.chunks = built.into();
        self.len = elems.len();
        Some(released)
    }

    fn drop_chunk(&mut self, c: Chunk) -> usize {
        let size = self.pool.slot_size(&c.buf);
        self.slot_bytes -= size;
        self.pool.release_handle(c.handle);
        size
    }
}

/// Slot bytes the chunks for `elems` need.
pub(crate) fn chunks_cost(key: &[u8], elems: &[&[u8]]) -> usize {
    pack(elems)
        .iter()
        .map(|&(_, _, p)| Pool::slot_size_for(chunk_len(key, p)))
        .sum()
}

/// Writes `elems` into new chunk slots. `None` (nothing kept) if one
/// cannot be allocated.
fn build_chunks(
    pool: &Pool,
    id: u64,
    key: &[u8],
    elems: &[&[u8]],
    alloc: &mut Alloc<'_>,
) -> Option<Vec<Chunk>> {
    let mut out = Vec::new();
    for (start, end, payload) in pack(elems) {
        let run = &elems[start..end];
        let mut w = alloc(chunk_len(key, payload))?;
        w.extend_from_slice(&[KIND_CHUNK, 0]);
        w.extend_from_slice(&(key.len() as u16).to_le_bytes());
        w.extend_from_slice(&(run.len() as u32).to_le_bytes());
        w.extend_from_slice(&id.to_le_bytes());
        w.extend_from_slice(key);
        let mut at = 0u32;
        for e in run {
            at += e.len() as u32;
            w.extend_from_slice(&at.to_le_bytes());
        }
        for e in run {
            w.extend_from_slice(e);
        }
        let buf = w.freeze();
        let Ok(handle) = pool.into_handle(buf.clone()) else {
            unreachable!("a fresh slot has no handle yet");
        };
        out.push(Chunk {
            buf,
            handle,
            lo: 0,
            hi: run.len() as u32,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn body(pool: &Pool) -> ListBody {
        ListBody::new(pool.clone(), 7)
    }

    fn all(b: &ListBody) -> Vec<Vec<u8>> {
        b.range(0, usize::MAX).iter().map(|e| e.to_vec()).collect()
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, Vec<Vec<u8>>),
        Pop(bool, usize),
        Replace(Vec<Vec<u8>>),
    }

    fn op() -> impl Strategy<Value = Op> {
        let elem = prop::collection::vec(any::<u8>(), 0..300);
        prop_oneof![
            4 => (any::<bool>(), prop::collection::vec(elem.clone(), 0..8)).prop_map(|(f, v)| Op::Push(f, v)),
            3 => (any::<bool>(), 0usize..10).prop_map(|(f, n)| Op::Pop(f, n)),
            1 => prop::collection::vec(elem, 0..20).prop_map(Op::Replace),
        ]
    }

    proptest! {
        /// The body behaves like a VecDeque, and every element handed out
        /// stays intact whatever happens to the list afterwards.
        #[test]
        fn matches_a_deque(ops in prop::collection::vec(op(), 1..60)) {
            // Room for a segment in each size class a chunk can take.
            let pool = Pool::with_capacity(128 << 20).unwrap();
            let mut b = body(&pool);
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            let mut alloc = |n: usize| pool.alloc(n);
            let mut held: Vec<(Buf, Vec<u8>)> = Vec::new();
            for op in ops {
                match op {
                    Op::Push(front, vals) => {
                        let refs: Vec<&[u8]> = vals.iter().map(Vec::as_slice).collect();
                        b.push(b"key", &refs, front, &mut alloc).unwrap();
                        for v in vals {
                            if front { model.push_front(v) } else { model.push_back(v) }
                        }
                    }
                    Op::Pop(front, n) => {
                        let (got, _) = b.pop(n, front);
                        for g in got {
                            let want = if front { model.pop_front() } else { model.pop_back() };
                            prop_assert_eq!(Some(g.to_vec()), want.clone());
                            held.push((g, want.unwrap()));
                        }
                    }
                    Op::Replace(vals) => {
                        let refs: Vec<&[u8]> = vals.iter().map(Vec::as_slice).collect();
                        b.replace(b"key", &refs, &mut alloc).unwrap();
                        model = vals.into();
                    }
                }
                prop_assert_eq!(b.len(), model.len());
                prop_assert_eq!(all(&b), model.iter().cloned().collect::<Vec<_>>());
                if let Some(m) = model.get(model.len() / 2) {
                    prop_assert_eq!(b.get(model.len() / 2).unwrap().to_vec(), m.clone());
                }
                for (buf, want) in &held {
                    prop_assert_eq!(&buf[..], &want[..]);
                }
            }
            let charged: usize = b.chunks.iter().map(|c| pool.slot_size(&c.buf)).sum();
            prop_assert_eq!(b.slot_bytes(), charged);
        }
    }

    #[test]
    fn chunks_name_their_owner() {
        let pool = Pool::with_capacity(4 << 20).unwrap();
        let mut b = body(&pool);
        let mut alloc = |n: usize| pool.alloc(n);
        b.push(b"mylist", &[b"a", b"b"], false, &mut alloc).unwrap();
        let c = &b.chunks[0];
        assert_eq!(chunk_owner(&c.buf), Some((7, &b"mylist"[..])));
        assert_eq!(chunk_owner(b"\x01garbage-garbage-garbage"), None);
        assert_eq!(chunk_owner(b"\x03\x00\xff\xff0123456789ab"), None);
    }

    #[test]
    fn a_push_rebuilds_at_most_one_chunk() {
        let pool = Pool::with_capacity(64 << 20).unwrap();
        let mut b = body(&pool);
        let mut alloc = |n: usize| pool.alloc(n);
        for i in 0..20_000u32 {
            let v = i.to_le_bytes();
            let released = b.push(b"k", &[&v], i % 2 == 0, &mut alloc).unwrap();
            assert!(released <= Pool::slot_size_for(chunk_len(b"k", CHUNK_BYTES)));
        }
        assert_eq!(b.len(), 20_000);
        // Chunks stay close to full: 8 B per element in 2 KiB chunks.
        assert!(b.chunks.len() <= 20_000 * 8 / (CHUNK_BYTES / 2));
    }
}
