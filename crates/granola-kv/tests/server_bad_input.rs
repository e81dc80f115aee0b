//! Bad input and bad clients: oversized keys and values, malformed
//! commands, half-sent requests, a client that never reads its replies,
//! 1,000 idle connections, protocol garbage, too many connections. The
//! server answers errors where the protocol has them, closes only the
//! offending connection, and keeps serving everyone else.

mod common;

use common::*;
use granola::Decode;
use granola_kv::proto as kv;
use granola_kv::server::native::{kind, status};
use std::io::{ErrorKind, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A client that must still be served normally.
fn bystander_ok(c: &mut Client, tag: &str) {
    let v = pattern(7, 3000);
    c.roundtrip(&mc_set_cmd(tag.as_bytes(), 1, &v), b"STORED\r\n");
    let mut want = mc_value_reply(tag.as_bytes(), 1, &v, None);
    want.extend_from_slice(b"END\r\n");
    c.roundtrip(format!("get {tag}\r\n").as_bytes(), &want);
}

#[test]
fn oversized_keys_and_values() {
    let mut cfg = config();
    cfg.max_item_size = 64 << 10;
    cfg.proto_max_bulk_len = 64 << 10;
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.mc());
    let k250 = "k".repeat(250);
    let k251 = "k".repeat(251);
    let bad_format: &[u8] = b"CLIENT_ERROR bad command line format\r\n";
    // 251-byte keys: refused, with the data block swallowed.
    c.roundtrip(format!("set {k251} 0 0 1\r\nx\r\n").as_bytes(), bad_format);
    c.roundtrip(format!("get {k251}\r\n").as_bytes(), bad_format);
    c.roundtrip(format!("get a {k251}\r\n").as_bytes(), bad_format);
    c.roundtrip(format!("delete {k251}\r\n").as_bytes(), bad_format);
    c.roundtrip(format!("incr {k251} 1\r\n").as_bytes(), bad_format);
    c.roundtrip(format!("mg {k251} v\r\n").as_bytes(), bad_format);
    // 250 bytes is the limit, and fine.
    c.roundtrip(
        format!("set {k250} 0 0 1\r\nx\r\n").as_bytes(),
        b"STORED\r\n",
    );
    c.roundtrip(
        format!("get {k250}\r\n").as_bytes(),
        format!("VALUE {k250} 0 1\r\nx\r\nEND\r\n").as_bytes(),
    );
    // Values: max_item_size (64 KiB) is stored, one byte more is not, and
    // the refused block is swallowed whole (its bytes are not commands).
    let max = pattern(1, 64 << 10);
    c.roundtrip(&mc_set_cmd(b"max", 0, &max), b"STORED\r\n");
    let mut over = b"get max\r\n".repeat(8000);
    over.truncate((64 << 10) + 1);
    c.roundtrip(
        &mc_set_cmd(b"over", 0, &over),
        b"SERVER_ERROR object too large for cache\r\n",
    );
    c.roundtrip(
        &mc_set_cmd(b"max", 0, &over),
        b"SERVER_ERROR object too large for cache\r\n",
    );
    c.roundtrip(
        b"ms over 65537 T0\r\n",
        b"SERVER_ERROR object too large for cache\r\n",
    );
    c.send(&over);
    c.roundtrip(b"\r\nget over\r\n", b"END\r\n");
    // The refused replacement removed the old value, as memcached does
    // (a reader must not get the value the client meant to replace).
    c.roundtrip(b"get max\r\n", b"END\r\n");
    c.roundtrip(&mc_set_cmd(b"max", 0, &max), b"STORED\r\n");
    let mut want = mc_value_reply(b"max", 0, &max, None);
    want.extend_from_slice(b"END\r\n");
    c.roundtrip(b"get max\r\n", &want);
    // Appending past the limit: refused by the store. (The store's limit
    // is on the whole item, max_item_size + 1 KiB for key and header, so
    // an append of a few bytes still fits.)
    c.roundtrip(
        &[&b"append max 0 0 2048\r\n"[..], &[b'x'; 2048], b"\r\n"].concat(),
        b"SERVER_ERROR object too large for cache\r\n",
    );
    c.roundtrip(b"get max\r\n", &want);

    // RESP: a bulk string above the limit is a protocol error that closes
    // the connection (Redis' "invalid bulk length"); others carry on.
    let mut r = Client::connect(srv.resp());
    let mut r2 = Client::connect(srv.resp());
    r.roundtrip(&resp_cmd(&[&b"SET"[..], b"rmax", &max[..]]), b"+OK\r\n");
    r.send(&resp_cmd(&[&b"SET"[..], b"rover", &over[..]]));
    assert_bytes(
        &r.read_to_close(),
        b"-ERR Protocol error: invalid bulk length\r\n",
        "oversized bulk",
    );
    r2.roundtrip(&resp_cmd(&["GET", "rover"]), b"$-1\r\n");
    // A request above the receive buffer (max item + 64 KiB, at least
    // 1 MiB) in total, each argument within the limit: refused, closed.
    let mut r3 = Client::connect(srv.resp());
    let part = pattern(6, 60 << 10);
    let mut mset: Vec<&[u8]> = vec![b"MSET"];
    let keys: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    for k in &keys {
        mset.push(k.as_bytes());
        mset.push(&part);
    }
    let _ = r3.s.write_all(&resp_cmd(&mset));
    assert_bytes(
        &r3.read_to_close(),
        b"-ERR Protocol error: request too large\r\n",
        "request above the receive buffer",
    );
    r2.roundtrip(&resp_cmd(&["EXISTS", "m0"]), b":0\r\n");
    r2.roundtrip(&resp_cmd(&["GET", "rmax"]), &resp_bulk(&max));
    // A list is chunked: it grows past one item's limit (each element
    // stays within it).
    for n in 1..=3 {
        r2.roundtrip(
            &resp_cmd(&[&b"RPUSH"[..], b"rl", &max[..60 << 10]]),
            format!(":{n}\r\n").as_bytes(),
        );
    }
    r2.roundtrip(
        &resp_cmd(&["LINDEX", "rl", "2"]),
        &resp_bulk(&max[..60 << 10]),
    );

    // Native: a Put above the item limit gets TOO_LARGE; a frame above
    // the receive buffer (max item + 64 KiB, at least 1 MiB) closes. (The
    // store's limit is on the item, max_item_size + 1 KiB: 66 KiB is over.)
    let mut n = Client::connect(srv.native());
    let p = kv::PutReq {
        key: (b"nover").into(),
        value: pattern(5, 66 << 10).into(),
    };
    n.send(&native_frame(kind::PUT, 1, &p));
    let a = n.read_reply_to(kind::PUT, 1);
    assert_eq!(kv::Ack::decode(&a).unwrap().status, status::TOO_LARGE);
    let huge = vec![0u8; 3 << 20];
    let p = kv::PutReq {
        key: (b"huge").into(),
        value: (&huge).into(),
    };
    let frame = native_frame(kind::PUT, 2, &p);
    // The server may close before taking all of it.
    let _ = n.s.write_all(&frame);
    assert!(
        n.read_to_close().is_empty(),
        "no reply to an oversized frame"
    );
    bystander_ok(&mut c, "after-oversized");
}

