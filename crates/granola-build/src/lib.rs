//! # granola-build: the granola schema compiler
//!
//! Turns proto3 `.proto` files into Rust types for the
//! `granola` runtime: hybrid zero-copy messages
//! whose bytes and string fields are copied when small and referenced
//! (zero copy) when large. Parsing is pure Rust ([`protox`]), so neither
//! `protoc` nor any other binary is needed.
//!
//! ## Usage: schema → `build.rs` → `include!` → use
//!
//! ```text
//! // schemas/kv.proto
//! syntax = "proto3";
//! package kv;
//! message GetM {
//!   uint32 id = 1;
//!   repeated string keys = 2;
//!   repeated bytes vals = 3;
//! }
//! ```
//!
//! ```toml
//! # Cargo.toml
//! [dependencies]
//! granola = "..."
//! [build-dependencies]
//! granola-build = "..."
//! ```
//!
//! ```no_run
//! // build.rs, in `fn main()`:
//! if let Err(e) = granola_build::compile_protos(&["schemas/kv.proto"], &["schemas"]) {
//!     // One `file:line:column: message` line per problem.
//!     panic!("\n{e}");
//! }
//! ```
//!
//! ```text
//! // src/lib.rs: one module per proto package, named after it (or let
//! // `Config::include_file("mod.rs")` write that tree for you).
//! pub mod kv {
//!     include!(concat!(env!("OUT_DIR"), "/kv.rs"));
//! }
//! ```
//!
//! Then (compiled and run here against the `granola-tests` crate, whose
//! `build.rs` does exactly the above for `schemas/sample.proto`):
//!
//! ```
//! use granola::{Decode, IntoOwned, Message, Pool};
//! use granola_tests::sample::Sample;
//!
//! let pool = Pool::with_capacity(8 << 20)?;
//! let value_in_pool = pool.alloc_copy(&[7u8; 4096]).unwrap();
//!
//! // Public fields, `Default` for the rest, as with prost.
//! let m = Sample {
//!     id: 7,
//!     keys: vec!["user:1".into()],
//!     vals: vec![value_in_pool.into()], // a pool buffer: may go by reference
//!     ..Default::default()
//! };
//!
//! // Serialize-and-send: size (for the datapath's copy threshold), then one
//! // pass that writes the head buffer and hands each zero-copy piece over.
//! let sizes = m.encoded_sizes_with(512);
//! let mut head = vec![0u8; sizes.head_len()];
//! let mut iovecs = Vec::new();
//! m.encode(&sizes, &mut head, |zero_copy| iovecs.push(zero_copy.clone()))?;
//! assert_eq!(iovecs.len(), 1);
//!
//! // The receiver sees one contiguous object; decoding borrows it.
//! let bytes = m.to_vec()?;
//! let back = Sample::decode(&bytes)?;
//! assert_eq!(back.id, 7);
//! assert_eq!(back.vals[0].len(), 4096);
//! // Detached, it can outlive the bytes and move to another thread.
//! let owned: Sample<'static> = back.into_owned();
//! drop(bytes);
//! std::thread::spawn(move || assert_eq!(owned.keys[0], "user:1")).join().unwrap();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The command-line binary does the same outside Cargo:
//! `cargo run -p granola-build -- --out-dir DIR -I schemas schemas/kv.proto`.
//!
//! ## Output layout (prost's convention)
//!
//! - One file per proto package, `<package>.rs` (`_.rs` for files with no
//!   `package`), holding the messages of every input file in that package
//!   **and of the imported files whose messages they use** (so referenced
//!   types exist too; an import used only for options is not compiled).
//! - A message nested in `Outer` lives in `pub mod outer { ... }` (snake
//!   case of the parent's name) next to `Outer`; `Outer.Inner` is
//!   `outer::Inner`.
//! - References to other packages are `super::`-relative paths, which
//!   resolve when every package file is included in a module tree that
//!   mirrors the package names (each component in snake case):
//!
//! ```text
//! pub mod a {
//!     pub mod b {
//!         include!(concat!(env!("OUT_DIR"), "/a.b.rs")); // package a.b
//!     }
//!     include!(concat!(env!("OUT_DIR"), "/a.rs")); // package a
//! }
//! include!(concat!(env!("OUT_DIR"), "/_.rs")); // files without a package
//! ```
//!
//!   `Config::include_file` writes exactly that tree. If a top-level
//!   message's module would be named like a child package compiled in the
//!   same run (message `a.B` with nested types, and package `a.b`), the
//!   message's module gets a `_` suffix (`a::b_::C`) so both compile.
//! - Enums live where messages do (`Color`, `outer::Kind`); a oneof `o` of
//!   `M` is the enum `m::O`.
//!
//! ## What is generated
//!
//! For each message `M` (type name verbatim from the schema), a struct with
//! **public fields**, as prost generates, deriving `Clone`, `Debug` and
//! `Default`:
//!
//! | proto field | Rust field |
//! | --- | --- |
//! | scalar | `T` (proto3 implicit presence: the default is not written) |
//! | `optional` scalar, `bytes` or `string` | `Option<T>` |
//! | `bytes` | `granola::HybridBytes<'a>` |
//! | `string` | `granola::HybridStr<'a>` (UTF-8 checked on first `as_str()`) |
//! | message | `Option<T>`, `Option<Box<T>>` where the schema is recursive |
//! | `repeated` | `Vec<T>` |
//! | `map<K, V>` | `BTreeMap<K, V>` (key order: a message always encodes to the same bytes) |
//! | enum `E` | `i32` (open: unknown values survive), with `x() -> E` and `set_x(E)`; repeated: `x()` iterates, `push_x(E)` |
//! | `oneof o` | `Option<m::O>`, an enum with one variant per member |
//!
//! Plus `unknown_fields: granola::UnknownFields`: the fields a decoded
//! message had that this schema does not know (a newer writer's); encoding
//! writes them back, so they survive a pass through an older reader, as in
//! protobuf. Build messages with `..Default::default()` for it (and for
//! fields added later); [`Config::unknown_fields`] turns it off.
//!
//! **Ownership.** `M<'a>` borrows for `'a` only what it was given or
//! decoded from: `M::decode(&bytes)` is zero-copy (fields point into
//! `bytes`), and building one from `&str`/`&[u8]` borrows them. Fields built
//! from `String`, `Vec<u8>`, `bytes::Bytes` or a pool `Buf` own their data,
//! and `into_owned()` detaches any message, giving `M<'static>`: `Send`,
//! `Sync`, `Clone` (reference counts, no copies of pool data), returnable
//! from the function that decoded it. `Decode::decode_buf(&packet)` goes
//! straight from a received pool buffer to `M<'static>`, referencing the
//! packet for large fields and copying small ones. A message with no bytes
//! or string field anywhere below it has no lifetime at all. Generic code
//! names the family as `T: granola::MessageType` (`T::Of<'x>`).
//!
//! **Copy or reference** is decided when serializing, by the copy
//! threshold the serializer passes (`encoded_sizes_with(threshold)`; a
//! datapath calibrates its own): a pool `Buf` at least that large is sent by
//! reference, everything else is copied into the head buffer.
//!
//! The impls (`granola::Message`, `Decode`, `IntoOwned`, `MessageType`,
//! `PartialEq` with floats compared by bit pattern) come from one
//! `granola::message!` line per message, so the generated files stay close
//! to prost's in size.
//!
//! With [`Config::views`], each message `M` also gets `MView<'a>`: a
//! read-only view over received bytes (`MView::new(&bytes, &options)`
//! checks the root header only) with `x()` / `has_x()` per field — scalars
//! by value, bytes as `&'a [u8]`, strings as `&'a str` (checked on access)
//! or `x_bytes()`, nested messages as views, repeated fields as
//! `granola::wire::ListReader<'a>` (plus `x_get(i)` for message lists;
//! `bytes(i)` or `bytes_iter()` for bytes and string lists). Nothing is
//! allocated; each access is bounds-checked and O(1) in the message's
//! bitmap words. A root header whose bitmap is one word (fields 1..=32)
//! is checked inline in `MView::new`; any other header is checked out of
//! line.
//!
//! For each enum `E`, a `#[repr(i32)]` Rust enum (variants in upper camel
//! case, the enum's own name stripped as a prefix: `COLOR_RED` in `Color`
//! is `Color::Red`; aliases map to the first variant of their number) with
//! `from_i32`, `as_str_name`, `from_str_name`, `Default` (the value 0),
//! `From<E> for i32` and `TryFrom<i32>`. Enums are open: fields store the
//! raw `i32`, so values this schema does not know survive a round trip.
//! `[deprecated = true]` on a field, message, enum or value becomes
//! `#[deprecated]` on its field / type / variant. A `service` goes to
//! the [`ServiceGenerator`] set with [`Config::service_generator`] (nothing
//! is generated without one). The well-known types
//! (`google/protobuf/*.proto`: `Timestamp`, `Duration`, `Struct`/`Value`,
//! `Any`, `Empty`, wrappers, `FieldMask`) are bundled with the parser and
//! compile like any imported file, into `google.protobuf.rs`; or reuse
//! existing Rust types with [`Config::extern_path`].
//!
//! Scalars map as int32/sint32/sfixed32 → `i32`,
//! int64/sint64/sfixed64 → `i64`, uint32/fixed32 → `u32`, uint64/fixed64 →
//! `u64`, bool → `bool`, float → `f32`, double → `f64`. Field names that
//! are Rust keywords become raw identifiers (`r#type`); generated code uses
//! fully-qualified paths, so messages may be called `Option`, `Result`,
//! `Vec`, `Box` or `String`. The field's declaration and its leading
//! comment in the schema become the field's doc comment.
//!
//! ## What is rejected
//!
//! proto2 syntax and its `required` fields, groups, defaults and
//! extensions (`extend`, `extensions`), `import public`/`import weak`,
//! `edition = "2023"` (the parser, protox 0.10, does not read editions
//! yet: a clear error), field numbers above [`MAX_FIELD_NUMBER`], and
//! names that cannot be Rust identifiers or that clash after conversion.
//! Each problem is reported as `file:line:column: <message>`, all of them
//! at once (see [`Error`]); nothing is silently dropped. Options other
//! than `deprecated` are ignored.
//!
//! Re-encoding drops fields the schema does not know (see
//! `docs/wire-format.md`, Compatibility).
//!
//! ## Golden files
//!
//! `tests/golden/<name>.proto` are compiled and compared with the expected
//! `tests/golden/<name>.rs`. After an intended change to the output,
//! re-bless them with `GRANOLA_BLESS=1 cargo test -p granola-build`.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod codegen;
mod error;
mod model;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub use error::{Diagnostic, Error};

