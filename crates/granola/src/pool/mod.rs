//! The registered memory pool: where zero-copy data lives.
//!
//! ```text
//!  data region (reserved once, committed on touch, THP where available)
//!  base                                                         base + capacity
//!  |<- segment 0 (2 MiB) ->|<- segment 1 ->|<- segment 2 ->| ... |
//!  | 64 B slots ...        | 4 KiB slots   | large object (run of segments) ...
//!
//!  refcount side array (one u32 per possible slot, 32 Ki per segment)
//!  rc[seg << 15 | slot]    0 = free, WRITER = held by a BufMut, n = n Bufs
//!
//!  segment table (one entry per segment)
//!  class[seg]   size class (64 B << k), LARGE, or UNASSIGNED
//!  head[seg]    first segment of the large run containing seg
//! ```
//!
//! Every segment holds slots of one power-of-two size class (64 B … 1 MiB);
//! objects larger than 1 MiB take a run of whole segments. Because the whole
//! range is reserved at start, [`Pool::recover`] maps any pointer back to its
//! slot with a subtraction, two shifts and one table load — no hashing, no
//! search — and bumps the slot's reference count.
//!
//! Reference counts live in a side array rather than beside the data so that
//! a slot's bytes stay exactly what the application wrote (they go to the
//! kernel as one gather entry) and so that clone/drop touches one cache line
//! that holds nothing else the sender needs.
//!
//! Slots of small classes stay with their class once carved (as memcached's
//! slabs do); runs of large objects go back to the segment allocator and
//! their pages back to the kernel when freed.

mod buf;
mod buf_mut;
mod region;

pub use buf::Buf;
pub use buf_mut::{BufFull, BufMut};
pub use region::HugePages;

use region::Region;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// log2 of the segment size (2 MiB, one x86-64 huge page).
const SEGMENT_SHIFT: u32 = 21;
/// Bytes per segment.
pub const SEGMENT_SIZE: usize = 1 << SEGMENT_SHIFT;
/// log2 of the smallest slot size (64 B, one cache line).
const MIN_CLASS_SHIFT: u32 = 6;
/// log2 of the largest slot size (1 MiB); larger objects take whole segments.
const MAX_CLASS_SHIFT: u32 = 20;
/// Number of power-of-two size classes.
const NUM_CLASSES: usize = (MAX_CLASS_SHIFT - MIN_CLASS_SHIFT + 1) as usize;
/// log2 of the refcount entries reserved per segment (enough for 64 B slots).
const SLOTS_SHIFT: u32 = SEGMENT_SHIFT - MIN_CLASS_SHIFT;
/// Smallest slot size.
pub const MIN_SLOT_SIZE: usize = 1 << MIN_CLASS_SHIFT;
/// Largest slot size; bigger allocations use the large-object path.
pub const MAX_SLOT_SIZE: usize = 1 << MAX_CLASS_SHIFT;

/// Segment table marker: segment not carved yet.
const SEG_UNASSIGNED: u8 = u8::MAX;
/// Segment table marker: segment belongs to a large-object run.
const SEG_LARGE: u8 = u8::MAX - 1;

/// Refcount state of a slot owned by a [`BufMut`] (unique writer).
const WRITER: u32 = 1 << 31;
/// Beyond this many references we abort, as `Arc` does, rather than overflow
/// into the WRITER bit.
const MAX_REFS: u32 = 1 << 30;

/// How to build a [`Pool`].
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Bytes of address space to reserve for data. Memory is committed only
    /// when touched; allocation fails (returns `None`) once it is used up.
    /// Rounded up to a multiple of [`SEGMENT_SIZE`].
    pub capacity: usize,
    /// Ask for transparent huge pages (falls back silently to 4 KiB pages;
    /// [`Pool::huge_pages`] says what happened).
    pub huge_pages: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            capacity: 1 << 30,
            huge_pages: true,
        }
    }
}

/// Counters describing how much of the pool is in use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Reserved data bytes (the configured capacity).
    pub capacity: usize,
    /// Segments handed to size classes or large objects.
    pub segments_in_use: usize,
    /// Slots currently allocated (by a `BufMut` or at least one `Buf`).
    pub live_slots: usize,
    /// Sum of the slot sizes of live slots.
    pub live_bytes: usize,
}

