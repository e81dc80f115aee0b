//! Client-side caching: `CLIENT TRACKING ON|OFF [BCAST] [PREFIX p ...]
//! [OPTIN] [OPTOUT] [NOLOOP]`, `CLIENT CACHING YES|NO`, `CLIENT
//! TRACKINGINFO`, `CLIENT GETREDIR`. A tracking client keeps the values it
//! read; the server tells it, with an `invalidate` push frame, when one of
//! those keys changes (redis-py's `cache_config`, node-redis's
//! `clientSideCache`).
//!
//! Default mode remembers, per key, the clients that read it; a write to
//! the key sends each of them one invalidation and forgets them (they
//! read again to be told again). BCAST mode remembers nothing: every
//! write to a key under one of the client's prefixes (any key without
//! one) is sent to it. OPTIN tracks only the next read after `CLIENT
//! CACHING YES`, OPTOUT every read but the one after `CLIENT CACHING NO`;
//! NOLOOP spares a client its own writes.
//!
//! A read is recorded before it runs, so a write that races it is
//! invalidated after the read's registration (the client may be told of a
//! change its read already saw, never miss one). Writes tell of every key
//! argument whether or not they changed it; writes whose keys are not at
//! fixed positions (LMPOP, SORT ... STORE, ...) tell of every argument
//! that is a tracked key. Expired and evicted keys are told as the store
//! removes them; FLUSHDB and FLUSHALL tell every tracking client to drop
//! everything. Keys are names, not per database (as in Redis).
//!
//! `REDIRECT id` sends a client's invalidations to another connection, as
//! Redis does: to a RESP3 one as `invalidate` push frames, to a RESP2 one in
//! subscribed mode (it SUBSCRIBEd, usually to `__redis__:invalidate`) as
//! messages on `__redis__:invalidate`, to a RESP2 one outside subscribed
//! mode nowhere. Once the target is gone, a RESP3 client hears
//! `tracking-redir-broken` instead. Unlike Redis: tracking without
//! `REDIRECT` needs RESP3 (`HELLO 3`), where Redis accepts it on RESP2 and
//! sends nothing; a RESP3 target hears invalidations only while it has
//! subscribed to something (Redis pushes them to it anyway). Writes over the memcached protocols (text,
//! meta, binary) invalidate too; writes over the native protocol do not,
//! so a tracking client must not cache keys native clients write. The table of tracked keys holds at most
//! [`MAX_TRACKED_KEYS`]; past that an early-inserted key (the table's
//! first; removals fill gaps from its end, so the order is approximate)
//! is invalidated and forgotten, as Redis's `tracking-table-max-keys`
//! forgets keys.

use super::clients::Registry;
use super::pubsub_bus::{Bus, Mailbox};
use super::table::Spec;
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::{Command, Version};
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Most keys the default-mode table remembers.
pub const MAX_TRACKED_KEYS: usize = 1 << 20;

/// Where a tracking client's invalidations go.
enum Sink {
    /// Its own connection.
    Own(Arc<Mailbox>),
    /// Another connection (`REDIRECT`); `own`, for a RESP3 client, hears
    /// that the target is gone.
    Redirect {
        to: u64,
        bus: Arc<Bus>,
        clients: Arc<Registry>,
        own: Option<Arc<Mailbox>>,
    },
}

impl Sink {
    fn invalidate(&self, keys: Option<Arc<[Vec<u8>]>>) {
        match self {
            Sink::Own(m) => m.invalidate(keys),
            Sink::Redirect {
                to,
                bus,
                clients,
                own,
            } => match bus.mailbox_of(*to) {
                Some(m) => m.invalidate(keys),
                // Connected, but subscribed to nothing: nothing can carry
                // the message.
                None if clients.exists(*to) => {}
                None => {
                    if let Some(own) = own {
                        own.redirect_broken(*to);
                    }
                }
            },
        }
    }
}

/// One tracking client.
struct Client {
    sink: Sink,
    bcast: bool,
    prefixes: Vec<Vec<u8>>,
    noloop: bool,
}

