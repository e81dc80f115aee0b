//! Store semantics: memcached storage commands, CAS, incr/decr, touch,
//! expiry (on a manual clock: no sleeping), delete, flush_all, limits, and
//! values that stay intact while replies hold them.

use granola::Pool;
use granola_kv::store::{Clock, Kind, Meta, SetMode, Store, StoreConfig, StoreError};

const T0: u64 = 1_700_000_000_000;

fn store() -> (Store, Clock) {
    let clock = Clock::manual(T0);
    let pool = Pool::with_capacity(64 << 20).unwrap();
    let cfg = StoreConfig {
        memory_limit: 32 << 20,
        shards: 16,
        ..Default::default()
    };
    (Store::with_clock(pool, cfg, clock.clone()), clock)
}

fn meta(flags: u32, expires_at_ms: u64) -> Meta {
    Meta {
        flags,
        expires_at_ms,
    }
}

fn val(s: &Store, k: &[u8]) -> Option<Vec<u8>> {
    s.get(k).map(|i| i.value_bytes().to_vec())
}

#[test]
fn set_get_overwrite_delete() {
    let (s, _) = store();
    assert!(s.get(b"k").is_none());
    let c1 = s.set(b"k", b"v1", meta(5, 0), SetMode::Set).unwrap();
    let it = s.get(b"k").unwrap();
    assert_eq!(it.key(), b"k");
    assert_eq!(it.value_bytes(), b"v1");
    assert_eq!(&it.value()[..], b"v1");
    assert_eq!((it.flags(), it.cas(), it.kind()), (5, c1, Kind::String));
    assert_eq!(it.expires_at_ms(), 0);
    let c2 = s.set(b"k", b"v2", meta(6, 0), SetMode::Set).unwrap();
    assert!(c2 > c1, "new CAS on every modification");
    assert_eq!(val(&s, b"k").unwrap(), b"v2");
    assert_eq!(s.len(), 1);
    assert!(s.delete(b"k"));
    assert!(!s.delete(b"k"));
    assert!(s.get(b"k").is_none());
    assert_eq!(s.len(), 0);
    // Empty key and empty value are fine.
    s.set(b"", b"", Meta::default(), SetMode::Set).unwrap();
    assert_eq!(val(&s, b"").unwrap(), b"");
    let st = s.stats();
    assert!(st.hits >= 3 && st.misses >= 2, "{st:?}");
}

#[test]
fn overwrites_and_retimes_reuse_the_slot_unless_a_reader_holds_it() {
    let (s, clock) = store();
    let at = |s: &Store| s.get(b"k").unwrap().value_bytes().as_ptr() as usize;
    s.set(b"k", b"first value", meta(1, 0), SetMode::Set)
        .unwrap();
    let first = at(&s);
    let (slots, stats) = (s.pool().stats().live_slots, s.stats());
    // Nothing holds the item: written over where it is, with all it says.
    let cas = s
        .set(b"k", b"second valu", meta(2, T0 + 5_000), SetMode::Set)
        .unwrap();
    let it = s.get(b"k").unwrap();
    assert_eq!(it.value_bytes().as_ptr() as usize, first, "same slot");
    assert_eq!(it.value_bytes(), b"second valu");
    assert_eq!(
        (it.flags(), it.expires_at_ms(), it.cas()),
        (2, T0 + 5_000, cas)
    );
    assert_eq!(s.pool().stats().live_slots, slots, "no slot allocated");
    let now = s.stats();
    assert_eq!((now.item_bytes, now.items), (stats.item_bytes, stats.items));
    // A held item (a reply being sent) keeps its bytes: the next value
    // goes to a new slot.
    let held = it;
    s.set(b"k", b"third value", meta(3, 0), SetMode::Set)
        .unwrap();
    assert_eq!(held.value_bytes(), b"second valu");
    assert_ne!(at(&s), first, "a new slot while a reader held the old");
    assert_eq!(val(&s, b"k").unwrap(), b"third value");
    drop(held);
    // INCR-style read-modify-writes go in place too, and expiry still
    // applies to the rewritten item.
    s.set(b"n", b"41", meta(0, T0 + 1_000), SetMode::Set)
        .unwrap();
    let n_at = s.get(b"n").unwrap().value_bytes().as_ptr() as usize;
    assert_eq!(s.incr_decr(b"n", 1, true).unwrap(), 42);
    s.update_string(b"n", |cur, store| {
        assert_eq!(cur, Some(&b"42"[..]));
        store(b"43");
    })
    .unwrap();
    let n = s.get(b"n").unwrap();
    assert_eq!(
        (n.value_bytes(), n.expires_at_ms()),
        (&b"43"[..], T0 + 1_000)
    );
    assert_eq!(n.value_bytes().as_ptr() as usize, n_at);
    drop(n);
    clock.advance_ms(1_000);
    assert!(
        s.get(b"n").is_none(),
        "the rewritten item expires as stored"
    );
    // EXPIRE and touch rewrite the header where it is.
    let k_at = at(&s);
    let it = s.retime(b"k", T0 + 9_000, true).unwrap();
    assert_eq!(
        (it.value_bytes(), it.expires_at_ms()),
        (&b"third value"[..], T0 + 9_000)
    );
    assert!(it.cas() > cas, "EXPIRE gives a new CAS");
    drop(it);
    assert_eq!(at(&s), k_at);
    let it = s.touch(b"k", 0).unwrap();
    assert_eq!(it.expires_at_ms(), 0);
    drop(it);
    assert_eq!(at(&s), k_at);
    // A list's head too, keeping its body.
    s.put_list(b"l", &[b"a", b"b"], Meta::default()).unwrap();
    let l_at = s.get(b"l").unwrap().value_bytes().as_ptr() as usize;
    let it = s.retime(b"l", T0 + 9_000, true).unwrap();
    assert_eq!(it.list_range(0, -1).count(), 2);
    drop(it);
    let l = s.get(b"l").unwrap();
    assert_eq!((l.kind(), l.expires_at_ms()), (Kind::List, T0 + 9_000));
    assert_eq!(l.value_bytes().as_ptr() as usize, l_at);
    assert_eq!(l.list_range(0, -1).count(), 2);
    drop(l);
    // A value of another size class moves to a slot of its class.
    s.set(b"k", &[b'x'; 300], meta(0, 0), SetMode::Set).unwrap();
    assert_eq!(val(&s, b"k").unwrap(), vec![b'x'; 300]);
}

