//! The native protocol with other serializers (`--serializer`), so the
//! paper's library comparisons (Cornflakes §6.1.3) run inside one server,
//! over one datapath, against one store.
//!
//! Every serializer speaks the same frames as [`native`](super::native): a
//! [`granola_net::FrameHeader`] with the request's kind and id, answered by a
//! frame with the same kind and id and [`FLAG_RESPONSE`](granola_net::FLAG_RESPONSE); the same request
//! kinds ([`command::native::kind`](crate::command::native::kind)), the same semantics and the same status codes
//! ([`status`](crate::command::native::status)). Only the payload encoding differs:
//!
//! | `--serializer` | schema | requests decoded | replies built and sent |
//! |---|---|---|---|
//! | `granola` (default) | `proto/kv.proto` | in place | serialize-and-send: header + fields below the copy threshold written into the TX chunk, stored values at or above it as their own iovec (by reference) |
//! | `granola-copy` | same | same | threshold `usize::MAX`: every value copied into the TX chunk |
//! | `granola-ref` | same | same | threshold 0: every stored value by reference |
//! | `prost` | `proto/kv.proto` (prost-build) | `Message::decode`, copying every field into an owned message | owned message (values copied out of the store), encoded straight into the TX chunk (`TxQueue::reserve(12 + encoded_len)`) |
//! | `flatbuffers` | `schemas/kv.fbs` | `flatbuffers::root` (verified), borrowed in place | built in a reused `FlatBufferBuilder`, the finished bytes copied once into the TX chunk |
//! | `capnp` | `schemas/kv.capnp` | `read_message_from_flat_slice_no_alloc`, borrowed in place (copied to an 8-byte-aligned scratch first when the payload is not aligned) | built over capnp's `HeapAllocator` with the first segment sized from the reply; the segment table and then each segment copied into the TX chunk (see below) |
//!
//! The three `granola*` variants are [`native`](super::native) itself with a
//! different copy threshold ([`Shared::native_copy_threshold`]); the others
//! are `BaselineSession`s over a codec per library. The store operations
//! behind every request are in `command::native` (one place, shared
//! with `native`), so a comparison measures serialization and sending
//! only. prost runs in its default configuration (`bytes` fields are
//! `Vec<u8>`), as in granola-bench's microbenchmark.
//!
//! **Why capnp's segments are copied.** A TX queue may keep a reply past the
//! session call that built it (the socket can be full), so everything it
//! sends must be pool memory it holds a [`granola::Buf`] on, or a copy in its TX
//! chunk. capnp's builder segments are the builder's own (heap) memory,
//! freed when the builder drops, before the queue is flushed. Making them
//! pool memory would take an `unsafe impl capnp::message::Allocator` handing
//! out pool slots (zeroed, as the trait requires) and freezing them into
//! `Buf`s on `deallocate_segment` — a new `unsafe` room for a baseline — so
//! instead the segment table and then each segment are copied, piece by
//! piece, into the TX chunk (one copy, as `write_message` into a contiguous
//! buffer would make). With the first segment sized from the reply, a reply
//! is normally one segment.
//!
//! Over UDP the same encoders run; prost's frame is encoded into a fresh pool
//! buffer (`UdpTx` has no in-place reserve) that the datagram references
//! when it is at least the copy threshold long, flatbuffers' and capnp's
//! bytes are copied into the datagram. A reply that does not fit a datagram
//! becomes an `Ack` with [`status::TOO_LARGE`](crate::command::native::status::TOO_LARGE), as in `native`.
//!
//! # Cargo feature `baselines`
//!
//! prost, flatbuffers and capnp (their schemas' generated code, the server
//! codecs and `client`) are compiled only with granola-kv's `baselines`
//! feature, off by default, so a plain `cargo build -p granola-kv` links
//! only what it serves and `--serializer` offers the three `granola*`
//! variants. granola-bench enables the feature (its load generator uses
//! the client codecs; its paper experiments run the server with
//! `--serializer prost|flatbuffers|capnp`): build that server with
//! `cargo build --release -p granola-kv --features baselines`.
//!
//! # Client side
//!
//! `client` (with the feature) encodes requests and decodes responses for every serializer,
//! for load generators and tests:
//!
//! ```no_run
//! # #[cfg(feature = "baselines")] fn main() {
//! use granola_kv::server::baselines::{client, Request, Response, Serializer};
//! use std::io::{Read, Write};
//!
//! let mut codec = client::codec(Serializer::Flatbuffers).unwrap();
//! let mut wire = Vec::new();
//! client::encode_frame(&mut *codec, 7, &Request::Get { key: b"k" }, &mut wire);
//! let mut conn = std::net::TcpStream::connect("127.0.0.1:11311").unwrap();
//! conn.write_all(&wire).unwrap();
//! let mut header = [0u8; granola_net::FRAME_HEADER_LEN];
//! conn.read_exact(&mut header).unwrap();
//! let h = granola_net::FrameHeader::read(&header).unwrap();
//! let mut payload = vec![0u8; h.len as usize];
//! conn.read_exact(&mut payload).unwrap();
//! codec
//!     .decode_response(h.kind, &payload, &mut |r: Response<&[u8]>| {
//!         if let Response::Value { status: 0, value: Some(v) } = r {
//!             println!("{} bytes", v.len());
//!         }
//!     })
//!     .unwrap();
//! # }
//! # #[cfg(not(feature = "baselines"))] fn main() {}
//! ```

