//! Many client threads on overlapping keys, every reply checked byte for
//! byte: no torn value (bytes of two writes mixed), no recycled value (a
//! slot reused under a reply still in flight) is ever observed.
//!
//! Every stored byte string is a concatenation of *records*:
//!
//! ```text
//!   "GRNL" | key u32 | writer u32 | version u32 | len u32 | payload (len) | fnv64
//! ```
//!
//! where the payload is `pattern(key, writer, version)` and the checksum
//! covers everything before it. A SET stores one record, an APPEND adds
//! one, a list element is one. A reader re-derives each record's payload
//! from its header, so any byte out of place fails the test and says where.

mod common;

use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const MAGIC: &[u8; 4] = b"GRNL";
const HEAD: usize = 20;
const TAIL: usize = 8;
/// Keys shared by all threads.
const KEYS: u32 = 12;
const THREADS: u32 = 8;
const OPS: usize = 1200;

/// A checksum over 8-byte words (fast in unoptimised builds; any byte out
/// of place changes it).
fn fnv64(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        h ^= u64::from_le_bytes(w.try_into().unwrap());
        h = h.wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }
    for &x in words.remainder() {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn seed(key: u32, writer: u32, version: u32) -> u64 {
    (u64::from(key) << 48) ^ (u64::from(writer) << 32) ^ u64::from(version)
}

fn record(key: u32, writer: u32, version: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEAD + len + TAIL);
    v.extend_from_slice(MAGIC);
    for x in [key, writer, version, len as u32] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&pattern(seed(key, writer, version), len));
    let sum = fnv64(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

/// Checks that `bytes` is a sequence of whole, intact records of `key`;
/// returns how many.
fn check_records(bytes: &[u8], key: u32, what: &str) -> usize {
    let mut at = 0;
    let mut n = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        let fail = |why: &str| -> ! {
            panic!(
                "{what}: record {n} at offset {at} of {} bytes: {why}; bytes there: {}",
                bytes.len(),
                show(&rest[..rest.len().min(64)])
            )
        };
        if rest.len() < HEAD + TAIL || &rest[..4] != MAGIC {
            fail("no record header");
        }
        let word = |i: usize| u32::from_le_bytes(rest[4 + 4 * i..8 + 4 * i].try_into().unwrap());
        let (k, writer, version, len) = (word(0), word(1), word(2), word(3) as usize);
        if k != key {
            fail(&format!("record of key {k}, read as key {key}"));
        }
        if rest.len() < HEAD + len + TAIL {
            fail("truncated");
        }
        let payload = &rest[HEAD..HEAD + len];
        if payload != pattern(seed(k, writer, version), len).as_slice() {
            fail(&format!(
                "payload of (writer {writer}, version {version}) damaged"
            ));
        }
        let sum = u64::from_le_bytes(rest[HEAD + len..HEAD + len + TAIL].try_into().unwrap());
        if sum != fnv64(&rest[..HEAD + len]) {
            fail("checksum");
        }
        at += HEAD + len + TAIL;
        n += 1;
    }
    n
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Value sizes: small (copied) and at/above the 1024-byte copy threshold
/// (referenced by the reply while writers replace them).
const SIZES: [usize; 8] = [0, 10, 100, 996, 1024, 3000, 16 << 10, 100 << 10];

fn key_id(name: &[u8]) -> u32 {
    std::str::from_utf8(&name[1..]).unwrap().parse().unwrap()
}

/// Reads a `get`/`gets` reply for any keys and checks every value.
fn read_mc_values(c: &mut Client, what: &str) -> usize {
    let mut hits = 0;
    loop {
        let line = c.read_line();
        if line == b"END\r\n" {
            return hits;
        }
        let text = std::str::from_utf8(&line).unwrap().trim_end().to_string();
        let parts: Vec<&str> = text.split(' ').collect();
        assert!(parts.len() >= 4 && parts[0] == "VALUE", "{what}: {text:?}");
        let len: usize = parts[3].parse().unwrap();
        let v = c.read_n(len + 2);
        assert_eq!(&v[len..], b"\r\n", "{what}: value not followed by CRLF");
        check_records(&v[..len], key_id(parts[1].as_bytes()), what);
        hits += 1;
    }
}

fn mc_worker(t: u32, mc: &mut Client, resp: &mut Client, stats: &Counters) {
    let mut rng = Rng(0x1234_5678 + u64::from(t) * 0x9E37);
    let mut version = 0u32;
    for op in 0..OPS {
        version += 1;
        let key = rng.below(u64::from(KEYS)) as u32;
        let size = SIZES[rng.below(SIZES.len() as u64) as usize];
        let what = format!("thread {t} op {op}");
        match rng.below(10) {
            0..=2 => {
                let cmd = mc_set_cmd(
                    format!("k{key}").as_bytes(),
                    t,
                    &record(key, t, version, size),
                );
                mc.roundtrip(&cmd, b"STORED\r\n");
            }
            3..=4 => {
                let rec = record(key, t, version, size);
                let mut cmd = format!("append k{key} 0 0 {}\r\n", rec.len()).into_bytes();
                cmd.extend_from_slice(&rec);
                cmd.extend_from_slice(b"\r\n");
                mc.send(&cmd);
                let line = mc.read_line();
                assert!(
                    line == b"STORED\r\n"
                        || line == b"NOT_STORED\r\n"
                        || line == b"SERVER_ERROR object too large for cache\r\n",
                    "{what}: append: {}",
                    show(&line)
                );
                if line != b"STORED\r\n" {
                    // Missing or full: start over with a set.
                    let cmd = mc_set_cmd(format!("k{key}").as_bytes(), t, &rec);
                    mc.roundtrip(&cmd, b"STORED\r\n");
                }
            }
            5..=6 => {
                // Pipelined: a multi-key get and two single gets, one write.
                let (a, b) = (rng.below(u64::from(KEYS)), rng.below(u64::from(KEYS)));
                mc.send(format!("get k{key} k{a} k{b}\r\ngets k{a}\r\nget k{b}\r\n").as_bytes());
                let hits = (0..3).map(|_| read_mc_values(mc, &what)).sum::<usize>();
                stats.gets.fetch_add(hits as u64, Ordering::Relaxed);
            }
            7 => {
                // The same keys through RESP: SET or GET.
                if rng.below(2) == 0 {
                    let v = record(key, t, version, size);
                    let r = resp.resp(&[b"SET".to_vec(), format!("k{key}").into_bytes(), v]);
                    assert_eq!(r, Resp::Simple(b"OK".to_vec()), "{what}: SET");
                } else {
                    match resp.resp(&["GET".to_string(), format!("k{key}")]) {
                        Resp::Bulk(Some(v)) => {
                            check_records(&v, key, &what);
                            stats.gets.fetch_add(1, Ordering::Relaxed);
                        }
                        Resp::Bulk(None) => {}
                        r => panic!("{what}: GET: {r:?}"),
                    }
                }
            }
            8 => {
                // Lists: elements up to 3000 bytes, trimmed by DEL.
                let v = record(key, t, version, size.min(3000));
                match resp.resp(&[b"RPUSH".to_vec(), format!("l{key}").into_bytes(), v]) {
                    Resp::Int(n) if n >= 1 => {
                        if n > 40 {
                            resp.resp(&["DEL".to_string(), format!("l{key}")]);
                        }
                    }
                    r => panic!("{what}: RPUSH: {r:?}"),
                }
            }
            _ => match resp.resp(&[
                "LRANGE".to_string(),
                format!("l{key}"),
                "0".into(),
                "-1".into(),
            ]) {
                Resp::Array(Some(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        let Resp::Bulk(Some(v)) = item else {
                            panic!("{what}: LRANGE element {i}: {item:?}");
                        };
                        assert_eq!(
                            check_records(v, key, &what),
                            1,
                            "{what}: one record per element"
                        );
                    }
                    stats.gets.fetch_add(items.len() as u64, Ordering::Relaxed);
                }
                r => panic!("{what}: LRANGE: {r:?}"),
            },
        }
    }
}

#[derive(Default)]
struct Counters {
    gets: AtomicU64,
}

#[test]
fn overlapping_writers_and_readers_see_only_whole_values() {
    let srv = Server::default_config();
    let counters = Arc::new(Counters::default());
    let (mc_addr, resp_addr) = (srv.mc(), srv.resp());
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let counters = counters.clone();
            std::thread::spawn(move || {
                let mut mc = Client::connect(mc_addr);
                let mut resp = Client::connect(resp_addr);
                mc_worker(t, &mut mc, &mut resp, &counters);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    // Every key, once more, after the dust settles.
    let mut c = Client::connect(mc_addr);
    for key in 0..KEYS {
        c.send(format!("get k{key}\r\n").as_bytes());
        read_mc_values(&mut c, &format!("final k{key}"));
    }
    let reads = counters.gets.load(Ordering::Relaxed);
    assert!(reads > 1000, "only {reads} values read");
    // Large values went by reference.
    wait_referenced(&srv, 1);
}

/// Readers that pipeline many GETs of large values and read their replies
/// late (so the server's TX queue holds references to the values, blocked
/// on a full socket), while writers replace those very values as fast as
/// they can. A reply must carry the value as it was when the GET ran.
#[test]
fn replies_in_flight_keep_replaced_values_intact() {
    const BIG: u32 = 4;
    const SIZE: usize = 200 << 10;
    let srv = Server::default_config();
    let (mc_addr, resp_addr) = (srv.mc(), srv.resp());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let mut c = Client::connect(mc_addr);
        for k in 0..BIG {
            c.roundtrip(
                &mc_set_cmd(format!("k{k}").as_bytes(), 0, &record(k, 99, 0, SIZE)),
                b"STORED\r\n",
            );
        }
    }
    let writers: Vec<_> = (0..2u32)
        .map(|w| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut mc = Client::connect(mc_addr);
                let mut resp = Client::connect(resp_addr);
                let mut version = 0;
                let mut writes = 0u64;
                while !stop.load(Ordering::Relaxed) || writes < 50 {
                    version += 1;
                    let k = version % BIG;
                    let v = record(k, 100 + w, version, SIZE - (version as usize % 7));
                    if version % 2 == 0 {
                        mc.roundtrip(
                            &mc_set_cmd(format!("k{k}").as_bytes(), 0, &v),
                            b"STORED\r\n",
                        );
                    } else {
                        let r = resp.resp(&[b"SET".to_vec(), format!("k{k}").into_bytes(), v]);
                        assert_eq!(r, Resp::Simple(b"OK".to_vec()));
                    }
                    writes += 1;
                }
                writes
            })
        })
        .collect();
    let readers: Vec<_> = (0..2u32)
        .map(|r| {
            std::thread::spawn(move || {
                let mut mc = Client::connect(mc_addr);
                let mut resp = Client::connect(resp_addr);
                for round in 0..6 {
                    // 40 x 200 KiB: far more than the socket buffers hold.
                    let mut req = Vec::new();
                    let mut rreq = Vec::new();
                    for i in 0..40u32 {
                        req.extend_from_slice(format!("get k{}\r\n", (i + r) % BIG).as_bytes());
                        rreq.extend_from_slice(&resp_cmd(&[
                            "GET".to_string(),
                            format!("k{}", (i + r) % BIG),
                        ]));
                    }
                    mc.send(&req);
                    resp.send(&rreq);
                    // Let the writers replace everything a few times while
                    // the replies wait (not a timing assertion: any delay,
                    // including none, must give the same result).
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    for i in 0..40u32 {
                        let what = format!("reader {r} round {round} get {i}");
                        assert_eq!(read_mc_values(&mut mc, &what), 1, "{what}");
                        match resp.read_resp() {
                            Resp::Bulk(Some(v)) => {
                                assert_eq!(check_records(&v, (i + r) % BIG, &what), 1);
                            }
                            x => panic!("{what}: {x:?}"),
                        }
                    }
                }
            })
        })
        .collect();
    for r in readers {
        r.join().expect("reader");
    }
    stop.store(true, Ordering::Relaxed);
    let writes: u64 = writers.into_iter().map(|w| w.join().expect("writer")).sum();
    assert!(writes >= 100);
    // 2 readers x 6 rounds x 40 x 2 protocols x ~200 KiB by reference.
    wait_referenced(&srv, 2 * 6 * 40 * 2 * (SIZE as u64 - 7));
}
