//! The native granola protocol: the Cornflakes KV message set in granola
//! frames (`proto/kv.proto`). Requests are decoded in place (fields borrow
//! the receive buffer); replies hold the store's `Buf`s and are
//! serialize-and-sent, so a stored value at or above the copy threshold
//! goes to the socket as a reference to the store's slot.

use crate::command::native::{self, Request, Response, Spare};
use crate::command::{Step, Storage};
use crate::proto as kv;
use crate::protocol::{ErrorKind, Parsed, ProtocolError, Recovery};
use crate::server::session::{Out, Protocol};
use crate::server::Shared;
use granola::{Buf, Decode, HybridBytes, Message};
use granola_net::park::Park;
use granola_net::server::{Close, DatagramHandler};
use granola_net::tx::SendError;
use granola_net::udp::{Datagram, UdpTx};
use granola_net::{FrameHeader, TxQueue, FLAG_RESPONSE, FRAME_HEADER_LEN};
use std::net::SocketAddr;
use std::sync::Arc;

pub use crate::command::native::{kind, status};

/// A native-protocol connection's protocol state.
pub struct Native {
    shared: Arc<Shared>,
    threshold: usize,
    spare: Spare,
    reply_vecs: ReplyVecs,
    fused: bool,
    max_frame: usize,
    /// Held back by `CLIENT PAUSE` until then.
    paused_until: Option<std::time::Instant>,
}

impl Native {
    /// A connection over the shared server state.
    pub fn new(shared: Arc<Shared>) -> Native {
        // `--serializer granola-copy / granola-ref` override the threshold.
        let threshold = shared.native_copy_threshold();
        let fused = !shared.config.no_fused;
        Native {
            shared,
            threshold,
            spare: Spare::default(),
            reply_vecs: ReplyVecs::default(),
            fused,
            max_frame: granola_net::TxConfig::default().max_frame,
            paused_until: None,
        }
    }
}

/// Splits one frame off the input: `(header, payload)`.
pub(crate) fn parse_frame(input: &[u8], max_frame: usize) -> Parsed<(FrameHeader, &[u8])> {
    let Some(h) = FrameHeader::read(input) else {
        return Parsed::Incomplete {
            need: Some(FRAME_HEADER_LEN),
        };
    };
    let len = h.len as usize;
    if len > max_frame {
        return Parsed::Invalid(ProtocolError::new(
            ErrorKind::FrameTooLarge,
            Recovery::Close,
        ));
    }
    let total = FRAME_HEADER_LEN + len;
    match input.get(FRAME_HEADER_LEN..total) {
        Some(payload) => Parsed::Done {
            cmd: (h, payload),
            consumed: total,
        },
        None => Parsed::Incomplete { need: Some(total) },
    }
}

impl Protocol for Native {
    type Cmd<'a> = (FrameHeader, &'a [u8]);
    const NAME: &'static str = "native";

    fn parse<'a>(&mut self, input: &'a [u8]) -> Parsed<(FrameHeader, &'a [u8])> {
        parse_frame(input, self.max_frame)
    }

    fn execute(
        &mut self,
        &(h, payload): &(FrameHeader, &[u8]),
        _: usize,
        out: &mut Out<'_>,
    ) -> Step {
        // A RESP client's `CLIENT PAUSE` holds native clients back too.
        self.paused_until = self.shared.clients.hold_back(|| writes(&h), out.waker);
        if self.paused_until.is_some() {
            return Step::Block;
        }
        let mut o = TcpOut {
            tx: &mut *out.tx,
            fused: self.fused,
            threshold: self.threshold,
        };
        let r = handle(
            &self.shared,
            &mut self.spare,
            &mut self.reply_vecs,
            &h,
            payload,
            &mut o,
            false,
        );
        match r {
            Ok(()) => Step::Done,
            Err(c) => Step::Close(Box::new(c.reason)),
        }
    }

    fn park(&self) -> Option<Park> {
        self.paused_until.map(|until| Park {
            deadline: Some(until),
        })
    }

    fn write_too_large(&self, _out: &mut Out<'_>) {}
}

/// True for the requests that change the keyspace (what `CLIENT PAUSE
/// WRITE` holds back).
fn writes(h: &FrameHeader) -> bool {
    matches!(
        h.kind,
        kind::PUT | kind::PUT_M | kind::PUT_LIST | kind::APPEND_TO_LIST | kind::DELETE
    )
}

/// Where native replies go: a TCP connection's TX queue, or a UDP reply
/// datagram to the request's sender.
pub trait NativeOut {
    /// Serialize-and-send of one reply frame.
    fn send<M: Message>(&mut self, header: FrameHeader, msg: &M) -> Result<(), Close>;
}

