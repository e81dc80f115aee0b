//! From checked protobuf descriptors to the (validated) model the code
//! generator works on. Everything granola cannot represent is reported here,
//! with its position, instead of being dropped.

use std::collections::{BTreeMap, HashMap, HashSet};

use heck::ToSnakeCase;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::source_code_info::Location;
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet};

use crate::error::Diagnostic;
use crate::MAX_FIELD_NUMBER;

// Field numbers of the descriptor messages, as used in source-info paths.
const FILE_DEPENDENCY: i32 = 3;
const FILE_MESSAGE: i32 = 4;
const FILE_ENUM: i32 = 5;
const FILE_SERVICE: i32 = 6;
const FILE_EXTENSION: i32 = 7;
const FILE_SYNTAX: i32 = 12;
const MSG_FIELD: i32 = 2;
const MSG_NESTED: i32 = 3;
const MSG_ENUM: i32 = 4;
const MSG_EXT_RANGE: i32 = 5;
const MSG_EXTENSION: i32 = 6;
const MSG_ONEOF: i32 = 8;
const FIELD_NAME: i32 = 1;
const FIELD_NUMBER: i32 = 3;
const FIELD_LABEL: i32 = 4;
const ENUM_VALUE: i32 = 2;
const SERVICE_METHOD: i32 = 2;

/// All output files, keyed by proto package.
pub(crate) struct Model {
    pub packages: Vec<Package>,
    /// Fully-qualified proto name (no leading dot) to where its Rust type is.
    pub types: HashMap<String, TypePath>,
    /// `Config::type_attribute` / `field_attribute`: (proto path, attribute).
    pub type_attrs: Vec<(String, String)>,
    pub field_attrs: Vec<(String, String)>,
    /// Generate a read-only `<Name>View<'a>` per message.
    pub views: bool,
    /// Give every message an `unknown_fields` field (kept on re-encode).
    pub unknown_fields: bool,
    /// Messages mapped with `Config::extern_path`: nothing is generated for
    /// them, but whether they borrow decides how fields name them.
    pub extern_messages: Vec<Message>,
}

/// Whether a proto path given to `Config` (`.pkg.Msg`, `.pkg`, or `.` for
/// everything) covers the fully-qualified name `full` (no leading dot).
pub(crate) fn path_matches(path: &str, full: &str) -> bool {
    let path = path.trim_start_matches('.');
    path.is_empty() || full == path || full.strip_prefix(path).is_some_and(|r| r.starts_with('.'))
}

/// Maps types under `externs` (proto path, Rust path) to their Rust paths
/// and removes them from the generated packages.
pub(crate) fn apply_externs(model: &mut Model, externs: &[(String, String)]) {
    if externs.is_empty() {
        return;
    }
    for (full, t) in model.types.iter_mut() {
        // The most specific mapping wins.
        let best = externs
            .iter()
            .filter(|(p, _)| path_matches(p, full) && !p.trim_start_matches('.').is_empty())
            .max_by_key(|(p, _)| p.len());
        if let Some((p, rust)) = best {
            let rest = full[p.trim_start_matches('.').len()..].trim_start_matches('.');
            let mut path = rust.clone();
            if !rest.is_empty() {
                let parts: Vec<&str> = rest.split('.').collect();
                for m in &parts[..parts.len() - 1] {
                    path.push_str("::");
                    path.push_str(&ident_name(&snake(m)));
                }
                path.push_str("::");
                path.push_str(parts[parts.len() - 1]);
            }
            t.external = Some(path);
        }
    }
    let is_extern = |full: &str| {
        externs
            .iter()
            .any(|(p, _)| !p.trim_start_matches('.').is_empty() && path_matches(p, full))
    };
    for p in &mut model.packages {
        let (gone, kept) = std::mem::take(&mut p.messages)
            .into_iter()
            .partition(|m| is_extern(&m.full_name));
        p.messages = kept;
        model.extern_messages.extend::<Vec<Message>>(gone);
        p.enums.retain(|e| !is_extern(&e.full_name));
    }
    model
        .packages
        .retain(|p| !(p.messages.is_empty() && p.enums.is_empty() && p.services.is_empty()));
}

/// Where a message's Rust type lives: the module path from the root of the
/// package tree, and its type name.
#[derive(Clone, Debug)]
pub(crate) struct TypePath {
    pub modules: Vec<String>,
    pub name: String,
    /// Set for types mapped with `Config::extern_path`: the Rust path used
    /// verbatim (nothing is generated for them).
    pub external: Option<String>,
}

/// Everything in one proto package (one output file).
pub(crate) struct Package {
    /// The proto package (`""` if none).
    pub name: String,
    /// The `.proto` files (names relative to their include directory).
    pub files: Vec<String>,
    pub messages: Vec<Message>,
    pub enums: Vec<Enum>,
    pub services: Vec<ServiceModel>,
}

