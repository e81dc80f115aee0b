//! The storage the commands run against.

use crate::store::{
    Access, CasRule, Dict, DictEdit, Growth, Item, Kind, ListEdit, Meta, Remark, SetExtra, SetMode,
    Stamp, Store, StoreError, StoreStats,
};

/// A string edit: gets the current value (None if absent) and a `store`
/// callback, which it calls with the new value (at most once; not at all
/// leaves the key as it is). A callback rather than a returned `Vec`, so
/// INCR's digits go from the stack to the item without a heap allocation.
pub type StringEdit<'a> = &'a mut dyn FnMut(Option<&[u8]>, &mut dyn FnMut(&[u8]));

/// What commands need from the store. [`Store`] implements it; commands
/// take `&dyn Storage`, so a command file depends on this interface only.
pub trait Storage: Send + Sync {
    /// The live item at `key`.
    fn get(&self, key: &[u8]) -> Option<Item>;
    /// [`Storage::get`] that leaves the item's access time, "fetched"
    /// mark and recency alone (see [`Store::peek`]).
    fn peek(&self, key: &[u8]) -> Option<Item>;
    /// The item stored under `key`, expired or not (see
    /// [`Store::peek_stored`]).
    fn peek_stored(&self, key: &[u8]) -> Option<Item>;
    /// How `item` had been used before the read that returned it.
    fn access(&self, item: &Item) -> Access;
    /// [`Storage::get`] with where the key was found (see
    /// [`Store::get_stamped`]; a collection's body is not attached).
    fn get_stamped(&self, key: &[u8]) -> (Option<Item>, Stamp);
    /// True if `key` still holds what the read that made `stamp` found.
    fn unchanged(&self, key: &[u8], stamp: &Stamp) -> bool;
    /// Stores a string value; returns its CAS unique.
    fn set(&self, key: &[u8], value: &[u8], meta: Meta, mode: SetMode) -> Result<u64, StoreError> {
        self.set_with(key, value, meta, mode, SetExtra::default())
    }
    /// Removes `key`; true if it was there.
    fn delete(&self, key: &[u8]) -> bool;
    /// Read-modify-write of a string value (see [`Store::update_string`]);
    /// `f` runs at most once.
    fn update_string(&self, key: &[u8], f: StringEdit<'_>) -> Result<(), StoreError>;
    /// [`Storage::set`] with the meta protocol's extras.
    fn set_with(
        &self,
        key: &[u8],
        value: &[u8],
        meta: Meta,
        mode: SetMode,
        extra: SetExtra,
    ) -> Result<u64, StoreError>;
    /// Rewrites a string's metadata under its key's lock (see
    /// [`Store::remark`]); `f` runs at most once.
    fn remark(&self, key: &[u8], f: &mut dyn FnMut(&Item) -> Option<Remark>) -> Option<Item>;
    /// memcached incr/decr on a decimal u64.
    fn incr_decr(&self, key: &[u8], delta: u64, incr: bool) -> Result<u64, StoreError> {
        self.incr_decr_with(key, delta, incr, CasRule::default())
    }
    /// incr/decr under meta `ma`'s CAS rules (see [`Store::incr_decr_with`]).
    fn incr_decr_with(
        &self,
        key: &[u8],
        delta: u64,
        incr: bool,
        rule: CasRule,
    ) -> Result<u64, StoreError>;
    /// Sets the expiry of a live item, as a modification (new CAS) or not
    /// (see [`Store::retime`]); returns it.
    fn retime(&self, key: &[u8], expires_at_ms: u64, modify: bool) -> Option<Item>;
    /// Sets the expiry of a live item, keeping its CAS (memcached touch,
    /// which also counts as a fetch: see [`Store::touch`]).
    fn touch(&self, key: &[u8], expires_at_ms: u64) -> Option<Item> {
        self.retime(key, expires_at_ms, false)
    }
    /// Sets the expiry as a modification (Redis EXPIRE: WATCH sees it).
    fn expire(&self, key: &[u8], expires_at_ms: u64) -> Option<Item> {
        self.retime(key, expires_at_ms, true)
    }
    /// Removes every item.
    fn flush_all(&self);
    /// RPUSH/LPUSH (`create`) or RPUSHX/LPUSHX (onto an existing list
    /// only); the new length (0: absent). See [`Store::list_push_with`].
    fn list_push_with(
        &self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
        create: bool,
    ) -> Result<usize, StoreError>;
    /// RPUSH/LPUSH; the new length.
    fn list_push(&self, key: &[u8], values: &[&[u8]], front: bool) -> Result<usize, StoreError> {
        self.list_push_with(key, values, front, true)
    }
    /// RPUSHX/LPUSHX: onto an existing list only; the new length (0: absent).
    fn list_push_existing(
        &self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
    ) -> Result<usize, StoreError> {
        self.list_push_with(key, values, front, false)
    }
    /// LPOP/RPOP of up to `count` elements, zero-copy (`None` if absent).
    fn list_pop(
        &self,
        key: &[u8],
        count: usize,
        front: bool,
    ) -> Result<Option<Vec<granola::Buf>>, StoreError>;
    /// Replaces `key` with a list.
    fn put_list(&self, key: &[u8], values: &[&[u8]], meta: Meta) -> Result<(), StoreError>;
    /// Live items.
    fn len(&self) -> usize;
    /// True if empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The store's clock (Unix ms).
    fn now_ms(&self) -> u64;
    /// Counters.
    fn stats(&self) -> StoreStats;
    /// Visits about `count` index buckets from `cursor` (0 = start), calling
    /// `f(key, item)` for each live item; returns the next cursor (0 =
    /// done). See [`Store::scan`].
    fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(&[u8], &Item)) -> u64;
    /// Runs `f` on the item at `key` under the key's writer lock and
    /// applies the list edit it returns (see [`Store::update_list`]).
    fn update_list(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(Option<&Item>) -> ListEdit,
    ) -> Result<(), StoreError>;
    /// Runs `f` on the hash or set at `key`, in place (see
    /// [`Store::update_dict`]); `f` runs at most once.
    fn update_dict(
        &self,
        key: &[u8],
        kind: Kind,
        growth: Growth,
        f: &mut dyn FnMut(&mut DictEdit<'_, '_>),
    ) -> Result<(), StoreError>;
    /// Runs `f` on the hash or set at `key` for an edit that only removes
    /// (see [`Store::shrink_dict`]); `f` does not run if `key` is absent.
    fn shrink_dict(
        &self,
        key: &[u8],
        kind: Kind,
        f: &mut dyn FnMut(&mut DictEdit<'_, '_>),
    ) -> Result<(), StoreError>;
    /// Replaces `key` with a copy of a hash or set.
    fn put_dict(&self, key: &[u8], kind: Kind, dict: &Dict, meta: Meta) -> Result<(), StoreError>;
}

