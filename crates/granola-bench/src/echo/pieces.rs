//! Parts 2 and 3: raw messages made of cold pieces, sent by copy or by
//! gather (seed 004 §5.0.1), and `MSG_ZEROCOPY` vs plain sends.
//!
//! The **server** is the measured sender. It owns a [`PieceSet`]: `n`
//! pieces of `msg_len / pieces` bytes, each in its own pool slot (as a
//! cache server's values are), allocated until they fill `spread` bytes of
//! pool memory — several times the LLC — and grouped into messages by a
//! random permutation, so the pieces of one message lie far apart and are
//! cold when the message is sent. A request is a 4-byte message index; the
//! reply is that message's pieces, concatenated:
//!
//! | variant | reply path |
//! |---|---|
//! | `copy` | `tx.reserve(header + msg_len)`, pieces copied in: one iovec (`write` of a contiguous copy) |
//! | `copy+pf` | the same, after prefetching the first 2 cache lines of every piece |
//! | `gather` | header in the TX chunk, every piece `tx.reference`d: its own iovec (`sendmsg` gather), prefetch off |
//! | `gather+pf` | the same with `Prefetch::Lines(2)` before each `sendmsg` |
//! | `hybrid` | granola's rule as the library applies it, `tx.values(pieces)`: the first 2 lines of every piece below the 1 KiB copy threshold prefetched, then those pieces copied and the others referenced; `Prefetch::Lines(2)` covers the referenced pieces at flush |
//! | `hybrid-1by1` | the same rule one piece at a time (`tx.value` per piece, no batch prefetch): what the batch call saves |
//! | `plain` / `zerocopy` (part 3) | one piece per message, referenced; `zerocopy` sets `SO_ZEROCOPY` and sends with `MSG_ZEROCOPY` |
//!
//! Replying with the pieces (rather than having the client send them and
//! the server acknowledge) puts the variant's work on the server core,
//! whose CPU time per message is reported next to the client's throughput
//! numbers. The client's request is 16 bytes, the same for every variant.
//! The client checks every reply byte against the piece contents, which
//! are windows of one random pattern at a per-piece offset (so a piece in
//! the wrong place or order is caught), without touching the server's
//! pool memory.

use std::sync::Arc;

use granola::{Buf, Pool};
use granola_net::os::prefetch;
use granola_net::{Frame, Prefetch, TxConfig, TxQueue, FRAME_HEADER_LEN};

use super::harness::{reply_header, request_header, EchoClient, FrameHandler, HandlerFactory};
use crate::ser::Rng;

/// Number of distinct offsets into the pattern a piece can start at.
const PHASES: usize = 4096;

/// Lines prefetched per piece by the `+pf` variants (as `Prefetch::Lines(2)`).
const PREFETCH_LINES: usize = 2;

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Cold pieces in the server's pool, grouped into messages.
pub struct PieceSet {
    /// Bytes per message.
    pub msg_len: usize,
    /// Pieces per message.
    pub pieces: usize,
    /// Bytes per piece.
    pub piece_len: usize,
    /// Every piece, in allocation (address) order.
    bufs: Vec<Buf>,
    /// `messages × pieces` indices into `bufs`.
    layout: Vec<u32>,
    messages: usize,
    /// Random bytes; piece `p` holds `pattern[phase(p)..][..piece_len]`.
    pattern: Vec<u8>,
    seed: u64,
}

impl PieceSet {
    /// Allocates pieces in `pool` until they take `spread` bytes of slots
    /// (at least 64 messages' worth) and groups them into messages.
    pub fn new(
        pool: &Pool,
        msg_len: usize,
        pieces: usize,
        spread: usize,
        seed: u64,
    ) -> Result<PieceSet, String> {
        if pieces == 0 || msg_len % pieces != 0 {
            return Err(format!("{msg_len} B do not split into {pieces} pieces"));
        }
        let piece_len = msg_len / pieces;
        let slot = Pool::slot_size_for(piece_len);
        let messages = (spread / (slot * pieces)).max(64);
        let total = messages * pieces;
        let mut rng = Rng::new(seed);
        let pattern: Vec<u8> = (0..piece_len + PHASES)
            .map(|_| rng.next_u64() as u8)
            .collect();
        let mut bufs = Vec::with_capacity(total);
        for p in 0..total {
            let mut b = pool.alloc(piece_len).ok_or_else(|| {
                format!(
                    "server pool exhausted after {p} of {total} pieces of {piece_len} B \
                     (lower --spread-mib)"
                )
            })?;
            let at = phase(seed, p as u32);
            b.extend_from_slice(&pattern[at..at + piece_len]);
            bufs.push(b.freeze());
        }
        let mut layout: Vec<u32> = (0..total as u32).collect();
        rng.shuffle(&mut layout);
        Ok(PieceSet {
            msg_len,
            pieces,
            piece_len,
            bufs,
            layout,
            messages,
            pattern,
            seed,
        })
    }

