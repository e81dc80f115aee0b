//! flatbuffers 25 (`schemas/kv.fbs`, generated code checked in:
//! `gen/kv_generated.rs`).
//!
//! Requests are verified (`flatbuffers::root`) and read in place. Replies are
//! built in a reused `FlatBufferBuilder` (values copied into it; a repeated
//! bytes field is a vector of `Bytes` wrapper tables, FlatBuffers having no
//! vector of vectors) and the finished buffer — one contiguous piece — is
//! copied once into the connection's TX chunk.

use super::client::{DecodeError, NativeCodec};
use super::kv_fbs::kv as fbs;
use super::out::FrameOut;
use super::{Reply, Request, Response, Serializer, ServerCodec};
use crate::server::native::{kind, status};
use flatbuffers::{root, FlatBufferBuilder, ForwardsUOffset, Vector, WIPOffset};
use granola::Buf;
use granola_net::tx::SendError;
use granola_net::FrameHeader;

/// A builder that grew past this is replaced after use, so one huge reply
/// does not pin its memory for the connection's lifetime.
const KEEP_BUILDER_BYTES: usize = 1 << 20;
const INITIAL_BUILDER_BYTES: usize = 16 << 10;

type BytesList<'a> = Vector<'a, ForwardsUOffset<fbs::Bytes<'a>>>;

/// The flatbuffers codec (server and client side).
pub struct FlatbuffersCodec {
    fbb: FlatBufferBuilder<'static>,
    offsets: Vec<WIPOffset<fbs::Bytes<'static>>>,
    found: Vec<bool>,
}

impl Default for FlatbuffersCodec {
    fn default() -> FlatbuffersCodec {
        FlatbuffersCodec {
            fbb: FlatBufferBuilder::with_capacity(INITIAL_BUILDER_BYTES),
            offsets: Vec::new(),
            found: Vec::new(),
        }
    }
}

impl std::fmt::Debug for FlatbuffersCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatbuffersCodec").finish_non_exhaustive()
    }
}

fn bytes(v: Option<Vector<'_, u8>>) -> &[u8] {
    v.map_or(&[][..], |d| d.bytes())
}

fn list<'a>(v: Option<BytesList<'a>>) -> Vec<&'a [u8]> {
    v.map(|l| l.iter().map(|b| bytes(b.data())).collect())
        .unwrap_or_default()
}

/// A vector of `Bytes` tables; `None` items have no `data` (GetM misses).
fn bytes_list<'a>(
    fbb: &mut FlatBufferBuilder<'static>,
    offsets: &mut Vec<WIPOffset<fbs::Bytes<'static>>>,
    items: impl Iterator<Item = Option<&'a [u8]>>,
) -> WIPOffset<BytesList<'static>> {
    offsets.clear();
    for item in items {
        let data = item.map(|d| fbb.create_vector(d));
        offsets.push(fbs::Bytes::create(fbb, &fbs::BytesArgs { data }));
    }
    fbb.create_vector(offsets)
}

