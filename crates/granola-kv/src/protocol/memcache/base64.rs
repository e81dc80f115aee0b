//! Base64 (standard alphabet) for meta commands' binary keys (the `b`
//! flag): decoding, where padding is optional and a length of 1 mod 4 is
//! invalid, and encoding with padding, as memcached returns such keys.

fn sextet(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// The input without its padding, if its shape is valid.
fn unpadded(src: &[u8]) -> Option<&[u8]> {
    let body = if src.len() % 4 == 0 {
        let b = src.strip_suffix(b"=").unwrap_or(src);
        b.strip_suffix(b"=").unwrap_or(b)
    } else {
        src
    };
    if body.len() % 4 == 1 {
        return None;
    }
    Some(body)
}

/// Decoded length, or `None` if `src` is not valid base64 or decodes to
/// nothing.
pub(crate) fn decoded_len(src: &[u8]) -> Option<usize> {
    let body = unpadded(src)?;
    if body.is_empty() || !body.iter().all(|&c| sextet(c).is_some()) {
        return None;
    }
    Some(body.len() / 4 * 3 + (body.len() % 4).saturating_sub(1))
}

/// Decodes `src` into `out`; `None` if invalid or `out` is too small.
pub(crate) fn decode(src: &[u8], out: &mut [u8]) -> Option<usize> {
    let n = decoded_len(src)?;
    let body = unpadded(src)?;
    let out = out.get_mut(..n)?;
    let mut o = 0;
    for chunk in body.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= sextet(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        for &b in bytes.get(1..chunk.len()).unwrap_or_default() {
            *out.get_mut(o)? = b;
            o += 1;
        }
    }
    Some(o)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The encoded length of `n` bytes, padding included.
pub(crate) const fn encoded_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// Encodes `src` (padded) into `out`; the bytes written. `out` holds at
/// least [`encoded_len`]`(src.len())`: the caller sizes it so, from the
/// key length limit; a shorter one gets what fits of whole groups.
pub(crate) fn encode(src: &[u8], out: &mut [u8]) -> usize {
    let mut o = 0;
    for chunk in src.chunks(3) {
        let Some(dst) = out.get_mut(o..o + 4) else {
            break;
        };
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for (i, d) in dst.iter_mut().enumerate() {
            *d = if i <= chunk.len() {
                ALPHABET[(n >> (18 - 6 * i) & 63) as usize]
            } else {
                b'='
            };
        }
        o += 4;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &[u8]) -> Option<Vec<u8>> {
        let mut out = [0u8; 64];
        decode(s, &mut out).map(|n| out[..n].to_vec())
    }

    #[test]
    fn vectors() {
        assert_eq!(dec(b"Zm9v").as_deref(), Some(&b"foo"[..]));
        assert_eq!(dec(b"Zm9vYg==").as_deref(), Some(&b"foob"[..]));
        assert_eq!(dec(b"Zm9vYg").as_deref(), Some(&b"foob"[..]));
        assert_eq!(dec(b"Zm9vYmE=").as_deref(), Some(&b"fooba"[..]));
        assert_eq!(dec(b"Zm9vYmFy").as_deref(), Some(&b"foobar"[..]));
        assert_eq!(dec(b"AAEC/w==").as_deref(), Some(&[0u8, 1, 2, 255][..]));
        assert_eq!(dec(b""), None);
        assert_eq!(dec(b"===="), None);
        assert_eq!(dec(b"Z"), None);
        assert_eq!(dec(b"Zm9v!A=="), None);
        assert_eq!(dec(b"Zm=v"), None);
        assert_eq!(decoded_len(b"Zm9vYg=="), Some(4));
        let mut small = [0u8; 2];
        assert_eq!(decode(b"Zm9v", &mut small), None);
    }

    #[test]
    fn encodes_with_padding_and_round_trips() {
        let mut out = [0u8; 16];
        for (raw, text) in [
            (&b"a"[..], &b"YQ=="[..]),
            (b"ab", b"YWI="),
            (b"abc", b"YWJj"),
            (b"\xff\x00\x10", b"/wAQ"),
        ] {
            let n = encode(raw, &mut out);
            assert_eq!(&out[..n], text);
            assert_eq!(dec(text).as_deref(), Some(raw));
        }
        assert_eq!(encoded_len(250), 336);
    }
}
