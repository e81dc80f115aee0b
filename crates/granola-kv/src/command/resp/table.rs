//! Every Redis command granola-kv serves: name, arity (Redis' convention:
//! `n` exactly n arguments with the name, `-n` at least n), flags and key
//! positions (what `COMMAND INFO` reports), its group, and the function
//! that runs it. Adding a command: write its function, add one line here.
//! A container's subcommands (`CLIENT KILL`, `OBJECT ENCODING`...) are
//! rows of their own, in the container's list in `table/subcommands.rs`.

use super::{
    acl, bitmaps, blocking_lists, blocking_zsets, client, connection, debug, dump, functions, geo,
    hashes, hyperloglog, keys, latency, lcs, lists, memory, migrate, modules, monitor, pubsub,
    replication, scripting, server, sets, sort, standalone, stream_groups, streams, strings,
    tracking, transaction, zset_ops, zset_ranges, zsets, Ctx,
};
use crate::command::Step;
use crate::protocol::resp::Command;
use std::sync::OnceLock;

/// One command.
pub struct Spec {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis arity.
    pub arity: i32,
    /// Redis command flags (`write`, `readonly`, `fast`, ...).
    pub flags: &'static [&'static str],
    /// First key argument (0 = none), last key (-1 = the last argument),
    /// step between keys.
    pub keys: (i32, i32, i32),
    /// Redis' command group (`string`, `generic`, `list`, ...).
    pub group: &'static str,
    /// Runs it.
    pub run: fn(&mut Ctx<'_>, &Command<'_>) -> Step,
    /// A container's subcommands (`CLIENT`, `CONFIG`, `OBJECT`, ...),
    /// each a whole command of its own named `container|sub`, as in Redis
    /// 7: its own arity, flags, keys, ACL categories and statistics.
    /// [`resolve`] picks one by the second argument; the container's own
    /// `run` is never called.
    pub subs: &'static [Spec],
    /// What the dispatcher asks of every request, worked out from `name`
    /// and `flags` when the table is built.
    pub traits: Traits,
}

/// What the dispatcher needs to know of a command on every request, as
/// bits computed from its name and flags at compile time: each request
/// then tests a bit where it used to compare names and scan flags (a
/// pipelined SET paid about 40 instructions for those comparisons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Traits(u8);

impl Traits {
    /// Its flags include `write`.
    pub const WRITE: Traits = Traits(1);
    /// EXEC, EVAL and FCALL and their variants: they enter the
    /// transaction gate alone themselves.
    pub const GATES_ITSELF: Traits = Traits(1 << 1);
    /// MOVE: writes a key (in another database) its key positions do not
    /// name.
    pub const MOVES: Traits = Traits(1 << 2);
    /// SORT, GEORADIUS and GEORADIUSBYMEMBER: alone when a `STORE` (or
    /// `STOREDIST`) option names a key to write.
    pub const MAY_STORE: Traits = Traits(1 << 3);
    /// A script (EVAL, FCALL and their variants): MONITOR shows it before
    /// it runs, so that its own calls follow it.
    pub const SCRIPT: Traits = Traits(1 << 4);
    /// SWAPDB: changes every key of two databases, always runs alone.
    pub const ALONE: Traits = Traits(1 << 5);

    /// The traits of command `name` with `flags`.
    pub const fn of(name: &str, flags: &[&str]) -> Traits {
        const SCRIPTS: &[&str] = &[
            "eval",
            "evalsha",
            "eval_ro",
            "evalsha_ro",
            "fcall",
            "fcall_ro",
        ];
        let script = any(SCRIPTS, name);
        let mut bits = 0;
        if any(flags, "write") {
            bits |= Traits::WRITE.0;
        }
        if script || str_eq(name, "exec") {
            bits |= Traits::GATES_ITSELF.0;
        }
        if str_eq(name, "move") {
            bits |= Traits::MOVES.0;
        }
        if str_eq(name, "swapdb") {
            bits |= Traits::ALONE.0;
        }
        if any(&["sort", "georadius", "georadiusbymember"], name) {
            bits |= Traits::MAY_STORE.0;
        }
        if script {
            bits |= Traits::SCRIPT.0;
        }
        Traits(bits)
    }

    /// True if every bit of `t` is set.
    pub fn has(self, t: Traits) -> bool {
        self.0 & t.0 == t.0
    }
}

