//! Real clients against an in-process server: pymemcache, pylibmc and
//! redis-py (the scripts in `tests/clients/`, with the Python of
//! `GRANOLA_PYTHON`, default `<repo>/.venv/bin/python`), go-redis (built
//! with the Go toolchain from `tests/clients/go-redis`), ioredis and
//! node-redis (`npm ci` in `tests/clients/node`), and `redis-cli`,
//! `redis-benchmark` and `memccapable` if they are on the PATH.
//!
//! A missing interpreter, package or `redis-cli` skips the test with a
//! visible line on stderr, unless `GRANOLA_REQUIRE_PEERS=1` (what
//! `./scripts/test.sh` sets after installing them): then it fails.

mod common;

use common::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const HINT: &str =
    "run ./scripts/test.sh or create .venv with crates/granola-kv/tests/clients/requirements.txt";

/// Longest a client program may run.
const CHILD_TIMEOUT: Duration = Duration::from_secs(120);

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn clients_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients")
}

/// Skips (a visible line on stderr, past the test harness' capture) or,
/// with `GRANOLA_REQUIRE_PEERS=1`, fails.
fn skip(what: &str) {
    if std::env::var("GRANOLA_REQUIRE_PEERS").as_deref() == Ok("1") {
        panic!("{what}, and GRANOLA_REQUIRE_PEERS=1 requires it ({HINT})");
    }
    let _ = writeln!(std::io::stderr(), "skipped: {what} ({HINT})");
}

/// True if `program arg` can be started (the tool is installed).
fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The Python interpreter, if it runs and has `modules`.
fn python_with(modules: &str) -> Option<PathBuf> {
    let py = std::env::var_os("GRANOLA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"));
    let ok = Command::new(&py)
        .args(["-c", &format!("import {modules}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(py)
    } else {
        skip(&format!(
            "no Python with {modules} at {} (GRANOLA_PYTHON)",
            py.display()
        ));
        None
    }
}

/// Runs `cmd` with `stdin` as its input, bounded by [`CHILD_TIMEOUT`].
fn run(mut cmd: Command, stdin: &[u8]) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    // Drain the pipes on threads so a chatty child cannot block.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut v);
        v
    });
    let deadline = Instant::now() + CHILD_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} ran longer than {CHILD_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    feeder.join().unwrap();
    Output {
        status,
        stdout: t_out.join().unwrap(),
        stderr: t_err.join().unwrap(),
    }
}

