//! Golden byte vectors: the exact bytes of docs/wire-format.md's examples.

use granola::{Context, Decode, Message, Pool};
use granola_tests::sample::Sample;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn pool() -> Pool {
    Pool::with_capacity(8 << 20).unwrap()
}

fn check_round_trip(ctx: &Context, m: &Sample<'_>, expected: &[u8]) {
    assert_eq!(
        m.to_vec().unwrap(),
        expected,
        "encoded bytes differ from the golden vector"
    );
    assert_eq!(m.encoded_len(), expected.len());
    // Decode from a received buffer in the pool, as a datapath would: the
    // fields the sender referenced are referenced again on re-encode.
    let rx = ctx.pool().alloc_copy(expected).unwrap();
    let decoded = Sample::decode(ctx, &rx).unwrap();
    assert_eq!(&decoded, m);
    assert_eq!(
        decoded.to_vec().unwrap(),
        expected,
        "re-encoding the decoded message"
    );
    // From ordinary heap memory the same bytes decode to the same message.
    assert_eq!(&Sample::decode(ctx, expected).unwrap(), m);
}

#[test]
fn empty_message() {
    let p = pool();
    let ctx = Context::new(&p);
    check_round_trip(&ctx, &Sample::new(&ctx), &hex("00 00 00 00"));
}

#[test]
fn one_scalar() {
    let p = pool();
    let ctx = Context::new(&p);
    let mut m = Sample::new(&ctx);
    m.set_id(7);
    check_round_trip(
        &ctx,
        &m,
        &hex("01 00 00 00 01 00 00 00 07 00 00 00 00 00 00 00"),
    );
}

const EXAMPLE_3_REFERENCED: &str = "
    01 00 00 00  2b 00 00 00
    07 00 00 00 00 00 00 00
    02 00 00 00 40 00 00 00
    02 00 00 00 28 00 00 00
    02 00 00 00 38 00 00 00
    04 00 00 00 43 00 00 00
    01 00 00 00 42 00 00 00
    ff ff ff ff 02 00 00 00
    68 69 78
    61 62 63 64";

fn example_3<'a>(ctx: &'a Context, abcd: &[u8]) -> Sample<'a> {
    let mut m = Sample::new(ctx);
    m.set_id(7);
    m.set_name("hi");
    m.append_vals(abcd);
    m.append_vals(b"x");
    m.append_nums(-1);
    m.append_nums(2);
    m
}

#[test]
fn copy_before_zero_copy() {
    let p = pool();
    let ctx = Context::new(&p).with_copy_threshold(4);
    let abcd = p.alloc_copy(b"abcd").unwrap();
    let m = example_3(&ctx, &abcd);
    let expected = hex(EXAMPLE_3_REFERENCED);
    check_round_trip(&ctx, &m, &expected);
    // The fused path: head = bytes 0..67, one zero-copy entry.
    let sizes = m.encoded_sizes();
    assert_eq!((sizes.header_len, sizes.copy_len), (64, 3));
    assert_eq!((sizes.zero_copy_count, sizes.zero_copy_len), (1, 4));
    let mut head = vec![0u8; sizes.head_len()];
    let mut entries = Vec::new();
    m.encode(&sizes, &mut head, |b| entries.push(b.clone()))
        .unwrap();
    assert_eq!(head, expected[..67]);
    assert_eq!(entries.len(), 1);
    assert!(entries[0].same_slot(&abcd));
}

#[test]
fn everything_copied_when_threshold_is_max() {
    let p = pool();
    let ctx = Context::new(&p).with_copy_threshold(usize::MAX);
    let abcd = p.alloc_copy(b"abcd").unwrap();
    let m = example_3(&ctx, &abcd);
    let expected = hex("01 00 00 00  2b 00 00 00
         07 00 00 00 00 00 00 00
         02 00 00 00 40 00 00 00
         02 00 00 00 28 00 00 00
         02 00 00 00 38 00 00 00
         04 00 00 00 42 00 00 00
         01 00 00 00 46 00 00 00
         ff ff ff ff 02 00 00 00
         68 69 61 62 63 64 78");
    check_round_trip(&ctx, &m, &expected);
    assert_eq!(m.encoded_sizes().zero_copy_count, 0);
}

#[test]
fn heap_memory_is_copied_even_above_threshold() {
    let p = pool();
    let ctx = Context::new(&p).with_copy_threshold(0);
    let m = example_3(&ctx, b"abcd"); // a static, not pool memory
    assert_eq!(m.encoded_sizes().zero_copy_count, 0);
}

#[test]
fn nested_and_scalars() {
    let p = pool();
    let ctx = Context::new(&p);
    let mut m = Sample::new(&ctx);
    {
        let inner = m.mut_inner();
        inner.set_a(5);
        inner.set_payload(b"p");
    }
    m.append_items().set_a(1);
    m.append_items();
    m.set_flag(true);
    m.set_ratio(0.5);
    let expected = hex("01 00 00 00 c0 03 00 00
         18 00 00 00 28 00 00 00
         02 00 00 00 40 00 00 00
         01 00 00 00 00 00 00 00
         00 00 00 00 00 00 e0 3f
         01 00 00 00 03 00 00 00
         05 00 00 00 00 00 00 00
         01 00 00 00 64 00 00 00
         10 00 00 00 50 00 00 00
         04 00 00 00 60 00 00 00
         01 00 00 00 01 00 00 00
         01 00 00 00 00 00 00 00
         00 00 00 00
         70");
    check_round_trip(&ctx, &m, &expected);
}

#[test]
fn unknown_fields_are_skipped() {
    // Field 11 (unknown to this schema, e.g. added by a newer writer) sits
    // between nothing and nothing; field 1 must still read correctly, and
    // a field 40 in a second bitmap word too.
    let bytes = hex("02 00 00 00  01 04 00 00  80 00 00 00
         07 00 00 00 00 00 00 00
         ff ff ff ff ff ff ff ff
         ee ee ee ee ee ee ee ee");
    let p = pool();
    let ctx = Context::new(&p);
    let m = Sample::decode(&ctx, &bytes).unwrap();
    assert_eq!(m.get_id(), 7);
    assert!(!m.has_name());
    let mut only_id = Sample::new(&ctx);
    only_id.set_id(7);
    assert_eq!(m, only_id);
}