#[test]
fn add_and_replace() {
    let (s, _) = store();
    assert_eq!(
        s.set(b"k", b"x", Meta::default(), SetMode::Replace),
        Err(StoreError::NotStored)
    );
    assert!(s.get(b"k").is_none());
    s.set(b"k", b"a", Meta::default(), SetMode::Add).unwrap();
    assert_eq!(
        s.set(b"k", b"b", Meta::default(), SetMode::Add),
        Err(StoreError::NotStored)
    );
    assert_eq!(val(&s, b"k").unwrap(), b"a");
    s.set(b"k", b"c", meta(9, 0), SetMode::Replace).unwrap();
    let it = s.get(b"k").unwrap();
    assert_eq!((it.value_bytes(), it.flags()), (&b"c"[..], 9));
}

#[test]
fn append_prepend_keep_flags_and_expiry() {
    let (s, _) = store();
    assert_eq!(
        s.set(b"k", b"x", Meta::default(), SetMode::Append),
        Err(StoreError::NotStored)
    );
    assert_eq!(
        s.set(b"k", b"x", Meta::default(), SetMode::Prepend),
        Err(StoreError::NotStored)
    );
    let c0 = s
        .set(b"k", b"mid", meta(3, T0 + 10_000), SetMode::Set)
        .unwrap();
    let c1 = s.set(b"k", b">", meta(99, 1), SetMode::Append).unwrap();
    let c2 = s.set(b"k", b"<", meta(99, 1), SetMode::Prepend).unwrap();
    assert!(c0 < c1 && c1 < c2);
    let it = s.get(b"k").unwrap();
    assert_eq!(it.value_bytes(), b"<mid>");
    assert_eq!(
        (it.flags(), it.expires_at_ms(), it.cas()),
        (3, T0 + 10_000, c2)
    );
    s.list_push(b"l", &[b"e"], false).unwrap();
    assert_eq!(
        s.set(b"l", b"x", Meta::default(), SetMode::Append),
        Err(StoreError::WrongType)
    );
}

#[test]
fn cas_semantics() {
    let (s, _) = store();
    assert_eq!(
        s.set(b"k", b"x", Meta::default(), SetMode::Cas(1)),
        Err(StoreError::NotFound)
    );
    let c = s.set(b"k", b"a", Meta::default(), SetMode::Set).unwrap();
    assert_eq!(
        s.set(b"k", b"b", Meta::default(), SetMode::Cas(c + 1000)),
        Err(StoreError::Exists)
    );
    assert_eq!(val(&s, b"k").unwrap(), b"a");
    let c2 = s.set(b"k", b"b", Meta::default(), SetMode::Cas(c)).unwrap();
    assert_eq!(val(&s, b"k").unwrap(), b"b");
    assert_eq!(
        s.set(b"k", b"c", Meta::default(), SetMode::Cas(c)),
        Err(StoreError::Exists),
        "stale"
    );
    // Every kind of modification changes the CAS unique.
    s.set(b"k", b"1", Meta::default(), SetMode::Cas(c2))
        .unwrap();
    let before = s.get(b"k").unwrap().cas();
    s.incr_decr(b"k", 1, true).unwrap();
    assert_ne!(s.get(b"k").unwrap().cas(), before);
}