use super::native::{Native, NativeDatagrams};
use super::session::Driver;
use super::Shared;
#[cfg(feature = "baselines")]
use crate::command::native::kind;
#[cfg(feature = "baselines")]
use granola::Buf;
use granola_net::server::{DatagramHandler, Session};
#[cfg(feature = "baselines")]
use granola_net::tx::SendError;
#[cfg(feature = "baselines")]
use granola_net::FrameHeader;
use std::sync::Arc;

#[cfg(feature = "baselines")]
mod capnp_codec;
#[cfg(feature = "baselines")]
pub mod client;
#[cfg(feature = "baselines")]
mod flatbuffers_codec;
#[cfg(feature = "baselines")]
mod granola_codec;
#[cfg(feature = "baselines")]
mod out;
#[cfg(feature = "baselines")]
mod prost_codec;
#[cfg(feature = "baselines")]
mod session;

#[cfg(feature = "baselines")]
pub use capnp_codec::CapnpCodec;
#[cfg(feature = "baselines")]
pub use flatbuffers_codec::FlatbuffersCodec;
#[cfg(feature = "baselines")]
pub use granola_codec::GranolaCodec;
#[cfg(feature = "baselines")]
pub use prost_codec::ProstCodec;

/// flatc 25.12.19 output for `schemas/kv.fbs` (checked in; regenerate with
/// `bench/regen-baselines.sh`).
#[cfg(feature = "baselines")]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks,
    unused_imports,
    dead_code,
    missing_docs
)]
#[rustfmt::skip]
#[path = "gen/kv_generated.rs"]
mod kv_fbs;

/// capnpc-rust 0.27 output for `schemas/kv.capnp` (checked in; regenerate
/// with `bench/regen-baselines.sh`).
#[cfg(feature = "baselines")]
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks,
    unused_imports,
    dead_code,
    missing_docs
)]
#[rustfmt::skip]
#[path = "gen/kv_capnp.rs"]
mod kv_capnp;

/// prost-build output for `proto/kv.proto` (generated at build time).
#[cfg(feature = "baselines")]
#[allow(missing_docs, clippy::all, clippy::pedantic, rustdoc::all)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/prost/kv.rs"));
}

/// The payload encoding of the native protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Serializer {
    /// granola with the configured copy threshold (`--copy-threshold`).
    #[default]
    Granola,
    /// granola, every field copied (copy threshold `usize::MAX`).
    GranolaCopy,
    /// granola, every stored value referenced (copy threshold 0).
    GranolaRef,
    #[cfg(feature = "baselines")]
    /// prost 0.14 (protobuf, `proto/kv.proto`).
    Prost,
    #[cfg(feature = "baselines")]
    /// flatbuffers 25 (`schemas/kv.fbs`).
    Flatbuffers,
    #[cfg(feature = "baselines")]
    /// capnp 0.27 (`schemas/kv.capnp`).
    Capnp,
}

impl Serializer {
    /// Every serializer built in, in flag order.
    #[cfg(not(feature = "baselines"))]
    pub const ALL: [Serializer; 3] = [
        Serializer::Granola,
        Serializer::GranolaCopy,
        Serializer::GranolaRef,
    ];

    /// Every serializer built in, in flag order.
    #[cfg(feature = "baselines")]
    pub const ALL: [Serializer; 6] = [
        Serializer::Granola,
        Serializer::GranolaCopy,
        Serializer::GranolaRef,
        Serializer::Prost,
        Serializer::Flatbuffers,
        Serializer::Capnp,
    ];

    /// The flag value (`granola-copy`, `capnp`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Serializer::Granola => "granola",
            Serializer::GranolaCopy => "granola-copy",
            Serializer::GranolaRef => "granola-ref",
            #[cfg(feature = "baselines")]
            Serializer::Prost => "prost",
            #[cfg(feature = "baselines")]
            Serializer::Flatbuffers => "flatbuffers",
            #[cfg(feature = "baselines")]
            Serializer::Capnp => "capnp",
        }
    }

    /// True for the three granola variants (same wire format).
    pub fn is_granola(self) -> bool {
        matches!(
            self,
            Serializer::Granola | Serializer::GranolaCopy | Serializer::GranolaRef
        )
    }

    /// The copy threshold native replies are built with, given the
    /// configured one: `granola-copy` copies everything, `granola-ref`
    /// references everything it can; the others keep `configured`.
    pub fn copy_threshold(self, configured: usize) -> usize {
        match self {
            Serializer::GranolaCopy => usize::MAX,
            Serializer::GranolaRef => 0,
            _ => configured,
        }
    }
}

