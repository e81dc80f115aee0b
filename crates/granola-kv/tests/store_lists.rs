//! Lists: push front/back, LRANGE edge cases, negative indices, WrongType,
//! zero-copy elements that outlive modifications.

use granola::Pool;
use granola_kv::store::{Kind, Meta, SetMode, Store, StoreConfig, StoreError};

fn store() -> Store {
    Store::new(
        Pool::with_capacity(32 << 20).unwrap(),
        StoreConfig {
            memory_limit: 16 << 20,
            shards: 8,
            ..Default::default()
        },
    )
}

fn range(s: &Store, k: &[u8], a: i64, b: i64) -> Vec<String> {
    match s.get(k) {
        Some(it) => it
            .list_range(a, b)
            .map(|e| String::from_utf8(e.to_vec()).unwrap())
            .collect(),
        None => Vec::new(),
    }
}

#[test]
fn push_back_and_front_like_redis() {
    let s = store();
    assert_eq!(s.list_push(b"l", &[b"a", b"b"], false), Ok(2)); // RPUSH l a b
    assert_eq!(s.list_push(b"l", &[b"c"], false), Ok(3)); // RPUSH l c
    assert_eq!(s.list_push(b"l", &[b"x", b"y"], true), Ok(5)); // LPUSH l x y
    assert_eq!(range(&s, b"l", 0, -1), ["y", "x", "a", "b", "c"]);
    let it = s.get(b"l").unwrap();
    assert_eq!((it.kind(), it.list_len()), (Kind::List, 5));
    assert_eq!(s.list_push(b"l", &[], false), Ok(5), "nothing pushed");
    assert_eq!(s.list_push(b"none", &[], false), Ok(0));
    assert!(s.get(b"none").is_none(), "an empty push creates nothing");
    assert_eq!(s.stats().lists, 1);
}

#[test]
fn lrange_edge_cases() {
    let s = store();
    let elems: Vec<String> = (0..10).map(|i| format!("e{i}")).collect();
    let refs: Vec<&[u8]> = elems.iter().map(|e| e.as_bytes()).collect();
    s.put_list(b"l", &refs, Meta::default()).unwrap();
    assert_eq!(range(&s, b"l", 0, 2), ["e0", "e1", "e2"]);
    assert_eq!(range(&s, b"l", -3, -1), ["e7", "e8", "e9"]);
    assert_eq!(range(&s, b"l", 8, 100), ["e8", "e9"]);
    assert_eq!(range(&s, b"l", -100, 0), ["e0"]);
    assert!(range(&s, b"l", 5, 4).is_empty());
    assert!(range(&s, b"l", 10, 20).is_empty());
    assert!(range(&s, b"l", 0, -11).is_empty());
    assert!(range(&s, b"l", -1, -2).is_empty());
    assert_eq!(range(&s, b"l", i64::MIN, i64::MAX).len(), 10);
    assert!(range(&s, b"missing", 0, -1).is_empty());
}

#[test]
fn lindex_negative_and_out_of_range() {
    let s = store();
    s.put_list(b"l", &[b"a", b"", b"ccc"], Meta::default())
        .unwrap();
    let it = s.get(b"l").unwrap();
    assert_eq!(&it.list_get(0).unwrap()[..], b"a");
    assert_eq!(&it.list_get(1).unwrap()[..], b"");
    assert_eq!(&it.list_get(-1).unwrap()[..], b"ccc");
    assert_eq!(&it.list_get(-3).unwrap()[..], b"a");
    assert!(it.list_get(3).is_none());
    assert!(it.list_get(-4).is_none());
    assert!(it.list_get(i64::MIN).is_none());
    // Strings have no elements.
    s.set(b"s", b"str", Meta::default(), SetMode::Set).unwrap();
    let st = s.get(b"s").unwrap();
    assert_eq!(st.list_len(), 0);
    assert!(st.list_get(0).is_none());
    assert_eq!(st.list_range(0, -1).count(), 0);
}