impl FlatbuffersCodec {
    /// Builds `req` in the reused builder.
    fn build_request(&mut self, req: &Request<'_>) {
        let FlatbuffersCodec { fbb, offsets, .. } = self;
        fbb.reset();
        macro_rules! finish {
            ($t:ident, $args:expr) => {{
                let m = fbs::$t::create(fbb, &$args);
                fbb.finish(m, None);
            }};
        }
        match *req {
            Request::Get { key } => {
                let key = Some(fbb.create_vector(key));
                finish!(GetReq, fbs::GetReqArgs { key })
            }
            Request::Put { key, value } => {
                let key = Some(fbb.create_vector(key));
                let value = Some(fbb.create_vector(value));
                finish!(PutReq, fbs::PutReqArgs { key, value })
            }
            Request::GetM { keys } => {
                let keys = Some(bytes_list(fbb, offsets, keys.iter().map(|k| Some(*k))));
                finish!(GetMReq, fbs::GetMReqArgs { keys })
            }
            Request::PutM { keys, values } => {
                let keys = Some(bytes_list(fbb, offsets, keys.iter().map(|k| Some(*k))));
                let values = Some(bytes_list(fbb, offsets, values.iter().map(|v| Some(*v))));
                finish!(PutMReq, fbs::PutMReqArgs { keys, values })
            }
            Request::GetList {
                key,
                start,
                end,
                all,
            } => {
                let key = Some(fbb.create_vector(key));
                finish!(
                    GetListReq,
                    fbs::GetListReqArgs {
                        key,
                        start,
                        end,
                        all
                    }
                )
            }
            Request::PutList { key, values } => {
                let key = Some(fbb.create_vector(key));
                let values = Some(bytes_list(fbb, offsets, values.iter().map(|v| Some(*v))));
                finish!(PutListReq, fbs::PutListReqArgs { key, values })
            }
            Request::AppendToList { key, value } => {
                let key = Some(fbb.create_vector(key));
                let value = Some(fbb.create_vector(value));
                finish!(AppendToListReq, fbs::AppendToListReqArgs { key, value })
            }
            Request::GetFromList { key, index } => {
                let key = Some(fbb.create_vector(key));
                finish!(GetFromListReq, fbs::GetFromListReqArgs { key, index })
            }
            Request::Delete { key } => {
                let key = Some(fbb.create_vector(key));
                finish!(DeleteReq, fbs::DeleteReqArgs { key })
            }
        }
    }

    /// Builds `resp` in the reused builder.
    fn build_response(&mut self, resp: &Response<Buf>) {
        let FlatbuffersCodec {
            fbb,
            offsets,
            found,
        } = self;
        fbb.reset();
        match resp {
            Response::Value { status, value } => {
                let value = value.as_deref().map(|v| fbb.create_vector(v));
                let m = fbs::GetResp::create(
                    fbb,
                    &fbs::GetRespArgs {
                        status: *status,
                        value,
                    },
                );
                fbb.finish(m, None);
            }
            Response::Values { status, values } => {
                let vals = bytes_list(fbb, offsets, values.iter().map(|v| v.as_deref()));
                found.clear();
                found.extend(values.iter().map(Option::is_some));
                let found = fbb.create_vector(found);
                let m = fbs::GetMResp::create(
                    fbb,
                    &fbs::GetMRespArgs {
                        status: *status,
                        values: Some(vals),
                        found: Some(found),
                    },
                );
                fbb.finish(m, None);
            }
            Response::List { status, values } => {
                let vals = bytes_list(fbb, offsets, values.iter().map(|v| Some(&v[..])));
                let m = fbs::GetListResp::create(
                    fbb,
                    &fbs::GetListRespArgs {
                        status: *status,
                        values: Some(vals),
                    },
                );
                fbb.finish(m, None);
            }
            Response::Ack { status, count } => {
                let m = fbs::Ack::create(
                    fbb,
                    &fbs::AckArgs {
                        status: *status,
                        count: *count,
                    },
                );
                fbb.finish(m, None);
            }
        }
    }

    /// Drops a builder that grew too large.
    fn trim(&mut self) {
        if self.fbb.finished_data().len() > KEEP_BUILDER_BYTES {
            self.fbb = FlatBufferBuilder::with_capacity(INITIAL_BUILDER_BYTES);
        }
    }
}

impl ServerCodec for FlatbuffersCodec {
    const NAME: &'static str = "flatbuffers";

    fn server() -> FlatbuffersCodec {
        FlatbuffersCodec::default()
    }

