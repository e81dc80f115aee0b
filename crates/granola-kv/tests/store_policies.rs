//! The eviction policies other than `allkeys-lru` (whose CLOCK
//! `store_eviction.rs` tests): what each may evict, which victims it
//! prefers, and that the memory limit holds under every one.

use granola::Pool;
use granola_kv::store::{
    Clock, EvictionPolicy, Growth, Kind, Meta, SetMode, Store, StoreConfig, StoreError,
};

const LIMIT: usize = 4 << 20;
/// The manual clock's start (ms): 2027-01-15, so access words are in range.
const T0: u64 = 1_800_000_000_000;

fn store(policy: EvictionPolicy, clock: Clock) -> Store {
    Store::with_clock(
        Pool::with_capacity(16 << 20).unwrap(),
        StoreConfig {
            memory_limit: LIMIT,
            shards: 64,
            policy,
            ..Default::default()
        },
        clock,
    )
}

fn key(i: u32) -> Vec<u8> {
    format!("key:{i:016}").into_bytes()
}

/// 200 bytes made from the key's number: another key's value fails `check`.
fn value(i: u32) -> Vec<u8> {
    (0..200u32)
        .map(|j| (i.wrapping_mul(31) ^ j) as u8)
        .collect()
}

fn put(s: &Store, i: u32, expires_at_ms: u64) -> Result<u64, StoreError> {
    s.set(
        &key(i),
        &value(i),
        Meta {
            flags: 0,
            expires_at_ms,
        },
        SetMode::Set,
    )
}

/// Stores key `i` without an expiry and checks the store kept its limit.
fn put_within_limit(s: &Store, i: u32) {
    put(s, i, 0).unwrap();
    let st = s.stats();
    assert!(st.bytes <= st.limit, "{st:?}");
}

/// True if key `i` is stored with its own value.
fn check(s: &Store, i: u32) -> bool {
    match s.get(&key(i)) {
        Some(item) => {
            assert_eq!(item.value_bytes(), value(i), "key {i}");
            true
        }
        None => false,
    }
}

fn survival(s: &Store, keys: impl Iterator<Item = u32>) -> f64 {
    let (mut n, mut alive) = (0, 0);
    for i in keys {
        n += 1;
        alive += usize::from(check(s, i));
    }
    alive as f64 / n as f64
}

/// Under every `volatile-` policy a key without an expiry is never
/// evicted: writes past the limit take keys with a TTL, and once none is
/// left they are refused, while every key without one stays readable.
#[test]
fn volatile_policies_evict_only_keys_with_an_expiry() {
    for policy in [
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileLfu,
        EvictionPolicy::VolatileRandom,
        EvictionPolicy::VolatileTtl,
    ] {
        let s = store(policy, Clock::manual(T0));
        // 20 + 200 + 28 B -> 256 B slots: ~16 Ki items fit; a third with
        // a TTL an hour away.
        let first = 12_000u32;
        for i in 0..first {
            let ttl = if i % 3 == 0 { T0 + 3_600_000 } else { 0 };
            put(&s, i, ttl).unwrap();
        }
        let mut i = first;
        let refused = loop {
            match put(&s, i, 0) {
                Ok(_) => i += 1,
                Err(e) => break e,
            }
            let st = s.stats();
            assert!(st.bytes <= st.limit, "{policy:?}: {st:?}");
            assert!(i < first + 40_000, "{policy:?}: never refused");
        };
        assert_eq!(refused, StoreError::OutOfMemory, "{policy:?}");
        let st = s.stats();
        assert!(
            st.evictions >= u64::from(first / 3) * 9 / 10,
            "{policy:?}: {st:?}"
        );
        let kept = (0..i).filter(|k| k % 3 != 0 || *k >= first);
        assert_eq!(
            survival(&s, kept),
            1.0,
            "{policy:?}: a key without a TTL went"
        );
        assert_eq!(
            s.pool().stats().live_slots,
            s.len(),
            "{policy:?}: a slot leaked"
        );
        // The same key with a TTL is refused too: nothing is left that the
        // policy may evict to make room for it. (The same key: a refusal
        // can come from its index shard's growth, larger than one item,
        // and another key's shard may still have room for one.)
        assert_eq!(
            put(&s, i, T0 + 3_600_000),
            Err(StoreError::OutOfMemory),
            "{policy:?}"
        );
    }
}

