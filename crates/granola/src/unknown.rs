//! [`UnknownFields`]: the fields a message's schema does not know, kept
//! from decode to re-encode, as protobuf keeps them: a message written
//! with a newer schema passes through an older reader (decode, edit,
//! re-encode) without losing the newer fields.
//!
//! The wire format makes this possible without the newer schema: every
//! header carries a kind byte per present field (`wire::kind`), enough to
//! follow a field's data (a scalar, a byte range, a nested header, an entry
//! array) and write it again. Nested messages of an unknown field are kept
//! the same way, recursively; bytes stay zero-copy where the decode made
//! them so (`HybridBytes`). A kind code this reader does not know (from a
//! later format) cannot be followed: that field is dropped, as protobuf
//! drops what it cannot parse.
//!
//! On re-encode, unknown fields get their slots among the known ones (the
//! bitmap is one), and their data is placed after all the known fields'
//! data, in field-number order: the bytes may differ from what the newer
//! writer produced, never what they decode to.

use crate::codec::{set_bit, slot_of};
use crate::wire::{
    header_len, kind, present_count, used_words, DecodeCx, DecodeError, EncodedSizes, Encoder,
    HeaderReader, ENTRY_LEN,
};
use crate::{Buf, HybridBytes};

/// Fields of a decoded message that its schema does not know (see the
/// module docs). Empty for a message built in code.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UnknownFields<'a> {
    /// In increasing field-number order; boxed, so that a message without
    /// unknown fields (nearly all) pays one pointer (8 bytes; a `Vec` is
    /// 24, a boxed slice 16) in every decoded struct.
    #[allow(clippy::box_collection)]
    fields: Option<Box<Vec<(u32, Unknown<'a>)>>>,
}

/// One unknown field's value, by kind.
#[derive(Clone, Debug, PartialEq)]
enum Unknown<'a> {
    Scalar(u64),
    Bytes(HybridBytes<'a>),
    Message(UnknownFields<'a>),
    /// A scalar list: its kind (`LIST_1/4/8`), count and raw entries.
    Scalars {
        kind: u8,
        count: usize,
        entries: HybridBytes<'a>,
    },
    BytesList(Vec<HybridBytes<'a>>),
    Messages(Vec<UnknownFields<'a>>),
}

fn width_of(list_kind: u8) -> usize {
    match list_kind {
        kind::LIST_1 => 1,
        kind::LIST_4 => 4,
        _ => 8,
    }
}

impl<'a> Unknown<'a> {
    fn kind(&self) -> u8 {
        match self {
            Unknown::Scalar(_) => kind::SCALAR,
            Unknown::Bytes(_) => kind::BYTES,
            Unknown::Message(_) => kind::MESSAGE,
            Unknown::Scalars { kind, .. } => *kind,
            Unknown::BytesList(_) => kind::LIST_BYTES,
            Unknown::Messages(_) => kind::LIST_MESSAGE,
        }
    }

    /// Reads present field `n` of kind `k`; `None` for a kind code this
    /// reader does not know.
    fn read(
        h: &HeaderReader<'a>,
        cx: &mut DecodeCx<'a>,
        n: u32,
        k: u8,
    ) -> Result<Option<Unknown<'a>>, DecodeError> {
        let v = match k {
            kind::SCALAR => h.slot(n).map(Unknown::Scalar),
            kind::BYTES => h.bytes(n)?.map(|b| Unknown::Bytes(cx.hybrid(b))),
            kind::MESSAGE => match h.nested::<UnknownFields<'a>>(cx, n)? {
                Some(nh) => Some(Unknown::Message(UnknownFields::take(&nh, cx, &[])?)),
                None => None,
            },
            kind::LIST_1 | kind::LIST_4 | kind::LIST_8 => {
                h.list::<u8>(cx, n, width_of(k))?.map(|l| Unknown::Scalars {
                    kind: k,
                    count: l.len(),
                    entries: cx.hybrid(l.entries()),
                })
            }
            kind::LIST_BYTES => match h.list::<HybridBytes<'a>>(cx, n, ENTRY_LEN)? {
                Some(l) => {
                    let mut out = Vec::with_capacity(l.len());
                    for i in 0..l.len() {
                        out.push(cx.hybrid(l.bytes(i)?));
                    }
                    Some(Unknown::BytesList(out))
                }
                None => None,
            },
            kind::LIST_MESSAGE => match h.list::<UnknownFields<'a>>(cx, n, ENTRY_LEN)? {
                Some(l) => {
                    let mut out = Vec::with_capacity(l.len());
                    for i in 0..l.len() {
                        let nh = l.nested(cx, i)?;
                        out.push(UnknownFields::take(&nh, cx, &[])?);
                    }
                    Some(Unknown::Messages(out))
                }
                None => None,
            },
            _ => None,
        };
        Ok(v)
    }

    fn accumulate(&self, sizes: &mut EncodedSizes) {
        match self {
            Unknown::Scalar(_) => {}
            Unknown::Bytes(b) => sizes.add_bytes(b),
            Unknown::Message(m) => m.accumulate(sizes),
            Unknown::Scalars { kind, count, .. } => sizes.add_header(count * width_of(*kind)),
            Unknown::BytesList(l) => {
                sizes.add_header(l.len() * ENTRY_LEN);
                for b in l {
                    sizes.add_bytes(b);
                }
            }
            Unknown::Messages(l) => {
                sizes.add_header(l.len() * ENTRY_LEN);
                for m in l {
                    m.accumulate(sizes);
                }
            }
        }
    }

    fn put<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, slot: usize) {
        match self {
            Unknown::Scalar(v) => enc.put_raw_slot(slot, *v),
            Unknown::Bytes(b) => enc.put_bytes(slot, b),
            Unknown::Message(m) => {
                let h = enc.put_nested(slot, m.header_len());
                m.encode_header(enc, h);
            }
            Unknown::Scalars {
                kind,
                count,
                entries,
            } => {
                let arr = enc.put_list(slot, *count, width_of(*kind));
                enc.put_raw_entries(arr, entries);
            }
            Unknown::BytesList(l) => {
                let arr = enc.put_list(slot, l.len(), ENTRY_LEN);
                for (i, b) in l.iter().enumerate() {
                    enc.put_bytes(arr + i * ENTRY_LEN, b);
                }
            }
            Unknown::Messages(l) => {
                let arr = enc.put_list(slot, l.len(), ENTRY_LEN);
                for (i, m) in l.iter().enumerate() {
                    let h = enc.put_nested(arr + i * ENTRY_LEN, m.header_len());
                    m.encode_header(enc, h);
                }
            }
        }
    }

    fn into_owned(self) -> Unknown<'static> {
        match self {
            Unknown::Scalar(v) => Unknown::Scalar(v),
            Unknown::Bytes(b) => Unknown::Bytes(b.into_owned()),
            Unknown::Message(m) => Unknown::Message(m.into_owned()),
            Unknown::Scalars {
                kind,
                count,
                entries,
            } => Unknown::Scalars {
                kind,
                count,
                entries: entries.into_owned(),
            },
            Unknown::BytesList(l) => {
                Unknown::BytesList(l.into_iter().map(HybridBytes::into_owned).collect())
            }
            Unknown::Messages(l) => {
                Unknown::Messages(l.into_iter().map(UnknownFields::into_owned).collect())
            }
        }
    }
}