/// A thread-safe pool of registered memory. Cloning is cheap (a handle).
///
/// ```
/// use granola::Pool;
/// let pool = Pool::with_capacity(8 << 20).unwrap();
/// let mut w = pool.alloc(5).unwrap();
/// w.extend_from_slice(b"hello");
/// let buf = w.freeze();
/// let again = pool.recover(&buf[1..4]).unwrap();   // O(1), bumps the count
/// assert_eq!(&again[..], b"ell");
/// assert_eq!(buf.ref_count(), 2);
/// assert!(pool.recover(b"not in the pool").is_none());
/// ```
#[derive(Clone)]
pub struct Pool {
    inner: Arc<PoolInner>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("base", &self.inner.data.base())
            .field("stats", &self.stats())
            .finish()
    }
}

pub(crate) struct PoolInner {
    data: Region,
    refcounts: Region,
    num_segments: usize,
    seg_class: Box<[AtomicU8]>,
    seg_head: Box<[AtomicU32]>,
    /// For the head segment of a large run: its length in segments.
    seg_run_len: Box<[AtomicU32]>,
    classes: [Mutex<ClassState>; NUM_CLASSES],
    segments: Mutex<SegmentAllocator>,
    live_slots: AtomicUsize,
    live_bytes: AtomicUsize,
    segments_in_use: AtomicUsize,
}

#[derive(Default)]
struct ClassState {
    /// Freed slot ids, reused LIFO (the most recently freed slot is the most
    /// likely to be cached).
    free: Vec<u32>,
    /// Segment being carved, if any, and the next never-used slot in it.
    carving: Option<(u32, u32)>,
}

struct SegmentAllocator {
    /// First segment never handed out.
    next: u32,
    /// Returned runs (start -> length), coalesced with their neighbours.
    free_runs: BTreeMap<u32, u32>,
}

impl SegmentAllocator {
    fn take(&mut self, n: u32, total: u32) -> Option<u32> {
        let found = self
            .free_runs
            .iter()
            .find(|&(_, &len)| len >= n)
            .map(|(&s, &l)| (s, l));
        if let Some((start, len)) = found {
            self.free_runs.remove(&start);
            if len > n {
                self.free_runs.insert(start + n, len - n);
            }
            return Some(start);
        }
        if total - self.next >= n {
            let start = self.next;
            self.next += n;
            return Some(start);
        }
        None
    }

    fn give_back(&mut self, mut start: u32, mut len: u32) {
        if let Some((&ps, &pl)) = self.free_runs.range(..start).next_back() {
            if ps + pl == start {
                self.free_runs.remove(&ps);
                start = ps;
                len += pl;
            }
        }
        if let Some(&nl) = self.free_runs.get(&(start + len)) {
            self.free_runs.remove(&(start + len));
            len += nl;
        }
        if start + len == self.next {
            self.next = start;
        } else {
            self.free_runs.insert(start, len);
        }
    }
}

fn class_index(size: usize) -> Option<usize> {
    if size > MAX_SLOT_SIZE {
        return None;
    }
    let shift = if size <= MIN_SLOT_SIZE {
        MIN_CLASS_SHIFT
    } else {
        usize::BITS - (size - 1).leading_zeros()
    };
    Some((shift - MIN_CLASS_SHIFT) as usize)
}

impl Pool {
    /// Reserves a pool as configured.
    pub fn new(config: PoolConfig) -> std::io::Result<Pool> {
        let num_segments = config.capacity.div_ceil(SEGMENT_SIZE).max(1);
        if num_segments > (u32::MAX >> SLOTS_SHIFT) as usize {
            return Err(std::io::Error::other("pool capacity above 256 GiB"));
        }
        let data = Region::reserve(num_segments * SEGMENT_SIZE, SEGMENT_SIZE, config.huge_pages)?;
        let rc_bytes = num_segments << SLOTS_SHIFT << 2;
        let refcounts = Region::reserve(rc_bytes, 4096, false)?;
        if config.huge_pages && data.huge_pages() == HugePages::Off {
            log::info!("granola pool: transparent huge pages unavailable, using 4 KiB pages");
        }
        let inner = PoolInner {
            data,
            refcounts,
            num_segments,
            seg_class: (0..num_segments)
                .map(|_| AtomicU8::new(SEG_UNASSIGNED))
                .collect(),
            seg_head: (0..num_segments).map(|_| AtomicU32::new(0)).collect(),
            seg_run_len: (0..num_segments).map(|_| AtomicU32::new(0)).collect(),
            classes: std::array::from_fn(|_| Mutex::new(ClassState::default())),
            segments: Mutex::new(SegmentAllocator {
                next: 0,
                free_runs: BTreeMap::new(),
            }),
            live_slots: AtomicUsize::new(0),
            live_bytes: AtomicUsize::new(0),
            segments_in_use: AtomicUsize::new(0),
        };
        Ok(Pool {
            inner: Arc::new(inner),
        })
    }

