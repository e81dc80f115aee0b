//! The model to Rust source. The golden files (`tests/golden/`) and the
//! wire-format goldens of `granola-tests` are the contract.

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

use heck::ToUpperCamelCase;
use std::collections::{HashMap, HashSet};

use crate::model::{is_keyword, Enum, Field, Kind, Message, Model, Package, TypePath};

/// Lints allowed on every generated item, so the generated code is quiet
/// under `-D warnings` whatever the including crate enables.
fn allows() -> TokenStream {
    quote! {
        #[allow(dead_code, deprecated, non_camel_case_types, clippy::all, clippy::pedantic, clippy::nursery)]
    }
}

/// `#[deprecated]` before every `pub fn` of an accessor block.
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
    let an = Analysis::new(model);
    for m in &p.messages {
        items.extend(message(model, &an, m));
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
        let after_macro = prev.starts_with("::granola::") && prev.ends_with(");");
        if (prev == "}" || after_macro) && (starts_item || t.starts_with("::granola::")) {
            out.push('\n');
        }
        // prettyplease leaves macro arguments as tokens: `Name < 'a >`.
        if t.starts_with("::granola::") {
            out.push_str(&line.replace(" < 'a >", "<'a>"));
        } else {
            out.push_str(line);
        }
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

/// What the generator needs to know about the whole schema set: which
/// types borrow (have a lifetime), which fields must be boxed, and the map
/// entry messages.
pub(crate) struct Analysis<'m> {
    messages: HashMap<&'m str, &'m Message>,
    borrowing: HashSet<&'m str>,
}

impl<'m> Analysis<'m> {
    pub(crate) fn new(model: &'m Model) -> Analysis<'m> {
        fn walk<'m>(m: &'m Message, out: &mut HashMap<&'m str, &'m Message>) {
            out.insert(&m.full_name, m);
            for n in &m.nested {
                walk(n, out);
            }
        }
        let mut messages = HashMap::new();
        for m in model.packages.iter().flat_map(|p| &p.messages) {
            walk(m, &mut messages);
        }
        for m in &model.extern_messages {
            walk(m, &mut messages);
        }
        // A message borrows if any field holds bytes or a string, directly
        // or through a message it contains: a fixpoint over the type graph.
        let mut borrowing: HashSet<&str> = HashSet::new();
        loop {
            let before = borrowing.len();
            for (name, m) in &messages {
                let borrows = m.fields.iter().any(|f| match &f.kind {
                    Kind::Bytes | Kind::String => true,
                    Kind::Scalar(_) => false,
                    // An extern type is judged by its schema like any other.
                    Kind::Message(t) => {
                        borrowing.contains(t.as_str()) || !messages.contains_key(t.as_str())
                    }
                });
                if borrows {
                    borrowing.insert(name);
                }
            }
            if borrowing.len() == before {
                break;
            }
        }
        Analysis {
            messages,
            borrowing,
        }
    }

    fn borrows(&self, full: &str) -> bool {
        self.borrowing.contains(full) || !self.messages.contains_key(full)
    }

    /// Whether a singular field of type `target` in `from` must be boxed:
    /// `from` is reachable from `target` through singular message fields
    /// (repeated ones are `Vec`s, which already break the cycle).
    fn boxed(&self, from: &str, target: &str) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![target];
        while let Some(t) = stack.pop() {
            if t == from {
                return true;
            }
            if !seen.insert(t) {
                continue;
            }
            if let Some(m) = self.messages.get(t) {
                for f in &m.fields {
                    if let (Kind::Message(n), false) = (&f.kind, f.repeated) {
                        stack.push(n);
                    }
                }
            }
        }
        false
    }
}

