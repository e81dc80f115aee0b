//! Sorted-set commands, the ones caches and redis-benchmark use: ZADD
//! (NX XX GT LT CH INCR), ZINCRBY, ZSCORE, ZCARD, ZREM, ZRANGE (by index,
//! WITHSCORES), ZPOPMIN, ZPOPMAX. A sorted set is the store's table of
//! member → score plus an ordered (score, member) index (see
//! [`super::collections`]): O(log n) per member.

use super::collections::{edit, growth_of, read, CType};
use super::strings::parse_float;
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, Growth};

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
        let o = arg(cmd, i).to_ascii_uppercase();
        match &o[..] {
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
    let rest: Vec<&[u8]> = cmd.args().skip(i).collect();
    if rest.is_empty() || rest.len() % 2 != 0 {
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
    if incr && rest.len() != 2 {
        ctx.error(b"ERR INCR option supports a single increment-element pair");
        return Step::Done;
    }
    let mut adds = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        match parse_float(p[0]).filter(|s| !s.is_nan()) {
            Some(s) => adds.push((p[1], s)),
            None => {
                ctx.error(b"ERR value is not a valid float");
                return Step::Done;
            }
        }
    }
    let growth = growth_of(adds.len(), adds.iter().map(|(m, _)| *m));
    let r = edit(ctx, arg(cmd, 1), T, growth, |z| {
        let (mut added, mut changed, mut last) = (0i64, 0i64, None);
        for &(m, s) in &adds {
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
    if let Ok(n) = edit(ctx, arg(cmd, 1), T, Growth::default(), |z| {
        cmd.args().skip(2).filter(|m| z.remove_scored(m)).count()
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// Writes (member, score) pairs: flat in RESP2 or without scores, as
/// [member, score] pairs in RESP3.
fn reply_pairs<M: AsRef<[u8]>>(ctx: &mut Ctx<'_>, z: &[(M, f64)], scores: bool) {
    let resp3 = ctx.version() == resp::Version::Resp3;
    if scores && resp3 {
        ctx.array(z.len());
        for (m, s) in z {
            ctx.array(2);
            ctx.bytes(m.as_ref());
            ctx.double(*s);
        }
    } else {
        ctx.array(z.len() * if scores { 2 } else { 1 });
        for (m, s) in z {
            ctx.bytes(m.as_ref());
            if scores {
                ctx.double(*s);
            }
        }
    }
}

/// `ZRANGE key start stop [WITHSCORES]` (by index).
pub fn zrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (Some(a), Some(b)) = (parse_i64(arg(cmd, 2)), parse_i64(arg(cmd, 3))) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let scores = match cmd.len() {
        4 => false,
        5 if arg(cmd, 4).eq_ignore_ascii_case(b"WITHSCORES") => true,
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        let n = z.map_or(0, Dict::len) as i64;
        let s = if a < 0 { (n + a).max(0) } else { a };
        let e = if b < 0 { n + b } else { b.min(n - 1) };
        let ranked = match z {
            Some(z) if s <= e && s < n => z.ranked(s as usize, e as usize + 1),
            _ => Vec::new(),
        };
        reply_pairs(ctx, &ranked, scores);
    });
    Step::Done
}

/// `ZPOPMIN key [count]`.
pub fn zpopmin(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    zpop(ctx, cmd, true)
}

/// `ZPOPMAX key [count]`.
pub fn zpopmax(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    zpop(ctx, cmd, false)
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
    if let Ok(popped) = edit(ctx, arg(cmd, 1), T, Growth::default(), |z| {
        z.pop_scored(count, min)
    }) {
        if ctx.version() == resp::Version::Resp3 && cmd.len() == 2 {
            match popped.first() {
                Some((m, s)) => {
                    ctx.array(2);
                    ctx.bytes(m);
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
