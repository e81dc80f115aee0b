//! granola-bench: benchmarks for granola.
//!
//! The `ser` module is the serialization microbenchmark: granola's peers
//! (prost, flatbuffers, capnp, rkyv, bincode) and three floors (memcpy,
//! iovec-only, hand-written header format) serialize and decode the same
//! message instances, whose source bytes are cold. See [`ser`] for the
//! method and [`ser::SerLib`] for how to add a library.
#![deny(unsafe_code)]

pub mod ser;