#[test]
fn incr_decr_memcached_rules() {
    let (s, _) = store();
    assert_eq!(s.incr_decr(b"n", 1, true), Err(StoreError::NotFound));
    s.set(b"n", b"10", meta(4, T0 + 50_000), SetMode::Set)
        .unwrap();
    assert_eq!(s.incr_decr(b"n", 5, true), Ok(15));
    assert_eq!(s.incr_decr(b"n", 3, false), Ok(12));
    assert_eq!(s.incr_decr(b"n", 100, false), Ok(0), "decr floors at 0");
    let it = s.get(b"n").unwrap();
    assert_eq!(it.value_bytes(), b"0");
    assert_eq!(
        (it.flags(), it.expires_at_ms()),
        (4, T0 + 50_000),
        "metadata kept"
    );
    s.set(b"n", b"18446744073709551615", Meta::default(), SetMode::Set)
        .unwrap();
    assert_eq!(s.incr_decr(b"n", 2, true), Ok(1), "incr wraps at 2^64");
    for bad in [
        &b"abc"[..],
        b"",
        b"-1",
        b"1.5",
        b"18446744073709551616",
        b"7x",
        b"   ",
    ] {
        s.set(b"n", bad, Meta::default(), SetMode::Set).unwrap();
        assert_eq!(
            s.incr_decr(b"n", 1, true),
            Err(StoreError::NotNumeric),
            "{bad:?}"
        );
        assert_eq!(val(&s, b"n").unwrap(), bad, "unchanged on error");
    }
    // As memcached reads them (checked against memcached 1.6.18): white
    // space and a sign before the digits, anything after white space.
    for (text, then) in [
        (&b" 7"[..], 8),
        (b"+5", 6),
        (b"-0", 1),
        (b"0   hello", 1),
        (b"12\tx", 13),
    ] {
        s.set(b"n", text, Meta::default(), SetMode::Set).unwrap();
        assert_eq!(s.incr_decr(b"n", 1, true), Ok(then), "{text:?}");
    }
    s.list_push(b"l", &[b"1"], false).unwrap();
    assert_eq!(s.incr_decr(b"l", 1, true), Err(StoreError::WrongType));
}

#[test]
fn expiry_on_a_manual_clock() {
    let (s, clock) = store();
    s.set(b"short", b"v", meta(0, T0 + 100), SetMode::Set)
        .unwrap();
    s.set(b"forever", b"v", meta(0, 0), SetMode::Set).unwrap();
    s.set(b"past", b"v", meta(0, T0 - 1), SetMode::Set).unwrap();
    assert!(s.get(b"past").is_none(), "already expired when stored");
    assert!(s.get(b"short").is_some());
    clock.advance_ms(99);
    assert!(s.get(b"short").is_some());
    clock.advance_ms(1);
    assert!(s.get(b"short").is_none(), "expires at exactly its time");
    assert!(s.get(b"forever").is_some());
    assert_eq!(s.len(), 1, "expired items dropped on read");
    assert!(s.stats().expired >= 2);
    // Expired items count as absent for writers.
    s.set(b"e", b"1", meta(0, T0 + 200), SetMode::Set).unwrap();
    clock.set_ms(T0 + 300);
    assert_eq!(
        s.set(b"e", b"x", Meta::default(), SetMode::Replace),
        Err(StoreError::NotStored)
    );
    assert_eq!(s.incr_decr(b"e", 1, true), Err(StoreError::NotFound));
    s.set(b"e", b"2", Meta::default(), SetMode::Add).unwrap();
    assert_eq!(val(&s, b"e").unwrap(), b"2");
    s.set(b"gone", b"1", meta(0, T0 + 301), SetMode::Set)
        .unwrap();
    clock.advance_ms(1);
    assert!(!s.delete(b"gone"));
    assert_eq!(s.touch(b"gone", 0).map(|i| i.cas()), None);
}

#[test]
fn touch_sets_expiry_keeps_value_and_cas() {
    let (s, clock) = store();
    assert!(s.touch(b"k", T0 + 5).is_none());
    let c = s
        .set(b"k", b"value", meta(8, T0 + 10), SetMode::Set)
        .unwrap();
    let it = s.touch(b"k", T0 + 1_000).unwrap();
    assert_eq!(
        (it.value_bytes(), it.flags(), it.cas()),
        (&b"value"[..], 8, c)
    );
    assert_eq!(it.expires_at_ms(), T0 + 1_000);
    clock.advance_ms(500);
    assert_eq!(s.get(b"k").unwrap().expires_at_ms(), T0 + 1_000);
    let it = s.touch(b"k", 0).unwrap();
    assert_eq!(it.expires_at_ms(), 0);
    clock.advance_ms(1_000_000);
    assert!(s.get(b"k").is_some(), "never expires now");
    s.list_push(b"l", &[b"a", b"b"], false).unwrap();
    let l = s.touch(b"l", T0 + 9_999_999).unwrap();
    assert_eq!(l.kind(), Kind::List);
    assert_eq!(
        l.list_range(0, -1).map(|b| b.to_vec()).collect::<Vec<_>>(),
        [b"a", b"b"]
    );
}

