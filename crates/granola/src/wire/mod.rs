//! The granola wire format: header first, data after, copied before
//! zero-copy. Full description with worked examples: `docs/wire-format.md`.
//!
//! ```text
//! object = header region | copy region | zero-copy region
//!
//! header of one message (all integers little-endian):
//!  0        4                  4+4W
//!  +--------+------------------+--------+-----+--------+--------+-----+--------+
//!  | W: u32 | bitmap: W x u32  | slot 1 | ... | slot k | kind 1 | ... | kind k |
//!  +--------+------------------+--------+-----+--------+--------+-----+--------+
//!   bit n-1 of the bitmap set  <=> field number n present
//!   k = number of set bits; every slot is 8 bytes, in field-number order;
//!   then one kind byte per slot (see [`kind`]), so a reader that does not
//!   know a field can still copy it
//!
//! slot contents by field kind:
//!   scalar                 u64 (ints sign/zero-extended, floats as bits)
//!   bytes / string         u32 len    | u32 offset of the data
//!   nested message         u32 header length | u32 offset of its header
//!   repeated (any)         u32 count  | u32 offset of the entry array
//!
//! entry arrays (in the header region, after the headers that point to them):
//!   repeated bool          count x u8
//!   repeated 32-bit        count x u32 (int32/sint32/sfixed32 two's complement, float bits)
//!   repeated 64-bit        count x u64
//!   repeated bytes/string  count x (u32 len | u32 offset)
//!   repeated message       count x (u32 header length | u32 offset)
//! ```
//!
//! Offsets count from the first byte of the root header. Fixed-size slots
//! make every field's slot findable with a popcount and let old readers skip
//! fields added later (their bits are set, their slots simply not read).
//!
//! Reading untrusted input goes through [`HeaderReader::new_checked`] and the
//! accessors here, which bounds-check every offset with checked arithmetic
//! and charge every list element and nested header against a budget (see
//! [`DecodeOptions`]); no accessor panics or reads out of bounds.

mod reader;
mod scalar;
mod writer;

pub use reader::{DecodeCx, HeaderReader, ListReader};
pub use scalar::WireScalar;
pub use writer::{EncodedSizes, Encoder};

/// Largest field number the format (and granola-build) accepts: the bitmap
/// of a message then fits in 1024 words.
pub const MAX_FIELD_NUMBER: u32 = 32_768;

/// Bytes per header slot.
pub const SLOT_LEN: usize = 8;

/// Bytes per present field in a header: its slot and its kind byte.
pub const FIELD_LEN: usize = SLOT_LEN + 1;

/// What a slot holds, written after the slots (one byte per present field,
/// in slot order): enough for a reader without the field's schema to
/// follow its data and re-encode it (unknown fields survive a re-encode).
pub mod kind {
    /// A scalar: the slot is the value.
    pub const SCALAR: u8 = 0;
    /// `bytes` or `string`: `(len, offset)`.
    pub const BYTES: u8 = 1;
    /// A nested message: `(header length, offset)`.
    pub const MESSAGE: u8 = 2;
    /// A repeated 1-byte scalar (`bool`): `(count, offset)` of the entries.
    pub const LIST_1: u8 = 3;
    /// A repeated 32-bit scalar.
    pub const LIST_4: u8 = 4;
    /// A repeated 64-bit scalar.
    pub const LIST_8: u8 = 5;
    /// A repeated `bytes` or `string`: entries are `(len, offset)`.
    pub const LIST_BYTES: u8 = 6;
    /// A repeated message or a map: entries are `(header length, offset)`.
    pub const LIST_MESSAGE: u8 = 7;

    /// The list kind of elements `width` bytes wide (scalars only).
    pub const fn scalar_list(width: usize) -> u8 {
        match width {
            1 => LIST_1,
            4 => LIST_4,
            _ => LIST_8,
        }
    }
}

/// Bytes in a `(len, offset)` or `(count, offset)` pair.
pub const ENTRY_LEN: usize = 8;

/// Header length of a message with `words` bitmap words and `present`
/// present fields.
#[inline]
pub const fn header_len(words: usize, present: usize) -> usize {
    4 + 4 * words + FIELD_LEN * present
}

/// Number of bitmap words actually needed (trailing zero words dropped).
#[inline]
pub fn used_words(bitmap: &[u32]) -> usize {
    bitmap.iter().rposition(|&w| w != 0).map_or(0, |i| i + 1)
}

/// Number of present fields in a bitmap.
#[inline]
pub fn present_count(bitmap: &[u32]) -> usize {
    bitmap.iter().map(|w| w.count_ones() as usize).sum()
}

