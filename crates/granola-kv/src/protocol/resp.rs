//! RESP2 requests and replies, as Redis speaks them.
//!
//! # Requests
//!
//! A request is either a multibulk array of bulk strings (what client
//! libraries send) or an inline line (what `redis-cli`/telnet users type):
//!
//! ```text
//!   *<argc>\r\n  ( $<len>\r\n <len bytes> \r\n ){argc}      multibulk
//!   <word> <word> ...\r\n    (or ...\n)                     inline
//! ```
//!
//! The first byte decides: `*` is multibulk, anything else inline.
//! [`parse`] returns a [`Command`]: the argument list, borrowing from the
//! input, with no heap allocation. The first [`INLINE_ARGS`] arguments are
//! kept in the command; [`Command::args`] yields them, then walks the
//! (already validated) bytes again for the rest.
//!
//! An empty request (`*0\r\n`, `*-1\r\n`, a blank inline line) parses to an
//! empty command: consume it and send nothing, as Redis does.
//!
//! Inline lines split on whitespace. Double- and single-quoted arguments
//! (`SET k "hello world"`) are supported minimally: the quotes must enclose
//! a whole argument, and the text between them is returned as is, *without*
//! escape processing (`"a\"b"` is the 4 bytes `a\"b`; a backslash only stops
//! the next character from closing the quote). A quote inside an unquoted
//! word is an ordinary byte.
//!
//! # Errors
//!
//! Every protocol error is answered with Redis' text and closes the
//! connection, as Redis does:
//!
//! | input | reply |
//! |---|---|
//! | bad or too large `*` count | `-ERR Protocol error: invalid multibulk length` |
//! | `*` count over 10 before AUTH ([`Limits::auth_required`]) | `-ERR Protocol error: unauthenticated multibulk length` |
//! | not `$` where a bulk string starts | `-ERR Protocol error: expected '$', got 'x'` |
//! | bad, negative or over-[`Limits::max_bulk`] `$` length | `-ERR Protocol error: invalid bulk length` |
//! | `$` length over 16384 before AUTH | `-ERR Protocol error: unauthenticated bulk length` |
//! | header line with no `\r` in [`Limits::max_inline`] bytes | `-ERR Protocol error: too big mbulk count string` / `too big bulk count string` |
//! | inline line longer than [`Limits::max_inline`] | `-ERR Protocol error: too big inline request` |
//! | unbalanced quotes | `-ERR Protocol error: unbalanced quotes in request` |
//! | bulk data not followed by `\r\n` | `-ERR Protocol error: expected CRLF after bulk data` (Redis skips those two bytes unchecked; we refuse them) |
//!
//! Command-level errors (unknown command, arity, types) are replies, not
//! protocol errors: see [`write_unknown_command`], [`write_wrong_arity`]
//! and the `ERR_*` constants.

pub mod inline;
mod reply;

pub use reply::*;

use super::num::{parse_resp_int, scan_len_crlf};
use super::{ErrorKind, Limits, Parsed, ProtocolError, Recovery};
use std::fmt;

/// Arguments kept directly in a [`Command`] (reached in O(1) by
/// [`Command::arg`]); later ones are found by walking the request bytes.
pub const INLINE_ARGS: usize = 8;

/// Most arguments, and longest argument, a client may send before it
/// has authenticated (Redis's limits: a request from someone who does
/// not know the password stays small).
const UNAUTH_MAX_ARGS: usize = 10;
const UNAUTH_MAX_BULK: usize = 16384;

/// The smallest encoding of one bulk string: `$0\r\n\r\n`.
const MIN_BULK: usize = 6;

/// A request: its arguments (the first is the command name), borrowing from
/// the input.
#[derive(Clone, Copy)]
pub struct Command<'a> {
    argc: usize,
    head: [&'a [u8]; INLINE_ARGS],
    /// The request bytes from argument [`INLINE_ARGS`] on (multibulk: from
    /// its `$`; inline: the rest of the line); empty when all are in `head`.
    tail: &'a [u8],
    inline: bool,
    /// An inline request's line, without its line end (empty otherwise):
    /// the server splits it again when it holds quotes or escapes (see
    /// [`inline`]).
    line: &'a [u8],
}