/// `volatile-ttl` evicts the keys closest to expiring first.
#[test]
fn volatile_ttl_evicts_the_soonest_to_expire_first() {
    let s = store(EvictionPolicy::VolatileTtl, Clock::manual(T0));
    let first = 12_000u32;
    for i in 0..first {
        // Interleaved: one in two expires in an hour, the other in ten.
        let hours = if i % 2 == 0 { 1 } else { 10 };
        put(&s, i, T0 + hours * 3_600_000).unwrap();
    }
    // A quarter of them must go.
    let mut i = first;
    while s.stats().evictions < u64::from(first / 4) {
        put(&s, i, 0).unwrap();
        i += 1;
    }
    let soon = survival(&s, (0..first).step_by(2));
    let late = survival(&s, (1..first).step_by(2));
    println!("volatile-ttl: soon survival {soon:.3}, late {late:.3}");
    assert!(late > 0.97, "late {late}");
    assert!(soon < late - 0.3, "soon {soon} vs late {late}");
}

/// The ranking policies keep a pool of candidates over the hand's steps
/// (Redis's eviction pool), so each victim is the best of several windows
/// of the index, not of one: under `volatile-ttl`, with every key's expiry
/// distinct, evicting a quarter of the keys takes mostly the quarter that
/// expires soonest (0.892 of the evicted keys were among them with
/// windows of 2 buckets; 0.782 when each victim was the best of one
/// window of 4).
#[test]
fn ranked_policies_evict_the_best_of_several_windows() {
    let s = store(EvictionPolicy::VolatileTtl, Clock::manual(T0));
    let first = 12_000u32;
    // Expiry ranks spread over the keys (7919 is prime to 12 000).
    let rank = |i: u32| (u64::from(i) * 7919) % u64::from(first);
    for i in 0..first {
        put(&s, i, T0 + 3_600_000 + rank(i) * 60_000).unwrap();
    }
    let mut i = first;
    while s.stats().evictions < u64::from(first / 4) {
        put(&s, i, 0).unwrap();
        i += 1;
    }
    let soonest = |i: &u32| rank(*i) < u64::from(first / 4);
    let (soon, late): (Vec<u32>, Vec<u32>) = (0..first).partition(soonest);
    let evicted_soon = soon.iter().filter(|&&i| !check(&s, i)).count();
    let evicted_late = late.iter().filter(|&&i| !check(&s, i)).count();
    let precision = evicted_soon as f64 / (evicted_soon + evicted_late) as f64;
    println!(
        "volatile-ttl: {evicted_soon} of the soonest quarter evicted, {evicted_late} of the rest; precision {precision:.3}"
    );
    assert!(precision > 0.85, "precision {precision}");
}

/// `allkeys-lfu` keeps keys read often over keys never read.
#[test]
fn allkeys_lfu_keeps_frequently_read_keys() {
    let s = store(EvictionPolicy::AllkeysLfu, Clock::manual(T0));
    let (first, hot) = (12_000u32, 1_000u32);
    for i in 0..first {
        put(&s, i, 0).unwrap();
    }
    for _ in 0..20 {
        for h in 0..hot {
            assert!(check(&s, h));
        }
    }
    for i in first..first + 12_000 {
        put_within_limit(&s, i);
    }
    let hot_rate = survival(&s, 0..hot);
    let cold_rate = survival(&s, hot..first);
    println!("allkeys-lfu: hot survival {hot_rate:.3}, cold {cold_rate:.3}");
    assert!(hot_rate > 0.95, "hot {hot_rate}");
    assert!(
        cold_rate < hot_rate - 0.25,
        "cold {cold_rate} vs hot {hot_rate}"
    );
    assert!(s.stats().evictions > 5_000);
}

