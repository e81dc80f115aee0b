//! UDP: one datagram per message, received and sent in batches.
//!
//! Receiving uses `recvmmsg` into pool slots, so a received datagram is a
//! shared [`Buf`] that decoded fields can reference. Sending composes each
//! datagram in the same gather builder as TCP (copied header bytes in a TX
//! chunk, referenced entries as their own iovecs) and hands up to
//! [`MAX_BATCH`] datagrams to one `sendmmsg`. A message that does not fit
//! in a datagram is an error ([`SendError::TooLarge`]), never truncated.

use crate::frame::{FrameHeader, FRAME_HEADER_LEN};
use crate::gather::{Gather, Seg};
use crate::inflight::{InFlight, ZcCompletion};
use crate::sys::{self, OutDatagram, RecvMeta, MAX_BATCH};
use crate::tx::{Prefetch, SendError, TxConfig, TxStats};
use granola::{Buf, BufMut, Message, Pool};
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;

/// Largest UDP payload over IPv4.
pub const MAX_DATAGRAM: usize = 65_507;

/// A received datagram.
pub struct Datagram {
    /// Sender.
    pub from: SocketAddr,
    /// The bytes, in a pool slot.
    pub data: Buf,
}

/// The receive side: a batch of pool slots that `recvmmsg` fills.
pub struct UdpRx {
    pool: Pool,
    slots: Vec<Option<BufMut>>,
    slot_size: usize,
    meta: Vec<RecvMeta>,
    /// Datagrams dropped because they did not fit a slot.
    pub truncated: u64,
}

impl UdpRx {
    /// Receives up to `batch` datagrams of at most `slot_size` bytes per
    /// call.
    pub fn new(pool: Pool, batch: usize, slot_size: usize) -> UdpRx {
        let batch = batch.clamp(1, MAX_BATCH);
        UdpRx {
            pool,
            slots: (0..batch).map(|_| None).collect(),
            slot_size: slot_size.clamp(64, MAX_DATAGRAM + 1),
            meta: vec![RecvMeta::default(); batch],
            truncated: 0,
        }
    }

    /// One non-blocking `recvmmsg`; appends what arrived to `out`.
    /// `Err(WouldBlock)` when nothing was waiting.
    pub fn recv_batch(&mut self, sock: &UdpSocket, out: &mut Vec<Datagram>) -> io::Result<usize> {
        for s in &mut self.slots {
            if s.is_none() {
                *s = Some(self.pool.alloc(self.slot_size).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::OutOfMemory,
                        "pool exhausted: no UDP receive slot",
                    )
                })?);
            }
        }
        let mut bufs: Vec<&mut [u8]> = self
            .slots
            .iter_mut()
            .map(|s| s.as_mut().expect("filled above").as_full_mut_slice())
            .collect();
        let got = sys::recvmmsg(sock.as_fd(), &mut bufs, &mut self.meta)?;
        drop(bufs);
        let mut delivered = 0;
        for i in 0..got {
            let meta = self.meta[i];
            let (Some(from), false) = (meta.from, meta.truncated) else {
                self.truncated += 1;
                continue;
            };
            let mut slot = self.slots[i].take().expect("filled above");
            slot.set_len(meta.len);
            out.push(Datagram {
                from,
                data: slot.freeze(),
            });
            delivered += 1;
        }
        Ok(delivered)
    }
}

struct PendingDatagram {
    to: SocketAddr,
    /// Segments of this datagram (they follow the previous datagram's).
    segs: usize,
}

/// The send side: datagrams composed in a gather builder and flushed with
/// `sendmmsg`.
pub struct UdpTx {
    gather: Gather,
    cfg: TxConfig,
    max_datagram: usize,
    pending: VecDeque<PendingDatagram>,
    /// Zero-copy: the references of each datagram until its completion.
    zc: InFlight,
    completions: Vec<ZcCompletion>,
    stats: TxStats,
    /// Datagrams the kernel refused (logged and dropped).
    pub dropped: u64,
}

