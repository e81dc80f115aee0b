//! Part 1: the paper's echo application on the Cornflakes Figure 2 shape,
//! a list of 2 × 2048 B (`shapes.ValueList` of `schemas/shapes.proto`,
//! with the generated types of the serialization benchmark for every
//! library).
//!
//! The server decodes each request, builds a **new** message from the
//! decoded fields and sends it back:
//!
//! | variant | reply path |
//! |---|---|
//! | `granola-fused` | decode (2 KiB values become `Buf` references into the receive buffer), new `ValueList` from them, `TxQueue::send_object`: headers into the TX chunk, each value its own iovec |
//! | `granola-sga` | same message, `to_sga()` then `TxQueue::send_sga` (the non-fused path: the head vector is copied into the TX chunk, entries referenced) |
//! | `granola-copy` | context threshold `usize::MAX`: decoded values borrow the receive buffer and `send_object` copies them into the TX chunk |
//! | `granola-two-copy` | as fused, but `to_vec()` then `TxQueue::send_bytes` (copy into a vector, then into the TX chunk) |
//! | `prost` | `ValueList::decode` (copies the values into `Vec`s), a new `ValueList` that takes those vectors, encoded **straight into the TX chunk** (`tx.reserve` + `encode` into the slice: no intermediate vector, prost's cheapest path) |
//! | `flatbuffers` | `flatbuffers::root` (verifies), a new message built in a reused `FlatBufferBuilder` (copies the values), `send_bytes(finished_data())` (copy into the TX chunk) |
//! | `capnp` | the payload copied into an 8-byte-aligned word buffer (capnp needs alignment; a frame payload starts at an arbitrary offset — capnp's own stream reader copies too), read with `read_message_from_flat_slice_no_alloc`, a new message built over a reused scratch segment (copies the values), segment table + segments copied into the TX chunk |
//!
//! Every library re-encodes a decoded `ValueList` to exactly the request's
//! bytes, so the client checks each reply payload byte for byte against the
//! request it sent. The client sends the same pre-encoded requests (64
//! distinct ones, random bytes) for every variant with `send_bytes`, so
//! client-side costs are equal.

use std::sync::Arc;

use capnp::message::{Builder, ReaderOptions, ScratchSpaceHeapAllocator};
use capnp::Word;
use flatbuffers::{FlatBufferBuilder, WIPOffset};
use granola::{Decode, Message, DEFAULT_COPY_THRESHOLD};
use granola_net::{Frame, TxQueue};

use super::harness::{reply_header, request_header, EchoClient, FrameHandler, HandlerFactory};
use super::reply::{ReplyTo, Request};
use crate::ser::granola_lib::gr;
use crate::ser::prost_lib::pb;
use crate::ser::shapes_capnp::value_list;
use crate::ser::shapes_fbs::shapes as fbs;
use crate::ser::Rng;

/// Values per message.
pub const VALUES: usize = 2;
/// Bytes per value.
pub const VALUE_LEN: usize = 2048;
/// Distinct requests the client cycles through.
const DISTINCT: usize = 64;

/// A part-1 variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fig2Variant {
    /// Serialize-and-send (`send_object`), default threshold.
    Fused,
    /// `to_sga` + `send_sga`.
    Sga,
    /// Threshold `usize::MAX`: everything copied by the encoder.
    OnlyCopy,
    /// `to_vec` + `send_bytes`.
    TwoCopy,
    /// prost 0.14.
    Prost,
    /// flatbuffers 25.
    Flatbuffers,
    /// capnp 0.27.
    Capnp,
}

impl Fig2Variant {
    /// All variants, in report order.
    pub const ALL: [Fig2Variant; 7] = [
        Fig2Variant::Fused,
        Fig2Variant::Sga,
        Fig2Variant::OnlyCopy,
        Fig2Variant::TwoCopy,
        Fig2Variant::Prost,
        Fig2Variant::Flatbuffers,
        Fig2Variant::Capnp,
    ];

    /// granola's variants.
    pub const GRANOLA: [Fig2Variant; 4] = [
        Fig2Variant::Fused,
        Fig2Variant::Sga,
        Fig2Variant::OnlyCopy,
        Fig2Variant::TwoCopy,
    ];

