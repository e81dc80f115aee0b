//! How a Redis blocking command waits (`BLPOP`, `BRPOP`, `BLMOVE`,
//! `BRPOPLPUSH`, `BLMPOP`, `BZPOPMIN`, `BZPOPMAX`, `BZMPOP`, `XREAD
//! BLOCK`, `XREADGROUP BLOCK`).
//!
//! A blocking command first tries to serve itself like its non-blocking
//! twin. If there is nothing to take it registers, in [`Waiters`], the keys
//! it waits on with its connection's waker
//! ([`granola_net::park::ConnWaker`]), and looks once more; if that finds
//! nothing either it returns [`Step::Block`]. The session then parks with
//! its request unconsumed, and its worker runs the request again when the
//! waker is called or the deadline passes.
//!
//! Every write command that finishes calls [`Waiters::touched`] for its
//! keys (see `dispatch`): one atomic load while nobody waits, and one more
//! (the key's hash bucket) while somebody waits on other keys. Registering
//! before the last look and notifying after the write (both ordered by the
//! key's shard lock) means a push can never slip between a waiter's look
//! and its park.
//!
//! Who is woken: a write wakes the longest-waiting client of the key only,
//! as Redis serves one. When a client stops waiting (served, timed out,
//! unblocked, gone) it wakes the next one of each of its keys, which looks
//! in turn: so a push of several elements, or one the first client did not
//! take, still reaches the others, and a thousand clients waiting on one
//! queue cost one wake per push, not a thousand. Unlike Redis, the pushed
//! element is not handed over: a client that looks first (a plain LPOP)
//! can take it, and the woken one waits on.
//!
//! Inside MULTI/EXEC a blocking command does not wait, as in Redis: it
//! answers as if its timeout had passed.

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::Kind;
use granola_net::park::{ConnWaker, Park};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The clients blocked on keys, and how to wake them.
pub struct Waiters {
    registry: Mutex<Registry>,
    /// Registrations alive (a fast "nobody waits" check for writers).
    registered: AtomicUsize,
    /// Waiters per key-hash bucket: a write to a key whose bucket is 0
    /// takes no lock, so job-queue workers always blocked on their queue
    /// do not make every other write contend on the registry.
    buckets: Box<[AtomicUsize]>,
    hasher: std::hash::RandomState,
}

/// Key-hash buckets of [`Waiters::buckets`].
const BUCKETS: usize = 4096;

impl Default for Waiters {
    fn default() -> Waiters {
        Waiters {
            registry: Mutex::default(),
            registered: AtomicUsize::new(0),
            buckets: (0..BUCKETS).map(|_| AtomicUsize::new(0)).collect(),
            hasher: std::hash::RandomState::new(),
        }
    }
}

#[derive(Default)]
struct Registry {
    /// Key -> the ids of the clients waiting on it, longest waiting first
    /// (any database: a wake from another database's key only makes a
    /// client look again).
    keys: HashMap<Box<[u8]>, VecDeque<u64>>,
    /// Client id -> its waker, and a `CLIENT UNBLOCK` asked for it.
    clients: HashMap<u64, (ConnWaker, Option<Unblock>)>,
}

impl Registry {
    /// Wakes the longest-waiting client of `key`, if any.
    fn wake_first(&self, key: &[u8]) {
        let first = self.keys.get(key).and_then(VecDeque::front);
        if let Some((waker, _)) = first.and_then(|id| self.clients.get(id)) {
            waker.wake();
        }
    }
}

/// How `CLIENT UNBLOCK` ends a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unblock {
    /// As if the timeout had passed (the default).
    Timeout,
    /// With an `-UNBLOCKED` error.
    Error,
}

