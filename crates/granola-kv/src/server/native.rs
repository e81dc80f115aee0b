//! The native granola protocol: the Cornflakes KV message set in granola
//! frames (`proto/kv.proto`). Requests are decoded in place (large fields
//! would reference the receive buffer); replies are built with the hybrid
//! rule and serialize-and-sent, so a stored value above the copy threshold
//! goes to the socket as a reference to the store's slot.

use crate::proto as kv;
use crate::server::Shared;
use crate::store::{Meta, SetMode, StoreError};
use granola::{Context, Decode, Message};
use granola_net::server::{Close, ConnIo, DatagramHandler, Session};
use granola_net::tx::SendError;
use granola_net::udp::{Datagram, UdpTx};
use granola_net::{Frame, FrameHeader, FLAG_RESPONSE, FRAME_HEADER_LEN};
use std::net::SocketAddr;
use std::sync::Arc;

/// Request kinds (the frame header's `kind`).
pub mod kind {
    /// GetReq → GetResp
    pub const GET: u16 = 1;
    /// PutReq → Ack
    pub const PUT: u16 = 2;
    /// GetMReq → GetMResp
    pub const GET_M: u16 = 3;
    /// PutMReq → Ack
    pub const PUT_M: u16 = 4;
    /// GetListReq → GetListResp
    pub const GET_LIST: u16 = 5;
    /// PutListReq → Ack
    pub const PUT_LIST: u16 = 6;
    /// AppendToListReq → Ack
    pub const APPEND_TO_LIST: u16 = 7;
    /// GetFromListReq → GetResp
    pub const GET_FROM_LIST: u16 = 8;
    /// DeleteReq → Ack
    pub const DELETE: u16 = 9;
}

/// Response status codes (see kv.proto).
pub mod status {
    /// Success.
    pub const OK: u32 = 0;
    /// No such key (or list index).
    pub const NOT_FOUND: u32 = 1;
    /// The key holds the other kind of value.
    pub const WRONG_TYPE: u32 = 2;
    /// Key or value above the limits.
    pub const TOO_LARGE: u32 = 3;
    /// The store could not make room.
    pub const OUT_OF_MEMORY: u32 = 4;
    /// The request could not be decoded or is inconsistent.
    pub const BAD_REQUEST: u32 = 5;
    /// A conditional write did not apply.
    pub const NOT_STORED: u32 = 6;
}

/// The status code of a store error (also used by `baselines`).
pub(crate) fn status_of(e: StoreError) -> u32 {
    match e {
        StoreError::NotFound => status::NOT_FOUND,
        StoreError::WrongType => status::WRONG_TYPE,
        StoreError::TooLarge => status::TOO_LARGE,
        StoreError::OutOfMemory => status::OUT_OF_MEMORY,
        StoreError::NotNumeric => status::BAD_REQUEST,
        StoreError::NotStored | StoreError::Exists => status::NOT_STORED,
    }
}

/// A native-protocol connection.
pub struct NativeSession {
    shared: Arc<Shared>,
    ctx: Context,
    frames: Vec<Frame>,
}

impl NativeSession {
    /// A session over the shared server state.
    pub fn new(shared: Arc<Shared>) -> NativeSession {
        // `--serializer granola-copy / granola-ref` override the threshold.
        let ctx =
            Context::new(shared.store.pool()).with_copy_threshold(shared.native_copy_threshold());
        NativeSession {
            shared,
            ctx,
            frames: Vec::new(),
        }
    }
}

impl Session for NativeSession {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        let max = io.tx.config().max_frame;
        io.rx
            .take_frames(max, &mut self.frames)
            .map_err(|e| Close::new(format!("native: {e}")))?;
        let fused = !self.shared.config.no_fused;
        for frame in self.frames.drain(..) {
            let mut out = TcpOut {
                io: &mut *io,
                fused,
            };
            handle(&self.shared, &self.ctx, &frame, &mut out)?;
        }
        self.ctx.reset();
        Ok(())
    }
}

/// Where native replies go: a TCP connection's TX queue, or a UDP reply
/// datagram to the request's sender.
pub trait NativeOut {
    /// Serialize-and-send of one reply frame.
    fn send<M: Message>(&mut self, header: FrameHeader, msg: &M) -> Result<(), Close>;
}