    fn decode_request<R>(
        &mut self,
        k: u16,
        payload: &[u8],
        f: impl FnOnce(Option<Request<'_>>) -> R,
    ) -> R {
        match k {
            kind::GET => match root::<fbs::GetReq>(payload) {
                Ok(m) => f(Some(Request::Get {
                    key: bytes(m.key()),
                })),
                Err(_) => f(None),
            },
            kind::PUT => match root::<fbs::PutReq>(payload) {
                Ok(m) => f(Some(Request::Put {
                    key: bytes(m.key()),
                    value: bytes(m.value()),
                })),
                Err(_) => f(None),
            },
            kind::GET_M => match root::<fbs::GetMReq>(payload) {
                Ok(m) => f(Some(Request::GetM {
                    keys: &list(m.keys()),
                })),
                Err(_) => f(None),
            },
            kind::PUT_M => match root::<fbs::PutMReq>(payload) {
                Ok(m) => f(Some(Request::PutM {
                    keys: &list(m.keys()),
                    values: &list(m.values()),
                })),
                Err(_) => f(None),
            },
            kind::GET_LIST => match root::<fbs::GetListReq>(payload) {
                Ok(m) => f(Some(Request::GetList {
                    key: bytes(m.key()),
                    start: m.start(),
                    end: m.end(),
                    all: m.all(),
                })),
                Err(_) => f(None),
            },
            kind::PUT_LIST => match root::<fbs::PutListReq>(payload) {
                Ok(m) => f(Some(Request::PutList {
                    key: bytes(m.key()),
                    values: &list(m.values()),
                })),
                Err(_) => f(None),
            },
            kind::APPEND_TO_LIST => match root::<fbs::AppendToListReq>(payload) {
                Ok(m) => f(Some(Request::AppendToList {
                    key: bytes(m.key()),
                    value: bytes(m.value()),
                })),
                Err(_) => f(None),
            },
            kind::GET_FROM_LIST => match root::<fbs::GetFromListReq>(payload) {
                Ok(m) => f(Some(Request::GetFromList {
                    key: bytes(m.key()),
                    index: m.index(),
                })),
                Err(_) => f(None),
            },
            kind::DELETE => match root::<fbs::DeleteReq>(payload) {
                Ok(m) => f(Some(Request::Delete {
                    key: bytes(m.key()),
                })),
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
        self.build_response(resp);
        let sent = out.frame_copied(header, self.fbb.finished_data(), &[]);
        self.trim();
        sent
    }
}

impl NativeCodec for FlatbuffersCodec {
    fn serializer(&self) -> Serializer {
        Serializer::Flatbuffers
    }

    fn encode_request(&mut self, req: &Request<'_>, out: &mut Vec<u8>) {
        self.build_request(req);
        out.extend_from_slice(self.fbb.finished_data());
        self.trim();
    }

    fn decode_response(
        &mut self,
        k: u16,
        payload: &[u8],
        f: &mut dyn FnMut(Response<&[u8]>),
    ) -> Result<(), DecodeError> {
        let err = |e| DecodeError::new(Serializer::Flatbuffers, e);
        match Reply::of_kind(k) {
            Reply::Value => {
                let m = root::<fbs::GetResp>(payload).map_err(err)?;
                f(Response::Value {
                    status: m.status(),
                    value: (m.status() == status::OK).then(|| bytes(m.value())),
                });
            }
            Reply::Values => {
                let m = root::<fbs::GetMResp>(payload).map_err(err)?;
                let found = m.found();
                let values = m
                    .values()
                    .map(|l| {
                        l.iter()
                            .enumerate()
                            .map(|(i, b)| {
                                let hit = found.is_none_or(|fv| i >= fv.len() || fv.get(i));
                                hit.then(|| bytes(b.data()))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                f(Response::Values {
                    status: m.status(),
                    values,
                });
            }
            Reply::List => {
                let m = root::<fbs::GetListResp>(payload).map_err(err)?;
                f(Response::List {
                    status: m.status(),
                    values: list(m.values()),
                });
            }
            Reply::Ack => {
                let m = root::<fbs::Ack>(payload).map_err(err)?;
                f(Response::Ack {
                    status: m.status(),
                    count: m.count(),
                });
            }
        }
        Ok(())
    }
}
