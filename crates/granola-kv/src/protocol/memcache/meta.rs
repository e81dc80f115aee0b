//! Meta commands: `mg`, `ms`, `md`, `ma`, `me` (parse and reply).
//!
//! ```text
//!   mg <key> <flag>*\r\n
//!   ms <key> <datalen> <flag>*\r\n<data>\r\n
//!   md <key> <flag>*\r\n
//!   ma <key> <flag>*\r\n
//!   me <key> [b]\r\n
//!   mn\r\n
//! ```
//!
//! A flag is one character, optionally followed by its token (`T30`,
//! `Oabc`). Each flag may appear once. The parsed command keeps the flag
//! tokens ([`Tokens`]) so replies can echo return flags (`O`, `k`, `c`, ...)
//! in request order, as memcached does.

use super::base64;
use super::reply::StoreResult;
use super::{
    client_error, data_block, err, retype, swallow, Command, StoreMode, Tokens, BAD_FORMAT,
    TOO_LARGE,
};
use crate::protocol::num::{parse_i32, parse_u32, parse_u64, Line};
use crate::protocol::{ErrorKind, Limits, Parsed, ProtocolError, ReplySink};
use granola::Buf;

/// Room for any decoded binary key ([`MetaKey::bytes`]). Binary keys that
/// decode to more than this are rejected (`CLIENT_ERROR error decoding
/// key`); with the default 250-byte key limit they decode to at most 187.
pub const KEY_BUF_LEN: usize = 1024;

/// memcached's `MFLAG_MAX_OPT_LENGTH`: at most 19 tokens on a meta line.
const MAX_TOKENS: usize = 19;
/// memcached's `MFLAG_MAX_OPAQUE_LENGTH` (the `O` included).
const MAX_OPAQUE: usize = 32;

const MG_FLAGS: &[u8] = b"bcfhklOqstuvENRT";
const MS_FLAGS: &[u8] = b"bcCEFIkMOqsT";
const MD_FLAGS: &[u8] = b"bCEIkOqT";
const MA_FLAGS: &[u8] = b"bcCDEJkMNOqtTv";

const BAD_TOKEN: &str = "bad token in command line format";

/// A meta command's key: as sent, or base64 (the `b` flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaKey<'a> {
    /// The key token as sent (base64 text if `binary`).
    pub raw: &'a [u8],
    /// The `b` flag: `raw` is base64 (validated when parsed).
    pub binary: bool,
}

impl<'a> MetaKey<'a> {
    /// The key's bytes: `raw` itself, or `raw` decoded into `buf`.
    pub fn bytes<'b>(&'b self, buf: &'b mut [u8; KEY_BUF_LEN]) -> &'b [u8] {
        if !self.binary {
            return self.raw;
        }
        let n = base64::decode(self.raw, buf).unwrap_or(0);
        buf.get(..n).unwrap_or_default()
    }

    /// Writes ` k<key>` (plus ` b` for a binary key), as replies echo it.
    fn write_to<S: ReplySink + ?Sized>(&self, line: &mut Line<'_, S>) {
        line.push(b" k").push(self.raw);
        if self.binary {
            line.push(b" b");
        }
    }
}

/// `mg <key> <flags>*`: meta get.
///
/// Reply with [`write_hit`](Self::write_hit) or
/// [`write_miss`](Self::write_miss). `T`, `N`, `R`, `E` and `u` change what
/// the store does; the store computes [`MetaItem::win`] and friends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaGet<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// The flag tokens, in request order.
    pub flags: Tokens<'a>,
    /// `v`: return the value.
    pub value: bool,
    /// `q`: no `EN` on a miss.
    pub quiet: bool,
    /// `u`: do not bump the item in the LRU.
    pub no_bump: bool,
    /// `O<token>`: the opaque token (echoed by the replies).
    pub opaque: Option<&'a [u8]>,
    /// `T<ttl>`: update the remaining TTL.
    pub ttl: Option<i32>,
    /// `N<ttl>`: on a miss, create an empty item with this TTL (and win).
    pub vivify: Option<i32>,
    /// `R<ttl>`: win the recache token if the remaining TTL is below this.
    pub recache: Option<i32>,
    /// `E<cas>`: use this CAS value if the item is modified (created).
    pub new_cas: Option<u64>,
}

