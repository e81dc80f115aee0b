//! Enums, oneofs, maps, deprecated items, well-known types and the
//! package/module clash, through the generated code: round trips, wire
//! goldens, schema evolution. (`Color::Blue` is deprecated in the schema.)
#![allow(deprecated)]

use granola::{Context, Decode, Message, Pool};
use granola_tests::clash;
use granola_tests::evo::{v1, v2};
use granola_tests::google::protobuf as wkt;
use granola_tests::lang::{self, shape, Color};

fn pool() -> Pool {
    Pool::with_capacity(8 << 20).unwrap()
}

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

    let pool = pool();
    let ctx = Context::new(&pool);
    let mut s = lang::Shape::new(&ctx);
    assert_eq!(s.get_color(), Color::Unspecified);
    assert!(!s.has_color());
    s.set_color(Color::Green);
    s.set_kind(shape::Kind::Square);
    s.append_palette(Color::Red);
    s.append_palette_raw(42); // unknown to this schema: kept
    let rx = pool.alloc_copy(&bytes(&s)).unwrap();
    let d = lang::Shape::decode(&ctx, &rx).unwrap();
    assert_eq!(d.get_color(), Color::Green);
    assert_eq!(d.get_kind(), shape::Kind::Square);
    assert_eq!(d.get_palette(), &[1, 42]);
    assert_eq!(d, s);

    // An unknown singular value reads as the default through the typed
    // getter, survives as the raw number and re-encodes unchanged.
    let mut u = lang::Shape::new(&ctx);
    u.set_color_raw(1234);
    let rx = pool.alloc_copy(&bytes(&u)).unwrap();
    let d = lang::Shape::decode(&ctx, &rx).unwrap();
    assert_eq!(d.get_color(), Color::Unspecified);
    assert_eq!(d.get_color_raw(), 1234);
    assert_eq!(bytes(&d), &rx[..]);
}

#[test]
fn oneof_holds_one_member() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut s = lang::Shape::new(&ctx);
    assert!(!s.has_body() && s.get_body().is_none());
    s.set_radius(2.5);
    s.set_label("round"); // replaces the radius
    s.set_on(true);
    let rx = pool.alloc_copy(&bytes(&s)).unwrap();
    let d = lang::Shape::decode(&ctx, &rx).unwrap();
    match d.get_body() {
        Some(shape::Body::Label(l)) => assert_eq!(l.as_str().unwrap(), "round"),
        other => panic!("{other:?}"),
    }
    assert_eq!(d.get_flag(), Some(&shape::Flag::On(true)));
    assert_eq!(d, s);

    // A message member, and an enum member.
    let mut inner = lang::Shape::new(&ctx);
    inner.set_kind(shape::Kind::Circle);
    s.set_inner(inner);
    let rx = pool.alloc_copy(&bytes(&s)).unwrap();
    let d = lang::Shape::decode(&ctx, &rx).unwrap();
    match d.get_body() {
        Some(shape::Body::Inner(i)) => assert_eq!(i.get_kind(), shape::Kind::Circle),
        other => panic!("{other:?}"),
    }
    s.set_tint(Color::Blue);
    let rx = pool.alloc_copy(&bytes(&s)).unwrap();
    let d = lang::Shape::decode(&ctx, &rx).unwrap();
    assert_eq!(d.get_body(), Some(&shape::Body::Tint(-3)));
    s.clear_body();
    assert!(!s.has_body());
    assert_eq!(s.get_flag(), Some(&shape::Flag::On(true)));
}

/// A oneof member compares like a message field: floats by bit pattern, so
/// a NaN member survives decode -> encode -> decode as an equal message
/// (found by the decode fuzz target).
#[test]
fn oneof_float_nan_equals_itself() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut s = lang::Shape::new(&ctx);
    s.set_radius(f64::NAN);
    let rx = pool.alloc_copy(&bytes(&s)).unwrap();
    let d = lang::Shape::decode(&ctx, &rx).unwrap();
    assert_eq!(d, s);
    let mut other = lang::Shape::new(&ctx);
    other.set_radius(-f64::NAN);
    assert_ne!(other, s, "a different NaN payload is a different encoding");
}

