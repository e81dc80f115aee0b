//! Small shared helpers: strict decimal parsing, allocation-free integer
//! formatting, and a stack line buffer that flushes into a [`ReplySink`].

use super::ReplySink;

/// Parses an unsigned decimal: one or more ASCII digits, nothing else.
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let digit = |b: u8| Some(u64::from(b.wrapping_sub(b'0'))).filter(|&d| d <= 9);
    // No 19 digits overflow a u64: those take a multiply-add each (two
    // `lea`s); only a longer number's later digits pay a checked multiply
    // and add, which cost INCR a multiply's latency and two branches per
    // digit of its counter.
    let (head, tail) = s.split_at(s.len().min(19));
    let mut v: u64 = 0;
    for &b in head {
        v = v * 10 + digit(b)?;
    }
    for &b in tail {
        v = v.checked_mul(10)?.checked_add(digit(b)?)?;
    }
    Some(v)
}

/// [`parse_u64`] limited to `u32`.
pub(crate) fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|v| u32::try_from(v).ok())
}

/// A signed decimal: optional `-`, then one or more digits; fits `i64`.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', digits)) => {
            let v = parse_u64(digits)?;
            if v <= i64::MAX as u64 {
                Some(-(v as i64))
            } else if v == i64::MAX as u64 + 1 {
                Some(i64::MIN)
            } else {
                None
            }
        }
        _ => parse_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// [`parse_i64`] limited to `i32` (memcached's `safe_strtol`).
pub(crate) fn parse_i32(s: &[u8]) -> Option<i32> {
    parse_i64(s).and_then(|v| i32::try_from(v).ok())
}

/// Redis' `string2ll` rules for protocol lengths: optional `-`, no `+`, no
/// leading zeros (except `0` itself), no spaces.
pub(crate) fn parse_resp_int(s: &[u8]) -> Option<i64> {
    let digits = match s.split_first() {
        Some((b'-', d)) => d,
        _ => s,
    };
    match digits {
        [] => None,
        [b'0'] if digits.len() != s.len() => None, // "-0"
        [b'0', _, ..] => None,
        _ => parse_i64(s),
    }
}

/// The common case of a protocol length line: 1 to 18 digits with no
/// leading zero (or `0` alone), then `\r\n`. Returns the value and the
/// bytes read, `\r\n` included; `None` for anything else, which the
/// caller hands to the general path ([`parse_resp_int`] after a search for
/// `\r`). Reading digits in place spares that search and a second pass
/// over them for nearly every request header.
#[inline]
pub(crate) fn scan_len_crlf(s: &[u8]) -> Option<(u64, usize)> {
    // One or two digits (argument counts, keys, small values) from one
    // 4-byte read; longer ones take the loop.
    if let Some(&[a, b, c, d]) = s.first_chunk::<4>() {
        let (da, db) = (a.wrapping_sub(b'0'), b.wrapping_sub(b'0'));
        if da <= 9 && b == b'\r' && c == b'\n' {
            return Some((u64::from(da), 3));
        }
        if (1..=9).contains(&da) && db <= 9 && c == b'\r' && d == b'\n' {
            return Some((u64::from(da) * 10 + u64::from(db), 4));
        }
    }
    scan_long_len_crlf(s)
}

/// [`scan_len_crlf`]'s general loop.
#[inline(never)]
fn scan_long_len_crlf(s: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    let mut i = 0;
    while let Some(&b) = s.get(i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if i == 18 || (i == 1 && v == 0) {
            return None;
        }
        v = v * 10 + u64::from(d);
        i += 1;
    }
    if i == 0 || s.get(i..i + 2) != Some(&b"\r\n"[..]) {
        return None;
    }
    Some((v, i + 2))
}

/// An integer formatted on the stack (no allocation).
pub(crate) struct Itoa {
    buf: [u8; 20],
    start: usize,
}

impl Itoa {
    pub(crate) fn u64(mut v: u64) -> Itoa {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        Itoa { buf, start: i }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }
}

/// Writes `v` in decimal (with a leading `-` if negative).
pub(crate) fn push_i64<S: ReplySink + ?Sized>(line: &mut Line<'_, S>, v: i64) {
    if v < 0 {
        line.push(b"-");
    }
    line.push(Itoa::u64(v.unsigned_abs()).as_bytes());
}

const LINE_CAP: usize = 320;

/// Accumulates a reply line on the stack and hands it to the sink in one
/// `copy` (more only if it outgrows the stack buffer). Call
/// [`finish`](Line::finish); dropping flushes too.
pub(crate) struct Line<'s, S: ReplySink + ?Sized> {
    sink: &'s mut S,
    buf: [u8; LINE_CAP],
    len: usize,
}

