//! Read-modify-write of a collection under its key's lock. Lists (LSET,
//! LREM, LINSERT...) rebuild the whole body: O(n), unlike the pushes and
//! pops at the ends. Hashes, sets and sorted sets are edited in place:
//! O(1) per field, O(log n) per sorted-set member (`dict.rs`).

use super::dict::Charge;
use super::element::{placement_bound, Placer};
use super::index::{Found, Hashed, Locked};
use super::item::{lock_body, Body};
use super::{adjust, Dict, DictEdit, Item, Kind, Meta, Store, StoreError};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// What an update does to the list.
pub enum ListEdit {
    /// Leave it as it is.
    Keep,
    /// Remove the key.
    Delete,
    /// Store these elements (an empty list removes the key, as Redis
    /// does).
    Replace(Vec<Vec<u8>>),
}

impl Store {
    /// Runs `f` on the live item at `key` (None if absent; any kind) while
    /// holding the key's writer lock, and applies the edit it returns.
    /// A new list keeps the old item's flags and expiry (none if it is
    /// new). Returns `f`'s result, or the store's error (`TooLarge`,
    /// `OutOfMemory`) if the new list cannot be stored.
    pub fn update_list<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&Item>) -> (ListEdit, R),
    ) -> Result<R, StoreError> {
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut old = None;
        self.find_live(&l, &h, key, &mut old);
        let (edit, r) = f(old.as_ref().map(|found| &found.item));
        match edit {
            ListEdit::Keep => Ok(r),
            ListEdit::Delete => {
                if let Some(found) = &old {
                    self.remove(&l, found.pos, &found.item);
                }
                Ok(r)
            }
            ListEdit::Replace(elems) if elems.is_empty() => {
                if let Some(found) = &old {
                    self.remove(&l, found.pos, &found.item);
                }
                Ok(r)
            }
            ListEdit::Replace(elems) => {
                let slices: Vec<&[u8]> = elems.iter().map(Vec::as_slice).collect();
                let meta = match &old {
                    Some(found) if found.item.kind() == Kind::List => Meta {
                        flags: found.item.flags(),
                        expires_at_ms: found.item.expires_at_ms(),
                    },
                    _ => Meta::default(),
                };
                self.put_list_locked(&l, &h, key, &slices, meta, old.as_ref())?;
                l.count_write();
                Ok(r)
            }
        }
    }
}

/// What a hash or set write may add, for the store to reserve before it
/// runs: up to `entries` new entries holding `bytes` bytes in all (fields
/// plus values). An overestimate only makes the write evict a little more
/// first; an underestimate lets the store pass its limit by the difference.
#[derive(Clone, Copy, Debug, Default)]
pub struct Growth {
    /// New entries, at most.
    pub entries: usize,
    /// Their fields' and values' bytes (or a replaced value's), at most.
    pub bytes: usize,
}

impl Store {
    /// Runs `f` on the hash, set, sorted set or stream (`kind`) at `key`
    /// under the key's lock, creating an empty one if absent (stored only
    /// if `f` writes to it and, unless it is a stream, leaves entries in
    /// it). `WrongType` if `key` holds another kind (or `kind` is not one
    /// of those four); `OutOfMemory` if
    /// `growth` cannot be made room for (then `f` does not run). A write
    /// gives the table a new CAS (what [`Item::cas`] reports for it, and
    /// WATCH compares); emptying it removes the key. O(what `f` does): the
    /// table is edited in place and the head item is not rewritten.
    /// Fields, values and members of at least
    /// [`StoreConfig::pooled_element_min`](super::StoreConfig) bytes go to
    /// pool memory (not a sorted set's).
    pub fn update_dict<R>(
        &self,
        key: &[u8],
        kind: Kind,
        growth: Growth,
        f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
    ) -> Result<R, StoreError> {
        let (h, l) = self.lock_dict(key, kind)?;
        let mut found = None;
        self.find_live(&l, &h, key, &mut found);
        match &found {
            Some(found) => self.edit_stored_dict(&l, found, key, kind, growth, f),
            None => self.create_dict(&l, &h, key, kind, growth, f),
        }
    }

