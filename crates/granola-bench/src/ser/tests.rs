//! Unit tests of the harness and the library adapters.

use super::floors::Handwritten;
use super::shapes::{sample_bucket_size, SIZE_BUCKETS};
use super::*;

fn small_source() -> Source {
    Source::new(16 << 20, 7)
}

#[test]
fn every_decoder_returns_the_source_checksum() {
    let source = small_source();
    for shape in Shape::ALL {
        let n = if shape == Shape::E1m { 4 } else { 16 };
        let set = ShapeSet::generate(shape, &source, n, 3);
        for mut lib in all_libs() {
            lib.prepare(&set);
            for i in 0..n {
                let wire = lib.serialize(&set, i);
                assert!(
                    wire >= set.payload_bytes(i),
                    "{} {}: wire bytes {wire} < payload",
                    lib.name(),
                    shape.name()
                );
                if lib.can_decode() {
                    assert_eq!(
                        lib.decode_touch(i),
                        set.checksum(i),
                        "{} {} message {i}",
                        lib.name(),
                        shape.name()
                    );
                }
            }
            if lib.can_decode() {
                let sum: u64 = set
                    .decode_order()
                    .iter()
                    .map(|&w| lib.decode_touch(w))
                    .fold(0, u64::wrapping_add);
                let want: u64 = set
                    .decode_order()
                    .iter()
                    .map(|&w| set.checksum(w))
                    .fold(0, u64::wrapping_add);
                assert_eq!(sum, want, "{} {}", lib.name(), shape.name());
            }
        }
    }
}

#[test]
fn bucket_sampler_matches_the_distribution() {
    let mut rng = Rng::new(42);
    let n = 200_000;
    let mut counts = [0usize; SIZE_BUCKETS.len()];
    for _ in 0..n {
        let s = sample_bucket_size(&mut rng);
        let b = SIZE_BUCKETS
            .iter()
            .position(|&(lo, hi, _)| (lo..=hi).contains(&s))
            .expect("size in a bucket");
        counts[b] += 1;
    }
    let total: f64 = SIZE_BUCKETS.iter().map(|b| b.2).sum();
    for (k, &(lo, hi, w)) in SIZE_BUCKETS.iter().enumerate() {
        let got = counts[k] as f64 / n as f64 * 100.0;
        let want = w / total * 100.0;
        assert!(
            (got - want).abs() < 0.5,
            "bucket {lo}..={hi}: {got:.2}% vs {want:.2}%"
        );
    }
}

#[test]
fn shape_sets_are_deterministic_and_scattered() {
    let source = small_source();
    let a = ShapeSet::generate(Shape::C, &source, 64, 9);
    let b = ShapeSet::generate(Shape::C, &source, 64, 9);
    for i in 0..64 {
        assert_eq!(a.field_refs(i), b.field_refs(i));
        assert_eq!(a.num_fields(i), 8);
    }
    // Fields of a cold shape do not overlap and stay inside the area.
    let mut refs: Vec<FieldRef> = (0..64).flat_map(|i| a.field_refs(i).to_vec()).collect();
    refs.sort_by_key(|f| f.off);
    for w in refs.windows(2) {
        assert!(w[0].off + w[0].len <= w[1].off);
    }
    assert!(refs.last().map_or(0, |f| f.off + f.len) <= source.len());
    // The hot shape reuses one field.
    let h = ShapeSet::generate(Shape::AHot, &source, 8, 1);
    assert!((0..8).all(|i| h.field_refs(i) == h.field_refs(0)));
    assert!(h.decode_order().iter().all(|&w| w == 0));
}

#[test]
fn handwritten_decode_rejects_truncated_messages() {
    let source = small_source();
    let set = ShapeSet::generate(Shape::B, &source, 1, 1);
    let mut buf = Vec::new();
    let n = Handwritten::encode(&mut buf, &set, 0);
    assert_eq!(n, 8 + 2 * 8 + 4096);
    assert_eq!(Handwritten::decode(&buf, true), Some(set.checksum(0)));
    assert_eq!(Handwritten::decode(&buf[..n - 1], true), None);
    assert_eq!(Handwritten::decode(&buf[..12], true), None);
    assert_eq!(Handwritten::decode(&[], false), None);
}

#[test]
fn stats_and_json() {
    let s = Stats::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
    assert_eq!(s.median, 3.0);
    assert_eq!(s.p25, 2.0);
    assert_eq!(s.p75, 4.0);
    let r = Record {
        library: "x\"y".into(),
        shape: "a".into(),
        serialize: s,
        deserialize: None,
        wire_bytes: 10.0,
        payload_bytes: 8.0,
        messages: 3,
        reps: 5,
    };
    let j = to_json(&[r]);
    for key in [
        "\"library\": \"x\\\"y\"",
        "\"shape\": \"a\"",
        "\"serialize_ns\": 3.0",
        "\"deserialize_ns\": null",
        "\"wire_bytes\": 10.0",
    ] {
        assert!(j.contains(key), "{key} missing in {j}");
    }
}