#[test]
fn flush_all_empties_the_store() {
    let (s, _) = store();
    for i in 0..500u32 {
        s.set(&i.to_le_bytes(), b"v", Meta::default(), SetMode::Set)
            .unwrap();
    }
    s.list_push(b"l", &[b"x"], true).unwrap();
    let held = s.get(&7u32.to_le_bytes()).unwrap();
    s.flush_all();
    assert_eq!(s.len(), 0);
    assert!((0..500u32).all(|i| s.get(&i.to_le_bytes()).is_none()));
    assert_eq!(s.stats().item_bytes, 0);
    assert_eq!(held.value_bytes(), b"v", "held items survive a flush");
    drop(held);
    assert_eq!(s.pool().stats().live_slots, 0, "no slot leaked");
    s.set(b"after", b"1", Meta::default(), SetMode::Set)
        .unwrap();
    assert_eq!(val(&s, b"after").unwrap(), b"1");
}

#[test]
fn size_limits() {
    let pool = Pool::with_capacity(64 << 20).unwrap();
    let s = Store::new(
        pool,
        StoreConfig {
            memory_limit: 16 << 20,
            shards: 4,
            max_item_size: 4096,
            ..Default::default()
        },
    );
    let big = vec![1u8; 4096];
    assert_eq!(
        s.set(b"k", &big, Meta::default(), SetMode::Set),
        Err(StoreError::TooLarge)
    );
    let fits = vec![1u8; 4096 - 28 - 1];
    s.set(b"k", &fits, Meta::default(), SetMode::Set).unwrap();
    assert_eq!(
        s.set(b"k", b"x", Meta::default(), SetMode::Append),
        Err(StoreError::TooLarge)
    );
    assert_eq!(val(&s, b"k").unwrap().len(), fits.len());
    let key = vec![b'k'; 70_000];
    assert_eq!(
        s.set(&key, b"x", Meta::default(), SetMode::Set),
        Err(StoreError::TooLarge)
    );
    // A list is chunked: it is not bounded by one item's size, but each
    // element is.
    let many: Vec<&[u8]> = vec![&b"abcdefgh"[..]; 400]; // 400 * (8 + 4) > 4096
    assert_eq!(s.list_push(b"l", &many, false), Ok(400));
    assert_eq!(s.put_list(b"l2", &many, Meta::default()), Ok(()));
    let too_big = vec![1u8; 4096];
    assert_eq!(
        s.list_push(b"l", &[&too_big], false),
        Err(StoreError::TooLarge)
    );
    assert_eq!(s.get(b"l").unwrap().list_len(), 400);
    // A 1 MiB value fits the default.
    let s = Store::new(
        Pool::with_capacity(64 << 20).unwrap(),
        StoreConfig::default(),
    );
    s.set(b"mb", &vec![7u8; 1 << 20], Meta::default(), SetMode::Set)
        .unwrap();
    assert_eq!(s.get(b"mb").unwrap().value_len(), 1 << 20);
}

#[test]
fn replaced_values_stay_intact_while_held() {
    // Hold items and value Bufs across heavy churn that recycles slots of
    // the same class, then check every byte.
    let (s, _) = store();
    let value = |k: u32, v: u32| -> Vec<u8> {
        (0..100 + (k % 50))
            .map(|i| (k.wrapping_mul(31) ^ v.wrapping_mul(7) ^ i) as u8)
            .collect()
    };
    let mut held = Vec::new();
    for round in 0..50u32 {
        for k in 0..200u32 {
            s.set(
                &k.to_be_bytes(),
                &value(k, round),
                Meta::default(),
                SetMode::Set,
            )
            .unwrap();
        }
        if round % 10 == 0 {
            for k in (0..200u32).step_by(7) {
                let it = s.get(&k.to_be_bytes()).unwrap();
                let v = it.value();
                held.push((k, round, it, v));
            }
        }
        for k in (0..200u32).step_by(3) {
            s.delete(&k.to_be_bytes());
        }
    }
    for (k, round, it, v) in &held {
        let want = value(*k, *round);
        assert_eq!(it.value_bytes(), &want[..], "item of key {k} round {round}");
        assert_eq!(&v[..], &want[..], "value Buf of key {k} round {round}");
        assert_eq!(it.key(), k.to_be_bytes());
    }
    let live = s.pool().stats().live_slots;
    drop(held);
    assert!(
        s.pool().stats().live_slots < live,
        "held slots are freed when dropped"
    );
    assert_eq!(s.pool().stats().live_slots, s.len());
}

