//! RESP2 reply encoders and Redis' error texts.
//!
//! ```text
//!   +<simple>\r\n   -<error>\r\n   :<integer>\r\n
//!   $<len>\r\n<bytes>\r\n    $-1\r\n (null)
//!   *<n>\r\n<n replies>      *-1\r\n (null array)
//! ```

use super::Command;
use crate::protocol::num::{Itoa, Line};
use crate::protocol::ReplySink;
use granola::{copy_short, Buf};

/// `+OK`.
pub const OK: &[u8] = b"+OK\r\n";
/// `+PONG`.
pub const PONG: &[u8] = b"+PONG\r\n";
/// The null bulk string (a missing key).
pub const NULL_BULK: &[u8] = b"$-1\r\n";
/// The null array.
pub const NULL_ARRAY: &[u8] = b"*-1\r\n";
/// An empty array.
pub const EMPTY_ARRAY: &[u8] = b"*0\r\n";
/// A number argument that does not parse or fit.
pub const ERR_NOT_INTEGER: &[u8] = b"-ERR value is not an integer or out of range\r\n";
/// A command applied to a key of another type.
pub const ERR_WRONGTYPE: &[u8] =
    b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
/// Bad option combination.
pub const ERR_SYNTAX: &[u8] = b"-ERR syntax error\r\n";
/// `INCR` and friends would overflow.
pub const ERR_OVERFLOW: &[u8] = b"-ERR increment or decrement would overflow\r\n";

/// Redis keeps error and status lines on one line: CR and LF become spaces.
fn one_line(b: u8) -> u8 {
    if b == b'\r' || b == b'\n' {
        b' '
    } else {
        b
    }
}

fn push_one_line<S: ReplySink + ?Sized>(line: &mut Line<'_, S>, text: &[u8]) {
    for chunk in text.split_inclusive(|&b| b == b'\r' || b == b'\n') {
        match chunk.split_last() {
            Some((&last, head)) if one_line(last) != last => {
                line.push(head).push(b" ");
            }
            _ => {
                line.push(chunk);
            }
        }
    }
}

/// Writes a simple string: `+<text>\r\n` (CR/LF in `text` become spaces).
pub fn write_simple<S: ReplySink + ?Sized>(sink: &mut S, text: &[u8]) {
    let mut line = Line::new(sink);
    line.push(b"+");
    push_one_line(&mut line, text);
    line.push(b"\r\n");
    line.finish();
}

/// Writes an error: `-<message>\r\n`. `message` carries its code, e.g.
/// `b"ERR no such key"` or `b"WRONGTYPE ..."`; CR/LF become spaces.
pub fn write_error<S: ReplySink + ?Sized>(sink: &mut S, message: &[u8]) {
    let mut line = Line::new(sink);
    line.push(b"-");
    push_one_line(&mut line, message);
    line.push(b"\r\n");
    line.finish();
}

/// Writes an integer: `:<v>\r\n`.
pub fn write_integer<S: ReplySink + ?Sized>(sink: &mut S, v: i64) {
    write_number_line(sink, b':', v.is_negative(), v.unsigned_abs());
}

/// `<prefix>[-]<n>\r\n`: an integer reply or an aggregate's header, from
/// a 24-byte stack buffer (a `Line` clears 320 bytes for these few; one
/// runs per INCR reply and per array header), written in place when the
/// sink offers a region.
fn write_number_line<S: ReplySink + ?Sized>(sink: &mut S, prefix: u8, negative: bool, n: u64) {
    if n < 10 && !negative {
        // One digit: most integer replies (SADD, DEL, EXISTS, HSET...)
        // and small arrays' headers; no formatting.
        return write_line(sink, &[prefix, b'0' + n as u8, b'\r', b'\n']);
    }
    let mut buf = [0u8; 24];
    buf[0] = prefix;
    let mut len = 1;
    if negative {
        buf[1] = b'-';
        len = 2;
    }
    let mut digits = itoa::Buffer::new();
    let d = digits.format(n).as_bytes();
    copy_short(&mut buf[len..], d);
    len += d.len();
    buf[len..len + 2].copy_from_slice(b"\r\n");
    len += 2;
    write_line(sink, &buf[..len]);
}

/// Writes a whole reply line composed by the caller (`:42\r\n`, never
/// empty), in place when the sink offers a region. Not for errors, whose
/// text the sink may need to read.
pub fn write_line<S: ReplySink + ?Sized>(sink: &mut S, line: &[u8]) {
    match sink.region(line.len(), line[0]) {
        Some(out) => copy_short(out, line),
        None => sink.copy(line),
    }
}

