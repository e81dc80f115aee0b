//! Concurrency: threads SET/GET/APPEND/push on overlapping keys. Every value
//! is made of 16-byte chunks that encode (key, writer, sequence) plus a
//! checksum, so every read is verified byte for byte: a torn write, a value
//! of another key, or a recycled slot would fail the check.

use granola::Pool;
use granola_kv::store::{
    EvictionPolicy, Growth, Item, Kind, Meta, SetMode, Store, StoreConfig, StoreError,
};
use std::sync::Arc;

const CHUNK: usize = 16;
const KEYS: u32 = 48;
const THREADS: u32 = 6;
const OPS: u32 = if cfg!(debug_assertions) {
    20_000
} else {
    100_000
};

fn key(k: u32) -> [u8; 6] {
    let b = k.to_le_bytes();
    [b'k', b'-', b[0], b[1], b[2], b[3]]
}

fn chunk(k: u32, writer: u32, seq: u32) -> [u8; CHUNK] {
    let mut c = [0u8; CHUNK];
    c[0..4].copy_from_slice(&k.to_le_bytes());
    c[4..8].copy_from_slice(&writer.to_le_bytes());
    c[8..12].copy_from_slice(&seq.to_le_bytes());
    let sum = k.wrapping_mul(0x9E37_79B9) ^ writer.wrapping_mul(0x85EB_CA6B) ^ seq.rotate_left(13);
    c[12..16].copy_from_slice(&sum.to_le_bytes());
    c
}

fn check_chunk(k: u32, c: &[u8]) {
    let f = |i: usize| u32::from_le_bytes(c[i..i + 4].try_into().unwrap());
    assert_eq!(f(0), k, "a chunk of another key's value");
    let sum = k.wrapping_mul(0x9E37_79B9) ^ f(4).wrapping_mul(0x85EB_CA6B) ^ f(8).rotate_left(13);
    assert_eq!(f(12), sum, "torn chunk");
}

/// A list element or hash value: one or more chunks of key `k`.
fn check_element(k: u32, e: &[u8]) {
    assert!(!e.is_empty() && e.len() % CHUNK == 0, "length {}", e.len());
    e.chunks(CHUNK).for_each(|c| check_chunk(k, c));
}

fn check_item(k: u32, it: &Item) {
    assert_eq!(it.key(), key(k));
    match it.kind() {
        Kind::String => {
            let v = it.value_bytes();
            assert!(!v.is_empty() && v.len() % CHUNK == 0, "length {}", v.len());
            v.chunks(CHUNK).for_each(|c| check_chunk(k, c));
            let b = it.value();
            assert_eq!(&b[..], v);
        }
        Kind::List => {
            for e in it.list_range(0, -1) {
                check_element(k, &e);
            }
        }
        Kind::Hash => {
            it.read_dict(|d| {
                for (f, v) in d.iter() {
                    check_element(k, v);
                    assert_eq!(**f, v[4..12], "a value under another field");
                }
            });
        }
        Kind::Set | Kind::ZSet | Kind::Stream => panic!("no sets written"),
    }
}

/// xorshift: deterministic per thread, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 16) as u32
    }
}

