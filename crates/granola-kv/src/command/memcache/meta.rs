//! The meta commands: `mg`, `ms`, `md`, `ma`, `me`.

use super::{set_mode, store_result, string_item, Ctx};
use crate::protocol::memcache::{
    self as mc, ArithMode, DeleteResult, MeInfo, MetaArith, MetaDebug, MetaDelete, MetaGet,
    MetaItem, MetaSet, MissResult, KEY_BUF_LEN,
};
use crate::store::{CasRule, Item, Marks, Meta, Remark, SetExtra, SetMode, StoreError};
use std::sync::atomic::Ordering;

/// `mg <key> <flags>*`. A stale item (`md ... I`) is served with `X`;
/// the first client to fetch it, or to fetch an item whose remaining TTL
/// is below `R<token>`, gets `W` (it should recache), later ones `Z`.
pub fn get(ctx: &mut Ctx<'_>, m: MetaGet<'_>) {
    let mut kb = [0u8; KEY_BUF_LEN];
    let key = m.key.bytes(&mut kb);
    ctx.shared.memcache.cmd_get.fetch_add(1, Ordering::Relaxed);
    let mut item = string_item(match m.ttl {
        Some(t) => ctx.db.touch(key, ctx.expires_ms(i64::from(t))),
        // `u`: the fetch leaves the item's access marks (h, l) alone.
        None if m.no_bump => ctx.db.peek(key),
        None => ctx.db.get(key),
    });
    let mut win = false;
    if item.is_none() {
        if let Some(t) = m.vivify {
            // N: create an empty placeholder; this client "wins" the right
            // to fill it, later fetchers see Z until it is stored.
            let meta = Meta {
                flags: 0,
                expires_at_ms: ctx.expires_ms(i64::from(t)),
            };
            let extra = SetExtra {
                cas: m.new_cas,
                binary_key: m.key.binary,
                ..SetExtra::default()
            };
            if ctx.db.set_with(key, b"", meta, SetMode::Add, extra).is_ok() {
                item = string_item(ctx.db.remark(key, &mut |i| {
                    Some(Remark {
                        marks: Marks::WIN_SENT | (i.marks() & Marks::BINARY_KEY),
                        expires_at_ms: i.expires_at_ms(),
                        cas: Some(i.cas()),
                    })
                }));
                // The fetch that made it counts as one (`h1` next time), as
                // in memcached; this reply shows the item as unread.
                let _ = ctx.db.get(key);
                win = true;
            }
        }
    }
    let Some(mut item) = item else {
        return m.write_miss(ctx.out);
    };
    let stale = item.marks() & Marks::STALE != 0;
    let ttl = ctx.ttl_secs(&item);
    let recache = m.recache.is_some_and(|r| ttl >= 0 && ttl < i64::from(r));
    // Once the win is out, every other fetch says so (Z), recache or not.
    let mut token_sent = !win && item.marks() & Marks::WIN_SENT != 0;
    // How the item had been used before this fetch: the one that claims
    // the win below carries this fetch's own mark.
    let access = ctx.db.access(&item);
    if (stale || recache) && !win && !token_sent {
        (win, item) = claim_win(ctx, key, item);
        token_sent = !win;
    }
    let info = MetaItem {
        key: item.key(),
        key_binary: item.marks() & Marks::BINARY_KEY != 0,
        client_flags: item.flags(),
        cas: item.cas(),
        // Claiming the win keeps the expiry: the TTL read above holds.
        ttl,
        last_access: access.idle_s,
        fetched: access.fetched,
        win,
        stale,
        token_sent,
    };
    m.write_hit(ctx.out, &item.value(), &info);
}

/// Hands this client the recache win for `item` if nobody has had it
/// since it was invalidated or stored (decided under the key's lock).
fn claim_win(ctx: &mut Ctx<'_>, key: &[u8], item: Item) -> (bool, Item) {
    let cas = item.cas();
    let mut won = false;
    let now = ctx.db.remark(key, &mut |cur| {
        (cur.cas() == cas && cur.marks() & Marks::WIN_SENT == 0).then(|| {
            won = true;
            Remark {
                marks: cur.marks() | Marks::WIN_SENT,
                expires_at_ms: cur.expires_at_ms(),
                cas: Some(cur.cas()),
            }
        })
    });
    (won, string_item(now).unwrap_or(item))
}

/// `ms <key> <datalen> <flags>*`.
pub fn set(ctx: &mut Ctx<'_>, m: MetaSet<'_>) {
    ctx.shared.memcache.cmd_set.fetch_add(1, Ordering::Relaxed);
    let mut kb = [0u8; KEY_BUF_LEN];
    let key = m.key.bytes(&mut kb);
    let meta = Meta {
        flags: m.client_flags,
        expires_at_ms: ctx.expires_ms(i64::from(m.exptime)),
    };
    let mode = match m.compare_cas {
        Some(c) => SetMode::Cas(c),
        None => set_mode(m.store_mode(), None),
    };
    let extra = SetExtra {
        cas: m.new_cas,
        invalidate: m.invalidate,
        binary_key: m.key.binary,
    };
    let r = ctx.db.set_with(key, m.data, meta, mode, extra);
    match (store_result(&r), r) {
        (Some(res), r) => m.write_result(ctx.out, res, r.unwrap_or(0)),
        (None, Err(e)) => ctx.store_error(e),
        (None, Ok(_)) => unreachable!("Ok maps to Stored"),
    }
}

