//! Encoding: size accounting and the one-pass header/copy writer.

use super::{WireScalar, ENTRY_LEN};
use crate::{Buf, HybridBytes};

/// What serializing a message will produce, computed by
/// [`Message::encoded_sizes`](crate::Message::encoded_sizes) before writing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodedSizes {
    /// Bytes of headers and entry arrays (the header region).
    pub header_len: usize,
    /// Bytes of copied field data (follow the header region).
    pub copy_len: usize,
    /// Number of zero-copy entries (one gather entry each).
    pub zero_copy_count: usize,
    /// Bytes in zero-copy entries (follow the copy region on the wire).
    pub zero_copy_len: usize,
}

impl EncodedSizes {
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

    /// Accounts for one bytes/string field's data.
    #[inline]
    pub fn add_bytes(&mut self, b: &HybridBytes<'_>) {
        match b {
            HybridBytes::Copied(s) => self.copy_len += s.len(),
            HybridBytes::Shared(buf) => {
                self.zero_copy_count += 1;
                self.zero_copy_len += buf.len();
            }
        }
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
        match b {
            HybridBytes::Copied(s) => {
                let off = self.copy;
                if let Some(dst) = self.out(off, s.len()) {
                    dst.copy_from_slice(s);
                }
                self.copy += s.len();
                self.put_pair(at, s.len(), off);
            }
            HybridBytes::Shared(buf) => {
                let off = self.zero_copy;
                self.zero_copy += buf.len();
                (self.on_zero_copy)(buf);
                self.put_pair(at, buf.len(), off);
            }
        }
    }

    /// Writes a repeated bytes/string field: slot, entry array, data.
    #[inline]
    pub fn put_bytes_list<'x, 'y: 'x, I>(&mut self, slot: usize, items: I)
    where
        I: ExactSizeIterator<Item = &'x HybridBytes<'y>>,
    {
        let n = items.len();
        let arr = self.alloc_aux(n * ENTRY_LEN);
        self.put_pair(slot, n, arr);
        for (i, b) in items.enumerate() {
            self.put_bytes(arr + i * ENTRY_LEN, b);
        }
    }

    /// Writes a repeated scalar field: slot and packed entry array.
    #[inline]
    pub fn put_scalar_list<T: WireScalar>(&mut self, slot: usize, items: &[T]) {
        let arr = self.alloc_aux(items.len() * T::WIDTH);
        self.put_pair(slot, items.len(), arr);
        for (i, v) in items.iter().enumerate() {
            let p = arr + i * T::WIDTH;
            if let Some(dst) = self.out(p, T::WIDTH) {
                v.write_entry(dst);
            }
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

    /// Reserves the entry array of a repeated message field and writes its
    /// slot; returns the array's offset (entries are 8 bytes, filled with
    /// [`put_nested`](Self::put_nested)).
    #[inline]
    pub fn put_message_list(&mut self, slot: usize, count: usize) -> usize {
        let arr = self.alloc_aux(count * ENTRY_LEN);
        self.put_pair(slot, count, arr);
        arr
    }
}