/// Wire golden: a oneof member is an ordinary field (its bit and slot);
/// an enum is an `int32` slot.
#[test]
fn oneof_and_enum_wire_golden() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut s = lang::Shape::new(&ctx);
    s.set_color(Color::Blue);
    s.set_level(9);
    #[rustfmt::skip]
    let want: &[u8] = &[
        0x01, 0, 0, 0,                              // W = 1
        0x02, 0x02, 0, 0,                           // bitmap: fields 2, 10
        0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // color = -3
        0x09, 0, 0, 0, 0, 0, 0, 0,                  // level = 9
    ];
    assert_eq!(bytes(&s), want);
}

/// Wire golden: a map is a repeated entry message `{ key = 1; value = 2; }`.
#[test]
fn map_wire_golden() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut m = lang::Maps::new(&ctx);
    let e = m.append_u32_e();
    e.set_key(5);
    e.set_value(Color::Green);
    #[rustfmt::skip]
    let want: &[u8] = &[
        0x01, 0, 0, 0, 0x08, 0, 0, 0,   // W = 1, field 4
        0x01, 0, 0, 0, 0x10, 0, 0, 0,   // u32_e: 1 entry at 16
        0x18, 0, 0, 0, 0x18, 0, 0, 0,   // entry 0: header of 24 bytes at 24
        0x01, 0, 0, 0, 0x03, 0, 0, 0,   // W = 1, fields 1, 2
        0x05, 0, 0, 0, 0, 0, 0, 0,      // key = 5
        0x02, 0, 0, 0, 0, 0, 0, 0,      // value = GREEN
    ];
    assert_eq!(bytes(&m), want);
}

#[test]
fn maps_of_every_key_type_round_trip() {
    let pool = pool();
    let ctx = Context::new(&pool).with_copy_threshold(64);
    let big = pool.alloc_copy(&[9u8; 100]).unwrap();
    let mut m = lang::Maps::new(&ctx);
    {
        let e = m.append_s_s();
        e.set_key("k");
        e.set_value("v");
    }
    {
        let e = m.append_i32_b();
        e.set_key(-1);
        e.set_value(&big); // above the threshold: by reference
        assert!(e.value_field().unwrap().is_zero_copy());
    }
    {
        let e = m.append_i64_m();
        e.set_key(i64::MIN);
        e.mut_value().set_label("shape");
    }
    m.append_u64_d().set_value(0.5);
    m.append_si32().set_key(-7);
    m.append_si64().set_value(-8);
    m.append_f32().set_key(u32::MAX);
    m.append_f64().set_key(u64::MAX);
    m.append_sf32().set_value(true);
    m.append_sf64().set_value("x");
    m.append_b_b().set_key(true);
    assert_eq!(m.encoded_sizes().zero_copy_count, 1);
    let v = bytes(&m);
    let rx = pool.alloc_copy(&v).unwrap();
    let d = lang::Maps::decode(&ctx, &rx).unwrap();
    assert_eq!(d, m);
    assert_eq!(d.get_i32_b()[0].get_value(), &big[..]);
    assert_eq!(
        d.get_i64_m()[0].get_value().unwrap().get_body(),
        m.get_i64_m()[0].get_value().unwrap().get_body()
    );
    assert_eq!(bytes(&d), v);
}

#[test]
#[allow(deprecated)]
fn deprecated_items_still_work() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut s = lang::Shape::new(&ctx);
    s.set_id(3);
    assert_eq!(s.get_id(), 3);
    let mut o = lang::Old::new(&ctx);
    o.set_note("n");
    assert_eq!(o.get_note().unwrap(), "n");
}

#[test]
fn well_known_types_round_trip() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut w = lang::Wkt::new(&ctx);
    w.mut_at().set_seconds(1_700_000_000);
    w.mut_at().set_nanos(5);
    w.mut_took().set_seconds(-1);
    w.mut_nothing();
    w.mut_name().set_value("n");
    w.mut_mask().append_paths("a.b");
    w.mut_count().set_value(-5);
    w.mut_any().set_type_url("type.googleapis.com/lang.Shape");
    w.mut_any().set_value(b"\x01\x02");
    {
        let meta = w.mut_meta();
        let f = meta.append_fields();
        f.set_key("answer");
        f.mut_value().set_number_value(42.0);
        let f = meta.append_fields();
        f.set_key("list");
        let list = f.mut_value();
        let mut l = wkt::ListValue::new(&ctx);
        l.append_values().set_null_value(wkt::NullValue::NullValue);
        l.append_values().set_string_value("s");
        list.set_list_value(l);
    }
    w.mut_value().set_bool_value(true);
    let v = bytes(&w);
    let rx = pool.alloc_copy(&v).unwrap();
    let d = lang::Wkt::decode(&ctx, &rx).unwrap();
    assert_eq!(d, w);
    let fields = d.get_meta().unwrap().get_fields();
    assert_eq!(fields[0].get_key().unwrap(), "answer");
    assert_eq!(
        fields[0].get_value().unwrap().get_kind(),
        Some(&wkt::value::Kind::NumberValue(42.0))
    );
    assert_eq!(bytes(&d), v);
}

