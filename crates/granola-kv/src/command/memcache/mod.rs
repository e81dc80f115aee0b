//! The memcached commands, text and meta, one file per command family;
//! [`dispatch`] maps a parsed [`Command`] to its file. [`binary`] runs the
//! binary protocol's requests on the same semantics.

mod arith;
pub mod binary;
mod delete;
mod flush;
mod get;
mod meta;
mod misc;
pub mod stats;
mod store;
mod touch;

use super::{Step, Storage};
use crate::protocol::memcache::{self as mc, expiry, Command, Expiry, StoreMode, StoreResult};
use crate::protocol::ReplySink;
use crate::server::Shared;
use crate::store::{Item, Kind, SetMode, StoreError};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

pub use flush::DelayedFlush;

/// The version `version` answers, in memcached's form: clients (libmemcached
/// among them) read it to decide which protocol features the server has,
/// and granola-kv speaks memcached 1.6's. granola-kv's own version is
/// `granola_version` in `stats`.
pub const VERSION: &[u8] = b"1.6.21";

/// granola-kv's own version (`stats`: `granola_version`).
pub const GRANOLA_VERSION: &[u8] = env!("CARGO_PKG_VERSION").as_bytes();

/// Command counters shared by all memcached connections (memcached's
/// names; `stats reset` zeroes them).
#[derive(Default, Debug)]
pub struct McCounters {
    /// `delete`/`md` that found the key.
    pub delete_hits: AtomicU64,
    /// `delete`/`md` that did not.
    pub delete_misses: AtomicU64,
    /// `incr` hits.
    pub incr_hits: AtomicU64,
    /// `incr` misses.
    pub incr_misses: AtomicU64,
    /// `decr` hits.
    pub decr_hits: AtomicU64,
    /// `decr` misses.
    pub decr_misses: AtomicU64,
    /// `cas` that stored.
    pub cas_hits: AtomicU64,
    /// `cas` on a missing key.
    pub cas_misses: AtomicU64,
    /// `cas` with a stale unique.
    pub cas_badval: AtomicU64,
    /// `touch`/`gat` hits.
    pub touch_hits: AtomicU64,
    /// `touch`/`gat` misses.
    pub touch_misses: AtomicU64,
    /// Meta commands.
    pub cmd_meta: AtomicU64,
    /// Sets refused as larger than `-I`.
    pub store_too_large: AtomicU64,
    /// Sets refused for lack of memory.
    pub store_no_memory: AtomicU64,
    /// Store counters (hits, misses, evictions, expired) at the last
    /// `stats reset`, subtracted from what `stats` shows.
    pub reset_base: std::sync::Mutex<crate::store::StoreStats>,
    /// Retrieval commands (one per key, as memcached counts `cmd_get`).
    pub cmd_get: AtomicU64,
    /// Storage commands.
    pub cmd_set: AtomicU64,
    /// `touch`/`gat` commands.
    pub cmd_touch: AtomicU64,
    /// `flush_all` commands.
    pub cmd_flush: AtomicU64,
    /// The pending delayed `flush_all`, shared with its timer thread.
    pub delayed_flush: Arc<DelayedFlush>,
}

/// What a memcached command sees.
pub struct Ctx<'a> {
    /// Server state (config, counters).
    pub shared: &'a Shared,
    /// The keyspace.
    pub db: &'a dyn Storage,
    /// The reply.
    pub out: &'a mut dyn ReplySink,
    /// Where a paused command resumes (0 on its first call).
    pub resume: usize,
}

impl Ctx<'_> {
    fn now_unix(&self) -> u64 {
        self.db.now_ms() / 1000
    }

    /// memcached `exptime` → the store's absolute expiry in ms (0 = never;
    /// an already expired time becomes 1 ms after the epoch: in the past).
    fn expires_ms(&self, exptime: i64) -> u64 {
        match expiry(exptime, self.now_unix()) {
            Expiry::Never => 0,
            Expiry::Expired => 1,
            Expiry::At(s) => s.saturating_mul(1000),
        }
    }

    /// Remaining TTL in seconds as meta commands report it (-1 = never).
    fn ttl_secs(&self, item: &Item) -> i64 {
        match item.expires_at_ms() {
            0 => -1,
            // Whole seconds, rounded up as memcached's clock reports them
            // (`T100` reads back `t100` at once).
            at => at.saturating_sub(self.db.now_ms()).div_ceil(1000) as i64,
        }
    }

    fn store_error(&mut self, e: StoreError) {
        match e {
            StoreError::TooLarge => self
                .out
                .copy(b"SERVER_ERROR object too large for cache\r\n"),
            StoreError::NotNumeric => self.out.copy(mc::NON_NUMERIC),
            _ => self.out.copy(mc::OUT_OF_MEMORY),
        }
    }
}

