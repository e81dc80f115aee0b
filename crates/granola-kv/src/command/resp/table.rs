//! Every Redis command granola-kv serves: name, arity (Redis' convention:
//! `n` exactly n arguments with the name, `-n` at least n), flags and key
//! positions (what `COMMAND INFO` reports), and the function that runs it.
//! Adding a command: write its function, add one line here.

use super::{connection, keys, lists, server, strings, transaction, Ctx};
use crate::command::Step;
use crate::protocol::resp::Command;
use std::collections::HashMap;
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
    /// Runs it.
    pub run: fn(&mut Ctx<'_>, &Command<'_>) -> Step,
}

impl Spec {
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

const R: &[&str] = &["readonly", "fast"];
const RS: &[&str] = &["readonly"];
const W: &[&str] = &["write", "denyoom", "fast"];
const WD: &[&str] = &["write"];
const C: &[&str] = &["fast", "loading", "stale"];
const A: &[&str] = &["admin", "loading", "stale"];

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $run:expr) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: $flags,
            keys: $keys,
            run: $run,
        }
    };
}

const NOKEY: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const ALLKEYS: (i32, i32, i32) = (1, -1, 1);
const PAIRS: (i32, i32, i32) = (1, -1, 2);

/// The commands.
pub static COMMANDS: &[Spec] = &[
    // strings
    cmd!("get", 2, R, KEY1, strings::get),
    cmd!("set", -3, &["write", "denyoom"], KEY1, strings::set),
    cmd!("mget", -2, R, ALLKEYS, strings::mget),
    cmd!("mset", -3, W, PAIRS, strings::mset),
    cmd!("incr", 2, W, KEY1, strings::incr),
    cmd!("decr", 2, W, KEY1, strings::decr),
    cmd!("incrby", 3, W, KEY1, strings::incrby),
    cmd!("decrby", 3, W, KEY1, strings::decrby),
    // keyspace
    cmd!("del", -2, WD, ALLKEYS, keys::del),
    cmd!("unlink", -2, W, ALLKEYS, keys::del),
    cmd!("exists", -2, R, ALLKEYS, keys::exists),
    cmd!("expire", 3, W, KEY1, keys::expire),
    cmd!("pexpire", 3, W, KEY1, keys::pexpire),
    cmd!("ttl", 2, R, KEY1, keys::ttl),
    cmd!("pttl", 2, R, KEY1, keys::pttl),
    // lists
    cmd!("rpush", -3, W, KEY1, lists::rpush),
    cmd!("lpush", -3, W, KEY1, lists::lpush),
    cmd!("lrange", 4, RS, KEY1, lists::lrange),
    cmd!("llen", 2, R, KEY1, lists::llen),
    cmd!("lindex", 3, RS, KEY1, lists::lindex),
    // server
    cmd!("ping", -1, C, NOKEY, server::ping),
    cmd!("echo", 2, C, NOKEY, server::echo),
    cmd!("dbsize", 1, R, NOKEY, server::dbsize),
    cmd!("flushall", -1, WD, NOKEY, server::flushall),
    cmd!("flushdb", -1, WD, NOKEY, server::flushdb),
    cmd!("info", -1, A, NOKEY, server::info),
    cmd!("config", -2, A, NOKEY, server::config),
    cmd!("command", -1, A, NOKEY, server::command),
    // connection
    cmd!("select", 2, C, NOKEY, connection::select),
    cmd!("client", -2, A, NOKEY, connection::client),
    cmd!("quit", -1, C, NOKEY, connection::quit),
    cmd!("hello", -1, C, NOKEY, connection::hello),
    cmd!("auth", -2, C, NOKEY, connection::auth),
    cmd!("reset", 1, C, NOKEY, connection::reset),
    // transactions
    cmd!("multi", 1, C, NOKEY, transaction::multi),
    cmd!(
        "exec",
        1,
        &["noscript", "loading", "stale"],
        NOKEY,
        transaction::exec
    ),
    cmd!("discard", 1, C, NOKEY, transaction::discard),
    cmd!("watch", -2, C, ALLKEYS, transaction::watch),
    cmd!("unwatch", 1, C, NOKEY, transaction::unwatch),
];

/// The command called `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    static INDEX: OnceLock<HashMap<&'static [u8], usize>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.as_bytes(), i))
            .collect()
    });
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    index.get(&lower[..]).map(|&i| &COMMANDS[i])
}
