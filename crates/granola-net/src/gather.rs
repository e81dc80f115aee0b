//! The scatter-gather builder every send path shares.
//!
//! A reply or message is composed as a sequence of *segments*: runs of
//! copied bytes, written into one pool TX buffer (the "chunk"), and shared
//! pool [`Buf`]s that go to the kernel as their own iovec. Copies that follow
//! each other land next to each other in the chunk and become one iovec;
//! that is how a frame header, an object header and its copied fields end up
//! in the first iovec of a serialize-and-send.
//!
//! Segments that point into the chunk are ranges of the still-writable
//! chunk: appending never rewrites bytes already queued, so a plain `sendmsg`
//! can gather from them directly, and once everything queued has been
//! written the chunk is rewound and reused with no pool traffic at all.
//! `Gather::seal` freezes the chunk and turns those ranges into sub-`Buf`s
//! of it; that happens when the chunk is full, and before a `MSG_ZEROCOPY`
//! send, whose pages the kernel may read after the call returns.

use granola::{Buf, BufMut, Pool};
use std::collections::VecDeque;

/// Default size of a TX chunk: enough for many pipelined replies' headers.
pub const DEFAULT_CHUNK_SIZE: usize = 16 << 10;

/// One piece of outgoing data.
#[derive(Clone)]
pub(crate) enum Seg {
    /// `start..end` of the current (unsealed) chunk.
    Chunk { start: usize, end: usize },
    /// Shared bytes: a referenced value, or a sealed chunk range.
    Shared(Buf),
}

impl Seg {
    pub(crate) fn len(&self) -> usize {
        match self {
            Seg::Chunk { start, end } => end - start,
            Seg::Shared(b) => b.len(),
        }
    }
}

/// Counters of what went out by copy and by reference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatherStats {
    /// Bytes copied into TX chunks (headers, small values).
    pub bytes_copied: u64,
    /// Bytes queued by reference (zero-copy entries).
    pub bytes_referenced: u64,
    /// Zero-copy entries queued.
    pub entries_referenced: u64,
}

impl GatherStats {
    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &GatherStats) {
        self.bytes_copied += other.bytes_copied;
        self.bytes_referenced += other.bytes_referenced;
        self.entries_referenced += other.entries_referenced;
    }
}

/// Error: the pool had no memory for a TX chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOutOfMemory;

impl std::fmt::Display for TxOutOfMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pool exhausted: no memory for a TX buffer")
    }
}
impl std::error::Error for TxOutOfMemory {}

/// A position in a [`Gather`] queue.
#[derive(Clone, Copy)]
pub(crate) struct Mark {
    segs: usize,
    /// Length of the last segment at the mark (a later copy may have
    /// extended it in place).
    last_len: usize,
    /// (chunk address, chunk length) at the mark.
    chunk_len: Option<(usize, usize)>,
    stats: GatherStats,
}

impl Mark {
    /// Segments queued at the mark.
    pub(crate) fn segs(&self) -> usize {
        self.segs
    }
}

/// Appends referenced segments while the chunk is borrowed elsewhere.
pub(crate) struct RefSink<'g> {
    segs: &'g mut VecDeque<Seg>,
    queued: &'g mut usize,
    stats: &'g mut GatherStats,
}

impl RefSink<'_> {
    /// Appends `buf` by reference, holding a clone.
    pub(crate) fn push(&mut self, buf: &Buf) {
        if buf.is_empty() {
            return;
        }
        self.stats.bytes_referenced += buf.len() as u64;
        self.stats.entries_referenced += 1;
        *self.queued += buf.len();
        self.segs.push_back(Seg::Shared(buf.clone()));
    }
}

/// Segments under construction plus the chunk their copied bytes live in.
pub(crate) struct Gather {
    pool: Pool,
    chunk_size: usize,
    pub(crate) threshold: usize,
    chunk: Option<BufMut>,
    /// Queued segments, oldest first.
    pub(crate) segs: VecDeque<Seg>,
    /// Their total length, kept as they change: back-pressure asks for it
    /// after every command, and summing a pipelined batch's segments
    /// each time made a reply of many referenced values quadratic.
    queued: usize,
    /// Index in `segs` of the first segment that may be `Seg::Chunk`.
    chunk_first_seg: usize,
    /// When set, the next copy starts a new segment (datagram boundaries).
    no_merge: bool,
    /// A chunk allocation failed; the owner reports it at flush.
    pub(crate) oom: bool,
    pub(crate) stats: GatherStats,
}

