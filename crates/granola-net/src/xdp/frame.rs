//! Ethernet II / IPv4 / UDP framing for the AF_XDP datapath (etherparse).
//!
//! Sending: a datagram's payload is a list of pool [`Buf`]s (the gather
//! builder's copied run and each zero-copy value). Each packet gets one
//! small header buffer (Ethernet + IPv4, plus the UDP header in the first
//! packet) and then slices of the payload buffers, so a stored value goes
//! out from where it is stored. A datagram larger than the link MTU is sent
//! as IPv4 fragments (RFC 791), which any IP stack reassembles: the peer's
//! kernel socket receives one datagram. The UDP checksum is computed over
//! the whole payload before fragmenting.
//!
//! Receiving: a frame is parsed in place; only unfragmented IPv4 UDP is
//! accepted (the XDP program steers nothing else here).

use etherparse::checksum::Sum16BitWords;
use etherparse::{
    EtherType, Ethernet2Header, IpFragOffset, IpNumber, Ipv4Header, LinkSlice, NetSlice,
    SlicedPacket, TransportSlice, UdpHeader,
};
use granola::{Buf, Pool};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;

/// Ethernet II header.
pub(crate) const ETH_LEN: usize = 14;
/// IPv4 header without options.
pub(crate) const IP_LEN: usize = 20;
/// UDP header.
pub(crate) const UDP_LEN: usize = 8;
/// Largest UDP payload over IPv4 (the IP total length is 16 bits).
pub(crate) const MAX_UDP_PAYLOAD: usize = 65_507;
/// Most descriptors one packet may use (the kernel's copy path builds an
/// skb with at most `MAX_SKB_FRAGS` (17) buffers).
pub(crate) const MAX_PIECES_PER_PACKET: usize = 16;

/// One end of a UDP flow on the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Station {
    pub(crate) mac: [u8; 6],
    pub(crate) addr: SocketAddrV4,
}

/// A parsed incoming UDP frame.
#[derive(Debug)]
pub(crate) struct Incoming {
    pub(crate) src: Station,
    pub(crate) dst: Station,
    /// The UDP payload's byte range inside the frame.
    pub(crate) payload: Range<usize>,
}

/// Why a frame was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reject {
    /// Not Ethernet/IPv4/UDP, or malformed.
    NotUdp,
    /// An IPv4 fragment (for `reassembly.rs`).
    Fragment,
}

/// Parses `frame`; the payload range respects the UDP length field.
pub(crate) fn parse(frame: &[u8]) -> Result<Incoming, Reject> {
    let p = SlicedPacket::from_ethernet(frame).map_err(|_| Reject::NotUdp)?;
    let Some(LinkSlice::Ethernet2(eth)) = &p.link else {
        return Err(Reject::NotUdp);
    };
    let Some(NetSlice::Ipv4(ip)) = &p.net else {
        return Err(Reject::NotUdp);
    };
    if ip.is_payload_fragmented() {
        return Err(Reject::Fragment);
    }
    let Some(TransportSlice::Udp(udp)) = &p.transport else {
        return Err(Reject::NotUdp);
    };
    let payload = udp.payload();
    let start = payload.as_ptr() as usize - frame.as_ptr() as usize;
    Ok(Incoming {
        src: Station {
            mac: eth.source(),
            addr: SocketAddrV4::new(ip.header().source_addr(), udp.source_port()),
        },
        dst: Station {
            mac: eth.destination(),
            addr: SocketAddrV4::new(ip.header().destination_addr(), udp.destination_port()),
        },
        payload: start..start + payload.len(),
    })
}

/// Internet checksum over pieces of any length (a byte left over from one
/// piece pairs with the first byte of the next).
struct Checksum {
    sum: Sum16BitWords,
    odd: Option<u8>,
}

impl Checksum {
    fn new(sum: Sum16BitWords) -> Checksum {
        Checksum { sum, odd: None }
    }

