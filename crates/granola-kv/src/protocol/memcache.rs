//! The memcached text protocol, as memcached 1.6 speaks it: classic
//! commands, meta commands, reply encoders and the UDP frame header.
//!
//! # Requests
//!
//! ```text
//!   <command line>\n            "\r\n" or a bare "\n" ends a line; tokens
//!                               are separated by one or more spaces
//!   [<data block>\r\n]          storage commands only: exactly <bytes>
//!                               bytes, then exactly "\r\n"
//! ```
//!
//! | command | [`Command`] |
//! |---|---|
//! | `get`/`gets <key>+`, `gat`/`gats <exptime> <key>*` | [`Command::Get`] |
//! | `set`/`add`/`replace`/`append`/`prepend <key> <flags> <exptime> <bytes> [noreply]`, `cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]` | [`Command::Store`] |
//! | `delete <key> [0] [noreply]` | [`Command::Delete`] |
//! | `incr`/`decr <key> <delta> [noreply]` | [`Command::Arith`] |
//! | `touch <key> <exptime> [noreply]` | [`Command::Touch`] |
//! | `flush_all [delay] [noreply]` | [`Command::FlushAll`] |
//! | `stats [args]` | [`Command::Stats`] |
//! | `version`, `quit`, `verbosity <level> [noreply]` | [`Command::Version`], [`Command::Quit`], [`Command::Verbosity`] |
//! | `mg`, `ms`, `md`, `ma`, `me`, `mn` | see [`MetaGet`], [`MetaSet`], [`MetaDelete`], [`MetaArith`], [`MetaDebug`], [`Command::MetaNoop`] |
//!
//! Command names are case-sensitive, as in memcached. Numbers are plain
//! decimal (`-` allowed only where memcached takes a signed value).
//!
//! # Errors
//!
//! The reply texts are memcached's, byte for byte (see
//! [`ProtocolError::write_reply`]):
//!
//! - `ERROR` for an unknown command or a wrong number of tokens;
//! - `CLIENT_ERROR bad command line format` for bad numbers and keys longer
//!   than [`Limits::max_key_len`];
//! - `CLIENT_ERROR bad data chunk` when a data block is not followed by
//!   `\r\n` (the line, the block and the two bytes after it are skipped);
//! - `SERVER_ERROR object too large for cache` when `<bytes>` exceeds
//!   [`Limits::max_value_len`]; the data block is swallowed;
//! - command-specific texts (`CLIENT_ERROR invalid exptime argument`,
//!   `CLIENT_ERROR invalid numeric delta argument`, the meta flag errors);
//! - a line longer than [`Limits::max_line`] (or
//!   [`Limits::max_get_line`] for `get`/`gets`/`gat`/`gats`) without a
//!   newline closes the connection without a reply, as memcached does.
//!
//! Classic commands that carry `noreply` suppress their error replies too
//! (memcached's `out_string`); meta commands always report errors.
//!
//! One deliberate difference: memcached swallows a storage command's data
//! block only after `SERVER_ERROR`; for other errors (a too-long key, a bad
//! flags field, a bad meta flag before the length is checked...) it leaves
//! the block to be parsed as commands, so stored bytes such as `flush_all`
//! would run. Here the block is swallowed whenever `<bytes>` itself is a
//! valid length. The reply text is unchanged.
//!
//! # Meta commands
//!
//! Supported flags (others get `CLIENT_ERROR invalid flag` for `mg`/`ms`,
//! `CLIENT_ERROR invalid or duplicate flag` for `md`/`ma`, as memcached
//! words them):
//!
//! | cmd | flags |
//! |---|---|
//! | `mg` | `b c f h k l O q s t u v E N R T` |
//! | `ms` | `b c C E F I k M O q T` (modes `E A P R S`, either case) |
//! | `md` | `b C E I k O q T` |
//! | `ma` | `b c C D E J k M N O q t T v` (modes `I + D -`, either case) |
//! | `me` | `<key> [b]` |
//!
//! Return flags are echoed in request order by the reply encoders
//! ([`MetaGet::write_hit`] and friends), which also apply `q`.
//!
//! # UDP
//!
//! [`UdpHeader`] and [`udp_frames`] frame replies for memcached's UDP
//! transport.

