//! Keyspace notifications (`notify-keyspace-events`): Pub/Sub messages on
//! `__keyspace@<db>__:<key>` (the event as payload) and
//! `__keyevent@<db>__:<event>` (the key as payload) when a key changes.
//! Session stores (Spring Session asks for `Egx` at start), cache
//! invalidation and expiry-driven jobs subscribe to them.
//!
//! Which key changed is not told by every command: before a write, the
//! dispatcher notes each key argument's CAS and expiry ([`Before`]), and
//! after it, a key whose CAS or expiry moved (or that appeared or went)
//! gets the command's event, named as Redis names it (`set`, `incrby`,
//! `lpush`, `hset`, `zincr`, `rename_from`, ...), preceded by `new` for a
//! key the write created and followed by `del` for a collection it
//! emptied. A write that changed nothing (SETNX on a present key, SREM of
//! an absent member) sends nothing, as in Redis. The store reports the
//! keys it removes itself: `expired` (found on a read or a write, by
//! active expiry's background walk, or by the CLOCK sweep) and `evicted`.
//!
//! `keymiss` (`m`) goes out for each key argument of a read-only command
//! that is absent when the command starts (after the `expired` of a key
//! found expired there), as Redis sends it from its read lookups; OBJECT
//! and MEMORY send none, as in Redis.
//!
//! Differences from Redis: writes over the memcached and native protocols
//! send no events (their expiries and evictions do); writes that read
//! other keys (SINTERSTORE's sources, COPY's source, ...) send no
//! `keymiss` for them; commands
//! whose keys are not at fixed positions (LMPOP, ZMPOP, SORT ... STORE,
//! GEORADIUS ... STORE) and MOVE's `move_to` send no events; and when
//! another client writes the same key at the same moment, its change can
//! be reported for this command too.

use super::pubsub_bus::Bus;
use super::{parse_i64, table::Spec, Ctx};
use crate::command::databases::split_stored;
use crate::protocol::resp::Command;
use crate::store::{Removal, RemovalWatcher};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// `K`: events on `__keyspace@<db>__:<key>`.
const KEYSPACE: u32 = 1 << 0;
/// `E`: events on `__keyevent@<db>__:<event>`.
const KEYEVENT: u32 = 1 << 1;
const GENERIC: u32 = 1 << 2;
const STRING: u32 = 1 << 3;
const LIST: u32 = 1 << 4;
const SET: u32 = 1 << 5;
const HASH: u32 = 1 << 6;
const ZSET: u32 = 1 << 7;
const EXPIRED: u32 = 1 << 8;
const EVICTED: u32 = 1 << 9;
const STREAM: u32 = 1 << 10;
const KEYMISS: u32 = 1 << 11;
const MODULE: u32 = 1 << 12;
const NEW: u32 = 1 << 13;
/// `A`: every class but `m` and `n`.
const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The letters, in the order Redis prints them after `A`.
const CLASSES: [(u8, u32); 10] = [
    (b'g', GENERIC),
    (b'$', STRING),
    (b'l', LIST),
    (b's', SET),
    (b'h', HASH),
    (b'z', ZSET),
    (b'x', EXPIRED),
    (b'e', EVICTED),
    (b't', STREAM),
    (b'd', MODULE),
];

/// Most key arguments one write has noted before it runs; a larger DEL
/// or MSET reports its first ones only.
const MAX_NOTED_KEYS: usize = 1024;

/// The configured classes and where events go.
pub struct Notifier {
    flags: AtomicU32,
    bus: Arc<Bus>,
}

impl Notifier {
    /// Notifications off until [`Notifier::configure`].
    pub fn new(bus: Arc<Bus>) -> Notifier {
        Notifier {
            flags: AtomicU32::new(0),
            bus,
        }
    }

