//! Enums, oneofs, maps, deprecated items, well-known types and the
//! package/module clash, through the generated code: round trips, wire
//! goldens, schema evolution. (`Color::Blue` is deprecated in the schema.)
#![allow(deprecated)]

use granola::{Decode, IntoOwned, Message, Pool};
use granola_tests::clash;
use granola_tests::evo::{v1, v2};
use granola_tests::google::protobuf as wkt;
use granola_tests::lang::{self, shape, Color};
use std::collections::BTreeMap;

fn bytes(m: &impl Message) -> Vec<u8> {
    m.to_vec().unwrap()
}

#[test]
fn enums_are_open_and_typed() {
    assert_eq!(Color::from_i32(1), Some(Color::Red));
    assert_eq!(Color::from_i32(7), None);
    assert_eq!(Color::default(), Color::Unspecified);
    assert_eq!(Color::Red.as_str_name(), "COLOR_RED");
    // An alias names the same variant.
    assert_eq!(Color::from_str_name("COLOR_CRIMSON"), Some(Color::Red));
    assert_eq!(i32::from(Color::Green), 2);
    assert_eq!(Color::try_from(-3), Ok(Color::Blue));
    assert_eq!(Color::try_from(9), Err(9));

    let mut s = lang::Shape::default();
    assert_eq!(s.color(), Color::Unspecified);
    assert_eq!(s.color, 0);
    s.set_color(Color::Green);
    s.set_kind(shape::Kind::Square);
    s.push_palette(Color::Red);
    s.palette.push(42); // unknown to this schema: kept
    let v = bytes(&s);
    let d = lang::Shape::decode(&v).unwrap();
    assert_eq!(d.color(), Color::Green);
    assert_eq!(d.kind(), shape::Kind::Square);
    assert_eq!(d.palette, [1, 42]);
    assert_eq!(
        d.palette().collect::<Vec<_>>(),
        [Color::Red],
        "the typed view skips unknown values"
    );
    assert_eq!(d, s);

    // An unknown singular value reads as the default through the typed
    // getter, survives as the raw number and re-encodes unchanged.
    let u = lang::Shape {
        color: 1234,
        ..Default::default()
    };
    let v = bytes(&u);
    let d = lang::Shape::decode(&v).unwrap();
    assert_eq!(d.color(), Color::Unspecified);
    assert_eq!(d.color, 1234);
    assert_eq!(bytes(&d), v);
}

#[test]
fn oneof_holds_one_member() {
    let mut s = lang::Shape::default();
    assert!(s.body.is_none());
    s.body = Some(shape::Body::Radius(2.5));
    s.body = Some(shape::Body::Label("round".into())); // replaces the radius
    s.flag = Some(shape::Flag::On(true));
    let v = bytes(&s);
    let d = lang::Shape::decode(&v).unwrap();
    match &d.body {
        Some(shape::Body::Label(l)) => assert_eq!(l.as_str().unwrap(), "round"),
        other => panic!("{other:?}"),
    }
    assert_eq!(d.flag, Some(shape::Flag::On(true)));
    assert_eq!(d, s);

    // A message member (boxed: Shape contains Shape), and an enum member.
    let mut inner = lang::Shape::default();
    inner.set_kind(shape::Kind::Circle);
    s.body = Some(shape::Body::Inner(Box::new(inner)));
    let v = bytes(&s);
    let d = lang::Shape::decode(&v).unwrap();
    match &d.body {
        Some(shape::Body::Inner(i)) => assert_eq!(i.kind(), shape::Kind::Circle),
        other => panic!("{other:?}"),
    }
    s.body = Some(shape::Body::Tint(Color::Blue.into()));
    let d = lang::Shape::decode(&bytes(&s)).unwrap().into_owned();
    assert_eq!(d.body, Some(shape::Body::Tint(-3)));
    s.body = None;
    assert_eq!(s.flag, Some(shape::Flag::On(true)));
}

/// A oneof member compares like a message field: floats by bit pattern, so
/// a NaN member survives decode -> encode -> decode as an equal message
/// (found by the decode fuzz target).
#[test]
fn oneof_float_nan_equals_itself() {
    let s = lang::Shape {
        body: Some(shape::Body::Radius(f64::NAN)),
        ..Default::default()
    };
    let v = bytes(&s);
    assert_eq!(lang::Shape::decode(&v).unwrap(), s);
    let other = lang::Shape {
        body: Some(shape::Body::Radius(-f64::NAN)),
        ..Default::default()
    };
    assert_ne!(other, s, "a different NaN payload is a different encoding");
}