impl Gather {
    pub(crate) fn new(pool: Pool, chunk_size: usize, threshold: usize) -> Gather {
        Gather {
            pool,
            chunk_size: chunk_size.max(64),
            threshold,
            chunk: None,
            segs: VecDeque::new(),
            queued: 0,
            chunk_first_seg: 0,
            no_merge: false,
            oom: false,
            stats: GatherStats::default(),
        }
    }

    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Reserves `n` contiguous writable bytes at the end of the queue, as one
    /// new or extended copied segment, and returns them.
    #[inline]
    pub(crate) fn reserve(&mut self, n: usize) -> Result<&mut [u8], TxOutOfMemory> {
        if n == 0 {
            // No empty segments: a flush offering 0 bytes would never
            // make progress past one.
            return Ok(&mut []);
        }
        let fits = self.chunk.as_ref().is_some_and(|c| c.remaining() >= n);
        if !fits {
            self.next_chunk(n)?;
        }
        let chunk = self.chunk.as_mut().expect("chunk allocated above");
        let start = chunk.len();
        let end = start + n;
        let merge = !self.no_merge
            && self.segs.len() > self.chunk_first_seg
            && matches!(self.segs.back(), Some(Seg::Chunk { end: e, .. }) if *e == start);
        if merge {
            if let Some(Seg::Chunk { end: e, .. }) = self.segs.back_mut() {
                *e = end;
            }
        } else {
            self.segs.push_back(Seg::Chunk { start, end });
        }
        self.no_merge = false;
        chunk.set_len(end);
        self.queued += n;
        self.stats.bytes_copied += n as u64;
        Ok(&mut chunk.as_full_mut_slice()[start..end])
    }

    /// Seals the chunk and starts one with room for at least `n` bytes.
    /// Out of line: it runs once per chunk, and kept apart it leaves
    /// `reserve`, which runs for every piece of every reply, small enough
    /// to inline.
    #[cold]
    #[inline(never)]
    fn next_chunk(&mut self, n: usize) -> Result<(), TxOutOfMemory> {
        self.seal();
        let cap = n.max(self.chunk_size);
        match self.pool.alloc(cap) {
            Some(c) => {
                self.chunk = Some(c);
                self.chunk_first_seg = self.segs.len();
                Ok(())
            }
            None => {
                self.oom = true;
                Err(TxOutOfMemory)
            }
        }
    }

    /// Like [`reserve`](Self::reserve), but also hands out a [`RefSink`] that
    /// appends referenced segments after the reserved bytes, so an encoder
    /// can fill the reserved head and post zero-copy entries in one pass.
    pub(crate) fn reserve_with_refs(
        &mut self,
        n: usize,
    ) -> Result<(&mut [u8], RefSink<'_>), TxOutOfMemory> {
        self.reserve(n)?;
        let chunk = self.chunk.as_mut().expect("reserve allocated a chunk");
        let end = chunk.len();
        let head = &mut chunk.as_full_mut_slice()[end - n..end];
        Ok((
            head,
            RefSink {
                segs: &mut self.segs,
                queued: &mut self.queued,
                stats: &mut self.stats,
            },
        ))
    }

    /// Appends a copy of `bytes`.
    pub(crate) fn copy(&mut self, bytes: &[u8]) -> Result<(), TxOutOfMemory> {
        if bytes.is_empty() {
            return Ok(());
        }
        granola::copy_short(self.reserve(bytes.len())?, bytes);
        Ok(())
    }

    /// Appends `buf` by reference (its own iovec), holding a clone.
    pub(crate) fn reference(&mut self, buf: &Buf) {
        RefSink {
            segs: &mut self.segs,
            queued: &mut self.queued,
            stats: &mut self.stats,
        }
        .push(buf)
    }

    /// Appends `buf`: by reference when it is at least the copy threshold,
    /// copied otherwise (the hybrid rule applied to reply values).
    pub(crate) fn value(&mut self, buf: &Buf) -> Result<(), TxOutOfMemory> {
        if buf.len() >= self.threshold {
            self.reference(buf);
            Ok(())
        } else {
            self.copy(buf)
        }
    }