impl<'a> Command<'a> {
    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.argc
    }

    /// True for a request sent inline (a line of words, not a multibulk).
    pub fn is_inline(&self) -> bool {
        self.inline
    }

    /// An inline request's line, without its line end; empty for a
    /// multibulk.
    pub fn inline_line(&self) -> &'a [u8] {
        self.line
    }

    /// True for an empty request (ignore it; no reply).
    pub fn is_empty(&self) -> bool {
        self.argc == 0
    }

    /// The command name as sent (empty for an empty request).
    pub fn name(&self) -> &'a [u8] {
        self.arg(0).unwrap_or_default()
    }

    /// True if the command name is `name`, ignoring ASCII case.
    pub fn is(&self, name: &[u8]) -> bool {
        self.name().eq_ignore_ascii_case(name)
    }

    /// Argument `i` (0 is the name). O(1) below [`INLINE_ARGS`], a walk over
    /// the request after that: use [`args`](Self::args) to visit many.
    #[inline]
    pub fn arg(&self, i: usize) -> Option<&'a [u8]> {
        if i >= self.argc {
            return None;
        }
        match self.head.get(i) {
            Some(a) => Some(a),
            None => self.args().nth(i),
        }
    }

    /// All arguments, the name first.
    pub fn args(&self) -> Args<'_, 'a> {
        Args {
            cmd: self,
            next: 0,
            rest: self.tail,
        }
    }
}

impl PartialEq for Command<'_> {
    /// Two commands are equal if their arguments are (however encoded).
    fn eq(&self, other: &Self) -> bool {
        self.argc == other.argc && self.args().eq(other.args())
    }
}

impl Eq for Command<'_> {}

impl fmt::Debug for Command<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.args().map(|a| a.escape_ascii().to_string()))
            .finish()
    }
}

/// The arguments of a [`Command`], in order; it borrows the command (a
/// copy of its first arguments would cost more than most walks).
#[derive(Clone)]
pub struct Args<'c, 'a> {
    cmd: &'c Command<'a>,
    /// Index of the next argument.
    next: usize,
    /// The arguments after the command's first [`INLINE_ARGS`] not yet
    /// walked.
    rest: &'a [u8],
}

impl<'a> Iterator for Args<'_, 'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let cmd = self.cmd;
        if self.next >= cmd.argc {
            return None;
        }
        let arg = match cmd.head.get(self.next) {
            Some(&a) => Some(a),
            None if cmd.inline => next_inline_arg(&mut self.rest).ok().flatten(),
            None => next_bulk(&mut self.rest),
        };
        match arg {
            Some(_) => self.next += 1,
            None => self.next = cmd.argc, // unreachable for parsed input
        }
        arg
    }

    /// Skips the first arguments without a walk (`skip(2)` is O(1)).
    #[inline]
    fn nth(&mut self, mut n: usize) -> Option<&'a [u8]> {
        let head_end = INLINE_ARGS.min(self.cmd.argc);
        if self.next < head_end {
            let jump = n.min(head_end - self.next);
            self.next += jump;
            n -= jump;
        }
        for _ in 0..n {
            self.next()?;
        }
        self.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.cmd.argc - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Args<'_, '_> {}

/// Re-walks one validated bulk string: `$<len>\r\n<data>\r\n`.
fn next_bulk<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    let s = rest.strip_prefix(b"$")?;
    let (len, start) = match scan_len_crlf(s) {
        Some((len, start)) => (usize::try_from(len).ok()?, start),
        None => {
            let cr = memchr::memchr(b'\r', s)?;
            let len = usize::try_from(parse_resp_int(s.get(..cr)?)?).ok()?;
            (len, cr.checked_add(2)?)
        }
    };
    let end = start.checked_add(len)?;
    let data = s.get(start..end)?;
    *rest = s.get(end.checked_add(2)?..)?;
    Some(data)
}

