//! Round trips through the code granola-build generates (see `build.rs`):
//! `to_vec()` then `Decode::decode` must give back an equal message.

use granola::{Buf, Context, Decode, DecodeOptions, Message, Pool};
use granola_tests::geo::{common, shapes};
use granola_tests::{names, recursive, sample, scalars};

fn pool() -> Pool {
    Pool::with_capacity(16 << 20).unwrap()
}

/// Encodes `m`, copies the bytes into the pool (as a receive path would)
/// and decodes them again.
fn round_trip<'a, M>(ctx: &'a Context, m: &M) -> (Buf, Vec<u8>)
where
    M: Message + Decode<'a> + PartialEq + std::fmt::Debug,
{
    let v = m.to_vec().unwrap();
    assert_eq!(
        m.to_sga().unwrap().to_vec(),
        v,
        "to_sga and to_vec disagree"
    );
    assert_eq!(m.encoded_len(), v.len());
    (ctx.pool().alloc_copy(&v).unwrap(), v)
}

/// The scenario of `tests/smoke.rs`, on the generated type.
#[test]
fn generated_sample_round_trips() {
    let pool = pool();
    let ctx = Context::new(&pool).with_copy_threshold(512);
    let big = pool.alloc_copy(&[9u8; 2048]).unwrap();
    let mut m = sample::Sample::new(&ctx);
    m.set_id(7);
    m.set_name("hello");
    m.set_data(&big);
    m.append_vals(b"small");
    m.append_vals(&big[..1024]);
    m.append_keys("k1");
    m.append_nums(-3);
    m.mut_inner().set_a(42);
    m.append_items().set_payload(b"p");
    m.set_flag(true);
    m.set_ratio(0.5);
    assert_eq!(big.ref_count(), 3);
    let sizes = m.encoded_sizes();
    assert_eq!(sizes.zero_copy_count, 2);
    let (rx, v) = round_trip(&ctx, &m);
    let d = sample::Sample::decode(&ctx, &rx).unwrap();
    assert_eq!(d, m);
    assert_eq!(d.to_vec().unwrap(), v);
    assert_eq!(d.get_id(), 7);
    assert_eq!(d.get_name().unwrap(), "hello");
    assert_eq!(d.get_name_bytes(), b"hello");
    assert!(d.data_field().unwrap().is_zero_copy());
    assert_eq!(d.get_data(), &[9u8; 2048][..]);
    assert_eq!(d.vals_len(), 2);
    assert_eq!(d.get_vals()[0].as_slice(), b"small");
    assert_eq!(d.get_keys()[0].as_str().unwrap(), "k1");
    assert_eq!(d.get_nums(), &[-3]);
    assert_eq!(d.get_inner().unwrap().get_a(), 42);
    assert!(!d.get_inner().unwrap().has_payload());
    assert_eq!(d.get_items()[0].get_payload(), b"p");
    assert!(d.get_flag());
    assert_eq!(d.get_ratio(), 0.5);
    assert!(format!("{d:?}").starts_with("Sample { id: 7, name: "));
    drop(d);
    drop(m);
    assert_eq!(big.ref_count(), 1);
}

/// Sets every field of a `Sample`.
macro_rules! fill_sample {
    ($m:expr, $big:expr) => {{
        let m = &mut $m;
        m.set_id(0xdead_beef);
        m.set_name("a name that is long enough");
        m.set_data($big);
        m.append_vals(b"v1");
        m.append_vals(&$big[..700]);
        m.append_vals(b"");
        m.append_keys("k1");
        m.append_keys("k2");
        m.init_nums(3);
        m.append_nums(i32::MIN);
        m.append_nums(0);
        m.append_nums(i32::MAX);
        m.mut_inner().set_a(u64::MAX);
        m.mut_inner().set_payload(&$big[..600]);
        m.append_items().set_a(1);
        m.append_items().set_payload(b"two");
        m.set_flag(false);
        m.set_ratio(-1.25);
    }};
}

