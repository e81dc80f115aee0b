//! The blocking sorted set commands, `BZPOPMIN`, `BZPOPMAX` and `BZMPOP`
//! (how they wait: [`super::blocking`]), and `ZMPOP`, which shares
//! `BZMPOP`'s arguments.

use super::blocking::{self, wait_for, MultiPop};
use super::zsets::pop_scored;
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::Command;

/// `BZPOPMIN key [key ...] timeout`.
pub fn bzpopmin(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    pop_first(ctx, cmd, true)
}

/// `BZPOPMAX key [key ...] timeout`.
pub fn bzpopmax(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    pop_first(ctx, cmd, false)
}

/// Pops the lowest (highest) member of the first non-empty sorted set of
/// the keys; answers `[key, member, score]`, or a null array at the
/// timeout.
fn pop_first(ctx: &mut Ctx<'_>, cmd: &Command<'_>, min: bool) -> Step {
    let n = cmd.len();
    let Some(wait) = blocking::timeout(ctx, cmd.arg(n - 1).unwrap_or_default()) else {
        return Step::Done;
    };
    let keys: Vec<&[u8]> = (1..n - 1).filter_map(|i| cmd.arg(i)).collect();
    wait_for(
        ctx,
        &keys,
        wait,
        |ctx| pop_from(ctx, &keys, min, 1, Reply::Flat),
        |ctx| ctx.null_array(),
    )
}

/// How a pop answers.
#[derive(Clone, Copy)]
enum Reply {
    /// `[key, member, score]` (BZPOPMIN, BZPOPMAX).
    Flat,
    /// `[key, [[member, score], ...]]` (ZMPOP, BZMPOP).
    Nested,
}

/// Pops up to `count` members from the first non-empty sorted set of
/// `keys`; true once it answered (members, or an error for a key of
/// another type), false (nothing written) if every set is empty.
fn pop_from(ctx: &mut Ctx<'_>, keys: &[&[u8]], min: bool, count: usize, reply: Reply) -> bool {
    for key in keys {
        let Some(popped) = pop_scored(ctx, key, count, min) else {
            return true; // WRONGTYPE written
        };
        if popped.is_empty() {
            continue;
        }
        match reply {
            Reply::Flat => {
                ctx.array(3);
                ctx.bytes(key);
                ctx.member(&popped[0].0);
                ctx.double(popped[0].1);
            }
            Reply::Nested => {
                ctx.array(2);
                ctx.bytes(key);
                ctx.array(popped.len());
                for (m, s) in &popped {
                    ctx.array(2);
                    ctx.member(m);
                    ctx.double(*s);
                }
            }
        }
        return true;
    }
    false
}

/// `MIN` and `MAX`.
const ZSET_ENDS: [&[u8]; 2] = [b"MIN", b"MAX"];

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`.
pub fn zmpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(m) = MultiPop::parse(ctx, cmd, 1, ZSET_ENDS) else {
        return Step::Done;
    };
    if !pop_from(ctx, &m.keys, m.first_end, m.count, Reply::Nested) {
        ctx.null_array();
    }
    Step::Done
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`.
pub fn bzmpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(wait) = blocking::timeout(ctx, cmd.arg(1).unwrap_or_default()) else {
        return Step::Done;
    };
    let Some(m) = MultiPop::parse(ctx, cmd, 2, ZSET_ENDS) else {
        return Step::Done;
    };
    wait_for(
        ctx,
        &m.keys,
        wait,
        |ctx| pop_from(ctx, &m.keys, m.first_end, m.count, Reply::Nested),
        |ctx| ctx.null_array(),
    )
}
