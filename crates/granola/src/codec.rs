//! How each field type is sized, written, read, compared and detached:
//! the generic half of every generated message.
//!
//! Generated code is a struct plus one [`message!`](crate::message) line
//! naming its fields and numbers; everything a field does comes from the
//! [`FieldCodec`] impl of its Rust type. Singular values (scalars, bytes,
//! strings, messages, oneofs) implement [`Element`], and `Option<T>`,
//! `Vec<T>` and `BTreeMap<K, V>` are generic over it, so adding a field kind
//! is one impl here, not more generated code per field.

use crate::wire::{
    kind, DecodeCx, DecodeError, EncodedSizes, Encoder, HeaderReader, ListReader, WireScalar,
    ENTRY_LEN,
};
use crate::{Buf, HybridBytes, HybridStr};
use std::collections::BTreeMap;

/// A singular value: what one slot (or one list entry) holds.
pub trait Element<'a>: Sized {
    /// Bytes per entry in a repeated field's entry array.
    const WIDTH: usize;
    /// The kind byte of a slot holding this value (see [`kind`]).
    const KIND: u8;
    /// The kind byte of a repeated field of these values.
    const LIST_KIND: u8;
    /// The same value with no borrow.
    type Owned: 'static;
    /// The kind byte of this value's slot: [`KIND`](Self::KIND), except for
    /// a oneof, whose variants differ.
    #[inline]
    fn kind(&self) -> u8 {
        Self::KIND
    }
    /// The field number written for this value; `declared` except for a
    /// oneof, whose variant has its own.
    #[inline]
    fn tag(&self, declared: u32) -> u32 {
        declared
    }
    /// Adds the value's data (and nested headers) to `sizes`.
    fn accumulate(&self, sizes: &mut EncodedSizes);
    /// Writes the value whose 8-byte slot is at `at`.
    fn put_slot<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize);
    /// Writes the value as list entry `at` (`WIDTH` bytes).
    fn put_entry<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize);
    /// Reads field `number`, `None` if absent.
    fn read_slot(
        h: &HeaderReader<'a>,
        cx: &mut DecodeCx<'a>,
        number: u32,
    ) -> Result<Option<Self>, DecodeError>;
    /// Reads list entry `i`.
    fn read_entry(l: &ListReader<'a>, cx: &mut DecodeCx<'a>, i: usize)
        -> Result<Self, DecodeError>;
    /// Equality that implies identical encoding (floats by bit pattern, so
    /// NaN equals itself).
    fn same(&self, other: &Self) -> bool;
    /// The same value with no borrow (borrowed bytes are copied).
    fn into_owned(self) -> Self::Owned;
}

/// A struct field: an implicit-presence value (present unless default),
/// `Option<T>`, `Vec<T>` or `BTreeMap<K, V>`.
pub trait FieldCodec<'a>: Sized {
    /// The same field with no borrow.
    type Owned: 'static;
    /// `Some(field number)` if the field is written.
    fn tag(&self, declared: u32) -> Option<u32>;
    /// The kind byte of the field's slot when written (see [`kind`]).
    fn kind(&self) -> u8;
    /// Adds the field's data to `sizes` (nothing if absent).
    fn accumulate(&self, sizes: &mut EncodedSizes);
    /// Writes the present field whose slot is at `slot`.
    fn put<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, slot: usize);
    /// Reads field `number` (the default if absent).
    fn take(h: &HeaderReader<'a>, cx: &mut DecodeCx<'a>, number: u32) -> Result<Self, DecodeError>;
    /// See [`Element::same`].
    fn same(&self, other: &Self) -> bool;
    /// See [`Element::into_owned`].
    fn into_owned(self) -> Self::Owned;
}

