//! Reserved address ranges that back the pool.
//!
//! A [`Region`] is one contiguous, zero-initialised, read-write range of
//! virtual memory, reserved up front and committed by the kernel page by page
//! on first touch. The pool needs two: the data region (slots) and the side
//! array of reference counts. Reserving everything at start is what makes
//! pointer recovery a subtraction and a shift: an address belongs to the pool
//! iff it lies in `[base, base + len)`.
//!
//! Under Miri there is no `mmap`, so the region comes from the global
//! allocator instead (same alignment, same zeroing); tests under Miri use
//! small pools.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether transparent huge pages were requested for a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePages {
    /// `madvise(MADV_HUGEPAGE)` succeeded: the kernel backs the region with
    /// 2 MiB pages where it can.
    Transparent,
    /// Huge pages were not requested, or the kernel refused them; ordinary
    /// 4 KiB pages back the region.
    Off,
}

/// One reserved, zero-initialised range of memory, released on drop.
///
/// A region is either a mapping of its own or a part of another region
/// ([`Region::carve`]): pools carved from one mapping can be registered
/// with the kernel once, as one range (an AF_XDP UMEM naming both the
/// stored values and the receive frames).
pub(crate) struct Region {
    base: NonNull<u8>,
    len: usize,
    #[cfg_attr(not(miri), allow(dead_code))]
    align: usize,
    huge: HugePages,
    /// Some kernel object holds the region's pages (an AF_XDP UMEM, fixed
    /// buffers): they must never be discarded (see [`Region::discard`]).
    pinned: AtomicBool,
    /// The mapping this region is a part of; `None`: it is its own mapping
    /// (and unmaps it on drop).
    whole: Option<Arc<Region>>,
}

// SAFETY: a Region is an owned range of plain memory; the pool coordinates all
// access to its bytes (slot ownership + atomics), so moving or sharing the
// handle across threads is sound.
unsafe impl Send for Region {}
// SAFETY: see the Send impl; the Region itself exposes no interior mutation.
unsafe impl Sync for Region {}

impl Region {
    /// Reserves `len` bytes aligned to `align` (a power of two).
    ///
    /// A `huge` prefix of the region asks the kernel for transparent huge
    /// pages; the rest asks for none (`MADV_NOHUGEPAGE`, which matters
    /// where THP is "always"): there the pool keeps objects whose last
    /// 2 MiB is partly used, and one huge page would make all of it
    /// resident.
    pub(crate) fn reserve(len: usize, align: usize, huge: usize) -> std::io::Result<Region> {
        assert!(align.is_power_of_two() && len > 0 && len % align == 0 && huge <= len);
        Self::reserve_impl(len, align, huge)
    }

    #[cfg(not(miri))]
    fn reserve_impl(len: usize, align: usize, huge_len: usize) -> std::io::Result<Region> {
        // Over-reserve by `align` so an aligned sub-range exists, then trim.
        let total = len
            .checked_add(align)
            .ok_or_else(|| std::io::Error::other("pool size overflows the address space"))?;
        // SAFETY: an anonymous private mapping with no address hint has no
        // preconditions; we check the result for MAP_FAILED below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let raw = raw.cast::<u8>();
        let start = raw.addr();
        let aligned = (start + align - 1) & !(align - 1);
        let head = aligned - start;
        let tail = total - head - len;
        if head > 0 {
            // SAFETY: [raw, raw+head) is part of the mapping we just made and
            // nothing references it.
            unsafe { libc::munmap(raw.cast(), head) };
        }
        if tail > 0 {
            // SAFETY: [aligned+len, aligned+len+tail) is the unused end of
            // our own mapping.
            unsafe { libc::munmap(raw.add(head + len).cast(), tail) };
        }
        // SAFETY: head < total, so the pointer stays inside the mapping.
        let base = unsafe { raw.add(head) };
        let mut huge = HugePages::Off;
        if huge_len > 0 {
            // SAFETY: madvise on our own mapping only changes paging policy.
            let rc = unsafe { libc::madvise(base.cast(), huge_len, libc::MADV_HUGEPAGE) };
            if rc == 0 {
                huge = HugePages::Transparent;
            }
        }
        if huge_len < len {
            // SAFETY: as above, for the rest of the mapping. Refused only
            // by kernels without THP, where there are no huge pages anyway.
            unsafe {
                libc::madvise(
                    base.add(huge_len).cast(),
                    len - huge_len,
                    libc::MADV_NOHUGEPAGE,
                )
            };
        }
        Ok(Region {
            base: NonNull::new(base).expect("mmap returned a null mapping"),
            len,
            align,
            huge,
            pinned: AtomicBool::new(false),
            whole: None,
        })
    }

