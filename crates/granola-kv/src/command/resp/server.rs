//! Server commands: PING ECHO TIME DBSIZE FLUSHALL FLUSHDB INFO CONFIG
//! COMMAND LOLWUT.

use super::connection::REDIS_VERSION;
use super::resetstat::Counters;
use super::table::{self, Spec, COMMANDS};
use super::{glob, Ctx};
use crate::command::{Step, Storage};
use crate::protocol::resp::{self, Command};
use crate::server::config::EvictionPolicy;
use crate::server::Shared;
use std::fmt::Write;

/// `PING [message]`.
pub fn ping(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if ctx.conn.sub.is_some() && ctx.version() == resp::Version::Resp2 && cmd.len() <= 2 {
        // Subscribed mode answers in the messages' shape.
        ctx.array(2);
        ctx.bytes(b"pong");
        ctx.bytes(cmd.arg(1).unwrap_or_default());
        return Step::Done;
    }
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

/// `TIME`: `[seconds, microseconds]`.
/// `ROLE`: a primary with no replicas (granola-kv does not replicate).
pub fn role(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.array(3);
    ctx.bytes(b"master");
    ctx.int(0);
    ctx.array(0);
    Step::Done
}

/// `WAIT numreplicas timeout`: 0 replicas acknowledged, at once. There
/// are none to wait for (Redis with no replica waits out the timeout).
pub fn wait(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let valid = |a: Option<&[u8]>| a.and_then(super::parse_i64).is_some_and(|n| n >= 0);
    if !valid(cmd.arg(1)) || !valid(cmd.arg(2)) {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    }
    ctx.int(0);
    Step::Done
}

/// `LOLWUT [VERSION v]`: Redis draws art for versions 5 and 6 and
/// answers its version line otherwise; granola-kv answers the line, with
/// its own version and the Redis version it speaks.
pub fn lolwut(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() >= 3
        && cmd
            .arg(1)
            .is_some_and(|a| a.eq_ignore_ascii_case(b"VERSION"))
        && super::parse_i64(cmd.arg(2).unwrap_or_default()).is_none()
    {
        ctx.raw(resp::ERR_NOT_INTEGER);
        return Step::Done;
    }
    let line = format!(
        "granola-kv ver. {} (Redis ver. {REDIS_VERSION})\n",
        env!("CARGO_PKG_VERSION")
    );
    ctx.verbatim(line.as_bytes());
    Step::Done
}

/// `LASTSAVE`: granola-kv keeps no snapshot, so the time it started, as
/// Redis answers before its first save.
pub fn lastsave(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let up = ctx.shared.started.elapsed();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.int(now.saturating_sub(up).as_secs() as i64);
    Step::Done
}

/// `SLOWLOG GET [n] | LEN | RESET | HELP`: granola-kv keeps no slow log
/// (INFO commandstats has each command's time), so it is always empty.
pub fn slowlog(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match (
        &cmd.arg(1).unwrap_or_default().to_ascii_uppercase()[..],
        cmd.len(),
    ) {
        (b"GET", 2 | 3) => ctx.array(0),
        (b"LEN", 2) => ctx.int(0),
        (b"RESET", 2) => ctx.ok(),
        (b"HELP", 2) => ctx.help(&[
            b"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            b"GET [<count>]",
            b"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            b"    Entries are made of:",
            b"    id, timestamp, time in microseconds, arguments array, client IP and port,",
            b"    client name",
            b"LEN",
            b"    Return the length of the slowlog.",
            b"RESET",
            b"    Reset the slowlog.",
            b"HELP",
            b"    Prints this help.",
        ]),
        _ => ctx.unknown_subcommand("SLOWLOG", cmd.arg(1).unwrap_or_default()),
    }
    Step::Done
}

pub fn time(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    ctx.array(2);
    ctx.bytes(now.as_secs().to_string().as_bytes());
    ctx.bytes(now.subsec_micros().to_string().as_bytes());
    Step::Done
}

/// `DBSIZE`.
pub fn dbsize(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.int(ctx.db.len() as i64);
    Step::Done
}

/// `FLUSHALL [ASYNC|SYNC]`: every database (the flush is immediate
/// either way).
pub fn flushall(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.shared.store.flush_all();
    ctx.ok();
    Step::Done
}

/// `FLUSHDB [ASYNC|SYNC]`: the selected database.
pub fn flushdb(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.db.flush_all();
    ctx.ok();
    Step::Done
}

/// INFO's sections, in Redis' order, and whether `INFO` without arguments
/// (`default`) includes them.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("latencystats", false),
    ("cluster", true),
    ("keyspace", true),
];

