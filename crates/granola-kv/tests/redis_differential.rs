//! granola-kv against a real Redis 7 (Debian's redis-server, installed by
//! the README's test command): the same commands to both, the replies
//! compared byte for byte. Bitmaps first: hand-picked edge cases, then a
//! seeded random mix of SETBIT, BITFIELD, BITCOUNT, BITPOS and BITOP over
//! a few keys, so any difference in bit order, growth, ranges or overflow
//! shows.

mod common;

use common::*;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server child, killed on drop.
struct Redis {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts redis-server without persistence on a free port; `None` (a
/// skip, said on stdout) when it is not installed, unless the test command
/// installed it (`GRANOLA_REQUIRE_PEERS`), where that is a failure.
fn redis() -> Option<Redis> {
    let Some(path) = ["/usr/bin/redis-server", "/usr/local/bin/redis-server"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        assert!(
            std::env::var_os("GRANOLA_REQUIRE_PEERS").is_none(),
            "redis-server not installed but GRANOLA_REQUIRE_PEERS is set"
        );
        println!("skipped: redis-server not installed (run bench/setup.sh)");
        return None;
    };
    for _ in 0..5 {
        let port = granola_tests::ports::free_tcp_udp_port();
        let child = Command::new(path)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start redis-server");
        let r = Redis {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(s) = std::net::TcpStream::connect(r.addr) {
                drop(s);
                let mut c = Client::connect(r.addr);
                if c.resp(&["PING"]) == Resp::Simple(b"PONG".to_vec()) {
                    return Some(r);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("redis-server did not start");
}

/// Sends `cmd` to both and checks the raw replies are the same bytes.
fn same(redis: &mut Client, granola: &mut Client, cmd: &[String]) {
    let want = redis.resp(cmd);
    let got = granola.resp(cmd);
    assert_eq!(got, want, "{cmd:?}");
}

fn cmd(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

#[test]
fn bitmaps_answer_as_redis_does() {
    let Some(peer) = redis() else {
        return;
    };
    let srv = Server::default_config();
    let (mut r, mut g) = (Client::connect(peer.addr), Client::connect(srv.resp()));
    for c in [
        &["SETBIT", "b", "7", "1"][..],
        &["SETBIT", "b", "7", "1"],
        &["SETBIT", "b", "100", "1"],
        &["GET", "b"],
        &["GETBIT", "b", "7"],
        &["GETBIT", "b", "1000"],
        &["GETBIT", "none", "0"],
        &["SETBIT", "b", "-1", "1"],
        &["SETBIT", "b", "4294967296", "1"],
        &["SETBIT", "b", "1", "2"],
        &["BITCOUNT", "b"],
        &["BITCOUNT", "b", "0", "0"],
        &["BITCOUNT", "b", "1", "-1"],
        &["BITCOUNT", "b", "-2", "-1"],
        &["BITCOUNT", "b", "5", "100", "BIT"],
        &["BITCOUNT", "b", "0"],
        &["BITCOUNT", "b", "0", "1", "WORD"],
        &["BITCOUNT", "none"],
        &["BITPOS", "b", "1"],
        &["BITPOS", "b", "0"],
        &["BITPOS", "b", "1", "1"],
        &["BITPOS", "b", "1", "2", "-1"],
        &["BITPOS", "b", "1", "8", "20", "BIT"],
        &["BITPOS", "b", "2"],
        &["BITPOS", "none", "0"],
        &["BITPOS", "none", "1"],
        &["SET", "ones", "\u{7f}"],
        &["BITPOS", "ones", "1"],
        &["SET", "full", "ab"],
        &["BITOP", "AND", "dst", "b", "full"],
        &["GET", "dst"],
        &["BITOP", "OR", "dst", "b", "full", "none"],
        &["GET", "dst"],
        &["BITOP", "XOR", "dst", "full", "b"],
        &["GET", "dst"],
        &["BITOP", "NOT", "dst", "full"],
        &["GET", "dst"],
        &["BITOP", "NOT", "dst", "full", "b"],
        &["BITOP", "NAND", "dst", "full"],
        &["BITOP", "AND", "dst", "none", "none2"],
        &["EXISTS", "dst"],
        &[
            "BITFIELD", "f", "SET", "i8", "0", "-100", "GET", "u4", "0", "GET", "i8", "0",
        ],
        &["BITFIELD", "f", "INCRBY", "i8", "0", "-100"],
        &[
            "BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-100",
        ],
        &[
            "BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "-100", "GET", "i8", "0",
        ],
        &[
            "BITFIELD", "f", "SET", "u8", "#3", "255", "INCRBY", "u8", "#3", "10", "GET", "u8",
            "24",
        ],
        &[
            "BITFIELD", "f", "OVERFLOW", "SAT", "SET", "u3", "5", "100", "GET", "u3", "5",
        ],
        &[
            "BITFIELD", "f", "SET", "i64", "100", "-1", "GET", "i64", "100", "GET", "u63", "101",
        ],
        &[
            "BITFIELD",
            "f",
            "INCRBY",
            "i64",
            "100",
            "-9223372036854775807",
        ],
        &["BITFIELD", "f", "GET", "u64", "0"],
        &["BITFIELD", "f", "GET", "i65", "0"],
        &["BITFIELD", "f", "GET", "i8", "-1"],
        &["BITFIELD", "f", "OVERFLOW", "WHAT"],
        &["BITFIELD", "f", "GET", "i8"],
        &["BITFIELD", "f", "BOGUS", "i8", "0"],
        &["BITFIELD", "new", "GET", "u8", "0"],
        &["EXISTS", "new"],
        &["BITFIELD_RO", "f", "GET", "u8", "0", "GET", "i5", "3"],
        &["BITFIELD_RO", "f", "SET", "u8", "0", "1"],
        &["GET", "f"],
        &["LPUSH", "list", "x"],
        &["SETBIT", "list", "0", "1"],
        &["GETBIT", "list", "0"],
        &["BITCOUNT", "list"],
        &["BITFIELD", "list", "GET", "u8", "0"],
    ] {
        same(&mut r, &mut g, &cmd(c));
    }
}

#[test]
fn random_bitmap_commands_answer_as_redis_does() {
    let Some(peer) = redis() else {
        return;
    };
    let srv = Server::default_config();
    let (mut r, mut g) = (Client::connect(peer.addr), Client::connect(srv.resp()));
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let keys = ["k0", "k1", "k2"];
    for _ in 0..3000 {
        let key = keys[next(3) as usize].to_string();
        let signed = next(2) == 0;
        let width = if signed { 1 + next(64) } else { 1 + next(63) };
        let ty = format!("{}{width}", if signed { "i" } else { "u" });
        let off = next(300).to_string();
        let val = (next(1 << 40) as i64 - (1 << 39)).to_string();
        let c: Vec<String> = match next(8) {
            0 => vec!["SETBIT".into(), key, off, next(2).to_string()],
            1 => vec!["GETBIT".into(), key, off],
            2 => {
                let mode = ["BYTE", "BIT"][next(2) as usize];
                let a = (next(80) as i64 - 40).to_string();
                let b = (next(80) as i64 - 40).to_string();
                vec!["BITCOUNT".into(), key, a, b, mode.into()]
            }
            3 => {
                let mut c = vec!["BITPOS".into(), key, next(2).to_string()];
                match next(3) {
                    0 => {}
                    1 => c.push((next(40) as i64 - 20).to_string()),
                    _ => {
                        c.push((next(40) as i64 - 20).to_string());
                        c.push((next(40) as i64 - 20).to_string());
                        c.push(["BYTE", "BIT"][next(2) as usize].into());
                    }
                }
                c
            }
            4 => {
                let op = ["AND", "OR", "XOR"][next(3) as usize];
                let dst = keys[next(3) as usize];
                vec![
                    "BITOP".into(),
                    op.into(),
                    dst.into(),
                    key,
                    keys[next(3) as usize].into(),
                ]
            }
            _ => {
                let overflow = ["WRAP", "SAT", "FAIL"][next(3) as usize];
                let op = ["GET", "SET", "INCRBY"][next(3) as usize];
                let mut c = vec!["BITFIELD".into(), key, "OVERFLOW".into(), overflow.into()];
                c.extend([op.to_string(), ty, off]);
                if op != "GET" {
                    c.push(val);
                }
                c
            }
        };
        same(&mut r, &mut g, &c);
        // The values too, after every write: a difference shows at once.
        for key in keys {
            let get = cmd(&["GET", key]);
            assert_eq!(g.resp(&get), r.resp(&get), "{key} after {c:?}");
        }
    }
    for key in keys {
        same(&mut r, &mut g, &cmd(&["GET", key]));
    }
}

#[test]
fn script_replies_convert_as_in_redis() {
    let Some(peer) = redis() else {
        return;
    };
    let srv = Server::default_config();
    let (mut r, mut g) = (Client::connect(peer.addr), Client::connect(srv.resp()));
    for c in [
        &["RPUSH", "l", "a", "b", "c"][..],
        &["HSET", "h", "f", "v"],
        &[
            "EVAL",
            "return {1, 2.9, -3.5, 'x', true, false, {'n', {}}, nil, 'after nil'}",
            "0",
        ],
        &[
            "EVAL",
            "return redis.call('LRANGE', KEYS[1], 0, -1)",
            "1",
            "l",
        ],
        &["EVAL", "return redis.call('HGETALL', KEYS[1])", "1", "h"],
        &["EVAL", "return redis.call('GET', 'missing')", "0"],
        &["EVAL", "return type(redis.call('GET', 'missing'))", "0"],
        &["EVAL", "return redis.call('SET', 'k', 'v')", "0"],
        &["EVAL", "return redis.call('SET', 'k', 'v').ok", "0"],
        &["EVAL", "return redis.pcall('LPUSH', 'k', 'x')['err']", "0"],
        &[
            "EVAL",
            "return redis.call('INCRBY', 'n', ARGV[1])",
            "0",
            "41",
        ],
        &[
            "EVAL",
            "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}",
            "2",
            "a",
            "b",
            "c",
            "d",
        ],
        &["EVAL", "return redis.status_reply('DONE')", "0"],
        &["EVAL", "return redis.error_reply('CUSTOM failure')", "0"],
        &["EVAL", "return redis.sha1hex('granola')", "0"],
        &["EVAL", "return tostring(1e15) .. ' ' .. tostring(0.1)", "0"],
        &["EVAL", "return string.format('%d-%s', 7, 'x')", "0"],
        &["EVAL", "return math.floor(7.9) + #'four'", "0"],
        &["EVAL", "return table.concat({'a', 'b'}, ',')", "0"],
        &[
            "EVAL",
            "redis.call('SET', 'num', 3.0) return redis.call('GET', 'num')",
            "0",
        ],
        &["SCRIPT", "LOAD", "return 'loaded'"],
        &["EVALSHA", "b534286061d4b9e4026607613b95c06c06015ae8", "0"],
        &[
            "SCRIPT",
            "EXISTS",
            "b534286061d4b9e4026607613b95c06c06015ae8",
            "ffffffffffffffffffffffffffffffffffffffff",
        ],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        &["EVAL", "return 1", "-1"],
        &["EVAL", "return 1", "3", "a"],
    ] {
        same(&mut r, &mut g, &cmd(c));
    }
}
