//! The TX queue of a stream connection: serialize-and-send, gathering
//! flushes, and the in-flight table that keeps referenced memory alive.
//!
//! ```text
//!   send_object(hdr, msg)            one pool TX chunk          pool slots
//!   ─────────────────────►   [frame hdr | obj hdr | copied]     [value A] [value B]
//!                                      iovec 0                  iovec 1   iovec 2
//!   flush()  ── one sendmsg(iov[0..3]) ──► kernel
//! ```
//!
//! **Memory safety (Cornflakes §2.3), in one place.** Every byte the kernel
//! may still read is owned by the queue until the kernel is done with it:
//!
//! - plain sends: the kernel has copied the bytes when `sendmsg` returns, so
//!   a segment is released (its `Buf` clone dropped) when [`TxQueue::flush`]
//!   has seen all its bytes accepted — see `TxQueue::advance`;
//! - `MSG_ZEROCOPY` sends: the kernel reads the pages later, so the sent
//!   datapath parks clones of the sent segments in the zero-copy in-flight
//!   table ([`InFlight`]) before the send returns, and they are dropped only
//!   when a completion covering that send arrives — see
//!   [`InFlight::complete`]. Zero-copy sends take owned references only
//!   ([`Datapath::send_zerocopy`]), so no safe code can free or reuse bytes
//!   the kernel may still read.
//!
//! The application may drop or overwrite its own handles right after
//! queueing: the slots are reused by the pool only when these clones go.

use crate::datapath::Datapath;
use crate::frame::{FrameHeader, FRAME_HEADER_LEN};
use crate::gather::{Gather, GatherStats, Seg, TxOutOfMemory, DEFAULT_CHUNK_SIZE};
use crate::inflight::{InFlight, ZcCompletion};
use crate::sys;
use granola::{Buf, Message, Pool, Sga};
use std::io::{self, IoSlice};

/// Most iovecs handed to one `sendmsg`.
pub const MAX_IOV: usize = 128;

/// How many leading bytes of each referenced entry are prefetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefetch {
    /// No prefetch.
    Off,
    /// Prefetch the first `n` cache lines of every referenced entry before
    /// the gathering syscall. The kernel copies iovecs one after another and
    /// takes one serialized DRAM miss at the start of each cold one; issuing
    /// the prefetches from user space overlaps those misses.
    Lines(u32),
}

impl Default for Prefetch {
    fn default() -> Self {
        Prefetch::Lines(2)
    }
}

/// Settings of a TX queue.
#[derive(Clone, Copy, Debug)]
pub struct TxConfig {
    /// Values at least this long go out by reference (their own iovec);
    /// shorter ones are copied into the TX chunk. Applies to
    /// [`TxQueue::value`] and to messages' pool values
    /// ([`TxQueue::send_object`]).
    pub copy_threshold: usize,
    /// Size of a TX chunk.
    pub chunk_size: usize,
    /// Prefetch of referenced entries before sending.
    pub prefetch: Prefetch,
    /// Send with `MSG_ZEROCOPY` (if the datapath supports it).
    pub zerocopy: bool,
    /// Largest frame payload [`TxQueue::send_object`] accepts.
    pub max_frame: usize,
}

/// Default copy threshold of the Linux sockets datapath: with the prefetch
/// on, gathering a piece beats copying it from about 0.5–1 KiB on this class
/// of machine (see `bench/RESULTS.md`, echo benchmark, and
/// [`crate::calibrate`] to measure it on yours).
pub const DEFAULT_COPY_THRESHOLD: usize = 1024;

impl Default for TxConfig {
    fn default() -> Self {
        TxConfig {
            copy_threshold: DEFAULT_COPY_THRESHOLD,
            chunk_size: DEFAULT_CHUNK_SIZE,
            prefetch: Prefetch::default(),
            zerocopy: false,
            max_frame: crate::frame::DEFAULT_MAX_FRAME,
        }
    }
}