impl Storage for Store {
    fn get(&self, key: &[u8]) -> Option<Item> {
        Store::get(self, key)
    }
    fn get_stamped(&self, key: &[u8]) -> (Option<Item>, Stamp) {
        Store::get_stamped(self, key)
    }
    fn peek(&self, key: &[u8]) -> Option<Item> {
        Store::peek(self, key)
    }
    fn peek_stored(&self, key: &[u8]) -> Option<Item> {
        Store::peek_stored(self, key)
    }
    fn access(&self, item: &Item) -> Access {
        Store::access(self, item)
    }
    fn unchanged(&self, key: &[u8], stamp: &Stamp) -> bool {
        Store::unchanged(self, key, stamp)
    }
    fn delete(&self, key: &[u8]) -> bool {
        Store::delete(self, key)
    }
    fn update_string(&self, key: &[u8], f: StringEdit<'_>) -> Result<(), StoreError> {
        Store::update_string(self, key, f)
    }
    fn set_with(
        &self,
        key: &[u8],
        value: &[u8],
        meta: Meta,
        mode: SetMode,
        extra: SetExtra,
    ) -> Result<u64, StoreError> {
        Store::set_with(self, key, value, meta, mode, extra)
    }
    fn remark(&self, key: &[u8], f: &mut dyn FnMut(&Item) -> Option<Remark>) -> Option<Item> {
        Store::remark(self, key, f)
    }
    fn incr_decr_with(
        &self,
        key: &[u8],
        delta: u64,
        incr: bool,
        rule: CasRule,
    ) -> Result<u64, StoreError> {
        Store::incr_decr_with(self, key, delta, incr, rule)
    }
    fn retime(&self, key: &[u8], expires_at_ms: u64, modify: bool) -> Option<Item> {
        Store::retime(self, key, expires_at_ms, modify)
    }
    fn touch(&self, key: &[u8], expires_at_ms: u64) -> Option<Item> {
        Store::touch(self, key, expires_at_ms)
    }
    fn list_push_with(
        &self,
        key: &[u8],
        values: &[&[u8]],
        front: bool,
        create: bool,
    ) -> Result<usize, StoreError> {
        Store::list_push_with(self, key, values, front, create)
    }
    fn flush_all(&self) {
        Store::flush_all(self)
    }
    fn list_pop(
        &self,
        key: &[u8],
        count: usize,
        front: bool,
    ) -> Result<Option<Vec<granola::Buf>>, StoreError> {
        Store::list_pop(self, key, count, front)
    }
    fn put_list(&self, key: &[u8], values: &[&[u8]], meta: Meta) -> Result<(), StoreError> {
        Store::put_list(self, key, values, meta)
    }
    fn len(&self) -> usize {
        Store::len(self)
    }
    fn now_ms(&self) -> u64 {
        Store::now_ms(self)
    }
    fn stats(&self) -> StoreStats {
        Store::stats(self)
    }
    fn scan(&self, cursor: u64, count: usize, f: &mut dyn FnMut(&[u8], &Item)) -> u64 {
        Store::scan(self, cursor, count, |i| f(i.key(), i))
    }
    fn update_list(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(Option<&Item>) -> ListEdit,
    ) -> Result<(), StoreError> {
        Store::update_list(self, key, |i| (f(i), ()))
    }
    fn update_dict(
        &self,
        key: &[u8],
        kind: Kind,
        growth: Growth,
        f: &mut dyn FnMut(&mut DictEdit<'_, '_>),
    ) -> Result<(), StoreError> {
        Store::update_dict(self, key, kind, growth, f)
    }
    fn shrink_dict(
        &self,
        key: &[u8],
        kind: Kind,
        f: &mut dyn FnMut(&mut DictEdit<'_, '_>),
    ) -> Result<(), StoreError> {
        Store::shrink_dict(self, key, kind, f).map(drop)
    }
    fn put_dict(&self, key: &[u8], kind: Kind, dict: &Dict, meta: Meta) -> Result<(), StoreError> {
        Store::put_dict(self, key, kind, dict, meta)
    }
}
