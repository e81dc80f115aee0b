//! Read-only views (`Config::views`): every accessor agrees with the owned
//! decoder, nothing is allocated, and hostile bytes give errors.

use granola::{Context, Decode, DecodeErrorKind as K, DecodeOptions, Message, Pool};
use granola_tests::lang::{self, shape, Color};
use granola_tests::sample::{Sample, SampleView};

#[test]
fn sample_view_matches_the_owned_decoder() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let ctx = Context::new(&pool).with_copy_threshold(64);
    let big = pool.alloc_copy(&[4u8; 300]).unwrap();
    let mut m = Sample::new(&ctx);
    m.set_id(9);
    m.set_name("héllo");
    m.set_data(&big);
    m.append_vals(b"a");
    m.append_vals(&big);
    m.append_keys("k");
    m.append_nums(-5);
    m.append_nums(6);
    m.mut_inner().set_a(3);
    m.append_items().set_payload(b"p");
    m.append_items().set_a(8);
    m.set_ratio(0.25);
    let bytes = m.to_vec().unwrap();
    let opts = DecodeOptions::default();
    let v = SampleView::new(&bytes, &opts).unwrap();
    assert_eq!(v.id(), 9);
    assert_eq!(v.name().unwrap(), "héllo");
    assert_eq!(v.data().unwrap(), &big[..]);
    let vals = v.vals().unwrap().unwrap();
    assert_eq!((vals.len(), vals.bytes(1).unwrap()), (2, &big[..]));
    let nums = v.nums().unwrap().unwrap();
    assert_eq!((nums.scalar::<i32>(0), nums.scalar::<i32>(1)), (-5, 6));
    assert_eq!(v.inner().unwrap().unwrap().a(), 3);
    assert_eq!(v.items_get(0).unwrap().unwrap().payload().unwrap(), b"p");
    assert_eq!(v.items_get(1).unwrap().unwrap().a(), 8);
    assert!(v.items_get(2).unwrap().is_none());
    assert!(!v.has_flag() && !v.flag());
    assert_eq!(v.ratio(), 0.25);
    // The owned decoder agrees.
    let d = Sample::decode(&ctx, &bytes).unwrap();
    assert_eq!(d.get_id(), v.id());
    assert_eq!(d.get_name().unwrap(), v.name().unwrap());
}

#[test]
fn views_of_enums_oneofs_and_maps() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let ctx = Context::new(&pool);
    let mut s = lang::Shape::new(&ctx);
    s.set_color_raw(77);
    s.set_kind(shape::Kind::Circle);
    s.set_label("l");
    let bytes = s.to_vec().unwrap();
    let opts = DecodeOptions::default();
    let v = lang::ShapeView::new(&bytes, &opts).unwrap();
    assert_eq!((v.color(), v.color_raw()), (Color::Unspecified, 77));
    assert_eq!(v.kind(), shape::Kind::Circle);
    assert_eq!(v.label().unwrap(), "l");
    assert!(!v.has_radius());

    let mut m = lang::Maps::new(&ctx);
    let e = m.append_s_s();
    e.set_key("k");
    e.set_value("v");
    let bytes = m.to_vec().unwrap();
    let v = lang::MapsView::new(&bytes, &opts).unwrap();
    let e = v.s_s_get(0).unwrap().unwrap();
    assert_eq!((e.key().unwrap(), e.value().unwrap()), ("k", "v"));
}

#[test]
fn views_reject_hostile_bytes() {
    let opts = DecodeOptions::default();
    // Truncated root.
    assert_eq!(
        SampleView::new(&[1, 0, 0], &opts).err().map(|e| e.kind),
        Some(K::Truncated)
    );
    // `name` (field 2) pointing past the end, and not UTF-8.
    let mut b: Vec<u8> = [1u32, 2, 100, 16]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let v = SampleView::new(&b, &opts).unwrap();
    assert_eq!(v.name().unwrap_err().kind, K::OutOfBounds);
    b[8] = 1;
    b.push(0xff);
    let v = SampleView::new(&b, &opts).unwrap();
    assert_eq!(v.name().unwrap_err().kind, K::InvalidUtf8);
    assert_eq!(v.name_bytes().unwrap(), &[0xff]);
}
