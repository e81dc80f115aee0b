//! Property tests: any message, at any copy threshold, survives encode →
//! decode unchanged, all three serialization paths agree byte for byte, the
//! copy/reference decision follows the threshold, and no pool slot leaks.

use granola::{Decode, DecodeOptions, HybridBytes, IntoOwned, Message, Pool};
use granola_tests::sample::{Inner, Sample};
use proptest::collection::vec;
use proptest::option::of;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct BytesSpec {
    data: Vec<u8>,
    in_pool: bool,
}

#[derive(Debug, Clone)]
struct InnerSpec {
    a: Option<u64>,
    payload: Option<BytesSpec>,
}

#[derive(Debug, Clone)]
struct SampleSpec {
    id: Option<u32>,
    name: Option<String>,
    data: Option<BytesSpec>,
    vals: Option<Vec<BytesSpec>>,
    keys: Option<Vec<String>>,
    nums: Option<Vec<i32>>,
    inner: Option<InnerSpec>,
    items: Option<Vec<InnerSpec>>,
    flag: Option<bool>,
    ratio: Option<f64>,
}

fn bytes_spec() -> impl Strategy<Value = BytesSpec> {
    // Sizes below, around and above the 512 B threshold used below.
    let data = prop_oneof![
        vec(any::<u8>(), 0..16),
        vec(any::<u8>(), 505..520),
        vec(any::<u8>(), 1000..2100),
    ];
    (data, any::<bool>()).prop_map(|(data, in_pool)| BytesSpec { data, in_pool })
}

fn inner_spec() -> impl Strategy<Value = InnerSpec> {
    (of(any::<u64>()), of(bytes_spec())).prop_map(|(a, payload)| InnerSpec { a, payload })
}

fn sample_spec() -> impl Strategy<Value = SampleSpec> {
    (
        (of(any::<u32>()), of(".{0,20}"), of(bytes_spec())),
        (of(vec(bytes_spec(), 0..6)), of(vec(".{0,600}", 0..4))),
        (of(vec(any::<i32>(), 0..20)), of(inner_spec())),
        (
            of(vec(inner_spec(), 0..4)),
            of(any::<bool>()),
            of(-1e9..1e9f64),
        ),
    )
        .prop_map(
            |((id, name, data), (vals, keys), (nums, inner), (items, flag, ratio))| SampleSpec {
                id,
                name,
                data,
                vals,
                keys,
                nums,
                inner,
                items,
                flag,
                ratio,
            },
        )
}

/// A bytes value as the spec says: a pool buffer (which the serializer
/// may send by reference) or an owned heap copy.
fn bytes(pool: &Pool, b: &BytesSpec) -> HybridBytes<'static> {
    if b.in_pool && !b.data.is_empty() {
        pool.alloc_copy(&b.data).unwrap().into()
    } else {
        b.data.clone().into()
    }
}

fn inner(pool: &Pool, s: &InnerSpec) -> Inner<'static> {
    Inner {
        a: s.a.unwrap_or(0),
        payload: s
            .payload
            .as_ref()
            .map(|p| bytes(pool, p))
            .unwrap_or_default(),
        ..Default::default()
    }
}

fn build(pool: &Pool, s: &SampleSpec) -> Sample<'static> {
    Sample {
        id: s.id.unwrap_or(0),
        name: s.name.clone().unwrap_or_default().into(),
        data: s.data.as_ref().map(|d| bytes(pool, d)).unwrap_or_default(),
        vals: s.vals.iter().flatten().map(|v| bytes(pool, v)).collect(),
        keys: s.keys.iter().flatten().map(|k| k.clone().into()).collect(),
        nums: s.nums.clone().unwrap_or_default(),
        inner: s.inner.as_ref().map(|i| inner(pool, i)),
        items: s.items.iter().flatten().map(|i| inner(pool, i)).collect(),
        flag: s.flag.unwrap_or(false),
        ratio: s.ratio.unwrap_or(0.0),
        ..Default::default()
    }
}

fn expect_zero_copy(b: &BytesSpec, threshold: usize) -> bool {
    b.in_pool && !b.data.is_empty() && b.data.len() >= threshold
}

