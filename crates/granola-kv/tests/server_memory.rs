//! Memory: a 32 MiB server filled with twice its limit through memcached
//! stays within it — `stats` bytes never above `limit_maxbytes`, CLOCK
//! evicts, recent keys still read back — and the process RSS (the server
//! runs in this process; /proc/self/status VmRSS) grows by at most the limit plus
//! a fixed overhead.
//!
//! The overhead allowance, [`FIXED_OVERHEAD`] = 16 MiB, covers what is not
//! an item but is resident: the pool's reference-count side array (4 B per
//! slot: ~0.1 % for 4 KiB slots), the connection's RX buffer (up to 1 MiB +
//! 64 KiB) and 16 KiB TX chunks, freed slots not yet reused at the end of a
//! segment, the 2 worker threads' stacks, the test client's buffers and
//! allocator slack. Measured on the reference box (debug build, 4 KiB
//! pages; the test prints it with `--nocapture`): 33.0 MiB of growth for
//! the 32 MiB limit, i.e. about 1 MiB over it; 65.4 MiB after the second
//! phase below (two size classes, each holding up to the limit).
//!
//! One test only in this file: RSS is per process, and another test's
//! server would be counted.
//!
//! The second phase moves to another value size: segments emptied by
//! eviction move to the new size class (docs/memory.md), so the bound
//! stays one limit, plus the overhead and the item pool's class slack
//! (16 MiB, `CLASS_SLACK_SEGMENTS`). `server_memory_drift.rs` drifts over
//! ten sizes.

mod common;

use common::*;

const LIMIT_MB: usize = 32;
const FIXED_OVERHEAD: usize = 16 << 20;

/// Reads back the last `recent` keys written: every value found must be
/// intact, and nearly all must be found.
///
/// Not all: CLOCK spares recent keys (`server_eviction.rs`), but when the
/// value size changes, a segment drained to move to the new size class
/// loses every item in it, recent ones included (docs/memory.md).
fn check_recent(c: &mut Client, prefix: &str, count: usize, value_len: usize, recent: usize) {
    let value = pattern(value_len as u64, value_len);
    let mut missing = Vec::new();
    for i in count - recent..count {
        let key = format!("{prefix}{i}");
        c.send(format!("get {key}\r\n").as_bytes());
        match mc_read_get(c) {
            Some((0, v)) => assert!(v == value, "{key}: wrong value"),
            Some((f, _)) => panic!("{key}: flags {f}"),
            None => missing.push(i),
        }
    }
    println!(
        "{prefix}: {} of the last {recent} keys evicted",
        missing.len()
    );
    assert!(
        missing.len() * 20 <= recent,
        "{prefix}: {} of the last {recent} keys missing: {:?}",
        missing.len(),
        &missing[..missing.len().min(20)]
    );
    // A key just written is always there when read right away.
    for i in 0..200 {
        let key = format!("{prefix}again{i}");
        c.roundtrip(&mc_set_cmd(key.as_bytes(), 0, &value), b"STORED\r\n");
        c.send(format!("get {key}\r\n").as_bytes());
        assert_eq!(mc_read_get(c), Some((0, value.clone())), "{key}");
    }
}

#[test]
fn fill_to_twice_the_limit() {
    let limit = LIMIT_MB << 20;
    let mut cfg = config();
    cfg.memory_mb = LIMIT_MB;
    cfg.no_huge_pages = true;
    let rss0 = rss_bytes();
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.mc());

    // Phase 1: 4 KiB values (+ 16-byte keys), twice the limit's worth.
    let v1 = 4 << 10;
    let n1 = 2 * limit / v1;
    mc_fill(&mut c, "phase1:", n1, v1);
    let s = mc_stats(srv.mc());
    let num = |k: &str| -> usize { s[k].parse().unwrap() };
    println!(
        "phase 1: {n1} x {v1} B set; bytes {} / limit {}; items {}; evictions {}",
        num("bytes"),
        num("limit_maxbytes"),
        num("curr_items"),
        num("evictions")
    );
    assert_eq!(num("limit_maxbytes"), limit);
    assert!(num("bytes") <= limit, "stats bytes above the limit");
    assert!(num("evictions") > 0, "twice the limit without evictions");
    assert!(num("curr_items") < n1, "everything still stored?");
    // At least a third of the limit holds live items (CLOCK keeps the
    // cache full, not empty).
    assert!(
        num("curr_items") * v1 > limit / 3,
        "{} items",
        num("curr_items")
    );
    check_recent(&mut c, "phase1:", n1, v1, 100);
    let rss1 = rss_bytes();
    let growth1 = rss1.saturating_sub(rss0);
    println!(
        "phase 1: RSS {} -> {} MiB: growth {:.1} MiB for a {LIMIT_MB} MiB limit",
        rss0 >> 20,
        rss1 >> 20,
        growth1 as f64 / f64::from(1 << 20)
    );
    assert!(
        growth1 <= limit + FIXED_OVERHEAD,
        "RSS grew {growth1} bytes: above limit {limit} + overhead {FIXED_OVERHEAD}"
    );

    // Phase 2: another size class (200-byte values), twice the limit
    // again. The 4 KiB class's segments move over as they empty.
    let v2 = 200;
    let n2 = 2 * limit / (v2 + 64);
    mc_fill(&mut c, "phase2:", n2, v2);
    let s = mc_stats(srv.mc());
    let num = |k: &str| -> usize { s[k].parse().unwrap() };
    assert!(num("bytes") <= limit, "stats bytes above the limit");
    check_recent(&mut c, "phase2:", n2, v2, 1000);
    let rss2 = rss_bytes();
    let growth2 = rss2.saturating_sub(rss0);
    println!(
        "phase 2: {n2} x {v2} B set; items {}; evictions {}; RSS growth {:.1} MiB",
        num("curr_items"),
        num("evictions"),
        growth2 as f64 / f64::from(1 << 20)
    );
    let class_slack = granola_kv::server::config::CLASS_SLACK_SEGMENTS * granola::SEGMENT_SIZE;
    assert!(
        growth2 <= limit + FIXED_OVERHEAD + class_slack,
        "RSS grew {growth2} bytes with two size classes: above limit + overhead + class slack"
    );
    // Both phases' recent keys can be read back by a new connection.
    let mut c2 = Client::connect(srv.mc());
    check_recent(&mut c2, "phase2:", n2, v2, 10);
}