#[test]
fn wrong_type_and_overwrites() {
    let s = store();
    s.set(b"s", b"v", Meta::default(), SetMode::Set).unwrap();
    assert_eq!(
        s.list_push(b"s", &[b"x"], false),
        Err(StoreError::WrongType)
    );
    assert_eq!(s.get(b"s").unwrap().value_bytes(), b"v");
    // put_list and set replace whatever is there.
    s.put_list(b"s", &[b"x"], Meta::default()).unwrap();
    assert_eq!(s.get(b"s").unwrap().kind(), Kind::List);
    s.set(b"s", b"back", Meta::default(), SetMode::Set).unwrap();
    assert_eq!(s.get(b"s").unwrap().kind(), Kind::String);
    assert_eq!((s.stats().strings, s.stats().lists), (1, 0));
    // An empty list can be stored by put_list.
    s.put_list(
        b"empty",
        &[],
        Meta {
            flags: 2,
            expires_at_ms: 0,
        },
    )
    .unwrap();
    let e = s.get(b"empty").unwrap();
    assert_eq!((e.kind(), e.list_len(), e.flags()), (Kind::List, 0, 2));
}

#[test]
fn elements_are_zero_copy_and_survive_pushes() {
    let s = store();
    // Above the inline size (8 KiB): a chunked list from the start.
    let big = vec![0xABu8; 9000];
    s.list_push(b"l", &[&big, b"small"], false).unwrap();
    let it = s.get(b"l").unwrap();
    let e0 = it.list_get(0).unwrap();
    assert!(
        !e0.same_slot(&it.value()),
        "elements live in chunks, not the head"
    );
    assert!(s.pool().recover(&e0[10..20]).is_some(), "in pool memory");
    let before = it.cas();
    for i in 0..100u32 {
        s.list_push(b"l", &[&i.to_le_bytes()], i % 2 == 0).unwrap();
    }
    drop(it);
    assert!(
        e0.iter().all(|&b| b == 0xAB),
        "element intact after 100 pushes"
    );
    let now = s.get(b"l").unwrap();
    assert_eq!(now.list_len(), 102);
    assert_ne!(now.cas(), before);
    assert_eq!(&now.list_get(-1).unwrap()[..], 99u32.to_le_bytes());
    assert_eq!(&now.list_get(0).unwrap()[..], 98u32.to_le_bytes());
    drop(now);
    assert_eq!(
        s.pool().stats().live_slots,
        1 + s.stats().list_chunks,
        "the head and the chunks (e0's chunk is still in the list)"
    );
    let all = s.list_pop(b"l", 200, true).unwrap().unwrap();
    assert_eq!(all.len(), 102);
    let e0 = all.iter().find(|b| b.len() == 9000).unwrap().clone();
    drop(all);
    assert_eq!(s.stats().list_chunks, 0);
    assert_eq!(s.pool().stats().live_slots, 1, "only the chunk e0 holds");
    assert!(e0.iter().all(|&b| b == 0xAB));
}

#[test]
fn list_keeps_flags_and_expiry_on_push() {
    let s = store();
    let far = s.now_ms() + 3_600_000;
    s.put_list(
        b"l",
        &[b"a"],
        Meta {
            flags: 7,
            expires_at_ms: far,
        },
    )
    .unwrap();
    s.list_push(b"l", &[b"b"], false).unwrap();
    let it = s.get(b"l").unwrap();
    assert_eq!((it.flags(), it.expires_at_ms()), (7, far));
    assert!(s.delete(b"l"));
    assert!(s.get(b"l").is_none());
}