    /// A pool of `capacity` bytes with default settings.
    pub fn with_capacity(capacity: usize) -> std::io::Result<Pool> {
        Pool::new(PoolConfig {
            capacity,
            ..PoolConfig::default()
        })
    }

    /// Allocates a writable buffer with room for at least `size` bytes, or
    /// `None` if the pool is exhausted.
    pub fn alloc(&self, size: usize) -> Option<BufMut> {
        let (slot, cap) = self.inner.alloc_slot(size)?;
        // The slot holds the pool alive: Bufs keep only a raw pointer to it.
        let ptr = Arc::into_raw(Arc::clone(&self.inner));
        // SAFETY: `ptr` came from Arc::into_raw just above, so it is non-null.
        let pool = unsafe { NonNull::new_unchecked(ptr.cast_mut()) };
        let data = self.inner.slot_data(slot);
        let rc = self.inner.rc(slot);
        // SAFETY: alloc_slot just set this slot's count to WRITER and gave us
        // the only handle; `data` spans `cap` bytes of reserved memory.
        Some(unsafe { BufMut::from_raw_parts(pool, rc, data, cap) })
    }

    /// Allocates a buffer holding a copy of `bytes`.
    pub fn alloc_copy(&self, bytes: &[u8]) -> Option<Buf> {
        let mut w = self.alloc(bytes.len())?;
        w.extend_from_slice(bytes);
        Some(w.freeze())
    }

    /// Recovers a [`Buf`] for a slice that lies inside a live, frozen pool
    /// allocation, incrementing the slot's reference count. `None` for memory
    /// outside this pool (stack, ordinary heap, another pool), for empty
    /// slices, for slices spanning two slots, and for slots still owned by a
    /// [`BufMut`] (sharing them would let the writer change shared bytes).
    #[inline]
    pub fn recover(&self, bytes: &[u8]) -> Option<Buf> {
        PoolInner::recover(&self.inner, bytes)
    }

    /// True if `bytes` lies inside this pool's data region.
    #[inline]
    pub fn contains(&self, bytes: &[u8]) -> bool {
        let off = bytes
            .as_ptr()
            .addr()
            .wrapping_sub(self.inner.data.base().as_ptr().addr());
        off < self.inner.data.len() && bytes.len() <= self.inner.data.len() - off
    }

    /// Whether the data region got transparent huge pages.
    pub fn huge_pages(&self) -> HugePages {
        self.inner.data.huge_pages()
    }

    /// Current usage counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            capacity: self.inner.num_segments * SEGMENT_SIZE,
            segments_in_use: self.inner.segments_in_use.load(Ordering::Relaxed),
            live_slots: self.inner.live_slots.load(Ordering::Relaxed),
            live_bytes: self.inner.live_bytes.load(Ordering::Relaxed),
        }
    }

    /// The slot size an allocation of `size` bytes would get (what it costs
    /// against the capacity).
    pub fn slot_size_for(size: usize) -> usize {
        match class_index(size) {
            Some(c) => MIN_SLOT_SIZE << c,
            None => size.div_ceil(SEGMENT_SIZE) * SEGMENT_SIZE,
        }
    }

    /// The data region as (start address, length): what a datapath registers
    /// with the kernel (io_uring fixed buffers) or NIC.
    pub fn region(&self) -> (NonNull<u8>, usize) {
        (self.inner.data.base(), self.inner.data.len())
    }
}

impl PoolInner {
    #[inline]
    fn rc(&self, slot: u32) -> NonNull<AtomicU32> {
        debug_assert!((slot as usize) < self.num_segments << SLOTS_SHIFT);
        // SAFETY: slot < num_segments << SLOTS_SHIFT, and the refcount region
        // holds exactly that many u32s, zero-initialised (a valid AtomicU32).
        unsafe { self.refcounts.base().cast::<AtomicU32>().add(slot as usize) }
    }

    #[inline]
    fn slot_from_rc(&self, rc: NonNull<AtomicU32>) -> u32 {
        let off = rc.as_ptr().addr() - self.refcounts.base().as_ptr().addr();
        (off / 4) as u32
    }

    #[inline]
    fn slot_offset(&self, slot: u32) -> usize {
        let seg = (slot >> SLOTS_SHIFT) as usize;
        let class = self.seg_class[seg].load(Ordering::Relaxed);
        let index = (slot & ((1 << SLOTS_SHIFT) - 1)) as usize;
        if class == SEG_LARGE {
            seg << SEGMENT_SHIFT
        } else {
            (seg << SEGMENT_SHIFT) + (index << (MIN_CLASS_SHIFT + class as u32))
        }
    }

