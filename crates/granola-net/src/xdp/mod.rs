//! The AF_XDP datapath: UDP services served from the pool's memory with the
//! kernel stack bypassed.
//!
//! ```text
//!   sys     AF_XDP socket, UMEM, rings, bpf() (the module's unsafe code)
//!   prog    the XDP program steering the service ports to the socket
//!   port    one socket + UMEM: fill/RX frames, TX in flight until completion
//!   frame   Ethernet/IPv4/UDP framing, checksums, IPv4 fragments
//!   reassembly  requests that arrive as IPv4 fragments, put together
//!   client  a UDP client on a port (load generators)
//!   (here)  the worker: fill ring -> RX -> handlers -> TX ring -> completions
//! ```
//!
//! **The pool is the UMEM.** The pool's [registration](Pool::registration)
//! — its data region, or the mapping of the [pool group](Pool::new_group)
//! it was carved from — is registered as the UMEM in *unaligned chunks*
//! mode, rather than carving a fixed-frame UMEM out of it or building the
//! pool inside a UMEM: the pool's size classes place values at any 64-byte
//! boundary, and with unaligned chunks a descriptor may start anywhere in
//! the UMEM, so a TX descriptor can name a stored value where it lies, and
//! RX frames are ordinary 4 KiB pool slots. A server whose values live in
//! another pool than its frames (granola-kv: the store's pool, and the
//! connection pool with its own budget so the store cannot starve the fill
//! ring) makes the two one group: one UMEM names both. A reply piece from
//! outside the registration is copied in before it gets a descriptor. The
//! cost: the kernel pins the whole mapping when the socket is created
//! (size the pools to what the server needs).
//!
//! **RX** hands the kernel fresh 4 KiB pool slots through the fill ring; a
//! received frame is frozen into a shared [`Buf`] and the UDP payload is a
//! slice of it, so decoded fields reference the frame (zero-copy). Slots
//! are never recycled by the datapath: a handler may keep a reference.
//!
//! **TX** drains the same [`UdpTx`] the socket path uses. Each datagram
//! becomes packets of one header buffer (Ethernet, IPv4, UDP) followed by
//! one descriptor per piece — the copied run (frame header, object header,
//! small fields) and every zero-copy value — chained with `XDP_PKT_CONTD`
//! (multi-buffer, `XDP_USE_SG`). A packet whose payload is small is one
//! buffer instead, its payload copied behind the headers: below 512 bytes
//! in zero-copy mode, always in copy mode, where the kernel copies every
//! byte into an skb anyway and each extra descriptor costs it a page
//! fragment (`frame::copy_below`). Datagrams above the link MTU go out as
//! IPv4 fragments (see `docs/wire-format.md`). Every buffer a descriptor
//! names is held in the in-flight table until its completion-ring entry
//! comes back, the same discipline as `MSG_ZEROCOPY` (`port.rs`).
//!
//! **Clients** ([`XdpClient`]) use the same socket bookkeeping to send
//! requests from a few local ports to one server, for load generators that
//! must not be the bottleneck of an AF_XDP server.
//!
//! **Neighbours** are static: replies go to the MAC that the peer's last
//! request came from, or to the entry given in [`XdpConfig::neighbours`].
//! There is no ARP; the kernel keeps answering ARP for the interface's
//! address (the program passes everything but the service ports).
//!
//! **Requests larger than a frame** arrive as IPv4 fragments; the program
//! steers UDP fragments to the socket too and the worker reassembles them
//! (`reassembly.rs`, bounded in number, size and time).
//!
//! **The kernel path stays open.** The service ports stay bound to kernel
//! UDP sockets (that reserves them and resolves port 0); what the program
//! passes to the kernel for them — packets that arrive on other queues —
//! is answered on those sockets by the same worker.

mod client;
mod frame;
mod port;
mod prog;
mod reassembly;
#[allow(unsafe_code)]
mod sys;

