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

/// Hand-written reference of the generated code for `sample.proto`.
pub mod reference;

/// Generated from `schemas/sample.proto` (package `sample`).
pub mod sample {
    include!(concat!(env!("OUT_DIR"), "/sample.rs"));
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