/// `a == b`, at compile time.
const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// `list.contains(&word)`, at compile time.
const fn any(list: &[&str], word: &str) -> bool {
    let mut i = 0;
    while i < list.len() {
        if str_eq(list[i], word) {
            return true;
        }
        i += 1;
    }
    false
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spec")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Spec {
    /// True if this call writes more than one key (MSET of two pairs, DEL
    /// of two keys, RENAME, SMOVE, SUNIONSTORE, ...): it must run alone so
    /// that no other Redis command sees it half applied.
    pub fn writes_many(&self, argc: usize) -> bool {
        let (first, last, step) = self.keys;
        if !self.traits.has(Traits::WRITE) || first <= 0 || step <= 0 {
            return false;
        }
        let last = if last < 0 {
            argc as i64 + i64::from(last)
        } else {
            i64::from(last)
        };
        let span = last - i64::from(first);
        // A division is dozens of cycles; nearly every step is 1.
        let keys = if step == 1 {
            span
        } else {
            span / i64::from(step)
        } + 1;
        keys > 1
    }

    /// The key arguments of `cmd` by this spec's key positions.
    pub fn key_args<'a, 'c: 'a>(
        &self,
        cmd: &'a Command<'c>,
    ) -> impl Iterator<Item = &'c [u8]> + use<'a, 'c> {
        let (first, last, step) = self.keys;
        let argc = cmd.len() as i64;
        let last = if last < 0 {
            argc + i64::from(last)
        } else {
            i64::from(last)
        };
        let (first, step) = (i64::from(first), i64::from(step).max(1));
        let n = if first <= 0 || last < first {
            0
        } else {
            ((last.min(argc - 1) - first) / step + 1).max(0)
        };
        (0..n).filter_map(move |i| cmd.arg((first + i * step) as usize))
    }

    /// Every key `cmd` names: [`key_args`](Self::key_args), or for the
    /// commands whose keys move with their arguments (`movablekeys`: a
    /// count before the keys, a STORE destination) the keys Redis's own
    /// key extraction finds. Keyspace events, client tracking and blocked
    /// clients' wake-ups go by these.
    pub fn keys_in<'a, 'c: 'a>(
        &self,
        cmd: &'a Command<'c>,
    ) -> impl Iterator<Item = &'c [u8]> + use<'a, 'c> {
        let moved = self.moved_keys(cmd);
        let fixed = moved.is_none().then(|| self.key_args(cmd));
        fixed
            .into_iter()
            .flatten()
            .chain(moved.into_iter().flatten().filter_map(move |i| cmd.arg(i)))
    }

    /// True if this command names keys (at fixed positions or movable).
    pub fn has_keys(&self) -> bool {
        self.keys.0 > 0 || self.movable().is_some()
    }

    /// Where this command's keys are, if they move with its arguments.
    fn movable(&self) -> Option<Movable> {
        Some(match self.name {
            "lmpop" | "zmpop" | "sintercard" | "zintercard" | "zinter" | "zunion" | "zdiff" => {
                Movable::Counted { count_at: 1 }
            }
            "blmpop" | "bzmpop" | "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall"
            | "fcall_ro" => Movable::Counted { count_at: 2 },
            "zunionstore" | "zinterstore" | "zdiffstore" => Movable::DestThenCounted,
            "sort" => Movable::SortStore,
            "georadius" => Movable::StoreOption { from: 6 },
            "georadiusbymember" => Movable::StoreOption { from: 5 },
            "xread" => Movable::Streams { from: 1 },
            "migrate" => Movable::Migrate,
            "xreadgroup" => Movable::Streams { from: 4 },
            _ => return None,
        })
    }

    /// For a command with movable keys: its keys' positions in `cmd`.
    pub fn moved_keys(&self, cmd: &Command<'_>) -> Option<Vec<usize>> {
        let counted = |at: usize| {
            let n = cmd
                .arg(at)
                .and_then(super::parse_i64)
                .filter(|&n| n > 0)
                .map_or(0, |n| n as usize);
            at + 1..(at + 1).saturating_add(n).min(cmd.len())
        };
        let is = |i: usize, word: &[u8]| cmd.arg(i).is_some_and(|a| a.eq_ignore_ascii_case(word));
        Some(match self.movable()? {
            Movable::Counted { count_at } => counted(count_at).collect(),
            Movable::DestThenCounted => std::iter::once(1).chain(counted(2)).collect(),
            Movable::SortStore => {
                // LIMIT takes two values, BY and GET one: a STORE among
                // them is a value, not the option.
                let mut i = 2;
                let mut keys = vec![1];
                while i < cmd.len() {
                    if is(i, b"LIMIT") {
                        i += 3;
                    } else if is(i, b"BY") || is(i, b"GET") {
                        i += 2;
                    } else if is(i, b"STORE") {
                        keys.extend((i + 1 < cmd.len()).then_some(i + 1));
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                keys
            }
            Movable::StoreOption { from } => {
                let store = (from..cmd.len())
                    .find(|&i| is(i, b"STORE") || is(i, b"STOREDIST"))
                    .map(|i| i + 1)
                    .filter(|&i| i < cmd.len());
                std::iter::once(1).chain(store).collect()
            }
            Movable::Migrate => {
                // The key at 3, or with KEYS (and an empty key) the rest;
                // AUTH and AUTH2 take values that are not options.
                let mut i = 6;
                let mut keys = vec![3];
                while i < cmd.len() {
                    if is(i, b"KEYS") {
                        keys = if cmd.arg(3).is_some_and(<[u8]>::is_empty) {
                            (i + 1..cmd.len()).collect()
                        } else {
                            Vec::new()
                        };
                        break;
                    }
                    i += if is(i, b"AUTH") {
                        2
                    } else if is(i, b"AUTH2") {
                        3
                    } else {
                        1
                    };
                }
                keys
            }
            Movable::Streams { from } => {
                // As many keys as IDs after STREAMS.
                match (from..cmd.len()).find(|&i| is(i, b"STREAMS")) {
                    Some(s) if (cmd.len() - s - 1) % 2 == 0 => {
                        (s + 1..s + 1 + (cmd.len() - s - 1) / 2).collect()
                    }
                    _ => Vec::new(),
                }
            }
        })
    }

    /// True if this command writes, or may (a script, PUBLISH): what
    /// `CLIENT PAUSE WRITE` holds back.
    pub fn may_write(&self) -> bool {
        self.flags
            .iter()
            .any(|f| matches!(*f, "write" | "may_replicate"))
            || matches!(self.name, "publish" | "spublish")
    }

    /// A subcommand's own name (`kill` of `client|kill`); a command's name.
    pub fn sub_name(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(_, sub)| sub)
    }

    /// The command a subcommand belongs to (`client` of `client|kill`); a
    /// command's own name.
    pub fn container(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(c, _)| c)
    }

    /// This container's subcommand `name` (any case).
    pub fn find_sub(&self, name: &[u8]) -> Option<&'static Spec> {
        self.subs
            .iter()
            .find(|s| s.sub_name().as_bytes().eq_ignore_ascii_case(name))
    }

    /// True if `argc` arguments (with the name) fit the arity.
    pub fn arity_ok(&self, argc: usize) -> bool {
        let n = argc as i64;
        let a = i64::from(self.arity);
        if a >= 0 {
            n == a
        } else {
            n >= -a
        }
    }
}