/// Item facts the store supplies for an `mg` hit (the `s`, `f`, `c`, `t`,
/// `l`, `h` return flags and the `W`/`X`/`Z` markers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetaItem<'a> {
    /// The key as stored (`k`).
    pub key: &'a [u8],
    /// The key was stored base64-encoded: `k` returns it so, with `b`.
    pub key_binary: bool,
    /// Client flags (`f`).
    pub client_flags: u32,
    /// CAS unique (`c`).
    pub cas: u64,
    /// Remaining TTL in seconds, `-1` for none (`t`).
    pub ttl: i64,
    /// Seconds since last access (`l`).
    pub last_access: u64,
    /// Fetched before (`h`).
    pub fetched: bool,
    /// This client won the recache token (`W`).
    pub win: bool,
    /// The item is stale (`X`).
    pub stale: bool,
    /// A win token was already handed out (`Z`).
    pub token_sent: bool,
}

impl MetaGet<'_> {
    /// True if flag `f` (e.g. `b's'`) was sent.
    pub fn has_flag(&self, f: u8) -> bool {
        has_flag(&self.flags, f)
    }

    /// Writes a hit: `VA <size> <flags>*\r\n<data>\r\n` with `v`, else
    /// `HD <flags>*\r\n`; return flags in request order, then ` Z`, ` X`,
    /// ` W` as the item says. `value` is passed to [`ReplySink::value`].
    pub fn write_hit<S: ReplySink + ?Sized>(&self, sink: &mut S, value: &Buf, item: &MetaItem) {
        let mut line = Line::new(sink);
        if self.value {
            line.push(b"VA ").push_u64(value.len() as u64);
        } else {
            line.push(b"HD");
        }
        // `k` names the key as it was stored, not as this request sent it
        // (memcached keeps that with the item).
        // (The buffer is filled only for such a key: a plain hit pays no
        // memset.)
        let mut encoded: [u8; base64::encoded_len(KEY_BUF_LEN)];
        let key = if item.key_binary {
            encoded = [0u8; base64::encoded_len(KEY_BUF_LEN)];
            let n = base64::encode(item.key, &mut encoded);
            MetaKey {
                raw: &encoded[..n],
                binary: true,
            }
        } else {
            MetaKey {
                raw: item.key,
                binary: false,
            }
        };
        echo_flags(&mut line, &self.flags, &key, |c, line| {
            match c {
                b's' => line.push(b" s").push_u64(value.len() as u64),
                b'f' => line.push(b" f").push_u64(u64::from(item.client_flags)),
                b'c' => line.push(b" c").push_u64(item.cas),
                b't' => line.push(b" t").push_i64(item.ttl),
                b'l' => line.push(b" l").push_u64(item.last_access),
                b'h' => line.push(if item.fetched { b" h1" } else { b" h0" }),
                _ => line,
            };
        });
        if item.token_sent {
            line.push(b" Z");
        }
        if item.stale {
            line.push(b" X");
        }
        if item.win {
            line.push(b" W");
        }
        line.push(b"\r\n");
        if self.value {
            line.sink().value(value);
            line.push(b"\r\n");
        }
        line.finish();
    }

    /// Writes a miss: `EN <flags>*\r\n` (only `O` and `k` echoed), or
    /// nothing with `q`.
    pub fn write_miss<S: ReplySink + ?Sized>(&self, sink: &mut S) {
        if !self.quiet {
            write_status(sink, b"EN", &self.flags, &self.key);
        }
    }
}

