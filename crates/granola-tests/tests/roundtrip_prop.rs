//! Property tests: any message, at any copy threshold, survives encode →
//! decode unchanged, all three serialization paths agree byte for byte, the
//! copy/reference decision follows the threshold, and no pool slot leaks.

use granola::{Buf, Context, Decode, HybridBytes, Message, Pool};
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

/// Keeps pool copies of the "in pool" values alive while a message is built.
struct Source {
    pool: Pool,
    held: Vec<Buf>,
}

impl Source {
    fn bytes<'s>(&'s mut self, b: &'s BytesSpec) -> &'s [u8] {
        if b.in_pool && !b.data.is_empty() {
            self.held.push(self.pool.alloc_copy(&b.data).unwrap());
            self.held.last().unwrap()
        } else {
            &b.data
        }
    }
}

fn fill_inner(m: &mut Inner<'_>, s: &InnerSpec, src: &mut Source) {
    if let Some(a) = s.a {
        m.set_a(a);
    }
    if let Some(p) = &s.payload {
        m.set_payload(src.bytes(p));
    }
}

fn build<'a>(ctx: &'a Context, s: &SampleSpec, src: &mut Source) -> Sample<'a> {
    let mut m = Sample::new(ctx);
    if let Some(v) = s.id {
        m.set_id(v);
    }
    if let Some(v) = &s.name {
        m.set_name(v);
    }
    if let Some(v) = &s.data {
        m.set_data(src.bytes(v));
    }
    if let Some(vals) = &s.vals {
        m.init_vals(vals.len());
        for v in vals {
            m.append_vals(src.bytes(v));
        }
    }
    if let Some(keys) = &s.keys {
        m.init_keys(keys.len());
        for k in keys {
            m.append_keys(k);
        }
    }
    if let Some(nums) = &s.nums {
        m.init_nums(nums.len());
        for &n in nums {
            m.append_nums(n);
        }
    }
    if let Some(i) = &s.inner {
        fill_inner(m.mut_inner(), i, src);
    }
    if let Some(items) = &s.items {
        m.init_items(items.len());
        for i in items {
            fill_inner(m.append_items(), i, src);
        }
    }
    if let Some(v) = s.flag {
        m.set_flag(v);
    }
    if let Some(v) = s.ratio {
        m.set_ratio(v);
    }
    m
}

fn expect_zero_copy(b: &BytesSpec, threshold: usize) -> bool {
    b.in_pool && !b.data.is_empty() && b.data.len() >= threshold
}

fn check_bytes(field: &HybridBytes<'_>, spec: &BytesSpec, threshold: usize) {
    assert_eq!(field.as_slice(), &spec.data[..]);
    assert_eq!(field.is_zero_copy(), expect_zero_copy(spec, threshold));
}

fn check_spec(m: &Sample<'_>, s: &SampleSpec) {
    assert_eq!(m.has_id(), s.id.is_some());
    assert_eq!(m.get_id(), s.id.unwrap_or(0));
    assert_eq!(m.get_name().unwrap(), s.name.as_deref().unwrap_or(""));
    assert_eq!(
        m.get_data(),
        s.data.as_ref().map_or(&[][..], |d| &d.data[..])
    );
    let vals: Vec<&[u8]> = m.get_vals().iter().map(|v| v.as_slice()).collect();
    let want: Vec<&[u8]> = s.vals.iter().flatten().map(|v| &v.data[..]).collect();
    assert_eq!(vals, want);
    assert_eq!(m.has_vals(), s.vals.is_some());
    let keys: Vec<&str> = m.get_keys().iter().map(|k| k.as_str().unwrap()).collect();
    let want: Vec<&str> = s.keys.iter().flatten().map(|k| k.as_str()).collect();
    assert_eq!(keys, want);
    assert_eq!(m.get_nums(), s.nums.as_deref().unwrap_or(&[]));
    assert_eq!(m.has_inner(), s.inner.is_some());
    assert_eq!(m.items_len(), s.items.as_ref().map_or(0, |v| v.len()));
    for (got, want) in m.get_items().iter().zip(s.items.iter().flatten()) {
        assert_eq!(got.get_a(), want.a.unwrap_or(0));
        assert_eq!(
            got.get_payload(),
            want.payload.as_ref().map_or(&[][..], |p| &p.data[..])
        );
    }
    assert_eq!(m.get_flag(), s.flag.unwrap_or(false));
    assert_eq!(m.get_ratio(), s.ratio.unwrap_or(0.0));
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
            let ctx = Context::new(&pool).with_copy_threshold(t);
            let mut src = Source { pool: pool.clone(), held: Vec::new() };
            let m = build(&ctx, &spec, &mut src);
            check_spec(&m, &spec);
            if let Some(d) = &spec.data {
                check_bytes(m.data_field().unwrap(), d, t);
            }
            for (f, s) in m.get_vals().iter().zip(spec.vals.iter().flatten()) {
                check_bytes(f, s, t);
            }

            // Three serialization paths agree.
            let flat = m.to_vec().unwrap();
            let sga = m.to_sga().unwrap();
            prop_assert!(sga.to_vec() == flat, "sga differs from to_vec");
            let sizes = m.encoded_sizes();
            prop_assert_eq!(sizes.total_len(), flat.len());
            prop_assert_eq!(sga.entries.len(), sizes.zero_copy_count);
            let mut head = vec![0u8; sizes.head_len()];
            let mut fused = Vec::new();
            m.encode(&sizes, &mut head, |b| fused.extend_from_slice(b)).unwrap();
            head.extend_from_slice(&fused);
            prop_assert!(head == flat, "fused encode differs from to_vec");

            // Decode from a received pool buffer, at the same and another
            // threshold: same logical message.
            let rx = pool.alloc_copy(&flat).unwrap();
            let d = Sample::decode(&ctx, &rx).unwrap();
            prop_assert_eq!(&d, &m);
            check_spec(&d, &spec);
            // Re-encoding may lay bytes out differently (a value copied at
            // the sender because it was on the heap is referenced from the
            // receive buffer now), but it is the same message.
            let again = d.to_vec().unwrap();
            prop_assert_eq!(&Sample::decode(&ctx, &again).unwrap(), &m);
            let other = Context::new(&pool).with_copy_threshold(if t == 0 { usize::MAX } else { 0 });
            let d2 = Sample::decode(&other, &rx).unwrap();
            check_spec(&d2, &spec);
            // From plain heap memory too.
            check_spec(&Sample::decode(&ctx, &flat).unwrap(), &spec);
        }
        // Every message, decoded view and held source is gone: nothing leaked.
        prop_assert_eq!(pool.stats().live_slots, 0);
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let ctx = Context::new(&pool).with_copy_threshold(0);
        let rx = pool.alloc_copy(&bytes);
        let input: &[u8] = rx.as_deref().unwrap_or(&bytes);
        if let Ok(m) = Sample::decode(&ctx, input) {
            // Anything that decodes re-encodes to something that decodes
            // to the same message.
            let again = m.to_vec().unwrap();
            let d = Sample::decode(&ctx, &again).unwrap();
            prop_assert_eq!(&d, &m);
        };
    }
}
