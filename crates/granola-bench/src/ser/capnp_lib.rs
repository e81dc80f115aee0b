//! capnp 0.27 (generated code checked in: `gen/shapes_capnp.rs`).
//!
//! Serialize: build the message in a `message::Builder` over a reused
//! `ScratchSpaceHeapAllocator` whose scratch space holds the whole message
//! (one segment; the allocator re-zeroes the used words when the builder is
//! dropped — part of the cost). The wire message is what
//! `capnp::serialize::write_message` would send: the segment table (computed,
//! 8 bytes for one segment) followed by the segments as returned by
//! `get_segments_for_output()`, i.e. ready for a 2-piece `sendmsg` with no
//! copy into a contiguous buffer.
//! Decode: `serialize::read_message_from_flat_slice_no_alloc` over an
//! 8-byte-aligned copy of the flat message, then the generated readers;
//! strings are read with `get_value()?.to_str()?` (the `&str` accessor a
//! normal user calls), which validates UTF-8 (`Data` is not validated).

use std::hint::black_box;

use capnp::message::{Builder, ReaderOptions, ScratchSpaceHeapAllocator};
use capnp::Word;

use super::shapes::{touch, MsgKind, ShapeSet};
use super::shapes_capnp::{blob, id_pair, key_values, string_msg, value_list};
use super::SerLib;

/// capnp.
#[derive(Default)]
pub struct Capnp {
    kind: Option<MsgKind>,
    /// Reused allocator over a leaked scratch buffer (the allocator borrows
    /// its scratch space, and a struct cannot own both). Replaced, leaking
    /// the old buffer, only when a shape needs a larger one: a bounded leak.
    alloc: Option<ScratchSpaceHeapAllocator<'static>>,
    scratch_bytes: usize,
    wire: Vec<Vec<Word>>,
}

type Result<T> = capnp::Result<T>;

fn build(b: &mut Builder<&mut ScratchSpaceHeapAllocator<'static>>, set: &ShapeSet, i: usize) {
    match set.kind() {
        MsgKind::StringMsg => {
            let mut r = b.init_root::<string_msg::Builder>();
            r.set_value(set.field_str(i, 0));
        }
        MsgKind::IdPair => {
            let mut r = b.init_root::<id_pair::Builder>();
            r.set_id(set.id(i));
            r.set_first(set.field(i, 0));
            r.set_second(set.field(i, 1));
        }
        MsgKind::ValueList => {
            let r = b.init_root::<value_list::Builder>();
            let refs = set.field_refs(i);
            let mut l = r.init_values(refs.len() as u32);
            for (k, &f) in refs.iter().enumerate() {
                l.set(k as u32, set.bytes(f));
            }
        }
        MsgKind::KeyValues => {
            let mut r = b.init_root::<key_values::Builder>();
            let (keys, values) = set.keys_values(i);
            let mut l = r.reborrow().init_keys(keys.len() as u32);
            for (k, &f) in keys.iter().enumerate() {
                l.set(k as u32, set.bytes(f));
            }
            let mut l = r.init_values(values.len() as u32);
            for (k, &f) in values.iter().enumerate() {
                l.set(k as u32, set.bytes(f));
            }
        }
        MsgKind::Blob => {
            let mut r = b.init_root::<blob::Builder>();
            r.set_data(set.field(i, 0));
        }
    }
}

fn decode(kind: MsgKind, words: &[Word]) -> Result<u64> {
    let mut slice = Word::words_to_bytes(words);
    let msg =
        capnp::serialize::read_message_from_flat_slice_no_alloc(&mut slice, ReaderOptions::new())?;
    Ok(match kind {
        MsgKind::StringMsg => {
            let r = msg.get_root::<string_msg::Reader>()?;
            touch(r.get_value()?.to_str()?.as_bytes())
        }
        MsgKind::IdPair => {
            let r = msg.get_root::<id_pair::Reader>()?;
            u64::from(r.get_id())
                .wrapping_add(touch(r.get_first()?))
                .wrapping_add(touch(r.get_second()?))
        }
        MsgKind::ValueList => {
            let r = msg.get_root::<value_list::Reader>()?;
            let mut sum = 0u64;
            for v in r.get_values()?.iter() {
                sum = sum.wrapping_add(touch(v?));
            }
            sum
        }
        MsgKind::KeyValues => {
            let r = msg.get_root::<key_values::Reader>()?;
            let mut sum = 0u64;
            for v in r.get_keys()?.iter().chain(r.get_values()?.iter()) {
                sum = sum.wrapping_add(touch(v?));
            }
            sum
        }
        MsgKind::Blob => touch(msg.get_root::<blob::Reader>()?.get_data()?),
    })
}

impl SerLib for Capnp {
    fn name(&self) -> &str {
        "capnp"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.kind = Some(set.kind());
        let max_fields = (0..set.len()).map(|i| set.num_fields(i)).max().unwrap_or(0);
        let need = (set.max_payload_bytes() + 16 * max_fields + 4096).next_multiple_of(8);
        if self.alloc.is_none() || need > self.scratch_bytes {
            let scratch: &'static mut [Word] =
                Box::leak(Word::allocate_zeroed_vec(need / 8).into_boxed_slice());
            self.alloc = Some(ScratchSpaceHeapAllocator::new(Word::words_to_bytes_mut(
                scratch,
            )));
            self.scratch_bytes = need;
        }
        let alloc = self.alloc.as_mut().expect("allocator");
        self.wire = (0..set.len())
            .map(|i| {
                let mut b = Builder::new(&mut *alloc);
                build(&mut b, set, i);
                let flat = capnp::serialize::write_message_to_words(&b);
                let mut w = Word::allocate_zeroed_vec(flat.len() / 8);
                Word::words_to_bytes_mut(&mut w).copy_from_slice(&flat);
                w
            })
            .collect();
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        let alloc = self.alloc.as_mut().expect("prepared");
        let mut b = Builder::new(alloc);
        build(&mut b, set, i);
        let segments = b.get_segments_for_output();
        // Segment table: u32 (count - 1), u32 length per segment, padded to a word.
        let table = (4 * (segments.len() + 1)).next_multiple_of(8);
        let bytes = table + segments.iter().map(|s| s.len()).sum::<usize>();
        black_box(&segments[..]);
        bytes
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        let kind = self.kind.expect("prepared");
        black_box(decode(kind, &self.wire[wire_index]).expect("capnp decode"))
    }
}
