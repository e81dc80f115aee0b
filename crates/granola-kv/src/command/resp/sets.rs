//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
//! SRANDMEMBER SINTER SUNION SDIFF SSCAN. A set is the store's table (see
//! [`super::collections`]) with empty values: O(1) per member.

use super::collections::{edit, growth_of, read, CType};
use super::hashes::scan_options;
use super::{parse_i64, Ctx, Replied};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, Growth};

const T: CType = CType::Set;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `SADD key member...`: members added.
pub fn sadd(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let growth = growth_of(cmd.len() - 2, cmd.args().skip(2));
    if let Ok(n) = edit(ctx, arg(cmd, 1), T, growth, |s| {
        cmd.args()
            .skip(2)
            .filter(|m| !s.contains(m) && s.insert(m, b""))
            .count()
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `SREM key member...`: members removed.
pub fn srem(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(n) = edit(ctx, arg(cmd, 1), T, Growth::default(), |s| {
        cmd.args().skip(2).filter(|m| s.remove(m)).count()
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// Writes `members` as a set reply.
fn reply_set<'m>(ctx: &mut Ctx<'_>, n: usize, members: impl Iterator<Item = &'m [u8]>) {
    ctx.set(n);
    for m in members {
        ctx.bytes(m);
    }
}

/// `SMEMBERS key`.
pub fn smembers(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        reply_set(
            ctx,
            s.map_or(0, Dict::len),
            s.iter().flat_map(|s| s.iter().map(|(m, _)| m)),
        )
    });
    Step::Done
}

/// `SISMEMBER key member`.
pub fn sismember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        ctx.int(i64::from(s.is_some_and(|s| s.contains(arg(cmd, 2)))))
    });
    Step::Done
}

/// `SMISMEMBER key member...`.
pub fn smismember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        ctx.array(cmd.len() - 2);
        for q in cmd.args().skip(2) {
            ctx.int(i64::from(s.is_some_and(|s| s.contains(q))));
        }
    });
    Step::Done
}

/// `SCARD key`.
pub fn scard(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        ctx.int(s.map_or(0, Dict::len) as i64)
    });
    Step::Done
}

/// A pseudo-random number in `0..n` (SPOP/SRANDMEMBER need no
/// cryptographic one).
fn random(n: usize) -> usize {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(n);
    (h.finish() as usize) % n.max(1)
}

/// The optional count of SPOP/SRANDMEMBER; Err if invalid (reply written).
fn count_arg(ctx: &mut Ctx<'_>, cmd: &Command<'_>, signed: bool) -> Result<Option<i64>, Replied> {
    let Some(c) = cmd.arg(2) else {
        return Ok(None);
    };
    match parse_i64(c) {
        Some(n) if signed || n >= 0 => Ok(Some(n)),
        Some(_) => {
            ctx.error(b"ERR value is out of range, must be positive");
            Err(Replied)
        }
        None => {
            ctx.raw(resp::ERR_NOT_INTEGER);
            Err(Replied)
        }
    }
}

/// `SPOP key [count]`.
pub fn spop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Ok(count) = count_arg(ctx, cmd, false) else {
        return Step::Done;
    };
    let Ok(popped) = edit(ctx, arg(cmd, 1), T, Growth::default(), |s| {
        let n = (count.unwrap_or(1) as usize).min(s.len());
        (0..n)
            .filter_map(|_| s.remove_at(random(s.len())))
            .collect::<Vec<_>>()
    }) else {
        return Step::Done;
    };
    match count {
        None => match popped.first() {
            Some(v) => ctx.bytes(v),
            None => ctx.null(),
        },
        Some(_) => reply_set(ctx, popped.len(), popped.iter().map(|m| &m[..])),
    }
    Step::Done
}

/// `SRANDMEMBER key [count]` (negative count: repeats allowed).
pub fn srandmember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Ok(count) = count_arg(ctx, cmd, true) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        let len = s.map_or(0, Dict::len);
        let pick = |i: usize| s.and_then(|s| s.at(i)).map(|(m, _)| m);
        match count {
            None => match pick(random(len)).filter(|_| len > 0) {
                Some(m) => ctx.bytes(m),
                None => ctx.null(),
            },
            Some(c) if c >= 0 => {
                // Distinct members: a partial shuffle of the positions.
                let n = (c as usize).min(len);
                let mut order: Vec<usize> = (0..len).collect();
                ctx.array(n);
                for k in 0..n {
                    order.swap(k, k + random(len - k));
                    if let Some(m) = pick(order[k]) {
                        ctx.bytes(m);
                    }
                }
            }
            Some(c) => {
                let n = if len == 0 {
                    0
                } else {
                    c.unsigned_abs() as usize
                };
                ctx.array(n);
                for _ in 0..n {
                    if let Some(m) = pick(random(len)) {
                        ctx.bytes(m);
                    }
                }
            }
        }
    });
    Step::Done
}

/// `SINTER key...`.
pub fn sinter(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    combine(ctx, cmd, |acc, s| {
        acc.retain(|m| s.is_some_and(|s| s.contains(m)))
    })
}

/// `SUNION key...`.
pub fn sunion(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    combine(ctx, cmd, |acc, s| {
        for (m, _) in s.iter().flat_map(|s| s.iter()) {
            acc.insert(m, b"");
        }
    })
}

/// `SDIFF key...`.
pub fn sdiff(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    combine(ctx, cmd, |acc, s| {
        for (m, _) in s.iter().flat_map(|s| s.iter()) {
            acc.remove(m);
        }
    })
}

/// Folds the sets at every key into the first one's copy with `f`
/// (`None`: the key is absent).
fn combine(ctx: &mut Ctx<'_>, cmd: &Command<'_>, f: impl Fn(&mut Dict, Option<&Dict>)) -> Step {
    let mut acc: Option<Dict> = None;
    for key in cmd.args().skip(1) {
        let step = read(ctx, key, T, |_, s| match acc.as_mut() {
            None => acc = Some(s.cloned().unwrap_or_default()),
            Some(a) => f(a, s),
        });
        if step.is_err() {
            return Step::Done;
        }
    }
    let acc = acc.unwrap_or_default();
    reply_set(ctx, acc.len(), acc.iter().map(|(m, _)| m));
    Step::Done
}

/// `SSCAN key cursor [MATCH pattern] [COUNT n]`.
pub fn sscan(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(opts) = scan_options(ctx, cmd, false) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        let mut hits: Vec<&[u8]> = Vec::new();
        let next = s.map_or(0, |s| {
            s.scan(opts.cursor, opts.count, |m, _| {
                if opts.matches(m) {
                    hits.push(m);
                }
            })
        });
        ctx.array(2);
        ctx.bytes(next.to_string().as_bytes());
        ctx.array(hits.len());
        for m in hits {
            ctx.bytes(m);
        }
    });
    Step::Done
}