/// How a command's keys move with its arguments (see [`Spec::keys_in`]).
enum Movable {
    /// A count at `count_at`, then that many keys.
    Counted { count_at: usize },
    /// A destination at 1, then a count and that many keys.
    DestThenCounted,
    /// The key at 1, and a destination after SORT's STORE option.
    SortStore,
    /// The key at 1, and a destination after STORE or STOREDIST, looked
    /// for from `from` on.
    StoreOption { from: usize },
    /// After STREAMS (looked for from `from` on), as many keys as IDs.
    Streams { from: usize },
    /// MIGRATE's key, or the keys after its KEYS option.
    Migrate,
}

const R: &[&str] = &["readonly", "fast"];
const RS: &[&str] = &["readonly"];
const W: &[&str] = &["write", "denyoom", "fast"];
const WS: &[&str] = &["write", "denyoom"];
const WD: &[&str] = &["write"];
const WF: &[&str] = &["write", "fast"];
const C: &[&str] = &["fast", "loading", "stale"];
const A: &[&str] = &["admin", "loading", "stale"];
const B: &[&str] = &["write", "blocking"];
const EV: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "may_replicate",
    "no_mandatory_keys",
    "movablekeys",
];
const EVR: &[&str] = &[
    "readonly",
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "movablekeys",
];
const SC: &[&str] = &["noscript"];
const PS: &[&str] = &["pubsub", "noscript", "loading", "stale"];
const PF: &[&str] = &["pubsub", "loading", "stale", "fast"];
const BS: &[&str] = &["write", "denyoom", "blocking"];
const BM: &[&str] = &["write", "blocking", "movablekeys"];
const LM: &[&str] = &["write", "movablekeys"];
/// Subcommands' usual flags: administrative, ordinary, and `HELP`.
const SUB_ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];
const SUB_CONN: &[&str] = &["noscript", "loading", "stale"];
const SUB_HELP: &[&str] = &["loading", "stale"];
const CLUSTER_ADMIN: &[&str] = &["admin", "stale", "no_async_loading"];
const STALE: &[&str] = &["stale"];
const PUBSUB_INFO: &[&str] = &["pubsub", "loading", "stale"];
const MODULE_LOAD: &[&str] = &["admin", "noscript", "no_async_loading"];
const REPL: &[&str] = &["admin", "noscript", "no_async_loading", "no_multi"];
const REPLCONF: &[&str] = &["admin", "noscript", "loading", "stale", "allow_busy"];

macro_rules! cmd {
    ($group:literal, $name:literal, $arity:expr, $flags:expr, $keys:expr, $run:expr) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            group: $group,
            run: $run,
            subs: &[],
            traits: Traits::of($name, $flags),
        }
    };
}

/// A subcommand: `$name` is `container|sub`.
macro_rules! sub {
    ($group:literal, $name:literal, $arity:expr, $flags:expr, $keys:expr, $run:expr) => {
        cmd!($group, $name, $arity, $flags, $keys, $run)
    };
}

/// A container of subcommands: Redis gives it arity -2, no flags and no
/// keys.
macro_rules! container {
    ($group:literal, $name:literal, $subs:expr) => {
        Spec {
            name: $name,
            arity: -2,
            flags: &[],
            keys: NOKEY,
            group: $group,
            run: no_subcommand,
            subs: $subs,
            traits: Traits::of($name, &[]),
        }
    };
}

// Each container's subcommands, one list per container (a child module
// after the macros, which it uses).
mod docs;
mod key_specs;
mod subcommands;
pub use docs::DOCS;
pub use key_specs::KEY_SPECS;
use subcommands::*;

/// A container's `run`: [`resolve`] runs a subcommand instead, so this
/// only answers a caller that skipped it.
fn no_subcommand(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    ctx.unknown_subcommand(
        &String::from_utf8_lossy(cmd.name()).to_ascii_uppercase(),
        cmd.arg(1).unwrap_or_default(),
    );
    Step::Done
}

const NOKEY: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const KEY12: (i32, i32, i32) = (1, 2, 1);
/// A subcommand's key, after its name (`OBJECT ENCODING key`).
const KEY2: (i32, i32, i32) = (2, 2, 1);
const ALLKEYS: (i32, i32, i32) = (1, -1, 1);
/// BITOP's destination and sources.
const BITOP_KEYS: (i32, i32, i32) = (2, -1, 1);
const PAIRS: (i32, i32, i32) = (1, -1, 2);
/// Every argument but the last (the timeout).
const BKEYS: (i32, i32, i32) = (1, -2, 1);