mod base64;
pub mod binary;
mod meta;
mod reply;
mod udp;

pub use meta::{
    ArithMode, DeleteResult, MeInfo, MetaArith, MetaDebug, MetaDelete, MetaGet, MetaItem, MetaKey,
    MetaSet, MissResult, KEY_BUF_LEN,
};
pub use reply::*;
pub use udp::{
    udp_frames, UdpFrame, UdpFrames, UdpHeader, UdpSplitError, UDP_HEADER_LEN, UDP_MAX_DATAGRAM,
};

use super::{ErrorKind, Limits, Parsed, ProtocolError, Recovery};
use crate::protocol::num::{parse_i32, parse_u32, parse_u64};

/// A parsed memcached request. Keys and data borrow from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command<'a> {
    /// `get`, `gets`, `gat`, `gats`.
    Get(Get<'a>),
    /// `set`, `add`, `replace`, `append`, `prepend`, `cas`.
    Store(Store<'a>),
    /// `delete <key> [0] [noreply]`: reply `DELETED` or `NOT_FOUND`.
    Delete {
        /// The key.
        key: &'a [u8],
        /// Send no reply.
        noreply: bool,
    },
    /// `incr`/`decr <key> <delta> [noreply]`: reply the new value or
    /// `NOT_FOUND`.
    Arith {
        /// The key.
        key: &'a [u8],
        /// `decr` (saturates at 0) rather than `incr` (wraps at 2^64).
        decr: bool,
        /// The amount.
        delta: u64,
        /// Send no reply.
        noreply: bool,
    },
    /// `touch <key> <exptime> [noreply]`: reply `TOUCHED` or `NOT_FOUND`.
    Touch {
        /// The key.
        key: &'a [u8],
        /// New expiration; see [`expiry`].
        exptime: i32,
        /// Send no reply.
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]`: reply `OK`.
    FlushAll {
        /// Seconds (or absolute time, see [`expiry`]) until the flush takes
        /// effect; 0 = now.
        delay: i32,
        /// Send no reply.
        noreply: bool,
    },
    /// `stats [args]`: reply `STAT` lines then `END`.
    Stats {
        /// The tokens after `stats` (empty for general-purpose stats).
        args: Tokens<'a>,
    },
    /// `version`: reply `VERSION <v>`.
    Version,
    /// `verbosity <level> [noreply]`: reply `OK`.
    Verbosity {
        /// The level.
        level: u32,
        /// Send no reply.
        noreply: bool,
    },
    /// `shutdown [graceful]`: refused unless the server enables it.
    Shutdown,
    /// `cache_memlimit <megabytes> [noreply]`.
    CacheMemlimit {
        /// The new limit in MiB.
        mb: u32,
        /// Send no reply.
        noreply: bool,
    },
    /// `quit`: close the connection (after flushing earlier replies).
    Quit,
    /// `mg`.
    MetaGet(MetaGet<'a>),
    /// `ms`.
    MetaSet(MetaSet<'a>),
    /// `md`.
    MetaDelete(MetaDelete<'a>),
    /// `ma`.
    MetaArith(MetaArith<'a>),
    /// `me`.
    MetaDebug(MetaDebug<'a>),
    /// `mn`: reply `MN` (and flush: it marks the end of a pipeline).
    MetaNoop,
}

/// Which retrieval command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetKind {
    /// `get <key>+`
    Get,
    /// `gets <key>+`: values with their CAS unique.
    Gets,
    /// `gat <exptime> <key>*`: get and touch.
    Gat,
    /// `gats <exptime> <key>*`: get and touch, with CAS.
    Gats,
}

/// A retrieval: for each key found, a `VALUE` block ([`write_value`]); then
/// `END`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Get<'a> {
    /// Which command.
    pub kind: GetKind,
    /// `gat`/`gats`: the new expiration for each key found.
    pub exptime: Option<i32>,
    /// The keys, each at most [`Limits::max_key_len`] bytes. `get`/`gets`
    /// have at least one; `gat`/`gats` may have none (reply `END`).
    pub keys: Keys<'a>,
}

impl Get<'_> {
    /// True for `gets`/`gats`: `VALUE` lines carry the CAS unique.
    pub fn with_cas(&self) -> bool {
        matches!(self.kind, GetKind::Gets | GetKind::Gats)
    }
}

/// Which storage command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreMode {
    /// Store unconditionally.
    Set,
    /// Store only if absent.
    Add,
    /// Store only if present.
    Replace,
    /// Append the data to an existing value (flags and exptime ignored).
    Append,
    /// Prepend the data to an existing value (flags and exptime ignored).
    Prepend,
    /// Store only if the CAS unique still matches ([`Store::cas`]).
    Cas,
}

/// A storage command with its data block. Reply with [`write_store_result`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store<'a> {
    /// Which command.
    pub mode: StoreMode,
    /// The key.
    pub key: &'a [u8],
    /// Opaque client flags, returned with the value.
    pub flags: u32,
    /// Expiration; see [`expiry`].
    pub exptime: i32,
    /// The data block (without its `\r\n`), at most
    /// [`Limits::max_value_len`] bytes.
    pub data: &'a [u8],
    /// `cas` only: the CAS unique to compare.
    pub cas: Option<u64>,
    /// Send no reply.
    pub noreply: bool,
}

/// The space-separated tokens of (part of) a command line.
#[derive(Clone, PartialEq, Eq)]
pub struct Tokens<'a> {
    rest: &'a [u8],
}

impl std::fmt::Debug for Tokens<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.clone().map(|t| t.escape_ascii().to_string()))
            .finish()
    }
}

impl<'a> Tokens<'a> {
    /// Tokens of `line` (split on spaces, empty tokens skipped).
    pub fn new(line: &'a [u8]) -> Self {
        Tokens { rest: line }
    }

    /// The unsplit remainder (may start with spaces).
    pub fn remainder(&self) -> &'a [u8] {
        self.rest
    }

    /// True if no token is left.
    pub fn is_empty(&self) -> bool {
        self.rest.iter().all(|&b| b == b' ')
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let Some(start) = self.rest.iter().position(|&b| b != b' ') else {
            self.rest = &[];
            return None;
        };
        let rest = self.rest.get(start..).unwrap_or_default();
        let end = memchr::memchr(b' ', rest).unwrap_or(rest.len());
        let (tok, tail) = rest.split_at(end);
        self.rest = tail;
        Some(tok)
    }
}

/// The keys of a retrieval command, in request order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys<'a> {
    tokens: Tokens<'a>,
    remaining: usize,
}

impl<'a> Iterator for Keys<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let k = self.tokens.next()?;
        self.remaining = self.remaining.saturating_sub(1);
        Some(k)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Keys<'_> {}

/// How memcached interprets an expiration time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// `0`: never expires.
    Never,
    /// Negative, or an absolute time not in the future: expired already.
    Expired,
    /// Expires at this Unix time (seconds).
    At(u64),
}

/// memcached's rule for `exptime`: `0` never expires; negative is expired
/// at once; up to 30 days (2,592,000 s) is relative to `now_unix`; larger
/// values are absolute Unix times.
pub fn expiry(exptime: i64, now_unix: u64) -> Expiry {
    const MAX_DELTA: i64 = 60 * 60 * 24 * 30;
    match exptime {
        0 => Expiry::Never,
        e if e < 0 => Expiry::Expired,
        e if e <= MAX_DELTA => Expiry::At(now_unix.saturating_add(e as u64)),
        e if (e as u64) <= now_unix => Expiry::Expired,
        e => Expiry::At(e as u64),
    }
}

/// The first few tokens of a line, and how many there are in all.
struct LineTokens<'a> {
    t: [&'a [u8]; 8],
    n: usize,
}

impl<'a> LineTokens<'a> {
    fn new(line: &'a [u8]) -> Self {
        let mut t: [&'a [u8]; 8] = [&[]; 8];
        let mut n = 0;
        for tok in Tokens::new(line) {
            if let Some(slot) = t.get_mut(n) {
                *slot = tok;
            }
            n += 1;
        }
        LineTokens { t, n }
    }

    /// Token `i`, or empty if absent.
    fn get(&self, i: usize) -> &'a [u8] {
        self.t.get(i).copied().unwrap_or_default()
    }

    fn last_is_noreply(&self) -> bool {
        self.n > 0 && self.get(self.n - 1) == b"noreply"
    }
}

/// Error helpers.
pub(crate) fn err(kind: ErrorKind, skip: usize) -> ProtocolError {
    ProtocolError::new(kind, Recovery::Skip(skip))
}

pub(crate) fn client_error(msg: &'static str, skip: usize) -> ProtocolError {
    err(ErrorKind::McClientError(msg), skip)
}

pub(crate) const BAD_FORMAT: &str = "bad command line format";
/// `SERVER_ERROR object too large for cache`: a data block above the limit.
pub const TOO_LARGE: &str = "object too large for cache";
pub(crate) const BAD_CHUNK: &str = "bad data chunk";

fn invalid<T>(e: ProtocolError) -> Parsed<T> {
    Parsed::Invalid(e)
}

/// Finds the command line. `Ok((line without "\n" or "\r\n", bytes through
/// the "\n"))`, `Err(None)` if more input is needed, `Err(Some(e))` if the
/// line is over the limit.
fn find_line<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(&'a [u8], usize), Option<ProtocolError>> {
    let search = |limit: usize| {
        let window = buf.get(..buf.len().min(limit.saturating_add(1)));
        memchr::memchr(b'\n', window.unwrap_or(buf))
    };
    let nl = match search(limits.max_line) {
        Some(nl) => nl,
        None if buf.len() <= limits.max_line => return Err(None),
        None if is_retrieval_prefix(buf) => match search(limits.max_get_line) {
            Some(nl) => nl,
            None if buf.len() <= limits.max_get_line => return Err(None),
            None => return Err(Some(line_too_long())),
        },
        None => return Err(Some(line_too_long())),
    };
    let (line, _) = buf.split_at(nl);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    Ok((line, nl + 1))
}

fn line_too_long() -> ProtocolError {
    ProtocolError::new(ErrorKind::McLineTooLong, Recovery::Close)
}

/// memcached lets only multi-key retrievals exceed the line limit (it looks
/// for "get "/"gets " after at most 100 leading spaces; we allow the touch
/// variants as well).
fn is_retrieval_prefix(buf: &[u8]) -> bool {
    let spaces = buf.iter().take(101).take_while(|&&b| b == b' ').count();
    if spaces > 100 {
        return false;
    }
    let rest = buf.get(spaces..).unwrap_or_default();
    [&b"get "[..], b"gets ", b"gat ", b"gats "]
        .iter()
        .any(|p| rest.starts_with(p))
}

/// A resumable parser: remembers how much of an incomplete command line
/// has already been searched for its newline (and, through
/// [`Parsed::Incomplete::need`], the server waits for a data block to
/// arrive whole), so each received byte is examined a bounded number of
/// times however a request is split.
#[derive(Debug, Default, Clone)]
pub struct Parser {
    /// Input bytes already known to hold no newline.
    scanned: usize,
}

impl Parser {
    /// Parses one request from the start of `buf`, which must begin with
    /// the same bytes as the previous call's unless that call returned
    /// `Done` or `Invalid`.
    pub fn parse<'a>(&mut self, buf: &'a [u8], limits: &Limits) -> Parsed<Command<'a>> {
        let within = if buf.len() <= limits.max_line {
            true
        } else {
            buf.len() <= limits.max_get_line && is_retrieval_prefix(buf)
        };
        if self.scanned > 0 && within {
            let from = self.scanned.min(buf.len());
            if memchr::memchr(b'\n', buf.get(from..).unwrap_or_default()).is_none() {
                self.scanned = buf.len();
                return Parsed::Incomplete { need: None };
            }
        }
        let r = parse(buf, limits);
        self.scanned = match r {
            Parsed::Incomplete { need: None } => buf.len(),
            _ => 0,
        };
        r
    }
}

/// Parses one request from the start of `buf`.
///
/// See the [module docs](self) for the grammar and the error replies, and
/// [`Parsed`] for what to do with the result.
pub fn parse<'a>(buf: &'a [u8], limits: &Limits) -> Parsed<Command<'a>> {
    let (line, line_len) = match find_line(buf, limits) {
        Ok(l) => l,
        Err(None) => return Parsed::Incomplete { need: None },
        Err(Some(e)) => return invalid(e),
    };
    let mut tokens = Tokens::new(line);
    let name = tokens.next().unwrap_or_default();
    let cmd = |cmd| Parsed::Done {
        cmd,
        consumed: line_len,
    };
    if name.len() < 2 {
        return invalid(err(ErrorKind::McError, line_len));
    }
    match name {
        b"get" => parse_get(GetKind::Get, tokens, line_len, limits),
        b"gets" => parse_get(GetKind::Gets, tokens, line_len, limits),
        b"gat" => parse_get(GetKind::Gat, tokens, line_len, limits),
        b"gats" => parse_get(GetKind::Gats, tokens, line_len, limits),
        b"set" => parse_store(StoreMode::Set, line, line_len, buf, limits),
        b"add" => parse_store(StoreMode::Add, line, line_len, buf, limits),
        b"replace" => parse_store(StoreMode::Replace, line, line_len, buf, limits),
        b"append" => parse_store(StoreMode::Append, line, line_len, buf, limits),
        b"prepend" => parse_store(StoreMode::Prepend, line, line_len, buf, limits),
        b"cas" => parse_store(StoreMode::Cas, line, line_len, buf, limits),
        b"delete" => parse_delete(line, line_len, limits),
        b"incr" => parse_arith(false, line, line_len, limits),
        b"decr" => parse_arith(true, line, line_len, limits),
        b"touch" => parse_touch(line, line_len, limits),
        b"flush_all" => parse_flush_all(line, line_len),
        b"stats" => cmd(Command::Stats { args: tokens }),
        b"version" => cmd(Command::Version),
        b"quit" => cmd(Command::Quit),
        b"shutdown" => cmd(Command::Shutdown),
        b"cache_memlimit" => {
            let mut t = Tokens::new(line);
            t.next();
            match (t.next().and_then(parse_u32), t.next(), t.next()) {
                (Some(mb), None, None) => cmd(Command::CacheMemlimit { mb, noreply: false }),
                (Some(mb), Some(b"noreply"), None) => {
                    cmd(Command::CacheMemlimit { mb, noreply: true })
                }
                _ => invalid(err(ErrorKind::McError, line_len)),
            }
        }
        b"verbosity" => parse_verbosity(line, line_len),
        b"mg" => meta::parse_mg(line, line_len, limits),
        b"ms" => meta::parse_ms(line, line_len, buf, limits),
        b"md" => meta::parse_md(line, line_len, limits),
        b"ma" => meta::parse_ma(line, line_len, limits),
        b"me" => meta::parse_me(line, line_len, limits),
        b"mn" => cmd(Command::MetaNoop),
        _ => invalid(err(ErrorKind::McError, line_len)),
    }
}

