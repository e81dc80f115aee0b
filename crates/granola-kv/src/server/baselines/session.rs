//! TCP sessions and UDP handlers of the baseline serializers: frames in,
//! [`ServerCodec::decode_request`], [`native::execute`], and
//! [`ServerCodec::send_response`] into the connection's TX queue (or a reply
//! datagram). The same shape as `native::NativeSession`.

use super::out::{TcpOut, UdpOut};
use super::{reply_header, Response, ServerCodec};
use crate::command::native::status;
use crate::command::native::{self, bad_request, Spare};
use crate::command::Storage;
use crate::server::Shared;
use granola::Buf;
use granola_net::server::{Close, ConnIo, DatagramHandler, Session};
use granola_net::tx::SendError;
use granola_net::udp::{Datagram, UdpTx};
use granola_net::{Frame, FrameHeader, FRAME_HEADER_LEN};
use std::sync::Arc;

/// Decodes and runs one request; undecodable or unknown ones get
/// BAD_REQUEST (the framing is intact, so the connection continues).
fn respond<C: ServerCodec>(
    store: &dyn Storage,
    codec: &mut C,
    header: &FrameHeader,
    payload: &[u8],
    spare: &mut Spare,
) -> Response<Buf> {
    codec.decode_request(header.kind, payload, |req| match req {
        Some(req) => native::execute(store, &req, spare),
        None => bad_request(),
    })
}

/// A native-protocol connection speaking codec `C`.
pub(super) struct BaselineSession<C> {
    shared: Arc<Shared>,
    codec: C,
    frames: Vec<Frame>,
    spare: Spare,
}

impl<C: ServerCodec> BaselineSession<C> {
    pub(super) fn new(shared: Arc<Shared>) -> BaselineSession<C> {
        BaselineSession {
            shared,
            codec: C::server(),
            frames: Vec::new(),
            spare: Spare::default(),
        }
    }
}

impl<C: ServerCodec> Session for BaselineSession<C> {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        let max = io.tx.config().max_frame;
        io.rx
            .take_frames(max, &mut self.frames)
            .map_err(|e| Close::new(format!("native-{}: {e}", C::NAME)))?;
        let store: &dyn Storage = &*self.shared.store;
        for frame in self.frames.drain(..) {
            let resp = respond(
                store,
                &mut self.codec,
                &frame.header,
                &frame.payload,
                &mut self.spare,
            );
            let sent =
                self.codec
                    .send_response(reply_header(&frame.header), &resp, &mut TcpOut(io.tx));
            self.spare.recycle(resp);
            sent.map_err(|e| Close::new(format!("native-{}: reply: {e}", C::NAME)))?;
        }
        Ok(())
    }
}

/// The native protocol over UDP with codec `C`: one request per datagram,
/// one reply datagram; a reply too large for a datagram becomes TOO_LARGE.
pub(super) struct BaselineDatagrams<C> {
    shared: Arc<Shared>,
    codec: C,
    spare: Spare,
}

impl<C: ServerCodec> BaselineDatagrams<C> {
    pub(super) fn new(shared: Arc<Shared>) -> BaselineDatagrams<C> {
        BaselineDatagrams {
            shared,
            codec: C::server(),
            spare: Spare::default(),
        }
    }
}

impl<C: ServerCodec> DatagramHandler for BaselineDatagrams<C> {
    fn on_datagram(&mut self, dgram: &Datagram, out: &mut UdpTx) {
        let data: &[u8] = &dgram.data;
        let Some(header) = FrameHeader::read(data) else {
            log::debug!("native-udp: runt datagram from {}", dgram.from);
            return;
        };
        if header.len as usize != data.len() - FRAME_HEADER_LEN {
            log::debug!("native-udp: length mismatch from {}", dgram.from);
            return;
        }
        let store: &dyn Storage = &*self.shared.store;
        let resp = respond(
            store,
            &mut self.codec,
            &header,
            &data[FRAME_HEADER_LEN..],
            &mut self.spare,
        );
        let mut o = UdpOut {
            tx: out,
            to: dgram.from,
            pool: self.shared.store.pool(),
        };
        let reply = reply_header(&header);
        let sent = match self.codec.send_response(reply, &resp, &mut o) {
            Err(SendError::TooLarge { .. }) => {
                let too_large = Response::Ack {
                    status: status::TOO_LARGE,
                    count: 0,
                };
                self.codec.send_response(reply, &too_large, &mut o)
            }
            r => r,
        };
        self.spare.recycle(resp);
        if let Err(e) = sent {
            log::warn!("{}: native-udp-{}: reply: {e}", dgram.from, C::NAME);
        }
    }
}
