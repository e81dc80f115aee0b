//! prost 0.14 (code generated at build time by prost-build + protox).
//!
//! Default prost configuration: `bytes` fields are `Vec<u8>`, `string`
//! fields `String` (not `bytes::Bytes`). Serialize builds a fresh message,
//! copying the source bytes into its owned fields, then encodes it into a
//! reused `Vec<u8>`. Decode copies every field into a fresh message and
//! validates UTF-8 of `string` fields (prost always does for `String`).

use std::hint::black_box;

use prost::Message;

use super::shapes::{touch, MsgKind, ShapeSet};
use super::{encode_all, SerLib};

/// The generated types of `schemas/shapes.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/shapes.rs"));
}

/// prost.
#[derive(Default)]
pub struct Prost {
    kind: Option<MsgKind>,
    out: Vec<u8>,
    wire: Vec<Vec<u8>>,
}

fn encode<M: Message>(out: &mut Vec<u8>, m: &M) -> usize {
    out.clear();
    m.encode(out).expect("Vec<u8> grows");
    out.len()
}

impl Prost {
    fn encode_msg(out: &mut Vec<u8>, set: &ShapeSet, i: usize) -> usize {
        let owned = |f: &[u8]| f.to_vec();
        match set.kind() {
            MsgKind::StringMsg => encode(
                out,
                &pb::StringMsg {
                    value: set.field_str(i, 0).to_owned(),
                },
            ),
            MsgKind::IdPair => encode(
                out,
                &pb::IdPair {
                    id: set.id(i),
                    first: set.field(i, 0).to_vec(),
                    second: set.field(i, 1).to_vec(),
                },
            ),
            MsgKind::ValueList => encode(
                out,
                &pb::ValueList {
                    values: set.fields(i).map(owned).collect(),
                },
            ),
            MsgKind::KeyValues => {
                let (k, v) = set.keys_values(i);
                encode(
                    out,
                    &pb::KeyValues {
                        keys: k.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                        values: v.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                    },
                )
            }
            MsgKind::Blob => encode(
                out,
                &pb::Blob {
                    data: set.field(i, 0).to_vec(),
                },
            ),
        }
    }
}

impl SerLib for Prost {
    fn name(&self) -> &str {
        "prost"
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
                let m = pb::StringMsg::decode(buf).expect("decode");
                touch(m.value.as_bytes())
            }
            MsgKind::IdPair => {
                let m = pb::IdPair::decode(buf).expect("decode");
                u64::from(m.id)
                    .wrapping_add(touch(&m.first))
                    .wrapping_add(touch(&m.second))
            }
            MsgKind::ValueList => {
                let m = pb::ValueList::decode(buf).expect("decode");
                m.values.iter().fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::KeyValues => {
                let m = pb::KeyValues::decode(buf).expect("decode");
                m.keys
                    .iter()
                    .chain(&m.values)
                    .fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::Blob => {
                let m = pb::Blob::decode(buf).expect("decode");
                touch(&m.data)
            }
        };
        black_box(sum)
    }
}
