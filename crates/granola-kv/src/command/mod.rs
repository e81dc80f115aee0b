//! Commands: what each request does, one file per command or command
//! family, each an `execute` against the [`Storage`] trait.
//!
//! ```text
//!   protocol/   parsers and reply composers (bytes only: no store)
//!   command/    one file per command family, run against Storage
//!     resp/       the Redis commands; `table.rs` lists them (name, arity,
//!                 flags, key positions, function): adding a command is one
//!                 file (or function) and one table entry
//!     memcache/   the memcached commands (text, meta)
//!     native.rs   the native protocol's requests, for every serializer
//!   server/     sockets: the one session driver, per-protocol glue
//! ```
//!
//! A command that writes many replies checks [`ReplySink::full`] between
//! them and returns [`Step::Pause`] with how far it got; it is called again
//! with that position once the connection's reply queue has drained (see
//! `server::session`).
//!
//! [`ReplySink::full`]: crate::protocol::ReplySink::full

pub mod databases;
pub mod memcache;
pub mod native;
pub(crate) mod process;
pub mod resp;
mod storage;

pub use storage::{Storage, StringEdit};

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Finished: consume the request, go on.
    Done,
    /// The connection's reply queue is full: call again with this position
    /// (the command's own meaning: a key index, an element index...) once
    /// it drains. The request stays unconsumed meanwhile.
    Pause(usize),
    /// Finished; close the connection after flushing (QUIT). The reason
    /// is boxed so that a `Step` is two words, which a call returns in
    /// registers: every command returns one, and a larger one came back
    /// through the stack, where reading it whole after the command's
    /// narrower writes stalled store-to-load forwarding.
    Close(Box<String>),
    /// Waits for another client (a Redis blocking command found nothing
    /// and its timeout has not passed): nothing was written, the request
    /// stays unconsumed, and the session parks until the protocol's
    /// doorbell rings or its deadline passes, then runs it again.
    Block,
}
