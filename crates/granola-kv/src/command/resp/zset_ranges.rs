//! Sorted-set ranges: ZRANGE with Redis 6.2's whole syntax (by index,
//! BYSCORE or BYLEX, REV, LIMIT, WITHSCORES), ZRANGESTORE, and the older
//! forms on the same code: ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE,
//! ZRANGEBYLEX, ZREVRANGEBYLEX; with ZLEXCOUNT and ZREMRANGEBYLEX. Also the
//! score and lex bounds the other sorted-set commands parse.

use super::collections::{read, shrink, CType};
use super::strings::parse_float;
use super::zsets::{index_range, remove_picked, reply_pairs};
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Dict, Kind, Member, Meta};
use std::ops::Bound;

const T: CType = CType::ZSet;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// A score bound: `(x` (exclusive) or `x`, `x` a float or `±inf` (as
/// in Redis, `+inf` as a minimum still takes members scored +inf).
fn score_bound(b: &[u8]) -> Option<Bound<f64>> {
    let (exclusive, num) = match b.strip_prefix(b"(") {
        Some(rest) => (true, rest),
        None => (false, b),
    };
    let v = parse_float(num).filter(|v| !v.is_nan())?;
    Some(if exclusive {
        Bound::Excluded(v)
    } else {
        Bound::Included(v)
    })
}

/// `min max` of a score-range command; None if invalid (error written).
pub(super) fn score_range(
    ctx: &mut Ctx<'_>,
    lo: &[u8],
    hi: &[u8],
) -> Option<(Bound<f64>, Bound<f64>)> {
    match (score_bound(lo), score_bound(hi)) {
        (Some(l), Some(h)) => Some((l, h)),
        _ => {
            ctx.error(b"ERR min or max is not a float");
            None
        }
    }
}

/// A lex bound as a minimum (`min`) or maximum: `-`, `+`, `[x` or `(x`.
/// `Some(None)`: a bound that selects nothing (`+` as a minimum, `-` as a
/// maximum).
fn lex_bound(b: &[u8], min: bool) -> Option<Option<Bound<&[u8]>>> {
    match (b, min) {
        (b"-", true) | (b"+", false) => Some(Some(Bound::Unbounded)),
        (b"+", true) | (b"-", false) => Some(None),
        _ => match b.split_first() {
            Some((b'[', rest)) => Some(Some(Bound::Included(rest))),
            Some((b'(', rest)) => Some(Some(Bound::Excluded(rest))),
            _ => None,
        },
    }
}

