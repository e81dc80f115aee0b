//! The registered memory pool: where zero-copy data lives.
//!
//! ```text
//!  data region (reserved once, committed on touch)
//!  base                                  base + capacity
//!  |<- segment 0 (2 MiB) ->|<- segment 1 ->| ... |<- large-object area ->|
//!  | 160 B slots ...    |w| | 4 KiB slots   | ... | 3.1 MiB |...| 1.2 MiB |..
//!                        ^ tail smaller than one slot: never handed out
//!  small-class segments: THP where available;    runs of segments, 4 KiB
//!  as many as the capacity                        pages, only those in use
//!
//!  side array (two u32 per possible slot, 32 Ki slots per segment)
//!  rc[seg << 15 | slot]    0 = free, WRITER = held by a BufMut,
//!                          [HANDLE |] n = n references (Bufs + raw handle)
//!  word[seg << 15 | slot]  the application's slot word (Buf::slot_word),
//!                          0 when the slot is allocated
//!
//!  segment table (one entry per segment)
//!  class[seg]   size class index, LARGE, or UNASSIGNED
//!  head[seg]    first segment of the large run containing seg
//! ```
//!
//! ## Size classes
//!
//! Every segment holds slots of one size class. Up to 256 KiB there are
//! four classes per power of two, as in jemalloc (64, 80, 96, 112, 128,
//! 160, 192, 224, 256, 320, ... 224 KiB, 256 KiB), so a slot wastes at most
//! 20 % of itself (a 148 B cache item takes a 160 B slot, not 256 B).
//! Above 256 KiB a class is the largest slot that 7, 6, 5, 4, 3 or 2 of
//! fit in a segment (292, 341, 409, 512, 682 KiB, 1 MiB): jemalloc's
//! spacing would leave a large tail of every segment unused, and powers of
//! two (as before) cost a 520 KiB value 1 MiB; now it costs 682 KiB.
//!
//! ## Large objects
//!
//! An object over 1 MiB takes a run of whole segments of address space,
//! but only its pages count: a 2.1 MiB value costs 2.1 MiB of the
//! capacity, not 4 MiB. The pool reserves address space for them after
//! the small-class segments (three times as much; a large object has more
//! than half of each segment it spans in use, so twice would hold all the
//! capacity allows), asks for no huge pages there (one would make a run's
//! unused tail resident) and faults a new object's pages in with one
//! `madvise`. A freed object's pages go back to the kernel, except the
//! last four freed: those keep them for the next large object, which
//! takes the one that fits it best (`SegmentAllocator::warm_large`). The
//! capacity bounds the sum: small-class segments in use count whole,
//! large objects (live or warm) by their pages. Pools of a group ([`Pool::new_group`]) keep large objects in
//! small-class segments instead: their mapping is registered with the
//! kernel whole, which makes all of it resident.
//!
//! ## O(1) pointer recovery
//!
//! Because the whole range is reserved at start, [`Pool::recover`] maps any
//! pointer back to its slot with a subtraction, a shift, one table load and
//! one multiply-shift: the slot index inside a segment is
//! `offset * ceil(2^42 / size) >> 42`, which equals `offset / size` exactly
//! for every offset below 2^21 and slot size up to 2^20 (the rounding
//! error, below `2^21 / 2^42`, never reaches the next integer because the
//! fractional part of `offset / size` is at most `1 - 1/size`). No
//! division, no hashing, no search.
//!
//! Reference counts live in a side array rather than beside the data so that
//! a slot's bytes stay exactly what the application wrote (they go to the
//! kernel as one gather entry) and so that clone/drop touches one cache line
//! that holds nothing else the sender needs. Beside each count is one
//! mutable word for the application (a cache keeps an item's last access
//! there: frozen bytes cannot change, and a reader that took a reference has
//! just loaded that line anyway).
//!
//! ## Raw handles
//!
//! A data structure that wants to own a reference to a slot without keeping
//! a 32-byte [`Buf`] (a cache index keeps one `u64` per entry) turns a `Buf`
//! into a `u32` slot handle with [`Pool::into_handle`]. The handle owns that
//! reference (marked by the HANDLE bit in the slot's count, so there is at
//! most one per slot and releasing it twice is refused instead of freeing
//! the slot twice); [`Pool::release_handle`] drops it and
//! [`Pool::from_handle`] turns it back into a `Buf`. Readers that only
//! *saw* a handle (loaded it from a shared table) get their own reference
//! with [`Pool::try_acquire`], which increments the count only if the slot
//! is live and frozen. The slot may have been freed and reused for other
//! data between the load and the acquire: callers must check what they got
//! (e.g. re-load the table entry and compare). All handle operations are
//! safe: a stale or foreign handle yields `None`/`false` or another live,
//! frozen slot, never freed memory.
//!
//! A slot referred to by its handle and one `Buf` only can be written again
//! in place ([`Pool::rewrite_in_place`]): a cache overwriting a value of the
//! same size. No other reference exists then, so no reader, and no send in
//! flight, sees its bytes change.
//!
//! ## Segments move between classes
//!
//! A segment whose last slot is freed goes back to the shared segment
//! allocator, so another class can take it: memory a class no longer needs does not stay with it. A cache
//! that is full (every segment in use) makes room for a starved class by
//! *draining* a whole segment ([`Pool::drain_segment`]): the segment stops
//! serving allocations, its free slots leave the class's free list, the
//! caller drops the references it owns (a cache evicts the items), and the
//! segment returns to the allocator when its last live slot is freed, i.e.
//! only when every in-flight reference (a reply being sent) has dropped.
//! [`Pool::coldest_segment`] picks the segment to drain: the one whose
//! slots were least recently allocated or [touched](Pool::touch). Before
//! evicting, and always when it may not evict its items, a cache
//! compacts: [`Pool::movable_segments`] lists the segments whose items
//! all fit in free slots of their class elsewhere ([`Pool::movable_runs`]
//! the windows of consecutive segments a large object could take),
//! [`Pool::segment_handles`] and [`Pool::segment_live`] show whether each
//! live slot there is one its owner can move, and the cache moves them
//! there before the segment drains. The design and its reasons are in
//! `docs/memory.md`.
//!
//! Free-list entries carry the generation of their segment; releasing or
//! draining a segment bumps the generation, so its old entries are dropped
//! lazily when popped (and compacted away once they are the majority),
//! which keeps both operations O(1) in the size of the free list.
//!
//! Released small-class segments keep their pages (the next class to take
//! one writes over them); runs of large objects give their pages back to
//! the kernel when freed. Either way the resident data never exceeds the
//! capacity, which is therefore the hard memory bound of everything
//! allocated from the pool.

mod buf;
mod buf_mut;
mod region;

pub use buf::Buf;
pub use buf_mut::{BufFull, BufMut};
pub use region::HugePages;

use region::Region;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// log2 of the segment size (2 MiB, one x86-64 huge page).
const SEGMENT_SHIFT: u32 = 21;
/// Bytes per segment.
pub const SEGMENT_SIZE: usize = 1 << SEGMENT_SHIFT;
/// Large objects are placed, charged and faulted in by pages of this size.
const PAGE_SIZE: usize = 4096;
/// log2 of the smallest slot size (64 B, one cache line).
const MIN_CLASS_SHIFT: u32 = 6;
/// log2 of the largest slot size (1 MiB); larger objects take runs of
/// segments (see "Large objects" above).
const MAX_CLASS_SHIFT: u32 = 20;
/// Up to `1 << FINE_SHIFT` there are four classes per power of two.
const FINE_SHIFT: u32 = 18;
/// Above 256 KiB a class holds `k` slots per segment for each `k` here:
/// the largest slot that many fit in (the segment's tail is under 64
/// bytes per slot).
const COARSE_SLOTS: [usize; 6] = [7, 6, 5, 4, 3, 2];
/// Number of size classes: 64 B, then four per power of two up to and
/// including 256 KiB, then one per entry of [`COARSE_SLOTS`] up to 1 MiB.
const NUM_CLASSES: usize = 1 + 4 * (FINE_SHIFT - MIN_CLASS_SHIFT) as usize + COARSE_SLOTS.len();
/// Shift of the reciprocal used to divide segment offsets by a slot size.
const RECIP_SHIFT: u32 = 42;
/// log2 of the refcount entries reserved per segment (enough for 64 B slots).
const SLOTS_SHIFT: u32 = SEGMENT_SHIFT - MIN_CLASS_SHIFT;
/// Most segments a pool's data region may have: slot ids are
/// `segment << SLOTS_SHIFT | slot` in a `u32`.
const MAX_SEGMENTS: usize = (u32::MAX >> SLOTS_SHIFT) as usize;
/// Smallest slot size.
pub const MIN_SLOT_SIZE: usize = 1 << MIN_CLASS_SHIFT;
/// Largest slot size; bigger allocations use the large-object path.
pub const MAX_SLOT_SIZE: usize = 1 << MAX_CLASS_SHIFT;