/// Builds one datagram; see [`UdpTx::datagram`]. Dropping it without
/// [`finish`](DatagramBuilder::finish) discards the datagram, as
/// [`abandon`](DatagramBuilder::abandon) does.
#[must_use = "a datagram is queued only by finish()"]
pub struct DatagramBuilder<'q> {
    tx: &'q mut UdpTx,
    to: SocketAddr,
    mark: crate::gather::Mark,
    len: usize,
    finished: bool,
    /// A piece could not be added (pool exhausted): finish() refuses.
    failed: bool,
}

impl Drop for DatagramBuilder<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // Unfinished (abandoned, refused, or dropped by `?`): its
            // segments must not be sent as part of the next datagram.
            self.tx.gather.rollback(self.mark);
        }
    }
}

impl DatagramBuilder<'_> {
    /// Appends a copy of `bytes`.
    pub fn copy(&mut self, bytes: &[u8]) -> Result<(), SendError> {
        self.len += bytes.len();
        let r = self.tx.gather.copy(bytes).map_err(SendError::from);
        self.failed |= r.is_err();
        r
    }

    /// Appends a value: by reference at or above the copy threshold.
    pub fn value(&mut self, buf: &Buf) -> Result<(), SendError> {
        self.len += buf.len();
        let r = self.tx.gather.value(buf).map_err(SendError::from);
        self.failed |= r.is_err();
        r
    }

    /// Appends `n` bytes to be filled in place (a message encoded straight
    /// into the datagram, without an intermediate buffer).
    pub fn reserve(&mut self, n: usize) -> Result<&mut [u8], SendError> {
        self.len += n;
        match self.tx.gather.reserve(n) {
            Ok(region) => Ok(region),
            Err(e) => {
                self.failed = true;
                Err(e.into())
            }
        }
    }

    /// Appends `buf` by reference, whatever its size (a scatter-gather
    /// entry the caller chose to reference).
    pub fn reference(&mut self, buf: &Buf) {
        self.len += buf.len();
        self.tx.gather.reference(buf);
    }

    /// Bytes in the datagram so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if nothing was added.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues the datagram; fails (and discards it) if it is larger than a
    /// datagram may be, or if a piece could not be added.
    pub fn finish(mut self) -> Result<(), SendError> {
        if self.failed {
            // Drop rolls it back rather than send it with a piece missing.
            return Err(SendError::OutOfMemory);
        }
        if self.len == 0 {
            // The kernel numbers no zero-copy send for an empty datagram;
            // nothing useful is sent by one either.
            return Err(SendError::Empty);
        }
        if self.len > self.tx.max_datagram {
            // Drop rolls it back.
            return Err(SendError::TooLarge {
                len: self.len,
                max: self.tx.max_datagram,
            });
        }
        self.finished = true;
        let segs = self.tx.gather.segs.len() - self.mark.segs();
        self.tx
            .pending
            .push_back(PendingDatagram { to: self.to, segs });
        self.tx.gather.boundary();
        Ok(())
    }

    /// Discards the datagram (rolled back on drop).
    pub fn abandon(self) {}
}