    #[inline]
    fn slot_data(&self, slot: u32) -> NonNull<u8> {
        // SAFETY: slot_offset is < the data region length for any allocated
        // slot.
        unsafe { self.data.base().add(self.slot_offset(slot)) }
    }

    fn alloc_slot(&self, size: usize) -> Option<(u32, usize)> {
        let (slot, cap) = match class_index(size) {
            Some(class) => (self.alloc_small(class)?, MIN_SLOT_SIZE << class),
            None => self.alloc_large(size)?,
        };
        // SAFETY: rc() of an allocated slot is in bounds; the count was 0
        // (free) and no one else can reach the slot yet.
        unsafe { self.rc(slot).as_ref() }.store(WRITER, Ordering::Relaxed);
        self.live_slots.fetch_add(1, Ordering::Relaxed);
        self.live_bytes.fetch_add(cap, Ordering::Relaxed);
        Some((slot, cap))
    }

    fn alloc_small(&self, class: usize) -> Option<u32> {
        let mut st = self.classes[class]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = st.free.pop() {
            return Some(slot);
        }
        let per_segment = 1u32 << (SEGMENT_SHIFT - MIN_CLASS_SHIFT - class as u32);
        if let Some((seg, next)) = st.carving {
            st.carving = (next + 1 < per_segment).then_some((seg, next + 1));
            return Some(seg << SLOTS_SHIFT | next);
        }
        let seg = {
            let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            segs.take(1, self.num_segments as u32)?
        };
        self.seg_class[seg as usize].store(class as u8, Ordering::Release);
        self.seg_head[seg as usize].store(seg, Ordering::Release);
        self.segments_in_use.fetch_add(1, Ordering::Relaxed);
        st.carving = (per_segment > 1).then_some((seg, 1));
        Some(seg << SLOTS_SHIFT)
    }

    fn alloc_large(&self, size: usize) -> Option<(u32, usize)> {
        let n = u32::try_from(size.div_ceil(SEGMENT_SIZE)).ok()?;
        let start = {
            let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            segs.take(n, self.num_segments as u32)?
        };
        for seg in start..start + n {
            self.seg_class[seg as usize].store(SEG_LARGE, Ordering::Release);
            self.seg_head[seg as usize].store(start, Ordering::Release);
        }
        self.seg_run_len[start as usize].store(n, Ordering::Release);
        self.segments_in_use
            .fetch_add(n as usize, Ordering::Relaxed);
        Some((start << SLOTS_SHIFT, n as usize * SEGMENT_SIZE))
    }

