//! Hash commands: HSET HMSET HSETNX HGET HMGET HGETALL HDEL HLEN HEXISTS
//! HSTRLEN HKEYS HVALS HINCRBY HINCRBYFLOAT HSCAN. Stored as described in
//! [`super::collections`]; values go out by reference.

use super::collections::{elements, update, CType};
use super::strings::parse_float;
use super::{glob, parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use granola::Buf;

const T: CType = CType::Hash;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// Sets `pairs` in the flat field/value body; returns how many fields were
/// new.
fn put(body: &mut Vec<Vec<u8>>, field: &[u8], value: &[u8]) -> bool {
    match body.chunks(2).position(|p| p[0] == field) {
        Some(i) => {
            body[2 * i + 1] = value.to_vec();
            false
        }
        None => {
            body.push(field.to_vec());
            body.push(value.to_vec());
            true
        }
    }
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
    let pairs: Vec<&[u8]> = cmd.args().skip(2).collect();
    if let Ok(added) = update(ctx, arg(cmd, 1), T, |h| {
        let mut h = h.unwrap_or_default();
        let added = pairs.chunks(2).filter(|p| put(&mut h, p[0], p[1])).count();
        (Some(h), added)
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
    if let Ok(set) = update(ctx, arg(cmd, 1), T, |h| {
        let mut h = h.unwrap_or_default();
        if h.chunks(2).any(|p| p[0] == f) {
            (None, false)
        } else {
            put(&mut h, f, v);
            (Some(h), true)
        }
    }) {
        ctx.int(i64::from(set));
    }
    Step::Done
}

/// The value of `field` in a stored hash, by reference.
fn lookup(item: &crate::store::Item, field: &[u8]) -> Option<Buf> {
    let mut it = elements(item, T);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        if k[..] == *field {
            return Some(v);
        }
    }
    None
}

/// `HGET key field`.
pub fn hget(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        match h.and_then(|h| lookup(&h, arg(cmd, 2))) {
            Some(v) => ctx.bulk(&v),
            None => ctx.null(),
        }
    }
    Step::Done
}

/// `HMGET key field...`.
pub fn hmget(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        ctx.array(cmd.len() - 2);
        for f in cmd.args().skip(2) {
            match h.as_ref().and_then(|h| lookup(h, f)) {
                Some(v) => ctx.bulk(&v),
                None => ctx.null(),
            }
        }
    }
    Step::Done
}

/// `HGETALL key`: a map (RESP3) / flat array (RESP2).
pub fn hgetall(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        let elems: Vec<Buf> = h.map(|h| elements(&h, T).collect()).unwrap_or_default();
        ctx.map(elems.len() / 2);
        for e in &elems {
            ctx.bulk(e);
        }
    }
    Step::Done
}

/// `HKEYS key`.
pub fn hkeys(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    half(ctx, cmd, 0)
}

/// `HVALS key`.
pub fn hvals(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    half(ctx, cmd, 1)
}

fn half(ctx: &mut Ctx<'_>, cmd: &Command<'_>, which: usize) -> Step {
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        let elems: Vec<Buf> = h
            .map(|h| elements(&h, T).skip(which).step_by(2).collect())
            .unwrap_or_default();
        ctx.array(elems.len());
        for e in &elems {
            ctx.bulk(e);
        }
    }
    Step::Done
}

/// `HDEL key field...`.
pub fn hdel(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let fields: Vec<&[u8]> = cmd.args().skip(2).collect();
    if let Ok(n) = update(ctx, arg(cmd, 1), T, |h| match h {
        None => (None, 0),
        Some(h) => {
            let mut kept = Vec::with_capacity(h.len());
            let mut removed = 0;
            for p in h.chunks(2) {
                if fields.contains(&&p[0][..]) {
                    removed += 1;
                } else {
                    kept.extend_from_slice(p);
                }
            }
            (Some(kept).filter(|_| removed > 0), removed)
        }
    }) {
        ctx.int(n);
    }
    Step::Done
}

