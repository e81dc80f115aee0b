//! Walking the keyspace (SCAN, KEYS): a cursor over shards and buckets.

use super::index::{entry_handle, same, OCCUPIED};
use super::{Item, Store};
use std::sync::atomic::Ordering;

/// Bits of a cursor holding the bucket; the shard is above them.
const BUCKET_BITS: u32 = 40;

impl Store {
    /// Visits the live items of about `count` index buckets (8 entries
    /// each) from `cursor` (0 = the start) and returns the cursor to go on
    /// with (0 = done). Without a lock: an item present for the whole walk
    /// is visited unless a concurrent insert relocates it into an
    /// already-walked bucket; an item may be visited twice (when its shard
    /// grows meanwhile), as Redis' SCAN allows.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&Item)) -> u64 {
        let now = self.now_ms();
        let mut shard = (cursor >> BUCKET_BITS) as usize;
        let mut bucket = (cursor & ((1 << BUCKET_BITS) - 1)) as usize;
        let mut walked = 0usize;
        while let Some(s) = self.shards.get(shard) {
            while bucket < s.buckets() {
                for cell in &s.bucket(bucket).0 {
                    let e = cell.load(Ordering::Acquire);
                    if e & OCCUPIED == 0 {
                        continue;
                    }
                    let item = self.pool.try_acquire(entry_handle(e)).and_then(Item::parse);
                    if let Some(item) = item {
                        if same(cell.load(Ordering::Acquire), e) && !item.expired(now) {
                            // A list replaced meanwhile has no body: skip it.
                            if let Some(item) = self.attach(item) {
                                f(&item);
                            }
                        }
                    }
                }
                bucket += 1;
                walked += 1;
                if walked >= count.max(1) {
                    if bucket >= s.buckets() {
                        shard += 1;
                        bucket = 0;
                    }
                    if shard >= self.shards.len() {
                        return 0;
                    }
                    return ((shard as u64) << BUCKET_BITS) | bucket as u64;
                }
            }
            shard += 1;
            bucket = 0;
        }
        0
    }

    /// The index's buckets, all shards together. A walk that sees it
    /// unchanged from start to end visited no item twice (an item is
    /// visited again only when its shard grows meanwhile).
    pub fn index_buckets(&self) -> usize {
        self.shards.iter().map(|s| s.buckets()).sum()
    }
}
