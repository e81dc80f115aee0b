//! List commands: RPUSH LPUSH RPUSHX LPUSHX LPOP RPOP LRANGE LLEN LINDEX
//! LSET LREM LTRIM LINSERT LPOS LMOVE RPOPLPUSH.

use super::collections::update_list;
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
    // Another type at the key is the store's WrongType.
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
    let bounds = item.as_ref().map(|l| l.list_bounds(a, b));
    // resume = (announced count << 32) | next element.
    let (count, from) = if ctx.resume == 0 {
        let Some((lo, hi)) = bounds else {
            ctx.raw(resp::EMPTY_ARRAY);
            return Step::Done;
        };
        let count = (hi - lo).min(u32::MAX as usize);
        ctx.array(count);
        (count, 0)
    } else {
        (ctx.resume >> 32, ctx.resume & 0xffff_ffff)
    };
    // Elements are written while the list's lock is held: those below the
    // copy threshold are copied straight from their chunk (no reference
    // taken), larger ones go out by reference.
    let mut n = from;
    let mut paused = false;
    if let (Some(l), Some((lo, hi))) = (&item, bounds) {
        l.list_visit(lo + from, hi, |e| {
            if n >= count {
                return false;
            }
            if n > from && ctx.full() {
                paused = true;
                return false;
            }
            let v = e.bytes();
            if ctx.copies(v.len()) {
                ctx.bytes(v);
            } else {
                match e.buf() {
                    Some(buf) => ctx.bulk(&buf),
                    None => ctx.bytes(v),
                }
            }
            n += 1;
            true
        });
    }
    // A list shortened since the header was sent ends with nulls.
    for k in n..count {
        if paused || (k > from && ctx.full()) {
            return Step::Pause((count << 32) | k);
        }
        ctx.null();
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
    // The key first, then the index, in Redis's order of errors.
    let Ok(item) = ctx.list(arg(cmd, 1)) else {
        return Step::Done;
    };
    let Some(item) = item else {
        ctx.null();
        return Step::Done;
    };
    let Some(i) = parse_i64(arg(cmd, 2)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    match item.list_get(i) {
        Some(v) => ctx.bulk(&v),
        None => ctx.null(),
    }
    Step::Done
}

/// `RPUSHX key element...`: only onto an existing list.
pub fn rpushx(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    pushx(ctx, cmd, false)
}

/// `LPUSHX key element...`.
pub fn lpushx(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    pushx(ctx, cmd, true)
}

fn pushx(ctx: &mut Ctx<'_>, cmd: &Command<'_>, front: bool) -> Step {
    let values: Vec<&[u8]> = cmd.args().skip(2).collect();
    match ctx.db.list_push_existing(arg(cmd, 1), &values, front) {
        Ok(len) => ctx.int(len as i64),
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}

/// `LPOP key [count]`.
pub fn lpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    pop(ctx, cmd, true)
}

/// `RPOP key [count]`.
pub fn rpop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    pop(ctx, cmd, false)
}

fn pop(ctx: &mut Ctx<'_>, cmd: &Command<'_>, front: bool) -> Step {
    let count = match cmd.arg(2) {
        None => None,
        Some(c) => match parse_i64(c) {
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                ctx.error(b"ERR value is out of range, must be positive");
                return Step::Done;
            }
        },
    };
    // The store refuses other kinds (WRONGTYPE) under the key's lock: no
    // lookup of its own first.
    let popped = match ctx.db.list_pop(arg(cmd, 1), count.unwrap_or(1), front) {
        Ok(p) => p,
        Err(e) => {
            ctx.store_error(e);
            return Step::Done;
        }
    };
    match (popped, count) {
        (None, None) => ctx.null(),
        (None, Some(_)) => ctx.null_array(),
        (Some(t), None) => match t.first() {
            Some(v) => ctx.bytes(v),
            None => ctx.null(),
        },
        (Some(t), Some(_)) => {
            ctx.array(t.len());
            for v in &t {
                ctx.bytes(v);
            }
        }
    }
    Step::Done
}

