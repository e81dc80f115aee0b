//! Fuzzes RESTORE's and FUNCTION RESTORE's payload decoders
//! (`protocol::rdb`).
//!
//! The input is decoded as sent (so the footer check runs), then sealed
//! with a valid version and checksum (so the value decoder is reached on
//! nearly every input). Invariants checked, beyond "no panic" and no
//! allocation beyond the budget (libFuzzer's `-rss_limit_mb` and
//! `-malloc_limit_mb` catch one):
//! - what decodes fits the budget it was given;
//! - what decodes, written again by `Dump` or `StreamDump` (granola-kv's
//!   DUMP), decodes to the same value (a stream's consumers' active times
//!   aside: the stream type DUMP writes has none, they become the seen
//!   times);
//! - libraries' codes that decode fit the budget and, written again as a
//!   FUNCTION DUMP payload, decode to the same codes.
//!
//! Random bytes seldom make a stream node's listpack, so a second path
//! builds a valid stream payload from the input (entries, a group, its
//! pending entries), checks that it decodes to what was written, then
//! changes one byte the input picks and decodes it again (sealed again):
//! the stream checks are reached from the first run on.
#![no_main]

use granola_kv::protocol::rdb::{
    self, Dump, DumpType, RdbConsumer, RdbGroup, RdbPending, RdbStream, RdbValue, StreamDump,
    ELEMENT_COST,
};
use granola_kv::store::{StreamId, StreamMeta};
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
        RdbValue::Stream(s) => dump_stream(s),
    }
}

fn dump_stream(s: &RdbStream) -> Vec<u8> {
    let mut d = StreamDump::new();
    for (id, parts) in &s.entries {
        let parts: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
        d.entry(*id, &parts);
    }
    d.finish(&s.meta, &s.groups)
}

/// `v` as DUMP's stream type keeps it: active times are seen times.
fn as_dumped(v: &RdbValue) -> RdbValue {
    let mut v = v.clone();
    if let RdbValue::Stream(s) = &mut v {
        for c in s.groups.iter_mut().flat_map(|g| g.consumers.iter_mut()) {
            c.active_ms = Some(c.seen_ms);
        }
    }
    v
}

/// A valid stream built from `data`: each byte an entry (fields from its
/// bits, IDs from its value), a group with every third entry pending.
fn stream_from(data: &[u8]) -> RdbStream {
    let mut s = RdbStream::default();
    let mut id = StreamId { ms: 1, seq: 0 };
    for (i, &b) in data.iter().enumerate() {
        id = StreamId {
            ms: id.ms + u64::from(b >> 6),
            seq: if b >> 6 == 0 {
                id.seq + 1
            } else {
                u64::from(b & 3)
            },
        };
        let value = vec![b; usize::from(b & 0x3f) * (1 + (i % 7) * 20)];
        let parts = match b & 0xc0 {
            0 => vec![b"f".to_vec(), value],
            0x40 => vec![b"f".to_vec(), b.to_string().into_bytes()],
            _ => vec![
                vec![b],
                value,
                b"g".to_vec(),
                (-i64::from(b)).to_string().into_bytes(),
            ],
        };
        s.entries.push((id, parts));
    }
    s.meta = StreamMeta {
        last_id: id,
        max_deleted: StreamId::MIN,
        entries_added: data.len() as u64,
    };
    let consumers = vec![
        RdbConsumer {
            name: b"a".to_vec(),
            seen_ms: 7,
            active_ms: Some(7),
        },
        RdbConsumer {
            name: b"b".to_vec(),
            seen_ms: 9,
            active_ms: Some(9),
        },
    ];
    let pending = s
        .entries
        .iter()
        .step_by(3)
        .enumerate()
        .map(|(i, e)| RdbPending {
            id: e.0,
            delivered_ms: i as u64,
            deliveries: 1,
            consumer: i % 2,
        })
        .collect();
    s.groups.push(RdbGroup {
        name: b"g".to_vec(),
        last_delivered: id,
        entries_read: Some(data.len() as u64),
        pending,
        consumers,
    });
    s
}

fn cost(v: &RdbValue) -> usize {
    let e = |b: &[u8]| b.len() + ELEMENT_COST;
    match v {
        RdbValue::String(s) => e(s),
        RdbValue::List(l) | RdbValue::Set(l) => l.iter().map(|x| e(x)).sum(),
        RdbValue::Hash(h) => h.iter().map(|(f, v)| e(f) + e(v)).sum(),
        RdbValue::ZSet(z) => z.iter().map(|(m, _)| e(m)).sum(),
        RdbValue::Stream(s) => s
            .entries
            .iter()
            .map(|(_, p)| ELEMENT_COST + p.iter().map(|x| e(x)).sum::<usize>())
            .sum(),
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
        assert_eq!(again, as_dumped(&v));
    }
    // The stream path: a valid payload, then one byte changed.
    if data.len() >= 2 {
        let s = stream_from(&data[2..data.len().min(400)]);
        let payload = dump_stream(&s);
        let v = RdbValue::Stream(Box::new(s));
        assert_eq!(rdb::decode(&payload, usize::MAX), Ok(v));
        let body = &payload[..payload.len() - 10];
        let at = usize::from(u16::from_le_bytes([data[0], data[1]])) % body.len();
        let mut changed = body.to_vec();
        changed[at] ^= data[0] | 1;
        if let Ok(v) = rdb::decode(&rdb::seal(changed, 10), BUDGET) {
            assert!(cost(&v) <= BUDGET, "over budget");
        }
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
