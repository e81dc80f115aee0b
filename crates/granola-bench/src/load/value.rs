//! Deterministic keys and values, so every response can be checked without
//! storing what was sent.
//!
//! # Keys
//!
//! A key is named by a [`KeyRef`]: a workload prefix, a numeric id, an
//! optional sub-index (split values, list elements stored as separate
//! memcached keys) and a target length. [`write_key`] spells it as
//!
//! ```text
//! <prefix><id in lowercase hex>[.<sub in decimal>]<'-' padding up to len>
//! ```
//!
//! e.g. `ycsb:1f.3------…`. Every prefix ends in `:`, hex digits stop at the
//! first non-hex byte, and `-` is not a hex digit, so distinct `(prefix, id,
//! sub)` never spell the same key. When the target length is shorter than
//! the spelling, the spelling wins (the key is longer than asked).
//!
//! # Values
//!
//! The value stored for element `elem` of key `k` with length `len` is
//!
//! ```text
//! value[i] = PATTERN[(start + i) mod P],   P = 65_521 (a prime)
//! start    = mix64(fnv1a64(key bytes) ^ (elem << 32) ^ len) mod P
//! ```
//!
//! where `PATTERN` is `P` bytes of xorshift64* output from a fixed seed and
//! `mix64` is the splitmix64 finalizer. A value is thus a window of a fixed
//! random string, starting at a place chosen by (key, element, length): a
//! reader that knows the key and the expected length can check every byte
//! with `memcmp`s against the pattern, and a value returned for the wrong
//! key, element or length fails the check (the windows start at different
//! places, except for a 1-in-65 521 collision). [`ValueSpec`] carries the
//! three inputs; single values use `elem = 0`.

use std::sync::OnceLock;

/// Period of the value pattern (a prime, so windows of different lengths
/// and starts do not line up).
pub const PERIOD: usize = 65_521;

/// Marks "no sub-index" in [`KeyRef::sub`].
pub const NO_SUB: u32 = u32::MAX;

/// The pattern, stored twice in a row so any window of up to [`PERIOD`]
/// bytes is one contiguous slice.
fn pattern() -> &'static [u8] {
    static PATTERN: OnceLock<Box<[u8]>> = OnceLock::new();
    PATTERN.get_or_init(|| {
        let mut v = vec![0u8; 2 * PERIOD];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for b in v.iter_mut().take(PERIOD) {
            // xorshift64*
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            *b = (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8;
        }
        v.copy_within(0..PERIOD, PERIOD);
        v.into_boxed_slice()
    })
}

/// FNV-1a, 64 bit.
#[inline]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The splitmix64 finalizer.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A key, by name: see the [module docs](self) for its spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyRef {
    /// Workload namespace, ending in `:` (e.g. `"ycsb:"`).
    pub prefix: &'static str,
    /// Key number within the workload.
    pub id: u64,
    /// Sub-index ([`NO_SUB`] for none).
    pub sub: u32,
    /// Target length in bytes.
    pub len: u16,
}

impl KeyRef {
    /// A key without sub-index.
    pub fn new(prefix: &'static str, id: u64, len: u16) -> KeyRef {
        KeyRef {
            prefix,
            id,
            sub: NO_SUB,
            len,
        }
    }

    /// The same key with sub-index `sub`.
    pub fn with_sub(self, sub: u32) -> KeyRef {
        KeyRef { sub, ..self }
    }

    /// The key's bytes, appended to a new vector (tests, tools; the load
    /// generator uses [`write_key`] into reused buffers).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        write_key(self, &mut v);
        v
    }
}

/// Appends the spelling of `key` to `out`; returns the number of bytes.
pub fn write_key(key: &KeyRef, out: &mut Vec<u8>) -> usize {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let start = out.len();
    out.extend_from_slice(key.prefix.as_bytes());
    let digits = if key.id == 0 {
        1
    } else {
        (64 - key.id.leading_zeros()).div_ceil(4)
    };
    for i in (0..digits).rev() {
        out.push(HEX[((key.id >> (4 * i)) & 0xf) as usize]);
    }
    if key.sub != NO_SUB {
        out.push(b'.');
        push_decimal(out, u64::from(key.sub));
    }
    let want = start + usize::from(key.len);
    if out.len() < want {
        out.resize(want, b'-');
    }
    out.len() - start
}

/// Appends `n` in decimal.
#[inline]
pub fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// What a value must be: the hash of its key, its element index and its
/// length (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueSpec {
    /// [`fnv1a64`] of the key bytes.
    pub key_hash: u64,
    /// Element index within a list (0 for single values).
    pub elem: u32,
    /// Length in bytes.
    pub len: u32,
}

