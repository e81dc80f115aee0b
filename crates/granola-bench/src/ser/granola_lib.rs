//! granola's own variants (hybrid / only-copy / only-reference) — to be
//! filled in by the granola runtime owner.
//!
//! Add one type per variant implementing [`super::SerLib`] and return them
//! from [`libs`], which [`super::all_libs`] already registers (after the
//! floors, before the peers). Sketch:
//!
//! ```ignore
//! pub struct GranolaHybrid { /* pool, reused output, wire buffers */ }
//! impl SerLib for GranolaHybrid {
//!     fn name(&self) -> &str { "granola-hybrid" }
//!     fn prepare(&mut self, set: &ShapeSet) {
//!         // copy set.fields(i) of every i into the pool; pre-serialize
//!         // every message into its own Vec for decode_touch
//!     }
//!     fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize { /* ... */ }
//!     fn decode_touch(&mut self, w: usize) -> u64 {
//!         // sum of shapes::touch(field) over all bytes/string fields
//!         // (+ id for MsgKind::IdPair) == set.checksum(w)
//!     }
//! }
//! ```

use super::SerLib;

/// granola's variants, in report order.
pub fn libs() -> Vec<Box<dyn SerLib>> {
    Vec::new()
}
