//! Where a baseline reply frame goes: a connection's TX queue, or a reply
//! datagram. Two shapes of payload: written in place (prost encodes into
//! the reserved bytes) or copied from the library's own buffers
//! (flatbuffers' finished buffer; capnp's segment table and segments).

use granola::Pool;
use granola_net::tx::SendError;
use granola_net::udp::{UdpTx, MAX_DATAGRAM};
use granola_net::{FrameHeader, TxQueue, FRAME_HEADER_LEN};
use std::net::SocketAddr;

/// A sink for whole reply frames.
pub(crate) trait FrameOut {
    /// Queues a frame whose `len`-byte payload `fill` writes in place.
    fn frame_in_place(
        &mut self,
        header: FrameHeader,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError>;

    /// Queues a frame whose payload is `first` followed by each of `rest`,
    /// copied.
    fn frame_copied(
        &mut self,
        header: FrameHeader,
        first: &[u8],
        rest: &[&[u8]],
    ) -> Result<(), SendError>;
}

/// A TCP connection's TX queue: the frame goes into its pool TX chunk.
pub(crate) struct TcpOut<'a>(pub(crate) &'a mut TxQueue);

impl TcpOut<'_> {
    /// Reserves header + payload in the TX chunk and writes the header.
    fn region(&mut self, mut header: FrameHeader, len: usize) -> Result<&mut [u8], SendError> {
        let max = self.0.config().max_frame;
        if len > max {
            return Err(SendError::TooLarge { len, max });
        }
        header.len = len as u32;
        let region = self.0.reserve(FRAME_HEADER_LEN + len)?;
        header.write(&mut region[..FRAME_HEADER_LEN]);
        Ok(&mut region[FRAME_HEADER_LEN..])
    }
}

impl FrameOut for TcpOut<'_> {
    fn frame_in_place(
        &mut self,
        header: FrameHeader,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError> {
        fill(self.region(header, len)?);
        Ok(())
    }

    fn frame_copied(
        &mut self,
        header: FrameHeader,
        first: &[u8],
        rest: &[&[u8]],
    ) -> Result<(), SendError> {
        let len = first.len() + rest.iter().map(|p| p.len()).sum::<usize>();
        let region = self.region(header, len)?;
        let (head, mut tail) = region.split_at_mut(first.len());
        head.copy_from_slice(first);
        for p in rest {
            let (dst, t) = tail.split_at_mut(p.len());
            dst.copy_from_slice(p);
            tail = t;
        }
        Ok(())
    }
}

/// A reply datagram to `to`.
pub(crate) struct UdpOut<'a> {
    pub(crate) tx: &'a mut UdpTx,
    pub(crate) to: SocketAddr,
    /// For in-place frames (`UdpTx` has no in-place reserve).
    pub(crate) pool: &'a Pool,
}

impl FrameOut for UdpOut<'_> {
    fn frame_in_place(
        &mut self,
        mut header: FrameHeader,
        len: usize,
        fill: &mut dyn FnMut(&mut [u8]),
    ) -> Result<(), SendError> {
        let total = FRAME_HEADER_LEN + len;
        if total > MAX_DATAGRAM {
            return Err(SendError::TooLarge {
                len: total,
                max: MAX_DATAGRAM,
            });
        }
        let mut slot = self.pool.alloc(total).ok_or(SendError::OutOfMemory)?;
        header.len = len as u32;
        let bytes = &mut slot.as_full_mut_slice()[..total];
        header.write(&mut bytes[..FRAME_HEADER_LEN]);
        fill(&mut bytes[FRAME_HEADER_LEN..]);
        slot.set_len(total);
        let frame = slot.freeze();
        // Referenced at or above the copy threshold, else copied; the
        // datagram's own size check applies either way.
        let mut d = self.tx.datagram(self.to);
        d.value(&frame)?;
        d.finish()
    }

    fn frame_copied(
        &mut self,
        mut header: FrameHeader,
        first: &[u8],
        rest: &[&[u8]],
    ) -> Result<(), SendError> {
        let len = first.len() + rest.iter().map(|p| p.len()).sum::<usize>();
        header.len = len as u32;
        let mut d = self.tx.datagram(self.to);
        d.copy(&header.to_bytes())?;
        d.copy(first)?;
        for p in rest {
            d.copy(p)?;
        }
        d.finish()
    }
}