fn parse_get<'a>(
    kind: GetKind,
    mut tokens: Tokens<'a>,
    line_len: usize,
    limits: &Limits,
) -> Parsed<Command<'a>> {
    if tokens.is_empty() {
        return invalid(err(ErrorKind::McError, line_len));
    }
    let exptime = match kind {
        GetKind::Get | GetKind::Gets => None,
        GetKind::Gat | GetKind::Gats => match tokens.next().and_then(parse_i32) {
            Some(e) => Some(e),
            None => return invalid(client_error("invalid exptime argument", line_len)),
        },
    };
    let mut count = 0;
    for key in tokens.clone() {
        if key.len() > limits.max_key_len {
            return invalid(client_error(BAD_FORMAT, line_len));
        }
        count += 1;
    }
    Parsed::Done {
        cmd: Command::Get(Get {
            kind,
            exptime,
            keys: Keys {
                tokens,
                remaining: count,
            },
        }),
        consumed: line_len,
    }
}

/// A data length as memcached accepts it: a non-negative `i32` below
/// `INT_MAX - 2`.
pub(crate) fn parse_data_len(tok: &[u8]) -> Option<usize> {
    let v = parse_i32(tok)?;
    if !(0..=i32::MAX - 2).contains(&v) {
        return None;
    }
    usize::try_from(v).ok()
}