/// Redis' `isspace` set, used to split inline requests.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The next inline argument: `Ok(None)` at the end of the line, `Err(())`
/// for unbalanced quotes.
fn next_inline_arg<'a>(rest: &mut &'a [u8]) -> Result<Option<&'a [u8]>, ()> {
    let Some(start) = rest.iter().position(|&b| !is_space(b)) else {
        *rest = &[];
        return Ok(None);
    };
    let s = rest.get(start..).unwrap_or_default();
    let quote = match s.first() {
        Some(&q @ (b'"' | b'\'')) => q,
        _ => {
            let end = s.iter().position(|&b| is_space(b)).unwrap_or(s.len());
            let (arg, tail) = s.split_at(end);
            *rest = tail;
            return Ok(Some(arg));
        }
    };
    let mut i = 1;
    loop {
        match s.get(i) {
            None => return Err(()),
            Some(&b) if b == quote => break,
            // In double quotes a backslash escapes anything; in single
            // quotes only a quote.
            Some(b'\\') if quote == b'"' || s.get(i + 1) == Some(&b'\'') => i += 2,
            Some(_) => i += 1,
        }
    }
    // The closing quote must end the argument.
    if s.get(i + 1).is_some_and(|&b| !is_space(b)) {
        return Err(());
    }
    let arg = s.get(1..i).unwrap_or_default();
    *rest = s.get(i + 1..).unwrap_or_default();
    Ok(Some(arg))
}

fn close<T>(kind: ErrorKind) -> Parsed<T> {
    Parsed::Invalid(ProtocolError::new(kind, Recovery::Close))
}

fn protocol_error<T>(msg: &'static str) -> Parsed<T> {
    close(ErrorKind::RespProtocol(msg))
}

/// The error for an inline request whose quotes do not close (Redis's
/// words), which closes the connection.
fn unbalanced_quotes<T>() -> Parsed<T> {
    protocol_error("unbalanced quotes in request")
}

/// A `*`/`$` header line's value.
enum Header {
    /// The number and the position after its `\r\n`.
    Value(i64, usize),
    Incomplete,
    TooBig,
    Bad,
}

/// Reads the number after a type byte at `buf[start - 1]`.
#[inline]
fn header(buf: &[u8], start: usize, limits: &Limits) -> Header {
    let rest = buf.get(start..).unwrap_or_default();
    match scan_len_crlf(rest) {
        Some((v, n)) if n - 2 <= limits.max_inline => Header::Value(v as i64, start + n),
        _ => header_general(rest, start, limits),
    }
}

/// [`header`] for whatever the digit scan does not take: signs, leading
/// zeros, long or malformed lines, and lines not yet received whole.
#[inline(never)]
fn header_general(rest: &[u8], start: usize, limits: &Limits) -> Header {
    let window = rest
        .get(..rest.len().min(limits.max_inline.saturating_add(1)))
        .unwrap_or(rest);
    let Some(cr) = memchr::memchr(b'\r', window) else {
        return if rest.len() > limits.max_inline {
            Header::TooBig
        } else {
            Header::Incomplete
        };
    };
    match rest.get(cr + 1) {
        None => Header::Incomplete,
        Some(b'\n') => match rest.get(..cr).and_then(parse_resp_int) {
            Some(v) => Header::Value(v, start + cr + 2),
            None => Header::Bad,
        },
        Some(_) => Header::Bad,
    }
}

/// Parses one request from the start of `buf`.
///
/// See the [module docs](self) for the grammar and the error replies, and
/// [`Parsed`] for what to do with the result. A stateless parse: a server
/// receiving a request in pieces uses a [`Parser`], which resumes where the
/// last piece stopped.
pub fn parse<'a>(buf: &'a [u8], limits: &Limits) -> Parsed<Command<'a>> {
    Parser::default().parse(buf, limits)
}

/// A resumable parser: between calls on the same (growing) input it keeps
/// how far the request in progress was validated, so every received byte is
/// examined a bounded number of times however the request is split — a
/// 1 MB multibulk trickled in byte by byte costs O(1 MB), not O(1 MB^2).
///
/// Call [`parse`](Parser::parse) with the unconsumed input each time more
/// arrives; after `Done` or `Invalid` it starts afresh at the next request.
#[derive(Debug, Default, Clone)]
pub struct Parser {
    /// A multibulk request whose first arguments are already validated.
    multibulk: Option<Progress>,
    /// Inline: input bytes already searched for the newline.
    inline_scanned: usize,
}