/// `allkeys-random` ignores use: keys read all along fare no better than
/// keys never read.
#[test]
fn allkeys_random_evicts_regardless_of_use() {
    let s = store(EvictionPolicy::AllkeysRandom, Clock::manual(T0));
    let (first, hot) = (12_000u32, 2_000u32);
    for i in 0..first {
        put(&s, i, 0).unwrap();
    }
    for i in first..first + 12_000 {
        if i % 500 == 0 {
            for h in 0..hot {
                check(&s, h);
            }
        }
        put_within_limit(&s, i);
    }
    let hot_rate = survival(&s, 0..hot);
    let cold_rate = survival(&s, hot..first);
    println!("allkeys-random: read survival {hot_rate:.3}, unread {cold_rate:.3}");
    assert!(s.stats().evictions > 5_000);
    assert!(cold_rate > 0.05, "cold {cold_rate}");
    assert!(
        (hot_rate - cold_rate).abs() < 0.15,
        "read {hot_rate} vs unread {cold_rate}"
    );
}

/// The LFU counter and idle time as the store reports them: a new key
/// starts at 5, its first read makes 6, each decay period unused takes
/// one off, and idle time counts whole minutes; another policy keeps no
/// counter.
#[test]
fn the_lfu_counter_follows_uses_and_time() {
    let clock = Clock::manual(T0);
    let s = store(EvictionPolicy::AllkeysLfu, clock.clone());
    put(&s, 1, 0).unwrap();
    let item = s.peek(&key(1)).unwrap();
    assert_eq!(s.frequency(&item), Some(5));
    s.get(&key(1)).unwrap();
    let item = s.peek(&key(1)).unwrap();
    assert_eq!(s.frequency(&item), Some(6));
    assert!(s.access(&item).fetched);
    clock.advance_ms(3 * 60_000 + 30_000);
    let item = s.peek(&key(1)).unwrap();
    assert_eq!(s.frequency(&item), Some(3));
    assert_eq!(s.access(&item).idle_s, 180);
    // An overwrite keeps the counter (and counts as a use), but the new
    // value was not read yet.
    put(&s, 1, 0).unwrap();
    let item = s.peek(&key(1)).unwrap();
    assert!(matches!(s.frequency(&item), Some(3 | 4)));
    assert!(!s.access(&item).fetched);
    s.set_policy(EvictionPolicy::AllkeysLru);
    assert_eq!(s.frequency(&item), None);
}

/// The store of the drift tests: `limit` bytes under `policy`, in a pool
/// with `slack` bytes of spare segments beyond it, on a manual clock.
fn drift_store(policy: EvictionPolicy, limit: usize, slack: usize) -> Store {
    Store::with_clock(
        Pool::with_capacity(limit + slack).unwrap(),
        StoreConfig {
            memory_limit: limit,
            shards: 64,
            policy,
            ..Default::default()
        },
        Clock::manual(T0),
    )
}

