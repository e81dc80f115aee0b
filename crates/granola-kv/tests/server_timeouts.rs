//! Connection timeouts and the memory idle connections hold:
//!
//! - a client that stops reading its replies is closed after the write
//!   timeout while a bystander keeps working;
//! - the idle timeout (memcached's `-o idle_timeout`) closes an idle
//!   connection and not an active one;
//! - 1000 idle connections that each got a reply hold no TX (or receive)
//!   buffers.

mod common;

use common::*;
use granola_kv::server::extended::parse_extended;
use std::time::{Duration, Instant};

fn net_errored(srv: &Server) -> u64 {
    let net = srv.shared.net.get().expect("net stats");
    net.conns_errored.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn client_that_stops_reading_is_closed_after_the_write_timeout() {
    let mut cfg = config();
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    cfg.write_timeout_secs = 1;
    let srv = Server::start(cfg);
    let value = pattern(7, 256 << 10);
    let mut bystander = Client::connect(srv.mc());
    bystander.roundtrip(&mc_set_cmd(b"v", 0, &value), b"STORED\r\n");
    // 64 gets of 256 KiB: 16 MiB, more than the socket buffers and the
    // back-pressure mark hold; this client never reads a byte.
    let mut stalled = Client::connect(srv.mc());
    stalled.send(&b"get v\r\n".repeat(64));
    // Both connections accepted (connect returns before the server's
    // accept), so the close below is the stalled one's.
    srv.wait_for("both connections accepted", |srv| srv.conns_open() == 2);
    let errored_before = net_errored(&srv);
    let started = Instant::now();
    let mut rounds = 0u64;
    srv.wait_for("the stalled client is closed", |srv| {
        // The bystander keeps working meanwhile.
        bystander.send(b"get v\r\n");
        assert_eq!(mc_read_get(&mut bystander), Some((0, value.clone())));
        rounds += 1;
        std::thread::sleep(Duration::from_millis(20));
        srv.conns_open() == 1
    });
    let waited = started.elapsed();
    println!("stalled client closed after {waited:?}; bystander did {rounds} gets meanwhile");
    assert_eq!(net_errored(&srv), errored_before + 1, "one close, logged");
    // The stalled client gets some replies, then the close.
    let got = stalled.read_to_close();
    assert!(
        got.len() < 64 * value.len(),
        "it was closed before all replies"
    );
    bystander.send(b"get v\r\n");
    assert_eq!(mc_read_get(&mut bystander), Some((0, value)));
}

#[test]
fn idle_timeout_closes_an_idle_connection_and_not_an_active_one() {
    let mut cfg = config();
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    // memcached's spelling, with an option that has no effect here.
    cfg.extended = vec![
        parse_extended("idle_timeout=1").unwrap(),
        parse_extended("modern").unwrap(),
    ];
    let srv = Server::start(cfg);
    let mut idle = Client::connect(srv.mc());
    idle.send(b"version\r\n");
    assert!(idle.read_line().starts_with(b"VERSION "));
    let mut active = Client::connect(srv.mc());
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        active.send(b"version\r\n");
        assert!(active.read_line().starts_with(b"VERSION "));
        std::thread::sleep(Duration::from_millis(100));
    }
    // The idle one was closed (more than a second without input); reading
    // returns the close at once.
    idle.expect_closed();
    srv.wait_for("only the active connection open", |srv| {
        srv.conns_open() == 1
    });
    active.send(b"version\r\n");
    assert!(active.read_line().starts_with(b"VERSION "));
}

#[test]
fn idle_connections_that_got_a_reply_hold_no_tx_buffer() {
    let mut cfg = config();
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    // Room for every connection's TX buffer at once while they connect
    // (they are taken back within about a second of going idle).
    cfg.conn_memory_mb = 32;
    let srv = Server::start(cfg);
    let baseline = srv.shared.conn_pool.stats().live_bytes;
    let conns = 1000;
    let mut idle = Vec::new();
    for _ in 0..conns {
        let mut c = Client::connect(srv.mc());
        c.send(b"version\r\n");
        assert!(c.read_line().starts_with(b"VERSION "));
        idle.push(c);
    }
    let right_after = srv
        .shared
        .conn_pool
        .stats()
        .live_bytes
        .saturating_sub(baseline);
    let mut now = right_after;
    srv.wait_for("idle connections give their TX buffers back", |srv| {
        now = srv
            .shared
            .conn_pool
            .stats()
            .live_bytes
            .saturating_sub(baseline);
        now < conns * 1024
    });
    println!(
        "{conns} idle connections after one reply each: connection pool {right_after} bytes over the baseline right after, {now} once idle"
    );
    // They work again (a buffer is allocated for the next reply).
    for c in idle.iter_mut().step_by(50) {
        c.send(b"version\r\n");
        assert!(c.read_line().starts_with(b"VERSION "));
    }
}
