//! Round trips through the code granola-build generates (see `build.rs`):
//! `to_vec()` then `Decode::decode` must give back an equal message.

use granola::{Decode, DecodeOptions, IntoOwned, Message, Pool};
use granola_tests::geo::{common, shapes};
use granola_tests::{names, recursive, sample, scalars};

fn pool() -> Pool {
    Pool::with_capacity(16 << 20).unwrap()
}

/// Encodes `$m` (checking the three encode paths agree), decodes the bytes
/// as `$t`, borrowed and owned, and checks both equal `$m` and re-encode
/// like it. Evaluates to the bytes.
macro_rules! round_trip {
    ($t:ty, $m:expr) => {{
        let m = $m;
        let v = m.to_vec().unwrap();
        assert_eq!(
            m.to_sga().unwrap().to_vec(),
            v,
            "to_sga and to_vec disagree"
        );
        assert_eq!(m.encoded_len(), v.len());
        // Decoded from the heap, nothing is a pool reference: re-encoding
        // copies every field, as `m` does with an infinite threshold.
        let all_copied = m.to_sga_with(usize::MAX).unwrap().to_vec();
        let d = <$t>::decode(&v).unwrap();
        assert_eq!(&d, m);
        assert_eq!(d.to_vec().unwrap(), all_copied);
        let owned = <$t>::decode(&v).unwrap().into_owned();
        assert_eq!(&owned, m);
        assert_eq!(
            owned.to_vec().unwrap(),
            all_copied,
            "the owned copy re-encodes the same"
        );
        v
    }};
}

/// The scenario of `tests/smoke.rs`, on the generated type.
#[test]
fn generated_sample_round_trips() {
    let pool = pool();
    let big = pool.alloc_copy(&[9u8; 2048]).unwrap();
    let m = sample::smoke(&big);
    assert_eq!(big.ref_count(), 3);
    assert_eq!(m.encoded_sizes_with(512).zero_copy_count(), 2);
    let v = m.to_vec().unwrap();
    let rx = pool.alloc_copy(&v).unwrap();
    let d = sample::Sample::decode_buf_with(&rx, &DecodeOptions::default(), 512).unwrap();
    assert_eq!(d, m);
    assert_eq!(d.to_vec().unwrap(), v);
    assert_eq!(d.id, 7);
    assert_eq!(d.name.as_str().unwrap(), "hello");
    assert_eq!(d.name.as_bytes(), b"hello");
    assert!(
        d.data.is_shared(),
        "2 KiB in the received buffer is referenced"
    );
    assert!(
        !d.name.is_shared(),
        "5 bytes are copied, not pinning the buffer"
    );
    assert_eq!(&d.data[..], &[9u8; 2048][..]);
    assert_eq!(d.vals.len(), 2);
    assert_eq!(&d.vals[0][..], b"small");
    assert_eq!(d.keys[0], "k1");
    assert_eq!(d.nums, [-3]);
    assert_eq!(d.inner.as_ref().unwrap().a, 42);
    assert!(d.inner.as_ref().unwrap().payload.is_empty());
    assert_eq!(&d.items[0].payload[..], b"p");
    assert!(d.flag);
    assert_eq!(d.ratio, 0.5);
    assert!(format!("{d:?}").starts_with("Sample { id: 7, name: "));
    drop(d);
    drop(m);
    assert_eq!(big.ref_count(), 1);
}

#[test]
fn filled_sample_round_trips() {
    let pool = pool();
    let big = pool.alloc_copy(&[3u8; 1500]).unwrap();
    let g = sample::Sample {
        id: 0xdead_beef,
        name: "a name that is long enough".into(),
        data: big.clone().into(),
        vals: vec![b"v1".into(), big.slice(..700).into(), b"".into()],
        keys: vec!["k1".into(), "k2".into()],
        nums: vec![i32::MIN, 0, i32::MAX],
        inner: Some(sample::Inner {
            a: u64::MAX,
            payload: big.slice(..600).into(),
            ..Default::default()
        }),
        items: vec![
            sample::Inner {
                a: 1,
                ..Default::default()
            },
            sample::Inner {
                payload: b"two".into(),
                ..Default::default()
            },
        ],
        flag: false,
        ratio: -1.25,
        ..Default::default()
    };
    let v = round_trip!(sample::Sample, &g);
    let rx = pool.alloc_copy(&v).unwrap();
    let d = sample::Sample::decode_buf_with(&rx, &DecodeOptions::default(), 512).unwrap();
    assert_eq!(d, g);
    assert_eq!(
        d.to_sga_with(512).unwrap().to_vec(),
        g.to_sga_with(512).unwrap().to_vec()
    );
}

