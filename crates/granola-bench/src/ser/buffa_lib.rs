//! buffa 0.9 (code generated at build time by buffa-build from the protox
//! descriptor set of `schemas/shapes.proto`).
//!
//! Serialize builds buffa's owned message (default configuration: `bytes`
//! fields are `Vec<u8>`, `string` fields `String`, as prost's), copying the
//! source bytes into it, then encodes it into a reused `Vec<u8>`.
//! Decode-and-touch uses buffa's borrowed view (`MsgView::decode_view`):
//! fields borrow the wire buffer, `string` fields are validated as UTF-8.

use std::hint::black_box;

use buffa::{Message, MessageView};

use super::shapes::{touch, MsgKind, ShapeSet};
use super::{encode_all, SerLib};

/// The generated types of `schemas/shapes.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/buffa/mod.rs"));
}
use generated::shapes as pb;

/// buffa.
#[derive(Default)]
pub struct Buffa {
    kind: Option<MsgKind>,
    out: Vec<u8>,
    wire: Vec<Vec<u8>>,
}

fn encode<M: Message>(out: &mut Vec<u8>, m: &M) -> usize {
    out.clear();
    m.encode(out);
    out.len()
}

impl Buffa {
    fn encode_msg(out: &mut Vec<u8>, set: &ShapeSet, i: usize) -> usize {
        let owned = |f: &[u8]| f.to_vec();
        match set.kind() {
            MsgKind::StringMsg => encode(
                out,
                &pb::StringMsg {
                    value: set.field_str(i, 0).to_owned(),
                    ..Default::default()
                },
            ),
            MsgKind::IdPair => encode(
                out,
                &pb::IdPair {
                    id: set.id(i),
                    first: set.field(i, 0).to_vec(),
                    second: set.field(i, 1).to_vec(),
                    ..Default::default()
                },
            ),
            MsgKind::ValueList => encode(
                out,
                &pb::ValueList {
                    values: set.fields(i).map(owned).collect(),
                    ..Default::default()
                },
            ),
            MsgKind::KeyValues => {
                let (k, v) = set.keys_values(i);
                encode(
                    out,
                    &pb::KeyValues {
                        keys: k.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                        values: v.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                        ..Default::default()
                    },
                )
            }
            MsgKind::Blob => encode(
                out,
                &pb::Blob {
                    data: set.field(i, 0).to_vec(),
                    ..Default::default()
                },
            ),
        }
    }
}

impl SerLib for Buffa {
    fn name(&self) -> &str {
        "buffa"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.kind = Some(set.kind());
        self.out = Vec::with_capacity(set.max_payload_bytes() + 1024);
        self.wire = encode_all(set, &mut self.out, Self::encode_msg);
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        let n = Self::encode_msg(&mut self.out, set, i);
        black_box(&self.out);
        n
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        let buf = &self.wire[wire_index][..];
        let sum = match self.kind.expect("prepared") {
            MsgKind::StringMsg => {
                let m = pb::StringMsgView::decode_view(buf).expect("decode");
                touch(m.value.as_bytes())
            }
            MsgKind::IdPair => {
                let m = pb::IdPairView::decode_view(buf).expect("decode");
                u64::from(m.id)
                    .wrapping_add(touch(m.first))
                    .wrapping_add(touch(m.second))
            }
            MsgKind::ValueList => {
                let m = pb::ValueListView::decode_view(buf).expect("decode");
                m.values.iter().fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::KeyValues => {
                let m = pb::KeyValuesView::decode_view(buf).expect("decode");
                m.keys
                    .iter()
                    .chain(m.values.iter())
                    .fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::Blob => {
                let m = pb::BlobView::decode_view(buf).expect("decode");
                touch(m.data)
            }
        };
        black_box(sum)
    }
}