/// Writes a stored value as a bulk string: `$<len>\r\n` (copied), the value
/// ([`ReplySink::value`]), `\r\n`.
pub fn write_bulk<S: ReplySink + ?Sized>(sink: &mut S, value: &Buf) {
    if value.len() <= SMALL_BULK && sink.copies(value.len()) {
        // Copied anyway: header, bytes and CRLF in one copy (one queue
        // reservation per LRANGE element instead of three).
        return write_bulk_bytes(sink, value);
    }
    // A small header buffer rather than a `Line`: this runs once per
    // element of an LRANGE/MGET reply, where clearing a full line buffer
    // showed up as a quarter of the server's CPU.
    let mut head = [0u8; 24];
    let n = bulk_head(&mut head, value.len());
    sink.copy(&head[..n]);
    sink.value(value);
    sink.copy(b"\r\n");
}

/// [`write_bulk`] of a stored value given as its bytes, and the `Buf` to
/// share only if the sink would reference it: a small copied value costs
/// no reference count (two atomic operations per value of a GET or MGET).
pub fn write_bulk_stored<S: ReplySink + ?Sized>(
    sink: &mut S,
    bytes: &[u8],
    buf: impl FnOnce() -> Buf,
) {
    if bytes.len() <= SMALL_BULK && sink.copies(bytes.len()) {
        return write_bulk_bytes(sink, bytes);
    }
    write_bulk(sink, &buf());
}

/// Bulk strings up to this size are framed on the stack and copied once.
const SMALL_BULK: usize = 64;

/// Writes `$<len>\r\n` into `out`; its length.
fn bulk_head(out: &mut [u8; 24], len: usize) -> usize {
    if len < 100 {
        // Most bulk strings of a long reply are short: no digit loop.
        out[0] = b'$';
        let n = if len < 10 {
            out[1] = b'0' + len as u8;
            2
        } else {
            out[1] = b'0' + (len / 10) as u8;
            out[2] = b'0' + (len % 10) as u8;
            3
        };
        out[n] = b'\r';
        out[n + 1] = b'\n';
        return n + 2;
    }
    let digits = Itoa::u64(len as u64);
    let d = digits.as_bytes();
    out[0] = b'$';
    out[1..1 + d.len()].copy_from_slice(d);
    out[1 + d.len()..3 + d.len()].copy_from_slice(b"\r\n");
    3 + d.len()
}

/// Writes bytes as a bulk string, all copied.
pub fn write_bulk_bytes<S: ReplySink + ?Sized>(sink: &mut S, bytes: &[u8]) {
    if bytes.len() <= SMALL_BULK {
        let mut head = [0u8; 24];
        let n = bulk_head(&mut head, bytes.len());
        let total = n + bytes.len() + 2;
        if let Some(out) = sink.region(total, b'$') {
            // Straight into the reply: one copy of the bytes, no staging.
            copy_short(out, &head[..n]);
            copy_short(&mut out[n..], bytes);
            out[total - 2..].copy_from_slice(b"\r\n");
            return;
        }
        // One copy from a small stack buffer (see `write_bulk`).
        let mut buf = [0u8; SMALL_BULK + 32];
        buf[..n].copy_from_slice(&head[..n]);
        buf[n..total - 2].copy_from_slice(bytes);
        buf[total - 2..total].copy_from_slice(b"\r\n");
        sink.copy(&buf[..total]);
        return;
    }
    let mut line = Line::new(sink);
    line.push(b"$")
        .push_u64(bytes.len() as u64)
        .push(b"\r\n")
        .push(bytes)
        .push(b"\r\n");
    line.finish();
}

/// Writes the null bulk string `$-1\r\n`.
pub fn write_null_bulk<S: ReplySink + ?Sized>(sink: &mut S) {
    sink.copy(NULL_BULK);
}

/// Writes an array header `*<n>\r\n`; the `n` elements follow.
pub fn write_array_header<S: ReplySink + ?Sized>(sink: &mut S, n: usize) {
    write_number_line(sink, b'*', false, n as u64);
}

/// Writes the null array `*-1\r\n`.
pub fn write_null_array<S: ReplySink + ?Sized>(sink: &mut S) {
    sink.copy(NULL_ARRAY);
}

/// Which RESP a connection speaks (`HELLO 2` / `HELLO 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// RESP2 (the default).
    #[default]
    Resp2,
    /// RESP3: typed nulls, maps, sets, doubles, booleans, verbatim text.
    Resp3,
}

/// Writes a null: RESP3 `_\r\n`, RESP2 the null bulk string.
pub fn write_null<S: ReplySink + ?Sized>(sink: &mut S, v: Version) {
    sink.copy(match v {
        Version::Resp3 => b"_\r\n",
        Version::Resp2 => NULL_BULK,
    });
}

/// Writes a null array: RESP3 `_\r\n`, RESP2 `*-1\r\n`.
pub fn write_null_aggregate<S: ReplySink + ?Sized>(sink: &mut S, v: Version) {
    sink.copy(match v {
        Version::Resp3 => b"_\r\n",
        Version::Resp2 => NULL_ARRAY,
    });
}

