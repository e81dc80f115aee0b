//! The traits generated types implement, shaped for serialize-and-send.

use crate::wire::{DecodeCx, EncodeError, EncodedSizes, Encoder, HeaderReader};
use crate::{Buf, Context, DecodeError};
use std::io::IoSlice;

/// A message that can be serialized as one head buffer (headers + copied
/// bytes) plus zero-copy entries.
///
/// The serialize-and-send protocol (Cornflakes §3.2.3) a datapath follows:
///
/// 1. [`encoded_sizes`](Self::encoded_sizes): header length, copied length,
///    zero-copy entry count and bytes — enough to size one TX buffer and the
///    iovec array;
/// 2. [`encode`](Self::encode): one traversal that writes headers and copied
///    bytes into the caller's buffer and hands each zero-copy [`Buf`] to the
///    callback, in wire order, so the datapath can post it directly (no
///    intermediate scatter-gather list).
///
/// [`to_vec`](Self::to_vec) and [`to_sga`](Self::to_sga) are the non-fused
/// forms, for comparison and for users without a granola datapath.
pub trait Message {
    /// Byte length of this message's own header (not its nested headers).
    #[doc(hidden)]
    fn __header_len(&self) -> usize;

    /// Adds this message's headers, entry arrays and field data to `sizes`.
    #[doc(hidden)]
    fn __accumulate(&self, sizes: &mut EncodedSizes);

    /// Writes this message's header at `at` and everything below it.
    #[doc(hidden)]
    fn __encode_header<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize);

    /// Sizes of the encoded form.
    fn encoded_sizes(&self) -> EncodedSizes {
        let mut s = EncodedSizes::default();
        self.__accumulate(&mut s);
        s
    }

    /// Total encoded length in bytes.
    fn encoded_len(&self) -> usize {
        self.encoded_sizes().total_len()
    }

    /// Writes headers and copied bytes into `head` (at least
    /// `sizes.head_len()` bytes; `sizes` must come from
    /// [`encoded_sizes`](Self::encoded_sizes) on the unchanged message) and
    /// calls `on_zero_copy` for each zero-copy entry in wire order. The
    /// encoded object is `head[..sizes.head_len()]` followed by those
    /// entries' bytes.
    fn encode<F: FnMut(&Buf)>(
        &self,
        sizes: &EncodedSizes,
        head: &mut [u8],
        on_zero_copy: F,
    ) -> Result<(), EncodeError> {
        if sizes.total_len() > u32::MAX as usize {
            return Err(EncodeError::TooLarge);
        }
        if head.len() < sizes.head_len() {
            return Err(EncodeError::BufferTooSmall {
                needed: sizes.head_len(),
                given: head.len(),
            });
        }
        let mut enc = Encoder::new(head, sizes, self.__header_len(), on_zero_copy);
        self.__encode_header(&mut enc, 0);
        // Stale sizes (the message changed after `encoded_sizes`) move the
        // cursors or push a write outside `head`; both are caught here, in
        // release builds too. The zero-copy entries already handed to the
        // callback must then be discarded with the buffer.
        if !enc.in_bounds()
            || enc.cursors() != (sizes.header_len, sizes.head_len(), sizes.total_len())
        {
            return Err(EncodeError::StaleSizes);
        }
        Ok(())
    }

    /// Serializes into one contiguous vector (copies every field). Fails,
    /// before allocating, for objects over the format's 4 GiB.
    fn to_vec(&self) -> Result<Vec<u8>, EncodeError> {
        let sizes = self.encoded_sizes();
        if sizes.total_len() > u32::MAX as usize {
            return Err(EncodeError::TooLarge);
        }
        let mut out = vec![0u8; sizes.total_len()];
        let (head, mut tail) = out.split_at_mut(sizes.head_len());
        let mut short = false;
        self.encode(&sizes, head, |b| {
            if b.len() > tail.len() {
                short = true;
                return;
            }
            let (dst, rest) = std::mem::take(&mut tail).split_at_mut(b.len());
            dst.copy_from_slice(b);
            tail = rest;
        })?;
        if short {
            return Err(EncodeError::StaleSizes);
        }
        Ok(out)
    }

    /// Serializes into a scatter-gather list: a head vector plus one cloned
    /// [`Buf`] per zero-copy entry (the non-fused path). Fails, before
    /// allocating, for objects over the format's 4 GiB.
    fn to_sga(&self) -> Result<Sga, EncodeError> {
        let sizes = self.encoded_sizes();
        if sizes.total_len() > u32::MAX as usize {
            return Err(EncodeError::TooLarge);
        }
        let mut head = vec![0u8; sizes.head_len()];
        let mut entries = Vec::with_capacity(sizes.zero_copy_count);
        self.encode(&sizes, &mut head, |b| entries.push(b.clone()))?;
        Ok(Sga { head, entries })
    }
}

/// A message that can be decoded, zero-copy, from bytes in `'a`.
pub trait Decode<'a>: Sized {
    /// Decodes a message from `bytes` under `ctx`'s decode limits.
    ///
    /// Bytes/string fields at or above the copy threshold become
    /// [`Buf`] references into `bytes`' pool slot (when it is in `ctx`'s
    /// pool); smaller ones borrow `bytes` directly. Nothing is copied and
    /// strings are not validated until accessed.
    fn decode(ctx: &'a Context, bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let mut cx = DecodeCx::new(bytes, ctx.decode_options())?;
        cx.charge_bytes(std::mem::size_of::<Self>(), 0)?;
        let root = cx.root()?;
        Self::__decode(ctx, &mut cx, &root)
    }

    /// Decodes the message whose header `header` has been checked.
    #[doc(hidden)]
    fn __decode(
        ctx: &'a Context,
        cx: &mut DecodeCx<'a>,
        header: &HeaderReader<'a>,
    ) -> Result<Self, DecodeError>;
}

/// A serialized message as a scatter-gather list: `head` (headers + copied
/// data) followed by `entries` (zero-copy references).
#[derive(Debug, Default)]
pub struct Sga {
    /// Headers and copied bytes.
    pub head: Vec<u8>,
    /// Zero-copy entries, in wire order.
    pub entries: Vec<Buf>,
}

impl Sga {
    /// Total bytes.
    pub fn len(&self) -> usize {
        self.head.len() + self.entries.iter().map(|b| b.len()).sum::<usize>()
    }

    /// True if there are no bytes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The list as `IoSlice`s, ready for `write_vectored`/`sendmsg`.
    pub fn io_slices(&self) -> Vec<IoSlice<'_>> {
        let mut v = Vec::with_capacity(1 + self.entries.len());
        v.push(IoSlice::new(&self.head));
        v.extend(self.entries.iter().map(|b| IoSlice::new(b)));
        v
    }

    /// Concatenates the pieces.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        v.extend_from_slice(&self.head);
        for e in &self.entries {
            v.extend_from_slice(e);
        }
        v
    }
}