/// `INFO [section ...]` (`default`, `all`, `everything` or names).
pub fn info(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let args: Vec<Vec<u8>> = cmd.args().skip(1).map(|a| a.to_ascii_lowercase()).collect();
    let all = args.iter().any(|a| a == b"all" || a == b"everything");
    let default = args.is_empty() || args.iter().any(|a| a == b"default");
    let mut text = String::new();
    for &(name, in_default) in SECTIONS {
        let wanted = all || (default && in_default) || args.iter().any(|a| a == name.as_bytes());
        if wanted {
            if !text.is_empty() {
                text.push_str("\r\n");
            }
            section(ctx, name, &mut text);
        }
    }
    ctx.verbatim(text.as_bytes());
    Step::Done
}

fn section(ctx: &Ctx<'_>, name: &str, t: &mut String) {
    let shared = ctx.shared;
    let s = shared.store.stats();
    let cfg = &shared.config;
    let uptime = shared.started.elapsed().as_secs();
    let _ = match name {
        "server" => write!(
            t,
            "# Server\r\nredis_version:{REDIS_VERSION}\r\ngranola_kv_version:{}\r\nredis_mode:standalone\r\n\
             os:{} {}\r\narch_bits:64\r\nmultiplexing_api:{}\r\nprocess_id:{}\r\ntcp_port:{}\r\n\
             run_id:{}\r\nuptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nhz:10\r\nconfigured_hz:10\r\n\
             lru_clock:{}\r\nexecutable:granola-kv\r\nconfig_file:\r\n",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH,
            // The TCP event loop (AF_XDP serves UDP; TCP stays on epoll).
            match shared.datapath.get().map(|d| &d.kind) {
                Some(granola_net::DatapathKind::Uring) => "io_uring",
                _ => "epoll",
            },
            std::process::id(),
            cfg.resp_port,
            shared.run_id,
            uptime / 86400,
            // Redis's LRU clock: seconds, 24 bits.
            (shared.store.now_ms() / 1000) & 0xFF_FFFF,
        ),
        "clients" => write!(
            t,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\n",
            shared.net_counter(|n| &n.conns_open),
            cfg.max_conns,
            ctx.shared.waiters.blocked_clients(),
        ),
        "memory" => {
            let limit = cfg.memory_bytes() as u64;
            let used = s.bytes as u64;
            shared.metrics.note_memory(used);
            let peak = shared.metrics.peak_bytes();
            let rss = crate::command::process::rss_bytes();
            let system = crate::command::process::total_memory_bytes();
            let _ = write!(
                t,
                "# Memory\r\nused_memory:{used}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\n\
                 used_memory_rss_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\n\
                 used_memory_peak_perc:{:.2}%\r\ntotal_system_memory:{system}\r\ntotal_system_memory_human:{}\r\n\
                 maxmemory:{limit}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\n\
                 mem_fragmentation_ratio:{:.2}\r\nmem_allocator:granola-pool\r\n",
                human(used),
                human(rss),
                human(peak),
                if peak == 0 { 0.0 } else { used as f64 * 100.0 / peak as f64 },
                human(system),
                human(limit),
                shared.store.policy().name(),
                // RSS over what the items take: the pools are reserved
                // up front, so this starts high and falls as `-m` fills.
                if used == 0 { 0.0 } else { rss as f64 / used as f64 },
            );
            // Where -m goes, part by part (items, pinned replies,
            // connection buffers).
            for (name, bytes) in shared.memory_parts() {
                let _ = write!(t, "{name}:{bytes}\r\n");
            }
            Ok(())
        }
        // No persistence: nothing saved since the start, nothing failed.
        "persistence" => write!(
            t,
            "# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\n\
             rdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\n\
             aof_last_bgrewrite_status:ok\r\naof_last_write_status:ok\r\n",
            (shared.store.now_ms() / 1000).saturating_sub(uptime),
        ),
        "stats" => {
            let c = shared.stats_base.since(counters(shared));
            let (ops, input, output) = shared.metrics.instantaneous();
            let _ = write!(
                t,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nrejected_connections:{}\r\n\
                 keyspace_hits:{}\r\nkeyspace_misses:{}\r\nevicted_keys:{}\r\nexpired_keys:{}\r\n\
                 reply_bytes_copied:{}\r\nreply_bytes_referenced:{}\r\nsend_calls:{}\r\ncopy_threshold:{}\r\n\
                 mget_snapshots_alone:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\n\
                 total_error_replies:{}\r\ninstantaneous_ops_per_sec:{ops}\r\ntotal_net_input_bytes:{}\r\n\
                 total_net_output_bytes:{}\r\ninstantaneous_input_kbps:{input:.2}\r\ninstantaneous_output_kbps:{output:.2}\r\n\
                 expired_time_cap_reached_count:{}\r\nlatest_fork_usec:0\r\ntotal_reads_processed:{}\r\n\
                 total_writes_processed:{}\r\nidle_naps:{}\r\n",
                c.conns_total,
                shared.commandstats.total_calls(table::lookup(b"info")),
                c.conns_refused,
                c.hits,
                c.misses,
                c.evictions,
                c.expired,
                c.bytes_copied,
                c.bytes_referenced,
                c.send_calls,
                shared.copy_threshold,
                shared
                    .resp_gate
                    .retried_alone
                    .load(std::sync::atomic::Ordering::Relaxed),
                shared.bus.num_channels(),
                shared.bus.numpat(),
                shared.errors.total(),
                c.bytes_received,
                c.bytes_copied + c.bytes_referenced,
                shared.metrics.expire_cut_short_count(),
                c.recv_calls,
                c.send_calls,
                c.idle_naps,
            );
            // What the network layer runs on (epoll, io_uring, AF_XDP).
            for (name, value) in shared.datapath_parts() {
                let _ = write!(t, "{name}:{value}\r\n");
            }
            Ok(())
        }
        "replication" => write!(
            t,
            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n\
             master_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\n\
             repl_backlog_active:0\r\nrepl_backlog_size:0\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
            shared.run_id,
            "0".repeat(40),
        ),
        "cpu" => {
            let (user, sys) = crate::command::process::cpu_seconds();
            write!(
                t,
                "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\n\
                 used_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
            )
        }
        "commandstats" => {
            let _ = write!(t, "# Commandstats\r\n");
            for (spec, st) in shared.commandstats.calls(table::lookup(b"info")) {
                // `usec` is estimated from one call in 16 (see
                // `commandstats`).
                let per_call = if st.calls == 0 {
                    0.0
                } else {
                    st.usec as f64 / st.calls as f64
                };
                let _ = write!(
                    t,
                    "cmdstat_{}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                    spec.name, st.calls, st.usec, st.rejected, st.failed
                );
            }
            Ok(())
        }
        // No modules are loaded.
        "modules" => write!(t, "# Modules\r\n"),
        "errorstats" => {
            let _ = write!(t, "# Errorstats\r\n");
            shared.errors.write_section(t);
            Ok(())
        }
        "latencystats" => {
            let _ = write!(t, "# Latencystats\r\n");
            shared.commandstats.write_latency_section(t);
            Ok(())
        }
        // Cluster-aware clients read this to see a standalone server.
        "cluster" => write!(t, "# Cluster\r\ncluster_enabled:0\r\n"),
        "keyspace" => {
            let _ = write!(t, "# Keyspace\r\n");
            for n in 0..cfg.databases.min(256) {
                let db = shared.dbs.db(&shared.store, n as u8);
                let (keys, expires, avg_ttl) = (db.len(), db.expiring(), db.avg_ttl_ms());
                if keys > 0 {
                    let _ = write!(
                        t,
                        "db{n}:keys={keys},expires={expires},avg_ttl={avg_ttl}\r\n"
                    );
                }
                if n == 0 && keys == s.items {
                    break; // everything is in db0
                }
            }
            Ok(())
        }
        _ => Ok(()),
    };
}

