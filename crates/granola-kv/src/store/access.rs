//! When an item was last read, and whether it was ever read: memcached's
//! `mg` flags `h` and `l` and `me`'s `la`/`fetch`, Redis's `OBJECT
//! IDLETIME`.
//!
//! ```text
//!  slot word (granola::Buf::slot_word, beside the slot's reference count)
//!   31        30 .. 0
//!   | FETCHED | seconds since ACCESS_EPOCH_S of the last read or store |
//! ```
//!
//! An item's bytes are frozen once stored, so this lives in the pool's
//! per-slot word, which sits on the cache line a reader has just written
//! to take its reference: a read costs one load more, and a store only
//! when the word changes (the first read, then at most once a second). A
//! store sets the time without FETCHED; a rewrite of the same value (new
//! marks or expiry) keeps the word; a read sets both. The time is the
//! store clock's coarse seconds ([`Clock::coarse_s`](super::Clock::coarse_s)),
//! so idle times are whole seconds, as memcached's are.
//!
//! Under an LFU policy (`allkeys-lfu`, `volatile-lfu`) the word holds
//! Redis's LFU data instead, as Redis's own object header does:
//!
//! ```text
//!   31        30 .. 23                      22 .. 0
//!   | FETCHED | counter (logarithmic, 0-255) | minutes since ACCESS_EPOCH_S, mod 2^23 |
//! ```
//!
//! The counter starts at [`LFU_INIT`], goes up on a use with probability
//! `1 / ((counter - LFU_INIT) * lfu-log-factor + 1)` and down by one per
//! `lfu-decay-time` minutes unused, as Redis's does; the minutes are those
//! of the last use. Idle times are then whole minutes (memcached's `l`
//! reads them ×60). After a switch between an LFU and a non-LFU policy at
//! run time, words written under the old policy are read in the new form:
//! idle times read wrong until an item is next used; LFU counters of older
//! items mostly read as 0 (their time stamps read as long ago) and climb
//! again with use (Redis says the same).

/// The item was read since it was stored.
pub(crate) const FETCHED: u32 = 1 << 31;

/// 2020-01-01T00:00:00Z: access times count from here, so 31 bits last
/// until 2088.
const ACCESS_EPOCH_S: u64 = 1_577_836_800;

/// The word of an item stored or read at `now_s` (Unix seconds).
#[inline]
pub(crate) fn stamp(now_s: u64, fetched: bool) -> u32 {
    let t = now_s
        .saturating_sub(ACCESS_EPOCH_S)
        .min(u64::from(FETCHED - 1)) as u32;
    if fetched {
        t | FETCHED
    } else {
        t
    }
}

/// The LFU counter of a new item (Redis's `LFU_INIT_VAL`), so it is not
/// evicted before it had a chance to be read.
pub(crate) const LFU_INIT: u8 = 5;
const LFU_COUNTER_SHIFT: u32 = 23;
const LFU_MINUTES_MASK: u32 = (1 << LFU_COUNTER_SHIFT) - 1;

/// Redis's LFU tunables (`lfu-log-factor`, `lfu-decay-time`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LfuTuning {
    /// How many uses it takes to raise the counter: about
    /// `log_factor × (counter - 5)` per step once past 5 (Redis's default
    /// 10: a million uses reach 255).
    pub log_factor: u32,
    /// Minutes unused per step down of the counter (0: never decays).
    pub decay_minutes: u32,
}

impl Default for LfuTuning {
    fn default() -> Self {
        LfuTuning {
            log_factor: 10,
            decay_minutes: 1,
        }
    }
}

fn lfu_minutes(now_s: u64) -> u32 {
    (now_s.saturating_sub(ACCESS_EPOCH_S) / 60) as u32 & LFU_MINUTES_MASK
}

/// Minutes since the LFU word's last use (wrapping, as Redis's 16-bit
/// minutes do, after 2^23 minutes: 16 years).
fn lfu_elapsed_minutes(word: u32, now_s: u64) -> u32 {
    lfu_minutes(now_s).wrapping_sub(word & LFU_MINUTES_MASK) & LFU_MINUTES_MASK
}

/// The LFU word of an item with `counter` used at `now_s`.
pub(crate) fn lfu_stamp(now_s: u64, counter: u8, fetched: bool) -> u32 {
    let w = (u32::from(counter) << LFU_COUNTER_SHIFT) | lfu_minutes(now_s);
    if fetched {
        w | FETCHED
    } else {
        w
    }
}

/// The word's counter after its decay to `now_s` (Redis's
/// `LFUDecrAndReturn`): what `OBJECT FREQ` reports and eviction compares.
pub(crate) fn lfu_count(word: u32, now_s: u64, tuning: LfuTuning) -> u8 {
    let counter = ((word & !FETCHED) >> LFU_COUNTER_SHIFT) as u8;
    if tuning.decay_minutes == 0 {
        return counter;
    }
    let periods = lfu_elapsed_minutes(word, now_s) / tuning.decay_minutes;
    counter.saturating_sub(periods.min(255) as u8)
}

