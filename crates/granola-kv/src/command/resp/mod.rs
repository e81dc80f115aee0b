//! The Redis commands. [`table`] lists them; [`dispatch`] looks a request
//! up, checks its arity and runs it.
//!
//! Each command is `fn(&mut Ctx, &Command) -> Step`: the request's
//! arguments come from the parser, the reply goes through the `Ctx`
//! helpers (which speak RESP2 or RESP3, whichever the connection chose).

pub mod acl;
mod bitmaps;
pub mod blocking;
mod blocking_lists;
mod blocking_zsets;
mod client;
pub mod clients;
mod collection_scan;
pub mod collections;
mod command_docs;
pub mod commandstats;
mod connection;
mod debug;
mod digest;
mod dump;
pub mod errorstats;
mod expiry;
pub mod functions;
pub mod gate;
mod geo;
mod glob;
mod hashes;
mod hyperloglog;
mod key_specs;
mod keys;
mod latency;
mod lcs;
mod lists;
mod memory;
mod migrate;
mod modules;
pub mod monitor;
pub mod notify;
pub mod pubsub;
pub mod pubsub_bus;
pub mod replication;
pub mod resetstat;
pub mod scripting;
pub mod scripting_libs;
pub mod scripting_struct;
mod server;
mod sets;
mod sort;
mod standalone;
mod stream_groups;
mod streams;
mod strings;
pub mod table;
pub mod tracking;
pub mod transaction;
mod zset_ops;
mod zset_ranges;
mod zsets;

use super::{Step, Storage};
use crate::protocol::resp::{self, Command, Version};
use crate::protocol::ReplySink;
use crate::server::Shared;
use crate::store::{Element, Item, Kind, Member, StoreError};
use granola::Buf;

/// Per-connection state of a RESP client.
#[derive(Debug)]
pub struct Conn {
    /// Id, name, database... (what `CLIENT LIST` shows).
    pub info: clients::ClientInfo,
    /// RESP2 or RESP3 (`HELLO`).
    pub version: Version,
    /// Authenticated (always, without `--requirepass`).
    pub authed: bool,
    /// A transaction being queued (after MULTI).
    pub multi: Option<transaction::Multi>,
    /// WATCHed keys.
    pub watched: Vec<transaction::Watched>,
    /// Every connection's watched keys (shared), for [`watched`](Self::watched).
    pub watch_book: std::sync::Arc<transaction::WatchBook>,
    /// An MGET's reads, kept between commands (empty) so a snapshot read
    /// allocates nothing once warm.
    pub snapshot: Vec<(Option<crate::store::Item>, crate::store::Stamp)>,
    /// Its place in the RESP gate while entered (see [`gate`]).
    pub gate: gate::Entry,
    /// The command its last request named (see [`table::resolve_after`]).
    pub last_spec: Option<&'static table::Spec>,
    /// The command runs alone in the gate (EXEC, or a retry alone).
    pub alone: bool,
    /// The command asks to run again alone in the gate (an MGET whose
    /// snapshot writers kept outrunning); it has written nothing.
    pub wants_alone: bool,
    /// A blocking command waiting for another client (`BLPOP`...).
    pub blocked: Option<blocking::Blocked>,
    /// Wakes this connection's session while it waits (given when it is
    /// accepted).
    pub waker: Option<granola_net::park::ConnWaker>,
    /// Pub/Sub subscriptions (subscribed mode while `Some`).
    pub sub: Option<pubsub_bus::Subscriber>,
    /// Running the queued commands of an EXEC (blocking commands do not
    /// wait there).
    pub exec: bool,
    /// Running a script's `redis.call` (MONITOR shows `lua`).
    pub script: bool,
    /// Client tracking (`CLIENT TRACKING ON`).
    pub tracking: Option<tracking::Tracking>,
    /// How other connections reach this one (`CLIENT KILL`), and what it
    /// last did (`CLIENT LIST`).
    pub handle: std::sync::Arc<clients::Handle>,
    /// `CLIENT REPLY`: whether replies are sent.
    pub replies: Replies,
    /// The error reply being written was counted in INFO errorstats
    /// already (a script answering with a command's error).
    pub error_counted: bool,
    /// Held back by `CLIENT PAUSE` until then (the session parks till
    /// then, or till `CLIENT UNPAUSE` wakes it).
    pub paused_until: Option<std::time::Instant>,
    /// `REPLCONF rdb-only 1`: SYNC sends an RDB export.
    pub rdb_only: bool,
    /// The RDB export SYNC is sending, between back-pressure pauses.
    pub export: Option<Box<replication::Export>>,
    /// The server's connections, where this one is listed.
    registry: std::sync::Arc<clients::Registry>,
}

