//! The [`Datapath`] trait: a connected byte stream that can gather.
//!
//! Everything above it — framing, the TX queue with its in-flight table,
//! the receive buffer, the servers' protocol sessions — is written against
//! this trait, so it runs unchanged over a real socket ([`TcpDatapath`]) and
//! over the in-memory doubles in [`crate::mem`] (a loopback pair and a fault
//! injector that forces short writes, partial reads and `EAGAIN`).

use crate::inflight::{InFlight, ZcCompletion};
use crate::sys;
use granola::Buf;
use std::io::{self, IoSlice};
use std::net::TcpStream;
use std::os::fd::AsFd;

/// A non-blocking, connected byte stream with gathering sends.
pub trait Datapath {
    /// Reads into `buf`. `Ok(0)` is end of stream; `WouldBlock` means no
    /// data now.
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize>;

    /// Sends the concatenation of `iov` with one gathering call (one
    /// `sendmsg`). May write fewer bytes than offered (short write) or fail
    /// with `WouldBlock`. The kernel has copied the bytes when it returns.
    fn send_gather(&mut self, iov: &[IoSlice<'_>]) -> io::Result<usize>;

    /// Sends `bufs` (the first from `head_offset` on) with zero copy: the
    /// kernel may read the pages after the call returns. The buffers are
    /// owned references, and before returning `Ok(n)` with `n > 0` the
    /// datapath parks clones of those the `n` bytes covered in `inflight`,
    /// which drops them only when their completion arrives — so no safe
    /// caller can free or reuse memory under the send. `Err(Unsupported)`
    /// where the datapath has no zero-copy send (the default).
    fn send_zerocopy(
        &mut self,
        bufs: &[Buf],
        head_offset: usize,
        inflight: &mut InFlight,
    ) -> io::Result<usize> {
        let _ = (bufs, head_offset, inflight);
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    /// Turns on `MSG_ZEROCOPY`; `Err(Unsupported)` where it is not
    /// available (the caller falls back to plain sends).
    fn enable_zerocopy(&mut self) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    /// Appends pending zero-copy completions to `out`.
    fn zerocopy_completions(&mut self, out: &mut Vec<ZcCompletion>) -> io::Result<usize> {
        let _ = out;
        Ok(0)
    }
}

/// A TCP connection as a [`Datapath`]: `recv` and `sendmsg`, non-blocking.
pub struct TcpDatapath {
    stream: TcpStream,
    /// The last `recv` filled less than the buffer it was given: the socket
    /// had no more bytes at that moment.
    drained: bool,
}

impl TcpDatapath {
    /// Wraps a connected stream: sets it non-blocking and `TCP_NODELAY`
    /// (requests and replies are small and latency-bound; batching is done
    /// by gathering, not by Nagle).
    pub fn new(stream: TcpStream) -> io::Result<TcpDatapath> {
        stream.set_nonblocking(true)?;
        stream.set_nodelay(true)?;
        Ok(TcpDatapath {
            stream,
            drained: false,
        })
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// True if the last [`Datapath::recv`] returned fewer bytes than it had
    /// room for (and at least one): the socket was empty when it returned,
    /// so reading again would only fetch `EAGAIN` — an event loop waits for
    /// the next readiness instead.
    pub fn drained(&self) -> bool {
        self.drained
    }
}

impl Datapath for TcpDatapath {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = sys::recv(self.stream.as_fd(), buf)?;
        self.drained = n > 0 && n < buf.len();
        Ok(n)
    }

    fn send_gather(&mut self, iov: &[IoSlice<'_>]) -> io::Result<usize> {
        match iov {
            // Most pipelined replies are one copied run: the cheaper call.
            [one] => sys::send(self.stream.as_fd(), one, 0),
            _ => sys::sendmsg(self.stream.as_fd(), iov, 0),
        }
    }

    fn send_zerocopy(
        &mut self,
        bufs: &[Buf],
        head_offset: usize,
        inflight: &mut InFlight,
    ) -> io::Result<usize> {
        let iov = zerocopy_iov(bufs, head_offset);
        let n = sys::sendmsg(self.stream.as_fd(), &iov, libc::MSG_ZEROCOPY)?;
        if n > 0 {
            inflight.park_sent(bufs, head_offset, n);
        }
        Ok(n)
    }

    fn enable_zerocopy(&mut self) -> io::Result<()> {
        sys::enable_zerocopy(self.stream.as_fd())
    }

    fn zerocopy_completions(&mut self, out: &mut Vec<ZcCompletion>) -> io::Result<usize> {
        sys::read_zerocopy_completions(self.stream.as_fd(), out)
    }
}

/// The iovecs of a zero-copy send of `bufs`, the first from `head_offset`.
pub(crate) fn zerocopy_iov(bufs: &[Buf], head_offset: usize) -> Vec<IoSlice<'_>> {
    bufs.iter()
        .enumerate()
        .map(|(i, b)| IoSlice::new(if i == 0 { &b[head_offset..] } else { &b[..] }))
        .collect()
}