    /// [`update_dict`](Self::update_dict) for an edit that only removes
    /// (SREM, SPOP, HDEL, ZREM...): `None`, and `f` does not run, if `key`
    /// is absent. A miss then builds no table to throw away.
    pub fn shrink_dict<R>(
        &self,
        key: &[u8],
        kind: Kind,
        f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
    ) -> Result<Option<R>, StoreError> {
        let (h, l) = self.lock_dict(key, kind)?;
        let mut found = None;
        self.find_live(&l, &h, key, &mut found);
        match &found {
            Some(found) => self
                .edit_stored_dict(&l, found, key, kind, Growth::default(), f)
                .map(Some),
            None => Ok(None),
        }
    }

    /// The hash of `key` and its lock, for an edit of a table of `kind`.
    #[inline(always)]
    fn lock_dict(&self, key: &[u8], kind: Kind) -> Result<(Hashed, Locked<'_>), StoreError> {
        if !kind.is_dict() {
            return Err(StoreError::WrongType);
        }
        self.check_len(key, 0)?;
        let h = self.hash(key);
        let l = self.lock(&h);
        Ok((h, l))
    }

    /// [`update_dict`](Self::update_dict) on the stored table `found`.
    #[inline(always)]
    fn edit_stored_dict<R>(
        &self,
        l: &Locked<'_>,
        found: &Found,
        key: &[u8],
        kind: Kind,
        growth: Growth,
        f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
    ) -> Result<R, StoreError> {
        if found.item.kind() != kind {
            return Err(StoreError::WrongType);
        }
        let (Some(id), Some(body)) = (found.item.body_id(), found.item.body()) else {
            return Err(StoreError::OutOfMemory);
        };
        let mut guard = lock_body(body);
        let Body::Dict(d) = &mut *guard else {
            return Err(StoreError::WrongType);
        };
        let (r, changed) = self.edit_dict(l, key, Some(id), d, growth, f)?;
        // An empty stream stays (Redis keeps it, with its last ID).
        let empty = d.is_empty() && !d.is_stream();
        drop(guard);
        if changed {
            l.count_write();
            if empty {
                self.remove(l, found.pos, &found.item);
            } else {
                self.mark_written(&found.item);
            }
        }
        Ok(r)
    }

    /// [`update_dict`](Self::update_dict) on a missing key: `f` edits a
    /// fresh table, which is stored only if `f` leaves something in it. An
    /// edit that declares no growth and misses (XDEL, XTRIM... on no key)
    /// shares and allocates nothing.
    #[inline(never)]
    fn create_dict<R>(
        &self,
        l: &Locked<'_>,
        h: &Hashed,
        key: &[u8],
        kind: Kind,
        growth: Growth,
        f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
    ) -> Result<R, StoreError> {
        // An edit that declares no growth (a stream's removals; those of
        // hashes, sets and sorted sets take `shrink_dict`) leaves the fresh
        // table empty: it gets its id only if it is kept,
        // and places nothing in pool memory meanwhile (see `edit_dict`).
        let adds = growth.entries != 0 || growth.bytes != 0;
        let id = adds.then(|| self.next_list_id.fetch_add(1, Ordering::Relaxed));
        let mut d = match kind {
            Kind::ZSet => Dict::sorted(),
            Kind::Stream => Dict::stream(),
            _ => Dict::default(),
        };
        let (r, changed) = self.edit_dict(l, key, id, &mut d, growth, f)?;
        if !changed {
            return Ok(r);
        }
        let id = id.unwrap_or_else(|| self.next_list_id.fetch_add(1, Ordering::Relaxed));
        l.count_write();
        if d.is_empty() && !d.is_stream() {
            self.settle_dict(d.bytes(), Charge::default(), 0);
            return Ok(r);
        }
        self.publish_body(id, Arc::new(Mutex::new(Body::Dict(d))));
        if let Err(e) = self.put_head(l, h, key, kind, id, Meta::default(), None) {
            self.drop_body(id);
            return Err(e);
        }
        Ok(r)
    }

