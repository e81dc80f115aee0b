//! Read-only views (`Config::views`): every accessor agrees with the owned
//! decoder, nothing is allocated, and hostile bytes give errors.

use granola::{Decode, DecodeErrorKind as K, DecodeOptions, Message, Pool};
use granola_tests::lang::{self, shape, Color};
use granola_tests::sample::{Inner, Sample, SampleView};

#[test]
fn sample_view_matches_the_owned_decoder() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    let big = pool.alloc_copy(&[4u8; 300]).unwrap();
    let m = Sample {
        id: 9,
        name: "héllo".into(),
        data: big.clone().into(),
        vals: vec![b"a".into(), big.clone().into()],
        keys: vec!["k".into()],
        nums: vec![-5, 6],
        inner: Some(Inner {
            a: 3,
            ..Default::default()
        }),
        items: vec![
            Inner {
                payload: b"p".into(),
                ..Default::default()
            },
            Inner {
                a: 8,
                ..Default::default()
            },
        ],
        ratio: 0.25,
        ..Default::default()
    };
    let bytes = m.to_sga_with(64).unwrap().to_vec();
    let opts = DecodeOptions::default();
    let v = SampleView::new(&bytes, &opts).unwrap();
    assert_eq!(v.id(), 9);
    assert_eq!(v.name().unwrap(), "héllo");
    assert_eq!(v.data().unwrap(), &big[..]);
    let vals = v.vals().unwrap().unwrap();
    assert_eq!((vals.len(), vals.bytes(1).unwrap()), (2, &big[..]));
    let all: Vec<&[u8]> = vals.bytes_iter().map(|b| b.unwrap()).collect();
    assert_eq!(all, [&b"a"[..], &big[..]]);
    let nums = v.nums().unwrap().unwrap();
    assert_eq!((nums.scalar::<i32>(0), nums.scalar::<i32>(1)), (-5, 6));
    assert_eq!(v.inner().unwrap().unwrap().a(), 3);
    assert_eq!(v.items_get(0).unwrap().unwrap().payload().unwrap(), b"p");
    assert_eq!(v.items_get(1).unwrap().unwrap().a(), 8);
    assert!(v.items_get(2).unwrap().is_none());
    assert!(!v.has_flag() && !v.flag());
    assert_eq!(v.ratio(), 0.25);
    // The owned decoder agrees.
    let d = Sample::decode(&bytes).unwrap();
    assert_eq!(d.id, v.id());
    assert_eq!(d.name.as_str().unwrap(), v.name().unwrap());
}

#[test]
fn views_of_enums_oneofs_and_maps() {
    let mut s = lang::Shape {
        color: 77,
        body: Some(shape::Body::Label("l".into())),
        ..Default::default()
    };
    s.set_kind(shape::Kind::Circle);
    let bytes = s.to_vec().unwrap();
    let opts = DecodeOptions::default();
    let v = lang::ShapeView::new(&bytes, &opts).unwrap();
    assert_eq!((v.color(), v.color_raw()), (Color::Unspecified, 77));
    assert_eq!(v.kind(), shape::Kind::Circle);
    assert_eq!(v.label().unwrap(), "l");
    assert!(!v.has_radius());

    let m = lang::Maps {
        s_s: [("k".into(), "v".into())].into(),
        ..Default::default()
    };
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
    let mut b: Vec<u8> = [1u32, 2, 100, 17]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    b.push(granola::wire::kind::BYTES);
    let v = SampleView::new(&b, &opts).unwrap();
    assert_eq!(v.name().unwrap_err().kind, K::OutOfBounds);
    b[8] = 1;
    b.push(0xff);
    let v = SampleView::new(&b, &opts).unwrap();
    assert_eq!(v.name().unwrap_err().kind, K::InvalidUtf8);
    assert_eq!(v.name_bytes().unwrap(), &[0xff]);
}
