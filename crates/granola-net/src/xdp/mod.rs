//! The AF_XDP datapath: UDP services served from the pool's memory with the
//! kernel stack bypassed.
//!
//! ```text
//!   sys     AF_XDP socket, UMEM, rings, bpf() (the module's unsafe code)
//!   prog    the XDP program steering the service ports to the socket
//!   frame   Ethernet/IPv4/UDP framing, checksums, IPv4 fragments
//!   (here)  the worker: fill ring -> RX -> handlers -> TX ring -> completions
//! ```
//!
//! **The pool is the UMEM.** The pool's whole data region is registered as
//! the UMEM in *unaligned chunks* mode, rather than carving a fixed-frame
//! UMEM out of it or building the pool inside a UMEM: the pool's size
//! classes place values at any 64-byte boundary, and with unaligned chunks
//! a descriptor may start anywhere in the UMEM, so a TX descriptor can name
//! a stored value where it lies, and RX frames are ordinary 4 KiB pool
//! slots. The cost: the kernel pins the whole region when the socket is
//! created (size the pool to what the server needs).
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
//! (multi-buffer, `XDP_USE_SG`). Datagrams above the link MTU go out as
//! IPv4 fragments (see `docs/wire-format.md`). Every buffer a descriptor
//! names is held in the in-flight table until its completion-ring entry
//! comes back, the same discipline as `MSG_ZEROCOPY`.
//!
//! **Neighbours** are static: replies go to the MAC that the peer's last
//! request came from, or to the entry given in [`XdpConfig::neighbours`].
//! There is no ARP; the kernel keeps answering ARP for the interface's
//! address (the program passes everything but the service ports).
//!
//! **The kernel path stays open.** The service ports stay bound to kernel
//! UDP sockets (that reserves them and resolves port 0); what the program
//! passes to the kernel for them — packets on other queues, fragmented
//! requests — is answered on those sockets by the same worker.

mod frame;
mod prog;
#[allow(unsafe_code)]
mod sys;

pub use frame::{parse_mac, parse_neighbour};
pub use sys::{enter_netns, XskMode};