macro_rules! scalar {
    ($($t:ty),*) => {$(
        impl<'a> Element<'a> for $t {
            const WIDTH: usize = <$t as WireScalar>::WIDTH;
            const KIND: u8 = kind::SCALAR;
            const LIST_KIND: u8 = kind::scalar_list(<$t as WireScalar>::WIDTH);
            type Owned = $t;
            #[inline]
            fn accumulate(&self, _: &mut EncodedSizes) {}
            #[inline]
            fn put_slot<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize) {
                enc.put_scalar(at, *self);
            }
            #[inline]
            fn put_entry<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize) {
                enc.put_scalar_entry(at, *self);
            }
            #[inline]
            fn read_slot(h: &HeaderReader<'a>, _: &mut DecodeCx<'a>, n: u32) -> Result<Option<Self>, DecodeError> {
                Ok(h.scalar::<$t>(n))
            }
            #[inline]
            fn read_entry(l: &ListReader<'a>, _: &mut DecodeCx<'a>, i: usize) -> Result<Self, DecodeError> {
                Ok(l.scalar::<$t>(i))
            }
            #[inline]
            fn same(&self, other: &Self) -> bool {
                self.to_slot() == other.to_slot()
            }
            #[inline]
            fn into_owned(self) -> $t {
                self
            }
        }

        /// Implicit presence (proto3): written unless zero (`-0.0` is
        /// written: it is not the default's bit pattern).
        impl<'a> FieldCodec<'a> for $t {
            type Owned = $t;
            #[inline]
            fn tag(&self, declared: u32) -> Option<u32> {
                (self.to_slot() != 0).then_some(declared)
            }
            #[inline]
            fn kind(&self) -> u8 {
                kind::SCALAR
            }
            #[inline]
            fn accumulate(&self, _: &mut EncodedSizes) {}
            #[inline]
            fn put<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, slot: usize) {
                enc.put_scalar(slot, *self);
            }
            #[inline]
            fn take(h: &HeaderReader<'a>, _: &mut DecodeCx<'a>, n: u32) -> Result<Self, DecodeError> {
                Ok(h.scalar::<$t>(n).unwrap_or_default())
            }
            #[inline]
            fn same(&self, other: &Self) -> bool {
                self.to_slot() == other.to_slot()
            }
            #[inline]
            fn into_owned(self) -> $t {
                self
            }
        }
    )*};
}

scalar!(u32, i32, u64, i64, f32, f64, bool);

impl<'a> Element<'a> for HybridBytes<'a> {
    const WIDTH: usize = ENTRY_LEN;
    const KIND: u8 = kind::BYTES;
    const LIST_KIND: u8 = kind::LIST_BYTES;
    type Owned = HybridBytes<'static>;
    #[inline]
    fn accumulate(&self, sizes: &mut EncodedSizes) {
        sizes.add_bytes(self);
    }
    #[inline]
    fn put_slot<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize) {
        enc.put_bytes(at, self);
    }
    #[inline]
    fn put_entry<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize) {
        enc.put_bytes(at, self);
    }
    #[inline]
    fn read_slot(
        h: &HeaderReader<'a>,
        cx: &mut DecodeCx<'a>,
        n: u32,
    ) -> Result<Option<Self>, DecodeError> {
        Ok(h.bytes(n)?.map(|b| cx.hybrid(b)))
    }
    #[inline]
    fn read_entry(
        l: &ListReader<'a>,
        cx: &mut DecodeCx<'a>,
        i: usize,
    ) -> Result<Self, DecodeError> {
        l.bytes(i).map(|b| cx.hybrid(b))
    }
    #[inline]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
    fn into_owned(self) -> HybridBytes<'static> {
        HybridBytes::into_owned(self)
    }
}

impl<'a> Element<'a> for HybridStr<'a> {
    const WIDTH: usize = ENTRY_LEN;
    const KIND: u8 = kind::BYTES;
    const LIST_KIND: u8 = kind::LIST_BYTES;
    type Owned = HybridStr<'static>;
    #[inline]
    fn accumulate(&self, sizes: &mut EncodedSizes) {
        sizes.add_bytes(self.as_hybrid());
    }
    #[inline]
    fn put_slot<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize) {
        enc.put_bytes(at, self.as_hybrid());
    }
    #[inline]
    fn put_entry<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, at: usize) {
        enc.put_bytes(at, self.as_hybrid());
    }
    #[inline]
    fn read_slot(
        h: &HeaderReader<'a>,
        cx: &mut DecodeCx<'a>,
        n: u32,
    ) -> Result<Option<Self>, DecodeError> {
        Ok(h.bytes(n)?
            .map(|b| HybridStr::from_bytes_unchecked(cx.hybrid(b))))
    }
    #[inline]
    fn read_entry(
        l: &ListReader<'a>,
        cx: &mut DecodeCx<'a>,
        i: usize,
    ) -> Result<Self, DecodeError> {
        l.bytes(i)
            .map(|b| HybridStr::from_bytes_unchecked(cx.hybrid(b)))
    }
    #[inline]
    fn same(&self, other: &Self) -> bool {
        self == other
    }
    fn into_owned(self) -> HybridStr<'static> {
        HybridStr::into_owned(self)
    }
}

