//! Redis' numbered databases (`SELECT n`) over the one store: database 0 is
//! the store's own keyspace (the one memcached and native clients see);
//! database `n > 0` keeps its keys under a 4-byte prefix no text client
//! types (`0xff 0xfe 'D' n`). Keys a binary client writes with that prefix
//! land in database `n` — documented, not prevented.
//!
//! SWAPDB swaps two databases' contents in O(1) through [`DbMap`]: a RESP
//! client's database number is looked up there to find the prefix its
//! keys are stored under, so swapping two entries swaps what every RESP
//! client of those numbers sees. memcached and native clients keep the
//! store's own keyspace (no prefix): after `SWAPDB 0 1` it is RESP's
//! database 1.

use super::storage::StringEdit;
use super::Storage;
use crate::store::{
    Access, CasRule, Dict, DictEdit, Growth, Item, Kind, ListEdit, Meta, Remark, SetExtra, SetMode,
    Stamp, Store, StoreError, StoreStats,
};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

const MAGIC: [u8; 3] = crate::store::KEYSPACE_PREFIX;

/// Set once any database but 0 is written: until then database 0 is the
/// whole store and DBSIZE/FLUSHDB need no walk.
static OTHERS_USED: AtomicBool = AtomicBool::new(false);

/// Which stored keyspace (prefix) each RESP database number names, and
/// back; the identity until a SWAPDB.
pub struct DbMap {
    stored: [AtomicU8; 256],
    number: [AtomicU8; 256],
}

impl Default for DbMap {
    fn default() -> DbMap {
        DbMap {
            stored: std::array::from_fn(|i| AtomicU8::new(i as u8)),
            number: std::array::from_fn(|i| AtomicU8::new(i as u8)),
        }
    }
}

impl DbMap {
    /// Database number `n` of `store`.
    pub fn db<'a>(&self, store: &'a Store, n: u8) -> Db<'a> {
        Db::new(store, self.stored[usize::from(n)].load(Ordering::Acquire))
    }

    /// The database number of keys stored under keyspace `stored` (as
    /// [`split_stored`] names it).
    pub fn number(&self, stored: u8) -> u8 {
        self.number[usize::from(stored)].load(Ordering::Acquire)
    }

    /// Swaps databases `a` and `b`. The caller keeps every other RESP
    /// command out meanwhile (the gate, alone).
    pub fn swap(&self, a: u8, b: u8) {
        let (sa, sb) = (
            self.stored[usize::from(a)].load(Ordering::Acquire),
            self.stored[usize::from(b)].load(Ordering::Acquire),
        );
        self.stored[usize::from(a)].store(sb, Ordering::Release);
        self.stored[usize::from(b)].store(sa, Ordering::Release);
        self.number[usize::from(sa)].store(b, Ordering::Release);
        self.number[usize::from(sb)].store(a, Ordering::Release);
    }
}

/// The database and the client's key of a key as the store holds it.
pub fn split_stored(stored: &[u8]) -> (u8, &[u8]) {
    match stored.strip_prefix(&MAGIC[..]) {
        Some([n, key @ ..]) if *n != 0 => (*n, key),
        _ => (0, stored),
    }
}

/// Database `index` of `store`.
#[derive(Clone, Copy)]
pub struct Db<'a> {
    store: &'a Store,
    index: u8,
    /// Reads mark what they read as used (access time, recency for
    /// eviction); not for a `CLIENT NO-TOUCH` client.
    touch: bool,
}

impl<'a> Db<'a> {
    /// The keyspace stored under prefix `index` (0..=255; 0: no
    /// prefix). A client's database number goes through [`DbMap::db`].
    pub fn new(store: &'a Store, index: u8) -> Db<'a> {
        Db {
            store,
            index,
            touch: true,
        }
    }

    /// This database, read as `CLIENT NO-TOUCH` reads if `touch` is
    /// false: without moving an item's access time or eviction recency.
    pub fn touching(self, touch: bool) -> Db<'a> {
        Db { touch, ..self }
    }

    /// The store key of `key`, handed to `f`.
    fn with_key<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        if self.index == 0 {
            return f(key);
        }
        let mut small = [0u8; 260];
        if key.len() + 4 <= small.len() {
            small[..3].copy_from_slice(&MAGIC);
            small[3] = self.index;
            small[4..4 + key.len()].copy_from_slice(key);
            f(&small[..4 + key.len()])
        } else {
            let mut v = Vec::with_capacity(key.len() + 4);
            v.extend_from_slice(&MAGIC);
            v.push(self.index);
            v.extend_from_slice(key);
            f(&v)
        }
    }

    fn wrote(&self) {
        if self.index != 0 && !OTHERS_USED.load(Ordering::Relaxed) {
            OTHERS_USED.store(true, Ordering::Relaxed);
        }
    }

    /// The key of a stored key in this database, or None if it belongs to
    /// another one.
    fn own<'k>(&self, stored: &'k [u8]) -> Option<&'k [u8]> {
        match stored.strip_prefix(&MAGIC[..]) {
            Some(rest) => match rest.split_first() {
                Some((&n, key)) if n == self.index && n != 0 => Some(key),
                _ => None,
            },
            None if self.index == 0 => Some(stored),
            None => None,
        }
    }

    /// Keys with an expiry (INFO keyspace's `expires`), expired ones not
    /// yet removed included.
    pub fn expiring(&self) -> usize {
        self.store.keyspace_expiring(self.index)
    }

    /// The mean remaining TTL in milliseconds, as active expiry last
    /// estimated it (INFO keyspace's `avg_ttl`).
    pub fn avg_ttl_ms(&self) -> u64 {
        self.store.keyspace_avg_ttl_ms(self.index)
    }

    fn sole(&self) -> bool {
        self.index == 0 && !OTHERS_USED.load(Ordering::Relaxed)
    }
}

