//! The syscalls granola-net needs that std does not expose: gathering
//! `sendmsg` with flags, `sendmmsg`/`recvmmsg`, epoll, the `MSG_ZEROCOPY`
//! error queue, and a cache-line prefetch. This module (with
//! `granola::pool`) is where this project keeps its `unsafe`; every block
//! says why it is sound. Everything exported here is a safe function over
//! borrowed fds and slices.

use std::io::{self, IoSlice};
use std::mem::{size_of, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

/// `SO_ZEROCOPY` (asm-generic/socket.h).
const SO_ZEROCOPY: libc::c_int = 60;
/// `SO_EE_ORIGIN_ZEROCOPY` (linux/errqueue.h).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED`: the kernel fell back to copying.
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// Most entries one `sendmmsg`/`recvmmsg` call handles (the arrays live on
/// the stack).
pub const MAX_BATCH: usize = 64;

fn cvt(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// `sendmsg(fd, iov, flags)` on a connected socket. `MSG_NOSIGNAL` is always
/// added: a peer that went away is an `EPIPE` error, not a signal.
pub fn sendmsg(fd: BorrowedFd<'_>, iov: &[IoSlice<'_>], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is guaranteed ABI-compatible with iovec on Unix; the kernel
    // only reads through msg_iov.
    msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov.len().min(libc::UIO_MAXIOV as usize) as _;
    // SAFETY: msg points at iov.len() valid iovecs that outlive the call,
    // and fd is a live descriptor for the duration of the borrow.
    cvt(unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, flags | libc::MSG_NOSIGNAL) })
}

/// `send(fd, buf, flags | MSG_NOSIGNAL)`: one contiguous buffer, without the
/// message header `sendmsg` copies in and the iovec array it imports.
pub fn send(fd: BorrowedFd<'_>, buf: &[u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of buf.len() bytes; fd is live.
    cvt(unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            flags | libc::MSG_NOSIGNAL,
        )
    })
}

/// `recv(fd, buf, 0)`.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of buf.len() bytes; fd is live.
    cvt(unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) })
}

/// Turns `SO_ZEROCOPY` on; `Err` if the kernel does not support it.
pub fn enable_zerocopy(fd: BorrowedFd<'_>) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: the option value is a c_int that lives across the call.
    let ret = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ZEROCOPY,
            (&one as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub use crate::inflight::ZcCompletion;

/// Reads every pending zero-copy completion from the socket's error queue
/// (non-blocking) into `out`. Returns how many were read.
pub fn read_zerocopy_completions(
    fd: BorrowedFd<'_>,
    out: &mut Vec<ZcCompletion>,
) -> io::Result<usize> {
    let mut n = 0;
    loop {
        // Room for one cmsg carrying a sock_extended_err plus its offender
        // address (aligned generously).
        let mut control = [0u64; 16];
        // SAFETY: msghdr is plain data; all-zero is a valid empty header.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = size_of::<[u64; 16]>() as _;
        // SAFETY: msg describes a control buffer we own for the call and
        // no data iovecs; fd is live.
        let ret = unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if ret < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(n);
            }
            return Err(e);
        }
        // SAFETY: msg was filled by the kernel; CMSG_FIRSTHDR/NXTHDR walk
        // only inside msg_control[..msg_controllen], which is our buffer.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cmsg.is_null() {
            // SAFETY: cmsg is non-null and points inside our control buffer.
            let hdr = unsafe { &*cmsg };
            let is_recverr = (hdr.cmsg_level == libc::SOL_IP && hdr.cmsg_type == libc::IP_RECVERR)
                || (hdr.cmsg_level == libc::SOL_IPV6 && hdr.cmsg_type == libc::IPV6_RECVERR);
            if is_recverr
                && hdr.cmsg_len as usize >= (unsafe_cmsg_len(size_of::<libc::sock_extended_err>()))
            {
                // SAFETY: the kernel put a sock_extended_err in this cmsg's
                // data (checked by level/type and length); read_unaligned
                // because the control buffer's data need not be aligned for it.
                let err: libc::sock_extended_err = unsafe {
                    std::ptr::read_unaligned(
                        libc::CMSG_DATA(cmsg).cast::<libc::sock_extended_err>(),
                    )
                };
                if err.ee_origin == SO_EE_ORIGIN_ZEROCOPY && err.ee_errno == 0 {
                    out.push(ZcCompletion {
                        lo: err.ee_info,
                        hi: err.ee_data,
                        copied: err.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
                    });
                    n += 1;
                }
            }
            // SAFETY: as above, stays inside the control buffer.
            cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
        }
    }
}

