//! Field types used by generated messages.
//!
//! - [`HybridBytes`]: the paper's `CFPtr` — copied when small, a pool
//!   reference ([`Buf`](crate::Buf)) when large, decided once at assignment.
//! - [`HybridStr`]: the same for strings, UTF-8 checked on first access.
//! - [`List`]: arena-backed repeated fields.

mod bytes;
mod list;
mod string;

pub use bytes::HybridBytes;
pub use list::List;
pub use string::HybridStr;
