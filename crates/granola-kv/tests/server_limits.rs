//! Connection limits and memory that connections hold:
//!
//! - hundreds of idle connections that each once sent a 1 MiB value hold
//!   no receive buffer (it shrinks back and is given up while idle), so
//!   sets of every size keep working;
//! - seven clients each half way through a set of a different size (20 KB
//!   to 1 MB: receive buffers of seven size classes) all get their value
//!   stored with an 8 MiB connection share (four pool segments);
//! - a second instance on a port already served is refused with "address
//!   already in use" (in-process and as the real binary);
//! - the real binary under `ulimit -n 128` with the default `-c 4096`
//!   lowers `-c` to what fits (logged), answers the connections over it
//!   with memcached's `ERROR Too many open connections`, and does not spin.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn idle_connections_that_once_sent_1_mib_hold_no_receive_buffer() {
    let mut cfg = config();
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    let srv = Server::start(cfg);
    let conns = 200;
    let big = 1 << 20;
    let mut idle = Vec::new();
    for i in 0..conns {
        let mut c = Client::connect(srv.mc());
        let key = format!("big{i}");
        c.roundtrip(
            &mc_set_cmd(key.as_bytes(), 0, &pattern(i as u64, big)),
            b"STORED\r\n",
        );
        idle.push(c);
    }
    let conn_pool = srv.shared.conn_pool.stats();
    println!(
        "{conns} idle connections after a 1 MiB set each: connection pool {} live bytes in {} segments (limit {} MiB)",
        conn_pool.live_bytes,
        conn_pool.segments_in_use,
        conn_pool.capacity >> 20
    );
    // At most a TX chunk (16 KiB) each; no 1-2 MiB receive buffers.
    assert!(
        conn_pool.live_bytes <= conns * (32 << 10),
        "idle connections hold {} bytes",
        conn_pool.live_bytes
    );
    // A new connection stores 1 MiB, and every old one still works,
    // including another 1 MiB set (its buffer grows again, then shrinks).
    let mut fresh = Client::connect(srv.mc());
    fresh.roundtrip(&mc_set_cmd(b"fresh", 0, &pattern(99, big)), b"STORED\r\n");
    fresh.send(b"get fresh\r\n");
    assert_eq!(mc_read_get(&mut fresh), Some((0, pattern(99, big))));
    for (i, c) in idle.iter_mut().enumerate().step_by(10) {
        let v = pattern(1000 + i as u64, (i * 5000) % big + 1);
        c.roundtrip(&mc_set_cmd(b"again", 0, &v), b"STORED\r\n");
        c.send(b"get again\r\n");
        assert_eq!(mc_read_get(c), Some((0, v)));
    }
    let s = mc_stats(srv.mc());
    let num = |k: &str| -> usize { s[k].parse().unwrap() };
    assert!(num("conn_buffer_bytes") <= num("conn_buffer_limit"));
    assert_eq!(num("curr_connections"), conns + 2);
}

/// Receive buffers double from 16 KiB to the request's size, so clients
/// sending values of different sizes at once hold buffers of as many size
/// classes. Before, the connection pool was exactly the share, four 2 MiB
/// segments each carved for one class: the fifth class failed ("pool
/// exhausted", the connection closed) with 2.3 MB of the 8 MiB in use.
#[test]
fn concurrent_large_sets_of_many_sizes_share_the_connection_memory() {
    let mut cfg = config();
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    cfg.conn_memory_mb = 8;
    let srv = Server::start(cfg);
    let sizes = [
        20_000usize,
        40_000,
        80_000,
        160_000,
        320_000,
        640_000,
        1_000_000,
    ];
    let mut clients: Vec<(usize, Vec<u8>, Client)> = sizes
        .iter()
        .map(|&n| {
            let mut c = Client::connect(srv.mc());
            let cmd = mc_set_cmd(format!("v{n}").as_bytes(), 0, &pattern(n as u64, n));
            c.send(&cmd[..cmd.len() / 2]);
            (n, cmd, c)
        })
        .collect();
    // Every partial request is in its receive buffer before any completes.
    let want: usize = sizes.iter().sum::<usize>() / 2;
    srv.wait_for("the partial sets are received", |s| {
        mc_stat(s.mc(), "conn_buffer_bytes") as usize >= want
    });
    for (n, cmd, c) in &mut clients {
        c.send(&cmd[cmd.len() / 2..]);
        let line = c.read_line();
        assert_eq!(line, b"STORED\r\n", "set of {n} B: {}", show(&line));
    }
    for (n, _, c) in &mut clients {
        c.send(format!("get v{n}\r\n").as_bytes());
        assert_eq!(mc_read_get(c), Some((0, pattern(*n as u64, *n))));
    }
    let s = mc_stats(srv.mc());
    let num = |k: &str| -> usize { s[k].parse().unwrap() };
    assert_eq!(num("conn_buffer_limit"), 8 << 20);
    assert!(num("conn_buffer_bytes") <= num("conn_buffer_limit"));
    assert!(
        num("conn_pool_bytes")
            <= num("conn_buffer_limit")
                + granola_kv::server::config::CONN_CLASS_SLACK_SEGMENTS * granola::SEGMENT_SIZE
    );
}