fn unsafe_cmsg_len(data: usize) -> usize {
    // SAFETY: CMSG_LEN is pure arithmetic.
    unsafe { libc::CMSG_LEN(data as u32) as usize }
}

/// Hints the CPU to pull the cache line holding `p` into L1.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on invalid addresses.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

// ---------------------------------------------------------------------------
// Socket addresses

/// `addr` as a C socket address and its length.
pub(crate) fn sockaddr_from(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for
            // sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

fn sockaddr_to(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match storage.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin: libc::sockaddr_in =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// The socket address in the raw bytes of a `sockaddr` the kernel wrote
/// (an io_uring `recvmsg` result's name); `None` if short or not IPv4/6.
pub(crate) fn sockaddr_from_bytes(name: &[u8]) -> Option<SocketAddr> {
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let n = name.len().min(size_of::<libc::sockaddr_storage>());
    // SAFETY: `n` bytes fit both the source slice and the storage.
    unsafe {
        std::ptr::copy_nonoverlapping(
            name.as_ptr(),
            (&mut storage as *mut libc::sockaddr_storage).cast::<u8>(),
            n,
        )
    };
    let need = match storage.ss_family as libc::c_int {
        libc::AF_INET => size_of::<libc::sockaddr_in>(),
        libc::AF_INET6 => size_of::<libc::sockaddr_in6>(),
        _ => return None,
    };
    (n >= need).then(|| sockaddr_to(&storage)).flatten()
}

// ---------------------------------------------------------------------------
// Datagram batches

/// One outgoing datagram of a [`sendmmsg`] batch.
pub struct OutDatagram<'a> {
    /// Destination (None on a connected socket).
    pub to: Option<SocketAddr>,
    /// The datagram's pieces, gathered by the kernel.
    pub iov: &'a [IoSlice<'a>],
}

