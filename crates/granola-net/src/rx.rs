//! The receive side of a stream connection: a pool buffer that bytes are
//! read into, and the frame splitter that hands out complete frames as
//! shared [`Buf`]s of that buffer, so decoded fields reference the received
//! bytes without copying them.
//!
//! Memory is bounded by what the peer actually sent, never by what it
//! claims: the buffer grows only when it is full of unconsumed bytes, by
//! doubling, or, from its first chunk, to the size it grew to for the
//! peer's last large request, up to a cap, whatever length a header
//! announces. And it is held only while it holds input: once everything
//! is consumed a grown buffer goes back to the pool (a connection that
//! once sent a 1 MiB request does not keep 1 MiB), and the server's idle
//! sweep gives back even the first chunk, so an idle connection holds no
//! receive memory at all.

use crate::datapath::Datapath;
use crate::frame::{FrameHeader, FRAME_HEADER_LEN};
use granola::{Buf, BufMut, Pool};
use std::io;

/// Default first size of a receive buffer.
pub const DEFAULT_RX_CHUNK: usize = 16 << 10;

/// Why a connection's input was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RxError {
    /// A frame announced a payload larger than the cap.
    FrameTooLarge {
        /// Announced payload length.
        len: usize,
        /// The cap.
        max: usize,
    },
    /// More unconsumed input than the buffer cap (a request that never
    /// ends).
    BufferFull {
        /// The cap.
        max: usize,
    },
    /// No pool memory for the receive buffer.
    OutOfMemory,
}

impl std::fmt::Display for RxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RxError::FrameTooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the limit of {max} bytes")
            }
            RxError::BufferFull { max } => {
                write!(f, "more than {max} bytes of unfinished input")
            }
            RxError::OutOfMemory => f.write_str("pool exhausted: no memory for a receive buffer"),
        }
    }
}
impl std::error::Error for RxError {}

/// What one [`RxBuffer::read_from`] call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadStatus {
    /// Bytes read.
    pub bytes: usize,
    /// The peer closed its side.
    pub eof: bool,
}

/// A complete frame: its header and its payload, shared with the receive
/// buffer.
#[derive(Clone)]
pub struct Frame {
    /// The frame header.
    pub header: FrameHeader,
    /// The payload (`header.len` bytes).
    pub payload: Buf,
}

/// A connection's receive buffer.
pub struct RxBuffer {
    pool: Pool,
    buf: Option<BufMut>,
    /// First unconsumed byte of `buf`.
    start: usize,
    chunk: usize,
    max: usize,
    /// The size the buffer last grew to for a request it then consumed
    /// whole (0: none since the connection was last idle). A full first
    /// chunk grows to it at once: a client sending one large value after
    /// another had its buffer doubled from 16 KiB for each, every
    /// doubling copying what it held.
    last_grown: usize,
}

impl RxBuffer {
    /// A buffer starting at `chunk` bytes that may grow to `max` bytes of
    /// unconsumed input.
    pub fn new(pool: Pool, chunk: usize, max: usize) -> RxBuffer {
        RxBuffer {
            pool,
            buf: None,
            start: 0,
            chunk: chunk.max(64),
            max: max.max(chunk),
            last_grown: 0,
        }
    }

    /// The unconsumed bytes.
    pub fn data(&self) -> &[u8] {
        match &self.buf {
            Some(b) => &b.as_slice()[self.start..],
            None => &[],
        }
    }

    /// Marks the first `n` unconsumed bytes as used.
    ///
    /// # Panics
    /// If `n` exceeds the unconsumed length.
    pub fn consume(&mut self, n: usize) {
        assert!(n <= self.data().len(), "consume beyond received data");
        self.start += n;
        if let Some(b) = self.buf.as_mut() {
            if self.start == b.len() {
                self.start = 0;
                if b.capacity() > self.chunk {
                    // All consumed after a large request: shrink back.
                    self.last_grown = b.capacity();
                    self.buf = None;
                } else {
                    // All consumed: rewind in place.
                    b.set_len(0);
                }
            }
        }
    }

    /// Gives the buffer back to the pool if it holds no unconsumed input
    /// (for connections gone idle: a read that stopped after a short
    /// receive, without a receive that found the socket empty, keeps it).
    pub fn release_idle(&mut self) {
        if self.data().is_empty() {
            self.buf = None;
            self.start = 0;
            self.last_grown = 0;
        }
    }

    /// Pool bytes this buffer holds (0 when idle).
    pub fn held_bytes(&self) -> usize {
        self.buf.as_ref().map_or(0, |b| b.capacity())
    }