impl Storage for Db<'_> {
    fn get(&self, key: &[u8]) -> Option<Item> {
        if !self.touch {
            return self.peek(key);
        }
        self.with_key(key, |k| self.store.get(k))
    }
    fn get_stamped(&self, key: &[u8]) -> (Option<Item>, Stamp) {
        self.with_key(key, |k| self.store.read_stamped(k, self.touch))
    }
    fn peek(&self, key: &[u8]) -> Option<Item> {
        self.with_key(key, |k| self.store.peek(k))
    }
    fn peek_stored(&self, key: &[u8]) -> Option<Item> {
        self.with_key(key, |k| self.store.peek_stored(k))
    }
    fn access(&self, item: &Item) -> Access {
        self.store.access(item)
    }
    fn unchanged(&self, key: &[u8], stamp: &Stamp) -> bool {
        self.with_key(key, |k| self.store.unchanged(k, stamp))
    }
    fn delete(&self, key: &[u8]) -> bool {
        self.with_key(key, |k| self.store.delete(k))
    }
    fn update_string(&self, key: &[u8], f: StringEdit<'_>) -> Result<(), StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.update_string(k, f))
    }
    fn set_with(
        &self,
        key: &[u8],
        value: &[u8],
        meta: Meta,
        mode: SetMode,
        extra: SetExtra,
    ) -> Result<u64, StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.set_with(k, value, meta, mode, extra))
    }
    fn remark(&self, key: &[u8], f: &mut dyn FnMut(&Item) -> Option<Remark>) -> Option<Item> {
        self.wrote();
        self.with_key(key, |k| self.store.remark(k, f))
    }
    fn incr_decr_with(
        &self,
        key: &[u8],
        delta: u64,
        incr: bool,
        rule: CasRule,
    ) -> Result<u64, StoreError> {
        self.with_key(key, |k| self.store.incr_decr_with(k, delta, incr, rule))
    }
    fn touch(&self, key: &[u8], expires_at_ms: u64) -> Option<Item> {
        if !self.touch {
            return self.retime(key, expires_at_ms, false);
        }
        self.with_key(key, |k| self.store.touch(k, expires_at_ms))
    }
    fn retime(&self, key: &[u8], expires_at_ms: u64, modify: bool) -> Option<Item> {
        if modify {
            self.wrote();
        }
        self.with_key(key, |k| self.store.retime(k, expires_at_ms, modify))
    }
    fn list_push_with(
        &self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
        create: bool,
    ) -> Result<usize, StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.list_push_with(k, values, front, create))
    }
    fn flush_all(&self) {
        if self.sole() {
            return self.store.flush_all();
        }
        self.store.flush_keyspace(self.index);
    }
    fn list_pop(
        &self,
        key: &[u8],
        count: usize,
        front: bool,
    ) -> Result<Option<Vec<granola::Buf>>, StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.list_pop(k, count, front))
    }
    fn put_list(&self, key: &[u8], values: &[&[u8]], meta: Meta) -> Result<(), StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.put_list(k, values, meta))
    }
    fn len(&self) -> usize {
        if self.sole() {
            return self.store.len();
        }
        self.store.keyspace_len(self.index)
    }
    fn now_ms(&self) -> u64 {
        self.store.now_ms()
    }
    fn stats(&self) -> StoreStats {
        self.store.stats()
    }
    fn update_list(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(Option<&Item>) -> ListEdit,
    ) -> Result<(), StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.update_list(k, |i| (f(i), ())))
    }
    fn update_dict(
        &self,
        key: &[u8],
        kind: Kind,
        growth: Growth,
        f: &mut dyn FnMut(&mut DictEdit<'_, '_>),
    ) -> Result<(), StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.update_dict(k, kind, growth, f))
    }
    fn shrink_dict(
        &self,
        key: &[u8],
        kind: Kind,
        f: &mut dyn FnMut(&mut DictEdit<'_, '_>),
    ) -> Result<(), StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.shrink_dict(k, kind, f).map(drop))
    }
    fn put_dict(&self, key: &[u8], kind: Kind, dict: &Dict, meta: Meta) -> Result<(), StoreError> {
        self.wrote();
        self.with_key(key, |k| self.store.put_dict(k, kind, dict, meta))
    }
    fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(&[u8], &Item)) -> u64 {
        self.store.scan(cursor, count, |item| {
            if let Some(k) = self.own(item.key()) {
                f(k, item);
            }
        })
    }
}