/// Bytes to skip for an error in a storage command whose data block has
/// `data_len` bytes (plus its `\r\n`).
pub(crate) fn swallow(line_len: usize, data_len: Option<usize>) -> usize {
    match data_len {
        Some(n) => line_len.saturating_add(n).saturating_add(2),
        None => line_len,
    }
}

/// The data block after a storage command's line: `Ok(data)`, or what to
/// return instead (incomplete, or `bad data chunk`).
pub(crate) fn data_block(
    buf: &[u8],
    line_len: usize,
    data_len: usize,
) -> Result<&[u8], Parsed<core::convert::Infallible>> {
    let total = line_len.saturating_add(data_len).saturating_add(2);
    let Some(block) = buf.get(line_len..total) else {
        return Err(Parsed::Incomplete { need: Some(total) });
    };
    let (data, crlf) = block.split_at(data_len.min(block.len()));
    if crlf != b"\r\n" {
        return Err(Parsed::Invalid(client_error(BAD_CHUNK, total)));
    }
    Ok(data)
}

/// Re-types a non-`Done` result.
pub(crate) fn retype<T>(p: Parsed<core::convert::Infallible>) -> Parsed<T> {
    match p {
        Parsed::Done { cmd, .. } => match cmd {},
        Parsed::Incomplete { need } => Parsed::Incomplete { need },
        Parsed::Invalid(e) => Parsed::Invalid(e),
    }
}

