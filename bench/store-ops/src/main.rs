//! The store's write paths in-process, without a network or a protocol:
//! nanoseconds per operation on one key, best of several rounds, one JSON
//! line. A change to the store's hashing, locking or lookup shows here to
//! a nanosecond; through redis-benchmark it drowns in the kernel's share
//! and the machine's noise.
//!
//! - `incr`: `update_string` on redis-benchmark INCR's 20-byte key through
//!   the `Storage` trait, as the server calls it: parse the counter, add
//!   one, store the digits and build the reply line around them.
//! - `sadd`: `update_dict` on SADD's 5-byte set key, adding the member it
//!   already holds (redis-benchmark SADD's steady state).
//! - `get`: a lock-free read of the INCR key.
//!
//! Usage: `store-ops [OPS_PER_ROUND] [ROUNDS]` (defaults 5000000 and 7).

use granola_kv::command::Storage;
use granola_kv::store::{Growth, Kind, Store, StoreConfig};
use std::hint::black_box;
use std::time::Instant;

const COUNTER: &[u8] = b"counter:__rand_int__";
const SET: &[u8] = b"myset";
const MEMBER: &[u8] = b"element:__rand_int__";

fn incr(s: &Store) {
    // Through the command layer's storage trait, with a `dyn` edit, as the
    // server's INCR calls it (the same instance of `update_string`), and
    // the reply line built around the stored digits as the server does.
    let storage: &dyn Storage = s;
    let mut line = [0u8; 24];
    let mut len = 0;
    let r = storage.update_string(black_box(COUNTER), &mut |cur, store| {
        let v = cur
            .and_then(|c| std::str::from_utf8(c).ok()?.parse::<u64>().ok())
            .unwrap_or(0);
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(v + 1).as_bytes();
        let end = 1 + digits.len();
        line[0] = b':';
        line[1..end].copy_from_slice(digits);
        store(&line[1..end]);
        line[end..end + 2].copy_from_slice(b"\r\n");
        len = end + 2;
    });
    r.expect("INCR on a string key");
    black_box(&line[..len]);
}

fn sadd(s: &Store) {
    let growth = Growth {
        entries: 1,
        bytes: MEMBER.len(),
    };
    let added = s.update_dict(black_box(SET), Kind::Set, growth, |d| {
        !d.contains(MEMBER) && d.insert(MEMBER, b"")
    });
    black_box(added.expect("SADD on a set key"));
}

fn get(s: &Store) {
    black_box(s.get(black_box(COUNTER)));
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u64>().expect("a number"));
    let ops = args.next().unwrap_or(5_000_000).max(1);
    let rounds = args.next().unwrap_or(7).max(1);
    let pool = granola::Pool::with_capacity(256 << 20).expect("a 256 MiB pool");
    let store = Store::new(
        pool,
        StoreConfig {
            memory_limit: 128 << 20,
            ..Default::default()
        },
    );
    let cases: [(&str, fn(&Store)); 3] = [("incr", incr), ("sadd", sadd), ("get", get)];
    let mut fields = Vec::new();
    for (name, op) in cases {
        let best = (0..rounds)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..ops {
                    op(&store);
                }
                t.elapsed().as_nanos() as f64 / ops as f64
            })
            .fold(f64::MAX, f64::min);
        fields.push(format!("\"{name}_ns\":{best:.1}"));
    }
    println!("{{{}}}", fields.join(","));
}
