//! Active expiry: a walk over the index that removes expired items nobody
//! reads, as Redis's background expire cycle and memcached's LRU crawler
//! do, so their memory comes back and their `expired` events go out
//! without waiting for a read, a write or memory pressure.
//!
//! Entries of items with an expiry carry [`EXPIRES`], so the walk reads
//! only those items: over a keyspace without TTLs it touches nothing but
//! the index's buckets (64 bytes per 8 keys), and over a store that never
//! held an expiring item it does nothing at all. It never waits for a
//! shard lock: a busy shard is passed over until the next turn.

use super::index::{entry_handle, same, Pos, EXPIRES};
use super::keyspaces::TtlSums;
use super::{Item, Removal, Store};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Buckets looked at between two checks of the time budget.
const CHUNK: usize = 256;

/// What one [`Store::expire_cycle`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpireCycle {
    /// Index buckets walked.
    pub buckets: usize,
    /// Expired items removed.
    pub removed: usize,
    /// The time ran out before the walk went once round the index.
    pub cut_short: bool,
}

impl Store {
    /// Walks the index from where the last cycle stopped, removing the
    /// expired items it finds, until `budget` has passed or it has gone
    /// once round the whole index. Does nothing while active expiry is off
    /// ([`set_active_expiry`](Self::set_active_expiry)) or before any item
    /// with an expiry was stored.
    pub fn expire_cycle(&self, budget: Duration) -> ExpireCycle {
        let mut done = ExpireCycle::default();
        if !self.active_expiry.load(Ordering::Relaxed)
            || !self.ever_expiring.load(Ordering::Relaxed)
        {
            return done;
        }
        let start = Instant::now();
        let total: usize = self.shards.iter().map(|s| s.buckets()).sum();
        let mut hand = self.expire_hand.lock().unwrap_or_else(|e| e.into_inner());
        let mut round = self.keyspaces.round();
        while done.buckets < total && start.elapsed() < budget {
            let i = hand.shard % self.shards.len();
            let n = self.shards[i].buckets();
            if hand.bucket < n {
                let end = (hand.bucket + CHUNK).min(n);
                done.removed += self.expire_buckets(i, hand.bucket, end, &mut round);
                done.buckets += end - hand.bucket;
                hand.bucket = end;
            }
            if hand.bucket >= n {
                hand.shard = (i + 1) % self.shards.len();
                hand.bucket = 0;
                if hand.shard == 0 {
                    // The walk went once round the index.
                    self.keyspaces.round_done(&mut round);
                }
            }
        }
        self.keyspaces.first_estimates(&round);
        done.cut_short = done.buckets < total;
        done
    }

    /// Removes the expired items of shard `i`'s buckets `from..to`: found
    /// without the lock, removed under it if it is free and they are
    /// still there. The live ones' remaining TTLs go to the round's sums.
    fn expire_buckets(&self, i: usize, from: usize, to: usize, ttls: &mut TtlSums) -> usize {
        let shard = &self.shards[i];
        let now = self.clock.now_ms();
        let mut expired: Vec<(Pos, u64, Item)> = Vec::new();
        for bucket in from..to.min(shard.buckets()) {
            for (way, cell) in shard.bucket(bucket).0.iter().enumerate() {
                let e = cell.load(Ordering::Acquire);
                if e & EXPIRES == 0 {
                    continue;
                }
                let Some(item) = self.pool.try_acquire(entry_handle(e)).and_then(Item::parse)
                else {
                    continue;
                };
                if item.expired(now) {
                    expired.push((Pos { bucket, way }, e, item));
                } else if item.expires_at_ms() != 0 {
                    // Read without the lock: a PERSIST may have cleared it.
                    ttls.add(item.key(), item.expires_at_ms() - now);
                }
            }
        }
        if expired.is_empty() {
            return 0;
        }
        let Some(l) = shard.try_lock(i) else {
            return 0;
        };
        let mut removed = 0;
        for (pos, e, item) in expired {
            // Still the entry seen (not rewritten, moved or removed since),
            // and no collection write holds its body.
            if pos.bucket < shard.buckets()
                && same(l.cell(pos).load(Ordering::Acquire), e)
                && !self.busy(&item)
            {
                self.remove(&l, pos, &item);
                self.removed(item.key(), Removal::Expired);
                removed += 1;
            }
        }
        removed
    }

    /// Turns active expiry on or off (Redis's `DEBUG SET-ACTIVE-EXPIRE`):
    /// off, expired items go only when read, written, or swept for room.
    pub fn set_active_expiry(&self, on: bool) {
        self.active_expiry.store(on, Ordering::Relaxed);
    }

    /// True while active expiry runs.
    pub fn active_expiry(&self) -> bool {
        self.active_expiry.load(Ordering::Relaxed)
    }
}
