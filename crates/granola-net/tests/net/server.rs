//! The epoll server with a trivial echo service: correct pipelined replies,
//! bad clients closed without hurting good ones, idle and non-reading
//! clients harmless, prompt shutdown.

use crate::common::*;
use granola::{Decode, Pool};
use granola_net::server::{Server, ServerConfig, ServerHandle};
use granola_net::{DatapathKind, TxConfig, FLAG_RESPONSE};
use granola_tests::sample::Sample;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

const MAX_FRAME: usize = 16 << 20;

fn start(pool: &Pool, threads: usize, tweak: impl FnOnce(&mut ServerConfig)) -> ServerHandle {
    let mut cfg = ServerConfig {
        threads,
        tx: TxConfig {
            copy_threshold: THRESHOLD,
            max_frame: MAX_FRAME,
            ..TxConfig::default()
        },
        rx_max: MAX_FRAME + 12,
        // scripts/test.sh runs this suite once per datapath.
        datapath: DatapathKind::from_env(),
        ..ServerConfig::default()
    };
    tweak(&mut cfg);
    let echo = Arc::new(Echo {
        max_frame: MAX_FRAME,
    });
    let wanted = cfg.datapath.clone();
    let h = Server::new(pool.clone(), cfg)
        .tcp("127.0.0.1:0".parse().unwrap(), echo)
        .start()
        .expect("server starts");
    check_datapath(&wanted, &h.datapath);
    h
}

/// The server runs the datapath the suite asked for, unless the kernel
/// refuses it (then loudly on epoll; a failure if the probe passed).
fn check_datapath(wanted: &DatapathKind, running: &DatapathKind) {
    if wanted == running {
        return;
    }
    match wanted.probe() {
        Err(why) => eprintln!("NOTE: datapath {wanted} unavailable here ({why}); ran on {running}"),
        Ok(()) => panic!("datapath {wanted} passed its probe but the server runs {running}"),
    }
}