#[test]
fn filled_sample_round_trips() {
    let pool = pool();
    let ctx = Context::new(&pool).with_copy_threshold(512);
    let big = pool.alloc_copy(&[3u8; 1500]).unwrap();
    let mut g = sample::Sample::new(&ctx);
    fill_sample!(g, &big);
    let v = g.to_vec().unwrap();
    let rx = pool.alloc_copy(&v).unwrap();
    let d = sample::Sample::decode(&ctx, &rx).unwrap();
    assert_eq!(d, g);
    assert_eq!(d.to_vec().unwrap(), v);
    assert_eq!(g.to_sga().unwrap().to_vec(), v);
}

#[test]
fn all_scalars_round_trip() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut m = scalars::AllScalars::new(&ctx);
    m.set_i32(i32::MIN);
    m.set_i64(i64::MIN);
    m.set_u32(u32::MAX);
    m.set_u64(u64::MAX);
    m.set_s32(-5);
    m.set_s64(-6);
    m.set_f32(7);
    m.set_f64(8);
    m.set_sf32(-9);
    m.set_sf64(-10);
    m.set_flag(true);
    m.set_fl(1.5);
    m.set_db(-2.25);
    m.set_text("text");
    m.set_blob(b"blob");
    for i in 0..3 {
        m.append_r_i32(-i);
        m.append_r_i64(i64::from(-i) << 40);
        m.append_r_u32(i as u32);
        m.append_r_u64(u64::MAX - i as u64);
        m.append_r_s32(i32::MIN + i);
        m.append_r_s64(i64::MIN + i64::from(i));
        m.append_r_f32(u32::MAX - i as u32);
        m.append_r_f64(i as u64);
        m.append_r_sf32(-i);
        m.append_r_sf64(i64::from(i));
        m.append_r_flag(i % 2 == 0);
        m.append_r_fl(i as f32 / 4.0);
        m.append_r_db(-(i as f64));
        m.append_r_text(&format!("t{i}"));
        m.append_r_blob(&[i as u8; 3]);
    }
    m.set_opt(0);
    m.set_high(33);
    let (rx, v) = round_trip(&ctx, &m);
    let d = scalars::AllScalars::decode(&ctx, &rx).unwrap();
    assert_eq!(d, m);
    assert_eq!(d.to_vec().unwrap(), v);
    assert_eq!(
        (d.get_i32(), d.get_i64(), d.get_u32(), d.get_u64()),
        (i32::MIN, i64::MIN, u32::MAX, u64::MAX)
    );
    assert_eq!(
        (d.get_s32(), d.get_s64(), d.get_f32(), d.get_f64()),
        (-5, -6, 7, 8)
    );
    assert_eq!((d.get_sf32(), d.get_sf64()), (-9, -10));
    assert!(d.get_flag());
    assert_eq!((d.get_fl(), d.get_db()), (1.5, -2.25));
    assert_eq!(d.get_text().unwrap(), "text");
    assert_eq!(d.get_blob(), b"blob");
    assert_eq!(d.get_r_i64(), &[0, -(1 << 40), -(2 << 40)]);
    assert_eq!(d.get_r_flag(), &[true, false, true]);
    assert_eq!(d.get_r_fl(), &[0.0, 0.25, 0.5]);
    assert_eq!(d.get_r_text()[2].as_str().unwrap(), "t2");
    assert_eq!(d.get_r_blob()[1].as_slice(), &[1, 1, 1]);
    assert!(d.has_opt());
    assert_eq!(d.get_opt(), 0);

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

    // Absent fields stay absent.
    let empty = scalars::AllScalars::new(&ctx);
    let rx = pool.alloc_copy(&empty.to_vec().unwrap()).unwrap();
    let d = scalars::AllScalars::decode(&ctx, &rx).unwrap();
    assert!(!d.has_i32() && !d.has_r_text() && !d.has_high());
    assert_eq!(d.get_r_i32(), &[] as &[i32]);
    assert_eq!(d, empty);
}

