//! granola-kv's memcached text, meta and binary protocols against a real
//! memcached 1.6 (Debian's, which the test command installs). Text and
//! meta: random commands on a
//! few keys, each followed by `mn` so the replies of every command (none
//! for `noreply` and quiet modes) come back as one block, compared byte for
//! byte. CAS values are each server's own: a reply's are masked, and a
//! command that names one (`cas`, `C` flags) gets the value that server
//! last reported for the key. No TTLs that could run out mid-test: an
//! expiry is 0, far off, or negative (gone at once). Binary: random
//! requests, each followed by a no-op, every response up to the no-op's
//! compared.
//!
//! `GRANOLA_DIFF_SEED` mixes a seed into the run, for longer hunts by hand.

mod common;

use common::*;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Memcached {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A memcached on a free port (`None`, said on stdout, if none is
/// installed, unless `GRANOLA_REQUIRE_PEERS` is set).
fn memcached() -> Option<Memcached> {
    let Some(path) = ["/usr/bin/memcached", "/usr/local/bin/memcached"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        assert!(
            std::env::var_os("GRANOLA_REQUIRE_PEERS").is_none(),
            "memcached not installed but GRANOLA_REQUIRE_PEERS is set"
        );
        println!("skipped: memcached not installed (run bench/setup.sh)");
        return None;
    };
    for _ in 0..5 {
        let port = granola_tests::ports::free_tcp_udp_port();
        let child = Command::new(path)
            .args(["-p", &port.to_string(), "-U", "0", "-l", "127.0.0.1"])
            .args(["-m", "64", "-t", "1", "-u", "root"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start memcached");
        let m = Memcached {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if std::net::TcpStream::connect(m.addr).is_ok() {
                return Some(m);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("memcached did not start");
}

/// One server's side: its connection and the CAS it last reported per key.
struct Side {
    c: Client,
    cas: HashMap<String, String>,
}

impl Side {
    /// Sends `cmd` (with `{CAS:key}` replaced by this server's CAS for
    /// `key`) and `mn`; the replies before `MN`, CAS values masked.
    fn run(&mut self, cmd: &str) -> String {
        let mut text = cmd.to_string();
        while let Some(i) = text.find("{CAS:") {
            let end = i + text[i..].find('}').expect("closed");
            let key = &text[i + 5..end];
            let cas = self
                .cas
                .get(key)
                .cloned()
                .unwrap_or_else(|| "999999".into());
            text.replace_range(i..=end, &cas);
        }
        self.c.send(text.as_bytes());
        self.c.send(b"mn\r\n");
        let block = self.c.read_until(b"MN\r\n");
        let block = String::from_utf8_lossy(&block[..block.len() - 4]).into_owned();
        self.c.send(b"mn\r\n");
        let again = self.c.read_until(b"MN\r\n");
        assert_eq!(again, b"MN\r\n", "in step after {cmd:?}: {block:?}");
        self.mask(&block)
    }

    /// Rewrites `key`'s value as a fresh item after an incr/decr, on both
    /// servers alike. memcached writes a result that fits over the old item
    /// in place (a shorter number padded with spaces; the item's stale and
    /// base64-key marks kept) but makes a new item (unpadded, unmarked)
    /// when a reply still holds the old one, so what it leaves depends on
    /// timing; granola-kv never pads and keeps the marks. The new CAS is
    /// noted, the flags kept; TTLs are never read back here.
    fn settle(&mut self, key: &str) {
        self.c.send(format!("mg {key} v f\r\nmn\r\n").as_bytes());
        let block = self.c.read_until(b"MN\r\n");
        let text = String::from_utf8_lossy(&block).into_owned();
        let mut lines = text.split("\r\n");
        let (Some(head), Some(data)) = (lines.next(), lines.next()) else {
            return;
        };
        let trimmed = data.trim_end_matches(' ');
        if !head.starts_with("VA ") {
            return;
        }
        let flags = head.split(' ').find(|w| w.starts_with('f')).unwrap_or("f0");
        let set = format!(
            "ms {key} {} F{} T100000 k c\r\n{trimmed}\r\n",
            trimmed.len(),
            &flags[1..]
        );
        self.c.send(set.as_bytes());
        self.c.send(b"mn\r\n");
        let reply = self.c.read_until(b"MN\r\n");
        let reply = String::from_utf8_lossy(&reply[..reply.len() - 4]).into_owned();
        assert!(reply.starts_with("HD"), "settling {key}: {reply:?}");
        self.mask(&reply);
    }

    /// Notes `key`'s CAS as the server has it now.
    fn note_cas(&mut self, key: &str) {
        self.c.send(format!("mg {key} k c\r\nmn\r\n").as_bytes());
        let block = self.c.read_until(b"MN\r\n");
        self.mask(&String::from_utf8_lossy(&block));
    }

    /// `block` with its CAS values masked, noting them per key.
    fn mask(&mut self, block: &str) -> String {
        let mut out = String::new();
        for line in block.split_inclusive("\r\n") {
            let words: Vec<&str> = line.trim_end().split(' ').collect();
            match words[..] {
                // gets/gats: VALUE key flags bytes cas
                ["VALUE", key, flags, bytes, cas] => {
                    self.cas.insert(key.to_string(), cas.to_string());
                    out.push_str(&format!("VALUE {key} {flags} {bytes} C\r\n"));
                }
                // Meta replies: a code, maybe a size, then flags; c<cas>
                // with k<key> when asked for both.
                [code, ..] if ["HD", "VA", "EN", "NF", "NS", "EX"].contains(&code) => {
                    // The test's base64 keys are its plain ones encoded.
                    let key = words
                        .iter()
                        .find_map(|w| w.strip_prefix('k'))
                        .map(|k| match k {
                            "YQ==" => "a",
                            "Yg==" => "b",
                            "Yw==" => "c",
                            k => k,
                        });
                    let masked: Vec<String> = words
                        .iter()
                        .map(|w| match w.strip_prefix('c') {
                            Some(cas)
                                if cas.bytes().all(|b| b.is_ascii_digit()) && !cas.is_empty() =>
                            {
                                if let Some(k) = key {
                                    self.cas.insert(k.to_string(), cas.to_string());
                                }
                                "c".to_string()
                            }
                            _ => w.to_string(),
                        })
                        .collect();
                    out.push_str(&masked.join(" "));
                    out.push_str("\r\n");
                }
                _ => out.push_str(line),
            }
        }
        out
    }
}

#[test]
fn random_text_and_meta_commands_answer_as_memcached_does() {
    let Some(mc) = memcached() else {
        return;
    };
    let srv = Server::default_config();
    let mut m = Side {
        c: Client::connect(mc.addr),
        cas: HashMap::new(),
    };
    let mut g = Side {
        c: Client::connect(srv.mc()),
        cas: HashMap::new(),
    };
    let mut rng = Rng::seeded(0x6d65_6d63_6163_6865);
    let keys = ["a", "b", "c"];
    // Numbers stay below 2^63: memcached reads a larger one by looking for a
    // '-' past the number's end, through whatever memory follows the item,
    // so its answer there depends on its heap (granola-kv reads the number).
    let values = ["", "1", "x", "hello", "4294967296000", "-3", "0"];
    let exps = ["0", "0", "100000", "-1"];
    for _ in 0..3000 {
        let k = rng.pick(&keys);
        let v = rng.pick(&values);
        let e = rng.pick(&exps);
        let f = rng.pick(&["0", "5", "4294967295"]);
        let nr = if rng.n(6) == 0 { " noreply" } else { "" };
        let cmd = match rng.n(24) {
            0..=2 => format!(
                "{} {k} {f} {e} {}{nr}\r\n{v}\r\n",
                rng.pick(&["set", "add", "replace", "append", "prepend"]),
                v.len()
            ),
            3 => format!("cas {k} {f} {e} {} {{CAS:{k}}}{nr}\r\n{v}\r\n", v.len()),
            4 => format!("cas {k} {f} {e} {} 999999999{nr}\r\n{v}\r\n", v.len()),
            5 => format!("get {k} {}\r\n", rng.pick(&keys)),
            6 => format!("gets {k}\r\n"),
            7 => format!("delete {k}{nr}\r\n"),
            8 => format!(
                "{} {k} {}{nr}\r\n",
                rng.pick(&["incr", "decr"]),
                rng.pick(&["1", "0", "4294967296", "x", "-1"])
            ),
            9 => format!("touch {k} {e}{nr}\r\n"),
            10 => format!("{} 0 {k}\r\n", rng.pick(&["gat", "gats"])),
            11 => format!(
                "mg {k} {}\r\n",
                rng.pick(&[
                    "v",
                    "v f",
                    "s v",
                    "k v c",
                    "f",
                    "O123 q",
                    "q v",
                    "k",
                    "c",
                    "v N0",
                    "h v",
                    "h",
                    "v T100000",
                ])
            ),
            12 | 13 => format!(
                "ms {k} {} {}\r\n{v}\r\n",
                v.len(),
                rng.pick(&[
                    "",
                    "F7",
                    "T0",
                    "MA",
                    "MP",
                    "ME",
                    "MR",
                    "MS",
                    "q",
                    "I",
                    "k c",
                    "O9",
                    "C{CAS:k}",
                    "C999999999",
                    "T-1",
                    "MZ",
                ])
                .replace("{CAS:k}", &format!("{{CAS:{k}}}"))
            ),
            14 => format!(
                "md {k}{}\r\n",
                rng.pick(&["", " q", " I", " C{CAS:k}", " C999999999", " O5 k"])
                    .replace("{CAS:k}", &format!("{{CAS:{k}}}"))
            ),
            15 | 16 => format!(
                "ma {k}{}\r\n",
                rng.pick(&[
                    "",
                    " v",
                    " MD v",
                    " N0 J13 v",
                    " D5 v",
                    " q",
                    " MI D4294967296 v",
                    " Mx",
                    " Dx",
                    " N0",
                    " k c",
                ])
            ),
            17 => format!("gats 100000 {k} {}\r\n", rng.pick(&keys)),
            18 => format!("get {k} {k}\r\n"),
            19 => format!("flush_all{nr}\r\n"),
            20 => format!("verbosity 1{nr}\r\n"),
            21 => {
                // The key base64-encoded (`b`): "a" "b" "c".
                let b64 = match k.as_str() {
                    "a" => "YQ==",
                    "b" => "Yg==",
                    _ => "Yw==",
                };
                match rng.n(4) {
                    0 => format!("mg {b64} b v k\r\n"),
                    1 => format!("ms {b64} 1 b k c\r\n7\r\n"),
                    2 => format!("md {b64} b q\r\n"),
                    _ => format!("ma {b64} b v\r\n"),
                }
            }
            22 => format!("set {k} {f} {e} x\r\n"),
            _ => format!("gets {k} {}\r\n", rng.pick(&keys)),
        };
        let want = m.run(&cmd);
        let got = g.run(&cmd);
        if ["incr", "decr", "ma "].iter().any(|a| cmd.starts_with(a)) {
            // Each side's CAS as it is now (a counter's change reports
            // none), after what memcached left to chance is settled.
            let key = match cmd.split_whitespace().nth(1).expect("a key") {
                "YQ==" => "a",
                "Yg==" => "b",
                "Yw==" => "c",
                k => k,
            };
            m.settle(key);
            g.settle(key);
            m.note_cas(key);
            g.note_cas(key);
        }
        assert_eq!(got, want, "{cmd:?}");
    }
}

/// A binary-protocol request (magic 0x80).
fn bin_request(op: u8, key: &[u8], extras: &[u8], value: &[u8], cas: u64, opaque: u32) -> Vec<u8> {
    let body = extras.len() + key.len() + value.len();
    let mut f = vec![0x80, op];
    f.extend_from_slice(&(key.len() as u16).to_be_bytes());
    f.push(extras.len() as u8);
    f.extend_from_slice(&[0, 0, 0]); // data type, vbucket
    f.extend_from_slice(&(body as u32).to_be_bytes());
    f.extend_from_slice(&opaque.to_be_bytes());
    f.extend_from_slice(&cas.to_be_bytes());
    f.extend_from_slice(extras);
    f.extend_from_slice(key);
    f.extend_from_slice(value);
    f
}

/// One binary response, its CAS reduced to whether it is set (each
/// server counts its own).
#[derive(Debug, PartialEq)]
struct BinReply {
    op: u8,
    status: u16,
    opaque: u32,
    extras: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
    cas_set: bool,
}

const NOOP: u8 = 0x0a;
const END_OPAQUE: u32 = 0xffff_ffff;

/// One server's binary connection and the CAS it last reported per key.
struct BinSide {
    c: Client,
    cas: HashMap<Vec<u8>, u64>,
}

impl BinSide {
    /// Sends `req` then a no-op, and reads every response up to the
    /// no-op's (quiet requests answer only some outcomes).
    fn run(&mut self, req: &[u8], key: &[u8]) -> Vec<BinReply> {
        self.c.send(req);
        self.c
            .send(&bin_request(NOOP, b"", b"", b"", 0, END_OPAQUE));
        let mut out = Vec::new();
        loop {
            let h = self.c.read_n(24);
            assert_eq!(h[0], 0x81, "response magic: {h:?}");
            let key_len = u16::from_be_bytes([h[2], h[3]]) as usize;
            let extras_len = h[4] as usize;
            let body = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
            let opaque = u32::from_be_bytes([h[12], h[13], h[14], h[15]]);
            let cas = u64::from_be_bytes(h[16..24].try_into().unwrap());
            let b = self.c.read_n(body);
            let r = BinReply {
                op: h[1],
                status: u16::from_be_bytes([h[6], h[7]]),
                opaque,
                extras: b[..extras_len].to_vec(),
                key: b[extras_len..extras_len + key_len].to_vec(),
                value: b[extras_len + key_len..].to_vec(),
                cas_set: cas != 0,
            };
            if r.op == NOOP && r.opaque == END_OPAQUE {
                return out;
            }
            if r.status == 0 && cas != 0 {
                self.cas.insert(key.to_vec(), cas);
            }
            out.push(r);
        }
    }

    /// After an incr/decr: the number rewritten as a fresh item, as
    /// [`Side::settle`] does for the text protocol (memcached pads a
    /// shorter result written in place, depending on timing).
    fn settle(&mut self, key: &[u8]) {
        let got = self.run(&bin_request(0x00, key, b"", b"", 0, 1), key);
        if let Some(r) = got.first().filter(|r| r.status == 0) {
            let n = String::from_utf8_lossy(&r.value).trim_end().to_string();
            let mut extras = r.extras.clone();
            extras.extend_from_slice(&0u32.to_be_bytes());
            self.run(&bin_request(0x01, key, &extras, n.as_bytes(), 0, 1), key);
        }
    }
}

/// The binary protocol against memcached's: random get/getk/gat/gatk,
/// set/add/replace (with and without CAS), append/prepend, delete,
/// incr/decr (initial values, no-create), touch, noop, flush and their
/// quiet forms on a few keys, every response compared (status,
/// extras, key, value, error text, opaque), CAS values each server's own.
#[test]
fn random_binary_commands_answer_as_memcached_does() {
    let Some(mc) = memcached() else {
        return;
    };
    let srv = Server::default_config();
    let mut m = BinSide {
        c: Client::connect(mc.addr),
        cas: HashMap::new(),
    };
    let mut g = BinSide {
        c: Client::connect(srv.mc()),
        cas: HashMap::new(),
    };
    let mut rng = Rng::seeded(0x6269_6e61_7279_2121);
    let keys = ["a", "b", "c"];
    let values = ["", "1", "x", "hello", "4294967296000", "0"];
    for step in 0..3000u32 {
        let k = rng.pick(&keys);
        let key = k.as_bytes();
        let v = rng.pick(&values);
        let flags: u32 = [0, 5, u32::MAX][rng.n(3) as usize];
        let exp: u32 = [0, 0, 100_000][rng.n(3) as usize];
        let storage = |flags: u32, exp: u32| {
            let mut e = flags.to_be_bytes().to_vec();
            e.extend_from_slice(&exp.to_be_bytes());
            e
        };
        // Quiet forms: get 0x09/0x0d, set 0x11.., incr 0x15, gat 0x1e/0x24.
        let quiet = rng.n(4) == 0;
        // No verbosity: memcached 1.6.18 leaves a binary VERBOSITY
        // unanswered and answers nothing after it on that connection.
        let (op, extras, value, cas): (u8, Vec<u8>, Vec<u8>, u64) = match rng.n(13) {
            0..=2 => {
                let op = [0x01, 0x02, 0x03][rng.n(3) as usize];
                let op = if quiet { op + 0x10 } else { op };
                let cas = match rng.n(4) {
                    0 => m.cas.get(key).copied().unwrap_or(999_999),
                    1 => 999_999_999,
                    _ => 0,
                };
                (op, storage(flags, exp), v.clone().into_bytes(), cas)
            }
            3 => {
                let op = [0x0e, 0x0f][rng.n(2) as usize];
                let op = if quiet { op + 0x0b } else { op };
                (op, vec![], v.clone().into_bytes(), 0)
            }
            4..=5 => {
                let op = [0x00, 0x0c][rng.n(2) as usize];
                let op = match (quiet, op) {
                    (true, 0x00) => 0x09,
                    (true, _) => 0x0d,
                    (false, op) => op,
                };
                (op, vec![], vec![], 0)
            }
            6 => (if quiet { 0x14 } else { 0x04 }, vec![], vec![], 0),
            7..=8 => {
                let op = [0x05, 0x06][rng.n(2) as usize];
                let op = if quiet { op + 0x10 } else { op };
                let delta: u64 = [1, 0, 4_294_967_296][rng.n(3) as usize];
                let initial: u64 = [0, 10][rng.n(2) as usize];
                // u32::MAX: fail rather than create.
                let exp: u32 = [0, u32::MAX, 100_000][rng.n(3) as usize];
                let mut e = delta.to_be_bytes().to_vec();
                e.extend_from_slice(&initial.to_be_bytes());
                e.extend_from_slice(&exp.to_be_bytes());
                (op, e, vec![], 0)
            }
            9 => (0x1c, exp.to_be_bytes().to_vec(), vec![], 0),
            10 => {
                let op = [0x1d, 0x23][rng.n(2) as usize];
                let op = match (quiet, op) {
                    (true, 0x1d) => 0x1e,
                    (true, _) => 0x24,
                    (false, op) => op,
                };
                (op, exp.to_be_bytes().to_vec(), vec![], 0)
            }
            11 => (0x0a, vec![], vec![], 0),
            _ => {
                let op = if quiet { 0x18 } else { 0x08 };
                (op, vec![], vec![], 0)
            }
        };
        // The no-op, flush and verbosity take no key.
        let key_sent: &[u8] = if matches!(op, 0x0a | 0x08 | 0x18) {
            b""
        } else {
            key
        };
        let cas_for = |side: &BinSide| match cas {
            999_999_999 | 0 => cas,
            _ => side.cas.get(key).copied().unwrap_or(999_999),
        };
        let want = m.run(
            &bin_request(op, key_sent, &extras, &value, cas_for(&m), step),
            key,
        );
        let got = g.run(
            &bin_request(op, key_sent, &extras, &value, cas_for(&g), step),
            key,
        );
        if matches!(op, 0x05 | 0x06 | 0x15 | 0x16) {
            m.settle(key);
            g.settle(key);
        }
        assert_eq!(
            got, want,
            "op {op:#04x} key {k} extras {extras:?} value {v:?} cas {cas}"
        );
    }
}
