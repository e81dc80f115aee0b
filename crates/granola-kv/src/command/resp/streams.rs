//! Stream commands: XADD (NOMKSTREAM, MAXLEN/MINID trimming), XLEN,
//! XRANGE and XREVRANGE (exclusive bounds, COUNT), XDEL, XTRIM, XREAD
//! (COUNT, BLOCK; `$` and `+`), XSETID and XINFO STREAM (FULL too)/GROUPS. A stream is a
//! B-tree of entries by ID (`store/stream.rs`): O(log n) per entry.
//!
//! `XREAD BLOCK` waits as the blocking list commands do
//! ([`super::blocking`]). Consumer groups are in `stream_groups.rs`.
//! `XINFO STREAM FULL` leaves out Redis's radix tree counts, as the plain
//! form does.

use super::collections::{edit, read, CType};
use super::{parse_i64, Ctx, Replied};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{encode_fields, field_ranges, Dict, Growth, StreamEntry, StreamId, StreamMeta};
use granola::Buf;
use std::ops::Bound;

pub(super) const T: CType = CType::Stream;

pub(super) const ERR_ID: &[u8] = b"ERR Invalid stream ID specified as stream command argument";
const ERR_SMALLER: &[u8] =
    b"ERR The ID specified in XADD is equal or smaller than the target stream top item";
const ERR_ZERO: &[u8] = b"ERR The ID specified in XADD must be greater than 0-0";
const ERR_EXHAUSTED: &[u8] =
    b"ERR The stream has exhausted the last possible ID, unable to add more items";

pub(super) fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

pub(super) fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// `ms-seq`, or `ms` with `seq` defaulting to `default_seq`.
pub(super) fn parse_id(b: &[u8], default_seq: u64) -> Option<StreamId> {
    match b.iter().position(|&c| c == b'-') {
        Some(dash) => Some(StreamId {
            ms: parse_u64(&b[..dash])?,
            seq: parse_u64(&b[dash + 1..])?,
        }),
        None => Some(StreamId {
            ms: parse_u64(b)?,
            seq: default_seq,
        }),
    }
}

/// One end of an XRANGE interval: `-`, `+`, an ID (a bare `ms` covers
/// all of that millisecond) or `(ID`, exclusive. None if invalid.
pub(super) fn range_bound(b: &[u8], start: bool) -> Option<Bound<StreamId>> {
    let default_seq = if start { 0 } else { u64::MAX };
    match b {
        b"-" if start => Some(Bound::Unbounded),
        b"-" => Some(Bound::Included(StreamId::MIN)),
        b"+" => Some(Bound::Included(StreamId::MAX)),
        [b'(', id @ ..] => Some(Bound::Excluded(parse_id(id, default_seq)?)),
        id => Some(Bound::Included(parse_id(id, default_seq)?)),
    }
}

/// An ID as a bulk string.
pub(super) fn write_id(ctx: &mut Ctx<'_>, id: StreamId) {
    ctx.bytes(id.format(&mut [0; 41]));
}

/// A stream entry: `[id, [field, value, ...]]`. Parts in pool memory
/// above the copy threshold are referenced, not copied.
pub(super) fn write_entry(ctx: &mut Ctx<'_>, e: &StreamEntry<'_>) {
    write_entry_parts(ctx, e.id, e.fields.bytes(), e.fields.buf());
}

/// [`write_entry`] of entry `id` whose encoded fields are `bytes`, in
/// pool memory as `buf` if they are.
pub(super) fn write_entry_parts(ctx: &mut Ctx<'_>, id: StreamId, bytes: &[u8], buf: Option<&Buf>) {
    ctx.array(2);
    write_id(ctx, id);
    ctx.array(field_ranges(bytes).count());
    for r in field_ranges(bytes) {
        match buf {
            Some(b) if !ctx.copies(r.len()) => ctx.bulk(&b.slice(r)),
            _ => ctx.bytes(&bytes[r]),
        }
    }
}

/// A trimming rule (XADD's and XTRIM's `MAXLEN|MINID [=|~] threshold
/// [LIMIT count]`).
#[derive(Clone, Copy, Debug)]
enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries below this ID.
    MinId(StreamId),
}

#[derive(Clone, Copy, Debug)]
struct TrimRule {
    trim: Trim,
    /// Most entries one call deletes. `~` (approximate) allows a LIMIT;
    /// granola trims exactly either way, which `~` permits.
    limit: usize,
}

