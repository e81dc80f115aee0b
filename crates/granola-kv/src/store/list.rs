//! The body of a list: a deque of chunks in pool memory (lists too small
//! for it are one item; see `item.rs`).
//!
//! ```text
//!  index entry ──► head item [header | key | list id u64]     (item.rs)
//!                       │ id
//!  Store::bodies[id] ──► ListBody { chunks: VecDeque<Chunk>, len }
//!                                     │
//!   chunk slot: | 3 | 0 | key_len u16 | 0 u32 | list id u64 | key | element bytes ... |
//!   Chunk { slot, spans: VecDeque<(start, end)> }   the live elements, in list order
//! ```
//!
//! - **Pushes append in place.** The chunk at each end of a list may be
//!   *open*: a pool slot still owned for writing (a `BufMut`) that nobody
//!   else can see. A push at that end writes the element after the bytes
//!   already there and records its span (an LPUSH pushes its span at the
//!   front: order lives in `spans`, not in the bytes). A full open chunk is
//!   sealed (frozen) and a new one opened, so a push costs O(its bytes)
//!   whatever the list's length. A pop only drops a span.
//! - **Sealed chunks are never written again.** A reader that needs an
//!   element of an open chunk seals it first, and every element handed out
//!   is a sub-[`Buf`] of a sealed chunk, so a reply in flight keeps exactly
//!   the bytes it was given, whatever writers do next: no reply ever sees a
//!   torn list. (A pop from an open chunk copies the element out instead of
//!   sealing.) A push that finds its end chunk sealed, or full, but less
//!   than half live, copies those live elements into the new open chunk,
//!   so reads and pops between pushes cannot leave a trail of nearly empty
//!   chunks.
//! - **The body is mutable, under its own mutex**, taken by writers (who
//!   already hold the key's shard lock) and, briefly, by readers collecting
//!   the `Buf`s they reply with. A writer holds it across the allocations
//!   of a push, and eviction skips a list whose body is locked, so a list
//!   is never evicted half-modified.
//! - **Chunks live in item memory**, charged to the store's limit like
//!   items (slot bytes plus [`SPAN_BYTES`] per element for its span). A
//!   sealed chunk has a pool handle, so a segment drain that meets it reads
//!   the owner's key and list id from the chunk and evicts that list; an
//!   open chunk (at most two per list) is not listed by the drain, which
//!   waits for it like for any slot being written.

use granola::{Buf, BufMut, Pool};
use std::collections::VecDeque;

/// Element bytes a chunk holds; an element larger than this gets a
/// (sealed) chunk of its own.
pub(crate) const CHUNK_BYTES: usize = 2048;
/// Bytes charged per element for its span, kept on the heap.
pub(crate) const SPAN_BYTES: usize = 8;
/// Bytes of a chunk's own header, before the key.
const CHUNK_HEADER: usize = 16;
const KIND_CHUNK: u8 = 3;

/// One element of a list, borrowed while its body is locked (see
/// [`Item::list_visit`](super::Item::list_visit)), or from an inline
/// list's item.
pub struct ListElem<'a>(Elem<'a>);

enum Elem<'a> {
    /// Element `k` of a chunk.
    Chunk(&'a Chunk, usize),
    /// A byte range of an inline list's item.
    Inline(&'a Buf, std::ops::Range<usize>),
}

impl<'a> ListElem<'a> {
    /// Element `range` of the inline list item `buf`.
    pub(crate) fn inline(buf: &'a Buf, range: std::ops::Range<usize>) -> ListElem<'a> {
        ListElem(Elem::Inline(buf, range))
    }

    /// The element's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.0 {
            Elem::Chunk(c, k) => {
                let (s, e) = c.spans[*k];
                &c.bytes()[s as usize..e as usize]
            }
            Elem::Inline(buf, r) => &buf[r.clone()],
        }
    }

    /// The element as a zero-copy `Buf` sharing its (sealed) chunk or
    /// item.
    pub fn buf(&self) -> Option<Buf> {
        match &self.0 {
            Elem::Chunk(c, k) => c.get(*k),
            Elem::Inline(buf, r) => Some(buf.slice(r.clone())),
        }
    }
}

/// A chunk's slot: still being written by the body, or frozen.
enum Slot {
    Open(BufMut),
    Sealed {
        buf: Buf,
        handle: u32,
    },
    /// Only while a seal is in progress.
    Moving,
}

