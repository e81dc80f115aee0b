//! Hostile input: every case is an error value, never a panic or an
//! out-of-bounds read. One test per class of malformation.

use granola::wire::kind;
use granola::{Decode, DecodeErrorKind as K, DecodeOptions, Message};
use granola_tests::sample::{Inner, Sample, SampleView};

fn le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A root header (17 bytes) with one field present: bitmap word `bitmap`
/// (one bit set), its slot `(a, b)` and its kind byte.
fn one_field(bitmap: u32, a: u32, b: u32, kind: u8) -> Vec<u8> {
    let mut v = le(&[1, bitmap, a, b]);
    v.push(kind);
    v
}

/// Bytes right after a one-field root header.
const AFTER_HEADER: u32 = 17;

fn full_message() -> Vec<u8> {
    Sample {
        id: 1,
        name: "name".into(),
        data: (&[5u8; 300]).into(),
        vals: vec![b"v1".into()],
        keys: vec!["k".into()],
        nums: vec![3],
        inner: Some(Inner {
            payload: b"inner".into(),
            ..Default::default()
        }),
        items: vec![Inner {
            a: 9,
            ..Default::default()
        }],
        flag: true,
        ..Default::default()
    }
    .to_vec()
    .unwrap()
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = full_message();
    assert!(Sample::decode(&bytes).is_ok());
    for n in 0..bytes.len() {
        assert!(
            Sample::decode(&bytes[..n]).is_err(),
            "prefix of {n} bytes decoded"
        );
    }
}

#[test]
fn every_single_byte_corruption_is_handled() {
    let bytes = full_message();
    for i in 0..bytes.len() {
        for v in [0u8, 1, 0x7f, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] = v;
            // Success or error are both fine; a panic fails the test.
            if let Ok(m) = Sample::decode(&b) {
                let _ = m.to_vec();
                let _ = m.name.as_str();
            };
        }
    }
}

#[test]
fn empty_input() {
    let e = Sample::decode(&[]).unwrap_err();
    assert_eq!(e.kind, K::Truncated);
}

#[test]
fn huge_bitmap_word_count() {
    let e = Sample::decode(&le(&[u32::MAX, 1])).unwrap_err();
    assert_eq!(e.kind, K::BitmapTooLarge);
    // Within the limit but longer than the input.
    let e = Sample::decode(&le(&[1000, 1])).unwrap_err();
    assert_eq!(e.kind, K::Truncated);
}

#[test]
fn one_bitmap_word_is_always_allowed() {
    // `max_bitmap_words` 0 acts as 1: fields 1..=32 always decode, in the
    // struct decoder and in the view alike.
    let bytes = Sample {
        id: 7,
        ..Default::default()
    }
    .to_vec()
    .unwrap();
    let opts = DecodeOptions {
        max_bitmap_words: 0,
        ..DecodeOptions::default()
    };
    assert_eq!(Sample::decode_with(&bytes, &opts).unwrap().id, 7);
    let view = SampleView::new(&bytes, &opts).unwrap();
    assert_eq!(view.id(), 7);
    // Two words are over that limit, in both.
    let two = le(&[2, 0, 0]);
    let e = Sample::decode_with(&two, &opts).unwrap_err();
    assert_eq!(e.kind, K::BitmapTooLarge);
    let e = SampleView::new(&two, &opts).err().unwrap();
    assert_eq!(e.kind, K::BitmapTooLarge);
}

#[test]
fn slots_beyond_the_input() {
    // 32 fields present, no slots.
    let e = Sample::decode(&le(&[1, u32::MAX])).unwrap_err();
    assert_eq!(e.kind, K::Truncated);
}

#[test]
fn bytes_offset_overflow() {
    // name (field 2): len u32::MAX at offset u32::MAX.
    let e = Sample::decode(&one_field(0b10, u32::MAX, u32::MAX, kind::BYTES)).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 2));
    // In range offset, length one past the end.
    let e = Sample::decode(&one_field(0b10, 1, AFTER_HEADER, kind::BYTES)).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 2));
    // Exactly at the end with length 0 is fine.
    let bytes = one_field(0b10, 0, AFTER_HEADER, kind::BYTES);
    let m = Sample::decode(&bytes).unwrap();
    assert_eq!(m.name.as_str().unwrap(), "");
}

