//! The store: keys → strings or lists, values in granola pool memory.
//!
//! ```text
//!   Store ── shards[h.shard] ── buckets ── entry u64 ──┐  (index.rs)
//!                                                     │ slot handle
//!   pool slot: [ header | key | value ]  ◄────────────┘  (item.rs)
//!                          └── Item::value() / list_get(): sub-Bufs of the slot
//! ```
//!
//! - **One slot per item, immutable.** A SET builds a new item in a fresh
//!   slot and swaps the index entry to it; the index's reference to the old
//!   slot is released, and the slot is reused only when every [`Item`] /
//!   [`Buf`](granola::Buf) handed out for it (replies in flight) has dropped.
//! - **Small lists are one item** (up to 8 KiB of elements, `item.rs`):
//!   a read touches the index and that slot only, and every element is a
//!   sub-`Buf` of it. A push or pop writes a new item (O(size), as Redis
//!   rewrites a listpack); a push past 8 KiB moves the list to chunks, a
//!   pop down to 4 KiB makes it one item again.
//! - **Larger lists** are a head item (key, metadata, CAS, and the id of the
//!   list's body) plus a deque of immutable chunks of at most 2 KiB of
//!   elements in pool slots (`list.rs`). A push rebuilds at most the end
//!   chunk it lands in, a pop moves a chunk's live range: O(1) amortized
//!   at both ends whatever the length, and no cap from one slot's size
//!   (the memory limit and `max_list_len` bound a list). Each element goes
//!   out as a zero-copy sub-`Buf` of its chunk, so a reply in flight never
//!   sees a torn list. The body sits behind its own mutex: list reads take
//!   it briefly (strings stay lock-free). Pushes and pops leave the head
//!   item alone: the body carries the CAS of its last write, which
//!   [`Item::cas`] reports (so WATCH sees each change). Edits in the
//!   middle (LSET, LREM, LINSERT, and sorted-set writes, which are lists
//!   with a type marker) rebuild the body: O(n).
//! - **Hashes and sets** are a head item (kind hash or set) plus a hash
//!   table on the heap (`dict.rs`), edited in place under the key's lock:
//!   O(1) per field. Large fields, values and members sit in pool slots
//!   of their own that name their owner like list chunks do, and replies
//!   reference them (`element.rs`). Its bytes are charged to the limit like
//!   slots ([`Store::update_dict`] reserves a bound on a write's growth
//!   first).
//! - **Reads never wait.** [`Store::get`] takes no lock: it loads an entry,
//!   acquires the slot ([`granola::Pool::try_acquire`]), checks the key and
//!   re-checks the entry (`index.rs` explains why that is enough). Writers
//!   take one per-shard mutex (`shards`, default 512); there is no global
//!   lock. Writers build the new item under the shard lock, after checking
//!   their condition (add/replace/cas), so no reader can ever see an item
//!   that was built but not stored.
//! - **Memory limit, CLOCK eviction** (Hippos). `memory_limit` counts the
//!   pool slots of stored items (their full slot size) plus the index. A
//!   read sets the entry's reference bit (only if clear). A writer that
//!   would exceed the limit advances the global hand over the entries:
//!   referenced entries lose their bit, unreferenced ones are evicted,
//!   expired ones are dropped. The hand never blocks on a shard lock (it
//!   skips busy shards), so writers may evict while holding their own.
//!   That is `allkeys-lru`, the default; the other Redis policies change
//!   what the hand may evict and which of its window it prefers
//!   (`eviction.rs`).
//! - **Segments move between size classes.** The pool's capacity is the
//!   hard bound on resident item memory (stored items *and* values that
//!   replies in flight still hold). When a write needs a slot of a size
//!   class that has none free and the pool has no free segment, the store
//!   compacts: it moves the items of the sparsest segment whose items fit
//!   in free slots of their class elsewhere (`compact_segment`). When no
//!   segment fits, an evicting store drains the pool's coldest segment
//!   (least recently allocated from or read): it moves the items read
//!   since the CLOCK hand last passed them into free slots of their class
//!   elsewhere (while there are any) and evicts the rest (`evict_segment`).
//!   Either way the segment goes to the starved class as soon as the last
//!   reply holding one of its values drops it. So a workload whose value
//!   sizes drift does not calcify memory in old classes; `docs/memory.md` has the
//!   design and why it was chosen. Give the pool the same capacity as the
//!   limit: the limit bounds the stored items, the capacity everything.
//! - **Expiry** is absolute Unix milliseconds (0 = never), checked on read
//!   (an expired item is a miss and is dropped if its shard is free), by
//!   the sweep, and by active expiry's walk (`expiry.rs`), which the server
//!   runs in the background. Converting memcached exptimes / Redis EX/PX is the caller's
//!   job, with [`Store::now_ms`].
//! - **CAS** uniques come from one global counter, new on every
//!   modification (set, append, incr, list push...); `touch` keeps it.
//! - **Index growth**: per-shard tables double under the shard lock while
//!   readers stay lock-free; index memory is never returned (see
//!   `index.rs`).
//!
//! Simplifications (documented, deliberate): `flush_all` is immediate —
//! a memcached `flush_all <delay>` is the caller's to schedule; the index
//! never shrinks; `touch` copies the item (items are immutable), keeping its
//! CAS.

mod access;
mod clock;
mod dict;
mod element;
mod eviction;
mod expiry;
mod index;
mod item;
mod keyspaces;
mod list;
mod scan;
mod stream;
mod stream_groups;
mod update;

pub use access::{Access, LfuTuning, UseHistory};
pub use clock::{now_ms, Clock};
pub use dict::{Dict, DictEdit, Member};
pub use element::Element;
pub use eviction::EvictionPolicy;
use eviction::Victim;
pub use expiry::ExpireCycle;
pub use item::{Item, Kind, Marks};
pub use keyspaces::{keyspace_of, KEYSPACE_PREFIX};
pub use list::ListElem;
pub use stream::{encode_fields, field_ranges, StreamEntry, StreamId, StreamMeta};
pub use stream_groups::{Consumer, Group, GroupEdit, Groups, Pending};
pub use update::{Growth, ListEdit};

use granola::Pool;
use index::{
    entry_handle, make_entry, Found, Hashed, Locked, Pos, Probe, Shard, EXPIRES, OCCUPIED, REF,
};
use item::{lock_body, Body, Content, Header, SharedBody, HEADER_LEN};
use list::ListBody;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};
use update::meta_of;

/// How to build a [`Store`].
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Bytes the store may use: pool slots of stored items + the index.
    pub memory_limit: usize,
    /// Writer lock shards (index partitions). Default 512.
    pub shards: usize,
    /// Largest item (28 B header + key + value or list area). Default 1 MiB
    /// plus 4 KiB for key and header, so a 1 MiB value fits. A list
    /// element is bounded by it too.
    pub max_item_size: usize,
    /// Most elements one list (or hash, set) may hold. Default 2^32 - 1;
    /// the memory limit usually binds first.
    pub max_list_len: usize,
    /// Hash fields and values and set members of at least this many bytes
    /// are kept in pool memory, where replies reference them; smaller ones
    /// on the heap, copied. The server sets its copy threshold. Default
    /// 1024.
    pub pooled_element_min: usize,
    /// What a write that needs memory past the limit evicts (see
    /// [`EvictionPolicy`]; default `allkeys-lru`, a cache's), or whether it
    /// is refused with [`StoreError::OutOfMemory`] (`noeviction`,
    /// memcached's `-M`); expired items are removed either way. Changed at
    /// run time by [`Store::set_policy`].
    pub policy: EvictionPolicy,
    /// The LFU counter's tunables, for the LFU policies. Changed at run
    /// time by [`Store::set_lfu_tuning`].
    pub lfu: LfuTuning,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            memory_limit: 64 << 20,
            shards: 512,
            max_item_size: (1 << 20) + 4096,
            max_list_len: u32::MAX as usize,
            pooled_element_min: 1024,
            policy: EvictionPolicy::AllkeysLru,
            lfu: LfuTuning::default(),
        }
    }
}

/// Why a write was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// add on a present key; replace/append/prepend on an absent one.
    NotStored,
    /// cas: the item changed since the client read it.
    Exists,
    /// cas/incr/decr on an absent key.
    NotFound,
    /// incr/decr on a value that is not a decimal u64.
    NotNumeric,
    /// A string operation on a list or a list operation on a string.
    WrongType,
    /// Bigger than `max_item_size` (or a key above 64 KiB).
    TooLarge,
    /// Nothing evictable frees enough memory, or the pool is exhausted.
    OutOfMemory,
    /// The list would exceed `max_list_len`.
    ListTooLong,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreError::NotStored => "not stored",
            StoreError::Exists => "exists",
            StoreError::NotFound => "not found",
            StoreError::NotNumeric => "cannot increment or decrement non-numeric value",
            StoreError::WrongType => "operation against a key holding the wrong kind of value",
            StoreError::TooLarge => "object too large for cache",
            StoreError::OutOfMemory => "out of memory storing object",
            StoreError::ListTooLong => "list would exceed the maximum length",
        })
    }
}

impl std::error::Error for StoreError {}

/// How [`Store::set`] treats an existing item (memcached storage commands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetMode {
    /// Store unconditionally (replaces strings and lists alike).
    Set,
    /// Only if the key is absent, else `NotStored`.
    Add,
    /// Only if the key is present, else `NotStored`.
    Replace,
    /// Append to a present string (keeps its flags and expiry; `meta` is
    /// ignored), else `NotStored`; `WrongType` on a list.
    Append,
    /// Prepend, like `Append`.
    Prepend,
    /// Only if the item's CAS unique is this one: `NotFound` if absent,
    /// `Exists` if it changed.
    Cas(u64),
}

/// Client metadata of a stored item.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Opaque client flags (memcached).
    pub flags: u32,
    /// Absolute expiry in Unix milliseconds; 0 = never.
    pub expires_at_ms: u64,
}

/// The memcached meta protocol's extras to a store.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetExtra {
    /// `E<token>`: the new item's CAS instead of a fresh one.
    pub cas: Option<u64>,
    /// `I` with `C<cas>`: a CAS older than the item's still stores, and
    /// marks the new item stale (memcached's set-to-invalid).
    pub invalidate: bool,
    /// The key came base64-encoded (`b`): the item remembers it
    /// ([`Marks::BINARY_KEY`]).
    pub binary_key: bool,
}

/// The CAS conditions of a meta arithmetic command.
#[derive(Clone, Copy, Debug, Default)]
pub struct CasRule {
    /// `C<cas>`: apply only to the item with this CAS.
    pub compare: Option<u64>,
    /// `E<token>`: the result's CAS instead of a fresh one.
    pub new: Option<u64>,
}

/// New metadata for [`Store::remark`].
#[derive(Clone, Copy, Debug)]
pub struct Remark {
    /// [`Marks`] bits.
    pub marks: u8,
    /// Absolute expiry (Unix ms, 0 = never).
    pub expires_at_ms: u64,
    /// CAS unique: this one (`E<token>`, or the item's to keep it), or a
    /// fresh one if None.
    pub cas: Option<u64>,
}

/// Counters (a snapshot; each field is read separately).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Stored items (strings + collections).
    pub items: usize,
    /// Stored strings.
    pub strings: usize,
    /// Stored collections (lists, hashes, sets).
    pub lists: usize,
    /// Pool slots holding list chunks (each list also has a head item).
    pub list_chunks: usize,
    /// Heap bytes of list element spans (8 per element), counted in
    /// `item_bytes` but not in pool memory.
    pub list_span_bytes: usize,
    /// Heap bytes of hashes and sets (`dict.rs`), counted in `item_bytes`
    /// but not in pool memory (their large elements' pool slots are).
    pub dict_bytes: usize,
    /// Accounted bytes (`item_bytes + index_bytes` + writes in progress);
    /// never above `limit`.
    pub bytes: usize,
    /// Pool slot bytes of stored items and list chunks, plus the lists'
    /// span bytes (`list_span_bytes`) and the hashes' and sets' heap bytes
    /// (`dict_bytes`).
    pub item_bytes: usize,
    /// Bytes of the index.
    pub index_bytes: usize,
    /// The memory limit.
    pub limit: usize,
    /// Reads that found a live item.
    pub hits: u64,
    /// Reads that found nothing (or an expired item).
    pub misses: u64,
    /// Items evicted by CLOCK.
    pub evictions: u64,
    /// Expired items dropped (on read, write or sweep).
    pub expired: u64,
    /// Successful writes (set modes, incr/decr, list writes).
    pub sets: u64,
    /// Segments drained to give their memory to another size class.
    pub segment_evictions: u64,
    /// Items a segment drain moved to another segment of their class
    /// instead of evicting them (referenced ones; under a policy that may
    /// not evict them, all), collections' chunks and pooled elements
    /// included.
    pub segment_rescues: u64,
    /// Of `segment_rescues`: lists' chunks and hashes', sets' and sorted
    /// sets' pooled elements.
    pub segment_chunk_moves: u64,
    /// Pool memory in use: segments handed to size classes, whole, and
    /// large items by their pages (what the store holds resident, at most
    /// the pool capacity).
    pub pool_bytes: usize,
    /// The pool capacity: the hard bound on `pool_bytes`.
    pub pool_capacity: usize,
    /// Pool slot bytes live but no longer stored: held only by replies in
    /// flight (or writes in progress).
    pub pinned_bytes: usize,
}