/// Every tracking client and the keys they read.
#[derive(Default)]
pub struct Tracker {
    clients: Mutex<HashMap<u64, Client>>,
    /// Default mode: key -> the clients that read it, roughly in
    /// insertion order.
    keys: Mutex<IndexMap<Vec<u8>, HashSet<u64>>>,
    /// Tracking clients (one load per write while there are none).
    count: AtomicUsize,
    /// True while `keys` may hold keys: they stay after their readers
    /// stop tracking, as in Redis (a reader that tracks again hears of
    /// them), until written or flushed.
    keyed: AtomicBool,
    /// Of them, in BCAST mode.
    bcast: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Tracker {
    /// True while some client tracks.
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// True while writes matter: some client tracks, or keys read while
    /// one did are still noted.
    #[inline]
    pub fn hears_writes(&self) -> bool {
        self.active() || self.keyed.load(Ordering::Relaxed)
    }

    fn add(&self, id: u64, client: Client) {
        let bcast = client.bcast;
        // Replaced settings were removed first (see `tracking`).
        if lock(&self.clients).insert(id, client).is_none() {
            self.count.fetch_add(1, Ordering::Relaxed);
            if bcast {
                self.bcast.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn remove(&self, id: u64) {
        if let Some(c) = lock(&self.clients).remove(&id) {
            self.count.fetch_sub(1, Ordering::Relaxed);
            if c.bcast {
                self.bcast.fetch_sub(1, Ordering::Relaxed);
            }
        }
        // Its keys go when they are next written (or flushed out).
    }

    /// Default mode: `id` read `key`.
    fn read(&self, id: u64, key: &[u8]) {
        let mut keys = lock(&self.keys);
        self.keyed.store(true, Ordering::Relaxed);
        match keys.get_mut(key) {
            Some(readers) => {
                readers.insert(id);
            }
            None => {
                keys.insert(key.to_vec(), HashSet::from([id]));
            }
        }
        if keys.len() > MAX_TRACKED_KEYS {
            if let Some((old, readers)) = keys.shift_remove_index(0) {
                drop(keys);
                self.tell(&old, readers, None);
            }
        }
    }

    /// `key` changed (by client `by`, if a client wrote it).
    pub fn changed(&self, key: &[u8], by: Option<u64>) {
        if !self.hears_writes() {
            return;
        }
        let readers = {
            let mut keys = lock(&self.keys);
            let readers = keys.swap_remove(key).unwrap_or_default();
            if keys.is_empty() {
                self.keyed.store(false, Ordering::Relaxed);
            }
            readers
        };
        self.tell(key, readers, by);
    }

    /// Tells `readers` and the matching BCAST clients that `key` changed.
    fn tell(&self, key: &[u8], readers: HashSet<u64>, by: Option<u64>) {
        let bcast = self.bcast.load(Ordering::Relaxed) != 0;
        if readers.is_empty() && !bcast {
            return;
        }
        let keys: Arc<[Vec<u8>]> = Arc::from(vec![key.to_vec()]);
        let clients = lock(&self.clients);
        let told = |id: &u64, c: &Client| {
            if !(c.noloop && by == Some(*id)) {
                c.sink.invalidate(Some(keys.clone()));
            }
        };
        for id in &readers {
            if let Some(c) = clients.get(id).filter(|c| !c.bcast) {
                told(id, c);
            }
        }
        if bcast {
            for (id, c) in clients.iter().filter(|(_, c)| c.bcast) {
                if c.prefixes.is_empty() || c.prefixes.iter().any(|p| key.starts_with(p)) {
                    told(id, c);
                }
            }
        }
    }

    /// FLUSHDB / FLUSHALL: every tracking client drops everything.
    pub fn flushed(&self) {
        if !self.hears_writes() {
            return;
        }
        lock(&self.keys).clear();
        self.keyed.store(false, Ordering::Relaxed);
        for c in lock(&self.clients).values() {
            c.sink.invalidate(None);
        }
    }

    fn is_tracked(&self, key: &[u8]) -> bool {
        lock(&self.keys).contains_key(key)
    }
}

/// A connection's tracking; dropping it (OFF, RESET, the connection
/// closing) stops it.
pub struct Tracking {
    tracker: Arc<Tracker>,
    id: u64,
    /// The `REDIRECT` target's id; 0 for none.
    redirect: u64,
    bcast: bool,
    prefixes: Vec<Vec<u8>>,
    optin: bool,
    optout: bool,
    noloop: bool,
    /// `CLIENT CACHING YES` (OPTIN) or `NO` (OPTOUT) for the next command.
    caching: Option<bool>,
}

impl Drop for Tracking {
    fn drop(&mut self) {
        self.tracker.remove(self.id);
    }
}

impl Tracking {
    /// The `REDIRECT` target's id; 0 for none (`CLIENT GETREDIR`).
    pub fn redirect(&self) -> u64 {
        self.redirect
    }
}

impl std::fmt::Debug for Tracking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracking")
            .field("bcast", &self.bcast)
            .field("optin", &self.optin)
            .finish()
    }
}

/// Before a command runs: a read by a tracking client records its keys.
#[inline(always)]
pub fn before(ctx: &mut Ctx<'_>, spec: &Spec, cmd: &Command<'_>) {
    // The check in the caller, the work out of line.
    if ctx.conn.tracking.is_some() {
        record_read(ctx, spec, cmd);
    }
}

#[inline(never)]
fn record_read(ctx: &mut Ctx<'_>, spec: &Spec, cmd: &Command<'_>) {
    let Some(t) = ctx.conn.tracking.as_mut() else {
        return;
    };
    // CLIENT CACHING itself leaves the choice for the next command.
    if spec.container() == "client" {
        return;
    }
    let caching = t.caching.take();
    if t.bcast || !spec.flags.contains(&"readonly") {
        return;
    }
    let track = if t.optin {
        caching == Some(true)
    } else if t.optout {
        caching != Some(false)
    } else {
        true
    };
    if track {
        for key in spec.keys_in(cmd) {
            t.tracker.read(t.id, key);
        }
    }
}

/// After a command ran: a write tells of the keys it changed (`changed`,
/// when their states were noted before it ran; else of every key it
/// names), as Redis tells only of keys a write modified.
#[inline(always)]
pub fn after(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>, changed: Option<&[&[u8]]>) {
    if ctx.shared.tracker.hears_writes() {
        invalidate_written(ctx, spec, cmd, changed);
    }
}

#[inline(never)]
fn invalidate_written(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>, changed: Option<&[&[u8]]>) {
    let tracker = &ctx.shared.tracker;
    if !spec.flags.contains(&"write") {
        return;
    }
    let by = Some(ctx.conn.info.id);
    match spec.name {
        "flushdb" | "flushall" => tracker.flushed(),
        _ if spec.flags.contains(&"movablekeys") || super::stores_elsewhere(spec, cmd) => {
            let bcast = tracker.bcast.load(Ordering::Relaxed) != 0;
            for arg in cmd.args().skip(1) {
                if bcast || tracker.is_tracked(arg) {
                    tracker.changed(arg, by);
                }
            }
        }
        _ => match changed {
            Some(keys) => {
                for key in keys {
                    tracker.changed(key, by);
                }
            }
            // Tracking began while the command ran.
            None => {
                for key in spec.keys_in(cmd) {
                    tracker.changed(key, by);
                }
            }
        },
    }
}

/// The subcommand's argument as one of two words (`ON`/`OFF`,
/// `YES`/`NO`); `None` with a syntax error written otherwise.
fn either(ctx: &mut Ctx<'_>, cmd: &Command<'_>, yes: &[u8], no: &[u8]) -> Option<bool> {
    match cmd.arg(2) {
        Some(a) if a.eq_ignore_ascii_case(yes) => Some(true),
        Some(a) if a.eq_ignore_ascii_case(no) => Some(false),
        _ => {
            ctx.error(b"ERR syntax error");
            None
        }
    }
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
/// [OPTOUT] [NOLOOP]`.
pub fn tracking(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(on) = either(ctx, cmd, b"ON", b"OFF") else {
        return Step::Done;
    };
    let (mut bcast, mut optin, mut optout, mut noloop) = (false, false, false, false);
    let mut redirect = 0u64;
    let mut prefixes: Vec<Vec<u8>> = Vec::new();
    let mut args = cmd.args().skip(3);
    while let Some(a) = args.next() {
        let a = a.to_ascii_uppercase();
        match &a[..] {
            b"BCAST" => bcast = true,
            b"OPTIN" => optin = true,
            b"OPTOUT" => optout = true,
            b"NOLOOP" => noloop = true,
            b"PREFIX" => match args.next() {
                Some(p) => prefixes.push(p.to_vec()),
                None => {
                    ctx.error(b"ERR syntax error");
                    return Step::Done;
                }
            },
            b"REDIRECT" => {
                let Some(to) = args.next() else {
                    ctx.error(b"ERR syntax error");
                    return Step::Done;
                };
                if redirect != 0 {
                    ctx.error(b"ERR A client can only redirect to a single other client");
                    return Step::Done;
                }
                let Some(to) = std::str::from_utf8(to)
                    .ok()
                    .and_then(|t| t.parse::<u64>().ok())
                else {
                    ctx.error(b"ERR value is not an integer or out of range");
                    return Step::Done;
                };
                // The target must exist now; it may go later (then the
                // redirect is broken).
                if !ctx.shared.clients.exists(to) {
                    ctx.error(b"ERR The client ID you want redirect to does not exist");
                    return Step::Done;
                }
                redirect = to;
            }
            _ => {
                ctx.error(b"ERR syntax error");
                return Step::Done;
            }
        }
    }
    if !on {
        ctx.conn.tracking = None;
        if let Some(sub) = ctx.conn.sub.as_mut() {
            sub.set_tracking(false);
            if sub.total() == 0 {
                ctx.conn.sub = None;
            }
        }
        ctx.conn.info.redir = -1;
        ctx.conn.info.bcast = false;
        ctx.conn.publish();
        ctx.ok();
        return Step::Done;
    }
    // Redis's checks, in its order: the options together, then with the
    // mode tracking is already on in.
    let current = ctx
        .conn
        .tracking
        .as_ref()
        .map(|t| (t.bcast, t.optin, t.optout));
    let refusal: Option<&[u8]> = if !bcast && !prefixes.is_empty() {
        Some(b"ERR PREFIX option requires BCAST mode to be enabled")
    } else if current.is_some_and(|(was, ..)| was != bcast) {
        Some(b"ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
    } else if bcast && (optin || optout) {
        Some(b"ERR OPTIN and OPTOUT are not compatible with BCAST")
    } else if optin && optout {
        Some(b"ERR You can't specify both OPTIN mode and OPTOUT mode")
    } else if current.is_some_and(|(_, was_in, was_out)| (optin && was_out) || (optout && was_in)) {
        Some(b"ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
    } else {
        None
    };
    if let Some(e) = refusal {
        ctx.error(e);
        return Step::Done;
    }
    if bcast {
        // Tracking on again in BCAST mode adds prefixes, none of which
        // may overlap another (one a prefix of the other), as in Redis;
        // BCAST without a prefix holds the empty one.
        let held: Vec<Vec<u8>> = match &ctx.conn.tracking {
            Some(t) if t.prefixes.is_empty() => vec![Vec::new()],
            Some(t) => t.prefixes.clone(),
            None => Vec::new(),
        };
        let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
        for (i, p) in prefixes.iter().enumerate() {
            let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            if let Some(h) = held.iter().find(|h| overlap(h, p)) {
                let e = format!("ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.", show(p), show(h));
                ctx.error(e.as_bytes());
                return Step::Done;
            }
            if let Some(q) = prefixes[i + 1..].iter().find(|q| overlap(p, q)) {
                let e = format!("ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.", show(p), show(q));
                ctx.error(e.as_bytes());
                return Step::Done;
            }
        }
        // What the client now listens to: what it held, and the new
        // prefixes (the empty one if none); the empty one alone is kept
        // as no prefix at all.
        let mut all = held;
        if prefixes.is_empty() {
            prefixes.push(Vec::new());
        }
        for p in prefixes.drain(..) {
            if !all.contains(&p) {
                all.push(p);
            }
        }
        if all != [Vec::<u8>::new()] {
            prefixes = all;
        }
    }
    let resp3 = ctx.conn.version == Version::Resp3;
    if !resp3 && redirect == 0 {
        ctx.error(b"ERR granola-kv sends invalidations as RESP3 push frames: HELLO 3 first, or REDIRECT them to a connection subscribed to __redis__:invalidate");
        return Step::Done;
    }
    // A RESP3 connection hears its own invalidations, or that its
    // redirect broke; a RESP2 one that redirects hears nothing here.
    let own = if resp3 {
        let Some(sub) = super::pubsub::subscriber(ctx, "track keys") else {
            return Step::Done;
        };
        sub.set_tracking(true);
        Some(sub.mailbox())
    } else {
        None
    };
    let sink = match (redirect, own) {
        (0, Some(own)) => Sink::Own(own),
        (to, own) => Sink::Redirect {
            to,
            bus: ctx.shared.bus.clone(),
            clients: ctx.shared.clients.clone(),
            own,
        },
    };
    let tracker = ctx.shared.tracker.clone();
    let id = ctx.conn.info.id;
    // A new setting replaces the old one (its Drop unregisters first).
    ctx.conn.tracking = None;
    tracker.add(
        id,
        Client {
            sink,
            bcast,
            prefixes: prefixes.clone(),
            noloop,
        },
    );
    ctx.conn.tracking = Some(Tracking {
        tracker,
        id,
        redirect,
        bcast,
        prefixes,
        optin,
        optout,
        noloop,
        caching: None,
    });
    ctx.conn.info.redir = redirect as i64;
    ctx.conn.info.bcast = bcast;
    ctx.conn.publish();
    ctx.ok();
    Step::Done
}

/// `CLIENT CACHING YES|NO`.
pub fn caching(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(yes) = either(ctx, cmd, b"YES", b"NO") else {
        return Step::Done;
    };
    match ctx.conn.tracking.as_mut() {
        Some(t) if (yes && t.optin) || (!yes && t.optout) => {
            t.caching = Some(yes);
            ctx.ok();
        }
        Some(_) if yes => ctx.error(
            b"ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
        ),
        Some(_) => ctx.error(
            b"ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
        ),
        None => ctx.error(
            b"ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ),
    }
    Step::Done
}

/// The redirect target's id, 0 when tracking without one, -1 when not
/// tracking.
fn redirect(ctx: &Ctx<'_>) -> i64 {
    ctx.conn.tracking.as_ref().map_or(-1, |t| t.redirect as i64)
}

/// `CLIENT GETREDIR`.
pub fn getredir(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.int(redirect(ctx));
    Step::Done
}

/// `CLIENT TRACKINGINFO`: flags, redirect, prefixes.
pub fn tracking_info(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let (flags, prefixes): (Vec<&[u8]>, Vec<Vec<u8>>) = match &ctx.conn.tracking {
        None => (vec![b"off"], Vec::new()),
        Some(t) => {
            let mut f: Vec<&[u8]> = vec![b"on"];
            if t.bcast {
                f.push(b"bcast");
            }
            if t.optin {
                f.push(b"optin");
                if t.caching == Some(true) {
                    f.push(b"caching-yes");
                }
            }
            if t.optout {
                f.push(b"optout");
                if t.caching == Some(false) {
                    f.push(b"caching-no");
                }
            }
            if t.noloop {
                f.push(b"noloop");
            }
            if t.redirect != 0 && !ctx.shared.clients.exists(t.redirect) {
                f.push(b"broken_redirect");
            }
            (f, t.prefixes.clone())
        }
    };
    ctx.map(3);
    ctx.bytes(b"flags");
    ctx.set(flags.len());
    for f in flags {
        ctx.bytes(f);
    }
    ctx.bytes(b"redirect");
    ctx.int(redirect(ctx));
    ctx.bytes(b"prefixes");
    ctx.array(prefixes.len());
    for p in &prefixes {
        ctx.bytes(p);
    }
    Step::Done
}