    /// The largest amount of unconsumed input the buffer holds.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Makes room for at least one more byte: rewinds consumed space or
    /// grows (doubling, or from the first chunk to the size it last grew
    /// to, up to `max`), copying the unconsumed bytes once.
    fn make_room(&mut self) -> Result<(), RxError> {
        let (len, cap) = match &self.buf {
            Some(b) => (b.len(), b.capacity()),
            None => (0, 0),
        };
        if self.buf.is_some() && len < cap {
            return Ok(());
        }
        let pending = len - self.start;
        if pending >= self.max {
            return Err(RxError::BufferFull { max: self.max });
        }
        if let Some(b) = self.buf.as_mut().filter(|_| pending <= cap / 2) {
            // Half or more is consumed space: slide the tail down.
            b.as_full_mut_slice().copy_within(self.start..len, 0);
            b.set_len(pending);
            self.start = 0;
            return Ok(());
        }
        let cap_max = self.max.max(self.chunk);
        let double = if cap == 0 {
            self.chunk
        } else {
            (cap * 2).min(cap_max)
        };
        let at_once = if cap > 0 && cap < 2 * self.chunk {
            self.last_grown.min(cap_max)
        } else {
            0
        };
        // Where the connection memory cannot give the size the last
        // request took, doubling goes on as before.
        let fresh = (at_once > double)
            .then(|| self.pool.alloc(at_once))
            .flatten()
            .or_else(|| self.pool.alloc(double));
        let mut fresh = fresh.ok_or(RxError::OutOfMemory)?;
        if let Some(old) = &self.buf {
            fresh.extend_from_slice(&old.as_slice()[self.start..]);
        }
        self.buf = Some(fresh);
        self.start = 0;
        Ok(())
    }

    /// Reads once from `dp` into the free space. `Err(WouldBlock)` when no
    /// data is available.
    pub fn read_from<D: Datapath + ?Sized>(&mut self, dp: &mut D) -> io::Result<ReadStatus> {
        self.make_room()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let b = self.buf.as_mut().expect("make_room allocated");
        let len = b.len();
        // An empty buffer is kept across `WouldBlock`: a busy connection
        // would otherwise take and give back a chunk on every wake-up. The
        // server's idle sweep (`release_idle`) gives it back once the
        // connection has gone quiet.
        let n = dp.recv(b.spare_mut())?;
        b.set_len(len + n);
        Ok(ReadStatus {
            bytes: n,
            eof: n == 0,
        })
    }

    /// Splits every complete frame off the front of the unconsumed input
    /// into `out`. The frames' payloads share one frozen pool buffer; the
    /// incomplete remainder (if any) moves to a fresh buffer sized for the
    /// frame it begins, up to what has arrived so far doubled. Fails if a
    /// header announces more than `max_frame` bytes.
    pub fn take_frames(
        &mut self,
        max_frame: usize,
        out: &mut Vec<Frame>,
    ) -> Result<usize, RxError> {
        let data = self.data();
        let mut off = 0;
        let mut n = 0;
        while let Some(h) = FrameHeader::read(&data[off..]) {
            let len = h.len as usize;
            if len > max_frame {
                return Err(RxError::FrameTooLarge {
                    len,
                    max: max_frame,
                });
            }
            if data.len() - off - FRAME_HEADER_LEN < len {
                break;
            }
            off += FRAME_HEADER_LEN + len;
            n += 1;
        }
        if n == 0 {
            return Ok(0);
        }
        let buf = self.buf.take().expect("data() was non-empty");
        if buf.capacity() > self.chunk {
            self.last_grown = buf.capacity();
        }
        let base = self.start;
        let total = buf.len();
        let frozen = buf.freeze();
        let mut at = base;
        for _ in 0..n {
            let h = FrameHeader::read(&frozen[at..]).expect("validated above");
            let p = at + FRAME_HEADER_LEN;
            out.push(Frame {
                header: h,
                payload: frozen.slice(p..p + h.len as usize),
            });
            at = p + h.len as usize;
        }
        self.start = 0;
        let rest = &frozen[at..total];
        if !rest.is_empty() {
            let mut want = self.chunk.max(rest.len() * 2);
            if let Some(h) = FrameHeader::read(rest) {
                want = want.max((FRAME_HEADER_LEN + h.len as usize).min(rest.len() * 2));
            }
            let mut fresh = self
                .pool
                .alloc(want.min(self.max.max(rest.len())))
                .ok_or(RxError::OutOfMemory)?;
            fresh.extend_from_slice(rest);
            self.buf = Some(fresh);
        }
        Ok(n)
    }
}
