//! Wire protocols: request parsers and reply encoders, with no sockets and
//! no store.
//!
//! Two text protocols live here, each in its own module:
//!
//! - [`memcache`]: the memcached text protocol (classic and meta commands)
//!   and the memcached UDP frame header;
//! - [`resp`]: RESP2 (multibulk and inline requests) as Redis speaks it.
//!
//! Both follow one contract, defined in this module:
//!
//! ```text
//!   rx buffer: [ consumed by earlier commands | unconsumed ............ ]
//!                                              ^ parse(&rx[pos..], &limits)
//!   Parsed::Done { cmd, consumed }    cmd borrows from the input; advance
//!                                     pos by `consumed`, run cmd, repeat
//!   Parsed::Incomplete { need }       read more (`need` = a lower bound on
//!                                     the total length, when known) and
//!                                     parse again from the same position
//!   Parsed::Invalid(err)              err.write_reply(sink), then
//!                                     Recovery::Skip(n): drop n bytes (n may
//!                                       exceed what was received: keep
//!                                       discarding as bytes arrive)
//!                                     Recovery::Close: flush, then close
//! ```
//!
//! Parsers never allocate, never panic and never index out of bounds; no
//! size read from the wire is ever used to allocate. Every length is checked
//! against [`Limits`] first. A parser is a pure function of its input: a
//! command's result depends only on its own bytes, so re-parsing after more
//! bytes arrive gives the same answer.
//!
//! Reply encoders write into a [`ReplySink`]: protocol framing is *copied*,
//! stored values are handed over *by reference* ([`ReplySink::value`]) so
//! that the server can send large values straight from the store.
#![warn(missing_docs)]

pub mod memcache;
pub(crate) mod num;
pub mod rdb;
pub mod resp;

use std::fmt;

/// Where a reply is composed.
///
/// The server's TX queue implements this: [`copy`](ReplySink::copy) appends
/// bytes to the connection's TX buffer; [`value`](ReplySink::value) appends a
/// stored value, by reference (its own iovec) when it is at least the
/// datapath's copy threshold, copied otherwise.
///
/// `Vec<u8>` implements it by copying everything (handy in tests and for
/// memcached UDP replies, which are split into datagrams afterwards).
pub trait ReplySink {
    /// Appends `bytes` (copied).
    fn copy(&mut self, bytes: &[u8]);
    /// Appends a stored value (referenced or copied, the sink decides).
    fn value(&mut self, value: &granola::Buf);
    /// True once the sink holds as much as it should before the peer reads
    /// some: a command producing a long reply stops there and resumes later
    /// (see `server::session`). Sinks without a bound never fill.
    fn full(&self) -> bool {
        false
    }
    /// True if [`value`](Self::value) would copy a value of `len` bytes
    /// (below the copy threshold): a composer may then write it together
    /// with its framing in one copy.
    fn copies(&self, _len: usize) -> bool {
        true
    }
    /// `n` bytes appended for the caller to fill in place (a small reply
    /// piece written once, with no staging buffer), starting with `first`
    /// (the caller writes it too; a sink that watches what a reply begins
    /// with sees it here); `None` if the sink offers no such region (then
    /// [`copy`](Self::copy) a staged piece).
    fn region(&mut self, _n: usize, _first: u8) -> Option<&mut [u8]> {
        None
    }
}

impl ReplySink for Vec<u8> {
    fn copy(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    fn value(&mut self, value: &granola::Buf) {
        self.extend_from_slice(value.as_slice());
    }

    fn region(&mut self, n: usize, _first: u8) -> Option<&mut [u8]> {
        let at = self.len();
        self.resize(at + n, 0);
        Some(&mut self[at..])
    }
}

impl<S: ReplySink + ?Sized> ReplySink for &mut S {
    fn copy(&mut self, bytes: &[u8]) {
        (**self).copy(bytes);
    }

    fn value(&mut self, value: &granola::Buf) {
        (**self).value(value);
    }

    fn copies(&self, len: usize) -> bool {
        (**self).copies(len)
    }

    fn region(&mut self, n: usize, first: u8) -> Option<&mut [u8]> {
        (**self).region(n, first)
    }

    fn full(&self) -> bool {
        (**self).full()
    }
}

/// The result of parsing the unconsumed bytes of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Parsed<T> {
    /// A complete command, borrowing from the input, and how many input
    /// bytes it took (`1..=input.len()`).
    Done {
        /// The command.
        cmd: T,
        /// Bytes of the input it used.
        consumed: usize,
    },
    /// The input is a proper prefix of a request: read more, then parse the
    /// same position again.
    Incomplete {
        /// The smallest total input length that could complete the request,
        /// when known (always `> input.len()`). The request may still need
        /// more after that. Lets the caller decide early that a request will
        /// not fit its receive buffer.
        need: Option<usize>,
    },
    /// The input is malformed; see [`ProtocolError::recovery`].
    Invalid(ProtocolError),
}

