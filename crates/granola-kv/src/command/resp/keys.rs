//! Keyspace commands: DEL UNLINK EXISTS EXPIRE PEXPIRE TTL PTTL.

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `DEL key...` / `UNLINK key...`.
pub fn del(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let db = ctx.db;
    let deleted = cmd.args().skip(1).filter(|k| db.delete(k)).count();
    ctx.int(deleted as i64);
    Step::Done
}

/// `EXISTS key...`.
pub fn exists(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let db = ctx.db;
    let found = cmd.args().skip(1).filter(|k| db.get(k).is_some()).count();
    ctx.int(found as i64);
    Step::Done
}

/// `EXPIRE key seconds`.
pub fn expire(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    expire_in(ctx, cmd, 1000)
}

/// `PEXPIRE key ms`.
pub fn pexpire(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    expire_in(ctx, cmd, 1)
}

fn expire_in(ctx: &mut Ctx<'_>, cmd: &Command<'_>, unit: i64) -> Step {
    let Some(t) = parse_i64(arg(cmd, 2)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let key = arg(cmd, 1);
    let ms = t.saturating_mul(unit);
    let at = if ms <= 0 {
        1
    } else {
        ctx.db.now_ms().saturating_add(ms as u64)
    };
    let done = ctx.db.touch(key, at).is_some();
    if ms <= 0 && done {
        ctx.db.delete(key);
    }
    ctx.int(i64::from(done));
    Step::Done
}

/// `TTL key`.
pub fn ttl(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    ttl_in(ctx, cmd, 1000)
}

/// `PTTL key`.
pub fn pttl(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    ttl_in(ctx, cmd, 1)
}

fn ttl_in(ctx: &mut Ctx<'_>, cmd: &Command<'_>, unit: i64) -> Step {
    let v = match ctx.db.get(arg(cmd, 1)) {
        None => -2,
        Some(i) if i.expires_at_ms() == 0 => -1,
        Some(i) => {
            let left = i.expires_at_ms().saturating_sub(ctx.db.now_ms()) as i64;
            (left + unit / 2) / unit
        }
    };
    ctx.int(v);
    Step::Done
}
