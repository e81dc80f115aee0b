//! Test-only crate: the code granola-build generates for the schemas in
//! `schemas/`, exercised end to end by the tests in `tests/`.
//!
//! `build.rs` compiles every `schemas/*.proto` into `$OUT_DIR/<package>.rs`;
//! the modules below mirror the proto packages (prost's convention), which
//! is what the generated cross-package `super::` paths rely on.
#![deny(unsafe_code)]
#![allow(missing_docs)]

/// Network namespaces and a veth pair for datapath tests.
pub mod netns;

/// Ports for servers started as child processes.
pub mod ports;

/// Generated from `schemas/sample.proto` (package `sample`).
pub mod sample {
    include!(concat!(env!("OUT_DIR"), "/sample.rs"));

    /// The smoke tests' message: every field set; `data` is `big` and the
    /// second `vals` entry its first 1 KiB (both pool references), the
    /// rest small copies.
    pub fn smoke(big: &granola::Buf) -> Sample<'static> {
        Sample {
            id: 7,
            name: "hello".into(),
            data: big.clone().into(),
            vals: vec![b"small".into(), big.slice(..1024).into()],
            keys: vec!["k1".into()],
            nums: vec![-3],
            inner: Some(Inner {
                a: 42,
                ..Default::default()
            }),
            items: vec![Inner {
                payload: b"p".into(),
                ..Default::default()
            }],
            flag: true,
            ratio: 0.5,
            ..Default::default()
        }
    }
}

/// Generated from `schemas/scalars.proto` (package `scalars`).
pub mod scalars {
    include!(concat!(env!("OUT_DIR"), "/scalars.rs"));
}

/// Generated from `schemas/recursive.proto` (package `recursive`).
pub mod recursive {
    include!(concat!(env!("OUT_DIR"), "/recursive.rs"));
}

/// Packages `geo.common` (`schemas/geo_common.proto`) and `geo.shapes`
/// (`schemas/nested.proto`, which imports the former).
pub mod geo {
    /// Package `geo.common`.
    pub mod common {
        include!(concat!(env!("OUT_DIR"), "/geo.common.rs"));
    }
    /// Package `geo.shapes`.
    pub mod shapes {
        include!(concat!(env!("OUT_DIR"), "/geo.shapes.rs"));
    }
}

/// Generated from `schemas/names.proto`, which has no package (`_.rs`):
/// keyword field names and messages named like std types.
pub mod names {
    include!(concat!(env!("OUT_DIR"), "/_.rs"));
}

/// Generated from `schemas/lang.proto` (package `lang`): enums, oneofs,
/// maps, deprecated items, a service and well-known types.
pub mod lang {
    include!(concat!(env!("OUT_DIR"), "/lang.rs"));
}

/// The well-known types, compiled from protox's bundled
/// `google/protobuf/*.proto` because `lang.proto` imports them.
pub mod google {
    /// Package `google.protobuf`.
    pub mod protobuf {
        include!(concat!(env!("OUT_DIR"), "/google.protobuf.rs"));
    }
}

/// Package `clash` beside package `clash.b`, whose module name a nested
/// message's module would take.
pub mod clash {
    /// Package `clash.b`.
    pub mod b {
        include!(concat!(env!("OUT_DIR"), "/clash.b.rs"));
    }
    include!(concat!(env!("OUT_DIR"), "/clash.rs"));
}

/// Two versions of one schema (`schemas/evo_v1.proto`, `evo_v2.proto`):
/// an enum value and a oneof member added.
pub mod evo {
    /// Package `evo.v1`.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/evo.v1.rs"));
    }
    /// Package `evo.v2`.
    pub mod v2 {
        include!(concat!(env!("OUT_DIR"), "/evo.v2.rs"));
    }
}

/// `lang.proto` compiled with `extern_path(".google.protobuf", ...)`,
/// type/field attributes and an include file (see `build.rs`): one
/// `include!` brings in every package.
pub mod ext {
    include!(concat!(env!("OUT_DIR"), "/ext/mod.rs"));
}

/// The realistic corpus (`schemas/corpus_*.proto`): APIs in the shape of
/// common public ones, with services, enums, maps, oneofs, nested messages
/// and well-known types.
pub mod corpus {
    /// Package `corpus.pubsub.v1`.
    pub mod pubsub {
        /// Version 1.
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/corpus.pubsub.v1.rs"));
        }
    }
    /// Package `corpus.store`.
    pub mod store {
        include!(concat!(env!("OUT_DIR"), "/corpus.store.rs"));
    }
}
