//! prost 0.14 (`proto/kv.proto`, generated at build time).
//!
//! Default prost configuration, as in granola-bench's microbenchmark:
//! `bytes` fields are `Vec<u8>`, so decoding a request copies every field
//! into an owned message, and building a reply copies every value out of the
//! store into one. The reply is then encoded straight into the connection's
//! pool TX chunk: `TxQueue::reserve(12 + encoded_len)`, header, and
//! `Message::encode` into the reserved `&mut [u8]` (a `BufMut`) — no
//! intermediate buffer.

use super::client::{DecodeError, NativeCodec};
use super::out::FrameOut;
use super::{pb, Reply, Request, Response, Serializer, ServerCodec};
use crate::server::native::{kind, status};
use granola::Buf;
use granola_net::tx::SendError;
use granola_net::FrameHeader;
use prost::Message;

/// The prost codec (server and client side).
#[derive(Clone, Debug, Default)]
pub struct ProstCodec {
    _private: (),
}

fn slices(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

fn owned(v: &Option<Buf>) -> Vec<u8> {
    v.as_deref().map_or_else(Vec::new, <[u8]>::to_vec)
}

/// Encodes `m` in place into a reserved frame.
fn put<O: FrameOut, M: Message>(out: &mut O, header: FrameHeader, m: &M) -> Result<(), SendError> {
    let len = m.encoded_len();
    out.frame_in_place(header, len, &mut |mut buf: &mut [u8]| {
        m.encode(&mut buf)
            .expect("a buffer of encoded_len() bytes holds the message");
    })
}

impl ServerCodec for ProstCodec {
    const NAME: &'static str = "prost";

    fn server() -> ProstCodec {
        ProstCodec::default()
    }

    fn decode_request<R>(
        &mut self,
        k: u16,
        payload: &[u8],
        f: impl FnOnce(Option<Request<'_>>) -> R,
    ) -> R {
        match k {
            kind::GET => match pb::GetReq::decode(payload) {
                Ok(m) => f(Some(Request::Get { key: &m.key })),
                Err(_) => f(None),
            },
            kind::PUT => match pb::PutReq::decode(payload) {
                Ok(m) => f(Some(Request::Put {
                    key: &m.key,
                    value: &m.value,
                })),
                Err(_) => f(None),
            },
            kind::GET_M => match pb::GetMReq::decode(payload) {
                Ok(m) => f(Some(Request::GetM {
                    keys: &slices(&m.keys),
                })),
                Err(_) => f(None),
            },
            kind::PUT_M => match pb::PutMReq::decode(payload) {
                Ok(m) => f(Some(Request::PutM {
                    keys: &slices(&m.keys),
                    values: &slices(&m.values),
                })),
                Err(_) => f(None),
            },
            kind::GET_LIST => match pb::GetListReq::decode(payload) {
                Ok(m) => f(Some(Request::GetList {
                    key: &m.key,
                    start: m.start,
                    end: m.end,
                    all: m.all,
                })),
                Err(_) => f(None),
            },
            kind::PUT_LIST => match pb::PutListReq::decode(payload) {
                Ok(m) => f(Some(Request::PutList {
                    key: &m.key,
                    values: &slices(&m.values),
                })),
                Err(_) => f(None),
            },
            kind::APPEND_TO_LIST => match pb::AppendToListReq::decode(payload) {
                Ok(m) => f(Some(Request::AppendToList {
                    key: &m.key,
                    value: &m.value,
                })),
                Err(_) => f(None),
            },
            kind::GET_FROM_LIST => match pb::GetFromListReq::decode(payload) {
                Ok(m) => f(Some(Request::GetFromList {
                    key: &m.key,
                    index: m.index,
                })),
                Err(_) => f(None),
            },
            kind::DELETE => match pb::DeleteReq::decode(payload) {
                Ok(m) => f(Some(Request::Delete { key: &m.key })),
                Err(_) => f(None),
            },
            _ => f(None),
        }
    }

    fn send_response<O: FrameOut>(
        &mut self,
        header: FrameHeader,
        resp: &Response<Buf>,
        out: &mut O,
    ) -> Result<(), SendError> {
        match resp {
            Response::Value { status, value } => put(
                out,
                header,
                &pb::GetResp {
                    status: *status,
                    value: owned(value),
                },
            ),
            Response::Values { status, values } => put(
                out,
                header,
                &pb::GetMResp {
                    status: *status,
                    values: values.iter().map(owned).collect(),
                    found: values.iter().map(Option::is_some).collect(),
                },
            ),
            Response::List { status, values } => put(
                out,
                header,
                &pb::GetListResp {
                    status: *status,
                    values: values.iter().map(|v| v.to_vec()).collect(),
                },
            ),
            Response::Ack { status, count } => put(
                out,
                header,
                &pb::Ack {
                    status: *status,
                    count: *count,
                },
            ),
        }
    }
}

fn owned_list(v: &[&[u8]]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.to_vec()).collect()
}

fn append<M: Message>(m: &M, out: &mut Vec<u8>) {
    out.reserve(m.encoded_len());
    m.encode(out).expect("Vec<u8> grows");
}

impl NativeCodec for ProstCodec {
    fn serializer(&self) -> Serializer {
        Serializer::Prost
    }

    fn encode_request(&mut self, req: &Request<'_>, out: &mut Vec<u8>) {
        match *req {
            Request::Get { key } => append(&pb::GetReq { key: key.to_vec() }, out),
            Request::Put { key, value } => append(
                &pb::PutReq {
                    key: key.to_vec(),
                    value: value.to_vec(),
                },
                out,
            ),
            Request::GetM { keys } => append(
                &pb::GetMReq {
                    keys: owned_list(keys),
                },
                out,
            ),
            Request::PutM { keys, values } => append(
                &pb::PutMReq {
                    keys: owned_list(keys),
                    values: owned_list(values),
                },
                out,
            ),
            Request::GetList {
                key,
                start,
                end,
                all,
            } => append(
                &pb::GetListReq {
                    key: key.to_vec(),
                    start,
                    end,
                    all,
                },
                out,
            ),
            Request::PutList { key, values } => append(
                &pb::PutListReq {
                    key: key.to_vec(),
                    values: owned_list(values),
                },
                out,
            ),
            Request::AppendToList { key, value } => append(
                &pb::AppendToListReq {
                    key: key.to_vec(),
                    value: value.to_vec(),
                },
                out,
            ),
            Request::GetFromList { key, index } => append(
                &pb::GetFromListReq {
                    key: key.to_vec(),
                    index,
                },
                out,
            ),
            Request::Delete { key } => append(&pb::DeleteReq { key: key.to_vec() }, out),
        }
    }

    fn decode_response(
        &mut self,
        k: u16,
        payload: &[u8],
        f: &mut dyn FnMut(Response<&[u8]>),
    ) -> Result<(), DecodeError> {
        let err = |e| DecodeError::new(Serializer::Prost, e);
        match Reply::of_kind(k) {
            Reply::Value => {
                let m = pb::GetResp::decode(payload).map_err(err)?;
                f(Response::Value {
                    status: m.status,
                    value: (m.status == status::OK).then_some(&m.value[..]),
                });
            }
            Reply::Values => {
                let m = pb::GetMResp::decode(payload).map_err(err)?;
                let values = m
                    .values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| m.found.get(i).copied().unwrap_or(true).then_some(&v[..]))
                    .collect();
                f(Response::Values {
                    status: m.status,
                    values,
                });
            }
            Reply::List => {
                let m = pb::GetListResp::decode(payload).map_err(err)?;
                f(Response::List {
                    status: m.status,
                    values: slices(&m.values),
                });
            }
            Reply::Ack => {
                let m = pb::Ack::decode(payload).map_err(err)?;
                f(Response::Ack {
                    status: m.status,
                    count: m.count,
                });
            }
        }
        Ok(())
    }
}