pub use client::{Sent, XdpClient};
pub use frame::{parse_mac, parse_neighbour};
pub use port::DEFAULT_RING_SIZE;
pub use sys::{enter_netns, XskMode};

use crate::backend::XdpConfig;
use crate::server::{DatagramHandler, ServerStats, UdpEndpoint, WorkerParts};
use crate::sys::Waker;
use crate::udp::{Datagram, UdpTx};
use frame::Station;
use granola::{Buf, Pool};
use port::Port;
use reassembly::{Fragment, Reassembly};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Size of an RX frame (a pool slot) and of the UMEM chunk.
pub const FRAME_SIZE: usize = 4096;
/// Packets waiting for TX ring space beyond which new replies are dropped.
const MAX_BACKLOG: usize = 8192;

/// Checks that AF_XDP can run with `cfg` here; `Err` says why not.
pub fn probe(cfg: &XdpConfig) -> Result<(), String> {
    if cfg.interface.is_empty() {
        return Err("no interface given".into());
    }
    sys::if_index(&cfg.interface).map_err(|e| format!("interface {:?}: {e}", cfg.interface))?;
    sys::probe_socket().map_err(|e| match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => {
            "no privileges for AF_XDP sockets (needs CAP_NET_RAW)".to_string()
        }
        Some(libc::EAFNOSUPPORT) => "kernel built without AF_XDP".to_string(),
        _ => format!("cannot create an AF_XDP socket: {e}"),
    })?;
    let map = sys::xskmap_create(1)
        .map_err(|e| format!("cannot create an XSKMAP (bpf needs CAP_BPF/CAP_NET_ADMIN): {e}"))?;
    use std::os::fd::AsRawFd;
    sys::xdp_prog_load(
        &prog::assemble(&[1], map.as_raw_fd(), true),
        "granola_probe",
    )
    .map_err(|e| format!("XDP program refused: {e}"))?;
    Ok(())
}

/// What the running AF_XDP worker ended up with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpInfo {
    /// Copy or zero-copy.
    pub mode: XskMode,
    /// "driver" (native XDP) or "generic" (skb mode).
    pub attach: &'static str,
    /// Interface and queue.
    pub interface: String,
    /// Queue id.
    pub queue_id: u32,
    /// Link MTU used for framing.
    pub mtu: u32,
}

/// Counters of the AF_XDP worker (beside [`ServerStats`]).
#[derive(Debug, Default)]
pub struct XdpStats {
    /// Frames received and delivered to a handler.
    pub rx_delivered: AtomicU64,
    /// Frames received and dropped (not UDP, unknown port, a fragment
    /// that could not be reassembled).
    pub rx_dropped: AtomicU64,
    /// Requests that arrived as IPv4 fragments and were reassembled
    /// (counted in `rx_delivered` too when a service took them).
    pub rx_reassembled: AtomicU64,
    /// Packets placed on the TX ring.
    pub tx_packets: AtomicU64,
    /// Descriptors placed on the TX ring.
    pub tx_descriptors: AtomicU64,
    /// Completion-ring entries that released a held buffer.
    pub tx_completed: AtomicU64,
    /// Reply payload bytes sent as descriptors of their own, where they
    /// lie: values referenced in the UMEM (the pool's group, see
    /// [`granola::Pool::new_group`]).
    pub tx_bytes_gathered: AtomicU64,
    /// Reply payload bytes copied into the UMEM first because they lay
    /// outside it (another pool's buffers), then sent as descriptors.
    pub tx_bytes_copied_in: AtomicU64,
    /// Replies dropped (no neighbour, too large, no pool memory, backlog).
    pub tx_dropped: AtomicU64,
    /// Datagrams that reached the service ports' kernel sockets instead
    /// (other queues) and were served there.
    pub kernel_path_delivered: AtomicU64,
    /// Kernel: frames dropped before the RX ring (`XDP_STATISTICS`,
    /// refreshed when the worker is idle).
    pub kernel_rx_dropped: AtomicU64,
    /// Kernel: frames lost to a full RX ring.
    pub kernel_rx_ring_full: AtomicU64,
    /// Kernel: times the fill ring was empty.
    pub kernel_fill_ring_empty: AtomicU64,
    /// Kernel: invalid RX/TX descriptors.
    pub kernel_invalid_descs: AtomicU64,
}