    /// Runs `f` on table `d` (body `id` of `key`): makes room for `growth`
    /// first (the body is locked, or not shared yet, while the store makes
    /// room: eviction skips it), settles the charge after, and gives a
    /// changed table a new CAS (see `Dict::cas`: a write to a stored hash
    /// leaves the head item alone). Returns `f`'s result and whether the
    /// table changed.
    #[inline(always)]
    fn edit_dict<R>(
        &self,
        l: &Locked<'_>,
        key: &[u8],
        id: Option<u64>,
        d: &mut Dict,
        growth: Growth,
        f: impl FnOnce(&mut DictEdit<'_, '_>) -> R,
    ) -> Result<(R, bool), StoreError> {
        let min = self.config.pooled_element_min;
        let reserved = match growth {
            Growth {
                entries: 0,
                bytes: 0,
            } => 0,
            g if g.bytes >= min => {
                d.growth_bound(g.entries, g.bytes) + placement_bound(g.entries, g.bytes, key)
            }
            g => d.growth_bound(g.entries, g.bytes),
        };
        if !self.reserve(reserved, Some(l)) {
            return Err(StoreError::OutOfMemory);
        }
        let (before, writes) = (d.bytes(), d.writes());
        // Without an id (a table not stored yet, by an edit that adds
        // nothing) every element it might add stays on the heap.
        let mut alloc = |n: usize| id.and_then(|_| self.alloc_slot(l, n));
        let mut placer = Placer {
            pool: &self.pool,
            key,
            id: id.unwrap_or(0),
            min,
            alloc: &mut alloc,
        };
        let r = f(&mut DictEdit::new(d, &mut placer));
        let after = d.bytes();
        self.settle_dict(before, after, reserved);
        if after.bytes > before.bytes + reserved {
            // The table grew past the estimate (a rehash after removals):
            // it is charged; evict until the store is under its limit again.
            self.reserve(0, Some(l));
        }
        let changed = d.writes() != writes;
        if changed {
            d.set_cas(self.new_cas());
        }
        Ok((r, changed))
    }

    /// Replaces whatever `key` holds with a copy of `dict` as a `kind`
    /// (hash, set, sorted set or stream of that shape: `WrongType`
    /// otherwise); an empty `dict` other than a stream removes the key. For COPY, RENAME and the S*STORE commands.
    pub fn put_dict(
        &self,
        key: &[u8],
        kind: Kind,
        dict: &Dict,
        meta: Meta,
    ) -> Result<(), StoreError> {
        let shape_ok = match kind {
            Kind::ZSet => dict.is_sorted(),
            Kind::Stream => dict.is_stream(),
            Kind::Hash | Kind::Set => !dict.is_sorted() && !dict.is_stream(),
            Kind::String | Kind::List => false,
        };
        if !shape_ok {
            return Err(StoreError::WrongType);
        }
        self.check_len(key, 0)?;
        let h = self.hash(key);
        let l = self.lock(&h);
        let mut old = None;
        self.find_live(&l, &h, key, &mut old);
        if dict.is_empty() && !dict.is_stream() {
            if let Some(found) = &old {
                self.remove(&l, found.pos, &found.item);
            }
            return Ok(());
        }
        let mut copy = dict.clone();
        copy.set_cas(self.new_cas());
        let id = self.next_list_id.fetch_add(1, Ordering::Relaxed);
        // Reserve as if every element stayed on the heap: placing one in
        // pool memory then only moves its charge (settled below).
        let heap = copy.bytes().bytes;
        if !self.reserve(heap, Some(&l)) {
            return Err(StoreError::OutOfMemory);
        }
        let mut alloc = |n: usize| self.alloc_slot(&l, n);
        copy.place_all(&mut Placer {
            pool: &self.pool,
            key,
            id,
            min: self.config.pooled_element_min,
            alloc: &mut alloc,
        });
        let bytes = copy.bytes();
        self.settle_dict(Charge::default(), bytes, heap);
        if bytes.bytes > heap {
            self.reserve(0, Some(&l));
        }
        self.publish_body(id, Arc::new(Mutex::new(Body::Dict(copy))));
        if let Err(e) = self.put_head(&l, &h, key, kind, id, meta, old.as_ref()) {
            self.drop_body(id);
            return Err(e);
        }
        l.count_write();
        Ok(())
    }

    /// Settles a dict write's accounting: its bytes went from `before` to
    /// `after`, `reserved` bytes were reserved up front.
    fn settle_dict(&self, before: Charge, after: Charge, reserved: usize) {
        adjust(&self.item_bytes, after.bytes, before.bytes);
        adjust(&self.dict_bytes, after.heap(), before.heap());
        adjust(&self.accounted, after.bytes, before.bytes + reserved);
    }
}

/// The flags and expiry of `item`, for the item that replaces it.
pub(super) fn meta_of(item: &Item) -> Meta {
    Meta {
        flags: item.flags(),
        expires_at_ms: item.expires_at_ms(),
    }
}
