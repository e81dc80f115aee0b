//! IPv4 reassembly of the UDP requests that arrive as fragments, so a
//! request larger than one frame is served over AF_XDP like any other
//! (etherparse's defragmenter does the byte work: offsets, overlaps,
//! conflicting ends).
//!
//! Bounded, because every fragment comes from the network: at most
//! [`MAX_PENDING`] datagrams are being put together at once (a first
//! fragment of one more is dropped), each at most a UDP datagram's 64 KiB,
//! and a datagram whose fragments stop arriving is forgotten after
//! [`TIMEOUT`]. So the worker holds at most 4 MiB of partial requests.
//! A reassembled datagram must carry a matching UDP length and a valid
//! checksum (when its sender set one), as the kernel requires.

use super::frame::{Station, UDP_LEN};
use etherparse::defrag::IpDefragPool;
use etherparse::{LinkSlice, NetSlice, SlicedPacket, UdpHeader};
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

/// Datagrams being reassembled at once.
pub(crate) const MAX_PENDING: usize = 64;
/// A datagram whose next fragment takes longer than this is dropped.
/// (RFC 791 allows up to 15 s; a cache request that slow is lost anyway,
/// and a short timeout bounds what a sender of first fragments can hold.)
pub(crate) const TIMEOUT: Duration = Duration::from_millis(500);
/// How often timed-out datagrams are looked for.
const SWEEP: Duration = Duration::from_millis(100);

/// What one fragment led to.
#[derive(Debug)]
pub(crate) enum Fragment {
    /// Kept; the datagram is not complete yet.
    Pending,
    /// The last missing fragment: the whole UDP datagram.
    Complete(Reassembled),
    /// Not kept, with the reason (for the drop counters).
    Dropped(&'static str),
}

/// A reassembled UDP datagram.
#[derive(Debug)]
pub(crate) struct Reassembled {
    pub(crate) src: Station,
    pub(crate) dst: Station,
    /// The whole UDP datagram, header included (the heap buffer the
    /// fragments were copied into).
    datagram: Vec<u8>,
}

impl Reassembled {
    /// The UDP payload.
    pub(crate) fn payload(&self) -> &[u8] {
        &self.datagram[UDP_LEN..]
    }
}

/// The fragments of the datagrams in progress.
pub(crate) struct Reassembly {
    defrag: IpDefragPool<Instant, ()>,
    /// (source, destination, identification) of the datagrams in progress
    /// and their last fragment's arrival (bounds their number).
    pending: HashMap<(Ipv4Addr, Ipv4Addr, u16), Instant>,
    last_sweep: Instant,
}

impl Reassembly {
    pub(crate) fn new() -> Reassembly {
        Reassembly {
            defrag: IpDefragPool::new(),
            pending: HashMap::new(),
            last_sweep: Instant::now(),
        }
    }

    /// Datagrams in progress.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Adds the fragment in Ethernet `frame`, received at `now` (the
    /// caller runs [`expire`](Self::expire) once per receive batch).
    pub(crate) fn add(&mut self, frame: &[u8], now: Instant) -> Fragment {
        let Ok(p) = SlicedPacket::from_ethernet(frame) else {
            return Fragment::Dropped("malformed fragment");
        };
        let (Some(LinkSlice::Ethernet2(eth)), Some(NetSlice::Ipv4(ip))) = (&p.link, &p.net) else {
            return Fragment::Dropped("fragment not IPv4 over Ethernet");
        };
        let h = ip.header();
        if !h.is_fragmenting_payload() || ip.payload().ip_number != etherparse::IpNumber::UDP {
            return Fragment::Dropped("not a UDP fragment");
        }
        let (src_ip, dst_ip) = (h.source_addr(), h.destination_addr());
        let key = (src_ip, dst_ip, h.identification());
        if !self.pending.contains_key(&key) && self.pending.len() >= MAX_PENDING {
            return Fragment::Dropped("too many datagrams in reassembly");
        }
        self.pending.insert(key, now);
        let whole = match self.defrag.process_sliced_packet(&p, now, ()) {
            Ok(None) => return Fragment::Pending,
            Ok(Some(whole)) => whole,
            // The datagram's other fragments stay until they time out
            // (the defragmenter keeps its entry), so `pending` keeps
            // counting it.
            Err(_) => return Fragment::Dropped("inconsistent fragment"),
        };
        self.pending.remove(&key);
        let (src_mac, dst_mac) = (eth.source(), eth.destination());
        let datagram = whole.payload;
        let (sport, dport) = match check_udp(&datagram, src_ip, dst_ip) {
            Ok(ports) => ports,
            Err(why) => return Fragment::Dropped(why),
        };
        Fragment::Complete(Reassembled {
            src: Station {
                mac: src_mac,
                addr: SocketAddrV4::new(src_ip, sport),
            },
            dst: Station {
                mac: dst_mac,
                addr: SocketAddrV4::new(dst_ip, dport),
            },
            datagram,
        })
    }