struct Endpoint {
    port: u16,
    tx: UdpTx,
    handler: Box<dyn DatagramHandler>,
}

/// The AF_XDP worker: one socket on one (interface, queue), all UDP
/// services.
pub(crate) struct Worker {
    port: Port,
    /// How replies are cut into packets and laid out.
    shape: frame::Shape,
    /// For reassembled requests (copied out of the reassembly buffer).
    pool: Pool,
    /// Requests that arrived as IPv4 fragments, being put together.
    reassembly: Reassembly,
    endpoints: Vec<Endpoint>,
    backlog: VecDeque<Vec<Buf>>,
    learned: HashMap<Ipv4Addr, [u8; 6]>,
    neighbours: HashMap<Ipv4Addr, [u8; 6]>,
    local_ip: Option<Ipv4Addr>,
    ip_id: u16,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    stats: Arc<ServerStats>,
    xstats: Arc<XdpStats>,
    /// The kernel sockets bound to the service ports: they reserve the
    /// ports (and resolve port 0), and serve what the XDP program passes to
    /// the kernel (packets on other queues).
    kernel: Vec<UdpEndpoint>,
    /// Datagrams per `recvmmsg` on the kernel sockets.
    udp_batch: usize,
}

/// Starts the AF_XDP worker for `parts.udp`; returns what runs and the
/// thread's closure. Must be called in the network namespace of the
/// interface.
pub(crate) fn start(
    parts: WorkerParts,
    cfg: &XdpConfig,
    xstats: Arc<XdpStats>,
) -> io::Result<(XdpInfo, Box<dyn FnOnce() + Send>)> {
    let mut w = Worker::new(parts, cfg, xstats)?;
    // Fill before the server is reported started: a request that arrives
    // before the worker thread's first turn finds frames to land in.
    w.port.refill();
    let info = XdpInfo {
        mode: w.port.mode(),
        attach: w.port.attach(),
        interface: cfg.interface.clone(),
        queue_id: cfg.queue_id,
        mtu: w.port.mtu as u32,
    };
    log::info!(
        "AF_XDP on {} queue {}: {} mode, XDP program attached in {} mode, MTU {}",
        info.interface,
        info.queue_id,
        info.mode.name(),
        info.attach,
        info.mtu
    );
    Ok((info, Box::new(move || w.run())))
}

impl Worker {
    fn new(parts: WorkerParts, cfg: &XdpConfig, xstats: Arc<XdpStats>) -> io::Result<Worker> {
        let WorkerParts {
            pool,
            cfg: scfg,
            udp,
            waker,
            stop,
            stats,
            ..
        } = parts;
        let mut ports = Vec::new();
        let mut endpoints = Vec::new();
        let mut kernel = Vec::new();
        for (sock, svc) in udp {
            let port = sock.local_addr()?.port();
            ports.push(port);
            let mut txcfg = scfg.tx;
            txcfg.zerocopy = false; // the socket path's MSG_ZEROCOPY
            endpoints.push(Endpoint {
                port,
                tx: UdpTx::new(pool.clone(), txcfg, scfg.udp_max_datagram),
                handler: svc.handler(),
            });
            // A service port's kernel socket, served beside the AF_XDP
            // socket (packets on other queues).
            kernel.push(UdpEndpoint::new(&pool, &scfg, txcfg, sock, &*svc));
        }
        let port = Port::open(pool.clone(), cfg, &ports, true)?;
        let mut shape = port.shape();
        if let Some(min) = cfg.gather_min {
            shape.copy_below = min;
        }
        Ok(Worker {
            port,
            shape,
            pool,
            reassembly: Reassembly::new(),
            endpoints,
            backlog: VecDeque::new(),
            learned: HashMap::new(),
            neighbours: cfg.neighbours.iter().copied().collect(),
            local_ip: cfg.local_ip,
            ip_id: 1,
            stop,
            waker,
            stats,
            xstats,
            kernel,
            udp_batch: scfg.udp_batch,
        })
    }

