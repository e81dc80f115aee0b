//! In-memory test doubles of [`Datapath`]: a loopback pair, a fault
//! injector, and a zero-copy double whose completions the test delivers
//! (late, out of order). They sit below the protocol layer, so framing, the TX queue,
//! the receive buffer and protocol sessions can be tested against short
//! writes, partial reads and `EAGAIN` deterministically, without sockets.

use crate::datapath::Datapath;
use crate::inflight::{InFlight, ZcCompletion};
use granola::Buf;
use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct Pipe {
    bytes: VecDeque<u8>,
    closed: bool,
}

/// One end of an in-memory byte-stream pair (like a socketpair). Each
/// direction buffers at most `capacity` bytes; a send into a full pipe is
/// `WouldBlock`, as on a socket.
pub struct MemPipe {
    rx: Arc<Mutex<Pipe>>,
    tx: Arc<Mutex<Pipe>>,
    capacity: usize,
}

impl MemPipe {
    /// A connected pair whose directions each hold `capacity` bytes.
    pub fn pair(capacity: usize) -> (MemPipe, MemPipe) {
        let a = Arc::new(Mutex::new(Pipe::default()));
        let b = Arc::new(Mutex::new(Pipe::default()));
        (
            MemPipe {
                rx: a.clone(),
                tx: b.clone(),
                capacity,
            },
            MemPipe {
                rx: b,
                tx: a,
                capacity,
            },
        )
    }

    /// Closes this end's sending direction (the peer reads end of stream).
    pub fn close(&mut self) {
        self.tx.lock().expect("pipe lock").closed = true;
    }

    /// Bytes waiting to be read by this end.
    pub fn available(&self) -> usize {
        self.rx.lock().expect("pipe lock").bytes.len()
    }
}

impl Drop for MemPipe {
    fn drop(&mut self) {
        self.close();
    }
}

impl Datapath for MemPipe {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut p = self.rx.lock().expect("pipe lock");
        if p.bytes.is_empty() {
            return if p.closed {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = buf.len().min(p.bytes.len());
        for (dst, src) in buf.iter_mut().zip(p.bytes.drain(..n)) {
            *dst = src;
        }
        Ok(n)
    }

    fn send_gather(&mut self, iov: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut p = self.tx.lock().expect("pipe lock");
        if p.closed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let room = self.capacity - p.bytes.len();
        if room == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let mut n = 0;
        for s in iov {
            let take = s.len().min(room - n);
            p.bytes.extend(&s[..take]);
            n += take;
            if n == room {
                break;
            }
        }
        Ok(n)
    }
}

/// Faults a [`FaultInjector`] imposes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// Each send accepts at most this many bytes.
    pub max_send: Option<usize>,
    /// Each receive returns at most this many bytes.
    pub max_recv: Option<usize>,
    /// Every n-th send fails with `WouldBlock` before touching the data.
    pub send_would_block_every: Option<u32>,
    /// Every n-th receive fails with `WouldBlock`.
    pub recv_would_block_every: Option<u32>,
    /// After this many sends, every send fails with `ConnectionReset`.
    pub fail_sends_after: Option<u32>,
}

/// Wraps a datapath and injects [`Faults`].
pub struct FaultInjector<D> {
    inner: D,
    faults: Faults,
    sends: u32,
    recvs: u32,
}

impl<D: Datapath> FaultInjector<D> {
    /// Wraps `inner`.
    pub fn new(inner: D, faults: Faults) -> FaultInjector<D> {
        FaultInjector {
            inner,
            faults,
            sends: 0,
            recvs: 0,
        }
    }

    /// The wrapped datapath.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }
}

fn every(n: Option<u32>, count: u32) -> bool {
    n.is_some_and(|n| n > 0 && count % n == 0)
}

impl<D: Datapath> Datapath for FaultInjector<D> {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.recvs += 1;
        if every(self.faults.recv_would_block_every, self.recvs) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = self
            .faults
            .max_recv
            .unwrap_or(usize::MAX)
            .max(1)
            .min(buf.len());
        self.inner.recv(&mut buf[..n])
    }

    fn send_gather(&mut self, iov: &[IoSlice<'_>]) -> io::Result<usize> {
        self.sends += 1;
        if self.faults.fail_sends_after.is_some_and(|n| self.sends > n) {
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        if every(self.faults.send_would_block_every, self.sends) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match self.faults.max_send {
            None => self.inner.send_gather(iov),
            Some(max) => {
                // Cut the iovec list after `max` bytes, possibly inside one.
                let mut cut: Vec<IoSlice<'_>> = Vec::new();
                let mut left = max.max(1);
                for s in iov {
                    if left == 0 {
                        break;
                    }
                    let take = s.len().min(left);
                    cut.push(IoSlice::new(&s[..take]));
                    left -= take;
                }
                self.inner.send_gather(&cut)
            }
        }
    }
}

/// A datapath with a zero-copy send whose completions arrive only when the
/// test says so ([`complete`](ZcDouble::complete)), in any order: the bytes
/// go through the inner pipe at once (so the peer can read them), while the
/// references stay parked in the caller's in-flight table as on a real
/// `MSG_ZEROCOPY` socket. Each zero-copy send gets the next number, as the
/// kernel numbers them.
pub struct ZcDouble<D> {
    inner: D,
    next_seq: u32,
    ready: Vec<ZcCompletion>,
    /// Zero-copy sends made.
    pub zc_sends: u32,
}

impl<D: Datapath> ZcDouble<D> {
    /// Wraps `inner`.
    pub fn new(inner: D) -> ZcDouble<D> {
        ZcDouble {
            inner,
            next_seq: 0,
            ready: Vec::new(),
            zc_sends: 0,
        }
    }

    /// Numbers given so far (the next send gets this one).
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// Makes the completion of sends `lo..=hi` available to the next
    /// [`Datapath::zerocopy_completions`].
    pub fn complete(&mut self, lo: u32, hi: u32) {
        self.ready.push(ZcCompletion {
            lo,
            hi,
            copied: false,
        });
    }

    /// The wrapped datapath.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }
}

impl<D: Datapath> Datapath for ZcDouble<D> {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.recv(buf)
    }

    fn send_gather(&mut self, iov: &[IoSlice<'_>]) -> io::Result<usize> {
        self.inner.send_gather(iov)
    }

    fn send_zerocopy(
        &mut self,
        bufs: &[Buf],
        head_offset: usize,
        inflight: &mut InFlight,
    ) -> io::Result<usize> {
        let iov = crate::datapath::zerocopy_iov(bufs, head_offset);
        let n = self.inner.send_gather(&iov)?;
        if n > 0 {
            let seq = inflight.park_sent(bufs, head_offset, n);
            debug_assert_eq!(seq, self.next_seq, "table and datapath agree");
            self.next_seq = self.next_seq.wrapping_add(1);
            self.zc_sends += 1;
        }
        Ok(n)
    }

    fn enable_zerocopy(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn zerocopy_completions(&mut self, out: &mut Vec<ZcCompletion>) -> io::Result<usize> {
        let n = self.ready.len();
        out.append(&mut self.ready);
        Ok(n)
    }
}