/// `CLIENT REPLY`'s state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replies {
    /// Replies are sent.
    On,
    /// None is sent until `CLIENT REPLY ON`.
    Off,
    /// `CLIENT REPLY SKIP` just ran: the next command's reply is dropped.
    SkipNext,
    /// This command's reply is dropped.
    Skip,
}

impl Replies {
    /// True if the command about to run (not `CLIENT REPLY ON`, which
    /// answers even when replies are off) is answered into nothing.
    pub fn silent(self) -> bool {
        matches!(self, Replies::Off | Replies::Skip)
    }

    /// The state for the next command, once one has finished.
    #[must_use]
    pub fn after_command(self) -> Replies {
        match self {
            Replies::Skip => Replies::On,
            Replies::SkipNext => Replies::Skip,
            other => other,
        }
    }
}

/// Where the replies of a connection with `CLIENT REPLY OFF` (or SKIP) go.
pub struct Silenced;

impl ReplySink for Silenced {
    fn copy(&mut self, _: &[u8]) {}
    fn value(&mut self, _: &granola::Buf) {}
}

impl Conn {
    /// A new connection's state; registered in `registry` (`CLIENT LIST`)
    /// until dropped.
    pub fn new(
        id: u64,
        accepted: &granola_net::server::Accepted,
        authed: bool,
        registry: std::sync::Arc<clients::Registry>,
        watch_book: std::sync::Arc<transaction::WatchBook>,
    ) -> Conn {
        let info = clients::ClientInfo {
            id,
            addr: accepted.peer.to_string(),
            laddr: accepted.local.map(|a| a.to_string()).unwrap_or_default(),
            fd: accepted.fd,
            name: Vec::new(),
            db: 0,
            lib_name: Vec::new(),
            lib_ver: Vec::new(),
            resp: 2,
            redir: -1,
            pubsub: false,
            bcast: false,
            no_evict: false,
            no_touch: false,
            subscriptions: [0; 3],
            since: std::time::Instant::now(),
        };
        let handle: std::sync::Arc<clients::Handle> = std::sync::Arc::default();
        // From the start, so that a CLIENT KILL or UNPAUSE reaches a
        // connection that has not sent anything yet.
        handle.set_waker(&accepted.waker);
        registry.register(&info, &handle);
        Conn {
            replies: Replies::On,
            error_counted: false,
            paused_until: None,
            rdb_only: false,
            export: None,
            info,
            version: Version::Resp2,
            authed,
            multi: None,
            watched: Vec::new(),
            watch_book,
            snapshot: Vec::new(),
            gate: gate::Entry::default(),
            last_spec: None,
            alone: false,
            wants_alone: false,
            blocked: None,
            waker: Some(accepted.waker.clone()),
            sub: None,
            exec: false,
            script: false,
            tracking: None,
            handle,
            registry,
        }
    }

    /// Publishes a change of `info` to `CLIENT LIST`.
    pub fn publish(&self) {
        self.registry.register(&self.info, &self.handle);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.registry.unregister(self.info.id);
        self.watch_book.forget(&mut self.watched);
    }
}