use crate::backend::XdpConfig;
use crate::server::{DatagramHandler, ServerStats, UdpEndpoint, WorkerParts};
use crate::sys::Waker;
use crate::udp::{Datagram, UdpTx};
use frame::Station;
use granola::{Buf, BufMut, Pool};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Size of an RX frame (a pool slot) and of the UMEM chunk.
pub const FRAME_SIZE: usize = 4096;
/// Default ring size (entries of each of the four rings).
pub const DEFAULT_RING_SIZE: u32 = 2048;
/// Packets waiting for TX ring space beyond which new replies are dropped.
const MAX_BACKLOG: usize = 8192;
/// Low 48 bits of an unaligned-mode descriptor: the chunk's address.
const ADDR_MASK: u64 = (1 << 48) - 1;

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
    sys::xdp_prog_load(&prog::assemble(&[1], map.as_raw_fd()), "granola_probe")
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
    /// Frames received and dropped (not UDP, a fragment, unknown port).
    pub rx_dropped: AtomicU64,
    /// Packets placed on the TX ring.
    pub tx_packets: AtomicU64,
    /// Descriptors placed on the TX ring.
    pub tx_descriptors: AtomicU64,
    /// Completion-ring entries that released a held buffer.
    pub tx_completed: AtomicU64,
    /// Replies dropped (no neighbour, too large, no pool memory, backlog).
    pub tx_dropped: AtomicU64,
    /// Datagrams that reached the service ports' kernel sockets instead
    /// (other queues, fragmented requests) and were served there.
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
    // Field order is drop order: the socket and program go before the
    // buffers the kernel was told about.
    xsk: sys::Xsk,
    _steering: prog::Steering,
    pool: Pool,
    umem_base: usize,
    endpoints: Vec<Endpoint>,
    rx_slots: HashMap<u64, BufMut>,
    /// UMEM address -> buffers sent from it, oldest first.
    in_flight: HashMap<u64, VecDeque<Buf>>,
    in_flight_count: usize,
    backlog: VecDeque<Vec<Buf>>,
    learned: HashMap<Ipv4Addr, [u8; 6]>,
    neighbours: HashMap<Ipv4Addr, [u8; 6]>,
    local_mac: [u8; 6],
    local_ip: Option<Ipv4Addr>,
    mtu: usize,
    ip_id: u16,
    stop: Arc<AtomicBool>,
    waker: Arc<Waker>,
    stats: Arc<ServerStats>,
    xstats: Arc<XdpStats>,
    /// The kernel sockets bound to the service ports: they reserve the
    /// ports (and resolve port 0), and serve what the XDP program passes to
    /// the kernel (packets on other queues, fragmented requests).
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
    w.refill();
    let info = XdpInfo {
        mode: w.xsk.mode,
        attach: w._steering.attach,
        interface: cfg.interface.clone(),
        queue_id: cfg.queue_id,
        mtu: w.mtu as u32,
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
        let ifindex = sys::if_index(&cfg.interface)?;
        let (local_mac, mtu) = sys::if_mac_mtu(&cfg.interface)?;
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
            // socket (other queues, fragmented requests).
            kernel.push(UdpEndpoint::new(&pool, &scfg, txcfg, sock, &*svc));
        }
        let ring = if cfg.ring_size == 0 {
            DEFAULT_RING_SIZE
        } else {
            cfg.ring_size.next_power_of_two()
        };
        let steering = prog::Steering::attach(ifindex, cfg.queue_id + 1, &ports, cfg.generic)?;
        let xsk = sys::Xsk::open(&sys::XskSetup {
            umem: pool.region(),
            chunk_size: FRAME_SIZE as u32,
            ring_size: ring,
            ifindex,
            queue: cfg.queue_id,
            force_copy: cfg.force_copy,
        })?;
        sys::map_update_fd(steering.map.as_fd(), cfg.queue_id, xsk.fd())?;
        let umem_base = pool.region().0.as_ptr() as usize;
        Ok(Worker {
            xsk,
            _steering: steering,
            pool,
            umem_base,
            endpoints,
            rx_slots: HashMap::new(),
            in_flight: HashMap::new(),
            in_flight_count: 0,
            backlog: VecDeque::new(),
            learned: HashMap::new(),
            neighbours: cfg.neighbours.iter().copied().collect(),
            local_mac,
            local_ip: cfg.local_ip,
            // Each packet must also fit one UMEM chunk per descriptor.
            mtu: (mtu as usize).clamp(576, FRAME_SIZE - frame::ETH_LEN),
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
        let mut descs = Vec::new();
        let mut addrs = Vec::new();
        while !self.stop.load(Ordering::Relaxed) {
            self.refill();
            let busy = !self.backlog.is_empty() || self.xsk.tx_pending() > 0;
            let timeout = if busy {
                0
            } else if self.in_flight_count > 0 {
                1
            } else {
                100
            };
            {
                let mut fds = vec![self.xsk.fd(), self.waker.fd()];
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
            self.receive(&mut descs);
            self.transmit();
            self.complete(&mut addrs);
        }
        // Give outstanding sends a moment to complete; what is still in
        // flight after that is leaked rather than freed under the kernel.
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        while self.in_flight_count > 0 && std::time::Instant::now() < deadline {
            let _ = self.xsk.kick();
            self.complete(&mut addrs);
            std::thread::yield_now();
        }
        for (_, q) in self.in_flight.drain() {
            for b in q {
                std::mem::forget(b);
            }
        }
    }

    fn kernel_statistics(&self) {
        if let Ok(st) = self.xsk.statistics() {
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

    /// Keeps the fill ring full of fresh pool slots.
    fn refill(&mut self) {
        let free = self.xsk.fill_free() as usize;
        if free == 0 {
            return;
        }
        let mut addrs = Vec::with_capacity(free);
        for _ in 0..free {
            let Some(mut slot) = self.pool.alloc(FRAME_SIZE) else {
                break;
            };
            let addr = (slot.as_full_mut_slice().as_ptr() as usize - self.umem_base) as u64;
            self.rx_slots.insert(addr, slot);
            addrs.push(addr);
        }
        self.xsk.fill(addrs);
    }

    fn receive(&mut self, descs: &mut Vec<sys::Desc>) {
        descs.clear();
        self.xsk.recv(64, descs);
        let mut continuing = false;
        for d in descs.iter() {
            let base = d.addr & ADDR_MASK;
            let off = (d.addr >> 48) as usize;
            let Some(mut slot) = self.rx_slots.remove(&base) else {
                self.xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            // A multi-buffer packet (larger than a frame): requests must
            // fit one frame, so all its pieces are dropped.
            let part_of_multi = continuing || d.more;
            continuing = d.more;
            let end = off + d.len as usize;
            if part_of_multi || end > slot.capacity() {
                self.xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            slot.set_len(end);
            let buf = slot.freeze();
            let parsed = match frame::parse(&buf[off..end]) {
                Ok(p) => p,
                Err(_) => {
                    self.xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            };
            let Some(ep) = self
                .endpoints
                .iter_mut()
                .find(|e| e.port == parsed.dst.addr.port())
            else {
                self.xstats.rx_dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            self.learned.insert(*parsed.src.addr.ip(), parsed.src.mac);
            if self.local_ip.is_none() {
                self.local_ip = Some(*parsed.dst.addr.ip());
            }
            let dgram = Datagram {
                from: SocketAddr::V4(parsed.src.addr),
                data: buf.slice(off + parsed.payload.start..off + parsed.payload.end),
            };
            ep.handler.on_datagram(&dgram, &mut ep.tx);
            self.xstats.rx_delivered.fetch_add(1, Ordering::Relaxed);
        }
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
                log::debug!("AF_XDP reply to {to} dropped: {why}");
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
        // Pieces outside the UMEM (another pool's buffers) are copied in.
        let mut owned = Vec::with_capacity(pieces.len());
        for p in pieces {
            if self.pool.contains(&p) {
                owned.push(p);
            } else {
                owned.push(self.pool.alloc_copy(&p).ok_or("pool exhausted")?);
            }
        }
        let src = Station {
            mac: self.local_mac,
            addr: SocketAddrV4::new(ip, port),
        };
        let dst = Station { mac, addr: to };
        self.ip_id = self.ip_id.wrapping_add(1);
        frame::build(&self.pool, src, dst, self.ip_id, self.mtu, &owned, packets).map_err(|e| {
            match e {
                frame::BuildError::TooLarge => "larger than a UDP datagram",
                frame::BuildError::OutOfMemory => "pool exhausted",
            }
        })
    }

    /// Moves backlog packets onto the TX ring and kicks the kernel until the
    /// ring is drained or stops draining (copy mode sends a bounded batch
    /// per kick; the loop's next turn continues).
    fn push_backlog(&mut self) {
        let mut descs: Vec<sys::Desc> = Vec::with_capacity(frame::MAX_PIECES_PER_PACKET);
        let mut addrs = Vec::new();
        for _ in 0..64 {
            while let Some(pkt) = self.backlog.front() {
                if (self.xsk.tx_free() as usize) < pkt.len() {
                    break;
                }
                descs.clear();
                for (i, b) in pkt.iter().enumerate() {
                    descs.push(sys::Desc {
                        addr: (b.as_ptr() as usize - self.umem_base) as u64,
                        len: b.len() as u32,
                        more: i + 1 < pkt.len(),
                    });
                }
                self.xsk.send(&descs);
                let pkt = self.backlog.pop_front().expect("front exists");
                self.xstats.tx_packets.fetch_add(1, Ordering::Relaxed);
                self.xstats
                    .tx_descriptors
                    .fetch_add(pkt.len() as u64, Ordering::Relaxed);
                for (d, b) in descs.iter().zip(pkt) {
                    self.in_flight.entry(d.addr).or_default().push_back(b);
                    self.in_flight_count += 1;
                }
            }
            if self.xsk.tx_pending() == 0 && self.backlog.is_empty() {
                return;
            }
            let before = self.xsk.tx_pending();
            if let Err(e) = self.xsk.kick() {
                log::warn!("AF_XDP transmit: {e}");
                return;
            }
            self.stats.send_calls.fetch_add(1, Ordering::Relaxed);
            self.complete(&mut addrs);
            if self.xsk.tx_pending() >= before && self.backlog.is_empty() {
                // The kernel took nothing this time: try again next turn.
                return;
            }
        }
    }

    /// Releases what the completion ring gives back.
    fn complete(&mut self, addrs: &mut Vec<u64>) {
        addrs.clear();
        self.xsk.completions(addrs);
        for a in addrs.iter() {
            if let Some(q) = self.in_flight.get_mut(a) {
                q.pop_front();
                self.in_flight_count -= 1;
                if q.is_empty() {
                    self.in_flight.remove(a);
                }
                self.xstats.tx_completed.fetch_add(1, Ordering::Relaxed);
            } else {
                log::warn!("AF_XDP completion for unknown address {a:#x}");
            }
        }
    }
}
