//! Hostile inputs against the library's bounds: aliased offsets cannot
//! amplify decoded memory past the documented budget, re-encoding what
//! aliasing inflated fails cleanly, and stale `EncodedSizes` are an error
//! in every build.

use granola::{Decode, DecodeErrorKind as K, DecodeOptions, EncodeError, Message};
use granola_tests::lang::{Maps, Wide};
use granola_tests::recursive::{Forest, Tree};
use granola_tests::sample::Sample;

fn le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A root with one repeated-message field `field` (in word 0) whose `n`
/// entries all point at a single empty header.
fn aliased_list(field: u32, n: u32) -> Vec<u8> {
    let entries_at = 17u32;
    let empty_at = entries_at + 8 * n;
    let mut v = le(&[1, 1 << (field - 1), n, entries_at]);
    v.push(granola::wire::kind::LIST_MESSAGE);
    for _ in 0..n {
        v.extend(le(&[4, empty_at]));
    }
    v.extend(le(&[0]));
    v
}

#[test]
fn aliased_entries_of_wide_messages_hit_the_memory_budget() {
    let n = 100_000;
    let input = aliased_list(1, n);
    let limit = DecodeOptions::default().decoded_bytes_limit(input.len());
    let wanted = n as usize * std::mem::size_of::<Maps<'_>>();
    assert!(wanted > limit, "test input must exceed the budget");
    // The list's storage is charged before its Vec is allocated.
    let e = Wide::decode(&input).unwrap_err();
    assert_eq!(e.kind, K::DecodedTooLarge);
}

#[test]
fn decoded_memory_stays_within_the_documented_bound() {
    // Small structs: the aliased list decodes, and what it allocates (one
    // Vec of trees; empty trees allocate nothing else) is in the bound.
    let input = aliased_list(1, 50_000);
    let limit = DecodeOptions::default().decoded_bytes_limit(input.len());
    let f = Forest::decode(&input).unwrap();
    assert_eq!(f.trees.len(), 50_000);
    let allocated = f.trees.capacity() * std::mem::size_of::<Tree>();
    assert!(allocated <= limit, "{allocated} > {limit}");
    // A stricter factor turns the same input into an error.
    let strict = DecodeOptions {
        decoded_bytes_per_input_byte: 1,
        ..DecodeOptions::default()
    };
    assert_eq!(
        Forest::decode_with(&input, &strict).unwrap_err().kind,
        K::DecodedTooLarge
    );
    // And the absolute cap holds whatever the input length.
    let capped = DecodeOptions {
        max_decoded_bytes: 1 << 16,
        ..DecodeOptions::default()
    };
    assert_eq!(
        Forest::decode_with(&input, &capped).unwrap_err().kind,
        K::DecodedTooLarge
    );
}

#[test]
fn re_encoding_aliased_data_past_4_gib_is_an_error() {
    // 4200 entries of `vals` (field 4) all pointing at one 1 MiB region:
    // about 1 MiB of input that re-encodes to 4.1 GiB.
    let n = 4200u32;
    let data = 1u32 << 20;
    let entries_at = 17u32;
    let data_at = entries_at + 8 * n;
    let mut input = le(&[1, 1 << 3, n, entries_at]);
    input.push(granola::wire::kind::LIST_BYTES);
    for _ in 0..n {
        input.extend(le(&[data, data_at]));
    }
    input.resize(input.len() + data as usize, 7);
    let m = Sample::decode(&input).unwrap();
    assert_eq!(m.vals.len(), n as usize);
    assert!(m.encoded_len() > u32::MAX as usize);
    // Errors, before any allocation of the object's size.
    assert_eq!(m.to_vec().unwrap_err(), EncodeError::TooLarge);
    assert_eq!(m.to_sga().unwrap_err(), EncodeError::TooLarge);
    let sizes = m.encoded_sizes();
    let mut head = vec![0u8; 64];
    assert_eq!(
        m.encode(&sizes, &mut head, |_| {}).unwrap_err(),
        EncodeError::TooLarge
    );
}

#[test]
fn stale_sizes_are_an_error_in_every_build() {
    let mut m = Sample {
        id: 1,
        name: "short".into(),
        ..Default::default()
    };
    let sizes = m.encoded_sizes();
    let mut head = vec![0u8; 4096];

    // The message grows after sizing: more header and copied bytes.
    m.name = "a longer name than before".into();
    m.nums.push(5);
    assert_eq!(
        m.encode(&sizes, &mut head, |_| {}).unwrap_err(),
        EncodeError::StaleSizes
    );
    // Or shrinks.
    let big = m.encoded_sizes();
    m.nums.clear();
    assert_eq!(
        m.encode(&big, &mut head, |_| {}).unwrap_err(),
        EncodeError::StaleSizes
    );
    // Sizes of another message, with a buffer exactly that small: no panic
    // either.
    let zero = Sample::default().encoded_sizes();
    assert_eq!(
        m.encode(&zero, &mut [0u8; 4], |_| {}).unwrap_err(),
        EncodeError::StaleSizes
    );
    // Fresh sizes work.
    let fresh = m.encoded_sizes();
    m.encode(&fresh, &mut head, |_| {}).unwrap();
    assert_eq!(&head[..fresh.head_len()], &m.to_vec().unwrap()[..]);
}