    fn add(&mut self, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let mut sum = std::mem::take(&mut self.sum);
        if let Some(b) = self.odd.take() {
            sum = sum.add_2bytes([b, bytes[0]]);
            bytes = &bytes[1..];
        }
        if bytes.len() % 2 == 1 {
            self.odd = Some(bytes[bytes.len() - 1]);
            bytes = &bytes[..bytes.len() - 1];
        }
        self.sum = sum.add_slice(bytes);
    }

    fn finish(self) -> u16 {
        let sum = match self.odd {
            Some(b) => self.sum.add_2bytes([b, 0]),
            None => self.sum,
        };
        sum.to_ones_complement_with_no_zero().to_be()
    }
}

/// Why a datagram could not be framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BuildError {
    /// Above [`MAX_UDP_PAYLOAD`].
    TooLarge,
    /// No pool memory for a header buffer.
    OutOfMemory,
}

impl BuildError {
    /// For log lines.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            BuildError::TooLarge => "larger than a UDP datagram",
            BuildError::OutOfMemory => "pool exhausted",
        }
    }
}

/// How packets are cut and laid out on a link.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape {
    /// Largest IP packet.
    pub(crate) mtu: usize,
    /// A packet whose payload is at most this many bytes is sent as one
    /// buffer, its payload copied behind the headers; larger ones are
    /// gathered from the payload's own buffers (see [`copy_below`]).
    pub(crate) copy_below: usize,
}

/// The [`Shape::copy_below`] for a socket in `mode`.
///
/// Copy mode (veth, lo, drivers without AF_XDP zero-copy): the kernel
/// copies every byte of a packet into an skb anyway, and each descriptor
/// after the first costs it a page fragment, so one buffer per packet is
/// always cheapest: copy everything. Zero-copy mode: the NIC gathers the
/// descriptors itself, and a piece is worth its own descriptor from the
/// size where copying costs more than describing it — the same trade the
/// serializer's copy threshold makes (512 B, Cornflakes' crossover).
pub(crate) fn copy_below(mode: super::XskMode) -> usize {
    match mode {
        super::XskMode::Copy => usize::MAX,
        super::XskMode::ZeroCopy => 512,
    }
}

/// Payload bytes of one datagram by how they reached the TX ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Sent as descriptors of their own, where they lie in the UMEM (a
    /// stored value, referenced).
    pub(crate) gathered: usize,
    /// Copied into a UMEM buffer first because they lay outside it, then
    /// sent as descriptors of their own.
    pub(crate) copied_in: usize,
}