fn run(store: Arc<Store>, threads: u32) -> u64 {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let s = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut rng = Rng(0x1234_5678 + t as u64 * 0x9E37);
                let mut held: Vec<(u32, Item)> = Vec::new();
                let mut verified = 0u64;
                for seq in 0..OPS {
                    let k = rng.next() % KEYS;
                    let op = rng.next() % 100;
                    let lists = k % 8 == 0; // some keys are lists
                    let hashes = k % 8 == 1; // some are hashes
                    if op < 55 {
                        if let Some(it) = s.get(&key(k)) {
                            check_item(k, &it);
                            verified += 1;
                            if rng.next() % 64 == 0 {
                                held.push((k, it));
                            }
                        }
                    } else if lists {
                        let c = chunk(k, t, seq);
                        match s.list_push(&key(k), &[&c], op % 2 == 0) {
                            Ok(n) if n > 64 => {
                                // keep lists short: start over
                                let _ = s.put_list(&key(k), &[&c], Meta::default());
                            }
                            Ok(_) | Err(StoreError::OutOfMemory) => {}
                            Err(e) => panic!("list push: {e:?}"),
                        }
                    } else if hashes {
                        // Fields name their value's (thread, seq): an
                        // entry whose value came from another is torn.
                        let c = chunk(k, t, seq);
                        let growth = Growth {
                            entries: 1,
                            bytes: 8 + CHUNK,
                        };
                        match s.update_dict(&key(k), Kind::Hash, growth, |d| {
                            d.insert(&c[4..12], &c);
                            if d.len() > 32 {
                                let i = rng.next() as usize % d.len();
                                d.remove_at(i);
                            }
                        }) {
                            Ok(()) | Err(StoreError::OutOfMemory) => {}
                            Err(e) => panic!("hash write: {e:?}"),
                        }
                    } else if op < 80 {
                        let n = 1 + rng.next() as usize % 12;
                        let v: Vec<u8> = (0..n).flat_map(|_| chunk(k, t, seq)).collect();
                        match s.set(&key(k), &v, Meta::default(), SetMode::Set) {
                            Ok(_) | Err(StoreError::OutOfMemory) => {}
                            Err(e) => panic!("set: {e:?}"),
                        }
                    } else if op < 95 {
                        let mode = if op % 2 == 0 {
                            SetMode::Append
                        } else {
                            SetMode::Prepend
                        };
                        match s.set(&key(k), &chunk(k, t, seq), Meta::default(), mode) {
                            Ok(_) | Err(StoreError::NotStored) | Err(StoreError::OutOfMemory) => {}
                            Err(StoreError::TooLarge) => {
                                s.delete(&key(k));
                            }
                            Err(e) => panic!("append: {e:?}"),
                        }
                    } else {
                        s.delete(&key(k));
                    }
                    if held.len() > 32 {
                        for (k, it) in held.drain(..) {
                            check_item(k, &it); // still intact after churn
                        }
                    }
                }
                for (k, it) in held {
                    check_item(k, &it);
                }
                verified
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

fn config(limit: usize, max_item: usize) -> StoreConfig {
    StoreConfig {
        memory_limit: limit,
        shards: 8, // few shards: more writer contention on the same locks
        max_item_size: max_item,
        // Hash values (one chunk) in pool memory, fields on the heap:
        // values that replies would reference are checked like strings.
        pooled_element_min: CHUNK,
        ..Default::default()
    }
}

/// Pool slots the store holds: items, list chunks, and the hash values
/// in pool memory (counted key by key: call only when writers stopped).
fn stored_slots(store: &Store) -> usize {
    let pooled: usize = (0..KEYS)
        .filter_map(|k| store.get(&key(k)))
        .filter_map(|it| {
            it.read_dict(|d| {
                d.iter()
                    .map(|(f, v)| usize::from(f.buf().is_some()) + usize::from(v.buf().is_some()))
                    .sum::<usize>()
            })
        })
        .sum();
    store.len() + store.stats().list_chunks + pooled
}

#[test]
fn overlapping_writers_and_lock_free_readers() {
    let store = Arc::new(Store::new(
        Pool::with_capacity(64 << 20).unwrap(),
        config(32 << 20, 8 << 10),
    ));
    let verified = run(Arc::clone(&store), THREADS);
    assert!(verified > OPS as u64, "readers saw values ({verified})");
    for k in 0..KEYS {
        if let Some(it) = store.get(&key(k)) {
            check_item(k, &it);
        }
    }
    let st = store.stats();
    assert_eq!(st.evictions, 0);
    assert_eq!(
        store.pool().stats().live_slots,
        stored_slots(&store),
        "no slot leaked"
    );
    assert_eq!(
        st.item_bytes,
        store.pool().stats().live_bytes + st.list_span_bytes + st.dict_bytes
    );
    assert!(st.dict_bytes > 0, "hashes were stored");
    assert!(
        stored_slots(&store) > store.len() + st.list_chunks,
        "hash values were in pool memory"
    );
    store.flush_all();
    let st = store.stats();
    assert_eq!((st.item_bytes, st.dict_bytes), (0, 0), "{st:?}");
}

#[test]
fn readers_and_writers_while_evicting() {
    // A limit far below the working set: the CLOCK hand runs all the time,
    // under readers that hold items.
    let store = Arc::new(Store::new(
        Pool::with_capacity(16 << 20).unwrap(),
        config(96 << 10, 4 << 10),
    ));
    run(Arc::clone(&store), THREADS);
    let st = store.stats();
    assert!(st.bytes <= st.limit, "{st:?}");
    assert!(st.evictions > 0, "{st:?}");
    assert_eq!(
        store.pool().stats().live_slots,
        stored_slots(&store),
        "no slot leaked"
    );
}

#[test]
fn concurrent_index_growth() {
    // Many distinct keys from several threads: shards double while others
    // read; every key written must be readable with its own value.
    let store = Arc::new(Store::new(
        Pool::with_capacity(64 << 20).unwrap(),
        StoreConfig {
            memory_limit: 48 << 20,
            shards: 4,
            ..Default::default()
        },
    ));
    let per = if cfg!(debug_assertions) {
        10_000u32
    } else {
        50_000
    };
    let handles: Vec<_> = (0..4u32)
        .map(|t| {
            let s = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..per {
                    let k = t * per + i;
                    let c = chunk(k, t, i);
                    s.set(&key(k), &c, Meta::default(), SetMode::Set).unwrap();
                    // Read back an earlier key of another thread's range too.
                    for kk in [k, (k * 7919) % (4 * per)] {
                        if let Some(it) = s.get(&key(kk)) {
                            check_item(kk, &it);
                        } else {
                            assert_ne!(kk, k, "own key {k} missing right after set");
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(store.len(), 4 * per as usize);
    for k in 0..4 * per {
        check_item(k, &store.get(&key(k)).expect("every key stays"));
    }
}

/// Stores at key `k` a string of `chunks` chunks by writer `t`'s
/// operation `seq` (a refusal for memory is an outcome, not an error).
fn set_string(s: &Store, k: u32, t: u32, seq: u32, chunks: usize) {
    let v: Vec<u8> = (0..chunks).flat_map(|_| chunk(k, t, seq)).collect();
    match s.set(&key(k), &v, Meta::default(), SetMode::Set) {
        Ok(_) | Err(StoreError::OutOfMemory) => {}
        Err(e) => panic!("set: {e:?}"),
    }
}

/// `noeviction` in a pool with little room, while value sizes drift
/// (each thread moves through three sizes): writes of a new size make
/// the store compact, moving items into free slots of other segments,
/// while readers hold and check items and other writers replace or
/// delete them. Nothing is evicted, every read verifies byte for byte
/// (a moved item is the same bytes; a held one keeps its old slot), and
/// no slot leaks.
#[test]
fn readers_and_writers_while_compacting() {
    let store = Arc::new(Store::new(
        Pool::with_capacity(12 << 20).unwrap(),
        StoreConfig {
            policy: EvictionPolicy::NoEviction,
            ..config(8 << 20, 8 << 10)
        },
    ));
    let keys = 20_000u32;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let s = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut rng = Rng(0x5eed_0000 + u64::from(t) * 0x9E37);
                let mut held: Vec<(u32, Item)> = Vec::new();
                let ops = OPS * 3;
                for seq in 0..ops {
                    // 96, 400, then 1504 bytes: three size classes in turn.
                    let chunks = [6, 25, 94][(seq / (ops / 3)).min(2) as usize];
                    let k = rng.next() % keys;
                    let op = rng.next() % 100;
                    if op < 45 {
                        if let Some(it) = s.get(&key(k)) {
                            check_item(k, &it);
                            if rng.next() % 64 == 0 {
                                held.push((k, it));
                            }
                        }
                    } else if op < 85 {
                        set_string(&s, k, t, seq, chunks);
                    } else {
                        s.delete(&key(k));
                    }
                    if held.len() > 32 {
                        for (k, it) in held.drain(..) {
                            check_item(k, &it);
                        }
                    }
                }
                for (k, it) in held {
                    check_item(k, &it);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let st = store.stats();
    println!("{st:?}");
    assert_eq!(st.evictions, 0, "{st:?}");
    assert!(st.segment_rescues > 0, "nothing moved: {st:?}");
    assert!(st.bytes <= st.limit, "{st:?}");
    for k in 0..keys {
        if let Some(it) = store.get(&key(k)) {
            check_item(k, &it);
        }
    }
    assert_eq!(
        store.pool().stats().live_slots,
        store.len(),
        "no slot leaked"
    );
}

/// [`readers_and_writers_while_compacting`] with collections in the
/// segments that must be emptied, under `noeviction`: in the first third
/// of the run a quarter of the keys grow lists of 1 KiB elements (past the
/// inline size, so in chunks) and a quarter hashes of 1 KiB values (each
/// in a pool slot of its own); then most of them are deleted while string
/// sizes drift through two more classes, so a compaction must move the
/// surviving collections' chunks and values, under their body's lock.
/// Readers hold elements as replies would and check every read. Nothing
/// is evicted, a held element keeps its bytes, and no slot leaks.
#[test]
fn collections_while_compacting() {
    const ELEMENT: usize = 64 * CHUNK;
    let store = Arc::new(Store::new(
        Pool::with_capacity(16 << 20).unwrap(),
        StoreConfig {
            policy: EvictionPolicy::NoEviction,
            pooled_element_min: ELEMENT,
            ..config(8 << 20, 8 << 10)
        },
    ));
    // Keys below 1000: collections (a list where k % 4 == 0, a hash
    // where k % 4 == 1); the others strings.
    let keys = 8_000u32;
    let element = |k: u32, t: u32, seq: u32| -> Vec<u8> {
        (0..ELEMENT / CHUNK)
            .flat_map(|_| chunk(k, t, seq))
            .collect()
    };
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let s = Arc::clone(&store);
            std::thread::spawn(move || {
                let mut rng = Rng(0xc011_0000 + u64::from(t) * 0x9E37);
                // Elements as replies hold them: (key, bytes).
                let mut held: Vec<(u32, granola::Buf)> = Vec::new();
                let ops = OPS;
                for seq in 0..ops {
                    let phase = (seq / (ops / 3)).min(2);
                    // Half the operations on the collections' keys.
                    let k = match rng.next() % 2 {
                        0 => rng.next() % 1000,
                        _ => 1000 + rng.next() % (keys - 1000),
                    };
                    let op = rng.next() % 100;
                    let collection = k < 1000 && k % 4 < 2;
                    // One collection in four survives the later phases.
                    let survives = k % 8 < 2;
                    if op < 40 {
                        if let Some(it) = s.get(&key(k)) {
                            check_item(k, &it);
                            if rng.next() % 16 == 0 {
                                let b = match it.kind() {
                                    Kind::List => it.list_get(0),
                                    Kind::Hash => it
                                        .read_dict(|d| {
                                            d.iter().next().and_then(|(_, v)| v.buf().cloned())
                                        })
                                        .flatten(),
                                    _ => None,
                                };
                                held.extend(b.map(|b| (k, b)));
                            }
                        }
                    } else if collection && phase > 0 {
                        if !survives {
                            s.delete(&key(k));
                        }
                    } else if collection && k % 4 == 0 {
                        // Ten at a time: past the inline size at once.
                        let e = element(k, t, seq);
                        match s.list_push(&key(k), &[&e[..]; 10], op % 2 == 0) {
                            Ok(n) if n > 20 => {
                                let _ = s.list_pop(&key(k), n - 12, op % 3 == 0);
                            }
                            Ok(_) | Err(StoreError::OutOfMemory) => {}
                            Err(e) => panic!("list push: {e:?}"),
                        }
                    } else if collection {
                        let e = element(k, t, seq);
                        let growth = Growth {
                            entries: 1,
                            bytes: 8 + ELEMENT,
                        };
                        match s.update_dict(&key(k), Kind::Hash, growth, |d| {
                            d.insert(&e[4..12], &e);
                            if d.len() > 8 {
                                let i = rng.next() as usize % d.len();
                                d.remove_at(i);
                            }
                        }) {
                            Ok(()) | Err(StoreError::OutOfMemory) => {}
                            Err(e) => panic!("hash write: {e:?}"),
                        }
                    } else if op < 90 {
                        // 96, 400, then 1504 bytes: three size classes in turn.
                        let chunks = [6, 25, 94][phase as usize];
                        set_string(&s, k, t, seq, chunks);
                    } else {
                        s.delete(&key(k));
                    }
                    if held.len() > 32 {
                        for (k, b) in held.drain(..) {
                            check_element(k, &b);
                        }
                    }
                }
                for (k, b) in held {
                    check_element(k, &b);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let st = store.stats();
    println!("{st:?}");
    assert_eq!(st.evictions, 0, "{st:?}");
    assert!(
        st.segment_chunk_moves > 0,
        "no chunk or element moved: {st:?}"
    );
    assert!(st.bytes <= st.limit, "{st:?}");
    let mut pooled = 0;
    for k in 0..keys {
        if let Some(it) = store.get(&key(k)) {
            check_item(k, &it);
            pooled += it
                .read_dict(|d| d.iter().filter(|(_, v)| v.buf().is_some()).count())
                .unwrap_or(0);
        }
    }
    assert_eq!(
        store.pool().stats().live_slots,
        store.len() + store.stats().list_chunks + pooled,
        "no slot leaked"
    );
}