/// What a command sees: the shared server, the storage, its connection and
/// where its reply goes.
pub struct Ctx<'a> {
    /// Server state (config, counters).
    pub shared: &'a Shared,
    /// The keyspace.
    pub db: &'a dyn Storage,
    /// This connection.
    pub conn: &'a mut Conn,
    /// The reply.
    pub out: &'a mut dyn ReplySink,
    /// Where a paused command resumes (0 on its first call).
    pub resume: usize,
}

impl Ctx<'_> {
    /// The connection's protocol version.
    pub fn version(&self) -> Version {
        self.conn.version
    }
    /// `+OK`.
    pub fn ok(&mut self) {
        self.out.copy(resp::OK);
    }
    /// Copies a complete, pre-encoded reply.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.copy(bytes);
    }
    /// `-<message>` (the message carries its code: `ERR ...`).
    pub fn error(&mut self, message: &[u8]) {
        resp::write_error(self.out, message);
    }
    /// `:<n>`.
    pub fn int(&mut self, n: i64) {
        resp::write_integer(self.out, n);
    }
    /// A stored value as a bulk string (by reference above the threshold).
    pub fn bulk(&mut self, v: &Buf) {
        resp::write_bulk(self.out, v);
    }
    /// A stored string's value as a bulk string: copied when small,
    /// referenced above the threshold (no reference count when copied).
    pub fn bulk_item(&mut self, item: &Item) {
        resp::write_bulk_stored(self.out, item.value_bytes(), || item.value());
    }
    /// A hash's or set's element as a bulk string: referenced if it is in
    /// pool memory and above the threshold, else copied.
    pub fn element(&mut self, e: &Element) {
        self.stored(e.bytes(), e.buf());
    }
    /// A sorted set's member from its order index, as [`element`](Self::element).
    pub fn member(&mut self, m: &Member) {
        self.stored(m.bytes(), m.buf());
    }
    /// Stored bytes: by reference if they are in pool memory (`buf`) and
    /// above the threshold, else copied.
    fn stored(&mut self, bytes: &[u8], buf: Option<&Buf>) {
        match buf {
            Some(b) => self.bulk(b),
            None => self.bytes(bytes),
        }
    }
    /// Bytes as a bulk string (copied).
    pub fn bytes(&mut self, b: &[u8]) {
        resp::write_bulk_bytes(self.out, b);
    }
    /// A simple string.
    pub fn simple(&mut self, s: &[u8]) {
        resp::write_simple(self.out, s);
    }
    /// A `HELP` subcommand's reply: one simple string per line.
    pub fn help(&mut self, lines: &[&[u8]]) {
        self.array(lines.len());
        for l in lines {
            self.simple(l);
        }
    }
    /// Redis's error for an unknown subcommand `sub` of `command` (upper
    /// case), `sub` cut to 128 bytes as Redis cuts it.
    pub fn unknown_subcommand(&mut self, command: &str, sub: &[u8]) {
        let sub = String::from_utf8_lossy(&sub[..sub.len().min(128)]);
        let text = format!("ERR unknown subcommand '{sub}'. Try {command} HELP.");
        self.error(text.as_bytes());
    }
    /// The null reply (a missing value).
    pub fn null(&mut self) {
        resp::write_null(self.out, self.conn.version);
    }
    /// The null array / aggregate.
    pub fn null_array(&mut self) {
        resp::write_null_aggregate(self.out, self.conn.version);
    }
    /// An array header.
    pub fn array(&mut self, n: usize) {
        resp::write_array_header(self.out, n);
    }
    /// A map header (RESP2: a flat array).
    pub fn map(&mut self, n: usize) {
        resp::write_map_header(self.out, n, self.conn.version);
    }
    /// A set header (RESP2: an array).
    pub fn set(&mut self, n: usize) {
        resp::write_set_header(self.out, n, self.conn.version);
    }
    /// A double.
    pub fn double(&mut self, f: f64) {
        resp::write_double(self.out, f, self.conn.version);
    }
    /// A double already printed (`text`): RESP3 `,text`, RESP2 a bulk
    /// string.
    pub fn double_text(&mut self, text: &str) {
        resp::write_double_text(self.out, text, self.conn.version);
    }
    /// Text (INFO): RESP3 verbatim, RESP2 bulk.
    pub fn verbatim(&mut self, text: &[u8]) {
        resp::write_verbatim(self.out, text, self.conn.version);
    }
    /// True once the reply queue is full: a long reply pauses here.
    pub fn full(&self) -> bool {
        self.out.full()
    }
    /// True if a value of `len` bytes would be copied into the reply
    /// (below the copy threshold) rather than referenced.
    pub fn copies(&self, len: usize) -> bool {
        self.out.copies(len)
    }
    /// The error reply of a store error.
    pub fn store_error(&mut self, e: StoreError) {
        match e {
            StoreError::WrongType => self.raw(resp::ERR_WRONGTYPE),
            StoreError::TooLarge => self.error(b"ERR value too large"),
            StoreError::ListTooLong => self.error(b"ERR list would exceed max-list-len"),
            StoreError::OutOfMemory => {
                self.error(b"OOM command not allowed when used memory > 'maxmemory'.")
            }
            StoreError::NotNumeric => self.raw(resp::ERR_NOT_INTEGER),
            StoreError::NotStored | StoreError::Exists | StoreError::NotFound => {
                self.error(b"ERR write refused")
            }
        }
    }
    /// The item at `key` if it is a string; `Err` (reply written) if it is
    /// another type.
    pub fn string(&mut self, key: &[u8]) -> Result<Option<Item>, Replied> {
        self.typed(key, Kind::String)
    }
    /// The item at `key` if it is a list; `Err` (reply written) otherwise.
    pub fn list(&mut self, key: &[u8]) -> Result<Option<Item>, Replied> {
        self.typed(key, Kind::List)
    }
    fn typed(&mut self, key: &[u8], kind: Kind) -> Result<Option<Item>, Replied> {
        match self.db.get(key) {
            Some(i) if i.kind() != kind => {
                self.raw(resp::ERR_WRONGTYPE);
                Err(Replied)
            }
            other => Ok(other),
        }
    }
}