/// The commands.
pub static COMMANDS: &[Spec] = &[
    // strings
    cmd!("string", "get", 2, R, KEY1, strings::get),
    cmd!("string", "set", -3, WS, KEY1, strings::set),
    cmd!("string", "setnx", 3, W, KEY1, strings::setnx),
    cmd!("string", "setex", 4, WS, KEY1, strings::setex),
    cmd!("string", "psetex", 4, WS, KEY1, strings::psetex),
    cmd!("string", "getset", 3, W, KEY1, strings::getset),
    cmd!("string", "getdel", 2, W, KEY1, strings::getdel),
    cmd!("string", "getex", -2, W, KEY1, strings::getex),
    cmd!("string", "mget", -2, R, ALLKEYS, strings::mget),
    cmd!("string", "mset", -3, WS, PAIRS, strings::mset),
    cmd!("string", "msetnx", -3, WS, PAIRS, strings::msetnx),
    cmd!("string", "append", 3, W, KEY1, strings::append),
    cmd!("string", "strlen", 2, R, KEY1, strings::strlen),
    cmd!("string", "getrange", 4, RS, KEY1, strings::getrange),
    cmd!("string", "substr", 4, RS, KEY1, strings::getrange),
    cmd!("string", "setrange", 4, WS, KEY1, strings::setrange),
    cmd!("string", "lcs", -3, RS, KEY12, lcs::lcs),
    // geospatial
    cmd!("geo", "geoadd", -5, W, KEY1, geo::geoadd),
    cmd!("geo", "geopos", -2, RS, KEY1, geo::geopos),
    cmd!("geo", "geodist", -4, RS, KEY1, geo::geodist),
    cmd!("geo", "geohash", -2, RS, KEY1, geo::geohash),
    cmd!("geo", "geosearch", -7, RS, KEY1, geo::geosearch),
    cmd!("geo", "geosearchstore", -8, WS, KEY12, geo::geosearchstore),
    cmd!("geo", "georadius", -6, WS, KEY1, geo::georadius),
    cmd!("geo", "georadius_ro", -6, RS, KEY1, geo::georadius_ro),
    cmd!(
        "geo",
        "georadiusbymember",
        -5,
        WS,
        KEY1,
        geo::georadiusbymember
    ),
    cmd!(
        "geo",
        "georadiusbymember_ro",
        -5,
        RS,
        KEY1,
        geo::georadiusbymember_ro
    ),
    // keyspace and server odds and ends
    cmd!("generic", "move", 3, W, KEY1, keys::move_key),
    cmd!("generic", "sort", -2, WD, KEY1, sort::sort),
    cmd!("generic", "sort_ro", -2, RS, KEY1, sort::sort_ro),
    cmd!("generic", "wait", 3, C, NOKEY, server::wait),
    cmd!("server", "role", 1, C, NOKEY, server::role),
    cmd!("server", "lastsave", 1, C, NOKEY, server::lastsave),
    cmd!("server", "lolwut", -1, R, NOKEY, server::lolwut),
    cmd!(
        "server",
        "debug",
        -2,
        &["admin", "noscript", "loading", "stale"],
        NOKEY,
        debug::debug
    ),
    container!("cluster", "cluster", CLUSTER_SUBS),
    cmd!("cluster", "readonly", 1, C, NOKEY, standalone::cluster),
    cmd!("cluster", "readwrite", 1, C, NOKEY, standalone::cluster),
    cmd!("cluster", "asking", 1, C, NOKEY, standalone::cluster),
    cmd!("server", "replicaof", 3, A, NOKEY, standalone::replicaof),
    cmd!("server", "slaveof", 3, A, NOKEY, standalone::replicaof),
    cmd!("server", "failover", -1, A, NOKEY, standalone::failover),
    cmd!("server", "save", 1, A, NOKEY, standalone::save),
    cmd!("server", "sync", 1, REPL, NOKEY, replication::sync),
    cmd!("server", "psync", -3, REPL, NOKEY, replication::psync),
    cmd!(
        "server",
        "replconf",
        -1,
        REPLCONF,
        NOKEY,
        replication::replconf
    ),
    cmd!("server", "bgsave", -1, A, NOKEY, standalone::save),
    cmd!("server", "bgrewriteaof", 1, A, NOKEY, standalone::save),
    cmd!("server", "shutdown", -1, A, NOKEY, standalone::shutdown),
    cmd!("generic", "waitaof", 4, SC, NOKEY, standalone::waitaof),
    cmd!("server", "monitor", 1, A, NOKEY, monitor::monitor),
    container!("server", "slowlog", SLOWLOG_SUBS),
    container!("server", "latency", LATENCY_SUBS),
    // HyperLogLog
    cmd!("hyperloglog", "pfadd", -2, W, KEY1, hyperloglog::pfadd),
    cmd!(
        "hyperloglog",
        "pfcount",
        -2,
        RS,
        ALLKEYS,
        hyperloglog::pfcount
    ),
    cmd!(
        "hyperloglog",
        "pfmerge",
        -2,
        WS,
        ALLKEYS,
        hyperloglog::pfmerge
    ),
    // bitmaps
    cmd!("bitmap", "setbit", 4, WS, KEY1, bitmaps::setbit),
    cmd!("bitmap", "getbit", 3, R, KEY1, bitmaps::getbit),
    cmd!("bitmap", "bitcount", -2, RS, KEY1, bitmaps::bitcount),
    cmd!("bitmap", "bitpos", -3, RS, KEY1, bitmaps::bitpos),
    cmd!("bitmap", "bitop", -4, WS, BITOP_KEYS, bitmaps::bitop),
    cmd!("bitmap", "bitfield", -2, WS, KEY1, bitmaps::bitfield),
    cmd!("bitmap", "bitfield_ro", -2, R, KEY1, bitmaps::bitfield_ro),
    cmd!("string", "incr", 2, W, KEY1, strings::incr),
    cmd!("string", "decr", 2, W, KEY1, strings::decr),
    cmd!("string", "incrby", 3, W, KEY1, strings::incrby),
    cmd!("string", "decrby", 3, W, KEY1, strings::decrby),
    cmd!("string", "incrbyfloat", 3, W, KEY1, strings::incrbyfloat),
    // keyspace
    cmd!("generic", "del", -2, WD, ALLKEYS, keys::del),
    cmd!("generic", "unlink", -2, W, ALLKEYS, keys::del),
    cmd!("generic", "exists", -2, R, ALLKEYS, keys::exists),
    cmd!("generic", "touch", -2, R, ALLKEYS, keys::exists),
    cmd!("generic", "type", 2, R, KEY1, keys::type_),
    cmd!("generic", "expire", -3, W, KEY1, keys::expire),
    cmd!("generic", "pexpire", -3, W, KEY1, keys::pexpire),
    cmd!("generic", "expireat", -3, W, KEY1, keys::expireat),
    cmd!("generic", "pexpireat", -3, W, KEY1, keys::pexpireat),
    cmd!("generic", "persist", 2, W, KEY1, keys::persist),
    cmd!("generic", "ttl", 2, R, KEY1, keys::ttl),
    cmd!("generic", "pttl", 2, R, KEY1, keys::pttl),
    cmd!("generic", "expiretime", 2, R, KEY1, keys::expiretime),
    cmd!("generic", "pexpiretime", 2, R, KEY1, keys::pexpiretime),
    cmd!("generic", "keys", 2, RS, NOKEY, keys::keys),
    cmd!("generic", "scan", -2, RS, NOKEY, keys::scan),
    cmd!("generic", "randomkey", 1, RS, NOKEY, keys::randomkey),
    cmd!("generic", "rename", 3, WD, KEY12, keys::rename),
    cmd!("generic", "renamenx", 3, W, KEY12, keys::renamenx),
    cmd!("generic", "copy", -3, WS, KEY12, keys::copy),
    container!("generic", "object", OBJECT_SUBS),
    cmd!("generic", "dump", 2, RS, KEY1, dump::dump),
    cmd!("server", "swapdb", 3, WF, NOKEY, keys::swapdb),
    cmd!("generic", "restore", -4, WS, KEY1, dump::restore),
    cmd!(
        "generic",
        "restore-asking",
        -4,
        &["write", "denyoom", "asking"],
        KEY1,
        dump::restore
    ),
    cmd!("generic", "migrate", -6, LM, (3, 3, 1), migrate::migrate),
    container!("server", "memory", MEMORY_SUBS),
    container!("server", "module", MODULE_SUBS),
    // lists
    cmd!("list", "rpush", -3, W, KEY1, lists::rpush),
    cmd!("list", "lpush", -3, W, KEY1, lists::lpush),
    cmd!("list", "lrange", 4, RS, KEY1, lists::lrange),
    cmd!("list", "llen", 2, R, KEY1, lists::llen),
    cmd!("list", "lindex", 3, RS, KEY1, lists::lindex),
    cmd!("list", "rpushx", -3, W, KEY1, lists::rpushx),
    cmd!("list", "lpushx", -3, W, KEY1, lists::lpushx),
    cmd!("list", "lpop", -2, W, KEY1, lists::lpop),
    cmd!("list", "rpop", -2, W, KEY1, lists::rpop),
    cmd!("list", "lset", 4, WS, KEY1, lists::lset),
    cmd!("list", "lrem", 4, WD, KEY1, lists::lrem),
    cmd!("list", "ltrim", 4, WD, KEY1, lists::ltrim),
    cmd!("list", "linsert", 5, WS, KEY1, lists::linsert),
    cmd!("list", "lpos", -3, RS, KEY1, lists::lpos),
    cmd!("list", "lmove", 5, WS, KEY12, lists::lmove),
    cmd!("list", "rpoplpush", 3, WS, KEY12, lists::rpoplpush),
    cmd!("list", "lmpop", -4, LM, NOKEY, blocking_lists::lmpop),
    cmd!("list", "blpop", -3, B, BKEYS, blocking_lists::blpop),
    cmd!("list", "brpop", -3, B, BKEYS, blocking_lists::brpop),
    cmd!("list", "blmpop", -5, BM, NOKEY, blocking_lists::blmpop),
    cmd!("list", "blmove", 6, BS, KEY12, blocking_lists::blmove),
    cmd!(
        "list",
        "brpoplpush",
        4,
        BS,
        KEY12,
        blocking_lists::brpoplpush
    ),
    // hashes
    cmd!("hash", "hset", -4, W, KEY1, hashes::hset),
    cmd!("hash", "hmset", -4, W, KEY1, hashes::hmset),
    cmd!("hash", "hsetnx", 4, W, KEY1, hashes::hsetnx),
    cmd!("hash", "hget", 3, R, KEY1, hashes::hget),
    cmd!("hash", "hmget", -3, R, KEY1, hashes::hmget),
    cmd!("hash", "hgetall", 2, RS, KEY1, hashes::hgetall),
    cmd!("hash", "hkeys", 2, RS, KEY1, hashes::hkeys),
    cmd!("hash", "hvals", 2, RS, KEY1, hashes::hvals),
    cmd!("hash", "hdel", -3, W, KEY1, hashes::hdel),
    cmd!("hash", "hlen", 2, R, KEY1, hashes::hlen),
    cmd!("hash", "hexists", 3, R, KEY1, hashes::hexists),
    cmd!("hash", "hstrlen", 3, R, KEY1, hashes::hstrlen),
    cmd!("hash", "hincrby", 4, W, KEY1, hashes::hincrby),
    cmd!("hash", "hincrbyfloat", 4, W, KEY1, hashes::hincrbyfloat),
    cmd!("hash", "hscan", -3, RS, KEY1, hashes::hscan),
    cmd!("hash", "hrandfield", -2, RS, KEY1, hashes::hrandfield),
    // sets
    cmd!("set", "sadd", -3, W, KEY1, sets::sadd),
    cmd!("set", "srem", -3, W, KEY1, sets::srem),
    cmd!("set", "smembers", 2, RS, KEY1, sets::smembers),
    cmd!("set", "sismember", 3, R, KEY1, sets::sismember),
    cmd!("set", "smismember", -3, R, KEY1, sets::smismember),
    cmd!("set", "scard", 2, R, KEY1, sets::scard),
    cmd!("set", "spop", -2, W, KEY1, sets::spop),
    cmd!("set", "srandmember", -2, RS, KEY1, sets::srandmember),
    cmd!("set", "sinter", -2, RS, ALLKEYS, sets::sinter),
    cmd!("set", "sunion", -2, RS, ALLKEYS, sets::sunion),
    cmd!("set", "sdiff", -2, RS, ALLKEYS, sets::sdiff),
    cmd!("set", "sscan", -3, RS, KEY1, sets::sscan),
    cmd!("set", "smove", 4, W, KEY12, sets::smove),
    cmd!("set", "sinterstore", -3, W, ALLKEYS, sets::sinterstore),
    cmd!("set", "sunionstore", -3, W, ALLKEYS, sets::sunionstore),
    cmd!("set", "sdiffstore", -3, W, ALLKEYS, sets::sdiffstore),
    cmd!("set", "sintercard", -3, RS, NOKEY, sets::sintercard),
    // sorted sets
    cmd!("sorted-set", "zadd", -4, W, KEY1, zsets::zadd),
    cmd!("sorted-set", "zincrby", 4, W, KEY1, zsets::zincrby),
    cmd!("sorted-set", "zscore", 3, R, KEY1, zsets::zscore),
    cmd!("sorted-set", "zcard", 2, R, KEY1, zsets::zcard),
    cmd!("sorted-set", "zrem", -3, W, KEY1, zsets::zrem),
    cmd!("sorted-set", "zrange", -4, RS, KEY1, zset_ranges::zrange),
    cmd!("sorted-set", "zpopmin", -2, W, KEY1, zsets::zpopmin),
    cmd!("sorted-set", "zpopmax", -2, W, KEY1, zsets::zpopmax),
    cmd!("sorted-set", "zmpop", -4, LM, NOKEY, blocking_zsets::zmpop),
    cmd!(
        "sorted-set",
        "bzpopmin",
        -3,
        B,
        BKEYS,
        blocking_zsets::bzpopmin
    ),
    cmd!(
        "sorted-set",
        "bzpopmax",
        -3,
        B,
        BKEYS,
        blocking_zsets::bzpopmax
    ),
    cmd!(
        "sorted-set",
        "bzmpop",
        -5,
        BM,
        NOKEY,
        blocking_zsets::bzmpop
    ),
    cmd!(
        "sorted-set",
        "zrevrange",
        -4,
        RS,
        KEY1,
        zset_ranges::zrevrange
    ),
    cmd!("sorted-set", "zrank", -3, R, KEY1, zsets::zrank),
    cmd!("sorted-set", "zrevrank", -3, R, KEY1, zsets::zrevrank),
    cmd!("sorted-set", "zcount", 4, R, KEY1, zsets::zcount),
    cmd!(
        "sorted-set",
        "zrangebyscore",
        -4,
        RS,
        KEY1,
        zset_ranges::zrangebyscore
    ),
    cmd!(
        "sorted-set",
        "zrevrangebyscore",
        -4,
        RS,
        KEY1,
        zset_ranges::zrevrangebyscore
    ),
    cmd!(
        "sorted-set",
        "zremrangebyscore",
        4,
        W,
        KEY1,
        zsets::zremrangebyscore
    ),
    cmd!(
        "sorted-set",
        "zremrangebyrank",
        4,
        W,
        KEY1,
        zsets::zremrangebyrank
    ),
    cmd!("sorted-set", "zmscore", -3, R, KEY1, zsets::zmscore),
    cmd!("sorted-set", "zscan", -3, RS, KEY1, zsets::zscan),
    cmd!(
        "sorted-set",
        "zrandmember",
        -2,
        RS,
        KEY1,
        zsets::zrandmember
    ),
    cmd!(
        "sorted-set",
        "zrangebylex",
        -4,
        RS,
        KEY1,
        zset_ranges::zrangebylex
    ),
    cmd!(
        "sorted-set",
        "zrevrangebylex",
        -4,
        RS,
        KEY1,
        zset_ranges::zrevrangebylex
    ),
    cmd!(
        "sorted-set",
        "zlexcount",
        4,
        R,
        KEY1,
        zset_ranges::zlexcount
    ),
    cmd!(
        "sorted-set",
        "zremrangebylex",
        4,
        WS,
        KEY1,
        zset_ranges::zremrangebylex
    ),
    cmd!(
        "sorted-set",
        "zrangestore",
        -5,
        WS,
        KEY12,
        zset_ranges::zrangestore
    ),
    cmd!("sorted-set", "zunion", -3, RS, NOKEY, zset_ops::zunion),
    cmd!("sorted-set", "zinter", -3, RS, NOKEY, zset_ops::zinter),
    cmd!("sorted-set", "zdiff", -3, RS, NOKEY, zset_ops::zdiff),
    cmd!(
        "sorted-set",
        "zintercard",
        -3,
        RS,
        NOKEY,
        zset_ops::zintercard
    ),
    // Their keys follow numkeys: every argument counts, so they run alone.
    cmd!(
        "sorted-set",
        "zunionstore",
        -4,
        WS,
        ALLKEYS,
        zset_ops::zunionstore
    ),
    cmd!(
        "sorted-set",
        "zinterstore",
        -4,
        WS,
        ALLKEYS,
        zset_ops::zinterstore
    ),
    cmd!(
        "sorted-set",
        "zdiffstore",
        -4,
        WS,
        ALLKEYS,
        zset_ops::zdiffstore
    ),
    // streams
    cmd!("stream", "xadd", -5, W, KEY1, streams::xadd),
    cmd!("stream", "xlen", 2, R, KEY1, streams::xlen),
    cmd!("stream", "xrange", -4, RS, KEY1, streams::xrange),
    cmd!("stream", "xrevrange", -4, RS, KEY1, streams::xrevrange),
    cmd!("stream", "xdel", -3, W, KEY1, streams::xdel),
    cmd!("stream", "xtrim", -4, WD, KEY1, streams::xtrim),
    cmd!("stream", "xread", -4, RS, NOKEY, streams::xread),
    cmd!("stream", "xsetid", -3, W, KEY1, streams::xsetid),
    container!("stream", "xinfo", XINFO_SUBS),
    container!("stream", "xgroup", XGROUP_SUBS),
    cmd!(
        "stream",
        "xreadgroup",
        -7,
        WD,
        NOKEY,
        stream_groups::xreadgroup
    ),
    cmd!("stream", "xack", -4, W, KEY1, stream_groups::xack),
    cmd!("stream", "xpending", -3, RS, KEY1, stream_groups::xpending),
    cmd!("stream", "xclaim", -6, W, KEY1, stream_groups::xclaim),
    cmd!(
        "stream",
        "xautoclaim",
        -6,
        W,
        KEY1,
        stream_groups::xautoclaim
    ),
    // server
    cmd!("connection", "ping", -1, C, NOKEY, server::ping),
    // pub/sub
    cmd!("pubsub", "subscribe", -2, PS, NOKEY, pubsub::subscribe),
    cmd!("pubsub", "psubscribe", -2, PS, NOKEY, pubsub::psubscribe),
    cmd!("pubsub", "unsubscribe", -1, PS, NOKEY, pubsub::unsubscribe),
    cmd!(
        "pubsub",
        "punsubscribe",
        -1,
        PS,
        NOKEY,
        pubsub::punsubscribe
    ),
    cmd!("pubsub", "publish", 3, PF, NOKEY, pubsub::publish),
    // Shard channels are keys in Redis's table (they route like keys in a
    // cluster).
    cmd!("pubsub", "ssubscribe", -2, PS, ALLKEYS, pubsub::ssubscribe),
    cmd!(
        "pubsub",
        "sunsubscribe",
        -1,
        PS,
        ALLKEYS,
        pubsub::sunsubscribe
    ),
    cmd!("pubsub", "spublish", 3, PF, KEY1, pubsub::spublish),
    container!("pubsub", "pubsub", PUBSUB_SUBS),
    cmd!("connection", "echo", 2, C, NOKEY, server::echo),
    cmd!("server", "time", 1, C, NOKEY, server::time),
    cmd!("server", "dbsize", 1, R, NOKEY, server::dbsize),
    cmd!("server", "flushall", -1, WD, NOKEY, server::flushall),
    cmd!("server", "flushdb", -1, WD, NOKEY, server::flushdb),
    cmd!("server", "info", -1, A, NOKEY, server::info),
    container!("server", "config", CONFIG_SUBS),
    // `COMMAND` alone lists every command; with an argument, it is a
    // container.
    Spec {
        subs: COMMAND_SUBS,
        ..cmd!("server", "command", -1, SUB_HELP, NOKEY, server::command)
    },
    container!("server", "acl", ACL_SUBS),
    // connection
    cmd!("connection", "select", 2, C, NOKEY, connection::select),
    container!("connection", "client", CLIENT_SUBS),
    cmd!("connection", "quit", -1, C, NOKEY, connection::quit),
    cmd!("connection", "hello", -1, C, NOKEY, connection::hello),
    cmd!("connection", "auth", -2, C, NOKEY, connection::auth),
    cmd!("connection", "reset", 1, C, NOKEY, connection::reset),
    // transactions
    // scripting
    cmd!("scripting", "eval", -3, EV, NOKEY, scripting::eval),
    cmd!("scripting", "evalsha", -3, EV, NOKEY, scripting::evalsha),
    cmd!("scripting", "eval_ro", -3, EVR, NOKEY, scripting::eval_ro),
    cmd!(
        "scripting",
        "evalsha_ro",
        -3,
        EVR,
        NOKEY,
        scripting::evalsha_ro
    ),
    container!("scripting", "script", SCRIPT_SUBS),
    cmd!("scripting", "fcall", -3, EV, NOKEY, functions::fcall),
    cmd!("scripting", "fcall_ro", -3, EVR, NOKEY, functions::fcall_ro),
    container!("scripting", "function", FUNCTION_SUBS),
    cmd!("transactions", "multi", 1, C, NOKEY, transaction::multi),
    cmd!(
        "transactions",
        "exec",
        1,
        &["noscript", "loading", "stale"],
        NOKEY,
        transaction::exec
    ),
    cmd!("transactions", "discard", 1, C, NOKEY, transaction::discard),
    cmd!("transactions", "watch", -2, C, ALLKEYS, transaction::watch),
    cmd!("transactions", "unwatch", 1, C, NOKEY, transaction::unwatch),
];

