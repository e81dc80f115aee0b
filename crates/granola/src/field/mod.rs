//! Field types used by generated messages.
//!
//! - [`HybridBytes`]: the paper's `CFPtr` — borrowed, owned, or a pool
//!   reference ([`Buf`](crate::Buf)) that is sent without copying when large.
//! - [`HybridStr`]: the same for strings, UTF-8 checked on first access.
//!
//! Repeated fields are `Vec`s, maps are `BTreeMap`s (sorted, so a message
//! always encodes to the same bytes) and nested messages are `Option`s,
//! boxed where the schema is recursive, as in prost.

mod bytes;
mod string;

pub use bytes::HybridBytes;
pub use string::HybridStr;