#[test]
fn pool_slots_match_the_index() {
    let (s, _) = store();
    for i in 0..2000u32 {
        let v = vec![i as u8; (i % 300) as usize];
        s.set(&i.to_le_bytes(), &v, Meta::default(), SetMode::Set)
            .unwrap();
    }
    for i in (0..2000u32).step_by(2) {
        s.delete(&i.to_le_bytes());
    }
    let st = s.stats();
    assert_eq!(st.items, 1000);
    assert_eq!(s.pool().stats().live_slots, 1000);
    assert_eq!(st.item_bytes, s.pool().stats().live_bytes);
    assert_eq!(st.bytes, st.item_bytes + st.index_bytes);
    for i in (1..2000u32).step_by(2) {
        assert_eq!(
            val(&s, &i.to_le_bytes()).unwrap(),
            vec![i as u8; (i % 300) as usize]
        );
    }
}

#[test]
fn dropping_the_store_returns_its_slots() {
    let pool = Pool::with_capacity(16 << 20).unwrap();
    let s = Store::new(pool.clone(), StoreConfig::default());
    for i in 0..1000u32 {
        s.set(&i.to_le_bytes(), &[1u8; 300], Meta::default(), SetMode::Set)
            .unwrap();
    }
    s.put_list(b"l", &[b"a"], Meta::default()).unwrap();
    let held = s.get(&5u32.to_le_bytes()).unwrap().value();
    assert_eq!(
        pool.stats().live_slots,
        1001,
        "1000 strings and a small list (one item)"
    );
    drop(s);
    assert_eq!(pool.stats().live_slots, 1, "only the slot a reply holds");
    assert_eq!(&held[..], &[1u8; 300][..]);
    drop(held);
    assert_eq!(pool.stats().live_slots, 0);
}

/// A hash kept at a fixed size by adding a field and removing the oldest
/// (the pattern of `kvmem --cases hashes`): removals leave tombstones, and
/// a table whose free slots they used up grows on an insert its capacity
/// still fits. That growth is charged and settled: the store stays within
/// its limit, and every field written last is there.
#[test]
fn hash_churn_stays_within_the_limit() {
    use granola_kv::store::Growth;
    let limit = 4 << 20;
    let s = Store::new(
        Pool::with_capacity(16 << 20).unwrap(),
        StoreConfig {
            memory_limit: limit,
            ..Default::default()
        },
    );
    let field = |i: usize| format!("e{i:09}").into_bytes();
    let grow = |n: usize| Growth {
        entries: n,
        bytes: 20 * n,
    };
    s.update_dict(b"h", Kind::Hash, grow(1000), |d| {
        for i in 0..1000 {
            d.insert(&field(i), &field(i));
        }
    })
    .unwrap();
    for k in 0..20_000 {
        s.update_dict(b"h", Kind::Hash, grow(1), |d| {
            d.insert(&field(1000 + k), &field(1000 + k));
            assert!(d.remove(&field(k)));
        })
        .unwrap();
        let st = s.stats();
        assert!(st.bytes <= st.limit, "{st:?}");
    }
    let h = s.get(b"h").unwrap();
    assert_eq!(h.dict_len(), 1000);
    assert!(h.read_dict(|d| d.contains(&field(20_999))).unwrap());
}

/// Access marks (memcached `mg h l`, Redis `OBJECT IDLETIME`): each read
/// reports the state before it and marks the item read now; a store
/// starts over; `peek` and rewrites of the same value leave them alone.
#[test]
fn reads_report_and_mark_the_last_access() {
    use granola_kv::store::Access;
    let (s, clock) = store();
    let fresh = |idle_s| Access {
        fetched: false,
        idle_s,
    };
    let read = |idle_s| Access {
        fetched: true,
        idle_s,
    };
    s.set(b"k", b"v", meta(0, 0), SetMode::Set).unwrap();
    clock.advance_ms(3_000);
    assert_eq!(s.access(&s.peek(b"k").unwrap()), fresh(3));
    // The first read sees the store's state, the next one its own mark.
    assert_eq!(s.access(&s.get(b"k").unwrap()), fresh(3));
    assert_eq!(s.access(&s.get(b"k").unwrap()), read(0));
    clock.advance_ms(5_000);
    assert_eq!(s.access(&s.peek(b"k").unwrap()), read(5));
    assert_eq!(
        s.access(&s.peek(b"k").unwrap()),
        read(5),
        "peek marks nothing"
    );
    // A new expiry rewrites the item but keeps its marks; touch is a read.
    s.expire(b"k", 0).unwrap();
    assert_eq!(s.access(&s.peek(b"k").unwrap()), read(5));
    assert_eq!(s.access(&s.touch(b"k", 0).unwrap()), read(5));
    assert_eq!(s.access(&s.peek(b"k").unwrap()), read(0));
    // A store starts over.
    clock.advance_ms(2_000);
    s.set(b"k", b"w", meta(0, 0), SetMode::Set).unwrap();
    assert_eq!(s.access(&s.get(b"k").unwrap()), fresh(0));
    // An item that replies still hold keeps what it had when they read it.
    let held = s.get(b"k").unwrap();
    clock.advance_ms(1_000);
    s.get(b"k").unwrap();
    assert_eq!(s.access(&held), read(1));
}