#[test]
fn malformed_commands() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.mc());
    for (req, want) in [
        (&b"GET k\r\n"[..], &b"ERROR\r\n"[..]), // names are case-sensitive
        (b"x\r\n", b"ERROR\r\n"),
        (b"get\r\n", b"ERROR\r\n"),
        (b"set k 0 0\r\n", b"ERROR\r\n"),
        (
            b"set k abc 0 1\r\nx\r\n",
            b"CLIENT_ERROR bad command line format\r\n",
        ),
        (
            b"set k 0 0 -1\r\n",
            b"CLIENT_ERROR bad command line format\r\n",
        ),
        (
            b"incr k -1\r\n",
            b"CLIENT_ERROR invalid numeric delta argument\r\n",
        ),
        (
            b"touch k x\r\n",
            b"CLIENT_ERROR invalid exptime argument\r\n",
        ),
        (
            b"delete k 1\r\n",
            b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n",
        ),
        (b"mg k v v\r\n", b"CLIENT_ERROR duplicate flag\r\n"),
        (b"\x00\x01\x02\r\n", b"ERROR\r\n"),
        (b"\xff\xfe get k\r\n", b"ERROR\r\n"),
    ] {
        c.roundtrip(req, want);
    }
    bystander_ok(&mut c, "after-malformed");
    // A line longer than 2048 bytes without a newline: memcached closes the
    // connection without a reply; so does granola-kv. Others carry on.
    let mut other = Client::connect(srv.mc());
    c.send(&vec![b'a'; 4096]);
    assert!(c.read_to_close().is_empty());
    bystander_ok(&mut other, "after-long-line");

    // RESP: protocol errors get Redis' reply and close the connection.
    for (req, want) in [
        (
            &b"*abc\r\n"[..],
            &b"-ERR Protocol error: invalid multibulk length\r\n"[..],
        ),
        (
            b"*1\r\nx\r\n",
            b"-ERR Protocol error: expected '$', got 'x'\r\n",
        ),
        (
            b"*1\r\n$-5\r\n",
            b"-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*1\r\n$2\r\nabcd\r\n",
            b"-ERR Protocol error: expected CRLF after bulk data\r\n",
        ),
        (
            b"SET k \"open\r\n",
            b"-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ] {
        let mut r = Client::connect(srv.resp());
        let mut bystander = Client::connect(srv.resp());
        r.send(req);
        assert_bytes(&r.read_to_close(), want, &show(req));
        bystander.roundtrip(&resp_cmd(&["PING"]), b"+PONG\r\n");
    }

    // Native: a header announcing more than the frame cap closes the
    // connection; another native connection is unaffected.
    let mut good = Client::connect(srv.native());
    let mut bad = Client::connect(srv.native());
    bad.send(&[0xffu8; 64]);
    assert!(bad.read_to_close().is_empty());
    let g = kv::GetReq {
        key: (b"after-malformed").into(),
    };
    good.send(&native_frame(kind::GET, 5, &g));
    let r = good.read_reply_to(kind::GET, 5);
    let r = kv::GetResp::decode(&r).unwrap();
    assert_eq!(r.status, status::OK);
    assert_eq!(r.value, pattern(7, 3000));
}

