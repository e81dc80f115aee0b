//! How a Redis blocking command waits (`BLPOP`, `BRPOP`, `BLMOVE`,
//! `BRPOPLPUSH`, `BLMPOP`, `BZPOPMIN`, `BZPOPMAX`, `BZMPOP`, `XREAD
//! BLOCK`, `XREADGROUP BLOCK`).
//!
//! A blocking command first tries to serve itself like its non-blocking
//! twin. If there is nothing to take it registers the keys it waits on in
//! [`Waiters`], reads the doorbell's generation, and tries once more; if
//! that finds nothing either it returns [`Step::Block`]. The session then
//! parks (see [`granola_net::park`]) with its request unconsumed, and the
//! worker runs the request again when the doorbell rings or the deadline
//! passes.
//!
//! Every write command that finishes calls [`Waiters::touched`] for its
//! keys (see `dispatch`); that rings the doorbell when a key has waiters.
//! Registering before the last look and notifying after the write (both
//! ordered by the key's shard lock) means a push can never slip between a
//! waiter's look and its park.
//!
//! Differences from Redis, by design: a ring re-runs every waiting client
//! (on every worker), and the first to run takes the element; within one
//! worker that is the longest waiting, across workers it is not ordered.
//! Redis hands a pushed element to the longest-waiting client directly.
//! Inside MULTI/EXEC a blocking command does not wait, as in Redis: it
//! answers as if its timeout had passed.

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use granola_net::park::{Doorbell, Park};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The keys blocked clients wait on, and the doorbell their sessions park
/// on.
#[derive(Default)]
pub struct Waiters {
    bell: Arc<Doorbell>,
    /// Key -> registrations waiting on it (any database: a spurious ring
    /// only makes a waiter look again).
    keys: Mutex<HashMap<Box<[u8]>, usize>>,
    /// Registrations alive (a fast "nobody waits" check for writers).
    registered: AtomicUsize,
    /// Blocked clients by id, with a `CLIENT UNBLOCK` asked for them.
    clients: Mutex<HashMap<u64, Option<Unblock>>>,
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
    /// The doorbell the RESP service hands to the server.
    pub fn bell(&self) -> &Arc<Doorbell> {
        &self.bell
    }

    /// Blocked clients (`INFO`'s `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        self.registered.load(Ordering::Relaxed)
    }

    /// A write finished on `key`: wake whoever waits on it.
    #[inline]
    pub fn touched(&self, key: &[u8]) {
        if self.registered.load(Ordering::SeqCst) == 0 {
            return;
        }
        let waited = self
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(key);
        if waited {
            self.bell.ring();
        }
    }

    /// `CLIENT UNBLOCK id`: ends client `id`'s wait, if it waits; false
    /// if it does not.
    pub fn unblock(&self, id: u64, how: Unblock) -> bool {
        let found = match self
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&id)
        {
            Some(asked) => {
                *asked = Some(how);
                true
            }
            None => false,
        };
        if found {
            self.bell.ring();
        }
        found
    }

    /// Takes the `CLIENT UNBLOCK` asked for client `id`, if any.
    fn take_unblock(&self, id: u64) -> Option<Unblock> {
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&id)
            .and_then(Option::take)
    }

    /// Registers client `id` waiting on `keys` until the result is dropped.
    fn wait_on(self: &Arc<Self>, id: u64, keys: &[&[u8]]) -> Registration {
        let mut map = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let keys: Vec<Box<[u8]>> = keys.iter().map(|k| Box::<[u8]>::from(*k)).collect();
        for k in &keys {
            *map.entry(k.clone()).or_insert(0) += 1;
        }
        drop(map);
        self.clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, None);
        self.registered.fetch_add(1, Ordering::SeqCst);
        Registration {
            waiters: self.clone(),
            id,
            keys,
        }
    }
}

/// One blocked client's keys in [`Waiters`]; dropping it (served, timed
/// out, or the connection closed) takes them out.
struct Registration {
    waiters: Arc<Waiters>,
    id: u64,
    keys: Vec<Box<[u8]>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut map = self.waiters.keys.lock().unwrap_or_else(|e| e.into_inner());
        for k in &self.keys {
            if let Some(n) = map.get_mut(k) {
                *n -= 1;
                if *n == 0 {
                    map.remove(k);
                }
            }
        }
        drop(map);
        self.waiters
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        self.waiters.registered.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection's blocked request: what it waits on and until when.
pub struct Blocked {
    /// When it answers as timed out (`None`: never).
    deadline: Option<Instant>,
    /// The doorbell generation read before its last look.
    seen: u64,
    /// XREAD's start in each stream, fixed when it began to wait (`$` is
    /// the last ID *then*).
    stream_starts: Vec<crate::store::StreamId>,
    _registration: Registration,
}

impl std::fmt::Debug for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocked")
            .field("deadline", &self.deadline)
            .field("seen", &self.seen)
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
            seen: self.seen,
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
        // Registered before the last look: a push after it rings.
        ctx.conn.blocked = Some(Blocked {
            deadline: wait.map(|w| Instant::now() + w),
            seen: 0,
            stream_starts: Vec::new(),
            _registration: waiters.wait_on(ctx.conn.info.id, keys),
        });
    }
    let seen = waiters.bell().generation();
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
    blocked.seen = seen;
    Step::Block
}

/// The arguments `LMPOP`/`BLMPOP` and `ZMPOP`/`BZMPOP` share, `numkeys key
/// [key ...] END [COUNT count]` from argument `at`, where END is one of
/// `ends` (`LEFT`/`RIGHT`, `MIN`/`MAX`).
pub struct MultiPop<'c> {
    /// The keys, in order.
    pub keys: Vec<&'c [u8]>,
    /// True for the first of the two ends (`LEFT`, `MIN`).
    pub first_end: bool,
    /// Elements to pop (at least 1).
    pub count: usize,
}

impl<'c> MultiPop<'c> {
    /// `None` after writing Redis's error for bad arguments.
    pub fn parse(
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