/// Limits applied while decoding untrusted bytes (like capnp's
/// `ReaderOptions`). Exceeding one yields a [`DecodeError`], never a panic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Deepest nesting of messages (the root is depth 0).
    pub max_depth: u32,
    /// Largest bitmap (in 32-bit words) of any header. One word (fields
    /// 1 to 32) is always allowed: 0 acts as 1, so the readers' one-word
    /// fast path needs no look at this limit.
    pub max_bitmap_words: u32,
    /// Longest single list.
    pub max_list_len: u32,
    /// Total list elements plus headers decoded from one message. The
    /// decoder also never allows more items than the input has bytes, so
    /// aliased offsets cannot amplify the *work* beyond one item per input
    /// byte.
    pub max_items: usize,
    /// Memory bound: decoded structs and list storage (what the decoder
    /// allocates; bytes fields reference the input and are not counted)
    /// may take at most `decoded_bytes_per_input_byte * input_len +
    /// DECODE_SLACK_BYTES` bytes, and never more than `max_decoded_bytes`.
    /// A schema whose sparse messages are much larger in memory than on
    /// the wire may need a larger factor.
    pub decoded_bytes_per_input_byte: usize,
    /// Absolute cap on decoded memory, whatever the input length.
    pub max_decoded_bytes: usize,
    /// Longest input accepted.
    pub max_message_len: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        DecodeOptions {
            max_depth: 64,
            max_bitmap_words: MAX_FIELD_NUMBER / 32,
            max_list_len: 1 << 24,
            max_items: 1 << 22,
            decoded_bytes_per_input_byte: 16,
            max_decoded_bytes: 256 << 20,
            max_message_len: 1 << 30,
        }
    }
}

/// Decoded memory every input may use regardless of its length (enough for
/// the root struct of any reasonable message).
pub const DECODE_SLACK_BYTES: usize = 64 << 10;

impl DecodeOptions {
    /// The decoded-memory budget for an input of `input_len` bytes:
    /// `min(max_decoded_bytes, decoded_bytes_per_input_byte * input_len +
    /// DECODE_SLACK_BYTES)`.
    #[inline]
    pub fn decoded_bytes_limit(&self, input_len: usize) -> usize {
        self.decoded_bytes_per_input_byte
            .saturating_mul(input_len)
            .saturating_add(DECODE_SLACK_BYTES)
            .min(self.max_decoded_bytes)
    }
}

/// What was wrong with the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The input ends inside a header, slot or entry array.
    Truncated,
    /// A bitmap is larger than `max_bitmap_words`.
    BitmapTooLarge,
    /// An offset/length pair points outside the input.
    OutOfBounds,
    /// Nesting deeper than `max_depth`.
    TooDeep,
    /// A list longer than `max_list_len`.
    ListTooLong,
    /// More items than `max_items` (or than the input has bytes).
    TooManyItems,
    /// The input is longer than `max_message_len`.
    MessageTooLarge,
    /// A nested header's stated length disagrees with its bitmap.
    BadHeaderLen,
    /// A string field is not UTF-8 (read-only views check on access).
    InvalidUtf8,
    /// Decoded structs and lists would take more memory than the budget
    /// ([`DecodeOptions::decoded_bytes_limit`]) allows.
    DecodedTooLarge,
}

/// A decode failure: what went wrong and in which field (the field number
/// within the innermost message being read; 0 for the header itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The kind of failure.
    pub kind: DecodeErrorKind,
    /// The field number being read, or 0.
    pub field: u32,
}

impl DecodeError {
    #[inline]
    pub(crate) fn new(kind: DecodeErrorKind, field: u32) -> DecodeError {
        DecodeError { kind, field }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            DecodeErrorKind::Truncated => "input truncated",
            DecodeErrorKind::BitmapTooLarge => "presence bitmap too large",
            DecodeErrorKind::OutOfBounds => "offset or length out of bounds",
            DecodeErrorKind::TooDeep => "messages nested too deeply",
            DecodeErrorKind::ListTooLong => "list too long",
            DecodeErrorKind::TooManyItems => "too many items",
            DecodeErrorKind::MessageTooLarge => "message too large",
            DecodeErrorKind::BadHeaderLen => "nested header length mismatch",
            DecodeErrorKind::DecodedTooLarge => "decoded message exceeds the memory budget",
            DecodeErrorKind::InvalidUtf8 => "string field is not UTF-8",
        };
        if self.field == 0 {
            write!(f, "granola decode: {what}")
        } else {
            write!(f, "granola decode: field {}: {what}", self.field)
        }
    }
}

impl std::error::Error for DecodeError {}

/// An encode failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The buffer given to `encode` is smaller than header + copy length.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        given: usize,
    },
    /// The object is larger than the format's 4 GiB offsets allow.
    TooLarge,
    /// The `EncodedSizes` passed to `encode` do not match the message
    /// (it changed after `encoded_sizes`, or the sizes were made up).
    StaleSizes,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::BufferTooSmall { needed, given } => {
                write!(f, "granola encode: buffer of {given} bytes, need {needed}")
            }
            EncodeError::TooLarge => f.write_str("granola encode: object larger than 4 GiB"),
            EncodeError::StaleSizes => {
                f.write_str("granola encode: sizes do not match the message (stale EncodedSizes)")
            }
        }
    }
}

impl std::error::Error for EncodeError {}
