//! `ACL`: granola-kv has one user, `default`, whose password is
//! `--requirepass` (none: `nopass`) and who may run every command on every
//! key and channel. The subcommands that read users answer as Redis 7.2
//! does for that user; `ACL LOG` records failed authentications (Redis's
//! `auth` entries, merged and capped as Redis does); the subcommands that
//! would create, change or persist users are refused with a reason.

use super::table::{self, Spec, COMMANDS};
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::Command;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Redis's `acllog-max-len` default.
const LOG_MAX: usize = 128;

/// Entries with the same reason, context, object and user within this long
/// of each other are one entry with a count, as in Redis.
const MERGE_MS: u64 = 60_000;

/// The categories `ACL CAT` lists, in Redis's order.
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// Commands whose categories Redis 7 sets otherwise than their group and
/// flags suggest, in Redis's order: container commands (CLIENT, CONFIG,
/// OBJECT, XINFO...) carry only `slow` themselves; some writes are `slow`
/// (GEOADD, SINTERSTORE), some blocking pops `fast`; the `dangerous` ones.
const REDIS_CATEGORIES: &[(&str, &[&str])] = &[
    ("geoadd", &["write", "geo", "slow"]),
    (
        "sort",
        &["write", "set", "sortedset", "list", "slow", "dangerous"],
    ),
    (
        "sort_ro",
        &["read", "set", "sortedset", "list", "slow", "dangerous"],
    ),
    ("wait", &["slow", "connection"]),
    ("waitaof", &["slow", "connection"]),
    ("role", &["admin", "fast", "dangerous"]),
    ("lastsave", &["admin", "fast", "dangerous"]),
    ("cluster", &["slow"]),
    ("readonly", &["fast", "connection"]),
    ("readwrite", &["fast", "connection"]),
    ("asking", &["fast", "connection"]),
    ("slowlog", &["slow"]),
    ("latency", &["slow"]),
    ("keys", &["keyspace", "read", "slow", "dangerous"]),
    ("object", &["slow"]),
    ("swapdb", &["keyspace", "write", "fast", "dangerous"]),
    ("restore", &["keyspace", "write", "slow", "dangerous"]),
    (
        "restore-asking",
        &["keyspace", "write", "slow", "dangerous"],
    ),
    ("migrate", &["keyspace", "write", "slow", "dangerous"]),
    ("memory", &["slow"]),
    ("sinterstore", &["write", "set", "slow"]),
    ("sunionstore", &["write", "set", "slow"]),
    ("sdiffstore", &["write", "set", "slow"]),
    ("bzpopmin", &["write", "sortedset", "fast", "blocking"]),
    ("bzpopmax", &["write", "sortedset", "fast", "blocking"]),
    ("zremrangebyscore", &["write", "sortedset", "slow"]),
    ("zremrangebyrank", &["write", "sortedset", "slow"]),
    ("xread", &["read", "stream", "slow", "blocking"]),
    ("xinfo", &["slow"]),
    ("xgroup", &["slow"]),
    ("xreadgroup", &["write", "stream", "slow", "blocking"]),
    ("pubsub", &["slow"]),
    ("pubsub|help", &["slow"]),
    ("dbsize", &["keyspace", "read", "fast"]),
    ("flushall", &["keyspace", "write", "slow", "dangerous"]),
    ("flushdb", &["keyspace", "write", "slow", "dangerous"]),
    ("info", &["slow", "dangerous"]),
    ("config", &["slow"]),
    ("command", &["slow", "connection"]),
    ("command|count", &["slow", "connection"]),
    ("command|docs", &["slow", "connection"]),
    ("command|getkeys", &["slow", "connection"]),
    ("command|getkeysandflags", &["slow", "connection"]),
    ("command|help", &["slow", "connection"]),
    ("command|info", &["slow", "connection"]),
    ("command|list", &["slow", "connection"]),
    ("acl", &["slow"]),
    ("client", &["slow"]),
    ("eval_ro", &["slow", "scripting"]),
    ("evalsha_ro", &["slow", "scripting"]),
    ("script", &["slow"]),
    ("fcall_ro", &["slow", "scripting"]),
    ("function", &["slow"]),
];