impl Waiters {
    /// Blocked clients (`INFO`'s `blocked_clients`).
    #[inline]
    pub fn blocked_clients(&self) -> usize {
        self.registered.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `key`'s bucket counter.
    fn bucket(&self, key: &[u8]) -> &AtomicUsize {
        use std::hash::BuildHasher;
        &self.buckets[self.hasher.hash_one(key) as usize % BUCKETS]
    }

    /// A write finished on `key`: wake its longest-waiting client.
    #[inline]
    pub fn touched(&self, key: &[u8]) {
        if self.registered.load(Ordering::SeqCst) == 0
            || self.bucket(key).load(Ordering::SeqCst) == 0
        {
            return;
        }
        self.lock().wake_first(key);
    }

    /// Every blocked client looks again (SWAPDB: any waited-on key may
    /// have data now); those that find none wait on.
    pub fn wake_all(&self) {
        if self.registered.load(Ordering::SeqCst) == 0 {
            return;
        }
        for (waker, _) in self.lock().clients.values() {
            waker.wake();
        }
    }

    /// `CLIENT UNBLOCK id`: ends client `id`'s wait, if it waits; false
    /// if it does not.
    pub fn unblock(&self, id: u64, how: Unblock) -> bool {
        let mut reg = self.lock();
        match reg.clients.get_mut(&id) {
            Some((waker, asked)) => {
                *asked = Some(how);
                waker.wake();
                true
            }
            None => false,
        }
    }

    /// Takes the `CLIENT UNBLOCK` asked for client `id`, if any.
    fn take_unblock(&self, id: u64) -> Option<Unblock> {
        self.lock()
            .clients
            .get_mut(&id)
            .and_then(|(_, asked)| asked.take())
    }

    /// Registers client `id` waiting on `keys` (woken through `waker`)
    /// until the result is dropped.
    fn wait_on(self: &Arc<Self>, id: u64, waker: ConnWaker, keys: &[&[u8]]) -> Registration {
        let keys: Vec<Box<[u8]>> = keys.iter().map(|k| Box::<[u8]>::from(*k)).collect();
        let mut reg = self.lock();
        for k in &keys {
            reg.keys.entry(k.clone()).or_default().push_back(id);
            self.bucket(k).fetch_add(1, Ordering::SeqCst);
        }
        reg.clients.insert(id, (waker, None));
        self.registered.fetch_add(1, Ordering::SeqCst);
        Registration {
            waiters: self.clone(),
            id,
            keys,
        }
    }
}

/// One blocked client's place in [`Waiters`]; dropping it (served, timed
/// out, unblocked, or the connection closed) takes it out and wakes the
/// next client of each of its keys.
struct Registration {
    waiters: Arc<Waiters>,
    id: u64,
    keys: Vec<Box<[u8]>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut reg = self.waiters.lock();
        reg.clients.remove(&self.id);
        for k in &self.keys {
            self.waiters.bucket(k).fetch_sub(1, Ordering::SeqCst);
            let Some(q) = reg.keys.get_mut(k) else {
                continue;
            };
            q.retain(|&id| id != self.id);
            if q.is_empty() {
                reg.keys.remove(k);
            } else {
                reg.wake_first(k);
            }
        }
        self.waiters.registered.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection's blocked request: what it waits on and until when.
pub struct Blocked {
    /// When it answers as timed out (`None`: never).
    deadline: Option<Instant>,
    /// XREAD's start in each stream, fixed when it began to wait (`$` is
    /// the last ID *then*).
    stream_starts: Vec<crate::store::StreamId>,
    _registration: Registration,
}

impl std::fmt::Debug for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocked")
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl Blocked {
    /// XREAD's kept starts (empty for other commands).
    pub fn stream_starts(&self) -> &[crate::store::StreamId] {
        &self.stream_starts
    }

    /// Keeps XREAD's starts for its next looks.
    pub fn keep_stream_starts(&mut self, starts: Vec<crate::store::StreamId>) {
        self.stream_starts = starts;
    }

    /// What the session parks on.
    pub fn park(&self) -> Park {
        Park {
            deadline: self.deadline,
        }
    }
}

/// Reads a blocking command's timeout argument (seconds, fractions
/// allowed, 0 = forever) with Redis's error texts; `None` after writing the
/// error.
pub fn timeout(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<Option<Duration>> {
    let secs = std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite());
    match secs {
        None => {
            ctx.error(b"ERR timeout is not a float or out of range");
            None
        }
        Some(s) if s < 0.0 => {
            ctx.error(b"ERR timeout is negative");
            None
        }
        Some(0.0) => Some(None),
        // Redis keeps milliseconds; more than a year is as good as never.
        Some(s) => Some(Some(Duration::from_millis(
            (s * 1000.0).min(365.0 * 86_400_000.0) as u64,
        ))),
    }
}

/// True if a client looks again, while it waits, at a key now holding
/// another type than it waits for: no data yet, as in Redis, which
/// serves a waiting client only from a key of its type (the first look
/// answers WRONGTYPE instead).
pub(super) fn other_type_while_waiting(ctx: &Ctx<'_>, key: &[u8], kind: Kind) -> bool {
    ctx.conn.blocked.is_some() && ctx.db.peek(key).is_some_and(|i| i.kind() != kind)
}

/// Runs one look of a blocking command waiting on `keys` for at most
/// `wait`. `serve` tries to answer now: it returns true once it wrote a
/// reply (the result or an error), false if there was nothing to take
/// (it must not write then). When nothing comes: `on_timeout` answers if
/// the deadline passed (or inside EXEC, where nothing waits), else the
/// request blocks.
pub fn wait_for(
    ctx: &mut Ctx<'_>,
    keys: &[&[u8]],
    wait: Option<Duration>,
    mut serve: impl FnMut(&mut Ctx<'_>) -> bool,
    on_timeout: impl FnOnce(&mut Ctx<'_>),
) -> Step {
    let first = ctx.conn.blocked.is_none();
    if first && serve(ctx) {
        return Step::Done;
    }
    if ctx.conn.exec {
        on_timeout(ctx);
        return Step::Done;
    }
    let waiters = &ctx.shared.waiters;
    if first {
        let Some(waker) = ctx.conn.waker.clone() else {
            // Only a session on a server can wait (unreachable there).
            on_timeout(ctx);
            return Step::Done;
        };
        // Registered before the last look: a push after it wakes us.
        ctx.conn.blocked = Some(Blocked {
            deadline: wait.map(|w| Instant::now() + w),
            stream_starts: Vec::new(),
            _registration: waiters.wait_on(ctx.conn.info.id, waker, keys),
        });
    }
    if serve(ctx) {
        ctx.conn.blocked = None;
        return Step::Done;
    }
    if let Some(how) = waiters.take_unblock(ctx.conn.info.id) {
        ctx.conn.blocked = None;
        match how {
            Unblock::Timeout => on_timeout(ctx),
            Unblock::Error => ctx.error(b"UNBLOCKED client unblocked via CLIENT UNBLOCK"),
        }
        return Step::Done;
    }
    let Some(blocked) = ctx.conn.blocked.as_mut() else {
        return Step::Done; // unreachable: set above
    };
    if blocked.deadline.is_some_and(|d| d <= Instant::now()) {
        ctx.conn.blocked = None;
        on_timeout(ctx);
        return Step::Done;
    }
    Step::Block
}

/// `key [key ...] timeout` (BLPOP, BRPOP, BZPOPMIN, BZPOPMAX): waits
/// until `serve` answers for the keys (see [`wait_for`]); a null array at
/// the timeout.
pub fn keys_then_timeout(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'_>,
    mut serve: impl FnMut(&mut Ctx<'_>, &[&[u8]]) -> bool,
) -> Step {
    let n = cmd.len();
    let Some(wait) = timeout(ctx, cmd.arg(n - 1).unwrap_or_default()) else {
        return Step::Done;
    };
    let keys: Vec<&[u8]> = (1..n - 1).filter_map(|i| cmd.arg(i)).collect();
    wait_for(
        ctx,
        &keys,
        wait,
        |ctx| serve(ctx, &keys),
        |ctx| ctx.null_array(),
    )
}

/// `LMPOP`/`ZMPOP` (`numkeys key [key ...] END [COUNT count]`, END one of
/// `ends`) and, if `blocking`, `BLMPOP`/`BZMPOP` (the same after a
/// timeout): `serve(ctx, keys, first_end, count)` pops and answers, false
/// if every key was empty; then a null array answers (at the timeout, if
/// blocking).
pub fn multi_pop(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'_>,
    blocking: bool,
    ends: [&[u8]; 2],
    mut serve: impl FnMut(&mut Ctx<'_>, &[&[u8]], bool, usize) -> bool,
) -> Step {
    let wait = if blocking {
        match timeout(ctx, cmd.arg(1).unwrap_or_default()) {
            Some(w) => Some(w),
            None => return Step::Done,
        }
    } else {
        None
    };
    let Some(m) = MultiPop::parse(ctx, cmd, if blocking { 2 } else { 1 }, ends) else {
        return Step::Done;
    };
    let mut look = |ctx: &mut Ctx<'_>| serve(ctx, &m.keys, m.first_end, m.count);
    match wait {
        Some(wait) => wait_for(ctx, &m.keys, wait, look, |ctx| ctx.null_array()),
        None => {
            if !look(ctx) {
                ctx.null_array();
            }
            Step::Done
        }
    }
}

/// The arguments of [`multi_pop`]'s commands, from argument `at`.
struct MultiPop<'c> {
    keys: Vec<&'c [u8]>,
    /// True for the first of the two ends (`LEFT`, `MIN`).
    first_end: bool,
    /// Elements to pop (at least 1).
    count: usize,
}

impl<'c> MultiPop<'c> {
    /// `None` after writing Redis's error for bad arguments.
    fn parse(
        ctx: &mut Ctx<'_>,
        cmd: &Command<'c>,
        at: usize,
        ends: [&[u8]; 2],
    ) -> Option<MultiPop<'c>> {
        let numkeys = match cmd.arg(at).and_then(parse_i64) {
            Some(n) if n > 0 => n as usize,
            _ => {
                ctx.error(b"ERR numkeys should be greater than 0");
                return None;
            }
        };
        let args: Vec<&'c [u8]> = cmd.args().skip(at + 1).collect();
        let (keys, rest) = match args.split_at_checked(numkeys) {
            Some((k, r)) if !r.is_empty() => (k, r),
            _ => {
                ctx.raw(resp::ERR_SYNTAX);
                return None;
            }
        };
        let first_end = if rest[0].eq_ignore_ascii_case(ends[0]) {
            true
        } else if rest[0].eq_ignore_ascii_case(ends[1]) {
            false
        } else {
            ctx.raw(resp::ERR_SYNTAX);
            return None;
        };
        let count = match &rest[1..] {
            [] => 1,
            [word, n] if word.eq_ignore_ascii_case(b"COUNT") => match parse_i64(n) {
                Some(c) if c > 0 => c as usize,
                _ => {
                    ctx.error(b"ERR count should be greater than 0");
                    return None;
                }
            },
            _ => {
                ctx.raw(resp::ERR_SYNTAX);
                return None;
            }
        };
        Some(MultiPop {
            keys: keys.to_vec(),
            first_end,
            count,
        })
    }
}
