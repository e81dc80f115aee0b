//! Read-modify-write of a list item under its key's lock: what list, hash
//! and set commands build on (LSET, HSET, SADD...). The whole body is
//! rebuilt: O(n), unlike the pushes and pops at the ends.

use super::{Item, Kind, Meta, Store, StoreError};
use std::sync::atomic::Ordering;

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
        let old = self.find_live(&l, &h, key);
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
                self.sets.fetch_add(1, Ordering::Relaxed);
                Ok(r)
            }
        }
    }
}