/// `ms <key> <datalen> <flags>*` with its data block: meta set.
///
/// Reply with [`write_result`](Self::write_result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaSet<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// The data block (without `\r\n`).
    pub data: &'a [u8],
    /// The flag tokens, in request order.
    pub flags: Tokens<'a>,
    /// `M<mode>`: `E` add, `A` append, `P` prepend, `R` replace, `S` set
    /// (default). Never [`StoreMode::Cas`]; see [`store_mode`](Self::store_mode).
    pub mode: StoreMode,
    /// `F<flags>`: client flags (default 0).
    pub client_flags: u32,
    /// `T<ttl>`: expiration, as classic `exptime` (default 0: never).
    pub exptime: i32,
    /// `C<cas>`: compare this CAS unique.
    pub compare_cas: Option<u64>,
    /// `E<cas>`: store with this CAS value.
    pub new_cas: Option<u64>,
    /// `I`: invalidate: with `C`, if the supplied CAS is older than the
    /// item's, store it but mark it stale.
    pub invalidate: bool,
    /// `q`: no `HD` on success.
    pub quiet: bool,
}

impl MetaSet<'_> {
    /// The storage operation, as memcached maps it: `set`/`replace` with a
    /// `C` compare value become [`StoreMode::Cas`]; `add`, `append` and
    /// `prepend` keep their mode (and may check `compare_cas` too).
    pub fn store_mode(&self) -> StoreMode {
        match (self.mode, self.compare_cas) {
            (StoreMode::Set | StoreMode::Replace, Some(_)) => StoreMode::Cas,
            (m, _) => m,
        }
    }

    /// True if flag `f` was sent.
    pub fn has_flag(&self, f: u8) -> bool {
        has_flag(&self.flags, f)
    }

    /// Writes `HD`/`NS`/`EX`/`NF` with the `O`, `k` and `c` (the item's new
    /// `cas`) flags; nothing for a stored item with `q`.
    pub fn write_result<S: ReplySink + ?Sized>(&self, sink: &mut S, result: StoreResult, cas: u64) {
        if self.quiet && result == StoreResult::Stored {
            return;
        }
        let code: &[u8] = match result {
            StoreResult::Stored => b"HD",
            StoreResult::NotStored => b"NS",
            StoreResult::Exists => b"EX",
            StoreResult::NotFound => b"NF",
        };
        let mut line = Line::new(sink);
        line.push(code);
        let size = self.data.len() as u64;
        echo_flags(&mut line, &self.flags, &self.key, |c, line| {
            if c == b'c' {
                line.push(b" c").push_u64(cas);
            } else if c == b's' {
                line.push(b" s").push_u64(size);
            }
        });
        line.push(b"\r\n");
        line.finish();
    }
}

/// Outcome of a delete (`delete`, `md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteResult {
    /// Deleted (or, with `md I`, marked stale): `DELETED` / `HD`.
    Deleted,
    /// No such key: `NOT_FOUND` / `NF`.
    NotFound,
    /// `md C<cas>` did not match: `EX`.
    Exists,
}

/// `md <key> <flags>*`: meta delete. Reply with
/// [`write_result`](Self::write_result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaDelete<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// The flag tokens, in request order.
    pub flags: Tokens<'a>,
    /// `q`: no `HD` on success.
    pub quiet: bool,
    /// `C<cas>`: delete only if the CAS unique matches.
    pub compare_cas: Option<u64>,
    /// `E<cas>`: new CAS value when marking stale.
    pub new_cas: Option<u64>,
    /// `I`: mark stale instead of deleting.
    pub invalidate: bool,
    /// `T<ttl>`: with `I`, the new TTL.
    pub ttl: Option<i32>,
}

impl MetaDelete<'_> {
    /// Writes `HD`/`NF`/`EX` with the `O` and `k` flags; nothing for a
    /// success with `q`.
    pub fn write_result<S: ReplySink + ?Sized>(&self, sink: &mut S, result: DeleteResult) {
        let code: &[u8] = match result {
            DeleteResult::Deleted if self.quiet => return,
            DeleteResult::Deleted => b"HD",
            DeleteResult::NotFound => b"NF",
            DeleteResult::Exists => b"EX",
        };
        write_status(sink, code, &self.flags, &self.key);
    }
}

/// `ma` direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithMode {
    /// `MI`, `M+` (default).
    Incr,
    /// `MD`, `M-`: saturates at 0.
    Decr,
}