impl UdpTx {
    /// An empty queue; datagrams are at most `max_datagram` bytes.
    pub fn new(pool: Pool, cfg: TxConfig, max_datagram: usize) -> UdpTx {
        UdpTx {
            gather: Gather::new(pool, cfg.chunk_size, cfg.copy_threshold),
            cfg,
            max_datagram: max_datagram.min(MAX_DATAGRAM),
            pending: VecDeque::new(),
            zc: InFlight::new(),
            completions: Vec::new(),
            stats: TxStats::default(),
            dropped: 0,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> TxStats {
        let mut s = self.stats;
        s.gather = self.gather.stats;
        s
    }

    /// Counters since the last call, then zeroes them.
    pub fn take_stats(&mut self) -> TxStats {
        let s = self.stats();
        self.stats = TxStats::default();
        self.gather.stats = Default::default();
        s
    }

    /// Datagrams queued.
    pub fn queued(&self) -> usize {
        self.pending.len()
    }

    /// Zero-copy sends awaiting completion.
    pub fn zerocopy_in_flight(&self) -> usize {
        self.zc.len()
    }

    /// Starts a datagram to `to`.
    pub fn datagram(&mut self, to: SocketAddr) -> DatagramBuilder<'_> {
        self.gather.boundary();
        let mark = self.gather.mark();
        DatagramBuilder {
            tx: self,
            to,
            mark,
            len: 0,
            finished: false,
            failed: false,
        }
    }

    /// Serialize-and-send of one message as one datagram: frame header,
    /// object header and copied fields into the TX chunk, zero-copy fields
    /// as their own iovecs.
    pub fn send_object<M: Message + ?Sized>(
        &mut self,
        to: SocketAddr,
        header: FrameHeader,
        msg: &M,
    ) -> Result<(), SendError> {
        self.send_object_with(to, header, msg, self.cfg.copy_threshold)
    }

    /// [`send_object`](Self::send_object) with pool values of at least
    /// `threshold` bytes sent by reference.
    pub fn send_object_with<M: Message + ?Sized>(
        &mut self,
        to: SocketAddr,
        mut header: FrameHeader,
        msg: &M,
        threshold: usize,
    ) -> Result<(), SendError> {
        let sizes = msg.encoded_sizes_with(threshold);
        let len = FRAME_HEADER_LEN + sizes.total_len();
        if len > self.max_datagram {
            return Err(SendError::TooLarge {
                len,
                max: self.max_datagram,
            });
        }
        header.len = sizes.total_len() as u32;
        self.gather.boundary();
        let mark = self.gather.mark();
        let (region, mut refs) = self
            .gather
            .reserve_with_refs(FRAME_HEADER_LEN + sizes.head_len())?;
        let (frame, head) = region.split_at_mut(FRAME_HEADER_LEN);
        header.write(frame);
        if let Err(e) = msg.encode(&sizes, head, |b| refs.push(b)) {
            self.gather.rollback(mark);
            return Err(SendError::Encode(e));
        }
        let segs = self.gather.segs.len() - mark.segs();
        self.pending.push_back(PendingDatagram { to, segs });
        self.gather.boundary();
        Ok(())
    }

    /// Sends queued datagrams, [`MAX_BATCH`] per `sendmmsg`, until done or
    /// the socket would block.
    pub fn flush(&mut self, sock: &UdpSocket) -> io::Result<crate::tx::Flushed> {
        if self.gather.oom {
            self.gather.oom = false;
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                crate::gather::TxOutOfMemory,
            ));
        }
        if !self.zc.is_empty() {
            self.poll_completions(sock)?;
        }
        if self.cfg.zerocopy {
            self.gather.seal();
        }
        const MAX_PIECES: usize = 512;
        while !self.pending.is_empty() {
            let mut iov = [IoSlice::new(&[]); MAX_PIECES];
            let mut spans: [(usize, usize); MAX_BATCH] = [(0, 0); MAX_BATCH];
            let mut n_dg = 0;
            let mut used = 0;
            let mut seg_iter = self.gather.segs.iter();
            for d in self.pending.iter().take(MAX_BATCH) {
                if used + d.segs > MAX_PIECES {
                    break;
                }
                let start = used;
                for _ in 0..d.segs {
                    let seg = seg_iter
                        .next()
                        .expect("pending datagrams cover queued segments");
                    let bytes = self.gather.seg_bytes(seg);
                    if let (Prefetch::Lines(lines), Seg::Shared(_)) = (self.cfg.prefetch, seg) {
                        let mut off = 0;
                        while off < bytes.len().min(lines as usize * 64) {
                            sys::prefetch(bytes[off..].as_ptr());
                            off += 64;
                        }
                    }
                    iov[used] = IoSlice::new(bytes);
                    used += 1;
                }
                spans[n_dg] = (start, used);
                n_dg += 1;
            }
            if n_dg == 0 {
                // One datagram with more pieces than MAX_PIECES: refuse it.
                self.drop_front();
                continue;
            }
            let out: Vec<OutDatagram<'_>> = self
                .pending
                .iter()
                .zip(&spans[..n_dg])
                .map(|(d, &(a, b))| OutDatagram {
                    to: Some(d.to),
                    iov: &iov[a..b],
                })
                .collect();
            let flags = if self.cfg.zerocopy {
                libc::MSG_ZEROCOPY
            } else {
                0
            };
            let sent = match sys::sendmmsg(sock.as_fd(), &out, flags) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(crate::tx::Flushed::Blocked)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // The first datagram was refused (e.g. EMSGSIZE, no
                    // route): drop it, keep the rest.
                    log::warn!(
                        "udp send to {} failed: {e}; datagram dropped",
                        self.pending[0].to
                    );
                    drop(out);
                    self.drop_front();
                    continue;
                }
            };
            drop(out);
            self.stats.syscalls += 1;
            for _ in 0..sent {
                self.complete_front();
            }
        }
        Ok(crate::tx::Flushed::All)
    }

    /// The first pending datagram has been accepted: release (plain) or park
    /// (zero-copy) its segments.
    fn complete_front(&mut self) {
        let d = self
            .pending
            .pop_front()
            .expect("sent datagrams were pending");
        let mut parked = Vec::new();
        for _ in 0..d.segs {
            let seg = self
                .gather
                .pop_front()
                .expect("pending datagrams cover queued segments");
            self.stats.iovecs += 1;
            self.stats.bytes_sent += seg.len() as u64;
            if let (true, Seg::Shared(b)) = (self.cfg.zerocopy, seg) {
                parked.push(b);
            }
        }
        if self.cfg.zerocopy {
            // `finish` refuses empty datagrams, so the kernel numbered this
            // send.
            self.zc.park(parked);
        }
    }

    fn drop_front(&mut self) {
        if let Some(d) = self.pending.pop_front() {
            for _ in 0..d.segs {
                let _ = self.gather.pop_front();
            }
            self.dropped += 1;
        }
    }

    /// True (once) if composing a datagram ran out of pool memory since
    /// the last call; [`flush`](Self::flush) reports it as an error.
    pub(crate) fn take_out_of_memory(&mut self) -> bool {
        std::mem::take(&mut self.gather.oom)
    }

    /// Hands each queued datagram (destination, pieces as shared pool
    /// `Buf`s, in order) to `sink` and forgets it: for datapaths that frame
    /// and transmit from pool memory themselves (AF_XDP), which then hold
    /// the pieces until their own completion.
    pub(crate) fn drain_pieces(&mut self, mut sink: impl FnMut(SocketAddr, Vec<Buf>)) {
        self.gather.seal();
        while let Some(d) = self.pending.pop_front() {
            let mut pieces = Vec::with_capacity(d.segs);
            for _ in 0..d.segs {
                match self.gather.pop_front() {
                    Some(Seg::Shared(b)) => {
                        self.stats.iovecs += 1;
                        self.stats.bytes_sent += b.len() as u64;
                        pieces.push(b);
                    }
                    // seal() above turned every chunk range into a Buf.
                    Some(Seg::Chunk { .. }) | None => {}
                }
            }
            sink(d.to, pieces);
        }
    }

    /// Reads zero-copy completions and releases what they cover.
    pub fn poll_completions(&mut self, sock: &UdpSocket) -> io::Result<()> {
        if self.zc.is_empty() {
            return Ok(());
        }
        self.completions.clear();
        sys::read_zerocopy_completions(sock.as_fd(), &mut self.completions)?;
        for c in &self.completions {
            let released = self.zc.complete(c);
            self.stats.zc_completed += released;
            if c.copied {
                self.stats.zc_copied += released;
            }
        }
        Ok(())
    }
}

/// Binds a non-blocking UDP socket (with `SO_REUSEPORT` when `reuse_port`,
/// so each worker thread can own one).
pub fn bind(addr: SocketAddr, reuse_port: bool) -> io::Result<UdpSocket> {
    let domain = socket2::Domain::for_address(addr);
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if reuse_port {
        s.set_reuse_port(true)?;
    }
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Turns on `MSG_ZEROCOPY` for a UDP socket.
pub fn enable_zerocopy(sock: &UdpSocket) -> io::Result<()> {
    sys::enable_zerocopy(sock.as_fd())
}