/// Implicit presence for bytes and strings: written unless empty.
macro_rules! implicit_bytes {
    ($($t:ident),*) => {$(
        impl<'a> FieldCodec<'a> for $t<'a> {
            type Owned = $t<'static>;
            #[inline]
            fn tag(&self, declared: u32) -> Option<u32> {
                (!self.is_empty()).then_some(declared)
            }
            #[inline]
            fn kind(&self) -> u8 {
                kind::BYTES
            }
            #[inline]
            fn accumulate(&self, sizes: &mut EncodedSizes) {
                if !self.is_empty() {
                    Element::accumulate(self, sizes);
                }
            }
            #[inline]
            fn put<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, slot: usize) {
                self.put_slot(enc, slot);
            }
            #[inline]
            fn take(h: &HeaderReader<'a>, cx: &mut DecodeCx<'a>, n: u32) -> Result<Self, DecodeError> {
                Ok(Self::read_slot(h, cx, n)?.unwrap_or_default())
            }
            #[inline]
            fn same(&self, other: &Self) -> bool {
                self == other
            }
            fn into_owned(self) -> $t<'static> {
                $t::into_owned(self)
            }
        }
    )*};
}

implicit_bytes!(HybridBytes, HybridStr);

/// Explicit presence: `optional` scalars, nested messages, oneofs.
impl<'a, T: Element<'a>> FieldCodec<'a> for Option<T> {
    type Owned = Option<T::Owned>;
    #[inline]
    fn tag(&self, declared: u32) -> Option<u32> {
        self.as_ref().map(|v| v.tag(declared))
    }
    #[inline]
    fn kind(&self) -> u8 {
        self.as_ref().map_or(T::KIND, Element::kind)
    }
    #[inline]
    fn accumulate(&self, sizes: &mut EncodedSizes) {
        if let Some(v) = self {
            v.accumulate(sizes);
        }
    }
    #[inline]
    fn put<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, slot: usize) {
        if let Some(v) = self {
            v.put_slot(enc, slot);
        }
    }
    #[inline]
    fn take(h: &HeaderReader<'a>, cx: &mut DecodeCx<'a>, n: u32) -> Result<Self, DecodeError> {
        T::read_slot(h, cx, n)
    }
    #[inline]
    fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.same(b),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
    fn into_owned(self) -> Self::Owned {
        self.map(Element::into_owned)
    }
}

/// Repeated fields: written unless empty.
impl<'a, T: Element<'a>> FieldCodec<'a> for Vec<T> {
    type Owned = Vec<T::Owned>;
    #[inline]
    fn tag(&self, declared: u32) -> Option<u32> {
        (!self.is_empty()).then_some(declared)
    }
    #[inline]
    fn kind(&self) -> u8 {
        T::LIST_KIND
    }
    #[inline]
    fn accumulate(&self, sizes: &mut EncodedSizes) {
        sizes.add_header(self.len() * T::WIDTH);
        for v in self {
            v.accumulate(sizes);
        }
    }
    #[inline]
    fn put<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, slot: usize) {
        let arr = enc.put_list(slot, self.len(), T::WIDTH);
        for (i, v) in self.iter().enumerate() {
            v.put_entry(enc, arr + i * T::WIDTH);
        }
    }
    fn take(h: &HeaderReader<'a>, cx: &mut DecodeCx<'a>, n: u32) -> Result<Self, DecodeError> {
        let Some(l) = h.list::<T>(cx, n, T::WIDTH)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(l.len());
        for i in 0..l.len() {
            out.push(T::read_entry(&l, cx, i)?);
        }
        Ok(out)
    }
    #[inline]
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.same(b))
    }
    fn into_owned(self) -> Self::Owned {
        self.into_iter().map(Element::into_owned).collect()
    }
}