pub(crate) struct Message {
    /// Fully-qualified proto name without the leading dot.
    pub full_name: String,
    /// The Rust type name (the proto name, verbatim).
    pub rust_name: String,
    /// The module holding nested types (snake case of the name).
    pub mod_name: String,
    /// The module path this struct lives in (package modules + outer
    /// message modules).
    pub scope: Vec<String>,
    pub doc: String,
    /// Fields in declaration order.
    pub fields: Vec<Field>,
    pub nested: Vec<Message>,
    /// Enums declared inside this message (they live in `mod_name`).
    pub enums: Vec<Enum>,
    /// Real (non-synthetic) oneofs; their types live in `mod_name`.
    pub oneofs: Vec<Oneof>,
    /// `option deprecated = true;`
    pub deprecated: bool,
    /// The synthetic `XEntry` message of a `map<K, V>` field: no type is
    /// generated for it (the field is a `BTreeMap`).
    pub map_entry: bool,
}

impl Message {
    /// Whether the message needs a module for nested items.
    pub fn has_module(&self) -> bool {
        !self.nested.is_empty() || !self.enums.is_empty() || !self.oneofs.is_empty()
    }
}

/// A `oneof`: one struct field holding a Rust enum of its members.
pub(crate) struct Oneof {
    pub proto_name: String,
    pub ident: String,
    /// The Rust enum's name (upper camel case), in the message's module.
    pub type_name: String,
    pub doc: String,
}

/// A proto enum: a Rust enum plus raw `i32` accessors on fields.
pub(crate) struct Enum {
    pub full_name: String,
    pub rust_name: String,
    pub doc: String,
    pub deprecated: bool,
    /// Values in declaration order; aliases (a number already used) are
    /// kept for name lookup but get no variant.
    pub values: Vec<EnumValue>,
}

pub(crate) struct EnumValue {
    pub proto_name: String,
    pub variant: String,
    pub number: i32,
    pub doc: String,
    pub deprecated: bool,
    /// True for an alias of an earlier value with the same number.
    pub alias: bool,
}

/// A `service` with its methods, handed to a [`crate::ServiceGenerator`].
pub(crate) struct ServiceModel {
    pub name: String,
    pub full_name: String,
    pub package: String,
    pub doc: String,
    pub methods: Vec<MethodModel>,
}

pub(crate) struct MethodModel {
    pub name: String,
    pub proto_name: String,
    pub input_proto: String,
    pub output_proto: String,
    pub client_streaming: bool,
    pub server_streaming: bool,
    pub doc: String,
}

pub(crate) struct Field {
    /// The proto name.
    pub proto_name: String,
    /// The snake-case field name, also the base of an enum field's
    /// accessors (`<rust_name>()`, `set_<rust_name>()`).
    pub rust_name: String,
    /// The struct field's identifier (without `r#`).
    pub ident: String,
    pub number: u32,
    pub repeated: bool,
    pub kind: Kind,
    /// The declaration, e.g. `repeated uint32 ids = 3;`.
    pub decl: String,
    pub doc: String,
    /// For enum fields (stored as `i32`): the enum's full proto name.
    pub enum_type: Option<String>,
    /// Index into the message's `oneofs` if this field is a oneof member.
    pub oneof: Option<usize>,
    /// proto3 `optional`: explicit presence (`Option<T>`).
    pub optional: bool,
    /// A `map<K, V>` field (`kind` names its entry message).
    pub map: bool,
    /// `[deprecated = true]`
    pub deprecated: bool,
}

#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// A scalar with its Rust type.
    Scalar(&'static str),
    Bytes,
    String,
    /// A message, by fully-qualified proto name (no leading dot).
    Message(String),
}

/// Rust keywords that cannot be used as plain identifiers.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "gen", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Keywords that cannot even be raw identifiers.
const NON_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// Names a message may not have: they would shadow primitive types that the
/// generated code uses unqualified.
const PRIMITIVES: &[&str] = &[
    "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
    "i128", "isize", "f32", "f64",
];

/// True if `s` must be written `r#s`.
pub(crate) fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

/// A proto name in snake case (the base of method names; field names that
/// are already snake case are kept verbatim).
pub(crate) fn snake(name: &str) -> String {
    if name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        name.to_owned()
    } else {
        name.to_snake_case()
    }
}

/// A snake-case name as a Rust identifier (struct field or module):
/// `self`/`super`/`crate`/`_`, which cannot be raw identifiers, get a `_`
/// appended; other keywords are written raw (`r#type`) by the code
/// generator.
pub(crate) fn ident_name(snake: &str) -> String {
    if NON_RAW.contains(&snake) {
        format!("{snake}_")
    } else {
        snake.to_owned()
    }
}