/// A 16 MiB store whose collection elements of at least `min` bytes go to
/// pool slots of their own, and its pool.
fn store_placing_from(min: usize) -> (Pool, Store) {
    let pool = Pool::with_capacity(16 << 20).unwrap();
    let s = Store::new(
        pool.clone(),
        StoreConfig {
            pooled_element_min: min,
            ..Default::default()
        },
    );
    (pool, s)
}

/// Hash fields and values and set members of at least
/// `pooled_element_min` bytes live in pool slots of their own (replies
/// reference them); smaller ones on the heap. A value a reply holds stays
/// exactly as it was when its field is overwritten or removed; a copy
/// (`put_dict`, as COPY and RENAME use) gets slots of its own; every slot
/// goes back to the pool when its last holder drops it.
#[test]
fn large_hash_and_set_elements_live_in_pool_memory() {
    use granola_kv::store::Growth;
    let (pool, s) = store_placing_from(256);
    let big = |b: u8| vec![b; 3000];
    let grow = Growth {
        entries: 2,
        bytes: 6100,
    };
    s.update_dict(b"h", Kind::Hash, grow, |d| {
        d.insert(b"small", b"v");
        d.insert(b"big", &big(1));
    })
    .unwrap();
    s.update_dict(b"s", Kind::Set, grow, |d| {
        d.insert(&big(2), b"");
        d.insert(b"m", b"");
    })
    .unwrap();
    assert_eq!(pool.stats().live_slots, 4, "two head items, two elements");
    let held = s
        .get(b"h")
        .unwrap()
        .read_dict(|d| {
            assert!(d.value(b"small").unwrap().buf().is_none(), "small: heap");
            d.value(b"big")
                .unwrap()
                .buf()
                .cloned()
                .expect("big: pooled")
        })
        .unwrap();
    assert_eq!(&held[..], &big(1)[..]);
    let member = s.get(b"s").unwrap().read_dict(|d| {
        let pooled: Vec<_> = d.iter().filter_map(|(m, _)| m.buf()).collect();
        assert_eq!(pooled.len(), 1);
        pooled[0][..] == big(2)[..]
    });
    assert_eq!(member, Some(true), "the large member is pooled");
    let st = s.stats();
    assert_eq!(
        st.item_bytes,
        pool.stats().live_bytes + st.dict_bytes,
        "pool slots and heap bytes, each counted once: {st:?}"
    );

    // Overwrite, then remove: the held value never changes.
    s.update_dict(b"h", Kind::Hash, grow, |d| {
        d.insert(b"big", &big(3));
    })
    .unwrap();
    assert_eq!(&held[..], &big(1)[..]);
    let now = s
        .get(b"h")
        .unwrap()
        .read_dict(|d| d.get(b"big").map(<[u8]>::to_vec));
    assert_eq!(now, Some(Some(big(3))));
    s.update_dict(b"h", Kind::Hash, Growth::default(), |d| {
        assert!(d.remove(b"big"));
    })
    .unwrap();
    assert_eq!(&held[..], &big(1)[..]);
    assert_eq!(pool.stats().live_slots, 4, "heads, member, the held value");
    drop(held);
    assert_eq!(pool.stats().live_slots, 3);

    // A copy places its large members in slots of its own.
    let copy = s.get(b"s").unwrap().read_dict(|d| d.clone()).unwrap();
    assert!(copy.iter().all(|(m, _)| m.buf().is_none()), "copies: heap");
    s.put_dict(b"s2", Kind::Set, &copy, Meta::default())
        .unwrap();
    let placed = s.get(b"s2").unwrap().read_dict(|d| {
        d.iter()
            .filter_map(|(m, _)| m.buf())
            .any(|b| b[..] == big(2)[..])
    });
    assert_eq!(placed, Some(true));
    assert_eq!(pool.stats().live_slots, 5);
    let st = s.stats();
    assert_eq!(st.item_bytes, pool.stats().live_bytes + st.dict_bytes);
    drop(s);
    assert_eq!(pool.stats().live_slots, 0, "every slot returned");
}

