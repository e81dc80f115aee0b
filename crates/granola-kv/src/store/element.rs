//! One field, value or member of a hash or set: on the heap when small, in
//! pool memory when large, so a reply references it instead of copying it
//! (as a string's value or a list element is).
//!
//! ```text
//!  Element::Heap(Box<[u8]>)            below the store's `pooled_element_min`
//!  Element::Pooled(Box<Pooled>) ──► pool slot:
//!     | 3 | 0 | key_len u16 | 0 u32 | body id u64 | key | element bytes |
//! ```
//!
//! - **The slot says who owns it**, in the list chunk's format
//!   (`list::chunk_owner` reads both), and has a pool handle: a segment
//!   drain that meets it evicts the hash or set whose body has that id,
//!   exactly as it evicts a list for one of its chunks. So large elements
//!   never pin a segment the store cannot free.
//! - **Written once.** The slot is frozen before the element is visible;
//!   overwriting a field's value places a new slot. A reply holding the old
//!   value keeps exactly the bytes it was given.
//! - **Clones are heap copies.** The slot belongs to one body (its header
//!   names that body), so a copy (COPY, RENAME, the S*STORE commands)
//!   starts on the heap and the store places it again for its new owner
//!   ([`Dict::place_all`](super::Dict::place_all)).
//! - Both variants are 16 bytes (the pooled one is boxed), so small
//!   entries cost what they did when everything was a `Box<[u8]>`.

use super::list::{chunk_len, write_chunk_header, Alloc};
use granola::{Buf, Pool};
use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// A hash's field or value, or a set's member.
pub enum Element {
    /// Copied into replies.
    Heap(Box<[u8]>),
    /// Referenced by replies.
    Pooled(Box<Pooled>),
}

/// An element in its own pool slot (see the module docs).
pub struct Pooled {
    /// The element's bytes: a sub-`Buf` of the slot.
    bytes: Buf,
    /// The pool handle a segment drain finds the slot by.
    handle: u32,
    /// The slot's size.
    slot: usize,
    pool: Pool,
}

impl Pooled {
    /// A copy of this element's slot in another free slot of its size
    /// class (the owner's header included), or `None` if the pool has
    /// none: what a compaction moves (`Store::compact_segment`). This
    /// element's slot goes back when the last reply holding it drops it.
    fn relocated(&self) -> Option<Box<Pooled>> {
        let slot = self.pool.try_acquire(self.handle)?;
        let start = self.bytes.as_ptr() as usize - slot.as_ptr() as usize;
        let end = start + self.bytes.len();
        let (copy, handle) = super::copy_to_free_slot(&self.pool, &slot[..end], self.slot, 0)?;
        Some(Box::new(Pooled {
            bytes: copy.slice(start..end),
            handle,
            slot: self.slot,
            pool: self.pool.clone(),
        }))
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.pool.release_handle(self.handle);
    }
}

/// Bytes a `Box<Pooled>` takes on the heap.
const POOLED_BOX_BYTES: usize = 64;

impl Element {
    /// `bytes` on the heap.
    pub fn heap(bytes: &[u8]) -> Element {
        Element::Heap(bytes.into())
    }

    /// The element's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Element::Heap(b) => b,
            Element::Pooled(p) => &p.bytes,
        }
    }

    /// The element as a zero-copy `Buf`, if it is in pool memory.
    pub fn buf(&self) -> Option<&Buf> {
        match self {
            Element::Heap(_) => None,
            Element::Pooled(p) => Some(&p.bytes),
        }
    }

    /// Bytes charged to the store's limit: the heap allocation at its
    /// malloc size, or the pool slot's size.
    pub(crate) fn cost(&self) -> usize {
        match self {
            Element::Heap(b) => super::dict::heap_cost(b.len()),
            Element::Pooled(p) => p.slot + POOLED_BOX_BYTES,
        }
    }

    /// Moves this element, if its slot is the one pool handle `handle`
    /// names, to another free slot of the same size (see
    /// [`Pooled::relocated`]): `Some(true)` if it moved, `Some(false)` if
    /// the pool had no free slot, `None` if this is not that element. The
    /// bytes, and so the cost, stay the same.
    pub(crate) fn relocate(&mut self, handle: u32) -> Option<bool> {
        let Element::Pooled(p) = self else {
            return None;
        };
        if p.handle != handle {
            return None;
        }
        Some(match p.relocated() {
            Some(moved) => {
                *p = moved;
                true
            }
            None => false,
        })
    }

    /// The part of [`cost`](Self::cost) in pool memory.
    pub(crate) fn pool_bytes(&self) -> usize {
        match self {
            Element::Heap(_) => 0,
            Element::Pooled(p) => p.slot,
        }
    }
}

impl Clone for Element {
    /// A heap copy (see the module docs).
    fn clone(&self) -> Element {
        Element::heap(self.bytes())
    }
}

impl Deref for Element {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl Borrow<[u8]> for Element {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

impl Hash for Element {
    // As `[u8]` hashes, so lookups by `&[u8]` find it (`Borrow`).
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bytes().hash(state)
    }
}

impl PartialEq for Element {
    fn eq(&self, other: &Element) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Element {}

impl PartialEq<[u8]> for Element {
    fn eq(&self, other: &[u8]) -> bool {
        self.bytes() == other
    }
}

impl std::fmt::Debug for Element {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Element::Heap(b) => write!(f, "Heap({} B)", b.len()),
            Element::Pooled(p) => write!(f, "Pooled({} B)", p.bytes.len()),
        }
    }
}

/// What placing up to `entries` new entries of `bytes` bytes (fields plus
/// values) of the body at `key` in pool memory may cost beyond their heap
/// estimate: slots round up to their size class (at most twice), and
/// each carries the owner's header and a box.
pub(crate) fn placement_bound(entries: usize, bytes: usize, key: &[u8]) -> usize {
    bytes + 2 * entries * (2 * chunk_len(key, 0) + POOLED_BOX_BYTES)
}

/// Where a dict write puts its large elements: slots from the store's
/// allocator (which evicts to make room), owned by body `id` at `key`.
pub(crate) struct Placer<'a> {
    pub pool: &'a Pool,
    pub key: &'a [u8],
    pub id: u64,
    /// Elements of at least this many bytes go to pool memory.
    pub min: usize,
    pub alloc: &'a mut Alloc<'a>,
}

impl Placer<'_> {
    /// `bytes` as an element: in a pool slot if large enough and the pool
    /// has room, else on the heap (still charged; only replies copy it).
    pub fn place(&mut self, bytes: &[u8]) -> Element {
        if bytes.len() < self.min {
            return Element::heap(bytes);
        }
        let Some(mut w) = (self.alloc)(chunk_len(self.key, bytes.len())) else {
            return Element::heap(bytes);
        };
        write_chunk_header(&mut w, self.key, self.id);
        let start = w.len();
        w.extend_from_slice(bytes);
        let slot = w.freeze();
        let slot_size = self.pool.slot_size(&slot);
        let element = slot.slice(start..);
        let Ok(handle) = self.pool.into_handle(slot) else {
            unreachable!("a fresh slot has no handle yet");
        };
        Element::Pooled(Box::new(Pooled {
            bytes: element,
            handle,
            slot: slot_size,
            pool: self.pool.clone(),
        }))
    }
}
