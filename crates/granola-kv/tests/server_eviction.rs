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

/// A large value deleted while a client that reads nothing still has it
/// queued stays allocated until that reply goes; meanwhile the store must
/// keep evicting other segments for new sizes. Before, the pool offered the
/// pinned run as the coldest segment again and again, and every set that
/// needed a segment failed with `out of memory` until the reply completed.
#[test]
fn a_value_pinned_by_a_stalled_reply_does_not_stop_eviction() {
    let mut cfg = config();
    cfg.memory_mb = 16;
    cfg.conn_memory_mb = 8;
    // TCP only: io_uring's UDP receive slots would take 5 MiB of the
    // 8 MiB connection share.
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.mc());
    let big = pattern(1, 1 << 20);
    c.roundtrip(&mc_set_cmd(b"big", 0, &big), b"STORED\r\n");

    // A client asks for it eight times over and reads nothing: 8 MiB of
    // reply, more than the socket buffers and the back-pressure mark hold.
    let mut stalled = Client::connect(srv.mc());
    stalled.send(b"get big big big big big big big big\r\n");
    wait_referenced(&srv, 1);
    c.roundtrip(b"delete big\r\n", b"DELETED\r\n");
    assert!(
        mc_stat(srv.mc(), "pinned_bytes") >= 1 << 20,
        "the stalled reply pins the deleted value"
    );

    // Three times the item share in twelve sizes: each class keeps a partly
    // filled segment, so new sizes need segments taken from the others.
    let sizes: Vec<usize> = (0..12).map(|i| 100 << i).collect();
    for (phase, &len) in sizes.iter().enumerate() {
        let count = (24 << 20) / sizes.len() / (len + 48);
        for i in 0..count {
            let key = format!("p{phase}:{i}");
            let v = pattern(i as u64, len);
            c.send(&mc_set_cmd(key.as_bytes(), 0, &v));
            let line = c.read_line();
            assert_eq!(line, b"STORED\r\n", "set {key} of {len} B: {}", show(&line));
        }
    }
    assert!(
        mc_stat(srv.mc(), "pinned_bytes") >= 1 << 20,
        "the stalled reply still pins the deleted value"
    );
    drop(stalled);
}