/// Why a message could not be queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The encoded message exceeds the frame cap (or a datagram).
    TooLarge {
        /// Encoded length.
        len: usize,
        /// The cap it exceeded.
        max: usize,
    },
    /// No pool memory for the TX buffer.
    OutOfMemory,
    /// An empty datagram (refused: it would carry nothing).
    Empty,
    /// The message could not be encoded.
    Encode(granola::EncodeError),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::TooLarge { len, max } => {
                write!(f, "message of {len} bytes exceeds the limit of {max} bytes")
            }
            SendError::OutOfMemory => f.write_str("pool exhausted: no memory for a TX buffer"),
            SendError::Empty => f.write_str("empty datagram"),
            SendError::Encode(e) => write!(f, "encode failed: {e}"),
        }
    }
}
impl std::error::Error for SendError {}

impl From<TxOutOfMemory> for SendError {
    fn from(_: TxOutOfMemory) -> Self {
        SendError::OutOfMemory
    }
}

/// Whether a flush left anything queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flushed {
    /// Everything queued was accepted by the kernel.
    All,
    /// The socket buffer is full; wait for writability and flush again.
    Blocked,
}

/// Counters of a TX queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Bytes copied vs referenced.
    pub gather: GatherStats,
    /// Gathering syscalls made.
    pub syscalls: u64,
    /// iovecs passed to them.
    pub iovecs: u64,
    /// Bytes the kernel accepted.
    pub bytes_sent: u64,
    /// Zero-copy sends whose completion arrived.
    pub zc_completed: u64,
    /// ... of which the kernel reported it had copied after all.
    pub zc_copied: u64,
}

/// The outgoing side of a stream connection.
///
/// Dropping a queue whose zero-copy sends have not completed leaks their
/// references (the slots are never reused) rather than hand the kernel's
/// pages back to the pool; poll completions until
/// [`zerocopy_in_flight`](TxQueue::zerocopy_in_flight) is 0 first.
pub struct TxQueue {
    gather: Gather,
    cfg: TxConfig,
    /// Bytes of the first queued segment already accepted by the kernel.
    head_written: usize,
    zc: InFlight,
    completions: Vec<ZcCompletion>,
    stats: TxStats,
    /// Bytes the kernel accepted since the queue was made (never reset:
    /// the write timeout watches it move).
    sent_total: u64,
}

impl TxQueue {
    /// An empty queue drawing TX chunks from `pool`.
    pub fn new(pool: Pool, cfg: TxConfig) -> TxQueue {
        TxQueue {
            gather: Gather::new(pool, cfg.chunk_size, cfg.copy_threshold),
            cfg,
            head_written: 0,
            zc: InFlight::new(),
            completions: Vec::new(),
            stats: TxStats::default(),
            sent_total: 0,
        }
    }

    /// The queue's settings.
    pub fn config(&self) -> &TxConfig {
        &self.cfg
    }

    /// The pool TX chunks come from.
    pub fn pool(&self) -> &Pool {
        self.gather.pool()
    }

    /// Turns zero-copy sending off (after the datapath refused it).
    ///
    /// Sends already in flight keep their references in the in-flight
    /// table; [`flush`](Self::flush) and
    /// [`poll_completions`](Self::poll_completions) go on collecting their
    /// completions until it is empty.
    pub fn disable_zerocopy(&mut self) {
        self.cfg.zerocopy = false;
    }

    /// Counters so far.
    pub fn stats(&self) -> TxStats {
        let mut s = self.stats;
        s.gather = self.gather.stats;
        s
    }

    /// Counters since the last call, then zeroes them (for servers that
    /// fold per-connection counters into shared ones as they go).
    pub fn take_stats(&mut self) -> TxStats {
        let s = self.stats();
        self.stats = TxStats::default();
        self.gather.stats = GatherStats::default();
        s
    }

    /// Bytes queued and not yet accepted by the kernel.
    pub fn queued_bytes(&self) -> usize {
        self.gather.queued_bytes() - self.head_written
    }

    /// Bytes the kernel has accepted from this queue since it was made.
    pub fn sent_total(&self) -> u64 {
        self.sent_total
    }

