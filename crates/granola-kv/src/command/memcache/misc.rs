//! `version`, `verbosity`, `mn`.

use super::{Ctx, VERSION};
use crate::protocol::memcache as mc;

/// `VERSION <v>`.
pub fn version(ctx: &mut Ctx<'_>) {
    mc::write_version(ctx.out, VERSION);
}

/// `verbosity`: accepted, `OK`.
pub fn verbosity(ctx: &mut Ctx<'_>, noreply: bool) {
    if !noreply {
        ctx.out.copy(mc::OK);
    }
}

/// `mn`: `MN` (the end of a meta pipeline).
pub fn noop(ctx: &mut Ctx<'_>) {
    ctx.out.copy(mc::MN);
}