/// `--maxmemory-policy noeviction` (memcached `-M`): once the store is
/// full a write is refused with Redis's `-OOM` (memcached's `SERVER_ERROR
/// out of memory`), and every key written before is still there with its
/// own bytes. Deleting makes room again, expired keys are still removed,
/// and `CONFIG SET maxmemory-policy allkeys-lru` turns eviction back on.
#[test]
fn noeviction_refuses_writes_and_keeps_every_key() {
    let mut cfg = config();
    cfg.memory_mb = 16;
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    cfg.disable_evictions = true;
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.resp());
    assert_eq!(
        c.resp(&["CONFIG", "GET", "maxmemory-policy"]),
        Resp::Array(Some(vec![
            Resp::Bulk(Some(b"maxmemory-policy".to_vec())),
            Resp::Bulk(Some(b"noeviction".to_vec())),
        ]))
    );
    // Until the first refusal; 16 MiB cannot hold 40k values of 1 KiB.
    let mut stored = 0;
    let refusal = loop {
        assert!(stored < 40_000, "no write was refused");
        let key = format!("k{stored}");
        match c.resp(&["SET".as_bytes(), key.as_bytes(), &value(stored)]) {
            Resp::Simple(ok) if ok == b"OK" => stored += 1,
            other => break other,
        }
    };
    assert_eq!(
        refusal,
        Resp::Error(b"OOM command not allowed when used memory > 'maxmemory'.".to_vec())
    );
    assert!(stored > 1000, "only {stored} values fit in 16 MiB");
    for i in 0..stored {
        let got = c.resp(&["GET".as_bytes(), format!("k{i}").as_bytes()]);
        assert_eq!(got, Resp::Bulk(Some(value(i))), "k{i} lost or changed");
    }
    assert_eq!(resp_info_u64(srv.resp(), "evicted_keys"), 0);

    // memcached sees the same store: refused, not evicted. The probe is the
    // refused write itself (flags 0 make the same item), so it needs a slot
    // of the same size class: a smaller item could still fit in a class
    // whose last segment has room, as it would in memcached's slabs.
    let mut m = Client::connect(srv.mc());
    let refused_key = format!("k{stored}");
    m.send(&mc_set_cmd(refused_key.as_bytes(), 0, &value(stored)));
    assert_eq!(
        m.read_line(),
        b"SERVER_ERROR out of memory storing object\r\n"
    );
    m.send(format!("get {refused_key}\r\n").as_bytes());
    assert_eq!(m.read_line(), b"END\r\n", "{refused_key} was stored");
    assert!(mc_stats(srv.mc())["evictions"] == "0");

    // Room again once keys go.
    for i in 0..100 {
        c.resp(&["DEL".as_bytes(), format!("k{i}").as_bytes()]);
    }
    assert_eq!(
        c.resp(&["SET".as_bytes(), b"after-del", &value(1)]),
        Resp::Simple(b"OK".to_vec())
    );

    // Expired keys are removed to make room, though nothing is evicted.
    for i in 100..400 {
        c.resp(&["PEXPIRE".as_bytes(), format!("k{i}").as_bytes(), b"1"]);
    }
    // The background expiry removes them: a write that finds no room
    // sweeps only a few steps itself, so how many it would find depends on
    // the timing.
    srv.wait_for("the 300 keys to expire", |s| {
        resp_info_u64(s.resp(), "expired_keys") >= 300
    });
    let mut fresh = 0;
    while fresh < 250 {
        let key = format!("fresh{fresh}");
        let r = c.resp(&["SET".as_bytes(), key.as_bytes(), &value(fresh)]);
        assert_eq!(r, Resp::Simple(b"OK".to_vec()), "{key} after keys expired");
        fresh += 1;
    }
    for i in 400..stored {
        let got = c.resp(&["GET".as_bytes(), format!("k{i}").as_bytes()]);
        assert_eq!(got, Resp::Bulk(Some(value(i))), "k{i} lost or changed");
    }

    // A policy Redis does not have is refused by name; allkeys-lru evicts
    // again.
    assert!(matches!(
        c.resp(&["CONFIG", "SET", "maxmemory-policy", "allkeys-fifo"]),
        Resp::Error(_)
    ));
    assert_eq!(
        c.resp(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]),
        Resp::Simple(b"OK".to_vec())
    );
    for i in 0..5_000 {
        let key = format!("lru{i}");
        let r = c.resp(&["SET".as_bytes(), key.as_bytes(), &value(i)]);
        assert_eq!(r, Resp::Simple(b"OK".to_vec()), "{key} with eviction on");
    }
    assert!(resp_info_u64(srv.resp(), "evicted_keys") > 0);
}

/// `--maxmemory-policy volatile-lru` over the wire: writes past the limit
/// evict keys that have a TTL and never one without; once no key with a
/// TTL is left they are refused with Redis's `-OOM` (memcached's
/// `SERVER_ERROR out of memory`), and every key without a TTL still reads
/// back with its own bytes.
#[test]
fn volatile_lru_evicts_only_keys_with_a_ttl() {
    let mut cfg = config();
    cfg.memory_mb = 16;
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    cfg.maxmemory_policy = granola_kv::server::config::EvictionPolicy::VolatileLru;
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.resp());
    let ok = Resp::Simple(b"OK".to_vec());
    let volatile = 3_000;
    for i in 0..volatile {
        let key = format!("v{i}");
        let r = c.resp(&["SET".as_bytes(), key.as_bytes(), &value(i), b"EX", b"3600"]);
        assert_eq!(r, ok, "{key}");
    }
    let mut stored = 0;
    let refusal = loop {
        assert!(stored < 40_000, "no write was refused");
        let key = format!("p{stored}");
        match c.resp(&["SET".as_bytes(), key.as_bytes(), &value(stored)]) {
            r if r == ok => stored += 1,
            other => break other,
        }
    };
    assert_eq!(
        refusal,
        Resp::Error(b"OOM command not allowed when used memory > 'maxmemory'.".to_vec())
    );
    let evicted = resp_info_u64(srv.resp(), "evicted_keys");
    assert!(evicted > volatile as u64 / 2, "{evicted} evicted");
    for i in 0..stored {
        let got = c.resp(&["GET".as_bytes(), format!("p{i}").as_bytes()]);
        assert_eq!(got, Resp::Bulk(Some(value(i))), "p{i} lost or changed");
    }
    // The keys with a TTL that are left are still theirs.
    for i in 0..volatile {
        match c.resp(&["GET".as_bytes(), format!("v{i}").as_bytes()]) {
            Resp::Bulk(None) => {}
            got => assert_eq!(got, Resp::Bulk(Some(value(i))), "v{i} changed"),
        }
    }
    let mut m = Client::connect(srv.mc());
    let refused_key = format!("p{stored}");
    m.send(&mc_set_cmd(refused_key.as_bytes(), 0, &value(stored)));
    assert_eq!(
        m.read_line(),
        b"SERVER_ERROR out of memory storing object\r\n"
    );
    assert_eq!(
        c.resp(&["CONFIG", "GET", "maxmemory-policy"]),
        Resp::Array(Some(vec![
            Resp::Bulk(Some(b"maxmemory-policy".to_vec())),
            Resp::Bulk(Some(b"volatile-lru".to_vec())),
        ]))
    );
}

