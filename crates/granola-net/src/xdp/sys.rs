//! The AF_XDP and bpf() syscalls: the XDP datapath's only unsafe code.
//!
//! Everything exported is safe: an [`Xsk`] owns its socket and the four
//! ring mappings and only ever hands out copies of ring entries; the bpf
//! helpers take instruction words and return owned fds. What the kernel may
//! read or write through a descriptor (UMEM bytes) is the caller's
//! business, and `xdp/mod.rs` keeps a reference to every pool buffer a
//! descriptor names until the kernel gives the descriptor back.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `if_nametoindex` in the calling thread's network namespace.
pub(crate) fn if_index(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string for the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(idx)
    }
}

/// The interface's MAC address and MTU (`SIOCGIFHWADDR`, `SIOCGIFMTU`), in
/// the calling thread's network namespace.
pub(crate) fn if_mac_mtu(name: &str) -> io::Result<([u8; 6], u32)> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface name too long",
        ));
    }
    let sock = std::net::UdpSocket::bind("0.0.0.0:0")?;
    // SAFETY: ifreq is plain data; all-zero is valid.
    let mut req: libc::ifreq = unsafe { zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: `req` is a valid ifreq naming the interface; the kernel writes
    // the hardware address into its union.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR, &mut req) })?;
    // SAFETY: SIOCGIFHWADDR filled ifru_hwaddr.
    let sa = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (d, s) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *d = *s as u8;
    }
    // SAFETY: as above, for the MTU.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut req) })?;
    // SAFETY: SIOCGIFMTU filled ifru_mtu.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    Ok((mac, mtu.max(0) as u32))
}

/// Creates and closes an AF_XDP socket: `Err` says why they are refused.
pub(crate) fn probe_socket() -> io::Result<()> {
    // SAFETY: plain socket(2) call; the fd is owned (and closed) at once.
    let raw = cvt(unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `raw` is a fresh fd nothing else owns.
    drop(unsafe { OwnedFd::from_raw_fd(raw) });
    Ok(())
}

/// Moves the calling thread into the network namespace `ns` (an open
/// `/run/netns/NAME` or `/proc/PID/ns/net`). Threads it spawns afterwards
/// start there too; sockets keep the namespace they were created in.
pub fn enter_netns(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: setns only reads the fd, which is live for the borrow.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

/// Waits until one of `fds` is readable or `timeout_ms` passes; returns
/// which were readable.
pub(crate) fn poll_readable(fds: &[BorrowedFd<'_>], timeout_ms: i32, out: &mut Vec<bool>) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is a valid array of p.len() pollfds for the call.
    let n = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, timeout_ms) };
    out.clear();
    out.extend(p.iter().map(|e| n > 0 && e.revents != 0));
}

// ---------------------------------------------------------------- bpf()

const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_long = 2;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;

/// `union bpf_attr` as a zeroed block the commands fill field by field (the
/// kernel accepts a larger-than-known attr when the tail is zero).
#[repr(C, align(8))]
struct BpfAttr([u32; 32]);

fn bpf(cmd: libc::c_long, attr: &mut BpfAttr) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid, fully initialised bpf_attr of the size
    // passed; every pointer stored in it (set by the callers) points at
    // memory that outlives the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut BpfAttr,
            size_of::<BpfAttr>() as u32,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: these commands return a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as RawFd) })
}

/// Creates an XSKMAP with `entries` slots (one per queue id).
pub(crate) fn xskmap_create(entries: u32) -> io::Result<OwnedFd> {
    let mut a = BpfAttr([0; 32]);
    a.0[0] = BPF_MAP_TYPE_XSKMAP;
    a.0[1] = 4; // key: queue id
    a.0[2] = 4; // value: socket fd
    a.0[3] = entries.max(1);
    bpf(BPF_MAP_CREATE, &mut a)
}