#[test]
fn empty_and_sparse_messages_round_trip() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let e = scalars::Empty::new(&ctx);
    let (rx, v) = round_trip(&ctx, &e);
    assert_eq!(v, 0u32.to_le_bytes());
    assert_eq!(scalars::Empty::decode(&ctx, &rx).unwrap(), e);

    let mut s = scalars::Sparse::new(&ctx);
    s.set_last(b"at the highest field number");
    let (rx, v) = round_trip(&ctx, &s);
    assert_eq!(
        &v[..4],
        &(granola::wire::MAX_FIELD_NUMBER / 32).to_le_bytes()
    );
    let d = scalars::Sparse::decode(&ctx, &rx).unwrap();
    assert_eq!(d, s);
    assert!(!d.has_first());
    assert_eq!(d.get_last(), b"at the highest field number");
}

#[test]
fn nested_messages_across_packages_round_trip() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut c = shapes::Canvas::new(&ctx);
    for s in 0..3u32 {
        let shape = c.append_shapes();
        shape.set_name(&format!("shape {s}"));
        for i in 0..=s {
            let v = shape.append_vertices();
            v.set_idx(i);
            v.mut_p().set_x(f64::from(i));
            v.mut_p().set_y(-f64::from(i));
            v.mut_p().mut_meta().set_label("corner");
            v.append_tags().set_name("t");
        }
        shape.mut_meta().append_tags(s);
        shape.mut_first().set_idx(100 + s);
    }
    c.mut_tag().set_name("canvas");
    let mut p = common::Point::new(&ctx);
    p.set_x(1.0);
    let mut meta = common::point::Meta::new(&ctx);
    meta.set_label("pushed");
    p.set_meta(meta);
    c.push_points(p);
    c.append_points();

    let (rx, v) = round_trip(&ctx, &c);
    let d = shapes::Canvas::decode(&ctx, &rx).unwrap();
    assert_eq!(d, c);
    assert_eq!(d.to_vec().unwrap(), v);
    assert_eq!(d.shapes_len(), 3);
    let s2: &shapes::Shape<'_> = &d.get_shapes()[2];
    assert_eq!(s2.get_name().unwrap(), "shape 2");
    let v1: &shapes::shape::Vertex<'_> = &s2.get_vertices()[1];
    assert_eq!(v1.get_idx(), 1);
    assert_eq!(v1.get_p().unwrap().get_y(), -1.0);
    assert_eq!(
        v1.get_p().unwrap().get_meta().unwrap().get_label().unwrap(),
        "corner"
    );
    let tag: &shapes::shape::vertex::Tag<'_> = &v1.get_tags()[0];
    assert_eq!(tag.get_name().unwrap(), "t");
    assert_eq!(s2.get_meta().unwrap().get_tags(), &[2]);
    assert_eq!(s2.get_first().unwrap().get_idx(), 102);
    assert_eq!(d.get_tag().unwrap().get_name().unwrap(), "canvas");
    assert_eq!(
        d.get_points()[0].get_meta().unwrap().get_label().unwrap(),
        "pushed"
    );
    assert!(!d.get_points()[1].has_x());
}

fn node<'a>(ctx: &'a Context, depth: u32, value: i64) -> recursive::Node<'a> {
    let mut n = recursive::Node::new(ctx);
    n.set_value(value);
    if depth > 0 {
        n.set_left(node(ctx, depth - 1, value * 2));
        n.set_right(node(ctx, depth - 1, value * 2 + 1));
        if depth % 2 == 0 {
            n.push_children(node(ctx, depth / 2, -value));
        }
    }
    n
}

fn sum(n: &recursive::Node<'_>) -> i64 {
    n.get_value()
        + n.get_left().map_or(0, sum)
        + n.get_right().map_or(0, sum)
        + n.get_children().iter().map(sum).sum::<i64>()
}