fn check_spec(m: &Sample<'_>, s: &SampleSpec) {
    assert_eq!(m.id, s.id.unwrap_or(0));
    assert_eq!(m.name.as_str().unwrap(), s.name.as_deref().unwrap_or(""));
    assert_eq!(
        &m.data[..],
        s.data.as_ref().map_or(&[][..], |d| &d.data[..])
    );
    let vals: Vec<&[u8]> = m.vals.iter().map(|v| v.as_slice()).collect();
    let want: Vec<&[u8]> = s.vals.iter().flatten().map(|v| &v.data[..]).collect();
    assert_eq!(vals, want);
    let keys: Vec<&str> = m.keys.iter().map(|k| k.as_str().unwrap()).collect();
    let want: Vec<&str> = s.keys.iter().flatten().map(|k| k.as_str()).collect();
    assert_eq!(keys, want);
    assert_eq!(m.nums, s.nums.as_deref().unwrap_or(&[]));
    assert_eq!(m.inner.is_some(), s.inner.is_some());
    assert_eq!(m.items.len(), s.items.as_ref().map_or(0, |v| v.len()));
    for (got, want) in m.items.iter().zip(s.items.iter().flatten()) {
        assert_eq!(got.a, want.a.unwrap_or(0));
        assert_eq!(
            &got.payload[..],
            want.payload.as_ref().map_or(&[][..], |p| &p.data[..])
        );
    }
    assert_eq!(m.flag, s.flag.unwrap_or(false));
    assert_eq!(m.ratio, s.ratio.unwrap_or(0.0));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        ..ProptestConfig::default()
    })]

    #[test]
    fn encode_decode_round_trip(spec in sample_spec(), t in prop_oneof![Just(0usize), Just(512), Just(usize::MAX)]) {
        let pool = Pool::with_capacity(64 << 20).unwrap();
        {
            let m = build(&pool, &spec);
            check_spec(&m, &spec);

            // Three serialization paths agree.
            let sga = m.to_sga_with(t).unwrap();
            let flat = sga.to_vec();
            let sizes = m.encoded_sizes_with(t);
            prop_assert_eq!(sizes.total_len(), flat.len());
            prop_assert_eq!(sga.entries.len(), sizes.zero_copy_count());
            let by_reference = spec.data.iter().chain(spec.vals.iter().flatten())
                .chain(spec.inner.iter().chain(spec.items.iter().flatten()).filter_map(|i| i.payload.as_ref()))
                .filter(|b| expect_zero_copy(b, t))
                .count();
            prop_assert_eq!(sizes.zero_copy_count(), by_reference, "the threshold decides what is referenced");
            let mut head = vec![0u8; sizes.head_len()];
            let mut fused = Vec::new();
            m.encode(&sizes, &mut head, |b| fused.extend_from_slice(b)).unwrap();
            head.extend_from_slice(&fused);
            prop_assert!(head == flat, "fused encode differs from to_sga");
            prop_assert!(m.to_vec().unwrap() == m.to_sga().unwrap().to_vec(), "to_vec differs from to_sga");

            // Decode from a received pool buffer, at the same and another
            // threshold: same logical message.
            let rx = pool.alloc_copy(&flat).unwrap();
            let d = Sample::decode_buf_with(&rx, &DecodeOptions::default(), t).unwrap();
            prop_assert_eq!(&d, &m);
            check_spec(&d, &spec);
            // Re-encoding may lay bytes out differently (a value copied at
            // the sender because it was on the heap is referenced from the
            // receive buffer now), but it is the same message.
            let again = d.to_sga_with(t).unwrap().to_vec();
            prop_assert_eq!(&Sample::decode(&again).unwrap(), &m);
            let other = if t == 0 { usize::MAX } else { 0 };
            let d2 = Sample::decode_buf_with(&rx, &DecodeOptions::default(), other).unwrap();
            check_spec(&d2, &spec);
            // Borrowed from plain heap memory too, and detached.
            check_spec(&Sample::decode(&flat).unwrap(), &spec);
            check_spec(&Sample::decode(&flat).unwrap().into_owned(), &spec);
        }
        // Every message, decoded copy and source is gone: nothing leaked.
        prop_assert_eq!(pool.stats().live_slots, 0);
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        if let Ok(m) = Sample::decode(&bytes) {
            // Anything that decodes re-encodes to something that decodes
            // to the same message.
            let again = m.to_vec().unwrap();
            let d = Sample::decode(&again).unwrap();
            prop_assert_eq!(&d, &m);
        };
        // Owned, from a pool buffer, with every value referenced.
        if let Some(rx) = pool.alloc_copy(&bytes) {
            if let Ok(m) = Sample::decode_buf_with(&rx, &DecodeOptions::default(), 0) {
                let again = m.to_sga_with(0).unwrap().to_vec();
                prop_assert_eq!(&Sample::decode(&again).unwrap(), &m);
            }
        }
    }
}
