//! `set`, `add`, `replace`, `append`, `prepend`, `cas`.

use super::{set_mode, store_result, Ctx};
use crate::protocol::memcache::{self as mc, Store};
use crate::store::Meta;
use std::sync::atomic::Ordering;

/// Stores the data block; `STORED`/`NOT_STORED`/`EXISTS`/`NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, s: Store<'_>) {
    ctx.shared.memcache.cmd_set.fetch_add(1, Ordering::Relaxed);
    let meta = Meta {
        flags: s.flags,
        expires_at_ms: ctx.expires_ms(i64::from(s.exptime)),
    };
    let r = ctx.db.set(s.key, s.data, meta, set_mode(s.mode, s.cas));
    if s.noreply {
        return;
    }
    match (store_result(&r), r) {
        (Some(res), _) => mc::write_store_result(ctx.out, res),
        (None, Err(e)) => ctx.store_error(e),
        (None, Ok(_)) => unreachable!("Ok maps to Stored"),
    }
}
