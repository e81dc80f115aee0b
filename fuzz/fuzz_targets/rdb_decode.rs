//! Fuzzes RESTORE's and FUNCTION RESTORE's payload decoders
//! (`protocol::rdb`).
//!
//! The input is decoded as sent (so the footer check runs), then sealed
//! with a valid version and checksum (so the value decoder is reached on
//! nearly every input). Invariants checked, beyond "no panic" and no
//! allocation beyond the budget (libFuzzer's `-rss_limit_mb` and
//! `-malloc_limit_mb` catch one):
//! - what decodes fits the budget it was given;
//! - what decodes, written again by `Dump` (granola-kv's DUMP), decodes to
//!   the same value;
//! - libraries' codes that decode fit the budget and, written again as a
//!   FUNCTION DUMP payload, decode to the same codes.
#![no_main]

use granola_kv::protocol::rdb::{self, Dump, DumpType, RdbValue, ELEMENT_COST};
use libfuzzer_sys::fuzz_target;

const BUDGET: usize = 1 << 20;

fn dump(v: &RdbValue) -> Vec<u8> {
    match v {
        RdbValue::String(s) => Dump::string(s),
        RdbValue::List(l) | RdbValue::Set(l) => {
            let kind = match v {
                RdbValue::List(_) => DumpType::List,
                _ => DumpType::Set,
            };
            let mut d = Dump::new(kind, l.len());
            l.iter().for_each(|e| d.element(e));
            d.finish()
        }
        RdbValue::Hash(h) => {
            let mut d = Dump::new(DumpType::Hash, h.len());
            for (f, v) in h {
                d.element(f);
                d.element(v);
            }
            d.finish()
        }
        RdbValue::ZSet(z) => {
            let mut d = Dump::new(DumpType::ZSet, z.len());
            for (m, s) in z {
                d.element(m);
                d.score(*s);
            }
            d.finish()
        }
    }
}

fn cost(v: &RdbValue) -> usize {
    let e = |b: &[u8]| b.len() + ELEMENT_COST;
    match v {
        RdbValue::String(s) => e(s),
        RdbValue::List(l) | RdbValue::Set(l) => l.iter().map(|x| e(x)).sum(),
        RdbValue::Hash(h) => h.iter().map(|(f, v)| e(f) + e(v)).sum(),
        RdbValue::ZSet(z) => z.iter().map(|(m, _)| e(m)).sum(),
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = rdb::decode(data, BUDGET);
    let Some((&version, body)) = data.split_first() else {
        return;
    };
    let payload = rdb::seal(body.to_vec(), u16::from(version % 13));
    if let Ok(v) = rdb::decode(&payload, BUDGET) {
        assert!(cost(&v) <= BUDGET, "over budget");
        let again = rdb::decode(&dump(&v), usize::MAX).expect("own dump decodes");
        assert_eq!(again, v);
    }
    let _ = rdb::decode_functions(data, BUDGET);
    if let Ok(codes) = rdb::decode_functions(&payload, BUDGET) {
        assert!(
            codes.iter().map(Vec::len).sum::<usize>() <= BUDGET,
            "over budget"
        );
        let payload = rdb::encode_functions(codes.iter().map(Vec::as_slice));
        let again = rdb::decode_functions(&payload, usize::MAX).expect("own dump decodes");
        assert_eq!(again, codes);
    }
});
