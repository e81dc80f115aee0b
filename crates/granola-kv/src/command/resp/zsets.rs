//! Sorted-set commands: ZADD (NX XX GT LT CH INCR), ZINCRBY, ZSCORE,
//! ZMSCORE, ZCARD, ZREM, ZCOUNT, ZRANK, ZREVRANK, ZREMRANGEBYSCORE,
//! ZREMRANGEBYRANK, ZPOPMIN, ZPOPMAX, ZRANDMEMBER, ZSCAN (the ranges:
//! [`super::zset_ranges`]; unions and intersections:
//! [`super::zset_ops`]). A sorted
//! set is the store's table of
//! member → score plus an ordered (score, member) index (see
//! [`super::collections`]): O(log n) per member.

use super::collection_scan::scan_step;
use super::collections::{edit, growth_of, read, reply_random, shrink, CType};
use super::sets::count_arg;
use super::strings::parse_float;
use super::zset_ranges::score_range;
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, Member};
use std::borrow::Borrow;

const T: CType = CType::ZSet;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

const NAN: &[u8] = b"ERR resulting score is not a number (NaN)";

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`.
pub fn zadd(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while i < cmd.len() {
        // The options are at most four letters: upper-cased on the stack.
        let o = arg(cmd, i);
        let mut up = [0u8; 4];
        let Some(word) = up.get_mut(..o.len()) else {
            break;
        };
        word.copy_from_slice(o);
        word.make_ascii_uppercase();
        match &*word {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"GT" => gt = true,
            b"LT" => lt = true,
            b"CH" => ch = true,
            b"INCR" => incr = true,
            _ => break,
        }
        i += 1;
    }
    let rest = cmd.len().saturating_sub(i);
    if rest == 0 || rest % 2 != 0 {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    }
    if nx && xx {
        ctx.error(b"ERR XX and NX options at the same time are not compatible");
        return Step::Done;
    }
    if (gt && lt) || (nx && (gt || lt)) {
        ctx.error(b"ERR GT, LT, and/or NX options at the same time are not compatible");
        return Step::Done;
    }
    if incr && rest != 2 {
        ctx.error(b"ERR INCR option supports a single increment-element pair");
        return Step::Done;
    }
    // Every score is checked before anything is written. The usual single
    // pair needs no heap allocation.
    let mut one = [(&b""[..], 0.0)];
    let mut many = Vec::with_capacity(if rest == 2 { 0 } else { rest / 2 });
    let mut args = cmd.args().skip(i);
    while let (Some(score), Some(member)) = (args.next(), args.next()) {
        let Some(s) = parse_float(score).filter(|s| !s.is_nan()) else {
            ctx.error(b"ERR value is not a valid float");
            return Step::Done;
        };
        if rest == 2 {
            one[0] = (member, s);
        } else {
            many.push((member, s));
        }
    }
    let adds: &[(&[u8], f64)] = if rest == 2 { &one } else { &many };
    let growth = growth_of(adds.len(), adds.iter().map(|(m, _)| *m));
    let r = edit(ctx, arg(cmd, 1), T, growth, |z| {
        let (mut added, mut changed, mut last) = (0i64, 0i64, None);
        for &(m, s) in adds {
            let old = z.score(m);
            let new = match old {
                Some(o) if incr => o + s,
                _ => s,
            };
            if new.is_nan() {
                return Err(NAN);
            }
            let allowed = match old {
                None => !xx,
                Some(o) => !(nx || (gt && new <= o) || (lt && new >= o)),
            };
            if !allowed {
                continue;
            }
            last = Some(new);
            if old != Some(new) {
                if z.set_score(m, new) {
                    added += 1;
                } else {
                    changed += 1;
                }
            }
        }
        Ok((if ch { added + changed } else { added }, last))
    });
    match r {
        Ok(Ok((_, last))) if incr => match last {
            Some(s) => ctx.double(s),
            None => ctx.null(),
        },
        Ok(Ok((n, _))) => ctx.int(n),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `ZINCRBY key increment member`.
pub fn zincrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(d) = parse_float(arg(cmd, 2)).filter(|d| !d.is_nan()) else {
        ctx.error(b"ERR value is not a valid float");
        return Step::Done;
    };
    let m = arg(cmd, 3);
    match edit(ctx, arg(cmd, 1), T, growth_of(1, [m]), |z| {
        let s = z.score(m).unwrap_or(0.0) + d;
        if s.is_nan() {
            return Err(NAN);
        }
        z.set_score(m, s);
        Ok(s)
    }) {
        Ok(Ok(s)) => ctx.double(s),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `ZSCORE key member`.
pub fn zscore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        match z.and_then(|z| z.score(arg(cmd, 2))) {
            Some(s) => ctx.double(s),
            None => ctx.null(),
        }
    });
    Step::Done
}

/// `ZCARD key`.
pub fn zcard(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        ctx.int(z.map_or(0, Dict::len) as i64)
    });
    Step::Done
}

/// `ZREM key member...`.
pub fn zrem(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(n) = shrink(ctx, arg(cmd, 1), T, |z| {
        cmd.args().skip(2).filter(|m| z.remove_scored(m)).count()
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// Writes (member, score) pairs: flat in RESP2 or without scores, as
/// [member, score] pairs in RESP3.
pub(super) fn reply_pairs<M: Borrow<Member>>(ctx: &mut Ctx<'_>, z: &[(M, f64)], scores: bool) {
    let resp3 = ctx.version() == resp::Version::Resp3;
    if scores && resp3 {
        ctx.array(z.len());
        for (m, s) in z {
            ctx.array(2);
            ctx.member(m.borrow());
            ctx.double(*s);
        }
    } else {
        ctx.array(z.len() * if scores { 2 } else { 1 });
        for (m, s) in z {
            ctx.member(m.borrow());
            if scores {
                ctx.double(*s);
            }
        }
    }
}

/// Redis' `start stop` index range over `n` members, as `from..to`.
pub(super) fn index_range(a: i64, b: i64, n: usize) -> (usize, usize) {
    let n = n as i64;
    let s = if a < 0 { (n + a).max(0) } else { a };
    let e = if b < 0 { n + b } else { b.min(n - 1) };
    if s > e || s >= n {
        (0, 0)
    } else {
        (s as usize, e as usize + 1)
    }
}

/// `ZCOUNT key min max`.
pub fn zcount(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some((lo, hi)) = score_range(ctx, arg(cmd, 2), arg(cmd, 3)) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        ctx.int(z.map_or(0, |z| z.by_score(lo, hi).count()) as i64)
    });
    Step::Done
}

/// `ZRANK key member [WITHSCORE]`.
pub fn zrank(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    rank(ctx, cmd, false)
}

/// `ZREVRANK key member [WITHSCORE]`.
pub fn zrevrank(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    rank(ctx, cmd, true)
}

fn rank(ctx: &mut Ctx<'_>, cmd: &Command<'_>, rev: bool) -> Step {
    let with_score = match cmd.len() {
        3 => false,
        4 if arg(cmd, 3).eq_ignore_ascii_case(b"WITHSCORE") => true,
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    };
    let m = arg(cmd, 2);
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        let found = z.and_then(|z| Some((z.rank(m)?, z.score(m)?, z.len())));
        match found {
            None if with_score => ctx.null_array(),
            None => ctx.null(),
            Some((r, s, n)) => {
                let r = if rev { n - 1 - r } else { r };
                if with_score {
                    ctx.array(2);
                    ctx.int(r as i64);
                    ctx.double(s);
                } else {
                    ctx.int(r as i64);
                }
            }
        }
    });
    Step::Done
}

/// Removes the members `pick` selects from the sorted set `z`; how many
/// went. (Their names are copied first: the selection borrows the set.)
pub(super) fn remove_picked(
    z: &mut Dict,
    pick: impl for<'a> FnOnce(&'a Dict) -> Vec<(&'a Member, f64)>,
) -> usize {
    let doomed: Vec<Vec<u8>> = pick(z).iter().map(|(m, _)| m.bytes().to_vec()).collect();
    doomed.iter().filter(|m| z.remove_scored(m)).count()
}

/// `ZREMRANGEBYSCORE key min max`: members removed.
pub fn zremrangebyscore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some((lo, hi)) = score_range(ctx, arg(cmd, 2), arg(cmd, 3)) else {
        return Step::Done;
    };
    if let Ok(n) = shrink(ctx, arg(cmd, 1), T, |z| {
        remove_picked(z, |z| z.by_score(lo, hi).collect())
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `ZREMRANGEBYRANK key start stop`: members removed.
pub fn zremrangebyrank(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (Some(a), Some(b)) = (parse_i64(arg(cmd, 2)), parse_i64(arg(cmd, 3))) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    if let Ok(n) = shrink(ctx, arg(cmd, 1), T, |z| {
        let (from, to) = index_range(a, b, z.len());
        remove_picked(z, |z| z.ranked(from, to))
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `ZMSCORE key member...`.
pub fn zmscore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        ctx.array(cmd.len() - 2);
        for m in cmd.args().skip(2) {
            match z.and_then(|z| z.score(m)) {
                Some(s) => ctx.double(s),
                None => ctx.null(),
            }
        }
    });
    Step::Done
}

/// A table value's score (8 big-endian bytes).
fn score_bytes(v: &[u8]) -> f64 {
    <[u8; 8]>::try_from(v).map_or(0.0, f64::from_be_bytes)
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: as SRANDMEMBER picks (a
/// positive count: distinct members; negative: with repeats).
pub fn zrandmember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let scores = match cmd.len() {
        2 | 3 => false,
        4 if arg(cmd, 3).eq_ignore_ascii_case(b"WITHSCORES") => true,
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    };
    let Ok(count) = count_arg(ctx, cmd, true) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        reply_random(ctx, z, count, scores, |ctx, s| {
            ctx.double(score_bytes(s.bytes()))
        });
    });
    Step::Done
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT n]`: member, score pairs.
pub fn zscan(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    scan_step(
        ctx,
        cmd,
        T,
        false,
        |_| 2,
        |ctx, _, m, score| {
            // The table's value is the score, 8 big-endian bytes.
            let s = score_bytes(score.bytes());
            ctx.element(m);
            ctx.bytes(resp::format_double(s).as_bytes());
        },
    )
}