/// How far a multibulk request has been validated.
#[derive(Debug, Clone)]
struct Progress {
    argc: usize,
    /// Arguments validated so far.
    done: usize,
    /// Where argument `done` starts.
    pos: usize,
    /// Offsets (start, end) of the first arguments.
    head: [(usize, usize); INLINE_ARGS],
}

impl Parser {
    /// Parses one request from the start of `buf`, which must begin with
    /// the same bytes as the previous call's `buf` unless that call
    /// returned `Done` or `Invalid` (the request was consumed).
    pub fn parse<'a>(&mut self, buf: &'a [u8], limits: &Limits) -> Parsed<Command<'a>> {
        let r = match buf.first() {
            None => Parsed::Incomplete { need: None },
            Some(b'*') => match self.multibulk {
                None => parse_whole_multibulk(buf, limits)
                    .unwrap_or_else(|| parse_multibulk(buf, limits, &mut self.multibulk)),
                Some(_) => parse_multibulk(buf, limits, &mut self.multibulk),
            },
            Some(_) => parse_inline(buf, limits, &mut self.inline_scanned),
        };
        if !matches!(r, Parsed::Incomplete { .. }) {
            self.multibulk = None;
            self.inline_scanned = 0;
        }
        r
    }
}

/// An empty request (`*0`, `*-1` or a blank line): no reply.
fn empty(consumed: usize, inline: bool) -> Parsed<Command<'static>> {
    Parsed::Done {
        cmd: Command {
            argc: 0,
            head: [&[]; INLINE_ARGS],
            tail: &[],
            inline,
            line: &[],
        },
        consumed,
    }
}

/// A multibulk request received whole and well formed, in one pass with
/// no saved progress: nearly every request. `None` sends anything else
/// (incomplete, empty, malformed) to [`parse_multibulk`], which starts
/// over, so each byte is read at most twice more.
#[inline]
fn parse_whole_multibulk<'a>(buf: &'a [u8], limits: &Limits) -> Option<Parsed<Command<'a>>> {
    let (argc, mut pos) = match header(buf, 1, limits) {
        Header::Value(n, pos) if n > 0 => (usize::try_from(n).ok()?, pos),
        _ => return None,
    };
    if argc > limits.max_args || (limits.auth_required && argc > UNAUTH_MAX_ARGS) {
        return None;
    }
    let max_bulk = match limits.auth_required {
        true => limits.max_bulk.min(UNAUTH_MAX_BULK),
        false => limits.max_bulk,
    };
    let mut head: [&'a [u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
    let mut tail_start = pos;
    for i in 0..argc {
        if buf.get(pos) != Some(&b'$') {
            return None;
        }
        let (len, start) = match header(buf, pos + 1, limits) {
            Header::Value(n, start) => (usize::try_from(n).ok()?, start),
            _ => return None,
        };
        if len > max_bulk {
            return None;
        }
        let end = start.checked_add(len)?;
        if buf.get(end..end.checked_add(2)?) != Some(&b"\r\n"[..]) {
            return None;
        }
        if let Some(slot) = head.get_mut(i) {
            *slot = buf.get(start..end)?;
        }
        pos = end + 2;
        if i + 1 == INLINE_ARGS {
            tail_start = pos;
        }
    }
    let tail = match argc > INLINE_ARGS {
        true => buf.get(tail_start..pos)?,
        false => &[],
    };
    Some(Parsed::Done {
        cmd: Command {
            argc,
            head,
            tail,
            inline: false,
            line: &[],
        },
        consumed: pos,
    })
}