/// `spec`'s row in per-command tables (the statistics): rows
/// follow [`all`], the commands first, so a command's row is its place in
/// `COMMANDS` (the hot path: pointer arithmetic, no search); a
/// subcommand's is found from where its container's rows start.
#[inline]
pub fn row(spec: &'static Spec) -> Option<usize> {
    place(spec, COMMANDS).or_else(|| sub_row(spec))
}

/// `spec`'s index in `list`, if it is one of its elements (every `Spec`
/// is an element of `COMMANDS` or of a container's list).
#[inline]
fn place(spec: &Spec, list: &'static [Spec]) -> Option<usize> {
    let offset = (spec as *const Spec as usize).wrapping_sub(list.as_ptr() as usize);
    (offset < std::mem::size_of_val(list)).then(|| offset / std::mem::size_of::<Spec>())
}

#[cold]
fn sub_row(spec: &'static Spec) -> Option<usize> {
    static STARTS: OnceLock<Vec<usize>> = OnceLock::new();
    let starts = STARTS.get_or_init(|| {
        COMMANDS
            .iter()
            .scan(COMMANDS.len(), |at, c| {
                let start = *at;
                *at += c.subs.len();
                Some(start)
            })
            .collect()
    });
    let container = lookup(spec.container().as_bytes())?;
    Some(starts.get(place(container, COMMANDS)?)? + place(spec, container.subs)?)
}

