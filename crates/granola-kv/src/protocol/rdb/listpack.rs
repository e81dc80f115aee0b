//! Listpacks, the packed element lists inside RDB's hash, set, sorted
//! set, list and stream encodings: integers in their smallest encoding,
//! strings with their length, each element followed by its length
//! backwards ("backlen") so the list can be walked from either end.

use super::{RdbError, ELEMENT_COST};

/// A listpack's element count when it does not fit its 16-bit field.
pub(super) const LP_COUNT_UNKNOWN: u16 = u16::MAX;

/// Appends a listpack element's backlen: `len` (its encoding and data),
/// 7 bits a byte, the low bits last, every byte but the first marked.
pub(super) fn lp_backlen(out: &mut Vec<u8>, len: usize) {
    let bytes = match len {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    for i in (0..bytes).rev() {
        let b = (len >> (7 * i)) as u8 & 0x7f;
        out.push(if i == bytes - 1 { b } else { b | 0x80 });
    }
}

/// Appends a listpack integer in its smallest encoding.
pub(super) fn lp_int(out: &mut Vec<u8>, v: i64) {
    let start = out.len();
    match v {
        0..=127 => out.push(v as u8),
        -4096..=4095 => {
            let raw = (v as u16) & 0x1fff;
            out.extend_from_slice(&[0xc0 | (raw >> 8) as u8, raw as u8]);
        }
        _ => {
            let (tag, n) = if i16::try_from(v).is_ok() {
                (0xf1, 2)
            } else if (-(1 << 23)..1 << 23).contains(&v) {
                (0xf2, 3)
            } else if i32::try_from(v).is_ok() {
                (0xf3, 4)
            } else {
                (0xf4, 8)
            };
            out.push(tag);
            out.extend_from_slice(&v.to_le_bytes()[..n]);
        }
    }
    let len = out.len() - start;
    lp_backlen(out, len);
}

/// Appends a listpack string.
pub(super) fn lp_str(out: &mut Vec<u8>, s: &[u8]) {
    let start = out.len();
    let n = s.len();
    if n < 64 {
        out.push(0x80 | n as u8);
    } else if n < 4096 {
        out.extend_from_slice(&[0xe0 | (n >> 8) as u8, n as u8]);
    } else {
        out.push(0xf0);
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
    let len = out.len() - start;
    lp_backlen(out, len);
}

/// The entries of a listpack, integers as their decimal text (see
/// [`Listpack`]).
pub(super) fn elements(blob: &[u8], budget: &mut usize) -> Result<Vec<Vec<u8>>, RdbError> {
    let mut lp = Listpack::open(blob)?;
    let mut out = Vec::new();
    while let Some(e) = lp.next()? {
        out.push(e.bytes(budget)?);
    }
    Ok(out)
}

/// A listpack element.
#[derive(Clone, Copy)]
pub(super) enum Lp<'a> {
    Str(&'a [u8]),
    Int(i64),
}

impl Lp<'_> {
    /// Its bytes (an integer as its decimal text), charged to `budget`.
    pub(super) fn bytes(self, budget: &mut usize) -> Result<Vec<u8>, RdbError> {
        let bytes = match self {
            Lp::Str(s) => s.to_vec(),
            Lp::Int(v) => v.to_string().into_bytes(),
        };
        *budget = budget
            .checked_sub(bytes.len() + ELEMENT_COST)
            .ok_or(RdbError::TooLarge)?;
        Ok(bytes)
    }

    /// Its value as an integer: a string of one is taken too.
    pub(super) fn int(self) -> Result<i64, RdbError> {
        match self {
            Lp::Int(v) => Ok(v),
            Lp::Str(s) => std::str::from_utf8(s)
                .ok()
                .filter(|t| !t.starts_with('+'))
                .and_then(|t| t.parse().ok())
                .ok_or(RdbError::Format),
        }
    }
}

/// A listpack's elements, checked as they are read:
///
/// ```text
///   total_bytes u32 LE | count u16 LE | element ... | 0xFF
///   element = encoding (+ data) | backlen (1-5 bytes: the element's length)
/// ```
///
/// The total must be the blob's length, each backlen must be the one
/// its element's length has, the end byte must end the blob, and the
/// count (unless 65535, unknown) must be the elements'.
pub(super) struct Listpack<'a> {
    blob: &'a [u8],
    at: usize,
    seen: usize,
}