    /// Forgets datagrams whose last fragment came more than [`TIMEOUT`]
    /// ago (at most every [`SWEEP`]).
    pub(crate) fn expire(&mut self, now: Instant) {
        if now.duration_since(self.last_sweep) < SWEEP {
            return;
        }
        self.last_sweep = now;
        let live = |at: &Instant| now.duration_since(*at) < TIMEOUT;
        self.defrag.retain(live);
        self.pending.retain(|_, at| live(at));
    }
}

/// The ports of the UDP datagram `data` (header and payload) from `src` to
/// `dst`, if its length field matches and its checksum (when set) holds.
fn check_udp(data: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> Result<(u16, u16), &'static str> {
    let Ok((udp, payload)) = UdpHeader::from_slice(data) else {
        return Err("reassembled datagram shorter than a UDP header");
    };
    if usize::from(udp.length) != data.len() {
        return Err("UDP length does not match the reassembled datagram");
    }
    if udp.checksum != 0 {
        let want = udp
            .calc_checksum_ipv4_raw(src.octets(), dst.octets(), payload)
            .map_err(|_| "reassembled datagram too large")?;
        if want != udp.checksum {
            return Err("UDP checksum mismatch");
        }
    }
    Ok((udp.source_port, udp.destination_port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdp::frame::{build, Shape};
    use granola::{Buf, Pool};

    fn stations() -> (Station, Station) {
        (
            Station {
                mac: [2, 0, 0, 0, 0, 1],
                addr: "10.1.0.1:40000".parse().unwrap(),
            },
            Station {
                mac: [2, 0, 0, 0, 0, 2],
                addr: "10.1.0.2:11311".parse().unwrap(),
            },
        )
    }

    /// The packets (flattened) of one datagram of `len` bytes with IP id
    /// `id`, cut at MTU 1500.
    fn fragments(pool: &Pool, id: u16, len: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + id as usize) as u8).collect();
        let mut out = Vec::new();
        let shape = Shape {
            mtu: 1500,
            copy_below: usize::MAX,
        };
        let bufs: Vec<Buf> = vec![pool.alloc_copy(&payload).unwrap()];
        build(pool, stations(), id, shape, &bufs, &mut out).unwrap();
        let pkts = out
            .iter()
            .map(|p| p.iter().flat_map(|b| b.iter().copied()).collect())
            .collect();
        (payload, pkts)
    }

    #[test]
    fn fragments_in_any_order_make_the_datagram() {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let mut r = Reassembly::new();
        let now = Instant::now();
        let (payload, mut pkts) = fragments(&pool, 9, 5000);
        assert_eq!(pkts.len(), 4);
        pkts.swap(0, 3);
        pkts.swap(1, 2);
        for p in &pkts[..3] {
            assert!(matches!(r.add(p, now), Fragment::Pending));
        }
        assert_eq!(r.pending(), 1);
        match r.add(&pkts[3], now) {
            Fragment::Complete(d) => {
                assert_eq!(d.payload(), &payload[..]);
                assert_eq!((d.src, d.dst), stations());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn a_corrupted_fragment_fails_the_checksum() {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let mut r = Reassembly::new();
        let now = Instant::now();
        let (_, mut pkts) = fragments(&pool, 3, 3000);
        let last = pkts.len() - 1;
        let n = pkts[last].len();
        pkts[last][n - 1] ^= 0x40;
        for p in &pkts[..last] {
            assert!(matches!(r.add(p, now), Fragment::Pending));
        }
        assert!(matches!(
            r.add(&pkts[last], now),
            Fragment::Dropped("UDP checksum mismatch")
        ));
    }

    #[test]
    fn pending_datagrams_are_bounded_and_time_out() {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let mut r = Reassembly::new();
        let t0 = Instant::now();
        // First fragments only, of MAX_PENDING + 10 datagrams.
        for id in 0..(MAX_PENDING + 10) as u16 {
            let (_, pkts) = fragments(&pool, id, 3000);
            let got = r.add(&pkts[0], t0);
            if usize::from(id) < MAX_PENDING {
                assert!(matches!(got, Fragment::Pending));
            } else {
                assert!(matches!(
                    got,
                    Fragment::Dropped("too many datagrams in reassembly")
                ));
            }
        }
        assert_eq!(r.pending(), MAX_PENDING);
        // After the timeout they are gone, and a new datagram completes.
        let later = t0 + TIMEOUT + SWEEP;
        r.expire(later);
        assert_eq!(r.pending(), 0);
        let (payload, pkts) = fragments(&pool, 500, 3000);
        let mut done = None;
        for p in &pkts {
            if let Fragment::Complete(d) = r.add(p, later) {
                done = Some(d.payload().to_vec());
            }
        }
        assert_eq!(done, Some(payload));
        // A datagram missing a fragment never completes and times out.
        let (_, pkts) = fragments(&pool, 501, 3000);
        assert!(matches!(r.add(&pkts[0], later), Fragment::Pending));
        r.expire(later + TIMEOUT + SWEEP);
        assert_eq!(r.pending(), 0);
        assert!(matches!(
            r.add(&pkts[1], later + TIMEOUT + SWEEP),
            Fragment::Pending
        ));
    }

    #[test]
    fn unfragmented_and_foreign_frames_are_refused() {
        let pool = Pool::with_capacity(8 << 20).unwrap();
        let mut r = Reassembly::new();
        let (_, pkts) = fragments(&pool, 1, 100);
        assert_eq!(pkts.len(), 1);
        assert!(matches!(
            r.add(&pkts[0], Instant::now()),
            Fragment::Dropped("not a UDP fragment")
        ));
        assert!(matches!(
            r.add(&[0u8; 10], Instant::now()),
            Fragment::Dropped(_)
        ));
    }
}
