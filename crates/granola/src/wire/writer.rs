//! Encoding: size accounting and the one-pass header/copy writer.

use super::{WireScalar, SLOT_LEN};
use crate::{Buf, HybridBytes};

/// What serializing a message will produce, computed by
/// [`Message::encoded_sizes`](crate::Message::encoded_sizes) before writing,
/// for one copy threshold.
///
/// Only the message can produce it: `encode` compares its cursors with these
/// sizes and refuses stale ones (`EncodeError::StaleSizes`) in every build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedSizes {
    header_len: usize,
    copy_len: usize,
    zero_copy_count: usize,
    zero_copy_len: usize,
    threshold: usize,
}

impl EncodedSizes {
    /// Empty sizes for serializing with `threshold` (see
    /// [`Message::encoded_sizes_with`](crate::Message::encoded_sizes_with)).
    #[doc(hidden)]
    #[inline]
    pub fn with_threshold(threshold: usize) -> EncodedSizes {
        EncodedSizes {
            header_len: 0,
            copy_len: 0,
            zero_copy_count: 0,
            zero_copy_len: 0,
            threshold,
        }
    }

    /// Bytes of headers and entry arrays (the header region).
    #[inline]
    pub fn header_len(&self) -> usize {
        self.header_len
    }

    /// Bytes of copied field data (they follow the header region).
    #[inline]
    pub fn copy_len(&self) -> usize {
        self.copy_len
    }

    /// Number of zero-copy entries (one gather entry each).
    #[inline]
    pub fn zero_copy_count(&self) -> usize {
        self.zero_copy_count
    }

    /// Bytes in zero-copy entries (they follow the copy region on the wire).
    #[inline]
    pub fn zero_copy_len(&self) -> usize {
        self.zero_copy_len
    }

    /// The copy threshold these sizes were computed for.
    #[inline]
    pub fn threshold(&self) -> usize {
        self.threshold
    }

    /// Bytes the caller's buffer must hold: header + copied data.
    #[inline]
    pub fn head_len(&self) -> usize {
        self.header_len + self.copy_len
    }

    /// Total bytes on the wire.
    #[inline]
    pub fn total_len(&self) -> usize {
        self.header_len + self.copy_len + self.zero_copy_len
    }

    /// Accounts for header-region bytes (a header or an entry array).
    #[doc(hidden)]
    #[inline]
    pub fn add_header(&mut self, len: usize) {
        self.header_len += len;
    }

    /// Accounts for one bytes/string field's data.
    #[doc(hidden)]
    #[inline]
    pub fn add_bytes(&mut self, b: &HybridBytes<'_>) {
        match by_reference(b, self.threshold) {
            Some(buf) => {
                self.zero_copy_count += 1;
                self.zero_copy_len += buf.len();
            }
            None => self.copy_len += b.len(),
        }
    }
}

/// The pool reference to send for `b`, if it is one and at least
/// `threshold` long; `None` means "copy it".
#[inline]
fn by_reference<'b>(b: &'b HybridBytes<'_>, threshold: usize) -> Option<&'b Buf> {
    match b {
        HybridBytes::Shared(buf) if buf.len() >= threshold => Some(buf),
        _ => None,
    }
}

/// Writes headers and copied data into the caller's buffer in one pass over
/// the message, handing each zero-copy entry to a callback in wire order.
///
/// Generated code drives it: each message writes its own header at a
/// position it was given, and reserves room for entry arrays and nested
/// headers from the header region's cursor (pre-order, field order).
pub struct Encoder<'b, F> {
    buf: &'b mut [u8],
    /// Next free byte in the header region.
    aux: usize,
    /// Next free byte in the copy region.
    copy: usize,
    /// Wire offset of the next zero-copy entry.
    zero_copy: usize,
    on_zero_copy: F,
    threshold: usize,
    /// Set when a write fell outside `buf`: the sizes were stale.
    overflowed: bool,
}

impl<'b, F: FnMut(&Buf)> Encoder<'b, F> {
    /// An encoder for an object whose root header is `root_header_len` bytes,
    /// sized by `sizes`. `buf.len()` must be at least `sizes.head_len()`
    /// (checked by the caller, `Message::encode`).
    #[doc(hidden)]
    pub fn new(
        buf: &'b mut [u8],
        sizes: &EncodedSizes,
        root_header_len: usize,
        on_zero_copy: F,
    ) -> Self {
        debug_assert!(buf.len() >= sizes.head_len());
        Encoder {
            buf,
            aux: root_header_len,
            copy: sizes.header_len,
            zero_copy: sizes.header_len + sizes.copy_len,
            on_zero_copy,
            threshold: sizes.threshold,
            overflowed: false,
        }
    }

    /// True if every write stayed inside the buffer.
    #[doc(hidden)]
    pub fn in_bounds(&self) -> bool {
        !self.overflowed
    }