/// A list is not capped by one slot: 300k elements (the old one-slot
/// layout stopped near 116k) with pushes and pops at both ends, and the
/// memory it held is uncharged when it goes.
#[test]
fn long_lists_push_and_pop_at_both_ends() {
    let s = Store::new(
        Pool::with_capacity(128 << 20).unwrap(),
        StoreConfig {
            memory_limit: 96 << 20,
            shards: 8,
            ..Default::default()
        },
    );
    let base = s.stats().item_bytes;
    for i in 0..150_000u32 {
        let v = format!("r{i}");
        let w = format!("l{i}");
        s.list_push(b"big", &[v.as_bytes()], false).unwrap();
        s.list_push(b"big", &[w.as_bytes()], true).unwrap();
    }
    let it = s.get(b"big").unwrap();
    assert_eq!(it.list_len(), 300_000);
    assert_eq!(&it.list_get(0).unwrap()[..], b"l149999");
    assert_eq!(&it.list_get(-1).unwrap()[..], b"r149999");
    assert_eq!(&it.list_get(150_000).unwrap()[..], b"r0");
    let mid: Vec<Vec<u8>> = it
        .list_range(149_999, 150_000)
        .map(|b| b.to_vec())
        .collect();
    assert_eq!(mid, [b"l0".to_vec(), b"r0".to_vec()]);
    let charged = s.stats().item_bytes - base;
    // ~6 B of payload + 4 B of end table per element, in 2 KiB chunks.
    assert!(
        charged < 300_000 * 16,
        "{charged} bytes for 300k small elements"
    );
    let front = s.list_pop(b"big", 3, true).unwrap().unwrap();
    assert_eq!(
        front.iter().map(|b| b.to_vec()).collect::<Vec<_>>(),
        [
            b"l149999".to_vec(),
            b"l149998".to_vec(),
            b"l149997".to_vec()
        ]
    );
    let back = s.list_pop(b"big", 1, false).unwrap().unwrap();
    assert_eq!(&back[0][..], b"r149999");
    assert_eq!(s.get(b"big").unwrap().list_len(), 299_996);
    // Popping everything removes the key and uncharges its chunks.
    let all = s.list_pop(b"big", usize::MAX, true).unwrap().unwrap();
    assert_eq!(all.len(), 299_996);
    assert!(s.get(b"big").is_none());
    assert_eq!(s.stats().item_bytes, base);
    assert_eq!(s.list_pop(b"big", 1, true), Ok(None));
}

#[test]
fn max_list_len_is_enforced() {
    let s = Store::new(
        Pool::with_capacity(32 << 20).unwrap(),
        StoreConfig {
            memory_limit: 16 << 20,
            shards: 8,
            max_list_len: 3,
            ..Default::default()
        },
    );
    assert_eq!(s.list_push(b"l", &[b"a", b"b"], false), Ok(2));
    assert_eq!(
        s.list_push(b"l", &[b"c", b"d"], false),
        Err(StoreError::ListTooLong)
    );
    assert_eq!(
        s.get(b"l").unwrap().list_len(),
        2,
        "a refused push changes nothing"
    );
    assert_eq!(
        s.put_list(b"m", &[b"1", b"2", b"3", b"4"], Meta::default()),
        Err(StoreError::ListTooLong)
    );
}

/// Readers take ranges while writers push, pop and rewrite: every range is
/// a run of consecutive self-describing elements, and every element a
/// reader holds stays byte-identical afterwards.
#[test]
fn concurrent_readers_never_see_a_torn_list() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let s = std::sync::Arc::new(store());
    let elem = |i: u64| -> Vec<u8> {
        let mut v = format!("{i:012}:").into_bytes();
        v.resize(40 + (i % 200) as usize, b'a' + (i % 26) as u8);
        v
    };
    let check = |b: &[u8]| -> u64 {
        let i: u64 = std::str::from_utf8(&b[..12]).unwrap().parse().unwrap();
        assert_eq!(b, &elem(i)[..], "a torn element");
        i
    };
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (s, stop) = (s.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut next = 0u64;
            for round in 0..4000 {
                let batch: Vec<Vec<u8>> = (0..8).map(|k| elem(next + k)).collect();
                next += 8;
                let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
                s.list_push(b"q", &refs, false).unwrap();
                if round % 3 == 0 {
                    s.list_pop(b"q", 5, true).unwrap();
                }
            }
            stop.store(true, Ordering::Relaxed);
        })
    };
    let mut held = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        if let Some(it) = s.get(b"q") {
            let r: Vec<granola::Buf> = it.list_range(0, 50).collect();
            let ids: Vec<u64> = r.iter().map(|b| check(b)).collect();
            assert!(
                ids.windows(2).all(|w| w[1] == w[0] + 1),
                "a range is one state of the list"
            );
            if held.len() < 2000 {
                held.extend(r);
            }
        }
    }
    writer.join().unwrap();
    for b in &held {
        check(b);
    }
}