impl<'a> Listpack<'a> {
    pub(super) fn open(blob: &'a [u8]) -> Result<Listpack<'a>, RdbError> {
        if blob.len() < 7 || blob.get(..4) != Some(&(blob.len() as u32).to_le_bytes()[..]) {
            return Err(RdbError::Format);
        }
        Ok(Listpack {
            blob,
            at: 6,
            seen: 0,
        })
    }

    /// The next element (None at the end).
    pub(super) fn next(&mut self) -> Result<Option<Lp<'a>>, RdbError> {
        let bad = RdbError::Format;
        let b = *self.blob.get(self.at).ok_or(bad)?;
        if b == 0xff {
            let count = u16::from_le_bytes([self.blob[4], self.blob[5]]);
            if self.at + 1 != self.blob.len()
                || (count != LP_COUNT_UNKNOWN && usize::from(count) != self.seen)
            {
                return Err(bad);
            }
            return Ok(None);
        }
        let tail = &self.blob[self.at..];
        let int = |n: usize| -> Result<i64, RdbError> {
            let d = tail.get(1..1 + n).ok_or(bad)?;
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(d);
            let shift = 64 - 8 * n as u32;
            Ok((i64::from_le_bytes(w) << shift) >> shift)
        };
        let str_at = |head: usize, len: usize| -> Result<(Lp<'a>, usize), RdbError> {
            let end = head.checked_add(len).ok_or(bad)?;
            Ok((Lp::Str(tail.get(head..end).ok_or(bad)?), end))
        };
        // The element, and its length before its backlen.
        let (e, len) = match b {
            0x00..=0x7f => (Lp::Int(i64::from(b)), 1),
            0x80..=0xbf => str_at(1, usize::from(b & 0x3f))?,
            0xc0..=0xdf => {
                let lo = *tail.get(1).ok_or(bad)?;
                let raw = i64::from(b & 0x1f) << 8 | i64::from(lo);
                (Lp::Int((raw << 51) >> 51), 2)
            }
            0xe0..=0xef => {
                let lo = *tail.get(1).ok_or(bad)?;
                str_at(2, usize::from(b & 0x0f) << 8 | usize::from(lo))?
            }
            0xf0 => {
                let n = tail.get(1..5).ok_or(bad)?;
                str_at(
                    5,
                    u32::from_le_bytes(n.try_into().map_err(|_| bad)?) as usize,
                )?
            }
            0xf1 => (Lp::Int(int(2)?), 3),
            0xf2 => (Lp::Int(int(3)?), 4),
            0xf3 => (Lp::Int(int(4)?), 5),
            0xf4 => (Lp::Int(int(8)?), 9),
            _ => return Err(bad),
        };
        let mut want = Vec::with_capacity(5);
        lp_backlen(&mut want, len);
        let end = len.checked_add(want.len()).ok_or(bad)?;
        if tail.get(len..end) != Some(&want[..]) {
            return Err(bad);
        }
        self.at += end;
        self.seen += 1;
        Ok(Some(e))
    }

    /// The next element, which must be there.
    pub(super) fn element(&mut self) -> Result<Lp<'a>, RdbError> {
        self.next()?.ok_or(RdbError::Format)
    }

    /// The next element as an integer.
    pub(super) fn int(&mut self) -> Result<i64, RdbError> {
        self.element()?.int()
    }

    /// The next element as a count (not negative).
    pub(super) fn count(&mut self) -> Result<u64, RdbError> {
        u64::try_from(self.int()?).map_err(|_| RdbError::Format)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_integers_and_backlens_round_trip() {
        let ints = [
            0i64,
            127,
            128,
            -1,
            4095,
            -4096,
            4096,
            -4097,
            32767,
            -32768,
            32768,
            8_388_607,
            -8_388_608,
            8_388_608,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::MAX,
            i64::MIN,
        ];
        let strs = [0usize, 63, 64, 4095, 4096, 16_378, 16_379, 20_000];
        let mut lp = vec![0u8; 6];
        for v in ints {
            lp_int(&mut lp, v);
        }
        for n in strs {
            lp_str(&mut lp, &vec![b'q'; n]);
        }
        lp.push(0xff);
        let n = lp.len() as u32;
        lp[..4].copy_from_slice(&n.to_le_bytes());
        lp[4..6].copy_from_slice(&((ints.len() + strs.len()) as u16).to_le_bytes());
        let mut it = Listpack::open(&lp).unwrap();
        for v in ints {
            assert!(matches!(it.next(), Ok(Some(Lp::Int(x))) if x == v), "{v}");
        }
        for n in strs {
            assert!(
                matches!(it.next(), Ok(Some(Lp::Str(s))) if s.len() == n),
                "{n}"
            );
        }
        assert!(matches!(it.next(), Ok(None)));
        // A wrong count, and a wrong backlen, are refused.
        let mut bad = lp.clone();
        bad[4] ^= 1;
        assert_eq!(
            elements(&bad, &mut usize::MAX.clone()),
            Err(RdbError::Format)
        );
        let mut bad = lp.clone();
        bad[7] ^= 1;
        assert_eq!(
            elements(&bad, &mut usize::MAX.clone()),
            Err(RdbError::Format)
        );
    }
}