impl std::fmt::Display for Serializer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Serializer {
    type Err = String;

    fn from_str(s: &str) -> Result<Serializer, String> {
        Serializer::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = Serializer::ALL.iter().map(|x| x.name()).collect();
                let missing = if cfg!(feature = "baselines") {
                    ""
                } else {
                    "; prost, flatbuffers and capnp need granola-kv built with --features baselines"
                };
                format!("unknown serializer {s:?} ({}{missing})", known.join(", "))
            })
    }
}

impl Shared {
    /// The copy threshold of native replies: `--copy-threshold`, overridden
    /// by `--serializer granola-copy` (`usize::MAX`) and `granola-ref` (0).
    pub fn native_copy_threshold(&self) -> usize {
        self.config.serializer.copy_threshold(self.copy_threshold)
    }
}

pub use crate::command::native::{Request, Response};

/// Which response message answers a request kind.
#[cfg(feature = "baselines")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `GetResp`.
    Value,
    /// `GetMResp`.
    Values,
    /// `GetListResp`.
    List,
    /// `Ack`.
    Ack,
}

#[cfg(feature = "baselines")]
impl Reply {
    pub(crate) fn of_kind(k: u16) -> Reply {
        match k {
            kind::GET | kind::GET_FROM_LIST => Reply::Value,
            kind::GET_M => Reply::Values,
            kind::GET_LIST => Reply::List,
            _ => Reply::Ack,
        }
    }
}

/// The server side of a baseline codec: decode a request, encode and queue
/// its reply with the library's best send path.
#[cfg(feature = "baselines")]
pub(crate) trait ServerCodec: Send + 'static {
    /// For log lines.
    const NAME: &'static str;

    /// A codec with empty scratch space.
    fn server() -> Self;

    /// Decodes the payload of a `kind` request and hands it to `f`; `None`
    /// if it does not decode (or the kind is unknown).
    fn decode_request<R>(
        &mut self,
        kind: u16,
        payload: &[u8],
        f: impl FnOnce(Option<Request<'_>>) -> R,
    ) -> R;

    /// Encodes `resp` and queues it as one frame with `header` (whose `len`
    /// is filled in).
    fn send_response<O: out::FrameOut>(
        &mut self,
        header: FrameHeader,
        resp: &Response<Buf>,
        out: &mut O,
    ) -> Result<(), SendError>;
}

/// The TCP session for the configured serializer.
pub fn session(shared: Arc<Shared>) -> Box<dyn Session> {
    match shared.config.serializer {
        Serializer::Granola | Serializer::GranolaCopy | Serializer::GranolaRef => {
            Box::new(Driver::new(Native::new(shared)))
        }
        #[cfg(feature = "baselines")]
        Serializer::Prost => Box::new(Driver::new(session::BaselineSession::<ProstCodec>::new(
            shared,
        ))),
        #[cfg(feature = "baselines")]
        Serializer::Flatbuffers => Box::new(Driver::new(session::BaselineSession::<
            FlatbuffersCodec,
        >::new(shared))),
        #[cfg(feature = "baselines")]
        Serializer::Capnp => Box::new(Driver::new(session::BaselineSession::<CapnpCodec>::new(
            shared,
        ))),
    }
}

/// The UDP handler for the configured serializer.
pub fn datagram_handler(shared: Arc<Shared>) -> Box<dyn DatagramHandler> {
    match shared.config.serializer {
        Serializer::Granola | Serializer::GranolaCopy | Serializer::GranolaRef => {
            Box::new(NativeDatagrams::new(shared))
        }
        #[cfg(feature = "baselines")]
        Serializer::Prost => Box::new(session::BaselineDatagrams::<ProstCodec>::new(shared)),
        #[cfg(feature = "baselines")]
        Serializer::Flatbuffers => {
            Box::new(session::BaselineDatagrams::<FlatbuffersCodec>::new(shared))
        }
        #[cfg(feature = "baselines")]
        Serializer::Capnp => Box::new(session::BaselineDatagrams::<CapnpCodec>::new(shared)),
    }
}

/// The response header for request `req`.
#[cfg(feature = "baselines")]
pub(crate) fn reply_header(req: &FrameHeader) -> FrameHeader {
    FrameHeader {
        len: 0,
        kind: req.kind,
        flags: granola_net::FLAG_RESPONSE,
        id: req.id,
    }
}
