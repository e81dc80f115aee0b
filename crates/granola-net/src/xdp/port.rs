//! One AF_XDP socket whose UMEM is the pool's registration (the pool's
//! region, or the mapping of the pool group it belongs to), and the frame
//! bookkeeping every user of it needs: the server worker (`mod.rs`) and
//! the client (`client.rs`) share it.
//!
//! - **RX frames** are fresh pool slots handed to the kernel through the
//!   fill ring; a received frame is frozen into a [`Buf`], so what is
//!   decoded from it references the frame. Slots are never recycled by the
//!   port: whoever keeps a reference keeps the frame.
//! - **TX**: every buffer a descriptor names is held (owned [`Buf`]s, by
//!   UMEM address, oldest first) until its completion-ring entry comes
//!   back, so a stored value that is replaced or evicted meanwhile stays
//!   intact under the kernel.

use super::prog::Steering;
use super::{sys, FRAME_SIZE};
use crate::backend::XdpConfig;
use granola::{Buf, BufMut, Pool};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd};

/// Default ring size (entries of each of the four rings).
pub const DEFAULT_RING_SIZE: u32 = 2048;
/// Low 48 bits of an unaligned-mode descriptor: the chunk's address.
const ADDR_MASK: u64 = (1 << 48) - 1;

/// What one receive pass saw.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Received {
    /// Frames handed to the caller.
    pub(crate) delivered: usize,
    /// Frames dropped here: pieces of multi-buffer packets (requests and
    /// replies taken here fit one frame) or unknown addresses.
    pub(crate) dropped: usize,
}

/// An AF_XDP socket bound to one (interface, queue), its steering program
/// and its UMEM bookkeeping.
pub(crate) struct Port {
    // Field order is drop order: the socket and program go before the
    // buffers the kernel was told about.
    xsk: sys::Xsk,
    steering: Steering,
    pool: Pool,
    umem_base: usize,
    rx_slots: HashMap<u64, BufMut>,
    /// Buffers on the TX ring or in the kernel, with their UMEM address,
    /// in the order they were sent. Completions come back in that order
    /// (one queue, one ring), so releasing one is a `pop_front`; one out
    /// of order is searched for (and an address sent twice, a value in
    /// two replies, releases either: both hold the same slot).
    in_flight: VecDeque<(u64, Buf)>,
    descs: Vec<sys::Desc>,
    addrs: Vec<u64>,
    /// The interface's MAC address.
    pub(crate) local_mac: [u8; 6],
    /// Largest IP packet sent (the link MTU, capped to what one UMEM chunk
    /// holds with the Ethernet header).
    pub(crate) mtu: usize,
}

impl Port {
    /// Attaches the program steering UDP `ports` (and UDP fragments when
    /// `steer_fragments`) on `cfg`'s interface to a new AF_XDP socket whose
    /// UMEM is `pool`'s region. Must be called in the interface's network
    /// namespace.
    pub(crate) fn open(
        pool: Pool,
        cfg: &XdpConfig,
        ports: &[u16],
        steer_fragments: bool,
    ) -> io::Result<Port> {
        let ifindex = sys::if_index(&cfg.interface)?;
        let (local_mac, mtu) = sys::if_mac_mtu(&cfg.interface)?;
        let ring = if cfg.ring_size == 0 {
            DEFAULT_RING_SIZE
        } else {
            cfg.ring_size.next_power_of_two()
        };
        let steering = Steering::attach(
            ifindex,
            cfg.queue_id + 1,
            ports,
            steer_fragments,
            cfg.generic,
        )?;
        let xsk = sys::Xsk::open(&sys::XskSetup {
            umem: pool.registration(),
            chunk_size: FRAME_SIZE as u32,
            ring_size: ring,
            ifindex,
            queue: cfg.queue_id,
            force_copy: cfg.force_copy,
        })?;
        sys::map_update_fd(steering.map.as_fd(), cfg.queue_id, xsk.fd())?;
        let umem_base = pool.registration().0.as_ptr() as usize;
        Ok(Port {
            xsk,
            steering,
            pool,
            umem_base,
            rx_slots: HashMap::new(),
            in_flight: VecDeque::new(),
            descs: Vec::new(),
            addrs: Vec::new(),
            local_mac,
            mtu: (mtu as usize).clamp(576, FRAME_SIZE - super::frame::ETH_LEN),
        })
    }

    /// The pool RX frames and headers come from; the UMEM is its
    /// [registration](Pool::registration) (its region, or the mapping its
    /// group shares).
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// How packets are cut and laid out on this socket's link.
    pub(crate) fn shape(&self) -> super::frame::Shape {
        super::frame::Shape {
            mtu: self.mtu,
            copy_below: super::frame::copy_below(self.mode()),
        }
    }