struct FileCx<'f> {
    file: &'f FileDescriptorProto,
    path: String,
    locations: HashMap<&'f [i32], &'f Location>,
}

impl<'f> FileCx<'f> {
    fn location(&self, path: &[i32]) -> Option<&'f Location> {
        self.locations.get(path).copied()
    }

    /// 1-based (line, column) of `path`, else of its closest ancestor.
    fn position(&self, path: &[i32]) -> (u32, u32) {
        for len in (0..=path.len()).rev() {
            if let Some(l) = self.location(&path[..len]) {
                if l.span.len() >= 3 {
                    return (l.span[0] as u32 + 1, l.span[1] as u32 + 1);
                }
            }
        }
        (1, 1)
    }

    fn diag(&self, path: &[i32], message: String) -> Diagnostic {
        let (line, column) = self.position(path);
        Diagnostic::new(self.path.clone(), line, column, message)
    }

    fn doc(&self, path: &[i32]) -> String {
        self.location(path)
            .and_then(|l| l.leading_comments.clone())
            .unwrap_or_default()
    }
}

fn unsupported(construct: &str, hint: &str) -> String {
    format!("{construct} is not supported by granola ({hint})")
}

/// Builds the model from a descriptor set (with source info), or returns
/// every problem found. `path_of` maps a file name to the path to report.
///
/// Code is generated for the `requested` files and for the imported files
/// that define message types they use (transitively); an import used for
/// anything else (custom options, services) is not compiled.
pub(crate) fn build(
    set: &FileDescriptorSet,
    requested: &HashSet<String>,
    path_of: &dyn Fn(&str) -> String,
) -> Result<Model, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let mut packages: BTreeMap<String, Package> = BTreeMap::new();
    let mut types = HashMap::new();
    let needed = needed_files(set, requested);
    let files: Vec<FileCx<'_>> = set
        .file
        .iter()
        .filter(|file| needed.contains(file.name()))
        .map(|file| FileCx {
            file,
            path: path_of(file.name()),
            locations: file
                .source_code_info
                .iter()
                .flat_map(|s| s.location.iter())
                .map(|l| (l.path.as_slice(), l))
                .collect(),
        })
        .collect();

    // Every package compiled together: a top-level message whose module
    // would be named like a child package gets a `_` suffix instead.
    let package_names: HashSet<String> =
        files.iter().map(|f| f.file.package().to_owned()).collect();
    // Pass 1: check file-level constructs and register every type.
    for fcx in &files {
        let file = fcx.file;
        check_file(fcx, &mut diags);
        let pkg_modules: Vec<String> = if file.package().is_empty() {
            Vec::new()
        } else {
            file.package()
                .split('.')
                .map(|p| ident_name(&snake(p)))
                .collect()
        };
        let package = packages
            .entry(file.package().to_owned())
            .or_insert_with(|| Package {
                name: file.package().to_owned(),
                files: Vec::new(),
                messages: Vec::new(),
                enums: Vec::new(),
                services: Vec::new(),
            });
        package.files.push(file.name().to_owned());
        let prefix = |name: &str| {
            if file.package().is_empty() {
                name.to_owned()
            } else {
                format!("{}.{}", file.package(), name)
            }
        };
        for (i, e) in file.enum_type.iter().enumerate() {
            let full = prefix(e.name());
            package.enums.push(enumeration(
                fcx,
                e,
                full,
                &pkg_modules,
                vec![FILE_ENUM, i as i32],
                &mut types,
                &mut diags,
            ));
        }
        for (i, m) in file.message_type.iter().enumerate() {
            let full = prefix(m.name());
            let path = vec![FILE_MESSAGE, i as i32];
            if let Some(mut msg) = message(
                fcx,
                m,
                full,
                pkg_modules.clone(),
                path,
                &mut types,
                &mut diags,
            ) {
                let child = if file.package().is_empty() {
                    msg.mod_name.clone()
                } else {
                    format!("{}.{}", file.package(), msg.mod_name)
                };
                if msg.has_module()
                    && package_names
                        .iter()
                        .any(|p| p.split('.').map(snake).collect::<Vec<_>>().join(".") == child)
                {
                    rename_module(&mut msg, &mut types);
                }
                package.messages.push(msg);
            }
        }
        for (i, svc) in file.service.iter().enumerate() {
            let path = [FILE_SERVICE, i as i32];
            package.services.push(ServiceModel {
                name: svc.name().to_owned(),
                full_name: prefix(svc.name()),
                package: file.package().to_owned(),
                doc: fcx.doc(&path),
                methods: svc
                    .method
                    .iter()
                    .enumerate()
                    .map(|(j, m)| MethodModel {
                        name: snake(m.name()),
                        proto_name: m.name().to_owned(),
                        input_proto: m.input_type().trim_start_matches('.').to_owned(),
                        output_proto: m.output_type().trim_start_matches('.').to_owned(),
                        client_streaming: m.client_streaming(),
                        server_streaming: m.server_streaming(),
                        doc: fcx.doc(&[FILE_SERVICE, i as i32, SERVICE_METHOD, j as i32]),
                    })
                    .collect(),
            });
        }
    }

    // Pass 2: check the names in each scope and every field's type.
    for p in packages.values() {
        check_scope(&p.messages, &mut diags, &files);
        for m in &p.messages {
            check_types(m, &types, &mut diags, &files);
        }
    }

    if diags.is_empty() {
        return Ok(Model {
            packages: packages.into_values().collect(),
            types,
            type_attrs: Vec::new(),
            field_attrs: Vec::new(),
            views: false,
            unknown_fields: true,
            extern_messages: Vec::new(),
        });
    }
    // Report in file order, then source order within each file.
    let file_index = |d: &Diagnostic| files.iter().position(|f| Some(f.path.as_str()) == d.file());
    diags.sort_by_key(|d| (file_index(d), d.line(), d.column()));
    Err(diags)
}