    /// Name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Fig2Variant::Fused => "granola-fused",
            Fig2Variant::Sga => "granola-sga",
            Fig2Variant::OnlyCopy => "granola-copy",
            Fig2Variant::TwoCopy => "granola-two-copy",
            Fig2Variant::Prost => "prost",
            Fig2Variant::Flatbuffers => "flatbuffers",
            Fig2Variant::Capnp => "capnp",
        }
    }

    /// Whether the reply's values are copied somewhere in user space (the
    /// variants the fused path has to beat).
    pub fn copies(self) -> bool {
        !matches!(self, Fig2Variant::Fused | Fig2Variant::Sga)
    }

    /// The server side of this variant over TCP (granola's reference
    /// large values of the received frame, a pool buffer, when they echo
    /// them).
    pub fn handler_factory(self) -> HandlerFactory {
        Arc::new(move || -> Box<dyn FrameHandler> { Box::new(OverTcp(self.echo_handler())) })
    }

    /// The server side of this variant, for any transport.
    pub fn echo_handler(self) -> Box<dyn EchoHandler> {
        match self {
            Fig2Variant::Fused => Box::new(GranolaEcho::new(GranolaMode::Fused)),
            Fig2Variant::Sga => Box::new(GranolaEcho::new(GranolaMode::Sga)),
            Fig2Variant::OnlyCopy => Box::new(GranolaEcho::new(GranolaMode::OnlyCopy)),
            Fig2Variant::TwoCopy => Box::new(GranolaEcho::new(GranolaMode::TwoCopy)),
            Fig2Variant::Prost => Box::new(ProstEcho),
            Fig2Variant::Flatbuffers => Box::new(FlatbuffersEcho::default()),
            Fig2Variant::Capnp => Box::new(CapnpEcho::default()),
        }
    }

    /// The `DISTINCT` request payloads the client cycles through: request
    /// `id` is `requests[id % DISTINCT]`, and so is its reply.
    pub fn requests(self, seed: u64) -> Vec<Vec<u8>> {
        let mut rng = Rng::new(seed);
        (0..DISTINCT)
            .map(|_| {
                let values: Vec<Vec<u8>> = (0..VALUES)
                    .map(|_| (0..VALUE_LEN).map(|_| rng.next_u64() as u8).collect())
                    .collect();
                encode_request(self, &values)
            })
            .collect()
    }

    /// The client side: [`requests`](Self::requests) drawn with `seed`.
    pub fn client(self, seed: u64) -> Box<dyn EchoClient> {
        Box::new(Fig2Client {
            requests: self.requests(seed),
        })
    }
}

/// The server half of a Figure 2 variant: decodes a request and queues
/// the reply, on any transport.
pub trait EchoHandler: Send {
    /// Decodes `req`, builds the reply and queues it on `out`.
    fn echo(&mut self, req: Request<'_>, out: &mut ReplyTo<'_>) -> Result<(), String>;
}

/// An [`EchoHandler`] serving a TCP connection.
struct OverTcp(Box<dyn EchoHandler>);

impl FrameHandler for OverTcp {
    fn handle(&mut self, frame: &Frame, tx: &mut TxQueue) -> Result<(), String> {
        let req = Request {
            id: frame.header.id,
            payload: &frame.payload,
        };
        self.0.echo(req, &mut ReplyTo::Tcp(tx))
    }
}

/// Bytes of a request (and reply) payload of `variant`.
pub fn wire_len(variant: Fig2Variant) -> usize {
    encode_request(variant, &vec![vec![0u8; VALUE_LEN]; VALUES]).len()
}

