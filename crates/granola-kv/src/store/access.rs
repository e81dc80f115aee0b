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
}
