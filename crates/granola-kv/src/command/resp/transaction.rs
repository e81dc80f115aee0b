//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH, with Redis' semantics:
//! commands after MULTI are queued (`+QUEUED`); a command refused while
//! queuing (unknown, wrong arity) makes EXEC answer `EXECABORT` and apply
//! nothing; EXEC runs the queue with no other RESP command in between (see
//! [`super::gate`]) and answers one reply per command; a WATCHed key
//! modified (or created, or deleted) since WATCH makes EXEC answer a null
//! array and apply nothing. "Modified" is Redis's: a key's CAS or expiry
//! changed since WATCH, or any write of a RESP command changed it in
//! between (a key created and deleted again since counts, as in Redis;
//! [`WatchBook`] keeps the count while anyone watches).

use super::table::Spec;
use super::{dispatch_into, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::protocol::{Limits, Parsed, ReplySink};
use granola::Buf;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Multi {
    /// The queued commands, re-encoded as multibulk requests.
    pub queued: Vec<u8>,
    /// How many.
    pub count: usize,
    /// A command was refused while queuing: EXEC aborts.
    pub aborted: bool,
    /// A queued command writes (or may): `CLIENT PAUSE WRITE` holds the
    /// EXEC back.
    pub writes: bool,
}

/// A WATCHed key: its database, name, CAS unique when watched (None =
/// absent), and its write count in the [`WatchBook`] then.
#[derive(Debug, Clone)]
pub struct Watched {
    db: u8,
    key: Vec<u8>,
    cas: Option<u64>,
    writes: u64,
}

/// Every key some connection WATCHes, with how many connections watch it
/// and how many RESP writes changed it since the first did: what tells
/// EXEC about a key written and put back (created and deleted, say),
/// which its CAS cannot. Commands check [`active`](Self::active), one
/// load, before they note anything.
#[derive(Debug, Default)]
pub struct WatchBook {
    watched: AtomicUsize,
    /// Per database, per key: looked up by a borrowed key, so a write
    /// counted here allocates nothing.
    keys: Mutex<HashMap<u8, HashMap<Vec<u8>, WatchCount>>>,
}

#[derive(Debug)]
struct WatchCount {
    watchers: usize,
    writes: u64,
}

impl WatchBook {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u8, HashMap<Vec<u8>, WatchCount>>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True while some connection watches a key.
    #[inline]
    pub fn active(&self) -> bool {
        self.watched.load(Ordering::Relaxed) != 0
    }

    /// One more watcher of `key`; its write count now.
    fn watch(&self, db: u8, key: &[u8]) -> u64 {
        let mut keys = self.lock();
        let e = keys
            .entry(db)
            .or_default()
            .entry(key.to_vec())
            .or_insert_with(|| {
                self.watched.fetch_add(1, Ordering::Relaxed);
                WatchCount {
                    watchers: 0,
                    writes: 0,
                }
            });
        e.watchers += 1;
        e.writes
    }

    /// One watcher of `key` fewer.
    fn unwatch(&self, db: u8, key: &[u8]) {
        let mut keys = self.lock();
        let Some(in_db) = keys.get_mut(&db) else {
            return;
        };
        if let Some(e) = in_db.get_mut(key) {
            e.watchers -= 1;
            if e.watchers == 0 {
                in_db.remove(key);
                self.watched.fetch_sub(1, Ordering::Relaxed);
                if in_db.is_empty() {
                    keys.remove(&db);
                }
            }
        }
    }

    /// `key`'s write count (0 for a key nobody watches).
    fn writes(&self, db: u8, key: &[u8]) -> u64 {
        self.lock()
            .get(&db)
            .and_then(|in_db| in_db.get(key))
            .map_or(0, |e| e.writes)
    }

    /// A write changed `key`.
    fn written(&self, db: u8, key: &[u8]) {
        if let Some(e) = self
            .lock()
            .get_mut(&db)
            .and_then(|in_db| in_db.get_mut(key))
        {
            e.writes += 1;
        }
    }

    /// Forgets every watch in `watched` (EXEC, DISCARD, UNWATCH, RESET, a
    /// closed connection).
    pub fn forget(&self, watched: &mut Vec<Watched>) {
        for w in watched.drain(..) {
            self.unwatch(w.db, &w.key);
        }
    }
}

/// After a write: each of its keys whose state changed (`changed`)
/// counts one write in the book.
pub(super) fn after_write(ctx: &Ctx<'_>, changed: &[&[u8]]) {
    if !ctx.conn.watch_book.active() {
        return;
    }
    let db = ctx.conn.info.db;
    for key in changed {
        ctx.conn.watch_book.written(db, key);
    }
}

/// Shows the transaction's state in `CLIENT LIST` (`multi=`, `watch=`).
pub(super) fn note(ctx: &Ctx<'_>) {
    let queued = ctx.conn.multi.as_ref().map(|m| m.count);
    ctx.conn.handle.transaction(queued, ctx.conn.watched.len());
}

/// `MULTI`.
pub fn multi(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    if ctx.conn.multi.is_some() {
        ctx.error(b"ERR MULTI calls can not be nested");
    } else {
        ctx.conn.multi = Some(Multi::default());
        note(ctx);
        ctx.ok();
    }
    Step::Done
}

/// `DISCARD`.
pub fn discard(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    if ctx.conn.multi.take().is_some() {
        ctx.conn.watch_book.forget(&mut ctx.conn.watched);
        note(ctx);
        ctx.ok();
    } else {
        ctx.error(b"ERR DISCARD without MULTI");
    }
    Step::Done
}

/// `WATCH key...`.
pub fn watch(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if ctx.conn.multi.is_some() {
        ctx.error(b"ERR WATCH inside MULTI is not allowed");
        return Step::Done;
    }
    let db = ctx.conn.info.db;
    // A key already watched keeps its first watch, as in Redis (a set, so
    // a WATCH of many keys stays linear).
    let mut seen: std::collections::HashSet<(u8, Vec<u8>)> = ctx
        .conn
        .watched
        .iter()
        .map(|w| (w.db, w.key.clone()))
        .collect();
    for key in cmd.args().skip(1) {
        if !seen.insert((db, key.to_vec())) {
            continue;
        }
        let cas = ctx.db.get(key).map(|i| i.cas());
        let writes = ctx.conn.watch_book.watch(db, key);
        ctx.conn.watched.push(Watched {
            db,
            key: key.to_vec(),
            cas,
            writes,
        });
    }
    note(ctx);
    ctx.ok();
    Step::Done
}

/// `UNWATCH`.
pub fn unwatch(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.conn.watch_book.forget(&mut ctx.conn.watched);
    note(ctx);
    ctx.ok();
    Step::Done
}

/// Queues a command (`spec`) inside MULTI.
pub fn queue(ctx: &mut Ctx<'_>, cmd: &Command<'_>, spec: &Spec) {
    if let Some(m) = ctx.conn.multi.as_mut() {
        m.writes |= spec.may_write();
        let args: Vec<&[u8]> = cmd.args().collect();
        resp::encode_command(&args, &mut m.queued);
        m.count += 1;
        note(ctx);
        ctx.out.copy(b"+QUEUED\r\n");
    }
}

/// Marks the transaction aborted (a command was refused while queuing).
pub fn refuse(ctx: &mut Ctx<'_>) {
    if let Some(m) = ctx.conn.multi.as_mut() {
        m.aborted = true;
    }
}

/// Replies of a transaction are never paused: EXEC's reply is one array.
struct NoPause<'a>(&'a mut dyn ReplySink);