#[test]
fn half_sent_requests_complete_after_a_pause() {
    let srv = Server::default_config();
    let pause = || std::thread::sleep(Duration::from_millis(300));
    let mut c = Client::connect(srv.mc());
    c.send(b"set k 0 0 10\r\n01234");
    pause();
    c.send(b"56789\r");
    pause();
    c.roundtrip(b"\n", b"STORED\r\n");
    c.send(b"ge");
    pause();
    c.roundtrip(b"t k\r\n", b"VALUE k 0 10\r\n0123456789\r\nEND\r\n");
    // One byte at a time.
    for &b in b"get k\r" {
        c.send(&[b]);
    }
    c.roundtrip(b"\n", b"VALUE k 0 10\r\n0123456789\r\nEND\r\n");
    // A large value in pieces.
    let v = pattern(9, 300 << 10);
    let req = mc_set_cmd(b"big", 0, &v);
    for piece in req.chunks(100 << 10) {
        c.send(piece);
        pause();
    }
    c.expect(b"STORED\r\n");

    let mut r = Client::connect(srv.resp());
    r.send(b"*3\r\n$3\r\nSE");
    pause();
    r.send(b"T\r\n$1\r\nk\r\n$3\r\nab");
    pause();
    r.roundtrip(b"c\r\n", b"+OK\r\n");
    r.send(b"PI");
    pause();
    r.roundtrip(b"NG\r\n", b"+PONG\r\n");
    let mut n = Client::connect(srv.native());
    let g = kv::GetReq { key: (b"k").into() };
    let frame = native_frame(kind::GET, 3, &g);
    n.send(&frame[..5]);
    pause();
    n.send(&frame[5..14]);
    pause();
    n.send(&frame[14..]);
    let r = n.read_reply_to(kind::GET, 3);
    assert_eq!(kv::GetResp::decode(&r).unwrap().value, b"abc");
}

