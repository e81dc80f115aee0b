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
use granola::{Context, Decode, Message, Pool};

/// The granola codec (client side).
pub struct GranolaCodec {
    ctx: Context,
}

impl std::fmt::Debug for GranolaCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GranolaCodec").finish_non_exhaustive()
    }
}

impl GranolaCodec {
    /// A codec (reserves one pool segment for its [`Context`]).
    pub fn new() -> std::io::Result<GranolaCodec> {
        let pool = Pool::with_capacity(granola::SEGMENT_SIZE)?;
        Ok(GranolaCodec {
            ctx: Context::new(&pool).with_copy_threshold(usize::MAX),
        })
    }
}

/// Appends `m`'s encoding to `out`.
fn append<M: Message>(m: &M, out: &mut Vec<u8>) {
    let sizes = m.encoded_sizes();
    let at = out.len();
    out.resize(at + sizes.total_len(), 0);
    m.encode(&sizes, &mut out[at..], |_| {
        unreachable!("copy threshold usize::MAX: no zero-copy entries")
    })
    .expect("encode into a buffer of encoded_sizes()");
}

fn decode_as<'a>(
    ctx: &'a Context,
    reply: Reply,
    payload: &'a [u8],
    f: &mut dyn FnMut(Response<&[u8]>),
) -> Result<(), granola::DecodeError> {
    match reply {
        Reply::Value => {
            let m = kv::GetResp::decode(ctx, payload)?;
            let status = m.get_status();
            f(Response::Value {
                status,
                value: (status == status::OK).then(|| m.get_value()),
            });
        }
        Reply::Values => {
            let m = kv::GetMResp::decode(ctx, payload)?;
            let found = m.get_found();
            let values = m
                .get_values()
                .iter()
                .enumerate()
                .map(|(i, v)| found.get(i).copied().unwrap_or(true).then(|| v.as_slice()))
                .collect();
            f(Response::Values {
                status: m.get_status(),
                values,
            });
        }
        Reply::List => {
            let m = kv::GetListResp::decode(ctx, payload)?;
            f(Response::List {
                status: m.get_status(),
                values: m.get_values().iter().map(|v| v.as_slice()).collect(),
            });
        }
        Reply::Ack => {
            let m = kv::Ack::decode(ctx, payload)?;
            f(Response::Ack {
                status: m.get_status(),
                count: m.get_count(),
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
        self.ctx.reset();
        let ctx = &self.ctx;
        match *req {
            Request::Get { key } => {
                let mut m = kv::GetReq::new(ctx);
                m.set_key(key);
                append(&m, out);
            }
            Request::Put { key, value } => {
                let mut m = kv::PutReq::new(ctx);
                m.set_key(key);
                m.set_value(value);
                append(&m, out);
            }
            Request::GetM { keys } => {
                let mut m = kv::GetMReq::new(ctx);
                m.init_keys(keys.len());
                for k in keys {
                    m.append_keys(k);
                }
                append(&m, out);
            }
            Request::PutM { keys, values } => {
                let mut m = kv::PutMReq::new(ctx);
                m.init_keys(keys.len());
                for k in keys {
                    m.append_keys(k);
                }
                m.init_values(values.len());
                for v in values {
                    m.append_values(v);
                }
                append(&m, out);
            }
            Request::GetList {
                key,
                start,
                end,
                all,
            } => {
                let mut m = kv::GetListReq::new(ctx);
                m.set_key(key);
                m.set_start(start);
                m.set_end(end);
                m.set_all(all);
                append(&m, out);
            }
            Request::PutList { key, values } => {
                let mut m = kv::PutListReq::new(ctx);
                m.set_key(key);
                m.init_values(values.len());
                for v in values {
                    m.append_values(v);
                }
                append(&m, out);
            }
            Request::AppendToList { key, value } => {
                let mut m = kv::AppendToListReq::new(ctx);
                m.set_key(key);
                m.set_value(value);
                append(&m, out);
            }
            Request::GetFromList { key, index } => {
                let mut m = kv::GetFromListReq::new(ctx);
                m.set_key(key);
                m.set_index(index);
                append(&m, out);
            }
            Request::Delete { key } => {
                let mut m = kv::DeleteReq::new(ctx);
                m.set_key(key);
                append(&m, out);
            }
        }
    }

    fn decode_response(
        &mut self,
        k: u16,
        payload: &[u8],
        f: &mut dyn FnMut(Response<&[u8]>),
    ) -> Result<(), DecodeError> {
        self.ctx.reset();
        let reply = Reply::of_kind(k);
        decode_as(&self.ctx, reply, payload, f).or_else(|e| {
            // Errors are answered with an Ack whatever the kind.
            if reply == Reply::Ack {
                return Err(DecodeError::new(Serializer::Granola, e));
            }
            decode_as(&self.ctx, Reply::Ack, payload, f)
                .map_err(|_| DecodeError::new(Serializer::Granola, e))
        })
    }
}