/// The requested files plus every file defining a message type used by a
/// field of a needed file.
fn needed_files(set: &FileDescriptorSet, requested: &HashSet<String>) -> HashSet<String> {
    fn walk<'f>(
        prefix: &str,
        msgs: &'f [DescriptorProto],
        file: &'f str,
        out: &mut HashMap<String, &'f str>,
    ) {
        for m in msgs {
            let full = if prefix.is_empty() {
                m.name().to_owned()
            } else {
                format!("{prefix}.{}", m.name())
            };
            walk(&full, &m.nested_type, file, out);
            for e in &m.enum_type {
                out.insert(format!("{full}.{}", e.name()), file);
            }
            out.insert(full, file);
        }
    }
    fn uses<'f>(msgs: &'f [DescriptorProto], out: &mut Vec<&'f str>) {
        for m in msgs {
            for f in &m.field {
                if matches!(f.r#type(), Type::Message | Type::Group | Type::Enum) {
                    out.push(f.type_name().trim_start_matches('.'));
                }
            }
            uses(&m.nested_type, out);
        }
    }
    let mut defined_in = HashMap::new();
    for f in &set.file {
        walk(f.package(), &f.message_type, f.name(), &mut defined_in);
        for e in &f.enum_type {
            let full = if f.package().is_empty() {
                e.name().to_owned()
            } else {
                format!("{}.{}", f.package(), e.name())
            };
            defined_in.insert(full, f.name());
        }
    }
    let mut needed: HashSet<String> = requested.clone();
    let mut todo: Vec<&str> = set
        .file
        .iter()
        .filter(|f| requested.contains(f.name()))
        .map(|f| f.name())
        .collect();
    while let Some(name) = todo.pop() {
        let Some(file) = set.file.iter().find(|f| f.name() == name) else {
            continue;
        };
        let mut used = Vec::new();
        uses(&file.message_type, &mut used);
        for m in file.service.iter().flat_map(|s| &s.method) {
            used.push(m.input_type().trim_start_matches('.'));
            used.push(m.output_type().trim_start_matches('.'));
        }
        for t in used {
            if let Some(&def) = defined_in.get(t) {
                if needed.insert(def.to_owned()) {
                    todo.push(def);
                }
            }
        }
    }
    needed
}

fn check_file(fcx: &FileCx<'_>, diags: &mut Vec<Diagnostic>) {
    let file = fcx.file;
    if file.syntax() != "proto3" {
        let what = if file.syntax().is_empty() || file.syntax() == "proto2" {
            "proto2 syntax".to_owned()
        } else {
            format!("syntax `{}`", file.syntax())
        };
        diags.push(fcx.diag(
            &[FILE_SYNTAX],
            unsupported(&what, "start the file with `syntax = \"proto3\";`"),
        ));
    }
    for &i in &file.public_dependency {
        diags.push(fcx.diag(
            &[FILE_DEPENDENCY, i],
            unsupported(
                "`import public`",
                "use a plain `import` in each file that needs it",
            ),
        ));
    }
    for &i in &file.weak_dependency {
        diags.push(fcx.diag(
            &[FILE_DEPENDENCY, i],
            unsupported("`import weak`", "use a plain `import`"),
        ));
    }
    for (i, x) in file.extension.iter().enumerate() {
        diags.push(fcx.diag(
            &[FILE_EXTENSION, i as i32],
            unsupported(
                &format!(
                    "extension `{}` (`extend {}`)",
                    x.name(),
                    x.extendee().trim_start_matches('.')
                ),
                "declare the field in the message itself",
            ),
        ));
    }
}