    /// The bytes at `at..at + len`, or `None` (and the encoder marked
    /// failed) if they are outside the buffer: stale `EncodedSizes` make
    /// `encode` return an error instead of panicking or corrupting.
    #[inline]
    fn out(&mut self, at: usize, len: usize) -> Option<&mut [u8]> {
        let r = at
            .checked_add(len)
            .and_then(|end| self.buf.get_mut(at..end));
        if r.is_none() {
            self.overflowed = true;
        }
        r
    }

    /// Cursor positions (header, copy, zero-copy) for consistency checks.
    #[doc(hidden)]
    pub fn cursors(&self) -> (usize, usize, usize) {
        (self.aux, self.copy, self.zero_copy)
    }

    #[inline]
    fn put_u32(&mut self, at: usize, v: u32) {
        if let Some(dst) = self.out(at, 4) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }

    #[inline]
    fn put_pair(&mut self, at: usize, a: usize, b: usize) {
        // Callers guarantee the object is < 4 GiB (Message::encode checks).
        self.put_u32(at, a as u32);
        self.put_u32(at + 4, b as u32);
    }

    /// Writes a header's bitmap at `at`; returns where its first slot goes.
    #[inline]
    pub fn begin_header(&mut self, at: usize, bitmap: &[u32]) -> usize {
        self.put_u32(at, bitmap.len() as u32);
        let mut p = at + 4;
        for &w in bitmap {
            self.put_u32(p, w);
            p += 4;
        }
        p
    }

    /// Writes the kind byte (see [`kind`](super::kind)) of the field whose
    /// slot is at `slot`, in a header whose first slot is at `first` and
    /// which has `present` fields.
    #[inline]
    pub fn put_kind(&mut self, first: usize, present: usize, slot: usize, kind: u8) {
        let at = first + SLOT_LEN * present + (slot - first) / SLOT_LEN;
        if let Some(dst) = self.out(at, 1) {
            dst[0] = kind;
        }
    }

    /// Writes the raw 8-byte slot `v` at `slot` (a field kept without its
    /// schema).
    #[inline]
    pub fn put_raw_slot(&mut self, slot: usize, v: u64) {
        if let Some(dst) = self.out(slot, 8) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Writes raw entry bytes at `at` (a scalar list kept without its
    /// schema).
    #[inline]
    pub fn put_raw_entries(&mut self, at: usize, entries: &[u8]) {
        if let Some(dst) = self.out(at, entries.len()) {
            dst.copy_from_slice(entries);
        }
    }

    /// Reserves `len` bytes in the header region (entry arrays, nested
    /// headers); returns their offset.
    #[inline]
    pub fn alloc_aux(&mut self, len: usize) -> usize {
        let at = self.aux;
        self.aux += len;
        at
    }

    /// Writes a scalar slot.
    #[inline]
    pub fn put_scalar<T: WireScalar>(&mut self, slot: usize, v: T) {
        if let Some(dst) = self.out(slot, 8) {
            dst.copy_from_slice(&v.to_slot().to_le_bytes());
        }
    }

    /// Places one bytes value (copy region or zero-copy entry) and writes
    /// its `(len, offset)` pair at `at` (a slot or a list entry).
    #[inline]
    pub fn put_bytes(&mut self, at: usize, b: &HybridBytes<'_>) {
        match by_reference(b, self.threshold) {
            Some(buf) => {
                let off = self.zero_copy;
                self.zero_copy += buf.len();
                (self.on_zero_copy)(buf);
                self.put_pair(at, buf.len(), off);
            }
            None => {
                let off = self.copy;
                if let Some(dst) = self.out(off, b.len()) {
                    dst.copy_from_slice(b);
                }
                self.copy += b.len();
                self.put_pair(at, b.len(), off);
            }
        }
    }

    /// Writes one scalar list entry (`T::WIDTH` bytes) at `at`.
    #[inline]
    pub fn put_scalar_entry<T: WireScalar>(&mut self, at: usize, v: T) {
        if let Some(dst) = self.out(at, T::WIDTH) {
            v.write_entry(dst);
        }
    }

    /// Reserves a nested header of `header_len` bytes, writes its pair at
    /// `at` (a slot or list entry); returns where to write the header.
    #[inline]
    pub fn put_nested(&mut self, at: usize, header_len: usize) -> usize {
        let h = self.alloc_aux(header_len);
        self.put_pair(at, header_len, h);
        h
    }

    /// Reserves the entry array of a repeated field (`count` entries of
    /// `width` bytes) and writes its slot; returns the array's offset.
    #[inline]
    pub fn put_list(&mut self, slot: usize, count: usize, width: usize) -> usize {
        let arr = self.alloc_aux(count * width);
        self.put_pair(slot, count, arr);
        arr
    }
}