impl TrimRule {
    /// Applies the rule; entries deleted.
    fn apply(self, d: &mut Dict) -> usize {
        match self.trim {
            Trim::MaxLen(max) => d.stream_trim(self.limit, |_, left| left as u64 > max),
            Trim::MinId(min) => d.stream_trim(self.limit, |id, _| id < min),
        }
    }
}

/// Parses a trimming rule at argument `*i` (the MAXLEN/MINID word),
/// moving `i` past it. `Err` with the error text.
fn parse_trim(cmd: &Command<'_>, i: &mut usize) -> Result<TrimRule, &'static [u8]> {
    let maxlen = arg(cmd, *i).eq_ignore_ascii_case(b"MAXLEN");
    *i += 1;
    let mut approx = false;
    if let Some(m) = cmd.arg(*i) {
        if m == b"~" || m == b"=" {
            approx = m == b"~";
            *i += 1;
        }
    }
    let Some(threshold) = cmd.arg(*i) else {
        return Err(b"ERR syntax error");
    };
    *i += 1;
    let trim = if maxlen {
        match parse_i64(threshold) {
            Some(n) if n >= 0 => Trim::MaxLen(n as u64),
            Some(_) => return Err(b"ERR The MAXLEN argument must be >= 0."),
            None => return Err(b"ERR value is not an integer or out of range"),
        }
    } else {
        Trim::MinId(parse_id(threshold, 0).ok_or(ERR_ID)?)
    };
    let mut limit = usize::MAX;
    if cmd
        .arg(*i)
        .is_some_and(|w| w.eq_ignore_ascii_case(b"LIMIT"))
    {
        let n = cmd.arg(*i + 1).and_then(parse_i64);
        *i += 2;
        match n {
            Some(n) if n >= 0 => {
                if !approx {
                    return Err(
                        b"ERR syntax error, LIMIT cannot be used without the special ~ option",
                    );
                }
                // LIMIT 0 means no limit, as in Redis.
                limit = if n == 0 { usize::MAX } else { n as usize };
            }
            Some(_) => return Err(b"ERR The LIMIT argument must be >= 0."),
            None => return Err(b"ERR value is not an integer or out of range"),
        }
    }
    Ok(TrimRule { trim, limit })
}

fn is_trim_word(w: &[u8]) -> bool {
    w.eq_ignore_ascii_case(b"MAXLEN") || w.eq_ignore_ascii_case(b"MINID")
}

/// How XADD names its entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NewId {
    /// `*`: the clock's milliseconds (or the last ID's, if later).
    Auto,
    /// `ms-*`: a sequence number within `ms`.
    AutoSeq(u64),
    /// An explicit ID.
    Exact(StreamId),
}