    #[cfg(miri)]
    fn reserve_impl(len: usize, align: usize, _huge_len: usize) -> std::io::Result<Region> {
        let layout = std::alloc::Layout::from_size_align(len, align)
            .map_err(|_| std::io::Error::other("bad pool layout"))?;
        // SAFETY: layout has non-zero size (checked in `reserve`).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let base = NonNull::new(p).ok_or_else(|| std::io::Error::other("out of memory"))?;
        Ok(Region {
            base,
            len,
            align,
            huge: HugePages::Off,
            pinned: AtomicBool::new(false),
            whole: None,
        })
    }

    /// The part `[offset, offset + len)` of `whole`, which stays mapped as
    /// long as any part of it lives.
    pub(crate) fn carve(whole: &Arc<Region>, offset: usize, len: usize) -> Region {
        assert!(offset <= whole.len && len <= whole.len - offset && len > 0);
        Region {
            // SAFETY: offset <= whole.len, so the pointer stays inside (or
            // one past) the mapping.
            base: unsafe { NonNull::new_unchecked(whole.base.as_ptr().add(offset)) },
            len,
            align: whole.align,
            huge: whole.huge,
            pinned: AtomicBool::new(false),
            whole: Some(whole.clone()),
        }
    }

    /// True if `bytes` lies inside the region.
    #[inline]
    pub(crate) fn holds(&self, bytes: &[u8]) -> bool {
        let off = bytes
            .as_ptr()
            .addr()
            .wrapping_sub(self.base.as_ptr().addr());
        off < self.len && bytes.len() <= self.len - off
    }

    /// The whole mapping: the region this one was carved from, or itself.
    pub(crate) fn mapping(&self) -> &Region {
        self.whole.as_deref().unwrap_or(self)
    }

    pub(crate) fn base(&self) -> NonNull<u8> {
        self.base
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn huge_pages(&self) -> HugePages {
        self.huge
    }

    /// Marks the region as registered with the kernel: from now on
    /// [`discard`](Self::discard) keeps the pages. A registration pins the
    /// physical pages it found; after `MADV_DONTNEED` the process would
    /// fault in new pages at those addresses while the kernel kept writing
    /// (received frames) into the old ones.
    pub(crate) fn pin(&self) {
        self.pinned.store(true, Ordering::Release);
    }

    fn is_pinned(&self) -> bool {
        self.pinned.load(Ordering::Acquire)
            || self
                .whole
                .as_ref()
                .is_some_and(|w| w.pinned.load(Ordering::Acquire))
    }

    /// Gives the physical pages behind `[offset, offset+len)` back to the
    /// kernel; the range reads as zeros afterwards. Used when large objects
    /// and emptied segments are freed, so the resident size follows the
    /// live data. Nothing happens once the region is [pinned](Self::pin).
    pub(crate) fn discard(&self, offset: usize, len: usize) {
        if !self.is_pinned() {
            self.advise(offset, len, libc::MADV_DONTNEED);
        }
    }

    /// Faults in the pages behind `[offset, offset+len)` in one call
    /// (`MADV_POPULATE_WRITE`, Linux 5.14) before the caller writes them:
    /// one system call instead of a fault per 4 KiB page. Where the kernel
    /// refuses, the writes fault the pages in as before.
    pub(crate) fn populate(&self, offset: usize, len: usize) {
        self.advise(offset, len, libc::MADV_POPULATE_WRITE);
    }

    /// `madvise(advice)` over `[offset, offset+len)`; nothing under Miri,
    /// which has no pages.
    fn advise(&self, offset: usize, len: usize, advice: libc::c_int) {
        debug_assert!(offset + len <= self.len);
        #[cfg(not(miri))]
        // SAFETY: the range lies inside our mapping. Discarding: the
        // caller guarantees no live slot overlaps it (it was just freed).
        // Populating only allocates (zeroed) pages; the contents stay.
        unsafe {
            libc::madvise(self.base.as_ptr().add(offset).cast(), len, advice);
        }
        #[cfg(miri)]
        let _ = (offset, len, advice);
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if self.whole.is_some() {
            // A part: the whole mapping goes with its last part.
            return;
        }
        #[cfg(not(miri))]
        // SAFETY: we own the mapping [base, base+len) and nothing refers to it
        // any more (the pool drops its regions only when no slot is live).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
        #[cfg(miri)]
        // SAFETY: allocated in reserve_impl with this exact layout.
        unsafe {
            let layout = std::alloc::Layout::from_size_align_unchecked(self.len, self.align);
            std::alloc::dealloc(self.base.as_ptr(), layout);
        }
    }
}
