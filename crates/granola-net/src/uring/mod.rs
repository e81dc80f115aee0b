//! The io_uring datapath: a completion-based event loop behind the same
//! [`Service`](crate::server::Service) / [`Session`](crate::server::Session)
//! traits as the epoll one.
//!
//! ```text
//!   probe    can io_uring run here? (kernel version, io_uring_disabled,
//!            seccomp, opcodes) — the reason goes into the fallback log line
//!   ring     the ring, the provided-buffer ring of pool slots, requests
//!            (this module's only unsafe code)
//!   worker   the event loop (safe code)
//! ```

mod probe;
mod ring;
#[deny(unsafe_code)]
mod worker;

pub(crate) use probe::probe;
pub(crate) use worker::Worker;
