//! memcached's binary protocol: request parser and response composer.
//!
//! A request is a 24-byte header followed by `body` bytes: extras, key,
//! value, in that order (all integers big-endian):
//!
//! ```text
//!   0 magic 0x80 | 1 opcode | 2..4 key length | 4 extras length
//!   5 data type  | 6..8 vbucket | 8..12 body length | 12..16 opaque
//!   16..24 cas   | extras | key | value
//! ```
//!
//! A response has the same layout with magic 0x81 and a status in place of
//! the vbucket. memcached picks the protocol per connection by the first
//! byte; so does granola-kv.
//!
//! Checks, in order, before anything is buffered: the magic (a wrong one
//! mid-stream means the framing is lost: close without a reply), the body
//! length against the limit (larger: `Too large` reply, the body is
//! swallowed as it arrives), the opcode (unknown: `Unknown command`, body
//! swallowed), then each opcode's extras/key/value shape (wrong: `Invalid
//! arguments`, body swallowed). No length read from the wire allocates.

use super::super::{ErrorKind, Limits, Parsed, ProtocolError, Recovery, ReplySink};

/// First byte of every request.
pub const REQUEST_MAGIC: u8 = 0x80;
/// First byte of every response.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// Request and response header length.
pub const HEADER_LEN: usize = 24;

/// Response status codes.
pub mod status {
    /// Success.
    pub const OK: u16 = 0x0000;
    /// Key not found.
    pub const KEY_NOT_FOUND: u16 = 0x0001;
    /// Key exists (add on a present key, CAS mismatch).
    pub const KEY_EXISTS: u16 = 0x0002;
    /// Value too large.
    pub const TOO_LARGE: u16 = 0x0003;
    /// Invalid arguments.
    pub const INVALID_ARGS: u16 = 0x0004;
    /// Item not stored (append/prepend on a missing key).
    pub const NOT_STORED: u16 = 0x0005;
    /// Incr/decr on a non-numeric value.
    pub const NON_NUMERIC: u16 = 0x0006;
    /// Unknown command.
    pub const UNKNOWN_COMMAND: u16 = 0x0081;
    /// Out of memory.
    pub const OUT_OF_MEMORY: u16 = 0x0082;
}

/// The message a non-success response carries as its value.
pub fn status_message(status: u16) -> &'static [u8] {
    match status {
        status::KEY_NOT_FOUND => b"Not found",
        status::KEY_EXISTS => b"Data exists for key.",
        status::TOO_LARGE => b"Too large.",
        status::INVALID_ARGS => b"Invalid arguments",
        status::NOT_STORED => b"Not stored.",
        status::NON_NUMERIC => b"Non-numeric server-side value for incr or decr",
        status::UNKNOWN_COMMAND => b"Unknown command",
        status::OUT_OF_MEMORY => b"Out of memory",
        _ => b"",
    }
}

/// The binary commands granola-kv serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    /// 0x00 / 0x09 (quiet) / 0x0c (with key) / 0x0d (with key, quiet).
    Get,
    /// 0x01 / 0x11.
    Set,
    /// 0x02 / 0x12.
    Add,
    /// 0x03 / 0x13.
    Replace,
    /// 0x04 / 0x14.
    Delete,
    /// 0x05 / 0x15.
    Increment,
    /// 0x06 / 0x16.
    Decrement,
    /// 0x07 / 0x17.
    Quit,
    /// 0x08 / 0x18.
    Flush,
    /// 0x0a.
    Noop,
    /// 0x0b.
    Version,
    /// 0x0e / 0x19.
    Append,
    /// 0x0f / 0x1a.
    Prepend,
    /// 0x10.
    Stat,
    /// 0x1b.
    Verbosity,
    /// 0x1c.
    Touch,
    /// 0x1d / 0x1e (quiet) / 0x23 (with key) / 0x24 (with key, quiet).
    Gat,
}

/// An opcode byte: the command, whether it is quiet, whether a get
/// returns the key. `None` for opcodes granola-kv does not serve.
pub fn decode_opcode(op: u8) -> Option<(Opcode, bool, bool)> {
    use Opcode::*;
    Some(match op {
        0x00 => (Get, false, false),
        0x09 => (Get, true, false),
        0x0c => (Get, false, true),
        0x0d => (Get, true, true),
        0x01 => (Set, false, false),
        0x11 => (Set, true, false),
        0x02 => (Add, false, false),
        0x12 => (Add, true, false),
        0x03 => (Replace, false, false),
        0x13 => (Replace, true, false),
        0x04 => (Delete, false, false),
        0x14 => (Delete, true, false),
        0x05 => (Increment, false, false),
        0x15 => (Increment, true, false),
        0x06 => (Decrement, false, false),
        0x16 => (Decrement, true, false),
        0x07 => (Quit, false, false),
        0x17 => (Quit, true, false),
        0x08 => (Flush, false, false),
        0x18 => (Flush, true, false),
        0x0a => (Noop, false, false),
        0x0b => (Version, false, false),
        0x0e => (Append, false, false),
        0x19 => (Append, true, false),
        0x0f => (Prepend, false, false),
        0x1a => (Prepend, true, false),
        0x10 => (Stat, false, false),
        0x1b => (Verbosity, false, false),
        0x1c => (Touch, false, false),
        0x1d => (Gat, false, false),
        0x1e => (Gat, true, false),
        0x23 => (Gat, false, true),
        0x24 => (Gat, true, true),
        _ => return None,
    })
}

