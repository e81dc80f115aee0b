//! [`List`]: a repeated field stored in the message's arena.

use bumpalo::collections::Vec as ArenaVec;
use bumpalo::Bump;

/// A growable list in a [`Context`](crate::Context)'s arena, used for every
/// repeated field. Dereferences to a slice for reading and iteration.
/// Dropping it drops its elements (releasing any `Buf` references) but the
/// memory returns only when the arena is reset.
pub struct List<'a, T> {
    items: ArenaVec<'a, T>,
}

impl<'a, T> List<'a, T> {
    /// An empty list with room for `capacity` elements.
    #[inline]
    pub fn with_capacity_in(capacity: usize, arena: &'a Bump) -> List<'a, T> {
        List {
            items: ArenaVec::with_capacity_in(capacity, arena),
        }
    }

    /// Appends an element.
    #[inline]
    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    /// Removes all elements.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.items
    }
}

impl<T> std::ops::Deref for List<'_, T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<'l, T> IntoIterator for &'l List<'_, T> {
    type Item = &'l T;
    type IntoIter = std::slice::Iter<'l, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for List<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.items.iter()).finish()
    }
}