/// The command called `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(Index::build).find(name)
}

/// Why a request names nothing to run.
#[derive(Clone, Copy)]
pub enum Miss {
    /// No such command.
    Unknown,
    /// A container given a subcommand it lacks.
    UnknownSub(&'static Spec),
    /// The command (or subcommand) given the wrong number of arguments.
    Arity(&'static Spec),
}

/// What `cmd` runs: its command, or for a container the subcommand its
/// second argument names, with the arity checked. A container without a
/// second argument is itself checked (an arity error, but for `COMMAND`).
#[inline]
pub fn resolve(cmd: &Command<'_>) -> Result<&'static Spec, Miss> {
    resolve_after(cmd, &mut None)
}

/// [`resolve`], given the command `last` named (a connection's previous
/// request), which it checks first and then updates: a pipelined batch
/// mostly repeats one command, and comparing its name costs a fraction
/// of a lookup.
#[inline]
pub fn resolve_after(
    cmd: &Command<'_>,
    last: &mut Option<&'static Spec>,
) -> Result<&'static Spec, Miss> {
    let name = cmd.name();
    let spec = match *last {
        Some(spec) if names(spec, name) => spec,
        _ => {
            let spec = lookup(name).ok_or(Miss::Unknown)?;
            *last = Some(spec);
            spec
        }
    };
    let spec = match cmd.arg(1) {
        Some(name) if !spec.subs.is_empty() => spec.find_sub(name).ok_or(Miss::UnknownSub(spec))?,
        _ => spec,
    };
    if spec.arity_ok(cmd.len()) {
        Ok(spec)
    } else {
        Err(Miss::Arity(spec))
    }
}

/// The command or subcommand (`client|kill`) called `name`, any case,
/// as `COMMAND INFO` and `COMMAND DOCS` name them.
pub fn lookup_full(name: &[u8]) -> Option<&'static Spec> {
    match name.iter().position(|&b| b == b'|') {
        Some(bar) => lookup(&name[..bar])?.find_sub(&name[bar + 1..]),
        None => lookup(name),
    }
}

/// Every command, then every subcommand.
pub fn all() -> impl Iterator<Item = &'static Spec> {
    COMMANDS
        .iter()
        .chain(COMMANDS.iter().flat_map(|c| c.subs.iter()))
}