/// `map[key] = fd`.
pub(crate) fn map_update_fd(map: BorrowedFd<'_>, key: u32, fd: BorrowedFd<'_>) -> io::Result<()> {
    let key_v = key;
    let val = fd.as_raw_fd() as u32;
    let mut a = BpfAttr([0; 32]);
    a.0[0] = map.as_raw_fd() as u32;
    let kp = &key_v as *const u32 as u64;
    let vp = &val as *const u32 as u64;
    a.0[2] = kp as u32;
    a.0[3] = (kp >> 32) as u32;
    a.0[4] = vp as u32;
    a.0[5] = (vp >> 32) as u32;
    // flags (u64 at 6..8) = BPF_ANY.
    // SAFETY: as in `bpf`; key and value live until the call returns. The
    // command returns 0, not an fd, so it is not wrapped.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_UPDATE_ELEM,
            &mut a as *mut BpfAttr,
            size_of::<BpfAttr>() as u32,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Loads an XDP program; on a verifier refusal the error carries its log.
pub(crate) fn xdp_prog_load(insns: &[u64], name: &str) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut log = vec![0u8; 64 << 10];
    let mut a = BpfAttr([0; 32]);
    let ip = insns.as_ptr() as u64;
    let lp = license.as_ptr() as u64;
    let logp = log.as_mut_ptr() as u64;
    a.0[0] = BPF_PROG_TYPE_XDP;
    a.0[1] = insns.len() as u32;
    a.0[2] = ip as u32;
    a.0[3] = (ip >> 32) as u32;
    a.0[4] = lp as u32;
    a.0[5] = (lp >> 32) as u32;
    a.0[6] = 1; // log_level
    a.0[7] = log.len() as u32;
    a.0[8] = logp as u32;
    a.0[9] = (logp >> 32) as u32;
    // kern_version (10), prog_flags (11), prog_name (12..16). The program
    // reads only the linear head, so it is frags-aware: without
    // BPF_F_XDP_HAS_FRAGS a driver-mode program makes a veth drop every
    // frame larger than a page (TCP GSO segments passing by).
    const BPF_F_XDP_HAS_FRAGS: u32 = 1 << 5;
    a.0[11] = BPF_F_XDP_HAS_FRAGS;
    let mut nm = [0u8; 16];
    for (d, s) in nm.iter_mut().take(15).zip(name.bytes()) {
        *d = s;
    }
    for (i, w) in nm.chunks(4).enumerate() {
        a.0[12 + i] = u32::from_ne_bytes([w[0], w[1], w[2], w[3]]);
    }
    bpf(BPF_PROG_LOAD, &mut a).map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        let text = String::from_utf8_lossy(&log[..end]);
        let tail: String = text
            .chars()
            .rev()
            .take(600)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        io::Error::new(e.kind(), format!("{e}; verifier: {tail}"))
    })
}

/// Attaches an XDP program to `ifindex` with a bpf link (detached when the
/// returned fd closes). `flags`: `XDP_FLAGS_DRV_MODE` (4) or
/// `XDP_FLAGS_SKB_MODE` (2).
pub(crate) fn xdp_link_create(
    prog: BorrowedFd<'_>,
    ifindex: u32,
    flags: u32,
) -> io::Result<OwnedFd> {
    let mut a = BpfAttr([0; 32]);
    a.0[0] = prog.as_raw_fd() as u32;
    a.0[1] = ifindex;
    a.0[2] = BPF_XDP;
    a.0[3] = flags;
    bpf(BPF_LINK_CREATE, &mut a)
}

// ---------------------------------------------------------------- AF_XDP

/// One mmapped ring: producer and consumer words and the entries.
struct Ring<T: Copy> {
    map: NonNull<libc::c_void>,
    map_len: usize,
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    entries: NonNull<T>,
    mask: u32,
    size: u32,
    /// Our side's index (producer for fill/TX, consumer for RX/completion).
    local: u32,
    /// Last seen index of the other side.
    cached: u32,
}

