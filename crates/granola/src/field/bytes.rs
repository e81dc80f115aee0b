//! [`HybridBytes`]: a bytes field that is borrowed, owned, or a pool
//! reference.

use crate::Buf;

/// A bytes field value.
///
/// Three forms, one API (it dereferences to `[u8]`):
///
/// - `Borrowed`: bytes the message borrows, e.g. straight from a received
///   packet (the decoder's zero-copy form) or from the caller's own data
///   while building a reply;
/// - `Owned`: an owned, cheaply cloned copy ([`bytes::Bytes`]);
/// - `Shared`: a reference-counted view of pool memory ([`Buf`]), which a
///   datapath can send **by reference** (its own gather entry).
///
/// Whether a value is copied into the message's head buffer or sent by
/// reference is decided when the message is serialized, from the
/// serializer's copy threshold: a `Shared` value at or above it is
/// referenced; everything else is copied. The threshold is a property of the
/// datapath (it depends on the machine, see `granola-net`'s calibration), so
/// the message does not carry one.
///
/// ```
/// use granola::{HybridBytes, Pool};
/// let pool = Pool::with_capacity(8 << 20).unwrap();
/// let big = pool.alloc_copy(&[7u8; 4096]).unwrap();
/// assert!(HybridBytes::from(big).is_shared());           // may go by reference
/// assert!(!HybridBytes::from(&b"small"[..]).is_shared()); // borrowed: copied
/// assert!(!HybridBytes::from(vec![7u8; 4096]).is_shared()); // heap: copied
/// ```
#[derive(Clone)]
pub enum HybridBytes<'a> {
    /// Borrowed bytes (copied when serialized).
    Borrowed(&'a [u8]),
    /// Owned bytes (copied when serialized).
    Owned(bytes::Bytes),
    /// A reference-counted view of pool memory, sent by reference when at
    /// least the serializer's copy threshold.
    Shared(Buf),
}

impl Default for HybridBytes<'_> {
    #[inline]
    fn default() -> Self {
        HybridBytes::Borrowed(&[])
    }
}

impl<'a> HybridBytes<'a> {
    /// `bytes` as a pool reference if they lie in `pool`, else borrowed.
    #[inline]
    pub fn recover(bytes: &'a [u8], pool: &crate::Pool) -> HybridBytes<'a> {
        match pool.recover(bytes) {
            Some(buf) => HybridBytes::Shared(buf),
            None => HybridBytes::Borrowed(bytes),
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            HybridBytes::Borrowed(b) => b,
            HybridBytes::Owned(b) => b,
            HybridBytes::Shared(b) => b.as_slice(),
        }
    }

    /// True if this value is a pool reference (sent by reference when at
    /// least the serializer's copy threshold).
    #[inline]
    pub fn is_shared(&self) -> bool {
        matches!(self, HybridBytes::Shared(_))
    }

    /// The pool reference, if this value is one.
    #[inline]
    pub fn as_buf(&self) -> Option<&Buf> {
        match self {
            HybridBytes::Shared(b) => Some(b),
            _ => None,
        }
    }

    /// An owned value with the same bytes that no longer borrows: borrowed
    /// bytes are copied, owned and shared ones are kept.
    pub fn into_owned(self) -> HybridBytes<'static> {
        match self {
            HybridBytes::Borrowed(b) => HybridBytes::Owned(bytes::Bytes::copy_from_slice(b)),
            HybridBytes::Owned(b) => HybridBytes::Owned(b),
            HybridBytes::Shared(b) => HybridBytes::Shared(b),
        }
    }

    /// A pool [`Buf`] with these bytes: the reference itself, or a copy in
    /// `pool` (`None` if the pool is full).
    pub fn to_buf(&self, pool: &crate::Pool) -> Option<Buf> {
        match self {
            HybridBytes::Shared(b) => Some(b.clone()),
            other => pool.alloc_copy(other),
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

impl<'a> From<&'a [u8]> for HybridBytes<'a> {
    #[inline]
    fn from(b: &'a [u8]) -> Self {
        HybridBytes::Borrowed(b)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for HybridBytes<'a> {
    #[inline]
    fn from(b: &'a [u8; N]) -> Self {
        HybridBytes::Borrowed(b)
    }
}

impl<'a> From<&'a Vec<u8>> for HybridBytes<'a> {
    #[inline]
    fn from(b: &'a Vec<u8>) -> Self {
        HybridBytes::Borrowed(b)
    }
}

impl From<Vec<u8>> for HybridBytes<'_> {
    #[inline]
    fn from(b: Vec<u8>) -> Self {
        HybridBytes::Owned(b.into())
    }
}

impl From<bytes::Bytes> for HybridBytes<'_> {
    #[inline]
    fn from(b: bytes::Bytes) -> Self {
        HybridBytes::Owned(b)
    }
}

impl From<Buf> for HybridBytes<'_> {
    #[inline]
    fn from(b: Buf) -> Self {
        HybridBytes::Shared(b)
    }
}

impl PartialEq for HybridBytes<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for HybridBytes<'_> {}

impl PartialEq<[u8]> for HybridBytes<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<&[u8]> for HybridBytes<'_> {
    fn eq(&self, other: &&[u8]) -> bool {
        self.as_slice() == *other
    }
}

impl<const N: usize> PartialEq<[u8; N]> for HybridBytes<'_> {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for HybridBytes<'_> {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.as_slice() == *other
    }
}

impl PartialEq<Vec<u8>> for HybridBytes<'_> {
    fn eq(&self, other: &Vec<u8>) -> bool {
        self.as_slice() == other
    }
}

impl PartialOrd for HybridBytes<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HybridBytes<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

/// Map lookups by bytes: `map.get(&b"key"[..])`.
impl std::borrow::Borrow<[u8]> for HybridBytes<'_> {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::hash::Hash for HybridBytes<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl std::fmt::Debug for HybridBytes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            HybridBytes::Borrowed(_) => "borrowed",
            HybridBytes::Owned(_) => "owned",
            HybridBytes::Shared(_) => "shared",
        };
        write!(f, "HybridBytes::{kind}({} bytes)", self.len())
    }
}
