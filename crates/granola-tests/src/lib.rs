//! Test-only crate: the code granola-build generates for the schemas in
//! `schemas/`, exercised end to end by the tests in `tests/`.
#![deny(unsafe_code)]
#![allow(missing_docs)]

/// Hand-written reference of the generated code for `sample.proto`.
pub mod reference;