impl NativeOut for ConnIo<'_> {
    fn send<M: Message>(&mut self, header: FrameHeader, msg: &M) -> Result<(), Close> {
        self.tx
            .send_object(header, msg)
            .map_err(|e| Close::new(format!("native: reply: {e}")))
    }
}

/// A TCP connection's replies: serialize-and-send, or with `--no-fused`
/// the non-fused path (`to_sga`, then `send_sga`).
struct TcpOut<'a, 'b> {
    io: &'a mut ConnIo<'b>,
    fused: bool,
}

impl NativeOut for TcpOut<'_, '_> {
    fn send<M: Message>(&mut self, header: FrameHeader, msg: &M) -> Result<(), Close> {
        if self.fused {
            return self.io.send(header, msg);
        }
        let sga = msg
            .to_sga()
            .map_err(|e| Close::new(format!("native: reply: {e}")))?;
        self.io
            .tx
            .send_sga(header, &sga)
            .map_err(|e| Close::new(format!("native: reply: {e}")))
    }
}

struct UdpOut<'a> {
    tx: &'a mut UdpTx,
    to: SocketAddr,
    ctx: &'a Context,
}

impl NativeOut for UdpOut<'_> {
    fn send<M: Message>(&mut self, header: FrameHeader, msg: &M) -> Result<(), Close> {
        match self.tx.send_object(self.to, header, msg) {
            Ok(()) => Ok(()),
            Err(SendError::TooLarge { .. }) => {
                // The reply does not fit a datagram: say so instead.
                let mut a = kv::Ack::new(self.ctx);
                a.set_status(status::TOO_LARGE);
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

fn ack<O: NativeOut>(
    ctx: &Context,
    io: &mut O,
    req: &FrameHeader,
    st: u32,
    count: u64,
) -> Result<(), Close> {
    let mut a = kv::Ack::new(ctx);
    a.set_status(st);
    a.set_count(count);
    reply(io, req, &a)
}

fn bad<O: NativeOut>(ctx: &Context, io: &mut O, req: &FrameHeader) -> Result<(), Close> {
    ack(ctx, io, req, status::BAD_REQUEST, 0)
}

/// The native protocol over UDP: one request per datagram (a whole frame),
/// one reply datagram. A reply too large for a datagram becomes a
/// TOO_LARGE status.
pub struct NativeDatagrams {
    shared: Arc<Shared>,
    ctx: Context,
}

impl NativeDatagrams {
    /// A per-thread handler.
    pub fn new(shared: Arc<Shared>) -> NativeDatagrams {
        // `--serializer granola-copy / granola-ref` override the threshold.
        let ctx =
            Context::new(shared.store.pool()).with_copy_threshold(shared.native_copy_threshold());
        NativeDatagrams { shared, ctx }
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
        let frame = Frame {
            header,
            payload: data.slice(FRAME_HEADER_LEN..),
        };
        let mut o = UdpOut {
            tx: out,
            to: dgram.from,
            ctx: &self.ctx,
        };
        if let Err(c) = handle(&self.shared, &self.ctx, &frame, &mut o) {
            log::warn!("{}: {}", dgram.from, c.reason);
        }
        self.ctx.reset();
    }
}

/// Handles one request frame. Undecodable requests get BAD_REQUEST (the
/// framing is intact, so the connection can continue); unknown kinds too.
fn handle<O: NativeOut>(
    shared: &Shared,
    ctx: &Context,
    frame: &Frame,
    io: &mut O,
) -> Result<(), Close> {
    let store = &shared.store;
    let h = &frame.header;
    let bytes: &[u8] = &frame.payload;
    match h.kind {
        kind::GET | kind::GET_FROM_LIST => {
            let mut resp = kv::GetResp::new(ctx);
            let found = if h.kind == kind::GET {
                let Ok(req) = kv::GetReq::decode(ctx, bytes) else {
                    return bad(ctx, io, h);
                };
                match store.get(req.get_key()) {
                    Some(item) if item.kind() == crate::store::Kind::String => Ok(item.value()),
                    Some(_) => Err(status::WRONG_TYPE),
                    None => Err(status::NOT_FOUND),
                }
            } else {
                let Ok(req) = kv::GetFromListReq::decode(ctx, bytes) else {
                    return bad(ctx, io, h);
                };
                match store.get(req.get_key()) {
                    Some(item) if item.kind() == crate::store::Kind::List => {
                        item.list_get(req.get_index()).ok_or(status::NOT_FOUND)
                    }
                    Some(_) => Err(status::WRONG_TYPE),
                    None => Err(status::NOT_FOUND),
                }
            };
            match found {
                Ok(value) => {
                    resp.set_status(status::OK);
                    resp.set_value_buf(value);
                }
                Err(st) => resp.set_status(st),
            }
            reply(io, h, &resp)
        }
        kind::PUT => {
            let Ok(req) = kv::PutReq::decode(ctx, bytes) else {
                return bad(ctx, io, h);
            };
            let st = match store.set(
                req.get_key(),
                req.get_value(),
                Meta::default(),
                SetMode::Set,
            ) {
                Ok(_) => status::OK,
                Err(e) => status_of(e),
            };
            ack(ctx, io, h, st, u64::from(st == status::OK))
        }
        kind::GET_M => {
            let Ok(req) = kv::GetMReq::decode(ctx, bytes) else {
                return bad(ctx, io, h);
            };
            let keys = req.get_keys();
            let mut resp = kv::GetMResp::new(ctx);
            resp.set_status(status::OK);
            resp.init_values(keys.len());
            resp.init_found(keys.len());
            for k in keys {
                match store.get(k) {
                    Some(item) if item.kind() == crate::store::Kind::String => {
                        resp.append_values_buf(item.value());
                        resp.append_found(true);
                    }
                    _ => {
                        resp.append_values(&[]);
                        resp.append_found(false);
                    }
                }
            }
            reply(io, h, &resp)
        }
        kind::PUT_M => {
            let Ok(req) = kv::PutMReq::decode(ctx, bytes) else {
                return bad(ctx, io, h);
            };
            let (keys, values) = (req.get_keys(), req.get_values());
            if keys.len() != values.len() {
                return bad(ctx, io, h);
            }
            let mut st = status::OK;
            let mut written = 0;
            for (k, v) in keys.iter().zip(values) {
                match store.set(k, v, Meta::default(), SetMode::Set) {
                    Ok(_) => written += 1,
                    Err(e) => st = status_of(e),
                }
            }
            ack(ctx, io, h, st, written)
        }
        kind::GET_LIST => {
            let Ok(req) = kv::GetListReq::decode(ctx, bytes) else {
                return bad(ctx, io, h);
            };
            let mut resp = kv::GetListResp::new(ctx);
            match store.get(req.get_key()) {
                Some(item) if item.kind() == crate::store::Kind::List => {
                    resp.set_status(status::OK);
                    let (start, end) = if req.get_all() {
                        (0, -1)
                    } else {
                        (req.get_start(), req.get_end())
                    };
                    resp.init_values(item.list_len().min(1024));
                    for v in item.list_range(start, end) {
                        resp.append_values_buf(v);
                    }
                }
                Some(_) => resp.set_status(status::WRONG_TYPE),
                None => resp.set_status(status::NOT_FOUND),
            }
            reply(io, h, &resp)
        }
        kind::PUT_LIST => {
            let Ok(req) = kv::PutListReq::decode(ctx, bytes) else {
                return bad(ctx, io, h);
            };
            let values: Vec<&[u8]> = req.get_values().iter().map(|v| &v[..]).collect();
            let st = match store.put_list(req.get_key(), &values, Meta::default()) {
                Ok(()) => status::OK,
                Err(e) => status_of(e),
            };
            ack(ctx, io, h, st, values.len() as u64)
        }
        kind::APPEND_TO_LIST => {
            let Ok(req) = kv::AppendToListReq::decode(ctx, bytes) else {
                return bad(ctx, io, h);
            };
            match store.list_push(req.get_key(), &[req.get_value()], false) {
                Ok(len) => ack(ctx, io, h, status::OK, len as u64),
                Err(e) => ack(ctx, io, h, status_of(e), 0),
            }
        }
        kind::DELETE => {
            let Ok(req) = kv::DeleteReq::decode(ctx, bytes) else {
                return bad(ctx, io, h);
            };
            let deleted = store.delete(req.get_key());
            ack(
                ctx,
                io,
                h,
                if deleted {
                    status::OK
                } else {
                    status::NOT_FOUND
                },
                u64::from(deleted),
            )
        }
        _ => bad(ctx, io, h),
    }
}