/// The ID XADD gives its entry after `last`, at `now_ms`.
fn next_id(new: NewId, last: StreamId, now_ms: u64) -> Result<StreamId, &'static [u8]> {
    // A stream at the last possible ID takes nothing, whatever is asked.
    if last == StreamId::MAX {
        return Err(ERR_EXHAUSTED);
    }
    let id = match new {
        NewId::Auto if now_ms > last.ms => StreamId { ms: now_ms, seq: 0 },
        NewId::Auto => last.next().ok_or(ERR_EXHAUSTED)?,
        NewId::AutoSeq(ms) if ms > last.ms => StreamId { ms, seq: 0 },
        NewId::AutoSeq(ms) if ms == last.ms => StreamId {
            ms,
            seq: last.seq.checked_add(1).ok_or(ERR_SMALLER)?,
        },
        NewId::AutoSeq(_) => return Err(ERR_SMALLER),
        NewId::Exact(id) if id == StreamId::MIN => return Err(ERR_ZERO),
        NewId::Exact(id) if id <= last => return Err(ERR_SMALLER),
        NewId::Exact(id) => id,
    };
    if id == StreamId::MIN {
        // `0-*` on a new stream.
        return Ok(StreamId { ms: 0, seq: 1 });
    }
    Ok(id)
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]
/// *|id field value [field value ...]`: the new entry's ID.
pub fn xadd(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (mut i, mut nomkstream, mut trim) = (2, false, None);
    while i < cmd.len() {
        let w = arg(cmd, i);
        if w.eq_ignore_ascii_case(b"NOMKSTREAM") {
            nomkstream = true;
            i += 1;
        } else if is_trim_word(w) {
            match parse_trim(cmd, &mut i) {
                Ok(t) => trim = Some(t),
                Err(e) => {
                    ctx.error(e);
                    return Step::Done;
                }
            }
        } else {
            break;
        }
    }
    let Some(id_arg) = cmd.arg(i) else {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    };
    // The field-value pairs follow the ID; read in place, not collected.
    let fields = cmd.args().skip(i + 1);
    let n_fields = cmd.len() - (i + 1);
    if n_fields == 0 || n_fields % 2 != 0 {
        resp::write_wrong_arity(ctx.out, cmd.name());
        return Step::Done;
    }
    let new = match id_arg {
        b"*" => Some(NewId::Auto),
        [ms @ .., b'-', b'*'] => parse_u64(ms).map(NewId::AutoSeq),
        id => parse_id(id, 0).map(NewId::Exact),
    };
    let Some(new) = new else {
        ctx.error(ERR_ID);
        return Step::Done;
    };
    // 0-0 is refused before the key is looked at, as in Redis.
    if new == NewId::Exact(StreamId::MIN) {
        ctx.error(ERR_ZERO);
        return Step::Done;
    }
    if nomkstream {
        match ctx.coll(arg(cmd, 1), T) {
            Err(_) => return Step::Done,
            Ok(None) => {
                ctx.null();
                return Step::Done;
            }
            Ok(Some(_)) => {}
        }
    }
    let Some(blob) = encode_fields(fields) else {
        ctx.error(b"ERR value too large");
        return Step::Done;
    };
    let growth = Growth {
        entries: 1,
        bytes: 16 + blob.len(),
    };
    let now_ms = ctx.db.now_ms();
    match edit(ctx, arg(cmd, 1), T, growth, |s| {
        let last = s.stream_meta().unwrap_or_default().last_id;
        let id = next_id(new, last, now_ms)?;
        s.stream_append(id, blob);
        if let Some(t) = trim {
            t.apply(s);
        }
        Ok(id)
    }) {
        Ok(Ok(id)) => write_id(ctx, id),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `XLEN key`.
pub fn xlen(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        ctx.int(s.map_or(0, Dict::len) as i64)
    });
    Step::Done
}

/// `XRANGE key start end [COUNT n]`.
pub fn xrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    range(ctx, cmd, false)
}

/// `XREVRANGE key end start [COUNT n]`.
pub fn xrevrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    range(ctx, cmd, true)
}

fn range(ctx: &mut Ctx<'_>, cmd: &Command<'_>, rev: bool) -> Step {
    let (lo_arg, hi_arg) = if rev {
        (arg(cmd, 3), arg(cmd, 2))
    } else {
        (arg(cmd, 2), arg(cmd, 3))
    };
    let (Some(lo), Some(hi)) = (range_bound(lo_arg, true), range_bound(hi_arg, false)) else {
        ctx.error(ERR_ID);
        return Step::Done;
    };
    let count = match cmd.len() {
        4 => usize::MAX,
        6 if arg(cmd, 4).eq_ignore_ascii_case(b"COUNT") => match parse_i64(arg(cmd, 5)) {
            // COUNT 0 (or less) answers a null array, as in Redis.
            Some(n) => n.max(0) as usize,
            None => {
                ctx.raw(resp::ERR_NOT_INTEGER);
                return Step::Done;
            }
        },
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        let Some(s) = s else {
            ctx.array(0);
            return;
        };
        if count == 0 {
            ctx.null_array();
            return;
        }
        let entries: Vec<StreamEntry<'_>> = if rev {
            s.stream_range(lo, hi).rev().take(count).collect()
        } else {
            s.stream_range(lo, hi).take(count).collect()
        };
        ctx.array(entries.len());
        for e in &entries {
            write_entry(ctx, e);
        }
    });
    Step::Done
}

/// Parses IDs, all or nothing.
pub(super) fn parse_ids(args: impl Iterator<Item = impl AsRef<[u8]>>) -> Option<Vec<StreamId>> {
    args.map(|a| parse_id(a.as_ref(), 0)).collect()
}

