//! `MEMORY` and its subcommands: USAGE, STATS, DOCTOR, PURGE,
//! MALLOC-STATS, HELP.
//!
//! USAGE reports what the key holds against `-m` ([`Item::memory_usage`]):
//! its item slot, its index cell and a collection's chunks or table. The
//! whole collection is counted, so SAMPLES (Redis estimates large
//! collections from a sample) is accepted and has no effect. Like `OBJECT`,
//! looking does not count as using the key. `redis-cli --memkeys` reads it.
//!
//! [`Item::memory_usage`]: crate::store::Item::memory_usage

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::Command;
use crate::store::EvictionPolicy;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `MEMORY USAGE key [SAMPLES count]`.
pub fn usage(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() != 3 && cmd.len() != 5 {
        ctx.error(b"ERR syntax error");
        return Step::Done;
    }
    if cmd.len() == 5 {
        let samples = parse_i64(arg(cmd, 4));
        if !arg(cmd, 3).eq_ignore_ascii_case(b"SAMPLES") {
            ctx.error(b"ERR syntax error");
            return Step::Done;
        }
        if samples.is_none_or(|n| n < 0) {
            ctx.error(b"ERR value is out of range, must be positive");
            return Step::Done;
        }
    }
    match ctx.db.peek(arg(cmd, 2)) {
        Some(item) => ctx.int(item.memory_usage() as i64),
        None => ctx.null(),
    }
    Step::Done
}

/// `MEMORY STATS`: Redis's fields that mean the same here (what `-m`
/// holds: items and their index; the dataset is the items), then where
/// `-m` goes part by part, as INFO memory lists it.
pub fn stats(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let s = ctx.shared.store.stats();
    let parts = ctx.shared.memory_parts();
    let keys = s.items as u64;
    let (items, index) = (s.item_bytes as u64, s.index_bytes as u64);
    let fields: [(&str, u64); 5] = [
        ("total.allocated", s.bytes as u64),
        ("overhead.total", index),
        ("keys.count", keys),
        (
            "keys.bytes-per-key",
            (items + index).checked_div(keys).unwrap_or(0),
        ),
        ("dataset.bytes", items),
    ];
    ctx.map(fields.len() + parts.len());
    for (name, value) in fields.iter().chain(&parts) {
        ctx.bytes(name.as_bytes());
        ctx.int(*value as i64);
    }
    Step::Done
}

/// `MEMORY DOCTOR`: what is worth knowing about `-m`'s use.
pub fn doctor(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let s = ctx.shared.store.stats();
    let limit = ctx.shared.config.memory_bytes();
    let text = if s.items == 0 {
        "This instance is empty: nothing to report.\n".to_string()
    } else {
        format!(
            "{} items and their index use {} of the {} bytes of -m ({:.1}%). granola-kv \
             accounts every item, its index cell and pinned replies against -m, and {} at \
             the limit.\n",
            s.items,
            s.bytes,
            limit,
            s.bytes as f64 * 100.0 / limit.max(1) as f64,
            eviction_text(ctx.shared.store.policy())
        )
    };
    ctx.verbatim(text.as_bytes());
    Step::Done
}

/// `MEMORY PURGE`: items live in granola's own pool, which returns
/// nothing to the allocator on demand; accepted.
pub fn purge(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.ok();
    Step::Done
}

/// `MEMORY MALLOC-STATS`: the allocator keeps no report (Redis says the
/// same without jemalloc).
pub fn malloc_stats(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.verbatim(b"Stats not supported for the current allocator");
    Step::Done
}

/// `MEMORY HELP`.
pub fn help(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.help(&[
        b"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"DOCTOR",
        b"    Return memory problems reports.",
        b"MALLOC-STATS",
        b"    Return internal statistics report from the memory allocator.",
        b"PURGE",
        b"    Attempt to purge dirty pages for reclamation by the allocator.",
        b"STATS",
        b"    Return information about the memory usage of the server.",
        b"USAGE <key> [SAMPLES <count>]",
        b"    Return memory in bytes used by <key> and its value.",
        b"HELP",
        b"    Prints this help.",
    ]);
    Step::Done
}

/// What the store does at the limit under `policy`, in words.
fn eviction_text(policy: EvictionPolicy) -> &'static str {
    match policy {
        EvictionPolicy::AllkeysLru => "evicts least recently used items (allkeys-lru)",
        EvictionPolicy::AllkeysLfu => "evicts least frequently used items (allkeys-lfu)",
        EvictionPolicy::AllkeysRandom => "evicts items at random (allkeys-random)",
        EvictionPolicy::VolatileLru => {
            "evicts least recently used items that have an expiry (volatile-lru)"
        }
        EvictionPolicy::VolatileLfu => {
            "evicts least frequently used items that have an expiry (volatile-lfu)"
        }
        EvictionPolicy::VolatileRandom => {
            "evicts items that have an expiry, at random (volatile-random)"
        }
        EvictionPolicy::VolatileTtl => "evicts the items closest to expiring (volatile-ttl)",
        EvictionPolicy::NoEviction => "refuses writes (noeviction)",
    }
}
