//! The model to Rust source. The golden files (`tests/golden/`) and the
//! wire-format goldens of `granola-tests` are the contract.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

use heck::ToUpperCamelCase;

use crate::model::{is_keyword, Enum, Field, Kind, Message, Model, Oneof, Package, TypePath};

/// Lints allowed on every generated item, so the generated code is quiet
/// under `-D warnings` whatever the including crate enables.
fn allows() -> TokenStream {
    quote! {
        #[allow(dead_code, deprecated, unused_parens, non_camel_case_types, clippy::all, clippy::pedantic, clippy::nursery)]
    }
}

/// `#[deprecated]` before every `pub fn` of an accessor block.
fn deprecate(ts: TokenStream) -> TokenStream {
    use proc_macro2::TokenTree;
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = TokenStream::new();
    for (i, t) in tokens.iter().enumerate() {
        let is_pub_fn = matches!(t, TokenTree::Ident(id) if id == "pub")
            && matches!(tokens.get(i + 1), Some(TokenTree::Ident(id)) if id == "fn");
        if is_pub_fn {
            out.extend(quote!(#[deprecated]));
        }
        out.extend([t.clone()]);
    }
    out
}

fn deprecated_attr(yes: bool) -> TokenStream {
    if yes {
        quote!(#[deprecated])
    } else {
        quote!()
    }
}

/// A proto enum: a Rust enum (`#[repr(i32)]`) with conversions. Fields of
/// the enum's type store the raw `i32`, so unknown values survive.
/// `Config::type_attribute` attributes for the type `full`.
fn type_attrs(model: &Model, full: &str) -> TokenStream {
    attrs(&model.type_attrs, full)
}

fn attrs(list: &[(String, String)], full: &str) -> TokenStream {
    let mut ts = TokenStream::new();
    for (path, attr) in list {
        if crate::model::path_matches(path, full) {
            // Checked to parse by Config.
            ts.extend(attr.parse::<TokenStream>().unwrap_or_default());
        }
    }
    ts
}

fn enumeration(model: &Model, e: &Enum) -> TokenStream {
    let allow = allows();
    let user_attrs = type_attrs(model, &e.full_name);
    let name = ident(&e.rust_name);
    let mut d = doc_lines(&e.doc);
    if !d.is_empty() {
        d.push(String::new());
    }
    d.push(format!(
        " Proto enum `{}` (open: fields keep unknown values as `i32`).",
        e.full_name
    ));
    let d = docs(&d);
    let dep = deprecated_attr(e.deprecated);
    let primary: Vec<_> = e.values.iter().filter(|v| !v.alias).collect();
    let variants = primary.iter().map(|v| {
        let var = ident(&v.variant);
        let n = Literal::i32_unsuffixed(v.number);
        let vd = docs(&doc_lines(&v.doc));
        let vdep = deprecated_attr(v.deprecated);
        let decl = doc(&format!("`{} = {}`", v.proto_name, v.number));
        quote!(#vd #decl #vdep #var = #n,)
    });
    let from_arms = primary.iter().map(|v| {
        let var = ident(&v.variant);
        let n = Literal::i32_unsuffixed(v.number);
        quote!(#n => ::core::option::Option::Some(#name::#var),)
    });
    let name_arms = primary.iter().map(|v| {
        let var = ident(&v.variant);
        let s = &v.proto_name;
        quote!(#name::#var => #s,)
    });
    let parse_arms = e.values.iter().map(|v| {
        let var = ident(
            primary
                .iter()
                .find(|p| p.number == v.number)
                .map_or(&v.variant, |p| &p.variant),
        );
        let s = &v.proto_name;
        quote!(#s => ::core::option::Option::Some(#name::#var),)
    });
    let default = primary
        .iter()
        .find(|v| v.number == 0)
        .or(primary.first())
        .map(|v| ident(&v.variant));
    let default_impl = default.map(|v| {
        quote! {
            #allow
            impl ::core::default::Default for #name {
                fn default() -> Self {
                    #name::#v
                }
            }
        }
    });
    quote! {
        #d
        #allow
        #dep
        #user_attrs
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i32)]
        pub enum #name {
            #(#variants)*
        }

        #allow
        impl #name {
            /// The variant with this number, if the schema declares one.
            pub fn from_i32(value: i32) -> ::core::option::Option<Self> {
                match value {
                    #(#from_arms)*
                    _ => ::core::option::Option::None,
                }
            }

            /// The value's name in the schema.
            pub fn as_str_name(&self) -> &'static str {
                match self {
                    #(#name_arms)*
                }
            }

            /// The variant named `name` in the schema (aliases included).
            pub fn from_str_name(name: &str) -> ::core::option::Option<Self> {
                match name {
                    #(#parse_arms)*
                    _ => ::core::option::Option::None,
                }
            }
        }

        #default_impl

        #allow
        impl ::core::convert::From<#name> for i32 {
            fn from(value: #name) -> i32 {
                value as i32
            }
        }

        #allow
        impl ::core::convert::TryFrom<i32> for #name {
            type Error = i32;
            fn try_from(value: i32) -> ::core::result::Result<Self, i32> {
                #name::from_i32(value).ok_or(value)
            }
        }
    }
}

/// The variant name of a oneof member.
fn variant_name(f: &Field) -> Ident {
    ident(&f.proto_name.to_upper_camel_case())
}

/// Whether a oneof's enum borrows the context (has a bytes, string or
/// message member).
fn oneof_has_lifetime(m: &Message, i: usize) -> bool {
    m.fields
        .iter()
        .any(|f| f.oneof == Some(i) && !matches!(f.kind, Kind::Scalar(_)))
}