#[test]
fn second_instance_is_refused() {
    let a = Server::default_config();
    // In process: the same memcached port, everything else off.
    let mut cfg = config();
    cfg.ephemeral_ports = false;
    cfg.port = a.mc().port();
    cfg.resp_port = 0;
    cfg.native_port = 0;
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    let e = granola_kv::server::start(cfg.clone())
        .err()
        .expect("a second server on a served port must not start");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    assert!(e.to_string().contains("address already in use"), "{e}");
    // A served UDP port likewise.
    cfg.port = 0;
    cfg.udp_port = a.mc_udp().port();
    let e = granola_kv::server::start(cfg)
        .err()
        .expect("a second server on a served UDP port must not start");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);

    // The real binary: exits non-zero saying why.
    let out = Command::new(env!("CARGO_BIN_EXE_granola-kv"))
        .args(["-p", &a.mc().port().to_string()])
        .args(["--resp-port", "0", "--native-port", "0", "-t", "1"])
        .stdin(Stdio::null())
        .output()
        .expect("run granola-kv");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "second instance started: {stderr}");
    assert!(stderr.contains("address already in use"), "{stderr}");
    // The first still serves.
    let mut c = Client::connect(a.mc());
    c.roundtrip(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n");
}

#[test]
fn low_open_file_limit_lowers_conn_limit_and_refuses_with_the_error_line() {
    // A port found free can be taken before the server binds it: the
    // server then exits, and another port is tried.
    let bin = env!("CARGO_BIN_EXE_granola-kv");
    let mut attempt = 0;
    let (mut child, port, lines, reader) = loop {
        attempt += 1;
        let port = granola_tests::ports::free_tcp_udp_port();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n 128 && exec {bin} -p {port} --resp-port 0 --native-port 0 -t 1 -m 16"
            ))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn granola-kv under ulimit -n 128");
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let reader = {
            let lines = lines.clone();
            let err = child.stderr.take().unwrap();
            std::thread::spawn(move || {
                for l in BufReader::new(err).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(l);
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let listening = loop {
            if lines
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("listening"))
            {
                break true;
            }
            if let Ok(Some(status)) = child.try_wait() {
                eprintln!("granola-kv on port {port} exited ({status})");
                break false;
            }
            assert!(
                Instant::now() < deadline,
                "server did not start: {:?}",
                lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        if listening {
            break (child, port, lines, reader);
        }
        reader.join().unwrap();
        let log = lines.lock().unwrap();
        assert!(
            attempt < 5 && log.iter().any(|l| l.contains("in use")),
            "server did not start: {log:?}"
        );
    };
    let pid = child.id();
    let lowered = lines
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("connection limit lowered"))
        .cloned()
        .expect("a log line saying -c was lowered");
    let limit: usize = lowered
        .split(" to ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no number in {lowered:?}"));
    assert!(limit > 0 && limit < 128, "{lowered}");
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let total = 150;
    let (mut served, mut refused) = (Vec::new(), 0);
    for _ in 0..total {
        let mut c = Client::connect(addr);
        c.send(b"version\r\n");
        let line = c.read_line();
        if line.starts_with(b"VERSION ") {
            served.push(c);
        } else {
            assert_eq!(line, b"ERROR Too many open connections\r\n");
            let mut rest = Vec::new();
            let _ = c.s.read_to_end(&mut rest);
            refused += 1;
        }
    }
    println!(
        "-c lowered to {limit}: {} served, {refused} refused",
        served.len()
    );
    assert_eq!(served.len(), limit);
    assert_eq!(refused, total - limit);
    // Idle with the limit reached: no busy loop.
    let t0 = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks(pid) - t0;
    assert!(
        used <= 20,
        "server used {used} ticks of CPU in 1 s while full"
    );
    // The served connections still work.
    for c in served.iter_mut().step_by(7) {
        c.roundtrip(b"set k 0 0 1\r\nv\r\n", b"STORED\r\n");
    }
    drop(served);
    child.kill().expect("stop granola-kv");
    let _ = child.wait();
    reader.join().unwrap();
    let log = lines.lock().unwrap();
    let noisy = log.iter().filter(|l| l.contains("refusing")).count();
    assert!(
        noisy <= 8,
        "{noisy} refusal log lines for {refused} refusals"
    );
}
