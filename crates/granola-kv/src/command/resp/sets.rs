//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
//! SRANDMEMBER SMOVE SINTER SUNION SDIFF (and their STORE forms)
//! SINTERCARD SSCAN. A set is the store's table (see
//! [`super::collections`]) with empty values: O(1) per member.

use super::collection_scan::scan_step;
use super::collections::{
    edit, growth_of, random, read, reply_random, shrink, CType, MAX_RANDOM_COUNT,
};
use super::{parse_i64, Ctx, Replied};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, Element, Kind, Meta};

const T: CType = CType::Set;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `SADD key member...`: members added.
pub fn sadd(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() == 3 {
        // One member, the common call: no walks over the arguments.
        let m = arg(cmd, 2);
        if let Ok(added) = edit(ctx, arg(cmd, 1), T, growth_of(1, [m]), |s| {
            !s.contains(m) && s.insert(m, b"")
        }) {
            ctx.int(i64::from(added));
        }
        return Step::Done;
    }
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
    if let Ok(n) = shrink(ctx, arg(cmd, 1), T, |s| {
        cmd.args().skip(2).filter(|m| s.remove(m)).count()
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// Writes `members` as a set reply.
fn reply_set<'m>(ctx: &mut Ctx<'_>, n: usize, members: impl Iterator<Item = &'m Element>) {
    ctx.set(n);
    for m in members {
        ctx.element(m);
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

/// The optional count of SPOP/SRANDMEMBER/HRANDFIELD (argument 2); Err
/// if invalid (reply written).
pub(super) fn count_arg(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'_>,
    signed: bool,
) -> Result<Option<i64>, Replied> {
    let Some(c) = cmd.arg(2) else {
        return Ok(None);
    };
    // A count of at least 0 is bounded by the collection; only repeats
    // (a negative count) build a reply of the count's size. SPOP's count
    // is read as Redis reads a positive number: a word that is not one is
    // "out of range" too.
    match parse_i64(c) {
        Some(n) if n >= 0 || (signed && n.unsigned_abs() <= MAX_RANDOM_COUNT) => Ok(Some(n)),
        None if signed => {
            ctx.raw(resp::ERR_NOT_INTEGER);
            Err(Replied)
        }
        _ => {
            ctx.error(b"ERR value is out of range, must be positive");
            Err(Replied)
        }
    }
}

/// `SPOP key [count]`.
pub fn spop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Ok(count) = count_arg(ctx, cmd, false) else {
        return Step::Done;
    };
    let Ok(popped) = shrink(ctx, arg(cmd, 1), T, |s| {
        let n = (count.unwrap_or(1) as usize).min(s.len());
        (0..n)
            .filter_map(|_| {
                let i = random(s.len());
                s.remove_at(i)
            })
            .collect::<Vec<_>>()
    }) else {
        return Step::Done;
    };
    match count {
        None => match popped.first() {
            Some(v) => ctx.element(v),
            None => ctx.null(),
        },
        Some(_) => reply_set(ctx, popped.len(), popped.iter()),
    }
    Step::Done
}

/// `SRANDMEMBER key [count]` (negative count: repeats allowed).
pub fn srandmember(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Ok(count) = count_arg(ctx, cmd, true) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, s| {
        reply_random(ctx, s, count, false, |_, _| {});
    });
    Step::Done
}

/// How SINTER/SUNION/SDIFF fold each further set into the first.
#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

impl Op {
    fn fold(self, acc: &mut Dict, s: Option<&Dict>) {
        match self {
            Op::Inter => acc.retain(|m| s.is_some_and(|s| s.contains(m))),
            Op::Union => {
                for (m, _) in s.iter().flat_map(|s| s.iter()) {
                    acc.insert(m, b"");
                }
            }
            Op::Diff => {
                for (m, _) in s.iter().flat_map(|s| s.iter()) {
                    acc.remove(m);
                }
            }
        }
    }
}

/// `SINTER key...`.
pub fn sinter(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    reply_combined(ctx, cmd, Op::Inter)
}

/// `SUNION key...`.
pub fn sunion(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    reply_combined(ctx, cmd, Op::Union)
}

/// `SDIFF key...`.
pub fn sdiff(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    reply_combined(ctx, cmd, Op::Diff)
}

/// `SINTERSTORE destination key...`: the result's size.
pub fn sinterstore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    store_combined(ctx, cmd, Op::Inter)
}

/// `SUNIONSTORE destination key...`.
pub fn sunionstore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    store_combined(ctx, cmd, Op::Union)
}