/// Hits/misses are counted per thread stripe (see [`crate::stripe`]):
/// no locked instruction on a read, and nothing ever zeroes them
/// (`CONFIG RESETSTAT` keeps a base to subtract).
const STRIPES: usize = 16;

#[repr(align(128))]
#[derive(Default)]
struct Stripe {
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Buckets the CLOCK hand visits per step (per lock acquisition).
const SWEEP_BUCKETS: usize = 4;

/// Buckets the hand visits per step under the policies that rank into the
/// pool of candidates (LFU, TTL): up to 16 items, where Redis samples
/// `maxmemory-samples` (5). Each step evicts one item, and each item the
/// hand passes costs a cache miss or two: with the pool, four buckets
/// cost 1.4–1.7 times the CPU per eviction of four without it, one bucket
/// chose no better than four without the pool, two in between
/// (`bench/RESULTS.md`, "LFU and TTL evict from a pool of candidates").
const RANKED_SWEEP_BUCKETS: usize = 2;

/// Where a read found a key ([`Store::get_stamped`]).
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    h: Hashed,
    at: Option<(Pos, u64)>,
}

/// Segments one write may drain before it gives up (more than one when
/// the coldest segments are pinned by replies in flight or their shards
/// are busy).
const MAX_SEGMENT_EVICTIONS: usize = 8;

/// Segments (or, for a large object, windows of segments) a compaction
/// looks at, sparsest first, for one whose every slot can move
/// (`Store::holds_only_movable`).
const COMPACTION_CANDIDATES: usize = 4;

/// Steps of the CLOCK hand (looking for expired items) a write makes
/// before it is refused, when the store does not evict.
const EXPIRED_SWEEPS: usize = 16;

/// Values up to this long are copied out before a read-modify-write
/// ([`Store::update_string`]) computes the new one, so the item can be
/// written over in place (counters are at most 20 digits, floats 40 B or so).
const SHORT_STRING: usize = 64;

/// Where the CLOCK hand points.
#[derive(Default)]
struct Hand {
    shard: usize,
    bucket: usize,
    /// The eviction hand's pool of candidates, for the policies that rank
    /// (unused by active expiry's hand).
    candidates: eviction::Candidates,
}

/// The key-value store. `Send + Sync`: share it as `Arc<Store>`.
///
/// ```
/// use granola_kv::store::{Meta, SetMode, Store, StoreConfig};
/// let pool = granola::Pool::with_capacity(64 << 20).unwrap();
/// let store = Store::new(pool, StoreConfig { memory_limit: 32 << 20, ..Default::default() });
/// let cas = store.set(b"user:1", b"alice", Meta::default(), SetMode::Set).unwrap();
/// let item = store.get(b"user:1").unwrap();
/// assert_eq!((item.value_bytes(), item.cas()), (&b"alice"[..], cas));
/// let reply = item.value();                        // zero-copy, keeps the slot alive
/// store.set(b"user:1", b"bob", Meta::default(), SetMode::Set).unwrap();
/// assert_eq!(&reply[..], b"alice");                // the old value is intact
///
/// store.list_push(b"q", &[b"a", b"b"], false).unwrap();
/// let list = store.get(b"q").unwrap();
/// let all: Vec<_> = list.list_range(0, -1).collect();  // sub-Bufs of one slot
/// assert_eq!(&all[1][..], b"b");
/// ```
pub struct Store {
    pool: Pool,
    shards: Box<[Shard]>,
    seed: u64,
    config: StoreConfig,
    clock: Clock,
    /// item_bytes + index_bytes + reservations of writes in progress.
    accounted: AtomicUsize,
    item_bytes: AtomicUsize,
    index_bytes: AtomicUsize,
    strings: AtomicUsize,
    lists: AtomicUsize,
    /// Keys and expiring keys per keyspace (Redis's databases).
    keyspaces: keyspaces::Keyspaces,
    list_chunks: AtomicUsize,
    list_elems: AtomicUsize,
    dict_bytes: AtomicUsize,
    next_cas: AtomicU64,
    hand: Mutex<Hand>,
    /// Where active expiry's walk goes on ([`Store::expire_cycle`]).
    expire_hand: Mutex<Hand>,
    /// Active expiry runs (Redis's `DEBUG SET-ACTIVE-EXPIRE`).
    active_expiry: AtomicBool,
    /// An item with an expiry was stored once: until then active expiry
    /// has nothing to look for.
    ever_expiring: AtomicBool,
    stripes: [Stripe; STRIPES],
    evictions: AtomicU64,
    segment_evictions: AtomicU64,
    segment_rescues: AtomicU64,
    segment_chunk_moves: AtomicU64,
    /// Segments a compaction left draining with items that could neither
    /// move nor go (see `compact_segment`), to resume.
    stranded: Mutex<Vec<u32>>,
    expired: AtomicU64,
    /// List bodies by id, striped by id (see `list.rs`).
    bodies: Box<[Mutex<BodyMap>]>,
    next_list_id: AtomicU64,
    /// [`StoreConfig::policy`], as it is now.
    policy: AtomicU8,
    /// [`StoreConfig::lfu`]'s two numbers, as they are now.
    lfu_log_factor: AtomicU32,
    lfu_decay_minutes: AtomicU32,
    /// Told of expired and evicted keys.
    watcher: OnceLock<Arc<dyn RemovalWatcher>>,
}

/// Why the store removed a key on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Removal {
    /// Its time to live passed (found on a read, a write or a sweep).
    Expired,
    /// Memory was needed (CLOCK or a segment drain).
    Evicted,
}

/// A copy of `bytes` in a free slot of `size` bytes (a class size: the
/// class of the slot they come from), frozen, owned by a new pool handle,
/// with slot word `word`: how a segment drain or compaction moves an item,
/// a list chunk or a pooled element out of its segment. `None` if the
/// class has no free slot (a drain never takes a segment for it: there is
/// none free when one runs).
fn copy_to_free_slot(
    pool: &Pool,
    bytes: &[u8],
    size: usize,
    word: u32,
) -> Option<(granola::Buf, u32)> {
    let mut w = pool.alloc(size)?;
    debug_assert_eq!(w.capacity(), size);
    w.extend_from_slice(bytes);
    w.slot_word().store(word, Ordering::Relaxed);
    let copy = w.freeze();
    let Ok(handle) = pool.into_handle(copy.clone()) else {
        unreachable!("a fresh slot has no handle yet");
    };
    Some((copy, handle))
}

/// Which items a segment's emptying keeps (`Store::empty_segment`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Emptying {
    /// A compaction: every item that has not expired moves.
    Compact,
    /// A drain of the coldest segment: only what the policy may not evict
    /// or what was used since the CLOCK hand passed moves.
    Drain,
}

/// What a segment drain did (`Store::empty_segment`).
#[derive(Default)]
struct Drained {
    /// It evicted or moved something, or a segment came free.
    progress: bool,
    /// An item stayed: its shard or list was busy, or it could neither
    /// move nor go under the policy.
    left: bool,
}

/// Told of every key the store removes on its own, under the key's shard
/// lock: it must be quick and must not call into the store.
pub trait RemovalWatcher: Send + Sync {
    /// `key` (the store's key, with its database prefix) is gone.
    fn removed(&self, key: &[u8], why: Removal);
}

/// Stripes of the list body table.
const BODY_STRIPES: usize = 64;

