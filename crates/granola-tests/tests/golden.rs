//! Golden byte vectors: the exact bytes of docs/wire-format.md's examples.

use granola::{Decode, DecodeOptions, Message, Pool};
use granola_tests::sample::{Inner, Sample};

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn pool() -> Pool {
    Pool::with_capacity(8 << 20).unwrap()
}

/// `m` serialized with copy threshold `threshold` is `expected`, and
/// decodes back to `m` both borrowed and owned.
fn check_round_trip(pool: &Pool, threshold: usize, m: &Sample<'_>, expected: &[u8]) {
    assert_eq!(
        m.to_sga_with(threshold).unwrap().to_vec(),
        expected,
        "encoded bytes differ from the golden vector"
    );
    assert_eq!(m.encoded_sizes_with(threshold).total_len(), expected.len());
    // Decode from a received buffer in the pool, as a datapath would: with
    // the same threshold, the fields the sender referenced are referenced
    // again on re-encode.
    let rx = pool.alloc_copy(expected).unwrap();
    let decoded = Sample::decode_buf_with(&rx, &DecodeOptions::default(), threshold).unwrap();
    assert_eq!(&decoded, m);
    assert_eq!(
        decoded.to_sga_with(threshold).unwrap().to_vec(),
        expected,
        "re-encoding the decoded message"
    );
    // Borrowed, from ordinary heap memory, the same bytes decode to the
    // same message.
    assert_eq!(&Sample::decode(expected).unwrap(), m);
}

#[test]
fn empty_message() {
    check_round_trip(&pool(), 1024, &Sample::default(), &hex("00 00 00 00"));
}

#[test]
fn one_scalar() {
    let m = Sample {
        id: 7,
        ..Default::default()
    };
    check_round_trip(
        &pool(),
        1024,
        &m,
        &hex("01 00 00 00 01 00 00 00 07 00 00 00 00 00 00 00 00"),
    );
}

const EXAMPLE_3_REFERENCED: &str = "
    01 00 00 00  2b 00 00 00
    07 00 00 00 00 00 00 00
    02 00 00 00 44 00 00 00
    02 00 00 00 2c 00 00 00
    02 00 00 00 3c 00 00 00
    00 01 06 04
    04 00 00 00 47 00 00 00
    01 00 00 00 46 00 00 00
    ff ff ff ff 02 00 00 00
    68 69 78
    61 62 63 64";

fn example_3(abcd: granola::HybridBytes<'_>) -> Sample<'_> {
    Sample {
        id: 7,
        name: "hi".into(),
        vals: vec![abcd, b"x".into()],
        nums: vec![-1, 2],
        ..Default::default()
    }
}

#[test]
fn copy_before_zero_copy() {
    let p = pool();
    let abcd = p.alloc_copy(b"abcd").unwrap();
    let m = example_3(abcd.clone().into());
    let expected = hex(EXAMPLE_3_REFERENCED);
    check_round_trip(&p, 4, &m, &expected);
    // The fused path: head = bytes 0..71, one zero-copy entry.
    let sizes = m.encoded_sizes_with(4);
    assert_eq!((sizes.header_len(), sizes.copy_len()), (68, 3));
    assert_eq!((sizes.zero_copy_count(), sizes.zero_copy_len()), (1, 4));
    let mut head = vec![0u8; sizes.head_len()];
    let mut entries = Vec::new();
    m.encode(&sizes, &mut head, |b| entries.push(b.clone()))
        .unwrap();
    assert_eq!(head, expected[..71]);
    assert_eq!(entries.len(), 1);
    assert!(entries[0].same_slot(&abcd));
}

#[test]
fn everything_copied_when_threshold_is_max() {
    let p = pool();
    let abcd = p.alloc_copy(b"abcd").unwrap();
    let m = example_3(abcd.into());
    let expected = hex("01 00 00 00  2b 00 00 00
         07 00 00 00 00 00 00 00
         02 00 00 00 44 00 00 00
         02 00 00 00 2c 00 00 00
         02 00 00 00 3c 00 00 00
         00 01 06 04
         04 00 00 00 46 00 00 00
         01 00 00 00 4a 00 00 00
         ff ff ff ff 02 00 00 00
         68 69 61 62 63 64 78");
    check_round_trip(&p, usize::MAX, &m, &expected);
    assert_eq!(m.encoded_sizes_with(usize::MAX).zero_copy_count(), 0);
}

#[test]
fn memory_outside_the_pool_is_copied_even_above_threshold() {
    let m = example_3(b"abcd".into()); // a static, not pool memory
    assert_eq!(m.encoded_sizes_with(0).zero_copy_count(), 0);
}

#[test]
fn nested_and_scalars() {
    let m = Sample {
        inner: Some(Inner {
            a: 5,
            payload: b"p".into(),
            ..Default::default()
        }),
        items: vec![
            Inner {
                a: 1,
                ..Default::default()
            },
            Inner::default(),
        ],
        flag: true,
        ratio: 0.5,
        ..Default::default()
    };
    let expected = hex("01 00 00 00 c0 03 00 00
         1a 00 00 00 2c 00 00 00
         02 00 00 00 46 00 00 00
         01 00 00 00 00 00 00 00
         00 00 00 00 00 00 e0 3f
         02 07 00 00
         01 00 00 00 03 00 00 00
         05 00 00 00 00 00 00 00
         01 00 00 00 6b 00 00 00
         00 01
         11 00 00 00 56 00 00 00
         04 00 00 00 67 00 00 00
         01 00 00 00 01 00 00 00
         01 00 00 00 00 00 00 00
         00
         00 00 00 00
         70");
    check_round_trip(&pool(), 1024, &m, &expected);
}

#[test]
fn unknown_fields_are_kept() {
    // Fields 11 and 40 (unknown to this schema, e.g. added by a newer
    // writer; 40 in a second bitmap word) beside field 1: field 1 reads
    // correctly, the two are kept, and re-encoding writes the same bytes.
    let bytes = hex("02 00 00 00  01 04 00 00  80 00 00 00
         07 00 00 00 00 00 00 00
         ff ff ff ff ff ff ff ff
         ee ee ee ee ee ee ee ee
         00 00 00");
    let mut m = Sample::decode(&bytes).unwrap();
    assert_eq!(m.id, 7);
    assert!(m.name.is_empty());
    assert_eq!(m.unknown_fields.numbers().collect::<Vec<_>>(), [11, 40]);
    assert_eq!(m.to_vec().unwrap(), bytes);
    m.unknown_fields.clear();
    let only_id = Sample {
        id: 7,
        ..Default::default()
    };
    assert_eq!(m, only_id);
}