#[test]
fn package_and_nested_module_do_not_clash() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut b = clash::B::new(&ctx);
    b.mut_c().set_x(1);
    b.mut_d().set_y("y");
    let c: &clash::b_::C<'_> = b.get_c().unwrap();
    let d: &clash::b::D<'_> = b.get_d().unwrap();
    assert_eq!((c.get_x(), d.get_y().unwrap()), (1, "y"));
    let rx = pool.alloc_copy(&bytes(&b)).unwrap();
    assert_eq!(clash::B::decode(&ctx, &rx).unwrap(), b);
}

#[test]
fn added_enum_value_survives_an_old_reader() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut new = v2::Event::new(&ctx);
    new.set_level(v2::Level::Critical);
    let rx = pool.alloc_copy(&bytes(&new)).unwrap();
    let old = v1::Event::decode(&ctx, &rx).unwrap();
    // v1 does not know CRITICAL: the typed getter falls back, the raw
    // number is kept and goes back out unchanged.
    assert_eq!(old.get_level(), v1::Level::Low);
    assert_eq!(old.get_level_raw(), 2);
    let back = pool.alloc_copy(&bytes(&old)).unwrap();
    assert_eq!(
        v2::Event::decode(&ctx, &back).unwrap().get_level(),
        v2::Level::Critical
    );
}

#[test]
fn added_oneof_member_is_skipped_by_an_old_reader() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut new = v2::Event::new(&ctx);
    new.set_blob(b"new");
    let rx = pool.alloc_copy(&bytes(&new)).unwrap();
    let old = v1::Event::decode(&ctx, &rx).unwrap();
    assert_eq!(old.get_what(), None, "unknown member: nothing set");

    // Members both versions know cross in both directions.
    let mut o = v1::Event::new(&ctx);
    o.set_text("hello");
    let rx = pool.alloc_copy(&bytes(&o)).unwrap();
    let n = v2::Event::decode(&ctx, &rx).unwrap();
    match n.get_what() {
        Some(v2::event::What::Text(t)) => assert_eq!(t.as_str().unwrap(), "hello"),
        other => panic!("{other:?}"),
    }
}

/// Hostile (or buggy) input with two members of one oneof present: the
/// highest-numbered one wins, as documented.
#[test]
fn two_oneof_members_on_the_wire_decode_to_the_last() {
    let pool = pool();
    let ctx = Context::new(&pool);
    #[rustfmt::skip]
    let two: &[u8] = &[
        0x01, 0, 0, 0, 0x00, 0x03, 0, 0,        // W = 1, fields 9, 10 (flag.on, flag.level)
        0x01, 0, 0, 0, 0, 0, 0, 0,              // on = true
        0x07, 0, 0, 0, 0, 0, 0, 0,              // level = 7
    ];
    let rx = pool.alloc_copy(two).unwrap();
    let d = lang::Shape::decode(&ctx, &rx).unwrap();
    assert_eq!(d.get_flag(), Some(&shape::Flag::Level(7)));
}

/// The `ext` build (extern_path for the well-known types, attributes,
/// include file) interoperates with the plain one.
#[test]
fn extern_path_reuses_the_well_known_types() {
    use granola_tests::ext;
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut w = ext::lang::Wkt::new(&ctx);
    // The field's type *is* the first build's Timestamp.
    let mut at = wkt::Timestamp::new(&ctx);
    at.set_seconds(12);
    w.set_at(at);
    let rx = pool.alloc_copy(&bytes(&w)).unwrap();
    let d = lang::Wkt::decode(&ctx, &rx).unwrap();
    assert_eq!(d.get_at().unwrap().get_seconds(), 12);
}