fn all_scalars() -> scalars::AllScalars<'static> {
    let mut m = scalars::AllScalars {
        i32: i32::MIN,
        i64: i64::MIN,
        u32: u32::MAX,
        u64: u64::MAX,
        s32: -5,
        s64: -6,
        f32: 7,
        f64: 8,
        sf32: -9,
        sf64: -10,
        flag: true,
        fl: 1.5,
        db: -2.25,
        text: "text".into(),
        blob: b"blob".into(),
        opt: Some(0),
        high: 33,
        ..Default::default()
    };
    for i in 0..3 {
        m.r_i32.push(-i);
        m.r_i64.push(i64::from(-i) << 40);
        m.r_u32.push(i as u32);
        m.r_u64.push(u64::MAX - i as u64);
        m.r_s32.push(i32::MIN + i);
        m.r_s64.push(i64::MIN + i64::from(i));
        m.r_f32.push(u32::MAX - i as u32);
        m.r_f64.push(i as u64);
        m.r_sf32.push(-i);
        m.r_sf64.push(i64::from(i));
        m.r_flag.push(i % 2 == 0);
        m.r_fl.push(i as f32 / 4.0);
        m.r_db.push(-(i as f64));
        m.r_text.push(format!("t{i}").into());
        m.r_blob.push(vec![i as u8; 3].into());
    }
    m
}

#[test]
fn all_scalars_round_trip() {
    let m = all_scalars();
    let v = round_trip!(scalars::AllScalars, &m);
    let d = scalars::AllScalars::decode(&v).unwrap();
    assert_eq!(
        (d.i32, d.i64, d.u32, d.u64),
        (i32::MIN, i64::MIN, u32::MAX, u64::MAX)
    );
    assert_eq!((d.s32, d.s64, d.f32, d.f64), (-5, -6, 7, 8));
    assert_eq!((d.sf32, d.sf64), (-9, -10));
    assert!(d.flag);
    assert_eq!((d.fl, d.db), (1.5, -2.25));
    assert_eq!(d.text, "text");
    assert_eq!(&d.blob[..], b"blob");
    assert_eq!(d.r_i64, [0, -(1 << 40), -(2 << 40)]);
    assert_eq!(d.r_flag, [true, false, true]);
    assert_eq!(d.r_fl, [0.0, 0.25, 0.5]);
    assert_eq!(d.r_text[2], "t2");
    assert_eq!(&d.r_blob[1][..], &[1, 1, 1]);
    assert_eq!(
        d.opt,
        Some(0),
        "an optional field set to zero stays present"
    );

    // Slots are in field-number order, whatever the declaration order:
    // read the raw header with the runtime's reader.
    let opts = DecodeOptions::default();
    let mut cx = granola::__private::DecodeCx::new(&v, &opts).unwrap();
    let h = cx.root().unwrap();
    assert_eq!(h.scalar::<u32>(3), Some(u32::MAX));
    assert_eq!(h.scalar::<u32>(32), Some(0));
    assert_eq!(h.scalar::<u64>(33), Some(33));
    let l = h.list::<u8>(&mut cx, 115, 8).unwrap().unwrap();
    assert_eq!(l.bytes(2).unwrap(), &[2, 2, 2]);
    let l = h.list::<i32>(&mut cx, 101, 4).unwrap().unwrap();
    assert_eq!(l.scalar::<i32>(1), -1);
    // Bitmap words: field 115 needs 4.
    assert_eq!(&v[..4], &4u32.to_le_bytes());

    // Implicit-presence fields at their default are not written (proto3),
    // so a default message is the 4-byte empty header.
    let empty = scalars::AllScalars::default();
    let v = round_trip!(scalars::AllScalars, &empty);
    assert_eq!(v, 0u32.to_le_bytes());
    let d = scalars::AllScalars::decode(&v).unwrap();
    assert!(d.r_text.is_empty() && d.opt.is_none() && d.high == 0);
    assert_eq!(d, empty);
}