    /// Copy or zero-copy.
    pub(crate) fn mode(&self) -> sys::XskMode {
        self.xsk.mode
    }

    /// "driver" or "generic": how the steering program is attached.
    pub(crate) fn attach(&self) -> &'static str {
        self.steering.attach
    }

    /// The socket's descriptor (readable when the RX ring has frames).
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.xsk.fd()
    }

    /// Keeps the fill ring full of fresh pool slots.
    pub(crate) fn refill(&mut self) {
        let free = self.xsk.fill_free() as usize;
        if free == 0 {
            return;
        }
        self.addrs.clear();
        for _ in 0..free {
            let Some(mut slot) = self.pool.alloc(FRAME_SIZE) else {
                break;
            };
            let addr = (slot.as_full_mut_slice().as_ptr() as usize - self.umem_base) as u64;
            self.rx_slots.insert(addr, slot);
            self.addrs.push(addr);
        }
        self.xsk.fill(self.addrs.drain(..));
    }

    /// Takes up to `max` received frames: `f` gets each frame (frozen) and
    /// the packet's byte range in it.
    pub(crate) fn receive(&mut self, max: usize, mut f: impl FnMut(Buf, Range<usize>)) -> Received {
        let mut seen = Received::default();
        self.descs.clear();
        self.xsk.recv(max, &mut self.descs);
        let mut continuing = false;
        for d in self.descs.iter() {
            let base = d.addr & ADDR_MASK;
            let off = (d.addr >> 48) as usize;
            let Some(mut slot) = self.rx_slots.remove(&base) else {
                seen.dropped += 1;
                continue;
            };
            let part_of_multi = continuing || d.more;
            continuing = d.more;
            let end = off + d.len as usize;
            if part_of_multi || end > slot.capacity() {
                seen.dropped += 1;
                continue;
            }
            slot.set_len(end);
            f(slot.freeze(), off..end);
            seen.delivered += 1;
        }
        seen
    }

    /// Puts one packet (its buffers, all in the UMEM) on the TX ring and
    /// holds them until their completions; gives it back when the ring has
    /// no room for all its descriptors.
    pub(crate) fn try_send(&mut self, pkt: Vec<Buf>) -> Result<(), Vec<Buf>> {
        if self.tx_room() < pkt.len() {
            return Err(pkt);
        }
        self.descs.clear();
        for (i, b) in pkt.iter().enumerate() {
            debug_assert!(self.pool.in_registration(b), "TX buffers live in the UMEM");
            self.descs.push(sys::Desc {
                addr: (b.as_ptr() as usize - self.umem_base) as u64,
                len: b.len() as u32,
                more: i + 1 < pkt.len(),
            });
        }
        self.xsk.send(&self.descs);
        for (d, b) in self.descs.iter().zip(pkt) {
            self.in_flight.push_back((d.addr, b));
        }
        Ok(())
    }

    /// Publishes queued TX descriptors and asks the kernel to send them.
    pub(crate) fn kick(&mut self) -> io::Result<()> {
        self.xsk.kick()
    }

    /// Descriptors the TX ring has room for.
    pub(crate) fn tx_room(&mut self) -> usize {
        self.xsk.tx_free() as usize
    }

    /// TX descriptors the kernel has not consumed yet.
    pub(crate) fn tx_pending(&self) -> u32 {
        self.xsk.tx_pending()
    }

    /// Buffers held for sends not completed yet.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Releases what the completion ring gives back; returns how many.
    pub(crate) fn complete(&mut self) -> usize {
        self.addrs.clear();
        self.xsk.completions(&mut self.addrs);
        let mut released = 0;
        for &a in self.addrs.iter() {
            let at = match self.in_flight.front() {
                Some(&(front, _)) if front == a => Some(0),
                _ => self.in_flight.iter().position(|&(x, _)| x == a),
            };
            match at.and_then(|i| self.in_flight.remove(i)) {
                Some(_) => released += 1,
                None => log::warn!("AF_XDP completion for unknown address {a:#x}"),
            }
        }
        released
    }

    /// The kernel's counters for this socket.
    pub(crate) fn statistics(&self) -> io::Result<libc::xdp_statistics> {
        self.xsk.statistics()
    }
}

impl Drop for Port {
    /// Gives outstanding sends half a second to complete; what is still in
    /// flight after that is leaked rather than freed under the kernel.
    fn drop(&mut self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
        while !self.in_flight.is_empty() && std::time::Instant::now() < deadline {
            let _ = self.xsk.kick();
            self.complete();
            std::thread::yield_now();
        }
        for (_, b) in self.in_flight.drain(..) {
            std::mem::forget(b);
        }
    }
}

impl AsFd for Port {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.xsk.fd()
    }
}