/// Wire golden: a oneof member is an ordinary field (its bit and slot);
/// an enum is an `int32` slot.
#[test]
fn oneof_and_enum_wire_golden() {
    let mut s = lang::Shape {
        flag: Some(shape::Flag::Level(9)),
        ..Default::default()
    };
    s.set_color(Color::Blue);
    #[rustfmt::skip]
    let want: &[u8] = &[
        0x01, 0, 0, 0,                              // W = 1
        0x02, 0x02, 0, 0,                           // bitmap: fields 2, 10
        0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // color = -3
        0x09, 0, 0, 0, 0, 0, 0, 0,                  // level = 9
        0x00, 0x00,                                 // kinds: scalar, scalar
    ];
    assert_eq!(bytes(&s), want);
}

/// Wire golden: a map is a repeated entry message `{ key = 1; value = 2; }`.
#[test]
fn map_wire_golden() {
    let m = lang::Maps {
        u32_e: [(5, Color::Green.into())].into(),
        ..Default::default()
    };
    #[rustfmt::skip]
    let want: &[u8] = &[
        0x01, 0, 0, 0, 0x08, 0, 0, 0,   // W = 1, field 4
        0x01, 0, 0, 0, 0x11, 0, 0, 0,   // u32_e: 1 entry at 17
        0x07,                           // kind: list of messages
        0x1a, 0, 0, 0, 0x19, 0, 0, 0,   // entry 0: header of 26 bytes at 25
        0x01, 0, 0, 0, 0x03, 0, 0, 0,   // W = 1, fields 1, 2
        0x05, 0, 0, 0, 0, 0, 0, 0,      // key = 5
        0x02, 0, 0, 0, 0, 0, 0, 0,      // value = GREEN
        0x00, 0x00,                     // kinds: scalar, scalar
    ];
    assert_eq!(bytes(&m), want);
    assert_eq!(lang::Maps::decode(want).unwrap(), m);
}

#[test]
fn maps_of_every_key_type_round_trip() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let big = pool.alloc_copy(&[9u8; 100]).unwrap();
    let mut label = lang::Shape {
        body: Some(shape::Body::Label("shape".into())),
        ..Default::default()
    };
    label.set_kind(shape::Kind::Circle);
    let m = lang::Maps {
        s_s: [("k".into(), "v".into())].into(),
        // Above the threshold of 64 used below: sent by reference.
        i32_b: [(-1, big.clone().into())].into(),
        i64_m: [(i64::MIN, label)].into(),
        u64_d: [(0, 0.5)].into(),
        si32: [(-7, 0.0)].into(),
        si64: [(0, -8)].into(),
        f32: [(u32::MAX, 0)].into(),
        f64: [(u64::MAX, 0)].into(),
        sf32: [(0, true)].into(),
        sf64: [(0, "x".into())].into(),
        b_b: [(true, b"".into())].into(),
        ..Default::default()
    };
    assert_eq!(m.encoded_sizes_with(64).zero_copy_count(), 1);
    let v = bytes(&m);
    let rx = pool.alloc_copy(&v).unwrap();
    let d = lang::Maps::decode_buf_with(&rx, &Default::default(), 64).unwrap();
    assert_eq!(d, m);
    assert!(d.i32_b[&-1].is_shared());
    assert_eq!(&d.i32_b[&-1][..], &big[..]);
    assert_eq!(d.i64_m[&i64::MIN].body, m.i64_m[&i64::MIN].body);
    assert_eq!(bytes(&d), v);
}

/// Keys come out in order, so a map always encodes to the same bytes; a
/// repeated key on the wire keeps the last value.
#[test]
fn maps_encode_in_key_order_and_the_last_duplicate_wins() {
    let mut a: BTreeMap<i32, granola::HybridBytes<'_>> = BTreeMap::new();
    a.insert(3, b"c".into());
    a.insert(-1, b"a".into());
    let m = lang::Maps {
        i32_b: a,
        ..Default::default()
    };
    let v = bytes(&m);
    let d = lang::Maps::decode(&v).unwrap();
    assert_eq!(d.i32_b.keys().copied().collect::<Vec<_>>(), [-1, 3]);

    // Rewrite the second entry's key to -1: two entries with key -1.
    let dup = {
        let mut w = v.clone();
        let key_at = w.windows(8).rposition(|x| x == 3i64.to_le_bytes()).unwrap();
        w[key_at..key_at + 8].copy_from_slice(&(-1i64).to_le_bytes());
        w
    };
    let d = lang::Maps::decode(&dup).unwrap();
    assert_eq!(d.i32_b.len(), 1);
    assert_eq!(&d.i32_b[&-1][..], b"c");
}

