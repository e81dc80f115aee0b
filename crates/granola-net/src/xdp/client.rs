//! A UDP client over AF_XDP: datagrams from a few local ports to one peer.
//!
//! Made for load generators. A kernel UDP client spends about as much CPU
//! per request as the server it measures, so on a machine with a core for
//! each side it cannot drive an AF_XDP server to saturation (Cornflakes'
//! client ran on DPDK for the same reason). This one sends and receives
//! through the same [`Port`] as the server worker: requests are copied into
//! pool frames behind their headers (one descriptor per packet in copy
//! mode), replies are parsed in the RX frame.
//!
//! **Replies larger than the MTU** arrive as IPv4 fragments. The steering
//! program hands every IPv4 fragment on the queue to the socket (a
//! fragment after the first carries no UDP port to match: run the client
//! on an interface meant for the benchmark) and [`XdpClient::recv`]
//! reassembles them, as the server worker does. Leaving them to the kernel
//! instead would make the kernel reassemble them in the softirq of the
//! sender: on a veth pair that is the server's thread, whose CPU time per
//! request then carries the client's receive path.
//!
//! Addresses: the source IPv4 address is the one the kernel would use to
//! reach the peer (or [`XdpConfig::local_ip`]); the local ports are
//! reserved by kernel UDP sockets that stay bound (the steering program
//! takes the replies before the kernel sees them); the peer's MAC comes
//! from [`XdpConfig::neighbours`] or the kernel's neighbour table, which a
//! kernel datagram to the peer's discard port fills if needed (no ARP is
//! spoken here).

use super::frame::{self, Station};
use super::port::Port;
use super::reassembly::{Fragment, Reassembly};
use super::XdpInfo;
use crate::backend::XdpConfig;
use granola::{Buf, Pool};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

/// How long [`XdpClient::open`] waits for the kernel to resolve the
/// peer's MAC address.
const NEIGHBOUR_WAIT: Duration = Duration::from_secs(2);

/// A UDP client on an AF_XDP socket (see the module docs).
pub struct XdpClient {
    port: Port,
    /// Kernel sockets holding the local ports; fragmented replies reach
    /// them (see [`recv_kernel`](Self::recv_kernel)).
    reserved: Vec<UdpSocket>,
    ports: Vec<u16>,
    src_ip: Ipv4Addr,
    peer: Station,
    ip_id: u16,
    packets: Vec<Vec<Buf>>,
    reassembly: Reassembly,
    info: XdpInfo,
}

/// What [`XdpClient::send`] did with a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// On the TX ring (sent by the next [`XdpClient::flush`]).
    Queued,
    /// Not queued: the TX ring or the pool is full until completions come
    /// back; flush and try again.
    Full,
}

impl XdpClient {
    /// Opens an AF_XDP socket on `cfg`'s interface and queue, with `pool`'s
    /// region as its UMEM, for `n_ports` new local UDP ports talking to
    /// `peer`. Must be called in the interface's network namespace.
    pub fn open(
        cfg: &XdpConfig,
        pool: Pool,
        peer: SocketAddrV4,
        n_ports: usize,
    ) -> io::Result<XdpClient> {
        let route = UdpSocket::bind("0.0.0.0:0")?;
        route.connect(peer)?;
        let src_ip = match (cfg.local_ip, route.local_addr()?) {
            (Some(ip), _) => ip,
            (None, SocketAddr::V4(a)) => *a.ip(),
            (None, a) => return Err(io::Error::other(format!("route to {peer} uses {a}"))),
        };
        let peer_mac = match cfg.neighbours.iter().find(|(ip, _)| ip == peer.ip()) {
            Some(&(_, mac)) => mac,
            None => resolve_neighbour(&route, *peer.ip(), &cfg.interface)?,
        };
        let mut reserved = Vec::with_capacity(n_ports);
        let mut ports = Vec::with_capacity(n_ports);
        for _ in 0..n_ports.max(1) {
            let s = UdpSocket::bind(SocketAddrV4::new(src_ip, 0))?;
            s.set_nonblocking(true)?;
            ports.push(s.local_addr()?.port());
            reserved.push(s);
        }
        // Fragments too: replies larger than the MTU are reassembled here
        // (see the module docs).
        let mut port = Port::open(pool, cfg, &ports, true)?;
        port.refill();
        let info = XdpInfo {
            mode: port.mode(),
            attach: port.attach(),
            interface: cfg.interface.clone(),
            queue_id: cfg.queue_id,
            mtu: port.mtu as u32,
        };
        Ok(XdpClient {
            port,
            reserved,
            ports,
            src_ip,
            peer: Station {
                mac: peer_mac,
                addr: peer,
            },
            ip_id: 1,
            packets: Vec::new(),
            reassembly: Reassembly::new(),
            info,
        })
    }

    /// Mode, attachment, interface, queue and MTU.
    pub fn info(&self) -> &XdpInfo {
        &self.info
    }

    /// The local UDP ports, in the order they were asked for.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }

