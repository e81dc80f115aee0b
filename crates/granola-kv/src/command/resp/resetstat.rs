//! The INFO stats counters `CONFIG RESETSTAT` zeroes while the store and
//! the network layer keep counting (memcached's `stats reset` keeps its
//! own base): their values at the last reset, subtracted when INFO shows
//! them.

use std::sync::Mutex;

/// The counters INFO stats shows that live outside the RESP layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// `total_connections_received`.
    pub conns_total: u64,
    /// `rejected_connections`.
    pub conns_refused: u64,
    /// `keyspace_hits`.
    pub hits: u64,
    /// `keyspace_misses`.
    pub misses: u64,
    /// `evicted_keys`.
    pub evictions: u64,
    /// `expired_keys`.
    pub expired: u64,
    /// `reply_bytes_copied`.
    pub bytes_copied: u64,
    /// `reply_bytes_referenced`.
    pub bytes_referenced: u64,
    /// `send_calls` (`total_writes_processed`).
    pub send_calls: u64,
    /// `total_reads_processed`.
    pub recv_calls: u64,
    /// `total_net_input_bytes`.
    pub bytes_received: u64,
    /// `idle_naps` (granola-kv's own; see `granola_net::nap`).
    pub idle_naps: u64,
}

impl Counters {
    fn minus(self, base: Counters) -> Counters {
        Counters {
            conns_total: self.conns_total.saturating_sub(base.conns_total),
            conns_refused: self.conns_refused.saturating_sub(base.conns_refused),
            hits: self.hits.saturating_sub(base.hits),
            misses: self.misses.saturating_sub(base.misses),
            evictions: self.evictions.saturating_sub(base.evictions),
            expired: self.expired.saturating_sub(base.expired),
            bytes_copied: self.bytes_copied.saturating_sub(base.bytes_copied),
            bytes_referenced: self.bytes_referenced.saturating_sub(base.bytes_referenced),
            send_calls: self.send_calls.saturating_sub(base.send_calls),
            recv_calls: self.recv_calls.saturating_sub(base.recv_calls),
            bytes_received: self.bytes_received.saturating_sub(base.bytes_received),
            idle_naps: self.idle_naps.saturating_sub(base.idle_naps),
        }
    }
}

/// The counters at the last `CONFIG RESETSTAT` (zero before any).
#[derive(Debug, Default)]
pub struct StatsBase(Mutex<Counters>);

impl StatsBase {
    /// `now` since the last reset.
    pub fn since(&self, now: Counters) -> Counters {
        now.minus(*self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Makes `now` the new zero.
    pub fn reset(&self, now: Counters) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_the_last_reset() {
        let base = StatsBase::default();
        let mut now = Counters {
            hits: 5,
            send_calls: 9,
            ..Counters::default()
        };
        assert_eq!(base.since(now), now);
        base.reset(now);
        assert_eq!(base.since(now), Counters::default());
        now.hits = 7;
        assert_eq!(base.since(now).hits, 2);
        assert_eq!(base.since(now).send_calls, 0);
    }
}