/// Why an `ma` produced no number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissResult {
    /// No such key (and no `N`): `NF`.
    NotFound,
    /// `C<cas>` did not match: `EX`.
    Exists,
    /// Auto-vivify lost a race: `NS`.
    NotStored,
}

/// `ma <key> <flags>*`: meta arithmetic. Reply with
/// [`write_value`](Self::write_value) or [`write_miss`](Self::write_miss).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaArith<'a> {
    /// The key.
    pub key: MetaKey<'a>,
    /// The flag tokens, in request order.
    pub flags: Tokens<'a>,
    /// `M<mode>`.
    pub mode: ArithMode,
    /// `D<delta>` (default 1).
    pub delta: u64,
    /// `J<initial>`: value when auto-vivified (default 0).
    pub initial: u64,
    /// `N<ttl>`: auto-vivify on a miss with this TTL.
    pub vivify: Option<i32>,
    /// `T<ttl>`: update the TTL.
    pub ttl: Option<i32>,
    /// `C<cas>`: apply only if the CAS unique matches.
    pub compare_cas: Option<u64>,
    /// `E<cas>`: new CAS value.
    pub new_cas: Option<u64>,
    /// `q`: no reply on success.
    pub quiet: bool,
    /// `v`: return the new value.
    pub value: bool,
}

impl MetaArith<'_> {
    /// Writes a success: `VA <len> <flags>*\r\n<number>\r\n` with `v`, else
    /// `HD <flags>*\r\n`; flags `O`, `k`, `c` (`cas`), `t` (`ttl`, -1 for
    /// none). Nothing with `q`.
    pub fn write_value<S: ReplySink + ?Sized>(
        &self,
        sink: &mut S,
        number: u64,
        cas: u64,
        ttl: i64,
    ) {
        if self.quiet {
            return;
        }
        let digits = crate::protocol::num::Itoa::u64(number);
        let mut line = Line::new(sink);
        if self.value {
            line.push(b"VA ").push_u64(digits.as_bytes().len() as u64);
        } else {
            line.push(b"HD");
        }
        echo_flags(&mut line, &self.flags, &self.key, |c, line| {
            match c {
                b'c' => line.push(b" c").push_u64(cas),
                b't' => line.push(b" t").push_i64(ttl),
                _ => line,
            };
        });
        line.push(b"\r\n");
        if self.value {
            line.push(digits.as_bytes()).push(b"\r\n");
        }
        line.finish();
    }

    /// Writes `NF`/`EX`/`NS` with the `O` and `k` flags.
    pub fn write_miss<S: ReplySink + ?Sized>(&self, sink: &mut S, result: MissResult) {
        let code: &[u8] = match result {
            MissResult::NotFound => b"NF",
            MissResult::Exists => b"EX",
            MissResult::NotStored => b"NS",
        };
        write_status(sink, code, &self.flags, &self.key);
    }
}

/// `me <key> [b]`: meta debug. Reply with [`write_hit`](Self::write_hit)
/// or `EN\r\n` ([`super::EN`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaDebug<'a> {
    /// The key.
    pub key: MetaKey<'a>,
}

/// What `me` reports about an item.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MeInfo {
    /// Seconds until expiry, `-1` for none.
    pub exp: i64,
    /// Seconds since last access.
    pub la: u64,
    /// CAS unique.
    pub cas: u64,
    /// Fetched before.
    pub fetched: bool,
    /// Size class.
    pub cls: u32,
    /// Bytes the item occupies.
    pub size: u64,
}

impl MetaDebug<'_> {
    /// Writes `ME <key> exp=<e> la=<l> cas=<c> fetch=<yes|no> cls=<n>
    /// size=<s>\r\n`.
    pub fn write_hit<S: ReplySink + ?Sized>(&self, sink: &mut S, info: &MeInfo) {
        let mut line = Line::new(sink);
        line.push(b"ME ")
            .push(self.key.raw)
            .push(b" exp=")
            .push_i64(info.exp)
            .push(b" la=")
            .push_u64(info.la)
            .push(b" cas=")
            .push_u64(info.cas)
            .push(if info.fetched {
                b" fetch=yes"
            } else {
                b" fetch=no"
            })
            .push(b" cls=")
            .push_u64(u64::from(info.cls))
            .push(b" size=")
            .push_u64(info.size)
            .push(b"\r\n");
        line.finish();
    }
}

