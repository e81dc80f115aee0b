//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
//! SRANDMEMBER SINTER SUNION SDIFF SSCAN. Stored as described in
//! [`super::collections`]; members go out by reference.

use super::collections::{elements, update, CType};
use super::hashes::scan_options;
use super::{glob, parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use granola::Buf;

const T: CType = CType::Set;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `SADD key member...`: members added.
pub fn sadd(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let members: Vec<&[u8]> = cmd.args().skip(2).collect();
    if let Ok(n) = update(ctx, arg(cmd, 1), T, |s| {
        let mut s = s.unwrap_or_default();
        let mut added = 0;
        for m in &members {
            if !s.iter().any(|e| e == m) {
                s.push(m.to_vec());
                added += 1;
            }
        }
        (Some(s).filter(|_| added > 0), added)
    }) {
        ctx.int(n);
    }
    Step::Done
}

/// `SREM key member...`: members removed.
pub fn srem(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let members: Vec<&[u8]> = cmd.args().skip(2).collect();
    if let Ok(n) = update(ctx, arg(cmd, 1), T, |s| match s {
        None => (None, 0),
        Some(mut s) => {
            let before = s.len();
            s.retain(|e| !members.contains(&&e[..]));
            let removed = before - s.len();
            (Some(s).filter(|_| removed > 0), removed as i64)
        }
    }) {
        ctx.int(n);
    }
    Step::Done
}

fn members(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Vec<Buf>, super::Replied> {
    Ok(ctx
        .coll(key, T)?
        .map(|s| elements(&s, T).collect())
        .unwrap_or_default())
}

fn reply_set(ctx: &mut Ctx<'_>, m: &[Buf]) {
    ctx.set(m.len());
    for e in m {
        ctx.bulk(e);
    }
}

/// `SMEMBERS key`.
pub fn smembers(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(m) = members(ctx, arg(cmd, 1)) {
        reply_set(ctx, &m);
    }
    Step::Done
}

/// `SISMEMBER key member`.
pub fn sismember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(m) = members(ctx, arg(cmd, 1)) {
        let hit = m.iter().any(|e| e[..] == *arg(cmd, 2));
        ctx.int(i64::from(hit));
    }
    Step::Done
}

/// `SMISMEMBER key member...`.
pub fn smismember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(m) = members(ctx, arg(cmd, 1)) {
        ctx.array(cmd.len() - 2);
        for q in cmd.args().skip(2) {
            ctx.int(i64::from(m.iter().any(|e| e[..] == *q)));
        }
    }
    Step::Done
}

/// `SCARD key`.
pub fn scard(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(s) = ctx.coll(arg(cmd, 1), T) {
        ctx.int(s.map_or(0, |s| s.list_len() - 1) as i64);
    }
    Step::Done
}

/// A pseudo-random number (SPOP/SRANDMEMBER need no cryptographic one).
fn random(n: usize) -> usize {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(n);
    (h.finish() as usize) % n.max(1)
}

/// `SPOP key [count]`.
pub fn spop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let count = match cmd.arg(2) {
        None => None,
        Some(c) => match parse_i64(c) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                ctx.error(b"ERR value is out of range, must be positive");
                return Step::Done;
            }
        },
    };
    let Ok(popped) = update(ctx, arg(cmd, 1), T, |s| match s {
        None => (None, Vec::new()),
        Some(mut s) => {
            let n = count.unwrap_or(1).min(s.len());
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let i = random(s.len());
                out.push(s.swap_remove(i));
            }
            (Some(s), out)
        }
    }) else {
        return Step::Done;
    };
    match count {
        None => match popped.first() {
            Some(v) => ctx.bytes(v),
            None => ctx.null(),
        },
        Some(_) => {
            ctx.set(popped.len());
            for v in &popped {
                ctx.bytes(v);
            }
        }
    }
    Step::Done
}

/// `SRANDMEMBER key [count]` (negative count: repeats allowed).
pub fn srandmember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let count = match cmd.arg(2) {
        None => None,
        Some(c) => match parse_i64(c) {
            Some(n) => Some(n),
            None => {
                ctx.raw(resp::ERR_NOT_INTEGER);
                return Step::Done;
            }
        },
    };
    let Ok(m) = members(ctx, arg(cmd, 1)) else {
        return Step::Done;
    };
    match count {
        None => match m.get(random(m.len())) {
            Some(v) if !m.is_empty() => ctx.bulk(v),
            _ => ctx.null(),
        },
        Some(c) if c >= 0 => {
            let mut pool = m;
            let n = (c as usize).min(pool.len());
            ctx.array(n);
            for _ in 0..n {
                let i = random(pool.len());
                let v = pool.swap_remove(i);
                ctx.bulk(&v);
            }
        }
        Some(c) => {
            let n = if m.is_empty() {
                0
            } else {
                c.unsigned_abs() as usize
            };
            ctx.array(n);
            for _ in 0..n {
                let v = m[random(m.len())].clone();
                ctx.bulk(&v);
            }
        }
    }
    Step::Done
}

/// `SINTER key...`.
pub fn sinter(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    combine(ctx, cmd, |acc, s| {
        acc.retain(|e| s.iter().any(|x| x[..] == e[..]))
    })
}

/// `SUNION key...`.
pub fn sunion(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    combine(ctx, cmd, |acc, s| {
        for x in s {
            if !acc.iter().any(|e| e[..] == x[..]) {
                acc.push(x.clone());
            }
        }
    })
}

/// `SDIFF key...`.
pub fn sdiff(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    combine(ctx, cmd, |acc, s| {
        acc.retain(|e| !s.iter().any(|x| x[..] == e[..]))
    })
}

fn combine(ctx: &mut Ctx<'_>, cmd: &Command<'_>, f: impl Fn(&mut Vec<Buf>, &[Buf])) -> Step {
    let mut acc: Option<Vec<Buf>> = None;
    for key in cmd.args().skip(1) {
        let Ok(m) = members(ctx, key) else {
            return Step::Done;
        };
        match acc.as_mut() {
            None => acc = Some(m),
            Some(a) => f(a, &m),
        }
    }
    reply_set(ctx, &acc.unwrap_or_default());
    Step::Done
}

/// `SSCAN key cursor [MATCH pattern] [COUNT n]`: all members in one call.
pub fn sscan(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(pattern) = scan_options(ctx, cmd) else {
        return Step::Done;
    };
    if let Ok(m) = members(ctx, arg(cmd, 1)) {
        let hits: Vec<&Buf> = m
            .iter()
            .filter(|e| pattern.is_none_or(|p| glob::matches(p, e, false)))
            .collect();
        ctx.array(2);
        ctx.bytes(b"0");
        ctx.array(hits.len());
        for e in hits {
            ctx.bulk(e);
        }
    }
    Step::Done
}