/// The oneof's enum type as seen from the message's own scope.
fn oneof_type(m: &Message, o: &Oneof, i: usize) -> TokenStream {
    let module = ident(&m.mod_name);
    let t = ident(&o.type_name);
    if oneof_has_lifetime(m, i) {
        quote!(#module::#t<'a>)
    } else {
        quote!(#module::#t)
    }
}

/// An expression of type `Option<&Storage>` for a field's value.
fn access(m: &Message, f: &Field) -> TokenStream {
    match f.oneof {
        None => {
            let field = ident(&f.ident);
            quote!(self.#field.as_ref())
        }
        Some(i) => {
            let o = &m.oneofs[i];
            let oi = ident(&o.ident);
            let module = ident(&m.mod_name);
            let t = ident(&o.type_name);
            let var = variant_name(f);
            quote! {
                (match &self.#oi {
                    ::core::option::Option::Some(#module::#t::#var(v)) => ::core::option::Option::Some(v),
                    _ => ::core::option::Option::None,
                })
            }
        }
    }
}

/// An identifier, raw (`r#type`) if it is a keyword. The model only passes
/// valid identifiers; anything else gets a `_` prefix rather than a panic.
fn ident(s: &str) -> Ident {
    let valid = s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !matches!(s, "_" | "self" | "Self" | "super" | "crate");
    if !valid {
        return Ident::new(&format!("_{s}"), Span::call_site());
    }
    if is_keyword(s) {
        Ident::new_raw(s, Span::call_site())
    } else {
        Ident::new(s, Span::call_site())
    }
}

fn doc_lines(text: &str) -> Vec<String> {
    let text = text.trim_end_matches(['\n', ' ']);
    if text.trim().is_empty() {
        return Vec::new();
    }
    text.lines().map(|l| l.trim_end().to_owned()).collect()
}

fn docs(lines: &[String]) -> TokenStream {
    let mut ts = TokenStream::new();
    for l in lines {
        let l = if l.is_empty() || l.starts_with(' ') {
            l.clone()
        } else {
            format!(" {l}")
        };
        ts.extend(quote!(#[doc = #l]));
    }
    ts
}

fn doc(line: &str) -> TokenStream {
    docs(&[format!(" {line}")])
}

/// The public description of a service for a `ServiceGenerator`.
pub(crate) fn service(
    model: &Model,
    p: &Package,
    s: &crate::model::ServiceModel,
) -> crate::Service {
    let from: Vec<String> = if p.name.is_empty() {
        Vec::new()
    } else {
        p.name
            .split('.')
            .map(|x| crate::model::ident_name(&crate::model::snake(x)))
            .collect()
    };
    let path = |proto: &str| -> String {
        model.types.get(proto).map_or_else(
            || proto.to_owned(),
            |t| type_path(&from, t).to_string().replace(' ', ""),
        )
    };
    crate::Service {
        name: s.name.clone(),
        package: s.package.clone(),
        full_name: s.full_name.clone(),
        comments: s.doc.clone(),
        methods: s
            .methods
            .iter()
            .map(|m| crate::Method {
                name: m.name.clone(),
                proto_name: m.proto_name.clone(),
                comments: m.doc.clone(),
                input_type: path(&m.input_proto),
                output_type: path(&m.output_proto),
                input_proto_type: m.input_proto.clone(),
                output_proto_type: m.output_proto.clone(),
                client_streaming: m.client_streaming,
                server_streaming: m.server_streaming,
            })
            .collect(),
    }
}

/// Renders one package's file.
pub(crate) fn package(model: &Model, p: &Package) -> String {
    let mut items = TokenStream::new();
    for e in &p.enums {
        items.extend(enumeration(model, e));
    }
    for m in &p.messages {
        items.extend(message(model, m));
    }
    let file: syn::File = match syn::parse2(items.clone()) {
        Ok(f) => f,
        // Cannot happen for well-formed input; fall back to the raw tokens
        // so the compiler reports the problem in context.
        Err(_) => return format!("{}\n{}\n", header(p), items),
    };
    format!(
        "{}\n{}",
        header(p),
        space_items(&prettyplease::unparse(&file))
    )
}

/// prettyplease puts no blank lines between items; add one after each
/// closing brace that is followed by another item or method.
fn space_items(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + src.len() / 16);
    let mut prev = "";
    for line in src.lines() {
        let t = line.trim_start();
        let starts_item = t.starts_with("///")
            || t.starts_with("#[")
            || t.starts_with("pub ")
            || t.starts_with("fn ")
            || t.starts_with("impl");
        if prev == "}" && starts_item {
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
        prev = t;
    }
    out
}

fn header(p: &Package) -> String {
    let pkg = if p.name.is_empty() {
        "(no package)".to_owned()
    } else {
        format!("package `{}`", p.name)
    };
    format!(
        "// @generated by granola-build from {}. Do not edit.\n// Proto {pkg}.\n",
        p.files.join(", ")
    )
}

/// The path to `target` from code in module `from` (both from the root of
/// the package tree), relative (`super::`) so the output can be included
/// anywhere as long as the package modules mirror the proto packages.
fn type_path(from: &[String], target: &TypePath) -> TokenStream {
    if let Some(p) = &target.external {
        return match syn::parse_str::<syn::Path>(p) {
            Ok(path) => quote!(#path),
            // Reported by Config::extern_path's check; keep the text so the
            // compiler points at it.
            Err(_) => p.parse().unwrap_or_default(),
        };
    }
    let common = from
        .iter()
        .zip(&target.modules)
        .take_while(|(a, b)| a == b)
        .count();
    let mut ts = TokenStream::new();
    for _ in common..from.len() {
        ts.extend(quote!(super::));
    }
    for m in &target.modules[common..] {
        let m = ident(m);
        ts.extend(quote!(#m::));
    }
    let name = ident(&target.name);
    ts.extend(quote!(#name));
    ts
}

fn message(model: &Model, m: &Message) -> TokenStream {
    let allow = allows();
    let name = ident(&m.rust_name);
    let name_str = &m.rust_name;
    let mut msg_doc = doc_lines(&m.doc);
    if !msg_doc.is_empty() {
        msg_doc.push(String::new());
    }
    msg_doc.push(format!(" Proto message `{}`.", m.full_name));
    let msg_doc = docs(&msg_doc);
    let msg_dep = deprecated_attr(m.deprecated);
    let msg_attrs = type_attrs(model, &m.full_name);

    let mut by_number: Vec<&Field> = m.fields.iter().collect();
    by_number.sort_by_key(|f| f.number);
    let max = by_number.last().map_or(0, |f| f.number);
    let words = Literal::usize_unsuffixed((max as usize).div_ceil(32).max(1));

    // `scope` is the module the type is named from.
    let ty_in = |f: &Field, scope: &[String]| -> TokenStream {
        match &f.kind {
            Kind::Scalar(t) => {
                let t = Ident::new(t, Span::call_site());
                quote!(#t)
            }
            Kind::Bytes => quote!(::granola::HybridBytes<'a>),
            Kind::String => quote!(::granola::HybridStr<'a>),
            Kind::Message(t) => {
                let p = type_path(scope, &model.types[t]);
                quote!(#p<'a>)
            }
        }
    };
    let ty = |f: &Field| ty_in(f, &m.scope);
    let storage_in = |f: &Field, scope: &[String]| -> TokenStream {
        let t = ty_in(f, scope);
        match (&f.kind, f.repeated) {
            (_, true) => quote!(::granola::List<'a, #t>),
            (Kind::Message(_), false) => quote!(::granola::__private::ArenaBox<'a, #t>),
            _ => t,
        }
    };

    let mut struct_fields = TokenStream::new();
    let mut inits = TokenStream::new();
    let mut accessors = TokenStream::new();
    let mut oneof_done = vec![false; m.oneofs.len()];
    for f in &m.fields {
        let t = ty(f);
        let bare = match &f.kind {
            Kind::Message(name) => type_path(&m.scope, &model.types[name]),
            _ => t.clone(),
        };
        let enum_ty = f
            .enum_type
            .as_ref()
            .map(|e| type_path(&m.scope, &model.types[e]));
        if let Some(i) = f.oneof {
            if !oneof_done[i] {
                oneof_done[i] = true;
                let o = &m.oneofs[i];
                let field = ident(&o.ident);
                let oty = oneof_type(m, o, i);
                let fdoc = doc(&format!("`oneof {}`", o.proto_name));
                let fattrs = attrs(
                    &model.field_attrs,
                    &format!("{}.{}", m.full_name, o.proto_name),
                );
                struct_fields.extend(quote! {
                    #fdoc
                    #fattrs
                    #field: ::core::option::Option<#oty>,
                });
                inits.extend(quote!(#field: ::core::option::Option::None,));
                accessors.extend(oneof_accessors(o, &oty));
            }
            let acc = oneof_member_setter(m, f, &t, enum_ty.as_ref());
            accessors.extend(if f.deprecated { deprecate(acc) } else { acc });
            continue;
        }
        let field = ident(&f.ident);
        let storage = storage_in(f, &m.scope);
        let fdoc = doc(&format!("`{}`", f.decl));
        let fattrs = attrs(
            &model.field_attrs,
            &format!("{}.{}", m.full_name, f.proto_name),
        );
        struct_fields.extend(quote! {
            #fdoc
            #fattrs
            #field: ::core::option::Option<#storage>,
        });
        inits.extend(quote!(#field: ::core::option::Option::None,));
        let acc = field_accessors(f, &t, &bare, enum_ty.as_ref());
        accessors.extend(if f.deprecated { deprecate(acc) } else { acc });
    }

    let bitmap = by_number.iter().map(|f| {
        let a = access(m, f);
        let word = Literal::usize_unsuffixed((f.number as usize - 1) / 32);
        let bit = Literal::u32_unsuffixed((f.number - 1) % 32);
        quote! {
            if #a.is_some() {
                bm[#word] |= 1 << #bit;
            }
        }
    });
    let bm_mut = if m.fields.is_empty() {
        quote!()
    } else {
        quote!(mut)
    };

    let accumulate = by_number
        .iter()
        .map(|f| accumulate(f, &ty(f), &access(m, f)));
    let encode = by_number.iter().map(|f| encode(f, &access(m, f)));
    let slot_mut = bm_mut.clone();
    let decode = by_number.iter().map(|f| {
        let assign = |v: TokenStream| -> TokenStream {
            match f.oneof {
                None => {
                    let field = ident(&f.ident);
                    quote!(m.#field = ::core::option::Option::Some(#v);)
                }
                Some(i) => {
                    let o = &m.oneofs[i];
                    let oi = ident(&o.ident);
                    let module = ident(&m.mod_name);
                    let t = ident(&o.type_name);
                    let var = variant_name(f);
                    quote!(m.#oi = ::core::option::Option::Some(#module::#t::#var(#v));)
                }
            }
        };
        decode(f, &ty(f), assign)
    });
    let m_mut = bm_mut.clone();
    let unused = if m.fields.is_empty() {
        quote!(let _ = (&cx, &h);)
    } else {
        quote!(let _ = &cx;)
    };

    // Equality and Debug go over the struct's fields: plain fields and
    // one entry per oneof.
    let plain: Vec<&Field> = m.fields.iter().filter(|f| f.oneof.is_none()).collect();
    let eq = if plain.is_empty() && m.oneofs.is_empty() {
        quote!(let _ = other; true)
    } else {
        let terms = plain.iter().map(|f| {
            let field = ident(&f.ident);
            let float = matches!(f.kind, Kind::Scalar("f32" | "f64"));
            match (float, f.repeated || matches!(f.kind, Kind::Message(_))) {
                (false, true) => quote!(self.#field.as_deref() == other.#field.as_deref()),
                (false, false) => quote!(self.#field == other.#field),
                (true, false) => {
                    let t = ty(f);
                    quote!(self.#field.map(#t::to_bits) == other.#field.map(#t::to_bits))
                }
                (true, true) => {
                    let t = ty(f);
                    quote! {
                        (match (self.#field.as_deref(), other.#field.as_deref()) {
                            (::core::option::Option::Some(a), ::core::option::Option::Some(b)) => {
                                a.iter().map(|v| #t::to_bits(*v)).eq(b.iter().map(|v| #t::to_bits(*v)))
                            }
                            (a, b) => a.is_none() && b.is_none(),
                        })
                    }
                }
            }
        });
        let oneof_terms = m.oneofs.iter().map(|o| {
            let field = ident(&o.ident);
            quote!(self.#field == other.#field)
        });
        let all: Vec<TokenStream> = terms.chain(oneof_terms).collect();
        quote!(#(#all)&&*)
    };
    let debug = plain
        .iter()
        .map(|f| {
            let field = ident(&f.ident);
            let label = &f.proto_name;
            if !f.repeated && matches!(f.kind, Kind::Message(_)) {
                quote! {
                    if let ::core::option::Option::Some(v) = &self.#field {
                        d.field(#label, &**v);
                    }
                }
            } else {
                quote! {
                    if let ::core::option::Option::Some(v) = &self.#field {
                        d.field(#label, v);
                    }
                }
            }
        })
        .chain(m.oneofs.iter().map(|o| {
            let field = ident(&o.ident);
            let label = &o.proto_name;
            quote! {
                if let ::core::option::Option::Some(v) = &self.#field {
                    d.field(#label, v);
                }
            }
        }));

    let nested = if m.has_module() {
        let mod_name = ident(&m.mod_name);
        let mod_doc = doc(&format!("Types nested in `{}`.", m.full_name));
        let inner = m.nested.iter().map(|n| message(model, n));
        let enums = m.enums.iter().map(|e| enumeration(model, e));
        let mut inner_scope = m.scope.clone();
        inner_scope.push(m.mod_name.clone());
        let oneofs = m.oneofs.iter().enumerate().map(|(i, o)| {
            let t = ident(&o.type_name);
            let lt = if oneof_has_lifetime(m, i) {
                quote!(<'a>)
            } else {
                quote!()
            };
            let mut d = doc_lines(&o.doc);
            if !d.is_empty() {
                d.push(String::new());
            }
            d.push(format!(
                " Proto `oneof {}` of `{}`: the member that is set.",
                o.proto_name, m.full_name
            ));
            let d = docs(&d);
            let user_attrs = type_attrs(model, &format!("{}.{}", m.full_name, o.proto_name));
            let members: Vec<&Field> = m.fields.iter().filter(|f| f.oneof == Some(i)).collect();
            let variants = members.iter().map(|f| {
                let var = variant_name(f);
                let st = storage_in(f, &inner_scope);
                let vd = doc(&format!("`{}`", f.decl));
                let dep = deprecated_attr(f.deprecated);
                quote!(#vd #dep #var(#st),)
            });
            // Equality as for message fields: floats by bit pattern, so a
            // member holding NaN equals itself (decode -> encode -> decode
            // gives an equal message).
            let arms = members.iter().map(|f| {
                let var = variant_name(f);
                let same = if matches!(f.kind, Kind::Scalar("f32" | "f64")) {
                    quote!(a.to_bits() == b.to_bits())
                } else {
                    quote!(a == b)
                };
                quote!((Self::#var(a), Self::#var(b)) => #same,)
            });
            let impl_lt = if lt.is_empty() {
                quote!()
            } else {
                quote!(<'a>)
            };
            quote! {
                #d
                #allow
                #user_attrs
                #[derive(Debug)]
                pub enum #t #lt {
                    #(#variants)*
                }

                #allow
                impl #impl_lt ::core::cmp::PartialEq for #t #lt {
                    fn eq(&self, other: &Self) -> bool {
                        #[allow(unreachable_patterns)]
                        match (self, other) {
                            #(#arms)*
                            _ => false,
                        }
                    }
                }
            }
        });
        quote! {
            #mod_doc
            #allow
            pub mod #mod_name {
                #(#enums)*
                #(#oneofs)*
                #(#inner)*
            }
        }
    } else {
        quote!()
    };

    let view = if model.views {
        view(model, m)
    } else {
        quote!()
    };
    quote! {
        #msg_doc
        #allow
        #msg_dep
        #msg_attrs
        pub struct #name<'a> {
            __ctx: &'a ::granola::Context,
            #struct_fields
        }

        #allow
        impl<'a> #name<'a> {
            /// An empty message (no field present).
            pub fn new(ctx: &'a ::granola::Context) -> Self {
                #name {
                    __ctx: ctx,
                    #inits
                }
            }

            /// The context this message allocates from.
            pub fn context(&self) -> &'a ::granola::Context {
                self.__ctx
            }

            #accessors

            #[inline]
            fn __bitmap(&self) -> [u32; #words] {
                let #bm_mut bm = [0u32; #words];
                #(#bitmap)*
                bm
            }
        }

        #allow
        impl<'a> ::granola::Message for #name<'a> {
            #[inline]
            fn __header_len(&self) -> usize {
                let bm = self.__bitmap();
                ::granola::__private::header_len(
                    ::granola::__private::used_words(&bm),
                    ::granola::__private::present_count(&bm),
                )
            }

            fn __accumulate(&self, sizes: &mut ::granola::EncodedSizes) {
                sizes.header_len += self.__header_len();
                #(#accumulate)*
            }

            fn __encode_header<F: FnMut(&::granola::Buf)>(
                &self,
                enc: &mut ::granola::__private::Encoder<'_, F>,
                at: usize,
            ) {
                let bm = self.__bitmap();
                let #slot_mut slot = enc.begin_header(at, &bm[..::granola::__private::used_words(&bm)]);
                #(#encode)*
                let _ = slot;
            }
        }

        #allow
        impl<'a> ::granola::Decode<'a> for #name<'a> {
            fn __decode(
                ctx: &'a ::granola::Context,
                cx: &mut ::granola::__private::DecodeCx<'a>,
                h: &::granola::__private::HeaderReader<'a>,
            ) -> ::core::result::Result<Self, ::granola::DecodeError> {
                #unused
                let #m_mut m = #name::new(ctx);
                #(#decode)*
                ::core::result::Result::Ok(m)
            }
        }

        /// Equality means "same fields, same values"; floats compare by bit
        /// pattern, so it is reflexive (NaN == NaN) and implies identical encoding.
        #allow
        impl ::core::cmp::PartialEq for #name<'_> {
            fn eq(&self, other: &Self) -> bool {
                #eq
            }
        }

        #allow
        impl ::core::fmt::Debug for #name<'_> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut d = f.debug_struct(#name_str);
                #(#debug)*
                d.finish()
            }
        }

        #view

        #nested
    }
}

/// The read-only view of a message (see `Config::views`).
fn view(model: &Model, m: &Message) -> TokenStream {
    let allow = allows();
    let name = format_ident!("{}View", m.rust_name);
    let d = doc(&format!(
        "Read-only view of `{}` over received bytes: nothing is allocated or copied; each accessor reads its field from the bytes (bounds-checked).",
        m.full_name
    ));
    let view_of = |t: &str| -> TokenStream {
        let tp = &model.types[t];
        let mut vp = tp.clone();
        vp.name = format!("{}View", tp.name);
        type_path(&m.scope, &vp)
    };
    let mut acc = TokenStream::new();
    for f in &m.fields {
        let num = Literal::u32_unsuffixed(f.number);
        let x = ident(&f.rust_name);
        let has = format_ident!("has_{}", f.rust_name);
        let fd = doc(&format!("`{}`", f.decl));
        acc.extend(quote! {
            /// Whether the field is present.
            pub fn #has(&self) -> bool {
                self.h.has(#num)
            }
        });
        let body = match (&f.kind, f.repeated) {
            (Kind::Scalar(t), false) => {
                let t = Ident::new(t, Span::call_site());
                match &f.enum_type {
                    Some(e) => {
                        let e = type_path(&m.scope, &model.types[e]);
                        let raw = format_ident!("{}_raw", f.rust_name);
                        quote! {
                            #fd
                            pub fn #x(&self) -> #e {
                                #e::from_i32(self.#raw()).unwrap_or_default()
                            }
                            /// The raw number (unknown values kept), or 0.
                            pub fn #raw(&self) -> i32 {
                                self.h.scalar::<i32>(#num).unwrap_or_default()
                            }
                        }
                    }
                    None => quote! {
                        #fd
                        pub fn #x(&self) -> #t {
                            self.h.scalar::<#t>(#num).unwrap_or_default()
                        }
                    },
                }
            }
            (Kind::Bytes, false) => quote! {
                #fd
                pub fn #x(&self) -> ::core::result::Result<&'a [u8], ::granola::DecodeError> {
                    ::core::result::Result::Ok(self.h.bytes(#num)?.unwrap_or(&[]))
                }
            },
            (Kind::String, false) => {
                let xb = format_ident!("{}_bytes", f.rust_name);
                quote! {
                    #fd
                    pub fn #x(&self) -> ::core::result::Result<&'a str, ::granola::DecodeError> {
                        ::core::str::from_utf8(self.#xb()?).map_err(|_| ::granola::DecodeError {
                            kind: ::granola::DecodeErrorKind::InvalidUtf8,
                            field: #num,
                        })
                    }
                    /// The string's bytes, not checked as UTF-8.
                    pub fn #xb(&self) -> ::core::result::Result<&'a [u8], ::granola::DecodeError> {
                        ::core::result::Result::Ok(self.h.bytes(#num)?.unwrap_or(&[]))
                    }
                }
            }
            (Kind::Message(t), false) => {
                let v = view_of(t);
                quote! {
                    #fd
                    pub fn #x(&self) -> ::core::result::Result<::core::option::Option<#v<'a>>, ::granola::DecodeError> {
                        ::core::result::Result::Ok(
                            self.h.view_nested(self.opts, #num)?.map(|h| #v::__from_header(h, self.opts)),
                        )
                    }
                }
            }
            (kind, true) => {
                let width = match kind {
                    Kind::Scalar(t) => {
                        let t = Ident::new(t, Span::call_site());
                        quote!(<#t as ::granola::__private::WireScalar>::WIDTH)
                    }
                    _ => quote!(::granola::__private::ENTRY_LEN),
                };
                let get = if let Kind::Message(t) = kind {
                    let v = view_of(t);
                    let xg = format_ident!("{}_get", f.rust_name);
                    quote! {
                        /// Element `i`, if the list has one.
                        pub fn #xg(&self, i: usize) -> ::core::result::Result<::core::option::Option<#v<'a>>, ::granola::DecodeError> {
                            match self.#x()? {
                                ::core::option::Option::Some(l) if i < l.len() => ::core::result::Result::Ok(
                                    ::core::option::Option::Some(#v::__from_header(l.view_nested(self.opts, i)?, self.opts)),
                                ),
                                _ => ::core::result::Result::Ok(::core::option::Option::None),
                            }
                        }
                    }
                } else {
                    quote!()
                };
                quote! {
                    #fd
                    pub fn #x(&self) -> ::core::result::Result<::core::option::Option<::granola::wire::ListReader<'a>>, ::granola::DecodeError> {
                        self.h.view_list(self.opts, #num, #width)
                    }
                    #get
                }
            }
        };
        acc.extend(body);
    }
    quote! {
        #d
        #allow
        #[derive(Clone, Copy)]
        pub struct #name<'a> {
            h: ::granola::__private::HeaderReader<'a>,
            opts: &'a ::granola::DecodeOptions,
        }

        #allow
        impl<'a> #name<'a> {
            /// Checks the root header of `bytes` (only that) under `opts`.
            pub fn new(bytes: &'a [u8], opts: &'a ::granola::DecodeOptions) -> ::core::result::Result<Self, ::granola::DecodeError> {
                ::core::result::Result::Ok(#name {
                    h: ::granola::__private::HeaderReader::view_root(bytes, opts)?,
                    opts,
                })
            }

            #[doc(hidden)]
            pub fn __from_header(h: ::granola::__private::HeaderReader<'a>, opts: &'a ::granola::DecodeOptions) -> Self {
                #name { h, opts }
            }

            #acc
        }
    }
}

/// `has_o`, `get_o`, `set_o`, `clear_o` for a oneof.
fn oneof_accessors(o: &Oneof, oty: &TokenStream) -> TokenStream {
    let n = &o.rust_name;
    let field = ident(&o.ident);
    let p = &o.proto_name;
    let has = format_ident!("has_{}", n);
    let get = format_ident!("get_{}", n);
    let set = format_ident!("set_{}", n);
    let clear = format_ident!("clear_{}", n);
    let has_doc = doc(&format!("Whether a member of `oneof {p}` is set."));
    let get_doc = doc(&format!("The member of `oneof {p}` that is set, if any."));
    let set_doc = doc(&format!(
        "Sets `oneof {p}` (replacing any member set before)."
    ));
    let clear_doc = doc(&format!("Makes every member of `oneof {p}` absent."));
    quote! {
        #has_doc
        pub fn #has(&self) -> bool {
            self.#field.is_some()
        }
        #get_doc
        pub fn #get(&self) -> ::core::option::Option<&#oty> {
            self.#field.as_ref()
        }
        #set_doc
        pub fn #set(&mut self, value: #oty) {
            self.#field = ::core::option::Option::Some(value);
        }
        #clear_doc
        pub fn #clear(&mut self) {
            self.#field = ::core::option::Option::None;
        }
    }
}

/// `set_<member>` for one oneof member: converts and sets the variant.
fn oneof_member_setter(
    m: &Message,
    f: &Field,
    t: &TokenStream,
    enum_ty: Option<&TokenStream>,
) -> TokenStream {
    let Some(i) = f.oneof else { return quote!() };
    let o = &m.oneofs[i];
    let field = ident(&o.ident);
    let module = ident(&m.mod_name);
    let ot = ident(&o.type_name);
    let var = variant_name(f);
    let set = format_ident!("set_{}", f.rust_name);
    let set_doc = doc(&format!(
        "Sets `oneof {}` to `{}` (replacing any member set before).",
        o.proto_name, f.decl
    ));
    let (arg, value) = match (&f.kind, enum_ty) {
        (Kind::Scalar(_), Some(e)) => (quote!(#e), quote!(i32::from(value))),
        (Kind::Scalar(_), None) => (quote!(#t), quote!(value)),
        (Kind::Bytes, _) => (
            quote!(&[u8]),
            quote!(::granola::HybridBytes::new(value, self.__ctx)),
        ),
        (Kind::String, _) => (
            quote!(&str),
            quote!(::granola::HybridStr::new(value, self.__ctx)),
        ),
        (Kind::Message(_), _) => (
            quote!(#t),
            quote!(::granola::__private::ArenaBox::new_in(
                value,
                self.__ctx.arena()
            )),
        ),
    };
    quote! {
        #set_doc
        pub fn #set(&mut self, value: #arg) {
            self.#field = ::core::option::Option::Some(#module::#ot::#var(#value));
        }
    }
}

/// Doc comment for the main getter: the declaration and its proto comment.
fn getter_doc(f: &Field, what: &str) -> TokenStream {
    let mut lines = vec![format!(" {what}"), String::new()];
    lines.push(format!(" `{}`", f.decl));
    let comment = doc_lines(&f.doc);
    if !comment.is_empty() {
        lines.push(String::new());
        lines.extend(comment);
    }
    docs(&lines)
}

/// `t` is the field's element type, `bare` the same without lifetime (for
/// calling `new`).
fn field_accessors(
    f: &Field,
    t: &TokenStream,
    bare: &TokenStream,
    enum_ty: Option<&TokenStream>,
) -> TokenStream {
    let n = &f.rust_name;
    let field = ident(&f.ident);
    let p = &f.proto_name;
    let has = format_ident!("has_{}", n);
    let get = format_ident!("get_{}", n);
    let clear = format_ident!("clear_{}", n);
    let has_doc = doc(&format!("Whether `{p}` is present."));
    let clear_doc = doc(&format!("Makes `{p}` absent."));
    let common = quote! {
        #has_doc
        pub fn #has(&self) -> bool {
            self.#field.is_some()
        }
    };
    let clear_fn = quote! {
        #clear_doc
        pub fn #clear(&mut self) {
            self.#field = ::core::option::Option::None;
        }
    };
    let body = match (&f.kind, f.repeated, enum_ty) {
        (Kind::Scalar(_), false, Some(e)) => {
            let set = format_ident!("set_{}", n);
            let get_raw = format_ident!("get_{}_raw", n);
            let set_raw = format_ident!("set_{}_raw", n);
            let get_doc = getter_doc(
                f,
                &format!("`{p}` as the enum; absent or a value this schema does not know gives the default (as prost does)."),
            );
            let raw_doc = doc(&format!(
                "`{p}` as its raw number (unknown values kept), or 0 if absent."
            ));
            let set_doc = doc(&format!("Sets `{p}` (making it present)."));
            let set_raw_doc = doc(&format!(
                "Sets `{p}` to a raw number, known to this schema or not."
            ));
            quote! {
                #get_doc
                pub fn #get(&self) -> #e {
                    self.#field.and_then(#e::from_i32).unwrap_or_default()
                }
                #raw_doc
                pub fn #get_raw(&self) -> i32 {
                    self.#field.unwrap_or_default()
                }
                #set_doc
                pub fn #set(&mut self, value: #e) {
                    self.#field = ::core::option::Option::Some(i32::from(value));
                }
                #set_raw_doc
                pub fn #set_raw(&mut self, value: i32) {
                    self.#field = ::core::option::Option::Some(value);
                }
            }
        }
        (Kind::Scalar(_), false, None) => {
            let set = format_ident!("set_{}", n);
            let get_doc = getter_doc(f, &format!("`{p}`, or the default (zero) if absent."));
            let set_doc = doc(&format!("Sets `{p}` (making it present)."));
            quote! {
                #get_doc
                pub fn #get(&self) -> #t {
                    self.#field.unwrap_or_default()
                }
                #set_doc
                pub fn #set(&mut self, value: #t) {
                    self.#field = ::core::option::Option::Some(value);
                }
            }
        }
        (Kind::Bytes | Kind::String, false, _) => {
            let is_str = matches!(f.kind, Kind::String);
            let (hybrid, arg) = if is_str {
                (quote!(::granola::HybridStr), quote!(&str))
            } else {
                (quote!(::granola::HybridBytes), quote!(&[u8]))
            };
            let field_fn = format_ident!("{}_field", n);
            let set = format_ident!("set_{}", n);
            let set_buf = format_ident!("set_{}_buf", n);
            let set_field = format_ident!("set_{}_field", n);
            let field_doc = doc(&format!(
                "The `{p}` field itself (copied or zero-copy), if present."
            ));
            let set_doc = doc(&format!(
                "Sets `{p}`: copied if shorter than the copy threshold or outside the pool, else referenced (zero copy)."
            ));
            let set_buf_doc = doc(&format!(
                "Sets `{p}` from a pool buffer: referenced (zero copy) at or above the copy threshold."
            ));
            let set_field_doc = doc(&format!("Sets `{p}` to an existing field value."));
            let getters = if is_str {
                let get_bytes = format_ident!("get_{}_bytes", n);
                let get_doc = getter_doc(
                    f,
                    &format!("`{p}` (checked as UTF-8 on first access), or `\"\"` if absent."),
                );
                let bytes_doc = doc(&format!(
                    "The bytes of `{p}`, unchecked, or empty if absent."
                ));
                quote! {
                    #get_doc
                    pub fn #get(&self) -> ::core::result::Result<&str, ::core::str::Utf8Error> {
                        match &self.#field {
                            ::core::option::Option::Some(f) => f.as_str(),
                            ::core::option::Option::None => ::core::result::Result::Ok(""),
                        }
                    }
                    #bytes_doc
                    pub fn #get_bytes(&self) -> &[u8] {
                        match &self.#field {
                            ::core::option::Option::Some(f) => f.as_bytes(),
                            ::core::option::Option::None => &[],
                        }
                    }
                }
            } else {
                let get_doc = getter_doc(f, &format!("`{p}`, or empty if absent."));
                quote! {
                    #get_doc
                    pub fn #get(&self) -> &[u8] {
                        match &self.#field {
                            ::core::option::Option::Some(f) => f.as_slice(),
                            ::core::option::Option::None => &[],
                        }
                    }
                }
            };
            quote! {
                #getters
                #field_doc
                pub fn #field_fn(&self) -> ::core::option::Option<&#hybrid<'a>> {
                    self.#field.as_ref()
                }
                #set_doc
                pub fn #set(&mut self, value: #arg) {
                    self.#field = ::core::option::Option::Some(#hybrid::new(value, self.__ctx));
                }
                #set_buf_doc
                pub fn #set_buf(&mut self, value: ::granola::Buf) {
                    self.#field = ::core::option::Option::Some(#hybrid::from_buf(value, self.__ctx));
                }
                #set_field_doc
                pub fn #set_field(&mut self, value: #hybrid<'a>) {
                    self.#field = ::core::option::Option::Some(value);
                }
            }
        }
        (Kind::Message(_), false, _) => {
            let mut_fn = format_ident!("mut_{}", n);
            let set = format_ident!("set_{}", n);
            let get_doc = getter_doc(f, &format!("`{p}`, if present."));
            let mut_doc = doc(&format!(
                "`{p}` for modification, made present (empty) first if absent."
            ));
            let set_doc = doc(&format!("Sets `{p}` (making it present)."));
            quote! {
                #get_doc
                pub fn #get(&self) -> ::core::option::Option<&#t> {
                    self.#field.as_deref()
                }
                #mut_doc
                pub fn #mut_fn(&mut self) -> &mut #t {
                    let ctx = self.__ctx;
                    self.#field.get_or_insert_with(|| {
                        ::granola::__private::ArenaBox::new_in(#bare::new(ctx), ctx.arena())
                    })
                }
                #set_doc
                pub fn #set(&mut self, value: #t) {
                    self.#field = ::core::option::Option::Some(
                        ::granola::__private::ArenaBox::new_in(value, self.__ctx.arena()),
                    );
                }
            }
        }
        (kind, true, _) => {
            let len = format_ident!("{}_len", n);
            let init = format_ident!("init_{}", n);
            let append = format_ident!("append_{}", n);
            let get_doc = getter_doc(f, &format!("The elements of `{p}` (empty if absent)."));
            let len_doc = doc(&format!("Number of elements in `{p}`."));
            let init_doc = doc(&format!(
                "Makes `{p}` present and empty, with room for `capacity` elements."
            ));
            let base = quote! {
                #get_doc
                pub fn #get(&self) -> &[#t] {
                    match &self.#field {
                        ::core::option::Option::Some(l) => l,
                        ::core::option::Option::None => &[],
                    }
                }
            };
            let len_init = quote! {
                #len_doc
                pub fn #len(&self) -> usize {
                    self.#get().len()
                }
                #init_doc
                pub fn #init(&mut self, capacity: usize) {
                    self.#field = ::core::option::Option::Some(
                        ::granola::List::with_capacity_in(capacity, self.__ctx.arena()),
                    );
                }
            };
            let push_body = quote! {
                let ctx = self.__ctx;
                self.#field
                    .get_or_insert_with(|| ::granola::List::with_capacity_in(0, ctx.arena()))
                    .push(value);
            };
            match kind {
                Kind::Scalar(_) if enum_ty.is_some() => {
                    let e = enum_ty.cloned().unwrap_or_default();
                    let append_raw = format_ident!("append_{}_raw", n);
                    let append_doc = doc(&format!("Appends to `{p}` (making it present)."));
                    let append_raw_doc = doc(&format!(
                        "Appends a raw number to `{p}`, known to this schema or not."
                    ));
                    quote! {
                        #base
                        #len_init
                        #append_doc
                        pub fn #append(&mut self, value: #e) {
                            self.#append_raw(i32::from(value));
                        }
                        #append_raw_doc
                        pub fn #append_raw(&mut self, value: i32) {
                            #push_body
                        }
                    }
                }
                Kind::Scalar(_) => {
                    let append_doc = doc(&format!("Appends to `{p}` (making it present)."));
                    quote! {
                        #base
                        #len_init
                        #append_doc
                        pub fn #append(&mut self, value: #t) {
                            #push_body
                        }
                    }
                }
                Kind::Bytes | Kind::String => {
                    let (hybrid, arg) = if matches!(kind, Kind::String) {
                        (quote!(::granola::HybridStr), quote!(&str))
                    } else {
                        (quote!(::granola::HybridBytes), quote!(&[u8]))
                    };
                    let append_buf = format_ident!("append_{}_buf", n);
                    let append_field = format_ident!("append_{}_field", n);
                    let append_doc = doc(&format!(
                        "Appends to `{p}`: copied if shorter than the copy threshold or outside the pool, else referenced (zero copy)."
                    ));
                    let append_buf_doc = doc(&format!(
                        "Appends a pool buffer to `{p}`: referenced (zero copy) at or above the copy threshold."
                    ));
                    let append_field_doc =
                        doc(&format!("Appends an existing field value to `{p}`."));
                    quote! {
                        #base
                        #len_init
                        #append_doc
                        pub fn #append(&mut self, value: #arg) {
                            let v = #hybrid::new(value, self.__ctx);
                            self.#append_field(v);
                        }
                        #append_buf_doc
                        pub fn #append_buf(&mut self, value: ::granola::Buf) {
                            let v = #hybrid::from_buf(value, self.__ctx);
                            self.#append_field(v);
                        }
                        #append_field_doc
                        pub fn #append_field(&mut self, value: #hybrid<'a>) {
                            #push_body
                        }
                    }
                }
                Kind::Message(_) => {
                    let get_mut = format_ident!("get_{}_mut", n);
                    let push = format_ident!("push_{}", n);
                    let get_mut_doc = doc(&format!("The elements of `{p}`, mutably."));
                    let push_doc = doc(&format!("Appends `value` to `{p}` (making it present)."));
                    quote! {
                        #base
                        #get_mut_doc
                        pub fn #get_mut(&mut self) -> &mut [#t] {
                            match &mut self.#field {
                                ::core::option::Option::Some(l) => l.as_mut_slice(),
                                ::core::option::Option::None => &mut [],
                            }
                        }
                        #len_init
                        /// Appends a new, empty element and returns it for filling in.
                        pub fn #append(&mut self) -> &mut #t {
                            let ctx = self.__ctx;
                            self.#push(#bare::new(ctx));
                            let l = self.#get_mut();
                            let n = l.len();
                            &mut l[n - 1]
                        }
                        #push_doc
                        pub fn #push(&mut self, value: #t) {
                            #push_body
                        }
                    }
                }
            }
        }
    };
    quote! {
        #common
        #body
        #clear_fn
    }
}