#[test]
fn recursive_messages_round_trip() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let root = node(&ctx, 8, 1);
    let expected = sum(&root);
    let (rx, v) = round_trip(&ctx, &root);
    let d = recursive::Node::decode(&ctx, &rx).unwrap();
    assert_eq!(d, root);
    assert_eq!(sum(&d), expected);
    assert_eq!(d.to_vec().unwrap(), v);

    // Mutual recursion: Tree -> Forest -> Tree.
    let mut t = recursive::Tree::new(&ctx);
    t.set_root(node(&ctx, 2, 5));
    let inner = t.mut_forest().append_trees();
    inner.set_root(node(&ctx, 1, 7));
    inner.mut_forest().append_trees().mut_root().set_value(9);
    let (rx, _) = round_trip(&ctx, &t);
    let d = recursive::Tree::decode(&ctx, &rx).unwrap();
    assert_eq!(d, t);
    let deepest = &d.get_forest().unwrap().get_trees()[0]
        .get_forest()
        .unwrap()
        .get_trees()[0];
    assert_eq!(deepest.get_root().unwrap().get_value(), 9);

    // The decoder's depth limit applies to recursive data.
    let ctx2 = Context::new(&pool).with_decode_options(DecodeOptions {
        max_depth: 3,
        ..DecodeOptions::default()
    });
    let deep = node(&ctx, 6, 1).to_vec().unwrap();
    let rx = pool.alloc_copy(&deep).unwrap();
    assert!(recursive::Node::decode(&ctx2, &rx).is_err());
}

#[test]
fn awkward_names_round_trip() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut o = names::Option::new(&ctx);
    o.set_type("t");
    o.set_fn(1);
    o.set_match(true);
    o.set_self(-4);
    o.set_async(b"a");
    o.set_camel_case_field(8);
    o.mut_result().set_string("s");
    o.mut_result().mut_box().set_yield(0.5);
    o.mut_result().mut_box().mut_string().set_vec(b"v");
    o.append_vec().append_loop("l");
    let (rx, _) = round_trip(&ctx, &o);
    let d = names::Option::decode(&ctx, &rx).unwrap();
    assert_eq!(d, o);
    assert_eq!(d.get_type().unwrap(), "t");
    assert_eq!(d.get_fn(), 1);
    assert!(d.get_match());
    assert_eq!(d.get_self(), -4);
    assert_eq!(d.get_async(), b"a");
    assert_eq!(d.get_camel_case_field(), 8);
    let r: &names::Result<'_> = d.get_result().unwrap();
    assert_eq!(r.get_string().unwrap(), "s");
    let b: &names::Box<'_> = r.get_box().unwrap();
    assert_eq!(b.get_yield(), 0.5);
    let s: &names::String<'_> = b.get_string().unwrap();
    assert_eq!(s.get_vec(), b"v");
    let v: &names::Vec<'_> = &d.get_vec()[0];
    assert_eq!(v.get_loop()[0].as_str().unwrap(), "l");
}

#[test]
fn float_equality_is_bitwise() {
    let pool = pool();
    let ctx = Context::new(&pool);
    let mut m = scalars::AllScalars::new(&ctx);
    m.set_fl(f32::NAN);
    m.set_db(-0.0);
    m.append_r_db(f64::NAN);
    m.append_r_fl(-0.0);
    assert_eq!(m, m, "NaN fields must compare equal to themselves");
    let (rx, _) = round_trip(&ctx, &m);
    let d = scalars::AllScalars::decode(&ctx, &rx).unwrap();
    assert_eq!(d, m);
    assert!(d.get_fl().is_nan() && d.get_r_db()[0].is_nan());
    let mut z = scalars::AllScalars::new(&ctx);
    z.set_fl(f32::NAN);
    z.set_db(0.0);
    z.append_r_db(f64::NAN);
    z.append_r_fl(-0.0);
    assert_ne!(z, m, "0.0 and -0.0 encode differently");
    let mut z = scalars::AllScalars::new(&ctx);
    z.set_fl(f32::NAN);
    z.set_db(-0.0);
    z.append_r_db(f64::NAN);
    z.append_r_fl(0.0);
    assert_ne!(z, m, "repeated floats compare bitwise too");

    let mut g = sample::Sample::new(&ctx);
    g.set_ratio(f64::NAN);
    assert_eq!(g, g);
}
