//! Idle naps (granola_net::nap) in the real binary, as a user runs it:
//!
//! - with `--idle-nap-us 50`, on the epoll loop and on the io_uring loop
//!   (INFO's `multiplexing_api` says which one serves), six clients
//!   pipelining INCRs on their own
//!   counters get every reply right (each one the counter's next value),
//!   and the worker napped while they did (INFO stats `idle_naps`), unless
//!   a CPU quota applies to the process, where it must not nap at all;
//! - afterwards, idle, the server uses next to no CPU: a nap ends in a
//!   blocking wait, not in a poll loop;
//! - by default there are no naps.

mod common;

use common::*;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CLIENTS: usize = 6;
const BATCHES: usize = 300;
const PIPELINE: usize = 16;

/// The spawned server, killed when dropped (also when an assertion
/// fails first).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The real binary on one worker thread, RESP only, with `extra` flags.
/// A port found free can be taken before the server binds it; the server
/// then exits, and another port is tried.
fn spawn(extra: &[&str]) -> (Running, SocketAddr) {
    for _ in 0..5 {
        let port = granola_tests::ports::free_tcp_udp_port();
        let child = Command::new(env!("CARGO_BIN_EXE_granola-kv"))
            .args([
                "-t",
                "1",
                "-l",
                "127.0.0.1",
                "-p",
                "0",
                "--native-port",
                "0",
            ])
            .args(["--resp-port", &port.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn granola-kv");
        let mut child = Running(child);
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = child.0.try_wait() {
                eprintln!("granola-kv on port {port} exited ({status}); trying another port");
                break;
            }
            if TcpStream::connect(addr).is_ok() {
                return (child, addr);
            }
            assert!(Instant::now() < deadline, "granola-kv did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("granola-kv did not start on any of 5 ports");
}

/// Each client pipelines `BATCHES` batches of `PIPELINE` INCRs on its own
/// key and checks that every reply is the counter's next value.
fn pipelined_counters(addr: SocketAddr) {
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            std::thread::spawn(move || {
                let key = format!("nap:counter:{i}");
                let mut c = Client::connect(addr);
                let batch: Vec<u8> = (0..PIPELINE)
                    .flat_map(|_| resp_cmd(&["INCR", &key]))
                    .collect();
                let mut want = 0i64;
                for _ in 0..BATCHES {
                    c.send(&batch);
                    for _ in 0..PIPELINE {
                        want += 1;
                        match c.read_resp() {
                            Resp::Int(n) => assert_eq!(n, want, "{key}"),
                            other => panic!("{key}: INCR answered {other:?}"),
                        }
                    }
                }
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client");
    }
}

/// Six clients pipeline on a server with `--idle-nap-us 50` on
/// `datapath`: every reply is right, the worker napped (unless a CPU quota
/// applies), and idle it sleeps.
fn a_busy_worker_naps_and_an_idle_one_sleeps(datapath: &str) {
    let (child, addr) = spawn(&["--idle-nap-us", "50", "--datapath", datapath]);
    // The event loop really is `datapath`'s: a server falls back to epoll
    // where the kernel refuses io_uring, and says so in INFO.
    let kind: granola_net::DatapathKind = datapath.parse().unwrap();
    let want = match kind.probe() {
        Ok(()) => match kind {
            granola_net::DatapathKind::Uring => "io_uring",
            _ => "epoll",
        },
        Err(why) => {
            eprintln!("NOTE: {datapath} unavailable here ({why}); the server runs on epoll");
            "epoll"
        }
    };
    assert_eq!(resp_info_str(addr, "multiplexing_api"), want);
    pipelined_counters(addr);
    let naps = resp_info_u64(addr, "idle_naps");
    if granola_net::nap::cpu_quota_applies() {
        assert_eq!(naps, 0, "napped under a CPU quota");
    } else {
        assert!(naps > 0, "no idle nap while six clients pipelined");
    }
    // Idle: a nap that finds nothing ends in a blocking wait.
    let t0 = cpu_ticks(child.0.id());
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks(child.0.id()) - t0;
    assert!(used <= 20, "server used {used} ticks of CPU in 1 s idle");
}

#[test]
fn a_busy_epoll_worker_naps_and_an_idle_one_sleeps() {
    a_busy_worker_naps_and_an_idle_one_sleeps("epoll");
}

#[test]
fn a_busy_io_uring_worker_naps_and_an_idle_one_sleeps() {
    a_busy_worker_naps_and_an_idle_one_sleeps("uring");
}

#[test]
fn no_naps_by_default() {
    let (_child, addr) = spawn(&[]);
    pipelined_counters(addr);
    assert_eq!(resp_info_u64(addr, "idle_naps"), 0);
}