fn parse_multibulk<'a>(
    buf: &'a [u8],
    limits: &Limits,
    state: &mut Option<Progress>,
) -> Parsed<Command<'a>> {
    let mut p = match state.take() {
        Some(p) => p,
        None => {
            let (argc, body_start) = match header(buf, 1, limits) {
                Header::Value(n, pos) => (n, pos),
                Header::Incomplete => return Parsed::Incomplete { need: None },
                Header::TooBig => return protocol_error("too big mbulk count string"),
                Header::Bad => return protocol_error("invalid multibulk length"),
            };
            if argc <= 0 {
                return empty(body_start, false);
            }
            let argc = match usize::try_from(argc) {
                Ok(n) if n <= limits.max_args => n,
                _ => return protocol_error("invalid multibulk length"),
            };
            if limits.auth_required && argc > UNAUTH_MAX_ARGS {
                return protocol_error("unauthenticated multibulk length");
            }
            Progress {
                argc,
                done: 0,
                pos: body_start,
                head: [(0, 0); INLINE_ARGS],
            }
        }
    };
    while p.done < p.argc {
        let (i, pos) = (p.done, p.pos);
        // A lower bound on the whole request, for Incomplete.
        let later = (p.argc - i - 1).saturating_mul(MIN_BULK);
        let need = |known_end: usize| {
            Some(
                known_end
                    .saturating_add(later)
                    .max(buf.len().saturating_add(1)),
            )
        };
        match buf.get(pos) {
            None => {
                let need = need(pos.saturating_add(MIN_BULK));
                *state = Some(p);
                return Parsed::Incomplete { need };
            }
            Some(b'$') => {}
            Some(&b) => return close(ErrorKind::RespExpectedDollar(b)),
        }
        let (len, data_start) = match header(buf, pos + 1, limits) {
            Header::Value(n, p) => (n, p),
            Header::Incomplete => {
                let need = need(pos.saturating_add(MIN_BULK));
                *state = Some(p);
                return Parsed::Incomplete { need };
            }
            Header::TooBig => return protocol_error("too big bulk count string"),
            Header::Bad => return protocol_error("invalid bulk length"),
        };
        let len = match usize::try_from(len) {
            Ok(n) if n <= limits.max_bulk => n,
            _ => return protocol_error("invalid bulk length"),
        };
        if limits.auth_required && len > UNAUTH_MAX_BULK {
            return protocol_error("unauthenticated bulk length");
        }
        let data_end = data_start.saturating_add(len);
        let next = data_end.saturating_add(2);
        let Some(crlf) = buf.get(data_end..next) else {
            let need = need(next);
            *state = Some(p);
            return Parsed::Incomplete { need };
        };
        if crlf != b"\r\n" {
            return protocol_error("expected CRLF after bulk data");
        }
        if let Some(slot) = p.head.get_mut(i) {
            *slot = (data_start, data_end);
        }
        p.done += 1;
        p.pos = next;
    }
    let mut head: [&'a [u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
    for (slot, &(a, b)) in head.iter_mut().zip(&p.head).take(p.argc) {
        *slot = buf.get(a..b).unwrap_or_default();
    }
    // After the last head argument's data and its `\r\n`.
    let tail = match p.head.last() {
        Some(&(_, end)) if p.argc > INLINE_ARGS => buf.get(end + 2..p.pos).unwrap_or_default(),
        _ => &[],
    };
    Parsed::Done {
        cmd: Command {
            argc: p.argc,
            head,
            tail,
            inline: false,
            line: &[],
        },
        consumed: p.pos,
    }
}

fn parse_inline<'a>(buf: &'a [u8], limits: &Limits, scanned: &mut usize) -> Parsed<Command<'a>> {
    let window = buf
        .get(..buf.len().min(limits.max_inline.saturating_add(1)))
        .unwrap_or(buf);
    let from = (*scanned).min(window.len());
    let Some(nl) = memchr::memchr(b'\n', window.get(from..).unwrap_or_default()).map(|i| i + from)
    else {
        *scanned = window.len();
        return if buf.len() > limits.max_inline {
            protocol_error("too big inline request")
        } else {
            Parsed::Incomplete { need: None }
        };
    };
    let (line, _) = buf.split_at(nl);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut head: [&'a [u8]; INLINE_ARGS] = [&[]; INLINE_ARGS];
    let mut argc = 0;
    let mut rest = line;
    let mut tail: &[u8] = &[];
    loop {
        match next_inline_arg(&mut rest) {
            Ok(Some(arg)) => {
                if let Some(slot) = head.get_mut(argc) {
                    *slot = arg;
                }
                argc += 1;
                if argc == INLINE_ARGS {
                    tail = rest;
                }
            }
            Ok(None) => break,
            Err(()) => return unbalanced_quotes(),
        }
    }
    if argc == 0 {
        return empty(nl + 1, true);
    }
    Parsed::Done {
        cmd: Command {
            argc,
            head,
            tail,
            inline: true,
            line,
        },
        consumed: nl + 1,
    }
}