/// The largest field number granola accepts (the same as
/// `granola::wire::MAX_FIELD_NUMBER`).
pub const MAX_FIELD_NUMBER: u32 = 32_768;

/// One generated Rust source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedFile {
    /// File name: `<proto package>.rs`, or `_.rs` for no package.
    pub name: String,
    /// Rust source.
    pub content: String,
}

/// A `service` from the schema, handed to a [`ServiceGenerator`] (the
/// shape of prost-build's `Service`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    /// The service name as written in the schema (`Shapes`).
    pub name: String,
    /// The proto package (`""` if none).
    pub package: String,
    /// The fully-qualified proto name (`pkg.Shapes`).
    pub full_name: String,
    /// The leading comment in the schema.
    pub comments: String,
    /// The methods, in declaration order.
    pub methods: Vec<Method>,
}

/// One `rpc` of a [`Service`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    /// Snake-case name (`draw`).
    pub name: String,
    /// Name as written in the schema (`Draw`).
    pub proto_name: String,
    /// The leading comment in the schema.
    pub comments: String,
    /// The request's Rust type path, relative to the package's module
    /// (e.g. `Shape` or `super::google::protobuf::Empty`), without
    /// lifetime: generated messages are `T<'a>`.
    pub input_type: String,
    /// The response's Rust type path, as `input_type`.
    pub output_type: String,
    /// Fully-qualified proto name of the request type.
    pub input_proto_type: String,
    /// Fully-qualified proto name of the response type.
    pub output_proto_type: String,
    /// `rpc M(stream T)`.
    pub client_streaming: bool,
    /// `returns (stream T)`.
    pub server_streaming: bool,
}

