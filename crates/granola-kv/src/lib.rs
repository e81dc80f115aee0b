//! granola-kv: a cache server whose replies reference stored values.
//!
//! One [`store`] (values in granola pool memory, lock-free reads, CLOCK
//! eviction) behind three protocols: native granola frames, memcached
//! (text + meta, TCP and UDP) and Redis (RESP2/RESP3). [`protocol`] parses
//! requests and composes replies, [`command`] runs them (one file per
//! command family), [`server`] drives the connections; [`stripe`] keeps
//! their per-thread counters. Replies are
//! gathered: protocol headers are copied into a TX buffer, values above
//! the copy threshold go to the socket as references to the stored bytes.
#![deny(unsafe_code)]

pub mod command;
pub mod protocol;
pub mod server;
pub mod store;
pub mod stripe;

/// Generated types of the native protocol (`proto/kv.proto`).
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/kv.rs"));
}
