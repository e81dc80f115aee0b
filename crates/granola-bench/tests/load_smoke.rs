//! End-to-end smoke runs of the load generator against a real memcached and
//! redis-server, started here on 127.0.0.1 high ports and stopped by PID.
//! Skipped, loudly, when the servers are not installed (bench/setup.sh
//! installs them).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use granola_bench::load::{self, LoadConfig, LoadReport, Mode, Protocol, Transport};
use granola_bench::workload::WorkloadSpec;

/// A server process, killed (by its PID) on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find(cmd: &str) -> Option<String> {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin"] {
        let p = format!("{dir}/{cmd}");
        if std::path::Path::new(&p).exists() {
            return Some(p);
        }
    }
    None
}

/// The server answers `probe` with a reply starting with `expect` on
/// `addr`: the port is ours and the server is serving, not merely listening
/// (a bare connect would also accept another process on the port).
fn answers(addr: SocketAddr, probe: &[u8], expect: &[u8]) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut got = vec![0u8; expect.len()];
    s.write_all(probe).is_ok() && s.read_exact(&mut got).is_ok() && got == expect
}

fn start(
    cmd: &str,
    args: impl Fn(u16) -> Vec<String>,
    probe: &[u8],
    expect: &[u8],
) -> Option<Server> {
    let Some(path) = find(cmd) else {
        // scripts/test.sh installs the peers and sets this: there a missing
        // peer is a failure, not a skip.
        assert!(
            std::env::var_os("GRANOLA_REQUIRE_PEERS").is_none(),
            "{cmd} not installed but GRANOLA_REQUIRE_PEERS is set"
        );
        eprintln!("skipped: {cmd} not installed (run bench/setup.sh)");
        println!("skipped: {cmd} not installed (run bench/setup.sh)");
        return None;
    };
    for _ in 0..5 {
        let port = granola_tests::ports::free_tcp_udp_port();
        let child = Command::new(&path)
            .args(args(port))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {path}: {e}"));
        let mut server = Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(status)) = server.child.try_wait() {
                eprintln!("{cmd} on port {port} exited ({status}); trying another port");
                break;
            }
            if answers(server.addr, probe, expect) {
                eprintln!(
                    "{cmd} (pid {}) serving on {}",
                    server.child.id(),
                    server.addr
                );
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(server);
    }
    panic!("{cmd} did not start");
}

fn memcached() -> Option<Server> {
    start(
        "memcached",
        |p| {
            let mut a: Vec<String> = ["-l", "127.0.0.1", "-t", "1", "-m", "256"]
                .map(String::from)
                .to_vec();
            a.extend(["-p".into(), p.to_string(), "-U".into(), p.to_string()]);
            // memcached refuses to run as root without -u.
            a.extend(["-u".into(), "nobody".into()]);
            a
        },
        b"version\r\n",
        b"VERSION ",
    )
}

fn redis() -> Option<Server> {
    start(
        "redis-server",
        |p| {
            [
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--port",
            ]
            .map(String::from)
            .into_iter()
            .chain([p.to_string()])
            .collect()
        },
        b"PING\r\n",
        b"+PONG",
    )
}

fn cfg(addr: SocketAddr, protocol: Protocol, mode: Mode) -> LoadConfig {
    LoadConfig {
        addr,
        protocol,
        mode,
        threads: 1,
        conns: 2,
        duration: Duration::from_millis(1500),
        warmup: Duration::from_millis(300),
        // Generous: the test machine may be busy; checking, not speed, is
        // what this test is about.
        timeout: Duration::from_secs(10),
        ..LoadConfig::default()
    }
}