fn lifetime(yes: bool) -> TokenStream {
    if yes {
        quote!(<'a>)
    } else {
        quote!()
    }
}

/// The Rust type of one value of `kind`, named from module `scope`.
fn element_type(model: &Model, an: &Analysis<'_>, kind: &Kind, scope: &[String]) -> TokenStream {
    match kind {
        Kind::Scalar(t) => {
            let t = Ident::new(t, Span::call_site());
            quote!(#t)
        }
        Kind::Bytes => quote!(::granola::HybridBytes<'a>),
        Kind::String => quote!(::granola::HybridStr<'a>),
        Kind::Message(t) => {
            let p = type_path(scope, &model.types[t]);
            let lt = lifetime(an.borrows(t));
            quote!(#p #lt)
        }
    }
}

/// The struct field's (or oneof variant's) Rust type.
fn field_type(
    model: &Model,
    an: &Analysis<'_>,
    m: &Message,
    f: &Field,
    scope: &[String],
) -> TokenStream {
    let e = element_type(model, an, &f.kind, scope);
    if f.map {
        let entry = match &f.kind {
            Kind::Message(t) => an.messages.get(t.as_str()),
            _ => None,
        };
        let part = |n: u32| {
            entry
                .and_then(|e| e.fields.iter().find(|x| x.number == n))
                .map_or(quote!(()), |x| element_type(model, an, &x.kind, scope))
        };
        let (k, v) = (part(1), part(2));
        return quote!(::std::collections::BTreeMap<#k, #v>);
    }
    if f.repeated {
        return quote!(::std::vec::Vec<#e>);
    }
    let boxed = matches!(&f.kind, Kind::Message(t) if an.boxed(&m.full_name, t));
    let e = if boxed {
        quote!(::std::boxed::Box<#e>)
    } else {
        e
    };
    if f.oneof.is_some() {
        e
    } else if f.optional || matches!(f.kind, Kind::Message(_)) {
        quote!(::core::option::Option<#e>)
    } else {
        e
    }
}

/// Whether a field's type carries the `'a` lifetime.
fn field_borrows(an: &Analysis<'_>, f: &Field) -> bool {
    match &f.kind {
        Kind::Bytes | Kind::String => true,
        Kind::Scalar(_) => false,
        Kind::Message(t) if f.map => an
            .messages
            .get(t.as_str())
            .is_some_and(|e| e.fields.iter().any(|x| field_borrows(an, x))),
        Kind::Message(t) => an.borrows(t),
    }
}

/// Accessors for enum fields (stored as `i32`, so unknown values survive):
/// `x()` gives the Rust enum (the default for unknown values), `set_x()`
/// takes one; for repeated fields `x()` iterates over the known values and
/// `push_x()` appends.
fn enum_accessors(f: &Field, e: &TokenStream) -> TokenStream {
    let field = ident(&f.ident);
    let get = ident(&f.rust_name);
    let dep = deprecated_attr(f.deprecated);
    if f.repeated {
        let push = format_ident!("push_{}", f.rust_name);
        let d1 = doc(&format!(
            "The known values of `{}`, as the enum.",
            f.proto_name
        ));
        let d2 = doc(&format!("Appends to `{}`.", f.proto_name));
        return quote! {
            #d1 #dep
            pub fn #get(&self) -> impl ::core::iter::Iterator<Item = #e> + '_ {
                self.#field.iter().filter_map(|v| #e::try_from(*v).ok())
            }
            #d2 #dep
            pub fn #push(&mut self, value: #e) {
                self.#field.push(value as i32);
            }
        };
    }
    let set = format_ident!("set_{}", f.rust_name);
    let d1 = doc(&format!(
        "`{}` as the enum (the default if unset or unknown).",
        f.proto_name
    ));
    let d2 = doc(&format!("Sets `{}`.", f.proto_name));
    let (read, write) = if f.optional {
        (
            quote!(self.#field.and_then(|v| #e::try_from(v).ok()).unwrap_or_default()),
            quote!(self.#field = ::core::option::Option::Some(value as i32)),
        )
    } else {
        (
            quote!(#e::try_from(self.#field).unwrap_or_default()),
            quote!(self.#field = value as i32),
        )
    };
    quote! {
        #d1 #dep
        pub fn #get(&self) -> #e {
            #read
        }
        #d2 #dep
        pub fn #set(&mut self, value: #e) {
            #write;
        }
    }
}

fn message(model: &Model, an: &Analysis<'_>, m: &Message) -> TokenStream {
    if m.map_entry {
        // Map fields are `BTreeMap`s; a view still reads entries one by one.
        return if model.views {
            view(model, m)
        } else {
            quote!()
        };
    }
    let allow = allows();
    let name = ident(&m.rust_name);
    let mut msg_doc = doc_lines(&m.doc);
    if !msg_doc.is_empty() {
        msg_doc.push(String::new());
    }
    msg_doc.push(format!(" Proto message `{}`.", m.full_name));
    let msg_doc = docs(&msg_doc);
    let msg_dep = deprecated_attr(m.deprecated);
    let msg_attrs = type_attrs(model, &m.full_name);
    let module = ident(&m.mod_name);
    let mut inner_scope = m.scope.clone();
    inner_scope.push(m.mod_name.clone());
    let oneof_borrows = |i: usize| {
        m.fields
            .iter()
            .any(|f| f.oneof == Some(i) && field_borrows(an, f))
    };

    let mut struct_fields = TokenStream::new();
    let mut accessors = TokenStream::new();
    // (lowest field number, struct field) in wire order.
    let mut wire: Vec<(u32, Ident)> = Vec::new();
    let mut oneof_done = vec![false; m.oneofs.len()];
    for f in &m.fields {
        if let Some(i) = f.oneof {
            if !oneof_done[i] {
                oneof_done[i] = true;
                let o = &m.oneofs[i];
                let field = ident(&o.ident);
                let t = ident(&o.type_name);
                let lt = lifetime(oneof_borrows(i));
                let fdoc = doc(&format!("`oneof {}`", o.proto_name));
                let fattrs = attrs(
                    &model.field_attrs,
                    &format!("{}.{}", m.full_name, o.proto_name),
                );
                struct_fields.extend(quote! {
                    #fdoc
                    #fattrs
                    pub #field: ::core::option::Option<#module::#t #lt>,
                });
                let lowest = m
                    .fields
                    .iter()
                    .filter(|x| x.oneof == Some(i))
                    .map(|x| x.number)
                    .min()
                    .unwrap_or(f.number);
                wire.push((lowest, field));
            }
            continue;
        }
        let field = ident(&f.ident);
        let t = field_type(model, an, m, f, &m.scope);
        let mut fdoc = vec![format!(" `{}`", f.decl)];
        let comment = doc_lines(&f.doc);
        if !comment.is_empty() {
            fdoc.push(String::new());
            fdoc.extend(comment);
        }
        let fdoc = docs(&fdoc);
        let dep = deprecated_attr(f.deprecated);
        let fattrs = attrs(
            &model.field_attrs,
            &format!("{}.{}", m.full_name, f.proto_name),
        );
        struct_fields.extend(quote! {
            #fdoc
            #dep
            #fattrs
            pub #field: #t,
        });
        if let (Some(e), false) = (&f.enum_type, f.map) {
            let e = type_path(&m.scope, &model.types[e]);
            accessors.extend(enum_accessors(f, &e));
        }
        wire.push((f.number, field));
    }
    wire.sort_by_key(|(n, _)| *n);
    let max = m.fields.iter().map(|f| f.number).max().unwrap_or(0);
    let words = Literal::usize_unsuffixed((max as usize).div_ceil(32));
    let list = wire.iter().map(|(n, f)| {
        let n = Literal::u32_unsuffixed(*n);
        quote!(#f = #n)
    });
    let borrows = an.borrows(&m.full_name);
    let lt = lifetime(borrows);
    let unknown = if model.unknown_fields {
        // Named so that no proto field can take the name first.
        let taken = |n: &str| {
            m.fields.iter().any(|f| f.ident == n) || m.oneofs.iter().any(|o| o.ident == n)
        };
        let name = ["unknown_fields", "unknown_fields_"]
            .into_iter()
            .find(|n| !taken(n))
            .unwrap_or("__unknown_fields");
        let field = ident(name);
        let ult = if borrows {
            quote!(<'a>)
        } else {
            quote!(<'static>)
        };
        struct_fields.extend(quote! {
            /// Fields this schema does not know (written back on encode).
            pub #field: ::granola::UnknownFields #ult,
        });
        // Every number the schema knows (oneof members too): decode keeps
        // the others.
        let mut numbers: Vec<u32> = m.fields.iter().map(|f| f.number).collect();
        numbers.sort_unstable();
        let numbers = numbers.iter().map(|n| Literal::u32_unsuffixed(*n));
        quote!(, #field [#(#numbers),*])
    } else {
        quote!()
    };
    let accessors = if accessors.is_empty() {
        quote!()
    } else {
        quote! {
            #allow
            impl #lt #name #lt {
                #accessors
            }
        }
    };

    let nested = if m.has_module() {
        let mod_doc = doc(&format!("Types nested in `{}`.", m.full_name));
        let inner = m.nested.iter().map(|n| message(model, an, n));
        let enums = m.enums.iter().map(|e| enumeration(model, e));
        let oneofs = m.oneofs.iter().enumerate().map(|(i, o)| {
            let t = ident(&o.type_name);
            let lt = lifetime(oneof_borrows(i));
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
            let mut members: Vec<&Field> = m.fields.iter().filter(|f| f.oneof == Some(i)).collect();
            members.sort_by_key(|f| f.number);
            let variants = members.iter().map(|f| {
                let var = variant_name(f);
                let st = field_type(model, an, m, f, &inner_scope);
                let vd = doc(&format!("`{}`", f.decl));
                let dep = deprecated_attr(f.deprecated);
                quote!(#vd #dep #var(#st),)
            });
            let list = members.iter().map(|f| {
                let var = variant_name(f);
                let st = field_type(model, an, m, f, &inner_scope);
                let n = Literal::u32_unsuffixed(f.number);
                quote!(#var(#st) = #n)
            });
            let macro_name = if lt.is_empty() {
                quote!(#t)
            } else {
                quote!(#t<'a>)
            };
            quote! {
                #d
                #allow
                #user_attrs
                #[derive(Clone, Debug)]
                pub enum #t #lt {
                    #(#variants)*
                }

                ::granola::oneof!(#macro_name, { #(#list),* });
            }
        });
        quote! {
            #mod_doc
            #allow
            pub mod #module {
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
    let macro_name = if borrows {
        quote!(#name<'a>)
    } else {
        quote!(#name)
    };
    quote! {
        #msg_doc
        #allow
        #msg_dep
        #msg_attrs
        #[derive(Clone, Debug, Default)]
        pub struct #name #lt {
            #struct_fields
        }

        ::granola::message!(#macro_name, #words, { #(#list),* } #unknown);

        #accessors

        #view

        #nested
    }
}

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
            #[inline]
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