    fn run(&mut self) {
        let mut ready = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            self.port.refill();
            let busy = !self.backlog.is_empty() || self.port.tx_pending() > 0;
            let timeout = if busy {
                0
            } else if self.port.in_flight() > 0 {
                1
            } else {
                100
            };
            {
                let mut fds = vec![self.port.fd(), self.waker.fd()];
                fds.extend(self.kernel.iter().map(|k| k.sock.as_fd()));
                sys::poll_readable(&fds, timeout, &mut ready);
            }
            if ready.get(1) == Some(&true) {
                self.waker.drain();
            }
            for (k, _) in self
                .kernel
                .iter_mut()
                .zip(ready.iter().skip(2))
                .filter(|(_, r)| **r)
            {
                let n = k.serve(self.udp_batch, &self.stats);
                self.xstats
                    .kernel_path_delivered
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            if !ready.iter().any(|&r| r) {
                self.kernel_statistics();
            }
            self.receive();
            self.transmit();
            self.complete();
        }
    }

    fn kernel_statistics(&self) {
        if let Ok(st) = self.port.statistics() {
            let x = &self.xstats;
            x.kernel_rx_dropped.store(st.rx_dropped, Ordering::Relaxed);
            x.kernel_rx_ring_full
                .store(st.rx_ring_full, Ordering::Relaxed);
            x.kernel_fill_ring_empty
                .store(st.rx_fill_ring_empty_descs, Ordering::Relaxed);
            x.kernel_invalid_descs
                .store(st.rx_invalid_descs + st.tx_invalid_descs, Ordering::Relaxed);
        }
    }