/// Slot size of class `c`.
const fn class_size_const(c: usize) -> usize {
    if c == 0 {
        return MIN_SLOT_SIZE;
    }
    let fine = 4 * (FINE_SHIFT - MIN_CLASS_SHIFT) as usize;
    if c <= fine {
        let k = MIN_CLASS_SHIFT as usize + (c - 1) / 4;
        let sub = (c - 1) % 4;
        (1 << k) + ((sub + 1) << (k - 2))
    } else {
        (SEGMENT_SIZE / COARSE_SLOTS[c - fine - 1]) & !(MIN_SLOT_SIZE - 1)
    }
}

/// Per class: slot size, slots per segment, and `ceil(2^42 / size)`.
struct ClassInfo {
    size: u32,
    per_segment: u32,
    recip: u64,
}

static CLASSES: [ClassInfo; NUM_CLASSES] = {
    let mut t = [const {
        ClassInfo {
            size: 0,
            per_segment: 0,
            recip: 0,
        }
    }; NUM_CLASSES];
    let mut c = 0;
    while c < NUM_CLASSES {
        let size = class_size_const(c);
        t[c] = ClassInfo {
            size: size as u32,
            per_segment: (SEGMENT_SIZE / size) as u32,
            recip: (1u64 << RECIP_SHIFT).div_ceil(size as u64),
        };
        c += 1;
    }
    t
};

/// Segment table marker: segment not carved yet.
const SEG_UNASSIGNED: u8 = u8::MAX;
/// Segment table marker: segment belongs to a large-object run.
const SEG_LARGE: u8 = u8::MAX - 1;

/// Refcount state of a slot owned by a [`BufMut`] (unique writer).
const WRITER: u32 = 1 << 31;
/// Set while one of the slot's references is owned by a raw handle
/// ([`Pool::into_handle`]); that reference is included in the count.
const HANDLE: u32 = 1 << 30;
/// The reference-count part of a slot's count word.
const COUNT_MASK: u32 = HANDLE - 1;
/// Beyond this many references we abort, as `Arc` does, rather than overflow
/// into the HANDLE bit.
const MAX_REFS: u32 = 1 << 29;

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
    /// Most bytes the live slots may take at once (each counted at its
    /// slot size); allocation fails beyond it even while capacity remains.
    /// `None`: the capacity is the only bound.
    ///
    /// A capacity above the budget lets the size classes in use each keep
    /// a partly filled segment without that slack eating the budget: a
    /// pool of buffers whose sizes vary (connection buffers growing from
    /// 16 KiB to 1 MiB) would otherwise fail an allocation while most of
    /// its bytes are free, because every segment is carved for another
    /// class.
    pub budget: Option<usize>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            capacity: 1 << 30,
            huge_pages: true,
            budget: None,
        }
    }
}

/// Counters describing how much of the pool is in use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Reserved data bytes (the configured capacity).
    pub capacity: usize,
    /// Bytes counted against the capacity: small-class segments in use
    /// (and the few just released that keep their pages), whole, and large
    /// objects at their size rounded up to 4 KiB pages.
    pub resident_bytes: usize,
    /// Segments handed to size classes or large objects.
    pub segments_in_use: usize,
    /// Slots currently allocated (by a `BufMut` or at least one `Buf`).
    pub live_slots: usize,
    /// Sum of the slot sizes of live slots.
    pub live_bytes: usize,
    /// Bytes charged against [`PoolConfig::budget`] (slot sizes of the live
    /// slots; 0 when the pool has no budget).
    pub budget_used: usize,
    /// Segments being drained (waiting for their last live slot).
    pub segments_draining: usize,
    /// Small-class segments returned to the shared allocator since start
    /// (emptied or drained), i.e. moved away from their class.
    pub segments_released: u64,
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
    /// Segments of the data region: the small-class segments (as many as
    /// the capacity holds) and then the large-object area, if any.
    num_segments: usize,
    /// The small-class segments: the capacity.
    small_segments: usize,
    seg_class: Box<[AtomicU8]>,
    seg_head: Box<[AtomicU32]>,
    /// For the head segment of a large run: the object's length in pages.
    seg_large_pages: Box<[AtomicU32]>,
    classes: [Mutex<ClassState>; NUM_CLASSES],
    segments: Mutex<SegmentAllocator>,
    /// [`PoolConfig::budget`] (`usize::MAX`: none) and the slot bytes
    /// charged against it.
    budget: usize,
    budget_used: AtomicUsize,
    /// Large objects (runs of segments) live, and their pages' bytes; small
    /// slots are counted per class (`ClassState::live`).
    large_live: AtomicUsize,
    large_live_bytes: AtomicUsize,
    segments_in_use: AtomicUsize,
    /// Per small-class segment: live slots (changed under the class lock).
    seg_live: Box<[AtomicU32]>,
    /// Per segment: generation, bumped when its free-list entries become
    /// invalid (released or draining). Changed under the class lock.
    seg_gen: Box<[AtomicU32]>,
    /// Per segment: the [`epoch`](Self::epoch) of its last allocation or
    /// touch (for [`Pool::coldest_segment`]).
    seg_touch: Box<[AtomicU32]>,
    /// Per segment: being drained (no allocations; released when empty).
    seg_draining: Box<[AtomicBool]>,
    /// Advances once per segment handed out: a coarse clock of allocation.
    epoch: AtomicU32,
    segments_draining: AtomicUsize,
    segments_released: AtomicU64,
}

#[derive(Default)]
struct ClassState {
    /// Freed slots (`slot | generation << 32`), reused LIFO (the most
    /// recently freed slot is the most likely to be cached). Entries whose
    /// generation is not their segment's current one are stale.
    free: Vec<u64>,
    /// How many entries of `free` are (at most) stale.
    stale: usize,
    /// Segment being carved, if any, and the next never-used slot in it.
    carving: Option<(u32, u32)>,
    /// Slots of this class handed out and not yet freed. Counted under the
    /// class lock that allocation and free take anyway: two atomic
    /// read-modify-writes per slot fewer than pool-wide counters, on every
    /// write of a cache item.
    live: usize,
}

impl ClassState {
    /// Notes `n` more stale free-list entries; compacts the list once they
    /// are the majority (amortised O(1) per entry).
    fn add_stale(&mut self, n: usize, seg_gen: &[AtomicU32]) {
        self.stale += n;
        if self.stale > 64 && self.stale * 2 > self.free.len() {
            self.free.retain(|&e| {
                let seg = (e as u32 >> SLOTS_SHIFT) as usize;
                seg_gen[seg].load(Ordering::Relaxed) == (e >> 32) as u32
            });
            self.stale = 0;
        }
    }
}

struct SegmentAllocator {
    /// The small-class segments `[0, capacity / SEGMENT_SIZE)`.
    small: Runs,
    /// The large-object area after them; `None` for a pool of a group
    /// ([`Pool::new_group`]), whose large objects take small segments:
    /// its mapping is registered whole, so reserved address space there
    /// would be resident.
    large: Option<Runs>,
    /// Released small-class segments whose pages are still resident
    /// (oldest first), at most [`WARM_SEGMENTS`]: the next small-class
    /// segment is taken from here, so a class that empties its last
    /// segment and needs one again at once (one item rewritten between two
    /// sizes) does not have the kernel zero a fresh page each time.
    warm: std::collections::VecDeque<u32>,
    /// Freed large objects whose pages are still resident, as (first
    /// segment, pages), oldest first, at most [`WARM_LARGE`]: their runs
    /// stay out of the large area's free runs, so the next large object
    /// of as many segments or fewer takes one and finds its pages there.
    /// A cache at its limit frees a large value and allocates the next
    /// at once; faulting in fresh pages (the kernel zeroing each) took
    /// half the server's CPU time when it wrote 1.1 MB values.
    warm_large: std::collections::VecDeque<(u32, u32)>,
    /// Bytes the pool may have resident: small-class segments in use or
    /// warm, whole, and large objects, live or warm, at their page-rounded
    /// size. At most [`capacity`](Self::capacity).
    resident: usize,
    /// The pool's capacity in bytes: the bound of `resident`.
    capacity: usize,
}

/// Released segments kept resident for reuse (see
/// [`SegmentAllocator::warm`]); what they cost is at most this many
/// segments of resident memory beyond what the pool uses.
const WARM_SEGMENTS: usize = 2;

/// Freed large objects kept resident for reuse (see
/// [`SegmentAllocator::warm_large`]); the capacity bounds them with
/// everything else, and they give their pages back first when anything
/// needs room under it.
const WARM_LARGE: usize = 4;

impl SegmentAllocator {
    /// Charges `bytes` against the capacity; false (nothing charged) if
    /// they do not fit.
    fn commit(&mut self, bytes: usize) -> bool {
        let fits = self.capacity - self.resident >= bytes;
        if fits {
            self.resident += bytes;
        }
        fits
    }

    /// Returns a free small-class segment whose pages were given back.
    fn give_back_small(&mut self, seg: u32) {
        self.small.give_back(seg, 1);
        self.resident -= SEGMENT_SIZE;
    }
}

/// Segments `[first, end)` handed out singly or in runs, first fit.
struct Runs {
    first: u32,
    end: u32,
    /// First segment never handed out.
    next: u32,
    /// Returned runs (start -> length), coalesced with their neighbours.
    free_runs: BTreeMap<u32, u32>,
}

