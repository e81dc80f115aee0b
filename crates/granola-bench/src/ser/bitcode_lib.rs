//! bitcode 0.6 (column-oriented, bit-packed binary; derive-based).
//!
//! bitcode borrows `&str` but has no borrowed bytes type (`&[u8]` does not
//! implement its `Encode`/`Decode`), so bytes fields are `Vec<u8>`:
//! serialize builds the owned message from the source slices (the copy a
//! bitcode user holding slices makes) and encodes it with a reused
//! `bitcode::Buffer`; decode allocates the byte vectors and borrows the
//! string (validated as UTF-8).

use std::hint::black_box;

use bitcode::{Decode, Encode};

use super::shapes::{touch, MsgKind, ShapeSet};
use super::{wire_copy, SerLib};

#[derive(Encode, Decode)]
struct StringMsg<'a> {
    value: &'a str,
}

#[derive(Encode, Decode)]
struct IdPair {
    id: u32,
    first: Vec<u8>,
    second: Vec<u8>,
}

#[derive(Encode, Decode)]
struct ValueList {
    values: Vec<Vec<u8>>,
}

#[derive(Encode, Decode)]
struct KeyValues {
    keys: Vec<Vec<u8>>,
    values: Vec<Vec<u8>>,
}

#[derive(Encode, Decode)]
struct Blob {
    data: Vec<u8>,
}

/// bitcode.
#[derive(Default)]
pub struct Bitcode {
    kind: Option<MsgKind>,
    out: bitcode::Buffer,
    wire: Vec<Vec<u8>>,
}

/// Encodes `v` into `out`'s reused buffer, hands the bytes to `sink`,
/// returns their length.
fn enc<T: Encode>(out: &mut bitcode::Buffer, v: &T, sink: &mut dyn FnMut(&[u8])) -> usize {
    let bytes = out.encode(v);
    sink(bytes);
    bytes.len()
}

fn dec<'a, T: Decode<'a>>(buf: &'a [u8]) -> T {
    bitcode::decode(buf).expect("bitcode decode")
}

impl Bitcode {
    fn encode(
        out: &mut bitcode::Buffer,
        set: &ShapeSet,
        i: usize,
        sink: &mut dyn FnMut(&[u8]),
    ) -> usize {
        match set.kind() {
            MsgKind::StringMsg => enc(
                out,
                &StringMsg {
                    value: set.field_str(i, 0),
                },
                sink,
            ),
            MsgKind::IdPair => enc(
                out,
                &IdPair {
                    id: set.id(i),
                    first: set.field(i, 0).to_vec(),
                    second: set.field(i, 1).to_vec(),
                },
                sink,
            ),
            MsgKind::ValueList => enc(
                out,
                &ValueList {
                    values: set.fields(i).map(<[u8]>::to_vec).collect(),
                },
                sink,
            ),
            MsgKind::KeyValues => {
                let (k, v) = set.keys_values(i);
                enc(
                    out,
                    &KeyValues {
                        keys: k.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                        values: v.iter().map(|&f| set.bytes(f).to_vec()).collect(),
                    },
                    sink,
                )
            }
            MsgKind::Blob => enc(
                out,
                &Blob {
                    data: set.field(i, 0).to_vec(),
                },
                sink,
            ),
        }
    }
}

impl SerLib for Bitcode {
    fn name(&self) -> &str {
        "bitcode"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.kind = Some(set.kind());
        self.out = bitcode::Buffer::new();
        self.wire = (0..set.len())
            .map(|i| {
                let mut wire = Vec::new();
                Self::encode(&mut self.out, set, i, &mut |b| wire = wire_copy(b));
                wire
            })
            .collect();
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        Self::encode(&mut self.out, set, i, &mut |b| {
            black_box(b);
        })
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        let buf = &self.wire[wire_index][..];
        let sum = match self.kind.expect("prepared") {
            MsgKind::StringMsg => touch(dec::<StringMsg<'_>>(buf).value.as_bytes()),
            MsgKind::IdPair => {
                let m: IdPair = dec(buf);
                u64::from(m.id)
                    .wrapping_add(touch(&m.first))
                    .wrapping_add(touch(&m.second))
            }
            MsgKind::ValueList => {
                let m: ValueList = dec(buf);
                m.values.iter().fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::KeyValues => {
                let m: KeyValues = dec(buf);
                m.keys
                    .iter()
                    .chain(&m.values)
                    .fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::Blob => touch(&dec::<Blob>(buf).data),
        };
        black_box(sum)
    }
}