/// A command's ACL categories, as Redis 7 gives them (`COMMAND INFO`
/// shows them too): a table of the commands where Redis departs from the
/// rule, else derived from its group and flags — the data-type group
/// (`generic` is `keyspace`), `read`/`write`, `fast` or else `slow`,
/// `blocking`, and `admin` with `dangerous`. A differential test checks
/// every command against Redis.
pub fn categories(spec: &Spec) -> Vec<&'static str> {
    if let Some((_, c)) = REDIS_CATEGORIES.iter().find(|(n, _)| *n == spec.name) {
        return c.to_vec();
    }
    let mut c = Vec::new();
    let flag = |f: &str| spec.flags.contains(&f);
    if flag("write") {
        c.push("write");
    }
    if flag("readonly") {
        c.push("read");
    }
    match spec.group {
        "generic" => c.push("keyspace"),
        "sorted-set" => c.push("sortedset"),
        "transactions" => c.push("transaction"),
        "server" => {}
        g => {
            if let Some(cat) = CATEGORIES.iter().find(|&&x| x == g) {
                c.push(cat);
            }
        }
    }
    if flag("admin") {
        c.extend(["admin", "dangerous"]);
    }
    c.push(if flag("fast") { "fast" } else { "slow" });
    if flag("blocking") {
        c.push("blocking");
    }
    c
}

/// One `ACL LOG` entry.
#[derive(Debug, Clone)]
struct Entry {
    count: u64,
    reason: &'static str,
    context: &'static str,
    object: String,
    username: Vec<u8>,
    client_info: String,
    entry_id: u64,
    created: Instant,
    created_ms: u64,
    updated_ms: u64,
}

/// The ACL log (newest first) and the next entry id.
#[derive(Debug, Default)]
pub struct AclLog {
    inner: Mutex<(VecDeque<Entry>, u64)>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl AclLog {
    /// A failed authentication as `username` by the client `client_info`
    /// describes (`context`: `toplevel` or `multi`).
    pub fn denied_auth(&self, username: &[u8], client_info: String, context: &'static str) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (log, next_id) = &mut *g;
        let now = Instant::now();
        let now_ms = now_ms();
        if let Some(e) = log.iter_mut().find(|e| {
            e.reason == "auth"
                && e.context == context
                && e.username == username
                && now_ms.saturating_sub(e.updated_ms) < MERGE_MS
        }) {
            e.count += 1;
            e.client_info = client_info;
            e.updated_ms = now_ms;
            return;
        }
        log.push_front(Entry {
            count: 1,
            reason: "auth",
            context,
            object: "AUTH".into(),
            username: username.to_vec(),
            client_info,
            entry_id: *next_id,
            created: now,
            created_ms: now_ms,
            updated_ms: now_ms,
        });
        *next_id += 1;
        log.truncate(LOG_MAX);
    }

    fn entries(&self, n: usize) -> Vec<Entry> {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.0.iter().take(n).cloned().collect()
    }

    fn reset(&self) {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clear();
    }
}

const HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
];

const NO_ACL_FILE: &[u8] = b"ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