/// Generates code for `service` definitions (like prost-build's
/// `ServiceGenerator`): what it writes to `buf` is appended to the
/// package's generated file. Without one, services generate nothing.
pub trait ServiceGenerator {
    /// Generates code for one service into `buf`.
    fn generate(&mut self, service: Service, buf: &mut String);
    /// Called once per package file after its services (default: nothing).
    fn finalize(&mut self, _buf: &mut String) {}
}

/// Compiler options, in the style of `prost_build::Config`.
#[derive(Clone)]
pub struct Config {
    out_dir: Option<PathBuf>,
    emit_rerun_if_changed: bool,
    service_generator: Option<std::rc::Rc<std::cell::RefCell<Box<dyn ServiceGenerator>>>>,
    extern_paths: Vec<(String, String)>,
    type_attrs: Vec<(String, String)>,
    field_attrs: Vec<(String, String)>,
    include_file: Option<PathBuf>,
    views: bool,
    unknown_fields: bool,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("out_dir", &self.out_dir)
            .field("emit_rerun_if_changed", &self.emit_rerun_if_changed)
            .field("service_generator", &self.service_generator.is_some())
            .field("extern_paths", &self.extern_paths)
            .field("type_attrs", &self.type_attrs)
            .field("field_attrs", &self.field_attrs)
            .field("include_file", &self.include_file)
            .field("views", &self.views)
            .field("unknown_fields", &self.unknown_fields)
            .finish()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// Default options: output to `$OUT_DIR`, print
    /// `cargo:rerun-if-changed` lines.
    pub fn new() -> Config {
        Config {
            out_dir: None,
            emit_rerun_if_changed: true,
            service_generator: None,
            extern_paths: Vec::new(),
            type_attrs: Vec::new(),
            field_attrs: Vec::new(),
            include_file: None,
            views: false,
            unknown_fields: true,
        }
    }

