//! The io_uring syscall layer (with `sys.rs`, where this crate keeps its
//! `unsafe`): the ring, the provided-buffer ring whose buffers are pool
//! slots, and the requests the event loop makes. Every request that lends
//! the kernel memory takes owned references and keeps them here until the
//! kernel is done, so the (safe) event loop cannot break a send's or a
//! receive's lifetime:
//!
//! - receive buffers are pool slots owned by [`BufRing`]; a slot is handed
//!   to the loop (as a byte slice) only between its completion and its
//!   return to the ring;
//! - a send's `msghdr`, `iovec`s and buffer references live in its
//!   connection's send slot until the send's completion;
//! - a zero-copy send's references are parked in the [`InFlight`] table
//!   under the send's number and dropped only on its notification
//!   completion (`IORING_CQE_F_NOTIF`);
//! - UDP receive slots (their own buffer group) are handed to the loop as
//!   frozen `Buf`s, a fresh pool slot taking their place in the ring, so a
//!   datagram is decoded where the kernel wrote it; a datagram send's
//!   `msghdr`, address, `iovec`s and references live in [`UdpRing`] until
//!   its completion.

use crate::inflight::{InFlight, ZcCompletion};
use granola::{Buf, BufMut, Pool};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::mem::ManuallyDrop;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, RawFd};

/// What a request was, in the top byte of its `user_data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Accept = 1,
    Recv = 2,
    Send = 3,
    SendZc = 4,
    Poll = 5,
    Cancel = 6,
    UdpRecv = 7,
    UdpSend = 8,
}

/// `user_data`: op (8 bits) | index (24 bits) | tag (32 bits: a
/// connection's generation, or a zero-copy send's number).
pub(crate) fn user_data(op: Op, index: usize, tag: u32) -> u64 {
    ((op as u64) << 56) | (((index as u64) & 0xFF_FFFF) << 32) | tag as u64
}

/// Splits a `user_data` back.
pub(crate) fn split(ud: u64) -> (Option<Op>, usize, u32) {
    let op = match ud >> 56 {
        1 => Some(Op::Accept),
        2 => Some(Op::Recv),
        3 => Some(Op::Send),
        4 => Some(Op::SendZc),
        5 => Some(Op::Poll),
        6 => Some(Op::Cancel),
        7 => Some(Op::UdpRecv),
        8 => Some(Op::UdpSend),
        _ => None,
    };
    (op, ((ud >> 32) & 0xFF_FFFF) as usize, ud as u32)
}

/// One completion, copied out of the queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cqe {
    pub(crate) user_data: u64,
    pub(crate) result: i32,
    pub(crate) flags: u32,
}

impl Cqe {
    /// More completions will follow for this request (multishot, or a
    /// zero-copy send's notification).
    pub(crate) fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
    /// This is a zero-copy send's notification.
    pub(crate) fn notif(&self) -> bool {
        cqueue::notif(self.flags)
    }
    /// Input: a receive, an accept, or a poll (the waker's, or a UDP
    /// socket's) — what a turn serves, unlike a send's completion.
    pub(crate) fn is_input(&self) -> bool {
        matches!(
            split(self.user_data).0,
            Some(Op::Accept | Op::Recv | Op::Poll | Op::UdpRecv)
        )
    }
    /// The provided buffer the kernel filled.
    pub(crate) fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }
}

/// A provided-buffer ring (group 0) whose buffers are pool slots.
pub(crate) struct BufRing {
    /// The ring's entries: page-aligned, `entries` long.
    base: *mut types::BufRingEntry,
    layout: std::alloc::Layout,
    entries: u16,
    /// The slots; index = buffer id.
    slots: Vec<BufMut>,
    slot_len: u32,
    tail: u16,
    /// Buffer ids lent to the loop (between a completion and `recycle`).
    lent: Vec<bool>,
}

