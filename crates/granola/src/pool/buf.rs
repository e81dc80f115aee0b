//! [`Buf`]: an immutable, shared view of pool memory.
//!
//! ```text
//!   Buf { data, len, rc, pool }                 (32 bytes, Send + Sync)
//!          |     |    |
//!          v     |    +--> rc[slot]: AtomicU32  (side array, one per slot,
//!          |     |                               beside the slot word)
//!   slot: [....XXXXXXXXXXX......]               (pool data region)
//!              ^<- len ->^
//! ```
//!
//! Clones share the slot and bump its count; the slot goes back to the pool
//! when the last `Buf` drops. There is no way to obtain `&mut` access to the
//! bytes of a `Buf`: once frozen, pool data is immutable for everyone who
//! can read it (the write protection that Cornflakes leaves to the
//! application). The one exception, [`Pool::rewrite_in_place`](super::Pool::rewrite_in_place),
//! borrows the only `Buf` of its slot mutably, so no reader is left to
//! see the bytes change.

use super::{release_slot, PoolInner, COUNT_MASK, MAX_REFS};
use std::ops::{Bound, Deref, RangeBounds};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, Ordering};

/// An immutable, reference-counted slice of pool memory.
///
/// Cheap to clone (one atomic increment on the slot's count); `Send + Sync`.
/// Obtain one from [`BufMut::freeze`](super::BufMut::freeze),
/// [`Pool::recover`](super::Pool::recover) or [`Buf::slice`].
#[must_use = "dropping a Buf releases its reference"]
pub struct Buf {
    data: NonNull<u8>,
    len: usize,
    rc: NonNull<AtomicU32>,
    pool: NonNull<PoolInner>,
}

// SAFETY: the bytes behind a Buf are never written while another Buf can
// read them (the slot is frozen; `rewrite_in_place` holds the only one), the
// count is atomic, and PoolInner is Sync.
unsafe impl Send for Buf {}
// SAFETY: as above; &Buf only gives shared reads.
unsafe impl Sync for Buf {}

impl Buf {
    /// # Safety
    /// The caller transfers one reference on the slot owning `rc` to the new
    /// Buf; `[data, data+len)` must lie inside that slot and be frozen.
    #[inline]
    pub(super) unsafe fn from_raw_parts(
        pool: NonNull<PoolInner>,
        rc: NonNull<AtomicU32>,
        data: NonNull<u8>,
        len: usize,
    ) -> Buf {
        Buf {
            data,
            len,
            rc,
            pool,
        }
    }

    /// Number of bytes in view.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the view is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: data..data+len lies in a live, frozen slot that this Buf
        // holds a reference on; nothing writes to it until the count is 0.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    /// A new `Buf` for a sub-range of this one (shares the slot).
    ///
    /// # Panics
    /// If the range is out of bounds, like slice indexing.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Buf {
        match self.try_slice(range) {
            Some(b) => b,
            None => panic!("Buf::slice out of bounds (len {})", self.len),
        }
    }

    /// Like [`slice`](Self::slice), but `None` instead of panicking.
    pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Option<Buf> {
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.checked_add(1)?,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&e) => e.checked_add(1)?,
            Bound::Excluded(&e) => e,
            Bound::Unbounded => self.len,
        };
        if start > end || end > self.len {
            return None;
        }
        let mut b = self.clone();
        // SAFETY: start <= len, so the pointer stays within (or one past) the
        // viewed range, which lies inside the slot.
        b.data = unsafe { self.data.add(start) };
        b.len = end - start;
        Some(b)
    }

    /// Current number of references to this slot: `Buf`s sharing it plus
    /// the raw handle, if any (for tests and metrics; racy by nature when
    /// other threads hold clones).
    pub fn ref_count(&self) -> u32 {
        // SAFETY: rc points into the refcount side array of a live pool.
        unsafe { self.rc.as_ref() }.load(Ordering::Relaxed) & COUNT_MASK
    }

    /// The slot's application word: one `AtomicU32` per slot beside its
    /// reference count (same cache line), zero when the slot was allocated,
    /// shared by every `Buf` of the slot and left alone by the pool. Bytes
    /// of a frozen slot never change; this word may, e.g. a cache's
    /// last-access time of the item stored in the slot.
    #[inline]
    pub fn slot_word(&self) -> &AtomicU32 {
        // SAFETY: the pool's side array holds a (count, word) pair per slot
        // (`PoolInner::rc`), so the word is the u32 after the count, in
        // bounds and initialised; it lives as long as the pool, which this
        // Buf keeps alive.
        unsafe { self.rc.add(1).as_ref() }
    }

    #[inline]
    pub(super) fn data_ptr(&self) -> NonNull<u8> {
        self.data
    }

    #[inline]
    pub(super) fn rc_ptr(&self) -> NonNull<AtomicU32> {
        self.rc
    }

    #[inline]
    pub(super) fn pool_ptr(&self) -> *const PoolInner {
        self.pool.as_ptr().cast_const()
    }

    /// The size of the pool slot this buffer lives in (what it costs
    /// against the pool's capacity), whatever part of it `self` views.
    pub fn slot_size(&self) -> usize {
        // SAFETY: the pool outlives every Buf of it (each slot holds it
        // alive), so the pointer is valid for as long as `self` is.
        let inner = unsafe { self.pool.as_ref() };
        inner.slot_size_of_rc(self.rc)
    }

    /// True if `self` and `other` view memory of the same slot.
    pub fn same_slot(&self, other: &Buf) -> bool {
        self.rc == other.rc
    }
}

impl Clone for Buf {
    #[inline]
    fn clone(&self) -> Buf {
        // SAFETY: rc is valid while self lives. Relaxed suffices for an
        // increment from a live reference (as in Arc::clone).
        let old = unsafe { self.rc.as_ref() }.fetch_add(1, Ordering::Relaxed);
        if old & COUNT_MASK > MAX_REFS {
            std::process::abort();
        }
        Buf { ..*self }
    }
}

impl Drop for Buf {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: rc is valid while self lives.
        let rc = unsafe { self.rc.as_ref() };
        if rc.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Pairs with the Release decrements of other handles: all their reads
        // of the slot happen before the slot is reused.
        fence(Ordering::Acquire);
        // SAFETY: the count reached zero, so this was the last handle; the
        // slot's pool reference is released exactly once, here.
        unsafe { release_slot(self.pool, self.rc) };
    }
}

impl Deref for Buf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Buf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for Buf {
    fn eq(&self, other: &Buf) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Buf {}

impl PartialEq<[u8]> for Buf {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl std::fmt::Debug for Buf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buf({} bytes, refs {})", self.len, self.ref_count())
    }
}