// No `Drop` impl: one would make every generated message with a
// lifetime subject to drop checking (its borrowed bytes would have to
// outlive it), which plain structs of `Option`/`Box`/`Vec` are not.
impl<'a> UnknownFields<'a> {
    /// True if there are none (always, for a message built in code).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.fields.is_none()
    }

    /// Number of unknown fields.
    pub fn len(&self) -> usize {
        self.list().len()
    }

    fn list(&self) -> &[(u32, Unknown<'a>)] {
        self.fields.as_deref().map_or(&[], Vec::as_slice)
    }

    /// Their field numbers, increasing.
    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.list().iter().map(|(n, _)| *n)
    }

    /// Drops them (a re-encode then writes only the known fields).
    pub fn clear(&mut self) {
        self.fields = None;
    }

    /// The same fields with no borrow (borrowed bytes are copied).
    #[inline]
    pub fn into_owned(self) -> UnknownFields<'static> {
        match self.fields {
            None => UnknownFields::default(),
            Some(f) => Self::own(*f),
        }
    }

    #[inline(never)]
    fn own(fields: Vec<(u32, Unknown<'a>)>) -> UnknownFields<'static> {
        let owned = fields.into_iter().map(|(n, v)| (n, v.into_owned()));
        UnknownFields {
            fields: Some(Box::new(owned.collect())),
        }
    }

    /// True if every field present in `h` is in `known` (the usual case,
    /// checked inline for one-word bitmaps).
    #[doc(hidden)]
    #[inline]
    pub fn all_known(h: &HeaderReader<'_>, known: &[u32]) -> bool {
        match known.first() {
            Some(&k) if h.words() <= 1 => h.first_word() & !k == 0,
            _ => Self::all_known_words(h, known),
        }
    }

    #[inline(never)]
    fn all_known_words(h: &HeaderReader<'_>, known: &[u32]) -> bool {
        (0..h.words()).all(|w| h.word(w) & !known.get(w).copied().unwrap_or(0) == 0)
    }

    /// Decodes a message whose header `h` has fields not in `known`: its
    /// known fields with `known_fields`, then the others, stored with
    /// `set`. Out of line: generated decoders call it only when
    /// [`all_known`](Self::all_known) is false.
    #[doc(hidden)]
    #[cold]
    #[inline(never)]
    pub fn decode_with<M>(
        // By value: a reference would make the caller keep its header in
        // memory on the usual path too.
        h: HeaderReader<'a>,
        cx: &mut DecodeCx<'a>,
        known: &[u32],
        known_fields: impl FnOnce(&mut DecodeCx<'a>, &HeaderReader<'a>) -> Result<M, DecodeError>,
        set: impl FnOnce(&mut M, UnknownFields<'a>),
    ) -> Result<M, DecodeError> {
        let mut m = known_fields(cx, &h)?;
        set(&mut m, Self::take(&h, cx, known)?);
        Ok(m)
    }

    /// Reads the fields of header `h` whose bits are not in `known`, with
    /// their data, charging them to the decode budget.
    fn take(
        h: &HeaderReader<'a>,
        cx: &mut DecodeCx<'a>,
        known: &[u32],
    ) -> Result<UnknownFields<'a>, DecodeError> {
        let unknown = |w: usize| h.word(w) & !known.get(w).copied().unwrap_or(0);
        let count: usize = (0..h.words())
            .map(|w| unknown(w).count_ones() as usize)
            .sum();
        let vec_bytes = std::mem::size_of::<Vec<(u32, Unknown<'a>)>>();
        cx.charge_bytes(
            vec_bytes + count * std::mem::size_of::<(u32, Unknown<'a>)>(),
            0,
        )?;
        let mut fields = Vec::with_capacity(count);
        for w in 0..h.words() {
            let mut bits = unknown(w);
            while bits != 0 {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                let n = (w * 32) as u32 + b + 1;
                let Some(k) = h.kind(n) else { continue };
                if let Some(v) = Unknown::read(h, cx, n, k)? {
                    fields.push((n, v));
                }
            }
        }
        Ok(UnknownFields {
            fields: (!fields.is_empty()).then(|| Box::new(fields)),
        })
    }

    /// The bitmap of a message whose known fields set `known`, with these
    /// fields' bits added.
    fn merged_bitmap(&self, known: &[u32]) -> Vec<u32> {
        let last = self.list().last().map_or(0, |(n, _)| *n);
        let mut bm = known.to_vec();
        bm.resize(bm.len().max(last.div_ceil(32) as usize), 0);
        for (n, _) in self.list() {
            set_bit(&mut bm, *n);
        }
        bm
    }

    /// The header length of a message whose known fields set `known`,
    /// with these fields too.
    #[doc(hidden)]
    #[inline(never)]
    pub fn header_len_with(&self, known: &[u32]) -> usize {
        let bm = self.merged_bitmap(known);
        header_len(used_words(&bm), present_count(&bm))
    }

    /// Encodes a message whose known fields set `known` with these fields:
    /// `put_known` writes the header for the merged bitmap and the known
    /// fields (returning the first slot and the present count), then these
    /// fields go in. Out of line: generated encoders call it only for a
    /// message that has unknown fields.
    #[doc(hidden)]
    #[cold]
    #[inline(never)]
    pub fn encode_with<F: FnMut(&Buf)>(
        &self,
        enc: &mut Encoder<'_, F>,
        known: &[u32],
        put_known: impl FnOnce(&mut Encoder<'_, F>, &[u32]) -> (usize, usize),
    ) {
        let bm = self.merged_bitmap(known);
        let (first, present) = put_known(enc, &bm);
        self.put_fields(enc, &bm, first, present);
    }

    /// Header length of these fields as a message of their own.
    fn header_len(&self) -> usize {
        let words = self.list().last().map_or(0, |(n, _)| n.div_ceil(32)) as usize;
        header_len(words, self.len())
    }

    /// Sizes of these fields as a message of their own.
    fn accumulate(&self, sizes: &mut EncodedSizes) {
        sizes.add_header(self.header_len());
        self.accumulate_fields(sizes);
    }

    /// Adds these fields' data (not their slots) to `sizes`.
    #[doc(hidden)]
    #[inline(always)]
    pub fn accumulate_fields(&self, sizes: &mut EncodedSizes) {
        if !self.is_empty() {
            self.accumulate_present(sizes);
        }
    }

    #[inline(never)]
    fn accumulate_present(&self, sizes: &mut EncodedSizes) {
        for (_, v) in self.list() {
            v.accumulate(sizes);
        }
    }

    /// Writes these fields as a message of their own, its header at `at`.
    fn encode_header<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize) {
        let bm = self.merged_bitmap(&[]);
        let first = enc.begin_header(at, &bm[..used_words(&bm)]);
        self.put_fields(enc, &bm, first, self.len());
    }

    /// Writes these fields' slots, kinds and data into the header whose
    /// bitmap is `bm` (it has their bits), whose first slot is at `first`
    /// and which has `present` fields.
    fn put_fields<F: FnMut(&Buf)>(
        &self,
        enc: &mut Encoder<'_, F>,
        bm: &[u32],
        first: usize,
        present: usize,
    ) {
        debug_assert_eq!(present, present_count(bm));
        for (n, v) in self.list() {
            let slot = slot_of(bm, first, *n);
            enc.put_kind(first, present, slot, v.kind());
            v.put(enc, slot);
        }
    }
}