#[test]
fn a_client_that_never_reads() {
    let srv = Server::default_config();
    let pool = srv.shared.store.pool().clone();
    let value = pattern(3, 64 << 10);
    {
        // Store the value and warm up (lazily allocated buffers) with a
        // connection that is closed again.
        let mut c = Client::connect(srv.mc());
        c.roundtrip(&mc_set_cmd(b"big", 0, &value), b"STORED\r\n");
        c.send(b"get big\r\n");
        assert!(mc_read_get(&mut c).is_some());
    }
    srv.wait_for("warm-up connection closed", |s| s.conns_open() == 0);
    let base = pool.stats();

    // The abuser: GETs of 64 KiB, pipelined without end, never reading.
    let abuser = TcpStream::connect(srv.mc()).unwrap();
    abuser.set_nonblocking(true).unwrap();
    let chunk = b"get big\r\n".repeat(7000);
    let mut written = 0usize;
    let mut blocked_in_a_row = 0;
    let deadline = Instant::now() + IO_TIMEOUT;
    // Without back-pressure the server would take requests forever (each
    // reply references the one stored value: nothing would stop it).
    const CAP: usize = 64 << 20;
    while blocked_in_a_row < 50 {
        assert!(Instant::now() < deadline, "writes never blocked");
        assert!(
            written < CAP,
            "server took {written} bytes of requests unread"
        );
        match (&abuser).write(&chunk) {
            Ok(n) => {
                written += n;
                blocked_in_a_row = 0;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                blocked_in_a_row += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("abuser write: {e}"),
        }
    }
    println!(
        "abuser blocked after {written} bytes of requests ({} GETs)",
        written / 9
    );
    // Others are served meanwhile, on both worker threads (reads only, so
    // the pool's use can be compared afterwards).
    let mut others: Vec<Client> = (0..4).map(|_| Client::connect(srv.mc())).collect();
    let mut want = mc_value_reply(b"big", 0, &value, None);
    want.extend_from_slice(b"END\r\n");
    for c in &mut others {
        c.roundtrip(
            b"get big\r\nget nope\r\n",
            &[&want[..], b"END\r\n"].concat(),
        );
    }
    let mut r = Client::connect(srv.resp());
    r.roundtrip(&resp_cmd(&["GET", "big"]), &resp_bulk(&value));
    // The abuser's queued replies reference the stored value instead of
    // holding copies: pool use stays far below what is queued.
    let during = pool.stats();
    println!(
        "pool live bytes: {} before, {} with the abuser blocked",
        base.live_bytes, during.live_bytes
    );
    assert!(
        during.live_bytes < base.live_bytes + (32 << 20),
        "pool grew by {} bytes",
        during.live_bytes - base.live_bytes
    );
    drop(others);
    drop(r);
    // Disconnecting frees everything it held.
    drop(abuser);
    srv.wait_for("every connection closed", |s| s.conns_open() == 0);
    srv.wait_for("pool back to its use before the abuser", |_| {
        let now = pool.stats();
        now.live_slots == base.live_slots && now.live_bytes == base.live_bytes
    });
    let mut c = Client::connect(srv.mc());
    c.roundtrip(b"get big\r\n", &want);
}

/// A pipelined batch whose replies are many times the back-pressure mark
/// (4 MiB), sent by a client that reads nothing until the server has
/// answered what it will: the replies the server holds (copied: the value
/// is under the copy threshold) stay near the mark — the server stops
/// answering, not just reading — and once the client reads, every reply
/// arrives, in order.
///
/// The connection first stores a 1 MiB value, so its receive buffer has
/// grown to hold a large part of the batch at once: answering all of it per
/// read once meant ~90 MiB of pool memory for this one client.
fn paused_batch_resumes(addr: std::net::SocketAddr, srv: &Server, proto: &str) {
    const GETS: usize = 40_000;
    // Replies are copied into connection buffers (their own pool).
    let pool = srv.shared.conn_pool.clone();
    let value = pattern(11, 1000);
    let memcached = proto == "memcached";
    let big = pattern(12, 1 << 20);
    let set = |key: &[u8], v: &[u8]| {
        if memcached {
            mc_set_cmd(key, 0, v)
        } else {
            resp_cmd(&[&b"SET"[..], key, v])
        }
    };
    let (set_small, set_big) = (set(b"small", &value), set(b"big", &big));
    let stored: &[u8] = if memcached { b"STORED\r\n" } else { b"+OK\r\n" };
    let get: &[u8] = if memcached {
        b"get small\r\n"
    } else {
        b"GET small\r\n"
    };
    let reply = if memcached {
        [&mc_value_reply(b"small", 0, &value, None)[..], b"END\r\n"].concat()
    } else {
        resp_bulk(&value)
    };
    let (end, end_reply): (&[u8], &[u8]) = if memcached {
        (b"mn\r\n", b"MN\r\n")
    } else {
        (b"PING\r\n", b"+PONG\r\n")
    };
    let mut c = Client::connect(addr);
    c.roundtrip(&set_small, stored);
    c.roundtrip(&set_big, stored);
    let base = pool.stats().live_bytes;
    let hits0 = srv.shared.store.stats().hits;
    let mut w = c.s.try_clone().unwrap();
    let batch = [&get.repeat(GETS)[..], end].concat();
    let writer = std::thread::spawn(move || w.write_all(&batch).unwrap());
    // Bounded wait until the server has answered up to the mark (4 MiB of
    // ~1 KiB replies) and more, then give it time to (wrongly) go on.
    srv.wait_for("server answering the batch", |s| {
        s.shared.store.stats().hits >= hits0 + 4000
    });
    std::thread::sleep(Duration::from_millis(300));
    let held = pool.stats().live_bytes.saturating_sub(base);
    println!(
        "{proto}: {} of {GETS} GETs answered while the client did not read; pool +{} KiB",
        srv.shared.store.stats().hits - hits0,
        held >> 10
    );
    // Mark + one receive buffer (2 MiB) + TX chunk rounding.
    assert!(
        held <= 12 << 20,
        "{proto}: the server holds {held} bytes of replies for a client that does not read"
    );
    for i in 0..GETS {
        let got = c.read_n(reply.len());
        if got != reply {
            assert_bytes(&got, &reply, &format!("{proto}: reply {i}"));
        }
    }
    c.expect(end_reply);
    writer.join().unwrap();
    assert_eq!(srv.shared.store.stats().hits - hits0, GETS as u64);
}

#[test]
fn paused_batches_resume_memcached() {
    let srv = Server::default_config();
    paused_batch_resumes(srv.mc(), &srv, "memcached");
}

#[test]
fn paused_batches_resume_resp() {
    let srv = Server::default_config();
    paused_batch_resumes(srv.resp(), &srv, "resp");
}

fn process_threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("Threads: in /proc/self/status")
}