    /// Number of distinct messages.
    pub fn messages(&self) -> usize {
        self.messages
    }

    /// The pieces of message `k`.
    fn message(&self, k: usize) -> &[u32] {
        &self.layout[k * self.pieces..(k + 1) * self.pieces]
    }

    /// The message the request with `id` asks for (a fixed random walk).
    fn message_for(&self, id: u32) -> usize {
        (mix(self.seed ^ u64::from(id)) % self.messages as u64) as usize
    }
}

fn phase(seed: u64, piece: u32) -> usize {
    (mix(seed.rotate_left(17) ^ u64::from(piece)) % PHASES as u64) as usize
}

/// A part-2 or part-3 variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceVariant {
    /// Copy the pieces into the TX chunk, one iovec.
    Copy,
    /// The same, after prefetching every piece's first lines.
    CopyPrefetch,
    /// Every piece its own iovec, no prefetch.
    Gather,
    /// Every piece its own iovec, `Prefetch::Lines(2)`.
    GatherPrefetch,
    /// `TxQueue::values` with the default copy threshold and prefetch.
    Hybrid,
    /// `TxQueue::value` per piece: the hybrid rule without the batch
    /// prefetch.
    HybridOneByOne,
    /// Part 3: one referenced piece, plain `sendmsg`.
    Plain,
    /// Part 3: one referenced piece, `MSG_ZEROCOPY`.
    ZeroCopy,
}

impl PieceVariant {
    /// Part 2's variants, in report order.
    pub const PART2: [PieceVariant; 6] = [
        PieceVariant::Copy,
        PieceVariant::CopyPrefetch,
        PieceVariant::Gather,
        PieceVariant::GatherPrefetch,
        PieceVariant::Hybrid,
        PieceVariant::HybridOneByOne,
    ];

    /// Part 3's variants.
    pub const PART3: [PieceVariant; 2] = [PieceVariant::Plain, PieceVariant::ZeroCopy];

    /// Name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            PieceVariant::Copy => "copy",
            PieceVariant::CopyPrefetch => "copy+pf",
            PieceVariant::Gather => "gather",
            PieceVariant::GatherPrefetch => "gather+pf",
            PieceVariant::Hybrid => "hybrid",
            PieceVariant::HybridOneByOne => "hybrid-1by1",
            PieceVariant::Plain => "plain",
            PieceVariant::ZeroCopy => "zerocopy",
        }
    }

    /// Whether the variant copies every piece in user space.
    pub fn copies(self) -> bool {
        matches!(self, PieceVariant::Copy | PieceVariant::CopyPrefetch)
    }

    /// Whether the variant is granola's hybrid rule.
    pub fn is_hybrid(self) -> bool {
        matches!(self, PieceVariant::Hybrid | PieceVariant::HybridOneByOne)
    }

    /// Whether the application prefetches every piece before queueing it.
    fn app_prefetch(self) -> bool {
        self == PieceVariant::CopyPrefetch
    }

    /// The server's TX settings for this variant.
    pub fn tx_config(self) -> TxConfig {
        let prefetch = match self {
            PieceVariant::Copy | PieceVariant::CopyPrefetch | PieceVariant::Gather => Prefetch::Off,
            _ => Prefetch::Lines(PREFETCH_LINES as u32),
        };
        TxConfig {
            prefetch,
            zerocopy: self == PieceVariant::ZeroCopy,
            ..TxConfig::default()
        }
    }

    /// The server side.
    pub fn handler_factory(self, set: &Arc<PieceSet>) -> HandlerFactory {
        let set = set.clone();
        Arc::new(move || -> Box<dyn FrameHandler> {
            Box::new(PieceEcho {
                set: set.clone(),
                variant: self,
            })
        })
    }

    /// The client side.
    pub fn client(self, set: &Arc<PieceSet>) -> Box<dyn EchoClient> {
        Box::new(PieceClient { set: set.clone() })
    }
}

/// Sends the pieces of the requested message.
struct PieceEcho {
    set: Arc<PieceSet>,
    variant: PieceVariant,
}

