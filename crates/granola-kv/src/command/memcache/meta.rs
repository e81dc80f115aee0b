//! The meta commands: `mg`, `ms`, `md`, `ma`, `me`.

use super::{set_mode, store_result, string_item, Ctx};
use crate::protocol::memcache::{
    self as mc, ArithMode, DeleteResult, MeInfo, MetaArith, MetaDebug, MetaDelete, MetaGet,
    MetaItem, MetaSet, MissResult, KEY_BUF_LEN,
};
use crate::store::{Meta, SetMode, StoreError};
use std::sync::atomic::Ordering;

/// `mg <key> <flags>*`.
pub fn get(ctx: &mut Ctx<'_>, m: MetaGet<'_>) {
    let mut kb = [0u8; KEY_BUF_LEN];
    let key = m.key.bytes(&mut kb);
    ctx.shared.memcache.cmd_get.fetch_add(1, Ordering::Relaxed);
    let mut item = string_item(match m.ttl {
        Some(t) => ctx.db.touch(key, ctx.expires_ms(i64::from(t))),
        None => ctx.db.get(key),
    });
    let mut win = false;
    if item.is_none() {
        if let Some(t) = m.vivify {
            // N: create an empty placeholder; this client "wins" the right
            // to fill it.
            let meta = Meta {
                flags: 0,
                expires_at_ms: ctx.expires_ms(i64::from(t)),
            };
            if ctx.db.set(key, b"", meta, SetMode::Add).is_ok() {
                item = string_item(ctx.db.get(key));
                win = true;
            }
        }
    }
    match item {
        Some(item) => {
            let info = MetaItem {
                client_flags: item.flags(),
                cas: item.cas(),
                ttl: ctx.ttl_secs(&item),
                last_access: 0,
                fetched: false,
                win,
                stale: false,
                token_sent: false,
            };
            m.write_hit(ctx.out, &item.value(), &info);
        }
        None => m.write_miss(ctx.out),
    }
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
    let r = ctx.db.set(key, m.data, meta, mode);
    match (store_result(&r), r) {
        (Some(res), r) => m.write_result(ctx.out, res, r.unwrap_or(0)),
        (None, Err(e)) => ctx.store_error(e),
        (None, Ok(_)) => unreachable!("Ok maps to Stored"),
    }
}

/// `md <key> <flags>*`.
pub fn delete(ctx: &mut Ctx<'_>, m: MetaDelete<'_>) {
    let mut kb = [0u8; KEY_BUF_LEN];
    let key = m.key.bytes(&mut kb);
    let result = match (m.compare_cas, string_item(ctx.db.get(key))) {
        (_, None) => DeleteResult::NotFound,
        (Some(c), Some(item)) if item.cas() != c => DeleteResult::Exists,
        _ => {
            if ctx.db.delete(key) {
                DeleteResult::Deleted
            } else {
                DeleteResult::NotFound
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
    let mut r = ctx.db.incr_decr(key, m.delta, incr);
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
            r = ctx
                .db
                .set(key, init.as_bytes(), meta, SetMode::Add)
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
    match string_item(ctx.db.get(key)) {
        Some(item) => {
            let info = MeInfo {
                exp: ctx.ttl_secs(&item),
                la: 0,
                cas: item.cas(),
                fetched: false,
                cls: 0,
                size: item.value_len() as u64,
            };
            m.write_hit(ctx.out, &info);
        }
        None => ctx.out.copy(mc::EN),
    }
}
