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
    let big = vec![0xABu8; 4000];
    s.list_push(b"l", &[&big, b"small"], false).unwrap();
    let it = s.get(b"l").unwrap();
    let e0 = it.list_get(0).unwrap();
    assert!(e0.same_slot(&it.value()), "elements share the item's slot");
    assert!(s.pool().recover(&e0[10..20]).is_some(), "in pool memory");
    let before = it.cas();
    for i in 0..100u32 {
        s.list_push(b"l", &[&i.to_le_bytes()], i % 2 == 0).unwrap();
    }
    drop(it);
    assert!(
        e0.iter().all(|&b| b == 0xAB),
        "element intact after 100 copy-on-write pushes"
    );
    let now = s.get(b"l").unwrap();
    assert_eq!(now.list_len(), 102);
    assert_ne!(now.cas(), before);
    assert_eq!(&now.list_get(-1).unwrap()[..], 99u32.to_le_bytes());
    assert_eq!(&now.list_get(0).unwrap()[..], 98u32.to_le_bytes());
    assert_eq!(
        s.pool().stats().live_slots,
        2,
        "the stored list + the one e0 holds"
    );
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
