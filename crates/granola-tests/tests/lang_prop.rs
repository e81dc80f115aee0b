//! Property tests over enums, oneofs and maps: any `Shape` / `Maps`, at any
//! copy threshold, survives encode -> decode -> encode -> decode unchanged,
//! and the three serialization paths agree.

use granola::{Context, Decode, Message, Pool};
use granola_tests::lang::{shape, Maps, Shape};
use proptest::collection::vec;
use proptest::option::of;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Body {
    Radius(f64),
    Label(String),
    Blob(Vec<u8>),
    Inner(Option<i32>),
    Tint(i32),
}

#[derive(Debug, Clone)]
struct ShapeSpec {
    kind: Option<i32>,
    color: Option<i32>,
    palette: Option<Vec<i32>>,
    body: Option<Body>,
    flag: Option<Result<bool, u32>>,
}

fn raw_enum() -> impl Strategy<Value = i32> {
    // Known values and unknown ones (open enums keep them).
    prop_oneof![0..3i32, Just(-3), any::<i32>()]
}

fn body() -> impl Strategy<Value = Body> {
    prop_oneof![
        (-1e9..1e9f64).prop_map(Body::Radius),
        ".{0,40}".prop_map(Body::Label),
        prop_oneof![vec(any::<u8>(), 0..8), vec(any::<u8>(), 60..200)].prop_map(Body::Blob),
        of(raw_enum()).prop_map(Body::Inner),
        raw_enum().prop_map(Body::Tint),
    ]
}

fn shape_spec() -> impl Strategy<Value = ShapeSpec> {
    (
        of(raw_enum()),
        of(raw_enum()),
        of(vec(raw_enum(), 0..6)),
        of(body()),
        of(prop_oneof![
            any::<bool>().prop_map(Ok),
            any::<u32>().prop_map(Err)
        ]),
    )
        .prop_map(|(kind, color, palette, body, flag)| ShapeSpec {
            kind,
            color,
            palette,
            body,
            flag,
        })
}

fn build<'a>(ctx: &'a Context, s: &ShapeSpec) -> Shape<'a> {
    let mut m = Shape::new(ctx);
    if let Some(k) = s.kind {
        m.set_kind_raw(k);
    }
    if let Some(c) = s.color {
        m.set_color_raw(c);
    }
    if let Some(p) = &s.palette {
        m.init_palette(p.len());
        for &v in p {
            m.append_palette_raw(v);
        }
    }
    match &s.body {
        None => {}
        Some(Body::Radius(r)) => m.set_radius(*r),
        Some(Body::Label(l)) => m.set_label(l),
        Some(Body::Blob(b)) => m.set_blob(b),
        Some(Body::Inner(k)) => {
            let mut i = Shape::new(ctx);
            if let Some(k) = k {
                i.set_kind_raw(*k);
            }
            m.set_inner(i);
        }
        Some(Body::Tint(t)) => m.set_body(shape::Body::Tint(*t)),
    }
    match s.flag {
        None => {}
        Some(Ok(b)) => m.set_on(b),
        Some(Err(l)) => m.set_level(l),
    }
    m
}

/// All three serialization paths agree; `decode` checks the pool copy.
fn check_round_trip<M: Message>(pool: &Pool, m: &M, decode: impl Fn(&[u8])) {
    let v = m.to_vec().unwrap();
    assert_eq!(m.to_sga().unwrap().to_vec(), v);
    assert_eq!(m.encoded_len(), v.len());
    let rx = pool.alloc_copy(&v).unwrap();
    decode(&rx);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn shapes_round_trip(spec in shape_spec(), threshold in prop_oneof![Just(0usize), Just(64), Just(usize::MAX)]) {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let ctx = Context::new(&pool).with_copy_threshold(threshold);
        let m = build(&ctx, &spec);
        check_round_trip(&pool, &m, |rx| {
            let d = Shape::decode(&ctx, rx).unwrap();
            assert_eq!(d, m);
            // Re-encoding may lay bytes out differently (decoded values
            // above the threshold are referenced), but decodes the same.
            let again = d.to_vec().unwrap();
            assert_eq!(Shape::decode(&ctx, &again).unwrap(), m);
            assert_eq!(d.get_color_raw(), spec.color.unwrap_or(0));
        });
    }

    #[test]
    fn maps_round_trip(
        s_s in vec((".{0,8}", ".{0,8}"), 0..5),
        u32_e in vec((any::<u32>(), raw_enum()), 0..5),
        i32_b in vec((any::<i32>(), vec(any::<u8>(), 0..100)), 0..4),
        i64_m in vec((any::<i64>(), shape_spec()), 0..3),
        b_b in vec((any::<bool>(), vec(any::<u8>(), 0..4)), 0..3),
    ) {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let ctx = Context::new(&pool).with_copy_threshold(32);
        let mut m = Maps::new(&ctx);
        for (k, v) in &s_s {
            let e = m.append_s_s();
            e.set_key(k);
            e.set_value(v);
        }
        for (k, v) in &u32_e {
            let e = m.append_u32_e();
            e.set_key(*k);
            e.set_value_raw(*v);
        }
        for (k, v) in &i32_b {
            let e = m.append_i32_b();
            e.set_key(*k);
            e.set_value(v);
        }
        for (k, v) in &i64_m {
            let s = build(&ctx, v);
            let e = m.append_i64_m();
            e.set_key(*k);
            e.set_value(s);
        }
        for (k, v) in &b_b {
            let e = m.append_b_b();
            e.set_key(*k);
            e.set_value(v);
        }
        check_round_trip(&pool, &m, |rx| {
            let d = Maps::decode(&ctx, rx).unwrap();
            assert_eq!(d, m);
            let again = d.to_vec().unwrap();
            assert_eq!(Maps::decode(&ctx, &again).unwrap(), m);
            assert_eq!(d.get_u32_e().len(), u32_e.len());
        });
    }
}