/// What to do with the connection after a [`ProtocolError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Send the error reply, drop this many input bytes (at least 1; may be
    /// more than the bytes received so far: keep discarding arriving bytes
    /// until the count is used up, as memcached's "swallow" state does),
    /// then carry on parsing.
    Skip(usize),
    /// Send the error reply (if any), then close the connection.
    Close,
}

/// What went wrong, and therefore which error reply is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// memcached `ERROR`: unknown command, or wrong number of tokens.
    McError,
    /// memcached `CLIENT_ERROR <message>`.
    McClientError(&'static str),
    /// memcached `SERVER_ERROR <message>`.
    McServerError(&'static str),
    /// memcached: a command line over the limit with no newline. memcached
    /// closes such a connection without a reply.
    McLineTooLong,
    /// RESP `-ERR Protocol error: <message>`.
    RespProtocol(&'static str),
    /// RESP `-ERR Protocol error: expected '$', got '<byte>'`.
    RespExpectedDollar(u8),
    /// Native frames: a header announcing more than the largest frame. The
    /// framing is lost: close without a reply.
    FrameTooLarge,
    /// memcached binary protocol: a response with this status (0: the
    /// framing is lost, close without a reply).
    McBinary {
        /// Response status.
        status: u16,
        /// The request's opcode byte.
        opcode: u8,
        /// The request's opaque.
        opaque: u32,
    },
}

/// A malformed request: which error reply to send and whether the connection
/// can continue. Small and `Copy`: cheap on the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolError {
    kind: ErrorKind,
    recovery: Recovery,
    noreply: bool,
}

impl ProtocolError {
    pub(crate) const fn new(kind: ErrorKind, recovery: Recovery) -> Self {
        ProtocolError {
            kind,
            recovery,
            noreply: false,
        }
    }

    pub(crate) const fn with_noreply(mut self, noreply: bool) -> Self {
        self.noreply = noreply;
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether (and how far) to skip, or to close.
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }

    /// True if the connection must be closed after the reply.
    pub fn must_close(&self) -> bool {
        self.recovery == Recovery::Close
    }

    /// True if no reply is sent: the command asked for `noreply` (memcached
    /// classic commands suppress even their errors) or the protocol closes
    /// silently ([`ErrorKind::McLineTooLong`]).
    pub fn is_silent(&self) -> bool {
        self.noreply
            || matches!(
                self.kind,
                ErrorKind::McLineTooLong
                    | ErrorKind::FrameTooLarge
                    | ErrorKind::McBinary { status: 0, .. }
            )
    }

    /// Writes the exact error reply the protocol sends (including `\r\n`),
    /// or nothing if [`is_silent`](Self::is_silent).
    pub fn write_reply<S: ReplySink + ?Sized>(&self, sink: &mut S) {
        if self.is_silent() {
            return;
        }
        if let ErrorKind::McBinary {
            status,
            opcode,
            opaque,
        } = self.kind
        {
            memcache::binary::write_error(sink, opcode, status, opaque);
            return;
        }
        let mut line = num::Line::new(sink);
        match self.kind {
            ErrorKind::McError => {
                line.push(b"ERROR");
            }
            ErrorKind::McClientError(m) => {
                line.push(b"CLIENT_ERROR ").push(m.as_bytes());
            }
            ErrorKind::McServerError(m) => {
                line.push(b"SERVER_ERROR ").push(m.as_bytes());
            }
            ErrorKind::McLineTooLong | ErrorKind::FrameTooLarge | ErrorKind::McBinary { .. } => {}
            ErrorKind::RespProtocol(m) => {
                line.push(b"-ERR Protocol error: ").push(m.as_bytes());
            }
            ErrorKind::RespExpectedDollar(b) => {
                // Redis formats the byte with %c and then turns CR/LF into
                // spaces so the error stays one line.
                let c = if b == b'\r' || b == b'\n' { b' ' } else { b };
                line.push(b"-ERR Protocol error: expected '$', got '")
                    .push(&[c])
                    .push(b"'");
            }
        }
        line.push(b"\r\n");
        line.finish();
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::McError => f.write_str("ERROR"),
            ErrorKind::McClientError(m) => write!(f, "CLIENT_ERROR {m}"),
            ErrorKind::McServerError(m) => write!(f, "SERVER_ERROR {m}"),
            ErrorKind::McLineTooLong => f.write_str("command line too long"),
            ErrorKind::FrameTooLarge => f.write_str("frame larger than the limit"),
            ErrorKind::McBinary { status: 0, .. } => f.write_str("bad binary request magic"),
            ErrorKind::McBinary { status, opcode, .. } => write!(
                f,
                "binary opcode {opcode:#04x}: status {status:#06x} {}",
                memcache::binary::status_message(status).escape_ascii()
            ),
            ErrorKind::RespProtocol(m) => write!(f, "ERR Protocol error: {m}"),
            ErrorKind::RespExpectedDollar(b) => {
                write!(
                    f,
                    "ERR Protocol error: expected '$', got '{}'",
                    b.escape_ascii()
                )
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

/// Size limits applied while parsing. Nothing larger is ever buffered as one
/// request, and no size read from the wire is used to allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// memcached: longest key (memcached's `KEY_MAX_LENGTH`, 250). Longer
    /// keys get `CLIENT_ERROR bad command line format`.
    pub max_key_len: usize,
    /// memcached: largest data block of a storage command (`set`, `ms`, ...).
    /// Larger ones get `SERVER_ERROR object too large for cache` and the
    /// block is swallowed. Default 1 MiB (memcached's default item size).
    pub max_value_len: usize,
    /// memcached: longest command line, newline excluded, for every command
    /// but the multi-key retrievals. A longer line closes the connection
    /// (memcached: 2048).
    pub max_line: usize,
    /// memcached: longest `get`/`gets`/`gat`/`gats` line (memcached lets
    /// multi-gets grow without bound; we stop at this). Default 1 MiB.
    pub max_get_line: usize,
    /// RESP: longest inline command line and longest `*`/`$` header line
    /// (Redis' `PROTO_INLINE_MAX_SIZE`, 64 KiB).
    pub max_inline: usize,
    /// RESP: most arguments in one multibulk request (Redis's `INT_MAX`;
    /// nothing is allocated per argument, and a request must fit the
    /// receive buffer, which bounds it first).
    pub max_args: usize,
    /// RESP: largest bulk string in a request. Larger ones are a protocol
    /// error (`invalid bulk length`) and close the connection. Default
    /// 1 MiB, the store's value limit (Redis allows 512 MiB).
    pub max_bulk: usize,
    /// RESP: the client has yet to authenticate (`--requirepass`), so a
    /// request may hold at most 10 arguments of at most 16384 bytes each,
    /// as in Redis.
    pub auth_required: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_key_len: 250,
            max_value_len: 1 << 20,
            max_line: 2048,
            max_get_line: 1 << 20,
            max_inline: 64 << 10,
            max_args: i32::MAX as usize,
            max_bulk: 1 << 20,
            auth_required: false,
        }
    }
}

impl Limits {
    /// The receive buffer that holds any memcached request within these
    /// limits: the longest line, newline, the largest data block and its
    /// `\r\n`. A connection whose buffer is this large never has to refuse a
    /// valid request.
    pub fn memcache_max_request(&self) -> usize {
        let store = self
            .max_line
            .saturating_add(1)
            .saturating_add(self.max_value_len)
            .saturating_add(2);
        store.max(self.max_get_line.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_replies() {
        let cases: [(ErrorKind, &[u8]); 6] = [
            (ErrorKind::McError, b"ERROR\r\n"),
            (
                ErrorKind::McClientError("bad data chunk"),
                b"CLIENT_ERROR bad data chunk\r\n",
            ),
            (
                ErrorKind::McServerError("object too large for cache"),
                b"SERVER_ERROR object too large for cache\r\n",
            ),
            (ErrorKind::McLineTooLong, b""),
            (
                ErrorKind::RespProtocol("invalid bulk length"),
                b"-ERR Protocol error: invalid bulk length\r\n",
            ),
            (
                ErrorKind::RespExpectedDollar(b'x'),
                b"-ERR Protocol error: expected '$', got 'x'\r\n",
            ),
        ];
        for (kind, want) in cases {
            let e = ProtocolError::new(kind, Recovery::Close);
            let mut out = Vec::new();
            e.write_reply(&mut out);
            assert_eq!(out, want, "{kind:?}");
            let mut quiet = Vec::new();
            e.with_noreply(true).write_reply(&mut quiet);
            assert!(quiet.is_empty());
        }
        let e = ProtocolError::new(ErrorKind::RespExpectedDollar(b'\r'), Recovery::Close);
        let mut out = Vec::new();
        e.write_reply(&mut out);
        assert_eq!(out, b"-ERR Protocol error: expected '$', got ' '\r\n");
        assert!(e.must_close());
        assert_eq!(e.to_string(), "ERR Protocol error: expected '$', got '\\r'");
    }

    #[test]
    fn memcache_max_request() {
        let l = Limits::default();
        assert_eq!(l.memcache_max_request(), 2049 + (1 << 20) + 2);
    }
}
