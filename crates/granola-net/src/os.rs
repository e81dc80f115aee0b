//! The OS helpers other crates may use: safe wrappers with no way to hand
//! the kernel memory it could read after the call returns. (The syscall
//! module itself is private: its zero-copy sends are reachable only
//! through datapaths that park owned references in an
//! [`InFlight`](crate::InFlight) table.)

pub use crate::sys::{prefetch, Epoll, Event, Waker, MAX_BATCH};
