//! The blocking sorted set commands, `BZPOPMIN`, `BZPOPMAX` and `BZMPOP`
//! (how they wait: [`super::blocking`]), and `ZMPOP`, which shares
//! `BZMPOP`'s arguments.

use super::blocking;
use super::zsets::pop_scored;
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::Command;
use crate::store::Kind;

/// `BZPOPMIN key [key ...] timeout`: `[key, member, score]` from the
/// first non-empty sorted set, or a null array at the timeout.
pub fn bzpopmin(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    blocking::keys_then_timeout(ctx, cmd, |ctx, keys| {
        pop_from(ctx, keys, true, 1, Reply::Flat)
    })
}

/// `BZPOPMAX key [key ...] timeout`.
pub fn bzpopmax(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    blocking::keys_then_timeout(ctx, cmd, |ctx, keys| {
        pop_from(ctx, keys, false, 1, Reply::Flat)
    })
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
        if blocking::other_type_while_waiting(ctx, key, Kind::ZSet) {
            continue;
        }
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
    blocking::multi_pop(ctx, cmd, false, ZSET_ENDS, |ctx, keys, min, n| {
        pop_from(ctx, keys, min, n, Reply::Nested)
    })
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`.
pub fn bzmpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    blocking::multi_pop(ctx, cmd, true, ZSET_ENDS, |ctx, keys, min, n| {
        pop_from(ctx, keys, min, n, Reply::Nested)
    })
}