fn parse_store<'a>(
    mode: StoreMode,
    line: &'a [u8],
    line_len: usize,
    buf: &'a [u8],
    limits: &Limits,
) -> Parsed<Command<'a>> {
    let t = LineTokens::new(line);
    let with_cas = mode == StoreMode::Cas;
    let base = if with_cas { 6 } else { 5 };
    if t.n != base && t.n != base + 1 {
        return invalid(err(ErrorKind::McError, line_len));
    }
    let noreply = t.last_is_noreply();
    let data_len = parse_data_len(t.get(4));
    let fail = |e: ErrorKind| invalid(err(e, swallow(line_len, data_len)).with_noreply(noreply));
    let key = t.get(1);
    if key.len() > limits.max_key_len {
        return fail(ErrorKind::McClientError(BAD_FORMAT));
    }
    let (Some(flags), Some(exptime), Some(data_len)) =
        (parse_u32(t.get(2)), parse_i32(t.get(3)), data_len)
    else {
        return fail(ErrorKind::McClientError(BAD_FORMAT));
    };
    let cas = if with_cas {
        match parse_u64(t.get(5)) {
            Some(c) => Some(c),
            None => return fail(ErrorKind::McClientError(BAD_FORMAT)),
        }
    } else {
        None
    };
    if data_len > limits.max_value_len {
        return fail(ErrorKind::McServerError(TOO_LARGE));
    }
    let data = match data_block(buf, line_len, data_len) {
        Ok(d) => d,
        Err(Parsed::Invalid(e)) => return invalid(e.with_noreply(noreply)),
        Err(p) => return retype(p),
    };
    Parsed::Done {
        cmd: Command::Store(Store {
            mode,
            key,
            flags,
            exptime,
            data,
            cas,
            noreply,
        }),
        consumed: line_len + data_len + 2,
    }
}

