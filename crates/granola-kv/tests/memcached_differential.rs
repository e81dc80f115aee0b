//! granola-kv's memcached text and meta protocols against a real memcached
//! 1.6 (Debian's, which the test command installs): random commands on a
//! few keys, each followed by `mn` so the replies of every command (none
//! for `noreply` and quiet modes) come back as one block, compared byte for
//! byte. CAS values are each server's own: a reply's are masked, and a
//! command that names one (`cas`, `C` flags) gets the value that server
//! last reported for the key. No TTLs that could run out mid-test: an
//! expiry is 0, far off, or negative (gone at once).
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
