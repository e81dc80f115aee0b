//! The blocking list commands, `BLPOP`, `BRPOP`, `BLMPOP`, `BLMOVE` and
//! `BRPOPLPUSH` (how they wait: [`super::blocking`]), and `LMPOP`, which
//! shares `BLMPOP`'s arguments.

use super::blocking::{self, wait_for};
use super::lists::{move_value, side, Moved};
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::Kind;
use std::time::Duration;

/// `BLPOP key [key ...] timeout`: `[key, element]` from the first
/// non-empty list, or a null array at the timeout.
pub fn blpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    blocking::keys_then_timeout(ctx, cmd, |ctx, keys| {
        pop_from(ctx, keys, true, 1, Reply::KeyAndElement)
    })
}

/// `BRPOP key [key ...] timeout`.
pub fn brpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    blocking::keys_then_timeout(ctx, cmd, |ctx, keys| {
        pop_from(ctx, keys, false, 1, Reply::KeyAndElement)
    })
}

/// How a pop answers.
#[derive(Clone, Copy)]
enum Reply {
    /// `[key, element]` (BLPOP, BRPOP).
    KeyAndElement,
    /// `[key, [element, ...]]` (LMPOP, BLMPOP).
    KeyAndElements,
}

/// Pops up to `count` elements from the first non-empty list of `keys`;
/// true once it answered (elements, or an error for a key of another
/// type), false (nothing written) if every list is empty.
fn pop_from(ctx: &mut Ctx<'_>, keys: &[&[u8]], front: bool, count: usize, reply: Reply) -> bool {
    for key in keys {
        if blocking::other_type_while_waiting(ctx, key, Kind::List) {
            continue;
        }
        // The store refuses other kinds (WRONGTYPE) under the key's lock.
        match ctx.db.list_pop(key, count, front) {
            Err(e) => {
                ctx.store_error(e);
                return true;
            }
            Ok(Some(popped)) if !popped.is_empty() => {
                ctx.array(2);
                ctx.bytes(key);
                match reply {
                    Reply::KeyAndElement => ctx.bulk(&popped[0]),
                    Reply::KeyAndElements => {
                        ctx.array(popped.len());
                        for v in &popped {
                            ctx.bulk(v);
                        }
                    }
                }
                return true;
            }
            Ok(_) => {}
        }
    }
    false
}

/// `LEFT` and `RIGHT`.
const LIST_ENDS: [&[u8]; 2] = [b"LEFT", b"RIGHT"];

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
pub fn lmpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    blocking::multi_pop(ctx, cmd, false, LIST_ENDS, |ctx, keys, front, n| {
        pop_from(ctx, keys, front, n, Reply::KeyAndElements)
    })
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
pub fn blmpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    blocking::multi_pop(ctx, cmd, true, LIST_ENDS, |ctx, keys, front, n| {
        pop_from(ctx, keys, front, n, Reply::KeyAndElements)
    })
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`.
pub fn blmove(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let arg = |i| cmd.arg(i).unwrap_or_default();
    let (Some(from_left), Some(to_left)) = (side(arg(3)), side(arg(4))) else {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    };
    let Some(wait) = blocking::timeout(ctx, arg(5)) else {
        return Step::Done;
    };
    move_waiting(ctx, arg(1), arg(2), from_left, to_left, wait)
}

/// `BRPOPLPUSH source destination timeout`.
pub fn brpoplpush(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let arg = |i| cmd.arg(i).unwrap_or_default();
    let Some(wait) = blocking::timeout(ctx, arg(3)) else {
        return Step::Done;
    };
    move_waiting(ctx, arg(1), arg(2), false, true, wait)
}

/// Moves one element from `src` to `dst` once `src` has one; answers the
/// element, or a null at the timeout.
fn move_waiting(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
    wait: Option<Duration>,
) -> Step {
    wait_for(
        ctx,
        &[src],
        wait,
        |ctx| {
            if blocking::other_type_while_waiting(ctx, src, Kind::List) {
                return false;
            }
            match move_value(ctx, src, dst, from_left, to_left) {
                Moved::Replied => true,
                Moved::Empty => false,
                Moved::Value(v) => {
                    ctx.bytes(&v);
                    true
                }
            }
        },
        |ctx| ctx.null(),
    )
}