/// Frames one UDP datagram whose payload is `payload` (in order) into
/// packets shaped by `shape`; each packet is its list of buffers (header
/// first), appended to `out`. Headers (and payloads copied behind them)
/// are allocated from `pool`; payload pieces sent as descriptors of their
/// own must lie in its [registration](Pool::registration) and are copied
/// into it when they do not.
pub(crate) fn build(
    pool: &Pool,
    (src, dst): (Station, Station),
    ip_id: u16,
    shape: Shape,
    payload: &[Buf],
    out: &mut Vec<Vec<Buf>>,
) -> Result<Placed, BuildError> {
    let mut placed = Placed::default();
    let mtu = shape.mtu;
    let len: usize = payload.iter().map(|b| b.len()).sum();
    if len > MAX_UDP_PAYLOAD {
        return Err(BuildError::TooLarge);
    }
    let udp_len = (UDP_LEN + len) as u16;
    let mut udp = UdpHeader {
        source_port: src.addr.port(),
        destination_port: dst.addr.port(),
        length: udp_len,
        checksum: 0,
    };
    let (s_ip, d_ip) = (src.addr.ip().octets(), dst.addr.ip().octets());
    let mut ck = Checksum::new(
        Sum16BitWords::new()
            .add_4bytes(s_ip)
            .add_4bytes(d_ip)
            .add_2bytes([0, IpNumber::UDP.0])
            .add_2bytes(udp_len.to_be_bytes())
            .add_2bytes(udp.source_port.to_be_bytes())
            .add_2bytes(udp.destination_port.to_be_bytes())
            .add_2bytes(udp_len.to_be_bytes()),
    );
    for b in payload {
        ck.add(b);
    }
    udp.checksum = ck.finish();
    let eth = Ethernet2Header {
        source: src.mac,
        destination: dst.mac,
        ether_type: EtherType::IPV4,
    };
    // IP payload bytes per fragment: a multiple of 8 except in the last.
    let per_packet = (mtu.max(IP_LEN + 8 * 8) - IP_LEN) / 8 * 8;
    let total = UDP_LEN + len; // IP payload of the whole datagram
    let mut cursor = Cursor {
        bufs: payload,
        idx: 0,
        off: 0,
    };
    let mut ip_off = 0usize;
    // One scratch list for every packet's pieces (not one per packet).
    let mut pieces = Vec::with_capacity(4);
    while ip_off < total {
        let first = ip_off == 0;
        let this = (total - ip_off).min(per_packet);
        let last = ip_off + this == total;
        let mut ip = Ipv4Header::new(this as u16, 64, IpNumber::UDP, s_ip, d_ip)
            .map_err(|_| BuildError::TooLarge)?;
        ip.identification = ip_id;
        ip.dont_fragment = false;
        ip.more_fragments = !last;
        ip.fragment_offset =
            IpFragOffset::try_new((ip_off / 8) as u16).map_err(|_| BuildError::TooLarge)?;
        ip.header_checksum = ip.calc_header_checksum();
        let hdr_len = ETH_LEN + IP_LEN + if first { UDP_LEN } else { 0 };
        let body = this - if first { UDP_LEN } else { 0 };
        pieces.clear();
        cursor.take(body, &mut pieces);
        let copy_body = pieces.len() + 1 > MAX_PIECES_PER_PACKET || body <= shape.copy_below;
        // One buffer size for every copied packet (a full frame) and one
        // for every header: packets of every length would each take slots
        // of their own size class, and a pool whose segments are all
        // carved for a dozen classes fails an allocation while most of its
        // bytes are free (replies dropped under a mix of sizes).
        let cap = if copy_body {
            ETH_LEN + mtu.max(hdr_len - ETH_LEN + body)
        } else {
            ETH_LEN + IP_LEN + UDP_LEN
        };
        let mut h = pool.alloc(cap).ok_or(BuildError::OutOfMemory)?;
        h.extend_from_slice(&eth.to_bytes());
        h.extend_from_slice(&ip.to_bytes());
        if first {
            h.extend_from_slice(&udp.to_bytes());
        }
        let mut pkt = Vec::with_capacity(pieces.len() + 1);
        if copy_body {
            // Small, or too many pieces for one packet's descriptors.
            for p in &pieces {
                h.extend_from_slice(p);
            }
            pkt.push(h.freeze());
        } else {
            pkt.push(h.freeze());
            for p in pieces.drain(..) {
                if pool.in_registration(&p) {
                    placed.gathered += p.len();
                    pkt.push(p);
                } else {
                    placed.copied_in += p.len();
                    pkt.push(pool.alloc_copy(&p).ok_or(BuildError::OutOfMemory)?);
                }
            }
        }
        out.push(pkt);
        ip_off += this;
    }
    Ok(placed)
}

/// Walks the payload buffers, handing out sub-slices.
struct Cursor<'a> {
    bufs: &'a [Buf],
    idx: usize,
    off: usize,
}

impl Cursor<'_> {
    fn take(&mut self, mut n: usize, out: &mut Vec<Buf>) {
        while n > 0 && self.idx < self.bufs.len() {
            let b = &self.bufs[self.idx];
            let k = (b.len() - self.off).min(n);
            if k > 0 {
                out.push(b.slice(self.off..self.off + k));
            }
            self.off += k;
            n -= k;
            if self.off == b.len() {
                self.idx += 1;
                self.off = 0;
            }
        }
    }
}