fn has_flag(flags: &Tokens<'_>, f: u8) -> bool {
    flags.clone().any(|t| t.first() == Some(&f))
}

/// Echoes `O` and `k` in request order; other flags go to `other`.
fn echo_flags<S: ReplySink + ?Sized>(
    line: &mut Line<'_, S>,
    flags: &Tokens<'_>,
    key: &MetaKey<'_>,
    mut other: impl FnMut(u8, &mut Line<'_, S>),
) {
    for tok in flags.clone() {
        match tok.first() {
            Some(b'O') => {
                line.push(b" ").push(tok);
            }
            Some(b'k') => key.write_to(line),
            Some(&c) => other(c, line),
            None => {}
        }
    }
}

fn write_status<S: ReplySink + ?Sized>(
    sink: &mut S,
    code: &[u8],
    flags: &Tokens<'_>,
    key: &MetaKey<'_>,
) {
    let mut line = Line::new(sink);
    line.push(code);
    echo_flags(&mut line, flags, key, |_, _| {});
    line.push(b"\r\n");
    line.finish();
}

/// Flag values, as memcached's `_meta_flag_preparse` collects them.
#[derive(Default)]
struct Pre<'a> {
    binary: bool,
    quiet: bool,
    value: bool,
    no_bump: bool,
    invalidate: bool,
    opaque: Option<&'a [u8]>,
    ttl: Option<i32>,
    vivify: Option<i32>,
    recache: Option<i32>,
    client_flags: Option<u32>,
    compare_cas: Option<u64>,
    new_cas: Option<u64>,
    delta: Option<u64>,
    initial: Option<u64>,
    mode: Option<u8>,
}

/// Checks the flags against `allowed` and collects their values. A
/// duplicate or unknown flag stops at once; a bad token is remembered and
/// the scan goes on (the last such error is the one reported), as in
/// memcached.
fn preparse<'a>(flags: Tokens<'a>, allowed: &[u8], key: &[u8]) -> Result<Pre<'a>, &'static str> {
    let mut seen = [false; 127];
    let mut pre = Pre::default();
    let mut error = None;
    for tok in flags {
        let Some((&c, arg)) = tok.split_first() else {
            continue;
        };
        match seen.get_mut(usize::from(c)) {
            Some(s) if !*s => *s = true,
            _ => return Err("duplicate flag"),
        }
        if !allowed.contains(&c) {
            return Err("invalid flag");
        }
        let mut num = |v: Option<u64>, msg: &'static str| {
            if v.is_none() {
                error = Some(msg);
            }
            v
        };
        match c {
            b'b' => {
                pre.binary = true;
                if !binary_key_ok(key) {
                    error = Some("error decoding key");
                }
            }
            b'N' => pre.vivify = signed(arg, &mut error),
            b'T' => pre.ttl = signed(arg, &mut error),
            b'R' => pre.recache = signed(arg, &mut error),
            b'F' => {
                pre.client_flags = parse_u32(arg);
                if pre.client_flags.is_none() {
                    error = Some(BAD_FORMAT);
                }
            }
            b'C' => pre.compare_cas = num(parse_u64(arg), BAD_TOKEN),
            b'E' => pre.new_cas = num(parse_u64(arg), BAD_TOKEN),
            b'J' => pre.initial = num(parse_u64(arg), "invalid numeric initial value"),
            b'D' => pre.delta = num(parse_u64(arg), "invalid numeric delta value"),
            b'M' => match arg {
                [m] => pre.mode = Some(*m),
                _ => error = Some("incorrect length for M token"),
            },
            b'q' => pre.quiet = true,
            b'v' => pre.value = true,
            b'u' => pre.no_bump = true,
            b'I' => pre.invalidate = true,
            b'O' => pre.opaque = Some(arg),
            _ => {} // return flags: echoed by the reply encoders
        }
    }
    match error {
        Some(e) => Err(e),
        None if pre.opaque.is_some_and(|o| o.len() + 1 > MAX_OPAQUE) => {
            Err("opaque token too long")
        }
        None => Ok(pre),
    }
}