impl FrameHandler for PieceEcho {
    fn handle(&mut self, frame: &Frame, tx: &mut TxQueue) -> Result<(), String> {
        let set = &*self.set;
        let k = frame
            .payload
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .filter(|&k| k < set.messages)
            .ok_or("bad piece request")?;
        let ids = set.message(k);
        let mut hdr = reply_header(frame.header.id);
        hdr.len = set.msg_len as u32;
        let oom = |e: granola_net::TxOutOfMemory| e.to_string();
        if self.variant.app_prefetch() {
            for &p in ids {
                let b = &set.bufs[p as usize];
                let span = b.len().min(PREFETCH_LINES * 64);
                for off in (0..span).step_by(64) {
                    prefetch(b[off..].as_ptr());
                }
            }
        }
        match self.variant {
            PieceVariant::Copy | PieceVariant::CopyPrefetch => {
                let region = tx.reserve(FRAME_HEADER_LEN + set.msg_len).map_err(oom)?;
                hdr.write(&mut region[..FRAME_HEADER_LEN]);
                let mut at = FRAME_HEADER_LEN;
                for &p in ids {
                    let b = &set.bufs[p as usize];
                    region[at..at + b.len()].copy_from_slice(b);
                    at += b.len();
                }
            }
            PieceVariant::Gather
            | PieceVariant::GatherPrefetch
            | PieceVariant::Plain
            | PieceVariant::ZeroCopy => {
                hdr.write(tx.reserve(FRAME_HEADER_LEN).map_err(oom)?);
                for &p in ids {
                    tx.reference(&set.bufs[p as usize]);
                }
            }
            PieceVariant::Hybrid => {
                hdr.write(tx.reserve(FRAME_HEADER_LEN).map_err(oom)?);
                tx.values(ids.iter().map(|&p| &set.bufs[p as usize]))
                    .map_err(oom)?;
            }
            PieceVariant::HybridOneByOne => {
                hdr.write(tx.reserve(FRAME_HEADER_LEN).map_err(oom)?);
                for &p in ids {
                    tx.value(&set.bufs[p as usize]).map_err(oom)?;
                }
            }
        }
        Ok(())
    }
}

/// Asks for messages in a fixed random order and checks their bytes.
struct PieceClient {
    set: Arc<PieceSet>,
}

impl EchoClient for PieceClient {
    fn request(&mut self, id: u32, tx: &mut TxQueue) -> Result<(), String> {
        let k = self.set.message_for(id) as u32;
        tx.send_bytes(request_header(id), &k.to_le_bytes())
            .map_err(|e| e.to_string())
    }

    fn verify(&mut self, id: u32, payload: &[u8]) -> Result<(), String> {
        let set = &*self.set;
        if payload.len() != set.msg_len {
            return Err(format!(
                "reply {id}: {} bytes, expected {}",
                payload.len(),
                set.msg_len
            ));
        }
        let k = set.message_for(id);
        for (j, (&p, got)) in set
            .message(k)
            .iter()
            .zip(payload.chunks_exact(set.piece_len))
            .enumerate()
        {
            let at = phase(set.seed, p);
            if got != &set.pattern[at..at + set.piece_len] {
                return Err(format!("reply {id} (message {k}): piece {j} is wrong"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_checks_every_piece() {
        let pool = Pool::with_capacity(64 << 20).expect("pool");
        let set = Arc::new(PieceSet::new(&pool, 1024, 4, 1 << 20, 5).expect("pieces"));
        assert!(set.messages() >= 64);
        let mut client = PieceClient { set: set.clone() };
        let id = 3;
        let k = set.message_for(id);
        let good: Vec<u8> = set
            .message(k)
            .iter()
            .flat_map(|&p| set.bufs[p as usize].to_vec())
            .collect();
        client.verify(id, &good).expect("the right pieces");
        let mut reordered = good.clone();
        reordered.rotate_left(set.piece_len);
        assert!(client.verify(id, &reordered).is_err());
        let mut flipped = good.clone();
        flipped[700] ^= 1;
        assert!(client.verify(id, &flipped).is_err());
        assert!(client.verify(id, &good[..1000]).is_err());
        assert!(client.verify(id + 1, &good).is_err(), "another message");
    }

    #[test]
    fn pieces_split_evenly_or_not_at_all() {
        let pool = Pool::with_capacity(64 << 20).expect("pool");
        assert!(PieceSet::new(&pool, 100, 3, 1 << 20, 1).is_err());
        let set = PieceSet::new(&pool, 64, 32, 1 << 20, 1).expect("2 B pieces");
        assert_eq!(set.piece_len, 2);
        assert_eq!(set.layout.len(), set.messages() * 32);
    }
}