    /// The socket's descriptor: readable when replies are waiting (for
    /// poll/epoll; [`recv`](Self::recv) never blocks).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.port.fd()
    }

    /// Queues one datagram from local port `from` to the peer; datagrams
    /// above the MTU go out as IPv4 fragments. `Err` for a datagram above
    /// the UDP limit.
    pub fn send(&mut self, from: u16, payload: &[u8]) -> io::Result<Sent> {
        let Some(body) = self.port.pool().alloc_copy(payload) else {
            return Ok(Sent::Full);
        };
        let src = Station {
            mac: self.port.local_mac,
            addr: SocketAddrV4::new(self.src_ip, from),
        };
        self.packets.clear();
        let id = self.ip_id.wrapping_add(1);
        match frame::build(
            self.port.pool(),
            (src, self.peer),
            id,
            self.port.shape(),
            &[body],
            &mut self.packets,
        ) {
            Ok(_) => {}
            Err(frame::BuildError::OutOfMemory) => return Ok(Sent::Full),
            Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidInput, e.reason())),
        }
        let descriptors: usize = self.packets.iter().map(Vec::len).sum();
        if self.port.tx_room() < descriptors {
            return Ok(Sent::Full);
        }
        self.ip_id = id;
        for pkt in self.packets.drain(..) {
            if self.port.try_send(pkt).is_err() {
                unreachable!("room was checked for every descriptor");
            }
        }
        Ok(Sent::Queued)
    }

    /// Sends what is queued and releases completed frames.
    pub fn flush(&mut self) -> io::Result<()> {
        self.port.kick()?;
        self.port.complete();
        Ok(())
    }

    /// Takes up to `max` received frames, calling `f(local port, payload)`
    /// for each UDP datagram from the peer (one that came in fragments
    /// once its last fragment is in); other frames are dropped. Returns
    /// the number of frames taken (0: nothing was waiting). Keeps the fill
    /// ring stocked.
    pub fn recv(&mut self, max: usize, mut f: impl FnMut(u16, &[u8])) -> usize {
        let peer = self.peer.addr;
        let now = Instant::now();
        let reassembly = &mut self.reassembly;
        reassembly.expire(now);
        let seen = self.port.receive(max, |buf, range| {
            let frame = &buf[range];
            match frame::parse(frame) {
                Ok(p) if p.src.addr == peer => f(p.dst.addr.port(), &frame[p.payload]),
                Err(frame::Reject::Fragment) => {
                    if let Fragment::Complete(d) = reassembly.add(frame, now) {
                        if d.src.addr == peer {
                            f(d.dst.addr.port(), d.payload());
                        }
                    }
                }
                _ => {}
            }
        });
        self.port.refill();
        seen.delivered + seen.dropped
    }

    /// The kernel sockets holding the local ports: what the steering
    /// program leaves to the kernel for them (packets on other queues)
    /// arrives there. Readable when one is waiting.
    pub fn kernel_fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        self.reserved.iter().map(|s| s.as_fd())
    }

    /// Reads every datagram from the peer waiting on the kernel sockets
    /// (never blocks), calling `f(local port, payload)`; `buf` must hold
    /// the largest datagram expected. Returns how many were read.
    pub fn recv_kernel(&mut self, buf: &mut [u8], mut f: impl FnMut(u16, &[u8])) -> usize {
        let mut n = 0;
        for (s, &port) in self.reserved.iter().zip(&self.ports) {
            while let Ok((len, from)) = s.recv_from(buf) {
                if from == SocketAddr::V4(self.peer.addr) {
                    f(port, &buf[..len]);
                    n += 1;
                }
            }
        }
        n
    }
}

/// The MAC address of `ip` from the kernel's neighbour table
/// (`/proc/thread-self/net/arp`), sending a datagram to its discard port to make the
/// kernel resolve it when it is not there yet.
fn resolve_neighbour(route: &UdpSocket, ip: Ipv4Addr, interface: &str) -> io::Result<[u8; 6]> {
    let deadline = Instant::now() + NEIGHBOUR_WAIT;
    let mut asked = false;
    loop {
        if let Some(mac) = arp_entry(ip, interface)? {
            return Ok(mac);
        }
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no neighbour entry for {ip} on {interface} (give it as IP=MAC)"),
            ));
        }
        if !asked {
            // Any reply or none: the kernel resolves the address to send.
            let _ = route.send_to(b"", SocketAddrV4::new(ip, 9));
            asked = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a complete entry for `ip` on `interface` from the calling
/// thread's network namespace's ARP table (`/proc/net` would name the
/// main thread's, which may be another namespace).
fn arp_entry(ip: Ipv4Addr, interface: &str) -> io::Result<Option<[u8; 6]>> {
    let table = std::fs::read_to_string("/proc/thread-self/net/arp")?;
    Ok(parse_arp(&table, ip, interface))
}

/// `/proc/net/arp` lines: IP address, HW type, Flags, HW address, Mask,
/// Device; flag 0x2 marks a complete entry.
fn parse_arp(table: &str, ip: Ipv4Addr, interface: &str) -> Option<[u8; 6]> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let flags = u32::from_str_radix(f.get(2)?.trim_start_matches("0x"), 16).ok()?;
        (f.len() >= 6
            && f[0].parse::<Ipv4Addr>().ok()? == ip
            && f[5] == interface
            && flags & 0x2 != 0)
            .then(|| frame::parse_mac(f[3]))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arp_table_lines() {
        let t = "IP address       HW type     Flags       HW address            Mask     Device\n\
                 10.212.0.1       0x1         0x2         02:aa:bb:cc:dd:01     *        gxbc1\n\
                 10.212.0.3       0x1         0x0         00:00:00:00:00:00     *        gxbc1\n";
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(
            parse_arp(t, ip("10.212.0.1"), "gxbc1"),
            Some([2, 0xaa, 0xbb, 0xcc, 0xdd, 1])
        );
        assert_eq!(parse_arp(t, ip("10.212.0.1"), "eth0"), None, "other device");
        assert_eq!(parse_arp(t, ip("10.212.0.3"), "gxbc1"), None, "incomplete");
        assert_eq!(parse_arp(t, ip("10.212.0.2"), "gxbc1"), None, "absent");
    }
}