/// Moves a message's module to `<name>_` (and every type inside it).
fn rename_module(msg: &mut Message, types: &mut HashMap<String, TypePath>) {
    let old: Vec<String> = msg
        .scope
        .iter()
        .cloned()
        .chain([msg.mod_name.clone()])
        .collect();
    msg.mod_name.push('_');
    let new: Vec<String> = msg
        .scope
        .iter()
        .cloned()
        .chain([msg.mod_name.clone()])
        .collect();
    let inside = format!("{}.", msg.full_name);
    for (name, t) in types.iter_mut() {
        if name.starts_with(&inside) && t.modules.starts_with(&old) {
            t.modules.splice(..old.len(), new.iter().cloned());
        }
    }
    fn rescope(m: &mut Message, old: &[String], new: &[String]) {
        if m.scope.starts_with(old) {
            m.scope.splice(..old.len(), new.iter().cloned());
        }
        for n in &mut m.nested {
            rescope(n, old, new);
        }
    }
    for n in &mut msg.nested {
        rescope(n, &old, &new);
    }
}

/// Converts one enum, registering its type.
fn enumeration(
    fcx: &FileCx<'_>,
    e: &prost_types::EnumDescriptorProto,
    full_name: String,
    scope: &[String],
    path: Vec<i32>,
    types: &mut HashMap<String, TypePath>,
    diags: &mut Vec<Diagnostic>,
) -> Enum {
    use heck::{ToShoutySnakeCase, ToUpperCamelCase};
    let name = e.name();
    if NON_RAW.contains(&name) || PRIMITIVES.contains(&name) || is_keyword(name) {
        diags.push(fcx.diag(
            &path,
            format!("enum name `{name}` cannot be used in Rust (it is a keyword or a primitive type name); rename the enum"),
        ));
    }
    types.insert(
        full_name.clone(),
        TypePath {
            modules: scope.to_vec(),
            name: name.to_owned(),
            external: None,
        },
    );
    // prost's convention: `COLOR_RED` in `enum Color` is `Color::Red`.
    let strip = format!("{}_", name.to_shouty_snake_case());
    let mut seen_numbers = HashSet::new();
    let mut seen_variants: HashMap<String, String> = HashMap::new();
    let mut values = Vec::new();
    for (i, v) in e.value.iter().enumerate() {
        let vpath: Vec<i32> = path.iter().copied().chain([ENUM_VALUE, i as i32]).collect();
        let stripped = v
            .name()
            .strip_prefix(&strip)
            .filter(|r| r.starts_with(|c: char| c.is_ascii_alphabetic()))
            .unwrap_or(v.name());
        let mut variant = stripped.to_upper_camel_case();
        if variant == "Self" {
            variant.push('_');
        }
        let alias = !seen_numbers.insert(v.number());
        if !alias {
            if let Some(other) = seen_variants.insert(variant.clone(), v.name().to_owned()) {
                diags.push(fcx.diag(
                    &vpath,
                    format!("enum value `{}` of `{name}` maps to the Rust variant `{variant}`, which `{other}` already uses; rename one of them", v.name()),
                ));
            }
        }
        values.push(EnumValue {
            proto_name: v.name().to_owned(),
            variant,
            number: v.number(),
            doc: fcx.doc(&vpath),
            deprecated: v.options.as_ref().is_some_and(|o| o.deprecated()),
            alias,
        });
    }
    Enum {
        full_name,
        rust_name: name.to_owned(),
        doc: fcx.doc(&path),
        deprecated: e.options.as_ref().is_some_and(|o| o.deprecated()),
        values,
    }
}