impl<'s, S: ReplySink + ?Sized> Line<'s, S> {
    pub(crate) fn new(sink: &'s mut S) -> Self {
        Line {
            sink,
            buf: [0; LINE_CAP],
            len: 0,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) -> &mut Self {
        let end = self.len + bytes.len();
        if let Some(dst) = self.buf.get_mut(self.len..end) {
            dst.copy_from_slice(bytes);
            self.len = end;
        } else {
            self.flush();
            if bytes.len() >= LINE_CAP {
                self.sink.copy(bytes);
            } else if let Some(dst) = self.buf.get_mut(..bytes.len()) {
                dst.copy_from_slice(bytes);
                self.len = bytes.len();
            }
        }
        self
    }

    pub(crate) fn push_u64(&mut self, v: u64) -> &mut Self {
        self.push(Itoa::u64(v).as_bytes())
    }

    pub(crate) fn push_i64(&mut self, v: i64) -> &mut Self {
        push_i64(self, v);
        self
    }

    /// Flushes what is buffered; the sink is then free for `value`.
    pub(crate) fn flush(&mut self) {
        if self.len > 0 {
            self.sink.copy(self.buf.get(..self.len).unwrap_or_default());
            self.len = 0;
        }
    }

    /// Flushes and gives the sink back (e.g. to append a value reference).
    pub(crate) fn sink(&mut self) -> &mut S {
        self.flush();
        self.sink
    }

    pub(crate) fn finish(mut self) {
        self.flush();
    }
}

impl<S: ReplySink + ?Sized> Drop for Line<'_, S> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"007"), Some(7));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"+1"), None);
        assert_eq!(parse_u64(b"1 "), None);
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), None);
        // Both sides of the unchecked loop's 19-digit bound.
        assert_eq!(
            parse_u64(b"9999999999999999999"),
            Some(9_999_999_999_999_999_999)
        );
        assert_eq!(parse_u64(b"99999999999999999999"), None);
        assert_eq!(parse_u64(b"00000000000000000001"), Some(1));
        assert_eq!(parse_u64(b"123456789012345678x"), None);
    }

    #[test]
    fn signed() {
        assert_eq!(parse_i32(b"-2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32(b"2147483647"), Some(i32::MAX));
        assert_eq!(parse_i32(b"2147483648"), None);
        assert_eq!(parse_i32(b"99999999999"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"-9223372036854775809"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b"--1"), None);
    }

    #[test]
    fn resp_int() {
        assert_eq!(parse_resp_int(b"0"), Some(0));
        assert_eq!(parse_resp_int(b"-1"), Some(-1));
        assert_eq!(parse_resp_int(b"12"), Some(12));
        assert_eq!(parse_resp_int(b"012"), None);
        assert_eq!(parse_resp_int(b"-0"), None);
        assert_eq!(parse_resp_int(b"+1"), None);
        assert_eq!(parse_resp_int(b""), None);
        assert_eq!(parse_resp_int(b"99999999999999999999"), None);
    }

    /// Whatever the fast length scan accepts, the general path reads the
    /// same way; it accepts every plain length up to 18 digits.
    #[test]
    fn len_scan_agrees_with_the_general_path() {
        let general = |s: &[u8]| {
            let cr = s.iter().position(|&b| b == b'\r')?;
            (s.get(cr + 1) == Some(&b'\n')).then_some(())?;
            let v = parse_resp_int(&s[..cr])?;
            Some((v, cr + 2))
        };
        let mut cases: Vec<Vec<u8>> = [
            &b"0\r\n"[..],
            b"7\r\nxx",
            b"00\r\n",
            b"012\r\n",
            b"-1\r\n",
            b"-0\r\n",
            b"+5\r\n",
            b"5\r",
            b"5\n\r",
            b"5 \r\n",
            b"\r\n",
            b"",
            b"5",
            b"12a\r\n",
        ]
        .iter()
        .map(|c| c.to_vec())
        .collect();
        for digits in 1..=21 {
            cases.push(format!("{}\r\n", "9".repeat(digits)).into_bytes());
            cases.push(format!("1{}\r\n", "0".repeat(digits - 1)).into_bytes());
        }
        for c in &cases {
            match scan_len_crlf(c) {
                Some((v, n)) => assert_eq!(general(c), Some((v as i64, n)), "{c:?}"),
                None => {
                    let plain = c.iter().take_while(|b| b.is_ascii_digit()).count();
                    let well_formed = general(c).is_some_and(|(v, _)| v >= 0);
                    assert!(!well_formed || plain > 18, "{c:?} refused");
                }
            }
        }
    }

    #[test]
    fn itoa() {
        for v in [0u64, 1, 9, 10, 99, 100, 12345, u64::MAX] {
            assert_eq!(Itoa::u64(v).as_bytes(), v.to_string().as_bytes());
        }
        let mut out = Vec::new();
        let mut l = Line::new(&mut out);
        l.push_i64(i64::MIN)
            .push(b" ")
            .push_i64(-5)
            .push(b" ")
            .push_i64(7);
        l.finish();
        assert_eq!(out, format!("{} -5 7", i64::MIN).as_bytes());
    }

    #[test]
    fn line_spills() {
        let mut out = Vec::new();
        let big = vec![b'x'; LINE_CAP * 2 + 3];
        let mut l = Line::new(&mut out);
        l.push(b"ab")
            .push(&big)
            .push(b"cd")
            .push(&big[..LINE_CAP - 1])
            .push(b"ef");
        l.finish();
        let mut want = b"ab".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"cd");
        want.extend_from_slice(&big[..LINE_CAP - 1]);
        want.extend_from_slice(b"ef");
        assert_eq!(out, want);
    }
}