    /// Sets the classes from Redis's letters (`KEA`, `Egx`, `""`); false
    /// (nothing changed) if a letter is unknown.
    pub fn configure(&self, letters: &[u8]) -> bool {
        let mut flags = 0;
        for &c in letters {
            flags |= match c {
                b'A' => ALL,
                b'K' => KEYSPACE,
                b'E' => KEYEVENT,
                b'm' => KEYMISS,
                b'n' => NEW,
                c => match CLASSES.iter().find(|(l, _)| *l == c) {
                    Some((_, f)) => *f,
                    None => return false,
                },
            };
        }
        self.flags.store(flags, Ordering::Relaxed);
        true
    }

    /// The classes as Redis prints them (`AKE`, `gxE`).
    pub fn letters(&self) -> String {
        let flags = self.flags.load(Ordering::Relaxed);
        let mut out = String::new();
        if flags & ALL == ALL {
            out.push('A');
        } else {
            for (l, f) in CLASSES {
                if flags & f != 0 {
                    out.push(l as char);
                }
            }
        }
        for (l, f) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEYMISS), ('n', NEW)] {
            if flags & f != 0 {
                out.push(l);
            }
        }
        out
    }

    /// True if any event would be sent and someone could hear it: some
    /// client subscribed to a channel or pattern (two loads: the
    /// per-command cost while notifications are off or unheard).
    #[inline]
    pub fn active(&self) -> bool {
        let flags = self.flags.load(Ordering::Relaxed);
        flags & (KEYSPACE | KEYEVENT) != 0
            && flags & !(KEYSPACE | KEYEVENT) != 0
            && self.bus.listened()
    }

    /// Sends `event` of `class` for `key` of database `db`, if configured.
    pub fn fire(&self, class: u32, event: &str, db: u8, key: &[u8]) {
        let flags = self.flags.load(Ordering::Relaxed);
        if flags & class == 0 {
            return;
        }
        // The channel names are built on the stack when they fit.
        let mut buf = [0u8; 256];
        let mut name = |parts: &[&[u8]], f: &mut dyn FnMut(&[u8])| {
            let len: usize = parts.iter().map(|p| p.len()).sum();
            if len <= buf.len() {
                let mut at = 0;
                for p in parts {
                    buf[at..at + p.len()].copy_from_slice(p);
                    at += p.len();
                }
                f(&buf[..len]);
            } else {
                f(&parts.concat());
            }
        };
        let mut digits = itoa::Buffer::new();
        let db = digits.format(db).as_bytes();
        if flags & KEYSPACE != 0 {
            name(&[b"__keyspace@", db, b"__:", key], &mut |channel| {
                self.bus.publish(channel, event.as_bytes());
            });
        }
        if flags & KEYEVENT != 0 {
            name(
                &[b"__keyevent@", db, b"__:", event.as_bytes()],
                &mut |channel| {
                    self.bus.publish(channel, key);
                },
            );
        }
    }
}

/// What the store tells of the keys it removes on its own goes to the
/// keyspace notifications and to client tracking.
pub struct Removals {
    /// `expired` and `evicted` events.
    pub notifier: Arc<Notifier>,
    /// Invalidations.
    pub tracker: Arc<super::tracking::Tracker>,
    /// The database numbers of stored keyspaces.
    pub dbs: Arc<crate::command::databases::DbMap>,
}

impl RemovalWatcher for Removals {
    fn removed(&self, key: &[u8], why: Removal) {
        let (stored, key) = split_stored(key);
        let db = self.dbs.number(stored);
        if self.notifier.active() {
            match why {
                Removal::Expired => self.notifier.fire(EXPIRED, "expired", db, key),
                Removal::Evicted => self.notifier.fire(EVICTED, "evicted", db, key),
            }
        }
        self.tracker.changed(key, None);
    }
}

/// A key's CAS and expiry, if present: what tells that a write changed
/// it.
type KeyState = Option<(u64, u64)>;

/// What a write's keys held before it ran.
pub struct Before(Vec<(Vec<u8>, KeyState)>);

impl Before {
    /// The keys whose state the write changed.
    pub(super) fn changed(&self, ctx: &Ctx<'_>) -> Vec<&[u8]> {
        self.0
            .iter()
            .filter(|(key, was)| state_after(ctx, key) != *was)
            .map(|(key, _)| &key[..])
            .collect()
    }
}

