//! granola-kv: a cache server whose replies reference stored values.
//!
//! One [`store`] (values in granola pool memory, lock-free reads, CLOCK
//! eviction) behind three protocols: native granola frames, memcached
//! (text + meta, UDP GET) and RESP2. Replies are gathered: protocol headers
//! are copied into a TX buffer, values above the copy threshold go to the
//! socket as references to the stored bytes.
#![deny(unsafe_code)]

pub mod command;
pub mod protocol;
pub mod server;
pub mod store;

/// Generated types of the native protocol (`proto/kv.proto`).
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/kv.rs"));
}
