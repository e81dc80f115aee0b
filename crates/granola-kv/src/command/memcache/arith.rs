//! `incr`, `decr`.

use super::Ctx;
use crate::protocol::memcache as mc;
use crate::store::StoreError;

/// The new value, or `NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, key: &[u8], decr: bool, delta: u64, noreply: bool) {
    let r = ctx.db.incr_decr(key, delta, !decr);
    if noreply {
        return;
    }
    match r {
        Ok(n) => mc::write_number(ctx.out, n),
        Err(StoreError::NotFound) | Err(StoreError::WrongType) => ctx.out.copy(mc::NOT_FOUND),
        Err(e) => ctx.store_error(e),
    }
}
