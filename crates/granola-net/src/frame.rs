//! Length-prefixed frames for message protocols over TCP and UDP.
//!
//! Every native message travels as one frame:
//!
//! ```text
//!  0        4      6      8        12
//!  +--------+------+------+--------+--------------------------+
//!  | len    | kind | flags| id     | payload (len bytes)      |
//!  | u32 LE |u16 LE|u16 LE| u32 LE | e.g. a granola object    |
//!  +--------+------+------+--------+--------------------------+
//! ```
//!
//! `len` counts payload bytes only. `kind` is the application's message type
//! (the KV server's request type; echo uses 0), `id` lets clients match
//! responses to requests (UDP reorders; open-loop TCP clients use it as a
//! check), and `flags` bit 0 marks a response. Over UDP a datagram holds
//! exactly one frame, and `len` must equal the datagram's remaining bytes.

/// Bytes in a frame header.
pub const FRAME_HEADER_LEN: usize = 12;

/// `flags` bit marking a response frame.
pub const FLAG_RESPONSE: u16 = 1;

/// Default cap on a frame's payload (the largest message a connection
/// accepts; larger ones close the connection). 64 MiB.
pub const DEFAULT_MAX_FRAME: usize = 64 << 20;

/// A decoded frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FrameHeader {
    /// Payload length in bytes (not counting this header).
    pub len: u32,
    /// Application message type.
    pub kind: u16,
    /// Bit flags ([`FLAG_RESPONSE`]).
    pub flags: u16,
    /// Request id, echoed in the response.
    pub id: u32,
}

impl FrameHeader {
    /// Writes the header into the first [`FRAME_HEADER_LEN`] bytes of `out`.
    ///
    /// # Panics
    /// If `out` is shorter than [`FRAME_HEADER_LEN`].
    pub fn write(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.len.to_le_bytes());
        out[4..6].copy_from_slice(&self.kind.to_le_bytes());
        out[6..8].copy_from_slice(&self.flags.to_le_bytes());
        out[8..12].copy_from_slice(&self.id.to_le_bytes());
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; FRAME_HEADER_LEN] {
        let mut b = [0u8; FRAME_HEADER_LEN];
        self.write(&mut b);
        b
    }

    /// Reads a header from the start of `bytes`; `None` if fewer than
    /// [`FRAME_HEADER_LEN`] bytes are available.
    pub fn read(bytes: &[u8]) -> Option<FrameHeader> {
        let b: &[u8; FRAME_HEADER_LEN] = bytes.get(..FRAME_HEADER_LEN)?.try_into().ok()?;
        Some(FrameHeader {
            len: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            kind: u16::from_le_bytes([b[4], b[5]]),
            flags: u16::from_le_bytes([b[6], b[7]]),
            id: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        })
    }

    /// Whether this frame is a response.
    pub fn is_response(&self) -> bool {
        self.flags & FLAG_RESPONSE != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_layout() {
        let h = FrameHeader {
            len: 0x0403_0201,
            kind: 0x0605,
            flags: FLAG_RESPONSE,
            id: 0x0c0b_0a09,
        };
        let b = h.to_bytes();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 1, 0, 9, 10, 11, 12]);
        assert_eq!(FrameHeader::read(&b), Some(h));
        assert!(h.is_response());
        assert_eq!(FrameHeader::read(&b[..11]), None);
    }
}