/// One chunk: its slot and its live elements' spans, in list order.
struct Chunk {
    slot: Slot,
    spans: VecDeque<(u32, u32)>,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        match &self.slot {
            Slot::Open(w) => w.as_slice(),
            Slot::Sealed { buf, .. } => buf,
            Slot::Moving => &[],
        }
    }

    /// Bytes of the live elements.
    fn live_payload(&self) -> usize {
        self.spans.iter().map(|&(s, e)| (e - s) as usize).sum()
    }

    /// Room left for one more element of `n` bytes (open chunks only).
    fn fits(&self, n: usize) -> bool {
        matches!(&self.slot, Slot::Open(w) if w.remaining() >= n)
    }

    /// Freezes an open chunk (gives it a handle for segment drains).
    fn seal(&mut self, pool: &Pool) {
        if let Slot::Open(_) = self.slot {
            let Slot::Open(w) = std::mem::replace(&mut self.slot, Slot::Moving) else {
                unreachable!("matched above");
            };
            let buf = w.freeze();
            let Ok(handle) = pool.into_handle(buf.clone()) else {
                unreachable!("a fresh slot has no handle yet");
            };
            self.slot = Slot::Sealed { buf, handle };
        }
    }

    /// Live element `k` as a sub-Buf (the chunk must be sealed).
    fn get(&self, k: usize) -> Option<Buf> {
        let (s, e) = self.spans[k];
        match &self.slot {
            Slot::Sealed { buf, .. } => buf.try_slice(s as usize..e as usize),
            _ => None,
        }
    }

    /// Adds a span at the list-order front or back of the chunk.
    fn push_span(&mut self, span: (u32, u32), front: bool) {
        if front {
            self.spans.push_front(span)
        } else {
            self.spans.push_back(span)
        }
    }

    fn pop_span(&mut self, front: bool) -> Option<(u32, u32)> {
        if front {
            self.spans.pop_front()
        } else {
            self.spans.pop_back()
        }
    }

    /// Writes `v` after the chunk's bytes; its span.
    fn write(&mut self, v: &[u8]) -> (u32, u32) {
        let Slot::Open(w) = &mut self.slot else {
            unreachable!("written only while open");
        };
        let s = w.len() as u32;
        w.extend_from_slice(v);
        (s, w.len() as u32)
    }

    fn release(self, pool: &Pool) {
        if let Slot::Sealed { handle, .. } = self.slot {
            pool.release_handle(handle);
        }
    }
}

