//! What a write that needs memory past the limit does: Redis's
//! `maxmemory-policy` values, all eight of them.
//!
//! | policy | may evict | victim |
//! |---|---|---|
//! | `allkeys-lru` (default) | every item | CLOCK: one the hand finds unread since it last passed |
//! | `allkeys-lfu` | every item | the least frequently used of the pool of candidates (Redis's logarithmic counter, decayed) |
//! | `allkeys-random` | every item | one of the hand's window, at random |
//! | `volatile-lru`, `-lfu`, `-random` | items with an expiry | as their `allkeys-` twin |
//! | `volatile-ttl` | items with an expiry | the soonest to expire of the pool of candidates |
//! | `noeviction` | nothing | the write is refused |
//!
//! The hand's window is `SWEEP_BUCKETS` (4) index buckets of 8 entries: up
//! to 32 candidates per step where Redis samples `maxmemory-samples` (5).
//! The ranking policies (LFU, TTL) take 2 buckets per step and offer their
//! items to a pool of the 16 best seen over the hand's steps
//! ([`Candidates`], Redis's eviction pool), and evict its best. Expired
//! items are removed whatever the policy.
//!
//! When a size class runs out of slots and the pool of segments, every
//! policy first compacts: it empties the sparsest segment whose items all
//! fit in free slots of their class elsewhere, moving them. Only when no
//! segment fits do the `allkeys-` policies drain the coldest segment
//! (evicting what they do not move); the others refuse the write
//! (`docs/memory.md`).

/// Redis's `maxmemory-policy`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EvictionPolicy {
    /// Evict the least recently used items (CLOCK).
    #[value(name = "allkeys-lru")]
    AllkeysLru,
    /// Evict the least frequently used items.
    #[value(name = "allkeys-lfu")]
    AllkeysLfu,
    /// Evict any item.
    #[value(name = "allkeys-random")]
    AllkeysRandom,
    /// Evict the least recently used items that have an expiry.
    #[value(name = "volatile-lru")]
    VolatileLru,
    /// Evict the least frequently used items that have an expiry.
    #[value(name = "volatile-lfu")]
    VolatileLfu,
    /// Evict any item that has an expiry.
    #[value(name = "volatile-random")]
    VolatileRandom,
    /// Evict the items closest to expiring.
    #[value(name = "volatile-ttl")]
    VolatileTtl,
    /// Refuse the write.
    #[value(name = "noeviction")]
    NoEviction,
}

/// How a policy picks among the items it may evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Victim {
    /// CLOCK: the reference bit.
    Lru,
    /// The smallest decayed LFU counter.
    Lfu,
    /// Any one, at random.
    Random,
    /// The nearest expiry.
    Ttl,
}

/// Every policy, in the order of their `u8` values.
const ALL: [EvictionPolicy; 8] = [
    EvictionPolicy::AllkeysLru,
    EvictionPolicy::AllkeysLfu,
    EvictionPolicy::AllkeysRandom,
    EvictionPolicy::VolatileLru,
    EvictionPolicy::VolatileLfu,
    EvictionPolicy::VolatileRandom,
    EvictionPolicy::VolatileTtl,
    EvictionPolicy::NoEviction,
];

impl EvictionPolicy {
    /// Redis's name.
    pub fn name(self) -> &'static str {
        match self {
            EvictionPolicy::AllkeysLru => "allkeys-lru",
            EvictionPolicy::AllkeysLfu => "allkeys-lfu",
            EvictionPolicy::AllkeysRandom => "allkeys-random",
            EvictionPolicy::VolatileLru => "volatile-lru",
            EvictionPolicy::VolatileLfu => "volatile-lfu",
            EvictionPolicy::VolatileRandom => "volatile-random",
            EvictionPolicy::VolatileTtl => "volatile-ttl",
            EvictionPolicy::NoEviction => "noeviction",
        }
    }

    /// The policy of a Redis name (any case).
    pub fn from_name(name: &[u8]) -> Option<EvictionPolicy> {
        ALL.into_iter()
            .find(|p| p.name().as_bytes().eq_ignore_ascii_case(name))
    }

    /// True if a write past the limit may evict something (false only for
    /// `noeviction`).
    pub fn evicts(self) -> bool {
        self != EvictionPolicy::NoEviction
    }

    /// True if the policy may evict an item that has an expiry or not
    /// (`has_expiry`); the sweep asks it of every entry it passes.
    #[inline]
    pub fn may_evict(self, has_expiry: bool) -> bool {
        self.evicts() && (has_expiry || !self.volatile_only())
    }

    /// True if only items with an expiry may be evicted.
    pub fn volatile_only(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileLfu
                | EvictionPolicy::VolatileRandom
                | EvictionPolicy::VolatileTtl
        )
    }

    /// True if items keep Redis's LFU counter (in their access word)
    /// instead of their last access time in seconds.
    #[inline]
    pub fn tracks_frequency(self) -> bool {
        matches!(
            self,
            EvictionPolicy::AllkeysLfu | EvictionPolicy::VolatileLfu
        )
    }

    pub(crate) fn victim(self) -> Victim {
        match self {
            EvictionPolicy::AllkeysLfu | EvictionPolicy::VolatileLfu => Victim::Lfu,
            EvictionPolicy::AllkeysRandom | EvictionPolicy::VolatileRandom => Victim::Random,
            EvictionPolicy::VolatileTtl => Victim::Ttl,
            EvictionPolicy::AllkeysLru
            | EvictionPolicy::VolatileLru
            | EvictionPolicy::NoEviction => Victim::Lru,
        }
    }

    pub(crate) fn to_u8(self) -> u8 {
        self as u8
    }

    /// The policy `to_u8` made `v` of (read on every access: an index,
    /// not a search).
    #[inline]
    pub(crate) fn from_u8(v: u8) -> EvictionPolicy {
        ALL.get(usize::from(v))
            .copied()
            .unwrap_or(EvictionPolicy::AllkeysLru)
    }
}