/// `flush_all <delay>` is remembered, not given a thread each: a client
/// repeating it cannot make the server spawn threads without bound.
#[test]
fn delayed_flush_all_does_not_spawn_a_thread_each() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.mc());
    c.roundtrip(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n");
    let before = process_threads();
    c.roundtrip(&b"flush_all 1000 noreply\r\n".repeat(500), b"");
    c.roundtrip(b"flush_all 1000\r\n", b"OK\r\n");
    let after = process_threads();
    println!("threads: {before} before, {after} after 501 delayed flush_all");
    // Other tests of this binary start and stop threads meanwhile: allow
    // for them, not for one thread per command.
    assert!(
        after < before + 100,
        "{before} threads before, {after} after"
    );
    // Nothing flushed yet.
    c.roundtrip(b"get k\r\n", b"VALUE k 0 1\r\nv\r\nEND\r\n");
    // A later, immediate flush_all replaces the pending one and works.
    c.roundtrip(b"flush_all\r\n", b"OK\r\n");
    c.roundtrip(b"get k\r\n", b"END\r\n");
    // A short delay: the item is there at once and gone after the delay
    // (bounded wait).
    c.roundtrip(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n");
    c.roundtrip(b"flush_all 1\r\n", b"OK\r\n");
    srv.wait_for("the delayed flush", |_| {
        c.send(b"get k\r\n");
        mc_read_get(&mut c).is_none()
    });
}

/// Raises the soft open-files limit toward `want` (up to the hard limit);
/// returns the soft limit in effect.
fn raise_nofile(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct we own.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    assert_eq!(rc, 0, "getrlimit");
    if lim.rlim_cur < want {
        let raised = libc::rlimit {
            rlim_cur: want.min(lim.rlim_max),
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit from a struct we own.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = raised.rlim_cur;
        }
    }
    lim.rlim_cur
}

#[test]
fn a_thousand_idle_connections() {
    // Each connection costs two descriptors in this process (client and
    // server side), plus what other tests running alongside use.
    let soft = raise_nofile(4096);
    let n = if soft >= 2 * 1000 + 500 {
        1000
    } else {
        let n = (soft.saturating_sub(500) / 2) as usize;
        let _ = writeln!(
            std::io::stderr(),
            "open-files limit {soft}: {n} idle connections instead of 1000"
        );
        n
    };
    let srv = Server::default_config();
    let before = srv.conns_open();
    let idle: Vec<TcpStream> = (0..n)
        .map(|i| {
            let addr = if i % 2 == 0 { srv.mc() } else { srv.resp() };
            TcpStream::connect(addr).expect("idle connection")
        })
        .collect();
    srv.wait_for("all idle connections accepted", |s| {
        s.conns_open() >= before + n as u64
    });
    assert_eq!(mc_stat(srv.mc(), "curr_connections"), before + n as u64 + 1);
    let mut c = Client::connect(srv.mc());
    for i in 0..20 {
        bystander_ok(&mut c, &format!("busy{i}"));
    }
    // The idle ones still answer when they speak.
    for s in idle.iter().step_by(97) {
        let mut c = Client::from_stream(s.try_clone().unwrap());
        if s.peer_addr().unwrap() == srv.mc() {
            c.roundtrip(b"mn\r\n", b"MN\r\n");
        } else {
            c.roundtrip(b"PING\r\n", b"+PONG\r\n");
        }
    }
    drop(idle);
    srv.wait_for("idle connections closed", |s| s.conns_open() <= before + 1);
}

#[test]
fn connections_above_max_conns_are_refused() {
    let mut cfg = config();
    cfg.max_conns = 5;
    let srv = Server::start(cfg);
    let mut ok: Vec<Client> = (0..5).map(|_| Client::connect(srv.mc())).collect();
    for (i, c) in ok.iter_mut().enumerate() {
        bystander_ok(c, &format!("c{i}"));
    }
    // The sixth is accepted by the kernel, told the protocol's error line
    // (as memcached and Redis do) and closed.
    for (addr, line) in [
        (srv.mc(), &b"ERROR Too many open connections\r\n"[..]),
        (srv.resp(), &b"-ERR max number of clients reached\r\n"[..]),
    ] {
        let mut extra = Client::connect(addr);
        assert_eq!(extra.read_to_close(), line, "refused connection's reply");
    }
    assert_eq!(
        srv.shared
            .net
            .get()
            .unwrap()
            .conns_refused
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    for (i, c) in ok.iter_mut().enumerate() {
        bystander_ok(c, &format!("again{i}"));
    }
    // Room again once one leaves.
    ok.pop();
    srv.wait_for("a connection closed", |s| s.conns_open() == 4);
    let mut c = Client::connect(srv.mc());
    bystander_ok(&mut c, "late");
}
