//! `touch`.

use super::Ctx;
use crate::protocol::memcache as mc;
use crate::store::Item;
use std::sync::atomic::Ordering;

/// `TOUCHED` or `NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, key: &[u8], exptime: i32, noreply: bool) {
    let touched = apply(ctx, key, exptime).is_some();
    if !noreply {
        ctx.out
            .copy(if touched { mc::TOUCHED } else { mc::NOT_FOUND });
    }
}

/// The touch itself, for every protocol: the re-timed item, if any.
pub fn apply(ctx: &mut Ctx<'_>, key: &[u8], exptime: i32) -> Option<Item> {
    ctx.shared
        .memcache
        .cmd_touch
        .fetch_add(1, Ordering::Relaxed);
    let item = ctx.db.touch(key, ctx.expires_ms(i64::from(exptime)));
    let c = &ctx.shared.memcache;
    super::bump(if item.is_some() {
        &c.touch_hits
    } else {
        &c.touch_misses
    });
    item
}
