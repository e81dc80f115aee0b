//! String commands: GET SET MGET MSET INCR DECR INCRBY DECRBY.

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Kind, Meta, SetMode, StoreError};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `GET key`.
pub fn get(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(item) = ctx.string(arg(cmd, 1)) {
        match item {
            Some(i) => ctx.bulk(&i.value()),
            None => ctx.null(),
        }
    }
    Step::Done
}

/// `MGET key...`: pauses between keys when the reply queue fills.
pub fn mget(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let from = ctx.resume;
    if from == 0 {
        ctx.array(cmd.len() - 1);
    }
    let from = from.max(1);
    for (n, key) in cmd.args().enumerate().skip(from) {
        if n > from && ctx.full() {
            return Step::Pause(n);
        }
        match ctx.db.get(key) {
            Some(i) if i.kind() == Kind::String => ctx.bulk(&i.value()),
            _ => ctx.null(),
        }
    }
    Step::Done
}

/// `MSET key value [key value ...]` (not atomic across keys).
pub fn mset(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() % 2 == 0 {
        resp::write_wrong_arity(ctx.out, cmd.name());
        return Step::Done;
    }
    let mut args = cmd.args().skip(1);
    let mut failed = None;
    while let (Some(k), Some(v)) = (args.next(), args.next()) {
        if let Err(e) = ctx.db.set(k, v, Meta::default(), SetMode::Set) {
            failed = Some(e);
        }
    }
    match failed {
        None => ctx.ok(),
        Some(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `SET key value [EX s | PX ms] [NX | XX]`.
pub fn set(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let mut mode = SetMode::Set;
    let mut expires = 0u64;
    let mut opts = cmd.args().skip(3);
    while let Some(o) = opts.next() {
        let ttl_unit = if o.eq_ignore_ascii_case(b"EX") {
            Some(1000)
        } else if o.eq_ignore_ascii_case(b"PX") {
            Some(1)
        } else {
            None
        };
        if let Some(unit) = ttl_unit {
            match opts.next().and_then(parse_i64) {
                Some(t) if t > 0 && expires == 0 => {
                    expires = ctx
                        .db
                        .now_ms()
                        .saturating_add((t as u64).saturating_mul(unit));
                }
                Some(t) if t <= 0 => {
                    ctx.error(b"ERR invalid expire time in 'set' command");
                    return Step::Done;
                }
                _ => {
                    ctx.raw(resp::ERR_SYNTAX);
                    return Step::Done;
                }
            }
        } else if o.eq_ignore_ascii_case(b"NX") && mode == SetMode::Set {
            mode = SetMode::Add;
        } else if o.eq_ignore_ascii_case(b"XX") && mode == SetMode::Set {
            mode = SetMode::Replace;
        } else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    }
    let meta = Meta {
        flags: 0,
        expires_at_ms: expires,
    };
    // Redis SET replaces a list too; the store's Set mode does the same.
    match ctx.db.set(arg(cmd, 1), arg(cmd, 2), meta, mode) {
        Ok(_) => ctx.ok(),
        Err(StoreError::NotStored | StoreError::NotFound | StoreError::Exists) => ctx.null(),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `INCR key`.
pub fn incr(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    incr_by(ctx, arg(cmd, 1), 1);
    Step::Done
}

/// `DECR key`.
pub fn decr(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    incr_by(ctx, arg(cmd, 1), -1);
    Step::Done
}

/// `INCRBY key delta`.
pub fn incrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match parse_i64(arg(cmd, 2)) {
        Some(d) => incr_by(ctx, arg(cmd, 1), d),
        None => ctx.raw(resp::ERR_NOT_INTEGER),
    }
    Step::Done
}

/// `DECRBY key delta`.
pub fn decrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match parse_i64(arg(cmd, 2)) {
        Some(d) if d != i64::MIN => incr_by(ctx, arg(cmd, 1), -d),
        _ => ctx.raw(resp::ERR_NOT_INTEGER),
    }
    Step::Done
}

/// INCR/DECR with Redis semantics (signed 64-bit, missing key = 0,
/// overflow is an error): read, compute, write back with a CAS so
/// concurrent increments are not lost.
fn incr_by(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) {
    for _ in 0..64 {
        let (current, mode, meta) = match ctx.db.get(key) {
            None => (0, SetMode::Add, Meta::default()),
            Some(i) if i.kind() != Kind::String => {
                ctx.raw(resp::ERR_WRONGTYPE);
                return;
            }
            Some(i) => match parse_i64(i.value_bytes()) {
                Some(v) => (
                    v,
                    SetMode::Cas(i.cas()),
                    Meta {
                        flags: i.flags(),
                        expires_at_ms: i.expires_at_ms(),
                    },
                ),
                None => {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return;
                }
            },
        };
        let Some(next) = current.checked_add(delta) else {
            ctx.raw(resp::ERR_OVERFLOW);
            return;
        };
        match ctx.db.set(key, next.to_string().as_bytes(), meta, mode) {
            Ok(_) => {
                ctx.int(next);
                return;
            }
            // Someone else wrote in between: retry.
            Err(StoreError::Exists | StoreError::NotStored | StoreError::NotFound) => {}
            Err(e) => {
                ctx.store_error(e);
                return;
            }
        }
    }
    ctx.error(b"ERR too much contention on key");
}