/// A `b` key must be base64 that decodes into [`KEY_BUF_LEN`] bytes.
fn binary_key_ok(key: &[u8]) -> bool {
    matches!(base64::decoded_len(key), Some(n) if n <= KEY_BUF_LEN)
}

fn signed(arg: &[u8], error: &mut Option<&'static str>) -> Option<i32> {
    let v = parse_i32(arg);
    if v.is_none() {
        *error = Some(BAD_TOKEN);
    }
    v
}

/// The parts of a meta command line: the key, the rest, the token count.
struct MetaLine<'a> {
    key: &'a [u8],
    rest: Tokens<'a>,
    n: usize,
}

fn split_meta(line: &[u8]) -> MetaLine<'_> {
    let n = Tokens::new(line).count();
    let mut rest = Tokens::new(line);
    rest.next();
    let key = rest.next().unwrap_or_default();
    MetaLine { key, rest, n }
}

fn done(cmd: Command<'_>, consumed: usize) -> Parsed<Command<'_>> {
    Parsed::Done { cmd, consumed }
}

fn fail<T>(e: ProtocolError) -> Parsed<T> {
    Parsed::Invalid(e)
}

/// Checks common to `mg`, `md`, `ma`: token count, key length, flag count.
fn check_head(
    m: &MetaLine<'_>,
    line_len: usize,
    limits: &Limits,
    too_many: &'static str,
) -> Result<(), ProtocolError> {
    if m.n < 2 {
        return Err(err(ErrorKind::McError, line_len));
    }
    if m.key.len() > limits.max_key_len {
        return Err(client_error(BAD_FORMAT, line_len));
    }
    if m.n > MAX_TOKENS {
        return Err(client_error(too_many, line_len));
    }
    Ok(())
}

pub(super) fn parse_mg<'a>(
    line: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Parsed<Command<'a>> {
    let m = split_meta(line);
    if let Err(e) = check_head(&m, line_len, limits, "options flags are too long") {
        return fail(e);
    }
    let pre = match preparse(m.rest.clone(), MG_FLAGS, m.key) {
        Ok(p) => p,
        Err(msg) => return fail(client_error(msg, line_len)),
    };
    done(
        Command::MetaGet(MetaGet {
            key: MetaKey {
                raw: m.key,
                binary: pre.binary,
            },
            flags: m.rest,
            value: pre.value,
            quiet: pre.quiet,
            no_bump: pre.no_bump,
            opaque: pre.opaque,
            ttl: pre.ttl,
            vivify: pre.vivify,
            recache: pre.recache,
            new_cas: pre.new_cas,
        }),
        line_len,
    )
}

