//! The traits generated types implement, shaped for serialize-and-send.

use crate::wire::{DecodeCx, DecodeOptions, EncodeError, EncodedSizes, Encoder, HeaderReader};
use crate::{Buf, DecodeError, DEFAULT_COPY_THRESHOLD};
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

    /// Sizes of the encoded form with the default copy threshold
    /// ([`DEFAULT_COPY_THRESHOLD`]).
    fn encoded_sizes(&self) -> EncodedSizes {
        self.encoded_sizes_with(DEFAULT_COPY_THRESHOLD)
    }

    /// Sizes of the encoded form when pool references ([`Buf`] fields) of at
    /// least `threshold` bytes are sent by reference and everything else is
    /// copied: `0` references every pool value, `usize::MAX` copies all.
    /// [`encode`](Self::encode) follows the threshold recorded here.
    fn encoded_sizes_with(&self, threshold: usize) -> EncodedSizes {
        let mut s = EncodedSizes::with_threshold(threshold);
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
            || enc.cursors() != (sizes.header_len(), sizes.head_len(), sizes.total_len())
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
    /// [`Buf`] per zero-copy entry (the non-fused path), with the default
    /// copy threshold. Fails, before allocating, for objects over the
    /// format's 4 GiB.
    fn to_sga(&self) -> Result<Sga, EncodeError> {
        self.to_sga_with(DEFAULT_COPY_THRESHOLD)
    }

    /// [`to_sga`](Self::to_sga) with pool references of at least
    /// `threshold` bytes sent by reference.
    fn to_sga_with(&self, threshold: usize) -> Result<Sga, EncodeError> {
        let sizes = self.encoded_sizes_with(threshold);
        if sizes.total_len() > u32::MAX as usize {
            return Err(EncodeError::TooLarge);
        }
        let mut head = vec![0u8; sizes.head_len()];
        let mut entries = Vec::with_capacity(sizes.zero_copy_count());
        self.encode(&sizes, &mut head, |b| entries.push(b.clone()))?;
        Ok(Sga { head, entries })
    }
}

/// A message that can be decoded, zero-copy, from bytes in `'a`.
///
/// [`decode`](Self::decode) borrows: bytes and string fields point into the
/// input, nothing is copied or reference-counted, strings are validated
/// when read as `&str`. [`IntoOwned::into_owned`] detaches the result, and
/// [`decode_buf`](Self::decode_buf) decodes a pool buffer straight into an
/// owned message whose large fields reference the buffer.
pub trait Decode<'a>: Sized {
    /// Decodes under the default limits ([`DecodeOptions::default`]).
    #[inline]
    fn decode(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        Self::decode_with(bytes, &DecodeOptions::default())
    }

    /// Decodes under `options`' limits (for untrusted input, tighten them).
    #[inline]
    fn decode_with(bytes: &'a [u8], options: &DecodeOptions) -> Result<Self, DecodeError> {
        let mut cx = DecodeCx::new(bytes, options)?;
        cx.charge_bytes(std::mem::size_of::<Self>(), 0)?;
        let root = cx.root()?;
        Self::__decode(&mut cx, &root)
    }

    /// Decodes the pool buffer `packet`: fields of at least `threshold`
    /// bytes become references into its slot (zero copy; re-sent, they go
    /// out by reference), smaller ones borrow it. This is what a server
    /// echoing or storing received values wants.
    fn decode_shared(packet: &'a Buf, threshold: usize) -> Result<Self, DecodeError> {
        Self::decode_shared_with(packet, &DecodeOptions::default(), threshold)
    }

    /// [`decode_shared`](Self::decode_shared) under `options`' limits.
    fn decode_shared_with(
        packet: &'a Buf,
        options: &DecodeOptions,
        threshold: usize,
    ) -> Result<Self, DecodeError> {
        let mut cx = DecodeCx::with_packet(packet, options, threshold)?;
        cx.charge_bytes(std::mem::size_of::<Self>(), 0)?;
        let root = cx.root()?;
        Self::__decode(&mut cx, &root)
    }

    /// Decodes `packet` into an owned message: fields of at least
    /// [`DEFAULT_COPY_THRESHOLD`] bytes reference the packet's slot (no
    /// copy, and they keep it alive); smaller ones are copied so they do not
    /// pin it.
    fn decode_buf(packet: &'a Buf) -> Result<Self::Owned, DecodeError>
    where
        Self: IntoOwned,
    {
        Self::decode_buf_with(packet, &DecodeOptions::default(), DEFAULT_COPY_THRESHOLD)
    }

    /// [`decode_buf`](Self::decode_buf) with explicit limits and threshold.
    fn decode_buf_with(
        packet: &'a Buf,
        options: &DecodeOptions,
        threshold: usize,
    ) -> Result<Self::Owned, DecodeError>
    where
        Self: IntoOwned,
    {
        Ok(Self::decode_shared_with(packet, options, threshold)?.into_owned())
    }

    /// Decodes the message whose header `header` has been checked.
    #[doc(hidden)]
    fn __decode(cx: &mut DecodeCx<'a>, header: &HeaderReader<'a>) -> Result<Self, DecodeError>;
}

/// Detaching a message from the bytes it borrows: the result is `'static`,
/// so it can be returned, stored, and sent to other threads.
pub trait IntoOwned: Sized {
    /// The message type with no borrow (`Msg<'static>`).
    type Owned: 'static;

    /// Copies every borrowed field; owned and pool-referenced fields are
    /// kept (a pool reference is a reference-count increment, not a copy).
    fn into_owned(self) -> Self::Owned;
}

/// A generated message type named without its lifetime, for generic code:
/// implemented by the owned form (`Msg<'static>`), with `Of<'x>` the form
/// that borrows for `'x` (`Msg<'x>`). `fn f<T: MessageType>(bytes: &[u8])`
/// can then decode a `T::Of<'_>` and compare it with a `T`.
pub trait MessageType: IntoOwned<Owned = Self> + Clone + Send + Sync + 'static {
    /// The message borrowing for `'x`.
    type Of<'x>: Message
        + Decode<'x>
        + IntoOwned<Owned = Self>
        + PartialEq
        + Clone
        + Default
        + std::fmt::Debug;

    /// This owned message seen as one that borrows for `'x` (it borrows
    /// nothing, so it can pretend to): for comparing with decoded ones.
    fn shorten<'x>(&self) -> &Self::Of<'x>;
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
