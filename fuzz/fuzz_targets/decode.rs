//! Fuzzes granola's decoder with the sample schema (every field kind), and
//! the enum/oneof/map/well-known-type schema (`lang.proto`).
//!
//! Invariants checked, beyond "no panic / no out-of-bounds read" (ASan):
//! - decoding from a pool buffer and from heap memory agree;
//! - anything that decodes re-encodes, through all three serialization
//!   paths identically, to bytes that decode to the same message;
//! - no pool slot outlives the messages that referenced it;
//! - the read-only view reads what the decoder decoded, its list iterator
//!   reads what indexing reads, and a view over any bytes never panics.
#![no_main]

use granola::{Decode, DecodeOptions, IntoOwned, Message, Pool};
use granola_tests::lang::{Maps, Shape, Wkt};
use granola_tests::sample::{Sample, SampleView};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool::with_capacity(256 << 20).expect("pool"))
}

fuzz_target!(|data: &[u8]| {
    let pool = pool();
    let (threshold, bytes) = match data.split_first() {
        Some((t, rest)) => (*t as usize * 4, rest),
        None => (0, data),
    };
    check(pool, threshold, bytes);
    check_view(bytes);
    check_lang(bytes);
    assert_eq!(pool.stats().live_slots, 0, "a slot leaked");
});

fn check(pool: &Pool, threshold: usize, bytes: &[u8]) {
    let Some(rx) = pool.alloc_copy(bytes) else {
        return;
    };
    let opts = DecodeOptions::default();
    let from_pool = Sample::decode_shared_with(&rx, &opts, threshold);
    let from_heap = Sample::decode(bytes);
    match (&from_pool, &from_heap) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("pool and heap decodes disagree"),
    }
    if let Ok(m) = from_pool {
        // Aliased offsets can make a small input re-encode past 4 GiB: an
        // error, never a panic or a huge allocation.
        let sga = match m.to_sga_with(threshold) {
            Ok(s) => s,
            Err(e) => {
                assert_eq!(e, granola::EncodeError::TooLarge);
                assert!(m.to_vec().is_err());
                return;
            }
        };
        let flat = sga.to_vec();
        let sizes = m.encoded_sizes_with(threshold);
        let mut head = vec![0u8; sizes.head_len()];
        let mut tail = Vec::new();
        m.encode(&sizes, &mut head, |b| tail.extend_from_slice(b))
            .expect("encode");
        head.extend_from_slice(&tail);
        assert_eq!(head, flat);
        let again = Sample::decode(&flat).expect("re-encoded bytes decode");
        assert_eq!(again, m);
        let _ = m.name.as_str();
        for k in &m.keys {
            let _ = k.as_str();
        }
        // Detached, it is still the same message.
        assert_eq!(m.clone().into_owned(), m);
    }
}

/// The view checks only the root header up front (with a fast path for
/// one bitmap word); whatever it then reads must match the full decoder.
fn check_view(bytes: &[u8]) {
    let opts = DecodeOptions::default();
    let decoded = Sample::decode(bytes);
    let Ok(v) = SampleView::new(bytes, &opts) else {
        assert!(
            decoded.is_err(),
            "the decoder took a header the view refused"
        );
        return;
    };
    let (id, name, data) = (v.id(), v.name_bytes(), v.data());
    if let Ok(Some(vals)) = v.vals() {
        assert_eq!(vals.bytes_iter().len(), vals.len());
        for (i, b) in vals.bytes_iter().enumerate() {
            assert_eq!(b, vals.bytes(i));
        }
    }
    if let Ok(m) = decoded {
        assert_eq!(id, m.id);
        assert_eq!(name.expect("decoded name"), m.name.as_bytes());
        assert_eq!(data.expect("decoded data"), &m.data[..]);
        let vals = v.vals().expect("decoded vals");
        let got: Vec<&[u8]> = vals
            .map(|l| l.bytes_iter().map(|b| b.expect("decoded value")).collect())
            .unwrap_or_default();
        let want: Vec<&[u8]> = m.vals.iter().map(|b| &b[..]).collect();
        assert_eq!(got, want);
    }
}

/// Enums, oneofs, maps and well-known types: whatever decodes re-encodes
/// to bytes that decode to the same message.
fn check_lang(bytes: &[u8]) {
    macro_rules! one {
        ($t:ident) => {
            if let Ok(m) = $t::decode(bytes) {
                if let Ok(flat) = m.to_vec() {
                    let again = $t::decode(&flat).expect("re-encoded bytes decode");
                    assert_eq!(again, m);
                }
            }
        };
    }
    one!(Shape);
    one!(Maps);
    one!(Wkt);
}