/// One stripe of the body table. The ids are a counter the store assigns,
/// never bytes a client chose, so nobody can pick colliding ones: FxHash
/// (a multiply, then a rotate that brings the high bits down to the bucket
/// bits) instead of SipHash, which took about 4 % of the server's CPU on
/// LPUSH, SADD and HSET, whose every call looks its body up here.
type BodyMap = HashMap<u64, SharedBody, rustc_hash::FxBuildHasher>;

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Store {
    /// A store over `pool` (whose capacity should exceed `memory_limit`,
    /// see the module docs), on the system clock.
    pub fn new(pool: Pool, config: StoreConfig) -> Store {
        Store::with_clock(pool, config, Clock::system())
    }

    /// A store with an explicit clock (tests use [`Clock::manual`]).
    pub fn with_clock(pool: Pool, mut config: StoreConfig, clock: Clock) -> Store {
        config.shards = config.shards.clamp(1, 1 << 16);
        let shards: Box<[Shard]> = (0..config.shards).map(|_| Shard::new()).collect();
        let index_bytes = config.shards * index::BUCKET_BYTES;
        if pool.stats().capacity < config.memory_limit {
            log::warn!(
                "granola-kv store: pool capacity {} below the memory limit {}",
                pool.stats().capacity,
                config.memory_limit
            );
        }
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(config.shards);
            h.finish()
        };
        Store {
            policy: AtomicU8::new(config.policy.to_u8()),
            lfu_log_factor: AtomicU32::new(config.lfu.log_factor),
            lfu_decay_minutes: AtomicU32::new(config.lfu.decay_minutes),
            watcher: OnceLock::new(),
            pool,
            shards,
            seed,
            config,
            clock,
            accounted: AtomicUsize::new(index_bytes),
            item_bytes: AtomicUsize::new(0),
            index_bytes: AtomicUsize::new(index_bytes),
            strings: AtomicUsize::new(0),
            lists: AtomicUsize::new(0),
            keyspaces: keyspaces::Keyspaces::default(),
            list_chunks: AtomicUsize::new(0),
            list_elems: AtomicUsize::new(0),
            dict_bytes: AtomicUsize::new(0),
            next_cas: AtomicU64::new(1),
            hand: Mutex::new(Hand::default()),
            expire_hand: Mutex::new(Hand::default()),
            active_expiry: AtomicBool::new(true),
            ever_expiring: AtomicBool::new(false),
            stripes: Default::default(),
            evictions: AtomicU64::new(0),
            segment_evictions: AtomicU64::new(0),
            segment_rescues: AtomicU64::new(0),
            segment_chunk_moves: AtomicU64::new(0),
            stranded: Mutex::new(Vec::new()),
            expired: AtomicU64::new(0),
            bodies: (0..BODY_STRIPES).map(|_| Mutex::default()).collect(),
            next_list_id: AtomicU64::new(1),
        }
    }

    /// The pool values live in.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The configuration in force.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Sets the eviction policy (see [`StoreConfig::policy`]).
    pub fn set_policy(&self, policy: EvictionPolicy) {
        self.policy.store(policy.to_u8(), Ordering::Relaxed);
    }

    /// The eviction policy in force.
    #[inline]
    pub fn policy(&self) -> EvictionPolicy {
        EvictionPolicy::from_u8(self.policy.load(Ordering::Relaxed))
    }

    /// True if writes past the limit may evict (false: `noeviction`, they
    /// are refused).
    pub fn evicts(&self) -> bool {
        self.policy().evicts()
    }

    /// Sets the LFU counter's tunables (see [`StoreConfig::lfu`]).
    pub fn set_lfu_tuning(&self, tuning: LfuTuning) {
        self.lfu_log_factor
            .store(tuning.log_factor, Ordering::Relaxed);
        self.lfu_decay_minutes
            .store(tuning.decay_minutes, Ordering::Relaxed);
    }

    /// The LFU counter's tunables in force.
    pub fn lfu_tuning(&self) -> LfuTuning {
        LfuTuning {
            log_factor: self.lfu_log_factor.load(Ordering::Relaxed),
            decay_minutes: self.lfu_decay_minutes.load(Ordering::Relaxed),
        }
    }

    /// `item`'s LFU counter as of now (Redis's `OBJECT FREQ`), or `None`
    /// if the policy keeps no counters (not an LFU policy).
    pub fn frequency(&self, item: &Item) -> Option<u8> {
        self.policy()
            .tracks_frequency()
            .then(|| access::lfu_count(item.seen(), self.clock.coarse_s(), self.lfu_tuning()))
    }

    /// What an RDB file written now says of `item`'s use, as Redis writes
    /// it: its idle time under an LRU policy (`allkeys-lru`,
    /// `volatile-lru`), its counter under an LFU one, nothing under the
    /// others.
    pub fn use_history(&self, item: &Item) -> Option<UseHistory> {
        match self.policy() {
            EvictionPolicy::AllkeysLru | EvictionPolicy::VolatileLru => {
                Some(UseHistory::IdleSeconds(self.access(item).idle_s))
            }
            p if p.tracks_frequency() => self.frequency(item).map(UseHistory::Frequency),
            _ => None,
        }
    }

    /// Sets `item`'s use as a RESTORE or an RDB file carries it, as Redis
    /// heeds it: a counter under an LFU policy, an idle time under any
    /// other; the other kind is ignored. The item reads as not read since
    /// stored.
    pub fn set_use_history(&self, item: &Item, history: UseHistory) {
        let now_s = self.clock.coarse_s();
        let word = match (history, self.policy().tracks_frequency()) {
            (UseHistory::Frequency(counter), true) => access::lfu_stamp(now_s, counter, false),
            (UseHistory::IdleSeconds(idle), false) => {
                access::stamp(now_s.saturating_sub(idle), false)
            }
            _ => return,
        };
        item.buf().slot_word().store(word, Ordering::Relaxed);
    }

    /// The store's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Current time on the store's clock, Unix milliseconds.
    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> Hashed {
        index::hash(self.seed, key, self.shards.len())
    }

    fn lock(&self, h: &Hashed) -> Locked<'_> {
        self.shards[h.shard].lock(h.shard)
    }

    /// A new CAS unique: one global sequence from 1, as memcached numbers
    /// them (per-shard sequences would save this atomic but make uniques
    /// jump, which clients comparing transcripts with memcached notice).
    fn new_cas(&self) -> u64 {
        self.next_cas.fetch_add(1, Ordering::Relaxed)
    }

    /// The live item for `key`, without waiting for writers. Marks it
    /// recently used; an expired item is a miss.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<Item> {
        // A list read may race a writer that replaced the list (its body
        // left the table): read the key again.
        for _ in 0..8 {
            match self.get_item(key) {
                Some(item) if item.kind().is_collection() => {
                    if let Some(item) = self.attach(item) {
                        return Some(item);
                    }
                }
                other => return other,
            }
        }
        None
    }

    /// [`get`](Self::get), with where the key was found, for
    /// [`unchanged`](Self::unchanged). A collection's body is not attached
    /// (the caller only looks at strings).
    #[inline]
    pub fn get_stamped(&self, key: &[u8]) -> (Option<Item>, Stamp) {
        self.read_stamped(key, true)
    }

    /// [`get_stamped`](Self::get_stamped), or if not `track` one that
    /// leaves the item's use marks alone, as [`peek`](Self::peek) does.
    #[inline]
    pub fn read_stamped(&self, key: &[u8], track: bool) -> (Option<Item>, Stamp) {
        let h = self.hash(key);
        let (item, at) = self.get_hashed(&h, key, track);
        (item, Stamp { h, at })
    }

    /// True if the key read with `stamp` still holds what that read found:
    /// the same index entry (so the same item, as the reader's reference
    /// keeps its slot from being reused), or still nothing. An entry moved
    /// by a cuckoo step or a growth counts as changed.
    #[inline]
    pub fn unchanged(&self, key: &[u8], stamp: &Stamp) -> bool {
        let shard = &self.shards[stamp.h.shard];
        match stamp.at {
            Some((pos, e)) => {
                pos.bucket < shard.buckets()
                    && index::same(
                        shard.bucket(pos.bucket).0[pos.way].load(Ordering::Acquire),
                        e,
                    )
            }
            None => match shard.probe(&self.pool, &stamp.h, key) {
                Probe::Miss => true,
                Probe::Hit(item, _, _) => item.expired(self.clock.now_ms()),
            },
        }
    }

    /// The body of list `id`, if it is stored.
    fn body_of(&self, id: u64) -> Option<SharedBody> {
        let stripe = self.bodies[id as usize % BODY_STRIPES]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        stripe.get(&id).cloned()
    }

    /// A list head with its body attached (strings pass through); `None`
    /// if the list's body is gone (it was replaced or removed).
    fn attach(&self, item: Item) -> Option<Item> {
        match item.body_id() {
            Some(id) => Some(item.with_body(self.body_of(id)?)),
            None => Some(item),
        }
    }

    #[inline]
    fn get_item(&self, key: &[u8]) -> Option<Item> {
        self.get_hashed(&self.hash(key), key, true).0
    }

    /// [`peek`](Self::peek) that finds an expired item too, and leaves it
    /// there: what a write left under `key`, for the events it sends even
    /// if its TTL has run out since.
    pub fn peek_stored(&self, key: &[u8]) -> Option<Item> {
        let h = self.hash(key);
        match self.shards[h.shard].probe(&self.pool, &h, key) {
            Probe::Hit(item, ..) => self.attach(item),
            Probe::Miss => None,
        }
    }

    /// [`get`](Self::get) that leaves the item's access time and "fetched"
    /// mark alone (memcached `mg ... u`, `me`; Redis `OBJECT`, `MEMORY
    /// USAGE`), and its CLOCK reference bit too. A collection comes with
    /// its body, as from `get`.
    pub fn peek(&self, key: &[u8]) -> Option<Item> {
        let item = self.get_hashed(&self.hash(key), key, false).0?;
        self.attach(item)
    }

    /// How `item` (from [`get`](Self::get) or [`peek`](Self::peek)) had
    /// been used before that read.
    pub fn access(&self, item: &Item) -> Access {
        if self.policy().tracks_frequency() {
            Access::of_lfu(item.seen(), self.clock.coarse_s())
        } else {
            Access::of(item.seen(), self.clock.coarse_s())
        }
    }

    /// The live item for `key` (hashed as `h`) and its index position and
    /// entry.
    #[inline]
    fn get_hashed(
        &self,
        h: &Hashed,
        key: &[u8],
        track: bool,
    ) -> (Option<Item>, Option<(Pos, u64)>) {
        let shard = &self.shards[h.shard];
        let mine = crate::stripe::Stripe::mine(STRIPES);
        let stripe = &self.stripes[mine.index];
        match shard.probe(&self.pool, h, key) {
            Probe::Hit(item, pos, e) => {
                if item.expires_at_ms() != 0 && item.expired(self.clock.now_ms()) {
                    // Drop it lazily, but never wait for the shard.
                    if let Some(l) = shard.try_lock(h.shard) {
                        if index::same(l.cell(pos).load(Ordering::Acquire), e) {
                            self.remove(&l, pos, &item);
                            self.removed(key, Removal::Expired);
                        }
                    }
                    mine.bump(&stripe.misses);
                    return (None, None);
                }
                if track {
                    shard.touch_ref(pos, e);
                    self.pool.touch(item.buf());
                    self.mark_read(&item);
                }
                mine.bump(&stripe.hits);
                (Some(item), Some((pos, e)))
            }
            Probe::Miss => {
                mine.bump(&stripe.misses);
                (None, None)
            }
        }
    }

    /// Stores `value` under `key` as `mode` says; returns the new CAS unique.
    pub fn set(
        &self,
        key: &[u8],
        value: &[u8],
        meta: Meta,
        mode: SetMode,
    ) -> Result<u64, StoreError> {
        self.set_with(key, value, meta, mode, SetExtra::default())
    }

    /// [`set`](Self::set) with the memcached meta protocol's extras (see
    /// [`SetExtra`]).
    pub fn set_with(
        &self,
        key: &[u8],
        value: &[u8],
        meta: Meta,
        mode: SetMode,
        extra: SetExtra,
    ) -> Result<u64, StoreError> {
        self.check_len(key, value.len())?;
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut old = None;
        self.find_live(&l, &h, key, &mut old);
        let parts: [&[u8]; 1] = [value];
        let cas = extra.cas.unwrap_or_else(|| self.new_cas());
        let key_marks = if extra.binary_key {
            Marks::BINARY_KEY
        } else {
            0
        };
        if mode == SetMode::Set && !extra.invalidate && old.is_some() {
            let hdr = Header {
                flags: meta.flags,
                expires_at_ms: meta.expires_at_ms,
                cas,
                marks: key_marks,
            };
            self.put_string(&l, &h, key, &parts, hdr, &mut old)?;
            l.count_write();
            return Ok(cas);
        }
        let mut marks = key_marks;
        let mut mode = mode;
        if let (SetMode::Cas(c), Some(f), true) = (mode, &old, extra.invalidate) {
            // An older CAS still stores, as stale, keeping whether the
            // recache win was handed out.
            if c < f.item.cas() {
                marks |= Marks::STALE | (f.item.marks() & Marks::WIN_SENT);
                mode = SetMode::Set;
            }
        }
        let hdr = |m: Meta| Header {
            flags: m.flags,
            expires_at_ms: m.expires_at_ms,
            cas,
            marks,
        };
        match (mode, &old) {
            (SetMode::Add, Some(_)) | (SetMode::Replace, None) => {
                return Err(StoreError::NotStored)
            }
            (SetMode::Append | SetMode::Prepend, None) => return Err(StoreError::NotStored),
            (SetMode::Cas(_), None) => return Err(StoreError::NotFound),
            (SetMode::Cas(c), Some(f)) if f.item.cas() != c => return Err(StoreError::Exists),
            (SetMode::Append | SetMode::Prepend, Some(f)) => {
                if f.item.kind() != Kind::String {
                    return Err(StoreError::WrongType);
                }
                let prev = f.item.value_bytes();
                let joined: [&[u8]; 2] = if mode == SetMode::Append {
                    [prev, value]
                } else {
                    [value, prev]
                };
                let keep = Meta {
                    flags: f.item.flags(),
                    expires_at_ms: f.item.expires_at_ms(),
                };
                self.put_locked(&l, &h, key, &Content::Str(&joined), hdr(keep), old.as_ref())?;
            }
            _ => {
                self.put_locked(&l, &h, key, &Content::Str(&parts), hdr(meta), old.as_ref())?;
            }
        }
        l.count_write();
        Ok(cas)
    }

    /// Removes `key`; false if it was absent (or expired).
    pub fn delete(&self, key: &[u8]) -> bool {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut found = None;
        self.find_live(&l, &h, key, &mut found);
        match &found {
            Some(f) => {
                self.remove(&l, f.pos, &f.item);
                true
            }
            None => false,
        }
    }

    /// memcached incr/decr: the value must be a decimal u64 (`NotNumeric`
    /// otherwise; `WrongType` for lists); incr wraps at 2^64, decr stops at
    /// 0. Keeps flags and expiry, gets a new CAS; returns the new value.
    pub fn incr_decr(&self, key: &[u8], delta: u64, incr: bool) -> Result<u64, StoreError> {
        self.incr_decr_with(key, delta, incr, CasRule::default())
    }

    /// [`incr_decr`](Self::incr_decr) under meta `ma`'s CAS rules: only
    /// if the item's CAS is `rule.compare` (else `Exists`), and the result
    /// takes CAS `rule.new` instead of a fresh one.
    pub fn incr_decr_with(
        &self,
        key: &[u8],
        delta: u64,
        incr: bool,
        rule: CasRule,
    ) -> Result<u64, StoreError> {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut found = None;
        self.find_live(&l, &h, key, &mut found);
        let Some(f) = &found else {
            return Err(StoreError::NotFound);
        };
        if f.item.kind() != Kind::String {
            return Err(StoreError::WrongType);
        }
        if rule.compare.is_some_and(|c| c != f.item.cas()) {
            return Err(StoreError::Exists);
        }
        let cur = parse_u64(f.item.value_bytes()).ok_or(StoreError::NotNumeric)?;
        let new = if incr {
            cur.wrapping_add(delta)
        } else {
            cur.saturating_sub(delta)
        };
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(new);
        let hdr = Header {
            flags: f.item.flags(),
            expires_at_ms: f.item.expires_at_ms(),
            cas: rule.new.unwrap_or_else(|| self.new_cas()),
            // An invalidated item stays stale (and its win token taken)
            // where memcached writes the number over the item itself (it
            // fits); a longer number is a new item there, unmarked.
            marks: if digits.len() <= f.item.value_len() {
                f.item.marks()
            } else {
                0
            },
        };
        // The number alone: memcached sometimes writes a shorter result
        // over the old text padded with spaces (when nothing else holds
        // the item), which protocol.txt allows but clients cannot count on.
        let parts: [&[u8]; 1] = [digits.as_bytes()];
        self.put_string(&l, &h, key, &parts, hdr, &mut found)?;
        l.count_write();
        Ok(new)
    }

    /// Read-modify-write of a string under the key's lock: `f` gets the
    /// current value (None if absent) and a `store` callback it calls with
    /// the new value (not calling it leaves the key as it is). A stored
    /// value keeps the old item's flags and expiry (none for a new key)
    /// and gets a new CAS. `WrongType` if the key holds a collection. One
    /// lookup, no retry: what INCR and friends need.
    pub fn update_string(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>, &mut dyn FnMut(&[u8])),
    ) -> Result<(), StoreError> {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut old = None;
        self.find_live(&l, &h, key, &mut old);
        if old.as_ref().is_some_and(|o| o.item.kind() != Kind::String) {
            return Err(StoreError::WrongType);
        }
        let hdr = |cas| Header {
            flags: old.as_ref().map_or(0, |o| o.item.flags()),
            expires_at_ms: old.as_ref().map_or(0, |o| o.item.expires_at_ms()),
            cas,
            marks: 0,
        };
        let mut result = Ok(());
        let stored = |r: Result<Item, StoreError>| {
            r.map(|_| {
                l.count_write();
            })
        };
        // A short value (a counter's digits) goes to `f` as a copy, so the
        // item is free to be written over in place.
        let mut copy = [0u8; SHORT_STRING];
        let short = match &old {
            Some(o) if o.item.value_len() <= SHORT_STRING => {
                let v = o.item.value_bytes();
                granola::copy_short(&mut copy, v);
                Some(v.len())
            }
            _ => None,
        };
        if old.is_none() || short.is_some() {
            let hdr = hdr(0);
            let mut store = |new: &[u8]| {
                let hdr = Header {
                    cas: self.new_cas(),
                    ..hdr
                };
                result = self
                    .put_string(&l, &h, key, &[new], hdr, &mut old)
                    .map(|()| l.count_write());
                // Replaced (or rewritten): a second call stores anew.
                old = None;
            };
            f(short.map(|n| &copy[..n]), &mut store);
            return result;
        }
        let mut store = |new: &[u8]| {
            let parts: [&[u8]; 1] = [new];
            let hdr = hdr(self.new_cas());
            result = stored(self.put_locked(&l, &h, key, &Content::Str(&parts), hdr, old.as_ref()));
        };
        f(old.as_ref().map(|o| o.item.value_bytes()), &mut store);
        result
    }

    /// Sets a new expiry (absolute ms, 0 = never) on a live item and returns
    /// the updated item (for `gat`); `None` if absent. Items are immutable,
    /// so this copies the item into a new slot (CAS unchanged). If memory
    /// for the copy cannot be found, the item keeps its old expiry and is
    /// returned as it was.
    pub fn touch(&self, key: &[u8], expires_at_ms: u64) -> Option<Item> {
        // memcached counts a touch (and gat, `mg T`) as a fetch.
        let item = self.retime(key, expires_at_ms, false)?;
        self.mark_read(&item);
        Some(item)
    }

    /// Marks `item` read now (its access word; see `access.rs`).
    #[inline]
    fn mark_read(&self, item: &Item) {
        self.mark_used(item, true);
    }

    /// Marks the collection whose head is `item` used now by a write done
    /// in place (its head item stays): the access time moves, "read since
    /// stored" stays as it was (Redis counts writes as use for `OBJECT
    /// IDLETIME`; memcached sees no collections).
    fn mark_written(&self, item: &Item) {
        self.mark_used(item, false);
    }

    /// The access word of an item stored now over `prev` (the item it
    /// replaces, if any): the time of the store, not read since; under an
    /// LFU policy the counter carries over from `prev` and counts this
    /// write as a use, as Redis's overwrite does.
    fn stored_word(&self, prev: Option<&Item>) -> u32 {
        if !self.policy().tracks_frequency() {
            return access::stamp(self.clock.coarse_s(), false);
        }
        match prev {
            Some(p) => self.lfu_used(p.seen(), false) & !access::FETCHED,
            None => access::lfu_stamp(self.clock.coarse_s(), access::LFU_INIT, false),
        }
    }

    /// The LFU word `word` after a use now (see `access.rs`).
    fn lfu_used(&self, word: u32, read: bool) -> u32 {
        access::lfu_used(
            word,
            self.clock.coarse_s(),
            read,
            self.lfu_tuning(),
            eviction::coin(),
        )
    }

    /// Sets `item`'s access time to now, and "read since stored" if `read`
    /// (under an LFU policy: counts the use; see `access.rs`). Writes only
    /// when the word changes: the first read, then at most once a second
    /// (LFU: once a minute, and when the counter's coin comes up).
    #[inline]
    fn mark_used(&self, item: &Item, read: bool) {
        let word = if self.policy().tracks_frequency() {
            self.lfu_used(item.seen(), read)
        } else {
            let fetched = read || item.seen() & access::FETCHED != 0;
            access::stamp(self.clock.coarse_s(), fetched)
        };
        if item.seen() != word {
            item.buf().slot_word().store(word, Ordering::Relaxed);
        }
    }

    /// [`touch`](Self::touch) that counts as a modification: the item (or
    /// the collection) gets a new CAS, so a Redis WATCH on the key sees an
    /// EXPIRE or PERSIST, as in Redis. (memcached's touch keeps the CAS.)
    pub fn expire(&self, key: &[u8], expires_at_ms: u64) -> Option<Item> {
        self.retime(key, expires_at_ms, true)
    }

    /// [`expire`](Self::expire) if `modify`, else [`touch`](Self::touch).
    pub fn retime(&self, key: &[u8], expires_at_ms: u64, modify: bool) -> Option<Item> {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut found = None;
        self.find_live(&l, &h, key, &mut found);
        let f = found?;
        let cas = if modify {
            let cas = self.new_cas();
            // A collection reports its body's CAS (see `Item::cas`).
            if let Some(body) = f.item.body() {
                match &mut *lock_body(body) {
                    Body::List(b) => b.set_cas(cas),
                    Body::Dict(d) => d.set_cas(cas),
                }
            }
            cas
        } else {
            f.item.cas()
        };
        let hdr = Header {
            flags: f.item.flags(),
            expires_at_ms,
            cas,
            marks: f.item.marks(),
        };
        let f = match self.rewrite_header(&l, f, hdr) {
            Ok(item) => return Some(item),
            Err(f) => f,
        };
        let item = f.item.clone();
        match self.put_locked(&l, &h, key, &Content::CopyOf(&item), hdr, Some(&f)) {
            // A list head keeps its body (same id): attach it.
            Ok(new) => self.attach(new).or(Some(item)),
            Err(_) => Some(item),
        }
    }

    /// Rewrites a live string item's metadata under the key's lock: `f`
    /// sees the item and returns its new [`Remark`] (None: leave it). The
    /// value is copied unchanged. Returns the item as it is afterwards
    /// (None if absent or not a string). For `md ... I` and the recache
    /// win of `mg`, which must be decided by one client only.
    pub fn remark(&self, key: &[u8], f: impl FnOnce(&Item) -> Option<Remark>) -> Option<Item> {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut found = None;
        self.find_live(&l, &h, key, &mut found);
        let found = found?;
        if found.item.kind() != Kind::String {
            return None;
        }
        let Some(r) = f(&found.item) else {
            return Some(found.item);
        };
        let hdr = Header {
            flags: found.item.flags(),
            expires_at_ms: r.expires_at_ms,
            cas: r.cas.unwrap_or_else(|| self.new_cas()),
            marks: r.marks,
        };
        let found = match self.rewrite_header(&l, found, hdr) {
            Ok(item) => return Some(item),
            Err(f) => f,
        };
        let item = found.item.clone();
        match self.put_locked(&l, &h, key, &Content::CopyOf(&item), hdr, Some(&found)) {
            Ok(new) => Some(new),
            // No memory for the copy: the item stays as it was.
            Err(_) => Some(item),
        }
    }

    /// Removes every item now. (memcached's `flush_all <delay>` is left to
    /// the caller to schedule.)
    pub fn flush_all(&self) {
        self.flush_where(|_| true);
    }

    /// Removes every key of keyspace `n` (see [`keyspace_of`]), expired
    /// ones not yet removed included: a numbered database's FLUSHDB.
    pub fn flush_keyspace(&self, n: u8) {
        if n != 0 && self.keyspace_len(n) == 0 {
            return;
        }
        self.flush_where(|key| keyspace_of(key) == n);
    }

    /// Removes every key `doomed` picks.
    fn flush_where(&self, doomed: impl Fn(&[u8]) -> bool) {
        for (i, shard) in self.shards.iter().enumerate() {
            let l = shard.lock(i);
            for bucket in 0..shard.buckets() {
                for way in 0..index::WAYS {
                    let pos = Pos { bucket, way };
                    let e = l.cell(pos).load(Ordering::Acquire);
                    if e & OCCUPIED == 0 {
                        continue;
                    }
                    if let Some(item) = self.pool.try_acquire(entry_handle(e)).and_then(Item::parse)
                    {
                        if doomed(item.key()) {
                            self.remove(&l, pos, &item);
                        }
                    }
                }
            }
        }
    }

    /// RPUSH (`front = false`) / LPUSH (`front = true`): adds `values` to
    /// the list at `key`, creating it if absent (no flags, no expiry); LPUSH
    /// of `a b c` puts `c` first, as Redis does. Returns the new length;
    /// `WrongType` if `key` holds a string. O(values) amortized: at most
    /// the end chunk is rebuilt (see the module docs).
    pub fn list_push(
        &self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
    ) -> Result<usize, StoreError> {
        self.list_push_with(key, values, front, true)
    }

    /// RPUSHX / LPUSHX: [`list_push`](Self::list_push) onto an existing
    /// list only; 0 (nothing stored) if `key` is absent.
    pub fn list_push_existing(
        &self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
    ) -> Result<usize, StoreError> {
        self.list_push_with(key, values, front, false)
    }

    /// [`list_push`](Self::list_push) if `create`, else
    /// [`list_push_existing`](Self::list_push_existing).
    pub fn list_push_with(
        &self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
        create: bool,
    ) -> Result<usize, StoreError> {
        for v in values {
            self.check_len(key, v.len())?;
        }
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut old = None;
        self.find_live(&l, &h, key, &mut old);
        let (body, meta) = match &old {
            Some(f) if f.item.kind() != Kind::List => return Err(StoreError::WrongType),
            Some(f) if values.is_empty() => return Ok(f.item.list_len()),
            None if values.is_empty() || !create => return Ok(0),
            // A small list is rewritten whole (inline while it fits).
            Some(f) if f.item.is_inline_list() => {
                return self.push_inline(&l, &h, key, f, values, front);
            }
            None if self.inline_fits(key, values) => {
                // LPUSH pushes one by one: the last value ends up first.
                let all: std::borrow::Cow<'_, [&[u8]]> = if front {
                    values.iter().rev().copied().collect()
                } else {
                    values.into()
                };
                self.put_list_locked(&l, &h, key, &all, Meta::default(), None)?;
                return Ok(all.len());
            }
            Some(f) => match f.item.body() {
                Some(b) => (
                    b.clone(),
                    Meta {
                        flags: f.item.flags(),
                        expires_at_ms: f.item.expires_at_ms(),
                    },
                ),
                None => return Err(StoreError::OutOfMemory),
            },
            None => (self.new_body(), Meta::default()),
        };
        let mut guard = lock_body(&body);
        let Body::List(b) = &mut *guard else {
            return Err(StoreError::WrongType);
        };
        if b.len() + values.len() > self.config.max_list_len {
            return Err(StoreError::ListTooLong);
        }
        let cost = b.push_cost(key, values);
        let (shape, len0) = (b.shape(), b.len());
        if !self.reserve(cost, Some(&l)) {
            return Err(StoreError::OutOfMemory);
        }
        let mut alloc = |n: usize| self.alloc_slot(&l, n);
        match b.push(key, values, front, &mut alloc) {
            Ok((added, released)) => self.charge(cost, added, released, shape, b.shape()),
            Err((added, released)) => {
                // All or nothing: take back what went in.
                let pushed = b.len() - len0;
                let more = b.discard(pushed, front);
                self.charge(cost, added, released + more, shape, b.shape());
                return Err(StoreError::OutOfMemory);
            }
        }
        let len = b.len();
        let id = b.id();
        if old.is_some() {
            // The body carries the list's CAS (see `Item::cas`): a push
            // onto a stored list leaves its head item alone.
            b.set_cas(self.new_cas());
        }
        drop(guard);
        if let Some(f) = &old {
            self.mark_written(&f.item);
            l.count_write();
        } else {
            self.publish_body(id, body);
            self.put_head(&l, &h, key, Kind::List, id, meta, None)?;
        }
        Ok(len)
    }

    /// True if a list of `values` at `key` is stored whole in one item:
    /// at most 8 KiB of elements and offsets, and within the item size
    /// limit.
    fn inline_fits(&self, key: &[u8], values: &[&[u8]]) -> bool {
        self.inline_content_fits(key, &Content::InlineList(values))
    }

    /// A push onto the inline list `f`: a new inline item with the old
    /// elements copied as one run, or, past the inline size, a chunked
    /// body with all of them. The list's length.
    fn push_inline(
        &self,
        l: &Locked<'_>,
        h: &Hashed,
        key: &[u8],
        f: &Found,
        values: &[&[u8]],
        front: bool,
    ) -> Result<usize, StoreError> {
        let n = f.item.list_len();
        if n + values.len() > self.config.max_list_len {
            return Err(StoreError::ListTooLong);
        }
        let reversed: Vec<&[u8]>;
        let (front_vals, back_vals): (&[&[u8]], &[&[u8]]) = if front {
            // LPUSH pushes one by one: the last value ends up first.
            reversed = values.iter().rev().copied().collect();
            (&reversed, &[])
        } else {
            (&[], values)
        };
        let splice = Content::InlineSplice {
            old: &f.item,
            keep: 0..n,
            front: front_vals,
            back: back_vals,
        };
        if self.inline_content_fits(key, &splice) {
            self.put_inline(l, h, key, &splice, meta_of(&f.item), Some(f))?;
        } else {
            let all: Vec<&[u8]> = front_vals
                .iter()
                .copied()
                .chain(f.item.inline_elems())
                .chain(back_vals.iter().copied())
                .collect();
            self.put_list_locked(l, h, key, &all, meta_of(&f.item), Some(f))?;
        }
        Ok(n + values.len())
    }

    /// True if `content` (an inline list) fits one item here.
    fn inline_content_fits(&self, key: &[u8], content: &Content<'_>) -> bool {
        content.value_len() <= item::INLINE_LIST_BYTES
            && item::item_len(key, content) <= self.config.max_item_size
    }

    /// Stores the inline list `content` at `key` with a new CAS.
    fn put_inline(
        &self,
        l: &Locked<'_>,
        h: &Hashed,
        key: &[u8],
        content: &Content<'_>,
        meta: Meta,
        old: Option<&Found>,
    ) -> Result<(), StoreError> {
        let hdr = Header {
            flags: meta.flags,
            expires_at_ms: meta.expires_at_ms,
            cas: self.new_cas(),
            marks: 0,
        };
        self.put_locked(l, h, key, content, hdr, old)?;
        // Counted as `put_head` counts a chunked list.
        l.count_write();
        Ok(())
    }

    /// LPOP/RPOP: removes up to `count` elements from the list at `key`
    /// and returns them in pop order, zero-copy (`None` if absent). An
    /// emptied list is removed. `WrongType` on a string.
    pub fn list_pop(
        &self,
        key: &[u8],
        count: usize,
        front: bool,
    ) -> Result<Option<Vec<granola::Buf>>, StoreError> {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut found = None;
        self.find_live(&l, &h, key, &mut found);
        let Some(f) = &found else {
            return Ok(None);
        };
        if f.item.is_inline_list() {
            // Popped elements stay slices of the old item (zero-copy); the
            // rest is written as a new, smaller item.
            let n = f.item.list_len();
            let k = count.min(n);
            let popped: Vec<granola::Buf> = if front {
                (0..k).filter_map(|i| f.item.list_get(i as i64)).collect()
            } else {
                (n - k..n)
                    .rev()
                    .filter_map(|i| f.item.list_get(i as i64))
                    .collect()
            };
            if k == n {
                self.remove(&l, f.pos, &f.item);
                l.count_write();
            } else if k > 0 {
                let rest = Content::InlineSplice {
                    old: &f.item,
                    keep: if front { k..n } else { 0..n - k },
                    front: &[],
                    back: &[],
                };
                self.put_inline(&l, &h, key, &rest, meta_of(&f.item), Some(f))?;
            }
            return Ok(Some(popped));
        }
        let Some(body) = f.item.body().cloned() else {
            return Err(StoreError::WrongType);
        };
        let mut guard = lock_body(&body);
        let Body::List(b) = &mut *guard else {
            return Err(StoreError::WrongType);
        };
        let shape = b.shape();
        let (popped, released) = b.pop(count, front);
        self.charge(0, 0, released, shape, b.shape());
        if !popped.is_empty() {
            b.set_cas(self.new_cas());
            l.count_write();
            self.mark_written(&f.item);
        }
        let len = b.len();
        // Shrunk to half the inline size: back to one item (the half keeps
        // a list at the boundary from moving back and forth).
        // The offset table alone rules out a long list before any chunk
        // is walked (this runs on every pop).
        let small = len > 0
            && 4 + 4 * len <= item::INLINE_LIST_BYTES / 2
            && b.payload_at_most(item::INLINE_LIST_BYTES / 2)
                .is_some_and(|bytes| 4 + 4 * len + bytes <= item::INLINE_LIST_BYTES / 2);
        let elems: Vec<granola::Buf> = if small {
            let mut v = Vec::with_capacity(len);
            b.visit(0, len, &mut |e| {
                v.extend(e.buf());
                true
            });
            v
        } else {
            Vec::new()
        };
        drop(guard);
        if len == 0 {
            self.remove(&l, f.pos, &f.item);
        } else if small && elems.len() == len {
            let slices: Vec<&[u8]> = elems.iter().map(|e| e.as_slice()).collect();
            // If the item cannot be written the list simply stays chunked.
            let _ = self.put_inline(
                &l,
                &h,
                key,
                &Content::InlineList(&slices),
                meta_of(&f.item),
                Some(f),
            );
        }
        Ok(Some(popped))
    }

    /// Replaces whatever `key` holds with a list of `values` (an empty list
    /// is stored as such).
    pub fn put_list(&self, key: &[u8], values: &[&[u8]], meta: Meta) -> Result<(), StoreError> {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut old = None;
        self.find_live(&l, &h, key, &mut old);
        self.put_list_locked(&l, &h, key, values, meta, old.as_ref())?;
        l.count_write();
        Ok(())
    }

    /// Builds a new body holding `values` and stores its head at `key`.
    fn put_list_locked(
        &self,
        l: &Locked<'_>,
        h: &Hashed,
        key: &[u8],
        values: &[&[u8]],
        meta: Meta,
        old: Option<&Found>,
    ) -> Result<(), StoreError> {
        for v in values {
            self.check_len(key, v.len())?;
        }
        if values.len() > self.config.max_list_len {
            return Err(StoreError::ListTooLong);
        }
        if self.inline_fits(key, values) {
            return self.put_inline(l, h, key, &Content::InlineList(values), meta, old);
        }
        let body = self.new_body();
        let mut guard = lock_body(&body);
        let Body::List(b) = &mut *guard else {
            unreachable!("a new body is a list");
        };
        let cost = list::chunks_cost(key, values);
        if !self.reserve(cost, Some(l)) {
            return Err(StoreError::OutOfMemory);
        }
        let mut alloc = |n: usize| self.alloc_slot(l, n);
        let Some((added, released)) = b.replace(key, values, &mut alloc) else {
            self.accounted.fetch_sub(cost, Ordering::Relaxed);
            return Err(StoreError::OutOfMemory);
        };
        self.charge(cost, added, released, (0, 0), b.shape());
        let id = b.id();
        drop(guard);
        self.publish_body(id, body);
        if let Err(e) = self.put_head(l, h, key, Kind::List, id, meta, old) {
            self.drop_body(id);
            return Err(e);
        }
        Ok(())
    }

    /// A new, empty, unpublished list body.
    fn new_body(&self) -> SharedBody {
        let id = self.next_list_id.fetch_add(1, Ordering::Relaxed);
        Arc::new(Mutex::new(Body::List(ListBody::new(self.pool.clone(), id))))
    }

    /// Makes body `id` findable (before its head goes into the index).
    fn publish_body(&self, id: u64, body: SharedBody) {
        self.bodies[id as usize % BODY_STRIPES]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, body);
    }

    /// Takes body `id` out of the table and uncharges its chunks (they go
    /// back to the pool when the last reply holding one drops it).
    fn drop_body(&self, id: u64) {
        let body = self.bodies[id as usize % BODY_STRIPES]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some(body) = body {
            let bytes = match &*lock_body(&body) {
                Body::List(b) => {
                    self.list_chunks
                        .fetch_sub(b.chunk_count(), Ordering::Relaxed);
                    self.list_elems.fetch_sub(b.len(), Ordering::Relaxed);
                    b.slot_bytes()
                }
                Body::Dict(d) => {
                    let c = d.bytes();
                    self.dict_bytes.fetch_sub(c.heap(), Ordering::Relaxed);
                    c.bytes
                }
            };
            self.item_bytes.fetch_sub(bytes, Ordering::Relaxed);
            self.accounted.fetch_sub(bytes, Ordering::Relaxed);
        }
    }

    /// Settles a list write's accounting: `reserved` bytes were reserved
    /// up front; the list grew by `added` bytes and `released` left it;
    /// its (chunks, elements) went from `before` to `after`.
    fn charge(
        &self,
        reserved: usize,
        added: usize,
        released: usize,
        (chunks_before, len_before): (usize, usize),
        (chunks_after, len_after): (usize, usize),
    ) {
        adjust(&self.list_chunks, chunks_after, chunks_before);
        adjust(&self.list_elems, len_after, len_before);
        adjust(&self.item_bytes, added, released);
        adjust(&self.accounted, added, reserved + released);
    }

    /// A slot for a list chunk: like an item's, evicting segments first
    /// when the pool has none of that size.
    fn alloc_slot(&self, l: &Locked<'_>, n: usize) -> Option<granola::BufMut> {
        self.with_room(l, Pool::slot_size_for(n), || self.pool.alloc(n))
    }

    /// Stores a new head item for the collection `id` of `kind` at `key`
    /// (new CAS).
    #[allow(clippy::too_many_arguments)]
    fn put_head(
        &self,
        l: &Locked<'_>,
        h: &Hashed,
        key: &[u8],
        kind: Kind,
        id: u64,
        meta: Meta,
        old: Option<&Found>,
    ) -> Result<(), StoreError> {
        let hdr = Header {
            flags: meta.flags,
            expires_at_ms: meta.expires_at_ms,
            cas: self.new_cas(),
            marks: 0,
        };
        self.put_locked(l, h, key, &Content::Head(kind, id), hdr, old)?;
        l.count_write();
        Ok(())
    }

    /// True if `item` is a list whose body a writer holds right now:
    /// eviction leaves it alone (it is being modified under its key's
    /// lock, possibly by the very writer that is evicting).
    fn busy(&self, item: &Item) -> bool {
        let Some(id) = item.body_id() else {
            return false;
        };
        match self.body_of(id) {
            Some(b) => b.try_lock().is_err(),
            None => false,
        }
    }

    /// Stored items.
    pub fn len(&self) -> usize {
        self.strings.load(Ordering::Relaxed) + self.lists.load(Ordering::Relaxed)
    }

    /// Keys in keyspace `n` (see [`keyspace_of`]), expired ones not yet
    /// removed included, as Redis's `DBSIZE` counts them. O(1) for `n > 0`;
    /// O(255) for keyspace 0.
    pub fn keyspace_len(&self, n: u8) -> usize {
        self.keyspaces.keys(n, self.len())
    }

    /// Keys with an expiry in keyspace `n` (INFO keyspace's `expires`).
    pub fn keyspace_expiring(&self, n: u8) -> usize {
        self.keyspaces.expiring(n)
    }

    /// Keyspace `n`'s mean remaining TTL in milliseconds, an estimate
    /// active expiry refreshes once per round of the index (INFO
    /// keyspace's `avg_ttl`; 0 before the first round).
    pub fn keyspace_avg_ttl_ms(&self, n: u8) -> u64 {
        self.keyspaces.avg_ttl_ms(n)
    }

    /// True if nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> StoreStats {
        let (hits, misses) = self.stripes.iter().fold((0, 0), |(h, m), s| {
            (
                h + s.hits.load(Ordering::Relaxed),
                m + s.misses.load(Ordering::Relaxed),
            )
        });
        let strings = self.strings.load(Ordering::Relaxed);
        let lists = self.lists.load(Ordering::Relaxed);
        let pool = self.pool.stats();
        let item_bytes = self.item_bytes.load(Ordering::Relaxed);
        StoreStats {
            items: strings + lists,
            strings,
            lists,
            list_chunks: self.list_chunks.load(Ordering::Relaxed),
            list_span_bytes: list::SPAN_BYTES * self.list_elems.load(Ordering::Relaxed),
            dict_bytes: self.dict_bytes.load(Ordering::Relaxed),
            bytes: self.accounted.load(Ordering::Relaxed),
            item_bytes,
            index_bytes: self.index_bytes.load(Ordering::Relaxed),
            limit: self.config.memory_limit,
            hits,
            misses,
            evictions: self.evictions.load(Ordering::Relaxed),
            expired: self.expired.load(Ordering::Relaxed),
            sets: self.shards.iter().map(Shard::writes).sum(),
            segment_evictions: self.segment_evictions.load(Ordering::Relaxed),
            segment_rescues: self.segment_rescues.load(Ordering::Relaxed),
            segment_chunk_moves: self.segment_chunk_moves.load(Ordering::Relaxed),
            pool_bytes: pool.resident_bytes,
            pool_capacity: pool.capacity,
            pinned_bytes: pool.live_bytes.saturating_sub(item_bytes),
        }
    }

    // ---- writer internals (shard lock held) ----

    fn check_len(&self, key: &[u8], value_len: usize) -> Result<(), StoreError> {
        if key.len() > u16::MAX as usize
            || value_len > u32::MAX as usize
            || HEADER_LEN + key.len() + value_len > self.config.max_item_size
        {
            return Err(StoreError::TooLarge);
        }
        Ok(())
    }

    /// Puts the live item for `key` in `out` (`None` if absent); an
    /// expired one is removed and reported absent.
    #[inline(always)]
    fn find_live(&self, l: &Locked<'_>, h: &Hashed, key: &[u8], out: &mut Option<Found>) {
        // The found entry is built where the caller keeps it. Returned, it
        // went through a stack temporary first, and that copy's 8-byte loads
        // of the 4-byte stores that had just built it could not be forwarded
        // and stalled: 8 ns of an in-process INCR's 71 and 15 of a SADD's
        // 65 (bench/store-ops).
        *out = l.find(&self.pool, h, key);
        if let Some(f) = out {
            let plain = f.item.kind() == Kind::String && f.item.expires_at_ms() == 0;
            if !plain && !self.settle_found(l, f, key) {
                *out = None;
            }
        }
    }

    /// [`find_live`](Self::find_live) past a string that never expires:
    /// false for an expired item (removed now), and a collection's body
    /// attached.
    #[inline(never)]
    fn settle_found(&self, l: &Locked<'_>, f: &mut Found, key: &[u8]) -> bool {
        if f.item.expires_at_ms() != 0 && f.item.expired(self.clock.now_ms()) {
            self.remove(l, f.pos, &f.item);
            self.removed(key, Removal::Expired);
            return false;
        }
        if let Some(id) = f.item.body_id() {
            // Under the key's lock the body is in the table.
            let Some(body) = self.body_of(id) else {
                return false;
            };
            f.item.set_body(body);
        }
        true
    }

    /// Clears the entry at `pos` (holding `item`) and releases the index's
    /// reference.
    fn remove(&self, l: &Locked<'_>, pos: Pos, item: &Item) {
        let e = l.cell(pos).swap(0, Ordering::AcqRel);
        debug_assert!(e & OCCUPIED != 0);
        self.keyspaces.removed(item.key(), e & EXPIRES != 0);
        self.forget(entry_handle(e), item);
    }

    /// Counts a key the store removed on its own and tells the watcher.
    fn removed(&self, key: &[u8], why: Removal) {
        match why {
            Removal::Expired => self.expired.fetch_add(1, Ordering::Relaxed),
            Removal::Evicted => self.evictions.fetch_add(1, Ordering::Relaxed),
        };
        if let Some(w) = self.watcher.get() {
            w.removed(key, why);
        }
    }

    /// Has `watcher` told of every key the store removes on its own from
    /// now on (the first watcher stays).
    pub fn watch_removals(&self, watcher: Arc<dyn RemovalWatcher>) {
        let _ = self.watcher.set(watcher);
    }

    /// Accounting and release for an entry that left the index.
    fn forget(&self, handle: u32, item: &Item) {
        let size = self.release_entry(handle, item, None);
        self.item_bytes.fetch_sub(size, Ordering::Relaxed);
        self.accounted.fetch_sub(size, Ordering::Relaxed);
        match item.kind() {
            Kind::String => self.strings.fetch_sub(1, Ordering::Relaxed),
            _ => self.lists.fetch_sub(1, Ordering::Relaxed),
        };
    }

    /// Releases the index's reference to `item` (and its body, unless it
    /// is `keep`); its slot size, for the caller's accounting.
    fn release_entry(&self, handle: u32, item: &Item, keep: Option<u64>) -> usize {
        if let Some(id) = item.body_id().filter(|&id| Some(id) != keep) {
            self.drop_body(id);
        }
        let released = self.pool.release_handle(handle);
        debug_assert!(released, "the index owned a handle");
        self.pool.slot_size(item.buf())
    }

    /// Stores the string `key` = `parts` over `old` (the key's live item,
    /// if any): in `old`'s own slot when it can be written over, else as a
    /// new item (`put_locked`). `old` stays where the caller keeps it:
    /// afterwards the rewritten item or the replaced one, for the caller to
    /// drop.
    #[inline(always)]
    fn put_string(
        &self,
        l: &Locked<'_>,
        h: &Hashed,
        key: &[u8],
        parts: &[&[u8]],
        hdr: Header,
        old: &mut Option<Found>,
    ) -> Result<(), StoreError> {
        // `old` is edited where it lies (see `Pool::rewrite_in_place`).
        if let Some(f) = old {
            if self.overwrite_in_place(l, f, key, parts, &hdr) {
                return Ok(());
            }
        }
        self.put_locked(l, h, key, &Content::Str(parts), hdr, old.as_ref())
            .map(drop)
    }

    /// Writes header `hdr` over `f`'s item's own, in its slot, when
    /// nothing else holds the item (see [`Item::rewrite_header`]): a new
    /// expiry, CAS or marks without copying the item. The entry, the access
    /// word and a collection's body stay. `Err(f)` unchanged otherwise.
    fn rewrite_header(&self, l: &Locked<'_>, f: Found, hdr: Header) -> Result<Item, Found> {
        let Found { pos, entry, item } = f;
        let item =
            item.rewrite_header(&self.pool, hdr)
                .map_err(|item| Found { pos, entry, item })?;
        self.note_expiry(l, pos, entry, hdr.expires_at_ms, item.key());
        Ok(item)
    }

    /// Keeps the entry's [`EXPIRES`] bit with its item's expiry after the
    /// item was rewritten in its slot (the entry itself stays).
    #[inline(always)]
    fn note_expiry(&self, l: &Locked<'_>, pos: Pos, entry: u64, expires_at_ms: u64, key: &[u8]) {
        if (entry & EXPIRES != 0) != (expires_at_ms != 0) {
            self.flip_expiry(l, pos, expires_at_ms != 0, key);
        }
    }

    #[cold]
    fn flip_expiry(&self, l: &Locked<'_>, pos: Pos, expires: bool, key: &[u8]) {
        self.keyspaces.expiry_changed(key, expires);
        if expires {
            self.ever_expiring.store(true, Ordering::Relaxed);
            l.cell(pos).fetch_or(EXPIRES, Ordering::Release);
        } else {
            l.cell(pos).fetch_and(!EXPIRES, Ordering::Release);
        }
    }

    /// Writes the string `parts` over `f`'s item (the key's) in its own
    /// slot, as a fresh store (access word and CLOCK bit as `put_locked`
    /// sets them), when `f`'s item is a string that nothing else holds and
    /// the new one needs a slot of the same size: no allocation, no
    /// release, no index change and no change to the counters; `f` then
    /// describes the new item. False, and nothing changed, otherwise (then
    /// `put_locked`).
    #[inline(always)]
    fn overwrite_in_place(
        &self,
        l: &Locked<'_>,
        f: &mut Found,
        key: &[u8],
        parts: &[&[u8]],
        hdr: &Header,
    ) -> bool {
        let word = self.stored_word(Some(&f.item));
        if !f.item.rewrite_str(&self.pool, parts, hdr, word) {
            return false;
        }
        if f.entry & REF == 0 {
            l.cell(f.pos).fetch_or(REF, Ordering::Relaxed);
        }
        self.note_expiry(l, f.pos, f.entry, hdr.expires_at_ms, key);
        true
    }

    /// Builds the item and swaps it into the index, evicting as needed.
    /// `old` is what `find_live` returned before (it may have been evicted
    /// since: install looks again).
    fn put_locked(
        &self,
        l: &Locked<'_>,
        h: &Hashed,
        key: &[u8],
        content: &Content<'_>,
        hdr: Header,
        old: Option<&Found>,
    ) -> Result<Item, StoreError> {
        self.check_len(key, content.value_len())?;
        let slot = Pool::slot_size_for(item::item_len(key, content));
        if !self.reserve(slot, Some(l)) {
            return Err(StoreError::OutOfMemory);
        }
        // A larger class's slot if its own had none (`build` reserved the
        // difference).
        let Some((new, slot)) = self.build(l, key, content, hdr, slot) else {
            self.accounted.fetch_sub(slot, Ordering::Relaxed);
            return Err(StoreError::OutOfMemory);
        };
        debug_assert_eq!(self.pool.slot_size(new.buf()), slot);
        // Where it goes: the old entry if still there, else wherever `key`
        // is now, else a free entry (growing the shard if needed). Our own
        // evictions above may have removed the old entry.
        // The entry replaced, if any: `old`'s item (the caller holds it, so
        // no reference is taken here) or one found now.
        let (mut found, mut replaces_old) = (None, false);
        let (pos, tag) = loop {
            if let Some(f) = old {
                if index::same(l.cell(f.pos).load(Ordering::Acquire), f.entry) {
                    replaces_old = true;
                    break (f.pos, index::entry_tag(f.entry));
                }
            }
            if let Some(f) = l.find(&self.pool, h, key) {
                let at = (f.pos, index::entry_tag(f.entry));
                found = Some(f.item);
                break at;
            }
            if let Some((pos, tag)) = l.free_slot(h) {
                break (pos, tag);
            }
            if let Some((pos, tag)) = l.displace(&self.pool, h, |k| self.hash(k)) {
                break (pos, tag);
            }
            let grown = l
                .growth_bytes()
                .filter(|&g| self.reserve(g, Some(l)))
                .inspect(|&g| {
                    l.grow();
                    self.index_bytes.fetch_add(g, Ordering::Relaxed);
                });
            if grown.is_none() {
                self.accounted.fetch_sub(slot, Ordering::Relaxed);
                return Err(StoreError::OutOfMemory);
            }
        };
        let prev = found
            .as_ref()
            .or(old.filter(|_| replaces_old).map(|f| &f.item));
        // Readers see the access word once the entry is published: a
        // rewrite of the same value (marks, expiry) keeps it, anything else
        // is a fresh store.
        let word = match content {
            Content::CopyOf(old) => old.buf().slot_word().load(Ordering::Relaxed),
            _ => self.stored_word(prev),
        };
        new.buf().slot_word().store(word, Ordering::Relaxed);
        let new = new.seen_as(word);
        let Ok(handle) = self.pool.into_handle(new.buf().clone()) else {
            unreachable!("a fresh slot has no handle yet");
        };
        // New items start referenced: the CLOCK hand gives them one pass of
        // grace, so a key written a moment ago is not the next victim just
        // because the hand happens to be next to its bucket.
        let expires = if new.expires_at_ms() != 0 {
            if !self.ever_expiring.load(Ordering::Relaxed) {
                self.ever_expiring.store(true, Ordering::Relaxed);
            }
            EXPIRES
        } else {
            0
        };
        let e = l
            .cell(pos)
            .swap(make_entry(handle, tag) | expires | REF, Ordering::AcqRel);
        let count = |kind: Kind| match kind {
            Kind::String => &self.strings,
            _ => &self.lists,
        };
        match prev {
            // An overwrite settles the counters by their net change (most
            // often none: same kind, same slot size).
            Some(prev) => {
                debug_assert!(e & OCCUPIED != 0);
                let size = self.release_entry(entry_handle(e), prev, new.body_id());
                adjust(&self.item_bytes, slot, size);
                adjust(&self.accounted, 0, size);
                if prev.kind().is_collection() != new.kind().is_collection() {
                    count(new.kind()).fetch_add(1, Ordering::Relaxed);
                    count(prev.kind()).fetch_sub(1, Ordering::Relaxed);
                }
                if (e & EXPIRES != 0) != (expires != 0) {
                    self.keyspaces.expiry_changed(key, expires != 0);
                }
            }
            None => {
                self.item_bytes.fetch_add(slot, Ordering::Relaxed);
                count(new.kind()).fetch_add(1, Ordering::Relaxed);
                self.keyspaces.added(key, expires != 0);
            }
        }
        Ok(new)
    }

    /// Allocates and writes the item, whose slot (`slot` bytes) is
    /// reserved; returns it with the size of the slot it got. When the pool has no slot of the item's size and no free
    /// segment, first takes a free slot of a larger class, up to four times
    /// the size, reserving the difference: with more size classes in use
    /// than the pool has segments (a small limit, values of many sizes),
    /// draining a segment for each such write would evict up to 2 MiB of
    /// other items, only for the drained class to need a segment again at
    /// once — the store emptied itself that way. Only then drains the
    /// coldest segment (evicting its items; see `evict_segment`) and
    /// retries, up to [`MAX_SEGMENT_EVICTIONS`] segments; then a little
    /// CLOCK sweeping.
    fn build(
        &self,
        l: &Locked<'_>,
        key: &[u8],
        content: &Content<'_>,
        hdr: Header,
        slot: usize,
    ) -> Option<(Item, usize)> {
        if let Some(item) = item::build(&self.pool, key, content, hdr) {
            return Some((item, slot));
        }
        let mut larger = slot;
        while larger < 4 * slot && larger < granola::MAX_SLOT_SIZE {
            larger = Pool::slot_size_for(larger + 1);
            // Only a free slot: the pool has no free segment.
            if let Some(item) = item::build_in(&self.pool, key, content, hdr, larger) {
                if self.reserve(larger - slot, Some(l)) {
                    return Some((item, larger));
                }
                break;
            }
        }
        self.with_room(l, slot, || item::build(&self.pool, key, content, hdr))
            .map(|item| (item, slot))
    }

    /// Runs the pool allocation `alloc` until it succeeds: after each
    /// failure empties a segment, up to [`MAX_SEGMENT_EVICTIONS`], then
    /// sweeps the CLOCK hand a little. Every policy first compacts: it
    /// empties the sparsest segment whose items all fit in the free slots
    /// of their class, moving them (`compact_segment`). Only when no
    /// segment fits, or after half the rounds, do the `allkeys-` policies
    /// drain the coldest segment, evicting what was not used
    /// (`evict_segment`). A pool runs out of segments while the store is
    /// under its limit when its free slots are scattered over the classes
    /// (deletes, expiries, the sweep's evictions, sizes that drift); a
    /// drain then evicted items the limit did not ask to evict (an
    /// `allkeys-lru` store of half-deleted 1000-byte values first evicted
    /// at 0.76 of its limit for new 200-byte values), where a compaction
    /// only gathers the free slots into a segment.
    ///
    /// `size` is the slot size `alloc` needs: above
    /// [`granola::MAX_SLOT_SIZE`] a large object's pages, which in the
    /// AF_XDP datapath's pool need a run of segments that a compaction
    /// empties together (`compact_run`).
    fn with_room<T>(
        &self,
        l: &Locked<'_>,
        size: usize,
        mut alloc: impl FnMut() -> Option<T>,
    ) -> Option<T> {
        let evicts_all = self.policy().may_evict(false);
        let run = if size > granola::MAX_SLOT_SIZE {
            size.div_ceil(granola::SEGMENT_SIZE)
        } else {
            0
        };
        // A run first, then single segments: those may join free ones.
        let compact_some = || run > 0 && self.compact_run(run, l) || self.compact_segment(l);
        for round in 0..MAX_SEGMENT_EVICTIONS + 16 {
            if let Some(t) = alloc() {
                return Some(t);
            }
            if round >= MAX_SEGMENT_EVICTIONS {
                self.sweep_step(Some(l));
            } else if !evicts_all {
                compact_some();
            } else if round >= MAX_SEGMENT_EVICTIONS / 2 || !compact_some() {
                // Compactions that move without freeing a segment (busy
                // shards, writers taking the free slots) must not make an
                // evicting store refuse the write.
                self.evict_segment(l);
            }
        }
        None
    }

    /// Drains the pool's coldest segment: moves every string or collection
    /// head whose entry is referenced (read, or written, since the CLOCK
    /// hand last passed it; see `worth_rescuing`) to a free slot of its
    /// class in another segment while there is one, and evicts the rest
    /// (see `empty_segment`). True if it evicted or moved something or a
    /// segment came free.
    fn evict_segment(&self, held: &Locked<'_>) -> bool {
        match self.pool.coldest_segment() {
            Some(seg) => self.empty_segment(seg, held, Emptying::Drain).progress,
            None => false,
        }
    }

    /// Empties a segment without evicting: takes the segment with the
    /// fewest items among those whose class has a free slot elsewhere for
    /// each of them (`Pool::movable_segments`) and moves them there;
    /// expired items go, and an item the policy may evict goes if its move
    /// fails. Eviction stays the CLOCK sweep's job, which keeps the store
    /// at its limit. Without it, a store whose value sizes drift kept its
    /// segments with the classes that had them, each held by a few items
    /// that may not go, and refused writes of a new size long before the
    /// limit (`noeviction`: at 0.64 of it, with one item in ten kept;
    /// `volatile-lru`, with nine in ten of its items evictable, once the
    /// pool's spare segments were full), and the `allkeys-` policies,
    /// which drained instead, evicted long before it (`with_room`;
    /// `docs/memory.md`).
    ///
    /// A list's chunk or a hash's, set's or sorted set's pooled element
    /// moves too, its collection pointed at the copy ([`Body::relocate`]).
    /// A segment holding a slot that cannot move (a stream's entry, an
    /// open list chunk whose list is busy, a slot only a reply holds) is
    /// passed over (`holds_only_movable`): draining it would leave it out
    /// of use for as long as that slot lives. A move can also fail (the
    /// item's shard is busy, or a writer took the free slot first); the
    /// segment then stays draining with what did not move. Such a segment
    /// is remembered and, when no other segment fits, drained again, so it
    /// does not stay out of use for as long as its last items live.
    fn compact_segment(&self, held: &Locked<'_>) -> bool {
        let fresh = self
            .pool
            .movable_segments()
            .into_iter()
            .take(COMPACTION_CANDIDATES)
            .find(|&seg| self.holds_only_movable(seg));
        let seg = match fresh {
            Some(seg) => seg,
            None => {
                let mut stranded = self.stranded.lock().unwrap_or_else(|e| e.into_inner());
                // One that emptied (and maybe went to another class) since
                // is not draining any more: forget it.
                stranded.retain(|&s| self.pool.is_draining(s));
                match stranded.pop() {
                    Some(seg) => seg,
                    None => return false,
                }
            }
        };
        self.compact(seg, held)
    }

    /// Empties, for a large object of `run` segments that found no free
    /// run, the window of `run` consecutive segments with the fewest items
    /// among those whose items all fit in free slots of their classes
    /// outside it (`Pool::movable_runs`) and whose every slot can move
    /// (`holds_only_movable`). Compacting single segments freed them where
    /// they happened to be, so a store under its limit evicted for a large
    /// object (a first eviction at 0.75 of the limit for 3 MiB values in
    /// `store_eviction::an_evicting_store_compacts_before_it_evicts`).
    /// False if no window fits. Only the pool of the AF_XDP datapath (a
    /// pool of a group) places large objects in small-class segments; any
    /// other lists no window, and a single compacted segment makes room.
    fn compact_run(&self, run: usize, held: &Locked<'_>) -> bool {
        let window = self
            .pool
            .movable_runs(run, COMPACTION_CANDIDATES)
            .into_iter()
            .find(|segs| segs.iter().all(|&seg| self.holds_only_movable(seg)));
        let mut progress = false;
        for seg in window.unwrap_or_default() {
            progress |= self.compact(seg, held);
        }
        progress
    }

    /// Empties segment `seg` by moving its items (`Emptying::Compact`); a
    /// segment left draining with items that did not move is remembered
    /// for `compact_segment` to resume. True if something moved or went.
    fn compact(&self, seg: u32, held: &Locked<'_>) -> bool {
        let drained = self.empty_segment(seg, held, Emptying::Compact);
        if drained.left {
            let mut stranded = self.stranded.lock().unwrap_or_else(|e| e.into_inner());
            if !stranded.contains(&seg) {
                stranded.push(seg);
            }
        }
        drained.progress
    }

    /// True if every live slot of segment `seg` can move: each is owned by
    /// a handle (lists' open end chunks there are sealed first,
    /// `seal_open_chunks`; not a slot only a reply in flight holds), and
    /// each is an item (a string, or a collection's head), or a list's
    /// chunk or a hash's, set's or sorted set's pooled element
    /// ([`Body::relocate`]), not a stream's entry. A segment with a slot
    /// that cannot move would stay draining, serving no allocation, for as
    /// long as that slot lives. (A body that is busy now counts as
    /// movable: its writer is done before long, and a slot that does not
    /// move leaves the segment for a later compaction.)
    fn holds_only_movable(&self, seg: u32) -> bool {
        let mut handles = self.pool.segment_handles(seg);
        if handles.len() < self.pool.segment_live(seg) {
            if self.seal_open_chunks(seg) {
                handles = self.pool.segment_handles(seg);
            }
            if handles.len() < self.pool.segment_live(seg) {
                return false;
            }
        }
        handles.into_iter().all(|handle| {
            let Some(slot) = self.pool.try_acquire(handle) else {
                return true;
            };
            match list::chunk_owner(&slot) {
                None => true,
                Some((id, _)) => self
                    .body_of(id)
                    .is_none_or(|b| b.try_lock().map_or(true, |b| b.relocatable())),
            }
        })
    }

    /// Empties segment `seg`: each string or collection head in it that
    /// is kept moves to a free slot of its class in another segment while
    /// there is one; the others, and expired items, are removed (skipping
    /// shards whose lock is busy, never waiting). A compaction keeps every
    /// item that has not expired (its segment was chosen because they fit
    /// elsewhere); a drain only those the policy may not evict or that are
    /// worth keeping (`worth_rescuing`). What the policy may evict also
    /// goes if its move fails. A collection's chunk or pooled
    /// element is judged by its collection's head: it moves if the
    /// collection is kept, else the collection goes. The segment returns
    /// to the shared allocator once its last slot is freed — at once, or
    /// when the last reply still sending one of its items drops it.
    fn empty_segment(&self, seg: u32, held: &Locked<'_>, how: Emptying) -> Drained {
        self.segment_evictions.fetch_add(1, Ordering::Relaxed);
        let policy = self.policy();
        let now = self.clock.now_ms();
        let released = self.pool.stats().segments_released;
        let mut drained = Drained::default();
        for handle in self.pool.drain_segment(seg) {
            let Some(slot) = self.pool.try_acquire(handle) else {
                continue;
            };
            // A list chunk: evict the list that owns it, if still stored.
            let (key, chunk_of): (Vec<u8>, Option<u64>) = match list::chunk_owner(&slot) {
                Some((id, key)) => (key.to_vec(), Some(id)),
                None => match Item::parse(slot.clone()) {
                    Some(item) => (item.key().to_vec(), None),
                    None => continue,
                },
            };
            let h = self.hash(&key);
            let own;
            let l: &Locked<'_> = if held.index == h.shard {
                held
            } else {
                match self.shards[h.shard].try_lock(h.shard) {
                    Some(g) => {
                        own = g;
                        &own
                    }
                    None => {
                        drained.left = true;
                        continue;
                    }
                }
            };
            let Some(f) = l.find(&self.pool, &h, &key) else {
                continue;
            };
            let owner = match chunk_of {
                Some(id) => f.item.body_id() == Some(id),
                None => entry_handle(f.entry) == handle,
            };
            if !owner {
                continue;
            }
            let expired = f.item.expired(now);
            let evictable = expired || policy.may_evict(f.entry & EXPIRES != 0);
            let keep =
                !expired && (how == Emptying::Compact || !evictable || self.worth_rescuing(&f));
            if self.busy(&f.item) {
                drained.left = true;
            } else if keep && self.relocate(l, &f, &slot, handle, chunk_of.is_some()) {
                self.segment_rescues.fetch_add(1, Ordering::Relaxed);
                drained.progress = true;
            } else if evictable {
                self.remove_found(l, &f, &key, expired);
                drained.progress = true;
            } else {
                drained.left = true;
            }
        }
        drained.progress |= self.pool.stats().segments_released != released;
        drained
    }

    /// True if a segment drain should move the item of entry `f` rather
    /// than evict it: it was used since the CLOCK hand last passed, or,
    /// under an LFU policy, its counter shows more than the use that
    /// stored it.
    fn worth_rescuing(&self, f: &Found) -> bool {
        f.entry & REF != 0
            || self
                .frequency(&f.item)
                .is_some_and(|n| n > access::LFU_INIT)
    }

    /// Asks the lists whose open end chunks lie in segment `seg` (each open
    /// chunk's slot word names its list: `ListBody::open_chunk`) to seal
    /// them, so they get handles and can move, as a read of the list
    /// would; a list whose body is busy is left. True if one was sealed.
    fn seal_open_chunks(&self, seg: u32) -> bool {
        let mut sealed = false;
        for id in self.pool.segment_writers(seg) {
            if let Some(body) = self.body_of(u64::from(id)) {
                if let Ok(mut b) = body.try_lock() {
                    if let Body::List(list) = &mut *b {
                        sealed |= list.seal_open();
                    }
                }
            }
        }
        sealed
    }

    /// Moves what `slot` (pool handle `handle`) holds to a free slot of its
    /// size elsewhere: the item of entry `f` ([`rescue`](Self::rescue)),
    /// or, if `in_body`, a chunk or pooled element of `f`'s collection
    /// ([`Body::relocate`]). False if it did not move (no free slot, or
    /// the body is busy).
    fn relocate(
        &self,
        l: &Locked<'_>,
        f: &Found,
        slot: &granola::Buf,
        handle: u32,
        in_body: bool,
    ) -> bool {
        if !in_body {
            return self.rescue(l, f, slot);
        }
        let body = f.item.body_id().and_then(|id| self.body_of(id));
        let moved = body.and_then(|b| b.try_lock().ok().and_then(|mut b| b.relocate(handle)));
        if moved == Some(true) {
            self.segment_chunk_moves.fetch_add(1, Ordering::Relaxed);
        }
        moved == Some(true)
    }

    /// Moves the item of entry `f` (whose whole slot is `slot`) to a free
    /// slot of the same class, if the pool has one outside draining
    /// segments (it never takes a segment for this: there is none free when
    /// a drain runs). The copy is byte for byte (same header, CAS and
    /// body id), so readers see the same item; replies holding the old slot
    /// keep it until they drop it. False if there was no free slot.
    fn rescue(&self, l: &Locked<'_>, f: &Found, slot: &granola::Buf) -> bool {
        let word = slot.slot_word().load(Ordering::Relaxed);
        let Some((_, handle)) = copy_to_free_slot(&self.pool, slot, slot.len(), word) else {
            return false;
        };
        // Under the shard lock only readers touch the entry, and they only
        // set REF, which is already set.
        let e = l.cell(f.pos).swap(
            make_entry(handle, index::entry_tag(f.entry)) | (f.entry & EXPIRES) | REF,
            Ordering::AcqRel,
        );
        debug_assert!(index::same(e, f.entry));
        let released = self.pool.release_handle(entry_handle(e));
        debug_assert!(released, "the index owned a handle");
        true
    }

    /// Accounts `bytes` against the limit, running the CLOCK hand until
    /// they fit. False if two full turns of the hand free nothing, or,
    /// when the policy can evict nothing (`noeviction`, or a `volatile-`
    /// policy while no key has an expiry), after [`EXPIRED_SWEEPS`] steps
    /// of the hand: then it removes only expired items, and a full store
    /// must refuse a write at once, not after a walk over every key.
    fn reserve(&self, bytes: usize, held: Option<&Locked<'_>>) -> bool {
        if bytes > self.config.memory_limit {
            return false;
        }
        if bytes == 0 && self.accounted.load(Ordering::Relaxed) <= self.config.memory_limit {
            // Nothing to add and nothing to evict: no read-modify-write.
            return true;
        }
        let policy = self.policy();
        let evict = policy.evicts() && (!policy.volatile_only() || self.keyspaces.any_expiring());
        let mut steps = 0usize;
        let mut idle = 0usize;
        loop {
            let cur = self.accounted.load(Ordering::Relaxed);
            if cur + bytes <= self.config.memory_limit {
                if self
                    .accounted
                    .compare_exchange_weak(cur, cur + bytes, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    return true;
                }
                continue;
            }
            steps += 1;
            if !evict && steps > EXPIRED_SWEEPS {
                return false;
            }
            if self.sweep_step(held) {
                idle = 0;
            } else {
                idle += 1;
                // Two full turns of the hand (the first clears reference
                // bits) without freeing anything: give up.
                let buckets = self.index_bytes.load(Ordering::Relaxed) / index::BUCKET_BYTES;
                if idle > 2 * (buckets / SWEEP_BUCKETS + self.shards.len()) + 4 {
                    return false;
                }
            }
        }
    }

    /// Advances the CLOCK hand over a few buckets of one shard; true if it
    /// freed something. Skips shards whose lock is busy (never waits).
    /// It removes the expired items it passes, and evicts what the policy
    /// says (`eviction.rs`): under LRU every item not referenced since the
    /// hand last passed; under `-random` one item of the window; under
    /// LFU and TTL the best of the pool of candidates once the window's
    /// items were offered to it (`evict_candidate`); under `noeviction`
    /// nothing.
    fn sweep_step(&self, held: Option<&Locked<'_>>) -> bool {
        let policy = self.policy();
        let mut hand = self.hand.lock().unwrap_or_else(|e| e.into_inner());
        let i = hand.shard % self.shards.len();
        let own;
        let l: &Locked<'_> = match held {
            Some(l) if l.index == i => l,
            _ => match self.shards[i].try_lock(i) {
                Some(g) => {
                    own = g;
                    &own
                }
                None => {
                    hand.shard = (i + 1) % self.shards.len();
                    hand.bucket = 0;
                    return false;
                }
            },
        };
        let n = l.shard.buckets();
        let start = hand.bucket.min(n);
        let victim = policy.victim();
        let pooled = matches!(victim, Victim::Lfu | Victim::Ttl);
        if pooled {
            hand.candidates.rank_for(victim);
        }
        let window = if pooled {
            RANKED_SWEEP_BUCKETS
        } else {
            SWEEP_BUCKETS
        };
        let end = (start + window).min(n);
        let now = self.clock.now_ms();
        let (now_s, lfu) = (self.clock.coarse_s(), self.lfu_tuning());
        let mut freed = false;
        // The window's victim so far, under `-random`: (rank and
        // tie-break, lowest first; its position; the item). LFU and TTL
        // rank into the pool of candidates instead.
        let mut best: Option<(eviction::Rank, Pos, Item)> = None;
        for bucket in start..end {
            for way in 0..index::WAYS {
                let pos = Pos { bucket, way };
                let cell = l.cell(pos);
                let e = cell.load(Ordering::Acquire);
                if e & OCCUPIED == 0 {
                    continue;
                }
                let Some(item) = self.pool.try_acquire(entry_handle(e)).and_then(Item::parse)
                else {
                    continue;
                };
                if self.busy(&item) {
                    continue;
                }
                if item.expired(now) {
                    self.remove(l, pos, &item);
                    self.removed(item.key(), Removal::Expired);
                    freed = true;
                    continue;
                }
                if !policy.may_evict(e & EXPIRES != 0) {
                    // Kept: the policy may not evict it.
                    continue;
                }
                // Read since the hand last passed: under LRU that keeps it
                // this turn; the others rank by other things, but the bit
                // keeps its meaning for segment drains.
                let referenced = e & REF != 0;
                if referenced {
                    cell.fetch_and(!REF, Ordering::Relaxed);
                }
                if victim == Victim::Lru {
                    if !referenced {
                        self.remove(l, pos, &item);
                        self.removed(item.key(), Removal::Evicted);
                        freed = true;
                    }
                    continue;
                }
                // Ties go by a random number: a window of equal ranks that
                // gave up its first item would only ever evict from the
                // first way of every fourth bucket.
                let rank = (rank(victim, &item, now_s, lfu), eviction::tie_breaker());
                if pooled {
                    if hand.candidates.wants(rank) {
                        hand.candidates.offer(rank, item.key());
                    }
                } else if best.as_ref().is_none_or(|(r, ..)| rank < *r) {
                    best = Some((rank, pos, item));
                }
            }
        }
        if let Some((_, pos, item)) = best {
            self.remove(l, pos, &item);
            self.removed(item.key(), Removal::Evicted);
            freed = true;
        }
        if pooled {
            freed |= self.evict_candidate(&mut hand.candidates, policy, l, held, now, (now_s, lfu));
        }
        if end >= n {
            hand.shard = (i + 1) % self.shards.len();
            hand.bucket = 0;
        } else {
            hand.bucket = end;
        }
        freed
    }

    /// Evicts the best candidate of the pool that is still stored and may
    /// still go under `policy`, whose victim ranks them (the window's
    /// shard `window` and the caller's `held` are locked already, other
    /// shards are tried without waiting; `now` and the ranking clock and
    /// tuning are the sweep step's). Its rank is taken again first: a candidate used since it
    /// entered the pool goes back with its new rank when that is now worse
    /// than the next one's, where Redis evicts it anyway. True if it
    /// evicted (or removed an expired candidate).
    fn evict_candidate(
        &self,
        candidates: &mut eviction::Candidates,
        policy: EvictionPolicy,
        window: &Locked<'_>,
        held: Option<&Locked<'_>>,
        now: u64,
        (now_s, lfu): (u64, LfuTuning),
    ) -> bool {
        let victim = policy.victim();
        for _ in 0..eviction::Candidates::SIZE {
            let Some(((_, tie), key)) = candidates.pop() else {
                return false;
            };
            let h = self.hash(&key);
            let own;
            let l: &Locked<'_> = match held {
                _ if window.index == h.shard => window,
                Some(held) if held.index == h.shard => held,
                _ => match self.shards[h.shard].try_lock(h.shard) {
                    Some(g) => {
                        own = g;
                        &own
                    }
                    None => continue,
                },
            };
            let Some(f) = l.find(&self.pool, &h, &key) else {
                continue;
            };
            if !policy.may_evict(f.entry & EXPIRES != 0) || self.busy(&f.item) {
                continue;
            }
            let expired = f.item.expired(now);
            let now_rank = (rank(victim, &f.item, now_s, lfu), tie);
            if !expired && candidates.best_rank().is_some_and(|next| now_rank > next) {
                candidates.offer(now_rank, &key);
                continue;
            }
            self.remove_found(l, &f, &key, expired);
            return true;
        }
        false
    }

    /// Removes the item of entry `f` (at `key`), expired or evicted, and
    /// tells the watchers which.
    fn remove_found(&self, l: &Locked<'_>, f: &Found, key: &[u8], expired: bool) {
        self.remove(l, f.pos, &f.item);
        let why = if expired {
            Removal::Expired
        } else {
            Removal::Evicted
        };
        self.removed(key, why);
    }
}