fn string_item(item: Option<Item>) -> Option<Item> {
    item.filter(|i| i.kind() == Kind::String)
}

fn store_result(r: &Result<u64, StoreError>) -> Option<StoreResult> {
    match r {
        Ok(_) => Some(StoreResult::Stored),
        Err(StoreError::NotStored) | Err(StoreError::WrongType) => Some(StoreResult::NotStored),
        Err(StoreError::Exists) => Some(StoreResult::Exists),
        Err(StoreError::NotFound) => Some(StoreResult::NotFound),
        Err(_) => None,
    }
}

fn set_mode(mode: StoreMode, cas: Option<u64>) -> SetMode {
    match mode {
        StoreMode::Set => SetMode::Set,
        StoreMode::Add => SetMode::Add,
        StoreMode::Replace => SetMode::Replace,
        StoreMode::Append => SetMode::Append,
        StoreMode::Prepend => SetMode::Prepend,
        StoreMode::Cas => SetMode::Cas(cas.unwrap_or(0)),
    }
}

/// Counts one event.
pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The key a write names, for client tracking (RESP clients caching the
/// same database-0 keys are told of memcached writes too); `None` for
/// reads, a flush (see [`dispatch`]) and while nobody tracks.
fn written_key(ctx: &Ctx<'_>, cmd: &Command<'_>) -> Option<Vec<u8>> {
    if !ctx.shared.tracker.active() {
        return None;
    }
    let mut buf = [0u8; crate::protocol::memcache::KEY_BUF_LEN];
    Some(match cmd {
        Command::Store(s) => s.key.to_vec(),
        Command::Delete { key, .. } | Command::Arith { key, .. } | Command::Touch { key, .. } => {
            key.to_vec()
        }
        Command::MetaSet(m) => m.key.bytes(&mut buf).to_vec(),
        Command::MetaDelete(m) => m.key.bytes(&mut buf).to_vec(),
        Command::MetaArith(m) => m.key.bytes(&mut buf).to_vec(),
        _ => return None,
    })
}

/// Runs one command, writing its reply (if any).
pub fn dispatch(ctx: &mut Ctx<'_>, cmd: Command<'_>) -> Step {
    let written = written_key(ctx, &cmd);
    let flush = matches!(cmd, Command::FlushAll { .. });
    let step = run(ctx, cmd);
    // After the write, so a client told to read again reads the new value.
    if let Some(key) = written {
        ctx.shared.tracker.changed(&key, None);
    }
    if flush {
        ctx.shared.tracker.flushed();
    }
    step
}

fn run(ctx: &mut Ctx<'_>, cmd: Command<'_>) -> Step {
    match cmd {
        Command::Get(g) => return get::execute(ctx, g),
        Command::Store(s) => store::execute(ctx, s),
        Command::Delete { key, noreply } => delete::execute(ctx, key, noreply),
        Command::Arith {
            key,
            decr,
            delta,
            noreply,
        } => arith::execute(ctx, key, decr, delta, noreply),
        Command::Touch {
            key,
            exptime,
            noreply,
        } => touch::execute(ctx, key, exptime, noreply),
        Command::FlushAll { delay, noreply } => flush::execute(ctx, delay, noreply),
        Command::Stats { args } => stats::execute(ctx, args),
        Command::Version => misc::version(ctx),
        Command::Verbosity { noreply, .. } => misc::verbosity(ctx, noreply),
        Command::Quit => return Step::Close(Box::default()),
        Command::Shutdown => misc::shutdown(ctx),
        Command::CacheMemlimit { mb, noreply } => misc::cache_memlimit(ctx, mb, noreply),
        Command::MetaGet(m) => {
            bump(&ctx.shared.memcache.cmd_meta);
            meta::get(ctx, m)
        }
        Command::MetaSet(m) => {
            bump(&ctx.shared.memcache.cmd_meta);
            meta::set(ctx, m)
        }
        Command::MetaDelete(m) => {
            bump(&ctx.shared.memcache.cmd_meta);
            meta::delete(ctx, m)
        }
        Command::MetaArith(m) => {
            bump(&ctx.shared.memcache.cmd_meta);
            meta::arith(ctx, m)
        }
        Command::MetaDebug(m) => {
            bump(&ctx.shared.memcache.cmd_meta);
            meta::debug(ctx, m)
        }
        Command::MetaNoop => misc::noop(ctx),
    }
    Step::Done
}