/// Value `i`: its number, 1000 bytes of its pattern and a checksum, so a
/// torn or swapped value cannot pass for it.
fn value(i: usize) -> Vec<u8> {
    let mut v = format!("{i}:").into_bytes();
    v.extend_from_slice(&pattern(i as u64, 1000));
    let sum = fnv(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

/// memcached's `-M` under size drift: 100-byte values fill the server,
/// nine in ten are deleted, then 2000-byte values are set until one is
/// refused. The refusal comes only at the limit (`stats` `bytes` against
/// the items' share of `-m`): the pool moves the remaining small items together
/// to free whole segments for the new size (`segment_rescues`), and every
/// kept value reads back with its own bytes. Before, the deleted items'
/// segments stayed with the small class and the first refusal came at
/// about two thirds of the limit.
#[test]
fn noeviction_takes_a_new_value_size_up_to_the_limit() {
    let mut cfg = config();
    // An item share (32 MiB) twice the pool's spare segments (16 MiB),
    // which would otherwise hold the new size without any move.
    cfg.memory_mb = 40;
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    cfg.disable_evictions = true;
    // The items' share of `-m` (the rest is the connections'), which
    // `bytes` counts against.
    let share = cfg.item_memory_bytes() as f64;
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.mc());
    fn sized(tag: &str, i: usize, len: usize) -> (Vec<u8>, Vec<u8>) {
        let key = format!("{tag}{i}").into_bytes();
        let mut v = pattern(fnv(&key), len - 8);
        let sum = fnv(&v);
        v.extend_from_slice(&sum.to_le_bytes());
        (key, v)
    }
    // Sets pipelined in batches of 64 until one is refused; the number
    // stored.
    fn fill(c: &mut Client, tag: &str, len: usize) -> usize {
        let mut stored = 0;
        loop {
            let mut batch = Vec::new();
            for i in stored..stored + 64 {
                let (k, v) = sized(tag, i, len);
                batch.extend_from_slice(&mc_set_cmd(&k, 0, &v));
            }
            c.send(&batch);
            let mut refused = false;
            for _ in 0..64 {
                match c.read_line().as_slice() {
                    b"STORED\r\n" if !refused => stored += 1,
                    b"SERVER_ERROR out of memory storing object\r\n" => refused = true,
                    other => panic!("{tag}{stored}: {}", show(other)),
                }
            }
            if refused {
                return stored;
            }
            assert!(stored < 1_000_000, "never refused");
        }
    }
    let small = fill(&mut c, "s", 100);
    let mut deletes = Vec::new();
    for i in (0..small).filter(|i| i % 10 != 0) {
        deletes.extend_from_slice(format!("delete s{i} noreply\r\n").as_bytes());
    }
    c.send(&deletes);
    c.roundtrip(b"mn\r\n", b"MN\r\n");
    let big = fill(&mut c, "b", 2000);
    let bytes = mc_stat(srv.mc(), "bytes") as f64;
    println!("{small} small, {big} big; refused at {bytes} of {share} bytes");
    assert!(bytes >= 0.95 * share, "refused at {bytes} of {share}");
    assert!(resp_info_u64(srv.resp(), "evicted_keys") == 0);
    let moved = mc_stats(srv.mc())["segment_rescues"]
        .parse::<u64>()
        .unwrap_or(0);
    assert!(moved > 0, "no item moved");
    for (tag, n, len, step) in [("s", small, 100, 10), ("b", big, 2000, 1)] {
        for i in (0..n).step_by(step) {
            let (k, v) = sized(tag, i, len);
            c.send(format!("get {}\r\n", k.escape_ascii()).as_bytes());
            assert_eq!(mc_read_get(&mut c), Some((0, v)), "{}", show(&k));
        }
    }
}