    fn receive(&mut self) {
        let Worker {
            port,
            pool,
            endpoints,
            learned,
            local_ip,
            xstats,
            reassembly,
            ..
        } = self;
        let now = Instant::now();
        reassembly.expire(now);
        let seen = port.receive(64, |buf, range| {
            let frame = &buf[range.clone()];
            let (parsed, data) = match frame::parse(frame) {
                Ok(p) => {
                    let off = range.start;
                    let data = buf.slice(off + p.payload.start..off + p.payload.end);
                    (p, data)
                }
                Err(frame::Reject::Fragment) => match reassembly.add(frame, now) {
                    Fragment::Pending => return,
                    Fragment::Complete(d) => {
                        // One copy, from the reassembly buffer into the
                        // pool (the handler gets a pool `Buf`).
                        let Some(data) = pool.alloc_copy(d.payload()) else {
                            log::debug!("AF_XDP: no pool memory for a reassembled request");
                            xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                            return;
                        };
                        xstats.rx_reassembled.fetch_add(1, Ordering::Relaxed);
                        let p = frame::Incoming {
                            src: d.src,
                            dst: d.dst,
                            payload: 0..data.len(),
                        };
                        (p, data)
                    }
                    Fragment::Dropped(why) => {
                        log::debug!("AF_XDP: fragment dropped: {why}");
                        xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                },
                Err(frame::Reject::NotUdp) => {
                    xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            let Some(ep) = endpoints
                .iter_mut()
                .find(|e| e.port == parsed.dst.addr.port())
            else {
                xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                return;
            };
            learned.insert(*parsed.src.addr.ip(), parsed.src.mac);
            if local_ip.is_none() {
                *local_ip = Some(*parsed.dst.addr.ip());
            }
            let dgram = Datagram {
                from: SocketAddr::V4(parsed.src.addr),
                data,
            };
            ep.handler.on_datagram(&dgram, &mut ep.tx);
            xstats.rx_delivered.fetch_add(1, Ordering::Relaxed);
        });
        self.xstats
            .rx_dropped
            .fetch_add(seen.dropped as u64, Ordering::Relaxed);
    }

    fn transmit(&mut self) {
        let mut out: Vec<(u16, SocketAddr, Vec<Buf>)> = Vec::new();
        for ep in &mut self.endpoints {
            let port = ep.port;
            ep.tx
                .drain_pieces(|to, pieces| out.push((port, to, pieces)));
            crate::server::account(&self.stats, &ep.tx.take_stats());
        }
        let mut packets = Vec::new();
        for (port, to, pieces) in out {
            if let Err(why) = self.frame(port, to, pieces, &mut packets) {
                self.xstats.tx_dropped.fetch_add(1, Ordering::Relaxed);
                log::debug!(
                    "AF_XDP reply to {to} dropped: {why} (frame pool: {:?}, TX held: {}, backlog: {})",
                    self.port.pool().stats(),
                    self.port.in_flight(),
                    self.backlog.len()
                );
            }
        }
        for p in packets {
            if self.backlog.len() >= MAX_BACKLOG {
                self.xstats.tx_dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            self.backlog.push_back(p);
        }
        self.push_backlog();
    }

    fn frame(
        &mut self,
        port: u16,
        to: SocketAddr,
        pieces: Vec<Buf>,
        packets: &mut Vec<Vec<Buf>>,
    ) -> Result<(), &'static str> {
        let SocketAddr::V4(to) = to else {
            return Err("IPv6 destination");
        };
        let mac = self
            .neighbours
            .get(to.ip())
            .or_else(|| self.learned.get(to.ip()))
            .copied()
            .ok_or("no neighbour entry")?;
        let ip = self.local_ip.ok_or("local address unknown")?;
        let src = Station {
            mac: self.port.local_mac,
            addr: SocketAddrV4::new(ip, port),
        };
        let dst = Station { mac, addr: to };
        self.ip_id = self.ip_id.wrapping_add(1);
        let placed = frame::build(
            self.port.pool(),
            (src, dst),
            self.ip_id,
            self.shape,
            &pieces,
            packets,
        )
        .map_err(frame::BuildError::reason)?;
        let x = &self.xstats;
        x.tx_bytes_gathered
            .fetch_add(placed.gathered as u64, Ordering::Relaxed);
        x.tx_bytes_copied_in
            .fetch_add(placed.copied_in as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Moves backlog packets onto the TX ring and kicks the kernel until the
    /// ring is drained or stops draining (copy mode sends a bounded batch
    /// per kick; the loop's next turn continues).
    fn push_backlog(&mut self) {
        for _ in 0..64 {
            while let Some(pkt) = self.backlog.pop_front() {
                let pieces = pkt.len() as u64;
                if let Err(pkt) = self.port.try_send(pkt) {
                    self.backlog.push_front(pkt);
                    break;
                }
                self.xstats.tx_packets.fetch_add(1, Ordering::Relaxed);
                self.xstats
                    .tx_descriptors
                    .fetch_add(pieces, Ordering::Relaxed);
            }
            if self.port.tx_pending() == 0 && self.backlog.is_empty() {
                return;
            }
            let before = self.port.tx_pending();
            if let Err(e) = self.port.kick() {
                log::warn!("AF_XDP transmit: {e}");
                return;
            }
            self.stats.send_calls.fetch_add(1, Ordering::Relaxed);
            self.complete();
            if self.port.tx_pending() >= before && self.backlog.is_empty() {
                // The kernel took nothing this time: try again next turn.
                return;
            }
        }
    }

    /// Releases what the completion ring gives back.
    fn complete(&mut self) {
        let n = self.port.complete();
        self.xstats
            .tx_completed
            .fetch_add(n as u64, Ordering::Relaxed);
    }
}
