//! `stats`.

use super::{Ctx, VERSION};
use crate::protocol::memcache::{self as mc, Tokens};
use std::sync::atomic::{AtomicU64, Ordering};

/// General statistics (`stats`); sub-statistics get an empty listing.
pub fn execute(ctx: &mut Ctx<'_>, args: Tokens<'_>) {
    if args.is_empty() {
        general(ctx);
    }
    ctx.out.copy(mc::END);
}

fn general(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let s = ctx.db.stats();
    let c = &shared.memcache;
    let net = shared.net.get();
    let now = ctx.now_unix();
    let sink = &mut *ctx.out;
    let load = |a: Option<&AtomicU64>| a.map_or(0, |a| a.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"pid", u64::from(std::process::id()));
    mc::write_stat_u64(sink, b"uptime", shared.started.elapsed().as_secs());
    mc::write_stat_u64(sink, b"time", now);
    mc::write_stat(sink, b"version", VERSION);
    mc::write_stat_u64(sink, b"threads", shared.threads as u64);
    mc::write_stat_u64(sink, b"curr_connections", load(net.map(|n| &n.conns_open)));
    mc::write_stat_u64(
        sink,
        b"total_connections",
        load(net.map(|n| &n.conns_total)),
    );
    mc::write_stat_u64(
        sink,
        b"rejected_connections",
        load(net.map(|n| &n.conns_refused)),
    );
    mc::write_stat_u64(sink, b"cmd_get", c.cmd_get.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"cmd_set", c.cmd_set.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"cmd_touch", c.cmd_touch.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"cmd_flush", c.cmd_flush.load(Ordering::Relaxed));
    mc::write_stat_u64(sink, b"get_hits", s.hits);
    mc::write_stat_u64(sink, b"get_misses", s.misses);
    mc::write_stat_u64(sink, b"get_expired", s.expired);
    mc::write_stat_u64(sink, b"evictions", s.evictions);
    mc::write_stat_u64(sink, b"curr_items", s.items as u64);
    mc::write_stat_u64(sink, b"bytes", s.bytes as u64);
    mc::write_stat_u64(sink, b"limit_maxbytes", shared.config.memory_bytes() as u64);
    for (name, bytes) in shared.memory_parts() {
        mc::write_stat_u64(sink, name.as_bytes(), bytes);
    }
    mc::write_stat_u64(
        sink,
        b"reply_bytes_copied",
        load(net.map(|n| &n.bytes_copied)),
    );
    mc::write_stat_u64(
        sink,
        b"reply_bytes_referenced",
        load(net.map(|n| &n.bytes_referenced)),
    );
    mc::write_stat_u64(sink, b"send_calls", load(net.map(|n| &n.send_calls)));
    mc::write_stat_u64(sink, b"copy_threshold", shared.copy_threshold as u64);
}