#[test]
fn every_push_and_pop_changes_the_cas() {
    let s = store();
    s.list_push(b"l", &[b"a"], false).unwrap();
    let mut seen = vec![s.get(b"l").unwrap().cas()];
    s.list_push(b"l", &[b"b", b"c"], true).unwrap();
    seen.push(s.get(b"l").unwrap().cas());
    s.list_pop(b"l", 1, false).unwrap();
    seen.push(s.get(b"l").unwrap().cas());
    s.list_pop(b"l", 0, false).unwrap();
    let unchanged = s.get(b"l").unwrap().cas();
    s.touch(b"l", 0);
    assert_eq!(s.get(b"l").unwrap().cas(), unchanged, "touch keeps the CAS");
    seen.push(unchanged);
    assert!(seen.windows(2).take(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(seen[2], seen[3], "popping nothing is no change");
}

/// A small list is one item (elements are slices of it); pushes and pops
/// rewrite it while it fits 8 KiB, a push past that moves it to chunks,
/// and pops that bring it to half that size make it one item again.
/// Elements handed out survive every rewrite.
#[test]
fn small_lists_are_one_item_until_they_grow() {
    let s = store();
    let v = |i: u32| vec![i as u8; 1000];
    s.list_push(b"l", &[&v(1), &v(2)], false).unwrap();
    let it = s.get(b"l").unwrap();
    assert!(it.is_inline_list());
    let e1 = it.list_get(1).unwrap();
    assert!(
        e1.same_slot(&it.value()),
        "an element is a slice of the item"
    );
    assert_eq!(
        s.pool().stats().live_slots,
        1,
        "one slot, no body or chunks"
    );
    assert_eq!(s.stats().list_chunks, 0);
    // LPUSH of several values pushes them one by one: reversed.
    assert_eq!(s.list_push(b"l", &[&v(3), &v(4)], true).unwrap(), 4);
    let it2 = s.get(b"l").unwrap();
    assert!(it2.is_inline_list());
    let firsts: Vec<u8> = it2.list_range(0, -1).map(|b| b[0]).collect();
    assert_eq!(firsts, [4, 3, 1, 2]);
    let visited: Vec<u8> = {
        let mut out = Vec::new();
        it2.list_visit(1, 3, |e| {
            out.push(e.bytes()[0]);
            true
        });
        out
    };
    assert_eq!(visited, [3, 1]);
    assert_ne!(it2.cas(), it.cas(), "a push is a write");
    // Popped elements stay slices of the item they were in.
    let popped = s.list_pop(b"l", 1, false).unwrap().unwrap();
    assert_eq!(popped[0][0], 2);
    assert!(popped[0].same_slot(&it2.value()));
    // Past 8 KiB: chunks.
    for i in 10..16 {
        s.list_push(b"l", &[&v(i)], false).unwrap();
    }
    let big = s.get(b"l").unwrap();
    assert!(!big.is_inline_list());
    assert_eq!(big.list_len(), 9);
    assert!(s.stats().list_chunks > 0);
    let all: Vec<u8> = big.list_range(0, -1).map(|b| b[0]).collect();
    assert_eq!(all, [4, 3, 1, 10, 11, 12, 13, 14, 15]);
    // Down to 5 KiB: still chunked (no moving back and forth at the
    // boundary); down to 3 KiB: one item again, same elements.
    s.list_pop(b"l", 4, true).unwrap();
    assert!(
        !s.get(b"l").unwrap().is_inline_list(),
        "above half: chunked"
    );
    s.list_pop(b"l", 2, true).unwrap();
    let back = s.get(b"l").unwrap();
    assert!(
        back.is_inline_list(),
        "at most half the inline size: one item"
    );
    let rest: Vec<u8> = back.list_range(0, -1).map(|b| b[0]).collect();
    assert_eq!(rest, [13, 14, 15]);
    assert_eq!(s.stats().list_chunks, 0, "the chunks were released");
    drop(back);
    s.list_pop(b"l", 2, true).unwrap();
    // Everything handed out earlier is intact.
    assert!(e1.iter().all(|&b| b == 2) && popped[0].iter().all(|&b| b == 2));
    assert!(it.list_range(0, -1).all(|b| b.len() == 1000));
    // Popping the last element removes the key; the slots go back once
    // the readers drop them.
    s.list_pop(b"l", 1, true).unwrap();
    assert!(s.get(b"l").is_none());
    drop((it, it2, big, e1, popped));
    assert_eq!(s.pool().stats().live_slots, 0);
    assert_eq!(s.stats().list_chunks, 0);
}

mod model {
    //! Pushes and pops of every count, at both ends, on lists that cross
    //! the inline size (8 KiB) in both directions, against a `VecDeque`.

    use super::store;
    use granola_kv::store::Store;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[derive(Debug, Clone)]
    enum Op {
        Push { front: bool, lens: Vec<usize> },
        Pop { front: bool, count: usize },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<bool>(), prop::collection::vec(0usize..1500, 1..4))
                .prop_map(|(front, lens)| Op::Push { front, lens }),
            (any::<bool>(), 0usize..6).prop_map(|(front, count)| Op::Pop { front, count }),
        ]
    }

    fn check(s: &Store, want: &VecDeque<Vec<u8>>) {
        match s.get(b"m") {
            None => assert!(want.is_empty(), "list gone, model has {}", want.len()),
            Some(it) => {
                assert_eq!(it.list_len(), want.len());
                let got: Vec<Vec<u8>> = it.list_range(0, -1).map(|b| b.to_vec()).collect();
                assert!(got.iter().eq(want.iter()), "elements differ");
                if let Some(last) = want.back() {
                    assert_eq!(&it.list_get(-1).unwrap()[..], &last[..]);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn lists_match_a_deque(ops in prop::collection::vec(op(), 1..60)) {
            let s = store();
            let mut want: VecDeque<Vec<u8>> = VecDeque::new();
            let mut next = 0u32;
            for op in ops {
                match op {
                    Op::Push { front, lens } => {
                        let vals: Vec<Vec<u8>> = lens
                            .iter()
                            .map(|&n| {
                                next += 1;
                                (0..n).map(|i| (next as usize + i) as u8).collect()
                            })
                            .collect();
                        let refs: Vec<&[u8]> = vals.iter().map(Vec::as_slice).collect();
                        let len = s.list_push(b"m", &refs, front).unwrap();
                        for v in vals {
                            if front { want.push_front(v) } else { want.push_back(v) }
                        }
                        prop_assert_eq!(len, want.len());
                    }
                    Op::Pop { front, count } => {
                        let got = s.list_pop(b"m", count, front).unwrap();
                        let expect: Vec<Vec<u8>> = (0..count.min(want.len()))
                            .map(|_| if front { want.pop_front() } else { want.pop_back() }.unwrap())
                            .collect();
                        match got {
                            None => prop_assert!(expect.is_empty()),
                            Some(g) => {
                                let g: Vec<Vec<u8>> = g.iter().map(|b| b.to_vec()).collect();
                                prop_assert_eq!(g, expect);
                            }
                        }
                    }
                }
                check(&s, &want);
            }
        }
    }
}
