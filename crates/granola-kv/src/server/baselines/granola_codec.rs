//! The client side of the granola wire format (`proto/kv.proto` compiled by
//! granola-build), shared by `granola`, `granola-copy` and `granola-ref` —
//! their servers are `native` itself. Requests are encoded with a copy
//! threshold of `usize::MAX` (the client's values are not pool memory), so
//! the whole payload is written into the output; responses are decoded in
//! place.

use super::client::{DecodeError, NativeCodec};
use super::{Reply, Request, Response, Serializer};
use crate::proto as kv;
use crate::server::native::status;
use granola::{Decode, HybridBytes, Message};

/// The granola codec (client side).
#[derive(Debug, Default)]
pub struct GranolaCodec;

impl GranolaCodec {
    /// A codec.
    pub fn new() -> std::io::Result<GranolaCodec> {
        Ok(GranolaCodec)
    }
}

/// Appends `m`'s encoding to `out`.
fn append<M: Message>(m: &M, out: &mut Vec<u8>) {
    let sizes = m.encoded_sizes_with(usize::MAX);
    let at = out.len();
    out.resize(at + sizes.total_len(), 0);
    m.encode(&sizes, &mut out[at..], |_| {
        unreachable!("copy threshold usize::MAX: no zero-copy entries")
    })
    .expect("encode into a buffer of encoded_sizes()");
}

fn borrowed<'a>(list: &[&'a [u8]]) -> Vec<HybridBytes<'a>> {
    list.iter().map(|&b| b.into()).collect()
}

fn decode_as(
    reply: Reply,
    payload: &[u8],
    f: &mut dyn FnMut(Response<&[u8]>),
) -> Result<(), granola::DecodeError> {
    match reply {
        Reply::Value => {
            let m = kv::GetResp::decode(payload)?;
            f(Response::Value {
                status: m.status,
                value: (m.status == status::OK).then_some(&m.value[..]),
            });
        }
        Reply::Values => {
            let m = kv::GetMResp::decode(payload)?;
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
            let m = kv::GetListResp::decode(payload)?;
            f(Response::List {
                status: m.status,
                values: m.values.iter().map(|v| &v[..]).collect(),
            });
        }
        Reply::Ack => {
            let m = kv::Ack::decode(payload)?;
            f(Response::Ack {
                status: m.status,
                count: m.count,
            });
        }
    }
    Ok(())
}

impl NativeCodec for GranolaCodec {
    fn serializer(&self) -> Serializer {
        Serializer::Granola
    }

    fn encode_request(&mut self, req: &Request<'_>, out: &mut Vec<u8>) {
        match *req {
            Request::Get { key } => append(&kv::GetReq { key: key.into() }, out),
            Request::Put { key, value } => append(
                &kv::PutReq {
                    key: key.into(),
                    value: value.into(),
                },
                out,
            ),
            Request::GetM { keys } => append(
                &kv::GetMReq {
                    keys: borrowed(keys),
                },
                out,
            ),
            Request::PutM { keys, values } => append(
                &kv::PutMReq {
                    keys: borrowed(keys),
                    values: borrowed(values),
                },
                out,
            ),
            Request::GetList {
                key,
                start,
                end,
                all,
            } => append(
                &kv::GetListReq {
                    key: key.into(),
                    start,
                    end,
                    all,
                },
                out,
            ),
            Request::PutList { key, values } => append(
                &kv::PutListReq {
                    key: key.into(),
                    values: borrowed(values),
                },
                out,
            ),
            Request::AppendToList { key, value } => append(
                &kv::AppendToListReq {
                    key: key.into(),
                    value: value.into(),
                },
                out,
            ),
            Request::GetFromList { key, index } => append(
                &kv::GetFromListReq {
                    key: key.into(),
                    index,
                },
                out,
            ),
            Request::Delete { key } => append(&kv::DeleteReq { key: key.into() }, out),
        }
    }

    fn decode_response(
        &mut self,
        k: u16,
        payload: &[u8],
        f: &mut dyn FnMut(Response<&[u8]>),
    ) -> Result<(), DecodeError> {
        let reply = Reply::of_kind(k);
        decode_as(reply, payload, f).or_else(|e| {
            // Errors are answered with an Ack whatever the kind.
            if reply == Reply::Ack {
                return Err(DecodeError::new(Serializer::Granola, e));
            }
            decode_as(Reply::Ack, payload, f).map_err(|_| DecodeError::new(Serializer::Granola, e))
        })
    }
}
