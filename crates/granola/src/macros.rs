//! The two macros generated code invokes: one line per message or oneof
//! turns a plain struct (or enum) into a granola message. They are how the
//! generated files stay close to prost's in size: the per-field work lives
//! in [`FieldCodec`](crate::__private::FieldCodec) impls, not in generated
//! code. Not a stable API: only `granola-build` output should call them.

/// Implements `Message`, `Decode`, `IntoOwned`, `PartialEq` and the
/// nested-message element impls for a generated struct.
///
/// `message!(Name<'a>, WORDS, { field = NUMBER, ... } [, unknown [N, ...]])`:
/// `WORDS` is the bitmap words the highest field number needs; fields are
/// listed in field-number order (a oneof at its lowest member number),
/// which is the order their data is placed on the wire. `unknown`, if
/// given, names the struct's [`UnknownFields`](crate::UnknownFields)
/// field, followed by every field number the schema knows (oneof members
/// included): decode keeps the fields with other numbers there, and encode
/// writes them back.
#[doc(hidden)]
#[macro_export]
macro_rules! message {
    ($name:ident <$lt:lifetime>, $words:literal, { $($field:ident = $tag:literal),* $(,)? } $(, $unknown:ident [$($known:literal),* $(,)?])?) => {
        $crate::message!(@impl $name, [$name<$lt>], [$name<'static>], [$name<'x>], $words, { $($field = $tag),* }, [$($unknown [$($known),*])?], [::core::convert::identity]);
    };
    ($name:ident, $words:literal, { $($field:ident = $tag:literal),* $(,)? } $(, $unknown:ident [$($known:literal),* $(,)?])?) => {
        $crate::message!(@impl $name, [$name], [$name], [$name], $words, { $($field = $tag),* }, [$($unknown [$($known),*])?], [$crate::UnknownFields::into_owned]);
    };
    (@bitmap $self:ident, $words:literal, { $($field:ident = $tag:literal),* }) => {{
        #[allow(unused_mut)]
        let mut bm = [0u32; $words];
        $(
            if let ::core::option::Option::Some(t) = $crate::__private::FieldCodec::tag(&$self.$field, $tag) {
                $crate::__private::set_bit(&mut bm, t);
            }
        )*
        bm
    }};
    (@impl $name:ident, [$($ty:tt)+], [$($owned:tt)+], [$($of:tt)+], $words:literal, { $($field:ident = $tag:literal),* }, [$($unknown:ident [$($known:literal),*])?], [$adopt:path]) => {
        #[allow(deprecated)]
        impl $crate::MessageType for $($owned)+ {
            type Of<'x> = $($of)+;
            #[inline]
            fn shorten<'x>(&self) -> &<Self as $crate::MessageType>::Of<'x> {
                self
            }
        }

        #[allow(deprecated)]
        impl<'a> $crate::Message for $($ty)+ {
            #[inline]
            fn __header_len(&self) -> usize {
                let bm = $crate::message!(@bitmap self, $words, { $($field = $tag),* });
                $(
                    if !self.$unknown.is_empty() {
                        return self.$unknown.header_len_with(&bm);
                    }
                )?
                $crate::__private::header_len(
                    $crate::__private::used_words(&bm),
                    $crate::__private::present_count(&bm),
                )
            }

            fn __accumulate(&self, sizes: &mut $crate::EncodedSizes) {
                sizes.add_header($crate::Message::__header_len(self));
                $( $crate::__private::FieldCodec::accumulate(&self.$field, sizes); )*
                $( self.$unknown.accumulate_fields(sizes); )?
            }

            fn __encode_header<GranolaSink_: FnMut(&$crate::Buf)>(
                &self,
                enc: &mut $crate::__private::Encoder<'_, GranolaSink_>,
                at: usize,
            ) {
                // Writes the header for bitmap `bm` and the known fields;
                // returns (first slot, present fields). Generic over the
                // bitmap so that the usual case, a fixed-size array, keeps
                // its length known to the compiler.
                #[inline(always)]
                #[allow(clippy::extra_unused_lifetimes, non_camel_case_types)]
                fn put_known<'x, GranolaSink_: FnMut(&$crate::Buf), GranolaBits_: ::core::convert::AsRef<[u32]> + ?::core::marker::Sized>(
                    this: &$($of)+,
                    enc: &mut $crate::__private::Encoder<'_, GranolaSink_>,
                    at: usize,
                    bm: &GranolaBits_,
                ) -> (usize, usize) {
                    let bm = bm.as_ref();
                    let first = enc.begin_header(at, &bm[..$crate::__private::used_words(bm)]);
                    let present = $crate::__private::present_count(bm);
                    let _ = this;
                    $(
                        if let ::core::option::Option::Some(t) = $crate::__private::FieldCodec::tag(&this.$field, $tag) {
                            let slot = $crate::__private::slot_of(bm, first, t);
                            enc.put_kind(first, present, slot, $crate::__private::FieldCodec::kind(&this.$field));
                            $crate::__private::FieldCodec::put(&this.$field, enc, slot);
                        }
                    )*
                    (first, present)
                }
                let bm = $crate::message!(@bitmap self, $words, { $($field = $tag),* });
                // Kept unknown fields: out of line, so that the usual path
                // stays small (and inlined where it was).
                $(
                    if !self.$unknown.is_empty() {
                        return self.$unknown.encode_with(enc, &bm, |enc, bm| put_known(self, enc, at, bm));
                    }
                )?
                put_known(self, enc, at, &bm);
            }
        }

        #[allow(deprecated)]
        impl<'a> $crate::Decode<'a> for $($ty)+ {
            #[inline]
            fn __decode(
                cx: &mut $crate::__private::DecodeCx<'a>,
                h: &$crate::__private::HeaderReader<'a>,
            ) -> ::core::result::Result<Self, $crate::DecodeError> {
                // The known fields (unknown ones left empty).
                #[inline(always)]
                #[allow(clippy::extra_unused_lifetimes)]
                fn known_fields<'x>(
                    cx: &mut $crate::__private::DecodeCx<'x>,
                    h: &$crate::__private::HeaderReader<'x>,
                ) -> ::core::result::Result<$($of)+, $crate::DecodeError> {
                    let _ = (&cx, &h);
                    ::core::result::Result::Ok($name {
                        $( $field: $crate::__private::FieldCodec::take(h, cx, $tag)?, )*
                        $( $unknown: ::core::default::Default::default(), )?
                    })
                }
                // Fields the schema does not know: checked inline first,
                // read out of line (rare), so the usual path builds the
                // message straight in place.
                $(
                    const KNOWN: [u32; $words] = $crate::__private::known_bitmap(&[$($known),*]);
                    if !$crate::UnknownFields::all_known(h, &KNOWN) {
                        return $crate::UnknownFields::decode_with(*h, cx, &KNOWN, known_fields, |m, u| m.$unknown = $adopt(u));
                    }
                )?
                known_fields(cx, h)
            }
        }

        #[allow(deprecated)]
        impl<'a> $crate::IntoOwned for $($ty)+ {
            type Owned = $($owned)+;
            fn into_owned(self) -> $($owned)+ {
                $name {
                    $( $field: $crate::__private::FieldCodec::into_owned(self.$field), )*
                    $( $unknown: self.$unknown.into_owned(), )?
                }
            }
        }

        /// Equality means "same fields, same values"; floats compare by bit
        /// pattern, so it is reflexive (NaN == NaN) and implies identical
        /// encoding.
        #[allow(deprecated)]
        impl<'a> ::core::cmp::PartialEq for $($ty)+ {
            fn eq(&self, other: &Self) -> bool {
                let _ = other;
                true $( && $crate::__private::FieldCodec::same(&self.$field, &other.$field) )*
                    $( && self.$unknown == other.$unknown )?
            }
        }

        $crate::message!(@element [$($ty)+], [$($ty)+], [$($owned)+], []);
        $crate::message!(@element [::std::boxed::Box<$($ty)+>], [$($ty)+], [::std::boxed::Box<$($owned)+>], [*]);
    };
    // `$ty` is the message or its box, `$inner` the message; `$deref`
    // unboxes.
    (@element [$($ty:tt)+], [$($inner:tt)+], [$($owned:tt)+], [$($deref:tt)*]) => {
        #[allow(deprecated)]
        impl<'a> $crate::__private::Element<'a> for $($ty)+ {
            const WIDTH: usize = $crate::__private::ENTRY_LEN;
            const KIND: u8 = $crate::wire::kind::MESSAGE;
            const LIST_KIND: u8 = $crate::wire::kind::LIST_MESSAGE;
            type Owned = $($owned)+;
            #[inline]
            fn accumulate(&self, sizes: &mut $crate::EncodedSizes) {
                <$($inner)+ as $crate::Message>::__accumulate(self, sizes);
            }
            #[inline]
            fn put_slot<GranolaSink_: FnMut(&$crate::Buf)>(&self, enc: &mut $crate::__private::Encoder<'_, GranolaSink_>, at: usize) {
                let h = enc.put_nested(at, <$($inner)+ as $crate::Message>::__header_len(self));
                <$($inner)+ as $crate::Message>::__encode_header(self, enc, h);
            }
            #[inline]
            fn put_entry<GranolaSink_: FnMut(&$crate::Buf)>(&self, enc: &mut $crate::__private::Encoder<'_, GranolaSink_>, at: usize) {
                self.put_slot(enc, at);
            }
            fn read_slot(
                h: &$crate::__private::HeaderReader<'a>,
                cx: &mut $crate::__private::DecodeCx<'a>,
                n: u32,
            ) -> ::core::result::Result<::core::option::Option<Self>, $crate::DecodeError> {
                match h.nested::<$($inner)+>(cx, n)? {
                    ::core::option::Option::Some(nh) => ::core::result::Result::Ok(
                        ::core::option::Option::Some(<$($inner)+ as $crate::Decode<'a>>::__decode(cx, &nh)?.into()),
                    ),
                    ::core::option::Option::None => ::core::result::Result::Ok(::core::option::Option::None),
                }
            }
            fn read_entry(
                l: &$crate::__private::ListReader<'a>,
                cx: &mut $crate::__private::DecodeCx<'a>,
                i: usize,
            ) -> ::core::result::Result<Self, $crate::DecodeError> {
                let nh = l.nested(cx, i)?;
                ::core::result::Result::Ok(<$($inner)+ as $crate::Decode<'a>>::__decode(cx, &nh)?.into())
            }
            #[inline]
            fn same(&self, other: &Self) -> bool {
                self == other
            }
            fn into_owned(self) -> $($owned)+ {
                $crate::IntoOwned::into_owned($($deref)* self).into()
            }
        }
    };
}

/// Implements the element impl of a generated oneof enum:
/// `oneof!(Name<'a>, { Variant(Type) = NUMBER, ... })`, members in number
/// order.
#[doc(hidden)]
#[macro_export]
macro_rules! oneof {
    ($name:ident <$lt:lifetime>, { $($var:ident($vty:ty) = $tag:literal),* $(,)? }) => {
        $crate::oneof!(@impl $name, [$name<$lt>], [$name<'static>], { $($var($vty) = $tag),* });
    };
    ($name:ident, { $($var:ident($vty:ty) = $tag:literal),* $(,)? }) => {
        $crate::oneof!(@impl $name, [$name], [$name], { $($var($vty) = $tag),* });
    };
    (@impl $name:ident, [$($ty:tt)+], [$($owned:tt)+], { $($var:ident($vty:ty) = $tag:literal),* }) => {
        #[allow(deprecated)]
        impl<'a> $crate::__private::Element<'a> for $($ty)+ {
            const WIDTH: usize = $crate::__private::ENTRY_LEN;
            // Per variant: see `kind`.
            const KIND: u8 = $crate::wire::kind::MESSAGE;
            const LIST_KIND: u8 = $crate::wire::kind::LIST_MESSAGE;
            type Owned = $($owned)+;
            #[inline]
            fn tag(&self, _: u32) -> u32 {
                match self { $( $name::$var(_) => $tag, )* }
            }
            #[inline]
            fn kind(&self) -> u8 {
                match self { $( $name::$var(v) => $crate::__private::Element::kind(v), )* }
            }
            #[inline]
            fn accumulate(&self, sizes: &mut $crate::EncodedSizes) {
                match self { $( $name::$var(v) => $crate::__private::Element::accumulate(v, sizes), )* }
            }
            #[inline]
            fn put_slot<GranolaSink_: FnMut(&$crate::Buf)>(&self, enc: &mut $crate::__private::Encoder<'_, GranolaSink_>, at: usize) {
                match self { $( $name::$var(v) => $crate::__private::Element::put_slot(v, enc, at), )* }
            }
            #[inline]
            fn put_entry<GranolaSink_: FnMut(&$crate::Buf)>(&self, enc: &mut $crate::__private::Encoder<'_, GranolaSink_>, at: usize) {
                self.put_slot(enc, at);
            }
            fn read_slot(
                h: &$crate::__private::HeaderReader<'a>,
                cx: &mut $crate::__private::DecodeCx<'a>,
                _: u32,
            ) -> ::core::result::Result<::core::option::Option<Self>, $crate::DecodeError> {
                // Several members present (hostile or corrupt input): the
                // highest-numbered one wins (members are listed in number
                // order), as protobuf's "last one wins".
                let mut found = ::core::option::Option::None;
                $(
                    if let ::core::option::Option::Some(v) =
                        <$vty as $crate::__private::Element<'a>>::read_slot(h, cx, $tag)?
                    {
                        found = ::core::option::Option::Some($name::$var(v));
                    }
                )*
                ::core::result::Result::Ok(found)
            }
            fn read_entry(
                _: &$crate::__private::ListReader<'a>,
                _: &mut $crate::__private::DecodeCx<'a>,
                _: usize,
            ) -> ::core::result::Result<Self, $crate::DecodeError> {
                ::core::result::Result::Err($crate::__private::oneof_in_list())
            }
            fn same(&self, other: &Self) -> bool {
                match (self, other) {
                    $( ($name::$var(a), $name::$var(b)) => $crate::__private::Element::same(a, b), )*
                    #[allow(unreachable_patterns)]
                    _ => false,
                }
            }
            fn into_owned(self) -> $($owned)+ {
                match self { $( $name::$var(v) => $name::$var($crate::__private::Element::into_owned(v)), )* }
            }
        }

        #[allow(deprecated)]
        impl<'a> ::core::cmp::PartialEq for $($ty)+ {
            fn eq(&self, other: &Self) -> bool {
                $crate::__private::Element::same(self, other)
            }
        }
    };
}