/// A store whose items may not all be evicted (`noeviction`, the
/// `volatile-` policies) and whose value sizes drift still takes writes
/// up to its limit: a full pool empties its sparsest segment by moving
/// the items there into free slots of their class elsewhere. Here 200-byte
/// values fill the store, nine in ten of them then go (deleted, or with a
/// TTL the policy may evict), and 1000-byte values follow. Without the
/// moves every segment stayed with the 200-byte class, each held by the
/// few items that may not go: `noeviction` refused at 0.64 of the limit,
/// `volatile-lru` once the pool's spare segments were full.
#[test]
fn stores_that_may_not_evict_everything_take_drifting_sizes() {
    const LIMIT: usize = 8 << 20;
    fn sized(tag: &str, i: u32, len: usize) -> (Vec<u8>, Vec<u8>) {
        let key = format!("{tag}:{i:08}").into_bytes();
        let value = (0..len)
            .map(|j| (i.wrapping_mul(2_654_435_761) >> 8) as u8 ^ (j as u8))
            .collect();
        (key, value)
    }
    let expiring = |on: bool| Meta {
        flags: 0,
        expires_at_ms: if on { T0 + 3_600_000 } else { 0 },
    };
    for policy in [
        EvictionPolicy::NoEviction,
        EvictionPolicy::VolatileLru,
        EvictionPolicy::VolatileTtl,
    ] {
        // The server's proportion: spare segments for the classes in use
        // beyond the limit (here two of 2 MiB).
        let s = drift_store(policy, LIMIT, 4 << 20);
        // Until the limit, or the first refusal (a write whose index
        // shard must grow, when the growth no longer fits).
        let mut small = 0u32;
        while s.stats().bytes + 512 <= LIMIT {
            let (k, v) = sized("small", small, 200);
            match s.set(&k, &v, expiring(small % 10 != 0), SetMode::Set) {
                Ok(_) => small += 1,
                Err(StoreError::OutOfMemory) => break,
                Err(e) => panic!("{policy:?}: {e:?}"),
            }
        }
        if policy == EvictionPolicy::NoEviction {
            for i in (0..small).filter(|i| i % 10 != 0) {
                assert!(s.delete(&sized("small", i, 200).0));
            }
        }
        // Three limits' worth of 1000-byte values, with a TTL.
        let mut big = 0u32;
        let refused_at = loop {
            let (k, v) = sized("big", big, 1000);
            match s.set(&k, &v, expiring(true), SetMode::Set) {
                Ok(_) => big += 1,
                Err(e) => {
                    assert_eq!(e, StoreError::OutOfMemory, "{policy:?}");
                    break Some(s.stats().bytes);
                }
            }
            if big as usize * 1000 > 3 * LIMIT {
                break None;
            }
        };
        let st = s.stats();
        println!("{policy:?}: {big} big values, refused at {refused_at:?} of {LIMIT}; {st:?}");
        assert!(st.bytes <= st.limit, "{policy:?}: {st:?}");
        assert!(st.segment_rescues > 0, "{policy:?}: nothing moved");
        match policy {
            // It may refuse only at its limit.
            EvictionPolicy::NoEviction => {
                let at = refused_at.expect("noeviction stored three limits' worth");
                assert!(
                    at as f64 >= 0.95 * LIMIT as f64,
                    "refused at {at} of {LIMIT}"
                );
            }
            // Every value has a TTL: it may always evict one.
            _ => assert_eq!(refused_at, None, "{policy:?}"),
        }
        // Every item that may not go is still there, with its own bytes
        // (moved byte for byte), and so is every big value not evicted.
        for i in (0..small).step_by(10) {
            let (k, v) = sized("small", i, 200);
            let item = s
                .get(&k)
                .unwrap_or_else(|| panic!("{policy:?}: small {i} lost"));
            assert_eq!(item.value_bytes(), v, "{policy:?}: small {i}");
        }
        let mut found = 0;
        for i in 0..big {
            let (k, v) = sized("big", i, 1000);
            if let Some(item) = s.get(&k) {
                assert_eq!(item.value_bytes(), v, "{policy:?}: big {i}");
                found += 1;
            }
        }
        if policy == EvictionPolicy::NoEviction {
            assert_eq!(found, big);
        }
        assert_eq!(
            s.pool().stats().live_slots,
            s.len(),
            "{policy:?}: a slot leaked"
        );
    }
}

/// The bytes of element `j` of collection `i` in
/// [`collections_move_when_a_store_that_may_not_evict_compacts`]: its own,
/// so a torn or misplaced byte is caught.
fn element(i: u32, j: u32, len: usize) -> Vec<u8> {
    let seed = i.wrapping_mul(2_654_435_761) ^ j.wrapping_mul(40_503);
    (0..len)
        .map(|k| (seed >> (k % 24)) as u8 ^ (k as u8))
        .collect()
}

/// What collection `i` holds, in the order it reads back: a list of ten
/// 1000-byte elements (five chunks), or four 2000-byte fields' values, set
/// members or sorted set members (each in a pool slot of its own), by
/// `i % 4`.
fn collection(i: u32) -> (Kind, Vec<Vec<u8>>) {
    match i % 4 {
        0 => (Kind::List, (0..10).map(|j| element(i, j, 1000)).collect()),
        1 => (Kind::Hash, (0..4).map(|j| element(i, j, 2000)).collect()),
        2 => (Kind::Set, (0..4).map(|j| element(i, j, 2000)).collect()),
        _ => (Kind::ZSet, (0..4).map(|j| element(i, j, 2000)).collect()),
    }
}