/// A command's error reply has been written: stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replied;

/// Parses a decimal i64 argument (or stored value) by Redis's `string2ll`
/// rules: an optional `-`, then digits without a leading zero (`0` alone
/// is fine, `-0` is not); no `+`, no spaces. `INCR` of a value stored as
/// `05` or `+5` is an error in Redis, so it is here.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    crate::protocol::num::parse_resp_int(b)
}

/// Commands a client may send before authenticating.
fn before_auth(name: &str) -> bool {
    matches!(name, "auth" | "hello" | "quit" | "reset")
}

/// Commands that act at once inside MULTI instead of being queued (as in
/// Redis, UNWATCH is queued: it runs inside EXEC).
fn outside_queue(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// Runs one request (not empty): looks it up, checks arity and
/// authentication, queues it inside MULTI, else executes it (inside the
/// transaction gate, except EXEC, which takes the gate alone).
pub fn dispatch(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (spec, arity_ok) = match table::resolve_after(cmd, &mut ctx.conn.last_spec) {
        Ok(spec) => (spec, true),
        Err(table::Miss::Arity(spec)) => (spec, false),
        Err(table::Miss::Unknown) => {
            transaction::refuse(ctx);
            refused(ctx, "ERR");
            resp::write_unknown_command(ctx.out, cmd);
            return Step::Done;
        }
        Err(table::Miss::UnknownSub(container)) => {
            transaction::refuse(ctx);
            refused(ctx, "ERR");
            ctx.unknown_subcommand(
                &container.name.to_ascii_uppercase(),
                cmd.arg(1).unwrap_or_default(),
            );
            return Step::Done;
        }
    };
    if !ctx.conn.authed && !before_auth(spec.name) {
        ctx.shared.commandstats.reject(spec);
        refused(ctx, "NOAUTH");
        ctx.error(b"NOAUTH Authentication required.");
        return Step::Done;
    }
    if !arity_ok {
        ctx.shared.commandstats.reject(spec);
        refused(ctx, "ERR");
        transaction::refuse(ctx);
        resp::write_wrong_arity(ctx.out, spec.name.as_bytes());
        return Step::Done;
    }
    if ctx.resume == 0 {
        let now_s = ctx.shared.store.clock().coarse_s();
        ctx.conn.handle.ran(spec, now_s);
    }
    if ctx
        .conn
        .sub
        .as_ref()
        .is_some_and(|s| s.monitoring() && !monitor::allowed_while_monitoring(spec.name))
    {
        ctx.shared.commandstats.reject(spec);
        refused(ctx, "ERR");
        ctx.error(b"ERR Replica can't interact with the keyspace");
        return Step::Done;
    }
    if ctx.conn.sub.as_ref().is_some_and(|s| s.subscribed())
        && ctx.conn.version == Version::Resp2
        && !pubsub::allowed_while_subscribed(spec.name)
    {
        ctx.shared.commandstats.reject(spec);
        refused(ctx, "ERR");
        ctx.error(
            format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.name
            )
            .as_bytes(),
        );
        return Step::Done;
    }
    if held_back(ctx, spec) {
        return Step::Block;
    }
    if ctx.conn.multi.is_some() && spec.flags.contains(&"no_multi") {
        // SYNC and PSYNC: a stream of their own, never an EXEC reply.
        ctx.shared.commandstats.reject(spec);
        refused(ctx, "ERR");
        transaction::refuse(ctx);
        ctx.error(b"ERR Command not allowed inside a transaction");
        return Step::Done;
    }
    if ctx.conn.multi.is_some() && !outside_queue(spec.name) {
        transaction::queue(ctx, cmd, spec);
        return Step::Done;
    }
    // A blocked command's later looks are the same call.
    let first_call = ctx.resume == 0 && ctx.conn.blocked.is_none();
    let start = if first_call {
        ctx.shared.commandstats.begin(spec)
    } else {
        None
    };
    observed(ctx, spec, cmd, first_call, |ctx| {
        let (step, failed) = watch_errors(ctx, |ctx| run_gated(ctx, cmd, spec));
        if first_call {
            ctx.shared.commandstats.end(spec, start, failed);
        }
        step
    })
}

