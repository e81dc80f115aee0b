//! memcached on the session driver: the text and meta protocols over TCP
//! (the resumable parser from [`crate::protocol::memcache`], the commands
//! from [`crate::command::memcache`]), `get`/`gets` over UDP.
//!
//! A `VALUE` line is copied into the TX chunk, the value itself goes
//! through [`ReplySink::value`]: by reference at or above the copy
//! threshold. Pipelined requests are all answered before the connection
//! flushes, so they leave in one `sendmsg`.

use crate::command::memcache::{dispatch, Ctx};
use crate::command::Step;
use crate::protocol::memcache::{self as mc, Command, Parser, UdpHeader};
use crate::protocol::{Limits, Parsed, ReplySink};
use crate::server::session::{Out, Protocol};
use crate::server::Shared;
use granola::Buf;
use granola_net::server::DatagramHandler;
use granola_net::udp::{Datagram, UdpTx};
use std::sync::Arc;

pub use crate::command::memcache::{McCounters, VERSION};

fn limits(shared: &Shared) -> Limits {
    Limits {
        max_value_len: shared.config.max_item_size,
        ..Limits::default()
    }
}

/// A memcached TCP connection's protocol state.
pub struct Memcache {
    shared: Arc<Shared>,
    limits: Limits,
    parser: Parser,
}

impl Memcache {
    /// A connection over the shared state.
    pub fn new(shared: Arc<Shared>) -> Memcache {
        let limits = limits(&shared);
        Memcache {
            shared,
            limits,
            parser: Parser::default(),
        }
    }
}

impl Protocol for Memcache {
    type Cmd<'a> = Command<'a>;
    const NAME: &'static str = "memcached";

    fn parse<'a>(&mut self, input: &'a [u8]) -> Parsed<Command<'a>> {
        self.parser.parse(input, &self.limits)
    }

    fn execute(&mut self, cmd: Command<'_>, resume: usize, out: &mut Out<'_>) -> Step {
        let mut ctx = Ctx {
            shared: &self.shared,
            db: &*self.shared.store,
            out,
            resume,
        };
        dispatch(&mut ctx, cmd)
    }

    fn write_too_large(&self, out: &mut Out<'_>) {
        out.copy(b"SERVER_ERROR request too large\r\n");
    }
}

/// A reply under construction for UDP: copied bytes and referenced values,
/// in order, so it can be cut into datagrams without copying the values.
#[derive(Default)]
struct Recorded {
    bytes: Vec<u8>,
    /// (offset in the reply, piece).
    pieces: Vec<(usize, Piece)>,
    len: usize,
}

enum Piece {
    Copied(std::ops::Range<usize>),
    Shared(Buf),
}

impl ReplySink for Recorded {
    fn copy(&mut self, bytes: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        match self.pieces.last_mut() {
            Some((_, Piece::Copied(r))) if r.end == start => r.end = self.bytes.len(),
            _ => self
                .pieces
                .push((self.len, Piece::Copied(start..self.bytes.len()))),
        }
        self.len += bytes.len();
    }

    fn value(&mut self, value: &Buf) {
        self.pieces.push((self.len, Piece::Shared(value.clone())));
        self.len += value.len();
    }
}

/// memcached over UDP: `get`/`gets` only (as the issue and memcached's own
/// guidance limit it), one request per datagram, replies split into
/// datagrams of at most 1400 bytes with the 8-byte frame header.
///
/// Anti-amplification: a reply is never more than `--udp-amplification`
/// times the request's size (an unverified source could be spoofed);
/// larger replies get `SERVER_ERROR reply too large for UDP`.
pub struct MemcacheUdp {
    shared: Arc<Shared>,
    limits: Limits,
}

impl MemcacheUdp {
    /// A per-thread handler.
    pub fn new(shared: Arc<Shared>) -> MemcacheUdp {
        let limits = limits(&shared);
        MemcacheUdp { shared, limits }
    }
}

impl DatagramHandler for MemcacheUdp {
    fn on_datagram(&mut self, dgram: &Datagram, out: &mut UdpTx) {
        let data: &[u8] = &dgram.data;
        let Some((header, body)) = UdpHeader::parse(data) else {
            log::debug!("memcached-udp: runt datagram from {}", dgram.from);
            return;
        };
        if !header.is_single() {
            // Multi-datagram requests are not supported (nor by memcached).
            return;
        }
        let mut reply = Recorded::default();
        match mc::parse(body, &self.limits) {
            Parsed::Done {
                cmd: cmd @ Command::Get(_),
                ..
            } => {
                let mut ctx = Ctx {
                    shared: &self.shared,
                    db: &*self.shared.store,
                    out: &mut reply,
                    resume: 0,
                };
                // A recorded reply never fills: the command runs through.
                let _ = dispatch(&mut ctx, cmd);
            }
            Parsed::Done { .. } => {
                reply.copy(b"SERVER_ERROR only get and gets are served over UDP\r\n")
            }
            Parsed::Incomplete { .. } => reply.copy(mc::ERROR),
            Parsed::Invalid(e) => e.write_reply(&mut reply),
        }
        let amp = self.shared.config.udp_amplification;
        if amp > 0 && reply.len > amp.saturating_mul(data.len()) {
            reply = Recorded::default();
            reply.copy(b"SERVER_ERROR reply too large for UDP\r\n");
        }
        send_udp_reply(header.request_id, &reply, dgram, out);
    }
}

fn send_udp_reply(request_id: u16, reply: &Recorded, dgram: &Datagram, out: &mut UdpTx) {
    let frames = match mc::udp_frames(request_id, reply.len, mc::UDP_MAX_DATAGRAM) {
        Ok(f) => f,
        Err(e) => {
            log::debug!("memcached-udp: reply to {} not sent: {e:?}", dgram.from);
            return;
        }
    };
    for frame in frames {
        let mut d = out.datagram(dgram.from);
        let mut ok = d.copy(&frame.header).is_ok();
        // Pieces overlapping this frame's range of the reply.
        for (off, piece) in &reply.pieces {
            let plen = match piece {
                Piece::Copied(r) => r.len(),
                Piece::Shared(b) => b.len(),
            };
            let (a, b) = (frame.range.start.max(*off), frame.range.end.min(off + plen));
            if a >= b {
                continue;
            }
            let (ra, rb) = (a - off, b - off);
            ok &= match piece {
                Piece::Copied(r) => d.copy(&reply.bytes[r.start + ra..r.start + rb]).is_ok(),
                Piece::Shared(buf) => d.value(&buf.slice(ra..rb)).is_ok(),
            };
        }
        if !ok || d.finish().is_err() {
            log::warn!(
                "memcached-udp: could not queue a reply datagram to {}",
                dgram.from
            );
            return;
        }
    }
}