/// Prints a child's output and asserts it exited with 0.
#[track_caller]
fn check(name: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("--- {name} stdout:\n{stdout}--- {name} stderr:\n{stderr}");
    assert!(
        out.status.success(),
        "{name} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn pymemcache_script() {
    let Some(py) = python_with("pymemcache") else {
        return;
    };
    let srv = Server::default_config();
    let mut cmd = Command::new(py);
    cmd.arg(clients_dir().join("memcache_client.py"))
        .arg(srv.mc().port().to_string());
    let out = run(cmd, b"");
    check("memcache_client.py", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("all checks passed"));
}

/// redis-py with its defaults (RESP3 in redis-py 8: HELLO 3 on connect,
/// `pipeline()` a MULTI/EXEC transaction), then with `protocol=2`.
#[test]
fn redis_py_script() {
    let Some(py) = python_with("redis") else {
        return;
    };
    let srv = Server::default_config();
    for protocol in [None, Some("2")] {
        let mut cmd = Command::new(&py);
        cmd.arg(clients_dir().join("redis_client.py"))
            .arg(srv.resp().port().to_string());
        cmd.args(protocol);
        let out = run(cmd, b"");
        check(&format!("redis_client.py protocol {protocol:?}"), &out);
        assert!(String::from_utf8_lossy(&out.stdout).contains("all checks passed"));
    }
}

/// pymemcache `get_many` of 1,000 keys (one `get k1 k2 ...` line), values
/// of every size class up to 64 KiB (some by reference), each checked;
/// then the same keys one `get` at a time.
const GET_MANY: &str = r#"
import sys
from pymemcache.client.base import Client

def value(i):
    size = [0, 1, 100, 1023, 1024, 4096, 65536][i % 7]
    return bytes((i * 31 + j) % 251 for j in range(size))

c = Client(("127.0.0.1", int(sys.argv[1])), connect_timeout=5, timeout=30)
keys = [f"many:{i}" for i in range(1000)]
failed = c.set_many({k: value(i) for i, k in enumerate(keys)}, noreply=False)
assert failed == [], f"set_many failed for {failed[:5]}"
got = c.get_many(keys + ["many:absent"])
assert len(got) == 1000, f"get_many returned {len(got)} keys"
for i, k in enumerate(keys):
    assert got[k] == value(i), f"get_many {k}: {len(got[k])} bytes"
for i, k in enumerate(keys):
    assert c.get(k) == value(i), f"get {k}"
print("get_many 1000: ok")
"#;

#[test]
fn pymemcache_get_many_1000() {
    let Some(py) = python_with("pymemcache") else {
        return;
    };
    let srv = Server::default_config();
    let mut cmd = Command::new(py);
    cmd.args(["-c", GET_MANY, &srv.mc().port().to_string()]);
    let out = run(cmd, b"");
    check("get_many", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("get_many 1000: ok"));
    assert!(mc_stat(srv.mc(), "get_hits") >= 2000);
}

/// go-redis v9 (Go's most used Redis client) with its defaults: RESP3
/// through HELLO, CLIENT SETINFO on connect, pooled connections; then
/// RESP2. The program (`tests/clients/go-redis`, its modules pinned in
/// go.sum and fetched from the Go module proxy on the first build) checks
/// every result and exits 1 on a wrong one.
#[test]
fn go_redis_with_its_defaults() {
    if !runs("go", "version") {
        skip("go not on PATH (the Go toolchain)");
        return;
    }
    let bin = std::env::temp_dir().join(format!("granola-go-redis-{}", std::process::id()));
    let mut build = Command::new("go");
    build
        .current_dir(clients_dir().join("go-redis"))
        .args(["build", "-buildvcs=false", "-o"])
        .arg(&bin)
        .arg(".");
    check("go build (go-redis client)", &run(build, b""));
    let srv = Server::default_config();
    let mut cmd = Command::new(&bin);
    cmd.arg(srv.resp().to_string());
    let out = run(cmd, b"");
    let _ = std::fs::remove_file(&bin);
    check("go-redis client", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.matches("ok   ").count() >= 50, "{stdout}");
}

/// ioredis (its ready check sends INFO before the first command) and
/// node-redis in RESP2 and RESP3, with their defaults otherwise. `npm ci`
/// installs the versions pinned in `tests/clients/node/package-lock.json`
/// from the npm registry; `client.js` checks every result and exits 1 on
/// a wrong one. Then BullMQ, a job queue made of Lua scripts (cmsgpack,
/// cjson, streams, sorted sets), against a server that does not evict,
/// as BullMQ asks of Redis: `bullmq.js` runs 200 self-checking jobs
/// through two workers, with retries, delays, priorities and a flow.
#[test]
fn node_clients_with_their_defaults() {
    if !runs("node", "--version") || !runs("npm", "--version") {
        skip("node or npm not on PATH (the Node.js toolchain)");
        return;
    }
    let dir = clients_dir().join("node");
    let mut install = Command::new("npm");
    install
        .current_dir(&dir)
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]);
    check("npm ci (node clients)", &run(install, b""));
    let srv = Server::default_config();
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir)
        .arg("client.js")
        .arg(srv.resp().port().to_string());
    let out = run(cmd, b"");
    check("node clients", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.matches("ok   ").count() >= 25, "{stdout}");

    let mut cfg = config();
    cfg.maxmemory_policy = granola_kv::server::config::EvictionPolicy::NoEviction;
    let srv = Server::start(cfg);
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir)
        .arg("bullmq.js")
        .arg(srv.resp().port().to_string());
    let out = run(cmd, b"");
    check("bullmq", &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("ok   bullmq").count(), 3, "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Eviction policy"), "{stderr}");
}

fn redis_cli() -> bool {
    let ok = Command::new("redis-cli")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        skip("redis-cli not on PATH (Debian package redis-tools)");
    }
    ok
}