/// Counts a request refused before it ran (INFO errorstats), but inside
/// a script, whose own reply is counted.
fn refused(ctx: &Ctx<'_>, code: &str) {
    if !ctx.conn.script {
        ctx.shared.errors.add(errorstats::ErrorCode::named(code));
    }
}

/// True if `CLIENT PAUSE` holds `spec` back now: the connection then
/// waits (unread) till the pause ends. Under `PAUSE WRITE`, what Redis
/// holds back: commands that write or may (scripts), PUBLISH, and an EXEC
/// with a write queued.
fn held_back(ctx: &mut Ctx<'_>, spec: &table::Spec) -> bool {
    let writes = || {
        spec.may_write()
            || (spec.name == "exec" && ctx.conn.multi.as_ref().is_some_and(|m| m.writes))
    };
    ctx.conn.paused_until = ctx.shared.clients.paused(writes);
    ctx.conn.paused_until.is_some()
}

/// Runs `spec` (through `run`) with what watches commands around it:
/// keyspace notifications, client tracking, MONITOR (a script is shown
/// before it runs, on its `first` call), and the clients blocked on its
/// keys. The watchers after it run once it is done (not while it waits).
fn observed(
    ctx: &mut Ctx<'_>,
    spec: &table::Spec,
    cmd: &Command<'_>,
    first: bool,
    run: impl FnOnce(&mut Ctx<'_>) -> Step,
) -> Step {
    let noted = notify::before(ctx, spec, cmd);
    let states = states_before(ctx, spec, cmd);
    notify::misses(ctx, spec, cmd);
    tracking::before(ctx, spec, cmd);
    let shown_first = first && monitor::shown_first(spec);
    if shown_first {
        monitor::feed(ctx, spec, cmd);
    }
    let step = run(ctx);
    if step == Step::Done {
        // The keys the write changed, for WATCH and client tracking.
        let changed = states.as_ref().map(|s| s.changed(ctx));
        if let Some(changed) = &changed {
            transaction::after_write(ctx, changed);
        }
        if let Some(noted) = noted {
            notify::after(ctx, spec, cmd, noted);
        }
        if !shown_first {
            monitor::feed(ctx, spec, cmd);
        }
        tracking::after(ctx, spec, cmd, changed.as_deref());
        wake_waiters(ctx, spec, cmd);
    }
    step
}

/// The states of a write's keys before it runs, while a WATCH or client
/// tracking needs to know which keys it changed (one load each while
/// neither is in use).
#[inline(always)]
fn states_before(ctx: &Ctx<'_>, spec: &table::Spec, cmd: &Command<'_>) -> Option<notify::Before> {
    if !ctx.conn.watch_book.active() && !ctx.shared.tracker.hears_writes() {
        return None;
    }
    notify::key_states(ctx, spec, cmd, usize::MAX)
}

/// After a write finished: clients blocked on one of its keys look again
/// (see [`blocking`]). One atomic load while no client is blocked.
#[inline(always)]
fn wake_waiters(ctx: &Ctx<'_>, spec: &table::Spec, cmd: &Command<'_>) {
    if ctx.shared.waiters.blocked_clients() != 0 {
        touch_waited_keys(ctx, spec, cmd);
    }
}

#[inline(never)]
fn touch_waited_keys(ctx: &Ctx<'_>, spec: &table::Spec, cmd: &Command<'_>) {
    if !spec.flags.contains(&"write") {
        return;
    }
    for key in spec.keys_in(cmd) {
        ctx.shared.waiters.touched(key);
    }
}

/// Runs `f` with the reply sink watched: true if the reply it wrote
/// starts with an error (`-`), i.e. the command failed. A reply is one
/// RESP value, so its first byte tells.
fn watch_errors(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut Ctx<'_>) -> Step) -> (Step, bool) {
    let mut watch = Watch {
        inner: &mut *ctx.out,
        first: None,
        error: None,
    };
    let mut inner = Ctx {
        shared: ctx.shared,
        db: ctx.db,
        conn: &mut *ctx.conn,
        out: &mut watch,
        resume: ctx.resume,
    };
    let step = f(&mut inner);
    if let Some(code) = watch.error {
        // A script's `redis.call` errors are counted as they answer the
        // script, and a script that answers with one of them does not
        // count it again (Redis counts such an error once).
        let counted = std::mem::take(&mut ctx.conn.error_counted);
        if !ctx.conn.script && !counted {
            ctx.shared.errors.add(code);
        }
    }
    (step, watch.first == Some(b'-'))
}

/// A reply sink that remembers the first byte written through it, and the
/// code of an error reply.
struct Watch<'s> {
    inner: &'s mut dyn ReplySink,
    first: Option<u8>,
    error: Option<errorstats::ErrorCode>,
}