/// A TCP connection's replies: serialize-and-send, or with `--no-fused`
/// the non-fused path (`to_sga`, then `send_sga`).
struct TcpOut<'a> {
    tx: &'a mut TxQueue,
    fused: bool,
    threshold: usize,
}

impl NativeOut for TcpOut<'_> {
    fn send<M: Message>(&mut self, header: FrameHeader, msg: &M) -> Result<(), Close> {
        if self.fused {
            return self
                .tx
                .send_object_with(header, msg, self.threshold)
                .map_err(|e| Close::new(format!("native: reply: {e}")));
        }
        let sga = msg
            .to_sga_with(self.threshold)
            .map_err(|e| Close::new(format!("native: reply: {e}")))?;
        self.tx
            .send_sga(header, &sga)
            .map_err(|e| Close::new(format!("native: reply: {e}")))
    }
}

struct UdpOut<'a> {
    tx: &'a mut UdpTx,
    to: SocketAddr,
    threshold: usize,
}

impl NativeOut for UdpOut<'_> {
    fn send<M: Message>(&mut self, header: FrameHeader, msg: &M) -> Result<(), Close> {
        match self
            .tx
            .send_object_with(self.to, header, msg, self.threshold)
        {
            Ok(()) => Ok(()),
            Err(SendError::TooLarge { .. }) => {
                // The reply does not fit a datagram: say so instead.
                let a = kv::Ack {
                    status: status::TOO_LARGE,
                    count: 0,
                };
                self.tx
                    .send_object(self.to, header, &a)
                    .map_err(|e| Close::new(format!("native-udp: reply: {e}")))
            }
            Err(e) => Err(Close::new(format!("native-udp: reply: {e}"))),
        }
    }
}

fn reply<O: NativeOut, M: Message>(io: &mut O, req: &FrameHeader, msg: &M) -> Result<(), Close> {
    let header = FrameHeader {
        len: 0,
        kind: req.kind,
        flags: FLAG_RESPONSE,
        id: req.id,
    };
    io.send(header, msg)
}

fn ack<O: NativeOut>(io: &mut O, req: &FrameHeader, status: u32, count: u64) -> Result<(), Close> {
    reply(io, req, &kv::Ack { status, count })
}

/// The native protocol over UDP: one request per datagram (a whole frame),
/// one reply datagram. A reply too large for a datagram becomes a
/// TOO_LARGE status. Under `CLIENT PAUSE`, writes are dropped unanswered
/// (a datagram cannot wait).
pub struct NativeDatagrams {
    shared: Arc<Shared>,
    threshold: usize,
    spare: Spare,
    reply_vecs: ReplyVecs,
}

impl NativeDatagrams {
    /// A per-thread handler.
    pub fn new(shared: Arc<Shared>) -> NativeDatagrams {
        // `--serializer granola-copy / granola-ref` override the threshold.
        let threshold = shared.native_copy_threshold();
        NativeDatagrams {
            shared,
            threshold,
            spare: Spare::default(),
            reply_vecs: ReplyVecs::default(),
        }
    }
}

impl DatagramHandler for NativeDatagrams {
    fn on_datagram(&mut self, dgram: &Datagram, out: &mut UdpTx) {
        let data = &dgram.data;
        let Some(header) = FrameHeader::read(data) else {
            log::debug!("native-udp: runt datagram from {}", dgram.from);
            return;
        };
        if header.len as usize != data.len() - FRAME_HEADER_LEN {
            log::debug!("native-udp: length mismatch from {}", dgram.from);
            return;
        }
        if self.shared.clients.paused(|| writes(&header)).is_some() {
            // A datagram cannot wait: dropped, as if lost (clients retry
            // lost requests).
            log::debug!("native-udp: a write from {} dropped: paused", dgram.from);
            return;
        }
        let mut o = UdpOut {
            tx: out,
            to: dgram.from,
            threshold: self.threshold,
        };
        let payload = data.get(FRAME_HEADER_LEN..).unwrap_or_default();
        let (spare, vecs) = (&mut self.spare, &mut self.reply_vecs);
        if let Err(c) = handle(&self.shared, spare, vecs, &header, payload, &mut o, true) {
            log::warn!("{}: {}", dgram.from, c.reason);
        }
    }
}

/// Handles one request frame: decodes it into a [`Request`], runs
/// [`native::execute`], and encodes the [`Response`]. Undecodable requests
/// get BAD_REQUEST (the framing is intact, so the connection can
/// continue); unknown kinds too.
fn handle<O: NativeOut>(
    shared: &Shared,
    spare: &mut Spare,
    reply_vecs: &mut ReplyVecs,
    h: &FrameHeader,
    bytes: &[u8],
    io: &mut O,
    udp: bool,
) -> Result<(), Close> {
    let store: &dyn Storage = &*shared.store;
    let resp = decode(h.kind, bytes, |req| match req {
        Some(req) => native::execute(store, &req, &mut *spare, shared.config.max_item_size),
        None => native::bad_request(),
    });
    let resp = if udp {
        let amp = shared.config.udp_amplification;
        native::cap_amplification(resp, bytes.len() + FRAME_HEADER_LEN, amp)
    } else {
        resp
    };
    send_response(io, h, resp, spare, reply_vecs)
}

