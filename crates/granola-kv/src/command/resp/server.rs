//! Server commands: PING ECHO DBSIZE FLUSHALL/FLUSHDB INFO CONFIG COMMAND.

use super::table::COMMANDS;
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use std::sync::atomic::Ordering;

/// `PING [message]`.
pub fn ping(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match cmd.len() {
        1 => ctx.raw(resp::PONG),
        2 => ctx.bytes(cmd.arg(1).unwrap_or_default()),
        _ => resp::write_wrong_arity(ctx.out, cmd.name()),
    }
    Step::Done
}

/// `ECHO message`.
pub fn echo(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    ctx.bytes(cmd.arg(1).unwrap_or_default());
    Step::Done
}

/// `DBSIZE`.
pub fn dbsize(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.int(ctx.db.len() as i64);
    Step::Done
}

/// `FLUSHALL` / `FLUSHDB` (`ASYNC`/`SYNC` accepted; the flush is
/// immediate either way).
pub fn flushall(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.db.flush_all();
    ctx.ok();
    Step::Done
}

/// `INFO [section]`.
pub fn info(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let text = info_text(ctx);
    ctx.verbatim(text.as_bytes());
    Step::Done
}

fn info_text(ctx: &Ctx<'_>) -> String {
    let shared = ctx.shared;
    let s = ctx.db.stats();
    let net = shared.net.get();
    let load = |f: fn(&granola_net::server::ServerStats) -> &std::sync::atomic::AtomicU64| {
        net.map_or(0, |n| f(n).load(Ordering::Relaxed))
    };
    let mut parts = String::new();
    for (name, bytes) in shared.memory_parts() {
        parts.push_str(&format!("{name}:{bytes}\r\n"));
    }
    format!(
        "# Server\r\nredis_version:7.0.15\r\ngranola_kv_version:{}\r\nprocess_id:{}\r\nuptime_in_seconds:{}\r\n\
         \r\n# Clients\r\nconnected_clients:{}\r\n\
         \r\n# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\n{parts}\
         \r\n# Stats\r\ntotal_connections_received:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\nevicted_keys:{}\r\nexpired_keys:{}\r\n\
         reply_bytes_copied:{}\r\nreply_bytes_referenced:{}\r\nsend_calls:{}\r\ncopy_threshold:{}\r\n\
         \r\n# Keyspace\r\ndb0:keys={},expires=0,avg_ttl=0\r\n",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        shared.started.elapsed().as_secs(),
        load(|n| &n.conns_open),
        s.bytes,
        shared.config.memory_bytes(),
        load(|n| &n.conns_total),
        s.hits,
        s.misses,
        s.evictions,
        s.expired,
        load(|n| &n.bytes_copied),
        load(|n| &n.bytes_referenced),
        load(|n| &n.send_calls),
        shared.copy_threshold,
        s.items,
    )
}

/// `CONFIG GET param` / `CONFIG SET` / `CONFIG RESETSTAT`.
pub fn config(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = cmd.arg(1).unwrap_or_default();
    if !sub.eq_ignore_ascii_case(b"GET") || cmd.len() != 3 {
        if sub.eq_ignore_ascii_case(b"SET") || sub.eq_ignore_ascii_case(b"RESETSTAT") {
            ctx.ok();
        } else {
            ctx.error(b"ERR unsupported CONFIG subcommand");
        }
        return Step::Done;
    }
    let param = cmd.arg(2).unwrap_or_default();
    // What redis-benchmark and clients ask for at start.
    let known: &[(&[u8], &[u8])] = &[(b"save", b""), (b"appendonly", b"no"), (b"databases", b"1")];
    match known.iter().find(|(k, _)| param.eq_ignore_ascii_case(k)) {
        Some((k, v)) => {
            ctx.map(1);
            ctx.bytes(k);
            ctx.bytes(v);
        }
        None => ctx.map(0),
    }
    Step::Done
}

/// `COMMAND`, `COMMAND COUNT`: the command table.
pub fn command(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"COUNT")) {
        ctx.int(COMMANDS.len() as i64);
    } else {
        // redis-cli asks for command docs at start; an empty listing makes
        // it fall back to plain completion.
        ctx.raw(resp::EMPTY_ARRAY);
    }
    Step::Done
}
