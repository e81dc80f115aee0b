//! The floors: what any serializer must at least do.
//!
//! * `memcpy`: copy every field (and the id of `IdPair`) into one contiguous
//!   reused buffer, no header; no decoder.
//! * `iovec-only`: build an iovec-style `(ptr, len)` list of the fields, no
//!   copy at all (gather I/O would hand it to `sendmsg`); no decoder.
//! * `handwritten`: a minimal header-first format — the hand-written
//!   header-only floor that granola's decode is compared with:
//!   `u32 count, u32 id, count × (u32 len, u32 offset)` (little endian,
//!   offsets from the start of the message), then the copied field bytes.
//!   Decode parses the header, bounds-checks every field and touches its
//!   first byte; strings are not UTF-8 validated (bytes only).

use std::hint::black_box;

use super::shapes::{touch, MsgKind, ShapeSet};
use super::{encode_all, SerLib};

/// Copy-everything floor.
#[derive(Default)]
pub struct Memcpy {
    out: Vec<u8>,
}

impl SerLib for Memcpy {
    fn name(&self) -> &str {
        "memcpy"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.out = Vec::with_capacity(set.max_payload_bytes() + 4);
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        self.out.clear();
        if set.kind() == MsgKind::IdPair {
            self.out.extend_from_slice(&set.id(i).to_le_bytes());
        }
        for f in set.fields(i) {
            self.out.extend_from_slice(f);
        }
        black_box(&self.out);
        self.out.len()
    }

    fn decode_touch(&mut self, _wire_index: usize) -> u64 {
        0
    }

    fn can_decode(&self) -> bool {
        false
    }
}

/// Gather floor: an iovec list, no copy.
#[derive(Default)]
pub struct IovecOnly {
    /// `(iov_base, iov_len)` pairs, as `libc::iovec` would hold them.
    iov: Vec<(*const u8, usize)>,
}

impl SerLib for IovecOnly {
    fn name(&self) -> &str {
        "iovec-only"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        let n = (0..set.len()).map(|i| set.num_fields(i)).max().unwrap_or(0);
        self.iov = Vec::with_capacity(n + 1);
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        self.iov.clear();
        let mut total = 0;
        if set.kind() == MsgKind::IdPair {
            let id: *const u32 = set.id_ref(i);
            self.iov.push((id.cast::<u8>(), 4));
            total += 4;
        }
        for f in set.fields(i) {
            self.iov.push((f.as_ptr(), f.len()));
            total += f.len();
        }
        black_box(&self.iov);
        total
    }

    fn decode_touch(&mut self, _wire_index: usize) -> u64 {
        0
    }

    fn can_decode(&self) -> bool {
        false
    }
}

/// Minimal hand-written header-first format (see the module docs).
#[derive(Default)]
pub struct Handwritten {
    out: Vec<u8>,
    wire: Vec<Vec<u8>>,
    /// Whether the id counts in the checksum (only `IdPair` has an id).
    with_id: bool,
}

impl Handwritten {
    /// Encodes message `i` of `set` into `out` (cleared first); returns its length.
    pub fn encode(out: &mut Vec<u8>, set: &ShapeSet, i: usize) -> usize {
        out.clear();
        let refs = set.field_refs(i);
        let header = 8 + 8 * refs.len();
        out.extend_from_slice(&(refs.len() as u32).to_le_bytes());
        out.extend_from_slice(&set.id(i).to_le_bytes());
        let mut off = header;
        for f in refs {
            out.extend_from_slice(&(f.len as u32).to_le_bytes());
            out.extend_from_slice(&(off as u32).to_le_bytes());
            off += f.len;
        }
        for &f in refs {
            out.extend_from_slice(set.bytes(f));
        }
        out.len()
    }

    /// Parses a message and touches its fields; `None` if it is malformed.
    pub fn decode(buf: &[u8], with_id: bool) -> Option<u64> {
        let word = |at: usize| -> Option<usize> {
            let b = buf.get(at..at + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        let count = word(0)?;
        let mut sum = if with_id { word(4)? as u64 } else { 0 };
        let header = buf.get(8..8 + count.checked_mul(8)?)?;
        for e in header.chunks_exact(8) {
            let len = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize;
            let off = u32::from_le_bytes([e[4], e[5], e[6], e[7]]) as usize;
            let field = buf.get(off..off.checked_add(len)?)?;
            sum = sum.wrapping_add(touch(field));
        }
        Some(sum)
    }
}

impl SerLib for Handwritten {
    fn name(&self) -> &str {
        "handwritten"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.with_id = set.kind() == MsgKind::IdPair;
        self.out = Vec::with_capacity(set.max_payload_bytes() + 8 + 8 * 64);
        self.wire = encode_all(set, &mut self.out, Self::encode);
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        let n = Self::encode(&mut self.out, set, i);
        black_box(&self.out);
        n
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        Self::decode(&self.wire[wire_index], self.with_id).expect("malformed handwritten message")
    }
}