/// `XDEL key id [id ...]`: entries deleted.
pub fn xdel(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(ids) = parse_ids(cmd.args().skip(2)) else {
        // Redis looks the key up before it reads the IDs: a missing key
        // deletes nothing, a wrong type is WRONGTYPE, and only then is a
        // bad ID an error.
        match ctx.coll(arg(cmd, 1), T) {
            Err(Replied) => {}
            Ok(None) => ctx.int(0),
            Ok(Some(_)) => ctx.error(ERR_ID),
        }
        return Step::Done;
    };
    if let Ok(n) = edit(ctx, arg(cmd, 1), T, Growth::default(), |s| {
        if s.is_empty() {
            return 0;
        }
        ids.iter().filter(|&&id| s.stream_remove(id)).count()
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]`: entries deleted.
pub fn xtrim(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let mut i = 2;
    if !is_trim_word(arg(cmd, i)) {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    }
    let rule = match parse_trim(cmd, &mut i) {
        Ok(_) if i != cmd.len() => Err(&b"ERR syntax error"[..]),
        r => r,
    };
    let rule = match rule {
        Ok(r) => r,
        Err(e) => {
            ctx.error(e);
            return Step::Done;
        }
    };
    if let Ok(n) = edit(ctx, arg(cmd, 1), T, Growth::default(), |s| rule.apply(s)) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `XREAD [COUNT n] [BLOCK ms] STREAMS key [key ...] id [id ...]`: entries
/// after each ID (`$`: after the stream's last ID, so none now; `+`: the
/// last entry). With BLOCK and nothing to read it waits (see
/// [`super::blocking`]) for an entry after the IDs, `$` read as the last
/// ID when it started waiting.
pub fn xread(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Ok(read) = ReadArgs::parse(ctx, cmd, 1, false) else {
        return Step::Done;
    };
    let (keys, ids, count) = (read.keys(), read.ids(), read.count);
    // Validate every ID before reading anything.
    if ids
        .iter()
        .any(|&id| id != b"$" && id != b"+" && parse_id(id, 0).is_none())
    {
        ctx.error(ERR_ID);
        return Step::Done;
    }
    // Type-check every key first: a WRONGTYPE is the whole reply.
    for &k in keys {
        if ctx.coll(k, T).is_err() {
            return Step::Done;
        }
    }
    // `$` is where the stream ended when the read began: kept while it
    // waits, so entries added meanwhile are found.
    let starts: Vec<Start> = match ctx.conn.blocked.as_ref().map(|b| b.stream_starts()) {
        Some(kept) if kept.len() == keys.len() => kept.iter().map(|&id| Start::After(id)).collect(),
        _ => keys
            .iter()
            .zip(ids)
            .map(|(&k, &id)| match id {
                b"$" => Start::After(last_id(ctx, k)),
                b"+" => Start::Last,
                id => Start::After(parse_id(id, 0).expect("validated")),
            })
            .collect(),
    };
    let Some(wait) = read.block else {
        if !read_streams(ctx, keys, &starts, count) {
            ctx.null_array();
        }
        return Step::Done;
    };
    let step = super::blocking::wait_for(
        ctx,
        keys,
        wait,
        |ctx| read_streams(ctx, keys, &starts, count),
        |ctx| ctx.null_array(),
    );
    if let (Step::Block, Some(b)) = (&step, ctx.conn.blocked.as_mut()) {
        // `+` on an empty stream waits for its first entry.
        b.keep_stream_starts(
            starts
                .iter()
                .map(|s| match s {
                    Start::After(id) => *id,
                    Start::Last => StreamId { ms: 0, seq: 0 },
                })
                .collect(),
        );
    }
    step
}

/// Where XREAD starts in one stream.
enum Start {
    /// The entries after this ID.
    After(StreamId),
    /// The last entry (`+`).
    Last,
}

/// The last ID of the stream at `key` (0-0 for none).
fn last_id(ctx: &mut Ctx<'_>, key: &[u8]) -> StreamId {
    match ctx.coll(key, T) {
        Ok(Some(item)) => item.read_dict(|s| s.stream_meta().map(|m| m.last_id)),
        _ => None,
    }
    .flatten()
    .unwrap_or(StreamId { ms: 0, seq: 0 })
}

/// Answers XREAD with the entries of every stream that has some after
/// its start; false (nothing written) if none has.
fn read_streams(ctx: &mut Ctx<'_>, keys: &[&[u8]], starts: &[Start], count: usize) -> bool {
    let mut found: Vec<(&[u8], &Start, crate::store::Item)> = Vec::new();
    for (&k, start) in keys.iter().zip(starts) {
        if let Ok(Some(item)) = ctx.coll(k, T) {
            let has = item
                .read_dict(|s| match start {
                    Start::Last => !s.is_empty(),
                    Start::After(after) => s
                        .stream_range(Bound::Excluded(*after), Bound::Unbounded)
                        .next()
                        .is_some(),
                })
                .unwrap_or(false);
            if has {
                found.push((k, start, item));
            }
        }
    }
    if found.is_empty() {
        return false;
    }
    let reply = ReadReply::open(ctx, found.len());
    for (k, start, item) in &found {
        reply.stream(ctx, k);
        item.read_dict(|s| {
            let entries: Vec<StreamEntry<'_>> = match start {
                Start::Last => s.stream_last().into_iter().collect(),
                Start::After(after) => s
                    .stream_range(Bound::Excluded(*after), Bound::Unbounded)
                    .take(count)
                    .collect(),
            };
            ctx.array(entries.len());
            for e in &entries {
                write_entry(ctx, e);
            }
        });
    }
    true
}

/// The options and streams of XREAD and XREADGROUP: `[COUNT n] [BLOCK
/// ms] [NOACK] STREAMS key [key ...] id [id ...]`.
pub(super) struct ReadArgs<'a> {
    /// Most entries per stream (`usize::MAX`: all).
    pub(super) count: usize,
    /// XREADGROUP's NOACK.
    pub(super) noack: bool,
    /// BLOCK's wait (`Some(None)`: `BLOCK 0`, no timeout).
    pub(super) block: Option<Option<std::time::Duration>>,
    /// The keys, then as many IDs.
    streams: Vec<&'a [u8]>,
}

impl<'a> ReadArgs<'a> {
    /// Parses them from argument `from` of `cmd`, an XREADGROUP if `group`
    /// (which alone takes NOACK); the error is written.
    pub(super) fn parse(
        ctx: &mut Ctx<'_>,
        cmd: &Command<'a>,
        from: usize,
        group: bool,
    ) -> Result<ReadArgs<'a>, Replied> {
        let (mut i, mut count, mut noack, mut block) = (from, usize::MAX, false, None);
        let streams_at = loop {
            let Some(w) = cmd.arg(i) else {
                ctx.raw(resp::ERR_SYNTAX);
                return Err(Replied);
            };
            if w.eq_ignore_ascii_case(b"COUNT") {
                match cmd.arg(i + 1).and_then(parse_i64) {
                    Some(n) => count = if n <= 0 { usize::MAX } else { n as usize },
                    None => {
                        ctx.raw(resp::ERR_NOT_INTEGER);
                        return Err(Replied);
                    }
                }
                i += 2;
            } else if w.eq_ignore_ascii_case(b"BLOCK") {
                if ctx.conn.script {
                    // Redis's rule: nothing waits in a script, and BLOCK
                    // there is refused outright.
                    let name = if group { "XREADGROUP" } else { "XREAD" };
                    let text =
                        format!("ERR {name} command is not allowed with BLOCK option from scripts");
                    ctx.error(text.as_bytes());
                    return Err(Replied);
                }
                match cmd.arg(i + 1).and_then(parse_i64) {
                    Some(ms) if ms < 0 => {
                        ctx.error(b"ERR timeout is negative");
                        return Err(Replied);
                    }
                    Some(0) => block = Some(None),
                    Some(ms) => block = Some(Some(std::time::Duration::from_millis(ms as u64))),
                    None => {
                        ctx.error(b"ERR timeout is not an integer or out of range");
                        return Err(Replied);
                    }
                }
                i += 2;
            } else if group && w.eq_ignore_ascii_case(b"NOACK") {
                noack = true;
                i += 1;
            } else if w.eq_ignore_ascii_case(b"STREAMS") {
                break i + 1;
            } else {
                ctx.raw(resp::ERR_SYNTAX);
                return Err(Replied);
            }
        };
        let streams: Vec<&[u8]> = cmd.args().skip(streams_at).collect();
        if streams.is_empty() || streams.len() % 2 != 0 {
            ctx.error(if group {
                b"ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."
            } else {
                b"ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified."
            });
            return Err(Replied);
        }
        Ok(ReadArgs {
            count,
            noack,
            block,
            streams,
        })
    }

    /// The keys.
    pub(super) fn keys(&self) -> &[&'a [u8]] {
        &self.streams[..self.streams.len() / 2]
    }

    /// One ID per key.
    pub(super) fn ids(&self) -> &[&'a [u8]] {
        &self.streams[self.streams.len() / 2..]
    }
}

/// The reply of XREAD and XREADGROUP: RESP3 a map of key to entries,
/// RESP2 an array of `[key, entries]`.
pub(super) struct ReadReply {
    resp2: bool,
}

impl ReadReply {
    /// Opens a reply for `n` streams.
    pub(super) fn open(ctx: &mut Ctx<'_>, n: usize) -> ReadReply {
        let resp2 = ctx.version() == resp::Version::Resp2;
        if resp2 {
            ctx.array(n);
        } else {
            ctx.map(n);
        }
        ReadReply { resp2 }
    }

    /// Starts stream `key`'s part; its entries follow.
    pub(super) fn stream(&self, ctx: &mut Ctx<'_>, key: &[u8]) {
        if self.resp2 {
            ctx.array(2);
        }
        ctx.bytes(key);
    }
}

/// `XSETID key last-id [ENTRIESADDED n] [MAXDELETEDID id]`.
pub fn xsetid(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(last) = parse_id(arg(cmd, 2), 0) else {
        ctx.error(ERR_ID);
        return Step::Done;
    };
    let (mut added, mut max_deleted, mut i) = (None, None, 3);
    while i < cmd.len() {
        let w = arg(cmd, i);
        let v = arg(cmd, i + 1);
        if w.eq_ignore_ascii_case(b"ENTRIESADDED") && i + 1 < cmd.len() {
            match parse_i64(v) {
                Some(n) if n >= 0 => added = Some(n as u64),
                _ => {
                    ctx.error(b"ERR entries_added must be positive");
                    return Step::Done;
                }
            }
        } else if w.eq_ignore_ascii_case(b"MAXDELETEDID") && i + 1 < cmd.len() {
            match parse_id(v, 0) {
                Some(id) => max_deleted = Some(id),
                None => {
                    ctx.error(ERR_ID);
                    return Step::Done;
                }
            }
        } else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
        i += 2;
    }
    if max_deleted.is_some_and(|m| last < m) {
        ctx.error(
            b"ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
        );
        return Step::Done;
    }
    match ctx.coll(arg(cmd, 1), T) {
        Ok(Some(_)) => {}
        Ok(None) => {
            ctx.error(b"ERR no such key");
            return Step::Done;
        }
        Err(_) => return Step::Done,
    }
    let r = edit(ctx, arg(cmd, 1), T, Growth::default(), |s| {
        let meta = s.stream_meta().unwrap_or_default();
        let top = s.stream_last().map_or(StreamId::MIN, |e| e.id);
        if last < top {
            return Err(
                &b"ERR The ID specified in XSETID is smaller than the target stream top item"[..],
            );
        }
        let added = added.unwrap_or(meta.entries_added);
        if added < s.len() as u64 {
            return Err(&b"ERR The entries_added specified in XSETID is smaller than the target stream length"[..]);
        }
        s.set_stream_meta(StreamMeta {
            last_id: last,
            max_deleted: max_deleted.unwrap_or(meta.max_deleted),
            entries_added: added,
        });
        Ok(())
    });
    match r {
        Ok(Ok(())) => ctx.ok(),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `XINFO STREAM key | GROUPS key | HELP`.
pub fn xinfo(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = arg(cmd, 1).to_ascii_uppercase();
    match (&sub[..], cmd.len()) {
        (b"HELP", 2) => ctx.help(&[
            b"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            b"CONSUMERS <key> <groupname>",
            b"    Show the consumers of a consumer group.",
            b"GROUPS <key>",
            b"    Show the stream consumer groups.",
            b"STREAM <key> [FULL [COUNT <count>]",
            b"    Show information about the stream.",
            b"HELP",
            b"    Prints this help.",
        ]),
        (b"STREAM", 2) => subcommand_syntax_error(ctx, arg(cmd, 1)),
        (b"STREAM", _) => {
            // The key is looked up before the options are read, so a
            // missing key or a wrong type is the answer to bad options too.
            let _ = read(ctx, arg(cmd, 2), T, |ctx, s| match s {
                None => ctx.error(b"ERR no such key"),
                Some(s) => match full_count(cmd) {
                    Ok(None) => stream_info(ctx, s),
                    Ok(Some(count)) => stream_full(ctx, s, count),
                    Err(FullArgs::Syntax) => subcommand_syntax_error(ctx, arg(cmd, 1)),
                    Err(FullArgs::NotInteger) => ctx.raw(resp::ERR_NOT_INTEGER),
                },
            });
        }
        (b"GROUPS", 3) => {
            let _ = read(ctx, arg(cmd, 2), T, |ctx, s| match s {
                None => ctx.error(b"ERR no such key"),
                Some(s) => super::stream_groups::info_groups(ctx, s),
            });
        }
        (b"CONSUMERS", 4) => {
            let (key, group, now_ms) = (arg(cmd, 2), arg(cmd, 3), ctx.db.now_ms());
            let _ = read(ctx, key, T, |ctx, s| match s {
                None => ctx.error(b"ERR no such key"),
                Some(s) => super::stream_groups::info_consumers(ctx, s, key, group, now_ms),
            });
        }
        _ => ctx.unknown_subcommand("XINFO", arg(cmd, 1)),
    }
    Step::Done
}

/// Redis's error for a subcommand given the wrong arguments, naming it
/// as it was typed (cut to 128 bytes).
fn subcommand_syntax_error(ctx: &mut Ctx<'_>, sub: &[u8]) {
    let mut e = b"ERR unknown subcommand or wrong number of arguments for '".to_vec();
    e.extend_from_slice(&sub[..sub.len().min(128)]);
    e.extend_from_slice(b"'. Try XINFO HELP.");
    ctx.error(&e);
}

/// Why XINFO STREAM's options were refused.
enum FullArgs {
    /// Not `FULL` or `FULL COUNT n`.
    Syntax,
    /// COUNT's value is not an integer.
    NotInteger,
}

/// The options after `XINFO STREAM key`: None for none, else FULL's
/// COUNT (0: no limit; 10 when absent or negative, so that a large
/// stream is not sent whole by accident).
fn full_count(cmd: &Command<'_>) -> Result<Option<usize>, FullArgs> {
    let opts: Vec<&[u8]> = cmd.args().skip(3).collect();
    match opts[..] {
        [] => Ok(None),
        [full] if full.eq_ignore_ascii_case(b"FULL") => Ok(Some(10)),
        [full, word, n] if full.eq_ignore_ascii_case(b"FULL") => {
            if !word.eq_ignore_ascii_case(b"COUNT") {
                return Err(FullArgs::Syntax);
            }
            match parse_i64(n) {
                Some(n) if n < 0 => Ok(Some(10)),
                Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
                None => Err(FullArgs::NotInteger),
            }
        }
        _ => Err(FullArgs::Syntax),
    }
}

/// `XINFO STREAM key FULL [COUNT n]`: the stream's bookkeeping, its first
/// `count` entries, and every group with its first `count` pending
/// entries and its consumers, each with its first `count` (0: all).
/// Field names as bulk strings, as Redis sends them. Redis's radix tree
/// counts are left out, as plain XINFO STREAM leaves them: granola has no
/// radix tree whose keys and nodes they could count.
fn stream_full(ctx: &mut Ctx<'_>, s: &Dict, count: usize) {
    let limit = if count == 0 { usize::MAX } else { count };
    let meta = s.stream_meta().unwrap_or_default();
    let first_id = s.stream_first().map_or(StreamId::MIN, |e| e.id);
    ctx.map(7);
    ctx.bytes(b"length");
    ctx.int(s.len() as i64);
    ctx.bytes(b"last-generated-id");
    write_id(ctx, meta.last_id);
    ctx.bytes(b"max-deleted-entry-id");
    write_id(ctx, meta.max_deleted);
    ctx.bytes(b"entries-added");
    ctx.int(meta.entries_added as i64);
    ctx.bytes(b"recorded-first-entry-id");
    write_id(ctx, first_id);
    ctx.bytes(b"entries");
    let entries: Vec<StreamEntry<'_>> = s
        .stream_range(Bound::Unbounded, Bound::Unbounded)
        .take(limit)
        .collect();
    ctx.array(entries.len());
    for e in &entries {
        write_entry(ctx, e);
    }
    ctx.bytes(b"groups");
    let groups = super::stream_groups::groups_of(s);
    ctx.array(groups.len());
    for (name, g) in groups {
        ctx.map(7);
        ctx.bytes(b"name");
        ctx.bytes(name);
        super::stream_groups::write_position(ctx, s, g);
        ctx.bytes(b"pel-count");
        ctx.int(g.pending().len() as i64);
        ctx.bytes(b"pending");
        ctx.array(g.pending().len().min(limit));
        for (&id, p) in g.pending().iter().take(limit) {
            ctx.array(4);
            write_id(ctx, id);
            ctx.bytes(&p.consumer);
            ctx.int(p.delivered_ms as i64);
            ctx.int(p.deliveries as i64);
        }
        ctx.bytes(b"consumers");
        let consumers: Vec<_> = g.consumers().collect();
        ctx.array(consumers.len());
        for (cname, c) in consumers {
            // Redis 7.2's fields (7.0 lacks active-time), as XINFO
            // CONSUMERS shows 7.2's `inactive`.
            ctx.map(5);
            ctx.bytes(b"name");
            ctx.bytes(cname);
            ctx.bytes(b"seen-time");
            ctx.int(c.seen_ms as i64);
            ctx.bytes(b"active-time");
            ctx.int(c.active_ms.map_or(-1, |ms| ms as i64));
            ctx.bytes(b"pel-count");
            ctx.int(c.pending.len() as i64);
            ctx.bytes(b"pending");
            let ids: Vec<StreamId> = c.pending.iter().take(limit).copied().collect();
            ctx.array(ids.len());
            for id in ids {
                // A consumer's entry is always in its group's PEL; should
                // the books disagree, the entry is shown as never delivered.
                let (at, n) = g
                    .pending()
                    .get(&id)
                    .map_or((0, 0), |p| (p.delivered_ms, p.deliveries));
                ctx.array(3);
                write_id(ctx, id);
                ctx.int(at as i64);
                ctx.int(n as i64);
            }
        }
    }
}

fn stream_info(ctx: &mut Ctx<'_>, s: &Dict) {
    let meta = s.stream_meta().unwrap_or_default();
    let first_id = s.stream_first().map_or(StreamId::MIN, |e| e.id);
    // Redis' fields by name, except its radix tree's node counts: granola
    // has no radix tree to count.
    ctx.map(8);
    ctx.bytes(b"length");
    ctx.int(s.len() as i64);
    ctx.bytes(b"last-generated-id");
    ctx.bytes(meta.last_id.to_string().as_bytes());
    ctx.bytes(b"max-deleted-entry-id");
    ctx.bytes(meta.max_deleted.to_string().as_bytes());
    ctx.bytes(b"entries-added");
    ctx.int(meta.entries_added as i64);
    ctx.bytes(b"recorded-first-entry-id");
    ctx.bytes(first_id.to_string().as_bytes());
    ctx.bytes(b"groups");
    ctx.int(s.stream_groups().map_or(0, |g| g.len()) as i64);
    ctx.bytes(b"first-entry");
    match s.stream_first() {
        Some(e) => write_entry(ctx, &e),
        None => ctx.null(),
    }
    ctx.bytes(b"last-entry");
    match s.stream_last() {
        Some(e) => write_entry(ctx, &e),
        None => ctx.null(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    #[test]
    fn ids_parse_like_redis() {
        assert_eq!(parse_id(b"5-3", 0), Some(id(5, 3)));
        assert_eq!(parse_id(b"5", 9), Some(id(5, 9)));
        for bad in [
            &b""[..],
            b"-",
            b"5-",
            b"-3",
            b"a-1",
            b"1-2-3",
            b"+5",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_id(bad, 0), None, "{bad:?}");
        }
        assert_eq!(range_bound(b"-", true), Some(Bound::Unbounded));
        assert_eq!(
            range_bound(b"+", false),
            Some(Bound::Included(StreamId::MAX))
        );
        assert_eq!(
            range_bound(b"7", false),
            Some(Bound::Included(id(7, u64::MAX)))
        );
        assert_eq!(range_bound(b"(7-1", true), Some(Bound::Excluded(id(7, 1))));
    }

    #[test]
    fn xadd_ids_only_grow() {
        let last = id(100, 5);
        assert_eq!(next_id(NewId::Auto, last, 200), Ok(id(200, 0)));
        // A clock behind the last ID (a stepped-back clock): still above it.
        assert_eq!(next_id(NewId::Auto, last, 50), Ok(id(100, 6)));
        assert_eq!(next_id(NewId::AutoSeq(100), last, 0), Ok(id(100, 6)));
        assert_eq!(next_id(NewId::AutoSeq(101), last, 0), Ok(id(101, 0)));
        assert_eq!(next_id(NewId::AutoSeq(99), last, 0), Err(ERR_SMALLER));
        assert_eq!(next_id(NewId::Exact(id(100, 5)), last, 0), Err(ERR_SMALLER));
        assert_eq!(
            next_id(NewId::Exact(id(0, 0)), StreamId::MIN, 0),
            Err(ERR_ZERO)
        );
        assert_eq!(next_id(NewId::AutoSeq(0), StreamId::MIN, 0), Ok(id(0, 1)));
        assert_eq!(next_id(NewId::Auto, StreamId::MAX, 0), Err(ERR_EXHAUSTED));
    }
}