impl Runs {
    fn new(first: u32, end: u32) -> Runs {
        Runs {
            first,
            end,
            next: first,
            free_runs: BTreeMap::new(),
        }
    }

    fn contains(&self, seg: u32) -> bool {
        (self.first..self.end).contains(&seg)
    }

    fn take(&mut self, n: u32) -> Option<u32> {
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
        if self.end - self.next >= n {
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

/// The smallest class whose slots hold `size` bytes; `None` above 1 MiB.
#[inline]
fn class_index(size: usize) -> Option<usize> {
    if size <= MIN_SLOT_SIZE {
        return Some(0);
    }
    if size > MAX_SLOT_SIZE {
        return None;
    }
    let fine = 4 * (FINE_SHIFT - MIN_CLASS_SHIFT) as usize;
    if size > 1 << FINE_SHIFT {
        // Six classes: a short walk, and only for values over 256 KiB.
        return (fine + 1..NUM_CLASSES).find(|&c| CLASSES[c].size as usize >= size);
    }
    let s = size - 1;
    let k = usize::BITS - 1 - s.leading_zeros(); // floor(log2(size - 1)) >= 6
    let sub = (s >> (k - 2)) & 3;
    Some(4 * (k - MIN_CLASS_SHIFT) as usize + sub + 1)
}

/// The segments a large object of `pages` spans.
#[inline]
fn run_segments(pages: u32) -> u32 {
    (pages as usize * PAGE_SIZE).div_ceil(SEGMENT_SIZE) as u32
}

/// `offset / size` for an offset inside a segment, by reciprocal multiply
/// (exact: see the module docs).
#[inline]
fn slot_index(offset_in_segment: usize, info: &ClassInfo) -> usize {
    debug_assert!(offset_in_segment < SEGMENT_SIZE);
    ((offset_in_segment as u64 * info.recip) >> RECIP_SHIFT) as usize
}

impl Pool {
    /// Reserves a pool as configured.
    pub fn new(config: PoolConfig) -> std::io::Result<Pool> {
        let small = Self::segments_for(&config)?;
        // Address space for large objects: each over 1 MiB has more than
        // half of every segment it spans resident, so twice the capacity
        // in segments holds as many as the capacity allows; the third is
        // room for the holes that freed runs leave.
        let large = (3 * small).min(MAX_SEGMENTS - small);
        let huge = if config.huge_pages {
            small * SEGMENT_SIZE
        } else {
            0
        };
        let data = Region::reserve((small + large) * SEGMENT_SIZE, SEGMENT_SIZE, huge)?;
        Self::with_data(config, small, large, data)
    }

    /// Pools carved from one reserved mapping, one per config (in order),
    /// so that one kernel registration covers them all
    /// ([`registration`](Self::registration)): an AF_XDP UMEM whose
    /// receive frames come from one pool (with its own budget) while its
    /// transmit descriptors name values stored in another. Each pool
    /// allocates, accounts and frees on its own; huge pages are asked for
    /// when the first config asks.
    ///
    /// ```
    /// use granola::{Pool, PoolConfig};
    /// let cfg = |mb: usize| PoolConfig { capacity: mb << 20, ..PoolConfig::default() };
    /// let pools = Pool::new_group(&[cfg(8), cfg(4)]).unwrap();
    /// let (items, frames) = (&pools[0], &pools[1]);
    /// let value = items.alloc_copy(b"stored").unwrap();
    /// assert!(!frames.contains(&value));
    /// assert!(frames.in_registration(&value));  // one UMEM names both
    /// assert_eq!(frames.registration().1, 12 << 20);
    /// ```
    pub fn new_group(configs: &[PoolConfig]) -> std::io::Result<Vec<Pool>> {
        let segments = configs
            .iter()
            .map(Self::segments_for)
            .collect::<std::io::Result<Vec<usize>>>()?;
        let total: usize = segments.iter().sum();
        if total == 0 {
            return Ok(Vec::new());
        }
        let len = total * SEGMENT_SIZE;
        let huge = if configs[0].huge_pages { len } else { 0 };
        let whole = Arc::new(Region::reserve(len, SEGMENT_SIZE, huge)?);
        let mut offset = 0;
        let mut pools = Vec::with_capacity(configs.len());
        for (config, n) in configs.iter().zip(segments) {
            let data = Region::carve(&whole, offset, n * SEGMENT_SIZE);
            offset += n * SEGMENT_SIZE;
            pools.push(Self::with_data(config.clone(), n, 0, data)?);
        }
        Ok(pools)
    }

    fn segments_for(config: &PoolConfig) -> std::io::Result<usize> {
        let num_segments = config.capacity.div_ceil(SEGMENT_SIZE).max(1);
        if num_segments > MAX_SEGMENTS {
            return Err(std::io::Error::other("pool capacity above 256 GiB"));
        }
        Ok(num_segments)
    }

    /// A pool over `data`: `small` segments for the size classes (the
    /// capacity), then `large` segments of address space for large objects
    /// (0: they take small segments).
    fn with_data(
        config: PoolConfig,
        small: usize,
        large: usize,
        data: Region,
    ) -> std::io::Result<Pool> {
        let num_segments = small + large;
        let rc_bytes = num_segments << SLOTS_SHIFT << 3;
        let refcounts = Region::reserve(rc_bytes, 4096, 0)?;
        if config.huge_pages && data.huge_pages() == HugePages::Off {
            log::info!("granola pool: transparent huge pages unavailable, using 4 KiB pages");
        }
        let inner = PoolInner {
            data,
            refcounts,
            num_segments,
            small_segments: small,
            seg_class: (0..num_segments)
                .map(|_| AtomicU8::new(SEG_UNASSIGNED))
                .collect(),
            seg_head: (0..num_segments).map(|_| AtomicU32::new(0)).collect(),
            seg_large_pages: (0..num_segments).map(|_| AtomicU32::new(0)).collect(),
            classes: std::array::from_fn(|_| Mutex::new(ClassState::default())),
            segments: Mutex::new(SegmentAllocator {
                small: Runs::new(0, small as u32),
                large: (large > 0).then(|| Runs::new(small as u32, num_segments as u32)),
                warm: Default::default(),
                warm_large: Default::default(),
                resident: 0,
                capacity: small * SEGMENT_SIZE,
            }),
            budget: config.budget.unwrap_or(usize::MAX),
            budget_used: AtomicUsize::new(0),
            large_live: AtomicUsize::new(0),
            large_live_bytes: AtomicUsize::new(0),
            segments_in_use: AtomicUsize::new(0),
            seg_live: (0..num_segments).map(|_| AtomicU32::new(0)).collect(),
            seg_gen: (0..num_segments).map(|_| AtomicU32::new(0)).collect(),
            seg_touch: (0..num_segments).map(|_| AtomicU32::new(0)).collect(),
            seg_draining: (0..num_segments).map(|_| AtomicBool::new(false)).collect(),
            epoch: AtomicU32::new(0),
            segments_draining: AtomicUsize::new(0),
            segments_released: AtomicU64::new(0),
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
        self.inner.data.holds(bytes)
    }

    /// Whether the data region got transparent huge pages.
    pub fn huge_pages(&self) -> HugePages {
        self.inner.data.huge_pages()
    }

    /// Current usage counters (takes each size class's lock briefly).
    pub fn stats(&self) -> PoolStats {
        let mut live_slots = self.inner.large_live.load(Ordering::Relaxed);
        let mut live_bytes = self.inner.large_live_bytes.load(Ordering::Relaxed);
        for (class, st) in self.inner.classes.iter().enumerate() {
            let live = st.lock().unwrap_or_else(|e| e.into_inner()).live;
            live_slots += live;
            live_bytes += live * CLASSES[class].size as usize;
        }
        let resident_bytes = self
            .inner
            .segments
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .resident;
        PoolStats {
            capacity: self.inner.capacity(),
            resident_bytes,
            segments_in_use: self.inner.segments_in_use.load(Ordering::Relaxed),
            live_slots,
            live_bytes,
            budget_used: self.inner.budget_used.load(Ordering::Relaxed),
            segments_draining: self.inner.segments_draining.load(Ordering::Relaxed),
            segments_released: self.inner.segments_released.load(Ordering::Relaxed),
        }
    }

    /// Notes that `buf`'s slot was used now (a cache read): its segment
    /// becomes the most recently used for [`coldest_segment`](Self::coldest_segment).
    /// One relaxed load, and a store only when the segment's stamp changes.
    #[inline]
    pub fn touch(&self, buf: &Buf) {
        if buf.pool_ptr() == Arc::as_ptr(&self.inner) {
            let seg = (self.inner.slot_from_rc(buf.rc_ptr()) >> SLOTS_SHIFT) as usize;
            self.inner.touch_segment(seg);
        }
    }

    /// The segment whose slots were least recently allocated or touched,
    /// among segments in use and not draining (for a large run: its first
    /// segment). `None` if there is none. O(segments); meant for the rare
    /// moment a full pool cannot serve an allocation.
    ///
    /// A large run whose object has no raw handle is passed over: its
    /// owner already let it go (a reply still sending it keeps it) or is
    /// still writing it, so draining it could free nothing, and choosing it
    /// again and again would starve every allocation until that reply
    /// completes.
    pub fn coldest_segment(&self) -> Option<u32> {
        let inner = &self.inner;
        let now = inner.epoch.load(Ordering::Relaxed);
        let mut best: Option<(u32, u32)> = None;
        for seg in inner.segments_used().into_iter().flatten() {
            let class = inner.seg_class[seg].load(Ordering::Acquire);
            if class == SEG_UNASSIGNED
                || inner.seg_draining[seg].load(Ordering::Relaxed)
                || (class == SEG_LARGE
                    && (inner.seg_head[seg].load(Ordering::Relaxed) != seg as u32
                        || !inner.has_handle((seg as u32) << SLOTS_SHIFT)))
            {
                continue;
            }
            let age = now.wrapping_sub(inner.seg_touch[seg].load(Ordering::Relaxed));
            if best.is_none_or(|(_, a)| age > a) {
                best = Some((seg as u32, age));
            }
        }
        best.map(|(s, _)| s)
    }

    /// The segments a cache that may not evict its items can empty by
    /// moving them into other segments of their class, sparsest first:
    /// small-class segments in use and not draining whose class has at
    /// least as many free slots in its other segments (free-listed or not
    /// yet carved, in segments not draining) as they have live slots.
    /// O(segments); meant for the rare moment a full pool cannot serve an
    /// allocation.
    pub fn movable_segments(&self) -> Vec<u32> {
        let inner = &self.inner;
        // One reading per segment: the counts move under other threads.
        // (segment, class, free slots, live slots)
        let [small, _] = inner.segments_used();
        let segments: Vec<(u32, usize, u64, u64)> = small
            .filter(|&seg| !inner.seg_draining[seg].load(Ordering::Relaxed))
            .filter_map(|seg| {
                let class = inner.seg_class[seg].load(Ordering::Acquire) as usize;
                let per_segment = u64::from(CLASSES.get(class)?.per_segment);
                let live = u64::from(inner.seg_live[seg].load(Ordering::Relaxed)).min(per_segment);
                Some((seg as u32, class, per_segment - live, live))
            })
            .collect();
        let mut free = [0u64; NUM_CLASSES];
        for &(_, class, spare, _) in &segments {
            free[class] += spare;
        }
        let mut movable: Vec<(u32, u64)> = segments
            .into_iter()
            .filter(|&(_, class, spare, live)| live > 0 && live <= free[class] - spare)
            .map(|(seg, .., live)| (seg, live))
            .collect();
        movable.sort_unstable_by_key(|&(_, live)| live);
        movable.into_iter().map(|(seg, _)| seg).collect()
    }

    /// For a large object of `n` segments that finds no free run: the
    /// windows of `n` consecutive segments that can be emptied by moving
    /// their items, at most `limit` of them, fewest live slots first. In
    /// such a window every segment is free, or a small-class segment in use
    /// and not draining, and each class's live slots in the window fit in
    /// that class's free slots outside it. Each window is listed by its
    /// segments in use, the ones to empty. O(segments × n); meant for the
    /// rare moment a full pool cannot place a large object.
    ///
    /// Only a pool of a group ([`Pool::new_group`]) places large objects
    /// in small-class segments; any other pool has none to list: its large
    /// objects have address space of their own and need only room under
    /// the capacity, which emptying any segment makes.
    pub fn movable_runs(&self, n: usize, limit: usize) -> Vec<Vec<u32>> {
        /// A segment as a window sees it.
        #[derive(Clone, Copy)]
        enum Seg {
            Free,
            /// In a large run, or draining: the window cannot have it.
            Fixed,
            Small {
                class: usize,
                spare: u64,
                live: u64,
            },
        }
        let inner = &self.inner;
        if n == 0 || inner.has_large_area() {
            return Vec::new();
        }
        let [small, _] = inner.segments_used();
        // One reading per segment: the counts move under other threads.
        let segments: Vec<Seg> = (0..inner.num_segments)
            .map(|seg| {
                if seg >= small.end {
                    return Seg::Free;
                }
                match inner.seg_class[seg].load(Ordering::Acquire) {
                    SEG_UNASSIGNED => Seg::Free,
                    _ if inner.seg_draining[seg].load(Ordering::Relaxed) => Seg::Fixed,
                    class => match CLASSES.get(class as usize) {
                        None => Seg::Fixed,
                        Some(c) => {
                            let per_segment = u64::from(c.per_segment);
                            let live = u64::from(inner.seg_live[seg].load(Ordering::Relaxed))
                                .min(per_segment);
                            Seg::Small {
                                class: class as usize,
                                spare: per_segment - live,
                                live,
                            }
                        }
                    },
                }
            })
            .collect();
        let mut free = [0u64; NUM_CLASSES];
        for seg in &segments {
            if let Seg::Small { class, spare, .. } = *seg {
                free[class] += spare;
            }
        }
        let mut best: Vec<(u64, Vec<u32>)> = Vec::new();
        'window: for start in 0..segments.len().saturating_sub(n - 1) {
            // (class, live, spare) of the window's segments in use.
            let mut classes: Vec<(usize, u64, u64)> = Vec::new();
            let mut to_empty = Vec::new();
            let mut live_total = 0;
            for (seg, state) in segments[start..start + n].iter().enumerate() {
                match *state {
                    Seg::Free => {}
                    Seg::Fixed => continue 'window,
                    Seg::Small { class, spare, live } => {
                        match classes.iter_mut().find(|(c, ..)| *c == class) {
                            Some((_, l, s)) => {
                                *l += live;
                                *s += spare;
                            }
                            None => classes.push((class, live, spare)),
                        }
                        to_empty.push((start + seg) as u32);
                        live_total += live;
                    }
                }
            }
            let fits = classes
                .iter()
                .all(|&(class, live, spare)| live <= free[class] - spare);
            if !fits || to_empty.is_empty() {
                continue;
            }
            if best.len() < limit || best.last().is_some_and(|&(l, _)| live_total < l) {
                let at = best.partition_point(|&(l, _)| l <= live_total);
                best.insert(at, (live_total, to_empty));
                best.truncate(limit);
            }
        }
        best.into_iter().map(|(_, segs)| segs).collect()
    }

    /// The raw handles of the slots of small-class segment `seg`, as
    /// [`drain_segment`](Self::drain_segment) would list them, without
    /// draining it: for a caller that must see what a segment holds before
    /// it decides to drain it. O(slots of a segment).
    pub fn segment_handles(&self, seg: u32) -> Vec<u32> {
        self.segment_slots(seg)
            .filter(|&slot| self.inner.has_handle(slot))
            .collect()
    }

    /// The application words ([`BufMut::slot_word`]) of the slots of
    /// small-class segment `seg` that a [`BufMut`] still holds: their
    /// owners may have named themselves there, so a caller that needs the
    /// segment emptied can ask them to finish writing (freeze and hand
    /// over the slot). A reading: writers come and go meanwhile.
    pub fn segment_writers(&self, seg: u32) -> Vec<u32> {
        self.segment_slots(seg)
            .filter_map(|slot| {
                let rc = self.inner.rc(slot);
                // SAFETY: `rc` points into the side array of (count, word)
                // pairs (`PoolInner::rc` checks the slot id), initialised
                // AtomicU32s that live as long as the pool.
                let (count, word) = unsafe { (rc.as_ref(), rc.add(1).as_ref()) };
                (count.load(Ordering::Relaxed) & WRITER != 0).then(|| word.load(Ordering::Relaxed))
            })
            .collect()
    }

    /// The slot ids of small-class segment `seg` (none for a free segment,
    /// a large run, or an id out of range).
    fn segment_slots(&self, seg: u32) -> impl Iterator<Item = u32> {
        let per_segment = self
            .inner
            .seg_class
            .get(seg as usize)
            .and_then(|c| CLASSES.get(c.load(Ordering::Acquire) as usize))
            .map_or(0, |info| info.per_segment);
        (0..per_segment).map(move |i| seg << SLOTS_SHIFT | i)
    }

    /// How many slots of small-class segment `seg` are allocated: owned by
    /// a handle or not (a slot a [`BufMut`] still writes, or one only a
    /// send in flight holds). More than
    /// [`segment_handles`](Self::segment_handles) lists means a drain of
    /// it would wait for slots its owner cannot release. A reading: the
    /// count moves under other threads.
    pub fn segment_live(&self, seg: u32) -> usize {
        self.inner
            .seg_live
            .get(seg as usize)
            .map_or(0, |n| n.load(Ordering::Relaxed) as usize)
    }

    /// True while segment `seg` is draining: it serves no allocation and
    /// waits for its last live slot to be freed.
    pub fn is_draining(&self, seg: u32) -> bool {
        self.inner
            .seg_draining
            .get(seg as usize)
            .is_some_and(|d| d.load(Ordering::Relaxed))
    }

    /// Starts draining segment `seg` and returns the raw handles
    /// ([`into_handle`](Self::into_handle)) of its slots, which their owner
    /// should release. From now on no allocation is served from the
    /// segment; it goes back to the shared allocator (for any class) when
    /// its last live slot is freed — after the handles are released and
    /// every other reference (a send in flight) has dropped. Draining a
    /// large run returns its handle (the run is freed with its object).
    /// Calling it again on a draining segment lists the handles left.
    ///
    /// Slots still owned by a [`BufMut`] are not listed: the segment waits
    /// for them too.
    pub fn drain_segment(&self, seg: u32) -> Vec<u32> {
        let inner = &self.inner;
        let mut handles = Vec::new();
        let Some(class) = (seg as usize)
            .lt(&inner.num_segments)
            .then(|| inner.seg_class[seg as usize].load(Ordering::Acquire))
        else {
            return handles;
        };
        match class {
            SEG_UNASSIGNED => {}
            SEG_LARGE => {
                let head = inner.seg_head[seg as usize].load(Ordering::Acquire);
                if inner.has_handle(head << SLOTS_SHIFT) {
                    handles.push(head << SLOTS_SHIFT);
                }
            }
            c => {
                let mut st = inner.classes[c as usize]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if inner.seg_class[seg as usize].load(Ordering::Acquire) != c {
                    return handles; // released meanwhile
                }
                let per_segment = CLASSES[c as usize].per_segment;
                let carved = match st.carving {
                    Some((s, next)) if s == seg => {
                        st.carving = None;
                        next
                    }
                    _ => per_segment,
                };
                if !inner.seg_draining[seg as usize].swap(true, Ordering::Relaxed) {
                    inner.segments_draining.fetch_add(1, Ordering::Relaxed);
                    let live = inner.seg_live[seg as usize].load(Ordering::Relaxed);
                    inner.seg_gen[seg as usize].fetch_add(1, Ordering::Relaxed);
                    st.add_stale((carved - live) as usize, &inner.seg_gen);
                    if live == 0 {
                        inner.release_segment(seg);
                        return handles;
                    }
                }
                for i in 0..carved {
                    if inner.has_handle(seg << SLOTS_SHIFT | i) {
                        handles.push(seg << SLOTS_SHIFT | i);
                    }
                }
            }
        }
        handles
    }

    /// The slot size an allocation of `size` bytes would get (what it costs
    /// against the capacity).
    pub fn slot_size_for(size: usize) -> usize {
        match class_index(size) {
            Some(c) => CLASSES[c].size as usize,
            None => size.div_ceil(PAGE_SIZE) * PAGE_SIZE,
        }
    }

    /// The size class (0 = the smallest, 64 B) an allocation of `size`
    /// bytes would get; `None` above [`MAX_SLOT_SIZE`] (a large object:
    /// a run of segments, charged by its pages).
    pub fn size_class_for(size: usize) -> Option<usize> {
        class_index(size)
    }

    /// The data region as (start address, length): what a datapath registers
    /// with the kernel (io_uring fixed buffers, an AF_XDP UMEM) or NIC.
    /// Registration pins the region's pages, so from this call on the pool
    /// stops giving freed pages back to the kernel (the resident size then
    /// keeps its high-water mark).
    pub fn region(&self) -> (NonNull<u8>, usize) {
        self.inner.data.pin();
        (self.inner.data.base(), self.inner.data.len())
    }

    /// The whole mapping this pool was carved from, as (start, length):
    /// its own [`region`](Self::region) for a pool made alone, the group's
    /// mapping for one made by [`new_group`](Self::new_group). What a
    /// datapath registers so that buffers of every pool of the group can
    /// be named (an AF_XDP UMEM). Pins the whole mapping, as `region`
    /// does.
    pub fn registration(&self) -> (NonNull<u8>, usize) {
        let m = self.inner.data.mapping();
        m.pin();
        (m.base(), m.len())
    }

    /// True if `bytes` lies inside [`registration`](Self::registration)'s
    /// range (this pool's or another pool's of its group).
    #[inline]
    pub fn in_registration(&self, bytes: &[u8]) -> bool {
        self.inner.data.mapping().holds(bytes)
    }

    /// Turns `buf` into a raw slot handle that owns `buf`'s reference, for
    /// structures that store references compactly (an index entry). The
    /// view (offset, length) is forgotten: [`from_handle`](Self::from_handle)
    /// and [`try_acquire`](Self::try_acquire) return the whole slot.
    ///
    /// A slot has at most one raw handle at a time. Gives `buf` back if its
    /// slot already has one or if it belongs to another pool.
    ///
    /// ```
    /// let pool = granola::Pool::with_capacity(4 << 20).unwrap();
    /// let item = pool.alloc_copy(b"stored value").unwrap();
    /// let h = pool.into_handle(item).unwrap();          // the table owns it
    /// let reader = pool.try_acquire(h).unwrap();        // a reader's own ref
    /// assert_eq!(&reader[..12], b"stored value");        // whole slot
    /// assert!(pool.release_handle(h));                  // table drops it
    /// assert!(!pool.release_handle(h));                 // only once
    /// assert_eq!(&reader[..12], b"stored value");        // reader still holds it
    /// ```
    pub fn into_handle(&self, buf: Buf) -> Result<u32, Buf> {
        if buf.pool_ptr() != Arc::as_ptr(&self.inner) {
            return Err(buf);
        }
        let rc_ptr = buf.rc_ptr();
        // SAFETY: buf holds a reference, so its count entry is live.
        let rc = unsafe { rc_ptr.as_ref() };
        let mut cur = rc.load(Ordering::Relaxed);
        loop {
            if cur & HANDLE != 0 {
                return Err(buf);
            }
            match rc.compare_exchange_weak(cur, cur | HANDLE, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        // buf's reference now belongs to the handle: do not drop it.
        std::mem::forget(buf);
        Ok(self.inner.slot_from_rc(rc_ptr))
    }

    /// Takes the reference owned by `handle` back as a [`Buf`] over the
    /// whole slot. `None` (and nothing changes) if the slot has no raw
    /// handle.
    pub fn from_handle(&self, handle: u32) -> Option<Buf> {
        let rc_ptr = self.inner.handle_rc(handle)?;
        // SAFETY: handle_rc checked the slot id against the refcount region.
        let rc = unsafe { rc_ptr.as_ref() };
        let mut cur = rc.load(Ordering::Relaxed);
        loop {
            if cur & HANDLE == 0 || cur & WRITER != 0 {
                return None;
            }
            match rc.compare_exchange_weak(cur, cur & !HANDLE, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        // SAFETY: the handle's reference (count >= 1, frozen) is now ours.
        Some(unsafe { PoolInner::whole_slot(&self.inner, handle, rc_ptr) })
    }

    /// Drops the reference owned by `handle` (the slot is freed if it was
    /// the last). `false` if the slot has no raw handle (already released,
    /// or never made one).
    pub fn release_handle(&self, handle: u32) -> bool {
        let Some(rc_ptr) = self.inner.handle_rc(handle) else {
            return false;
        };
        // SAFETY: handle_rc checked the slot id against the refcount region.
        let rc = unsafe { rc_ptr.as_ref() };
        let mut cur = rc.load(Ordering::Relaxed);
        let next = loop {
            if cur & HANDLE == 0 || cur & WRITER != 0 {
                return false;
            }
            // The handle's reference is part of the count, so count >= 1.
            let next = (cur & !HANDLE) - 1;
            match rc.compare_exchange_weak(cur, next, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => break next,
                Err(now) => cur = now,
            }
        };
        if next == 0 {
            // Pairs with the Release decrements of every other handle, as in
            // Buf::drop.
            fence(Ordering::Acquire);
            // Arc::as_ptr keeps provenance over the whole Arc allocation.
            // SAFETY: Arc::as_ptr never returns null.
            let pool = unsafe { NonNull::new_unchecked(Arc::as_ptr(&self.inner).cast_mut()) };
            // SAFETY: the count just reached zero: this was the last
            // reference, and the slot's pool reference is released once.
            unsafe { release_slot(pool, rc_ptr) };
        }
        true
    }

    /// A new reference to the slot `handle` names, as a [`Buf`] over the
    /// whole slot, if the slot is live and frozen (count > 0, no writer):
    /// the count is incremented with a compare-and-swap loop, so a slot that
    /// is being freed is never revived. `None` for free slots, slots held by
    /// a [`BufMut`], and handles out of range.
    ///
    /// The handle need not be owned by the caller: this is how a lock-free
    /// reader follows a handle it loaded from a shared table. Between that
    /// load and this call the slot may have been freed and reused for other
    /// data, so check what you got (re-load the table entry, compare a key).
    #[inline]
    pub fn try_acquire(&self, handle: u32) -> Option<Buf> {
        let rc_ptr = self.inner.handle_rc(handle)?;
        // SAFETY: handle_rc checked the slot id against the refcount region.
        let rc = unsafe { rc_ptr.as_ref() };
        let mut cur = rc.load(Ordering::Relaxed);
        loop {
            if cur & COUNT_MASK == 0 || cur & WRITER != 0 {
                return None;
            }
            if cur & COUNT_MASK > MAX_REFS {
                std::process::abort();
            }
            // Acquire: synchronises with the freeze (Release) that published
            // the slot's bytes; every later count change is an RMW in its
            // release sequence.
            match rc.compare_exchange_weak(cur, cur + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        // SAFETY: we just took a reference on a live, frozen slot.
        Some(unsafe { PoolInner::whole_slot(&self.inner, handle, rc_ptr) })
    }

    /// Lets `write` change the bytes of `buf`'s slot in place, when nothing
    /// but `buf` and the slot's raw handle refers to it: a cache overwriting
    /// a stored value of the same size class saves the allocation, the
    /// release of the old slot and its handle's table update. `buf` must
    /// view the whole slot, and the slot's segment must not be draining.
    /// The slot word becomes `word`, if given, before readers can see the
    /// new bytes (a new value starts afresh, as after an allocation; a
    /// rewrite of metadata may keep it). Returns true if `write` ran (`buf`
    /// then views the new bytes), false if nothing changed.
    ///
    /// `buf` is borrowed, not taken, so that a caller rewriting an item
    /// it found moves nothing: a move copies the caller's structure
    /// through the stack, and the copy's wide loads of the narrower stores
    /// that just built it stall. It is borrowed mutably so that `write`
    /// cannot hold it and clone it while the bytes change.
    ///
    /// The count proves that no other [`Buf`] exists (an in-flight
    /// zero-copy send holds one, so its bytes are never rewritten), and
    /// while `write` runs the slot counts as written: [`try_acquire`],
    /// [`recover`](Self::recover), [`from_handle`](Self::from_handle) and
    /// [`release_handle`](Self::release_handle) refuse it as they refuse a
    /// [`BufMut`]'s. The count is reset with a Release store, so a reader
    /// whose `try_acquire` succeeds afterwards sees the new bytes. A reader
    /// that loaded the handle before and fails meanwhile must look again,
    /// as for any slot it could not acquire.
    ///
    /// [`try_acquire`]: Self::try_acquire
    pub fn rewrite_in_place(
        &self,
        buf: &mut Buf,
        word: Option<u32>,
        write: impl FnOnce(&mut [u8]),
    ) -> bool {
        if buf.pool_ptr() != Arc::as_ptr(&self.inner) {
            return false;
        }
        let slot = self.inner.slot_from_rc(buf.rc_ptr());
        let (off, len) = self.inner.slot_extent(slot);
        let seg = (slot >> SLOTS_SHIFT) as usize;
        let start = self.inner.slot_data(slot);
        if buf.data_ptr() != start
            || buf.len() != len
            || self.inner.seg_draining[seg].load(Ordering::Relaxed)
        {
            return false;
        }
        debug_assert_eq!(
            start.as_ptr().addr() - self.inner.data.base().as_ptr().addr(),
            off
        );
        // SAFETY: buf holds a reference, so its count entry is live.
        let rc = unsafe { buf.rc_ptr().as_ref() };
        // Acquire: every other reference's last reads of the slot (their
        // Release decrements) happen before our writes.
        if rc
            .compare_exchange(
                HANDLE | 2,
                HANDLE | WRITER | 2,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        /// Puts the count back, also if `write` panics (the bytes are then
        /// whatever it left, as after a panicking `BufMut` writer).
        struct Reopened<'a>(&'a AtomicU32);
        impl Drop for Reopened<'_> {
            fn drop(&mut self) {
                self.0.store(HANDLE | 2, Ordering::Release);
            }
        }
        let reopened = Reopened(rc);
        // SAFETY: the slot spans `len` bytes from `start` in the data
        // region; the count showed only `buf` and the handle, neither of
        // which reads while WRITER is set (`buf` is not touched until the
        // count is reset), and every way to a new reference refuses WRITER.
        write(unsafe { std::slice::from_raw_parts_mut(start.as_ptr(), len) });
        if let Some(word) = word {
            buf.slot_word().store(word, Ordering::Relaxed);
        }
        drop(reopened);
        self.inner.touch_segment(seg);
        true
    }

    /// The size of the slot `buf` lives in (what it costs against the
    /// capacity); the same as [`Buf::slot_size`], which is right for a
    /// buffer of any pool.
    pub fn slot_size(&self, buf: &Buf) -> usize {
        buf.slot_size()
    }
}

impl PoolInner {
    /// Whether `slot` (a slot id of a segment in use) is owned by a raw
    /// handle, and not by a writer.
    fn has_handle(&self, slot: u32) -> bool {
        // SAFETY: slot ids below num_segments << SLOTS_SHIFT are in bounds
        // of the refcount region (checked in debug builds by `rc`).
        let c = unsafe { self.rc(slot).as_ref() }.load(Ordering::Relaxed);
        c & HANDLE != 0 && c & WRITER == 0
    }

    #[inline]
    fn rc(&self, slot: u32) -> NonNull<AtomicU32> {
        debug_assert!((slot as usize) < self.num_segments << SLOTS_SHIFT);
        // SAFETY: slot < num_segments << SLOTS_SHIFT, and the side region
        // holds exactly that many (count, word) pairs of u32s,
        // zero-initialised (valid AtomicU32s).
        unsafe {
            self.refcounts
                .base()
                .cast::<AtomicU32>()
                .add(2 * slot as usize)
        }
    }

    /// The size of the slot whose count is `rc`.
    #[inline]
    pub(super) fn slot_size_of_rc(&self, rc: NonNull<AtomicU32>) -> usize {
        self.slot_extent(self.slot_from_rc(rc)).1
    }

    #[inline]
    fn slot_from_rc(&self, rc: NonNull<AtomicU32>) -> u32 {
        let off = rc.as_ptr().addr() - self.refcounts.base().as_ptr().addr();
        (off / 8) as u32
    }

    #[inline]
    fn slot_offset(&self, slot: u32) -> usize {
        let seg = (slot >> SLOTS_SHIFT) as usize;
        let class = self.seg_class[seg].load(Ordering::Relaxed);
        let index = (slot & ((1 << SLOTS_SHIFT) - 1)) as usize;
        if class == SEG_LARGE {
            seg << SEGMENT_SHIFT
        } else {
            (seg << SEGMENT_SHIFT) + index * CLASSES[class as usize].size as usize
        }
    }

    #[inline]
    fn slot_data(&self, slot: u32) -> NonNull<u8> {
        // SAFETY: slot_offset is < the data region length for any allocated
        // slot.
        unsafe { self.data.base().add(self.slot_offset(slot)) }
    }

    /// The count entry of slot id `handle`, if the id is in range.
    #[inline]
    fn handle_rc(&self, handle: u32) -> Option<NonNull<AtomicU32>> {
        ((handle >> SLOTS_SHIFT) < self.num_segments as u32).then(|| self.rc(handle))
    }

    /// (offset, length) of a live slot in the data region.
    #[inline]
    fn slot_extent(&self, slot: u32) -> (usize, usize) {
        let seg = (slot >> SLOTS_SHIFT) as usize;
        let class = self.seg_class[seg].load(Ordering::Acquire);
        if class == SEG_LARGE {
            let pages = self.seg_large_pages[seg].load(Ordering::Acquire);
            (seg << SEGMENT_SHIFT, pages as usize * PAGE_SIZE)
        } else {
            debug_assert!((class as usize) < NUM_CLASSES);
            let info = &CLASSES[class as usize];
            let index = (slot & ((1 << SLOTS_SHIFT) - 1)) as usize;
            (
                (seg << SEGMENT_SHIFT) + index * info.size as usize,
                info.size as usize,
            )
        }
    }

    /// A `Buf` over the whole of a live slot.
    ///
    /// # Safety
    /// The caller holds one reference on the slot (count > 0, no writer) and
    /// transfers it to the returned `Buf`; `rc` is the slot's count entry.
    #[inline]
    unsafe fn whole_slot(this: &Arc<PoolInner>, slot: u32, rc: NonNull<AtomicU32>) -> Buf {
        // A count > 0 exists only for an allocated slot id, whose segment
        // keeps its class (small) or run (large) while the slot lives, so
        // the extent read here is the slot's.
        let (off, len) = this.slot_extent(slot);
        // SAFETY: Arc::as_ptr never returns null (provenance as in recover).
        let pool = unsafe { NonNull::new_unchecked(Arc::as_ptr(this).cast_mut()) };
        // SAFETY: [off, off+len) is the live slot, inside the data region;
        // the caller's reference moves into the Buf.
        unsafe { Buf::from_raw_parts(pool, rc, this.data.base().add(off), len) }
    }

    fn alloc_slot(&self, size: usize) -> Option<(u32, usize)> {
        let class = class_index(size);
        // Only a pool with a budget pays for the charge (one atomic).
        let charged = (self.budget != usize::MAX).then(|| Pool::slot_size_for(size));
        if charged.is_some_and(|bytes| !self.charge(bytes)) {
            return None;
        }
        let got = match class {
            Some(class) => self
                .alloc_small(class)
                .map(|slot| (slot, CLASSES[class].size as usize)),
            None => self.alloc_large(size).inspect(|&(_, cap)| {
                self.large_live.fetch_add(1, Ordering::Relaxed);
                self.large_live_bytes.fetch_add(cap, Ordering::Relaxed);
            }),
        };
        let Some((slot, cap)) = got else {
            if let Some(bytes) = charged {
                self.budget_used.fetch_sub(bytes, Ordering::Relaxed);
            }
            return None;
        };
        // SAFETY: rc() of an allocated slot is in bounds; the count was 0
        // (free) and no one else can reach the slot yet.
        unsafe { self.rc(slot).as_ref() }.store(WRITER, Ordering::Relaxed);
        // SAFETY: as above; the word follows the count (`rc`).
        unsafe { self.rc(slot).add(1).as_ref() }.store(0, Ordering::Relaxed);
        Some((slot, cap))
    }

    fn alloc_small(&self, class: usize) -> Option<u32> {
        let mut st = self.classes[class]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while let Some(e) = st.free.pop() {
            let slot = e as u32;
            let seg = (slot >> SLOTS_SHIFT) as usize;
            if self.seg_gen[seg].load(Ordering::Relaxed) != (e >> 32) as u32 {
                st.stale = st.stale.saturating_sub(1);
                continue; // its segment was released or is draining
            }
            self.seg_live[seg].fetch_add(1, Ordering::Relaxed);
            self.touch_segment(seg);
            st.live += 1;
            return Some(slot);
        }
        let per_segment = CLASSES[class].per_segment;
        if let Some((seg, next)) = st.carving {
            st.carving = (next + 1 < per_segment).then_some((seg, next + 1));
            self.seg_live[seg as usize].fetch_add(1, Ordering::Relaxed);
            self.touch_segment(seg as usize);
            st.live += 1;
            return Some(seg << SLOTS_SHIFT | next);
        }
        let seg = {
            let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            self.take_small_segment(&mut segs)?
        };
        self.seg_live[seg as usize].store(1, Ordering::Relaxed);
        self.seg_class[seg as usize].store(class as u8, Ordering::Release);
        self.seg_head[seg as usize].store(seg, Ordering::Release);
        self.segments_in_use.fetch_add(1, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::Relaxed);
        self.touch_segment(seg as usize);
        st.carving = (per_segment > 1).then_some((seg, 1));
        st.live += 1;
        Some(seg << SLOTS_SHIFT)
    }

    /// The capacity in bytes (the small-class segments).
    fn capacity(&self) -> usize {
        self.small_segments * SEGMENT_SIZE
    }

    /// Whether large objects have address space of their own.
    fn has_large_area(&self) -> bool {
        self.num_segments > self.small_segments
    }

    /// The parts of the segment table handed out at least once: small-class
    /// segments, and the large-object area (empty if the pool has none).
    fn segments_used(&self) -> [std::ops::Range<usize>; 2] {
        let segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
        let large = segs
            .large
            .as_ref()
            .map_or(0..0, |r| r.first as usize..r.next as usize);
        [0..segs.small.next as usize, large]
    }

    #[inline]
    fn touch_segment(&self, seg: usize) {
        let now = self.epoch.load(Ordering::Relaxed);
        if self.seg_touch[seg].load(Ordering::Relaxed) != now {
            self.seg_touch[seg].store(now, Ordering::Relaxed);
        }
    }

    /// Gives an empty small-class segment back to the shared allocator,
    /// and its pages back to the kernel: memory the pool no longer uses
    /// stops counting in the process's RSS, so what the pool's user keeps
    /// elsewhere (on the heap) under the same budget is not double-paid.
    /// The last [`WARM_SEGMENTS`] released keep their pages until more are
    /// released (see [`SegmentAllocator::warm`]). Called with its class
    /// lock held, after its free-list entries were invalidated (generation
    /// bumped).
    fn release_segment(&self, seg: u32) {
        if self.seg_draining[seg as usize].swap(false, Ordering::Relaxed) {
            self.segments_draining.fetch_sub(1, Ordering::Relaxed);
        }
        self.seg_class[seg as usize].store(SEG_UNASSIGNED, Ordering::Release);
        self.segments_in_use.fetch_sub(1, Ordering::Relaxed);
        self.segments_released.fetch_add(1, Ordering::Relaxed);
        let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
        segs.warm.push_back(seg);
        if segs.warm.len() > WARM_SEGMENTS {
            let cold = segs.warm.pop_front().expect("more than WARM_SEGMENTS");
            // Under the allocator's lock: nobody can take it meanwhile.
            self.data
                .discard((cold as usize) << SEGMENT_SHIFT, SEGMENT_SIZE);
            segs.give_back_small(cold);
        }
    }

    /// A small-class segment: a warm one, else a fresh one if the
    /// capacity has room for it (made by giving back warm large objects'
    /// pages if need be).
    fn take_small_segment(&self, segs: &mut SegmentAllocator) -> Option<u32> {
        if let Some(seg) = segs.warm.pop_back() {
            return Some(seg);
        }
        if !self.make_room(segs, SEGMENT_SIZE) {
            return None;
        }
        let seg = segs.small.take(1)?;
        segs.resident += SEGMENT_SIZE;
        Some(seg)
    }

    /// Gives back the pages of warm large objects, oldest first, then of
    /// warm small-class segments, until `bytes` more fit under the
    /// capacity; false if they cannot.
    fn make_room(&self, segs: &mut SegmentAllocator, bytes: usize) -> bool {
        while segs.capacity - segs.resident < bytes {
            if !self.forget_warm_large(segs) {
                let Some(seg) = segs.warm.pop_front() else {
                    return false;
                };
                self.data
                    .discard((seg as usize) << SEGMENT_SHIFT, SEGMENT_SIZE);
                segs.give_back_small(seg);
            }
        }
        true
    }

    /// Gives the oldest warm large object's pages back to the kernel and
    /// its run to the free runs; false if there is none.
    fn forget_warm_large(&self, segs: &mut SegmentAllocator) -> bool {
        let Some((seg, pages)) = segs.warm_large.pop_front() else {
            return false;
        };
        let len = pages as usize * PAGE_SIZE;
        self.data.discard((seg as usize) << SEGMENT_SHIFT, len);
        segs.resident -= len;
        if let Some(large) = segs.large.as_mut() {
            large.give_back(seg, run_segments(pages));
        }
        true
    }

    /// A run of segments for an object of `size` bytes (over 1 MiB): its
    /// first slot id and its length, `size` rounded up to pages. The pages
    /// are charged against the capacity, the rest of the run's last
    /// segment is address space only: a 1.1 MiB value costs 1.1 MiB, not
    /// 2 MiB. In a pool of a group the run takes small segments.
    fn alloc_large(&self, size: usize) -> Option<(u32, usize)> {
        let pages = u32::try_from(size.div_ceil(PAGE_SIZE)).ok()?;
        let len = pages as usize * PAGE_SIZE;
        let n = u32::try_from(len.div_ceil(SEGMENT_SIZE)).ok()?;
        let (start, resident_pages) = {
            let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            if self.has_large_area() {
                self.place_large(&mut segs, pages)?
            } else {
                (self.place_large_in_small_segments(&mut segs, len)?, pages)
            }
        };
        for seg in start..start + n {
            self.seg_class[seg as usize].store(SEG_LARGE, Ordering::Release);
            self.seg_head[seg as usize].store(start, Ordering::Release);
        }
        self.epoch.fetch_add(1, Ordering::Relaxed);
        self.touch_segment(start as usize);
        self.seg_large_pages[start as usize].store(pages, Ordering::Release);
        self.segments_in_use
            .fetch_add(n as usize, Ordering::Relaxed);
        if resident_pages < pages {
            let from = resident_pages as usize * PAGE_SIZE;
            self.data
                .populate(((start as usize) << SEGMENT_SHIFT) + from, len - from);
        }
        Some((start << SLOTS_SHIFT, len))
    }

    /// Places a large object of `pages` in the large-object area: in the
    /// run of the warm object that fits it best (its pages beyond the new
    /// object's go back to the kernel, its segments beyond to the free
    /// runs), else in a free run. Returns the run's first segment and how
    /// many of the object's pages are resident already.
    fn place_large(&self, segs: &mut SegmentAllocator, pages: u32) -> Option<(u32, u32)> {
        let len = pages as usize * PAGE_SIZE;
        let n = run_segments(pages);
        let warm = (0..segs.warm_large.len())
            .filter(|&i| run_segments(segs.warm_large[i].1) >= n)
            .min_by_key(|&i| segs.warm_large[i].1);
        if let Some(i) = warm {
            let (seg, warm_pages) = segs.warm_large.remove(i).expect("an index of the list");
            let warm_len = warm_pages as usize * PAGE_SIZE;
            if warm_len >= len || self.make_room(segs, len - warm_len) {
                let base = (seg as usize) << SEGMENT_SHIFT;
                if warm_len > len {
                    self.data.discard(base + len, warm_len - len);
                }
                segs.resident = segs.resident - warm_len + len;
                let warm_n = run_segments(warm_pages);
                if warm_n > n {
                    let large = segs.large.as_mut().expect("a pool with a large area");
                    large.give_back(seg + n, warm_n - n);
                }
                return Some((seg, warm_pages.min(pages)));
            }
            segs.warm_large.push_front((seg, warm_pages));
        }
        if !self.make_room(segs, len) {
            return None;
        }
        let large = segs.large.as_mut().expect("a pool with a large area");
        let start = match large.take(n) {
            Some(start) => start,
            None => {
                // Warm runs hold segments out of the free runs: let them go.
                while self.forget_warm_large(segs) {}
                segs.large.as_mut().expect("as above").take(n)?
            }
        };
        segs.resident += len;
        Some((start, 0))
    }

    /// Places a large object of `len` bytes in a run of small-class
    /// segments (a pool of a group). The warm segments go back first, so
    /// the run may span them (first fit keeps the region compact); those
    /// it does not use give their pages back.
    fn place_large_in_small_segments(
        &self,
        segs: &mut SegmentAllocator,
        len: usize,
    ) -> Option<u32> {
        let n = len.div_ceil(SEGMENT_SIZE) as u32;
        let warm: Vec<u32> = segs.warm.drain(..).collect();
        for &seg in &warm {
            segs.give_back_small(seg);
        }
        let start = if segs.commit(len) {
            let start = segs.small.take(n);
            if start.is_none() {
                segs.resident -= len;
            }
            start
        } else {
            None
        };
        for seg in warm {
            if start.is_none_or(|s| seg < s || seg >= s + n) {
                self.data
                    .discard((seg as usize) << SEGMENT_SHIFT, SEGMENT_SIZE);
            }
        }
        start
    }

    /// Returns a slot whose count just reached zero to its free list.
    /// Charges `bytes` against the budget; false (nothing charged) if they
    /// do not fit.
    fn charge(&self, bytes: usize) -> bool {
        self.budget_used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&u| u <= self.budget)
            })
            .is_ok()
    }

    fn free_slot(&self, slot: u32) {
        let seg = slot >> SLOTS_SHIFT;
        let class = self.seg_class[seg as usize].load(Ordering::Acquire);
        if self.budget != usize::MAX {
            let size = if class == SEG_LARGE {
                self.seg_large_pages[seg as usize].load(Ordering::Acquire) as usize * PAGE_SIZE
            } else {
                CLASSES[class as usize].size as usize
            };
            self.budget_used.fetch_sub(size, Ordering::Relaxed);
        }
        if class == SEG_LARGE {
            let pages = self.seg_large_pages[seg as usize].load(Ordering::Acquire);
            let (len, n) = (pages as usize * PAGE_SIZE, run_segments(pages));
            for s in seg..seg + n {
                self.seg_class[s as usize].store(SEG_UNASSIGNED, Ordering::Release);
            }
            self.segments_in_use
                .fetch_sub(n as usize, Ordering::Relaxed);
            let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
            if segs.large.as_ref().is_some_and(|large| large.contains(seg)) {
                // Kept resident for the next large object.
                segs.warm_large.push_back((seg, pages));
                if segs.warm_large.len() > WARM_LARGE {
                    self.forget_warm_large(&mut segs);
                }
            } else {
                self.data.discard((seg as usize) << SEGMENT_SHIFT, len);
                segs.small.give_back(seg, n);
                segs.resident -= len;
            }
            self.large_live.fetch_sub(1, Ordering::Relaxed);
            self.large_live_bytes.fetch_sub(len, Ordering::Relaxed);
        } else {
            let mut st = self.classes[class as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            st.live -= 1;
            let s = seg as usize;
            let live = self.seg_live[s].load(Ordering::Relaxed) - 1;
            self.seg_live[s].store(live, Ordering::Relaxed);
            if self.seg_draining[s].load(Ordering::Relaxed) {
                // Its free slots left the free list when draining began.
                if live == 0 {
                    self.release_segment(seg);
                }
            } else if live == 0 {
                // Empty: every other carved slot of it is in the free list;
                // drop them (lazily) and let any class take the segment.
                let carved = match st.carving {
                    Some((c, next)) if c == seg => {
                        st.carving = None;
                        next
                    }
                    _ => CLASSES[class as usize].per_segment,
                };
                self.seg_gen[s].fetch_add(1, Ordering::Relaxed);
                st.add_stale(carved as usize - 1, &self.seg_gen);
                self.release_segment(seg);
            } else {
                let gen = self.seg_gen[s].load(Ordering::Relaxed);
                st.free.push(u64::from(slot) | u64::from(gen) << 32);
            }
        }
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
                let pages = this.seg_large_pages[head as usize].load(Ordering::Acquire);
                (
                    head << SLOTS_SHIFT,
                    (head as usize) << SEGMENT_SHIFT,
                    pages as usize * PAGE_SIZE,
                )
            }
            c => {
                let info = &CLASSES[c as usize];
                let index = slot_index(off & (SEGMENT_SIZE - 1), info);
                let size = info.size as usize;
                (
                    (seg as u32) << SLOTS_SHIFT | index as u32,
                    (seg << SEGMENT_SHIFT) + index * size,
                    size,
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
        // (A slice in the unused tail of a segment maps to an index past the
        // last slot, whose count is always 0: refused here too.)
        let cur = rc.load(Ordering::Relaxed);
        if cur & COUNT_MASK == 0 || cur & WRITER != 0 {
            return None;
        }
        if rc.fetch_add(1, Ordering::Relaxed) & COUNT_MASK > MAX_REFS {
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
        assert_eq!(class_index(80), Some(1));
        assert_eq!(class_index(81), Some(2));
        assert_eq!(class_index(128), Some(4));
        assert_eq!(class_index(129), Some(5));
        assert_eq!(CLASSES[5].size, 160);
        assert_eq!(class_index(MAX_SLOT_SIZE), Some(NUM_CLASSES - 1));
        assert_eq!(class_index(MAX_SLOT_SIZE + 1), None);
    }

    #[test]
    fn class_table_is_the_jemalloc_ladder() {
        let sizes: Vec<u32> = CLASSES.iter().map(|c| c.size).collect();
        assert_eq!(
            &sizes[..13],
            &[64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512]
        );
        // Above 256 KiB: the largest multiple of 64 that 7 ... 2 fit in 2 MiB.
        assert_eq!(
            sizes[sizes.len() - 7..],
            [
                256 << 10,
                299_584,
                349_504,
                419_392,
                512 << 10,
                699_008,
                1 << 20
            ]
        );
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
        for (c, info) in CLASSES.iter().enumerate() {
            let size = info.size as usize;
            assert_eq!(class_index(size), Some(c), "class {c} holds its own size");
            assert_eq!(
                class_index(size + 1),
                (c + 1 < NUM_CLASSES).then_some(c + 1)
            );
            assert!(info.per_segment as usize * size <= SEGMENT_SIZE);
            assert!(info.per_segment as usize <= 1 << SLOTS_SHIFT);
            // The unused tail of a segment is at most 12.5 % of it.
            assert!(SEGMENT_SIZE - info.per_segment as usize * size <= SEGMENT_SIZE / 8);
            // A slot is at most 20 % larger than the class below up to
            // 256 KiB, and at most about half again as large above.
            if c > 0 {
                let prev = CLASSES[c - 1].size as usize;
                if size <= 1 << FINE_SHIFT {
                    assert!(size * 4 <= prev * 5, "{prev} -> {size}");
                } else {
                    assert!(size * 100 <= prev * 151, "{prev} -> {size}");
                    assert!(SEGMENT_SIZE - info.per_segment as usize * size < 64 * 7);
                }
            }
        }
    }

    #[test]
    fn reciprocal_division_is_exact() {
        // The only offsets where floor division can go wrong are next to
        // multiples of the size: check both sides of every slot boundary.
        let stride = if cfg!(miri) { 997 } else { 1 };
        for info in &CLASSES {
            let size = info.size as usize;
            let mut i = 0;
            while i * size < SEGMENT_SIZE {
                for off in [i * size, i * size + size - 1, (i * size).wrapping_sub(1)] {
                    if off < SEGMENT_SIZE {
                        assert_eq!(slot_index(off, info), off / size, "size {size} off {off}");
                    }
                }
                i += stride;
            }
            assert_eq!(
                slot_index(SEGMENT_SIZE - 1, info),
                (SEGMENT_SIZE - 1) / size
            );
        }
    }

    #[test]
    fn recover_rejects_slices_spanning_two_slots() {
        let p = Pool::new(PoolConfig {
            capacity: 2 * SEGMENT_SIZE,
            huge_pages: false,
            budget: None,
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
        let mut a = Runs::new(0, 10);
        let x = a.take(2).unwrap();
        let y = a.take(3).unwrap();
        let z = a.take(1).unwrap();
        assert_eq!((x, y, z), (0, 2, 5));
        a.give_back(x, 2);
        a.give_back(y, 3);
        assert_eq!(a.free_runs.get(&0), Some(&5));
        assert_eq!(a.take(5), Some(0));
        assert_eq!(a.take(5), None, "only 4 never-used segments remain");
        a.give_back(z, 1);
        a.give_back(0, 5);
        assert!(a.free_runs.is_empty());
        assert_eq!(a.next, 0);
    }
}