/// The default user's password hash (`None`: nopass).
fn password_hash(ctx: &Ctx<'_>) -> Option<String> {
    let pass = ctx.shared.config.requirepass.as_ref()?;
    Some(
        Sha256::digest(pass.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}

/// `ACL subcommand ...`.
pub fn acl(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = cmd.arg(1).unwrap_or_default().to_ascii_uppercase();
    let n = cmd.len();
    match (&sub[..], n) {
        (b"WHOAMI", 2) => ctx.bytes(b"default"),
        (b"USERS", 2) => {
            ctx.array(1);
            ctx.bytes(b"default");
        }
        (b"LIST", 2) => {
            let pass = password_hash(ctx).map_or("nopass".into(), |h| format!("#{h}"));
            ctx.array(1);
            ctx.bytes(format!("user default on {pass} ~* &* +@all").as_bytes());
        }
        (b"GETUSER", 3) => getuser(ctx, cmd),
        (b"CAT", 2) => {
            ctx.array(CATEGORIES.len());
            for c in CATEGORIES {
                ctx.bytes(c.as_bytes());
            }
        }
        (b"CAT", 3) => {
            let want = String::from_utf8_lossy(cmd.arg(2).unwrap_or_default()).to_lowercase();
            if !CATEGORIES.contains(&want.as_str()) {
                ctx.error(format!("ERR Unknown category '{want}'").as_bytes());
                return Step::Done;
            }
            let names: Vec<&str> = COMMANDS
                .iter()
                .filter(|s| categories(s).contains(&want.as_str()))
                .map(|s| s.name)
                .collect();
            ctx.array(names.len());
            for name in names {
                ctx.bytes(name.as_bytes());
            }
        }
        (b"LOG", 2 | 3) => log(ctx, cmd),
        (b"GENPASS", 2 | 3) => genpass(ctx, cmd),
        (b"DELUSER", 3..) => {
            if cmd.args().skip(2).any(|u| u == b"default") {
                ctx.error(b"ERR The 'default' user cannot be removed");
            } else {
                ctx.int(0);
            }
        }
        (b"DRYRUN", 4..) => {
            let user = cmd.arg(2).unwrap_or_default();
            let name = cmd.arg(3).unwrap_or_default();
            if user != b"default" {
                ctx.error(
                    format!("ERR User '{}' not found", String::from_utf8_lossy(user)).as_bytes(),
                );
            } else if table::lookup(name).is_none() {
                ctx.error(
                    format!(
                        "ERR Command '{}' not found",
                        String::from_utf8_lossy(name).to_lowercase()
                    )
                    .as_bytes(),
                );
            } else {
                ctx.ok();
            }
        }
        (b"SETUSER", 3..) => ctx.error(
            b"ERR granola-kv has one user, default, with every permission; its password is --requirepass",
        ),
        (b"SAVE" | b"LOAD", 2) => ctx.error(NO_ACL_FILE),
        (b"HELP", 2) => {
            ctx.array(HELP.len());
            for line in HELP {
                ctx.simple(line.as_bytes());
            }
        }
        _ => ctx.unknown_subcommand("ACL", cmd.arg(1).unwrap_or_default()),
    }
    Step::Done
}

/// `ACL GETUSER name`: the default user's rules; null for anyone else.
fn getuser(ctx: &mut Ctx<'_>, cmd: &Command<'_>) {
    if cmd.arg(2) != Some(&b"default"[..]) {
        ctx.null();
        return;
    }
    let hash = password_hash(ctx);
    ctx.map(6);
    ctx.bytes(b"flags");
    let flags: &[&[u8]] = if hash.is_some() {
        &[b"on"]
    } else {
        &[b"on", b"nopass"]
    };
    ctx.set(flags.len());
    for f in flags {
        ctx.bytes(f);
    }
    ctx.bytes(b"passwords");
    ctx.array(usize::from(hash.is_some()));
    if let Some(h) = &hash {
        ctx.bytes(h.as_bytes());
    }
    for (k, v) in [("commands", "+@all"), ("keys", "~*"), ("channels", "&*")] {
        ctx.bytes(k.as_bytes());
        ctx.bytes(v.as_bytes());
    }
    ctx.bytes(b"selectors");
    ctx.array(0);
}

/// `ACL LOG [count | RESET]`.
fn log(ctx: &mut Ctx<'_>, cmd: &Command<'_>) {
    let count = match cmd.arg(2) {
        None => 10,
        Some(a) if a.eq_ignore_ascii_case(b"RESET") => {
            ctx.shared.acl_log.reset();
            ctx.ok();
            return;
        }
        Some(a) => match super::parse_i64(a).filter(|&c| c >= 0) {
            Some(c) => c as usize,
            None => {
                ctx.error(b"ERR value is out of range, must be positive");
                return;
            }
        },
    };
    let entries = ctx.shared.acl_log.entries(count);
    ctx.array(entries.len());
    for e in entries {
        ctx.map(10);
        ctx.bytes(b"count");
        ctx.int(e.count as i64);
        ctx.bytes(b"reason");
        ctx.bytes(e.reason.as_bytes());
        ctx.bytes(b"context");
        ctx.bytes(e.context.as_bytes());
        ctx.bytes(b"object");
        ctx.bytes(e.object.as_bytes());
        ctx.bytes(b"username");
        ctx.bytes(&e.username);
        ctx.bytes(b"age-seconds");
        ctx.double(e.created.elapsed().as_secs_f64());
        ctx.bytes(b"client-info");
        ctx.bytes(e.client_info.trim_end().as_bytes());
        ctx.bytes(b"entry-id");
        ctx.int(e.entry_id as i64);
        ctx.bytes(b"timestamp-created");
        ctx.int(e.created_ms as i64);
        ctx.bytes(b"timestamp-last-updated");
        ctx.int(e.updated_ms as i64);
    }
}

/// `ACL GENPASS [bits]`: that many random bits (256 by default), in hex,
/// from the operating system's generator.
fn genpass(ctx: &mut Ctx<'_>, cmd: &Command<'_>) {
    let bits = match cmd.arg(2) {
        None => 256,
        Some(a) => match super::parse_i64(a).filter(|&b| (1..=4096).contains(&b)) {
            Some(b) => b as usize,
            None => {
                ctx.error(b"ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096");
                return;
            }
        },
    };
    let chars = bits.div_ceil(4);
    let mut raw = vec![0u8; chars.div_ceil(2)];
    if getrandom::fill(&mut raw).is_err() {
        ctx.error(b"ERR no random bytes from the operating system");
        return;
    }
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    ctx.bytes(&hex.as_bytes()[..chars]);
}