#[test]
#[allow(deprecated)]
fn deprecated_items_still_work() {
    let s = lang::Shape {
        id: 3,
        ..Default::default()
    };
    assert_eq!(lang::Shape::decode(&bytes(&s)).unwrap().id, 3);
    let o = lang::Old {
        note: "n".into(),
        ..Default::default()
    };
    assert_eq!(lang::Old::decode(&bytes(&o)).unwrap().note, "n");
}

#[test]
fn well_known_types_round_trip() {
    let w = lang::Wkt {
        at: Some(wkt::Timestamp {
            seconds: 1_700_000_000,
            nanos: 5,
            ..Default::default()
        }),
        took: Some(wkt::Duration {
            seconds: -1,
            nanos: 0,
            ..Default::default()
        }),
        nothing: Some(wkt::Empty {
            ..Default::default()
        }),
        name: Some(wkt::StringValue {
            value: "n".into(),
            ..Default::default()
        }),
        mask: Some(wkt::FieldMask {
            paths: vec!["a.b".into()],
            ..Default::default()
        }),
        count: Some(wkt::Int64Value {
            value: -5,
            ..Default::default()
        }),
        any: Some(wkt::Any {
            type_url: "type.googleapis.com/lang.Shape".into(),
            value: b"\x01\x02".into(),
            ..Default::default()
        }),
        meta: Some(wkt::Struct {
            fields: [
                (
                    "answer".into(),
                    wkt::Value {
                        kind: Some(wkt::value::Kind::NumberValue(42.0)),
                        ..Default::default()
                    },
                ),
                (
                    "list".into(),
                    wkt::Value {
                        kind: Some(wkt::value::Kind::ListValue(wkt::ListValue {
                            values: vec![
                                wkt::Value {
                                    kind: Some(wkt::value::Kind::NullValue(
                                        wkt::NullValue::NullValue.into(),
                                    )),
                                    ..Default::default()
                                },
                                wkt::Value {
                                    kind: Some(wkt::value::Kind::StringValue("s".into())),
                                    ..Default::default()
                                },
                            ],
                            ..Default::default()
                        })),
                        ..Default::default()
                    },
                ),
            ]
            .into(),
            ..Default::default()
        }),
        value: Some(wkt::Value {
            kind: Some(wkt::value::Kind::BoolValue(true)),
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = bytes(&w);
    let d = lang::Wkt::decode(&v).unwrap();
    assert_eq!(d, w);
    let fields = &d.meta.as_ref().unwrap().fields;
    assert_eq!(
        fields[&b"answer"[..]].kind,
        Some(wkt::value::Kind::NumberValue(42.0))
    );
    assert_eq!(bytes(&d), v);
}

#[test]
fn package_and_nested_module_do_not_clash() {
    let b = clash::B {
        c: Some(clash::b_::C {
            x: 1,
            ..Default::default()
        }),
        d: Some(clash::b::D {
            y: "y".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = bytes(&b);
    let d = clash::B::decode(&v).unwrap();
    let c: &clash::b_::C = d.c.as_ref().unwrap();
    let dd: &clash::b::D<'_> = d.d.as_ref().unwrap();
    assert_eq!((c.x, dd.y.as_str().unwrap()), (1, "y"));
    assert_eq!(d, b);
}

#[test]
fn added_enum_value_survives_an_old_reader() {
    let mut new = v2::Event::default();
    new.set_level(v2::Level::Critical);
    let v = bytes(&new);
    let old = v1::Event::decode(&v).unwrap();
    // v1 does not know CRITICAL: the typed getter falls back, the raw
    // number is kept and goes back out unchanged.
    assert_eq!(old.level(), v1::Level::Low);
    assert_eq!(old.level, 2);
    assert_eq!(
        v2::Event::decode(&bytes(&old)).unwrap().level(),
        v2::Level::Critical
    );
}

/// Unknown fields survive an older reader: a v2 event with every kind of
/// field v1 does not know (scalars, a string, nested messages two deep,
/// scalar lists of each width, string and message lists, a map, a field
/// in the second bitmap word, a new oneof member holding a large pool
/// value) is decoded by v1 from a received pool buffer, edited there
/// (v1's own field), re-encoded and decoded by v2: every v2 field is
/// back, and the large value went out by reference both times.
#[test]
fn unknown_fields_survive_an_older_reader() {
    use granola::DecodeOptions;
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let big = pool.alloc_copy(&[7u8; 4096]).unwrap();
    let detail = |note: &'static str| v2::Detail {
        note: note.into(),
        counts: vec![1, u64::MAX],
        child: Some(Box::new(v2::Detail {
            note: "leaf".into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let new = v2::Event {
        level: v2::Level::Low.into(),
        what: Some(v2::event::What::Blob(big.clone().into())),
        score: 2.5,
        source: "sensor-7".into(),
        detail: Some(detail("d")),
        flags: vec![true, false, true],
        deltas: vec![-1, 5, i32::MIN],
        stamps: vec![9, 10],
        tags: vec!["a".into(), "".into(), "c".into()],
        history: vec![detail("h0"), v2::Detail::default(), detail("h2")],
        totals: [("x".into(), -4), ("y".into(), 1 << 40)].into(),
        far: 99,
        ..Default::default()
    };
    let sent = new.to_sga_with(1024).unwrap();
    assert_eq!(new.encoded_sizes_with(1024).zero_copy_count(), 1);
    let rx = pool.alloc_copy(&sent.to_vec()).unwrap();

    let mut old = v1::Event::decode_buf_with(&rx, &DecodeOptions::default(), 1024).unwrap();
    assert_eq!(old.what, None);
    assert_eq!(
        old.unknown_fields.numbers().collect::<Vec<_>>(),
        [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 40]
    );
    old.set_level(v1::Level::High);
    // The kept blob is a reference into the received buffer: it goes out
    // by reference again.
    assert_eq!(old.encoded_sizes_with(1024).zero_copy_count(), 1);
    let re_encoded = old.to_vec().unwrap();
    let again = v2::Event::decode(&re_encoded).unwrap();
    let mut want = new.clone();
    want.set_level(v2::Level::High);
    assert_eq!(again, want);

    // Owned (`into_owned`) and cleared: the owned copy keeps them, a
    // cleared one writes only what v1 knows.
    let owned = old.clone().into_owned();
    assert_eq!(v2::Event::decode(&bytes(&owned)).unwrap(), want);
    old.unknown_fields.clear();
    let v1_only = bytes(&old);
    let known_only = v2::Event::decode(&v1_only).unwrap();
    assert_eq!(
        known_only,
        v2::Event {
            level: v2::Level::High.into(),
            ..Default::default()
        }
    );
}

#[test]
fn added_oneof_member_is_kept_by_an_old_reader() {
    let new = v2::Event {
        what: Some(v2::event::What::Blob(b"new".into())),
        ..Default::default()
    };
    let v = bytes(&new);
    let old = v1::Event::decode(&v).unwrap();
    assert_eq!(old.what, None, "unknown member: nothing set");
    // ...but kept, and written back.
    assert_eq!(old.unknown_fields.numbers().collect::<Vec<_>>(), [4]);
    assert_eq!(v2::Event::decode(&bytes(&old)).unwrap(), new);

    // Members both versions know cross in both directions.
    let o = v1::Event {
        what: Some(v1::event::What::Text("hello".into())),
        ..Default::default()
    };
    let v = bytes(&o);
    let n = v2::Event::decode(&v).unwrap();
    match &n.what {
        Some(v2::event::What::Text(t)) => assert_eq!(t.as_str().unwrap(), "hello"),
        other => panic!("{other:?}"),
    }
}

/// Hostile (or buggy) input with two members of one oneof present: the
/// highest-numbered one wins, as documented.
#[test]
fn two_oneof_members_on_the_wire_decode_to_the_last() {
    #[rustfmt::skip]
    let two: &[u8] = &[
        0x01, 0, 0, 0, 0x00, 0x03, 0, 0,        // W = 1, fields 9, 10 (flag.on, flag.level)
        0x01, 0, 0, 0, 0, 0, 0, 0,              // on = true
        0x07, 0, 0, 0, 0, 0, 0, 0,              // level = 7
        0x00, 0x00,                             // kinds
    ];
    let d = lang::Shape::decode(two).unwrap();
    assert_eq!(d.flag, Some(shape::Flag::Level(7)));
}

/// The `ext` build (extern_path for the well-known types, attributes,
/// include file) interoperates with the plain one.
#[test]
fn extern_path_reuses_the_well_known_types() {
    use granola_tests::ext;
    // The field's type *is* the first build's Timestamp.
    let w = ext::lang::Wkt {
        at: Some(wkt::Timestamp {
            seconds: 12,
            nanos: 0,
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = bytes(&w);
    let d = lang::Wkt::decode(&v).unwrap();
    assert_eq!(d.at.unwrap().seconds, 12);
}
