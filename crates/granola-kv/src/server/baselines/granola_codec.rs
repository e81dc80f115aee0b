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
pub struct GranolaCodec {
    /// Emptied list vectors of earlier requests, reused so that encoding a
    /// request allocates nothing once warm.
    spare: Vec<Vec<HybridBytes<'static>>>,
}

impl GranolaCodec {
    /// A codec.
    pub fn new() -> std::io::Result<GranolaCodec> {
        Ok(GranolaCodec::default())
    }

    /// `list` as a repeated bytes field, in a reused vector.
    fn list<'a>(&mut self, list: &[&'a [u8]]) -> Vec<HybridBytes<'a>> {
        let mut v: Vec<HybridBytes<'a>> = self.spare.pop().unwrap_or_default();
        v.extend(list.iter().map(|&b| HybridBytes::from(b)));
        v
    }

    /// Takes back a list vector of a sent request.
    fn give_back(&mut self, mut v: Vec<HybridBytes<'_>>) {
        v.clear();
        // Empty, so this keeps the allocation and only changes the
        // lifetime.
        self.spare
            .push(v.into_iter().map(|_| HybridBytes::default()).collect());
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
            Request::GetM { keys } => {
                let m = kv::GetMReq {
                    keys: self.list(keys),
                };
                append(&m, out);
                self.give_back(m.keys);
            }
            Request::PutM { keys, values } => {
                let m = kv::PutMReq {
                    keys: self.list(keys),
                    values: self.list(values),
                };
                append(&m, out);
                self.give_back(m.keys);
                self.give_back(m.values);
            }
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
            Request::PutList { key, values } => {
                let m = kv::PutListReq {
                    key: key.into(),
                    values: self.list(values),
                };
                append(&m, out);
                self.give_back(m.values);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A list vector given back keeps its allocation for the next request.
    #[test]
    fn list_vectors_are_reused() {
        let mut c = GranolaCodec::default();
        let keys: Vec<&[u8]> = vec![b"a", b"b", b"c"];
        let mut out = Vec::new();
        c.encode_request(&Request::GetM { keys: &keys }, &mut out);
        assert_eq!(c.spare.len(), 1);
        assert!(c.spare[0].is_empty() && c.spare[0].capacity() >= 3);
        let first = c.spare[0].as_ptr();
        c.encode_request(&Request::GetM { keys: &keys }, &mut out);
        assert_eq!(c.spare[0].as_ptr(), first, "the same allocation");
    }
}