/// `n` bytes as Redis writes them for people (`1.50M`).
fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["K", "M", "G", "T", "P"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2}{}", UNITS[unit])
}

/// INFO stats' counters kept by the store and the network layer, as
/// they stand.
fn counters(shared: &Shared) -> Counters {
    let s = shared.store.stats();
    let load = |f| shared.net_counter(f);
    Counters {
        conns_total: load(|n| &n.conns_total),
        conns_refused: load(|n| &n.conns_refused),
        hits: s.hits,
        misses: s.misses,
        evictions: s.evictions,
        expired: s.expired,
        bytes_copied: load(|n| &n.bytes_copied),
        bytes_referenced: load(|n| &n.bytes_referenced),
        send_calls: load(|n| &n.send_calls),
        recv_calls: load(|n| &n.recv_calls),
        bytes_received: load(|n| &n.bytes_received),
        idle_naps: load(|n| &n.naps),
    }
}

/// `CONFIG RESETSTAT`: INFO's counters, commandstats, latencystats and
/// errorstats from zero.
fn reset_stats(shared: &Shared) {
    shared.stats_base.reset(counters(shared));
    shared
        .commandstats
        .reset(table::lookup_full(b"config|resetstat"));
    shared.errors.reset();
}

fn yes_no(on: bool) -> &'static str {
    if on {
        "yes"
    } else {
        "no"
    }
}