/// Encodes a request as a multibulk array (for clients, load generators
/// and tests).
pub fn encode_command<A: AsRef<[u8]>>(args: &[A], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(super::num::Itoa::u64(args.len() as u64).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(super::num::Itoa::u64(a.len() as u64).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(buf: &[u8]) -> (Command<'_>, usize) {
        match parse(buf, &Limits::default()) {
            Parsed::Done { cmd, consumed } => (cmd, consumed),
            other => panic!("{:?}: {other:?}", buf.escape_ascii().to_string()),
        }
    }

    fn args<'a>(c: &Command<'a>) -> Vec<&'a [u8]> {
        c.args().collect()
    }

    #[test]
    fn multibulk() {
        let (c, n) = done(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1");
        assert_eq!(n, 20);
        assert!(c.is(b"get"));
        assert_eq!(args(&c), [&b"GET"[..], b"k"]);
        assert_eq!(c.arg(1), Some(&b"k"[..]));
        assert_eq!(c.arg(2), None);
    }

    #[test]
    fn many_args() {
        let words: Vec<Vec<u8>> = (0..20).map(|i| format!("a{i}").into_bytes()).collect();
        let mut buf = Vec::new();
        encode_command(&words, &mut buf);
        let (c, n) = done(&buf);
        assert_eq!(n, buf.len());
        assert_eq!(c.len(), 20);
        assert_eq!(args(&c), words.iter().map(|w| &w[..]).collect::<Vec<_>>());
        for (i, w) in words.iter().enumerate() {
            assert_eq!(c.arg(i), Some(&w[..]));
        }
        let line = words.join(&b' ');
        let mut inline = line.clone();
        inline.extend_from_slice(b"\r\n");
        let (ci, _) = done(&inline);
        assert_eq!(ci, c);
        assert_eq!(ci.arg(15), Some(&b"a15"[..]));
        // Skipping (`nth` jumps over the first arguments) lands where a
        // walk does, from any start, in both encodings.
        for cmd in [&c, &ci] {
            for start in 0..=20 {
                let mut walked = cmd.args();
                for _ in 0..start {
                    walked.next();
                }
                for n in 0..=21 {
                    let (mut a, mut b) = (walked.clone(), walked.clone());
                    let want = (0..n).fold(a.next(), |_, _| a.next());
                    assert_eq!(b.nth(n), want, "start {start}, nth {n}");
                    assert_eq!(b.collect::<Vec<_>>(), a.collect::<Vec<_>>());
                }
            }
        }
    }

    #[test]
    fn inline_quotes() {
        // A closing quote must end the argument (Redis agrees).
        assert!(matches!(
            parse(b"set k 'it''s'\r\n", &Limits::default()),
            Parsed::Invalid(_)
        ));
        let (c, _) = done(b"set  k\t\"hello world\"  'x y'\n");
        assert_eq!(args(&c), [&b"set"[..], b"k", b"hello world", b"x y"]);
        let (c, _) = done(b"echo \"a\\\"b\" 'c\\'d' e\"f\r\n");
        assert_eq!(args(&c), [&b"echo"[..], b"a\\\"b", b"c\\'d", b"e\"f"]);
        let (c, _) = done(b"echo \"\"\r\n");
        assert_eq!(args(&c), [&b"echo"[..], b""]);
    }

    #[test]
    fn empty_requests() {
        for (buf, n) in [
            (&b"*0\r\n"[..], 4),
            (b"*-1\r\n", 5),
            (b"\r\n", 2),
            (b"   \n", 4),
        ] {
            let (c, consumed) = done(buf);
            assert!(c.is_empty());
            assert_eq!(c.name(), b"");
            assert_eq!(consumed, n);
        }
    }
}