/// `ZPOPMIN key [count]`.
pub fn zpopmin(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    zpop(ctx, cmd, true)
}

/// `ZPOPMAX key [count]`.
pub fn zpopmax(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    zpop(ctx, cmd, false)
}

/// Pops up to `count` members of the sorted set at `key`, lowest scores
/// first if `min`; `None` after writing the error for a key of another
/// type. A missing key gives nothing.
pub(super) fn pop_scored(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    count: usize,
    min: bool,
) -> Option<Vec<(Member, f64)>> {
    shrink(ctx, key, T, |z| z.pop_scored(count, min)).ok()
}

fn zpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>, min: bool) -> Step {
    let count = match cmd.arg(2) {
        None => 1,
        Some(c) => match parse_i64(c) {
            Some(n) if n >= 0 => n as usize,
            _ => {
                ctx.error(b"ERR value is out of range, must be positive");
                return Step::Done;
            }
        },
    };
    if let Some(popped) = pop_scored(ctx, arg(cmd, 1), count, min) {
        if ctx.version() == resp::Version::Resp3 && cmd.len() == 2 {
            match popped.first() {
                Some((m, s)) => {
                    ctx.array(2);
                    ctx.member(m);
                    ctx.double(*s);
                }
                None => ctx.array(0),
            }
        } else {
            reply_pairs(ctx, &popped, true);
        }
    }
    Step::Done
}
