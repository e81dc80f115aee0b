//! # granola: hybrid zero-copy serialization
//!
//! granola turns a `.proto` schema into Rust types whose bytes and string
//! fields are **copied** when small and **referenced** (ref-counted, zero
//! copy) when large, decided per field by a size threshold — the design of
//! Cornflakes (SOSP'23) on ordinary Linux.
//!
//! The pieces, bottom up:
//!
//! - [`Pool`]: registered memory in size-class slots (four per power of two), with O(1)
//!   [`Pool::recover`] from any `&[u8]` back to its slot.
//! - [`BufMut`] → [`Buf`]: the unique writer of a slot, frozen into an
//!   immutable, clonable, `Send + Sync` view. Slots return to the pool when
//!   the last `Buf` drops, so data referenced by an in-flight send cannot be
//!   reused under it, and shared data cannot be mutated without `unsafe`.
//! - [`Context`]: arena + pool + copy threshold for building and decoding.
//! - [`HybridBytes`] / [`HybridStr`] / [`List`]: field types.
//! - [`Message`] / [`Decode`]: implemented by generated code
//!   (`granola-build`); serialize-and-send friendly.
//! - [`wire`]: the header-first wire format.
//!
//! ## From schema to bytes
//!
//! `build.rs` runs `granola_build::compile_protos(&["schemas/kv.proto"],
//! &["schemas"])` and `src/lib.rs` does `pub mod kv {
//! include!(concat!(env!("OUT_DIR"), "/kv.rs")); }`; the `granola-build`
//! crate docs carry the whole flow as a compiled example. The runtime
//! pieces on their own:
//!
//! ```
//! use granola::{Context, HybridBytes, Pool};
//!
//! let pool = Pool::with_capacity(8 << 20)?;
//! let ctx = Context::new(&pool).with_copy_threshold(512);
//! // A value that lives in registered memory, e.g. a cached item.
//! let value_in_pool = pool.alloc_copy(&[7u8; 4096]).unwrap();
//! // Assigned to a field: large and in the pool, so it will be sent by
//! // reference (its own gather entry), sharing the slot.
//! let field = HybridBytes::new(&value_in_pool, &ctx);
//! assert!(field.is_zero_copy());
//! assert_eq!(value_in_pool.ref_count(), 2);
//! // Small values are copied into the message instead.
//! assert!(!HybridBytes::new(b"small", &ctx).is_zero_copy());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod context;
mod field;
mod message;
#[allow(unsafe_code)] // the buffer room: mmap'd regions, slots, refcounts
mod pool;
pub mod wire;

pub use context::{Context, DEFAULT_COPY_THRESHOLD};
pub use field::{HybridBytes, HybridStr, List};
pub use message::{Decode, Message, Sga};
pub use pool::BufFull;
pub use pool::{
    Buf, BufMut, HugePages, Pool, PoolConfig, PoolStats, MAX_SLOT_SIZE, MIN_SLOT_SIZE, SEGMENT_SIZE,
};
pub use wire::{DecodeError, DecodeErrorKind, DecodeOptions, EncodeError, EncodedSizes};

/// Items used by generated code. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::wire::{
        header_len, present_count, used_words, DecodeCx, Encoder, HeaderReader, ListReader,
        WireScalar, ENTRY_LEN,
    };
    pub use bumpalo::boxed::Box as ArenaBox;
}
