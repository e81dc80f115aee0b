//! Eviction order seen through the memcached protocol: CLOCK gives a key
//! written a moment ago at least one turn of the hand, whatever the index
//! does meanwhile (cuckoo moves and shard growth carry entries past the
//! hand; see `store/index.rs`).
//!
//! Kept apart from `server_memory.rs`, which measures the process RSS and
//! must be the only server in its process.

mod common;

use common::*;

/// After filling the cache without reads, every one of the last 1,000 keys
/// written is still there: new entries start with their CLOCK reference bit
/// set, so the hand gives them at least one rotation.
#[test]
fn recent_writes_survive_eviction() {
    let mut cfg = config();
    cfg.memory_mb = 8;
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.mc());
    let n = 200_000;
    mc_fill(&mut c, "r:", n, 100);
    let missing: Vec<usize> = (n - 1000..n)
        .filter(|i| {
            c.send(format!("get r:{i}\r\n").as_bytes());
            mc_read_get(&mut c).is_none()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{} of the last 1000 keys written were evicted: {missing:?}",
        missing.len()
    );
}