/// The states of the first `most` keys a write command names (None for
/// a command that does not write).
pub(super) fn key_states(
    ctx: &Ctx<'_>,
    spec: &Spec,
    cmd: &Command<'_>,
    most: usize,
) -> Option<Before> {
    if !spec.flags.contains(&"write") {
        return None;
    }
    Some(Before(
        spec.keys_in(cmd)
            .take(most)
            .map(|k| (k.to_vec(), state(ctx, k)))
            .collect(),
    ))
}

fn state(ctx: &Ctx<'_>, key: &[u8]) -> KeyState {
    ctx.db.peek(key).map(|i| (i.cas(), i.expires_at_ms()))
}

/// A key's state after a write: what the write stored, even if its TTL
/// has run out since (`SET k v PX 1` sends `set` and `expire` however
/// long it takes to get here, as in Redis).
fn state_after(ctx: &Ctx<'_>, key: &[u8]) -> KeyState {
    ctx.db
        .peek_stored(key)
        .map(|i| (i.cas(), i.expires_at_ms()))
}

/// Notes the keys of `cmd` before it runs, if notifications are on and
/// it writes.
#[inline(always)]
pub fn before(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>) -> Option<Before> {
    // The check in the caller, the work out of line: every command
    // passes here, nearly always with notifications off.
    if !ctx.shared.notifier.active() {
        return None;
    }
    noted_before(ctx, spec, cmd)
}

#[inline(never)]
fn noted_before(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>) -> Option<Before> {
    key_states(ctx, spec, cmd, MAX_NOTED_KEYS)
}

/// Sends `keymiss` for each absent key `cmd` reads, before it runs, if
/// the class is on and heard: every key of a read-only command, and the
/// keys a write only reads (`read_keys`). Looking a key up drops it if
/// it has expired, which sends `expired` first, as Redis's read lookup
/// does. A read-only script's keys are left to the commands it runs,
/// which look them up themselves.
#[inline(always)]
pub fn misses(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>) {
    let notifier = &ctx.shared.notifier;
    if notifier.flags.load(Ordering::Relaxed) & KEYMISS == 0 || !notifier.active() {
        return;
    }
    fire_misses(ctx, spec, cmd);
}

#[inline(never)]
fn fire_misses(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>) {
    let notifier = &ctx.shared.notifier;
    let db = ctx.conn.info.db;
    for key in read_keys(spec, cmd).take(MAX_NOTED_KEYS) {
        if state(ctx, key).is_none() {
            notifier.fire(KEYMISS, "keymiss", db, key);
        }
    }
}

/// The keys `cmd` looks up to read, in order, where Redis's read lookup
/// (which sends `keymiss`) finds them: all of a read-only command's (but
/// OBJECT's and MEMORY's, which peek, and a read-only script's); of a
/// write, those it only reads — GETDEL's, GETEX's, GETSET's and SET
/// GET's key, the sources of the *STORE commands, BITOP and COPY, SORT's
/// and GEORADIUS's key, and PFMERGE's destination and sources.
fn read_keys<'a, 'c: 'a>(
    spec: &Spec,
    cmd: &'a Command<'c>,
) -> impl Iterator<Item = &'c [u8]> + use<'a, 'c> {
    let (skip, take) = if spec.flags.contains(&"readonly") {
        match spec.container() {
            "object" | "memory" | "eval_ro" | "evalsha_ro" | "fcall_ro" => (0, 0),
            _ => (0, usize::MAX),
        }
    } else {
        match spec.name {
            "getdel" | "getex" | "getset" | "copy" | "sort" | "georadius" | "georadiusbymember" => {
                (0, 1)
            }
            "set" if cmd.args().skip(3).any(|a| a.eq_ignore_ascii_case(b"GET")) => (0, 1),
            "sinterstore" | "sunionstore" | "sdiffstore" | "zunionstore" | "zinterstore"
            | "zdiffstore" | "zrangestore" | "geosearchstore" | "bitop" => (1, usize::MAX),
            "pfmerge" => (0, usize::MAX),
            _ => (0, 0),
        }
    };
    // A write that reads no key looks at none (for a command with movable
    // keys, finding them allocates).
    (take > 0)
        .then(|| spec.keys_in(cmd))
        .into_iter()
        .flatten()
        .skip(skip)
        .take(take)
}

