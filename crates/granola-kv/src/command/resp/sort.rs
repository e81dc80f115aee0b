//! `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...]
//! [ASC|DESC] [ALPHA] [STORE destination]` and SORT_RO, as Redis sorts:
//! the elements of a list, set or sorted set, by their own value or by
//! weights read from other keys (`BY weight_*`, or a hash field with
//! `BY h_*->field`), numerically (equal weights then by element, so the
//! order is always the same) or byte-wise with ALPHA; GET patterns return
//! other keys' values (`#` is the element itself). A `BY` pattern with no
//! `*` keeps the stored order. STORE writes the result as a list.
//!
//! The weight and GET keys are read one by one: a write to one of them
//! from another client may land while the sort reads (Redis reads them
//! all at once).

use super::collections::{ctype, CType};
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::{Kind, Meta};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `SORT ...`.
pub fn sort(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run(ctx, cmd, false)
}

/// `SORT_RO ...`: SORT without STORE.
pub fn sort_ro(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run(ctx, cmd, true)
}

/// The value `pattern` names for `element`: the first `*` replaced by the
/// element; `key->field` reads a hash field. `None` if absent (or of
/// another type).
fn lookup(ctx: &mut Ctx<'_>, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    // `->` after the `*` names a hash field (unless it ends the pattern).
    let arrow = pattern[star..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + i)
        .filter(|&i| i + 2 < pattern.len());
    let key_pattern = arrow.map_or(pattern, |i| &pattern[..i]);
    let mut key = key_pattern[..star].to_vec();
    key.extend_from_slice(element);
    key.extend_from_slice(&key_pattern[star + 1..]);
    let item = ctx.db.get(&key)?;
    match arrow {
        None if item.kind() == Kind::String => Some(item.value_bytes().to_vec()),
        Some(i) if item.kind() == Kind::Hash => {
            let field = &pattern[i + 2..];
            item.read_dict(|d| d.get(field).map(<[u8]>::to_vec))
                .flatten()
        }
        _ => None,
    }
}