fn parse_delete<'a>(line: &'a [u8], line_len: usize, limits: &Limits) -> Parsed<Command<'a>> {
    let t = LineTokens::new(line);
    if !(2..=4).contains(&t.n) {
        return invalid(err(ErrorKind::McError, line_len));
    }
    let mut noreply = false;
    if t.n > 2 {
        let hold_is_zero = t.get(2) == b"0";
        noreply = t.last_is_noreply();
        let valid =
            (t.n == 3 && (hold_is_zero || noreply)) || (t.n == 4 && hold_is_zero && noreply);
        if !valid {
            return invalid(
                client_error(
                    "bad command line format.  Usage: delete <key> [noreply]",
                    line_len,
                )
                .with_noreply(noreply),
            );
        }
    }
    let key = t.get(1);
    if key.len() > limits.max_key_len {
        return invalid(client_error(BAD_FORMAT, line_len).with_noreply(noreply));
    }
    Parsed::Done {
        cmd: Command::Delete { key, noreply },
        consumed: line_len,
    }
}

fn parse_arith<'a>(
    decr: bool,
    line: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Parsed<Command<'a>> {
    let t = LineTokens::new(line);
    if t.n != 3 && t.n != 4 {
        return invalid(err(ErrorKind::McError, line_len));
    }
    let noreply = t.last_is_noreply();
    let key = t.get(1);
    if key.len() > limits.max_key_len {
        return invalid(client_error(BAD_FORMAT, line_len).with_noreply(noreply));
    }
    let Some(delta) = parse_u64(t.get(2)) else {
        return invalid(
            client_error("invalid numeric delta argument", line_len).with_noreply(noreply),
        );
    };
    Parsed::Done {
        cmd: Command::Arith {
            key,
            decr,
            delta,
            noreply,
        },
        consumed: line_len,
    }
}