impl ValueSpec {
    /// The spec of element `elem` (length `len`) of the key spelled `key`.
    pub fn new(key: &[u8], elem: u32, len: u32) -> ValueSpec {
        ValueSpec {
            key_hash: fnv1a64(key),
            elem,
            len,
        }
    }

    /// Where the value's window starts in the pattern.
    #[inline]
    pub fn start(&self) -> usize {
        (mix64(self.key_hash ^ (u64::from(self.elem) << 32) ^ u64::from(self.len)) % PERIOD as u64)
            as usize
    }

    /// Calls `f` with consecutive pieces of the value (one piece when
    /// `len <= PERIOD`); the pieces borrow the static pattern, no copy.
    #[inline]
    pub fn for_each_piece(&self, mut f: impl FnMut(&'static [u8])) {
        let p = pattern();
        let mut pos = self.start();
        let mut left = self.len as usize;
        while left > 0 {
            let n = left.min(PERIOD);
            f(&p[pos..pos + n]);
            left -= n;
            pos = (pos + n) % PERIOD;
        }
    }

    /// The value as one slice when it fits in one pattern window
    /// (`len <= PERIOD`), else `None`.
    #[inline]
    pub fn as_slice(&self) -> Option<&'static [u8]> {
        let len = self.len as usize;
        (len <= PERIOD).then(|| {
            let s = self.start();
            &pattern()[s..s + len]
        })
    }

    /// Appends the value to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        self.for_each_piece(|p| out.extend_from_slice(p));
    }

    /// The value as a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len as usize);
        self.write(&mut v);
        v
    }

    /// Checks `got` against this spec: its length, then every byte.
    #[inline]
    pub fn check(&self, got: &[u8]) -> Result<(), ValueMismatch> {
        if got.len() != self.len as usize {
            return Err(ValueMismatch::Length {
                expected: self.len as usize,
                got: got.len(),
            });
        }
        let mut off = 0;
        let mut bad = None;
        self.for_each_piece(|p| {
            if bad.is_none() && got[off..off + p.len()] != *p {
                let i = p
                    .iter()
                    .zip(&got[off..])
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                bad = Some(off + i);
            }
            off += p.len();
        });
        match bad {
            Some(at) => Err(ValueMismatch::Bytes { at }),
            None => Ok(()),
        }
    }
}

/// Why a value failed [`ValueSpec::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueMismatch {
    /// Wrong length.
    Length {
        /// Bytes expected.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// Right length, a wrong byte (the first one at `at`).
    Bytes {
        /// Offset of the first wrong byte.
        at: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_spelling() {
        let k = KeyRef::new("ycsb:", 0x1f, 12);
        assert_eq!(k.to_vec(), b"ycsb:1f-----");
        assert_eq!(k.with_sub(3).to_vec(), b"ycsb:1f.3---");
        assert_eq!(KeyRef::new("t:", 0, 0).to_vec(), b"t:0");
        // Too short a target: the spelling wins.
        assert_eq!(
            KeyRef::new("t:", u64::MAX, 4).to_vec(),
            b"t:ffffffffffffffff"
        );
        let mut v = Vec::new();
        push_decimal(&mut v, 0);
        push_decimal(&mut v, 1234567890);
        assert_eq!(v, b"01234567890");
    }

    #[test]
    fn values_check_and_differ() {
        let a = ValueSpec::new(b"k1", 0, 4096);
        let b = ValueSpec::new(b"k2", 0, 4096);
        let va = a.to_vec();
        assert_eq!(va.len(), 4096);
        assert_eq!(a.check(&va), Ok(()));
        assert!(b.check(&va).is_err(), "another key's value must not pass");
        let e1 = ValueSpec::new(b"k1", 1, 4096);
        assert!(
            e1.check(&va).is_err(),
            "another element's value must not pass"
        );
        let mut bad = va.clone();
        bad[1000] ^= 1;
        assert_eq!(a.check(&bad), Err(ValueMismatch::Bytes { at: 1000 }));
        assert_eq!(
            a.check(&va[..4095]),
            Err(ValueMismatch::Length {
                expected: 4096,
                got: 4095
            })
        );
        assert_eq!(a.as_slice().unwrap(), &va[..]);
    }

    #[test]
    fn long_values_wrap_the_pattern() {
        let s = ValueSpec::new(b"big", 0, (3 * PERIOD + 17) as u32);
        let v = s.to_vec();
        assert_eq!(v.len(), 3 * PERIOD + 17);
        assert!(s.as_slice().is_none());
        assert_eq!(s.check(&v), Ok(()));
        let mut bad = v.clone();
        bad[2 * PERIOD + 5] ^= 0x80;
        assert_eq!(
            s.check(&bad),
            Err(ValueMismatch::Bytes { at: 2 * PERIOD + 5 })
        );
        assert_eq!(ValueSpec::new(b"z", 0, 0).to_vec(), b"");
    }
}
