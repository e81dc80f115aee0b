//! Size drift: a 32 MiB server is written five times its limit, in phases
//! of ever larger values (28 B ... 128 KiB), through memcached `set`. The
//! process RSS (the server runs in this process) stays within the limit
//! plus [`FIXED_OVERHEAD`], sampled after every phase; afterwards a value of
//! every size up to `-I` can still be stored and read back — before and
//! after `flush_all` — and every value read at any point is exactly the one
//! written (values carry their key, version and a checksum).
//!
//! Without segments moving between size classes the old classes keep
//! their memory ("calcification"): RSS grows by about a limit per class
//! and sets of a new size fail with `SERVER_ERROR out of memory`.
//!
//! [`FIXED_OVERHEAD`] = 32 MiB covers what is not an item but resident:
//! the item pool's class slack (16 MiB, `CLASS_SLACK_SEGMENTS`: a partly
//! filled segment per class in use), the pool's reference-count side array
//! (1/16 of the touched data), the index, connection buffers (within their
//! share of the limit), thread stacks, the test client and allocator
//! slack. One test only in this file: RSS is per process.

mod common;

use common::*;

const LIMIT_MB: usize = 32;
const FIXED_OVERHEAD: usize = 32 << 20;

/// A self-verifying value: `key|version|len|` then bytes derived from
/// them, then an 8-byte FNV-1a checksum of everything before it. Values
/// shorter than the header are a prefix of the derived bytes.
fn value(key: &str, version: u64, len: usize) -> Vec<u8> {
    let head = format!("{key}|{version}|{len}|");
    let seed = fnv(head.as_bytes());
    if len < head.len() + 8 {
        return pattern(seed, len);
    }
    let mut v = head.into_bytes();
    v.extend_from_slice(&pattern(seed, len - v.len() - 8));
    let sum = fnv(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

/// Checks a value read back for `key`: it must be one this test wrote.
fn verify(key: &str, version: u64, len: usize, got: &[u8]) {
    assert_eq!(got.len(), len, "{key}: length");
    if got != value(key, version, len) {
        panic!("{key}: wrong bytes (version {version}, {len} B)");
    }
}

/// Sets `count` keys of `len` bytes, pipelined; every reply must be
/// STORED.
fn fill(c: &mut Client, phase: u64, count: usize, len: usize) {
    let mut batch = Vec::new();
    let mut want = Vec::new();
    let per_batch = (256 << 10) / (len + 64) + 1;
    for i in 0..count {
        let key = format!("d{phase}:{i}");
        batch.extend_from_slice(&mc_set_cmd(key.as_bytes(), 0, &value(&key, phase, len)));
        want.extend_from_slice(b"STORED\r\n");
        if (i + 1) % per_batch == 0 || i + 1 == count {
            c.roundtrip(&batch, &want);
            batch.clear();
            want.clear();
        }
    }
}

/// Stores and reads back one value of every size class boundary up to
/// `max` (and `max` itself).
fn every_size(c: &mut Client, tag: &str, max: usize) -> usize {
    let mut sizes: Vec<usize> = vec![0, 1, 27, 28];
    let mut s = 32usize;
    while s <= max {
        sizes.extend([s - 1, s, s + 1, s + s / 4, s + s / 2]);
        s *= 2;
    }
    sizes.push(max);
    sizes.retain(|&n| n <= max);
    for &len in &sizes {
        let key = format!("{tag}:{len}");
        let v = value(&key, 7, len);
        c.send(&mc_set_cmd(key.as_bytes(), 0, &v));
        let line = c.read_line();
        assert_eq!(
            line,
            b"STORED\r\n",
            "{tag}: set of {len} B: {}",
            show(&line)
        );
        c.send(format!("get {key}\r\n").as_bytes());
        let (_, got) = mc_read_get(c).unwrap_or_else(|| panic!("{key} missing right after set"));
        verify(&key, 7, len, &got);
    }
    sizes.len()
}

#[test]
fn size_drift_at_five_times_the_limit() {
    let limit = LIMIT_MB << 20;
    let mut cfg = config();
    cfg.memory_mb = LIMIT_MB;
    cfg.no_huge_pages = true;
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    let max_item = cfg.max_item_size;
    let rss0 = rss_bytes();
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.mc());

    let sizes = [
        28usize, 100, 300, 1000, 3000, 10_000, 30_000, 60_000, 100_000, 131_072,
    ];
    let per_phase = 5 * limit / sizes.len();
    let mut worst = 0usize;
    for (phase, &len) in sizes.iter().enumerate() {
        let count = per_phase / (len + 48);
        fill(&mut c, phase as u64, count, len);
        // The newest keys of this phase read back intact (most are there).
        let mut found = 0;
        for i in count.saturating_sub(50)..count {
            let key = format!("d{phase}:{i}");
            c.send(format!("get {key}\r\n").as_bytes());
            if let Some((_, got)) = mc_read_get(&mut c) {
                verify(&key, phase as u64, len, &got);
                found += 1;
            }
        }
        // And an older phase's survivors are intact too.
        if phase > 0 {
            let (p, l) = (phase - 1, sizes[phase - 1]);
            for i in 0..20 {
                let key = format!("d{p}:{i}");
                c.send(format!("get {key}\r\n").as_bytes());
                if let Some((_, got)) = mc_read_get(&mut c) {
                    verify(&key, p as u64, l, &got);
                }
            }
        }
        let rss = rss_bytes().saturating_sub(rss0);
        worst = worst.max(rss);
        let s = mc_stats(srv.mc());
        println!(
            "phase {phase}: {count} x {len} B; newest 50: {found} found; RSS growth {:.1} MiB; items {}; item_pool_bytes {} MiB; segment_evictions {}",
            rss as f64 / f64::from(1 << 20),
            s["curr_items"],
            s["item_pool_bytes"].parse::<usize>().unwrap() >> 20,
            s["segment_evictions"],
        );
        assert!(
            found >= 40,
            "phase {phase}: only {found} of the newest 50 keys"
        );
        let num = |k: &str| -> usize { s[k].parse().unwrap() };
        assert_eq!(num("limit_maxbytes"), limit);
        assert!(num("bytes") <= num("item_pool_limit"));
        assert!(num("item_pool_bytes") <= num("item_pool_limit"));
        assert!(num("conn_buffer_bytes") <= num("conn_buffer_limit"));
        assert!(
            rss <= limit + FIXED_OVERHEAD,
            "phase {phase}: RSS grew {rss} bytes: above limit {limit} + overhead {FIXED_OVERHEAD}"
        );
    }
    let s = mc_stats(srv.mc());
    assert!(
        s["segment_evictions"].parse::<u64>().unwrap() > 0,
        "drift without moving a segment?"
    );
    println!(
        "worst RSS growth {:.1} MiB for a {LIMIT_MB} MiB limit",
        worst as f64 / f64::from(1 << 20)
    );

    // After the drift every size up to -I is stored, on a new connection
    // too, and after flush_all.
    let n = every_size(&mut c, "after-drift", max_item);
    let mut c2 = Client::connect(srv.mc());
    every_size(&mut c2, "new-conn", max_item);
    c.roundtrip(b"flush_all\r\n", b"OK\r\n");
    every_size(&mut c, "after-flush", max_item);
    println!("{n} sizes from 0 B to {max_item} B stored after drift and after flush_all");
    let rss = rss_bytes().saturating_sub(rss0);
    assert!(
        rss <= limit + FIXED_OVERHEAD,
        "after the size sweep: RSS grew {rss} bytes"
    );
}