fn connect(h: &ServerHandle) -> TcpStream {
    let s = TcpStream::connect(h.tcp_addrs[0]).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Sends `specs` pipelined (all requests before any reply is read), then
/// reads and checks every reply, in order.
fn pipelined(s: &mut TcpStream, pool: &Pool, specs: &[Spec]) {
    let mut out = Vec::new();
    for sp in specs {
        out.extend_from_slice(&sp.frame_bytes(pool, 3));
    }
    let mut w = s.try_clone().unwrap();
    // Write from another thread: replies to the first requests may fill
    // the socket buffers before the last request is written.
    let writer = std::thread::spawn(move || w.write_all(&out));
    for sp in specs {
        let (h, p) = read_frame(s).expect("reply");
        assert_eq!(h.id, sp.id, "replies in request order");
        assert_eq!(h.flags, FLAG_RESPONSE);
        assert_eq!(h.kind, 3);
        sp.check(&Sample::decode(&p).expect("reply decodes"));
    }
    writer.join().unwrap().expect("requests written");
}

fn client_specs(client: u32, n: u32) -> Vec<Spec> {
    (0..n)
        .map(|i| {
            let id = client * 1000 + i;
            let big = if i % 3 == 0 {
                40
            } else {
                600 + (i as usize * 97) % 5000
            };
            Spec::new(id, big, vec![(i as usize * 31) % 2000, 8])
        })
        .collect()
}

fn shutdown_promptly(h: ServerHandle) {
    let (tx, rx) = std::sync::mpsc::channel();
    h.shutdown();
    std::thread::spawn(move || {
        h.join();
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("server joined within 5 s of shutdown");
}

#[test]
fn pipelined_clients_on_two_threads() {
    let pool = pool(512 << 20);
    let h = start(&pool, 2, |_| {});
    let clients: Vec<_> = (1..=6)
        .map(|c| {
            let pool = pool.clone();
            let mut s = connect(&h);
            std::thread::spawn(move || {
                let specs = client_specs(c, 100);
                pipelined(&mut s, &pool, &specs);
                // A second round on the same connection.
                pipelined(&mut s, &pool, &specs[..10]);
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client ok");
    }
    let st = &h.stats;
    assert_eq!(st.conns_total.load(Ordering::Relaxed), 6);
    assert_eq!(st.conns_errored.load(Ordering::Relaxed), 0);
    assert!(
        st.bytes_referenced.load(Ordering::Relaxed) > 0,
        "echo referenced large fields"
    );
    shutdown_promptly(h);
}

/// One reply larger than the socket buffers: the server must resume the
/// flush on writability even though it keeps reading.
#[test]
fn large_reply_completes() {
    let pool = pool(512 << 20);
    let h = start(&pool, 1, |_| {});
    let mut s = connect(&h);
    let specs = vec![
        Spec::new(1, 3 << 20, vec![1 << 20]),
        Spec::new(2, 10, vec![]),
    ];
    pipelined(&mut s, &pool, &specs);
    shutdown_promptly(h);
}

#[test]
fn bad_clients_are_closed_good_ones_keep_going() {
    let pool = pool(256 << 20);
    let h = start(&pool, 1, |_| {});
    let mut good = connect(&h);
    pipelined(&mut good, &pool, &client_specs(1, 5));

    let bad_inputs: Vec<Vec<u8>> = vec![
        // Oversize frame header.
        frame_of(3, 1, 0, &[])
            .iter()
            .enumerate()
            .map(|(i, &b)| if i < 4 { 0xff } else { b })
            .collect(),
        // Not our protocol at all.
        b"GET / HTTP/1.1\r\nHost: example\r\n\r\n".to_vec(),
        // A well-framed payload that does not decode.
        frame_of(3, 2, 0, &[0xAB; 64]),
    ];
    for (i, bad) in bad_inputs.iter().enumerate() {
        let mut b = connect(&h);
        b.write_all(bad).unwrap();
        let mut buf = [0u8; 64];
        // The server closes the connection: EOF (or reset), no reply.
        match b.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!("bad input {i}: got {n} reply bytes"),
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                ),
                "bad input {i}: {e}"
            ),
        }
        // Meanwhile the good client is served.
        pipelined(&mut good, &pool, &client_specs(2 + i as u32, 5));
    }
    assert!(wait_for(5, || h
        .stats
        .conns_errored
        .load(Ordering::Relaxed)
        == 3));
    shutdown_promptly(h);
}

#[test]
fn many_idle_connections_cost_nothing() {
    let pool = pool(256 << 20);
    let h = start(&pool, 2, |_| {});
    let before = pool.stats();
    let idle: Vec<TcpStream> = (0..250).map(|_| connect(&h)).collect();
    assert!(wait_for(5, || h.stats.conns_open.load(Ordering::Relaxed) == 250));
    // No buffers are allocated for connections that sent nothing.
    assert_eq!(pool.stats().live_slots, before.live_slots);
    let mut good = connect(&h);
    for round in 0..3 {
        pipelined(&mut good, &pool, &client_specs(10 + round, 20));
    }
    drop(idle);
    assert!(wait_for(5, || h.stats.conns_open.load(Ordering::Relaxed) == 1));
    assert_eq!(h.stats.conns_errored.load(Ordering::Relaxed), 0);
    shutdown_promptly(h);
}

/// A client that sends requests but never reads the replies: the server
/// stops reading it once its queue passes the back-pressure mark, its
/// memory stays bounded, and other clients are still served.
#[test]
fn client_that_never_reads_is_throttled() {
    let pool = pool(1 << 30);
    let backpressure = 1 << 20;
    let h = start(&pool, 1, |c| c.backpressure_bytes = backpressure);
    let hog = connect(&h);
    hog.set_nonblocking(true).unwrap();
    let req = Spec::new(5, 60 << 10, vec![]).frame_bytes(&pool, 3);
    // Write until the kernel refuses for a while (the server stopped
    // reading) or 256 MiB went out (it did not).
    let limit = 256usize << 20;
    let mut written = 0usize;
    let mut stalls = 0;
    let mut hog_w = &hog;
    let mut off = 0;
    while written < limit && stalls < 300 {
        match hog_w.write(&req[off..]) {
            Ok(n) => {
                written += n;
                off = (off + n) % req.len();
                stalls = 0;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                stalls += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => panic!("hog write: {e}"),
        }
    }
    assert!(
        written < limit,
        "the server kept reading a client that never reads"
    );
    let used = pool.stats().live_bytes;
    // Queue bound plus one read batch of requests and receive buffers.
    assert!(used < 32 << 20, "server holds {used} bytes for the hog");
    // Another client is still served.
    let mut good = connect(&h);
    for round in 0..3 {
        pipelined(&mut good, &pool, &client_specs(20 + round, 20));
    }
    assert!(pool.stats().live_bytes < 32 << 20);
    drop(hog);
    // The hog's queue is released when its connection closes.
    assert!(wait_for(5, || h.stats.conns_open.load(Ordering::Relaxed) == 1));
    shutdown_promptly(h);
}

#[test]
fn shutdown_with_open_connections_is_prompt() {
    let pool = pool(64 << 20);
    let h = start(&pool, 2, |_| {});
    let mut c = connect(&h);
    pipelined(&mut c, &pool, &client_specs(1, 3));
    let _idle: Vec<TcpStream> = (0..10).map(|_| connect(&h)).collect();
    shutdown_promptly(h);
    // Connections were closed by the server.
    let mut buf = [0u8; 1];
    assert!(matches!(c.read(&mut buf), Ok(0) | Err(_)));
}

#[test]
fn max_conns_refuses_extra_connections() {
    let pool = pool(64 << 20);
    let h = start(&pool, 1, |c| c.max_conns = 2);
    let mut a = connect(&h);
    let _b = connect(&h);
    assert!(wait_for(5, || h.stats.conns_open.load(Ordering::Relaxed) == 2));
    let mut c = connect(&h);
    let mut buf = [0u8; 1];
    assert!(
        matches!(c.read(&mut buf), Ok(0) | Err(_)),
        "refused: closed"
    );
    assert_eq!(h.stats.conns_refused.load(Ordering::Relaxed), 1);
    pipelined(&mut a, &pool, &client_specs(1, 5));
    shutdown_promptly(h);
}

/// The echo server with MSG_ZEROCOPY replies (falls back to plain sends
/// with a log line where unsupported): correct replies, and clients that
/// half-close right after their requests still get every reply.
#[test]
fn zerocopy_server_echo() {
    let pool = pool(512 << 20);
    let h = start(&pool, 2, |c| c.tx.zerocopy = true);
    let clients: Vec<_> = (1..=3)
        .map(|c| {
            let pool = pool.clone();
            let mut s = connect(&h);
            std::thread::spawn(move || {
                let specs = client_specs(c, 50);
                pipelined(&mut s, &pool, &specs);
                // Half-close after the last request: replies still arrive
                // in full before the server closes.
                let mut out = Vec::new();
                for sp in &specs[..5] {
                    out.extend_from_slice(&sp.frame_bytes(&pool, 3));
                }
                s.write_all(&out).unwrap();
                s.shutdown(std::net::Shutdown::Write).unwrap();
                for sp in &specs[..5] {
                    let (hd, p) = read_frame(&mut s).expect("reply after half-close");
                    assert_eq!(hd.id, sp.id);
                    sp.check(&Sample::decode(&p).unwrap());
                }
                let mut buf = [0u8; 1];
                assert_eq!(s.read(&mut buf).unwrap(), 0, "then EOF");
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client ok");
    }
    assert!(h.stats.bytes_referenced.load(Ordering::Relaxed) > 0);
    // Completions are collected by the event loop (on loopback, all of
    // them flagged as copied).
    assert!(wait_for(5, || h.stats.zc_completed.load(Ordering::Relaxed) > 0));
    println!(
        "server MSG_ZEROCOPY: {} completions, {} copied",
        h.stats.zc_completed.load(Ordering::Relaxed),
        h.stats.zc_copied.load(Ordering::Relaxed)
    );
    shutdown_promptly(h);
}

struct UdpEcho;

struct UdpEchoHandler;

impl granola_net::server::DatagramService for UdpEcho {
    fn name(&self) -> &str {
        "udp-echo-test"
    }
    fn handler(&self) -> Box<dyn granola_net::server::DatagramHandler> {
        Box::new(UdpEchoHandler)
    }
}

impl granola_net::server::DatagramHandler for UdpEchoHandler {
    fn on_datagram(&mut self, d: &granola_net::udp::Datagram, out: &mut granola_net::udp::UdpTx) {
        let Some(h) = granola_net::FrameHeader::read(&d.data) else {
            return;
        };
        if h.len as usize != d.data.len() - 12 {
            return;
        }
        let payload = d.data.slice(12..);
        if let Ok(m) = Sample::decode_shared(&payload, THRESHOLD) {
            let r = granola_net::FrameHeader {
                flags: FLAG_RESPONSE,
                ..h
            };
            out.send_object(d.from, r, &m).expect("reply fits");
        }
    }
}

/// The UDP echo service on `threads` workers of the datapath the suite runs
/// on, and a client socket connected to it.
fn udp_echo(pool: &Pool, threads: usize) -> (ServerHandle, std::net::UdpSocket) {
    let h = Server::new(
        pool.clone(),
        ServerConfig {
            threads,
            tx: TxConfig {
                copy_threshold: THRESHOLD,
                ..TxConfig::default()
            },
            datapath: DatapathKind::from_env(),
            ..ServerConfig::default()
        },
    )
    .udp("127.0.0.1:0".parse().unwrap(), Arc::new(UdpEcho))
    .start()
    .unwrap();
    let c = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.connect(h.udp_addrs[0]).unwrap();
    (h, c)
}

#[test]
fn udp_echo_server() {
    let pool = pool(256 << 20);
    let (h, c) = udp_echo(&pool, 2);
    // Garbage first: ignored, the server keeps serving.
    c.send(b"garbage").unwrap();
    for i in 0..20u32 {
        let sp = Spec::new(i, 700 + i as usize * 100, vec![30, 2000]);
        c.send(&sp.frame_bytes(&pool, 3)).unwrap();
        let mut buf = vec![0u8; 65536];
        let n = c.recv(&mut buf).expect("echo reply");
        let hd = granola_net::FrameHeader::read(&buf[..n]).unwrap();
        assert_eq!(hd.id, i);
        assert_eq!(hd.flags, FLAG_RESPONSE);
        assert_eq!(hd.len as usize, n - 12);
        sp.check(&Sample::decode(&buf[12..n]).unwrap());
    }
    shutdown_promptly(h);
}

/// The per-request syscall budget of an unpipelined request/reply, counted
/// by the server's own counters: on epoll one `recv` (a short read is not
/// followed by a second one that would return `EAGAIN`), one `sendmsg`, no
/// `epoll_ctl`, plus the `epoll_wait` that reported the request (and two
/// more that do not block per idle nap); on io_uring
/// one `io_uring_enter` per request, receives and sends riding in it.
#[test]
fn unpipelined_request_syscall_budget() {
    let pool = pool(64 << 20);
    let h = start(&pool, 1, |_| {});
    let mut s = connect(&h);
    let n = 400u32;
    for id in 0..n {
        let sp = Spec::new(id, 20, vec![]);
        s.write_all(&sp.frame_bytes(&pool, 3)).unwrap();
        let (hd, p) = read_frame(&mut s).expect("reply");
        assert_eq!(hd.id, id);
        sp.check(&Sample::decode(&p).expect("reply decodes"));
    }
    let st = &h.stats;
    // The reply can reach the client before the worker adds up its
    // counters.
    wait_for(2, || st.send_calls.load(Ordering::Relaxed) >= n as u64);
    let recv = st.recv_calls.load(Ordering::Relaxed);
    let send = st.send_calls.load(Ordering::Relaxed);
    let ctl = st.ctl_calls.load(Ordering::Relaxed);
    let wait = st.wait_calls.load(Ordering::Relaxed);
    let naps = st.naps.load(Ordering::Relaxed);
    eprintln!(
        "{}: {n} requests: recv {recv}, send {send}, ctl {ctl}, wait {wait}, idle naps {naps}",
        h.datapath
    );
    // A few waits are not per request: the accept, idle timeouts. An idle
    // nap adds two that do not block (granola_net::nap).
    let per_request_waits = wait.saturating_sub(20 + 2 * naps) as f64 / n as f64;
    assert!(per_request_waits <= 1.0, "{wait} waits for {n} requests");
    match h.datapath {
        DatapathKind::Uring => {
            // Receives and sends are ring entries, not syscalls.
            assert!(recv >= n as u64, "every request was received ({recv})");
        }
        _ => {
            assert_eq!(send, n as u64, "one sendmsg per reply");
            assert_eq!(ctl, 0, "no epoll_ctl in steady state");
            assert!(
                recv <= n as u64 + 2,
                "{recv} recv calls for {n} requests: read-until-EAGAIN is back"
            );
        }
    }
}

/// The same budget for UDP: on epoll one `sendmmsg` per reply (each
/// request arrives alone) and one wait (and two more that do not block per
/// idle nap); on io_uring no send or receive
/// syscall at all (a multishot `RECVMSG` and one `SENDMSG` entry per reply
/// ride in the turn's `io_uring_enter`), one enter per request.
#[test]
fn unpipelined_udp_syscall_budget() {
    let pool = pool(64 << 20);
    let (h, c) = udp_echo(&pool, 1);
    let n = 400u32;
    let mut buf = vec![0u8; 65536];
    for id in 0..n {
        let sp = Spec::new(id, 20, vec![]);
        c.send(&sp.frame_bytes(&pool, 3)).unwrap();
        let got = c.recv(&mut buf).expect("echo reply");
        let hd = granola_net::FrameHeader::read(&buf[..got]).unwrap();
        assert_eq!(hd.id, id);
        sp.check(&Sample::decode(&buf[12..got]).expect("reply decodes"));
    }
    let st = &h.stats;
    let send = st.send_calls.load(Ordering::Relaxed);
    let wait = st.wait_calls.load(Ordering::Relaxed);
    let naps = st.naps.load(Ordering::Relaxed);
    eprintln!(
        "{}: {n} datagrams: send {send}, wait {wait}, idle naps {naps}",
        h.datapath
    );
    // An idle nap adds two waits that do not block (granola_net::nap).
    assert!(
        wait <= n as u64 + 20 + 2 * naps,
        "{wait} waits for {n} requests"
    );
    match h.datapath {
        DatapathKind::Uring => assert_eq!(send, 0, "replies are ring entries"),
        _ => {
            wait_for(2, || st.send_calls.load(Ordering::Relaxed) >= n as u64);
            let send = st.send_calls.load(Ordering::Relaxed);
            assert_eq!(send, n as u64, "one sendmmsg per reply");
        }
    }
    assert_eq!(st.udp_dropped.load(Ordering::Relaxed), 0);
    shutdown_promptly(h);
}

/// A worker whose io_uring setup fails after the probe passed (here: the
/// pool has no room for its receive-buffer ring) runs epoll instead, and
/// the handle says so; the server serves either way.
#[test]
fn uring_worker_setup_failure_falls_back_to_epoll() {
    let pool = pool(4 << 20);
    // Take every slot of the receive buffers' size class: the ring's setup
    // cannot get its buffers.
    let mut hog = Vec::new();
    while let Some(b) = pool.alloc(16 << 10) {
        hog.push(b);
    }
    let echo = Arc::new(Echo { max_frame: 1 << 16 });
    let cfg = ServerConfig {
        threads: 1,
        datapath: DatapathKind::Uring,
        ..ServerConfig::default()
    };
    let h = Server::new(pool.clone(), cfg)
        .tcp("127.0.0.1:0".parse().unwrap(), echo)
        .start()
        .expect("server starts");
    if let Err(why) = DatapathKind::Uring.probe() {
        eprintln!("NOTE: io_uring unavailable here ({why}): the probe fell back");
    }
    assert_eq!(
        h.datapath,
        DatapathKind::Epoll,
        "no room for the ring's buffers"
    );
    drop(hog);
    let mut s = connect(&h);
    // The client's buffers come from a pool of its own (the server's has
    // only 16 KiB slots now: its receive buffer and TX chunk size).
    let client_pool = crate::common::pool(4 << 20);
    let sp = Spec::new(7, 20, vec![]);
    s.write_all(&sp.frame_bytes(&client_pool, 3)).unwrap();
    let (hd, p) = read_frame(&mut s).expect("reply");
    assert_eq!(hd.id, 7);
    sp.check(&Sample::decode(&p).expect("reply decodes"));
    drop(s);
    shutdown_promptly(h);
}