fn parse_touch<'a>(line: &'a [u8], line_len: usize, limits: &Limits) -> Parsed<Command<'a>> {
    let t = LineTokens::new(line);
    if t.n != 3 && t.n != 4 {
        return invalid(err(ErrorKind::McError, line_len));
    }
    let noreply = t.last_is_noreply();
    let key = t.get(1);
    if key.len() > limits.max_key_len {
        return invalid(client_error(BAD_FORMAT, line_len).with_noreply(noreply));
    }
    let Some(exptime) = parse_i32(t.get(2)) else {
        return invalid(client_error("invalid exptime argument", line_len).with_noreply(noreply));
    };
    Parsed::Done {
        cmd: Command::Touch {
            key,
            exptime,
            noreply,
        },
        consumed: line_len,
    }
}

fn parse_flush_all(line: &[u8], line_len: usize) -> Parsed<Command<'_>> {
    let t = LineTokens::new(line);
    if !(1..=3).contains(&t.n) {
        return invalid(err(ErrorKind::McError, line_len));
    }
    let noreply = t.last_is_noreply();
    let mut delay = 0;
    if t.n != if noreply { 2 } else { 1 } {
        match parse_i32(t.get(1)) {
            Some(d) => delay = d,
            None => {
                return invalid(
                    client_error("invalid exptime argument", line_len).with_noreply(noreply),
                )
            }
        }
    }
    Parsed::Done {
        cmd: Command::FlushAll { delay, noreply },
        consumed: line_len,
    }
}

