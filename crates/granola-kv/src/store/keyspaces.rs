//! Key counts per keyspace, so a Redis database's `DBSIZE` and its `INFO
//! keyspace` line (`keys`, `expires`, `avg_ttl`) need no walk over the
//! index, however many keys the store holds.
//!
//! A keyspace is what the command layer's numbered databases store their
//! keys under: keyspace `n > 0` is every key that begins with
//! `0xff 0xfe 'D' n` ([`keyspace_of`]), keyspace 0 every other key.
//!
//! - **Keys**: counted for keyspaces 1–255 as they enter and leave the
//!   index; keyspace 0's count is the store's total minus theirs, so a
//!   write to database 0 — all that memcached, native and most Redis
//!   clients ever do — updates no counter of this module.
//! - **Expiring keys**: counted per keyspace, 0 included, as an entry's
//!   expiry bit is set or cleared (a new key with a TTL, EXPIRE, PERSIST,
//!   removal). Like Redis's, both counts include keys that have expired
//!   but were not yet removed.
//! - **Average TTL**: as in Redis, an estimate: active expiry's walk reads
//!   every expiring item once per round of the index, and at the end of
//!   each round the keyspace's mean remaining TTL over that round is
//!   published; a keyspace without an estimate yet (0) gets the round's
//!   mean so far as the walk goes. With active expiry off it stays as it
//!   was.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The prefix of keyspace `n > 0`'s keys, followed by `n`.
pub const KEYSPACE_PREFIX: [u8; 3] = [0xff, 0xfe, b'D'];

/// The keyspace a stored key belongs to (0 for a key without the prefix,
/// or with the prefix and `n = 0`).
#[inline(always)]
pub fn keyspace_of(key: &[u8]) -> u8 {
    match key {
        [0xff, 0xfe, b'D', n, ..] => *n,
        _ => 0,
    }
}

/// The counters; one per store.
pub(super) struct Keyspaces {
    /// Keys per keyspace; index 0 unused (derived from the total).
    keys: [AtomicUsize; 256],
    expiring: [AtomicUsize; 256],
    /// Mean remaining TTL in milliseconds, as of the last full round.
    avg_ttl_ms: [AtomicU64; 256],
    /// What the walk has seen so far in the current round.
    round: Mutex<TtlSums>,
}

/// Remaining TTLs seen by active expiry, per keyspace.
#[derive(Default)]
pub(super) struct TtlSums {
    sums: Vec<(u128, u64)>,
}

impl TtlSums {
    /// Notes an expiring item of `key` with `ttl_ms` left.
    pub(super) fn add(&mut self, key: &[u8], ttl_ms: u64) {
        if self.sums.is_empty() {
            self.sums = vec![(0, 0); 256];
        }
        let s = &mut self.sums[usize::from(keyspace_of(key))];
        s.0 += u128::from(ttl_ms);
        s.1 += 1;
    }
}

impl Default for Keyspaces {
    fn default() -> Keyspaces {
        Keyspaces {
            keys: std::array::from_fn(|_| AtomicUsize::new(0)),
            expiring: std::array::from_fn(|_| AtomicUsize::new(0)),
            avg_ttl_ms: std::array::from_fn(|_| AtomicU64::new(0)),
            round: Mutex::default(),
        }
    }
}