/// Converts one message (and its nested messages), checking its contents.
fn message(
    fcx: &FileCx<'_>,
    m: &DescriptorProto,
    full_name: String,
    scope: Vec<String>,
    path: Vec<i32>,
    types: &mut HashMap<String, TypePath>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Message> {
    let name = m.name();
    let at = |suffix: &[i32]| -> Vec<i32> { path.iter().chain(suffix).copied().collect() };
    if NON_RAW.contains(&name) || PRIMITIVES.contains(&name) {
        diags.push(fcx.diag(
            &path,
            format!("message name `{name}` cannot be used in Rust (it is a keyword or a primitive type name); rename the message"),
        ));
    }
    types.insert(
        full_name.clone(),
        TypePath {
            modules: scope.clone(),
            name: name.to_owned(),
            external: None,
        },
    );
    for i in 0..m.extension_range.len() {
        diags.push(fcx.diag(
            &at(&[MSG_EXT_RANGE, i as i32]),
            unsupported(
                &format!("extension range (`extensions`) in `{name}`"),
                "remove it; granola messages are not extensible",
            ),
        ));
    }
    for (i, x) in m.extension.iter().enumerate() {
        diags.push(fcx.diag(
            &at(&[MSG_EXTENSION, i as i32]),
            unsupported(
                &format!(
                    "extension `{}` (`extend {}`)",
                    x.name(),
                    x.extendee().trim_start_matches('.')
                ),
                "declare the field in the message itself",
            ),
        ));
    }
    // proto3 `optional` fields live in synthetic oneofs; those are fine.
    let synthetic: HashSet<i32> = m
        .field
        .iter()
        .filter(|f| f.proto3_optional())
        .filter_map(|f| f.oneof_index)
        .collect();
    let mut oneofs = Vec::new();
    // Proto oneof index -> index into `oneofs` (synthetic ones are skipped).
    let mut oneof_index = HashMap::new();
    for (i, o) in m.oneof_decl.iter().enumerate() {
        if !synthetic.contains(&(i as i32)) {
            use heck::ToUpperCamelCase;
            oneof_index.insert(i as i32, oneofs.len());
            let rust_name = snake(o.name());
            oneofs.push(Oneof {
                proto_name: o.name().to_owned(),
                ident: ident_name(&rust_name),
                type_name: o.name().to_upper_camel_case(),
                doc: fcx.doc(&at(&[MSG_ONEOF, i as i32])),
            });
        }
    }

    let mut fields = Vec::new();
    for (i, f) in m.field.iter().enumerate() {
        if let Some(mut field) = field(fcx, m, f, &at(&[MSG_FIELD, i as i32]), diags) {
            field.oneof = f.oneof_index.and_then(|o| oneof_index.get(&o).copied());
            fields.push(field);
        }
    }
    check_names(fcx, &path, m, &fields, &oneofs, diags);

    let mod_name = ident_name(&snake(name));
    let mut inner_scope = scope.clone();
    inner_scope.push(mod_name.clone());
    let mut enums = Vec::new();
    for (i, e) in m.enum_type.iter().enumerate() {
        enums.push(enumeration(
            fcx,
            e,
            format!("{full_name}.{}", e.name()),
            &inner_scope,
            at(&[MSG_ENUM, i as i32]),
            types,
            diags,
        ));
    }
    let mut nested = Vec::new();
    for (i, n) in m.nested_type.iter().enumerate() {
        let full = format!("{full_name}.{}", n.name());
        if let Some(msg) = message(
            fcx,
            n,
            full,
            inner_scope.clone(),
            at(&[MSG_NESTED, i as i32]),
            types,
            diags,
        ) {
            nested.push(msg);
        }
    }

    Some(Message {
        full_name,
        rust_name: name.to_owned(),
        mod_name,
        scope,
        doc: fcx.doc(&path),
        fields,
        nested,
        enums,
        oneofs,
        deprecated: m.options.as_ref().is_some_and(|o| o.deprecated()),
        map_entry: m.options.as_ref().is_some_and(|o| o.map_entry()),
    })
}

fn field(
    fcx: &FileCx<'_>,
    m: &DescriptorProto,
    f: &FieldDescriptorProto,
    path: &[i32],
    diags: &mut Vec<Diagnostic>,
) -> Option<Field> {
    let name = f.name();
    let at = |suffix: &[i32]| -> Vec<i32> { path.iter().chain(suffix).copied().collect() };
    let mut ok = true;
    let number = u32::try_from(f.number()).unwrap_or(0);
    if number == 0 || number > MAX_FIELD_NUMBER {
        diags.push(fcx.diag(
            &at(&[FIELD_NUMBER]),
            format!(
                "field number {} of `{name}` is out of range: granola supports field numbers 1 to {MAX_FIELD_NUMBER}",
                f.number()
            ),
        ));
        ok = false;
    }
    if f.label() == Label::Required {
        diags.push(fcx.diag(
            &at(&[FIELD_LABEL]),
            unsupported(
                &format!("required field `{name}`"),
                "proto3 fields have no `required`; use `optional` for explicit presence",
            ),
        ));
        ok = false;
    }
    if f.default_value.is_some() {
        diags.push(fcx.diag(
            path,
            unsupported(
                &format!("default value of field `{name}`"),
                "remove `[default = ...]`",
            ),
        ));
        ok = false;
    }
    let type_name = f.type_name().trim_start_matches('.');
    let (kind, type_str) = match f.r#type() {
        Type::Double => (Kind::Scalar("f64"), "double"),
        Type::Float => (Kind::Scalar("f32"), "float"),
        Type::Int64 => (Kind::Scalar("i64"), "int64"),
        Type::Sint64 => (Kind::Scalar("i64"), "sint64"),
        Type::Sfixed64 => (Kind::Scalar("i64"), "sfixed64"),
        Type::Uint64 => (Kind::Scalar("u64"), "uint64"),
        Type::Fixed64 => (Kind::Scalar("u64"), "fixed64"),
        Type::Int32 => (Kind::Scalar("i32"), "int32"),
        Type::Sint32 => (Kind::Scalar("i32"), "sint32"),
        Type::Sfixed32 => (Kind::Scalar("i32"), "sfixed32"),
        Type::Uint32 => (Kind::Scalar("u32"), "uint32"),
        Type::Fixed32 => (Kind::Scalar("u32"), "fixed32"),
        Type::Bool => (Kind::Scalar("bool"), "bool"),
        Type::String => (Kind::String, "string"),
        Type::Bytes => (Kind::Bytes, "bytes"),
        Type::Message => (Kind::Message(type_name.to_owned()), type_name),
        Type::Group => {
            let group = type_name.rsplit('.').next().unwrap_or(name);
            diags.push(fcx.diag(
                path,
                unsupported(
                    &format!("group `{group}`"),
                    "use a nested message field instead",
                ),
            ));
            return None;
        }
        Type::Enum => (Kind::Scalar("i32"), type_name),
    };
    if !ok {
        return None;
    }
    let map_entry = m.nested_type.iter().find(|n| {
        n.options.as_ref().is_some_and(|o| o.map_entry())
            && type_name.rsplit('.').next() == Some(n.name())
    });
    let type_str = match map_entry {
        Some(e) if f.label() == Label::Repeated => {
            let t = |n: &FieldDescriptorProto| -> String {
                match n.r#type() {
                    Type::Message | Type::Enum => n.type_name().trim_start_matches('.').to_owned(),
                    other => other
                        .as_str_name()
                        .trim_start_matches("TYPE_")
                        .to_lowercase(),
                }
            };
            let k = e
                .field
                .iter()
                .find(|x| x.number() == 1)
                .map(t)
                .unwrap_or_default();
            let v = e
                .field
                .iter()
                .find(|x| x.number() == 2)
                .map(t)
                .unwrap_or_default();
            format!("map<{k}, {v}>")
        }
        _ => type_str.to_owned(),
    };
    let is_map = type_str.starts_with("map<");
    let label = match f.label() {
        Label::Repeated if is_map => "",
        Label::Repeated => "repeated ",
        _ if f.proto3_optional() => "optional ",
        _ => "",
    };
    let rust_name = snake(name);
    if rust_name.is_empty() || rust_name.starts_with(|c: char| c.is_ascii_digit()) {
        diags.push(fcx.diag(
            &at(&[FIELD_NAME]),
            format!(
                "field name `{name}` cannot be turned into a Rust identifier; rename the field"
            ),
        ));
        return None;
    }
    Some(Field {
        proto_name: name.to_owned(),
        ident: ident_name(&rust_name),
        rust_name,
        number,
        repeated: f.label() == Label::Repeated,
        kind,
        decl: format!("{label}{type_str} {name} = {number};"),
        doc: fcx.doc(path),
        enum_type: (f.r#type() == Type::Enum).then(|| type_name.to_owned()),
        oneof: None,
        optional: f.proto3_optional(),
        map: is_map,
        deprecated: f.options.as_ref().is_some_and(|o| o.deprecated()),
    })
}