impl ReplySink for Watch<'_> {
    fn copy(&mut self, bytes: &[u8]) {
        if self.first.is_none() {
            self.first = bytes.first().copied();
            self.error = errorstats::ErrorCode::of(bytes);
        }
        self.inner.copy(bytes);
    }
    fn value(&mut self, value: &Buf) {
        if self.first.is_none() {
            self.first = value.first().copied();
        }
        self.inner.value(value);
    }
    fn full(&self) -> bool {
        self.inner.full()
    }
    fn copies(&self, len: usize) -> bool {
        self.inner.copies(len)
    }
    fn region(&mut self, n: usize, first: u8) -> Option<&mut [u8]> {
        if self.first.is_none() {
            if first == b'-' {
                // An error's code is read from its text: copied instead.
                return None;
            }
            self.first = Some(first);
        }
        self.inner.region(n, first)
    }
}

/// Runs `spec` in the transaction gate: EXEC and multi-key writes alone,
/// everything else shared.
fn run_gated(ctx: &mut Ctx<'_>, cmd: &Command<'_>, spec: &'static table::Spec) -> Step {
    if spec.traits.has(table::Traits::GATES_ITSELF) {
        // EXEC and the scripts enter the gate alone themselves.
        return (spec.run)(ctx, cmd);
    }
    if spec.writes_many(cmd.len())
        || stores_elsewhere(spec, cmd)
        || spec.traits.has(table::Traits::ALONE)
    {
        // Redis applies a multi-key write at once; here every worker runs
        // commands, so it enters the gate alone, as EXEC does.
        let _alone = ctx.shared.resp_gate.exclusive(&mut ctx.conn.gate);
        return (spec.run)(ctx, cmd);
    }
    ctx.shared.resp_gate.shared(&mut ctx.conn.gate);
    let step = (spec.run)(ctx, cmd);
    if !std::mem::take(&mut ctx.conn.wants_alone) {
        return step;
    }
    // It wrote nothing and asks to run alone: no other RESP command runs
    // meanwhile.
    let gate = &ctx.shared.resp_gate;
    gate.retried_alone
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let _alone = gate.exclusive(&mut ctx.conn.gate);
    ctx.conn.alone = true;
    let step = (spec.run)(ctx, cmd);
    ctx.conn.alone = false;
    step
}

