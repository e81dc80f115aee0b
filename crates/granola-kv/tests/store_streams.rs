//! Streams in the store, against a model: random appends (small entries on
//! the heap, large ones in pool slots), deletes and trims leave exactly
//! the model's entries, in ID order, with their bytes; the accounting
//! (`item_bytes` = pool slots + heap bytes) holds after every step; an
//! entry a reader holds keeps its bytes after it is deleted; a copy gets
//! slots of its own; and every slot returns when the store goes.

use granola::Pool;
use granola_kv::store::{
    encode_fields, field_ranges, Dict, Growth, Kind, Meta, Store, StoreConfig, StreamId,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;

const MIN_POOLED: usize = 256;

fn store() -> (Pool, Store) {
    // As large as the store's limit: a run's entries fall in many size
    // classes, and a copy doubles them, so a smaller pool could run out
    // of segments for a new class (OutOfMemory) before the limit does.
    let pool = Pool::with_capacity(64 << 20).unwrap();
    let s = Store::new(
        pool.clone(),
        StoreConfig {
            pooled_element_min: MIN_POOLED,
            ..Default::default()
        },
    );
    (pool, s)
}

#[derive(Clone, Debug)]
enum Op {
    /// Append an entry whose value is this long (seeded by its ID).
    Append(usize),
    /// Delete the model's entry at this position (mod its length).
    Delete(usize),
    /// Keep at most this many entries.
    MaxLen(usize),
    /// Drop entries below the model's entry at this position.
    MinId(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop_oneof![0usize..64, 300usize..3000].prop_map(Op::Append),
        2 => any::<usize>().prop_map(Op::Delete),
        1 => (0usize..40).prop_map(Op::MaxLen),
        1 => any::<usize>().prop_map(Op::MinId),
    ]
}

/// The value of entry `id`: its ID's bytes, repeated to `len`.
fn value(id: StreamId, len: usize) -> Vec<u8> {
    id.to_bytes().iter().copied().cycle().take(len).collect()
}

fn entries(d: &Dict) -> Vec<(StreamId, Vec<Vec<u8>>)> {
    d.stream_range(Bound::Unbounded, Bound::Unbounded)
        .map(|e| {
            let b = e.fields.bytes();
            (e.id, field_ranges(b).map(|r| b[r].to_vec()).collect())
        })
        .collect()
}

/// An entry's encoded fields.
fn enc(parts: &[&[u8]]) -> Vec<u8> {
    encode_fields(parts.iter().copied()).unwrap()
}

fn check_accounting(pool: &Pool, s: &Store) {
    let st = s.stats();
    assert_eq!(
        st.item_bytes,
        pool.stats().live_bytes + st.dict_bytes,
        "pool slots and heap bytes, each counted once: {st:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn streams_match_a_model(ops in proptest::collection::vec(op(), 1..120)) {
        let (pool, s) = store();
        let mut model: BTreeMap<StreamId, Vec<Vec<u8>>> = BTreeMap::new();
        let mut next = 1u64;
        for op in ops {
            let growth = Growth { entries: 1, bytes: 3100 };
            s.update_dict(b"s", Kind::Stream, growth, |d| match op {
                Op::Append(len) => {
                    let id = StreamId { ms: next / 3, seq: next % 3 };
                    next += 1;
                    let parts = vec![b"v".to_vec(), value(id, len)];
                    let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                    d.stream_append(id, enc(&slices));
                    model.insert(id, parts);
                }
                Op::Delete(i) if !model.is_empty() => {
                    let id = *model.keys().nth(i % model.len()).unwrap();
                    assert!(d.stream_remove(id));
                    assert!(!d.stream_remove(id));
                    model.remove(&id);
                }
                Op::MaxLen(n) => {
                    let removed = d.stream_trim(usize::MAX, |_, left| left > n);
                    assert_eq!(removed, model.len().saturating_sub(n));
                    while model.len() > n {
                        model.pop_first();
                    }
                }
                Op::MinId(i) if !model.is_empty() => {
                    let min = *model.keys().nth(i % model.len()).unwrap();
                    d.stream_trim(usize::MAX, |id, _| id < min);
                    model.retain(|&id, _| id >= min);
                }
                Op::Delete(_) | Op::MinId(_) => {}
            })
            .unwrap();
            check_accounting(&pool, &s);
            // Nothing is created until the first append; then the stream
            // stays, even when emptied.
            let Some(item) = s.get(b"s") else {
                prop_assert!(next == 1, "the stream vanished");
                continue;
            };
            let got = item.read_dict(entries).unwrap();
            let want: Vec<_> = model.iter().map(|(k, v)| (*k, v.clone())).collect();
            prop_assert_eq!(got, want);
        }
        if next == 1 {
            return Ok(());
        }
        // A copy: same entries and bookkeeping, slots of its own.
        let copy = s.get(b"s").unwrap().read_dict(Dict::clone).unwrap();
        s.put_dict(b"c", Kind::Stream, &copy, Meta::default()).unwrap();
        check_accounting(&pool, &s);
        let (a, b) = (s.get(b"s").unwrap(), s.get(b"c").unwrap());
        prop_assert_eq!(a.read_dict(entries), b.read_dict(entries));
        prop_assert_eq!(a.read_dict(Dict::stream_meta), b.read_dict(Dict::stream_meta));
        drop((a, b));
        drop(s);
        prop_assert_eq!(pool.stats().live_slots, 0, "every slot returned");
    }
}

/// A large entry a reader holds (as a reply does) keeps its bytes after
/// the entry is deleted and the stream is written again.
#[test]
fn a_held_entry_outlives_its_deletion() {
    let (pool, s) = store();
    let id = StreamId { ms: 1, seq: 0 };
    let big = value(id, 4000);
    let grow = Growth {
        entries: 1,
        bytes: 4100,
    };
    s.update_dict(b"s", Kind::Stream, grow, |d| {
        d.stream_append(id, enc(&[b"f", &big]))
    })
    .unwrap();
    let held = s
        .get(b"s")
        .unwrap()
        .read_dict(|d| d.stream_first().unwrap().fields.buf().cloned())
        .unwrap()
        .expect("a large entry is in pool memory");
    s.update_dict(b"s", Kind::Stream, grow, |d| {
        assert!(d.stream_remove(id));
        let next = StreamId { ms: 2, seq: 0 };
        d.stream_append(next, enc(&[b"f", &value(next, 4000)]));
    })
    .unwrap();
    let parts: Vec<&[u8]> = field_ranges(&held).map(|r| &held[r]).collect();
    assert_eq!(parts, [&b"f"[..], &big[..]]);
    // Held, the old slot is pinned: live in the pool, no longer stored.
    assert!(s.stats().pinned_bytes > 0);
    drop(held);
    check_accounting(&pool, &s);
    drop(s);
    assert_eq!(pool.stats().live_slots, 0);
}

/// A stream is its own type: the other collection writers refuse it, and
/// a stream write refuses the other kinds.
#[test]
fn streams_are_their_own_type() {
    let (_pool, s) = store();
    s.update_dict(b"s", Kind::Stream, Growth::default(), |d| {
        d.stream_append(StreamId { ms: 1, seq: 1 }, enc(&[b"f", b"v"]))
    })
    .unwrap();
    assert_eq!(s.get(b"s").unwrap().kind(), Kind::Stream);
    for kind in [Kind::Hash, Kind::Set, Kind::ZSet] {
        assert!(s
            .update_dict(b"s", kind, Growth::default(), |_| ())
            .is_err());
    }
    s.update_dict(b"h", Kind::Hash, Growth::default(), |d| {
        d.insert(b"f", b"v")
    })
    .unwrap();
    assert!(s
        .update_dict(b"h", Kind::Stream, Growth::default(), |_| ())
        .is_err());
    let hash = s.get(b"h").unwrap().read_dict(Dict::clone).unwrap();
    assert!(s
        .put_dict(b"x", Kind::Stream, &hash, Meta::default())
        .is_err());
}

/// Consumer groups are charged to the limit as they grow and shrink: the
/// accounting holds after every change, and destroying the group gives
/// back exactly what it took.
#[test]
fn consumer_groups_are_charged() {
    let (pool, s) = store();
    let grow = Growth {
        entries: 64,
        bytes: 64 * 40,
    };
    s.update_dict(b"s", Kind::Stream, grow, |d| {
        for ms in 1..=50 {
            let id = StreamId { ms, seq: 0 };
            d.stream_append(id, enc(&[b"f", &value(id, 20)]));
        }
    })
    .unwrap();
    let bytes = |s: &Store| s.stats().item_bytes;
    let stream_only = bytes(&s);
    let step = |s: &Store, f: &mut dyn FnMut(&mut Dict)| {
        s.update_dict(b"s", Kind::Stream, grow, |d| f(d)).unwrap();
        check_accounting(&pool, s);
    };
    step(&s, &mut |d| {
        d.edit_stream_groups(|g| g.create(b"group", StreamId::MIN, Some(0)));
    });
    let with_group = bytes(&s);
    assert!(with_group > stream_only);
    step(&s, &mut |d| {
        d.edit_stream_groups(|g| {
            g.edit(b"group", |e| {
                e.touch_consumer(b"alice", 1);
                for ms in 1..=50 {
                    e.deliver(StreamId { ms, seq: 0 }, b"alice", 1);
                }
            })
        });
    });
    let delivered = bytes(&s);
    assert!(
        delivered >= with_group + 50 * 64,
        "{delivered} vs {with_group}"
    );
    step(&s, &mut |d| {
        d.edit_stream_groups(|g| {
            g.edit(b"group", |e| {
                for ms in 1..=25 {
                    e.release(StreamId { ms, seq: 0 });
                }
            })
        });
    });
    assert!(bytes(&s) < delivered);
    step(&s, &mut |d| {
        d.edit_stream_groups(|g| g.destroy(b"group"));
    });
    assert_eq!(bytes(&s), stream_only, "the group's bytes all given back");
}
