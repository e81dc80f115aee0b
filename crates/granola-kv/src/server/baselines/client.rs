//! The client side of every serializer: encode native requests, decode
//! native responses — for load generators (granola-bench) and tests.
//!
//! ```text
//!   let mut c = client::codec(Serializer::Capnp)?;        // Box<dyn NativeCodec>
//!   client::encode_frame(&mut *c, id, &Request::Get { key }, &mut wire);
//!   ... send `wire`, read one frame (FrameHeader + payload) ...
//!   c.decode_response(header.kind, payload, &mut |r| ...)?; // Response<&[u8]>
//!   c.decode_response_owned(header.kind, payload)?;          // Response<Vec<u8>>
//! ```
//!
//! A frame is a granola-net [`FrameHeader`] (`len`, `kind` =
//! [`Request::kind`], `flags` 0, `id`) and the payload; the response carries
//! the same kind and id with `FLAG_RESPONSE`. The response message is chosen
//! by the request kind: `GetResp` for Get and GetFromList
//! ([`Response::Value`]), `GetMResp` ([`Response::Values`]), `GetListResp`
//! ([`Response::List`]), `Ack` for the rest ([`Response::Ack`]). The three
//! `granola*` serializers share one wire format ([`GranolaCodec`]).
//!
//! Decoding hands the response to a callback because the libraries keep
//! decoded data in different places (prost in an owned message, capnp and
//! granola in a reader borrowing the payload and the codec); values borrow
//! the payload where the library allows it (flatbuffers, capnp when the
//! payload is 8-byte aligned, granola) and the decoded message otherwise.

use super::{
    CapnpCodec, FlatbuffersCodec, GranolaCodec, ProstCodec, Request, Response, Serializer,
};
use granola_net::{FrameHeader, FRAME_HEADER_LEN};

/// Encoder of requests and decoder of responses for one serializer.
pub trait NativeCodec: Send {
    /// The serializer this codec speaks (`Granola` for all three granola
    /// variants).
    fn serializer(&self) -> Serializer;

    /// Appends the payload of `req` (no frame header) to `out`.
    fn encode_request(&mut self, req: &Request<'_>, out: &mut Vec<u8>);

    /// Decodes `payload`, the response to a request of kind `kind`, and
    /// hands it to `f`.
    fn decode_response(
        &mut self,
        kind: u16,
        payload: &[u8],
        f: &mut dyn FnMut(Response<&[u8]>),
    ) -> Result<(), DecodeError>;

    /// [`decode_response`](Self::decode_response) into an owned response.
    fn decode_response_owned(
        &mut self,
        kind: u16,
        payload: &[u8],
    ) -> Result<Response<Vec<u8>>, DecodeError> {
        let mut got = None;
        self.decode_response(kind, payload, &mut |r| got = Some(r.map(<[u8]>::to_vec)))?;
        Ok(got.expect("decode_response calls f on success"))
    }
}

/// A response payload that did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The serializer that refused it.
    pub serializer: Serializer,
    /// The library's error.
    pub reason: String,
}

impl DecodeError {
    pub(crate) fn new(serializer: Serializer, reason: impl std::fmt::Display) -> DecodeError {
        DecodeError {
            serializer,
            reason: reason.to_string(),
        }
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} response does not decode: {}",
            self.serializer, self.reason
        )
    }
}

impl std::error::Error for DecodeError {}

/// A client codec for `serializer` (the granola one reserves a small pool
/// for its context, hence the `io::Result`).
pub fn codec(serializer: Serializer) -> std::io::Result<Box<dyn NativeCodec>> {
    Ok(match serializer {
        Serializer::Granola | Serializer::GranolaCopy | Serializer::GranolaRef => {
            Box::new(GranolaCodec::new()?)
        }
        Serializer::Prost => Box::new(ProstCodec::default()),
        Serializer::Flatbuffers => Box::new(FlatbuffersCodec::default()),
        Serializer::Capnp => Box::new(CapnpCodec::default()),
    })
}

/// Appends one request frame (header with `id`, then the payload) to `out`.
pub fn encode_frame(codec: &mut dyn NativeCodec, id: u32, req: &Request<'_>, out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + FRAME_HEADER_LEN, 0);
    codec.encode_request(req, out);
    let len = out.len() - at - FRAME_HEADER_LEN;
    FrameHeader {
        len: len as u32,
        kind: req.kind(),
        flags: 0,
        id,
    }
    .write(&mut out[at..at + FRAME_HEADER_LEN]);
}
