//! `incr`, `decr`.

use super::Ctx;
use crate::protocol::memcache as mc;
use crate::store::StoreError;

/// The new value, or `NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, key: &[u8], decr: bool, delta: u64, noreply: bool) {
    let r = apply(ctx, key, decr, delta);
    if noreply {
        return;
    }
    match r {
        Ok(n) => mc::write_number(ctx.out, n),
        Err(StoreError::NotFound) | Err(StoreError::WrongType) => ctx.out.copy(mc::NOT_FOUND),
        Err(e) => ctx.store_error(e),
    }
}

/// The arithmetic itself, for every protocol: the new value, or why not.
pub fn apply(ctx: &mut Ctx<'_>, key: &[u8], decr: bool, delta: u64) -> Result<u64, StoreError> {
    let r = ctx.db.incr_decr(key, delta, !decr);
    let c = &ctx.shared.memcache;
    super::bump(match (decr, r.is_ok()) {
        (false, true) => &c.incr_hits,
        (false, false) => &c.incr_misses,
        (true, true) => &c.decr_hits,
        (true, false) => &c.decr_misses,
    });
    r
}