/// Writes a map header for `n` key/value pairs: RESP3 `%<n>`, RESP2 an
/// array of `2n` elements.
pub fn write_map_header<S: ReplySink + ?Sized>(sink: &mut S, n: usize, v: Version) {
    match v {
        Version::Resp3 => write_number_line(sink, b'%', false, n as u64),
        Version::Resp2 => write_number_line(sink, b'*', false, 2 * n as u64),
    }
}

/// Writes a push frame's header (Pub/Sub messages): RESP3 `><n>`, RESP2
/// an array.
pub fn write_push_header<S: ReplySink + ?Sized>(sink: &mut S, n: usize, v: Version) {
    let prefix = if v == Version::Resp3 { b'>' } else { b'*' };
    write_number_line(sink, prefix, false, n as u64);
}

/// Writes a set header: RESP3 `~<n>`, RESP2 an array.
pub fn write_set_header<S: ReplySink + ?Sized>(sink: &mut S, n: usize, v: Version) {
    let prefix = if v == Version::Resp3 { b'~' } else { b'*' };
    write_number_line(sink, prefix, false, n as u64);
}

/// Writes a double: RESP3 `,<f>`, RESP2 a bulk string (as Redis formats
/// it: shortest round-trip text, `inf`/`-inf`).
pub fn write_double<S: ReplySink + ?Sized>(sink: &mut S, f: f64, v: Version) {
    write_double_text(sink, &format_double(f), v);
}

/// Writes a double printed as `text`: RESP3 `,<text>`, RESP2 a bulk
/// string.
pub fn write_double_text<S: ReplySink + ?Sized>(sink: &mut S, text: &str, v: Version) {
    match v {
        Version::Resp3 => {
            let mut line = Line::new(sink);
            line.push(b",").push(text.as_bytes()).push(b"\r\n");
            line.finish();
        }
        Version::Resp2 => write_bulk_bytes(sink, text.as_bytes()),
    }
}