/// The configuration parameters CONFIG GET answers, with their values.
fn parameters(ctx: &Ctx<'_>) -> Vec<(&'static str, String)> {
    let cfg = &ctx.shared.config;
    vec![
        ("maxmemory", cfg.memory_bytes().to_string()),
        ("maxmemory-policy", ctx.shared.store.policy().name().into()),
        (
            "lfu-log-factor",
            ctx.shared.store.lfu_tuning().log_factor.to_string(),
        ),
        (
            "lfu-decay-time",
            ctx.shared.store.lfu_tuning().decay_minutes.to_string(),
        ),
        ("maxclients", cfg.max_conns.to_string()),
        ("notify-keyspace-events", ctx.shared.notifier.letters()),
        ("databases", cfg.databases.to_string()),
        ("port", cfg.resp_port.to_string()),
        ("bind", cfg.listen.to_string()),
        ("proto-max-bulk-len", cfg.max_bulk().to_string()),
        ("requirepass", cfg.requirepass.clone().unwrap_or_default()),
        ("save", String::new()),
        ("appendonly", "no".into()),
        ("timeout", "0".into()),
        ("tcp-keepalive", "0".into()),
        ("io-threads", ctx.shared.threads.to_string()),
        (
            "enable-debug-command",
            ctx.shared.config.enable_debug_command.name().into(),
        ),
        (
            "latency-tracking",
            yes_no(ctx.shared.commandstats.tracking()).into(),
        ),
        (
            "latency-tracking-info-percentiles",
            ctx.shared
                .commandstats
                .percentiles()
                .iter()
                .map(f64::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        ),
    ]
}

/// `CONFIG GET pattern...` / `CONFIG SET param value...` /
/// `CONFIG RESETSTAT`.
pub fn config(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = cmd.arg(1).unwrap_or_default().to_ascii_uppercase();
    let params = parameters(ctx);
    match &sub[..] {
        b"GET" => {
            let hits: Vec<&(&str, String)> = params
                .iter()
                .filter(|(k, _)| {
                    cmd.args()
                        .skip(2)
                        .any(|p| glob::matches(p, k.as_bytes(), true))
                })
                .collect();
            ctx.map(hits.len());
            for (k, v) in hits {
                ctx.bytes(k.as_bytes());
                ctx.bytes(v.as_bytes());
            }
        }
        b"SET" if cmd.len() % 2 != 0 => ctx.error(b"ERR syntax error"),
        b"SET" => {
            let mut args = cmd.args().skip(2);
            while let (Some(k), Some(v)) = (args.next(), args.next()) {
                let name = String::from_utf8_lossy(k).to_ascii_lowercase();
                match params.iter().find(|(p, _)| *p == name) {
                    // Setting a parameter to what it is, or persistence
                    // off (there is none): accepted.
                    Some((_, cur)) if cur.as_bytes() == v => {}
                    Some(_)
                        if (name == "save" && v.is_empty())
                            || (name == "appendonly" && v == b"no") => {}
                    Some(_) if name == "notify-keyspace-events" => {
                        if !ctx.shared.notifier.configure(v) {
                            let text = format!(
                                "ERR CONFIG SET failed (possibly related to argument '{name}') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
                            );
                            ctx.error(text.as_bytes());
                            return Step::Done;
                        }
                    }
                    Some(_) if name == "latency-tracking" => {
                        match super::choice(v, b"yes", b"no") {
                            Some(on) => ctx.shared.commandstats.set_tracking(on),
                            None => {
                                ctx.error(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - argument must be 'yes' or 'no'").as_bytes());
                                return Step::Done;
                            }
                        }
                    }
                    Some(_) if name == "latency-tracking-info-percentiles" => {
                        if let Err(why) = ctx.shared.commandstats.set_percentiles(v) {
                            ctx.error(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}").as_bytes());
                            return Step::Done;
                        }
                    }
                    Some(_) if name == "maxmemory-policy" => match EvictionPolicy::from_name(v) {
                        Some(p) => ctx.shared.store.set_policy(p),
                        None => {
                            let text = format!(
                                "ERR CONFIG SET failed (possibly related to argument '{name}') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"
                            );
                            ctx.error(text.as_bytes());
                            return Step::Done;
                        }
                    },
                    Some(_) if name == "lfu-log-factor" || name == "lfu-decay-time" => {
                        let n = match super::parse_i64(v) {
                            Some(n) if (0..=i64::from(i32::MAX)).contains(&n) => n as u32,
                            Some(_) => {
                                ctx.error(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - argument must be between 0 and 2147483647 inclusive").as_bytes());
                                return Step::Done;
                            }
                            None => {
                                ctx.error(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - argument couldn't be parsed into an integer").as_bytes());
                                return Step::Done;
                            }
                        };
                        let mut tuning = ctx.shared.store.lfu_tuning();
                        if name == "lfu-log-factor" {
                            tuning.log_factor = n;
                        } else {
                            tuning.decay_minutes = n;
                        }
                        ctx.shared.store.set_lfu_tuning(tuning);
                    }
                    Some(_) => {
                        let text = format!(
                            "ERR CONFIG SET failed (possibly related to argument '{name}') - granola-kv sets it at start only (command-line flag)"
                        );
                        ctx.error(text.as_bytes());
                        return Step::Done;
                    }
                    None => {
                        let text = format!(
                            "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
                        );
                        ctx.error(text.as_bytes());
                        return Step::Done;
                    }
                }
            }
            ctx.ok();
        }
        b"RESETSTAT" => {
            reset_stats(ctx.shared);
            ctx.ok();
        }
        // Settings come from the command line only.
        b"REWRITE" => ctx.error(b"ERR The server is running without a config file"),
        b"HELP" => ctx.help(&[
            b"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            b"GET <pattern>",
            b"    Return parameters matching the glob-like <pattern> and their values.",
            b"SET <directive> <value>",
            b"    Set the configuration <directive> to <value>.",
            b"RESETSTAT",
            b"    Reset statistics reported by the INFO command.",
            b"REWRITE",
            b"    Rewrite the configuration file.",
            b"HELP",
            b"    Prints this help.",
        ]),
        _ => {
            ctx.unknown_subcommand("CONFIG", cmd.arg(1).unwrap_or_default());
        }
    }
    Step::Done
}

/// One `COMMAND INFO` entry: name, arity, flags, first/last key, step,
/// The command flags `COMMAND INFO` shows, in Redis's order.
const FLAG_ORDER: &[&str] = &[
    "write",
    "readonly",
    "denyoom",
    "module",
    "admin",
    "pubsub",
    "noscript",
    "blocking",
    "loading",
    "stale",
    "skip_monitor",
    "skip_slowlog",
    "asking",
    "fast",
    "no_auth",
    "no_mandatory_keys",
    "no_async_loading",
    "no_multi",
    "movablekeys",
    "allow_busy",
];

/// ACL categories, tips, key specs, subcommands (each an entry).
fn command_entry(ctx: &mut Ctx<'_>, spec: &Spec) {
    ctx.array(10);
    ctx.bytes(spec.name.as_bytes());
    ctx.int(i64::from(spec.arity));
    // Redis lists flags and categories in its own order, and hides
    // `may_replicate`.
    let (reported, keys) = super::key_specs::reported(spec);
    let flags: Vec<&str> = FLAG_ORDER
        .iter()
        .copied()
        .filter(|f| reported.contains(f))
        .collect();
    ctx.set(flags.len());
    for f in flags {
        ctx.simple(f.as_bytes());
    }
    ctx.int(i64::from(keys.0));
    ctx.int(i64::from(keys.1));
    ctx.int(i64::from(keys.2));
    let mut categories = super::acl::categories(spec);
    categories.sort_by_key(|c| super::acl::CATEGORIES.iter().position(|x| x == c));
    ctx.set(categories.len());
    for c in categories {
        ctx.simple(format!("@{c}").as_bytes());
    }
    super::key_specs::write_info(ctx, spec);
    ctx.array(spec.subs.len());
    for sub in spec.subs {
        command_entry(ctx, sub);
    }
}

/// `COMMAND`: every command's `COMMAND INFO` entry.
pub fn command(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.array(COMMANDS.len());
    for spec in COMMANDS {
        command_entry(ctx, spec);
    }
    Step::Done
}

/// `COMMAND COUNT`: the commands, not counting subcommands (as Redis).
pub fn command_count(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.int(COMMANDS.len() as i64);
    Step::Done
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN
/// pattern]`: commands and subcommands (`client|kill`).
pub fn command_list(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let filter = match cmd.len() {
        2 => None,
        5 if cmd
            .arg(2)
            .is_some_and(|a| a.eq_ignore_ascii_case(b"FILTERBY")) =>
        {
            let how = cmd.arg(3).unwrap_or_default().to_ascii_uppercase();
            let value = cmd.arg(4).unwrap_or_default();
            match &how[..] {
                b"MODULE" | b"ACLCAT" | b"PATTERN" => Some((how, value)),
                _ => {
                    ctx.error(b"ERR syntax error");
                    return Step::Done;
                }
            }
        }
        _ => {
            ctx.error(b"ERR syntax error");
            return Step::Done;
        }
    };
    let chosen: Vec<&Spec> = table::all()
        .filter(|spec| match &filter {
            None => true,
            // No modules are loaded.
            Some((how, _)) if how == b"MODULE" => false,
            Some((how, cat)) if how == b"ACLCAT" => super::acl::categories(spec)
                .iter()
                .any(|c| c.as_bytes().eq_ignore_ascii_case(cat)),
            Some((_, pattern)) => glob::matches(pattern, spec.name.as_bytes(), true),
        })
        .collect();
    ctx.array(chosen.len());
    for spec in chosen {
        ctx.bytes(spec.name.as_bytes());
    }
    Step::Done
}

/// `COMMAND INFO [name ...]`: each named command or subcommand
/// (`client|kill`), null for an unknown one; every command without names.
pub fn command_info(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() == 2 {
        return command(ctx, cmd);
    }
    ctx.array(cmd.len() - 2);
    for n in cmd.args().skip(2) {
        match table::lookup_full(n) {
            Some(spec) => command_entry(ctx, spec),
            None => ctx.null(),
        }
    }
    Step::Done
}

/// `COMMAND DOCS [name ...]`: a map of the named commands (unknown ones
/// left out), or of every command.
pub fn command_docs(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let names: Vec<&'static Spec> = if cmd.len() == 2 {
        COMMANDS.iter().collect()
    } else {
        cmd.args().skip(2).filter_map(table::lookup_full).collect()
    };
    ctx.map(names.len());
    for spec in names {
        ctx.bytes(spec.name.as_bytes());
        super::command_docs::write_entry(ctx, spec);
    }
    Step::Done
}

/// `COMMAND HELP`.
pub fn command_help(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.help(&[
        b"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"(no subcommand)",
        b"    Return details about all Redis commands.",
        b"COUNT",
        b"    Return the total number of commands in this Redis server.",
        b"LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
        b"    Return a list of all commands in this Redis server.",
        b"INFO [<command-name> ...]",
        b"    Return details about multiple Redis commands.",
        b"    If no command names are given, documentation details for all",
        b"    commands are returned.",
        b"DOCS [<command-name> ...]",
        b"    Return documentation details about multiple Redis commands.",
        b"    If no command names are given, documentation details for all",
        b"    commands are returned.",
        b"GETKEYS <full-command>",
        b"    Return the keys from a full Redis command.",
        b"HELP",
        b"    Prints this help.",
    ]);
    Step::Done
}

/// `COMMAND GETKEYS command arg...`: the keys a command names, as
/// [`Spec::keys_in`] finds them, with Redis's errors.
pub fn command_getkeys(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    asked_about(ctx, cmd, |ctx, spec, inner| {
        let keys: Vec<&[u8]> = spec.keys_in(inner).collect();
        if keys.is_empty() && !spec.flags.contains(&"no_mandatory_keys") {
            ctx.error(b"ERR Invalid arguments specified for command");
            return;
        }
        ctx.array(keys.len());
        for k in keys {
            ctx.bytes(k);
        }
    });
    Step::Done
}

/// `COMMAND GETKEYSANDFLAGS <full-command>`: each key with what the
/// command does to it, by Redis 7's key specs.
pub fn command_getkeysandflags(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    asked_about(ctx, cmd, |ctx, spec, inner| {
        let keys = super::key_specs::keys_and_flags(spec, inner);
        let optional = spec.flags.contains(&"no_mandatory_keys");
        let keys = match keys {
            Some(k) if !k.is_empty() || optional => k,
            None if optional => Vec::new(),
            _ => {
                ctx.error(b"ERR Invalid arguments specified for command");
                return;
            }
        };
        ctx.array(keys.len());
        for (at, flags) in keys {
            ctx.array(2);
            ctx.bytes(inner.arg(at).unwrap_or_default());
            super::key_specs::write_flags(ctx, flags);
        }
    });
    Step::Done
}

/// Runs `f` on the command `COMMAND GETKEYS`/`GETKEYSANDFLAGS` asks
/// about, or answers Redis's error for one that names no keys or does not
/// fit its arity.
fn asked_about(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'_>,
    f: impl FnOnce(&mut Ctx<'_>, &'static Spec, &Command<'_>),
) {
    let inner_args: Vec<&[u8]> = cmd.args().skip(2).collect();
    let mut buf = Vec::new();
    resp::encode_command(&inner_args, &mut buf);
    let limits = crate::protocol::Limits {
        max_args: usize::MAX,
        max_bulk: usize::MAX,
        ..crate::protocol::Limits::default()
    };
    let crate::protocol::Parsed::Done { cmd: inner, .. } = resp::parse(&buf, &limits) else {
        ctx.error(b"ERR Invalid command specified");
        return;
    };
    let spec = match table::resolve(&inner) {
        Ok(spec) => spec,
        Err(table::Miss::Arity(spec)) if spec.has_keys() => {
            ctx.error(b"ERR Invalid number of arguments specified for command");
            return;
        }
        Err(table::Miss::Arity(_)) => {
            ctx.error(b"ERR The command has no key arguments");
            return;
        }
        Err(_) => {
            ctx.error(b"ERR Invalid command specified");
            return;
        }
    };
    if !spec.has_keys() {
        ctx.error(b"ERR The command has no key arguments");
        return;
    }
    f(ctx, spec, &inner);
}