fn run(ctx: &mut Ctx<'_>, cmd: &Command<'_>, read_only: bool) -> Step {
    let (mut by, mut gets, mut desc, mut alpha, mut store) = (None, Vec::new(), false, false, None);
    let (mut offset, mut count) = (0usize, usize::MAX);
    let mut limited = false;
    let mut i = 2;
    while i < cmd.len() {
        let left = cmd.len() - i - 1;
        match &arg(cmd, i).to_ascii_uppercase()[..] {
            b"ASC" => desc = false,
            b"DESC" => desc = true,
            b"ALPHA" => alpha = true,
            b"LIMIT" if left >= 2 => {
                let (Some(o), Some(c)) = (parse_i64(arg(cmd, i + 1)), parse_i64(arg(cmd, i + 2)))
                else {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return Step::Done;
                };
                limited = true;
                offset = o.max(0) as usize;
                count = if c < 0 { usize::MAX } else { c as usize };
                i += 2;
            }
            b"BY" if left >= 1 => {
                by = Some(arg(cmd, i + 1));
                i += 1;
            }
            b"GET" if left >= 1 => {
                gets.push(arg(cmd, i + 1));
                i += 1;
            }
            b"STORE" if left >= 1 && !read_only => {
                store = Some(arg(cmd, i + 1));
                i += 1;
            }
            _ => {
                ctx.raw(resp::ERR_SYNTAX);
                return Step::Done;
            }
        }
        i += 1;
    }
    let Some(item) = ctx.db.get(arg(cmd, 1)) else {
        return finish(ctx, store, Vec::new());
    };
    let t = ctype(&item);
    let mut elements: Vec<Vec<u8>> = match t {
        Some(CType::List) => item.list_range(0, -1).map(|b| b.to_vec()).collect(),
        Some(CType::Set) => item
            .read_dict(|d| d.iter().map(|(m, _)| m.bytes().to_vec()).collect())
            .unwrap_or_default(),
        Some(CType::ZSet) => item
            .read_dict(|d| {
                d.ranked(0, d.len())
                    .iter()
                    .map(|(m, _)| m.bytes().to_vec())
                    .collect()
            })
            .unwrap_or_default(),
        _ => {
            ctx.raw(resp::ERR_WRONGTYPE);
            return Step::Done;
        }
    };
    // A BY pattern without `*` keeps the stored order (a set's, which has
    // none, is made byte-wise when stored, as Redis does for STORE).
    let no_sort = by.is_some_and(|p| !p.contains(&b'*'));
    if !no_sort || (t == Some(CType::Set) && store.is_some()) {
        let weights: Vec<Option<Vec<u8>>> = match by.filter(|_| !no_sort) {
            Some(p) => elements.iter().map(|e| lookup(ctx, p, e)).collect(),
            None => elements.iter().map(|e| Some(e.clone())).collect(),
        };
        let mut keyed: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            elements.into_iter().zip(weights).collect();
        if no_sort || alpha {
            // Byte-wise; a missing weight sorts first.
            keyed.sort_by(|(ea, wa), (eb, wb)| {
                let (wa, wb) = if no_sort {
                    (Some(ea), Some(eb))
                } else {
                    (wa.as_ref(), wb.as_ref())
                };
                wa.cmp(&wb).then_with(|| ea.cmp(eb))
            });
        } else {
            let mut scored = Vec::with_capacity(keyed.len());
            for (e, w) in keyed {
                let score = match &w {
                    None => 0.0,
                    Some(w) => match super::strings::parse_float(w) {
                        Some(s) => s,
                        None => {
                            ctx.error(b"ERR One or more scores can't be converted into double");
                            return Step::Done;
                        }
                    },
                };
                scored.push((e, w, score));
            }
            scored.sort_by(|(ea, _, sa), (eb, _, sb)| sa.total_cmp(sb).then_with(|| ea.cmp(eb)));
            keyed = scored.into_iter().map(|(e, w, _)| (e, w)).collect();
        }
        if desc {
            keyed.reverse();
        }
        elements = keyed.into_iter().map(|(e, _)| e).collect();
    } else if desc && t == Some(CType::ZSet) {
        // Unsorted, a sorted set still comes in its order, reversed by DESC.
        elements.reverse();
    }
    let picked: Vec<Vec<u8>> = if limited || offset > 0 {
        elements.into_iter().skip(offset).take(count).collect()
    } else {
        elements
    };
    if gets.is_empty() {
        let values: Vec<Option<Vec<u8>>> = picked.into_iter().map(Some).collect();
        return finish(ctx, store, values);
    }
    let mut values = Vec::with_capacity(picked.len() * gets.len());
    for e in &picked {
        for g in &gets {
            values.push(lookup(ctx, g, e));
        }
    }
    finish(ctx, store, values)
}

/// Replies with `values` (nil for missing), or stores them as a list at
/// `store` (missing ones as empty strings, as Redis does) and replies
/// with their number.
fn finish(ctx: &mut Ctx<'_>, store: Option<&[u8]>, values: Vec<Option<Vec<u8>>>) -> Step {
    let Some(dst) = store else {
        ctx.array(values.len());
        for v in &values {
            match v {
                Some(v) => ctx.bytes(v),
                None => ctx.null(),
            }
        }
        return Step::Done;
    };
    let list: Vec<&[u8]> = values
        .iter()
        .map(|v| v.as_deref().unwrap_or_default())
        .collect();
    let stored = if list.is_empty() {
        ctx.db.delete(dst);
        Ok(())
    } else {
        ctx.db.put_list(dst, &list, Meta::default())
    };
    match stored {
        Ok(()) => {
            // Its key positions name the source only: wake the
            // destination's waiters here.
            ctx.shared.waiters.touched(dst);
            ctx.int(list.len() as i64);
        }
        Err(e) => ctx.store_error(e),
    }
    Step::Done
}
