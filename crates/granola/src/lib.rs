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
//! ```ignore
//! // build.rs
//! granola_build::compile_protos(&["schemas/kv.proto"], &["schemas"]).unwrap();
//! // lib.rs
//! include!(concat!(env!("OUT_DIR"), "/kv.rs"));
//!
//! let pool = granola::Pool::with_capacity(64 << 20)?;
//! let ctx = granola::Context::new(&pool);
//! let mut m = kv::GetM::new(&ctx);
//! m.set_id(7);
//! m.append_keys("user:1");
//! m.append_vals(&value_in_pool);   // >= threshold and in the pool: referenced
//! let sizes = m.encoded_sizes();
//! m.encode(&sizes, &mut tx_buf, |zero_copy| iovecs.push(zero_copy.clone()))?;
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
