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
//! - [`HybridBytes`] / [`HybridStr`]: bytes and string field types —
//!   borrowed, owned, or a pool reference sent by reference when large.
//! - [`Message`] / [`Decode`] / [`IntoOwned`]: implemented by generated code
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
//! use granola::{HybridBytes, Pool, Message};
//!
//! let pool = Pool::with_capacity(8 << 20)?;
//! // A value that lives in registered memory, e.g. a cached item.
//! let value_in_pool = pool.alloc_copy(&[7u8; 4096]).unwrap();
//! // Assigned to a field it shares the slot (a reference-count increment).
//! let field = HybridBytes::from(value_in_pool.clone());
//! assert!(field.is_shared());
//! assert_eq!(value_in_pool.ref_count(), 2);
//! // Borrowed and owned bytes are copied into the message when it is
//! // serialized; pool references at or above the serializer's copy
//! // threshold (`Message::encoded_sizes_with`) go by reference.
//! assert!(!HybridBytes::from(&b"small"[..]).is_shared());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![deny(unsafe_code)]

mod codec;
mod field;
mod macros;
mod message;
#[allow(unsafe_code)] // the buffer room: mmap'd regions, slots, refcounts
mod pool;
mod short_bytes;
mod unknown;
pub mod wire;

pub use field::{HybridBytes, HybridStr};
pub use message::{Decode, IntoOwned, Message, MessageType, Sga};
pub use short_bytes::{copy_short, eq_short};
pub use unknown::UnknownFields;

/// The default copy threshold in bytes: pool references at least this large
/// are sent by reference; smaller values are copied.
///
/// Cornflakes measured 512 B on ConnectX-5 NICs. On ordinary Linux the
/// "NIC" is the kernel's gather in `sendmsg`, where every extra iovec of cold
/// data costs a serialized DRAM miss (300–550 ns measured on our dev box);
/// with the datapath's prefetch the gather-vs-copy crossover sits at
/// 0.5–1 KiB pieces, so we pick the upper end. A datapath calibrates its own
/// and passes it to [`Message::encoded_sizes_with`].
pub const DEFAULT_COPY_THRESHOLD: usize = 1024;
pub use pool::BufFull;
pub use pool::{
    Buf, BufMut, HugePages, Pool, PoolConfig, PoolStats, MAX_SLOT_SIZE, MIN_SLOT_SIZE, SEGMENT_SIZE,
};
pub use wire::{DecodeError, DecodeErrorKind, DecodeOptions, EncodeError, EncodedSizes};

/// Items used by generated code. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::codec::{known_bitmap, set_bit, slot_of, Element, FieldCodec};
    pub use crate::wire::{
        header_len, present_count, used_words, DecodeCx, Encoder, HeaderReader, ListReader,
        WireScalar, ENTRY_LEN,
    };

    /// The error a oneof gives if asked to read a list entry (never: the
    /// generator does not emit repeated oneofs).
    pub fn oneof_in_list() -> crate::DecodeError {
        crate::DecodeError {
            kind: crate::DecodeErrorKind::OutOfBounds,
            field: 0,
        }
    }
}
