//! `set`, `add`, `replace`, `append`, `prepend`, `cas`.

use super::{set_mode, store_result, Ctx};
use crate::protocol::memcache::{self as mc, Store, StoreMode};
use crate::store::{Meta, StoreError};
use std::sync::atomic::Ordering;

/// Stores the data block; `STORED`/`NOT_STORED`/`EXISTS`/`NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, s: Store<'_>) {
    let r = apply(ctx, &s);
    if s.noreply {
        return;
    }
    match (store_result(&r), r) {
        (Some(res), _) => mc::write_store_result(ctx.out, res),
        (None, Err(e)) => ctx.store_error(e),
        (None, Ok(_)) => unreachable!("Ok maps to Stored"),
    }
}

/// The store itself, for every protocol: the new CAS unique, or why not.
pub fn apply(ctx: &mut Ctx<'_>, s: &Store<'_>) -> Result<u64, StoreError> {
    ctx.shared.memcache.cmd_set.fetch_add(1, Ordering::Relaxed);
    let meta = Meta {
        flags: s.flags,
        expires_at_ms: ctx.expires_ms(i64::from(s.exptime)),
    };
    // memcached's item limit (-I) holds for appends too (the store's own
    // limit is the larger Redis bulk limit): key, header and value.
    if matches!(s.mode, StoreMode::Append | StoreMode::Prepend) {
        let max = ctx.shared.config.max_item_size + 1024;
        let old = ctx.db.get(s.key).map_or(0, |i| i.value_len());
        if 28 + s.key.len() + old + s.data.len() > max {
            return Err(StoreError::TooLarge);
        }
    }
    let r = ctx.db.set(s.key, s.data, meta, set_mode(s.mode, s.cas));
    let c = &ctx.shared.memcache;
    match (&r, s.mode) {
        (Ok(_), StoreMode::Cas) => super::bump(&c.cas_hits),
        (Err(StoreError::NotFound), StoreMode::Cas) => super::bump(&c.cas_misses),
        (Err(StoreError::Exists), StoreMode::Cas) => super::bump(&c.cas_badval),
        (Err(StoreError::TooLarge), _) => super::bump(&c.store_too_large),
        (Err(StoreError::OutOfMemory), _) => super::bump(&c.store_no_memory),
        _ => {}
    }
    r
}