/// The LFU word after a use at `now_s` (`read`: a read, which sets
/// FETCHED), given a coin in [0, 1) for the probabilistic increment
/// (Redis's `LFULogIncr`).
pub(crate) fn lfu_used(word: u32, now_s: u64, read: bool, tuning: LfuTuning, coin: f64) -> u32 {
    let mut counter = lfu_count(word, now_s, tuning);
    if counter < 255 {
        let base = f64::from(counter.saturating_sub(LFU_INIT));
        if coin < 1.0 / (base * f64::from(tuning.log_factor) + 1.0) {
            counter += 1;
        }
    }
    lfu_stamp(now_s, counter, read || word & FETCHED != 0)
}

/// An item's use as Redis carries it between servers: RESTORE's
/// `IDLETIME` or `FREQ`, an RDB file's `IDLE` or `FREQ` opcode before a
/// key. Which one a server writes, and which one it heeds, depends on its
/// policy (see [`Store::use_history`](super::Store::use_history)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UseHistory {
    /// Last used this many seconds ago (LRU policies).
    IdleSeconds(u64),
    /// This LFU counter, as of now (LFU policies).
    Frequency(u8),
}

/// What an item's word said about its use before the read that returned
/// it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// It had been read since it was stored (memcached `h1`).
    pub fetched: bool,
    /// Whole seconds since it was last read or stored (memcached `l`,
    /// Redis `OBJECT IDLETIME`).
    pub idle_s: u64,
}

impl Access {
    /// Decodes `word` as of `now_s` (Unix seconds).
    pub(crate) fn of(word: u32, now_s: u64) -> Access {
        let at = ACCESS_EPOCH_S + u64::from(word & !FETCHED);
        Access {
            fetched: word & FETCHED != 0,
            idle_s: now_s.saturating_sub(at),
        }
    }

    /// Decodes the LFU `word` as of `now_s`: idle time in whole minutes.
    pub(crate) fn of_lfu(word: u32, now_s: u64) -> Access {
        Access {
            fetched: word & FETCHED != 0,
            idle_s: u64::from(lfu_elapsed_minutes(word, now_s)) * 60,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_reads_back_as_its_age() {
        let t = 1_800_000_000;
        let w = stamp(t, false);
        assert_eq!(
            Access::of(w, t),
            Access {
                fetched: false,
                idle_s: 0
            }
        );
        assert_eq!(
            Access::of(stamp(t, true), t + 7),
            Access {
                fetched: true,
                idle_s: 7
            }
        );
        // A clock that went back reads as no idle time, not a wrap.
        assert_eq!(Access::of(w, t - 5).idle_s, 0);
        // Before the access epoch, and past its 31 bits: clamped.
        assert_eq!(stamp(0, false), 0);
        assert_eq!(stamp(u64::MAX, true), u32::MAX);
    }

    #[test]
    fn the_lfu_counter_counts_uses_and_decays_as_redis_does() {
        let t = 1_800_000_000;
        let tuning = LfuTuning::default();
        let w = lfu_stamp(t, LFU_INIT, false);
        assert_eq!(lfu_count(w, t, tuning), LFU_INIT);
        // At the initial value every use counts (p = 1), later ones by chance.
        let w = lfu_used(w, t, true, tuning, 0.999);
        assert_eq!(lfu_count(w, t, tuning), LFU_INIT + 1);
        assert!(Access::of_lfu(w, t).fetched);
        // p = 1/11 at 6: a coin of 0.05 counts, one of 0.2 does not.
        assert_eq!(lfu_count(lfu_used(w, t, false, tuning, 0.05), t, tuning), 7);
        assert_eq!(lfu_count(lfu_used(w, t, false, tuning, 0.2), t, tuning), 6);
        // One step down per decay period unused; never below 0.
        assert_eq!(lfu_count(w, t + 3 * 60, tuning), 3);
        assert_eq!(lfu_count(w, t + 3600, tuning), 0);
        let slow = LfuTuning {
            decay_minutes: 2,
            ..tuning
        };
        assert_eq!(lfu_count(w, t + 3 * 60, slow), 5);
        let never = LfuTuning {
            decay_minutes: 0,
            ..tuning
        };
        assert_eq!(lfu_count(w, t + 3600, never), 6);
        // Saturates at 255.
        let top = lfu_stamp(t, 255, false);
        assert_eq!(
            lfu_count(lfu_used(top, t, true, tuning, 0.0), t, tuning),
            255
        );
        // Idle time in whole minutes.
        assert_eq!(Access::of_lfu(w, t + 150).idle_s, 120);
        // Redis's table of counters by uses: 18 after 100 uses at factor 1.
        // One run's counter is a random walk (it spans about 14..=23), so
        // the check is on the mean of many runs, with coins from a seeded
        // generator so that the test reads the same numbers every time.
        let factor_one = LfuTuning {
            log_factor: 1,
            ..tuning
        };
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut coin = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let runs = 1000;
        let total: u32 = (0..runs)
            .map(|_| {
                let mut w = lfu_stamp(t, LFU_INIT, false);
                for _ in 0..100 {
                    w = lfu_used(w, t, true, factor_one, coin());
                }
                u32::from(lfu_count(w, t, tuning))
            })
            .sum();
        let mean = f64::from(total) / f64::from(runs);
        assert!(
            (17.0..=19.0).contains(&mean),
            "mean counter {mean} after 100 uses at factor 1"
        );
    }
}
