//! `delete`.

use super::Ctx;
use crate::protocol::memcache as mc;

/// `DELETED` or `NOT_FOUND`.
pub fn execute(ctx: &mut Ctx<'_>, key: &[u8], noreply: bool) {
    let deleted = ctx.db.delete(key);
    let c = &ctx.shared.memcache;
    super::bump(if deleted {
        &c.delete_hits
    } else {
        &c.delete_misses
    });
    if !noreply {
        ctx.out
            .copy(if deleted { mc::DELETED } else { mc::NOT_FOUND });
    }
}
