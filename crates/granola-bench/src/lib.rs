//! granola-bench: benchmarks for granola.
//!
//! The `ser` module is the serialization microbenchmark: granola's peers
//! (prost, flatbuffers, capnp, rkyv, bincode) and three floors (memcpy,
//! iovec-only, hand-written header format) serialize and decode the same
//! message instances, whose source bytes are cold. See [`ser`] for the
//! method and [`ser::SerLib`] for how to add a library.
//!
//! The [`load`] module is the load generator (open-loop Poisson and
//! closed-loop, memcached text / RESP2 / native granola over TCP and UDP,
//! every response checked) and [`workload`] holds the paper's workloads
//! (YCSB-C, Google protobuf sizes, Twitter traces, CDN objects, Facebook
//! memcached pools, echo shapes). See `docs/load-generator.md`.
//!
//! The [`paper`] module runs the papers' experiments on top of both
//! (`granola-bench paper <name>|all`): JSON, Markdown tables and figures.
#![deny(unsafe_code)]

pub mod echo;
pub mod fanout;
pub mod load;
pub mod paper;
pub mod pingpong;
pub mod ser;
pub mod workload;