/// True if `name` (any case) is `spec`'s name. The table's names are lower
/// case: only `name` needs folding.
#[inline]
fn names(spec: &Spec, name: &[u8]) -> bool {
    let table = spec.name.as_bytes();
    table.len() == name.len()
        && table
            .iter()
            .zip(name)
            .all(|(&t, &n)| t == n.to_ascii_lowercase())
}

/// An open-addressing table of the command names, probed with a hash
/// that ignores ASCII case, so a name is looked up as sent: no lower-case
/// copy. A fixed table and nothing inserted from the network: a fast
/// unkeyed hash gives no one a way to lengthen a probe. (It replaced a
/// `HashMap` with SipHash over a lower-cased copy, which cost about 150
/// instructions of a pipelined SET's 2500.)
struct Index {
    /// `COMMANDS` index + 1 per slot, 0 for empty; a power of two at
    /// least four times the commands.
    slots: Box<[u16]>,
}

impl Index {
    fn build() -> Index {
        let size = (COMMANDS.len() * 4).next_power_of_two();
        let mut slots = vec![0u16; size].into_boxed_slice();
        for (i, spec) in COMMANDS.iter().enumerate() {
            let mut at = Self::hash(spec.name.as_bytes()) as usize & (size - 1);
            while slots[at] != 0 {
                at = (at + 1) & (size - 1);
            }
            slots[at] = i as u16 + 1;
        }
        Index { slots }
    }