/// A double as Redis prints it (`%.17g` shortened to the shortest text
/// that reads back the same).
pub fn format_double(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// Writes a boolean: RESP3 `#t`/`#f`, RESP2 the integer 1/0.
pub fn write_bool<S: ReplySink + ?Sized>(sink: &mut S, b: bool, v: Version) {
    sink.copy(match (v, b) {
        (Version::Resp3, true) => b"#t\r\n",
        (Version::Resp3, false) => b"#f\r\n",
        (Version::Resp2, true) => b":1\r\n",
        (Version::Resp2, false) => b":0\r\n",
    });
}

/// Writes verbatim text (INFO, CLIENT INFO): RESP3 `=<len>\r\ntxt:...`,
/// RESP2 a bulk string.
pub fn write_verbatim<S: ReplySink + ?Sized>(sink: &mut S, text: &[u8], v: Version) {
    match v {
        Version::Resp3 => {
            let mut line = Line::new(sink);
            line.push(b"=")
                .push_u64(text.len() as u64 + 4)
                .push(b"\r\ntxt:");
            line.finish();
            sink.copy(text);
            sink.copy(b"\r\n");
        }
        Version::Resp2 => write_bulk_bytes(sink, text),
    }
}

/// `%.*s`: C string formatting stops at a NUL byte.
fn c_str(s: &[u8], max: usize) -> &[u8] {
    let s = s.split(|&b| b == 0).next().unwrap_or_default();
    s.get(..s.len().min(max)).unwrap_or(s)
}

/// Writes Redis 7's unknown-command error:
/// `-ERR unknown command '<name>', with args beginning with: '<a1>' '<a2>' \r\n`
/// (name cut at 128 bytes; arguments quoted while their text is under 128
/// bytes, the last one cut to fit).
pub fn write_unknown_command<S: ReplySink + ?Sized>(sink: &mut S, cmd: &Command<'_>) {
    let mut line = Line::new(sink);
    line.push(b"-ERR unknown command '");
    push_one_line(&mut line, c_str(cmd.name(), 128));
    line.push(b"', with args beginning with: ");
    let mut used = 0;
    for arg in cmd.args().skip(1) {
        if used >= 128 {
            break;
        }
        let a = c_str(arg, 128 - used);
        line.push(b"'");
        push_one_line(&mut line, a);
        line.push(b"' ");
        used += a.len() + 3;
    }
    line.push(b"\r\n");
    line.finish();
}

/// Writes `-ERR wrong number of arguments for '<name>' command\r\n`, with
/// the name in lower case as Redis prints it.
pub fn write_wrong_arity<S: ReplySink + ?Sized>(sink: &mut S, name: &[u8]) {
    let mut line = Line::new(sink);
    line.push(b"-ERR wrong number of arguments for '");
    for chunk in name.chunks(64) {
        let mut lower = [0u8; 64];
        let lower = lower.get_mut(..chunk.len()).unwrap_or_default();
        for (d, &s) in lower.iter_mut().zip(chunk) {
            *d = one_line(s.to_ascii_lowercase());
        }
        line.push(lower);
    }
    line.push(b"' command\r\n");
    line.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::resp::parse;
    use crate::protocol::{Limits, Parsed};
    use granola::Pool;

    fn cmd(buf: &[u8]) -> Command<'_> {
        match parse(buf, &Limits::default()) {
            Parsed::Done { cmd, .. } => cmd,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn numbers_and_headers() {
        for v in [0i64, 7, -7, 42, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            write_integer(&mut out, v);
            assert_eq!(out, format!(":{v}\r\n").into_bytes());
        }
        let mut out = Vec::new();
        write_array_header(&mut out, 3);
        write_map_header(&mut out, 2, Version::Resp2);
        write_map_header(&mut out, 2, Version::Resp3);
        write_set_header(&mut out, 5, Version::Resp3);
        assert_eq!(out, b"*3\r\n*4\r\n%2\r\n~5\r\n");
    }

    #[test]
    fn bulk_strings_of_every_length_class() {
        /// A sink without a region: the staged path.
        struct Staged(Vec<u8>);
        impl ReplySink for Staged {
            fn copy(&mut self, bytes: &[u8]) {
                self.0.extend_from_slice(bytes);
            }
            fn value(&mut self, value: &granola::Buf) {
                self.0.extend_from_slice(value);
            }
        }
        for len in [0usize, 1, 9, 10, 63, 64, 65, 99, 100, 1000, 12_345] {
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut want = format!("${len}\r\n").into_bytes();
            want.extend_from_slice(&bytes);
            want.extend_from_slice(b"\r\n");
            let mut direct = Vec::new();
            write_bulk_bytes(&mut direct, &bytes);
            assert_eq!(direct, want, "{len} bytes, written in place");
            let mut staged = Staged(Vec::new());
            write_bulk_bytes(&mut staged, &bytes);
            assert_eq!(staged.0, want, "{len} bytes, staged");
        }
    }

    #[test]
    fn encoders() {
        let pool = Pool::with_capacity(1 << 20).unwrap();
        let v = pool.alloc_copy(b"hello").unwrap();
        let mut out = Vec::new();
        write_simple(&mut out, b"OK");
        write_error(&mut out, b"ERR bad\r\nthing");
        write_integer(&mut out, -42);
        write_integer(&mut out, i64::MIN);
        write_bulk(&mut out, &v);
        write_bulk_bytes(&mut out, b"");
        write_null_bulk(&mut out);
        write_array_header(&mut out, 3);
        write_null_array(&mut out);
        assert_eq!(
            out,
            &b"+OK\r\n-ERR bad  thing\r\n:-42\r\n:-9223372036854775808\r\n\
$5\r\nhello\r\n$0\r\n\r\n$-1\r\n*3\r\n*-1\r\n"[..]
        );
    }

    #[test]
    fn unknown_command() {
        let mut out = Vec::new();
        write_unknown_command(&mut out, &cmd(b"foo a b\r\n"));
        assert_eq!(
            out,
            b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n"
        );
        let mut out = Vec::new();
        write_unknown_command(&mut out, &cmd(b"*1\r\n$3\r\nfoo\r\n"));
        assert_eq!(
            out,
            b"-ERR unknown command 'foo', with args beginning with: \r\n"
        );
        // A CR inside an argument does not break the reply line.
        let mut out = Vec::new();
        write_unknown_command(&mut out, &cmd(b"*2\r\n$3\r\nfoo\r\n$3\r\na\rb\r\n"));
        assert_eq!(
            out,
            b"-ERR unknown command 'foo', with args beginning with: 'a b' \r\n"
        );
        // Long arguments: the quoted text stops growing at 128 bytes.
        let long = "x".repeat(200);
        let line = format!("foo {long} {long}\r\n");
        let mut out = Vec::new();
        write_unknown_command(&mut out, &cmd(line.as_bytes()));
        let want = format!(
            "-ERR unknown command 'foo', with args beginning with: '{}' \r\n",
            "x".repeat(128)
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
        let line = format!("foo {} {long}\r\n", "y".repeat(100));
        let mut out = Vec::new();
        write_unknown_command(&mut out, &cmd(line.as_bytes()));
        let want = format!(
            "-ERR unknown command 'foo', with args beginning with: '{}' '{}' \r\n",
            "y".repeat(100),
            "x".repeat(25)
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    #[test]
    fn wrong_arity() {
        let mut out = Vec::new();
        write_wrong_arity(&mut out, b"GET");
        assert_eq!(out, b"-ERR wrong number of arguments for 'get' command\r\n");
    }
}