// SAFETY: the ring memory is shared with the kernel only; `Ring` is owned
// by one `Xsk`, which is used from one thread at a time (&mut self).
unsafe impl<T: Copy> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, size: u32, pgoff: u64) -> io::Result<Ring<T>> {
        let map_len = off.desc as usize + size as usize * size_of::<T>();
        // SAFETY: mapping a fresh shared region of the socket at the
        // documented page offset; the result is checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = p.cast::<u8>();
        // SAFETY: the kernel reported these offsets inside the mapping; the
        // words are 4-byte aligned u32s the kernel updates atomically.
        let at = |o: u64| unsafe { NonNull::new_unchecked(base.add(o as usize)) };
        Ok(Ring {
            // SAFETY: mmap succeeded, so `p` is non-null.
            map: unsafe { NonNull::new_unchecked(p) },
            map_len,
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            entries: at(off.desc).cast(),
            mask: size - 1,
            size,
            local: 0,
            cached: 0,
        })
    }

    fn prod(&self) -> &AtomicU32 {
        // SAFETY: points into the live mapping (dropped only with self).
        unsafe { self.producer.as_ref() }
    }
    fn cons(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { self.consumer.as_ref() }
    }

    // Producer side (fill, TX).
    fn free(&mut self) -> u32 {
        self.cached = self.cons().load(Ordering::Acquire);
        self.size - self.local.wrapping_sub(self.cached)
    }
    fn push(&mut self, v: T) {
        let i = (self.local & self.mask) as usize;
        // SAFETY: i < size, inside the entries array; the caller checked
        // free() so the kernel does not own this slot.
        unsafe { self.entries.as_ptr().add(i).write_volatile(v) };
        self.local = self.local.wrapping_add(1);
    }
    fn submit(&mut self) {
        self.prod().store(self.local, Ordering::Release);
    }
    fn pending(&self) -> u32 {
        self.local.wrapping_sub(self.cons().load(Ordering::Acquire))
    }

    // Consumer side (RX, completion).
    fn available(&mut self) -> u32 {
        self.cached = self.prod().load(Ordering::Acquire);
        self.cached.wrapping_sub(self.local)
    }
    fn take(&mut self) -> T {
        let i = (self.local & self.mask) as usize;
        // SAFETY: i < size; available() said the kernel produced it.
        let v = unsafe { self.entries.as_ptr().add(i).read_volatile() };
        self.local = self.local.wrapping_add(1);
        v
    }
    fn release(&mut self) {
        self.cons().store(self.local, Ordering::Release);
    }
    fn needs_wakeup(&self) -> bool {
        // SAFETY: points into the live mapping.
        unsafe { self.flags.as_ref() }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

impl<T: Copy> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped; nothing refers to it
        // after the owner drops.
        unsafe { libc::munmap(self.map.as_ptr(), self.map_len) };
    }
}

/// A received or transmitted frame descriptor: `addr` is a UMEM offset.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Desc {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    /// More descriptors of the same packet follow (`XDP_PKT_CONTD`).
    pub(crate) more: bool,
}

/// Copy mode (the kernel copies frames between the UMEM and skbs) or
/// zero-copy (the driver DMAs straight from/to the UMEM).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XskMode {
    /// `XDP_COPY`.
    Copy,
    /// `XDP_ZEROCOPY`.
    ZeroCopy,
}

impl XskMode {
    /// "copy" or "zero-copy".
    pub fn name(self) -> &'static str {
        match self {
            XskMode::Copy => "copy",
            XskMode::ZeroCopy => "zero-copy",
        }
    }
}

/// An AF_XDP socket with its own UMEM, bound to one queue.
pub(crate) struct Xsk {
    fd: OwnedFd,
    fill: Ring<u64>,
    comp: Ring<u64>,
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    pub(crate) mode: XskMode,
}