/// Stores collection `i` (see [`collection`]).
fn store_collection(s: &Store, i: u32) -> Result<(), StoreError> {
    let key = format!("coll:{i:06}").into_bytes();
    let (kind, elems) = collection(i);
    if kind == Kind::List {
        let refs: Vec<&[u8]> = elems.iter().map(|e| &e[..]).collect();
        return s.list_push(&key, &refs, false).map(|_| ());
    }
    let growth = Growth {
        entries: elems.len(),
        bytes: elems.iter().map(|e| e.len() + 8).sum(),
    };
    s.update_dict(&key, kind, growth, |d| {
        for (j, e) in elems.iter().enumerate() {
            match kind {
                Kind::Hash => d.insert(format!("f{j}").as_bytes(), e),
                Kind::Set => d.insert(e, b""),
                _ => d.set_score(e, f64::from(i) + j as f64),
            };
        }
    })
}

/// Reads collection `i` back and checks every byte (and a sorted set's
/// scores and order); also returns one of its pooled elements, as a
/// reply would hold it.
fn check_collection(s: &Store, i: u32) -> granola::Buf {
    let key = format!("coll:{i:06}").into_bytes();
    let (kind, elems) = collection(i);
    let item = s.get(&key).unwrap_or_else(|| panic!("collection {i} lost"));
    if kind == Kind::List {
        let got: Vec<granola::Buf> = item.list_range(0, -1).collect();
        assert_eq!(got.len(), elems.len(), "list {i}");
        for (j, (g, e)) in got.iter().zip(&elems).enumerate() {
            assert_eq!(&g[..], &e[..], "list {i} element {j}");
        }
        return got[3].clone();
    }
    item.read_dict(|d| {
        assert_eq!(d.len(), elems.len(), "{kind:?} {i}");
        for (j, e) in elems.iter().enumerate() {
            match kind {
                Kind::Hash => {
                    let v = d.value(format!("f{j}").as_bytes()).expect("field");
                    assert_eq!(v.bytes(), &e[..], "hash {i} field {j}");
                }
                Kind::Set => assert!(d.value(e).is_some(), "set {i} member {j}"),
                _ => assert_eq!(d.score(e), Some(f64::from(i) + j as f64), "zset {i}"),
            }
        }
        if kind == Kind::ZSet {
            // The order index holds the members too (moved with them).
            let ranked: Vec<_> = d.ranked(0, elems.len());
            for (j, (m, score)) in ranked.iter().enumerate() {
                assert_eq!(
                    (m.bytes(), *score),
                    (&elems[j][..], f64::from(i) + j as f64)
                );
            }
            return ranked[1].0.buf().cloned().expect("a pooled member");
        }
        let (first, value) = d.iter().next().expect("an entry");
        first
            .buf()
            .or(value.buf())
            .cloned()
            .expect("a pooled element")
    })
    .expect("a hash, set or sorted set")
}