/// The chunk at the front or back of a list.
fn end_of(chunks: &mut VecDeque<Chunk>, front: bool) -> Option<&mut Chunk> {
    if front {
        chunks.front_mut()
    } else {
        chunks.back_mut()
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// Slot bytes a chunk of `payload` element bytes for `key` needs.
pub(crate) fn chunk_len(key: &[u8], payload: usize) -> usize {
    CHUNK_HEADER + key.len() + payload
}

/// Writes the header of a chunk owned by body `id` at `key` (lists' chunks,
/// and hashes' and sets' large elements: `element.rs`).
pub(crate) fn write_chunk_header(w: &mut BufMut, key: &[u8], id: u64) {
    w.extend_from_slice(&[KIND_CHUNK, 0]);
    w.extend_from_slice(&(key.len() as u16).to_le_bytes());
    w.extend_from_slice(&0u32.to_le_bytes());
    w.extend_from_slice(&id.to_le_bytes());
    w.extend_from_slice(key);
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
    /// Slot bytes of the chunks + SPAN_BYTES per element.
    bytes: usize,
    /// The CAS unique of the last push or pop (0: none since the head
    /// item was stored, whose CAS then holds).
    cas: u64,
}

impl Drop for ListBody {
    fn drop(&mut self) {
        for c in self.chunks.drain(..) {
            c.release(&self.pool);
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
            bytes: 0,
            cas: 0,
        }
    }

    /// The CAS unique of the last push or pop, 0 if none since the head
    /// item was stored.
    pub(crate) fn cas(&self) -> u64 {
        self.cas
    }

    pub(crate) fn set_cas(&mut self, cas: u64) {
        self.cas = cas;
    }

    /// The list's id (what its head item and chunks carry).
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// (chunks, elements): what the store's counters track.
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.chunks.len(), self.len)
    }

    /// Bytes of the live elements, if there are at most `max` of them
    /// (the walk stops past `max`: O(chunks) only for small lists).
    pub(crate) fn payload_at_most(&self, max: usize) -> Option<usize> {
        let mut total = 0;
        for c in &self.chunks {
            total += c.live_payload();
            if total > max {
                return None;
            }
        }
        Some(total)
    }

    /// Moves the sealed chunk whose slot pool handle `handle` names to
    /// another free slot of the same size (what a compaction does,
    /// `Store::compact_segment`): `Some(true)` if it moved, `Some(false)` if
    /// the pool had no free slot, `None` if no chunk of this list has that
    /// slot. The copy is byte for byte, so the spans still hold; replies
    /// holding elements of the old slot keep it until they drop them.
    pub(crate) fn relocate(&mut self, handle: u32) -> Option<bool> {
        let chunk = self
            .chunks
            .iter_mut()
            .find(|c| matches!(c.slot, Slot::Sealed { handle: h, .. } if h == handle))?;
        let Slot::Sealed { buf, .. } = &chunk.slot else {
            unreachable!("found sealed");
        };
        let size = self.pool.slot_size(buf);
        let Some((copy, moved)) = super::copy_to_free_slot(&self.pool, buf, size, 0) else {
            return Some(false);
        };
        chunk.slot = Slot::Sealed {
            buf: copy,
            handle: moved,
        };
        self.pool.release_handle(handle);
        Some(true)
    }

    /// Seals the open chunks at both ends (see [`Chunk::seal`]), so they
    /// have handles and can move; true if there was one. The next push
    /// at an end opens a new chunk (or copies a mostly dead one's live
    /// elements into it), as after a read that sealed it.
    pub(crate) fn seal_open(&mut self) -> bool {
        let mut sealed = false;
        let last = self.chunks.len().saturating_sub(1);
        for i in [0, last] {
            if let Some(c) = self.chunks.get_mut(i) {
                sealed |= matches!(c.slot, Slot::Open(_));
                c.seal(&self.pool);
            }
        }
        sealed
    }

    /// Number of chunks.
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Bytes charged to the store's limit: chunk slots + spans.
    pub(crate) fn slot_bytes(&self) -> usize {
        self.bytes
    }

    /// (chunk, index in it) of element `i`.
    fn locate(&self, mut i: usize) -> Option<(usize, usize)> {
        if i >= self.len {
            return None;
        }
        if i >= self.len / 2 {
            // Walk from the back: the ends are what most reads touch.
            let mut from_back = self.len - 1 - i;
            for (ci, c) in self.chunks.iter().enumerate().rev() {
                if from_back < c.spans.len() {
                    return Some((ci, c.spans.len() - 1 - from_back));
                }
                from_back -= c.spans.len();
            }
            return None;
        }
        for (ci, c) in self.chunks.iter().enumerate() {
            if i < c.spans.len() {
                return Some((ci, i));
            }
            i -= c.spans.len();
        }
        None
    }

    /// Element `i` (0..len), zero-copy.
    pub(crate) fn get(&mut self, i: usize) -> Option<Buf> {
        let (ci, k) = self.locate(i)?;
        let c = &mut self.chunks[ci];
        c.seal(&self.pool);
        c.get(k)
    }

    /// Elements `from..to` (clamped to the list), zero-copy; O(chunks
    /// skipped + k).
    pub(crate) fn range(&mut self, from: usize, to: usize) -> Vec<Buf> {
        let to = to.min(self.len);
        let want = to.saturating_sub(from);
        let mut out = Vec::with_capacity(want);
        let Some((mut ci, mut k)) = self.locate(from) else {
            return out;
        };
        while out.len() < want && ci < self.chunks.len() {
            let c = &mut self.chunks[ci];
            c.seal(&self.pool);
            while k < c.spans.len() && out.len() < want {
                if let Some(b) = c.get(k) {
                    out.push(b);
                }
                k += 1;
            }
            ci += 1;
            k = 0;
        }
        out
    }

    /// Visits the elements at positions `from..to` in order, sealing the
    /// chunks they are in first (so each can be taken as a zero-copy
    /// [`Buf`]); `f` returns false to stop. How many were visited. Unlike
    /// [`range`](Self::range) nothing is collected: an element the caller
    /// copies costs no reference count.
    pub(crate) fn visit(
        &mut self,
        from: usize,
        to: usize,
        f: &mut dyn FnMut(ListElem<'_>) -> bool,
    ) -> usize {
        let want = to.min(self.len).saturating_sub(from);
        let Some((mut ci, mut k)) = self.locate(from) else {
            return 0;
        };
        let mut seen = 0;
        while seen < want && ci < self.chunks.len() {
            let c = &mut self.chunks[ci];
            c.seal(&self.pool);
            while k < c.spans.len() && seen < want {
                if !f(ListElem(Elem::Chunk(c, k))) {
                    return seen;
                }
                seen += 1;
                k += 1;
            }
            ci += 1;
            k = 0;
        }
        seen
    }

    /// Most bytes a push of `values` can add (what the caller reserves):
    /// a new chunk slot per element in the worst case, plus spans.
    pub(crate) fn push_cost(&self, key: &[u8], values: &[&[u8]]) -> usize {
        let payload: usize = values.iter().map(|v| v.len()).sum();
        let slot = Pool::slot_size_for(chunk_len(key, CHUNK_BYTES));
        let chunks = payload.div_ceil(CHUNK_BYTES / 2) + 1;
        let big: usize = values
            .iter()
            .filter(|v| v.len() > CHUNK_BYTES)
            .map(|v| Pool::slot_size_for(chunk_len(key, v.len())))
            .sum();
        (chunks.min(values.len()) * slot + big) + SPAN_BYTES * values.len()
    }

    /// Adds `values` at the back (RPUSH) or front (LPUSH: the last value
    /// ends up first). Returns (bytes added, bytes released), or `None` if
    /// a chunk could not be allocated (values pushed so far stay, and are
    /// counted in `len`; the caller reports out of memory).
    pub(crate) fn push(
        &mut self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
        alloc: &mut Alloc<'_>,
    ) -> Result<(usize, usize), (usize, usize)> {
        let (mut added, mut released) = (0, 0);
        for v in values {
            match self.push_one(key, v, front, alloc) {
                Some((a, r)) => {
                    added += a;
                    released += r;
                }
                None => return Err((added, released)),
            }
        }
        Ok((added, released))
    }

    fn push_one(
        &mut self,
        key: &[u8],
        v: &[u8],
        front: bool,
        alloc: &mut Alloc<'_>,
    ) -> Option<(usize, usize)> {
        let (mut added, mut released) = (SPAN_BYTES, 0);
        if let Some(c) = self.end_mut(front).filter(|c| c.fits(v.len())) {
            let span = c.write(v);
            c.push_span(span, front);
            self.len += 1;
            self.bytes += SPAN_BYTES;
            return Some((added, released));
        }
        let mut c = self.open_chunk(key, v.len().max(CHUNK_BYTES), alloc)?;
        added += self.pool.slot_size_of(&c);
        if v.len() > CHUNK_BYTES {
            // A chunk of its own, sealed at once.
            let span = c.write(v);
            c.push_span(span, front);
            c.seal(&self.pool);
        } else {
            // Take the end chunk's elements along if it is mostly dead or
            // small (sealed by a read, or full of popped bytes); else seal
            // it: it is no longer an end.
            let small = self
                .end_mut(front)
                .is_some_and(|e| e.live_payload() + v.len() <= CHUNK_BYTES / 2);
            if small {
                if let Some(old) = self.take_end(front) {
                    for &(s, t) in &old.spans {
                        let span = c.write(&old.bytes()[s as usize..t as usize]);
                        c.spans.push_back(span);
                    }
                    let size = self.pool.slot_size_of(&old);
                    released += size;
                    self.bytes -= size;
                    old.release(&self.pool);
                }
            } else if let Some(e) = end_of(&mut self.chunks, front) {
                e.seal(&self.pool);
            }
            let span = c.write(v);
            c.push_span(span, front);
        }
        self.place(c, front);
        self.len += 1;
        self.bytes += added;
        Some((added, released))
    }

    fn end_mut(&mut self, front: bool) -> Option<&mut Chunk> {
        end_of(&mut self.chunks, front)
    }

    fn take_end(&mut self, front: bool) -> Option<Chunk> {
        if front {
            self.chunks.pop_front()
        } else {
            self.chunks.pop_back()
        }
    }

    /// Removes the end chunk if it has no live element; slot bytes freed.
    fn drop_end_if_empty(&mut self, front: bool) -> usize {
        if !self.end_mut(front).is_some_and(|c| c.spans.is_empty()) {
            return 0;
        }
        match self.take_end(front) {
            Some(empty) => {
                let size = self.pool.slot_size_of(&empty);
                empty.release(&self.pool);
                size
            }
            None => 0,
        }
    }

    fn open_chunk(&self, key: &[u8], payload: usize, alloc: &mut Alloc<'_>) -> Option<Chunk> {
        let mut w = alloc(chunk_len(key, payload))?;
        write_chunk_header(&mut w, key, self.id);
        // Names the list while the chunk is open (its header cannot be
        // read then): a compaction that needs the chunk's segment asks
        // the list to seal it (`seal_open`). The id's low 32 bits: with
        // more lists than that, the name can be another list's, which a
        // seal only costs that list an early seal.
        w.slot_word()
            .store(self.id as u32, std::sync::atomic::Ordering::Relaxed);
        Some(Chunk {
            slot: Slot::Open(w),
            spans: VecDeque::new(),
        })
    }

    fn place(&mut self, c: Chunk, front: bool) {
        if front {
            self.chunks.push_front(c)
        } else {
            self.chunks.push_back(c)
        }
    }

    /// Removes up to `count` elements from the front (LPOP) or back
    /// (RPOP), in pop order. Returns them and the bytes released.
    /// Elements of sealed chunks go out zero-copy; those of an open chunk
    /// are copied (sealing it would end in-place appends at that end).
    pub(crate) fn pop(&mut self, count: usize, front: bool) -> (Vec<Buf>, usize) {
        let n = count.min(self.len);
        let mut out = Vec::with_capacity(n);
        let mut released = 0;
        while out.len() < n {
            let pool = &self.pool;
            let Some(c) = end_of(&mut self.chunks, front) else {
                break;
            };
            let Some(span) = c.pop_span(front) else { break };
            let (s, e) = (span.0 as usize, span.1 as usize);
            let elem = match &c.slot {
                Slot::Sealed { buf, .. } => buf.try_slice(s..e),
                Slot::Open(w) => pool.alloc_copy(&w.as_slice()[s..e]),
                Slot::Moving => None,
            };
            let Some(elem) = elem else {
                // No pool memory for the copy: put it back and stop.
                c.push_span(span, front);
                break;
            };
            out.push(elem);
            released += SPAN_BYTES + self.drop_end_if_empty(front);
        }
        self.len -= out.len();
        self.bytes -= released;
        (out, released)
    }

    /// Drops the `count` elements at the front or back without handing
    /// them out (undoing a push that ran out of memory); bytes released.
    pub(crate) fn discard(&mut self, count: usize, front: bool) -> usize {
        let mut released = 0;
        for _ in 0..count.min(self.len) {
            let Some(c) = self.end_mut(front) else { break };
            if c.pop_span(front).is_none() {
                break;
            }
            self.len -= 1;
            released += SPAN_BYTES + self.drop_end_if_empty(front);
        }
        self.bytes -= released;
        released
    }

    /// Replaces every element (for the edits that rewrite a list: LSET,
    /// LREM, LTRIM, LINSERT, hash and set writes). Returns (bytes added,
    /// bytes released), or `None` (unchanged) if chunks could not be
    /// allocated.
    pub(crate) fn replace(
        &mut self,
        key: &[u8],
        elems: &[&[u8]],
        alloc: &mut Alloc<'_>,
    ) -> Option<(usize, usize)> {
        let mut fresh = ListBody::new(self.pool.clone(), self.id);
        if let Err((added, released)) = fresh.push(key, elems, false, alloc) {
            debug_assert_eq!(released, 0);
            let _ = added;
            return None;
        }
        let released = self.bytes;
        std::mem::swap(&mut self.chunks, &mut fresh.chunks);
        std::mem::swap(&mut self.len, &mut fresh.len);
        std::mem::swap(&mut self.bytes, &mut fresh.bytes);
        Some((self.bytes, released))
    }
}

/// Bytes the chunks for `elems` need at most (what the caller reserves).
pub(crate) fn chunks_cost(key: &[u8], elems: &[&[u8]]) -> usize {
    ListBody::new_cost(key, elems)
}

impl ListBody {
    fn new_cost(key: &[u8], elems: &[&[u8]]) -> usize {
        let slot = Pool::slot_size_for(chunk_len(key, CHUNK_BYTES));
        let (mut chunks, mut fill) = (0usize, CHUNK_BYTES + 1);
        let mut big = 0;
        for e in elems {
            if e.len() > CHUNK_BYTES {
                big += Pool::slot_size_for(chunk_len(key, e.len()));
            } else if fill + e.len() > CHUNK_BYTES {
                chunks += 1;
                fill = e.len();
            } else {
                fill += e.len();
            }
        }
        chunks * slot + big + SPAN_BYTES * elems.len()
    }
}

/// Slot size of a chunk (for accounting).
trait SlotSizeOf {
    fn slot_size_of(&self, c: &Chunk) -> usize;
}

impl SlotSizeOf for Pool {
    fn slot_size_of(&self, c: &Chunk) -> usize {
        match &c.slot {
            Slot::Open(w) => Pool::slot_size_for(w.capacity()),
            Slot::Sealed { buf, .. } => self.slot_size(buf),
            Slot::Moving => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn body(pool: &Pool) -> ListBody {
        ListBody::new(pool.clone(), 7)
    }

    fn all(b: &mut ListBody) -> Vec<Vec<u8>> {
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
                        prop_assert!(b.slot_bytes() <= 2 * (b.len() + 1) * (SPAN_BYTES + 300) + 8 * 4096);
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
                prop_assert_eq!(all(&mut b), model.iter().cloned().collect::<Vec<_>>());
                if let Some(m) = model.get(model.len() / 2) {
                    prop_assert_eq!(b.get(model.len() / 2).unwrap().to_vec(), m.clone());
                }
                for (buf, want) in &held {
                    prop_assert_eq!(&buf[..], &want[..]);
                }
            }
            let charged: usize = b.chunks.iter().map(|c| pool.slot_size_of(c)).sum();
            prop_assert_eq!(b.slot_bytes(), charged + SPAN_BYTES * b.len());
        }
    }

    #[test]
    fn chunks_name_their_owner() {
        let pool = Pool::with_capacity(4 << 20).unwrap();
        let mut b = body(&pool);
        let mut alloc = |n: usize| pool.alloc(n);
        b.push(b"mylist", &[b"a", b"b"], false, &mut alloc).unwrap();
        let c = &mut b.chunks[0];
        c.seal(&pool);
        assert_eq!(chunk_owner(c.bytes()), Some((7, &b"mylist"[..])));
        assert_eq!(chunk_owner(b"\x01garbage-garbage-garbage"), None);
        assert_eq!(chunk_owner(b"\x03\x00\xff\xff0123456789ab"), None);
    }

    #[test]
    fn pushes_append_in_place_and_chunks_stay_full() {
        let pool = Pool::with_capacity(64 << 20).unwrap();
        let mut b = body(&pool);
        let mut alloc = |n: usize| pool.alloc(n);
        let slot = Pool::slot_size_for(chunk_len(b"k", CHUNK_BYTES));
        for i in 0..20_000u32 {
            let v = i.to_le_bytes();
            let (added, released) = b.push(b"k", &[&v], i % 2 == 0, &mut alloc).unwrap();
            assert_eq!(released, 0);
            assert!(added == SPAN_BYTES || added == SPAN_BYTES + slot);
        }
        assert_eq!(b.len(), 20_000);
        // 4 B elements in 2 KiB chunks: 512 per chunk, at most one partly
        // filled chunk per end.
        assert!(
            b.chunk_count() <= 20_000 / 512 + 2,
            "{} chunks",
            b.chunk_count()
        );
        // A read seals the end chunks; pops then pushes at that end do not
        // leave a trail of nearly empty chunks.
        for _ in 0..2000 {
            let _ = b.range(0, 1);
            let _ = b.pop(1, true);
            b.push(b"k", &[b"xyz"], true, &mut alloc).unwrap();
        }
        assert!(
            b.chunk_count() <= 20_000 / 512 + 4,
            "{} chunks",
            b.chunk_count()
        );
    }
}
