//! `delete`.

use super::Ctx;
use crate::protocol::memcache as mc;

/// `DELETED` or `NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, key: &[u8], noreply: bool) {
    let deleted = apply(ctx, key);
    if !noreply {
        ctx.out
            .copy(if deleted { mc::DELETED } else { mc::NOT_FOUND });
    }
}

/// The delete itself, for every protocol: whether the key was there.
pub fn apply(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    let deleted = ctx.db.delete(key);
    let c = &ctx.shared.memcache;
    super::bump(if deleted {
        &c.delete_hits
    } else {
        &c.delete_misses
    });
    deleted
}