/// The method names generated for a field (must match `codegen`): fields
/// are public, so only enum fields get accessors (`x()` gives the Rust
/// enum, `set_x()` takes it; repeated ones `x()` iterates, `push_x()`
/// appends), as in prost.
pub(crate) fn method_names(f: &Field) -> Vec<String> {
    let n = &f.rust_name;
    match (f.enum_type.is_some() && f.oneof.is_none(), f.repeated) {
        (false, _) => Vec::new(),
        (true, false) => vec![n.clone(), format!("set_{n}")],
        (true, true) => vec![n.clone(), format!("push_{n}")],
    }
}

/// Field names (after snake-casing) and generated method names must be
/// unique within a message.
fn check_names(
    fcx: &FileCx<'_>,
    msg_path: &[i32],
    m: &DescriptorProto,
    fields: &[Field],
    oneofs: &[Oneof],
    diags: &mut Vec<Diagnostic>,
) {
    let index_of = |f: &Field| {
        m.field
            .iter()
            .position(|d| d.name() == f.proto_name)
            .unwrap_or(0) as i32
    };
    let field_path = |f: &Field| -> Vec<i32> {
        msg_path
            .iter()
            .copied()
            .chain([MSG_FIELD, index_of(f), FIELD_NAME])
            .collect()
    };
    let mut struct_fields: HashMap<String, &str> = HashMap::new();
    let mut methods: HashMap<String, &str> = HashMap::new();
    for reserved in [
        "into_owned",
        "encoded_sizes",
        "encoded_len",
        "encode",
        "to_vec",
        "to_sga",
    ] {
        methods.insert(reserved.into(), "(a granola::Message method)");
    }
    for o in oneofs {
        struct_fields.insert(o.ident.clone(), &o.proto_name);
    }
    for f in fields.iter().filter(|f| f.oneof.is_none()) {
        if let Some(other) = struct_fields.insert(f.ident.clone(), &f.proto_name) {
            diags.push(fcx.diag(
                &field_path(f),
                format!(
                    "field `{}` of `{}` maps to the Rust name `{}`, which `{other}` already uses; rename one of them",
                    f.proto_name,
                    m.name(),
                    f.ident
                ),
            ));
        }
    }
    for f in fields {
        for name in method_names(f) {
            if let Some(other) = methods.insert(name.clone(), &f.proto_name) {
                if other != f.proto_name {
                    diags.push(fcx.diag(
                        &field_path(f),
                        format!(
                            "field `{}` of `{}` would generate method `{name}`, which clashes with the one generated for `{other}`; rename one of them",
                            f.proto_name,
                            m.name()
                        ),
                    ));
                }
            }
        }
    }
}