/// Sorted set members of at least `pooled_element_min` bytes live in a
/// pool slot of their own, which the member table and the order index
/// share (one slot, no heap copy); range reads hand out that slot, and a
/// popped member's bytes stay valid for its reply. A copy gets slots of
/// its own, and the accounting holds throughout.
#[test]
fn large_sorted_set_members_live_in_pool_memory() {
    use granola_kv::store::{Growth, Member};
    let (pool, s) = store_placing_from(256);
    let big = |b: u8| vec![b; 3000];
    let grow = Growth {
        entries: 3,
        bytes: 6100,
    };
    let accounted = |s: &Store| {
        let st = s.stats();
        assert_eq!(
            st.item_bytes,
            pool.stats().live_bytes + st.dict_bytes,
            "pool slots and heap bytes, each counted once: {st:?}"
        );
    };
    s.update_dict(b"z", Kind::ZSet, grow, |d| {
        assert!(d.set_score(&big(1), 2.0));
        assert!(d.set_score(b"small", 1.0));
        assert!(d.set_score(&big(2), 3.0));
        // A new score moves the member in the index, same slot.
        assert!(!d.set_score(&big(1), 2.5));
    })
    .unwrap();
    assert_eq!(pool.stats().live_slots, 3, "the head item and two members");
    accounted(&s);
    let ranked = s
        .get(b"z")
        .unwrap()
        .read_dict(|d| {
            d.ranked(0, 3)
                .into_iter()
                .map(|(m, sc)| (m.buf().cloned(), m.bytes().to_vec(), sc))
                .collect::<Vec<_>>()
        })
        .unwrap();
    assert_eq!(ranked.len(), 3);
    assert!(ranked[0].0.is_none(), "small: a heap copy");
    assert_eq!((&ranked[0].1[..], ranked[0].2), (&b"small"[..], 1.0));
    for (i, b) in [(1, 1u8), (2, 2)] {
        let held = ranked[i].0.as_ref().expect("large: the pooled slot");
        assert_eq!(&held[..], &big(b)[..]);
    }
    assert_eq!(ranked[1].2, 2.5);
    let by_score = s.get(b"z").unwrap().read_dict(|d| {
        d.by_score(std::ops::Bound::Excluded(2.0), std::ops::Bound::Unbounded)
            .map(|(m, _)| m.buf().is_some())
            .collect::<Vec<_>>()
    });
    assert_eq!(by_score, Some(vec![true, true]));
    drop(ranked);

    // A popped member outlives its removal; its slot goes with the reply.
    let popped = s
        .update_dict(b"z", Kind::ZSet, Growth::default(), |d| {
            d.pop_scored(1, false)
        })
        .unwrap();
    let (m, score) = &popped[0];
    assert!(matches!(m, Member::Shared(_)));
    assert_eq!((m.bytes(), *score), (&big(2)[..], 3.0));
    assert_eq!(pool.stats().live_slots, 3, "held by the pop's result");
    drop(popped);
    assert_eq!(pool.stats().live_slots, 2);
    accounted(&s);

    // A copy (COPY, RENAME) places its large members in slots of its own.
    let copy = s.get(b"z").unwrap().read_dict(|d| d.clone()).unwrap();
    s.put_dict(b"z2", Kind::ZSet, &copy, Meta::default())
        .unwrap();
    let shared = s.get(b"z2").unwrap().read_dict(|d| {
        d.ranked(0, 2)
            .iter()
            .map(|(m, _)| m.buf().map(|b| b[..] == big(1)[..]))
            .collect::<Vec<_>>()
    });
    assert_eq!(shared, Some(vec![None, Some(true)]));
    assert_eq!(pool.stats().live_slots, 4);
    accounted(&s);
    s.update_dict(b"z2", Kind::ZSet, Growth::default(), |d| {
        assert!(d.remove_scored(&big(1)));
        assert_eq!(d.rank(b"small"), Some(0));
    })
    .unwrap();
    assert_eq!(pool.stats().live_slots, 3);
    accounted(&s);
    drop(s);
    assert_eq!(pool.stats().live_slots, 0, "every slot returned");
}

/// Hashes whose values sit in pool memory give their segments back: a
/// segment drain that meets a value evicts the hash that owns it, as it
/// does a list for its chunks. Hashes of 2 KiB values fill most of a pool
/// no larger than the limit, then strings of another size class need its
/// segments: CLOCK eviction alone leaves every segment partly used, so
/// only drains make room (without them, strings evicted strings while
/// the hashes kept their segments). Every string stays, the store stays
/// within its limit, and what is left of the hashes reads back whole.
#[test]
fn pooled_hash_values_do_not_calcify_the_pool() {
    use granola_kv::store::Growth;
    const HASHES: usize = 350;
    let limit = 8 << 20;
    let pool = Pool::with_capacity(limit).unwrap();
    let s = Store::new(
        pool.clone(),
        StoreConfig {
            memory_limit: limit,
            pooled_element_min: 1024,
            ..Default::default()
        },
    );
    let value = |h: usize, f: usize| {
        let mut v = format!("h{h}|f{f}|").into_bytes();
        v.resize(2000, (h * 7 + f) as u8);
        v
    };
    for h in 0..HASHES {
        s.update_dict(
            format!("h{h}").as_bytes(),
            Kind::Hash,
            Growth {
                entries: 8,
                bytes: 8 * 2004,
            },
            |d| {
                for f in 0..8 {
                    d.insert(format!("f{f}").as_bytes(), &value(h, f));
                }
            },
        )
        .unwrap();
        assert!(s.stats().bytes <= limit);
    }
    assert_eq!(s.stats().evictions, 0, "6 MB of hashes fit");
    for i in 0..1000u32 {
        let v = vec![i as u8; 5000];
        s.set(&i.to_le_bytes(), &v, Meta::default(), SetMode::Set)
            .unwrap_or_else(|e| panic!("string {i}: {e:?} ({:?})", s.stats()));
        assert!(s.stats().bytes <= limit);
    }
    assert!(s.stats().segment_evictions > 0, "segments changed class");
    // 5 MB of strings fit the limit beside nothing else: none of them may
    // have been evicted to make room while old hash values kept segments.
    for i in 0..1000u32 {
        assert_eq!(val(&s, &i.to_le_bytes()), Some(vec![i as u8; 5000]), "{i}");
    }
    let mut whole = 0;
    for h in 0..HASHES {
        if let Some(item) = s.get(format!("h{h}").as_bytes()) {
            item.read_dict(|d| {
                for f in 0..8 {
                    assert_eq!(d.get(format!("f{f}").as_bytes()), Some(&value(h, f)[..]));
                }
            });
            whole += 1;
        }
    }
    println!("{whole} hashes left whole");
}