impl Keyspaces {
    /// `key` entered the index; `expires`: with an expiry.
    #[inline(always)]
    pub(super) fn added(&self, key: &[u8], expires: bool) {
        let n = keyspace_of(key);
        if n != 0 {
            self.keys[usize::from(n)].fetch_add(1, Ordering::Relaxed);
        }
        if expires {
            self.expiring[usize::from(n)].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `key` left the index; `expires`: its entry had an expiry.
    #[inline(always)]
    pub(super) fn removed(&self, key: &[u8], expires: bool) {
        let n = keyspace_of(key);
        if n != 0 {
            self.keys[usize::from(n)].fetch_sub(1, Ordering::Relaxed);
        }
        if expires {
            self.expiring[usize::from(n)].fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// `key`'s entry gained (`true`) or lost its expiry.
    pub(super) fn expiry_changed(&self, key: &[u8], expires: bool) {
        let c = &self.expiring[usize::from(keyspace_of(key))];
        if expires {
            c.fetch_add(1, Ordering::Relaxed);
        } else {
            c.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Keys in keyspace `n`, given the store's total.
    pub(super) fn keys(&self, n: u8, total: usize) -> usize {
        if n != 0 {
            return self.keys[usize::from(n)].load(Ordering::Relaxed);
        }
        let others: usize = self.keys[1..]
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        total.saturating_sub(others)
    }

    /// Keys with an expiry in keyspace `n`.
    pub(super) fn expiring(&self, n: u8) -> usize {
        self.expiring[usize::from(n)].load(Ordering::Relaxed)
    }

    /// True if some key in any keyspace has an expiry (what a `volatile-`
    /// eviction policy may evict).
    pub(super) fn any_expiring(&self) -> bool {
        self.expiring.iter().any(|c| c.load(Ordering::Relaxed) != 0)
    }

    /// Keyspace `n`'s mean remaining TTL (ms) as of the last full round.
    pub(super) fn avg_ttl_ms(&self, n: u8) -> u64 {
        self.avg_ttl_ms[usize::from(n)].load(Ordering::Relaxed)
    }

    /// What the walk has seen so far in the current round; active expiry
    /// holds it for a whole cycle.
    pub(super) fn round(&self) -> MutexGuard<'_, TtlSums> {
        self.round.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives a keyspace with no estimate yet the round's mean so far: on a
    /// large store a round takes many cycles, and 0 would say "no TTLs".
    pub(super) fn first_estimates(&self, round: &TtlSums) {
        for (&s, avg) in round.sums.iter().zip(&self.avg_ttl_ms) {
            if s.1 > 0 && avg.load(Ordering::Relaxed) == 0 {
                avg.store(mean(s), Ordering::Relaxed);
            }
        }
    }

    /// The walk went once round the index: publishes each keyspace's mean
    /// (0 where it saw no expiring key) and starts the next round.
    pub(super) fn round_done(&self, round: &mut TtlSums) {
        for (n, avg) in self.avg_ttl_ms.iter().enumerate() {
            avg.store(round.sums.get(n).map_or(0, |&s| mean(s)), Ordering::Relaxed);
        }
        round.sums.fill((0, 0));
    }
}

/// The mean of `(sum, count)`, 0 for none.
fn mean((sum, count): (u128, u64)) -> u64 {
    if count == 0 {
        0
    } else {
        (sum / u128::from(count)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyspace_of_reads_the_prefix() {
        assert_eq!(keyspace_of(b"plain"), 0);
        assert_eq!(keyspace_of(&[0xff, 0xfe, b'D', 3, b'k']), 3);
        assert_eq!(keyspace_of(&[0xff, 0xfe, b'D', 7]), 7);
        assert_eq!(keyspace_of(&[0xff, 0xfe, b'D']), 0);
        assert_eq!(keyspace_of(&[0xff, 0xfe, b'E', 3]), 0);
    }

    #[test]
    fn keyspace_zero_is_the_rest() {
        let k = Keyspaces::default();
        k.added(b"a", false);
        k.added(&[0xff, 0xfe, b'D', 2, b'x'], true);
        k.added(&[0xff, 0xfe, b'D', 2, b'y'], false);
        assert_eq!(k.keys(2, 3), 2);
        assert_eq!(k.keys(0, 3), 1);
        assert_eq!(k.expiring(2), 1);
        k.expiry_changed(&[0xff, 0xfe, b'D', 2, b'y'], true);
        assert_eq!(k.expiring(2), 2);
        k.removed(&[0xff, 0xfe, b'D', 2, b'x'], true);
        assert_eq!((k.keys(2, 2), k.expiring(2)), (1, 1));
    }

    #[test]
    fn average_ttl_is_published_per_round() {
        let k = Keyspaces::default();
        let mut round = k.round();
        round.add(b"a", 1000);
        round.add(b"b", 3000);
        round.add(&[0xff, 0xfe, b'D', 1, b'x'], 500);
        k.first_estimates(&round);
        assert_eq!(
            (k.avg_ttl_ms(0), k.avg_ttl_ms(1)),
            (2000, 500),
            "a first estimate mid-round"
        );
        round.add(b"c", 5000);
        k.first_estimates(&round);
        assert_eq!(k.avg_ttl_ms(0), 2000, "kept till the round ends");
        k.round_done(&mut round);
        assert_eq!((k.avg_ttl_ms(0), k.avg_ttl_ms(1)), (3000, 500));
        k.round_done(&mut round);
        assert_eq!(k.avg_ttl_ms(0), 0, "a round that saw none");
    }
}