/// MOVE, and SORT, GEORADIUS and GEORADIUSBYMEMBER with STORE (or
/// STOREDIST): a write to a key their key positions do not name, so they
/// run alone like the other multi-key writes.
#[inline]
pub(super) fn stores_elsewhere(spec: &table::Spec, cmd: &Command<'_>) -> bool {
    spec.traits.has(table::Traits::MOVES)
        || spec.traits.has(table::Traits::MAY_STORE)
            && cmd
                .args()
                .any(|a| a.eq_ignore_ascii_case(b"STORE") || a.eq_ignore_ascii_case(b"STOREDIST"))
}

/// `yes` (true) or `no` (false) for an argument that is one of two words,
/// any case; `None` for anything else.
pub(super) fn choice(a: &[u8], yes: &[u8], no: &[u8]) -> Option<bool> {
    if a.eq_ignore_ascii_case(yes) {
        Some(true)
    } else if a.eq_ignore_ascii_case(no) {
        Some(false)
    } else {
        None
    }
}

/// Whether `cmd`'s reads mark what they read as used: always, but for a
/// `CLIENT NO-TOUCH` client, whose TOUCH alone does.
#[inline]
pub fn touches(conn: &Conn, cmd: &Command<'_>) -> bool {
    !conn.info.no_touch || cmd.name().eq_ignore_ascii_case(b"touch")
}

/// Runs `cmd` for connection `conn` in its selected database, replying to
/// `out`, as [`dispatch_queued`] does: for EXEC's queued commands and a
/// script's `redis.call` (each holds the gate).
pub fn dispatch_into(
    shared: &Shared,
    conn: &mut Conn,
    out: &mut dyn ReplySink,
    cmd: &Command<'_>,
) -> Step {
    let db = shared
        .dbs
        .db(&shared.store, conn.info.db)
        .touching(touches(conn, cmd));
    let mut inner = Ctx {
        shared,
        db: &db,
        conn,
        out,
        resume: 0,
    };
    dispatch_queued(&mut inner, cmd)
}

/// Runs a command queued by MULTI (EXEC holds the gate).
pub fn dispatch_queued(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match table::resolve(cmd) {
        Ok(spec) => {
            let start = ctx.shared.commandstats.begin(spec);
            observed(ctx, spec, cmd, true, |ctx| {
                let (step, failed) = watch_errors(ctx, |ctx| (spec.run)(ctx, cmd));
                ctx.shared.commandstats.end(spec, start, failed);
                step
            })
        }
        _ => {
            resp::write_unknown_command(ctx.out, cmd);
            Step::Done
        }
    }
}