/// One parsed request; extras, key and value borrow the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The opcode byte as sent (echoed in the response).
    pub raw_opcode: u8,
    /// The command.
    pub opcode: Opcode,
    /// A quiet variant: success replies (misses, for gets) are not sent.
    pub quiet: bool,
    /// getk/getkq/gatk/gatkq: the response carries the key.
    pub with_key: bool,
    /// Echoed in the response.
    pub opaque: u32,
    /// CAS to compare (0 = none).
    pub cas: u64,
    /// Extras (their length checked per opcode).
    pub extras: &'a [u8],
    /// The key (at most [`Limits::max_key_len`] bytes).
    pub key: &'a [u8],
    /// The value.
    pub value: &'a [u8],
}

impl Request<'_> {
    /// Big-endian u32 at `at` in the extras (0 if absent).
    pub fn extra_u32(&self, at: usize) -> u32 {
        self.extras
            .get(at..at + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Big-endian u64 at `at` in the extras (0 if absent).
    pub fn extra_u64(&self, at: usize) -> u64 {
        (u64::from(self.extra_u32(at)) << 32) | u64::from(self.extra_u32(at + 4))
    }
}

/// The largest body accepted: a value within the item limit plus its
/// extras and longest key.
pub fn max_body(limits: &Limits) -> usize {
    limits.max_value_len.saturating_add(limits.max_key_len + 20)
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn error(status: u16, raw_opcode: u8, opaque: u32, recovery: Recovery) -> ProtocolError {
    ProtocolError::new(
        ErrorKind::McBinary {
            status,
            opcode: raw_opcode,
            opaque,
        },
        recovery,
    )
}

/// Whether the extras/key/value lengths fit the opcode.
fn shape_ok(op: Opcode, extras: usize, key: usize, value: usize) -> bool {
    use Opcode::*;
    match op {
        Get | Delete => extras == 0 && key > 0 && value == 0,
        Set | Add | Replace => extras == 8 && key > 0,
        Append | Prepend => extras == 0 && key > 0,
        Increment | Decrement => extras == 20 && key > 0 && value == 0,
        Quit | Noop | Version => extras == 0 && key == 0 && value == 0,
        Flush => (extras == 0 || extras == 4) && key == 0 && value == 0,
        Stat => extras == 0 && value == 0,
        Verbosity => extras == 4 && key == 0 && value == 0,
        Touch | Gat => extras == 4 && key > 0 && value == 0,
    }
}

/// Parses one binary request from the start of `input`.
pub fn parse<'a>(input: &'a [u8], limits: &Limits) -> Parsed<Request<'a>> {
    let Some(h) = input.get(..HEADER_LEN) else {
        if input.first().is_some_and(|&m| m != REQUEST_MAGIC) {
            return Parsed::Invalid(error(0, 0, 0, Recovery::Close));
        }
        return Parsed::Incomplete {
            need: Some(HEADER_LEN),
        };
    };
    let raw_opcode = h[1];
    let opaque = be32(&h[12..16]);
    if h[0] != REQUEST_MAGIC {
        return Parsed::Invalid(error(0, raw_opcode, opaque, Recovery::Close));
    }
    let key_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let extras_len = usize::from(h[4]);
    let body_len = be32(&h[8..12]) as usize;
    let total = HEADER_LEN.saturating_add(body_len);
    if body_len > max_body(limits) {
        return Parsed::Invalid(error(
            status::TOO_LARGE,
            raw_opcode,
            opaque,
            Recovery::Skip(total),
        ));
    }
    let Some((opcode, quiet, with_key)) = decode_opcode(raw_opcode) else {
        return Parsed::Invalid(error(
            status::UNKNOWN_COMMAND,
            raw_opcode,
            opaque,
            Recovery::Skip(total),
        ));
    };
    let invalid = || {
        Parsed::Invalid(error(
            status::INVALID_ARGS,
            raw_opcode,
            opaque,
            Recovery::Skip(total),
        ))
    };
    if extras_len + key_len > body_len || key_len > limits.max_key_len {
        return invalid();
    }
    let value_len = body_len - extras_len - key_len;
    if !shape_ok(opcode, extras_len, key_len, value_len) {
        return invalid();
    }
    let Some(body) = input.get(HEADER_LEN..total) else {
        return Parsed::Incomplete { need: Some(total) };
    };
    let (extras, rest) = body.split_at(extras_len);
    let (key, value) = rest.split_at(key_len);
    let cas = u64::from_be_bytes([h[16], h[17], h[18], h[19], h[20], h[21], h[22], h[23]]);
    Parsed::Done {
        cmd: Request {
            raw_opcode,
            opcode,
            quiet,
            with_key,
            opaque,
            cas,
            extras,
            key,
            value,
        },
        consumed: total,
    }
}

