//! rkyv 0.8.
//!
//! Serialize: build the owned value (copying the source bytes into
//! `String` / `Vec<u8>` fields), then `rkyv::api::high::to_bytes_in` into a
//! reused `AlignedVec`. Decode: `rkyv::access` — the safe, validating entry
//! point (bytecheck); the validation checks UTF-8 of `ArchivedString`.
//! Wire buffers are `AlignedVec`s (rkyv needs aligned input).

use std::hint::black_box;

use rkyv::rancor;
use rkyv::util::AlignedVec;

use super::shapes::{touch, MsgKind, ShapeSet};
use super::SerLib;

/// The rkyv types; the derives generate `unsafe impl`s, hence the allow.
#[allow(unsafe_code, missing_docs, clippy::undocumented_unsafe_blocks)]
pub mod types {
    use rkyv::{Archive, Serialize};

    /// shape a.
    #[derive(Archive, Serialize)]
    pub struct StringMsg {
        pub value: String,
    }

    /// shape b.
    #[derive(Archive, Serialize)]
    pub struct IdPair {
        pub id: u32,
        pub first: Vec<u8>,
        pub second: Vec<u8>,
    }

    /// shape c.
    #[derive(Archive, Serialize)]
    pub struct ValueList {
        pub values: Vec<Vec<u8>>,
    }

    /// shape d.
    #[derive(Archive, Serialize)]
    pub struct KeyValues {
        pub keys: Vec<Vec<u8>>,
        pub values: Vec<Vec<u8>>,
    }

    /// shape e.
    #[derive(Archive, Serialize)]
    pub struct Blob {
        pub data: Vec<u8>,
    }
}

use types::*;

/// rkyv.
#[derive(Default)]
pub struct Rkyv {
    kind: Option<MsgKind>,
    out: AlignedVec,
    wire: Vec<AlignedVec>,
}

impl Rkyv {
    fn encode(&mut self, set: &ShapeSet, i: usize) -> usize {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let res = match set.kind() {
            MsgKind::StringMsg => rkyv::api::high::to_bytes_in::<_, rancor::Error>(
                &StringMsg {
                    value: set.field_str(i, 0).to_owned(),
                },
                out,
            ),
            MsgKind::IdPair => rkyv::api::high::to_bytes_in::<_, rancor::Error>(
                &IdPair {
                    id: set.id(i),
                    first: set.field(i, 0).to_vec(),
                    second: set.field(i, 1).to_vec(),
                },
                out,
            ),
            MsgKind::ValueList => rkyv::api::high::to_bytes_in::<_, rancor::Error>(
                &ValueList {
                    values: set.fields(i).map(<[u8]>::to_vec).collect(),
                },
                out,
            ),
            MsgKind::KeyValues => {
                let (k, v) = set.keys_values(i);
                rkyv::api::high::to_bytes_in::<_, rancor::Error>(
                    &KeyValues {
                        keys: k.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                        values: v.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                    },
                    out,
                )
            }
            MsgKind::Blob => rkyv::api::high::to_bytes_in::<_, rancor::Error>(
                &Blob {
                    data: set.field(i, 0).to_vec(),
                },
                out,
            ),
        };
        self.out = res.expect("rkyv serialize");
        self.out.len()
    }
}

impl SerLib for Rkyv {
    fn name(&self) -> &str {
        "rkyv"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.kind = Some(set.kind());
        self.out = AlignedVec::with_capacity(set.max_payload_bytes() + 4096);
        self.wire = (0..set.len())
            .map(|i| {
                self.encode(set, i);
                let mut w = AlignedVec::with_capacity(self.out.len());
                w.extend_from_slice(&self.out);
                w
            })
            .collect();
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        let n = self.encode(set, i);
        black_box(&self.out);
        n
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        let buf = &self.wire[wire_index][..];
        let sum = match self.kind.expect("prepared") {
            MsgKind::StringMsg => {
                let m = rkyv::access::<ArchivedStringMsg, rancor::Error>(buf).expect("access");
                touch(m.value.as_bytes())
            }
            MsgKind::IdPair => {
                let m = rkyv::access::<ArchivedIdPair, rancor::Error>(buf).expect("access");
                u64::from(m.id.to_native())
                    .wrapping_add(touch(&m.first))
                    .wrapping_add(touch(&m.second))
            }
            MsgKind::ValueList => {
                let m = rkyv::access::<ArchivedValueList, rancor::Error>(buf).expect("access");
                m.values.iter().fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::KeyValues => {
                let m = rkyv::access::<ArchivedKeyValues, rancor::Error>(buf).expect("access");
                m.keys
                    .iter()
                    .chain(m.values.iter())
                    .fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::Blob => {
                let m = rkyv::access::<ArchivedBlob, rancor::Error>(buf).expect("access");
                touch(&m.data)
            }
        };
        black_box(sum)
    }
}