    /// Folds `name` 8 bytes at a time with every byte's 0x20 bit set:
    /// upper- and lower-case letters hash alike (other bytes may collide,
    /// which the comparison in [`find`](Self::find) sorts out).
    #[inline]
    fn hash(name: &[u8]) -> u64 {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut h = (name.len() as u64).wrapping_mul(K);
        for chunk in name.chunks(8) {
            // Byte by byte: a copy of a short, variable length would be a
            // call to memcpy.
            let w = chunk.iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b));
            h = (h ^ (w | 0x2020_2020_2020_2020)).wrapping_mul(K);
        }
        h ^ (h >> 29)
    }

    #[inline]
    fn find(&self, name: &[u8]) -> Option<&'static Spec> {
        if name.len() > 32 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = Self::hash(name) as usize & mask;
        loop {
            let spec = COMMANDS.get(usize::from(self.slots[at]).checked_sub(1)?)?;
            if names(spec, name) {
                return Some(spec);
            }
            at = (at + 1) & mask;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compile-time bits say what the names and flags say, for every
    /// command and subcommand.
    #[test]
    fn traits_agree_with_names_and_flags() {
        // The scripts, by another rule than the table's list: every
        // command named eval… or fcall… (EVAL, EVALSHA, FCALL and their
        // read-only forms).
        let script = |name: &str| name.starts_with("eval") || name.starts_with("fcall");
        let mut seen = 0;
        for spec in all() {
            let t = spec.traits;
            assert_eq!(
                t.has(Traits::WRITE),
                spec.flags.contains(&"write"),
                "{}",
                spec.name
            );
            assert_eq!(t.has(Traits::SCRIPT), script(spec.name), "{}", spec.name);
            assert_eq!(
                t.has(Traits::GATES_ITSELF),
                t.has(Traits::SCRIPT) || spec.name == "exec",
                "{}",
                spec.name
            );
            assert_eq!(t.has(Traits::MOVES), spec.name == "move", "{}", spec.name);
            assert_eq!(t.has(Traits::ALONE), spec.name == "swapdb", "{}", spec.name);
            assert_eq!(
                t.has(Traits::MAY_STORE),
                matches!(spec.name, "sort" | "georadius" | "georadiusbymember"),
                "{}",
                spec.name
            );
            seen += usize::from(t != Traits(0));
        }
        // Most commands set a bit (`write`), and each bit's commands are in
        // the table.
        assert!(seen > 50, "{seen} commands with traits");
        for name in ["exec", "eval", "move", "swapdb", "sort", "set"] {
            assert!(
                lookup(name.as_bytes()).is_some_and(|s| s.traits != Traits(0)),
                "{name}"
            );
        }
    }
}
