//! [`HybridStr`]: a string field, validated lazily.

#![allow(unsafe_code)] // one block: skipping re-validation of checked bytes

use super::HybridBytes;
use crate::{Buf, Context};
use std::cell::Cell;
use std::str::Utf8Error;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Utf8State {
    Unchecked,
    Valid,
}

/// A string field: [`HybridBytes`] plus UTF-8 validation on first access.
///
/// Decoding never validates (Cornflakes §6.4: UTF-8 checks were most of the
/// baselines' decode time); [`as_str`](Self::as_str) checks once and
/// remembers a success. Values built from `&str` are known valid.
#[derive(Clone)]
pub struct HybridStr<'a> {
    bytes: HybridBytes<'a>,
    state: Cell<Utf8State>,
}

impl<'a> HybridStr<'a> {
    /// Applies the copy threshold to a `&str` (see [`HybridBytes::new`]).
    #[inline]
    pub fn new(s: &str, ctx: &'a Context) -> HybridStr<'a> {
        HybridStr {
            bytes: HybridBytes::new(s.as_bytes(), ctx),
            state: Cell::new(Utf8State::Valid),
        }
    }

    /// Wraps bytes not yet known to be UTF-8 (checked on first `as_str`).
    #[inline]
    pub fn from_bytes_unchecked(bytes: HybridBytes<'a>) -> HybridStr<'a> {
        HybridStr {
            bytes,
            state: Cell::new(Utf8State::Unchecked),
        }
    }

    /// Applies the threshold to a [`Buf`] holding a string's bytes
    /// (validated lazily).
    pub fn from_buf(buf: Buf, ctx: &'a Context) -> HybridStr<'a> {
        HybridStr::from_bytes_unchecked(HybridBytes::from_buf(buf, ctx))
    }

    /// The string, validating it the first time.
    #[inline]
    pub fn as_str(&self) -> Result<&str, Utf8Error> {
        let bytes = self.bytes.as_slice();
        if self.state.get() == Utf8State::Valid {
            // SAFETY: the state is Valid only after these exact bytes passed
            // from_utf8 (or came from a &str), and they cannot change: a
            // Copied slice is a shared borrow and a Buf's slot is frozen.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        let s = std::str::from_utf8(bytes)?;
        self.state.set(Utf8State::Valid);
        Ok(s)
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

    /// True if this field will be sent by reference.
    #[inline]
    pub fn is_zero_copy(&self) -> bool {
        self.bytes.is_zero_copy()
    }
}

impl PartialEq for HybridStr<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
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