/// What [`Xsk::open`] needs.
pub(crate) struct XskSetup {
    /// UMEM start and length (page-aligned; the pool's region).
    pub(crate) umem: (NonNull<u8>, usize),
    pub(crate) chunk_size: u32,
    pub(crate) ring_size: u32,
    pub(crate) ifindex: u32,
    pub(crate) queue: u32,
    /// Only copy mode (do not try zero-copy).
    pub(crate) force_copy: bool,
}

fn setsockopt<T>(fd: RawFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a valid T for the call; the kernel reads size_of::<T>().
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_XDP,
            opt,
            (v as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

impl Xsk {
    /// Creates the socket, registers the UMEM (unaligned chunks: any pool
    /// address can be a frame), sizes and maps the rings and binds with
    /// multi-buffer, zero-copy first unless `force_copy`.
    pub(crate) fn open(s: &XskSetup) -> io::Result<Xsk> {
        let mut last_err = None;
        let modes: &[XskMode] = if s.force_copy {
            &[XskMode::Copy]
        } else {
            &[XskMode::ZeroCopy, XskMode::Copy]
        };
        for &mode in modes {
            match Xsk::open_mode(s, mode) {
                Ok(x) => return Ok(x),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.expect("at least one mode tried"))
    }

    fn open_mode(s: &XskSetup, mode: XskMode) -> io::Result<Xsk> {
        // SAFETY: plain socket(2) call; the fd is owned below.
        let raw =
            cvt(unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
        // SAFETY: `raw` is a fresh fd nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let reg = libc::xdp_umem_reg {
            addr: s.umem.0.as_ptr() as u64,
            len: s.umem.1 as u64,
            chunk_size: s.chunk_size,
            headroom: 0,
            flags: libc::XDP_UMEM_UNALIGNED_CHUNK_FLAG,
            tx_metadata_len: 0,
        };
        // The kernel pins the UMEM pages; the pool keeps the region mapped
        // for at least as long as the socket (the worker owns both).
        setsockopt(raw, libc::XDP_UMEM_REG, &reg)?;
        setsockopt(raw, libc::XDP_UMEM_FILL_RING, &s.ring_size)?;
        setsockopt(raw, libc::XDP_UMEM_COMPLETION_RING, &s.ring_size)?;
        setsockopt(raw, libc::XDP_RX_RING, &s.ring_size)?;
        setsockopt(raw, libc::XDP_TX_RING, &s.ring_size)?;
        // SAFETY: xdp_mmap_offsets is plain data.
        let mut off: libc::xdp_mmap_offsets = unsafe { zeroed() };
        let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: `off` is writable for `len` bytes.
        cvt(unsafe {
            libc::getsockopt(
                raw,
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&mut off as *mut libc::xdp_mmap_offsets).cast(),
                &mut len,
            )
        })?;
        let fill = Ring::map(raw, &off.fr, s.ring_size, libc::XDP_UMEM_PGOFF_FILL_RING)?;
        let comp = Ring::map(
            raw,
            &off.cr,
            s.ring_size,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
        )?;
        let rx = Ring::map(raw, &off.rx, s.ring_size, libc::XDP_PGOFF_RX_RING as u64)?;
        let tx = Ring::map(raw, &off.tx, s.ring_size, libc::XDP_PGOFF_TX_RING as u64)?;
        let mode_flag = match mode {
            XskMode::Copy => libc::XDP_COPY,
            XskMode::ZeroCopy => libc::XDP_ZEROCOPY,
        };
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: mode_flag | libc::XDP_USE_SG,
            sxdp_ifindex: s.ifindex,
            sxdp_queue_id: s.queue,
            sxdp_shared_umem_fd: 0,
        };
        // A queue whose last socket was just closed stays busy until the
        // kernel's deferred release of that socket's buffer pool has run
        // (a work item after the close), so a bind right after a close can
        // see EBUSY for a few milliseconds: retry for up to a second. A
        // queue held by a live socket still fails, after that second.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            // SAFETY: `addr` is a valid sockaddr_xdp of the length passed.
            let bound = cvt(unsafe {
                libc::bind(
                    raw,
                    (&addr as *const libc::sockaddr_xdp).cast(),
                    size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            });
            match bound {
                Err(e)
                    if e.raw_os_error() == Some(libc::EBUSY)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => {
                    other?;
                    break;
                }
            }
        }
        Ok(Xsk {
            fd,
            fill,
            comp,
            rx,
            tx,
            mode,
        })
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }

    /// Room in the fill ring.
    pub(crate) fn fill_free(&mut self) -> u32 {
        self.fill.free()
    }

    /// Gives the kernel frames (UMEM offsets of `chunk_size` bytes each) to
    /// receive into; at most [`fill_free`](Self::fill_free) of them.
    pub(crate) fn fill(&mut self, addrs: impl IntoIterator<Item = u64>) {
        for a in addrs {
            self.fill.push(a);
        }
        self.fill.submit();
    }

    /// Takes up to `max` received descriptors.
    pub(crate) fn recv(&mut self, max: usize, out: &mut Vec<Desc>) {
        let n = (self.rx.available() as usize).min(max);
        for _ in 0..n {
            let d = self.rx.take();
            out.push(Desc {
                addr: d.addr,
                len: d.len,
                more: d.options & libc::XDP_PKT_CONTD != 0,
            });
        }
        if n > 0 {
            self.rx.release();
        }
    }

    /// Room in the TX ring.
    pub(crate) fn tx_free(&mut self) -> u32 {
        self.tx.free()
    }

    /// Queues one packet's descriptors (the caller checked
    /// [`tx_free`](Self::tx_free)); `more` is set on all but the last.
    pub(crate) fn send(&mut self, descs: &[Desc]) {
        for d in descs {
            self.tx.push(libc::xdp_desc {
                addr: d.addr,
                len: d.len,
                options: if d.more { libc::XDP_PKT_CONTD } else { 0 },
            });
        }
    }

    /// Publishes queued TX descriptors and asks the kernel to send them
    /// (copy mode always needs the `sendto` kick).
    pub(crate) fn kick(&mut self) -> io::Result<()> {
        self.tx.submit();
        if self.tx.pending() == 0 {
            return Ok(());
        }
        // SAFETY: a zero-length sendto with no buffer and no address is the
        // AF_XDP "transmit what is in the TX ring" call.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // Busy, or the ring is being drained: try again next turn.
                Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => {}
                _ => return Err(e),
            }
        }
        Ok(())
    }

    /// TX descriptors the kernel has not consumed yet.
    pub(crate) fn tx_pending(&self) -> u32 {
        self.tx.pending()
    }

    /// Takes completed TX addresses.
    pub(crate) fn completions(&mut self, out: &mut Vec<u64>) {
        let n = self.comp.available();
        for _ in 0..n {
            out.push(self.comp.take());
        }
        if n > 0 {
            self.comp.release();
        }
    }

    /// The kernel's counters for this socket (`XDP_STATISTICS`): receive
    /// drops, full RX ring, empty fill ring, invalid descriptors.
    pub(crate) fn statistics(&self) -> io::Result<libc::xdp_statistics> {
        // SAFETY: xdp_statistics is plain data.
        let mut st: libc::xdp_statistics = unsafe { zeroed() };
        let mut len = size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: `st` is writable for `len` bytes.
        cvt(unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&mut st as *mut libc::xdp_statistics).cast(),
                &mut len,
            )
        })?;
        Ok(st)
    }

    /// Whether the fill ring wants a wakeup (only with `XDP_USE_NEED_WAKEUP`).
    #[allow(dead_code)]
    pub(crate) fn fill_needs_wakeup(&self) -> bool {
        self.fill.needs_wakeup()
    }
}
