//! Property tests over enums, oneofs and maps: any `Shape` / `Maps`, at any
//! copy threshold, survives encode -> decode -> encode -> decode unchanged,
//! and the three serialization paths agree.

use granola::{Decode, DecodeOptions, IntoOwned, Message, MessageType, Pool};
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

/// The message `s` describes; blobs live in `pool`, so they go by
/// reference at or above the serializer's threshold.
fn build(pool: &Pool, s: &ShapeSpec) -> Shape<'static> {
    let mut m = Shape::default();
    if let Some(k) = s.kind {
        m.kind = k;
    }
    if let Some(c) = s.color {
        m.color = c;
    }
    if let Some(p) = &s.palette {
        m.palette = p.clone();
    }
    m.body = s.body.as_ref().map(|b| match b {
        Body::Radius(r) => shape::Body::Radius(*r),
        Body::Label(l) => shape::Body::Label(l.clone().into()),
        Body::Blob(b) if b.is_empty() => shape::Body::Blob(Vec::new().into()),
        Body::Blob(b) => shape::Body::Blob(pool.alloc_copy(b).unwrap().into()),
        Body::Inner(k) => shape::Body::Inner(Box::new(Shape {
            kind: k.unwrap_or(0),
            ..Default::default()
        })),
        Body::Tint(t) => shape::Body::Tint(*t),
    });
    m.flag = s.flag.map(|f| match f {
        Ok(b) => shape::Flag::On(b),
        Err(l) => shape::Flag::Level(l),
    });
    m
}

/// All three serialization paths agree at `threshold`; the bytes decode
/// (borrowed from the heap, and owned from a pool copy) to `m`, and
/// re-encoding the decoded message decodes to `m` again.
fn check_round_trip<T: MessageType + Message>(pool: &Pool, m: &T, threshold: usize) {
    let v = m.to_sga_with(threshold).unwrap().to_vec();
    assert_eq!(m.encoded_sizes_with(threshold).total_len(), v.len());
    assert_eq!(m.to_vec().unwrap().len(), v.len());
    let d = T::Of::decode(&v).unwrap();
    assert_eq!(&d, m.shorten());
    let again = d.to_vec().unwrap();
    assert_eq!(&T::Of::decode(&again).unwrap(), m.shorten());
    let rx = pool.alloc_copy(&v).unwrap();
    let owned = T::Of::decode_buf_with(&rx, &DecodeOptions::default(), threshold).unwrap();
    // Layouts may differ (which values are referenced), not the message.
    let again = owned.to_sga_with(threshold).unwrap().to_vec();
    assert_eq!(&T::Of::decode(&again).unwrap(), m.shorten());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn shapes_round_trip(spec in shape_spec(), threshold in prop_oneof![Just(0usize), Just(64), Just(usize::MAX)]) {
        let pool = Pool::with_capacity(256 << 20).unwrap();
        let m = build(&pool, &spec);
        check_round_trip(&pool, &m, threshold);
        let v = m.to_vec().unwrap();
        let d = Shape::decode(&v).unwrap().into_owned();
        assert_eq!(d.color, spec.color.unwrap_or(0));
    }

    #[test]
    fn maps_round_trip(
        s_s in vec((".{0,8}", ".{0,8}"), 0..5),
        u32_e in vec((any::<u32>(), raw_enum()), 0..5),
        i32_b in vec((any::<i32>(), vec(any::<u8>(), 0..100)), 0..4),
        i64_m in vec((any::<i64>(), shape_spec()), 0..3),
        b_b in vec((any::<bool>(), vec(any::<u8>(), 0..4)), 0..3),
    ) {
        let pool = Pool::with_capacity(256 << 20).unwrap();
        let m = Maps {
            s_s: s_s.iter().map(|(k, v)| (k.clone().into(), v.clone().into())).collect(),
            u32_e: u32_e.iter().copied().collect(),
            i32_b: i32_b
                .iter()
                .map(|(k, v)| {
                    let v = if v.is_empty() { Vec::new().into() } else { pool.alloc_copy(v).unwrap().into() };
                    (*k, v)
                })
                .collect(),
            i64_m: i64_m.iter().map(|(k, v)| (*k, build(&pool, v))).collect(),
            b_b: b_b.iter().map(|(k, v)| (*k, v.clone().into())).collect(),
            ..Default::default()
        };
        check_round_trip(&pool, &m, 32);
        let v = m.to_vec().unwrap();
        let d = Maps::decode(&v).unwrap();
        let distinct: std::collections::BTreeSet<u32> = u32_e.iter().map(|(k, _)| *k).collect();
        assert_eq!(d.u32_e.len(), distinct.len());
    }
}

/// A `Detail` of the v2 schema: note, counts, and an optional child.
fn detail() -> impl Strategy<Value = (String, Vec<u64>, Option<String>)> {
    (".{0,12}", vec(any::<u64>(), 0..4), of(".{0,6}"))
}

fn build_detail(
    (note, counts, child): &(String, Vec<u64>, Option<String>),
) -> granola_tests::evo::v2::Detail<'static> {
    use granola_tests::evo::v2;
    v2::Detail {
        note: note.clone().into(),
        counts: counts.clone(),
        child: child.as_ref().map(|c| {
            Box::new(v2::Detail {
                note: c.clone().into(),
                ..Default::default()
            })
        }),
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any v2 event survives a v1 reader: decoded by v1 (from a pool
    /// buffer, at any copy threshold), re-encoded, and decoded by v2, it
    /// is the event written, whichever of v2's fields it has.
    #[test]
    fn unknown_fields_survive_any_older_reader(
        level in 0..3i32,
        what in of(prop_oneof![
            any::<u32>().prop_map(|c| (0u8, c, Vec::new())),
            vec(any::<u8>(), 0..300).prop_map(|b| (2u8, 0, b)),
        ]),
        score in any::<f64>(),
        source in ".{0,20}",
        main in of(detail()),
        flags in vec(any::<bool>(), 0..5),
        deltas in vec(any::<i32>(), 0..5),
        stamps in vec(any::<u64>(), 0..5),
        tags in vec(".{0,6}", 0..4),
        history in vec(detail(), 0..3),
        totals in vec((".{0,6}", any::<i64>()), 0..4),
        far in any::<u64>(),
        threshold in prop_oneof![Just(0usize), Just(64), Just(usize::MAX)],
    ) {
        use granola_tests::evo::{v1, v2};
        let pool = Pool::with_capacity(64 << 20).unwrap();
        let new = v2::Event {
            level,
            what: what.map(|(k, code, blob)| match k {
                0 => v2::event::What::Code(code),
                _ if blob.is_empty() => v2::event::What::Blob(Vec::new().into()),
                _ => v2::event::What::Blob(pool.alloc_copy(&blob).unwrap().into()),
            }),
            score,
            source: source.into(),
            detail: main.as_ref().map(build_detail),
            flags,
            deltas,
            stamps,
            tags: tags.into_iter().map(Into::into).collect(),
            history: history.iter().map(build_detail).collect(),
            totals: totals.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            far,
            ..Default::default()
        };
        let rx = pool.alloc_copy(&new.to_sga_with(threshold).unwrap().to_vec()).unwrap();
        let old = v1::Event::decode_buf_with(&rx, &DecodeOptions::default(), threshold).unwrap();
        prop_assert_eq!(old.level, level);
        let passed_on = old.to_sga_with(threshold).unwrap().to_vec();
        prop_assert_eq!(v2::Event::decode(&passed_on).unwrap(), new);
    }
}