/// Sends the events of `cmd`, which ran after [`before`] noted its keys.
pub fn after(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>, before: Before) {
    let notifier = &ctx.shared.notifier;
    let db = ctx.conn.info.db;
    // A list move tells of the push before the pop, as Redis does.
    let dest_first = matches!(spec.name, "lmove" | "blmove" | "rpoplpush" | "brpoplpush");
    let n = before.0.len();
    for j in 0..n {
        let i = if dest_first { n - 1 - j } else { j };
        let (key, was) = &before.0[i];
        let now = state_after(ctx, key);
        if now == *was {
            continue;
        }
        let Some((event, class)) = event_of(spec, cmd, i) else {
            continue;
        };
        match (was, now) {
            // Gone: DEL, RENAME's source, an expire into the past, or a
            // collection its last element left.
            (Some(_), None) => {
                if !matches!(
                    event,
                    "del" | "rename_from" | "move_from" | "expire" | "restore"
                ) && !stores_result(event)
                {
                    notifier.fire(class, event, db, key);
                }
                if event != "rename_from" && event != "move_from" {
                    notifier.fire(GENERIC, "del", db, key);
                } else {
                    notifier.fire(GENERIC, event, db, key);
                }
            }
            (None, Some(_)) => {
                notifier.fire(NEW, "new", db, key);
                notifier.fire(class, event, db, key);
                also_expire(notifier, spec, cmd, db, key, now);
            }
            _ => {
                notifier.fire(class, event, db, key);
                also_expire(notifier, spec, cmd, db, key, now);
            }
        }
    }
}

/// The commands that store a computed result: when it is empty they
/// delete the destination and send only `del`, as Redis does.
fn stores_result(event: &str) -> bool {
    matches!(
        event,
        "sortstore"
            | "sinterstore"
            | "sunionstore"
            | "sdiffstore"
            | "zunionstore"
            | "zinterstore"
            | "zdiffstore"
            | "zrangestore"
            | "georadiusstore"
            | "geosearchstore"
    )
}

/// SET with an expiry (and SETEX, PSETEX) also sends `expire`, as Redis.
fn also_expire(
    notifier: &Notifier,
    spec: &Spec,
    cmd: &Command<'_>,
    db: u8,
    key: &[u8],
    now: KeyState,
) {
    let timed = match spec.name {
        "setex" | "psetex" => true,
        "set" => cmd.args().skip(3).any(|a| {
            [&b"EX"[..], b"PX", b"EXAT", b"PXAT"]
                .iter()
                .any(|o| a.eq_ignore_ascii_case(o))
        }),
        _ => false,
    };
    if timed && now.is_some_and(|(_, exp)| exp != 0) {
        notifier.fire(GENERIC, "expire", db, key);
    }
}