/// `HLEN key`.
pub fn hlen(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        ctx.int(h.map_or(0, |h| (h.list_len() - 1) / 2) as i64);
    }
    Step::Done
}

/// `HEXISTS key field`.
pub fn hexists(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        let found = h.is_some_and(|h| lookup(&h, arg(cmd, 2)).is_some());
        ctx.int(i64::from(found));
    }
    Step::Done
}

/// `HSTRLEN key field`.
pub fn hstrlen(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        let n = h
            .and_then(|h| lookup(&h, arg(cmd, 2)))
            .map_or(0, |v| v.len());
        ctx.int(n as i64);
    }
    Step::Done
}

/// `HINCRBY key field delta`.
pub fn hincrby(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(delta) = parse_i64(arg(cmd, 3)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let f = arg(cmd, 2);
    match update(ctx, arg(cmd, 1), T, |h| {
        let mut h = h.unwrap_or_default();
        let cur = match h.chunks(2).find(|p| p[0] == f) {
            None => 0,
            Some(p) => match parse_i64(&p[1]) {
                Some(v) => v,
                None => return (None, Err(&b"ERR hash value is not an integer"[..])),
            },
        };
        match cur.checked_add(delta) {
            Some(n) => {
                put(&mut h, f, n.to_string().as_bytes());
                (Some(h), Ok(n))
            }
            None => (None, Err(&b"ERR increment or decrement would overflow"[..])),
        }
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
    match update(ctx, arg(cmd, 1), T, |h| {
        let mut h = h.unwrap_or_default();
        let cur = match h.chunks(2).find(|p| p[0] == f) {
            None => 0.0,
            Some(p) => match parse_float(&p[1]) {
                Some(v) => v,
                None => return (None, Err(&b"ERR hash value is not a float"[..])),
            },
        };
        let n = cur + delta;
        if !n.is_finite() {
            return (
                None,
                Err(&b"ERR increment would produce NaN or Infinity"[..]),
            );
        }
        let text = resp::format_double(n);
        put(&mut h, f, text.as_bytes());
        (Some(h), Ok(text))
    }) {
        Ok(Ok(t)) => ctx.bytes(t.as_bytes()),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `HSCAN key cursor [MATCH pattern] [COUNT n]`: the whole hash in one
/// call (cursor 0), as Redis does for small hashes.
pub fn hscan(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(pattern) = scan_options(ctx, cmd) else {
        return Step::Done;
    };
    if let Ok(h) = ctx.coll(arg(cmd, 1), T) {
        let elems: Vec<Buf> = h.map(|h| elements(&h, T).collect()).unwrap_or_default();
        let hits: Vec<&[Buf]> = elems
            .chunks(2)
            .filter(|p| pattern.is_none_or(|pat| glob::matches(pat, &p[0], false)))
            .collect();
        ctx.array(2);
        ctx.bytes(b"0");
        ctx.array(hits.len() * 2);
        for p in hits {
            ctx.bulk(&p[0]);
            ctx.bulk(&p[1]);
        }
    }
    Step::Done
}

/// Parses `cursor [MATCH p] [COUNT n] [NOVALUES]` of HSCAN/SSCAN/ZSCAN;
/// `Some(pattern)` or None (error written).
pub fn scan_options<'a>(ctx: &mut Ctx<'_>, cmd: &Command<'a>) -> Option<Option<&'a [u8]>> {
    if std::str::from_utf8(arg(cmd, 2))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .is_none()
    {
        ctx.error(b"ERR invalid cursor");
        return None;
    }
    let mut pattern = None;
    let mut opts = cmd.args().skip(3);
    while let Some(o) = opts.next() {
        let v = opts.next();
        match v {
            Some(v) if o.eq_ignore_ascii_case(b"MATCH") => pattern = Some(v),
            Some(v) if o.eq_ignore_ascii_case(b"COUNT") && parse_i64(v).is_some_and(|n| n > 0) => {}
            _ => {
                ctx.raw(resp::ERR_SYNTAX);
                return None;
            }
        }
    }
    Some(pattern)
}