/// An eviction candidate's rank under its policy (LFU counter, expiry)
/// and a random tie-break: the lowest goes first.
pub(crate) type Rank = (u64, u32);

/// The best eviction candidates the hand has seen over its last steps,
/// for the policies that rank (LFU, TTL), lowest rank first: Redis's
/// eviction pool. One window of the index alone finds the coldest key of
/// the store rarely; the pool keeps a window's runners-up for the next
/// eviction, so each victim is the best of several windows. The key is
/// looked up again when its turn comes (it may have gone or been read).
#[derive(Default)]
pub(crate) struct Candidates {
    /// What the ranks rank; a change of policy empties the pool.
    victim: Option<Victim>,
    /// (rank, key), ascending.
    best: Vec<(Rank, Box<[u8]>)>,
}

impl Candidates {
    /// Redis's `EVPOOL_SIZE`.
    pub(crate) const SIZE: usize = 16;

    /// Starts a hand step under `victim`: a pool ranked for another
    /// policy is emptied.
    pub(crate) fn rank_for(&mut self, victim: Victim) {
        if self.victim != Some(victim) {
            self.best.clear();
            self.victim = Some(victim);
        }
    }

    /// True if a candidate of `rank` would enter the pool: it is not
    /// full, or `rank` beats its worst.
    pub(crate) fn wants(&self, rank: Rank) -> bool {
        self.best.len() < Self::SIZE || self.best.last().is_some_and(|(r, _)| rank < *r)
    }

    /// Offers `key` at `rank`; a key already in the pool takes the new
    /// rank.
    pub(crate) fn offer(&mut self, rank: Rank, key: &[u8]) {
        if let Some(at) = self.best.iter().position(|(_, k)| **k == *key) {
            self.best.remove(at);
        }
        if !self.wants(rank) {
            return;
        }
        let at = self.best.partition_point(|(r, _)| *r < rank);
        self.best.insert(at, (rank, key.into()));
        self.best.truncate(Self::SIZE);
    }

    /// Takes the best candidate out.
    pub(crate) fn pop(&mut self) -> Option<(Rank, Box<[u8]>)> {
        (!self.best.is_empty()).then(|| self.best.remove(0))
    }

    /// The rank of the best candidate left.
    pub(crate) fn best_rank(&self) -> Option<Rank> {
        self.best.first().map(|(r, _)| *r)
    }
}

/// A uniform number in [0, 1): the LFU counter's increments are coin
/// flips, as Redis's are.
pub(crate) fn coin() -> f64 {
    (next_random() >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform 32-bit number: breaks ties between a window's candidates,
/// so equal ranks do not always evict the hand's first bucket.
pub(crate) fn tie_breaker() -> u32 {
    (next_random() >> 32) as u32
}

/// The next number of a per-thread xorshift generator, seeded from the
/// OS once per thread; eviction needs no more than that.
fn next_random() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let mut b = [0u8; 8];
            // A generator that could not be seeded still flips coins.
            let _ = getrandom::fill(&mut b);
            u64::from_le_bytes(b) | 1
        });
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_and_unknown_names_do_not() {
        for p in ALL {
            assert_eq!(EvictionPolicy::from_name(p.name().as_bytes()), Some(p));
            assert_eq!(
                EvictionPolicy::from_name(p.name().to_ascii_uppercase().as_bytes()),
                Some(p)
            );
            assert_eq!(EvictionPolicy::from_u8(p.to_u8()), p);
        }
        assert_eq!(EvictionPolicy::from_name(b"allkeys-fifo"), None);
        assert_eq!(EvictionPolicy::from_name(b""), None);
    }

    #[test]
    fn coins_are_uniform_enough() {
        let n = 100_000;
        let below = (0..n).filter(|_| coin() < 0.25).count();
        assert!(
            (20_000..30_000).contains(&below),
            "{below} of {n} below 0.25"
        );
    }
}