/// `redis-cli -p PORT <args...>` with `stdin`; asserts success, returns
/// stdout.
fn cli(port: u16, args: &[&str], stdin: &[u8]) -> String {
    let mut cmd = Command::new("redis-cli");
    cmd.arg("-p").arg(port.to_string()).args(args);
    let out = run(cmd, stdin);
    check(&format!("redis-cli {}", args.join(" ")), &out);
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn redis_cli_commands() {
    if !redis_cli() {
        return;
    }
    let srv = Server::default_config();
    let port = srv.resp().port();
    // Output to a pipe is redis-cli's raw format: one line per reply or
    // element.
    assert_eq!(cli(port, &["ping"], b""), "PONG\n");
    assert_eq!(cli(port, &["set", "k", "hello world"], b""), "OK\n");
    assert_eq!(cli(port, &["get", "k"], b""), "hello world\n");
    assert_eq!(cli(port, &["get", "missing"], b""), "\n");
    assert_eq!(cli(port, &["rpush", "l", "a", "b", "c"], b""), "3\n");
    assert_eq!(cli(port, &["lrange", "l", "0", "-1"], b""), "a\nb\nc\n");
    assert_eq!(cli(port, &["llen", "l"], b""), "3\n");
    assert_eq!(cli(port, &["incr", "n"], b""), "1\n");
    assert_eq!(cli(port, &["dbsize"], b""), "3\n");
    // Error replies go to stdout too (redis-cli adds a blank line).
    assert_eq!(
        cli(port, &["get", "l"], b""),
        "WRONGTYPE Operation against a key holding the wrong kind of value\n\n"
    );

    // RESP2 and RESP3 (`-3` sends HELLO 3): a transaction and typed
    // replies.
    for proto in ["-2", "-3"] {
        assert_eq!(cli(port, &[proto, "get", "missing"], b""), "\n");
        let out = cli(
            port,
            &[proto],
            b"multi\nset t 1\nincr t\nexec\nclient setname cli\nclient getname\n",
        );
        assert_eq!(
            out, "OK\nQUEUED\nQUEUED\nOK\n2\nOK\ncli\n",
            "redis-cli {proto}"
        );
        let id = cli(port, &[proto, "client", "id"], b"");
        assert!(id.trim().parse::<u64>().is_ok(), "client id: {id:?}");
        assert_eq!(cli(port, &[proto, "del", "t"], b""), "1\n");
    }

    // Commands read from stdin, one per line.
    let out = cli(
        port,
        &[],
        b"set s1 one\nget s1\nrpush l d\nlrange l 2 3\necho 'quoted arg'\n",
    );
    assert_eq!(out, "OK\none\n4\nc\nd\nquoted arg\n");

    // --pipe: raw RESP on stdin, mass insertion as redis-cli does it (it
    // ends with an ECHO to find the last reply).
    let mut proto = Vec::new();
    for i in 0..1000 {
        proto.extend_from_slice(&resp_cmd(&[
            "SET".to_string(),
            format!("pipe:{i}"),
            format!("value-{i}"),
        ]));
    }
    proto.extend_from_slice(&resp_cmd(&["RPUSH", "pl", "x", "y"]));
    let out = cli(port, &["--pipe"], &proto);
    assert!(
        out.contains("errors: 0, replies: 1001"),
        "--pipe summary: {out}"
    );
    assert_eq!(cli(port, &["get", "pipe:999"], b""), "value-999\n");
    assert_eq!(cli(port, &["lrange", "pl", "0", "-1"], b""), "x\ny\n");
    // 3 + s1 + 1000 + pl
    assert_eq!(cli(port, &["dbsize"], b""), "1005\n");

    // --bigkeys and --memkeys (SCAN, TYPE, the length commands, MEMORY
    // USAGE) find the biggest key of each type.
    let big: String = "x".repeat(5000);
    assert_eq!(cli(port, &["set", "bigstring", &big], b""), "OK\n");
    let out = cli(port, &["--bigkeys"], b"");
    assert!(
        out.contains("Biggest string found '\"bigstring\"' has 5000 bytes"),
        "{out}"
    );
    let out = cli(port, &["--memkeys"], b"");
    let line = out
        .lines()
        .find(|l| l.contains("Biggest string found '"))
        .unwrap_or_else(|| panic!("--memkeys: {out}"));
    assert!(line.contains("'\"bigstring\"'"), "{line}");
    let bytes: u64 = line
        .split(" has ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("--memkeys line: {line}"));
    assert!((5000..7000).contains(&bytes), "{line}");
}

/// `redis-cli --hotkeys` (SCAN, then `OBJECT FREQ` per key) under
/// `allkeys-lfu` finds the key read most, with Redis's counter; under
/// the default policy it stops with Redis's advice to pick an LFU policy.
#[test]
fn redis_cli_hotkeys_finds_the_most_read_key() {
    if !redis_cli() {
        return;
    }
    let srv = Server::default_config();
    let port = srv.resp().port();
    assert_eq!(cli(port, &["set", "before", "v"], b""), "OK\n");
    let refused = run(
        {
            let mut c = Command::new("redis-cli");
            c.arg("-p").arg(port.to_string()).arg("--hotkeys");
            c
        },
        b"",
    );
    let text = String::from_utf8_lossy(&refused.stdout).to_string()
        + &String::from_utf8_lossy(&refused.stderr);
    assert!(
        text.contains("An LFU maxmemory policy is not selected"),
        "{text}"
    );

    // No decay: a minute boundary between the writes and the scan would
    // otherwise take one off every counter.
    assert_eq!(
        cli(
            port,
            &[
                "config",
                "set",
                "maxmemory-policy",
                "allkeys-lfu",
                "lfu-decay-time",
                "0"
            ],
            b""
        ),
        "OK\n"
    );
    // New keys: one stored under the old policy holds its access time
    // where the counter goes, and reads as a stray counter until it
    // decays (as in Redis).
    assert_eq!(cli(port, &["del", "before"], b""), "1\n");
    for k in ["cold1", "cold2", "hot"] {
        assert_eq!(cli(port, &["set", k, "v"], b""), "OK\n");
    }
    let reads: Vec<u8> = "GET hot\n".repeat(2000).into_bytes();
    cli(port, &[], &reads);
    let out = cli(port, &["--hotkeys"], b"");
    let top = out
        .lines()
        .find(|l| l.contains("hot key found with counter"))
        .unwrap_or_else(|| panic!("--hotkeys: {out}"));
    assert!(top.contains("keyname: \"hot\""), "{out}");
    let counter: u32 = top
        .split("counter: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("--hotkeys line: {top}"));
    // 2000 reads at lfu-log-factor 10 make about 24.
    assert!((15..=40).contains(&counter), "{top}");
    // The others were stored and never read: Redis's initial 5.
    for k in ["cold1", "cold2"] {
        assert!(
            out.contains(&format!("counter: 5\tkeyname: \"{k}\"")),
            "{out}"
        );
    }
}

/// pylibmc (libmemcached) over the text protocol, then `binary=True`.
#[test]
fn pylibmc_script() {
    let Some(py) = python_with("pylibmc") else {
        return;
    };
    let srv = Server::default_config();
    let mut cmd = Command::new(py);
    cmd.arg(clients_dir().join("pylibmc_client.py"))
        .arg(srv.mc().port().to_string());
    let out = run(cmd, b"");
    check("pylibmc_client.py", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("all checks passed"));
}

/// libmemcached's `memccapable -b`: every binary-protocol check (all of
/// them pass against memcached 1.6).
#[test]
fn memccapable_binary() {
    if !runs("memccapable", "--help") {
        skip("memccapable not on PATH (Debian package libmemcached-tools)");
        return;
    }
    let srv = Server::default_config();
    let mut cmd = Command::new("memccapable");
    cmd.args(["-h", "127.0.0.1", "-p"])
        .arg(srv.mc().port().to_string())
        .arg("-b");
    let out = run(cmd, b"");
    check("memccapable -b", &out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("All tests passed"), "{text}");
    assert!(!text.contains("[FAIL]"), "{text}");
    assert_eq!(text.matches("[pass]").count(), 27, "{text}");
}

/// libmemcached's `memccapable -a` (Debian libmemcached-tools): every ASCII
/// protocol check memcached 1.6 passes.
#[test]
fn memccapable_ascii() {
    if !runs("memccapable", "--help") {
        skip("memccapable not on PATH (Debian package libmemcached-tools)");
        return;
    }
    let srv = Server::default_config();
    let mut cmd = Command::new("memccapable");
    cmd.args(["-h", "127.0.0.1", "-p"])
        .arg(srv.mc().port().to_string())
        .arg("-a");
    let out = run(cmd, b"");
    check("memccapable -a", &out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("All tests passed"), "{text}");
    assert!(!text.contains("[FAIL]"), "{text}");
}

/// One memaslap (`memcaslap` in Debian's libmemcached-tools) run against
/// a fresh server: its own workload (90% get, 10% set of 100 B values,
/// every get of a key it set is verified), bounded by an operation count.
/// Returns memaslap's report.
fn memaslap(extra: &[&str]) -> String {
    // memcached TCP and UDP on one port, every other protocol off.
    let (_srv, port) = Server::start_on_free_port(common::config(), |cfg, port| {
        cfg.port = port;
        cfg.udp_port = port;
        (cfg.resp_port, cfg.native_port, cfg.native_udp_port) = (0, 0, 0);
    });
    let mut cmd = Command::new("memcaslap");
    cmd.arg(format!("--servers=127.0.0.1:{port}"))
        .args(["--threads=2", "--concurrency=16", "--execute_number=40000"])
        .args(["--fixed_size=100", "--verify=1.0"])
        .args(extra);
    let out = run(cmd, b"");
    check(&format!("memcaslap {extra:?}"), &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A counter from memaslap's report (`name: value` or `name value`).
fn memaslap_stat(report: &str, name: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix(name))
        .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in memaslap's report:\n{report}"))
}

/// memaslap over TCP (text and binary protocol) and UDP: every operation
/// completes and no verified get returns a wrong value.
#[test]
fn memaslap_tcp_udp_binary() {
    if !runs("memcaslap", "--version") {
        skip("memcaslap not on PATH (Debian package libmemcached-tools)");
        return;
    }
    for extra in [&[][..], &["--binary"], &["--udp"]] {
        let report = memaslap(extra);
        let (gets, sets) = (
            memaslap_stat(&report, "cmd_get"),
            memaslap_stat(&report, "cmd_set"),
        );
        assert!(
            gets + sets >= 40_000,
            "{extra:?}: {gets} gets + {sets} sets\n{report}"
        );
        assert!(sets > 0 && gets > 0, "{extra:?}\n{report}");
        assert_eq!(
            memaslap_stat(&report, "verify_failed"),
            0,
            "{extra:?}\n{report}"
        );
    }
}

/// `redis-benchmark -q -n 2000` over its whole default test list: every
/// test completes and none reports an error (redis-benchmark drops the
/// row of a test whose replies are errors, so each row is looked for).
/// The installed redis-benchmark (7.0) has no XADD test; newer ones add
/// `XADD key * myfield <value>` to the default list, so that command runs
/// too, as a custom command, and the stream must then hold every entry.
#[test]
fn redis_benchmark_default_tests() {
    let ok = Command::new("redis-benchmark")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        skip("redis-benchmark not on PATH (Debian package redis-tools)");
        return;
    }
    let srv = Server::default_config();
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-h", "127.0.0.1", "-p"])
        .arg(srv.resp().port().to_string())
        .args(["-q", "-n", "2000", "--csv"]);
    let out = run(cmd, b"");
    check("redis-benchmark", &out);
    let text = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !text.contains("ERR") && !stderr.contains("ERR"),
        "{text}\n{stderr}"
    );
    for test in [
        "PING_INLINE",
        "PING_MBULK",
        "SET",
        "GET",
        "INCR",
        "LPUSH",
        "RPUSH",
        "LPOP",
        "RPOP",
        "SADD",
        "HSET",
        "SPOP",
        "ZADD",
        "ZPOPMIN",
        "LRANGE_100",
        "LRANGE_300",
        "LRANGE_500",
        "LRANGE_600",
        "MSET",
    ] {
        assert!(
            text.contains(&format!("\"{test}")),
            "{test} missing from:\n{text}"
        );
    }
    let mut cmd = Command::new("redis-benchmark");
    cmd.args(["-h", "127.0.0.1", "-p"])
        .arg(srv.resp().port().to_string())
        .args([
            "-q", "-n", "2000", "--csv", "XADD", "mystream", "*", "myfield",
        ])
        .arg("x".repeat(3));
    let out = run(cmd, b"");
    check("redis-benchmark XADD", &out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"XADD"), "{text}");
    let mut c = common::Client::connect(srv.resp());
    assert_eq!(c.resp(&["XLEN", "mystream"]), common::Resp::Int(2000));
}