fn accumulate(f: &Field, t: &TokenStream, access: &TokenStream) -> TokenStream {
    match (&f.kind, f.repeated) {
        (Kind::Scalar(_), false) => quote!(),
        (Kind::Bytes, false) => quote! {
            if let ::core::option::Option::Some(f) = #access {
                sizes.add_bytes(f);
            }
        },
        (Kind::String, false) => quote! {
            if let ::core::option::Option::Some(f) = #access {
                sizes.add_bytes(f.as_hybrid());
            }
        },
        (Kind::Message(_), false) => quote! {
            if let ::core::option::Option::Some(m) = #access {
                ::granola::Message::__accumulate(&**m, sizes);
            }
        },
        (Kind::Scalar(_), true) => quote! {
            if let ::core::option::Option::Some(l) = #access {
                sizes.header_len += l.len() * <#t as ::granola::__private::WireScalar>::WIDTH;
            }
        },
        (Kind::Bytes, true) => quote! {
            if let ::core::option::Option::Some(l) = #access {
                sizes.header_len += l.len() * ::granola::__private::ENTRY_LEN;
                for f in l.iter() {
                    sizes.add_bytes(f);
                }
            }
        },
        (Kind::String, true) => quote! {
            if let ::core::option::Option::Some(l) = #access {
                sizes.header_len += l.len() * ::granola::__private::ENTRY_LEN;
                for f in l.iter() {
                    sizes.add_bytes(f.as_hybrid());
                }
            }
        },
        (Kind::Message(_), true) => quote! {
            if let ::core::option::Option::Some(l) = #access {
                sizes.header_len += l.len() * ::granola::__private::ENTRY_LEN;
                for m in l.iter() {
                    ::granola::Message::__accumulate(m, sizes);
                }
            }
        },
    }
}

