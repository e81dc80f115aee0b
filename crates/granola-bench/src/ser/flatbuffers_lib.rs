//! flatbuffers 25 (generated code checked in: `gen/shapes_generated.rs`).
//!
//! Serialize: `reset()` a reused `FlatBufferBuilder`, copy the source bytes
//! in (`create_string` / `create_vector::<u8>`; a repeated bytes field is a
//! vector of `Bytes` wrapper tables because FlatBuffers has no vector of
//! vectors), `finish`; the wire message is `finished_data()`.
//! Decode: `flatbuffers::root` (the verifying entry point a normal user
//! calls) then the generated accessors. The verifier validates UTF-8 of
//! `string` fields, and the `&str` accessor (`value()`) is what a user reads.

use std::hint::black_box;

use flatbuffers::{FlatBufferBuilder, WIPOffset};

use super::shapes::{touch, FieldRef, MsgKind, ShapeSet};
use super::shapes_fbs::shapes as fbs;
use super::{wire_copy, SerLib};

/// flatbuffers.
pub struct Flatbuffers {
    kind: Option<MsgKind>,
    fbb: FlatBufferBuilder<'static>,
    offsets: Vec<WIPOffset<fbs::Bytes<'static>>>,
    wire: Vec<Vec<u8>>,
}

impl Default for Flatbuffers {
    fn default() -> Flatbuffers {
        Flatbuffers {
            kind: None,
            fbb: FlatBufferBuilder::new(),
            offsets: Vec::new(),
            wire: Vec::new(),
        }
    }
}

type BytesList = flatbuffers::Vector<'static, flatbuffers::ForwardsUOffset<fbs::Bytes<'static>>>;

fn bytes_list(
    fbb: &mut FlatBufferBuilder<'static>,
    offsets: &mut Vec<WIPOffset<fbs::Bytes<'static>>>,
    set: &ShapeSet,
    fields: &[FieldRef],
) -> WIPOffset<BytesList> {
    offsets.clear();
    for &f in fields {
        let data = fbb.create_vector(set.bytes(f));
        offsets.push(fbs::Bytes::create(
            fbb,
            &fbs::BytesArgs { data: Some(data) },
        ));
    }
    fbb.create_vector(offsets)
}

impl Flatbuffers {
    fn build(&mut self, set: &ShapeSet, i: usize) -> usize {
        let fbb = &mut self.fbb;
        fbb.reset();
        match set.kind() {
            MsgKind::StringMsg => {
                let value = fbb.create_string(set.field_str(i, 0));
                let m = fbs::StringMsg::create(fbb, &fbs::StringMsgArgs { value: Some(value) });
                fbb.finish(m, None);
            }
            MsgKind::IdPair => {
                let first = fbb.create_vector(set.field(i, 0));
                let second = fbb.create_vector(set.field(i, 1));
                let m = fbs::IdPair::create(
                    fbb,
                    &fbs::IdPairArgs {
                        id: set.id(i),
                        first: Some(first),
                        second: Some(second),
                    },
                );
                fbb.finish(m, None);
            }
            MsgKind::ValueList => {
                let values = bytes_list(fbb, &mut self.offsets, set, set.field_refs(i));
                let m = fbs::ValueList::create(
                    fbb,
                    &fbs::ValueListArgs {
                        values: Some(values),
                    },
                );
                fbb.finish(m, None);
            }
            MsgKind::KeyValues => {
                let (k, v) = set.keys_values(i);
                let keys = bytes_list(fbb, &mut self.offsets, set, k);
                let values = bytes_list(fbb, &mut self.offsets, set, v);
                let m = fbs::KeyValues::create(
                    fbb,
                    &fbs::KeyValuesArgs {
                        keys: Some(keys),
                        values: Some(values),
                    },
                );
                fbb.finish(m, None);
            }
            MsgKind::Blob => {
                let data = fbb.create_vector(set.field(i, 0));
                let m = fbs::Blob::create(fbb, &fbs::BlobArgs { data: Some(data) });
                fbb.finish(m, None);
            }
        }
        fbb.finished_data().len()
    }
}

fn bytes(v: Option<flatbuffers::Vector<'_, u8>>) -> &[u8] {
    v.map_or(&[][..], |d| d.bytes())
}

fn list_touch(
    v: Option<flatbuffers::Vector<'_, flatbuffers::ForwardsUOffset<fbs::Bytes<'_>>>>,
) -> u64 {
    v.expect("list present")
        .iter()
        .fold(0u64, |a, b| a.wrapping_add(touch(bytes(b.data()))))
}

impl SerLib for Flatbuffers {
    fn name(&self) -> &str {
        "flatbuffers"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.kind = Some(set.kind());
        self.fbb = FlatBufferBuilder::with_capacity(set.max_payload_bytes() + 4096);
        self.wire = (0..set.len())
            .map(|i| {
                self.build(set, i);
                wire_copy(self.fbb.finished_data())
            })
            .collect();
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        let n = self.build(set, i);
        black_box(self.fbb.finished_data());
        n
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        let buf = &self.wire[wire_index][..];
        let sum = match self.kind.expect("prepared") {
            MsgKind::StringMsg => {
                let m = flatbuffers::root::<fbs::StringMsg>(buf).expect("verify");
                touch(m.value().unwrap_or("").as_bytes())
            }
            MsgKind::IdPair => {
                let m = flatbuffers::root::<fbs::IdPair>(buf).expect("verify");
                u64::from(m.id())
                    .wrapping_add(touch(bytes(m.first())))
                    .wrapping_add(touch(bytes(m.second())))
            }
            MsgKind::ValueList => {
                let m = flatbuffers::root::<fbs::ValueList>(buf).expect("verify");
                list_touch(m.values())
            }
            MsgKind::KeyValues => {
                let m = flatbuffers::root::<fbs::KeyValues>(buf).expect("verify");
                list_touch(m.keys()).wrapping_add(list_touch(m.values()))
            }
            MsgKind::Blob => {
                let m = flatbuffers::root::<fbs::Blob>(buf).expect("verify");
                touch(bytes(m.data()))
            }
        };
        black_box(sum)
    }
}