/// Decodes a request of `kind` and hands it to `f` (`None` if it does not
/// decode or the kind is unknown). List fields are collected into scratch
/// vectors the request borrows.
fn decode<R>(kind: u16, bytes: &[u8], f: impl FnOnce(Option<Request<'_>>) -> R) -> R {
    macro_rules! req {
        ($t:ty, |$r:ident| $body:expr) => {
            match <$t>::decode(bytes) {
                Ok($r) => f(Some($body)),
                Err(_) => f(None),
            }
        };
    }
    fn slices<'x>(list: &'x [granola::HybridBytes<'_>]) -> Vec<&'x [u8]> {
        list.iter().map(|k| &k[..]).collect()
    }
    match kind {
        kind::GET => req!(kv::GetReq, |r| Request::Get { key: &r.key }),
        kind::GET_FROM_LIST => req!(kv::GetFromListReq, |r| Request::GetFromList {
            key: &r.key,
            index: r.index,
        }),
        kind::PUT => req!(kv::PutReq, |r| Request::Put {
            key: &r.key,
            value: &r.value,
        }),
        kind::GET_M => req!(kv::GetMReq, |r| Request::GetM {
            keys: &slices(&r.keys)
        }),
        kind::PUT_M => req!(kv::PutMReq, |r| Request::PutM {
            keys: &slices(&r.keys),
            values: &slices(&r.values),
        }),
        kind::GET_LIST => req!(kv::GetListReq, |r| Request::GetList {
            key: &r.key,
            start: r.start,
            end: r.end,
            all: r.all,
        }),
        kind::PUT_LIST => req!(kv::PutListReq, |r| Request::PutList {
            key: &r.key,
            values: &slices(&r.values),
        }),
        kind::APPEND_TO_LIST => req!(kv::AppendToListReq, |r| Request::AppendToList {
            key: &r.key,
            value: &r.value,
        }),
        kind::DELETE => req!(kv::DeleteReq, |r| Request::Delete { key: &r.key }),
        _ => f(None),
    }
}

/// Encodes `resp` as the granola message for `h.kind` and sends it.
fn send_response<O: NativeOut>(
    io: &mut O,
    h: &FrameHeader,
    resp: Response<Buf>,
    spare: &mut Spare,
    reply_vecs: &mut ReplyVecs,
) -> Result<(), Close> {
    // The response's `Buf`s move into the reply (no reference-count
    // traffic) and every vector goes back to its spare when it is sent.
    match resp {
        Response::Value { status, value } => {
            let m = kv::GetResp {
                status,
                value: value.map(Into::into).unwrap_or_default(),
            };
            reply(io, h, &m)
        }
        Response::Values { status, mut values } => {
            let mut m = kv::GetMResp {
                status,
                values: std::mem::take(&mut reply_vecs.values),
                found: std::mem::take(&mut reply_vecs.found),
            };
            m.found.extend(values.iter().map(Option::is_some));
            m.values.extend(
                values
                    .drain(..)
                    .map(|v| v.map(Into::into).unwrap_or_default()),
            );
            let sent = reply(io, h, &m);
            reply_vecs.keep(m.values, m.found);
            spare.recycle(Response::Values { status, values });
            sent
        }
        Response::List { status, mut values } => {
            let mut m = kv::GetListResp {
                status,
                values: std::mem::take(&mut reply_vecs.values),
            };
            m.values.extend(values.drain(..).map(Into::into));
            let sent = reply(io, h, &m);
            reply_vecs.keep(m.values, Vec::new());
            spare.recycle(Response::List { status, values });
            sent
        }
        Response::Ack { status, count } => ack(io, h, status, count),
    }
}

/// The vectors of the last GetM / GetList reply message, reused as
/// [`Spare`] reuses the response's: once warm, a reply allocates nothing.
#[derive(Default)]
pub(crate) struct ReplyVecs {
    values: Vec<HybridBytes<'static>>,
    found: Vec<bool>,
}

impl ReplyVecs {
    /// Takes back a sent reply's vectors (dropping their values); an empty
    /// vector leaves the one kept before in place.
    fn keep(&mut self, mut values: Vec<HybridBytes<'static>>, mut found: Vec<bool>) {
        values.clear();
        found.clear();
        if values.capacity() > 0 {
            self.values = values;
        }
        if found.capacity() > 0 {
            self.found = found;
        }
    }
}
