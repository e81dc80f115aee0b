//! bincode 2 (`config::standard()`: varint lengths, little endian).
//!
//! bincode serializes borrowed data natively, so the message types borrow
//! (`&[u8]` / `&str`): serialize builds the borrowed struct (no copy; for
//! repeated fields a `Vec<&[u8]>`) and encodes it into a reused `Vec<u8>`
//! with `encode_into_std_write` (the one copy of the field bytes). Decode is
//! `borrow_decode_from_slice` (zero-copy: fields borrow from the wire
//! buffer); `&str` fields are UTF-8 validated by bincode's decoder.

use std::hint::black_box;

use bincode::{BorrowDecode, Encode};

use super::shapes::{touch, MsgKind, ShapeSet};
use super::{encode_all, SerLib};

#[derive(Encode, BorrowDecode)]
struct StringMsg<'a> {
    value: &'a str,
}

#[derive(Encode, BorrowDecode)]
struct IdPair<'a> {
    id: u32,
    first: &'a [u8],
    second: &'a [u8],
}

#[derive(Encode, BorrowDecode)]
struct ValueList<'a> {
    values: Vec<&'a [u8]>,
}

#[derive(Encode, BorrowDecode)]
struct KeyValues<'a> {
    keys: Vec<&'a [u8]>,
    values: Vec<&'a [u8]>,
}

#[derive(Encode, BorrowDecode)]
struct Blob<'a> {
    data: &'a [u8],
}

const CONFIG: bincode::config::Configuration = bincode::config::standard();

/// bincode.
#[derive(Default)]
pub struct Bincode {
    kind: Option<MsgKind>,
    out: Vec<u8>,
    wire: Vec<Vec<u8>>,
}

fn enc<T: Encode>(out: &mut Vec<u8>, v: &T) -> usize {
    out.clear();
    bincode::encode_into_std_write(v, out, CONFIG).expect("bincode encode")
}

fn dec<'a, T: BorrowDecode<'a, ()>>(buf: &'a [u8]) -> T {
    bincode::borrow_decode_from_slice(buf, CONFIG)
        .expect("bincode decode")
        .0
}

impl Bincode {
    fn encode(out: &mut Vec<u8>, set: &ShapeSet, i: usize) -> usize {
        match set.kind() {
            MsgKind::StringMsg => enc(
                out,
                &StringMsg {
                    value: set.field_str(i, 0),
                },
            ),
            MsgKind::IdPair => enc(
                out,
                &IdPair {
                    id: set.id(i),
                    first: set.field(i, 0),
                    second: set.field(i, 1),
                },
            ),
            MsgKind::ValueList => enc(
                out,
                &ValueList {
                    values: set.fields(i).collect(),
                },
            ),
            MsgKind::KeyValues => {
                let (k, v) = set.keys_values(i);
                enc(
                    out,
                    &KeyValues {
                        keys: k.iter().map(|&f| set.bytes(f)).collect(),
                        values: v.iter().map(|&f| set.bytes(f)).collect(),
                    },
                )
            }
            MsgKind::Blob => enc(
                out,
                &Blob {
                    data: set.field(i, 0),
                },
            ),
        }
    }
}

impl SerLib for Bincode {
    fn name(&self) -> &str {
        "bincode"
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.kind = Some(set.kind());
        self.out = Vec::with_capacity(set.max_payload_bytes() + 1024);
        self.wire = encode_all(set, &mut self.out, Self::encode);
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        let n = Self::encode(&mut self.out, set, i);
        black_box(&self.out);
        n
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        let buf = &self.wire[wire_index][..];
        let sum = match self.kind.expect("prepared") {
            MsgKind::StringMsg => touch(dec::<StringMsg<'_>>(buf).value.as_bytes()),
            MsgKind::IdPair => {
                let m: IdPair<'_> = dec(buf);
                u64::from(m.id)
                    .wrapping_add(touch(m.first))
                    .wrapping_add(touch(m.second))
            }
            MsgKind::ValueList => {
                let m: ValueList<'_> = dec(buf);
                m.values.iter().fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::KeyValues => {
                let m: KeyValues<'_> = dec(buf);
                m.keys
                    .iter()
                    .chain(&m.values)
                    .fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::Blob => touch(dec::<Blob<'_>>(buf).data),
        };
        black_box(sum)
    }
}