/// More size classes in use than the pool has segments: a pool of eight
/// segments under a 12 MiB limit, values of twelve sizes from 3 to 36 KiB
/// written round robin, each class wanting a segment of its own. A class
/// that finds no free slot and no free segment takes a free slot of a
/// class up to twice its size before it drains a segment (which would
/// evict up to 2 MiB of other items, only for that class to need one
/// again): the store keeps most of its limit filled, and the newest
/// values read back whole.
#[test]
fn more_classes_than_segments_keep_the_store_filled() {
    let limit = 12 << 20;
    let s = Store::new(
        Pool::with_capacity(16 << 20).unwrap(),
        StoreConfig {
            memory_limit: limit,
            ..Default::default()
        },
    );
    let sizes: Vec<usize> = (0..12).map(|i| 3000 + i * 3000).collect();
    const KEYS: u32 = 4000;
    for round in 0..3u32 {
        for k in 0..KEYS {
            let len = sizes[((k + round) % 12) as usize];
            let v = vec![(k + round) as u8; len];
            s.set(&k.to_le_bytes(), &v, Meta::default(), SetMode::Set)
                .unwrap_or_else(|e| panic!("{k}: {e:?}"));
        }
    }
    let st = s.stats();
    assert!(st.bytes <= limit);
    assert!(
        st.item_bytes > limit * 6 / 10,
        "the store holds {} of its {limit} bytes ({} evictions, {} segment drains)",
        st.item_bytes,
        st.evictions,
        st.segment_evictions
    );
    // What is stored is whole; the newest writes are mostly there (a
    // segment drain may still take a few).
    let mut present = 0;
    for k in KEYS - 100..KEYS {
        if let Some(v) = val(&s, &k.to_le_bytes()) {
            assert_eq!(
                v,
                vec![(k + 2) as u8; sizes[((k + 2) % 12) as usize]],
                "{k}"
            );
            present += 1;
        }
    }
    assert!(present >= 80, "{present} of the newest 100");
}

#[test]
fn active_expiry_removes_unread_expired_items_only() {
    use granola_kv::store::ExpireCycle;
    use std::time::Duration;
    let (s, clock) = store();
    let forever = Duration::from_secs(10);
    // No item ever had an expiry: the walk does not even start.
    for i in 0..100u32 {
        s.set(
            format!("plain{i}").as_bytes(),
            b"v",
            meta(0, 0),
            SetMode::Set,
        )
        .unwrap();
    }
    assert_eq!(s.expire_cycle(forever), ExpireCycle::default());
    for i in 0..300u32 {
        let at = if i % 3 == 0 { T0 + 100 } else { T0 + 10_000 };
        s.set(
            format!("ttl{i}").as_bytes(),
            b"v",
            meta(0, at),
            SetMode::Set,
        )
        .unwrap();
    }
    // A rewrite that drops the expiry, and an EXPIRE that adds one: the
    // index entry follows the item.
    s.set(b"ttl0", b"v", meta(0, 0), SetMode::Set).unwrap();
    assert!(s.expire(b"plain0", T0 + 100).is_some());
    // Nothing has expired yet: one whole turn, nothing removed.
    let c = s.expire_cycle(forever);
    assert!(c.buckets > 0 && c.removed == 0, "{c:?}");
    clock.advance_ms(100);
    // Off: nothing goes.
    s.set_active_expiry(false);
    assert_eq!(s.expire_cycle(forever), ExpireCycle::default());
    assert_eq!(s.len(), 400);
    s.set_active_expiry(true);
    // On: one turn removes the 99 expired ttl items and plain0, nothing
    // read them.
    let c = s.expire_cycle(forever);
    assert_eq!(c.removed, 100, "{c:?}");
    assert_eq!(s.len(), 300);
    assert_eq!(s.stats().expired, 100);
    assert!(s.get(b"ttl0").is_some() && s.get(b"plain0").is_none());
    assert!(s.get(b"ttl3").is_none() && s.get(b"ttl1").is_some());
    assert_eq!(s.expire_cycle(forever).removed, 0);
}