pub(super) fn parse_ms<'a>(
    line: &'a [u8],
    line_len: usize,
    buf: &'a [u8],
    limits: &Limits,
) -> Parsed<Command<'a>> {
    let MetaLine { key, mut rest, n } = split_meta(line);
    if n < 2 {
        return fail(err(ErrorKind::McError, line_len));
    }
    let data_len = rest.next().and_then(super::parse_data_len);
    let skip = swallow(line_len, data_len);
    let error = |msg| fail(client_error(msg, skip));
    if key.len() > limits.max_key_len || n == 2 {
        return error(BAD_FORMAT);
    }
    if n > MAX_TOKENS {
        return error("options flags too long");
    }
    let Some(data_len) = data_len else {
        return error(BAD_FORMAT);
    };
    let pre = match preparse(rest.clone(), MS_FLAGS, key) {
        Ok(p) => p,
        Err(msg) => return error(msg),
    };
    let mode = match pre.mode.map(|m| m.to_ascii_uppercase()) {
        None | Some(b'S') => StoreMode::Set,
        Some(b'E') => StoreMode::Add,
        Some(b'A') => StoreMode::Append,
        Some(b'P') => StoreMode::Prepend,
        Some(b'R') => StoreMode::Replace,
        Some(_) => return error("invalid mode for ms M token"),
    };
    if data_len > limits.max_value_len {
        return fail(err(ErrorKind::McServerError(TOO_LARGE), skip));
    }
    let data = match data_block(buf, line_len, data_len) {
        Ok(d) => d,
        Err(p) => return retype(p),
    };
    done(
        Command::MetaSet(MetaSet {
            key: MetaKey {
                raw: key,
                binary: pre.binary,
            },
            data,
            flags: rest,
            mode,
            client_flags: pre.client_flags.unwrap_or(0),
            exptime: pre.ttl.unwrap_or(0),
            compare_cas: pre.compare_cas,
            new_cas: pre.new_cas,
            invalidate: pre.invalidate,
            quiet: pre.quiet,
        }),
        skip,
    )
}

pub(super) fn parse_md<'a>(
    line: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Parsed<Command<'a>> {
    let m = split_meta(line);
    if let Err(e) = check_head(&m, line_len, limits, "options flags too long") {
        return fail(e);
    }
    let pre = match preparse(m.rest.clone(), MD_FLAGS, m.key) {
        Ok(p) => p,
        Err(msg) => return fail(client_error(invalid_or_dup(msg), line_len)),
    };
    done(
        Command::MetaDelete(MetaDelete {
            key: MetaKey {
                raw: m.key,
                binary: pre.binary,
            },
            flags: m.rest,
            quiet: pre.quiet,
            compare_cas: pre.compare_cas,
            new_cas: pre.new_cas,
            invalidate: pre.invalidate,
            ttl: pre.ttl,
        }),
        line_len,
    )
}

/// `md` and `ma` report every flag-scan error as one text, except the
/// opaque length (checked later in memcached).
fn invalid_or_dup(msg: &'static str) -> &'static str {
    if msg == "opaque token too long" {
        msg
    } else {
        "invalid or duplicate flag"
    }
}

pub(super) fn parse_ma<'a>(
    line: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Parsed<Command<'a>> {
    let m = split_meta(line);
    if let Err(e) = check_head(&m, line_len, limits, "options flags too long") {
        return fail(e);
    }
    let pre = match preparse(m.rest.clone(), MA_FLAGS, m.key) {
        Ok(p) => p,
        Err(msg) => return fail(client_error(invalid_or_dup(msg), line_len)),
    };
    let mode = match pre.mode.map(|m| m.to_ascii_uppercase()) {
        None | Some(b'I' | b'+') => ArithMode::Incr,
        Some(b'D' | b'-') => ArithMode::Decr,
        Some(_) => return fail(client_error("invalid mode for ma M token", line_len)),
    };
    done(
        Command::MetaArith(MetaArith {
            key: MetaKey {
                raw: m.key,
                binary: pre.binary,
            },
            flags: m.rest,
            mode,
            delta: pre.delta.unwrap_or(1),
            initial: pre.initial.unwrap_or(0),
            vivify: pre.vivify,
            ttl: pre.ttl,
            compare_cas: pre.compare_cas,
            new_cas: pre.new_cas,
            quiet: pre.quiet,
            value: pre.value,
        }),
        line_len,
    )
}

pub(super) fn parse_me<'a>(
    line: &'a [u8],
    line_len: usize,
    limits: &Limits,
) -> Parsed<Command<'a>> {
    let MetaLine { key, mut rest, n } = split_meta(line);
    if n < 2 || key.len() > limits.max_key_len {
        return fail(client_error(BAD_FORMAT, line_len));
    }
    let binary = rest.next() == Some(b"b");
    if binary && !binary_key_ok(key) {
        return fail(client_error(BAD_FORMAT, line_len));
    }
    done(
        Command::MetaDebug(MetaDebug {
            key: MetaKey { raw: key, binary },
        }),
        line_len,
    )
}
