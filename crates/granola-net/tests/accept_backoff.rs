//! Out of file descriptors: an echo server in this process, whose soft
//! `RLIMIT_NOFILE` is lowered to a few descriptors above what is open,
//! while a client process (bash, its own limit) opens 40 connections.
//! `accept` fails with EMFILE; the server must back off (not spin: bounded
//! CPU over a second), log it at most once per period, and accept the
//! waiting connections once descriptors are available again.
//!
//! Its own test binary: the limit is per process.

use granola::Pool;
use granola_net::limits;
use granola_net::server::{Accepted, Close, ConnIo, Server, ServerConfig, Service, Session};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static ACCEPT_WARNINGS: AtomicUsize = AtomicUsize::new(0);

struct CountingLogger;

impl log::Log for CountingLogger {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, r: &log::Record<'_>) {
        let msg = r.args().to_string();
        eprintln!("[{}] {msg}", r.level());
        if msg.contains("accept failed") {
            ACCEPT_WARNINGS.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn flush(&self) {}
}

struct Echo;

impl Session for Echo {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        let data = io.rx.data().to_vec();
        io.tx.copy(&data).map_err(|_| Close::new("no TX memory"))?;
        io.rx.consume(data.len());
        Ok(())
    }
}

struct EchoService;

impl Service for EchoService {
    fn name(&self) -> &str {
        "echo"
    }
    fn session(&self, _conn: &Accepted) -> Box<dyn Session> {
        Box::new(Echo)
    }
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// CPU ticks (user + system) of this process, read through `file`
/// (/proc/self/stat opened beforehand: no descriptor is left to open it
/// while the limit bites).
fn cpu_ticks(file: &mut std::fs::File) -> u64 {
    use std::io::Seek;
    file.rewind().unwrap();
    let mut stat = String::new();
    file.read_to_string(&mut stat).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn emfile_backs_off_then_accepts() {
    log::set_logger(&CountingLogger).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
    let pool = Pool::with_capacity(64 << 20).unwrap();
    let cfg = ServerConfig {
        threads: 1,
        max_conns: 500,
        ..ServerConfig::default()
    };
    let handle = Server::new(pool, cfg)
        .tcp("127.0.0.1:0".parse().unwrap(), Arc::new(EchoService))
        .start()
        .unwrap();
    let addr = handle.tcp_addrs[0];
    let (soft0, _) = limits::nofile_limit().unwrap();

    let clients = 40;
    let mut bash = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -Sn 1024; sleep 0.3; for i in $(seq 1 {clients}); do exec {{fd}}<>/dev/tcp/127.0.0.1/{}; done; sleep 5",
            addr.port()
        ))
        .stdin(std::process::Stdio::null())
        .spawn()
        .expect("bash");
    let mut stat = std::fs::File::open("/proc/self/stat").unwrap();
    // A few descriptors of room: the server accepts a handful, then EMFILE.
    limits::set_nofile_soft(open_fds() as u64 + 4).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let t0 = cpu_ticks(&mut stat);
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_ticks(&mut stat) - t0;
    let open_while_short = handle.stats.conns_open.load(Ordering::Relaxed);
    let warnings = ACCEPT_WARNINGS.load(Ordering::Relaxed);
    println!(
        "out of descriptors: {open_while_short} of {clients} accepted, {used} CPU ticks in 1 s, {warnings} accept warnings"
    );
    assert!(open_while_short < clients, "the limit did not bite");
    assert!(warnings >= 1, "EMFILE not reported");
    assert!(warnings <= 2, "{warnings} accept warnings in 1.7 s");
    assert!(
        used <= 20,
        "{used} ticks of CPU in 1 s while out of descriptors"
    );

    // Descriptors again: the waiting connections are accepted.
    limits::set_nofile_soft(soft0).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while handle.stats.conns_open.load(Ordering::Relaxed) < clients {
        assert!(
            Instant::now() < deadline,
            "waiting connections not accepted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"ping").unwrap();
    let mut got = [0u8; 4];
    c.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    let _ = bash.kill();
    let _ = bash.wait();
    handle.shutdown();
    handle.join();
}