fn encode(f: &Field, access: &TokenStream) -> TokenStream {
    let (binding, put) = match (&f.kind, f.repeated) {
        (Kind::Scalar(_), false) => {
            return quote! {
                if let ::core::option::Option::Some(v) = #access {
                    enc.put_scalar(slot, *v);
                    slot += 8;
                }
            }
        }
        (Kind::Bytes, false) => (quote!(f), quote!(enc.put_bytes(slot, f);)),
        (Kind::String, false) => (quote!(f), quote!(enc.put_bytes(slot, f.as_hybrid());)),
        (Kind::Message(_), false) => (
            quote!(m),
            quote! {
                let h = enc.put_nested(slot, ::granola::Message::__header_len(&**m));
                ::granola::Message::__encode_header(&**m, enc, h);
            },
        ),
        (Kind::Scalar(_), true) => (quote!(l), quote!(enc.put_scalar_list(slot, l);)),
        (Kind::Bytes, true) => (quote!(l), quote!(enc.put_bytes_list(slot, l.iter());)),
        (Kind::String, true) => (
            quote!(l),
            quote!(enc.put_bytes_list(slot, l.iter().map(::granola::HybridStr::as_hybrid));),
        ),
        (Kind::Message(_), true) => (
            quote!(l),
            quote! {
                let arr = enc.put_message_list(slot, l.len());
                for (i, m) in l.iter().enumerate() {
                    let h = enc.put_nested(
                        arr + i * ::granola::__private::ENTRY_LEN,
                        ::granola::Message::__header_len(m),
                    );
                    ::granola::Message::__encode_header(m, enc, h);
                }
            },
        ),
    };
    quote! {
        if let ::core::option::Option::Some(#binding) = #access {
            #put
            slot += 8;
        }
    }
}