    /// Returns a slot whose count just reached zero to its free list.
    fn free_slot(&self, slot: u32) {
        let seg = slot >> SLOTS_SHIFT;
        let class = self.seg_class[seg as usize].load(Ordering::Acquire);
        let cap = if class == SEG_LARGE {
            let n = self.seg_run_len[seg as usize].load(Ordering::Acquire);
            for s in seg..seg + n {
                self.seg_class[s as usize].store(SEG_UNASSIGNED, Ordering::Release);
            }
            self.data
                .discard((seg as usize) << SEGMENT_SHIFT, n as usize * SEGMENT_SIZE);
            self.segments_in_use
                .fetch_sub(n as usize, Ordering::Relaxed);
            let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            segs.give_back(seg, n);
            n as usize * SEGMENT_SIZE
        } else {
            let mut st = self.classes[class as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            st.free.push(slot);
            MIN_SLOT_SIZE << class
        };
        self.live_slots.fetch_sub(1, Ordering::Relaxed);
        self.live_bytes.fetch_sub(cap, Ordering::Relaxed);
    }

    #[inline]
    fn recover(this: &Arc<PoolInner>, bytes: &[u8]) -> Option<Buf> {
        let base = this.data.base();
        let off = bytes.as_ptr().addr().wrapping_sub(base.as_ptr().addr());
        if off >= this.data.len() || bytes.is_empty() || bytes.len() > this.data.len() - off {
            return None;
        }
        let seg = off >> SEGMENT_SHIFT;
        let class = this.seg_class[seg].load(Ordering::Acquire);
        let (slot, slot_start, slot_len) = match class {
            SEG_UNASSIGNED => return None,
            SEG_LARGE => {
                let head = this.seg_head[seg].load(Ordering::Acquire);
                let n = this.seg_run_len[head as usize].load(Ordering::Acquire);
                (
                    head << SLOTS_SHIFT,
                    (head as usize) << SEGMENT_SHIFT,
                    n as usize * SEGMENT_SIZE,
                )
            }
            c => {
                let shift = MIN_CLASS_SHIFT + c as u32;
                let index = (off & (SEGMENT_SIZE - 1)) >> shift;
                (
                    (seg as u32) << SLOTS_SHIFT | index as u32,
                    (seg << SEGMENT_SHIFT) + (index << shift),
                    1usize << shift,
                )
            }
        };
        if off + bytes.len() > slot_start + slot_len {
            return None; // spans two slots
        }
        let rc_ptr = this.rc(slot);
        // SAFETY: rc_ptr is in bounds of the refcount region.
        let rc = unsafe { rc_ptr.as_ref() };
        // The caller holds `bytes`, borrowed from a live Buf or BufMut of this
        // slot, so the count cannot drop to zero or change writer state
        // while we look at it.
        let cur = rc.load(Ordering::Relaxed);
        if cur == 0 || cur & WRITER != 0 {
            return None;
        }
        if rc.fetch_add(1, Ordering::Relaxed) > MAX_REFS {
            std::process::abort();
        }
        // Arc::as_ptr keeps provenance over the whole Arc allocation, which
        // release_slot needs to drop the slot's strong count later.
        // SAFETY: Arc::as_ptr never returns null.
        let pool = unsafe { NonNull::new_unchecked(Arc::as_ptr(this).cast_mut()) };
        // SAFETY: off < data.len(), so base+off is inside the region; we just
        // took a reference on the slot containing [off, off+len).
        unsafe {
            Some(Buf::from_raw_parts(
                pool,
                rc_ptr,
                base.add(off),
                bytes.len(),
            ))
        }
    }
}

/// Releases the pool reference held by a slot whose last handle was dropped.
///
/// # Safety
/// `pool` must come from `Pool::alloc` (an `Arc::into_raw` pointer held on
/// behalf of the slot), the slot's count must have reached zero, and no
/// handle to the slot may remain.
unsafe fn release_slot(pool: NonNull<PoolInner>, rc: NonNull<AtomicU32>) {
    // SAFETY: the slot's Arc reference keeps the pool alive until the
    // decrement below.
    let inner = unsafe { pool.as_ref() };
    inner.free_slot(inner.slot_from_rc(rc));
    // SAFETY: drops the strong count taken in Pool::alloc for this slot.
    unsafe { Arc::decrement_strong_count(pool.as_ptr().cast_const()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_index_boundaries() {
        assert_eq!(class_index(0), Some(0));
        assert_eq!(class_index(64), Some(0));
        assert_eq!(class_index(65), Some(1));
        assert_eq!(class_index(128), Some(1));
        assert_eq!(class_index(MAX_SLOT_SIZE), Some(NUM_CLASSES - 1));
        assert_eq!(class_index(MAX_SLOT_SIZE + 1), None);
    }

    #[test]
    fn recover_rejects_slices_spanning_two_slots() {
        let p = Pool::new(PoolConfig {
            capacity: 2 * SEGMENT_SIZE,
            huge_pages: false,
        })
        .unwrap();
        let a = p.alloc_copy(&[1u8; 64]).unwrap();
        let b = p.alloc_copy(&[2u8; 64]).unwrap();
        assert_eq!(b.as_ptr().addr() - a.as_ptr().addr(), 64, "carved in order");
        let (base, _) = p.region();
        let off = a.as_ptr().addr() - base.as_ptr().addr();
        // SAFETY: both 64 B slots are live and initialised, adjacent in the
        // same region (whose base pointer has provenance over both), and
        // only read here.
        let span = unsafe { std::slice::from_raw_parts(base.as_ptr().add(off + 32), 64) };
        assert!(p.recover(span).is_none());
        assert!(p.recover(&span[..32]).is_some_and(|r| r.same_slot(&a)));
        assert!(p.recover(&span[32..]).is_some_and(|r| r.same_slot(&b)));
    }

    #[test]
    fn segment_runs_coalesce() {
        let mut a = SegmentAllocator {
            next: 0,
            free_runs: BTreeMap::new(),
        };
        let x = a.take(2, 10).unwrap();
        let y = a.take(3, 10).unwrap();
        let z = a.take(1, 10).unwrap();
        assert_eq!((x, y, z), (0, 2, 5));
        a.give_back(x, 2);
        a.give_back(y, 3);
        assert_eq!(a.free_runs.get(&0), Some(&5));
        assert_eq!(a.take(5, 10), Some(0));
        assert_eq!(a.take(5, 10), None, "only 4 never-used segments remain");
        a.give_back(z, 1);
        a.give_back(0, 5);
        assert!(a.free_runs.is_empty());
        assert_eq!(a.next, 0);
    }
}