    /// Gives the TX buffer back to the pool if nothing is queued (for
    /// connections gone idle); the next reply allocates one again.
    pub fn release_idle_buffer(&mut self) {
        self.gather.release_chunk();
    }

    /// Whether the queue holds a TX buffer (queued or kept for reuse).
    pub fn holds_buffer(&self) -> bool {
        self.gather.holds_chunk()
    }

    /// True if nothing is waiting to be sent.
    pub fn is_empty(&self) -> bool {
        self.gather.segs.is_empty()
    }

    /// Zero-copy sends still waiting for their completion.
    pub fn zerocopy_in_flight(&self) -> usize {
        self.zc.len()
    }

    /// Queues a copy of `bytes`.
    pub fn copy(&mut self, bytes: &[u8]) -> Result<(), TxOutOfMemory> {
        self.gather.copy(bytes)
    }

    /// Reserves `n` bytes of the TX chunk to be written in place.
    pub fn reserve(&mut self, n: usize) -> Result<&mut [u8], TxOutOfMemory> {
        self.gather.reserve(n)
    }

    /// Queues `buf` by reference (its own iovec), whatever its size.
    pub fn reference(&mut self, buf: &Buf) {
        self.gather.reference(buf)
    }

    /// Queues a value: by reference at or above the copy threshold, copied
    /// below it.
    pub fn value(&mut self, buf: &Buf) -> Result<(), TxOutOfMemory> {
        self.gather.value(buf)
    }

    /// Queues several values with the hybrid rule, as [`value`](Self::value)
    /// does one at a time, after prefetching the first lines of every value
    /// that will be copied.
    ///
    /// Why a batch: a small cold value costs one DRAM miss to copy, and a
    /// copy loop that meets them one by one takes the misses one after
    /// another (the echo benchmark's `hybrid-1by1` variant at 8–32 small
    /// pieces).
    /// Issuing every prefetch first overlaps the misses, so a reply of many
    /// small values costs about one miss instead of one per value.
    /// Referenced values are prefetched at flush, just before the kernel
    /// reads them. With [`Prefetch::Off`] this is exactly a loop of `value`.
    pub fn values<'a, I>(&mut self, bufs: I) -> Result<(), TxOutOfMemory>
    where
        I: IntoIterator<Item = &'a Buf>,
        I::IntoIter: Clone,
    {
        let bufs = bufs.into_iter();
        self.prefetch_copied(bufs.clone());
        // Each run of consecutive copied values gets one reservation (as a
        // plain copy loop would), not one per value.
        let threshold = self.cfg.copy_threshold;
        let mut run = bufs.clone();
        let (mut run_len, mut run_bytes) = (0, 0);
        for b in bufs {
            if b.len() >= threshold {
                self.copy_run(run.by_ref().take(run_len), run_bytes)?;
                run.next();
                self.gather.reference(b);
                (run_len, run_bytes) = (0, 0);
            } else {
                run_len += 1;
                run_bytes += b.len();
            }
        }
        self.copy_run(run.take(run_len), run_bytes)
    }