    /// Whether each message keeps the fields its schema does not know
    /// (default on, as protobuf does): a `pub unknown_fields:
    /// granola::UnknownFields` field holds them after decode, and encode
    /// writes them back, so a message from a newer schema passes through
    /// this one without losing fields. Off, messages have no such field
    /// (build them with struct literals listing only the schema's fields)
    /// and a re-encode drops what the schema does not know, as prost does.
    pub fn unknown_fields(&mut self, keep: bool) -> &mut Self {
        self.unknown_fields = keep;
        self
    }

    /// Also generates, for each message `M`, a read-only view `MView<'a>`
    /// over received bytes (default off): `MView::new(bytes, &options)`
    /// checks the root header only; every accessor then reads its field
    /// straight from the bytes (O(1) per field, bounds-checked, nothing
    /// allocated or copied, strings checked on access).
    pub fn views(&mut self, yes: bool) -> &mut Self {
        self.views = yes;
        self
    }

    /// Uses an existing Rust type for the proto type or package
    /// `proto_path` (e.g. `.google.protobuf` -> `::my_wkt::google::protobuf`,
    /// or one message `.pkg.Msg` -> `crate::Msg`), as prost-build's
    /// `extern_path`: nothing is generated for those types, and references
    /// use `rust_path` (the types must be granola messages, `T<'a>`).
    pub fn extern_path(
        &mut self,
        proto_path: impl Into<String>,
        rust_path: impl Into<String>,
    ) -> &mut Self {
        self.extern_paths
            .push((proto_path.into(), rust_path.into()));
        self
    }

    /// Adds `attribute` (e.g. `#[must_use]`) to every generated message,
    /// enum and oneof enum whose fully-qualified name is `path` or lies under
    /// it (`.` matches everything), as prost-build's `type_attribute`.
    pub fn type_attribute(
        &mut self,
        path: impl Into<String>,
        attribute: impl Into<String>,
    ) -> &mut Self {
        self.type_attrs.push((path.into(), attribute.into()));
        self
    }

    /// Adds `attribute` to the struct field of each field (or oneof) whose
    /// path (`.pkg.Msg.field`) is `path` or lies under it.
    pub fn field_attribute(
        &mut self,
        path: impl Into<String>,
        attribute: impl Into<String>,
    ) -> &mut Self {
        self.field_attrs.push((path.into(), attribute.into()));
        self
    }

    /// Also writes `name` to the output directory: one file that includes
    /// every generated package in a module tree mirroring the packages, so
    /// a crate needs a single `include!` (prost-build's `include_file`).
    pub fn include_file(&mut self, name: impl Into<PathBuf>) -> &mut Self {
        self.include_file = Some(name.into());
        self
    }

