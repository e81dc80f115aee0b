//! The memcached UDP frame header and reply splitting.
//!
//! Every datagram, both ways, starts with an 8-byte header (big-endian):
//!
//! ```text
//!    0       2       4       6       8
//!    +-------+-------+-------+-------+---------------------------
//!    | reqid | seqno | total | rsvd  | text protocol bytes ...
//!    +-------+-------+-------+-------+---------------------------
//!    reqid  request id, chosen by the client, echoed in every reply datagram
//!    seqno  datagram number within the message, from 0
//!    total  datagrams in the message
//!    rsvd   0
//! ```
//!
//! A request must fit one datagram: memcached silently drops datagrams
//! whose `total` is not 1 ([`UdpHeader::is_single`]). A reply is split into
//! as many datagrams as needed ([`udp_frames`]), each at most
//! `max_datagram` bytes with its header (memcached: 1400).

use std::ops::Range;

/// Bytes in the UDP frame header.
pub const UDP_HEADER_LEN: usize = 8;

/// memcached's largest reply datagram, header included
/// (`UDP_MAX_PAYLOAD_SIZE`): the usual `max_datagram` for [`udp_frames`].
pub const UDP_MAX_DATAGRAM: usize = 1400;

/// The frame header of a memcached UDP datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    /// Request id: echoed in every datagram of the reply.
    pub request_id: u16,
    /// Datagram number within the message, from 0.
    pub sequence: u16,
    /// Number of datagrams in the message.
    pub total: u16,
    /// Reserved, 0.
    pub reserved: u16,
}

impl UdpHeader {
    /// Splits a datagram into its header and payload; `None` if shorter than
    /// the header.
    pub fn parse(datagram: &[u8]) -> Option<(UdpHeader, &[u8])> {
        let (head, payload) = datagram.split_first_chunk::<UDP_HEADER_LEN>()?;
        let at = |i: usize| u16::from_be_bytes([head[i], head[i + 1]]);
        Some((
            UdpHeader {
                request_id: at(0),
                sequence: at(2),
                total: at(4),
                reserved: at(6),
            },
            payload,
        ))
    }

    /// The 8 header bytes.
    pub fn to_bytes(&self) -> [u8; UDP_HEADER_LEN] {
        let mut b = [0u8; UDP_HEADER_LEN];
        b[0..2].copy_from_slice(&self.request_id.to_be_bytes());
        b[2..4].copy_from_slice(&self.sequence.to_be_bytes());
        b[4..6].copy_from_slice(&self.total.to_be_bytes());
        b[6..8].copy_from_slice(&self.reserved.to_be_bytes());
        b
    }

    /// True for a one-datagram message, the only kind of request memcached
    /// accepts (it drops the others without a reply).
    pub fn is_single(&self) -> bool {
        self.total == 1
    }
}

/// Why a reply cannot be split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpSplitError {
    /// `max_datagram` leaves no room after the header.
    DatagramTooSmall,
    /// The reply needs more than 65,535 datagrams.
    TooManyDatagrams,
}

impl std::fmt::Display for UdpSplitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UdpSplitError::DatagramTooSmall => "datagram size leaves no room for payload",
            UdpSplitError::TooManyDatagrams => "reply needs more than 65535 datagrams",
        })
    }
}

impl std::error::Error for UdpSplitError {}

/// One reply datagram: its header, then the bytes `range` of the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpFrame {
    /// The header bytes to send first.
    pub header: [u8; UDP_HEADER_LEN],
    /// Which bytes of the reply follow the header.
    pub range: Range<usize>,
}

/// Iterator over the datagrams of one reply; see [`udp_frames`].
#[derive(Debug, Clone)]
pub struct UdpFrames {
    request_id: u16,
    len: usize,
    payload: usize,
    next: u16,
    total: u16,
}

impl UdpFrames {
    /// Number of datagrams.
    pub fn total(&self) -> u16 {
        self.total
    }
}

impl Iterator for UdpFrames {
    type Item = UdpFrame;

    fn next(&mut self) -> Option<UdpFrame> {
        if self.next >= self.total {
            return None;
        }
        let start = usize::from(self.next) * self.payload;
        let end = start.saturating_add(self.payload).min(self.len);
        let header = UdpHeader {
            request_id: self.request_id,
            sequence: self.next,
            total: self.total,
            reserved: 0,
        }
        .to_bytes();
        self.next += 1;
        Some(UdpFrame {
            header,
            range: start..end,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.total - self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for UdpFrames {}

/// Splits a reply of `reply_len` bytes into datagrams of at most
/// `max_datagram` bytes each, header included.
///
/// The frames give byte ranges of the reply rather than copies, so the
/// server can map them onto its own buffers (copied bytes and value
/// references alike). An empty reply has no datagrams.
///
/// ```
/// use granola_kv::protocol::memcache::{udp_frames, UdpHeader};
/// let frames: Vec<_> = udp_frames(7, 2500, 1400).unwrap().collect();
/// assert_eq!(frames.len(), 2);
/// assert_eq!(frames[1].range, 1392..2500);
/// let (h, _) = UdpHeader::parse(&frames[1].header).unwrap();
/// assert_eq!((h.request_id, h.sequence, h.total), (7, 1, 2));
/// ```
pub fn udp_frames(
    request_id: u16,
    reply_len: usize,
    max_datagram: usize,
) -> Result<UdpFrames, UdpSplitError> {
    let payload = max_datagram
        .checked_sub(UDP_HEADER_LEN)
        .filter(|&p| p > 0)
        .ok_or(UdpSplitError::DatagramTooSmall)?;
    let total = reply_len.div_ceil(payload);
    let total = u16::try_from(total).map_err(|_| UdpSplitError::TooManyDatagrams)?;
    Ok(UdpFrames {
        request_id,
        len: reply_len,
        payload,
        next: 0,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = UdpHeader {
            request_id: 0x1234,
            sequence: 2,
            total: 3,
            reserved: 0,
        };
        let mut dgram = h.to_bytes().to_vec();
        assert_eq!(dgram, [0x12, 0x34, 0, 2, 0, 3, 0, 0]);
        dgram.extend_from_slice(b"get a\r\n");
        assert_eq!(UdpHeader::parse(&dgram), Some((h, &b"get a\r\n"[..])));
        assert_eq!(UdpHeader::parse(&dgram[..7]), None);
        assert!(!h.is_single());
    }

    #[test]
    fn split() {
        assert_eq!(udp_frames(1, 0, 1400).unwrap().count(), 0);
        let f: Vec<_> = udp_frames(1, 1392, 1400).unwrap().collect();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].range, 0..1392);
        let f: Vec<_> = udp_frames(9, 1393, 1400).unwrap().collect();
        assert_eq!(f.len(), 2);
        assert_eq!(f[1].range, 1392..1393);
        assert_eq!(f[1].header, [0, 9, 0, 1, 0, 2, 0, 0]);
        // Ranges tile the reply.
        let f: Vec<_> = udp_frames(3, 10_000, 100).unwrap().collect();
        assert_eq!(f.len(), 109);
        assert!(f.windows(2).all(|w| w[0].range.end == w[1].range.start));
        assert_eq!(f.last().unwrap().range.end, 10_000);
        assert_eq!(
            udp_frames(1, 10, 8).unwrap_err(),
            UdpSplitError::DatagramTooSmall
        );
        assert_eq!(
            udp_frames(1, 65_536, 9).unwrap_err(),
            UdpSplitError::TooManyDatagrams
        );
        assert_eq!(udp_frames(1, 65_535, 9).unwrap().total(), 65_535);
    }
}