/// The key of a (possibly incomplete, possibly refused) request, if its
/// bytes have arrived: a refused too-large set still removes the old value.
pub fn key_of(input: &[u8]) -> Option<&[u8]> {
    let h = input.get(..HEADER_LEN)?;
    let key_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let start = HEADER_LEN + usize::from(h[4]);
    input.get(start..start + key_len)
}

/// A response header followed by `extras`, `key` and a value of
/// `value_len` bytes the caller writes next (the header's fields, in wire
/// order).
#[allow(clippy::too_many_arguments)]
pub fn write_header<S: ReplySink + ?Sized>(
    sink: &mut S,
    raw_opcode: u8,
    status: u16,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value_len: usize,
) {
    let mut h = [0u8; HEADER_LEN];
    h[0] = RESPONSE_MAGIC;
    h[1] = raw_opcode;
    // Keys and extras are bounded by the request's (u16 / u8) fields.
    h[2..4].copy_from_slice(&(key.len().min(0xffff) as u16).to_be_bytes());
    h[4] = extras.len().min(0xff) as u8;
    h[6..8].copy_from_slice(&status.to_be_bytes());
    let body = extras.len() + key.len() + value_len;
    h[8..12].copy_from_slice(&(body.min(u32::MAX as usize) as u32).to_be_bytes());
    h[12..16].copy_from_slice(&opaque.to_be_bytes());
    h[16..24].copy_from_slice(&cas.to_be_bytes());
    sink.copy(&h);
    sink.copy(extras);
    sink.copy(key);
}

/// A whole response whose value is copied.
pub fn write_response<S: ReplySink + ?Sized>(
    sink: &mut S,
    req: &Request<'_>,
    status: u16,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    write_header(
        sink,
        req.raw_opcode,
        status,
        req.opaque,
        cas,
        extras,
        key,
        value.len(),
    );
    sink.copy(value);
}

/// An error response: the status and its message.
pub fn write_error<S: ReplySink + ?Sized>(sink: &mut S, raw_opcode: u8, status: u16, opaque: u32) {
    let msg = status_message(status);
    write_header(sink, raw_opcode, status, opaque, 0, &[], &[], msg.len());
    sink.copy(msg);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(op: u8, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; HEADER_LEN];
        f[0] = REQUEST_MAGIC;
        f[1] = op;
        f[2..4].copy_from_slice(&(key.len() as u16).to_be_bytes());
        f[4] = extras.len() as u8;
        let body = (extras.len() + key.len() + value.len()) as u32;
        f[8..12].copy_from_slice(&body.to_be_bytes());
        f[12..16].copy_from_slice(&7u32.to_be_bytes());
        f.extend_from_slice(extras);
        f.extend_from_slice(key);
        f.extend_from_slice(value);
        f
    }

    #[test]
    fn set_parses_and_is_incomplete_before_its_end() {
        let f = frame(0x01, &[0, 0, 0, 5, 0, 0, 0, 0], b"k", b"hello");
        for n in 1..f.len() {
            assert!(matches!(
                parse(&f[..n], &Limits::default()),
                Parsed::Incomplete { .. }
            ));
        }
        let Parsed::Done { cmd, consumed } = parse(&f, &Limits::default()) else {
            panic!("set not parsed");
        };
        assert_eq!(consumed, f.len());
        assert_eq!(cmd.opcode, Opcode::Set);
        assert_eq!(
            (cmd.key, cmd.value, cmd.opaque),
            (&b"k"[..], &b"hello"[..], 7)
        );
        assert_eq!(cmd.extra_u32(0), 5);
    }

    #[test]
    fn bad_input_is_refused_without_buffering() {
        let l = Limits::default();
        // Wrong magic: close.
        let mut f = frame(0x00, &[], b"k", b"");
        f[0] = 0x42;
        assert!(matches!(parse(&f, &l), Parsed::Invalid(e) if e.must_close() && e.is_silent()));
        // Body over the limit: refused from the header alone.
        let mut h = frame(0x01, &[0; 8], b"k", b"");
        h[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
        let Parsed::Invalid(e) = parse(&h[..HEADER_LEN], &l) else {
            panic!("huge body accepted");
        };
        assert_eq!(e.recovery(), Recovery::Skip(HEADER_LEN + u32::MAX as usize));
        // Key longer than the body.
        let mut k = frame(0x00, &[], b"key", b"");
        k[2..4].copy_from_slice(&100u16.to_be_bytes());
        assert!(matches!(parse(&k, &l), Parsed::Invalid(e) if !e.must_close()));
        // Unknown opcode.
        let u = frame(0x55, &[], b"", b"");
        let Parsed::Invalid(e) = parse(&u, &l) else {
            panic!("unknown opcode accepted");
        };
        let mut out = Vec::new();
        e.write_reply(&mut out);
        assert_eq!(out[0], RESPONSE_MAGIC);
        assert_eq!(&out[6..8], &status::UNKNOWN_COMMAND.to_be_bytes());
        assert_eq!(e.recovery(), Recovery::Skip(HEADER_LEN));
    }
}
