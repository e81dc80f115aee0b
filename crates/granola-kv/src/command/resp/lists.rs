//! List commands: RPUSH LPUSH LRANGE LLEN LINDEX.

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `RPUSH key element...`.
pub fn rpush(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    push(ctx, cmd, false)
}

/// `LPUSH key element...`.
pub fn lpush(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    push(ctx, cmd, true)
}

fn push(ctx: &mut Ctx<'_>, cmd: &Command<'_>, front: bool) -> Step {
    let values: Vec<&[u8]> = cmd.args().skip(2).collect();
    match ctx.db.list_push(arg(cmd, 1), &values, front) {
        Ok(len) => ctx.int(len as i64),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `LRANGE key start stop`: pauses between elements when the reply queue
/// fills. The list is read again on resume; the reply keeps the element
/// count its header announced (a list shortened meanwhile ends with nulls),
/// and every element sent is whole.
pub fn lrange(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (Some(a), Some(b)) = (parse_i64(arg(cmd, 2)), parse_i64(arg(cmd, 3))) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let item = if ctx.resume == 0 {
        match ctx.list(arg(cmd, 1)) {
            Ok(i) => i,
            Err(super::Replied) => return Step::Done,
        }
    } else {
        ctx.db
            .get(arg(cmd, 1))
            .filter(|i| i.kind() == crate::store::Kind::List)
    };
    // resume = (announced count << 32) | next element.
    let (count, from) = if ctx.resume == 0 {
        let Some(l) = &item else {
            ctx.raw(resp::EMPTY_ARRAY);
            return Step::Done;
        };
        let count = l.list_range(a, b).count().min(u32::MAX as usize);
        ctx.array(count);
        (count, 0)
    } else {
        (ctx.resume >> 32, ctx.resume & 0xffff_ffff)
    };
    let mut elems = item.as_ref().map(|l| l.list_range(a, b).skip(from));
    for n in from..count {
        if n > from && ctx.full() {
            return Step::Pause((count << 32) | n);
        }
        match elems.as_mut().and_then(Iterator::next) {
            Some(v) => ctx.bulk(&v),
            None => ctx.null(),
        }
    }
    Step::Done
}

/// `LLEN key`.
pub fn llen(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(item) = ctx.list(arg(cmd, 1)) {
        ctx.int(item.map_or(0, |l| l.list_len() as i64));
    }
    Step::Done
}

/// `LINDEX key index`.
pub fn lindex(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(i) = parse_i64(arg(cmd, 2)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    if let Ok(item) = ctx.list(arg(cmd, 1)) {
        match item.and_then(|l| l.list_get(i)) {
            Some(v) => ctx.bulk(&v),
            None => ctx.null(),
        }
    }
    Step::Done
}
