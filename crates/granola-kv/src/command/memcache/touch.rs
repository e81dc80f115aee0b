//! `touch`.

use super::Ctx;
use crate::protocol::memcache as mc;
use std::sync::atomic::Ordering;

/// `TOUCHED` or `NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, key: &[u8], exptime: i32, noreply: bool) {
    ctx.shared
        .memcache
        .cmd_touch
        .fetch_add(1, Ordering::Relaxed);
    let touched = ctx
        .db
        .touch(key, ctx.expires_ms(i64::from(exptime)))
        .is_some();
    let c = &ctx.shared.memcache;
    super::bump(if touched {
        &c.touch_hits
    } else {
        &c.touch_misses
    });
    if !noreply {
        ctx.out
            .copy(if touched { mc::TOUCHED } else { mc::NOT_FOUND });
    }
}