/// `min max` of a lex-range command: `Ok(None)` selects nothing; `Err`
/// (error written) if invalid.
#[allow(clippy::type_complexity)]
fn lex_range<'a>(
    ctx: &mut Ctx<'_>,
    lo: &'a [u8],
    hi: &'a [u8],
) -> Result<Option<(Bound<&'a [u8]>, Bound<&'a [u8]>)>, ()> {
    match (lex_bound(lo, true), lex_bound(hi, false)) {
        (Some(Some(l)), Some(Some(h))) => Ok(Some((l, h))),
        (Some(_), Some(_)) => Ok(None),
        _ => {
            ctx.error(b"ERR min or max not valid string range item");
            Err(())
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum By {
    Index,
    Score,
    Lex,
}

/// A parsed range request.
struct Query<'a> {
    by: By,
    rev: bool,
    offset: usize,
    count: usize,
    scores: bool,
    /// The two range arguments as given (for REV: max first).
    start: &'a [u8],
    stop: &'a [u8],
}

/// The range a query selects, its bounds parsed.
enum Selection<'a> {
    Index(i64, i64),
    Score(Bound<f64>, Bound<f64>),
    Lex(Bound<&'a [u8]>, Bound<&'a [u8]>),
    Nothing,
}

impl<'a> Query<'a> {
    /// Parses `start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
    /// [WITHSCORES]` from argument `at` (`store`: ZRANGESTORE, which takes
    /// no WITHSCORES). Errors are written.
    fn parse(ctx: &mut Ctx<'_>, cmd: &Command<'a>, at: usize, store: bool) -> Option<Query<'a>> {
        let mut q = Query {
            by: By::Index,
            rev: false,
            offset: 0,
            count: usize::MAX,
            scores: false,
            start: arg(cmd, at),
            stop: arg(cmd, at + 1),
        };
        let mut limit = false;
        let mut i = at + 2;
        while i < cmd.len() {
            let o = arg(cmd, i).to_ascii_uppercase();
            match &o[..] {
                b"BYSCORE" => q.by = By::Score,
                b"BYLEX" => q.by = By::Lex,
                b"REV" => q.rev = true,
                b"WITHSCORES" if !store => q.scores = true,
                b"LIMIT" if i + 2 < cmd.len() => {
                    let (Some(o), Some(c)) =
                        (parse_i64(arg(cmd, i + 1)), parse_i64(arg(cmd, i + 2)))
                    else {
                        ctx.raw(resp::ERR_NOT_INTEGER);
                        return None;
                    };
                    limit = true;
                    if o < 0 {
                        q.count = 0; // a negative offset selects nothing
                    } else {
                        q.offset = o as usize;
                        // A negative count is "all the rest", as in Redis.
                        q.count = usize::try_from(c).unwrap_or(usize::MAX);
                    }
                    i += 2;
                }
                _ => {
                    ctx.raw(resp::ERR_SYNTAX);
                    return None;
                }
            }
            i += 1;
        }
        if limit && q.by == By::Index {
            ctx.error(b"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
            return None;
        }
        if q.scores && q.by == By::Lex {
            ctx.error(b"ERR syntax error, WITHSCORES not supported in combination with BYLEX");
            return None;
        }
        Some(q)
    }

    /// The bounds, parsed (errors written).
    fn selection(&self, ctx: &mut Ctx<'_>) -> Option<Selection<'a>> {
        let (lo, hi) = if self.rev && self.by != By::Index {
            (self.stop, self.start)
        } else {
            (self.start, self.stop)
        };
        Some(match self.by {
            By::Index => match (parse_i64(lo), parse_i64(hi)) {
                (Some(a), Some(b)) => Selection::Index(a, b),
                _ => {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return None;
                }
            },
            By::Score => {
                let (l, h) = score_range(ctx, lo, hi)?;
                Selection::Score(l, h)
            }
            By::Lex => match lex_range(ctx, lo, hi).ok()? {
                Some((l, h)) => Selection::Lex(l, h),
                None => Selection::Nothing,
            },
        })
    }

    /// The members selected from `z`, in reply order.
    fn select<'d>(&self, z: &'d Dict, sel: &Selection<'_>) -> Vec<(&'d Member, f64)> {
        let page = |it: &mut dyn Iterator<Item = (&'d Member, f64)>| -> Vec<(&'d Member, f64)> {
            it.skip(self.offset).take(self.count).collect()
        };
        match *sel {
            Selection::Nothing => Vec::new(),
            Selection::Index(a, b) => {
                let n = z.len();
                let (from, to) = index_range(a, b, n);
                if self.rev {
                    let mut v = z.ranked(n - to, n - from);
                    v.reverse();
                    v
                } else {
                    z.ranked(from, to)
                }
            }
            Selection::Score(lo, hi) if self.rev => page(&mut z.by_score(lo, hi).rev()),
            Selection::Score(lo, hi) => page(&mut z.by_score(lo, hi)),
            Selection::Lex(lo, hi) => page(&mut z.by_lex(lo, hi, self.rev).into_iter()),
        }
    }
}

/// Answers a range query over the sorted set at `key`.
fn reply_range(ctx: &mut Ctx<'_>, key: &[u8], q: &Query<'_>) -> Step {
    let Some(sel) = q.selection(ctx) else {
        return Step::Done;
    };
    let _ = read(ctx, key, T, |ctx, z| {
        let hits = z.map_or_else(Vec::new, |z| q.select(z, &sel));
        reply_pairs(ctx, &hits, q.scores);
    });
    Step::Done
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
/// [WITHSCORES]`.
pub fn zrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(q) = Query::parse(ctx, cmd, 2, false) else {
        return Step::Done;
    };
    reply_range(ctx, arg(cmd, 1), &q)
}

/// The older range commands: ZRANGE's arguments with their own `by` and
/// direction, and only the options each took (WITHSCORES, LIMIT).
fn legacy(ctx: &mut Ctx<'_>, cmd: &Command<'_>, by: By, rev: bool) -> Step {
    let mut q = Query {
        by,
        rev,
        offset: 0,
        count: usize::MAX,
        scores: false,
        start: arg(cmd, 2),
        stop: arg(cmd, 3),
    };
    let mut i = 4;
    while i < cmd.len() {
        let o = arg(cmd, i);
        if o.eq_ignore_ascii_case(b"WITHSCORES") && by != By::Lex {
            q.scores = true;
        } else if o.eq_ignore_ascii_case(b"LIMIT") && by != By::Index && i + 2 < cmd.len() {
            let (Some(off), Some(c)) = (parse_i64(arg(cmd, i + 1)), parse_i64(arg(cmd, i + 2)))
            else {
                ctx.raw(resp::ERR_NOT_INTEGER);
                return Step::Done;
            };
            if off < 0 {
                q.count = 0;
            } else {
                q.offset = off as usize;
                q.count = usize::try_from(c).unwrap_or(usize::MAX);
            }
            i += 2;
        } else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
        i += 1;
    }
    reply_range(ctx, arg(cmd, 1), &q)
}

/// `ZREVRANGE key start stop [WITHSCORES]`.
pub fn zrevrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    legacy(ctx, cmd, By::Index, true)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub fn zrangebyscore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    legacy(ctx, cmd, By::Score, false)
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`.
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    legacy(ctx, cmd, By::Score, true)
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`.
pub fn zrangebylex(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    legacy(ctx, cmd, By::Lex, false)
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`.
pub fn zrevrangebylex(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    legacy(ctx, cmd, By::Lex, true)
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset
/// count]`: the number of members stored (none: `dst` is removed).
pub fn zrangestore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(q) = Query::parse(ctx, cmd, 3, true) else {
        return Step::Done;
    };
    let Some(sel) = q.selection(ctx) else {
        return Step::Done;
    };
    let Ok(picked) = read(ctx, arg(cmd, 2), T, |_, z| {
        let mut out = Dict::sorted();
        if let Some(z) = z {
            for (m, s) in q.select(z, &sel) {
                out.set_score(m.bytes(), s);
            }
        }
        out
    }) else {
        return Step::Done;
    };
    let dst = arg(cmd, 1);
    let stored = if picked.is_empty() {
        ctx.db.delete(dst);
        Ok(())
    } else {
        ctx.db.put_dict(dst, Kind::ZSet, &picked, Meta::default())
    };
    match stored {
        Ok(()) => ctx.int(picked.len() as i64),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `ZLEXCOUNT key min max`.
pub fn zlexcount(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Ok(range) = lex_range(ctx, arg(cmd, 2), arg(cmd, 3)) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, z| {
        let n = match (z, range) {
            (Some(z), Some((lo, hi))) => z.by_lex(lo, hi, false).len(),
            _ => 0,
        };
        ctx.int(n as i64);
    });
    Step::Done
}

/// `ZREMRANGEBYLEX key min max`: members removed.
pub fn zremrangebylex(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Ok(range) = lex_range(ctx, arg(cmd, 2), arg(cmd, 3)) else {
        return Step::Done;
    };
    if let Ok(n) = shrink(ctx, arg(cmd, 1), T, |z| {
        let Some((lo, hi)) = range else {
            return 0;
        };
        remove_picked(z, |z| z.by_lex(lo, hi, false))
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}
