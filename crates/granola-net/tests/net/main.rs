//! granola-net's integration tests (one binary: one link).

mod common;
mod faults;
mod malformed;
mod memory_safety;
mod roundtrip;
mod server;
mod udp;
mod zc_double;
mod zerocopy;