/// `SDIFFSTORE destination key...`.
pub fn sdiffstore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    store_combined(ctx, cmd, Op::Diff)
}

/// Folds the sets at `keys` into a copy of the first one (an absent key is
/// an empty set).
fn combine<'k>(
    ctx: &mut Ctx<'_>,
    keys: impl Iterator<Item = &'k [u8]>,
    op: Op,
) -> Result<Dict, Replied> {
    let mut acc: Option<Dict> = None;
    for key in keys {
        read(ctx, key, T, |_, s| match acc.as_mut() {
            None => acc = Some(s.cloned().unwrap_or_default()),
            Some(a) => op.fold(a, s),
        })?;
    }
    Ok(acc.unwrap_or_default())
}

fn reply_combined(ctx: &mut Ctx<'_>, cmd: &Command<'_>, op: Op) -> Step {
    if let Ok(acc) = combine(ctx, cmd.args().skip(1), op) {
        reply_set(ctx, acc.len(), acc.iter().map(|(m, _)| m));
    }
    Step::Done
}

fn store_combined(ctx: &mut Ctx<'_>, cmd: &Command<'_>, op: Op) -> Step {
    let Ok(acc) = combine(ctx, cmd.args().skip(2), op) else {
        return Step::Done;
    };
    // Whatever the destination held is replaced (an empty result deletes
    // it), as in Redis.
    match ctx
        .db
        .put_dict(arg(cmd, 1), Kind::Set, &acc, Meta::default())
    {
        Ok(()) => ctx.int(acc.len() as i64),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `SINTERCARD numkeys key... [LIMIT limit]`.
pub fn sintercard(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let n = match parse_i64(arg(cmd, 1)) {
        Some(n) if n > 0 && (n as usize) <= cmd.len() - 2 => n as usize,
        _ => {
            ctx.error(b"ERR numkeys should be greater than 0");
            return Step::Done;
        }
    };
    let Some(limit) = intercard_limit(ctx, cmd, n) else {
        return Step::Done;
    };
    if let Ok(acc) = combine(ctx, cmd.args().skip(2).take(n), Op::Inter) {
        ctx.int(acc.len().min(limit) as i64);
    }
    Step::Done
}

/// The `[LIMIT limit]` after SINTERCARD's or ZINTERCARD's `n` keys (0:
/// none); `None` after writing the error.
pub(super) fn intercard_limit(ctx: &mut Ctx<'_>, cmd: &Command<'_>, n: usize) -> Option<usize> {
    match (cmd.len() - 2 - n, cmd.arg(2 + n), cmd.arg(3 + n)) {
        (0, _, _) => Some(usize::MAX),
        (2, Some(o), Some(v)) if o.eq_ignore_ascii_case(b"LIMIT") => match parse_i64(v) {
            Some(0) => Some(usize::MAX),
            Some(l) if l > 0 => Some(l as usize),
            _ => {
                ctx.error(b"ERR LIMIT can't be negative");
                None
            }
        },
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            None
        }
    }
}

/// `SMOVE source destination member`: 1 if moved. (Two keys, two locks;
/// the command runs alone in the RESP gate, so no Redis client sees the
/// member in neither set between the two steps.)
pub fn smove(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (src, dst, m) = (arg(cmd, 1), arg(cmd, 2), arg(cmd, 3));
    // Both must be sets (or absent) before anything moves; a missing
    // source moves nothing whatever the destination holds (Redis's order).
    match ctx.coll(src, T) {
        Err(_) => return Step::Done,
        Ok(None) => {
            ctx.int(0);
            return Step::Done;
        }
        Ok(Some(_)) => {}
    }
    if ctx.coll(dst, T).is_err() {
        return Step::Done;
    }
    let Ok(moved) = shrink(ctx, src, T, |s| s.remove(m)) else {
        return Step::Done;
    };
    if moved && edit(ctx, dst, T, growth_of(1, [m]), |s| s.insert(m, b"")).is_err() {
        return Step::Done;
    }
    ctx.int(i64::from(moved));
    Step::Done
}

/// `SSCAN key cursor [MATCH pattern] [COUNT n]`.
pub fn sscan(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    scan_step(ctx, cmd, T, false, |_| 1, |ctx, _, m, _| ctx.bytes(m))
}