impl BufRing {
    fn new(pool: &Pool, entries: u16, slot_len: usize) -> io::Result<BufRing> {
        let entries = entries.next_power_of_two();
        let layout = std::alloc::Layout::from_size_align(
            entries as usize * std::mem::size_of::<types::BufRingEntry>(),
            4096,
        )
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: the layout has a non-zero size; zeroed memory is a valid
        // (empty) ring of plain-data entries.
        let base = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<types::BufRingEntry>();
        if base.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut ring = BufRing {
            base,
            layout,
            entries,
            slots: Vec::with_capacity(entries as usize),
            slot_len: slot_len as u32,
            tail: 0,
            lent: vec![false; entries as usize],
        };
        for _ in 0..entries {
            let slot = pool.alloc(slot_len).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    "pool exhausted: no slots for the receive buffer ring",
                )
            })?;
            ring.slots.push(slot);
        }
        for bid in 0..entries {
            ring.push(bid);
        }
        ring.publish();
        Ok(ring)
    }

    /// Puts buffer `bid` at the tail (not yet visible to the kernel).
    fn push(&mut self, bid: u16) {
        let slot = &mut self.slots[bid as usize];
        let addr = slot.as_full_mut_slice().as_mut_ptr() as u64;
        let at = (self.tail & (self.entries - 1)) as usize;
        // SAFETY: `at` < entries, inside the allocation; the kernel reads
        // entries only up to the published tail, and this one is past it.
        let e = unsafe { &mut *self.base.add(at) };
        e.set_addr(addr);
        e.set_len(self.slot_len);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes pushed buffers visible to the kernel.
    fn publish(&mut self) {
        // SAFETY: base is the ring's first entry; the tail field is a u16
        // the kernel reads; the release store orders the entries before it.
        unsafe {
            let tail = types::BufRingEntry::tail(self.base) as *const std::sync::atomic::AtomicU16;
            (*tail).store(self.tail, std::sync::atomic::Ordering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; the ring owning the
        // registration was closed first (`Drop for Ring`).
        unsafe { std::alloc::dealloc(self.base.cast(), self.layout) };
    }
}

/// A send in flight: its header and references, kept until its completion.
struct SendSlot {
    msg: Box<libc::msghdr>,
    _iov: Vec<libc::iovec>,
    /// Plain sends: the references (zero-copy sends park theirs in the
    /// in-flight table instead).
    _bufs: Vec<Buf>,
}

/// A datagram send: everything its `SENDMSG` points at, kept until its
/// completion. Slots are reused (allocations and all) by later sends.
struct UdpSendSlot {
    msg: Box<libc::msghdr>,
    addr: Box<libc::sockaddr_storage>,
    iov: Vec<libc::iovec>,
    /// The references; empty while the slot is free.
    bufs: Vec<Buf>,
}

/// The UDP side of a ring: the receive slots of buffer group
/// [`UDP_GROUP`] and the datagram sends in flight.
pub(crate) struct UdpRing {
    bufs: BufRing,
    pool: Pool,
    /// The `msghdr` the multishot receives were armed with: the kernel lays
    /// out every slot by it (header, then room for the source address,
    /// then the payload).
    msg: Box<libc::msghdr>,
    /// Datagram send slots, indexed by the tag of their user data, and
    /// the free ones.
    sends: Vec<UdpSendSlot>,
    free: Vec<u32>,
}

/// Datagram sends in flight at most per worker; a reply beyond it is
/// dropped (and counted), as a full socket buffer would drop it.
pub(crate) const MAX_UDP_SENDS: usize = 4096;

/// What a UDP receive slot holds before the payload: the kernel's
/// `io_uring_recvmsg_out` (four `u32`s), then room for the source address.
const UDP_HEAD: usize = 16 + std::mem::size_of::<libc::sockaddr_storage>();

/// UDP receive buffer group id.
const UDP_GROUP: u16 = 1;

/// The outcome of a UDP receive completion.
pub(crate) enum UdpReceived {
    /// A datagram: its sender and payload (a slice of the frozen slot).
    Datagram(std::net::SocketAddr, Buf),
    /// Dropped: larger than a slot, an unknown address family, or no pool
    /// slot to put in the ring in its place.
    Dropped(&'static str),
}

/// The ring of one worker.
pub(crate) struct Ring {
    // Dropped first (see `Drop`): the kernel stops using the buffer ring
    // and every in-flight request's memory before the memory goes.
    ring: ManuallyDrop<IoUring>,
    bufs: ManuallyDrop<BufRing>,
    udp: Option<ManuallyDrop<UdpRing>>,
    /// Requests may still be active at drop: leak their memory.
    leak: bool,
    /// Per connection index: the send in flight, if any.
    sends: Vec<Option<SendSlot>>,
    /// References of zero-copy sends until their notifications.
    zc: InFlight,
    /// `io_uring_enter` calls.
    pub(crate) enters: u64,
    /// Sends pushed since the last enter.
    sends_queued: usize,
}

// SAFETY: the raw pointers (buffer ring, msghdrs) point into memory this
// value owns; nothing else refers to it from user space.
unsafe impl Send for Ring {}

/// Receive buffer group id.
const GROUP: u16 = 0;

impl Ring {
    /// A ring with `entries` submission entries and a provided-buffer ring
    /// of `bufs` pool slots of `buf_len` bytes.
    pub(crate) fn new(pool: &Pool, entries: u32, bufs: u16, buf_len: usize) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_cqsize(entries * 8)
            .setup_single_issuer()
            .setup_coop_taskrun()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::builder().setup_cqsize(entries * 8).build(entries))?;
        let bufs = BufRing::new(pool, bufs, buf_len)?;
        // SAFETY: the entries stay allocated (and at this address) until
        // `bufs` is dropped, after `ring` (field order).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                bufs.base as u64,
                bufs.entries,
                GROUP,
                0,
            )?;
        }
        Ok(Ring {
            ring: ManuallyDrop::new(ring),
            bufs: ManuallyDrop::new(bufs),
            udp: None,
            leak: false,
            sends: Vec::new(),
            zc: InFlight::new(),
            enters: 0,
            sends_queued: 0,
        })
    }

    fn push(&mut self, sqe: squeue::Entry) -> io::Result<()> {
        // SAFETY: every entry built here points only at memory that this
        // Ring keeps alive until the entry's completion (see the module
        // doc), or at none.
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            // Submission queue full: submit what is there (an extra enter).
            self.ring.submit()?;
            self.enters += 1;
        }
        Ok(())
    }

    /// Multishot accept on a listener.
    pub(crate) fn accept_multi(&mut self, fd: BorrowedFd<'_>, ud: u64) -> io::Result<()> {
        let e = opcode::AcceptMulti::new(types::Fd(fd.as_raw_fd()))
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(ud);
        self.push(e)
    }

    /// Multishot readiness poll (eventfd, UDP socket).
    pub(crate) fn poll_multi(&mut self, fd: BorrowedFd<'_>, ud: u64) -> io::Result<()> {
        let e = opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(ud);
        self.push(e)
    }

    /// Multishot receive into the provided-buffer ring.
    pub(crate) fn recv_multi(&mut self, fd: BorrowedFd<'_>, ud: u64) -> io::Result<()> {
        let e = opcode::RecvMulti::new(types::Fd(fd.as_raw_fd()), GROUP)
            .build()
            .user_data(ud);
        self.push(e)
    }

    /// Sets up UDP on the ring: buffer group [`UDP_GROUP`] of `bufs` pool
    /// slots, each with room for a datagram of `max_datagram` bytes (one
    /// byte more, so that a longer one shows as truncated).
    pub(crate) fn enable_udp(
        &mut self,
        pool: &Pool,
        bufs: u16,
        max_datagram: usize,
    ) -> io::Result<()> {
        let ring = BufRing::new(pool, bufs, UDP_HEAD + max_datagram + 1)?;
        // SAFETY: as for the TCP group in `new`: the entries outlive the
        // registration (`udp` is dropped after `ring`).
        unsafe {
            self.ring.submitter().register_buf_ring_with_flags(
                ring.base as u64,
                ring.entries,
                UDP_GROUP,
                0,
            )?;
        }
        // SAFETY: an all-zero msghdr is valid (no name, no control).
        let mut msg: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as _;
        self.udp = Some(ManuallyDrop::new(UdpRing {
            bufs: ring,
            pool: pool.clone(),
            msg,
            sends: Vec::new(),
            free: Vec::new(),
        }));
        Ok(())
    }

    /// Multishot `RECVMSG` on a UDP socket into the UDP buffer group
    /// ([`enable_udp`](Self::enable_udp) first).
    pub(crate) fn udp_recv_multi(&mut self, fd: BorrowedFd<'_>, ud: u64) -> io::Result<()> {
        let udp = self.udp.as_ref().expect("enable_udp before udp_recv_multi");
        let msg: *const libc::msghdr = &*udp.msg;
        let e = opcode::RecvMsgMulti::new(types::Fd(fd.as_raw_fd()), msg, UDP_GROUP)
            .build()
            .user_data(ud);
        self.push(e)
    }

    /// Takes the datagram the kernel received into UDP buffer `bid` (`len`
    /// bytes of slot, header included): the slot is frozen and a fresh one
    /// takes its place in the ring, so the payload is a `Buf` of the
    /// memory the kernel wrote.
    pub(crate) fn udp_received(&mut self, bid: u16, len: usize) -> UdpReceived {
        let udp = self
            .udp
            .as_mut()
            .expect("a UDP completion needs enable_udp");
        let i = bid as usize;
        let Some(fresh) = udp.pool.alloc(udp.bufs.slot_len as usize) else {
            udp.bufs.push(bid);
            udp.bufs.publish();
            return UdpReceived::Dropped("pool exhausted: no UDP receive slot");
        };
        let mut slot = std::mem::replace(&mut udp.bufs.slots[i], fresh);
        udp.bufs.push(bid);
        udp.bufs.publish();
        let len = len.min(slot.capacity());
        slot.set_len(len);
        let frozen = slot.freeze();
        let Ok(out) = types::RecvMsgOut::parse(&frozen, &udp.msg) else {
            return UdpReceived::Dropped("malformed receive header");
        };
        if out.is_payload_truncated() {
            return UdpReceived::Dropped("datagram larger than a receive slot");
        }
        let Some(from) = crate::sys::sockaddr_from_bytes(out.name_data()) else {
            return UdpReceived::Dropped("sender address not IPv4/IPv6");
        };
        let start = out.payload_data().as_ptr() as usize - frozen.as_ptr() as usize;
        let end = start + out.payload_data().len();
        UdpReceived::Datagram(from, frozen.slice(start..end))
    }

    /// Sends one datagram of `bufs` to `to` on `fd` (`SENDMSG`), keeping
    /// everything it points at until [`udp_send_done`](Self::udp_send_done)
    /// with its tag; `index` goes into the user data. Refused (nothing
    /// queued) when [`MAX_UDP_SENDS`] are in flight.
    pub(crate) fn udp_send(
        &mut self,
        fd: BorrowedFd<'_>,
        index: usize,
        to: std::net::SocketAddr,
        bufs: Vec<Buf>,
    ) -> io::Result<bool> {
        let udp = self.udp.as_mut().expect("enable_udp before udp_send");
        if bufs.is_empty() {
            // Nothing to send (`finish` refuses empty datagrams); an empty
            // slot would also read as free.
            return Ok(true);
        }
        if udp.sends.len() - udp.free.len() >= MAX_UDP_SENDS {
            return Ok(false);
        }
        let tag = udp.free.pop().unwrap_or_else(|| {
            udp.sends.push(UdpSendSlot {
                // SAFETY: an all-zero msghdr is valid (no name, no control).
                msg: Box::new(unsafe { std::mem::zeroed() }),
                // SAFETY: sockaddr_storage is plain data; all-zero is valid.
                addr: Box::new(unsafe { std::mem::zeroed() }),
                iov: Vec::new(),
                bufs: Vec::new(),
            });
            (udp.sends.len() - 1) as u32
        });
        let slot = &mut udp.sends[tag as usize];
        let (storage, addr_len) = crate::sys::sockaddr_from(&to);
        *slot.addr = storage;
        slot.iov.clear();
        slot.iov.extend(bufs.iter().map(|b| libc::iovec {
            iov_base: b.as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        }));
        slot.bufs = bufs;
        slot.msg.msg_name = (&*slot.addr as *const libc::sockaddr_storage)
            .cast_mut()
            .cast();
        slot.msg.msg_namelen = addr_len;
        slot.msg.msg_iov = slot.iov.as_ptr().cast_mut();
        slot.msg.msg_iovlen = slot.iov.len() as _;
        let e = opcode::SendMsg::new(types::Fd(fd.as_raw_fd()), &*slot.msg)
            .flags(libc::MSG_NOSIGNAL as u32)
            .build()
            .user_data(user_data(Op::UdpSend, index, tag));
        self.sends_queued += 1;
        self.push(e)?;
        Ok(true)
    }

    /// The datagram send with `tag` completed: what it pointed at goes.
    pub(crate) fn udp_send_done(&mut self, tag: u32) {
        if let Some(udp) = self.udp.as_mut() {
            if let Some(slot) = udp.sends.get_mut(tag as usize) {
                if !slot.bufs.is_empty() {
                    slot.bufs.clear();
                    udp.free.push(tag);
                }
            }
        }
    }

    /// Datagram sends in flight.
    pub(crate) fn udp_in_flight(&self) -> usize {
        self.udp
            .as_ref()
            .map_or(0, |u| u.sends.len() - u.free.len())
    }

    /// Cancels the request with `target` user data.
    pub(crate) fn cancel(&mut self, target: u64, ud: u64) -> io::Result<()> {
        let e = opcode::AsyncCancel::new(target).build().user_data(ud);
        self.push(e)
    }

    /// Cancels every request in flight (shutdown).
    pub(crate) fn cancel_all(&mut self) -> io::Result<()> {
        let e = opcode::AsyncCancel2::new(types::CancelBuilder::any())
            .build()
            .user_data(user_data(Op::Cancel, 0, 0));
        self.push(e)
    }

    /// Shutdown found requests still active: the kernel may yet write into
    /// the receive slots or read a send's memory, so that memory is leaked
    /// at drop instead of being freed or returned to the pool.
    pub(crate) fn leak_on_drop(&mut self) {
        self.leak = true;
    }

    /// True while connection `conn` has a send in flight.
    pub(crate) fn send_busy(&self, conn: usize) -> bool {
        self.sends.get(conn).is_some_and(Option::is_some)
    }

    /// Sends `bufs` (the first from `head_offset` on) on `fd` for
    /// connection `conn`, with one `SENDMSG` (or `SENDMSG_ZC` when
    /// `zerocopy`). The references are kept until the completion (plain) or
    /// the notification (zero-copy). One send per connection at a time.
    pub(crate) fn send(
        &mut self,
        conn: usize,
        fd: BorrowedFd<'_>,
        bufs: Vec<Buf>,
        head_offset: usize,
        zerocopy: bool,
        gen: u32,
    ) -> io::Result<()> {
        if self.sends.len() <= conn {
            self.sends.resize_with(conn + 1, || None);
        }
        assert!(self.sends[conn].is_none(), "one send per connection");
        let iov: Vec<libc::iovec> = bufs
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let bytes: &[u8] = if i == 0 { &b[head_offset..] } else { b };
                libc::iovec {
                    iov_base: bytes.as_ptr() as *mut libc::c_void,
                    iov_len: bytes.len(),
                }
            })
            .collect();
        // SAFETY: an all-zero msghdr is valid (no name, no control).
        let mut msg: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = iov.len() as _;
        let (entry, kept) = if zerocopy {
            let seq = self.zc.park(bufs);
            let e = opcode::SendMsgZc::new(types::Fd(fd.as_raw_fd()), &*msg)
                .flags((libc::MSG_NOSIGNAL | libc::MSG_WAITALL) as u32)
                .build()
                .user_data(user_data(Op::SendZc, conn, seq));
            (e, Vec::new())
        } else {
            let e = opcode::SendMsg::new(types::Fd(fd.as_raw_fd()), &*msg)
                .flags((libc::MSG_NOSIGNAL | libc::MSG_WAITALL) as u32)
                .build()
                .user_data(user_data(Op::Send, conn, gen));
            (e, bufs)
        };
        self.sends_queued += 1;
        self.sends[conn] = Some(SendSlot {
            msg,
            _iov: iov,
            _bufs: kept,
        });
        self.push(entry)
    }

    /// The send of `conn` completed (its first completion): its header and
    /// plain references go. A zero-copy send whose completion says no
    /// notification follows is released here too.
    pub(crate) fn send_done(&mut self, conn: usize, cqe: &Cqe) {
        if let Some(slot) = self.sends.get_mut(conn).and_then(Option::take) {
            debug_assert!(!slot.msg.msg_iov.is_null());
        }
        let (op, _, seq) = split(cqe.user_data);
        if op == Some(Op::SendZc) && !cqe.more() {
            self.zc_complete(seq);
        }
    }

    /// A zero-copy send's notification: its references go.
    pub(crate) fn zc_complete(&mut self, seq: u32) -> u64 {
        self.zc.complete(&ZcCompletion {
            lo: seq,
            hi: seq,
            copied: false,
        })
    }

    /// Zero-copy sends whose notification has not arrived.
    pub(crate) fn zc_in_flight(&self) -> usize {
        self.zc.len()
    }

    /// Submits every queued request and waits (one `io_uring_enter`) for at
    /// least one completion or `timeout`; then appends the completions to
    /// `out`. `eager`: some connection has more to do as soon as one of
    /// this turn's sends completes (a reply paused on back-pressure, or
    /// longer than one send), so the first completion ends the wait.
    pub(crate) fn enter(
        &mut self,
        timeout: std::time::Duration,
        eager: bool,
        out: &mut Vec<Cqe>,
    ) -> io::Result<()> {
        // Sends usually complete during the submit; waiting for them *and*
        // one more completion (the next request) makes one enter per
        // request/reply instead of two. The timeout bounds the wait when
        // no more input comes. (Sends use MSG_WAITALL, so a completion is
        // never a short write that would wait here to be continued.) Not
        // when a send's completion is itself what lets a connection go
        // on: its peer may be waiting for the rest of a reply and send
        // nothing, and each such step would cost the whole timeout.
        let have_cqes = !self.ring.completion().is_empty();
        let want = if have_cqes {
            0
        } else if eager {
            1
        } else {
            1 + std::mem::take(&mut self.sends_queued)
        };
        self.sends_queued = 0;
        self.submit_and_reap(want, types::Timespec::from(timeout), out)
    }

    /// Submits every queued request without waiting and appends the
    /// completions there are to `out` (an idle nap's look, see
    /// [`crate::nap`]). The sends it submits are no longer waited for by
    /// the next [`enter`](Self::enter): their completions, if they came
    /// during the submit, are in `out`.
    pub(crate) fn look(&mut self, out: &mut Vec<Cqe>) -> io::Result<()> {
        self.sends_queued = 0;
        // Wanting one completion with a zero timeout, not none: the ring
        // defers the kernel's completion work (DEFER_TASKRUN) to an enter
        // that waits for completions, so a look that wants none would not
        // see input that arrived.
        self.submit_and_reap(1, types::Timespec::new(), out)
    }

    /// One `io_uring_enter`: submits the queue, waits for `want`
    /// completions or `timeout`, and appends the completions to `out`.
    fn submit_and_reap(
        &mut self,
        want: usize,
        timeout: types::Timespec,
        out: &mut Vec<Cqe>,
    ) -> io::Result<()> {
        let args = types::SubmitArgs::new().timespec(&timeout);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
        self.enters += 1;
        self.reap(out);
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        for c in self.ring.completion() {
            out.push(Cqe {
                user_data: c.user_data(),
                result: c.result(),
                flags: c.flags(),
            });
        }
    }

    /// The bytes the kernel received into buffer `bid`.
    pub(crate) fn received(&mut self, bid: u16, len: usize) -> &[u8] {
        let i = bid as usize;
        assert!(!self.bufs.lent[i], "buffer {bid} completed twice");
        self.bufs.lent[i] = true;
        let slot = &mut self.bufs.slots[i];
        let len = len.min(slot.capacity());
        &slot.as_full_mut_slice()[..len]
    }

    /// Gives buffer `bid` back to the kernel.
    pub(crate) fn recycle(&mut self, bid: u16) {
        let i = bid as usize;
        if std::mem::replace(&mut self.bufs.lent[i], false) {
            self.bufs.push(bid);
            self.bufs.publish();
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: each field is dropped exactly once, here, the ring first.
        unsafe { ManuallyDrop::drop(&mut self.ring) };
        if self.leak {
            log::warn!("io_uring worker: requests still in flight at exit; leaking their buffers");
            std::mem::forget(std::mem::take(&mut self.sends));
            std::mem::forget(std::mem::take(&mut self.zc));
        } else {
            // SAFETY: as above; the ring is closed and was quiescent.
            unsafe { ManuallyDrop::drop(&mut self.bufs) };
            if let Some(udp) = self.udp.as_mut() {
                // SAFETY: as above, and dropped only here.
                unsafe { ManuallyDrop::drop(udp) };
            }
        }
    }
}

