//! Stream consumer groups: XGROUP (CREATE with MKSTREAM and ENTRIESREAD,
//! SETID, DESTROY, CREATECONSUMER, DELCONSUMER), XREADGROUP (new entries
//! with `>`, a consumer's history with an ID, NOACK, COUNT), XACK,
//! XPENDING (summary and extended, IDLE), XCLAIM (IDLE, TIME,
//! RETRYCOUNT, FORCE, JUSTID, LASTID), XAUTOCLAIM, and the XINFO GROUPS
//! and CONSUMERS replies. The groups live in the stream's body
//! (`store/stream_groups.rs`). `XREADGROUP BLOCK` waits for new entries
//! (`>`) as the blocking list commands do (`blocking.rs`).

use super::collections::{edit, read};
use super::streams::{
    arg, parse_id, parse_ids, range_bound, write_entry_parts, write_id, ReadArgs, ReadReply,
    ERR_ID, T,
};
use super::{parse_i64, Ctx, Replied};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, GroupEdit, Growth, StreamEntry, StreamId};
use granola::Buf;
use std::ops::Bound;

/// Most entries a group command reserves room for up front; more are
/// charged after the write (the store then evicts to its limit again).
const RESERVE_ENTRIES: usize = 1024;

fn nogroup(key: &[u8], group: &[u8]) -> Vec<u8> {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
    .into_bytes()
}

/// The missing-group error of XGROUP's subcommands and XINFO CONSUMERS,
/// which Redis words differently.
fn no_group_for_key(key: &[u8], group: &[u8]) -> Vec<u8> {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    )
    .into_bytes()
}

const ERR_NO_KEY: &[u8] = b"ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";

/// An entry's fields taken out of the stream for a reply written after
/// the stream's lock is released: a large entry's slot by reference, a
/// small one copied.
enum Fields {
    Shared(Buf),
    Copied(Vec<u8>),
}

/// An entry for a reply: its ID and fields, or none if it was deleted.
struct Taken {
    id: StreamId,
    fields: Option<Fields>,
}

fn take(e: &StreamEntry<'_>) -> Taken {
    Taken {
        id: e.id,
        fields: Some(match e.fields.buf() {
            Some(b) => Fields::Shared(b.clone()),
            None => Fields::Copied(e.fields.bytes().to_vec()),
        }),
    }
}

fn take_id(d: &Dict, id: StreamId) -> Taken {
    match d.stream_get(id) {
        Some(e) => take(&e),
        None => Taken { id, fields: None },
    }
}

fn write_taken(ctx: &mut Ctx<'_>, t: &Taken) {
    match &t.fields {
        Some(Fields::Shared(b)) => write_entry_parts(ctx, t.id, b, Some(b)),
        Some(Fields::Copied(v)) => write_entry_parts(ctx, t.id, v, None),
        None => {
            ctx.array(2);
            write_id(ctx, t.id);
            ctx.null_array();
        }
    }
}

/// `$` (the stream's last ID) or an ID.
fn group_start(d: &Dict, b: &[u8]) -> Option<StreamId> {
    if b == b"$" {
        return Some(d.stream_meta().unwrap_or_default().last_id);
    }
    parse_id(b, 0)
}