/// Encodes a request with `variant`'s library.
fn encode_request(variant: Fig2Variant, values: &[Vec<u8>]) -> Vec<u8> {
    match variant {
        Fig2Variant::Fused | Fig2Variant::Sga | Fig2Variant::OnlyCopy | Fig2Variant::TwoCopy => {
            let m = gr::ValueList {
                values: values.iter().map(Into::into).collect(),
                ..Default::default()
            };
            m.to_vec().unwrap()
        }
        Fig2Variant::Prost => prost::Message::encode_to_vec(&pb::ValueList {
            values: values.to_vec(),
        }),
        Fig2Variant::Flatbuffers => {
            let mut fbb = FlatBufferBuilder::new();
            let mut offsets = Vec::new();
            fb_build(&mut fbb, &mut offsets, values.iter().map(|v| &v[..]));
            fbb.finished_data().to_vec()
        }
        Fig2Variant::Capnp => {
            let mut scratch = Word::allocate_zeroed_vec(SCRATCH_WORDS);
            let mut b = Builder::new(ScratchSpaceHeapAllocator::new(Word::words_to_bytes_mut(
                &mut scratch,
            )));
            capnp_build(&mut b, values.iter().map(|v| &v[..]), values.len());
            capnp::serialize::write_message_to_words(&b)
        }
    }
}

/// Client of every part-1 variant: sends pre-encoded requests, expects
/// each reply to equal its request byte for byte.
struct Fig2Client {
    requests: Vec<Vec<u8>>,
}

impl EchoClient for Fig2Client {
    fn request(&mut self, id: u32, tx: &mut TxQueue) -> Result<(), String> {
        let req = &self.requests[id as usize % self.requests.len()];
        tx.send_bytes(request_header(id), req)
            .map_err(|e| e.to_string())
    }

    fn verify(&mut self, id: u32, payload: &[u8]) -> Result<(), String> {
        let want = &self.requests[id as usize % self.requests.len()];
        if payload == &want[..] {
            return Ok(());
        }
        let at = payload
            .iter()
            .zip(want.iter())
            .position(|(a, b)| a != b)
            .unwrap_or(payload.len().min(want.len()));
        Err(format!(
            "reply {id} differs from its request: {} vs {} bytes, first difference at byte {at}",
            payload.len(),
            want.len()
        ))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GranolaMode {
    Fused,
    Sga,
    OnlyCopy,
    TwoCopy,
}

/// granola's echo: decode, new message from the decoded fields, send.
struct GranolaEcho {
    threshold: usize,
    mode: GranolaMode,
}

impl GranolaEcho {
    fn new(mode: GranolaMode) -> GranolaEcho {
        let threshold = match mode {
            GranolaMode::OnlyCopy => usize::MAX,
            _ => DEFAULT_COPY_THRESHOLD,
        };
        GranolaEcho { threshold, mode }
    }
}

impl EchoHandler for GranolaEcho {
    fn echo(&mut self, req: Request<'_>, out: &mut ReplyTo<'_>) -> Result<(), String> {
        // A large value becomes a reference into the receive buffer.
        let msg = gr::ValueList::decode_shared(req.payload, self.threshold)
            .map_err(|e| format!("decode: {e}"))?;
        // The reply takes the decoded fields over (a move: no copy, no
        // reference-count traffic).
        let reply = gr::ValueList {
            values: msg.values,
            ..Default::default()
        };
        let hdr = reply_header(req.id);
        let t = self.threshold;
        match self.mode {
            GranolaMode::Fused | GranolaMode::OnlyCopy => out.object(hdr, &reply, t),
            GranolaMode::Sga => out.sga(hdr, &reply.to_sga_with(t).map_err(|e| e.to_string())?),
            GranolaMode::TwoCopy => out.bytes(hdr, &reply.to_vec().map_err(|e| e.to_string())?),
        }
    }
}

/// prost's echo.
struct ProstEcho;

impl EchoHandler for ProstEcho {
    fn echo(&mut self, req: Request<'_>, out: &mut ReplyTo<'_>) -> Result<(), String> {
        use prost::Message as _;
        let msg = pb::ValueList::decode(&req.payload[..]).map_err(|e| format!("decode: {e}"))?;
        let reply = pb::ValueList { values: msg.values };
        out.encode(reply_header(req.id), reply.encoded_len(), |mut body| {
            reply.encode(&mut body).map_err(|e| format!("encode: {e}"))
        })
    }
}

/// Builds a `ValueList` of `values` in `fbb` and finishes it.
fn fb_build<'v>(
    fbb: &mut FlatBufferBuilder<'static>,
    offsets: &mut Vec<WIPOffset<fbs::Bytes<'static>>>,
    values: impl Iterator<Item = &'v [u8]>,
) {
    fbb.reset();
    offsets.clear();
    for v in values {
        let data = fbb.create_vector(v);
        offsets.push(fbs::Bytes::create(
            fbb,
            &fbs::BytesArgs { data: Some(data) },
        ));
    }
    let values = fbb.create_vector(offsets);
    let m = fbs::ValueList::create(
        fbb,
        &fbs::ValueListArgs {
            values: Some(values),
        },
    );
    fbb.finish(m, None);
}

/// flatbuffers' echo.
struct FlatbuffersEcho {
    fbb: FlatBufferBuilder<'static>,
    offsets: Vec<WIPOffset<fbs::Bytes<'static>>>,
}

impl Default for FlatbuffersEcho {
    fn default() -> Self {
        FlatbuffersEcho {
            fbb: FlatBufferBuilder::with_capacity(16 << 10),
            offsets: Vec::new(),
        }
    }
}

impl EchoHandler for FlatbuffersEcho {
    fn echo(&mut self, req: Request<'_>, out: &mut ReplyTo<'_>) -> Result<(), String> {
        let msg =
            flatbuffers::root::<fbs::ValueList>(req.payload).map_err(|e| format!("verify: {e}"))?;
        let values = msg.values().ok_or("no values")?;
        fb_build(
            &mut self.fbb,
            &mut self.offsets,
            values
                .iter()
                .map(|b| b.data().map_or(&[][..], |d| d.bytes())),
        );
        out.bytes(reply_header(req.id), self.fbb.finished_data())
    }
}

/// Scratch segment of the capnp builders (enough for one message).
const SCRATCH_WORDS: usize = 2048;

fn capnp_build<'v, A: capnp::message::Allocator>(
    b: &mut Builder<A>,
    values: impl Iterator<Item = &'v [u8]>,
    n: usize,
) {
    let r = b.init_root::<value_list::Builder>();
    let mut l = r.init_values(n as u32);
    for (i, v) in values.enumerate() {
        l.set(i as u32, v);
    }
}