/// An item's rank as an eviction candidate under `victim`, lowest first:
/// its decayed LFU counter, or its expiry time; 0 for the policies that do
/// not rank.
fn rank(victim: Victim, item: &Item, now_s: u64, lfu: LfuTuning) -> u64 {
    match victim {
        Victim::Lfu => u64::from(access::lfu_count(item.seen(), now_s, lfu)),
        Victim::Ttl => item.expires_at_ms(),
        Victim::Lru | Victim::Random => 0,
    }
}

impl Drop for Store {
    /// Releases the index's references: slots still held by replies stay
    /// valid until those drop; the rest go back to the pool now.
    fn drop(&mut self) {
        self.flush_all();
    }
}

/// memcached's number check: ASCII digits (trailing spaces allowed, as
/// older servers pad decr results), at most u64::MAX.
/// Adds `add - sub` to `counter` (one atomic operation, none if they are
/// equal: most writes leave most counters as they were, and each atomic
/// add is a shared cache line).
fn adjust(counter: &AtomicUsize, add: usize, sub: usize) {
    if add > sub {
        counter.fetch_add(add - sub, Ordering::Relaxed);
    } else if sub > add {
        counter.fetch_sub(sub - add, Ordering::Relaxed);
    }
}

/// A stored value as memcached's incr/decr reads it (`strtoull`, then
/// its own checks): white space, a sign (a `-` only where the negated
/// number still reads as not negative), digits, then the end or white
/// space — whatever follows that is ignored ("0   x" is 0, "1a" is not
/// a number).
fn parse_u64(v: &[u8]) -> Option<u64> {
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r');
    let mut i = v.iter().position(|&c| !space(c))?;
    let neg = match v[i] {
        b'+' => {
            i += 1;
            false
        }
        b'-' => {
            i += 1;
            true
        }
        _ => false,
    };
    let start = i;
    let mut n: u64 = 0;
    while let Some(&c) = v.get(i).filter(|c| c.is_ascii_digit()) {
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        i += 1;
    }
    if i == start || v.get(i).is_some_and(|&c| !space(c)) {
        return None;
    }
    if neg {
        let r = n.wrapping_neg();
        return (r as i64 >= 0).then_some(r);
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"12  "), Some(12));
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"   "), None);
        assert_eq!(parse_u64(b" 1"), Some(1));
        assert_eq!(parse_u64(b"+5"), Some(5));
        assert_eq!(parse_u64(b"-0"), Some(0));
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"-18446744073709551615"), Some(1));
        assert_eq!(parse_u64(b"0   hello"), Some(0));
        assert_eq!(parse_u64(b"12\tx"), Some(12));
        assert_eq!(parse_u64(b"1a"), None);
    }

    #[test]
    fn store_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Store>();
        check::<Item>();
    }
}

#[cfg(test)]
mod index_load {
    use super::*;

    #[test]
    fn index_fills_before_it_grows() {
        let s = Store::new(
            Pool::with_capacity(64 << 20).unwrap(),
            StoreConfig {
                memory_limit: 48 << 20,
                shards: 1,
                ..Default::default()
            },
        );
        let mut last = s.shards[0].buckets();
        for i in 0..40_000u32 {
            s.set(&i.to_le_bytes(), b"v", Meta::default(), SetMode::Set)
                .unwrap();
            let b = s.shards[0].buckets();
            if b != last {
                let load = i as f64 / (last * index::WAYS) as f64;
                assert!(
                    last < 64 || load > 0.75,
                    "grew to {b} buckets at load {load:.2}"
                );
                last = b;
            }
        }
        assert_eq!(s.len(), 40_000);
        assert!((0..40_000u32).all(|i| s.get(&i.to_le_bytes()).is_some()));
    }
}