fn assert_clean(what: &str, r: &LoadReport) {
    eprintln!("{what}: {}", r.summary());
    assert_eq!(
        r.counts.errors.total(),
        0,
        "{what}: errors {:?}",
        r.counts.errors
    );
    assert_eq!(
        r.warmup.errors.total(),
        0,
        "{what}: warm-up errors {:?}",
        r.warmup.errors
    );
    assert_eq!(r.counts.req_timeout, 0, "{what}: timeouts");
    assert!(
        r.counts.req_ok > 100,
        "{what}: too few responses: {:?}",
        r.counts
    );
    assert_eq!(r.latency_us.count, r.counts.ops_good(), "{what}");
}

fn run_all(addr: SocketAddr, protocol: Protocol, workloads: &[&str]) {
    for w in workloads {
        let w = w.parse::<WorkloadSpec>().unwrap().build().unwrap();
        let c = cfg(addr, protocol, Mode::Open { rate: 3000.0 });
        let l = load::load(&c, w.as_ref()).unwrap();
        assert_eq!(l.counts.ops, w.load_count(), "{}", w.describe());
        assert_eq!(l.errors, 0, "load {}: {:?}", w.describe(), l.counts);
        let r = load::run(&c, w.as_ref()).unwrap();
        assert_clean(&format!("{} open", w.describe()), &r);
        // Open loop: achieved close to offered at this light load.
        assert!(
            r.ratio() > 0.8,
            "{}: achieved {} of 3000",
            w.describe(),
            r.achieved_rps
        );
        let r = load::run(&cfg(addr, protocol, Mode::Closed { depth: 8 }), w.as_ref()).unwrap();
        assert_clean(&format!("{} closed", w.describe()), &r);
    }
}

#[test]
fn smoke_memcached() {
    let Some(mc) = memcached() else { return };
    run_all(
        mc.addr,
        Protocol::Memcached,
        &[
            "ycsb:keys=2000,value=4k",
            "ycsb:keys=500,value=4k,shape=list:4",
            "google:keys=500,list=1-8",
            "usr:keys=1000",
        ],
    );
    // A sweep of two points, and the UDP path (multi-datagram replies of
    // 4 KiB values are reassembled).
    let w = "ycsb:keys=2000,value=4k"
        .parse::<WorkloadSpec>()
        .unwrap()
        .build()
        .unwrap();
    let c = cfg(mc.addr, Protocol::Memcached, Mode::Open { rate: 1000.0 });
    let s = load::sweep(&c, w.as_ref(), &[500.0, 1000.0], false).unwrap();
    assert_eq!(s.runs.len(), 2);
    assert!(s.knee.is_some(), "light loads meet the 95% rule");
    let u = LoadConfig {
        transport: Transport::Udp,
        ..c
    };
    let r = load::run(&u, w.as_ref()).unwrap();
    eprintln!("udp: {}", r.summary());
    assert_eq!(
        r.counts.errors.total() - r.counts.errors.connection,
        0,
        "{:?}",
        r.counts.errors
    );
    assert!(r.counts.req_ok > 100, "udp: {:?}", r.counts);
}

#[test]
fn smoke_redis() {
    let Some(rs) = redis() else { return };
    run_all(
        rs.addr,
        Protocol::Resp,
        &[
            "ycsb:keys=2000,value=4k",
            "ycsb:keys=2000,value=4k,shape=multi:2",
            "ycsb:keys=500,value=4k,shape=list:2",
            "ycsb:keys=500,value=4k,shape=vector:4",
            "twitter:keys=2000",
            "echo:shape=2x2048",
        ],
    );
    // A trace replay with sets and deletes: deletes make later GETs miss,
    // which is counted, not an error.
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../bench/data/twitter-sample.csv"
    );
    let w = format!("twitter:file={trace}")
        .parse::<WorkloadSpec>()
        .unwrap()
        .build()
        .unwrap();
    let c = cfg(rs.addr, Protocol::Resp, Mode::Open { rate: 3000.0 });
    load::load(&c, w.as_ref()).unwrap();
    let r = load::run(&c, w.as_ref()).unwrap();
    eprintln!("trace: {}", r.summary());
    assert_eq!(r.counts.errors.total(), 0, "{:?}", r.counts.errors);
}
