//! The zero-copy in-flight table: the one place that keeps the memory of a
//! zero-copy send alive until the kernel says it is done with it.
//!
//! Every zero-copy send of every datapath (`MSG_ZEROCOPY` on TCP and UDP
//! sockets, io_uring `SEND_ZC`) is numbered, and the owned references
//! ([`Buf`] clones) of the bytes it handed to the kernel are *parked* here
//! under that number before the send call returns to safe code. A completion
//! names a range of numbers; the references of those sends are dropped then,
//! and only then, so a pool slot under a zero-copy send is never reused
//! while the kernel may still read it. The sends are numbered the way the
//! kernel numbers `MSG_ZEROCOPY` calls (one per successful call, from 0, per
//! socket, wrapping), so the socket datapaths use the kernel's numbers as
//! they are; io_uring carries the number in the request's `user_data`.

use granola::Buf;
use std::collections::VecDeque;

/// A zero-copy completion: sends numbered `lo..=hi` are done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZcCompletion {
    /// First completed send.
    pub lo: u32,
    /// Last completed send (inclusive; the kernel coalesces ranges).
    pub hi: u32,
    /// The kernel copied the data instead of sending the pages (always the
    /// case on loopback).
    pub copied: bool,
}

/// Zero-copy sends in flight and the references they hold.
///
/// Dropping a table that is not empty leaks the references it holds (the
/// slots are never reused) rather than return pages the kernel may still
/// read to the pool; poll completions until [`is_empty`](Self::is_empty)
/// first.
#[derive(Default)]
pub struct InFlight {
    /// Number of the next zero-copy send.
    next_seq: u32,
    /// (send number, references it holds), oldest first.
    entries: VecDeque<(u32, Vec<Buf>)>,
}

impl InFlight {
    /// An empty table numbering from 0 (a fresh socket's first
    /// `MSG_ZEROCOPY` call).
    pub fn new() -> InFlight {
        InFlight::default()
    }

    /// Sends whose completion has not arrived.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if no send is in flight.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The number the next send will get.
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// Records a send that handed the kernel the bytes of `refs`: they stay
    /// alive until [`complete`](Self::complete) covers the returned number.
    /// Called by a datapath after a successful zero-copy send and before it
    /// returns; a send of zero bytes gets no number from the kernel and must
    /// not be parked.
    pub(crate) fn park(&mut self, refs: Vec<Buf>) -> u32 {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        self.entries.push_back((seq, refs));
        seq
    }

    /// Parks the buffers among `bufs` that the first `sent` bytes of a send
    /// of `bufs` (the first starting `head_offset` bytes in) covered.
    pub(crate) fn park_sent(&mut self, bufs: &[Buf], head_offset: usize, sent: usize) -> u32 {
        let mut refs = Vec::new();
        let mut left = sent;
        for (i, b) in bufs.iter().enumerate() {
            if left == 0 {
                break;
            }
            let len = if i == 0 {
                b.len() - head_offset
            } else {
                b.len()
            };
            if len == 0 {
                continue;
            }
            refs.push(b.clone());
            left = left.saturating_sub(len);
        }
        self.park(refs)
    }

    /// Releases every send numbered in `c.lo..=c.hi` (wrapping), in any
    /// order relative to other completions. Returns how many were released.
    pub fn complete(&mut self, c: &ZcCompletion) -> u64 {
        let span = c.hi.wrapping_sub(c.lo);
        let before = self.entries.len();
        self.entries
            .retain(|(seq, _)| seq.wrapping_sub(c.lo) > span);
        (before - self.entries.len()) as u64
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.entries.is_empty() {
            return;
        }
        let bufs: usize = self.entries.iter().map(|(_, b)| b.len()).sum();
        log::warn!(
            "dropping {} zero-copy sends in flight: leaking {bufs} buffers the kernel may still read",
            self.entries.len()
        );
        for (_, b) in self.entries.drain(..) {
            std::mem::forget(b);
        }
    }
}
