//! granola-net: Linux datapaths for granola.
//!
//! The second half of the Cornflakes design on ordinary Linux: a message is
//! serialized straight into a pool TX buffer (frame header, object header,
//! copied fields) while each zero-copy field becomes its own `iovec`, and one
//! gathering `sendmsg` hands the lot to the kernel — which copies once,
//! instead of the application copying into a buffer and the kernel copying
//! again. References are held until the kernel is done with the bytes.
//!
//! ```text
//!   frame    framing of native messages (length-prefixed, 12-byte header)
//!   datapath the Datapath trait (a gathering byte stream) and TCP
//!   mem      in-memory doubles: loopback pair, fault injector
//!   inflight the zero-copy in-flight table (one for every datapath)
//!   tx       TxQueue: serialize-and-send, flushes, the in-flight table
//!   rx       RxBuffer: pool receive buffer, frames as shared Bufs
//!   udp      UDP: one datagram per message, recvmmsg/sendmmsg batches
//!   backend  which event loop runs (epoll, io_uring, AF_XDP), probed at start
//!   server   epoll event loop: listeners, connections, sessions
//!   park     sessions waiting on other clients (Redis blocking commands)
//!   uring    io_uring event loop
//!   xdp      AF_XDP event loop for UDP services (pool as UMEM, own framing)
//!   timeouts write and idle timeouts, idle connections' buffers given back
//!   limits   connection limits: RLIMIT_NOFILE, accept back-off, refusals
//!   listen   claiming a port before the workers share it (no 2nd instance)
//!   calibrate  measure the copy-vs-gather threshold on this machine
//!   sys      the syscalls (private; with uring/ring.rs and xdp/sys.rs,
//!            the crate's only unsafe code)
//!   os       the safe OS helpers other crates use (epoll, prefetch)
//! ```
#![deny(unsafe_code)]

pub mod backend;
pub mod calibrate;
pub mod datapath;
pub mod frame;
pub mod gather;
pub mod inflight;
pub mod limits;
pub mod listen;
pub mod mem;
pub mod nap;
pub mod os;
pub mod park;
pub mod rx;
pub mod server;
#[allow(unsafe_code)]
mod sys;
pub mod timeouts;
pub mod tx;
pub mod udp;
#[allow(unsafe_code)]
mod uring;
pub mod xdp;

pub use backend::{DatapathKind, XdpConfig};
pub use datapath::{Datapath, TcpDatapath};
pub use frame::{FrameHeader, FLAG_RESPONSE, FRAME_HEADER_LEN};
pub use gather::{GatherStats, TxOutOfMemory, DEFAULT_CHUNK_SIZE};
pub use inflight::{InFlight, ZcCompletion};
pub use rx::{Frame, ReadStatus, RxBuffer, RxError};
pub use tx::{Flushed, Prefetch, SendError, TxConfig, TxQueue, TxStats};
