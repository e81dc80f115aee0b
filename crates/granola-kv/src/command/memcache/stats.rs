//! `stats`, `stats settings | items | slabs | sizes | conns | reset`, with
//! memcached's field names where a field means the same; granola-kv's own
//! figures under their own names.

use super::{Ctx, GRANOLA_VERSION, VERSION};
use crate::protocol::memcache::{self as mc, Tokens};
use crate::store::StoreStats;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// memcached connections, for `stats conns`.
static CONNS: Mutex<BTreeMap<u64, (String, Instant)>> = Mutex::new(BTreeMap::new());

fn conns() -> std::sync::MutexGuard<'static, BTreeMap<u64, (String, Instant)>> {
    CONNS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records a connection (until [`forget`]).
pub fn register(id: u64, addr: String) {
    conns().insert(id, (addr, Instant::now()));
}

/// Forgets a connection.
pub fn forget(id: u64) {
    conns().remove(&id);
}

/// `stats [group]`.
pub fn execute(ctx: &mut Ctx<'_>, mut args: Tokens<'_>) {
    match args.next() {
        None => general(ctx),
        Some(b"settings") => settings(ctx),
        Some(b"items") => items(ctx),
        Some(b"slabs") => slabs(ctx),
        Some(b"sizes") => mc::write_stat(ctx.out, b"sizes_status", b"disabled"),
        Some(b"conns") => {
            let list: Vec<(u64, String, u64)> = conns()
                .iter()
                .map(|(id, (a, t))| (*id, a.clone(), t.elapsed().as_secs()))
                .collect();
            for (id, addr, secs) in list {
                let p = |f: &str| format!("{id}:{f}");
                mc::write_stat(
                    ctx.out,
                    p("addr").as_bytes(),
                    format!("tcp:{addr}").as_bytes(),
                );
                mc::write_stat(ctx.out, p("state").as_bytes(), b"conn_parse_cmd");
                mc::write_stat_u64(ctx.out, p("secs_since_connect").as_bytes(), secs);
            }
        }
        Some(b"reset") => {
            reset(ctx);
            ctx.out.copy(mc::RESET);
            return;
        }
        Some(_) => {
            ctx.out.copy(mc::ERROR);
            return;
        }
    }
    ctx.out.copy(mc::END);
}

/// Store counters since the last `stats reset`.
fn since_reset(ctx: &Ctx<'_>) -> StoreStats {
    let mut s = ctx.db.stats();
    let base = *ctx
        .shared
        .memcache
        .reset_base
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    s.hits = s.hits.saturating_sub(base.hits);
    s.misses = s.misses.saturating_sub(base.misses);
    s.evictions = s.evictions.saturating_sub(base.evictions);
    s.expired = s.expired.saturating_sub(base.expired);
    s.sets = s.sets.saturating_sub(base.sets);
    s
}

fn reset(ctx: &Ctx<'_>) {
    let c = &ctx.shared.memcache;
    *c.reset_base.lock().unwrap_or_else(|e| e.into_inner()) = ctx.db.stats();
    for a in [
        &c.cmd_get,
        &c.cmd_set,
        &c.cmd_touch,
        &c.cmd_flush,
        &c.cmd_meta,
        &c.delete_hits,
        &c.delete_misses,
        &c.incr_hits,
        &c.incr_misses,
        &c.decr_hits,
        &c.decr_misses,
        &c.cas_hits,
        &c.cas_misses,
        &c.cas_badval,
        &c.touch_hits,
        &c.touch_misses,
        &c.store_too_large,
        &c.store_no_memory,
    ] {
        a.store(0, Ordering::Relaxed);
    }
}