/// capnp's echo.
struct CapnpEcho {
    /// Aligned copy of the request.
    words: Vec<Word>,
    /// Reused first segment of the reply builder.
    scratch: Vec<Word>,
}

impl Default for CapnpEcho {
    fn default() -> Self {
        CapnpEcho {
            words: Vec::new(),
            scratch: Word::allocate_zeroed_vec(SCRATCH_WORDS),
        }
    }
}

impl EchoHandler for CapnpEcho {
    fn echo(&mut self, req: Request<'_>, out: &mut ReplyTo<'_>) -> Result<(), String> {
        let p = &req.payload[..];
        if p.len() % 8 != 0 {
            return Err(format!("capnp message of {} bytes", p.len()));
        }
        let n = p.len() / 8;
        if self.words.len() < n {
            self.words = Word::allocate_zeroed_vec(n.next_power_of_two());
        }
        Word::words_to_bytes_mut(&mut self.words[..n]).copy_from_slice(p);
        let mut slice = Word::words_to_bytes(&self.words[..n]);
        let msg = capnp::serialize::read_message_from_flat_slice_no_alloc(
            &mut slice,
            ReaderOptions::new(),
        )
        .map_err(|e| format!("decode: {e}"))?;
        let err = |e: capnp::Error| format!("decode: {e}");
        let root = msg.get_root::<value_list::Reader>().map_err(err)?;
        let values = root.get_values().map_err(err)?;
        let mut b = Builder::new(ScratchSpaceHeapAllocator::new(Word::words_to_bytes_mut(
            &mut self.scratch,
        )));
        let mut list = b
            .init_root::<value_list::Builder>()
            .init_values(values.len());
        for i in 0..values.len() {
            list.set(i, values.get(i).map_err(err)?);
        }
        let segments = b.get_segments_for_output();
        // Stream framing: u32 (segments - 1), u32 words per segment, padded
        // to a word; then the segments.
        let table = (4 * (segments.len() + 1)).next_multiple_of(8);
        let len = table + segments.iter().map(|s| s.len()).sum::<usize>();
        out.encode(reply_header(req.id), len, |out| {
            out[..table].fill(0);
            out[..4].copy_from_slice(&(segments.len() as u32 - 1).to_le_bytes());
            for (i, s) in segments.iter().enumerate() {
                let at = 4 + 4 * i;
                out[at..at + 4].copy_from_slice(&((s.len() / 8) as u32).to_le_bytes());
            }
            let mut at = table;
            for s in segments.iter() {
                out[at..at + s.len()].copy_from_slice(s);
                at += s.len();
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use granola::Pool;
    use granola_net::mem::MemPipe;
    use granola_net::udp::UdpTx;
    use granola_net::{Datapath, FrameHeader, TxConfig, FRAME_HEADER_LEN};

    /// Every variant's server, fed one request without sockets, replies
    /// with exactly the request's bytes (what the client checks).
    #[test]
    fn every_variant_echoes_the_request_bytes() {
        let pool = Pool::with_capacity(64 << 20).expect("pool");
        for v in Fig2Variant::ALL {
            let values = vec![vec![1u8; VALUE_LEN], vec![2u8; VALUE_LEN]];
            let req = encode_request(v, &values);
            assert_eq!(req.len(), wire_len(v), "{}", v.name());
            let frame = Frame {
                header: FrameHeader {
                    len: req.len() as u32,
                    ..request_header(9)
                },
                payload: pool.alloc_copy(&req).expect("pool"),
            };
            let mut handler = (v.handler_factory())();
            let mut tx = TxQueue::new(pool.clone(), TxConfig::default());
            handler.handle(&frame, &mut tx).expect("handle");
            let (mut a, mut b) = MemPipe::pair(1 << 20);
            tx.flush(&mut a).expect("flush");
            let mut out = vec![0u8; 1 << 16];
            let n = b.recv(&mut out).expect("reply bytes");
            let h = FrameHeader::read(&out[..n]).expect("header");
            assert!(h.is_response() && h.id == 9, "{}: {h:?}", v.name());
            assert_eq!(&out[FRAME_HEADER_LEN..n], &req[..], "{}", v.name());
        }
    }

    /// The same, over UDP: each variant's reply is one datagram (frame
    /// header, then exactly the request's bytes), sent on a real socket.
    #[test]
    fn every_variant_echoes_over_udp() {
        use std::net::UdpSocket;
        let pool = Pool::with_capacity(64 << 20).expect("pool");
        let server = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .expect("timeout");
        let to = client.local_addr().expect("addr");
        for v in Fig2Variant::ALL {
            let req = &v.requests(3)[0];
            let payload = pool.alloc_copy(req).expect("pool");
            let mut tx = UdpTx::new(pool.clone(), TxConfig::default(), 65_507);
            let request = Request {
                id: 7,
                payload: &payload,
            };
            v.echo_handler()
                .echo(request, &mut ReplyTo::Udp(&mut tx, to))
                .expect("echo");
            tx.flush(&server).expect("flush");
            let mut out = vec![0u8; 1 << 16];
            let n = client.recv(&mut out).expect("a reply datagram");
            let h = FrameHeader::read(&out[..n]).expect("header");
            assert!(h.is_response() && h.id == 7, "{}: {h:?}", v.name());
            assert_eq!(h.len as usize, req.len(), "{}", v.name());
            assert_eq!(&out[FRAME_HEADER_LEN..n], &req[..], "{}", v.name());
        }
    }

    #[test]
    fn client_rejects_a_changed_byte() {
        let mut c = Fig2Variant::Fused.client(1);
        let mut tx = TxQueue::new(
            Pool::with_capacity(16 << 20).expect("pool"),
            TxConfig::default(),
        );
        c.request(5, &mut tx).expect("request");
        let (mut a, mut b) = MemPipe::pair(1 << 20);
        tx.flush(&mut a).expect("flush");
        let mut out = vec![0u8; 1 << 16];
        let n = b.recv(&mut out).expect("request bytes");
        let mut payload = out[FRAME_HEADER_LEN..n].to_vec();
        c.verify(5, &payload).expect("unchanged");
        payload[100] ^= 0x80;
        assert!(c.verify(5, &payload).is_err());
    }
}