    /// Remembers the queue's current end, to roll back to.
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            segs: self.segs.len(),
            last_len: self.segs.back().map_or(0, Seg::len),
            chunk_len: self
                .chunk
                .as_ref()
                .map(|c| (c.as_slice().as_ptr() as usize, c.len())),
            stats: self.stats,
        }
    }

    /// Drops everything queued after `mark`.
    pub(crate) fn rollback(&mut self, mark: Mark) {
        self.segs.truncate(mark.segs);
        // Undo copies merged into the segment that was last at the mark
        // (it may have been sealed into a shared slice since).
        match self.segs.back_mut() {
            Some(Seg::Chunk { start, end }) => *end = (*start + mark.last_len).min(*end),
            Some(seg @ Seg::Shared(_)) if seg.len() > mark.last_len => {
                if let Seg::Shared(b) = seg {
                    *seg = Seg::Shared(b.slice(..mark.last_len));
                }
            }
            _ => {}
        }
        self.chunk_first_seg = self.chunk_first_seg.min(mark.segs);
        if let (Some(c), Some((ptr, len))) = (self.chunk.as_mut(), mark.chunk_len) {
            // Rewind only the chunk the mark was taken in; a newer chunk's
            // bytes are simply left unreferenced.
            if c.as_slice().as_ptr() as usize == ptr && len <= c.len() {
                c.set_len(len);
            }
        }
        self.stats = mark.stats;
        self.no_merge = true;
        // Rare (a reply that did not fit): recount.
        self.queued = self.segs.iter().map(Seg::len).sum();
    }

    /// Makes the next copy start a new segment.
    pub(crate) fn boundary(&mut self) {
        self.no_merge = true;
    }

    /// Freezes the current chunk and turns its ranges into shared
    /// segments. After this every segment is `Seg::Shared`.
    pub(crate) fn seal(&mut self) {
        let Some(chunk) = self.chunk.take() else {
            return;
        };
        if self.segs.len() <= self.chunk_first_seg {
            // Nothing was queued from this chunk (e.g. all sent and
            // released already): keep writing into it next time.
            if chunk.is_empty() {
                self.chunk = Some(chunk);
                return;
            }
        }
        let frozen = chunk.freeze();
        for seg in self.segs.iter_mut().skip(self.chunk_first_seg) {
            if let Seg::Chunk { start, end } = *seg {
                *seg = Seg::Shared(frozen.slice(start..end));
            }
        }
        self.chunk_first_seg = self.segs.len();
    }

    /// The bytes of a queued segment.
    pub(crate) fn seg_bytes<'s>(&'s self, seg: &'s Seg) -> &'s [u8] {
        match seg {
            Seg::Chunk { start, end } => match &self.chunk {
                Some(c) => &c.as_slice()[*start..*end],
                None => &[],
            },
            Seg::Shared(b) => b,
        }
    }

    /// Removes the oldest segment (it has been written).
    pub(crate) fn pop_front(&mut self) -> Option<Seg> {
        let seg = self.segs.pop_front()?;
        self.queued -= seg.len();
        self.chunk_first_seg = self.chunk_first_seg.saturating_sub(1);
        if self.segs.is_empty() {
            // Everything queued has left: rewind the chunk for reuse.
            if let Some(c) = self.chunk.as_mut() {
                c.set_len(0);
            }
            self.chunk_first_seg = 0;
        }
        Some(seg)
    }

    /// Gives the chunk back to the pool when nothing is queued (an idle
    /// connection holds no TX memory; the next copy allocates one again).
    pub(crate) fn release_chunk(&mut self) {
        if self.segs.is_empty() {
            self.chunk = None;
            self.chunk_first_seg = 0;
        }
    }

    /// Whether a chunk is held.
    pub(crate) fn holds_chunk(&self) -> bool {
        self.chunk.is_some()
    }

    /// Total queued bytes.
    pub(crate) fn queued_bytes(&self) -> usize {
        debug_assert_eq!(self.queued, self.segs.iter().map(Seg::len).sum::<usize>());
        self.queued
    }
}