/// Redis' index: negative from the end; None if out of range.
fn index(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// `LSET key index element`.
pub fn lset(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    // The key first, then the index, in Redis's order of errors.
    match ctx.list(arg(cmd, 1)) {
        Err(_) => return Step::Done,
        Ok(None) => {
            ctx.error(b"ERR no such key");
            return Step::Done;
        }
        Ok(Some(_)) => {}
    }
    let Some(i) = parse_i64(arg(cmd, 2)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let v = arg(cmd, 3);
    match update_list(ctx, arg(cmd, 1), |l| match l {
        None => (None, Err(b"ERR no such key".as_slice())),
        Some(mut l) => match index(i, l.len()) {
            Some(i) => {
                l[i] = v.to_vec();
                (Some(l), Ok(()))
            }
            None => (None, Err(b"ERR index out of range".as_slice())),
        },
    }) {
        Ok(Ok(())) => ctx.ok(),
        Ok(Err(e)) => ctx.error(e),
        Err(_) => {}
    }
    Step::Done
}

/// `LREM key count element`.
pub fn lrem(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(count) = parse_i64(arg(cmd, 2)) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    let v = arg(cmd, 3);
    if let Ok(n) = update_list(ctx, arg(cmd, 1), |l| match l {
        None => (None, 0),
        Some(mut l) => {
            let limit = if count == 0 {
                usize::MAX
            } else {
                count.unsigned_abs() as usize
            };
            let mut removed = 0;
            if count >= 0 {
                l.retain(|e| {
                    let drop = removed < limit && e == v;
                    removed += usize::from(drop);
                    !drop
                });
            } else {
                l.reverse();
                l.retain(|e| {
                    let drop = removed < limit && e == v;
                    removed += usize::from(drop);
                    !drop
                });
                l.reverse();
            }
            (Some(l).filter(|_| removed > 0), removed)
        }
    }) {
        ctx.int(n as i64);
    }
    Step::Done
}

/// `LTRIM key start stop`.
pub fn ltrim(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (Some(a), Some(b)) = (parse_i64(arg(cmd, 2)), parse_i64(arg(cmd, 3))) else {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    };
    if update_list(ctx, arg(cmd, 1), |l| match l {
        None => (None, ()),
        Some(l) => {
            let n = l.len() as i64;
            let s = if a < 0 { (n + a).max(0) } else { a };
            let e = if b < 0 { n + b } else { b.min(n - 1) };
            let kept = if s > e || s >= n {
                Vec::new()
            } else {
                l[s as usize..=e as usize].to_vec()
            };
            (Some(kept), ())
        }
    })
    .is_ok()
    {
        ctx.ok();
    }
    Step::Done
}

/// `LINSERT key BEFORE|AFTER pivot element`.
pub fn linsert(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let before = if arg(cmd, 2).eq_ignore_ascii_case(b"BEFORE") {
        true
    } else if arg(cmd, 2).eq_ignore_ascii_case(b"AFTER") {
        false
    } else {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    };
    let (pivot, v) = (arg(cmd, 3), arg(cmd, 4));
    if let Ok(n) = update_list(ctx, arg(cmd, 1), |l| match l {
        None => (None, 0),
        Some(mut l) => match l.iter().position(|e| e == pivot) {
            Some(p) => {
                l.insert(if before { p } else { p + 1 }, v.to_vec());
                let n = l.len() as i64;
                (Some(l), n)
            }
            None => (None, -1),
        },
    }) {
        ctx.int(n);
    }
    Step::Done
}

/// `LPOS key element [RANK r] [COUNT n] [MAXLEN m]`.
pub fn lpos(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let v = arg(cmd, 2);
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    let mut opts = cmd.args().skip(3);
    while let Some(o) = opts.next() {
        let o = o.to_ascii_uppercase();
        let known = matches!(&o[..], b"RANK" | b"COUNT" | b"MAXLEN");
        let Some(a) = opts.next().filter(|_| known) else {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        };
        let Some(n) = parse_i64(a) else {
            ctx.raw(resp::ERR_NOT_INTEGER);
            return Step::Done;
        };
        match &o[..] {
            b"RANK" if n == 0 || n == i64::MIN => {
                ctx.error(b"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
                return Step::Done;
            }
            b"RANK" => rank = n,
            b"COUNT" if n < 0 => {
                ctx.error(b"ERR COUNT can't be negative");
                return Step::Done;
            }
            b"COUNT" => count = Some(n as usize),
            _ if n < 0 => {
                ctx.error(b"ERR MAXLEN can't be negative");
                return Step::Done;
            }
            _ => maxlen = n as usize,
        }
    }
    let Ok(item) = ctx.list(arg(cmd, 1)) else {
        return Step::Done;
    };
    let elems: Vec<granola::Buf> = item
        .map(|l| l.list_range(0, -1).collect())
        .unwrap_or_default();
    let n = elems.len();
    let order: Box<dyn Iterator<Item = usize>> = if rank > 0 {
        Box::new(0..n)
    } else {
        Box::new((0..n).rev())
    };
    let limit = if maxlen == 0 { n } else { maxlen.min(n) };
    let want = match count {
        Some(0) => usize::MAX,
        Some(c) => c,
        None => 1,
    };
    let mut skip = rank.unsigned_abs() as usize - 1;
    let mut found = Vec::new();
    for i in order.take(limit) {
        if elems[i][..] == *v {
            if skip > 0 {
                skip -= 1;
            } else {
                found.push(i);
                if found.len() >= want {
                    break;
                }
            }
        }
    }
    match count {
        None => match found.first() {
            Some(&i) => ctx.int(i as i64),
            None => ctx.null(),
        },
        Some(_) => {
            ctx.array(found.len());
            for i in found {
                ctx.int(i as i64);
            }
        }
    }
    Step::Done
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`.
pub fn lmove(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (Some(from_left), Some(to_left)) = (side(arg(cmd, 3)), side(arg(cmd, 4))) else {
        ctx.raw(resp::ERR_SYNTAX);
        return Step::Done;
    };
    move_one(ctx, arg(cmd, 1), arg(cmd, 2), from_left, to_left)
}

/// `LEFT` (true) or `RIGHT` (false), any case.
pub(super) fn side(a: &[u8]) -> Option<bool> {
    super::choice(a, b"LEFT", b"RIGHT")
}

/// `RPOPLPUSH source destination`.
pub fn rpoplpush(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    move_one(ctx, arg(cmd, 1), arg(cmd, 2), false, true)
}

fn move_one(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from_left: bool, to_left: bool) -> Step {
    match move_value(ctx, src, dst, from_left, to_left) {
        Moved::Replied => {}
        Moved::Empty => ctx.null(),
        Moved::Value(v) => ctx.bytes(&v),
    }
    Step::Done
}

/// What [`move_value`] did.
pub(super) enum Moved {
    /// An error reply was written (a key of another type).
    Replied,
    /// The source is empty or missing; nothing was written.
    Empty,
    /// This element moved; nothing was written.
    Value(Vec<u8>),
}

/// Pops one element of `src` and pushes it on `dst` (both keys are
/// type-checked first, the source first, as Redis orders its errors: a
/// missing source is nothing to move whatever the destination holds; the
/// two keys are updated one after the other).
pub(super) fn move_value(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) -> Moved {
    match ctx.list(src) {
        Err(_) => return Moved::Replied,
        Ok(None) => return Moved::Empty,
        Ok(Some(_)) => {}
    }
    if ctx.list(dst).is_err() {
        return Moved::Replied;
    }
    let Ok(v) = update_list(ctx, src, |l| match l {
        None => (None, None),
        Some(mut l) => {
            let v = if from_left {
                l.remove(0)
            } else {
                l.pop().unwrap_or_default()
            };
            (Some(l), Some(v))
        }
    }) else {
        return Moved::Replied;
    };
    let Some(v) = v else {
        return Moved::Empty;
    };
    let pushed = update_list(ctx, dst, |l| {
        let mut l = l.unwrap_or_default();
        if to_left {
            l.insert(0, v.clone());
        } else {
            l.push(v.clone());
        }
        (Some(l), ())
    });
    match pushed {
        Ok(()) => Moved::Value(v),
        Err(_) => Moved::Replied,
    }
}
