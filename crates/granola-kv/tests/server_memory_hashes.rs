//! Hashes under the memory limit: a 32 MiB server first filled with
//! strings (so its pool is resident), then written three times its limit
//! in hashes through RESP `HSET`. Hash tables live on the heap, charged to
//! the same limit; the pool gives the pages of the segments it no longer
//! needs back to the kernel, so the process RSS (the server runs in this
//! process) stays within the limit plus [`FIXED_OVERHEAD`], sampled after
//! every round. Every field read back is exactly the one written (values
//! carry their key, field and a checksum). One test only in this file: RSS
//! is per process.
//!
//! [`FIXED_OVERHEAD`] = 12 MiB: the index, the pool's reference-count side
//! array, connection buffers, thread stacks, the test client and allocator
//! slack. (Without returning freed segments' pages the strings' pool pages
//! stay resident beside the hashes: about 50 MiB of growth here, which
//! this bound catches.)

mod common;

use common::*;

const LIMIT_MB: usize = 32;
const FIXED_OVERHEAD: usize = 12 << 20;
const FIELDS: usize = 16;
const VALUE_LEN: usize = 200;

/// `key|field|` padded with bytes derived from them, then the FNV-1a
/// checksum of everything before it.
fn value(key: &str, field: usize) -> Vec<u8> {
    let mut v = format!("{key}|{field}|").into_bytes();
    let seed = fnv(&v);
    while v.len() < VALUE_LEN - 8 {
        v.push(b'a' + ((seed >> (v.len() % 56)) as u8 % 26));
    }
    let sum = fnv(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

fn stat(srv: &Server, name: &str) -> usize {
    mc_stat(srv.mc(), name) as usize
}

#[test]
fn hashes_stay_within_the_limit_after_strings() {
    let limit = LIMIT_MB << 20;
    let mut cfg = config();
    cfg.memory_mb = LIMIT_MB;
    cfg.no_huge_pages = true;
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    let rss0 = rss_bytes();
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.resp());

    // Strings first, twice the limit: the pool is resident.
    let string = vec![b's'; 1000];
    let strings = 2 * limit / 1000 / 256 * 256;
    for i in 0..strings {
        c.send(&resp_cmd(&[
            &b"SET"[..],
            format!("s{i}").as_bytes(),
            &string,
        ]));
        if i % 256 == 255 {
            for _ in 0..256 {
                assert_eq!(c.read_resp(), Resp::Simple(b"OK".to_vec()));
            }
        }
    }
    assert!(
        stat(&srv, "item_pool_bytes") > limit / 2,
        "strings fill the pool"
    );
    let mut worst = 0;
    let per_round = limit / (FIELDS * VALUE_LEN);
    for round in 0..3 {
        for k in 0..per_round {
            let key = format!("h{round}:{k}");
            let mut args = vec![b"HSET".to_vec(), key.clone().into_bytes()];
            for f in 0..FIELDS {
                args.push(format!("f{f}").into_bytes());
                args.push(value(&key, f));
            }
            assert_eq!(c.resp(&args), Resp::Int(FIELDS as i64), "{key}");
        }
        // The newest hashes read back whole and intact.
        let mut found = 0;
        for k in per_round - 50..per_round {
            let key = format!("h{round}:{k}");
            let Resp::Array(Some(all)) = c.resp(&["HGETALL", &key]) else {
                panic!("HGETALL {key}");
            };
            if all.is_empty() {
                continue;
            }
            assert_eq!(all.len(), 2 * FIELDS, "{key}: a partial hash");
            for pair in all.chunks(2) {
                let (Resp::Bulk(Some(f)), Resp::Bulk(Some(v))) = (&pair[0], &pair[1]) else {
                    panic!("HGETALL {key}: {pair:?}");
                };
                let f: usize = std::str::from_utf8(&f[1..]).unwrap().parse().unwrap();
                assert_eq!(v, &value(&key, f), "{key} field {f}");
            }
            found += 1;
        }
        let rss = rss_bytes().saturating_sub(rss0);
        worst = worst.max(rss);
        println!(
            "round {round}: {per_round} hashes x {FIELDS} x {VALUE_LEN} B; newest 50: {found} whole; RSS growth {:.1} MiB; bytes {} MiB; dict_bytes {} MiB; item_pool_bytes {} MiB",
            rss as f64 / f64::from(1 << 20),
            stat(&srv, "bytes") >> 20,
            stat(&srv, "dict_bytes") >> 20,
            stat(&srv, "item_pool_bytes") >> 20,
        );
        assert!(
            found >= 45,
            "round {round}: {found} of the newest 50 hashes"
        );
        assert!(stat(&srv, "bytes") <= limit);
        assert!(
            stat(&srv, "dict_bytes") > limit / 2,
            "hashes hold the memory now"
        );
        assert!(
            rss <= limit + FIXED_OVERHEAD,
            "round {round}: RSS grew {rss} bytes: above limit {limit} + overhead {FIXED_OVERHEAD}"
        );
    }
    println!(
        "worst RSS growth {:.1} MiB for a {LIMIT_MB} MiB limit",
        worst as f64 / f64::from(1 << 20)
    );
}
