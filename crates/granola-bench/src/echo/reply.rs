//! Where an echo reply goes: a TCP connection's TX queue (one frame), or
//! a UDP reply datagram (frame header + payload as one datagram, over
//! kernel sockets or AF_XDP). The Figure 2 variants write their replies
//! through this, so the same handler code runs over both transports.

use std::net::SocketAddr;

use granola::{Buf, Message, Sga};
use granola_net::udp::UdpTx;
use granola_net::{FrameHeader, TxQueue, FRAME_HEADER_LEN};

/// A reply's destination.
pub enum ReplyTo<'a> {
    /// One frame on a TCP connection.
    Tcp(&'a mut TxQueue),
    /// One datagram to this peer.
    Udp(&'a mut UdpTx, SocketAddr),
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

impl ReplyTo<'_> {
    /// Serialize-and-send: headers and small fields copied, pool values of
    /// at least `threshold` bytes referenced.
    pub fn object<M: Message + ?Sized>(
        &mut self,
        header: FrameHeader,
        msg: &M,
        threshold: usize,
    ) -> Result<(), String> {
        match self {
            ReplyTo::Tcp(tx) => tx.send_object_with(header, msg, threshold).map_err(err),
            ReplyTo::Udp(tx, to) => tx
                .send_object_with(*to, header, msg, threshold)
                .map_err(err),
        }
    }

    /// A scatter-gather list: its head copied, its entries referenced.
    pub fn sga(&mut self, mut header: FrameHeader, sga: &Sga) -> Result<(), String> {
        match self {
            ReplyTo::Tcp(tx) => tx.send_sga(header, sga).map_err(err),
            ReplyTo::Udp(tx, to) => {
                header.len = sga.len() as u32;
                let mut d = tx.datagram(*to);
                d.copy(&header.to_bytes()).map_err(err)?;
                d.copy(&sga.head).map_err(err)?;
                for e in &sga.entries {
                    d.reference(e);
                }
                d.finish().map_err(err)
            }
        }
    }

    /// A payload copied from `bytes`.
    pub fn bytes(&mut self, header: FrameHeader, bytes: &[u8]) -> Result<(), String> {
        self.encode(header, bytes.len(), |out| {
            out.copy_from_slice(bytes);
            Ok(())
        })
    }

    /// A payload of `len` bytes that `fill` writes in place (straight into
    /// the TX buffer: no intermediate vector).
    pub fn encode(
        &mut self,
        mut header: FrameHeader,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        header.len = len as u32;
        let region = match self {
            ReplyTo::Tcp(tx) => tx.reserve(FRAME_HEADER_LEN + len).map_err(err)?,
            ReplyTo::Udp(tx, to) => {
                let mut d = tx.datagram(*to);
                let region = d.reserve(FRAME_HEADER_LEN + len).map_err(err)?;
                let (head, body) = region.split_at_mut(FRAME_HEADER_LEN);
                header.write(head);
                fill(body)?;
                return d.finish().map_err(err);
            }
        };
        let (head, body) = region.split_at_mut(FRAME_HEADER_LEN);
        header.write(head);
        fill(body)
    }
}

/// A request frame as the handlers see it: its id and payload.
pub struct Request<'a> {
    /// The frame's id (the reply carries it back).
    pub id: u32,
    /// The payload, in the receive buffer (a pool slot).
    pub payload: &'a Buf,
}