/// Sends up to [`MAX_BATCH`] datagrams with one `sendmmsg`. Returns how many
/// the kernel took (a prefix of `batch`).
pub fn sendmmsg(
    fd: BorrowedFd<'_>,
    batch: &[OutDatagram<'_>],
    flags: libc::c_int,
) -> io::Result<usize> {
    let n = batch.len().min(MAX_BATCH);
    if n == 0 {
        return Ok(0);
    }
    let mut addrs: [MaybeUninit<(libc::sockaddr_storage, libc::socklen_t)>; MAX_BATCH] =
        [const { MaybeUninit::uninit() }; MAX_BATCH];
    // SAFETY: mmsghdr is plain data; all-zero is valid.
    let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for i in 0..n {
        let d = &batch[i];
        let h = &mut hdrs[i].msg_hdr;
        h.msg_iov = d.iov.as_ptr() as *mut libc::iovec;
        h.msg_iovlen = d.iov.len().min(libc::UIO_MAXIOV as usize) as _;
        if let Some(to) = &d.to {
            let slot = addrs[i].write(sockaddr_from(to));
            h.msg_name = (&mut slot.0 as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = slot.1;
        }
    }
    // SAFETY: hdrs[..n] point at iovecs and addresses that live until the
    // call returns; the kernel only reads them (and writes msg_len).
    let ret = unsafe {
        libc::sendmmsg(
            fd.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as libc::c_uint,
            flags | libc::MSG_NOSIGNAL,
        )
    };
    cvt(ret as libc::ssize_t)
}

/// Receives up to `bufs.len()` (at most [`MAX_BATCH`]) datagrams with one
/// non-blocking `recvmmsg`. For each received datagram `i`, `meta[i]` holds
/// its length, sender, and whether it was truncated.
pub fn recvmmsg(
    fd: BorrowedFd<'_>,
    bufs: &mut [&mut [u8]],
    meta: &mut [RecvMeta],
) -> io::Result<usize> {
    let n = bufs.len().min(meta.len()).min(MAX_BATCH);
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: plain data, all-zero valid.
    let mut addrs: [libc::sockaddr_storage; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: plain data, all-zero valid.
    let mut iovs: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: plain data, all-zero valid.
    let mut hdrs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for i in 0..n {
        iovs[i] = libc::iovec {
            iov_base: bufs[i].as_mut_ptr().cast(),
            iov_len: bufs[i].len(),
        };
        let h = &mut hdrs[i].msg_hdr;
        h.msg_iov = &mut iovs[i];
        h.msg_iovlen = 1;
        h.msg_name = (&mut addrs[i] as *mut libc::sockaddr_storage).cast();
        h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    }
    // SAFETY: every header points at one iovec over a buffer we borrow
    // mutably and at an address slot we own; all outlive the call.
    let ret = unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    let got = cvt(ret as libc::ssize_t)?;
    for i in 0..got {
        meta[i] = RecvMeta {
            len: hdrs[i].msg_len as usize,
            from: sockaddr_to(&addrs[i]),
            truncated: hdrs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        };
    }
    Ok(got)
}

/// What [`recvmmsg`] learned about one datagram.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecvMeta {
    /// Bytes received.
    pub len: usize,
    /// Sender.
    pub from: Option<SocketAddr>,
    /// The datagram was larger than the buffer and was cut.
    pub truncated: bool,
}

// ---------------------------------------------------------------------------
// epoll

/// A readiness event from [`Epoll::wait`].
#[derive(Clone, Copy, Debug)]
pub struct Event {
    /// The token registered with the fd.
    pub token: u64,
    /// Readable (or peer hung up / error: the read will tell).
    pub readable: bool,
    /// Writable.
    pub writable: bool,
}

/// An epoll instance (level-triggered).
pub struct Epoll {
    fd: std::os::fd::OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// Creates an epoll instance with room for `capacity` events per wait.
    pub fn new(capacity: usize) -> io::Result<Epoll> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
        })
    }

    fn ctl(
        &self,
        op: libc::c_int,
        fd: RawFd,
        token: u64,
        read: bool,
        write: bool,
    ) -> io::Result<()> {
        let mut flags = 0u32;
        if read {
            flags |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
        }
        if write {
            flags |= libc::EPOLLOUT as u32;
        }
        let mut ev = libc::epoll_event {
            events: flags,
            u64: token,
        };
        // SAFETY: ev lives across the call; the kernel copies it.
        let ret = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Registers `fd` with `token`, interested in reads and/or writes.
    pub fn add(&self, fd: BorrowedFd<'_>, token: u64, read: bool, write: bool) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd.as_raw_fd(), token, read, write)
    }

    /// Changes the interest of a registered fd.
    pub fn modify(
        &self,
        fd: BorrowedFd<'_>,
        token: u64,
        read: bool,
        write: bool,
    ) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd.as_raw_fd(), token, read, write)
    }

    /// Removes `fd`.
    pub fn delete(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd.as_raw_fd(), 0, false, false)
    }

    /// Waits up to `timeout_ms` (-1 = forever) and appends ready events to
    /// `out`. EINTR counts as "no events".
    pub fn wait(&mut self, out: &mut Vec<Event>, timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: the events buffer is ours and its length is passed.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(e);
        }
        for ev in &self.events[..n as usize] {
            // Copies out of the (packed) kernel struct.
            let bits = ev.events;
            let token = ev.u64;
            out.push(Event {
                token,
                readable: bits
                    & (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32
                    != 0,
                writable: bits & (libc::EPOLLOUT | libc::EPOLLERR) as u32 != 0,
            });
        }
        Ok(n as usize)
    }
}

/// An eventfd used to wake an event loop from another thread (shutdown).
pub struct Waker {
    fd: std::os::fd::OwnedFd,
}

impl Waker {
    /// Creates a non-blocking eventfd.
    pub fn new() -> io::Result<Waker> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh descriptor we own.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        Ok(Waker { fd })
    }

    /// Makes the eventfd readable.
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a local u64. A full counter (EAGAIN)
        // already means "readable", so the result is irrelevant.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Clears the readable state.
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a local u64.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// The descriptor, for registration with [`Epoll`].
    pub fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.fd.as_fd()
    }
}

/// The process's `RLIMIT_NOFILE` as (soft, hard).
pub fn nofile_limit() -> io::Result<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((r.rlim_cur, r.rlim_max))
}

/// Sets `RLIMIT_NOFILE` to (soft, hard).
pub fn set_nofile_limit(soft: u64, hard: u64) -> io::Result<()> {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads one rlimit struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the calling thread's timer slack: how late the kernel may end its
/// sleeps to group timer wake-ups (50 µs by default, as long as a whole
/// idle nap; see `nap`).
pub fn set_timer_slack(slack: std::time::Duration) -> io::Result<()> {
    let ns = slack.as_nanos().clamp(1, libc::c_ulong::MAX as u128) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory of
    // ours.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
