//! Hash commands: HSET HMSET HSETNX HGET HMGET HGETALL HDEL HLEN HEXISTS
//! HSTRLEN HKEYS HVALS HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN. A hash is the store's
//! table (see [`super::collections`]): O(1) per field.

use super::collection_scan::scan_step;
use super::collections::{edit, growth_of, read, reply_random, shrink, CType};
use super::sets::count_arg;
use super::strings::parse_float;
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::Dict;

const T: CType = CType::Hash;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `HSET key field value [field value ...]`: fields added.
pub fn hset(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    hset_inner(ctx, cmd, false)
}

/// `HMSET key field value [field value ...]`: `+OK`.
pub fn hmset(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    hset_inner(ctx, cmd, true)
}

fn hset_inner(ctx: &mut Ctx<'_>, cmd: &Command<'_>, ok: bool) -> Step {
    if cmd.len() % 2 != 0 {
        resp::write_wrong_arity(ctx.out, cmd.name());
        return Step::Done;
    }
    let growth = growth_of((cmd.len() - 2) / 2, cmd.args().skip(2));
    if let Ok(added) = edit(ctx, arg(cmd, 1), T, growth, |h| {
        let mut args = cmd.args().skip(2);
        let mut added = 0;
        while let (Some(f), Some(v)) = (args.next(), args.next()) {
            added += usize::from(h.insert(f, v));
        }
        added
    }) {
        if ok {
            ctx.ok();
        } else {
            ctx.int(added as i64);
        }
    }
    Step::Done
}

/// `HSETNX key field value`.
pub fn hsetnx(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (f, v) = (arg(cmd, 2), arg(cmd, 3));
    if let Ok(set) = edit(ctx, arg(cmd, 1), T, growth_of(1, [f, v]), |h| {
        !h.contains(f) && h.insert(f, v)
    }) {
        ctx.int(i64::from(set));
    }
    Step::Done
}

/// `HGET key field`.
pub fn hget(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        match h.and_then(|h| h.value(arg(cmd, 2))) {
            Some(v) => ctx.element(v),
            None => ctx.null(),
        }
    });
    Step::Done
}

/// `HMGET key field...`.
pub fn hmget(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        ctx.array(cmd.len() - 2);
        for f in cmd.args().skip(2) {
            match h.and_then(|h| h.value(f)) {
                Some(v) => ctx.element(v),
                None => ctx.null(),
            }
        }
    });
    Step::Done
}

/// `HGETALL key`: a map (RESP3) / flat array (RESP2).
pub fn hgetall(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        ctx.map(h.map_or(0, Dict::len));
        for (f, v) in h.iter().flat_map(|h| h.iter()) {
            ctx.element(f);
            ctx.element(v);
        }
    });
    Step::Done
}

/// `HKEYS key`.
pub fn hkeys(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    half(ctx, cmd, false)
}

/// `HVALS key`.
pub fn hvals(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    half(ctx, cmd, true)
}

/// HKEYS (`values` false) or HVALS.
fn half(ctx: &mut Ctx<'_>, cmd: &Command<'_>, values: bool) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        ctx.array(h.map_or(0, Dict::len));
        for (f, v) in h.iter().flat_map(|h| h.iter()) {
            ctx.element(if values { v } else { f });
        }
    });
    Step::Done
}

/// `HDEL key field...`.
pub fn hdel(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(n) = shrink(ctx, arg(cmd, 1), T, |h| {
        cmd.args().skip(2).filter(|f| h.remove(f)).count()
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `HLEN key`.
pub fn hlen(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        ctx.int(h.map_or(0, Dict::len) as i64)
    });
    Step::Done
}

/// `HEXISTS key field`.
pub fn hexists(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        ctx.int(i64::from(h.is_some_and(|h| h.contains(arg(cmd, 2)))))
    });
    Step::Done
}

/// `HSTRLEN key field`.
pub fn hstrlen(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        let n = h.and_then(|h| h.get(arg(cmd, 2))).map_or(0, <[u8]>::len);
        ctx.int(n as i64)
    });
    Step::Done
}

/// Room for a number written into a field (i64 or a formatted double).
const NUMBER_BYTES: usize = 32;

/// `HINCRBY key field delta`.
pub fn hincrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(delta) = parse_i64(arg(cmd, 3)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let f = arg(cmd, 2);
    let growth = growth_of(1, [f, &[0; NUMBER_BYTES][..]]);
    match edit(ctx, arg(cmd, 1), T, growth, |h| {
        let cur = match h.get(f) {
            None => 0,
            Some(v) => match parse_i64(v) {
                Some(v) => v,
                None => return Err(&b"ERR hash value is not an integer"[..]),
            },
        };
        let n = cur
            .checked_add(delta)
            .ok_or(&b"ERR increment or decrement would overflow"[..])?;
        h.insert(f, n.to_string().as_bytes());
        Ok(n)
    }) {
        Ok(Ok(n)) => ctx.int(n),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `HINCRBYFLOAT key field delta`.
pub fn hincrbyfloat(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(delta) = parse_float(arg(cmd, 3)) else {
        ctx.error(b"ERR value is not a valid float");
        return Step::Done;
    };
    let f = arg(cmd, 2);
    let growth = growth_of(1, [f, &[0; NUMBER_BYTES][..]]);
    match edit(ctx, arg(cmd, 1), T, growth, |h| {
        let cur = match h.get(f) {
            None => 0.0,
            Some(v) => parse_float(v).ok_or(&b"ERR hash value is not a float"[..])?,
        };
        let n = cur + delta;
        if !n.is_finite() {
            return Err(&b"ERR increment would produce NaN or Infinity"[..]);
        }
        let text = resp::format_double(n);
        h.insert(f, text.as_bytes());
        Ok(text)
    }) {
        Ok(Ok(t)) => ctx.bytes(t.as_bytes()),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `HRANDFIELD key [count [WITHVALUES]]` (negative count: repeats).
pub fn hrandfield(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let values = match cmd.len() {
        2 | 3 => false,
        4 if arg(cmd, 3).eq_ignore_ascii_case(b"WITHVALUES") => true,
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    };
    let Ok(count) = count_arg(ctx, cmd, true) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), T, |ctx, h| {
        reply_random(ctx, h, count, values, |ctx, v| ctx.element(v));
    });
    Step::Done
}

/// `HSCAN key cursor [MATCH pattern] [COUNT n] [NOVALUES]`.
pub fn hscan(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    scan_step(
        ctx,
        cmd,
        T,
        true,
        |o| if o.no_values { 1 } else { 2 },
        |ctx, o, f, v| {
            ctx.element(f);
            if !o.no_values {
                ctx.element(v);
            }
        },
    )
}