    /// Problems with the options themselves (unparsable attributes or
    /// paths), reported like schema problems.
    fn check_options(&self) -> Vec<Diagnostic> {
        let mut diags = Vec::new();
        for (what, list) in [
            ("type_attribute", &self.type_attrs),
            ("field_attribute", &self.field_attrs),
        ] {
            for (path, attr) in list {
                let ok = syn::parse_str::<syn::File>(&format!("{attr} struct X;"))
                    .is_ok_and(|f| f.items.len() == 1);
                if !ok {
                    diags.push(Diagnostic::without_position(
                        None,
                        format!(
                            "{what}({path:?}, {attr:?}): the attribute does not parse as `#[...]`"
                        ),
                    ));
                }
            }
        }
        for (proto, rust) in &self.extern_paths {
            if !proto.starts_with('.') || syn::parse_str::<syn::Path>(rust).is_err() {
                diags.push(Diagnostic::without_position(
                    None,
                    format!("extern_path({proto:?}, {rust:?}): expected a proto path starting with `.` and a Rust path"),
                ));
            }
        }
        diags
    }

    /// Sets the generator that turns each `service` into code (an RPC
    /// layer); its output is appended to the package's file.
    pub fn service_generator(&mut self, generator: Box<dyn ServiceGenerator>) -> &mut Self {
        self.service_generator = Some(std::rc::Rc::new(std::cell::RefCell::new(generator)));
        self
    }

    /// Writes the generated files to `dir` instead of `$OUT_DIR`.
    pub fn out_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Whether [`compile_protos`](Self::compile_protos) prints
    /// `cargo:rerun-if-changed=<file>` for every schema file it read
    /// (default `true`; turn off outside build scripts).
    pub fn emit_rerun_if_changed(&mut self, yes: bool) -> &mut Self {
        self.emit_rerun_if_changed = yes;
        self
    }

    /// Compiles `protos` (and the files they import, looked up in
    /// `includes`) and writes one `<package>.rs` per proto package to the
    /// output directory. Files whose content is unchanged are not rewritten.
    pub fn compile_protos(
        &self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<(), Error> {
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => match std::env::var_os("OUT_DIR") {
                Some(d) => PathBuf::from(d),
                None => {
                    return Err(Error::new(vec![Diagnostic::without_position(
                        None,
                        "OUT_DIR is not set: call compile_protos from a build script, or set Config::out_dir",
                    )]))
                }
            },
        };
        let (files, sources) = self.run(protos, includes)?;
        if self.emit_rerun_if_changed {
            for s in &sources {
                println!("cargo:rerun-if-changed={}", s.display());
            }
        }
        std::fs::create_dir_all(&out_dir)
            .map_err(|e| Error::io(format!("creating {}", out_dir.display()), e))?;
        let mut files = files;
        if let Some(name) = &self.include_file {
            let in_out_dir = self.out_dir.is_none();
            files.push(GeneratedFile {
                name: name.display().to_string(),
                content: include_file(&files, in_out_dir),
            });
        }
        for f in files {
            let path = out_dir.join(&f.name);
            if std::fs::read_to_string(&path).ok().as_deref() == Some(f.content.as_str()) {
                continue;
            }
            std::fs::write(&path, &f.content)
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        }
        Ok(())
    }