/// A map entry's header: bitmap word `0b11` (key = 1, value = 2), two slots.
const MAP_ENTRY_HEADER: usize = crate::wire::header_len(1, 2);

/// `map<K, V>`: a list of entry messages `{ K key = 1; V value = 2; }`, in
/// key order, each with both fields written (so an entry never needs its
/// schema to be read). A repeated key on the wire: the last one wins.
impl<'a, K, V> FieldCodec<'a> for BTreeMap<K, V>
where
    K: Element<'a> + Ord + Default,
    V: Element<'a> + Default,
    K::Owned: Ord,
{
    type Owned = BTreeMap<K::Owned, V::Owned>;
    #[inline]
    fn tag(&self, declared: u32) -> Option<u32> {
        (!self.is_empty()).then_some(declared)
    }
    #[inline]
    fn kind(&self) -> u8 {
        kind::LIST_MESSAGE
    }
    fn accumulate(&self, sizes: &mut EncodedSizes) {
        sizes.add_header(self.len() * (ENTRY_LEN + MAP_ENTRY_HEADER));
        for (k, v) in self {
            k.accumulate(sizes);
            v.accumulate(sizes);
        }
    }
    fn put<F: FnMut(&Buf)>(&self, enc: &mut Encoder<'_, F>, slot: usize) {
        let arr = enc.put_list(slot, self.len(), ENTRY_LEN);
        for (i, (k, v)) in self.iter().enumerate() {
            let h = enc.put_nested(arr + i * ENTRY_LEN, MAP_ENTRY_HEADER);
            let first = enc.begin_header(h, &[0b11]);
            let second = first + crate::wire::SLOT_LEN;
            enc.put_kind(first, 2, first, k.kind());
            enc.put_kind(first, 2, second, v.kind());
            k.put_slot(enc, first);
            v.put_slot(enc, second);
        }
    }
    fn take(h: &HeaderReader<'a>, cx: &mut DecodeCx<'a>, n: u32) -> Result<Self, DecodeError> {
        let mut out = BTreeMap::new();
        let Some(l) = h.list::<(K, V)>(cx, n, ENTRY_LEN)? else {
            return Ok(out);
        };
        for i in 0..l.len() {
            let e = l.nested(cx, i)?;
            let k = K::read_slot(&e, cx, 1)?.unwrap_or_default();
            let v = V::read_slot(&e, cx, 2)?.unwrap_or_default();
            out.insert(k, v);
        }
        Ok(out)
    }
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .zip(other)
                .all(|((ka, va), (kb, vb))| ka.same(kb) && va.same(vb))
    }
    fn into_owned(self) -> Self::Owned {
        self.into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }
}

/// Bit `number - 1` set in `bm` (numbers beyond `bm` are ignored: the
/// generator sizes `bm` for the highest number).
#[inline]
pub fn set_bit(bm: &mut [u32], number: u32) {
    let bit = (number as usize).wrapping_sub(1);
    if let Some(w) = bm.get_mut(bit / 32) {
        *w |= 1 << (bit % 32);
    }
}

/// The bitmap with the bits of `numbers` set (numbers beyond it ignored):
/// a message's known fields, computed at compile time.
pub const fn known_bitmap<const N: usize>(numbers: &[u32]) -> [u32; N] {
    let mut bm = [0u32; N];
    let mut i = 0;
    while i < numbers.len() {
        let bit = numbers[i] as usize - 1;
        if bit / 32 < N {
            bm[bit / 32] |= 1 << (bit % 32);
        }
        i += 1;
    }
    bm
}

/// Where field `number`'s slot is, for a header whose first slot is at
/// `first`: one slot per present field below it.
#[inline]
pub fn slot_of(bm: &[u32], first: usize, number: u32) -> usize {
    let bit = (number as usize).wrapping_sub(1);
    let (w, b) = (bit / 32, bit % 32);
    let mut below = bm
        .get(w)
        .map_or(0, |x| (x & ((1u32 << b) - 1)).count_ones());
    for x in &bm[..w.min(bm.len())] {
        below += x.count_ones();
    }
    first + crate::wire::SLOT_LEN * below as usize
}
