//! Sorted-set algebra: ZUNION, ZINTER, ZDIFF (WITHSCORES), ZUNIONSTORE,
//! ZINTERSTORE, ZDIFFSTORE (WEIGHTS, AGGREGATE SUM|MIN|MAX) and
//! ZINTERCARD (LIMIT). As in Redis, an input may be a plain set (every
//! member scores 1) and a missing key is empty; the result is ordered by
//! score, then member.

use super::collections::{ctype, CType};
use super::sets::intercard_limit;
use super::zsets::reply_pairs;
use super::{parse_i64, Ctx, Replied};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, Kind, Meta};
use std::collections::HashMap;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// `a` aggregated with `b`, as Redis does it: a NaN sum (inf + -inf,
    /// or a NaN `b`) is 0, and a NaN `b` never wins a MIN or MAX.
    fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Aggregate::Sum => zero_nan(a + b),
            Aggregate::Min => {
                if b < a {
                    b
                } else {
                    a
                }
            }
            Aggregate::Max => {
                if b > a {
                    b
                } else {
                    a
                }
            }
        }
    }
}

fn zero_nan(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x
    }
}

/// The members and scores of the sorted set or set at `key` (a set's
/// members score 1); empty if absent. WRONGTYPE for anything else.
fn scored(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<Vec<(Vec<u8>, f64)>, Replied> {
    let Some(item) = ctx.db.get(key) else {
        return Ok(Vec::new());
    };
    let t = ctype(&item);
    if !matches!(t, Some(CType::ZSet | CType::Set)) {
        ctx.raw(resp::ERR_WRONGTYPE);
        return Err(Replied);
    }
    let zset = t == Some(CType::ZSet);
    Ok(item
        .read_dict(|d| {
            d.iter()
                .map(|(m, v)| {
                    let s = if zset {
                        <[u8; 8]>::try_from(v.bytes()).map_or(0.0, f64::from_be_bytes)
                    } else {
                        1.0
                    };
                    (m.bytes().to_vec(), s)
                })
                .collect()
        })
        .unwrap_or_default())
}

/// A parsed `numkeys key ... [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES]` from argument `at`.
struct Args<'a> {
    keys: Vec<&'a [u8]>,
    weights: Vec<f64>,
    aggregate: Aggregate,
    scores: bool,
}

/// The `numkeys` argument at `at`, as Redis checks it (errors written).
fn numkeys(ctx: &mut Ctx<'_>, cmd: &Command<'_>, at: usize) -> Option<usize> {
    match parse_i64(arg(cmd, at)) {
        Some(n) if n > 0 && (n as usize) < cmd.len() - at => Some(n as usize),
        Some(n) if n > 0 => {
            ctx.raw(resp::ERR_SYNTAX);
            None
        }
        Some(_) => {
            let name = String::from_utf8_lossy(cmd.name()).to_lowercase();
            ctx.error(
                format!("ERR at least 1 input key is needed for '{name}' command").as_bytes(),
            );
            None
        }
        None => {
            ctx.raw(resp::ERR_NOT_INTEGER);
            None
        }
    }
}

fn parse<'a>(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'a>,
    at: usize,
    op: Op,
    store: bool,
) -> Option<Args<'a>> {
    let n = numkeys(ctx, cmd, at)?;
    let keys: Vec<&[u8]> = cmd.args().skip(at + 1).take(n).collect();
    let mut a = Args {
        keys,
        weights: vec![1.0; n],
        aggregate: Aggregate::Sum,
        scores: false,
    };
    let mut i = at + 1 + n;
    while i < cmd.len() {
        let o = arg(cmd, i).to_ascii_uppercase();
        match &o[..] {
            b"WEIGHTS" if op != Op::Diff && i + n < cmd.len() => {
                for (k, w) in a.weights.iter_mut().enumerate() {
                    match super::strings::parse_float(arg(cmd, i + 1 + k)).filter(|w| !w.is_nan()) {
                        Some(v) => *w = v,
                        None => {
                            ctx.error(b"ERR weight value is not a float");
                            return None;
                        }
                    }
                }
                i += n;
            }
            b"AGGREGATE" if op != Op::Diff && i + 1 < cmd.len() => {
                a.aggregate = match &arg(cmd, i + 1).to_ascii_uppercase()[..] {
                    b"SUM" => Aggregate::Sum,
                    b"MIN" => Aggregate::Min,
                    b"MAX" => Aggregate::Max,
                    _ => {
                        ctx.raw(resp::ERR_SYNTAX);
                        return None;
                    }
                };
                i += 1;
            }
            b"WITHSCORES" if !store => a.scores = true,
            _ => {
                ctx.raw(resp::ERR_SYNTAX);
                return None;
            }
        }
        i += 1;
    }
    Some(a)
}

