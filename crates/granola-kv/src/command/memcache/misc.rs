//! `version`, `verbosity`, `mn`, `shutdown`, `cache_memlimit`.

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

/// `shutdown`: refused, with memcached's text for a server started without
/// `-A` (granola-kv stops on SIGINT/SIGTERM only).
pub fn shutdown(ctx: &mut Ctx<'_>) {
    ctx.out.copy(b"ERROR: shutdown not enabled\r\n");
}

/// `cache_memlimit <mb>`: the store's limit is fixed at start; asking for
/// the limit in force is `OK`, anything else an error saying so.
pub fn cache_memlimit(ctx: &mut Ctx<'_>, mb: u32, noreply: bool) {
    if noreply {
        return;
    }
    if mb < 8 {
        ctx.out
            .copy(b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n");
    } else if (mb as usize) << 20 == ctx.shared.config.memory_bytes() {
        ctx.out.copy(mc::OK);
    } else {
        ctx.out
            .copy(b"SERVER_ERROR granola-kv sets its memory limit at start (-m)\r\n");
    }
}
