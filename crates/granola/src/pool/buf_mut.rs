//! [`BufMut`]: the unique writer of a fresh pool slot.
//!
//! ```text
//!   BufMut { data, len, cap }          rc[slot] = WRITER (no Buf can exist)
//!   slot: [ filled (len) | spare (cap - len) ]
//! ```
//!
//! A `BufMut` is the only handle to its slot, so it may write freely;
//! [`Pool::recover`](super::Pool::recover) refuses to share a slot in this
//! state. [`freeze`](BufMut::freeze) turns it into a [`Buf`] and the bytes
//! become immutable for good.
//!
//! Pool memory is always initialised (zeroed by the kernel when first
//! touched, or holding an earlier occupant's bytes), so the spare capacity
//! can be handed out as `&mut [u8]` — e.g. to `recv` — without `MaybeUninit`.

use super::{release_slot, Buf, PoolInner, WRITER};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// A writable, uniquely owned pool buffer of fixed capacity.
#[must_use = "dropping a BufMut returns its slot to the pool"]
pub struct BufMut {
    data: NonNull<u8>,
    len: usize,
    cap: usize,
    rc: NonNull<AtomicU32>,
    pool: NonNull<PoolInner>,
}

// SAFETY: a BufMut is the unique handle to its slot; moving it to another
// thread moves the exclusive access with it.
unsafe impl Send for BufMut {}
// SAFETY: &BufMut only allows reads of the filled part.
unsafe impl Sync for BufMut {}

impl BufMut {
    /// # Safety
    /// The slot owning `rc` must be freshly allocated with count WRITER and
    /// this must be its only handle; `[data, data+cap)` must be the slot.
    pub(super) unsafe fn from_raw_parts(
        pool: NonNull<PoolInner>,
        rc: NonNull<AtomicU32>,
        data: NonNull<u8>,
        cap: usize,
    ) -> BufMut {
        BufMut {
            data,
            len: 0,
            cap,
            rc,
            pool,
        }
    }

    /// The slot's application word (see [`Buf::slot_word`]), kept when
    /// the slot is frozen, and readable while this writer holds the slot
    /// through [`Pool::segment_writers`](super::Pool::segment_writers):
    /// e.g. to name the slot's owner.
    #[inline]
    pub fn slot_word(&self) -> &AtomicU32 {
        // SAFETY: the pool's side array holds a (count, word) pair per slot
        // (`PoolInner::rc`), so the word is the u32 after the count, in
        // bounds and initialised; it lives as long as the pool, which this
        // BufMut keeps alive.
        unsafe { self.rc.add(1).as_ref() }
    }

    /// Bytes written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing has been written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Total bytes the buffer can hold (its slot size).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes that can still be appended.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.cap - self.len
    }

    /// The written bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: [data, data+len) is inside our slot, initialised, and we
        // are its only handle.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    /// The written bytes, mutably.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as for as_slice, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// The whole slot, mutably, regardless of `len` (e.g. to receive into,
    /// then [`set_len`](Self::set_len)).
    #[inline]
    pub fn as_full_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the slot is [data, data+cap), always initialised (see the
        // module docs), and exclusively ours.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.cap) }
    }

    /// The unwritten tail of the slot.
    #[inline]
    pub fn spare_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        &mut self.as_full_mut_slice()[len..]
    }

    /// Sets the written length (bytes beyond the old length keep whatever
    /// the slot held; they are initialised memory, never undefined).
    ///
    /// # Panics
    /// If `len > capacity()`.
    #[inline]
    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.cap, "BufMut::set_len beyond capacity");
        self.len = len;
    }

    /// Appends `bytes`.
    ///
    /// # Panics
    /// If they do not fit; check [`remaining`](Self::remaining) first or use
    /// [`try_extend_from_slice`](Self::try_extend_from_slice).
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        if self.try_extend_from_slice(bytes).is_err() {
            panic!(
                "BufMut overflow: {} bytes into {} remaining",
                bytes.len(),
                self.remaining()
            );
        }
    }

    /// Appends `bytes` if they fit; otherwise leaves the buffer unchanged.
    #[inline]
    pub fn try_extend_from_slice(&mut self, bytes: &[u8]) -> Result<(), BufFull> {
        if bytes.len() > self.remaining() {
            return Err(BufFull);
        }
        let len = self.len;
        self.as_full_mut_slice()[len..len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
        Ok(())
    }

    /// Makes the written bytes immutable and shareable.
    #[inline]
    pub fn freeze(self) -> Buf {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: we are the unique handle (count == WRITER); the Release
        // store publishes our writes to whoever later clones the Buf.
        unsafe { this.rc.as_ref() }.store(1, Ordering::Release);
        // SAFETY: one reference (count 1) now belongs to the returned Buf;
        // [data, data+len) lies inside the slot.
        unsafe { Buf::from_raw_parts(this.pool, this.rc, this.data, this.len) }
    }
}

/// Error from [`BufMut::try_extend_from_slice`]: not enough capacity left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufFull;

impl std::fmt::Display for BufFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pool buffer full")
    }
}

impl std::error::Error for BufFull {}

impl std::io::Write for BufMut {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = bytes.len().min(self.remaining());
        self.extend_from_slice(&bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for BufMut {
    fn drop(&mut self) {
        // SAFETY: rc is valid while self lives and we are its only handle.
        let rc = unsafe { self.rc.as_ref() };
        debug_assert_eq!(rc.load(Ordering::Relaxed), WRITER);
        rc.store(0, Ordering::Release);
        // SAFETY: unique handle being dropped: release the slot once.
        unsafe { release_slot(self.pool, self.rc) };
    }
}

impl std::fmt::Debug for BufMut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BufMut({}/{} bytes)", self.len, self.cap)
    }
}