/// Types and modules share Rust's type namespace: `message Foo { message X
/// {} }` creates module `foo`, which must not clash with another message or
/// module in the same scope.
fn check_scope(messages: &[Message], diags: &mut Vec<Diagnostic>, files: &[FileCx<'_>]) {
    let mut seen: HashMap<String, &str> = HashMap::new();
    let report = |name: &str, m: &Message, other: &str, diags: &mut Vec<Diagnostic>| {
        diags.push(locate(
            files,
            &m.full_name,
            format!(
                "message `{}` needs the Rust name `{name}`, which `{other}` already uses in the same module; rename one of them",
                m.full_name
            ),
        ));
    };
    for m in messages {
        if let Some(other) = seen.insert(m.rust_name.clone(), &m.full_name) {
            report(&m.rust_name, m, other, diags);
        }
    }
    for m in messages.iter().filter(|m| m.has_module()) {
        if let Some(other) = seen.insert(m.mod_name.clone(), &m.full_name) {
            if other != m.full_name {
                report(&m.mod_name, m, other, diags);
            }
        }
    }
    for m in messages {
        check_scope(&m.nested, diags, files);
        let mut inner: HashMap<&str, &str> = HashMap::new();
        for n in &m.nested {
            inner.insert(&n.rust_name, &n.full_name);
        }
        for e in &m.enums {
            if let Some(other) = inner.insert(&e.rust_name, &e.full_name) {
                report(&e.rust_name, m, other, diags);
            }
        }
        for o in &m.oneofs {
            if let Some(other) = inner.insert(&o.type_name, &o.proto_name) {
                report(&o.type_name, m, other, diags);
            }
        }
    }
}

fn check_types(
    m: &Message,
    types: &HashMap<String, TypePath>,
    diags: &mut Vec<Diagnostic>,
    files: &[FileCx<'_>],
) {
    for f in &m.fields {
        let t = match (&f.kind, &f.enum_type) {
            (Kind::Message(t), _) | (_, Some(t)) => Some(t),
            _ => None,
        };
        if let Some(t) = t {
            if !types.contains_key(t) {
                diags.push(locate(
                    files,
                    &m.full_name,
                    format!(
                        "field `{}` of `{}` has type `{t}`, which granola does not generate",
                        f.proto_name, m.full_name
                    ),
                ));
            }
        }
    }
    for n in &m.nested {
        check_types(n, types, diags, files);
    }
}

/// A diagnostic at the declaration of message `full_name`.
fn locate(files: &[FileCx<'_>], full_name: &str, message: String) -> Diagnostic {
    for fcx in files {
        let pkg = fcx.file.package();
        let rest = if pkg.is_empty() {
            Some(full_name)
        } else {
            full_name
                .strip_prefix(pkg)
                .and_then(|r| r.strip_prefix('.'))
        };
        let Some(rest) = rest else { continue };
        let mut path = Vec::new();
        let mut list = &fcx.file.message_type;
        let mut found = true;
        for part in rest.split('.') {
            match list.iter().position(|d| d.name() == part) {
                Some(i) => {
                    path.extend([
                        if path.is_empty() {
                            FILE_MESSAGE
                        } else {
                            MSG_NESTED
                        },
                        i as i32,
                    ]);
                    list = &list[i].nested_type;
                }
                None => {
                    found = false;
                    break;
                }
            }
        }
        if found {
            return fcx.diag(&path, message);
        }
    }
    Diagnostic::without_position(None, message)
}