/// Takes ownership of a socket the kernel accepted for us.
pub(crate) fn accepted(fd: RawFd) -> TcpStream {
    // SAFETY: `fd` is a fresh descriptor from an accept completion, owned
    // by nobody else.
    unsafe { TcpStream::from_raw_fd(fd) }
}

/// Creates a throw-away ring: fails where io_uring is not permitted
/// (seccomp, `io_uring_disabled`, a group restriction) or lacks an opcode
/// the loop needs.
///
/// The ring is made and closed on a thread of its own: closing a ring
/// queues exit work to every thread that used it, which interrupts that
/// thread's blocking socket calls that have a timeout with `EINTR` — the
/// caller (often a thread that goes on to do such calls) is kept out of it.
pub(crate) fn probe_ring() -> Result<(), String> {
    std::thread::Builder::new()
        .name("granola-uring-probe".into())
        .spawn(probe_ring_here)
        .map_err(|e| format!("cannot spawn the probe thread: {e}"))?
        .join()
        .map_err(|_| "the io_uring probe panicked".to_string())?
}

fn probe_ring_here() -> Result<(), String> {
    let ring = IoUring::new(8).map_err(|e| match e.raw_os_error() {
        Some(libc::EPERM) => {
            format!("io_uring_setup not permitted ({e}): seccomp or kernel.io_uring_disabled")
        }
        Some(libc::ENOSYS) => format!("io_uring_setup missing ({e})"),
        _ => format!("io_uring_setup failed: {e}"),
    })?;
    let mut probe = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| format!("io_uring probe failed: {e}"))?;
    for (code, name) in [
        (opcode::AcceptMulti::CODE, "ACCEPT"),
        (opcode::RecvMulti::CODE, "RECV"),
        (opcode::SendMsg::CODE, "SENDMSG"),
        (opcode::SendMsgZc::CODE, "SENDMSG_ZC"),
        (opcode::PollAdd::CODE, "POLL_ADD"),
        (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
    ] {
        if !probe.is_supported(code) {
            return Err(format!("io_uring lacks {name}"));
        }
    }
    Ok(())
}