fn parse_verbosity(line: &[u8], line_len: usize) -> Parsed<Command<'_>> {
    let t = LineTokens::new(line);
    if t.n != 2 && t.n != 3 {
        return invalid(err(ErrorKind::McError, line_len));
    }
    let noreply = t.last_is_noreply();
    match parse_u32(t.get(1)) {
        Some(level) => Parsed::Done {
            cmd: Command::Verbosity { level, noreply },
            consumed: line_len,
        },
        None => invalid(client_error(BAD_FORMAT, line_len).with_noreply(noreply)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(buf: &[u8]) -> Parsed<Command<'_>> {
        parse(buf, &Limits::default())
    }

    fn done(buf: &[u8]) -> (Command<'_>, usize) {
        match p(buf) {
            Parsed::Done { cmd, consumed } => (cmd, consumed),
            other => panic!("{:?}: {other:?}", buf.escape_ascii().to_string()),
        }
    }

    fn error(buf: &[u8]) -> (Vec<u8>, Recovery) {
        match p(buf) {
            Parsed::Invalid(e) => {
                let mut out = Vec::new();
                e.write_reply(&mut out);
                (out, e.recovery())
            }
            other => panic!("{:?}: {other:?}", buf.escape_ascii().to_string()),
        }
    }

    #[test]
    fn tokens() {
        let t: Vec<&[u8]> = Tokens::new(b"  a bb  ccc ").collect();
        assert_eq!(t, [&b"a"[..], b"bb", b"ccc"]);
        assert!(Tokens::new(b"   ").is_empty());
        assert_eq!(Tokens::new(b"").count(), 0);
    }

    #[test]
    fn get_keys() {
        let (cmd, n) = done(b"get a bb ccc\r\nrest");
        assert_eq!(n, 14);
        let Command::Get(g) = cmd else { panic!() };
        assert_eq!(g.kind, GetKind::Get);
        assert_eq!(g.keys.len(), 3);
        assert_eq!(g.keys.collect::<Vec<_>>(), [&b"a"[..], b"bb", b"ccc"]);
        let (cmd, _) = done(b"gats 100 k\n");
        let Command::Get(g) = cmd else { panic!() };
        assert!(g.with_cas());
        assert_eq!(g.exptime, Some(100));
        assert_eq!(g.keys.collect::<Vec<_>>(), [&b"k"[..]]);
    }

    #[test]
    fn store() {
        let (cmd, n) = done(b"set k 5 -1 3 noreply\r\nabc\r\nget");
        assert_eq!(n, 27);
        assert_eq!(
            cmd,
            Command::Store(Store {
                mode: StoreMode::Set,
                key: b"k",
                flags: 5,
                exptime: -1,
                data: b"abc",
                cas: None,
                noreply: true,
            })
        );
        assert_eq!(
            p(b"set k 0 0 3\r\nab"),
            Parsed::Incomplete { need: Some(18) }
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            error(b"bogus\r\n"),
            (b"ERROR\r\n".to_vec(), Recovery::Skip(7))
        );
        assert_eq!(error(b"\r\n"), (b"ERROR\r\n".to_vec(), Recovery::Skip(2)));
        assert_eq!(
            error(b"set k 0 0 1\r\nab\r\n"),
            (
                b"CLIENT_ERROR bad data chunk\r\n".to_vec(),
                Recovery::Skip(16)
            )
        );
        assert_eq!(
            error(b"set k 0 0 99999999999\r\n"),
            (
                b"CLIENT_ERROR bad command line format\r\n".to_vec(),
                Recovery::Skip(23)
            )
        );
    }

    #[test]
    fn expiry_rules() {
        let now = 1_700_000_000;
        assert_eq!(expiry(0, now), Expiry::Never);
        assert_eq!(expiry(-1, now), Expiry::Expired);
        assert_eq!(expiry(10, now), Expiry::At(now + 10));
        assert_eq!(expiry(2_592_000, now), Expiry::At(now + 2_592_000));
        assert_eq!(expiry(2_592_001, now), Expiry::Expired);
        assert_eq!(expiry(now as i64 + 5, now), Expiry::At(now + 5));
    }
}