    /// Compiles `protos` like [`compile_protos`](Self::compile_protos) but
    /// returns the generated files instead of writing them (sorted by
    /// name).
    pub fn generate(
        &self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<Vec<GeneratedFile>, Error> {
        self.run(protos, includes).map(|(files, _)| files)
    }

    /// Generated files plus the schema files read.
    fn run(
        &self,
        protos: &[impl AsRef<Path>],
        includes: &[impl AsRef<Path>],
    ) -> Result<(Vec<GeneratedFile>, Vec<PathBuf>), Error> {
        let mut includes: Vec<PathBuf> = includes.iter().map(|p| p.as_ref().to_owned()).collect();
        if includes.is_empty() {
            // Default: the directory of each schema.
            for p in protos {
                let dir = p.as_ref().parent().unwrap_or(Path::new("")).to_owned();
                let dir = if dir.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    dir
                };
                if !includes.contains(&dir) {
                    includes.push(dir);
                }
            }
        }
        let fallback = |name: &str| -> String {
            includes
                .iter()
                .map(|i| i.join(name))
                .find(|p| p.is_file())
                .map_or_else(|| name.to_owned(), |p| p.display().to_string())
        };

        let mut compiler =
            protox::Compiler::new(&includes).map_err(|e| error::from_protox(&e, &fallback))?;
        compiler.include_source_info(true).include_imports(true);
        let mut diags = Vec::new();
        for p in protos {
            if !p.as_ref().is_file() {
                diags.push(Diagnostic::without_position(
                    Some(p.as_ref().display().to_string()),
                    "no such file",
                ));
                continue;
            }
            if let Err(e) = compiler.open_file(p.as_ref()) {
                diags.extend(
                    error::from_protox(&e, &fallback)
                        .diagnostics()
                        .iter()
                        .cloned(),
                );
            }
        }
        if !diags.is_empty() {
            return Err(Error::new(diags));
        }

        let paths: HashMap<String, PathBuf> = compiler
            .files()
            .filter_map(|f| Some((f.name().to_owned(), f.path()?.to_owned())))
            .collect();
        let path_of = |name: &str| -> String {
            paths
                .get(name)
                .map_or_else(|| fallback(name), |p| p.display().to_string())
        };
        let requested: HashSet<String> = compiler
            .files()
            .filter(|f| !f.is_import())
            .map(|f| f.name().to_owned())
            .collect();
        let set = compiler.file_descriptor_set();
        let mut model = model::build(&set, &requested, &path_of).map_err(Error::new)?;
        let option_problems = self.check_options();
        if !option_problems.is_empty() {
            return Err(Error::new(option_problems));
        }
        model::apply_externs(&mut model, &self.extern_paths);
        model.type_attrs = self.type_attrs.clone();
        model.field_attrs = self.field_attrs.clone();
        model.views = self.views;
        model.unknown_fields = self.unknown_fields;
        let files = model
            .packages
            .iter()
            .map(|p| GeneratedFile {
                name: if p.name.is_empty() {
                    "_.rs".to_owned()
                } else {
                    format!("{}.rs", p.name)
                },
                content: {
                    let mut content = codegen::package(&model, p);
                    if let Some(g) = &self.service_generator {
                        let mut g = g.borrow_mut();
                        let before = content.len();
                        for svc in &p.services {
                            g.generate(codegen::service(&model, p, svc), &mut content);
                        }
                        if !p.services.is_empty() || content.len() != before {
                            g.finalize(&mut content);
                        }
                    }
                    content
                },
            })
            .collect();
        let mut sources: Vec<PathBuf> = paths.into_values().collect();
        sources.sort();
        Ok((files, sources))
    }
}

/// The `include_file`: package files nested in modules named after the
/// package components (snake case), children before the parent's items.
fn include_file(files: &[GeneratedFile], in_out_dir: bool) -> String {
    #[derive(Default)]
    struct Node {
        file: Option<String>,
        children: std::collections::BTreeMap<String, Node>,
    }
    let mut root = Node::default();
    for f in files {
        let pkg = f.name.trim_end_matches(".rs");
        let mut n = &mut root;
        if pkg != "_" {
            for part in pkg.split('.') {
                n = n
                    .children
                    .entry(model::ident_name(&model::snake(part)))
                    .or_default();
            }
        }
        n.file = Some(f.name.clone());
    }
    fn render(n: &Node, depth: usize, in_out_dir: bool, out: &mut String) {
        let pad = "    ".repeat(depth);
        for (name, child) in &n.children {
            let name = if model::is_keyword(name) {
                format!("r#{name}")
            } else {
                name.clone()
            };
            out.push_str(&format!(
                "{pad}pub mod {name} {{
"
            ));
            render(child, depth + 1, in_out_dir, out);
            out.push_str(&format!(
                "{pad}}}
"
            ));
        }
        if let Some(f) = &n.file {
            if in_out_dir {
                out.push_str(&format!(
                    "{pad}include!(concat!(env!(\"OUT_DIR\"), \"/{f}\"));\n"
                ));
            } else {
                out.push_str(&format!("{pad}include!(\"{f}\");\n"));
            }
        }
    }
    let mut out =
        String::from("// @generated by granola-build: every package, in modules. Do not edit.\n");
    render(&root, 0, in_out_dir, &mut out);
    out
}

/// Compiles `protos` (looking up imports in `includes`; if `includes` is
/// empty, in the directory of each proto) into `$OUT_DIR/<package>.rs`,
/// printing `cargo:rerun-if-changed` for every schema read. For use in
/// `build.rs`; see the [crate docs](crate) for the whole flow.
pub fn compile_protos(
    protos: &[impl AsRef<Path>],
    includes: &[impl AsRef<Path>],
) -> Result<(), Error> {
    Config::new().compile_protos(protos, includes)
}