/// Reads a MAC written as `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// `ip=mac` (a static neighbour entry).
pub fn parse_neighbour(s: &str) -> Option<(Ipv4Addr, [u8; 6])> {
    let (ip, mac) = s.split_once('=')?;
    Some((ip.parse().ok()?, parse_mac(mac)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::defrag::IpDefragPool;

    fn stations() -> (Station, Station) {
        (
            Station {
                mac: [2, 0, 0, 0, 0, 1],
                addr: "10.1.0.1:11311".parse().unwrap(),
            },
            Station {
                mac: [2, 0, 0, 0, 0, 2],
                addr: "10.1.0.2:40000".parse().unwrap(),
            },
        )
    }

    /// 1500-byte MTU, every piece by reference.
    const GATHER: Shape = Shape {
        mtu: 1500,
        copy_below: 0,
    };

    fn flatten(pkt: &[Buf]) -> Vec<u8> {
        pkt.iter().flat_map(|b| b.iter().copied()).collect()
    }

    /// Every copied packet takes a slot of one size and every header of
    /// another, whatever the payload's length: a frame pool must not end
    /// up with its segments carved for a class per packet length.
    #[test]
    fn packets_of_any_length_share_two_slot_sizes() {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let (s, d) = stations();
        let copy = Shape {
            mtu: 1500,
            copy_below: usize::MAX,
        };
        let mut sizes = std::collections::BTreeSet::new();
        for len in [1usize, 60, 300, 700, 1000, 1472, 1473, 3000, 9000] {
            let body = pool.alloc_copy(&vec![3u8; len]).unwrap();
            let mut out = Vec::new();
            build(
                &pool,
                (s, d),
                1,
                copy,
                std::slice::from_ref(&body),
                &mut out,
            )
            .unwrap();
            sizes.extend(out.iter().map(|p| pool.slot_size(&p[0])));
            build(&pool, (s, d), 1, GATHER, &[body], &mut out).unwrap();
            sizes.extend(out.iter().map(|p| pool.slot_size(&p[0])));
        }
        assert_eq!(sizes.len(), 2, "slot sizes: {sizes:?}");
    }

    /// Gathered pieces are named where they lie when they are in the
    /// UMEM (the pool's group) and copied into it when they are not; the
    /// datagram's bytes are the same either way.
    #[test]
    fn gathered_pieces_outside_the_registration_are_copied_in() {
        let cfg = |mb: usize| granola::PoolConfig {
            capacity: mb << 20,
            huge_pages: false,
            budget: None,
        };
        let group = Pool::new_group(&[cfg(4), cfg(4)]).unwrap();
        let (frames, items) = (&group[0], &group[1]);
        let outsider = Pool::with_capacity(4 << 20).unwrap();
        let stored = items.alloc_copy(&[7u8; 900]).unwrap();
        let foreign = outsider.alloc_copy(&[9u8; 300]).unwrap();
        let (s, d) = stations();
        let mut out = Vec::new();
        let placed = build(
            frames,
            (s, d),
            1,
            GATHER,
            &[stored.clone(), foreign],
            &mut out,
        )
        .unwrap();
        assert_eq!(
            placed,
            Placed {
                gathered: 900,
                copied_in: 300
            }
        );
        let pkt = &out[0];
        assert_eq!(pkt.len(), 3, "headers, the stored value, the copy");
        assert!(pkt[1].same_slot(&stored), "the stored value itself");
        assert!(pkt.iter().all(|b| frames.in_registration(b)));
        assert!(frames.contains(&pkt[2]), "copied into the frame pool");
        let frame = flatten(pkt);
        let p = parse(&frame).unwrap();
        let mut want = vec![7u8; 900];
        want.extend_from_slice(&[9u8; 300]);
        assert_eq!(&frame[p.payload], &want[..]);
    }

    #[test]
    fn one_packet_round_trips_with_a_valid_checksum() {
        let pool = Pool::with_capacity(4 << 20).unwrap();
        let (s, d) = stations();
        let a = pool.alloc_copy(b"hello ").unwrap();
        let b = pool.alloc_copy(b"odd-length world").unwrap();
        let mut out = Vec::new();
        build(&pool, (s, d), 1, GATHER, &[a, b], &mut out).unwrap();
        assert_eq!(out.len(), 1);
        let frame = flatten(&out[0]);
        let p = parse(&frame).unwrap();
        assert_eq!(&frame[p.payload.clone()], b"hello odd-length world");
        assert_eq!((p.src, p.dst), (s, d));
        // etherparse computes the same UDP checksum over the flat bytes.
        let sp = SlicedPacket::from_ethernet(&frame).unwrap();
        let Some(NetSlice::Ipv4(ip)) = sp.net else {
            panic!()
        };
        let Some(TransportSlice::Udp(u)) = sp.transport else {
            panic!()
        };
        let want = u
            .to_header()
            .calc_checksum_ipv4(&ip.header().to_header(), u.payload())
            .unwrap();
        assert_eq!(u.checksum(), want);
    }

    #[test]
    fn large_datagrams_fragment_and_reassemble() {
        let pool = Pool::with_capacity(16 << 20).unwrap();
        let (s, d) = stations();
        let body: Vec<u8> = (0..20_001u32).map(|i| (i * 7 % 251) as u8).collect();
        let parts = [
            pool.alloc_copy(&body[..3]).unwrap(),
            pool.alloc_copy(&body[3..9000]).unwrap(),
            pool.alloc_copy(&body[9000..]).unwrap(),
        ];
        let mut out = Vec::new();
        build(&pool, (s, d), 77, GATHER, &parts, &mut out).unwrap();
        assert_eq!(out.len(), 20_009usize.div_ceil(1480));
        let mut defrag = IpDefragPool::<(), ()>::new();
        let mut whole = None;
        for pkt in &out {
            assert!(pkt.len() <= MAX_PIECES_PER_PACKET);
            let frame = flatten(pkt);
            assert!(frame.len() <= 1514);
            let sp = SlicedPacket::from_ethernet(&frame).unwrap();
            if let Some(v) = defrag.process_sliced_packet(&sp, (), ()).unwrap() {
                whole = Some(v.payload.clone());
            }
        }
        let whole = whole.expect("reassembled");
        assert_eq!(&whole[UDP_LEN..], &body[..]);
    }

    #[test]
    fn small_payloads_are_copied_behind_the_headers() {
        let pool = Pool::with_capacity(4 << 20).unwrap();
        let (s, d) = stations();
        let parts = [
            pool.alloc_copy(b"VALUE k 0 3\r\n").unwrap(),
            pool.alloc_copy(b"abc\r\nEND\r\n").unwrap(),
        ];
        for (copy_below, descriptors) in [(0, 3), (512, 1), (usize::MAX, 1)] {
            let shape = Shape {
                mtu: 1500,
                copy_below,
            };
            let mut out = Vec::new();
            build(&pool, (s, d), 1, shape, &parts, &mut out).unwrap();
            assert_eq!(out.len(), 1);
            assert_eq!(out[0].len(), descriptors, "copy_below {copy_below}");
            let frame = flatten(&out[0]);
            let p = parse(&frame).unwrap();
            assert_eq!(&frame[p.payload], b"VALUE k 0 3\r\nabc\r\nEND\r\n");
        }
        // A piece above the bound keeps its own descriptor.
        let big = pool.alloc_copy(&[7u8; 1000]).unwrap();
        let shape = Shape {
            mtu: 1500,
            copy_below: 512,
        };
        let mut out = Vec::new();
        build(
            &pool,
            (s, d),
            1,
            shape,
            std::slice::from_ref(&big),
            &mut out,
        )
        .unwrap();
        assert_eq!(out[0].len(), 2);
        assert_eq!(out[0][1].as_ptr(), big.as_ptr(), "sent from where it lies");
    }

    #[test]
    fn too_large_is_refused() {
        let pool = Pool::with_capacity(4 << 20).unwrap();
        let (s, d) = stations();
        let big = pool.alloc_copy(&vec![0; MAX_UDP_PAYLOAD + 1]).unwrap();
        assert_eq!(
            build(&pool, (s, d), 1, GATHER, &[big], &mut Vec::new()),
            Err(BuildError::TooLarge)
        );
    }

    #[test]
    fn neighbours_parse() {
        assert_eq!(
            parse_neighbour("10.0.0.2=02:00:00:00:00:0a"),
            Some(("10.0.0.2".parse().unwrap(), [2, 0, 0, 0, 0, 10]))
        );
        assert_eq!(parse_mac("02:00:00:00:00"), None);
    }
}