/// The drift of `stores_that_may_not_evict_everything_take_drifting_sizes`
/// with collections in the segments that must be emptied: collections
/// (every `every`th of [`collection`]'s numbers: 1, every kind; 4, lists
/// only) fill the store, nine in ten are deleted, and 200-byte strings
/// follow. A compaction moves the chunks and elements of the collections
/// that stay (rewriting the list's chunk, the table's element, and a
/// sorted set's order index to point at the copy). Before it could, a
/// segment holding one was passed over, and `noeviction` refused the
/// strings early. Only the first few kept collections are read before the
/// strings come, so the other lists still have their last chunk open.
fn drift_over_collections(every: u32) {
    const LIMIT: usize = 8 << 20;
    for policy in [EvictionPolicy::NoEviction, EvictionPolicy::VolatileLru] {
        // A spare segment beyond the limit for each size class in use
        // (the heads', the chunks', the elements' and the strings'), as
        // the server's pool has (`CLASS_SLACK_SEGMENTS`).
        let s = drift_store(policy, LIMIT, 8 << 20);
        let mut stored = 0u32;
        while s.stats().bytes + 16 * 1024 <= LIMIT {
            match store_collection(&s, stored * every) {
                Ok(()) => stored += 1,
                Err(StoreError::OutOfMemory) => break,
                Err(e) => panic!("{policy:?}: {e:?}"),
            }
        }
        // Keep one group of four (a list, a hash, a set, a sorted set) in
        // ten.
        let kept = |i: u32| (i / 4) % 10 == 0;
        for i in (0..stored).filter(|&i| !kept(i)) {
            assert!(s.delete(format!("coll:{:06}", i * every).as_bytes()));
        }
        // Every kept collection is whole; one of each kind is held, as a
        // reply in flight would hold it, until the first compaction has
        // moved things (a held slot keeps its segment from coming free).
        let mut held: Vec<(u32, granola::Buf)> = (0..stored)
            .filter(|&i| kept(i))
            .map(|i| (i, check_collection(&s, i * every)))
            .take(4)
            .collect();
        let before = s.stats();
        // 200-byte strings, with a TTL under volatile-lru (which may then
        // evict them), until a refusal or three limits' worth.
        let mut strings = 0u32;
        let refused_at = loop {
            let key = format!("str:{strings:08}").into_bytes();
            let meta = Meta {
                flags: 0,
                expires_at_ms: match policy {
                    EvictionPolicy::NoEviction => 0,
                    _ => T0 + 3_600_000,
                },
            };
            match s.set(&key, &element(strings, 99, 200), meta, SetMode::Set) {
                Ok(_) => strings += 1,
                Err(e) => {
                    assert_eq!(e, StoreError::OutOfMemory, "{policy:?}");
                    break Some(s.stats().bytes);
                }
            }
            if !held.is_empty() && s.stats().segment_rescues > before.segment_rescues {
                // What the replies held still reads as it did.
                for (i, buf) in held.drain(..) {
                    let again = check_collection(&s, i * every);
                    assert_eq!(&buf[..], &again[..], "{policy:?}: collection {i}");
                }
            }
            if strings as usize * 200 > 3 * LIMIT {
                break None;
            }
        };
        assert!(
            held.is_empty(),
            "{policy:?}: no compaction while replies were held"
        );
        let st = s.stats();
        println!(
            "{policy:?}: {stored} collections, {} kept; {strings} strings, refused at {refused_at:?} of {LIMIT}; moves {} -> {}",
            (0..stored).filter(|&i| kept(i)).count(),
            before.segment_rescues,
            st.segment_rescues
        );
        assert!(st.bytes <= st.limit, "{policy:?}: {st:?}");
        assert!(
            st.segment_rescues > before.segment_rescues,
            "{policy:?}: nothing moved"
        );
        match policy {
            EvictionPolicy::NoEviction => {
                let at = refused_at.expect("noeviction stored three limits' worth");
                assert!(
                    at as f64 >= 0.95 * LIMIT as f64,
                    "{policy:?}: refused at {at} of {LIMIT}"
                );
            }
            _ => assert_eq!(refused_at, None, "{policy:?}"),
        }
        // Every kept collection reads back whole.
        for i in (0..stored).filter(|&i| kept(i)) {
            let _ = check_collection(&s, i * every);
        }
        if policy == EvictionPolicy::NoEviction {
            for i in 0..strings {
                let key = format!("str:{i:08}").into_bytes();
                let item = s.get(&key).unwrap_or_else(|| panic!("string {i} lost"));
                assert_eq!(item.value_bytes(), element(i, 99, 200), "string {i}");
            }
        }
        // Nothing leaked: with every key gone, every slot is back.
        for i in (0..stored).filter(|&i| kept(i)) {
            assert!(s.delete(format!("coll:{:06}", i * every).as_bytes()));
        }
        for i in 0..strings {
            s.delete(format!("str:{i:08}").as_bytes());
        }
        assert_eq!(s.pool().stats().live_slots, 0, "{policy:?}: a slot leaked");
    }
}

/// Lists' chunks and hashes', sets' and sorted sets' pooled elements move.
#[test]
fn collections_move_when_a_store_that_may_not_evict_compacts() {
    drift_over_collections(1);
}

/// Lists only, most never read after their pushes: their open end chunks
/// (no handle, still being written) are sealed for the compaction, which
/// finds their lists by the slot word naming them.
#[test]
fn open_list_chunks_are_sealed_for_a_compaction() {
    drift_over_collections(4);
}