/// The combined members and scores, ordered by score then member.
fn combine(ctx: &mut Ctx<'_>, a: &Args<'_>, op: Op) -> Result<Vec<(Vec<u8>, f64)>, Replied> {
    let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
    let mut inputs = Vec::with_capacity(a.keys.len());
    for (key, &w) in a.keys.iter().zip(&a.weights) {
        inputs.push((scored(ctx, key)?, w));
    }
    if op != Op::Diff {
        // Smallest first, as Redis orders them (a stable sort, as its
        // qsort is on glibc before 2.37): the order decides the results
        // where infinities meet (inf - inf is 0 in a SUM, a NaN weighted
        // score loses a MIN or MAX only when it comes second).
        inputs.sort_by_key(|(set, _)| set.len());
    }
    for (i, (set, w)) in inputs.into_iter().enumerate() {
        let weigh = |s: f64| zero_nan(s * w);
        match op {
            _ if i == 0 => {
                acc = set.into_iter().map(|(m, s)| (m, weigh(s))).collect();
            }
            Op::Union => {
                for (m, s) in set {
                    let s = weigh(s);
                    acc.entry(m)
                        .and_modify(|v| *v = a.aggregate.apply(*v, s))
                        .or_insert(s);
                }
            }
            Op::Inter => {
                let other: HashMap<Vec<u8>, f64> = set.into_iter().collect();
                acc.retain(|m, v| match other.get(m) {
                    Some(&s) => {
                        // Unlike a union's, this weighted score keeps a
                        // NaN (inf * 0) for the aggregate to settle.
                        *v = a.aggregate.apply(*v, s * w);
                        true
                    }
                    None => false,
                });
            }
            Op::Diff => {
                for (m, _) in set {
                    acc.remove(&m);
                }
            }
        }
    }
    let mut out: Vec<(Vec<u8>, f64)> = acc.into_iter().collect();
    out.sort_by(|(ma, sa), (mb, sb)| sa.total_cmp(sb).then_with(|| ma.cmp(mb)));
    Ok(out)
}

fn reply(ctx: &mut Ctx<'_>, cmd: &Command<'_>, op: Op) -> Step {
    let Some(a) = parse(ctx, cmd, 1, op, false) else {
        return Step::Done;
    };
    if let Ok(out) = combine(ctx, &a, op) {
        let members: Vec<(crate::store::Member, f64)> = out
            .into_iter()
            .map(|(m, s)| (crate::store::Member::Heap(m.into()), s))
            .collect();
        reply_pairs(ctx, &members, a.scores);
    }
    Step::Done
}

fn store(ctx: &mut Ctx<'_>, cmd: &Command<'_>, op: Op) -> Step {
    let Some(a) = parse(ctx, cmd, 2, op, true) else {
        return Step::Done;
    };
    let Ok(out) = combine(ctx, &a, op) else {
        return Step::Done;
    };
    let dst = arg(cmd, 1);
    let stored = if out.is_empty() {
        ctx.db.delete(dst);
        Ok(())
    } else {
        let mut d = Dict::sorted();
        for (m, s) in &out {
            d.set_score(m, *s);
        }
        ctx.db.put_dict(dst, Kind::ZSet, &d, Meta::default())
    };
    match stored {
        Ok(()) => ctx.int(out.len() as i64),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `ZUNION numkeys key ... [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES]`.
pub fn zunion(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    reply(ctx, cmd, Op::Union)
}

/// `ZINTER numkeys key ... [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES]`.
pub fn zinter(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    reply(ctx, cmd, Op::Inter)
}

/// `ZDIFF numkeys key ... [WITHSCORES]`.
pub fn zdiff(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    reply(ctx, cmd, Op::Diff)
}

/// `ZUNIONSTORE destination numkeys key ... [WEIGHTS w ...] [AGGREGATE
/// SUM|MIN|MAX]`.
pub fn zunionstore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    store(ctx, cmd, Op::Union)
}

/// `ZINTERSTORE destination numkeys key ... [WEIGHTS w ...] [AGGREGATE
/// SUM|MIN|MAX]`.
pub fn zinterstore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    store(ctx, cmd, Op::Inter)
}

/// `ZDIFFSTORE destination numkeys key ...`.
pub fn zdiffstore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    store(ctx, cmd, Op::Diff)
}

/// `ZINTERCARD numkeys key ... [LIMIT limit]`.
pub fn zintercard(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(n) = numkeys(ctx, cmd, 1) else {
        return Step::Done;
    };
    let Some(limit) = intercard_limit(ctx, cmd, n) else {
        return Step::Done;
    };
    let a = Args {
        keys: cmd.args().skip(2).take(n).collect(),
        weights: vec![1.0; n],
        aggregate: Aggregate::Sum,
        scores: false,
    };
    if let Ok(out) = combine(ctx, &a, Op::Inter) {
        ctx.int(out.len().min(limit) as i64);
    }
    Step::Done
}