/// `md <key> <flags>*`. With `I` the item is not removed but invalidated:
/// marked stale with a new CAS (`E<token>` if given) and, with `T`, a new
/// TTL; fetches then see `X` and one of them wins the recache (`W`).
pub fn delete(ctx: &mut Ctx<'_>, m: MetaDelete<'_>) {
    let mut kb = [0u8; KEY_BUF_LEN];
    let key = m.key.bytes(&mut kb);
    let result = if m.invalidate {
        let expires = m.ttl.map(|t| ctx.expires_ms(i64::from(t)));
        let mut result = DeleteResult::NotFound;
        ctx.db.remark(key, &mut |cur| {
            if m.compare_cas.is_some_and(|c| c != cur.cas()) {
                result = DeleteResult::Exists;
                return None;
            }
            result = DeleteResult::Deleted;
            Some(Remark {
                marks: Marks::STALE | (cur.marks() & Marks::BINARY_KEY),
                expires_at_ms: expires.unwrap_or(cur.expires_at_ms()),
                cas: m.new_cas,
            })
        });
        result
    } else {
        // A delete does not fetch: `h` stays as it was (memcached).
        match (m.compare_cas, string_item(ctx.db.peek(key))) {
            (_, None) => DeleteResult::NotFound,
            (Some(c), Some(item)) if item.cas() != c => DeleteResult::Exists,
            _ => {
                if ctx.db.delete(key) {
                    DeleteResult::Deleted
                } else {
                    DeleteResult::NotFound
                }
            }
        }
    };
    m.write_result(ctx.out, result);
}

/// `ma <key> <flags>*`.
pub fn arith(ctx: &mut Ctx<'_>, m: MetaArith<'_>) {
    let mut kb = [0u8; KEY_BUF_LEN];
    let key = m.key.bytes(&mut kb);
    let incr = m.mode == ArithMode::Incr;
    // C<cas>: apply only to the item with that CAS unique.
    if let Some(c) = m.compare_cas {
        match string_item(ctx.db.get(key)) {
            Some(item) if item.cas() != c => return m.write_miss(ctx.out, MissResult::Exists),
            None if m.vivify.is_none() => return m.write_miss(ctx.out, MissResult::NotFound),
            _ => {}
        }
    }
    // The CAS is compared again under the key's lock: nothing may change
    // the item between the check above and the increment.
    let rule = CasRule {
        compare: m.compare_cas,
        new: m.new_cas,
    };
    let mut r = ctx.db.incr_decr_with(key, m.delta, incr, rule);
    // T<ttl>: a hit also takes the new TTL.
    if let (Ok(_), Some(t)) = (&r, m.ttl) {
        ctx.db.touch(key, ctx.expires_ms(i64::from(t)));
    }
    if r == Err(StoreError::NotFound) {
        if let Some(t) = m.vivify {
            let meta = Meta {
                flags: 0,
                expires_at_ms: ctx.expires_ms(i64::from(t)),
            };
            let init = m.initial.to_string();
            let extra = SetExtra {
                cas: m.new_cas,
                binary_key: m.key.binary,
                ..SetExtra::default()
            };
            r = ctx
                .db
                .set_with(key, init.as_bytes(), meta, SetMode::Add, extra)
                .map(|_| m.initial);
        }
    }
    match r {
        Ok(n) => {
            let (cas, ttl) = match string_item(ctx.db.get(key)) {
                Some(item) => (item.cas(), ctx.ttl_secs(&item)),
                None => (0, -1),
            };
            m.write_value(ctx.out, n, cas, ttl);
        }
        Err(StoreError::NotFound) | Err(StoreError::WrongType) => {
            m.write_miss(ctx.out, MissResult::NotFound)
        }
        Err(StoreError::Exists) => m.write_miss(ctx.out, MissResult::Exists),
        Err(StoreError::NotStored) => m.write_miss(ctx.out, MissResult::NotStored),
        Err(e) => ctx.store_error(e),
    }
}

/// `me <key>`.
pub fn debug(ctx: &mut Ctx<'_>, m: MetaDebug<'_>) {
    let mut kb = [0u8; KEY_BUF_LEN];
    let key = m.key.bytes(&mut kb);
    match string_item(ctx.db.peek(key)) {
        Some(item) => {
            let access = ctx.db.access(&item);
            let info = MeInfo {
                exp: ctx.ttl_secs(&item),
                la: access.idle_s,
                cas: item.cas(),
                fetched: access.fetched,
                // As memcached: the 1-based slab class and the whole
                // item's bytes (header, key and value); 0 for an item
                // larger than the largest class.
                cls: granola::Pool::size_class_for(item.total_len()).map_or(0, |c| c as u32 + 1),
                size: item.total_len() as u64,
            };
            m.write_hit(ctx.out, &info);
        }
        None => ctx.out.copy(mc::EN),
    }
}