/// `ENTRIESREAD n` at `cmd[i..]`, if there.
fn entries_read_opt(cmd: &Command<'_>, mut i: usize) -> Result<(Option<u64>, bool), &'static [u8]> {
    let (mut n, mut mkstream) = (None, false);
    while i < cmd.len() {
        let w = arg(cmd, i);
        if w.eq_ignore_ascii_case(b"MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if w.eq_ignore_ascii_case(b"ENTRIESREAD") && i + 1 < cmd.len() {
            match parse_i64(arg(cmd, i + 1)) {
                Some(v) if v >= 0 => n = Some(v as u64),
                // -1: unknown, as a group starts without the option.
                Some(-1) => n = None,
                Some(_) => return Err(b"ERR value for ENTRIESREAD must be positive or -1"),
                None => return Err(b"ERR value is not an integer or out of range"),
            }
            i += 2;
        } else {
            return Err(b"ERR syntax error");
        }
    }
    Ok((n, mkstream))
}

/// `XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP ...`.
pub fn xgroup(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = arg(cmd, 1).to_ascii_uppercase();
    let (key, group) = (arg(cmd, 2), arg(cmd, 3));
    let argc = cmd.len();
    match (&sub[..], argc) {
        (b"HELP", 2) => {
            ctx.help(&[
                b"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                b"CREATE <key> <groupname> <id|$> [option]",
                b"    Create a new consumer group. Options: MKSTREAM, ENTRIESREAD <n>.",
                b"CREATECONSUMER <key> <groupname> <consumer>",
                b"DELCONSUMER <key> <groupname> <consumername>",
                b"DESTROY <key> <groupname>",
                b"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
                b"HELP",
            ]);
            return Step::Done;
        }
        (b"CREATE", n) if n >= 5 => {}
        (b"SETID", n) if n >= 5 => {}
        (b"DESTROY", 4) | (b"CREATECONSUMER", 5) | (b"DELCONSUMER", 5) => {}
        _ => {
            ctx.unknown_subcommand("XGROUP", arg(cmd, 1));
            return Step::Done;
        }
    }
    let opts = if matches!(&sub[..], b"CREATE" | b"SETID") {
        match entries_read_opt(cmd, 5) {
            Ok(o) if sub == b"SETID" && o.1 => {
                ctx.raw(resp::ERR_SYNTAX);
                return Step::Done;
            }
            Ok(o) => o,
            Err(e) => {
                ctx.error(e);
                return Step::Done;
            }
        }
    } else {
        (None, false)
    };
    match ctx.coll(key, T) {
        Err(Replied) => return Step::Done,
        Ok(None) if !(sub == b"CREATE" && opts.1) => {
            ctx.error(ERR_NO_KEY);
            return Step::Done;
        }
        Ok(_) => {}
    }
    let growth = Growth {
        entries: 1,
        bytes: group.len() + arg(cmd, 4).len() + 256,
    };
    let now_ms = ctx.db.now_ms();
    let r = edit(ctx, key, T, growth, |s| -> Result<i64, Vec<u8>> {
        let exists = s.stream_groups().is_some_and(|g| g.get(group).is_some());
        match &sub[..] {
            b"CREATE" => {
                // The ID is read first, as Redis reads it.
                let start = group_start(s, arg(cmd, 4)).ok_or(ERR_ID.to_vec())?;
                if exists {
                    return Err(b"BUSYGROUP Consumer Group name already exists".to_vec());
                }
                // Without ENTRIESREAD the count is unknown (Redis 7.0):
                // the lag is then worked out from the stream when it can be.
                s.edit_stream_groups(|g| g.create(group, start, opts.0));
                Ok(-1)
            }
            // Destroying a group that is not there answers 0, the others
            // need the group.
            b"DESTROY" if !exists => Ok(0),
            _ if !exists => Err(no_group_for_key(key, group)),
            b"SETID" => {
                // SETID (not CREATE) also takes `-` and `+`, as Redis does.
                let start = match arg(cmd, 4) {
                    b"-" => Some(StreamId::MIN),
                    b"+" => Some(StreamId::MAX),
                    id => group_start(s, id),
                }
                .ok_or(ERR_ID.to_vec())?;
                s.edit_stream_groups(|g| g.edit(group, |e| e.set_last(start, opts.0)));
                Ok(-1)
            }
            b"DESTROY" => Ok(i64::from(
                s.edit_stream_groups(|g| g.destroy(group)).unwrap_or(false),
            )),
            b"CREATECONSUMER" => Ok(s
                .edit_stream_groups(|g| g.edit(group, |e| e.touch_consumer(arg(cmd, 4), now_ms)))
                .flatten()
                .map_or(0, i64::from)),
            _ => Ok(s
                .edit_stream_groups(|g| g.edit(group, |e| e.delete_consumer(arg(cmd, 4))))
                .flatten()
                .flatten()
                .map_or(0, |n| n as i64)),
        }
    });
    match r {
        Ok(Ok(-1)) => ctx.ok(),
        Ok(Ok(n)) => ctx.int(n),
        Ok(Err(e)) => ctx.error(&e),
        Err(Replied) => {}
    }
    Step::Done
}

/// `XREADGROUP GROUP group consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS
/// key [key ...] id [id ...]`: `>` delivers entries no consumer of the
/// group has seen (and holds them pending, unless NOACK); an ID replays
/// the consumer's own pending entries after it (deleted ones as nil).
pub fn xreadgroup(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if !arg(cmd, 1).eq_ignore_ascii_case(b"GROUP") || cmd.len() < 7 {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    }
    let (group, consumer) = (arg(cmd, 2), arg(cmd, 3));
    let Ok(read) = ReadArgs::parse(ctx, cmd, 4, true) else {
        return Step::Done;
    };
    let (keys, ids, count, noack) = (read.keys(), read.ids(), read.count, read.noack);
    let mut starts = Vec::with_capacity(ids.len());
    for &id in ids {
        match id {
            b">" => starts.push(None),
            id => match parse_id(id, 0) {
                Some(s) => starts.push(Some(s)),
                None => {
                    ctx.error(ERR_ID);
                    return Step::Done;
                }
            },
        }
    }
    // With BLOCK, only new entries (`>`) are waited for: reading a
    // consumer's history answers at once, as in Redis.
    match read.block {
        Some(wait) if starts.iter().all(Option::is_none) => super::blocking::wait_for(
            ctx,
            keys,
            wait,
            |ctx| read_group(ctx, keys, group, consumer, &starts, count, noack),
            |ctx| ctx.null_array(),
        ),
        _ => {
            if !read_group(ctx, keys, group, consumer, &starts, count, noack) {
                ctx.null_array();
            }
            Step::Done
        }
    }
}

/// Answers XREADGROUP for `starts` (`None`: `>`); true once it wrote a
/// reply (entries, or an error), false (nothing written) when there is
/// nothing new to deliver.
fn read_group(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    group: &[u8],
    consumer: &[u8],
    starts: &[Option<StreamId>],
    count: usize,
    noack: bool,
) -> bool {
    // Every key and group must exist before anything is delivered.
    for &k in keys {
        match ctx.coll(k, T) {
            Err(Replied) => return true,
            Ok(Some(item)) if item.read_dict(|d| has_group(d, group)) == Some(true) => {}
            Ok(_) => {
                let mut e = nogroup(k, group);
                e.extend_from_slice(b" in XREADGROUP with GROUP option");
                ctx.error(&e);
                return true;
            }
        }
    }
    let now_ms = ctx.db.now_ms();
    let growth = Growth {
        entries: count.min(RESERVE_ENTRIES),
        bytes: consumer.len(),
    };
    let mut out: Vec<(&[u8], bool, Vec<Taken>)> = Vec::new();
    for (&k, start) in keys.iter().zip(starts) {
        let r = edit(ctx, k, T, growth, |s| {
            let mut taken = Vec::new();
            match start {
                None => {
                    let (last, mut read) = s
                        .stream_groups()
                        .and_then(|g| g.get(group))
                        .map(|g| (g.last_delivered, g.entries_read))?;
                    let ids: Vec<StreamId> = s
                        .stream_range(Bound::Excluded(last), Bound::Unbounded)
                        .take(count)
                        .map(|e| {
                            taken.push(take(&e));
                            e.id
                        })
                        .collect();
                    // The count read moves entry by entry, as in Redis:
                    // once a deletion may lie ahead it is re-derived (or
                    // becomes unknown) rather than counted on.
                    for &id in &ids {
                        read = s.stream_read_after(read, id);
                    }
                    if ids.is_empty() {
                        // Nothing new: Redis neither creates nor touches
                        // the consumer.
                        return Some(taken);
                    }
                    s.edit_stream_groups(|g| {
                        g.edit(group, |e| {
                            e.touch_consumer(consumer, now_ms);
                            if let Some(&top) = ids.last() {
                                e.activate(consumer, now_ms);
                                e.set_last(top, read);
                            }
                            for &id in &ids {
                                if !noack {
                                    e.deliver(id, consumer, now_ms);
                                }
                            }
                        })
                    });
                }
                Some(after) => {
                    let ids: Vec<StreamId> = s
                        .stream_groups()
                        .and_then(|g| g.get(group))
                        .and_then(|g| g.consumer(consumer))
                        .map(|c| {
                            c.pending
                                .range((Bound::Excluded(*after), Bound::Unbounded))
                                .take(count)
                                .copied()
                                .collect()
                        })
                        .unwrap_or_default();
                    taken.extend(ids.iter().map(|&id| take_id(s, id)));
                    // An entry served again counts one more delivery; one
                    // deleted since (its fields nil) does not.
                    s.edit_stream_groups(|g| {
                        g.edit(group, |e| {
                            e.touch_consumer(consumer, now_ms);
                            for t in taken.iter().filter(|t| t.fields.is_some()) {
                                e.redeliver(t.id, now_ms);
                            }
                        })
                    });
                }
            }
            Some(taken)
        });
        match r {
            Ok(Some(taken)) => out.push((k, start.is_some(), taken)),
            Ok(None) => {
                // The group went away between the check and the read.
                ctx.error(&nogroup(k, group));
                return true;
            }
            Err(Replied) => return true,
        }
    }
    out.retain(|(_, history, taken)| *history || !taken.is_empty());
    if out.is_empty() {
        return false;
    }
    let reply = ReadReply::open(ctx, out.len());
    for (k, _, taken) in &out {
        reply.stream(ctx, k);
        ctx.array(taken.len());
        for t in taken {
            write_taken(ctx, t);
        }
    }
    true
}

fn has_group(d: &Dict, group: &[u8]) -> bool {
    d.stream_groups().is_some_and(|g| g.get(group).is_some())
}

/// `XACK key group id [id ...]`: entries acknowledged.
pub fn xack(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let group = arg(cmd, 2);
    // No key or no group: nothing to acknowledge, before the IDs are read
    // (as Redis answers).
    match ctx.coll(arg(cmd, 1), T) {
        Err(Replied) => return Step::Done,
        Ok(Some(item)) if item.read_dict(|d| has_group(d, group)) == Some(true) => {}
        Ok(_) => {
            ctx.int(0);
            return Step::Done;
        }
    }
    let Some(ids) = parse_ids(cmd.args().skip(3)) else {
        ctx.error(ERR_ID);
        return Step::Done;
    };
    if let Ok(n) = edit(ctx, arg(cmd, 1), T, Growth::default(), |s| {
        if !has_group(s, group) {
            return 0;
        }
        s.edit_stream_groups(|g| {
            g.edit(group, |e| {
                ids.iter().filter(|&&id| e.release(id).is_some()).count()
            })
        })
        .flatten()
        .unwrap_or(0)
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `XPENDING key group [[IDLE min-idle-time] start end count [consumer]]`.
pub fn xpending(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (key, group) = (arg(cmd, 1), arg(cmd, 2));
    let mut i = 3;
    let mut min_idle = 0u64;
    if cmd.len() > 3 && arg(cmd, 3).eq_ignore_ascii_case(b"IDLE") {
        match parse_i64(arg(cmd, 4)) {
            Some(n) => min_idle = n.max(0) as u64,
            None => {
                ctx.raw(resp::ERR_NOT_INTEGER);
                return Step::Done;
            }
        }
        i = 5;
    }
    let extended = cmd.len() > i;
    if (extended && !(cmd.len() == i + 3 || cmd.len() == i + 4)) || (!extended && i == 5) {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    }
    let range = if extended {
        let (Some(lo), Some(hi)) = (
            range_bound(arg(cmd, i), true),
            range_bound(arg(cmd, i + 1), false),
        ) else {
            ctx.error(ERR_ID);
            return Step::Done;
        };
        let Some(count) = parse_i64(arg(cmd, i + 2)) else {
            ctx.raw(resp::ERR_NOT_INTEGER);
            return Step::Done;
        };
        Some((lo, hi, count.max(0) as usize, cmd.arg(i + 3)))
    } else {
        None
    };
    let now_ms = ctx.db.now_ms();
    let _ = read(ctx, key, T, |ctx, s| {
        let Some(g) = s.and_then(|s| s.stream_groups()).and_then(|g| g.get(group)) else {
            ctx.error(&nogroup(key, group));
            return;
        };
        let pel = g.pending();
        match range {
            None => {
                ctx.array(4);
                ctx.int(pel.len() as i64);
                match (pel.keys().next(), pel.keys().next_back()) {
                    (Some(&lo), Some(&hi)) => {
                        write_id(ctx, lo);
                        write_id(ctx, hi);
                        let owners: Vec<(&[u8], usize)> = g
                            .consumers()
                            .filter(|(_, c)| !c.pending.is_empty())
                            .map(|(n, c)| (n, c.pending.len()))
                            .collect();
                        ctx.array(owners.len());
                        for (n, k) in owners {
                            ctx.array(2);
                            ctx.bytes(n);
                            ctx.bytes(k.to_string().as_bytes());
                        }
                    }
                    _ => {
                        ctx.null();
                        ctx.null();
                        ctx.null_array();
                    }
                }
            }
            Some((lo, hi, count, who)) => {
                let empty = matches!((lo, hi), (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) if a > b || (a == b && (matches!(lo, Bound::Excluded(_)) || matches!(hi, Bound::Excluded(_)))));
                let rows: Vec<(StreamId, &crate::store::Pending)> = if empty {
                    Vec::new()
                } else {
                    pel.range((lo, hi))
                        .filter(|(_, p)| who.is_none_or(|w| *p.consumer == *w))
                        .filter(|(_, p)| now_ms.saturating_sub(p.delivered_ms) >= min_idle)
                        .take(count)
                        .map(|(&id, p)| (id, p))
                        .collect()
                };
                ctx.array(rows.len());
                for (id, p) in rows {
                    ctx.array(4);
                    write_id(ctx, id);
                    ctx.bytes(&p.consumer);
                    ctx.int(now_ms.saturating_sub(p.delivered_ms) as i64);
                    ctx.int(p.deliveries as i64);
                }
            }
        }
    });
    Step::Done
}

/// How XCLAIM sets a claimed entry's delivery.
#[derive(Clone, Copy, Default)]
struct ClaimOpts {
    idle: Option<u64>,
    time: Option<u64>,
    retry: Option<u64>,
    force: bool,
    just_id: bool,
    last_id: Option<StreamId>,
}

/// Claims `id` for `consumer` if it has been idle at least `min_idle`:
/// what to reply (None: not claimed). An entry gone from the stream
/// leaves the PEL.
fn claim(
    s: &mut Dict,
    group: &[u8],
    consumer: &[u8],
    id: StreamId,
    min_idle: u64,
    o: ClaimOpts,
    now_ms: u64,
) -> Option<Taken> {
    let pending = s
        .stream_groups()?
        .get(group)?
        .pending()
        .get(&id)
        .map(|p| (p.delivered_ms, p.deliveries));
    let exists = s.stream_get(id).is_some();
    let taken = (!o.just_id && exists).then(|| take_id(s, id));
    s.edit_stream_groups(|g| {
        g.edit(group, |e: &mut GroupEdit<'_>| {
            let deliveries = match (pending, exists) {
                (Some(_), false) => {
                    e.release(id);
                    return None;
                }
                (Some((at, n)), true) => {
                    if now_ms.saturating_sub(at) < min_idle {
                        return None;
                    }
                    n
                }
                // A PEL entry FORCE makes counts as delivered once
                // already (as Redis makes it), then this claim.
                (None, true) if o.force => 1,
                (None, _) => return None,
            };
            let at = match (o.idle, o.time) {
                (Some(idle), _) => now_ms.saturating_sub(idle),
                (None, Some(t)) => t,
                (None, None) => now_ms,
            };
            let count = o.retry.unwrap_or(deliveries + u64::from(!o.just_id));
            // The consumer is made (or seen) only by a claim, as in Redis:
            // a claim of nothing leaves no consumer behind.
            e.touch_consumer(consumer, now_ms);
            e.transfer(id, consumer, at, count);
            e.activate(consumer, now_ms);
            Some(())
        })
    })
    .flatten()
    .flatten()?;
    Some(taken.unwrap_or(Taken { id, fields: None }))
}

fn write_claimed(ctx: &mut Ctx<'_>, claimed: &[Taken], just_id: bool) {
    ctx.array(claimed.len());
    for t in claimed {
        if just_id {
            write_id(ctx, t.id);
        } else {
            write_taken(ctx, t);
        }
    }
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME
/// ms] [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id]`.
pub fn xclaim(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (key, group, consumer) = (arg(cmd, 1), arg(cmd, 2), arg(cmd, 3));
    let Some(min_idle) = parse_i64(arg(cmd, 4)) else {
        ctx.error(b"ERR Invalid min-idle-time argument for XCLAIM");
        return Step::Done;
    };
    let mut ids = Vec::new();
    let mut i = 5;
    while i < cmd.len() {
        match parse_id(arg(cmd, i), 0) {
            Some(id) => ids.push(id),
            None => break,
        }
        i += 1;
    }
    let mut o = ClaimOpts::default();
    while i < cmd.len() {
        let w = arg(cmd, i).to_ascii_uppercase();
        let num = || {
            parse_i64(arg(cmd, i + 1))
                .filter(|n| *n >= 0)
                .map(|n| n as u64)
        };
        match &w[..] {
            b"FORCE" => o.force = true,
            b"JUSTID" => o.just_id = true,
            b"IDLE" | b"TIME" | b"RETRYCOUNT" if i + 1 < cmd.len() => {
                let Some(n) = num() else {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return Step::Done;
                };
                match &w[..] {
                    b"IDLE" => o.idle = Some(n),
                    b"TIME" => o.time = Some(n),
                    _ => o.retry = Some(n),
                }
                i += 1;
            }
            b"LASTID" if i + 1 < cmd.len() => {
                let Some(id) = parse_id(arg(cmd, i + 1), 0) else {
                    ctx.error(ERR_ID);
                    return Step::Done;
                };
                o.last_id = Some(id);
                i += 1;
            }
            _ => {
                ctx.error(
                    format!(
                        "ERR Unrecognized XCLAIM option '{}'",
                        String::from_utf8_lossy(arg(cmd, i))
                    )
                    .as_bytes(),
                );
                return Step::Done;
            }
        }
        i += 1;
    }
    if ids.is_empty() {
        ctx.error(ERR_ID);
        return Step::Done;
    }
    if !group_exists(ctx, key, group) {
        return Step::Done;
    }
    let now_ms = ctx.db.now_ms();
    let growth = Growth {
        entries: ids.len().min(RESERVE_ENTRIES),
        bytes: consumer.len(),
    };
    let r = edit(ctx, key, T, growth, |s| {
        s.edit_stream_groups(|g| {
            g.edit(group, |e| {
                if let Some(last) = o.last_id.filter(|&l| l > e.group().last_delivered) {
                    let read = e.group().entries_read;
                    e.set_last(last, read);
                }
            })
        });
        ids.iter()
            .filter_map(|&id| claim(s, group, consumer, id, min_idle.max(0) as u64, o, now_ms))
            .collect::<Vec<_>>()
    });
    if let Ok(claimed) = r {
        write_claimed(ctx, &claimed, o.just_id);
    }
    Step::Done
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT n] [JUSTID]`:
/// `[next start, claimed, deleted IDs]`.
pub fn xautoclaim(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (key, group, consumer) = (arg(cmd, 1), arg(cmd, 2), arg(cmd, 3));
    let Some(min_idle) = parse_i64(arg(cmd, 4)) else {
        ctx.error(b"ERR Invalid min-idle-time argument for XAUTOCLAIM");
        return Step::Done;
    };
    // The first pending ID to look at (`-`: the lowest; `(id`: after id).
    let start = match range_bound(arg(cmd, 5), true) {
        Some(Bound::Unbounded) => StreamId::MIN,
        Some(Bound::Included(id)) => id,
        Some(Bound::Excluded(id)) => id.next().unwrap_or(StreamId::MAX),
        None => {
            ctx.error(ERR_ID);
            return Step::Done;
        }
    };
    let (mut count, mut just_id, mut i) = (100usize, false, 6);
    while i < cmd.len() {
        let w = arg(cmd, i);
        if w.eq_ignore_ascii_case(b"JUSTID") {
            just_id = true;
            i += 1;
        } else if w.eq_ignore_ascii_case(b"COUNT") && i + 1 < cmd.len() {
            match parse_i64(arg(cmd, i + 1)) {
                Some(n) if (1..=(i64::MAX / 10)).contains(&n) => count = n as usize,
                _ => {
                    ctx.error(b"ERR COUNT must be > 0");
                    return Step::Done;
                }
            }
            i += 2;
        } else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    }
    if !group_exists(ctx, key, group) {
        return Step::Done;
    }
    let now_ms = ctx.db.now_ms();
    let o = ClaimOpts {
        just_id,
        ..ClaimOpts::default()
    };
    let growth = Growth {
        entries: count.min(RESERVE_ENTRIES),
        bytes: consumer.len(),
    };
    let r = edit(ctx, key, T, growth, |s| {
        // Look at up to ten times COUNT pending entries, as Redis does;
        // a deleted entry, dropped from the PEL, counts against COUNT as
        // a claimed one does. The cursor is the entry after the last one
        // looked at.
        let attempts = count.saturating_mul(10);
        let ids: Vec<StreamId> = s
            .stream_groups()
            .and_then(|g| g.get(group))
            .map(|g| {
                g.pending()
                    .range(start..)
                    .take(attempts.saturating_add(1))
                    .map(|(&id, _)| id)
                    .collect()
            })
            .unwrap_or_default();
        let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
        let (mut looked, mut left) = (0, count);
        while looked < attempts && left > 0 && looked < ids.len() {
            let id = ids[looked];
            looked += 1;
            if s.stream_get(id).is_none() {
                s.edit_stream_groups(|g| g.edit(group, |e| e.release(id)));
                deleted.push(id);
                left -= 1;
            } else if let Some(t) = claim(s, group, consumer, id, min_idle.max(0) as u64, o, now_ms)
            {
                claimed.push(t);
                left -= 1;
            }
        }
        let next = ids.get(looked).copied().unwrap_or(StreamId::MIN);
        (next, claimed, deleted)
    });
    if let Ok((next, claimed, deleted)) = r {
        ctx.array(3);
        write_id(ctx, next);
        write_claimed(ctx, &claimed, just_id);
        ctx.array(deleted.len());
        for id in deleted {
            write_id(ctx, id);
        }
    }
    Step::Done
}

/// True if `key` is a stream with group `group`; else the error is written.
fn group_exists(ctx: &mut Ctx<'_>, key: &[u8], group: &[u8]) -> bool {
    match ctx.coll(key, T) {
        Err(Replied) => false,
        Ok(Some(item)) if item.read_dict(|d| has_group(d, group)) == Some(true) => true,
        Ok(_) => {
            ctx.error(&nogroup(key, group));
            false
        }
    }
}

/// Stream `s`'s groups by name, in name order.
pub(super) fn groups_of(s: &Dict) -> Vec<(&[u8], &crate::store::Group)> {
    s.stream_groups()
        .map(|g| g.iter().collect())
        .unwrap_or_default()
}

/// The XINFO GROUPS reply for stream `s`.
pub(super) fn info_groups(ctx: &mut Ctx<'_>, s: &Dict) {
    let groups = groups_of(s);
    ctx.array(groups.len());
    for (name, g) in groups {
        ctx.map(6);
        ctx.bytes(b"name");
        ctx.bytes(name);
        ctx.bytes(b"consumers");
        ctx.int(g.consumers().count() as i64);
        ctx.bytes(b"pending");
        ctx.int(g.pending().len() as i64);
        write_position(ctx, s, g);
    }
}

/// A group's `last-delivered-id`, `entries-read` and `lag` fields (XINFO
/// GROUPS and XINFO STREAM FULL); nil where Redis cannot tell.
pub(super) fn write_position(ctx: &mut Ctx<'_>, s: &Dict, g: &crate::store::Group) {
    ctx.bytes(b"last-delivered-id");
    write_id(ctx, g.last_delivered);
    ctx.bytes(b"entries-read");
    match g.entries_read {
        Some(n) => ctx.int(n as i64),
        None => ctx.null(),
    }
    ctx.bytes(b"lag");
    match s.stream_lag(g.last_delivered, g.entries_read) {
        Some(n) => ctx.int(n),
        None => ctx.null(),
    }
}

/// The XINFO CONSUMERS reply for group `group` of stream `s` (at `key`).
pub(super) fn info_consumers(ctx: &mut Ctx<'_>, s: &Dict, key: &[u8], group: &[u8], now_ms: u64) {
    let Some(g) = s.stream_groups().and_then(|g| g.get(group)) else {
        ctx.error(&no_group_for_key(key, group));
        return;
    };
    let consumers: Vec<_> = g.consumers().collect();
    ctx.array(consumers.len());
    for (name, c) in consumers {
        ctx.map(4);
        ctx.bytes(b"name");
        ctx.bytes(name);
        ctx.bytes(b"pending");
        ctx.int(c.pending.len() as i64);
        ctx.bytes(b"idle");
        ctx.int(now_ms.saturating_sub(c.seen_ms) as i64);
        ctx.bytes(b"inactive");
        ctx.int(c.active_ms.map_or(-1, |a| now_ms.saturating_sub(a) as i64));
    }
}
