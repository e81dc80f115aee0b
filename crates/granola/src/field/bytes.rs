//! [`HybridBytes`]: a bytes field that is either copied or referenced.

use crate::{Buf, Context};

/// A bytes field value: either bytes that will be *copied* into the message
/// at serialization (`Copied`), or a *zero-copy* reference to pool memory
/// (`Shared`) that goes to the datapath as its own gather entry.
///
/// Build it with [`HybridBytes::new`], which applies the context's copy
/// threshold once, at assignment time (Cornflakes §3.2.1): below the
/// threshold the bytes are copied into the arena; at or above it the slot is
/// recovered from the pool if the bytes live there, and copied otherwise.
///
/// ```
/// use granola::{Context, HybridBytes, Pool};
/// let pool = Pool::with_capacity(8 << 20).unwrap();
/// let ctx = Context::new(&pool).with_copy_threshold(512);
/// let big = pool.alloc_copy(&[7u8; 4096]).unwrap();
/// assert!(HybridBytes::new(&big, &ctx).is_zero_copy());        // referenced
/// assert!(!HybridBytes::new(&big[..100], &ctx).is_zero_copy()); // small: copied
/// assert!(!HybridBytes::new(&vec![7u8; 4096], &ctx).is_zero_copy()); // heap: copied
/// ```
#[derive(Clone)]
pub enum HybridBytes<'a> {
    /// Bytes to copy when serializing: in the context's arena, or borrowed
    /// straight from a received packet by the decoder.
    Copied(&'a [u8]),
    /// A reference-counted view of pool memory, sent without copying.
    Shared(Buf),
}

impl<'a> HybridBytes<'a> {
    /// Applies the threshold: copy into the arena, or recover a reference.
    #[inline]
    pub fn new(bytes: &[u8], ctx: &'a Context) -> HybridBytes<'a> {
        if bytes.len() >= ctx.copy_threshold() {
            if let Some(buf) = ctx.pool().recover(bytes) {
                return HybridBytes::Shared(buf);
            }
        }
        HybridBytes::Copied(ctx.arena().alloc_slice_copy(bytes))
    }

    /// Applies the threshold to bytes already held as a [`Buf`]: keeps the
    /// reference if large enough, copies otherwise (no recovery needed).
    #[inline]
    pub fn from_buf(buf: Buf, ctx: &'a Context) -> HybridBytes<'a> {
        if buf.len() >= ctx.copy_threshold() {
            HybridBytes::Shared(buf)
        } else {
            HybridBytes::Copied(ctx.arena().alloc_slice_copy(&buf))
        }
    }

    /// Used by decoders: `bytes` is a range of the received message, which
    /// outlives `'a`. Large fields become references into the packet's slot
    /// (if it is in the pool); small ones borrow the packet with no copy and
    /// no reference-count traffic, and are copied only if re-serialized.
    #[inline]
    pub fn decoded(bytes: &'a [u8], ctx: &'a Context) -> HybridBytes<'a> {
        if bytes.len() >= ctx.copy_threshold() {
            if let Some(buf) = ctx.pool().recover(bytes) {
                return HybridBytes::Shared(buf);
            }
        }
        HybridBytes::Copied(bytes)
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            HybridBytes::Copied(b) => b,
            HybridBytes::Shared(b) => b.as_slice(),
        }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            HybridBytes::Copied(b) => b.len(),
            HybridBytes::Shared(b) => b.len(),
        }
    }

    /// True if empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True if this field will be sent by reference.
    #[inline]
    pub fn is_zero_copy(&self) -> bool {
        matches!(self, HybridBytes::Shared(_))
    }

    /// An owned [`Buf`] with these bytes that outlives the message (e.g. to
    /// store a received value): the reference itself, a recovered reference
    /// into the packet, or a fresh pool copy. `None` if the pool is full.
    pub fn to_buf(&self, ctx: &Context) -> Option<Buf> {
        match self {
            HybridBytes::Shared(b) => Some(b.clone()),
            HybridBytes::Copied(b) => ctx.pool().recover(b).or_else(|| ctx.pool().alloc_copy(b)),
        }
    }
}

impl std::ops::Deref for HybridBytes<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for HybridBytes<'_> {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for HybridBytes<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl std::fmt::Debug for HybridBytes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_zero_copy() { "ref" } else { "copy" };
        write!(f, "HybridBytes::{kind}({} bytes)", self.len())
    }
}