impl ReplySink for NoPause<'_> {
    fn copy(&mut self, bytes: &[u8]) {
        self.0.copy(bytes);
    }
    fn value(&mut self, value: &Buf) {
        self.0.value(value);
    }
}

/// `EXEC`.
pub fn exec(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let Some(m) = ctx.conn.multi.take() else {
        ctx.error(b"ERR EXEC without MULTI");
        return Step::Done;
    };
    let mut watched = std::mem::take(&mut ctx.conn.watched);
    note(ctx);
    if m.aborted {
        ctx.conn.watch_book.forget(&mut watched);
        ctx.error(b"EXECABORT Transaction discarded because of previous errors.");
        return Step::Done;
    }
    let shared = ctx.shared;
    let store = &*shared.store;
    let _alone = shared.resp_gate.exclusive(&mut ctx.conn.gate);
    let book = &ctx.conn.watch_book;
    let touched = watched.iter().any(|w| {
        use crate::command::Storage;
        shared.dbs.db(store, w.db).get(&w.key).map(|i| i.cas()) != w.cas
            || book.writes(w.db, &w.key) != w.writes
    });
    book.forget(&mut watched);
    if touched {
        ctx.null_array();
        return Step::Done;
    }
    ctx.array(m.count);
    let limits = Limits {
        max_bulk: usize::MAX,
        max_args: usize::MAX,
        ..Limits::default()
    };
    let mut rest = &m.queued[..];
    let mut out = NoPause(&mut *ctx.out);
    // The queued commands run alone (an MGET needs no retry alone).
    ctx.conn.alone = true;
    ctx.conn.exec = true;
    for _ in 0..m.count {
        let Parsed::Done { cmd, consumed } = resp::parse(rest, &limits) else {
            // Unreachable: we encoded these requests ourselves.
            resp::write_error(&mut out, b"ERR internal: queued command unreadable");
            continue;
        };
        let _ = dispatch_into(shared, ctx.conn, &mut out, &cmd);
        rest = rest.get(consumed..).unwrap_or_default();
    }
    ctx.conn.alone = false;
    ctx.conn.exec = false;
    Step::Done
}
