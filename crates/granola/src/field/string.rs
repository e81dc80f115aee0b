//! [`HybridStr`]: a string field, validated lazily.

#![allow(unsafe_code)] // one block: skipping re-validation of checked bytes

use super::HybridBytes;
use crate::Buf;
use std::str::Utf8Error;

/// A string field: [`HybridBytes`] plus UTF-8 validation on access.
///
/// Decoding never validates (Cornflakes §6.4: UTF-8 checks were most of the
/// baselines' decode time); [`as_str`](Self::as_str) checks the bytes it
/// was given, and [`check`](Self::check) does so once for good. Values
/// built from `&str` or `String` are known valid and never checked.
///
/// No cache hides in a `&self` method: a `HybridStr` has no interior
/// mutability, so it is a well-behaved map key.
#[derive(Clone)]
pub struct HybridStr<'a> {
    bytes: HybridBytes<'a>,
    /// The bytes are known to be UTF-8 (they came from a `str`, or passed
    /// `from_utf8`); they never change afterwards.
    valid: bool,
}

impl<'a> HybridStr<'a> {
    /// Wraps bytes not yet known to be UTF-8 (checked on first `as_str`).
    #[inline]
    pub fn from_bytes_unchecked(bytes: HybridBytes<'a>) -> HybridStr<'a> {
        HybridStr {
            bytes,
            valid: false,
        }
    }

    /// The string; bytes not known to be UTF-8 are validated (each call,
    /// until [`check`](Self::check) records a success).
    #[inline]
    pub fn as_str(&self) -> Result<&str, Utf8Error> {
        let bytes = self.bytes.as_slice();
        if self.valid {
            // SAFETY: `valid` is set only for bytes that came from a str or
            // passed from_utf8, and they cannot change: a borrowed slice is
            // a shared borrow, `Bytes` is immutable and a Buf's slot is
            // frozen.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        std::str::from_utf8(bytes)
    }

    /// Validates the bytes once, so later [`as_str`](Self::as_str) calls
    /// skip the check.
    pub fn check(&mut self) -> Result<&str, Utf8Error> {
        if !self.valid {
            std::str::from_utf8(self.bytes.as_slice())?;
            self.valid = true;
        }
        self.as_str()
    }

    /// The raw bytes (no validation).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The underlying hybrid bytes.
    #[inline]
    pub fn as_hybrid(&self) -> &HybridBytes<'a> {
        &self.bytes
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True if empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// True if this value is a pool reference (see [`HybridBytes`]).
    #[inline]
    pub fn is_shared(&self) -> bool {
        self.bytes.is_shared()
    }

    /// An owned string that no longer borrows (see
    /// [`HybridBytes::into_owned`]).
    pub fn into_owned(self) -> HybridStr<'static> {
        HybridStr {
            bytes: self.bytes.into_owned(),
            valid: self.valid,
        }
    }

    fn known_valid(bytes: HybridBytes<'a>) -> HybridStr<'a> {
        HybridStr { bytes, valid: true }
    }
}

impl Default for HybridStr<'_> {
    fn default() -> Self {
        HybridStr::known_valid(HybridBytes::default())
    }
}

impl<'a> From<&'a str> for HybridStr<'a> {
    #[inline]
    fn from(s: &'a str) -> Self {
        HybridStr::known_valid(HybridBytes::Borrowed(s.as_bytes()))
    }
}

impl<'a> From<&'a String> for HybridStr<'a> {
    #[inline]
    fn from(s: &'a String) -> Self {
        HybridStr::from(s.as_str())
    }
}

impl From<String> for HybridStr<'_> {
    #[inline]
    fn from(s: String) -> Self {
        HybridStr::known_valid(HybridBytes::Owned(s.into_bytes().into()))
    }
}

/// A string held in pool memory (validated lazily): sent by reference when
/// at least the serializer's copy threshold.
impl From<Buf> for HybridStr<'_> {
    #[inline]
    fn from(b: Buf) -> Self {
        HybridStr::from_bytes_unchecked(HybridBytes::Shared(b))
    }
}

impl PartialEq for HybridStr<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for HybridStr<'_> {}

impl PartialEq<str> for HybridStr<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for HybridStr<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialOrd for HybridStr<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HybridStr<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

/// Map lookups by bytes: `map.get(&b"key"[..])` (ordering, equality and
/// hashing are those of the bytes).
impl std::borrow::Borrow<[u8]> for HybridStr<'_> {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl std::hash::Hash for HybridStr<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl std::fmt::Debug for HybridStr<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.as_str() {
            Ok(s) if s.len() <= 64 => write!(f, "{s:?}"),
            _ => write!(f, "HybridStr({:?})", self.bytes),
        }
    }
}