#[test]
fn empty_and_sparse_messages_round_trip() {
    let v = round_trip!(scalars::Empty, &scalars::Empty::default());
    assert_eq!(v, 0u32.to_le_bytes());

    let s = scalars::Sparse {
        last: b"at the highest field number".into(),
        ..Default::default()
    };
    let v = round_trip!(scalars::Sparse, &s);
    assert_eq!(
        &v[..4],
        &(granola::wire::MAX_FIELD_NUMBER / 32).to_le_bytes()
    );
    let d = scalars::Sparse::decode(&v).unwrap();
    assert_eq!(d.first, 0);
    assert_eq!(&d.last[..], b"at the highest field number");
}

#[test]
fn nested_messages_across_packages_round_trip() {
    let mut c = shapes::Canvas::default();
    for s in 0..3u32 {
        let mut shape = shapes::Shape {
            name: format!("shape {s}").into(),
            meta: Some(common::point::Meta {
                tags: vec![s],
                ..Default::default()
            }),
            first: Some(shapes::shape::Vertex {
                idx: 100 + s,
                ..Default::default()
            }),
            ..Default::default()
        };
        for i in 0..=s {
            shape.vertices.push(shapes::shape::Vertex {
                idx: i,
                p: Some(common::Point {
                    x: f64::from(i),
                    y: -f64::from(i),
                    meta: Some(common::point::Meta {
                        label: "corner".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                tags: vec![shapes::shape::vertex::Tag {
                    name: "t".into(),
                    ..Default::default()
                }],
                ..Default::default()
            });
        }
        c.shapes.push(shape);
    }
    c.tag = Some(shapes::shape::vertex::Tag {
        name: "canvas".into(),
        ..Default::default()
    });
    c.points.push(common::Point {
        x: 1.0,
        meta: Some(common::point::Meta {
            label: "pushed".into(),
            ..Default::default()
        }),
        ..Default::default()
    });
    c.points.push(common::Point::default());

    let v = round_trip!(shapes::Canvas, &c);
    let d = shapes::Canvas::decode(&v).unwrap();
    assert_eq!(d.shapes.len(), 3);
    let s2: &shapes::Shape<'_> = &d.shapes[2];
    assert_eq!(s2.name, "shape 2");
    let v1: &shapes::shape::Vertex<'_> = &s2.vertices[1];
    assert_eq!(v1.idx, 1);
    let p = v1.p.as_ref().unwrap();
    assert_eq!(p.y, -1.0);
    assert_eq!(p.meta.as_ref().unwrap().label, "corner");
    assert_eq!(v1.tags[0].name, "t");
    assert_eq!(s2.meta.as_ref().unwrap().tags, [2]);
    assert_eq!(s2.first.as_ref().unwrap().idx, 102);
    assert_eq!(d.tag.as_ref().unwrap().name, "canvas");
    assert_eq!(d.points[0].meta.as_ref().unwrap().label, "pushed");
    assert_eq!(d.points[1].x, 0.0);
}

fn node(depth: u32, value: i64) -> recursive::Node {
    let mut n = recursive::Node {
        value,
        ..Default::default()
    };
    if depth > 0 {
        n.left = Some(Box::new(node(depth - 1, value * 2)));
        n.right = Some(Box::new(node(depth - 1, value * 2 + 1)));
        if depth % 2 == 0 {
            n.children.push(node(depth / 2, -value));
        }
    }
    n
}

fn sum(n: &recursive::Node) -> i64 {
    n.value
        + n.left.as_deref().map_or(0, sum)
        + n.right.as_deref().map_or(0, sum)
        + n.children.iter().map(sum).sum::<i64>()
}

#[test]
fn recursive_messages_round_trip() {
    // A schema with no bytes or strings gives types with no lifetime.
    let root: recursive::Node = node(8, 1);
    let expected = sum(&root);
    let v = round_trip!(recursive::Node, &root);
    let d = recursive::Node::decode(&v).unwrap();
    assert_eq!(sum(&d), expected);

    // Mutual recursion: Tree -> Forest -> Tree.
    let t = recursive::Tree {
        root: Some(node(2, 5)),
        forest: Some(recursive::Forest {
            trees: vec![recursive::Tree {
                root: Some(node(1, 7)),
                forest: Some(recursive::Forest {
                    trees: vec![recursive::Tree {
                        root: Some(recursive::Node {
                            value: 9,
                            ..Default::default()
                        }),
                        forest: None,
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = round_trip!(recursive::Tree, &t);
    let d = recursive::Tree::decode(&v).unwrap();
    let deepest = &d.forest.as_ref().unwrap().trees[0]
        .forest
        .as_ref()
        .unwrap()
        .trees[0];
    assert_eq!(deepest.root.as_ref().unwrap().value, 9);

    // The decoder's depth limit applies to recursive data.
    let opts = DecodeOptions {
        max_depth: 3,
        ..DecodeOptions::default()
    };
    let deep = node(6, 1).to_vec().unwrap();
    assert!(recursive::Node::decode_with(&deep, &opts).is_err());
}

#[test]
fn awkward_names_round_trip() {
    let o = names::Option {
        r#type: "t".into(),
        r#fn: 1,
        r#match: true,
        self_: -4,
        r#async: b"a".into(),
        camel_case_field: 8,
        result: Some(names::Result {
            string: "s".into(),
            r#box: Some(names::Box {
                r#yield: Some(0.5),
                string: Some(names::String {
                    vec: b"v".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        vec: vec![names::Vec {
            r#loop: vec!["l".into()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let v = round_trip!(names::Option, &o);
    let d = names::Option::decode(&v).unwrap();
    assert_eq!(d.r#type, "t");
    assert_eq!(d.r#fn, 1);
    assert!(d.r#match);
    assert_eq!(d.self_, -4);
    assert_eq!(&d.r#async[..], b"a");
    assert_eq!(d.camel_case_field, 8);
    let r: &names::Result<'_> = d.result.as_ref().unwrap();
    assert_eq!(r.string, "s");
    let b: &names::Box<'_> = r.r#box.as_ref().unwrap();
    assert_eq!(b.r#yield, Some(0.5));
    let s: &names::String<'_> = b.string.as_ref().unwrap();
    assert_eq!(&s.vec[..], b"v");
    let v: &names::Vec<'_> = &d.vec[0];
    assert_eq!(v.r#loop[0], "l");
}

#[test]
fn float_equality_is_bitwise() {
    let m = scalars::AllScalars {
        fl: f32::NAN,
        db: -0.0,
        r_db: vec![f64::NAN],
        r_fl: vec![-0.0],
        ..Default::default()
    };
    assert_eq!(m, m, "NaN fields must compare equal to themselves");
    let v = round_trip!(scalars::AllScalars, &m);
    let d = scalars::AllScalars::decode(&v).unwrap();
    assert!(d.fl.is_nan() && d.r_db[0].is_nan());
    assert_eq!(d.db.to_bits(), (-0.0f64).to_bits(), "-0.0 is written");
    let z = scalars::AllScalars {
        db: 0.0,
        ..m.clone()
    };
    assert_ne!(z, m, "0.0 and -0.0 encode differently");
    let z = scalars::AllScalars {
        r_fl: vec![0.0],
        ..m.clone()
    };
    assert_ne!(z, m, "repeated floats compare bitwise too");

    let g = sample::Sample {
        ratio: f64::NAN,
        ..Default::default()
    };
    assert_eq!(g, g);
}