/// The event (and its class) `spec` sends for its `i`-th key argument.
fn event_of(spec: &Spec, cmd: &Command<'_>, i: usize) -> Option<(&'static str, u32)> {
    let side = |arg: usize, left: &'static str, right: &'static str| {
        if cmd
            .arg(arg)
            .is_some_and(|a| a.eq_ignore_ascii_case(b"LEFT"))
        {
            left
        } else {
            right
        }
    };
    let generic = |e: &'static str| Some((e, GENERIC));
    // LMPOP, ZMPOP and their blocking forms: the side named after the
    // keys (whose count is at `count_at`).
    let side_after_keys = |count_at: usize, word: &[u8], yes: &'static str, no: &'static str| {
        let n = cmd.arg(count_at).and_then(parse_i64).unwrap_or(0).max(0) as usize;
        match cmd.arg(count_at + 1 + n) {
            Some(w) if w.eq_ignore_ascii_case(word) => yes,
            _ => no,
        }
    };
    let event = match spec.name {
        "del" | "unlink" | "getdel" | "migrate" => return generic("del"),
        "expire" | "pexpire" | "expireat" | "pexpireat" => return generic("expire"),
        "persist" => return generic("persist"),
        "getex" => {
            let persist = cmd.args().any(|a| a.eq_ignore_ascii_case(b"PERSIST"));
            return generic(if persist { "persist" } else { "expire" });
        }
        "rename" | "renamenx" => return generic(if i == 0 { "rename_from" } else { "rename_to" }),
        "copy" if i == 1 => return generic("copy_to"),
        "copy" => return None,
        "move" => return generic("move_from"),
        "set" | "setnx" | "setex" | "psetex" | "getset" | "mset" | "msetnx" | "bitop" => "set",
        "incr" | "decr" | "incrby" | "decrby" => "incrby",
        "setbit" | "bitfield" => "setbit",
        "pfmerge" => "pfadd",
        "lpushx" => "lpush",
        "rpushx" => "rpush",
        "blpop" => "lpop",
        "brpop" => "rpop",
        "rpoplpush" | "brpoplpush" => {
            if i == 0 {
                "rpop"
            } else {
                "lpush"
            }
        }
        "lmove" | "blmove" if i == 0 => side(3, "lpop", "rpop"),
        "lmove" | "blmove" => side(4, "lpush", "rpush"),
        "smove" => {
            if i == 0 {
                "srem"
            } else {
                "sadd"
            }
        }
        "hmset" | "hsetnx" => "hset",
        "zincrby" => "zincr",
        "zadd" if cmd.args().any(|a| a.eq_ignore_ascii_case(b"INCR")) => "zincr",
        "geoadd" => "zadd",
        "bzpopmin" => "zpopmin",
        "bzpopmax" => "zpopmax",
        "sort" => return Some(("sortstore", LIST)),
        "georadius" | "georadiusbymember" => "georadiusstore",
        "lmpop" => side_after_keys(1, b"LEFT", "lpop", "rpop"),
        "blmpop" => side_after_keys(2, b"LEFT", "lpop", "rpop"),
        "zmpop" => side_after_keys(1, b"MIN", "zpopmin", "zpopmax"),
        "bzmpop" => side_after_keys(2, b"MIN", "zpopmin", "zpopmax"),
        "xgroup|create" => "xgroup-create",
        "xgroup|setid" => "xgroup-setid",
        "xgroup|destroy" => "xgroup-destroy",
        "xgroup|createconsumer" => "xgroup-createconsumer",
        "xgroup|delconsumer" => "xgroup-delconsumer",
        // The rest send their own name: append, setrange, incrbyfloat,
        // lpush, linsert, lset, lrem, ltrim, hset, hdel, hincrby, sadd,
        // srem, spop, sinterstore, zadd, zrem, zpopmin, zunionstore,
        // xadd, xtrim, xdel, ...
        name => name,
    };
    let class = match spec.group {
        "string" | "bitmap" | "hyperloglog" => STRING,
        "list" => LIST,
        "set" => SET,
        "hash" => HASH,
        "sorted-set" | "geo" => ZSET,
        "stream" => STREAM,
        _ => GENERIC,
    };
    Some((event, class))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_read_and_print_as_redis_does() {
        let n = Notifier::new(Arc::new(Bus::default()));
        assert_eq!(n.letters(), "");
        assert!(!n.active());
        for (given, printed) in [
            ("KEA", "AKE"),
            ("Egx", "gxE"),
            ("Kl", "lK"),
            ("A", "A"),
            ("KEA$mn", "AKEmn"),
            ("", ""),
        ] {
            assert!(n.configure(given.as_bytes()), "{given}");
            assert_eq!(n.letters(), printed, "{given}");
        }
        assert!(!n.configure(b"KEq"));
        assert_eq!(n.letters(), "", "a refused setting leaves the last one");
        assert!(n.configure(b"Kg"));
        assert!(!n.active(), "nobody subscribed: nothing to send");
        assert!(n.configure(b"gx"));
        assert!(!n.active(), "no K or E: nothing is sent");
    }
}