fn decode(f: &Field, t: &TokenStream, assign: impl Fn(TokenStream) -> TokenStream) -> TokenStream {
    let num = Literal::u32_unsuffixed(f.number);
    let from_bytes = |b: TokenStream| -> TokenStream {
        match f.kind {
            Kind::String => quote! {
                ::granola::HybridStr::from_bytes_unchecked(::granola::HybridBytes::decoded(#b, ctx))
            },
            _ => quote!(::granola::HybridBytes::decoded(#b, ctx)),
        }
    };
    match (&f.kind, f.repeated) {
        (Kind::Scalar(_), false) => {
            let set = assign(quote!(v));
            quote! {
                if let ::core::option::Option::Some(v) = h.scalar::<#t>(#num) {
                    #set
                }
            }
        }
        (Kind::Bytes | Kind::String, false) => {
            let set = assign(from_bytes(quote!(b)));
            quote! {
                if let ::core::option::Option::Some(b) = h.bytes(#num)? {
                    #set
                }
            }
        }
        (Kind::Message(_), false) => {
            let set = assign(quote!(::granola::__private::ArenaBox::new_in(
                v,
                ctx.arena()
            )));
            quote! {
                if let ::core::option::Option::Some(n) = h.nested::<#t>(cx, #num)? {
                    let v = <#t as ::granola::Decode<'a>>::__decode(ctx, cx, &n)?;
                    #set
                }
            }
        }
        (kind, true) => {
            let (width, push) = match kind {
                Kind::Scalar(_) => (
                    quote!(<#t as ::granola::__private::WireScalar>::WIDTH),
                    quote!(v.push(l.scalar::<#t>(i));),
                ),
                Kind::Bytes | Kind::String => {
                    let e = from_bytes(quote!(l.bytes(i)?));
                    (quote!(::granola::__private::ENTRY_LEN), quote!(v.push(#e);))
                }
                Kind::Message(_) => (
                    quote!(::granola::__private::ENTRY_LEN),
                    quote! {
                        let n = l.nested(cx, i)?;
                        v.push(<#t as ::granola::Decode<'a>>::__decode(ctx, cx, &n)?);
                    },
                ),
            };
            let set = assign(quote!(v));
            quote! {
                if let ::core::option::Option::Some(l) = h.list::<#t>(cx, #num, #width)? {
                    let mut v = ::granola::List::with_capacity_in(l.len(), ctx.arena());
                    for i in 0..l.len() {
                        #push
                    }
                    #set
                }
            }
        }
    }
}