#[test]
fn huge_list_count() {
    // vals (field 4): 2^32-1 entries.
    let list = |count, at| one_field(0b1000, count, at, kind::LIST_BYTES);
    let e = Sample::decode(&list(u32::MAX, 0)).unwrap_err();
    assert_eq!((e.kind, e.field), (K::ListTooLong, 4));
    // Below max_list_len but more entries than input bytes: the item budget
    // refuses before anything is allocated.
    let e = Sample::decode(&list(1_000_000, 0)).unwrap_err();
    assert_eq!((e.kind, e.field), (K::TooManyItems, 4));
    // A list whose entry array runs past the end.
    let mut bytes = list(2, 12);
    bytes.extend(le(&[0, 0]));
    let e = Sample::decode(&bytes).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 4));
}

#[test]
fn list_entries_out_of_bounds() {
    // vals: one entry right after the header whose bytes point past the
    // end.
    let mut bytes = one_field(0b1000, 1, AFTER_HEADER, kind::LIST_BYTES);
    bytes.extend(le(&[4, 100]));
    let e = Sample::decode(&bytes).unwrap_err();
    assert_eq!((e.kind, e.field), (K::OutOfBounds, 4));
}

#[test]
fn nested_header_length_mismatch() {
    // inner (field 7): stated header length 99 right after the root, which
    // holds an empty header (4 bytes).
    let inner = |len| {
        let mut v = one_field(1 << 6, len, AFTER_HEADER, kind::MESSAGE);
        v.extend(le(&[0]));
        v
    };
    let e = Sample::decode(&inner(99)).unwrap_err();
    assert_eq!((e.kind, e.field), (K::BadHeaderLen, 7));
    // Zero length.
    let e = Sample::decode(&inner(0)).unwrap_err();
    assert_eq!((e.kind, e.field), (K::BadHeaderLen, 7));
    // The right length decodes.
    assert!(Sample::decode(&inner(4)).unwrap().inner.is_some());
    // Pointing at itself: (17, 0) aliases the root, whose field 7 is
    // unknown to Inner and kept as an unknown nested message, which
    // aliases the root again. The cycle ends at the item budget (one item
    // per input byte), not in a stack overflow.
    let e = Sample::decode(&one_field(1 << 6, 17, 0, kind::MESSAGE)).unwrap_err();
    assert_eq!(e.kind, K::TooManyItems);
}

#[test]
fn aliased_entries_are_bounded_by_the_item_budget() {
    // items (field 8): 200 entries, all pointing at one empty header.
    let arr_end = AFTER_HEADER + 200 * 8;
    let mut bytes = one_field(1 << 7, 200, AFTER_HEADER, kind::LIST_MESSAGE);
    for _ in 0..200 {
        bytes.extend(le(&[4, arr_end]));
    }
    bytes.extend(le(&[0]));
    let m = Sample::decode(&bytes).unwrap();
    assert_eq!(m.items.len(), 200);
    let strict = DecodeOptions {
        max_items: 100,
        ..DecodeOptions::default()
    };
    let e = Sample::decode_with(&bytes, &strict).unwrap_err();
    assert_eq!(e.kind, K::TooManyItems);
}

#[test]
fn message_too_large() {
    let opts = DecodeOptions {
        max_message_len: 8,
        ..DecodeOptions::default()
    };
    let e = Sample::decode_with(&[0u8; 9], &opts).unwrap_err();
    assert_eq!(e.kind, K::MessageTooLarge);
}

#[test]
fn invalid_utf8_is_reported_on_access_not_decode() {
    let mut words = one_field(0b10, 2, AFTER_HEADER, kind::BYTES);
    words.extend([0xff, 0xfe]);
    let m = Sample::decode(&words).expect("decode does not validate UTF-8");
    assert!(m.name.as_str().is_err());
    assert_eq!(m.name.as_bytes(), &[0xff, 0xfe]);
    // `check` validates once; it fails here too, and records nothing.
    let mut name = m.name.clone();
    assert!(name.check().is_err());
    assert!(name.as_str().is_err());
}

#[test]
fn checked_strings_read_without_revalidation() {
    let mut words = one_field(0b10, 2, AFTER_HEADER, kind::BYTES);
    words.extend(*b"ok");
    let mut m = Sample::decode(&words).unwrap();
    assert_eq!(m.name.check().unwrap(), "ok");
    assert_eq!(m.name.as_str().unwrap(), "ok");
}

#[test]
fn errors_display_the_field() {
    let e = Sample::decode(&one_field(0b10, 1, AFTER_HEADER, kind::BYTES)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "granola decode: field 2: offset or length out of bounds"
    );
}
