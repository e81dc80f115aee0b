//! Hostile input: every case is an error value, never a panic or an
//! out-of-bounds read. One test per class of malformation.

use granola::{Context, Decode, DecodeErrorKind as K, DecodeOptions, Message, Pool};
use granola_tests::sample::Sample;

fn ctx() -> Context {
    Context::new(&Pool::with_capacity(8 << 20).unwrap())
}

fn le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn full_message(ctx: &Context) -> Vec<u8> {
    let mut m = Sample::new(ctx);
    m.set_id(1);
    m.set_name("name");
    m.set_data(&[5u8; 300]);
    m.append_vals(b"v1");
    m.append_keys("k");
    m.append_nums(3);
    m.mut_inner().set_payload(b"inner");
    m.append_items().set_a(9);
    m.set_flag(true);
    m.to_vec().unwrap()
}

#[test]
fn every_truncation_is_an_error() {
    let c = ctx();
    let bytes = full_message(&c);
    assert!(Sample::decode(&c, &bytes).is_ok());
    for n in 0..bytes.len() {
        assert!(
            Sample::decode(&c, &bytes[..n]).is_err(),
            "prefix of {n} bytes decoded"
        );
    }
}

#[test]
fn every_single_byte_corruption_is_handled() {
    let c = ctx();
    let bytes = full_message(&c);
    for i in 0..bytes.len() {
        for v in [0u8, 1, 0x7f, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] = v;
            // Success or error are both fine; a panic fails the test.
            if let Ok(m) = Sample::decode(&c, &b) {
                let _ = m.to_vec();
                let _ = m.get_name();
            };
        }
    }
}

#[test]
fn empty_input() {
    let e = Sample::decode(&ctx(), &[]).unwrap_err();
    assert_eq!(e.kind, K::Truncated);
}

#[test]
fn huge_bitmap_word_count() {
    let e = Sample::decode(&ctx(), &le(&[u32::MAX, 1])).unwrap_err();
    assert_eq!(e.kind, K::BitmapTooLarge);
    // Within the limit but longer than the input.
    let e = Sample::decode(&ctx(), &le(&[1000, 1])).unwrap_err();
    assert_eq!(e.kind, K::Truncated);
}

#[test]
fn slots_beyond_the_input() {
    // 32 fields present, no slots.
    let e = Sample::decode(&ctx(), &le(&[1, u32::MAX])).unwrap_err();
    assert_eq!(e.kind, K::Truncated);
}

#[test]
fn bytes_offset_overflow() {
    // name (field 2): len u32::MAX at offset u32::MAX.
    let e = Sample::decode(&ctx(), &le(&[1, 0b10, u32::MAX, u32::MAX])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 2));
    // In range offset, length one past the end.
    let e = Sample::decode(&ctx(), &le(&[1, 0b10, 1, 16])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 2));
    // Exactly at the end with length 0 is fine.
    let (c, bytes) = (ctx(), le(&[1, 0b10, 0, 16]));
    let m = Sample::decode(&c, &bytes).unwrap();
    assert_eq!(m.get_name().unwrap(), "");
}

#[test]
fn huge_list_count() {
    // vals (field 4): 2^32-1 entries.
    let c = ctx();
    let e = Sample::decode(&c, &le(&[1, 0b1000, u32::MAX, 0])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::ListTooLong, 4));
    // Below max_list_len but more entries than input bytes: the item budget
    // refuses before anything is allocated.
    let e = Sample::decode(&c, &le(&[1, 0b1000, 1_000_000, 0])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::TooManyItems, 4));
    // A list whose entry array runs past the end.
    let e = Sample::decode(&c, &le(&[1, 0b1000, 2, 12, 0, 0])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 4));
}

#[test]
fn list_entries_out_of_bounds() {
    // vals: one entry at 16 whose bytes point past the end.
    let e = Sample::decode(&ctx(), &le(&[1, 0b1000, 1, 16, 4, 100])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 4));
}

#[test]
fn nested_header_length_mismatch() {
    // inner (field 7): stated header length 99 at offset 16, which holds an
    // empty header (4 bytes).
    let e = Sample::decode(&ctx(), &le(&[1, 1 << 6, 99, 16, 0])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::BadHeaderLen, 7));
    // Zero length.
    let e = Sample::decode(&ctx(), &le(&[1, 1 << 6, 0, 16, 0])).unwrap_err();
    assert_eq!((e.kind, e.field), (K::BadHeaderLen, 7));
    // Pointing at itself is a valid (if odd) header of the right length? The
    // root header is 16 bytes with W=1 and one field: (16, 0) aliases the
    // root, whose field 7 is Inner's field 7 — unknown to Inner, skipped.
    let (c, bytes) = (ctx(), le(&[1, 1 << 6, 16, 0]));
    let m = Sample::decode(&c, &bytes).unwrap();
    assert!(m.get_inner().is_some());
}

#[test]
fn aliased_entries_are_bounded_by_the_item_budget() {
    // items (field 8): 200 entries, all pointing at one empty header.
    let mut words = vec![1, 1 << 7, 200, 16];
    let arr_end = 16 + 200 * 8;
    for _ in 0..200 {
        words.extend([4, arr_end as u32]);
    }
    words.push(0);
    let bytes = le(&words);
    let c = ctx();
    let m = Sample::decode(&c, &bytes).unwrap();
    assert_eq!(m.items_len(), 200);
    let strict = Context::new(c.pool()).with_decode_options(DecodeOptions {
        max_items: 100,
        ..DecodeOptions::default()
    });
    let e = Sample::decode(&strict, &bytes).unwrap_err();
    assert_eq!(e.kind, K::TooManyItems);
}

#[test]
fn message_too_large() {
    let c =
        Context::new(&Pool::with_capacity(8 << 20).unwrap()).with_decode_options(DecodeOptions {
            max_message_len: 8,
            ..DecodeOptions::default()
        });
    let e = Sample::decode(&c, &[0u8; 9]).unwrap_err();
    assert_eq!(e.kind, K::MessageTooLarge);
}

#[test]
fn invalid_utf8_is_reported_on_access_not_decode() {
    let mut words = le(&[1, 0b10, 2, 16]);
    words.extend([0xff, 0xfe]);
    let c = ctx();
    let m = Sample::decode(&c, &words).expect("decode does not validate UTF-8");
    assert!(m.get_name().is_err());
    assert_eq!(m.get_name_bytes(), &[0xff, 0xfe]);
}

#[test]
fn errors_display_the_field() {
    let e = Sample::decode(&ctx(), &le(&[1, 0b10, 1, 16])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "granola decode: field 2: offset or length out of bounds"
    );
}