fn general(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let s = since_reset(ctx);
    let c = &shared.memcache;
    let net = shared.net.get();
    let now = ctx.now_unix();
    let (user, sys) = crate::command::process::cpu_seconds();
    let sink = &mut *ctx.out;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let netl = |a: Option<&AtomicU64>| a.map_or(0, |a| a.load(Ordering::Relaxed));
    let u = |sink: &mut dyn crate::protocol::ReplySink, k: &str, v: u64| {
        mc::write_stat_u64(sink, k.as_bytes(), v)
    };
    u(sink, "pid", u64::from(std::process::id()));
    u(sink, "uptime", shared.started.elapsed().as_secs());
    u(sink, "time", now);
    mc::write_stat(sink, b"version", VERSION);
    mc::write_stat(sink, b"granola_version", GRANOLA_VERSION);
    u(sink, "pointer_size", 64);
    mc::write_stat(sink, b"rusage_user", format!("{user:.6}").as_bytes());
    mc::write_stat(sink, b"rusage_system", format!("{sys:.6}").as_bytes());
    u(sink, "max_connections", shared.config.max_conns as u64);
    u(sink, "curr_connections", netl(net.map(|n| &n.conns_open)));
    u(sink, "total_connections", netl(net.map(|n| &n.conns_total)));
    u(
        sink,
        "rejected_connections",
        netl(net.map(|n| &n.conns_refused)),
    );
    u(sink, "cmd_get", load(&c.cmd_get));
    u(sink, "cmd_set", load(&c.cmd_set));
    u(sink, "cmd_flush", load(&c.cmd_flush));
    u(sink, "cmd_touch", load(&c.cmd_touch));
    u(sink, "cmd_meta", load(&c.cmd_meta));
    u(sink, "get_hits", s.hits);
    u(sink, "get_misses", s.misses);
    u(sink, "get_expired", s.expired);
    u(sink, "delete_misses", load(&c.delete_misses));
    u(sink, "delete_hits", load(&c.delete_hits));
    u(sink, "incr_misses", load(&c.incr_misses));
    u(sink, "incr_hits", load(&c.incr_hits));
    u(sink, "decr_misses", load(&c.decr_misses));
    u(sink, "decr_hits", load(&c.decr_hits));
    u(sink, "cas_misses", load(&c.cas_misses));
    u(sink, "cas_hits", load(&c.cas_hits));
    u(sink, "cas_badval", load(&c.cas_badval));
    u(sink, "touch_hits", load(&c.touch_hits));
    u(sink, "touch_misses", load(&c.touch_misses));
    u(sink, "store_too_large", load(&c.store_too_large));
    u(sink, "store_no_memory", load(&c.store_no_memory));
    u(sink, "auth_cmds", 0);
    u(sink, "auth_errors", 0);
    // Every protocol's, as the server counts them.
    u(sink, "bytes_read", netl(net.map(|n| &n.bytes_received)));
    u(
        sink,
        "bytes_written",
        netl(net.map(|n| &n.bytes_copied)) + netl(net.map(|n| &n.bytes_referenced)),
    );
    u(sink, "limit_maxbytes", shared.config.memory_bytes() as u64);
    for (name, bytes) in shared.memory_parts() {
        u(sink, name, bytes);
    }
    u(sink, "accepting_conns", 1);
    u(sink, "threads", shared.threads as u64);
    u(sink, "bytes", s.bytes as u64);
    u(sink, "list_chunks", s.list_chunks as u64);
    u(sink, "list_span_bytes", s.list_span_bytes as u64);
    u(sink, "dict_bytes", s.dict_bytes as u64);
    u(sink, "curr_items", s.items as u64);
    u(sink, "total_items", s.sets);
    u(sink, "evictions", s.evictions);
    u(
        sink,
        "reply_bytes_copied",
        netl(net.map(|n| &n.bytes_copied)),
    );
    u(
        sink,
        "reply_bytes_referenced",
        netl(net.map(|n| &n.bytes_referenced)),
    );
    u(sink, "send_calls", netl(net.map(|n| &n.send_calls)));
    u(sink, "copy_threshold", shared.copy_threshold as u64);
    for (name, value) in shared.datapath_parts() {
        mc::write_stat(sink, name.as_bytes(), value.as_bytes());
    }
}

fn settings(ctx: &mut Ctx<'_>) {
    let cfg = &ctx.shared.config;
    let sink = &mut *ctx.out;
    let u = |sink: &mut dyn crate::protocol::ReplySink, k: &str, v: u64| {
        mc::write_stat_u64(sink, k.as_bytes(), v)
    };
    let t = |sink: &mut dyn crate::protocol::ReplySink, k: &str, v: &str| {
        mc::write_stat(sink, k.as_bytes(), v.as_bytes())
    };
    u(sink, "maxbytes", cfg.memory_bytes() as u64);
    u(sink, "maxconns", cfg.max_conns as u64);
    u(sink, "tcpport", u64::from(cfg.port));
    u(sink, "udpport", u64::from(cfg.udp_port));
    t(sink, "inter", &cfg.listen.to_string());
    u(sink, "verbosity", 0);
    u(sink, "num_threads", ctx.shared.threads as u64);
    t(
        sink,
        "evictions",
        if ctx.shared.store.evicts() {
            "on"
        } else {
            "off"
        },
    );
    t(sink, "cas_enabled", "yes");
    t(sink, "binding_protocol", "ascii");
    u(sink, "item_size_max", cfg.max_item_size as u64);
    u(sink, "idle_timeout", 0);
    t(sink, "shutdown_command", "no");
    t(sink, "lru_maintainer_thread", "no");
    t(sink, "slab_reassign", "no");
    t(sink, "hash_algorithm", "granola");
}

fn items(ctx: &mut Ctx<'_>) {
    // One class: granola-kv's store has no slab classes to report apart.
    let s = since_reset(ctx);
    mc::write_stat_u64(ctx.out, b"items:1:number", s.items as u64);
    mc::write_stat_u64(ctx.out, b"items:1:evicted", s.evictions);
    mc::write_stat_u64(ctx.out, b"items:1:expired_unfetched", 0);
}

fn slabs(ctx: &mut Ctx<'_>) {
    let s = ctx.db.stats();
    mc::write_stat_u64(ctx.out, b"1:used_chunks", s.items as u64);
    mc::write_stat_u64(ctx.out, b"active_slabs", 1);
    mc::write_stat_u64(ctx.out, b"total_malloced", s.item_bytes as u64);
}
