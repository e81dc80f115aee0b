//! TCP protocols (on the session driver) and UDP handlers of the baseline serializers: frames in,
//! [`ServerCodec::decode_request`], [`native::execute`], and
//! [`ServerCodec::send_response`] into the connection's TX queue (or a reply
//! datagram). The same shape as `native::NativeSession`.

use super::out::{TcpOut, UdpOut};
use super::{reply_header, Response, ServerCodec};
use crate::command::native::status;
use crate::command::native::{self, bad_request, Spare};
use crate::command::Step;
use crate::command::Storage;
use crate::protocol::Parsed;
use crate::server::native::parse_frame;
use crate::server::session::{Out, Protocol};
use crate::server::Shared;
use granola::Buf;
use granola_net::server::DatagramHandler;
use granola_net::tx::SendError;
use granola_net::udp::{Datagram, UdpTx};
use granola_net::{FrameHeader, FRAME_HEADER_LEN};
use std::sync::Arc;

/// Decodes and runs one request; undecodable or unknown ones get
/// BAD_REQUEST (the framing is intact, so the connection continues).
fn respond<C: ServerCodec>(
    store: &dyn Storage,
    codec: &mut C,
    header: &FrameHeader,
    payload: &[u8],
    spare: &mut Spare,
    max_value: usize,
) -> Response<Buf> {
    codec.decode_request(header.kind, payload, |req| match req {
        Some(req) => native::execute(store, &req, spare, max_value),
        None => bad_request(),
    })
}

/// A native-protocol connection speaking codec `C` (run by the session
/// driver, like every TCP protocol).
pub(super) struct BaselineSession<C> {
    shared: Arc<Shared>,
    codec: C,
    spare: Spare,
    max_frame: usize,
}

impl<C: ServerCodec> BaselineSession<C> {
    pub(super) fn new(shared: Arc<Shared>) -> BaselineSession<C> {
        BaselineSession {
            shared,
            codec: C::server(),
            spare: Spare::default(),
            max_frame: granola_net::TxConfig::default().max_frame,
        }
    }
}

impl<C: ServerCodec> Protocol for BaselineSession<C> {
    type Cmd<'a> = (FrameHeader, &'a [u8]);
    const NAME: &'static str = "native-baseline";

    fn parse<'a>(&mut self, input: &'a [u8]) -> Parsed<(FrameHeader, &'a [u8])> {
        parse_frame(input, self.max_frame)
    }

    fn execute(
        &mut self,
        &(h, payload): &(FrameHeader, &[u8]),
        _: usize,
        out: &mut Out<'_>,
    ) -> Step {
        let store: &dyn Storage = &*self.shared.store;
        let max = self.shared.config.max_item_size;
        let resp = respond(store, &mut self.codec, &h, payload, &mut self.spare, max);
        let sent = self
            .codec
            .send_response(reply_header(&h), &resp, &mut TcpOut(out.tx));
        self.spare.recycle(resp);
        match sent {
            Ok(()) => Step::Done,
            Err(e) => Step::Close(Box::new(format!("native-{}: reply: {e}", C::NAME))),
        }
    }

    fn write_too_large(&self, _out: &mut Out<'_>) {}
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
            self.shared.config.max_item_size,
        );
        let amp = self.shared.config.udp_amplification;
        let resp = native::cap_amplification(resp, data.len(), amp);
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
