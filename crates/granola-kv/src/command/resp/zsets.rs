//! Sorted-set commands, the ones caches and redis-benchmark use: ZADD
//! (NX XX CH), ZINCRBY, ZSCORE, ZCARD, ZREM, ZRANGE (by index,
//! WITHSCORES), ZPOPMIN, ZPOPMAX. Stored as member, score pairs in (score,
//! member) order (see [`super::collections`]); O(size) per change.

use super::collections::{update, CType};
use super::strings::parse_float;
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};

const T: CType = CType::ZSet;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// (member, score) pairs of a body.
fn pairs(body: Vec<Vec<u8>>) -> Vec<(Vec<u8>, f64)> {
    let mut out = Vec::with_capacity(body.len() / 2);
    let mut it = body.into_iter();
    while let (Some(m), Some(s)) = (it.next(), it.next()) {
        let score = <[u8; 8]>::try_from(&s[..]).map_or(0.0, f64::from_be_bytes);
        out.push((m, score));
    }
    out
}

fn to_body(mut p: Vec<(Vec<u8>, f64)>) -> Vec<Vec<u8>> {
    p.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    p.into_iter()
        .flat_map(|(m, s)| [m, s.to_be_bytes().to_vec()])
        .collect()
}

/// `ZADD key [NX|XX] [CH] [INCR] score member [score member ...]`.
pub fn zadd(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (mut nx, mut xx, mut ch, mut incr) = (false, false, false, false);
    let mut i = 2;
    while i < cmd.len() {
        let o = arg(cmd, i).to_ascii_uppercase();
        match &o[..] {
            b"NX" => nx = true,
            b"XX" => xx = true,
            b"CH" => ch = true,
            b"INCR" => incr = true,
            b"GT" | b"LT" => {
                ctx.error(b"ERR GT and LT are not supported by granola-kv");
                return Step::Done;
            }
            _ => break,
        }
        i += 1;
    }
    let rest: Vec<&[u8]> = cmd.args().skip(i).collect();
    if rest.is_empty() || rest.len() % 2 != 0 || (nx && xx) || (incr && rest.len() != 2) {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    }
    let mut adds = Vec::new();
    for p in rest.chunks(2) {
        match parse_float(p[0]) {
            Some(s) => adds.push((p[1], s)),
            None => {
                ctx.error(b"ERR value is not a valid float");
                return Step::Done;
            }
        }
    }
    let r = update(ctx, arg(cmd, 1), T, |z| {
        let mut z = pairs(z.unwrap_or_default());
        let (mut added, mut changed, mut last) = (0i64, 0i64, None);
        for (m, s) in &adds {
            match z.iter_mut().find(|(zm, _)| zm == m) {
                Some(e) if !nx => {
                    let new = if incr { e.1 + s } else { *s };
                    if new != e.1 {
                        changed += 1;
                    }
                    e.1 = new;
                    last = Some(new);
                }
                Some(_) => {}
                None if !xx => {
                    z.push((m.to_vec(), *s));
                    added += 1;
                    last = Some(*s);
                }
                None => {}
            }
        }
        let n = if ch { added + changed } else { added };
        (Some(to_body(z)), (n, last))
    });
    if let Ok((n, last)) = r {
        if incr {
            match last {
                Some(s) => ctx.double(s),
                None => ctx.null(),
            }
        } else {
            ctx.int(n);
        }
    }
    Step::Done
}

/// `ZINCRBY key increment member`.
pub fn zincrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(d) = parse_float(arg(cmd, 2)) else {
        ctx.error(b"ERR value is not a valid float");
        return Step::Done;
    };
    let m = arg(cmd, 3);
    if let Ok(s) = update(ctx, arg(cmd, 1), T, |z| {
        let mut z = pairs(z.unwrap_or_default());
        let s = match z.iter_mut().find(|(zm, _)| zm == m) {
            Some(e) => {
                e.1 += d;
                e.1
            }
            None => {
                z.push((m.to_vec(), d));
                d
            }
        };
        (Some(to_body(z)), s)
    }) {
        ctx.double(s);
    }
    Step::Done
}

fn read(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Vec<(Vec<u8>, f64)>, super::Replied> {
    Ok(ctx
        .coll(key, T)?
        .map(|z| pairs(super::collections::body(&z, T)))
        .unwrap_or_default())
}

/// `ZSCORE key member`.
pub fn zscore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(z) = read(ctx, arg(cmd, 1)) {
        match z.iter().find(|(m, _)| m[..] == *arg(cmd, 2)) {
            Some((_, s)) => ctx.double(*s),
            None => ctx.null(),
        }
    }
    Step::Done
}

/// `ZCARD key`.
pub fn zcard(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(z) = ctx.coll(arg(cmd, 1), T) {
        ctx.int(z.map_or(0, |z| (z.list_len() - 1) / 2) as i64);
    }
    Step::Done
}

/// `ZREM key member...`.
pub fn zrem(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let ms: Vec<&[u8]> = cmd.args().skip(2).collect();
    if let Ok(n) = update(ctx, arg(cmd, 1), T, |z| match z {
        None => (None, 0),
        Some(z) => {
            let mut z = pairs(z);
            let before = z.len();
            z.retain(|(m, _)| !ms.contains(&&m[..]));
            let removed = (before - z.len()) as i64;
            (Some(to_body(z)).filter(|_| removed > 0), removed)
        }
    }) {
        ctx.int(n);
    }
    Step::Done
}

fn reply_pairs(ctx: &mut Ctx<'_>, z: &[(Vec<u8>, f64)], scores: bool) {
    let resp3 = ctx.version() == resp::Version::Resp3;
    if scores && resp3 {
        ctx.array(z.len());
        for (m, s) in z {
            ctx.array(2);
            ctx.bytes(m);
            ctx.double(*s);
        }
    } else {
        ctx.array(z.len() * if scores { 2 } else { 1 });
        for (m, s) in z {
            ctx.bytes(m);
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
    if let Ok(z) = read(ctx, arg(cmd, 1)) {
        let n = z.len() as i64;
        let s = if a < 0 { (n + a).max(0) } else { a };
        let e = if b < 0 { n + b } else { b.min(n - 1) };
        let slice = if s > e || s >= n {
            &z[0..0]
        } else {
            &z[s as usize..=e as usize]
        };
        reply_pairs(ctx, slice, scores);
    }
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
    if let Ok(popped) = update(ctx, arg(cmd, 1), T, |z| match z {
        None => (None, Vec::new()),
        Some(z) => {
            let mut z = pairs(z);
            let n = count.min(z.len());
            let out: Vec<(Vec<u8>, f64)> = if min {
                z.drain(..n).collect()
            } else {
                let mut t: Vec<_> = z.drain(z.len() - n..).collect();
                t.reverse();
                t
            };
            (Some(to_body(z)), out)
        }
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