    /// Copies `bufs`, `total` bytes in all, into one reservation.
    fn copy_run<'a>(
        &mut self,
        bufs: impl Iterator<Item = &'a Buf>,
        total: usize,
    ) -> Result<(), TxOutOfMemory> {
        let mut dst = self.gather.reserve(total)?;
        for b in bufs {
            let (head, rest) = dst.split_at_mut(b.len());
            head.copy_from_slice(b);
            dst = rest;
        }
        Ok(())
    }

    /// Prefetches the first lines of each value in `bufs` that the hybrid
    /// rule will copy, for callers that interleave their own bytes (reply
    /// headers) between values and so cannot use [`values`](Self::values).
    pub fn prefetch_copied<'a, I>(&self, bufs: I)
    where
        I: IntoIterator<Item = &'a Buf>,
    {
        let Prefetch::Lines(lines) = self.cfg.prefetch else {
            return;
        };
        let lines = lines as usize * 64;
        for b in bufs {
            if b.len() < self.cfg.copy_threshold {
                prefetch_lines(b, lines);
            }
        }
    }

    /// Serialize-and-send (Cornflakes §3.2.3): writes the frame header, the
    /// object's headers and its copied fields straight into the TX chunk
    /// and queues each zero-copy field as its own entry — no intermediate
    /// buffer or scatter-gather array. `header.len` is filled in.
    pub fn send_object<M: Message + ?Sized>(
        &mut self,
        header: FrameHeader,
        msg: &M,
    ) -> Result<(), SendError> {
        self.send_object_with(header, msg, self.cfg.copy_threshold)
    }

    /// [`send_object`](Self::send_object) with the message's pool values of
    /// at least `threshold` bytes sent by reference (instead of the queue's
    /// [`TxConfig::copy_threshold`]).
    pub fn send_object_with<M: Message + ?Sized>(
        &mut self,
        mut header: FrameHeader,
        msg: &M,
        threshold: usize,
    ) -> Result<(), SendError> {
        let sizes = msg.encoded_sizes_with(threshold);
        let len = sizes.total_len();
        if len > self.cfg.max_frame {
            return Err(SendError::TooLarge {
                len,
                max: self.cfg.max_frame,
            });
        }
        header.len = len as u32;
        let head_len = sizes.head_len();
        let mark = self.gather.mark();
        let (region, mut refs) = self.gather.reserve_with_refs(FRAME_HEADER_LEN + head_len)?;
        let (frame, head) = region.split_at_mut(FRAME_HEADER_LEN);
        header.write(frame);
        // Zero-copy entries are appended after the head segment, in wire
        // order, straight from the encoder's traversal.
        if let Err(e) = msg.encode(&sizes, head, |b| refs.push(b)) {
            // Never leave a half-written frame in the stream.
            self.gather.rollback(mark);
            return Err(SendError::Encode(e));
        }
        Ok(())
    }

    /// The non-fused path, for comparison: an already materialised
    /// scatter-gather array (`Message::to_sga`) is queued — its head copied
    /// into the TX chunk, its entries referenced.
    pub fn send_sga(&mut self, mut header: FrameHeader, sga: &Sga) -> Result<(), SendError> {
        let len = sga.len();
        if len > self.cfg.max_frame {
            return Err(SendError::TooLarge {
                len,
                max: self.cfg.max_frame,
            });
        }
        header.len = len as u32;
        self.gather.copy(&header.to_bytes())?;
        self.gather.copy(&sga.head)?;
        for b in &sga.entries {
            self.gather.reference(b);
        }
        Ok(())
    }

    /// Queues one frame whose payload is `payload`, copied.
    pub fn send_bytes(&mut self, mut header: FrameHeader, payload: &[u8]) -> Result<(), SendError> {
        if payload.len() > self.cfg.max_frame {
            return Err(SendError::TooLarge {
                len: payload.len(),
                max: self.cfg.max_frame,
            });
        }
        header.len = payload.len() as u32;
        let region = self.gather.reserve(FRAME_HEADER_LEN + payload.len())?;
        header.write(&mut region[..FRAME_HEADER_LEN]);
        region[FRAME_HEADER_LEN..].copy_from_slice(payload);
        Ok(())
    }

    /// Writes as much of the queue as the kernel takes, `MAX_IOV` iovecs
    /// per gathering call. Also collects zero-copy completions (also after
    /// zero-copy was turned off, until the in-flight table is empty).
    pub fn flush<D: Datapath + ?Sized>(&mut self, dp: &mut D) -> io::Result<Flushed> {
        if self.gather.oom {
            return Err(io::Error::new(io::ErrorKind::OutOfMemory, TxOutOfMemory));
        }
        if !self.zc.is_empty() {
            self.poll_completions(dp)?;
        }
        if self.cfg.zerocopy {
            // The kernel may read the pages after sendmsg returns: the chunk
            // must be frozen so that nothing rewrites queued bytes.
            self.gather.seal();
        }
        let mut zc_bufs: Vec<Buf> = Vec::new();
        while !self.gather.segs.is_empty() {
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let mut n_iov = 0;
            let mut offered = 0usize;
            zc_bufs.clear();
            let mut all_shared = true;
            for (i, seg) in self.gather.segs.iter().take(MAX_IOV).enumerate() {
                let mut bytes = self.gather.seg_bytes(seg);
                if i == 0 {
                    bytes = &bytes[self.head_written..];
                }
                if let (Prefetch::Lines(lines), Seg::Shared(_)) = (self.cfg.prefetch, seg) {
                    prefetch_lines(bytes, lines as usize * 64);
                }
                match seg {
                    Seg::Shared(b) if self.cfg.zerocopy => zc_bufs.push(b.clone()),
                    _ => all_shared = false,
                }
                iov[i] = IoSlice::new(bytes);
                n_iov = i + 1;
                offered += bytes.len();
            }
            if offered == 0 {
                // Empty segments: nothing for the kernel (a zero-byte
                // zero-copy send would get no completion number).
                while self.gather.segs.front().is_some_and(|s| s.len() == 0) {
                    let _ = self.gather.pop_front();
                }
                self.head_written = 0;
                continue;
            }
            let result = if self.cfg.zerocopy && all_shared {
                dp.send_zerocopy(&zc_bufs, self.head_written, &mut self.zc)
            } else {
                dp.send_gather(&iov[..n_iov])
            };
            let sent = match result {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flushed::Blocked),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.stats.syscalls += 1;
            self.stats.iovecs += n_iov as u64;
            self.stats.bytes_sent += sent as u64;
            self.sent_total += sent as u64;
            self.advance(sent);
            if sent < offered {
                // Short write: the socket buffer is full.
                return Ok(Flushed::Blocked);
            }
        }
        Ok(Flushed::All)
    }

    /// Accounts `sent` bytes accepted by the kernel and drops the queue's
    /// hold on every segment they cover (a zero-copy send's datapath has
    /// parked its own references in the in-flight table).
    fn advance(&mut self, mut sent: usize) {
        while sent > 0 {
            let Some(front) = self.gather.segs.front() else {
                break;
            };
            let left = front.len() - self.head_written;
            if sent >= left {
                sent -= left;
                self.head_written = 0;
                let _ = self.gather.pop_front();
            } else {
                self.head_written += sent;
                sent = 0;
            }
        }
    }

    /// For a completion-based datapath: seals the queue and appends owned
    /// references to its first (up to [`MAX_IOV`]) segments to `out`, for
    /// one send; returns how many bytes of the first are already sent.
    /// The send's result goes to [`complete_send`](Self::complete_send).
    pub(crate) fn stage(&mut self, out: &mut Vec<Buf>) -> usize {
        self.gather.seal();
        for seg in self.gather.segs.iter().take(MAX_IOV) {
            match seg {
                Seg::Shared(b) => {
                    if let Prefetch::Lines(lines) = self.cfg.prefetch {
                        prefetch_lines(b, lines as usize * 64);
                    }
                    out.push(b.clone());
                }
                // Sealing leaves no chunk ranges.
                Seg::Chunk { .. } => break,
            }
        }
        self.head_written
    }

    /// A staged send accepted `sent` bytes.
    pub(crate) fn complete_send(&mut self, sent: usize) {
        self.stats.syscalls += 1;
        self.stats.bytes_sent += sent as u64;
        self.sent_total += sent as u64;
        self.advance(sent);
    }

    /// Drops everything queued (the connection failed).
    pub(crate) fn clear(&mut self) {
        while self.gather.pop_front().is_some() {}
        self.head_written = 0;
    }

    /// Reads zero-copy completions and releases what they cover.
    pub fn poll_completions<D: Datapath + ?Sized>(&mut self, dp: &mut D) -> io::Result<()> {
        if self.zc.is_empty() {
            return Ok(());
        }
        self.completions.clear();
        dp.zerocopy_completions(&mut self.completions)?;
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

/// Prefetches the cache lines covering the first `span` bytes of `bytes`.
#[inline]
fn prefetch_lines(bytes: &[u8], span: usize) {
    let span = bytes.len().min(span);
    let mut off = 0;
    while off < span {
        sys::prefetch(bytes[off..].as_ptr());
        off += 64;
    }
}
