//! memcached on the session driver: the text and meta protocols over TCP
//! (the resumable parser from [`crate::protocol::memcache`], the commands
//! from [`crate::command::memcache`]) and the binary protocol (picked per
//! connection by its first byte, 0x80, as memcached does); the text
//! commands memcached serves over UDP.
//!
//! A `VALUE` line is copied into the TX chunk, the value itself goes
//! through [`ReplySink::value`]: by reference at or above the copy
//! threshold. Pipelined requests are all answered before the connection
//! flushes, so they leave in one `sendmsg`.

use crate::command::memcache::{binary, dispatch, stats, Ctx};
use crate::command::Step;
use crate::protocol::memcache::binary as bin;
use crate::protocol::memcache::{self as mc, Command, Parser, UdpHeader};
use crate::protocol::{ErrorKind, Limits, Parsed, ReplySink};
use crate::server::session::{Out, Protocol};
use crate::server::Shared;
use granola::Buf;
use granola_net::park::Park;
use granola_net::server::DatagramHandler;
use granola_net::udp::{Datagram, UdpTx};
use std::sync::atomic::{AtomicU64, Ordering};
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
    /// Decided by the connection's first byte: binary protocol or text.
    binary: Option<bool>,
    id: u64,
    /// Held back by `CLIENT PAUSE` until then.
    paused_until: Option<std::time::Instant>,
}

/// A request of either memcached protocol.
pub enum Request<'a> {
    /// Text or meta.
    Text(Command<'a>),
    /// Binary.
    Binary(bin::Request<'a>),
}

impl Memcache {
    /// A connection from `peer` over the shared state (listed by `stats
    /// conns` while it lives).
    pub fn new(shared: Arc<Shared>, peer: std::net::SocketAddr) -> Memcache {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let limits = limits(&shared);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        stats::register(id, peer.to_string());
        Memcache {
            shared,
            limits,
            parser: Parser::default(),
            binary: None,
            id,
            paused_until: None,
        }
    }
}

impl Drop for Memcache {
    fn drop(&mut self) {
        stats::forget(self.id);
    }
}

/// A storage command refused as larger than `-I` removes the key's old
/// value, as memcached does (a reader must not get the value the client
/// meant to replace). Its key is the second token of the request line.
fn drop_refused_key(shared: &Shared, input: &[u8]) {
    let line_end = memchr::memchr(b'\n', input).unwrap_or(input.len());
    let mut tokens = mc::Tokens::new(input.get(..line_end).unwrap_or_default());
    let is_store = matches!(
        tokens.next(),
        Some(b"set" | b"add" | b"replace" | b"append" | b"prepend" | b"cas" | b"ms")
    );
    if let (true, Some(key)) = (is_store, tokens.next()) {
        let key = key.strip_suffix(b"\r").unwrap_or(key);
        shared.store.delete(key);
        shared
            .memcache
            .store_too_large
            .fetch_add(1, Ordering::Relaxed);
    }
}

impl Request<'_> {
    /// True if the request changes the keyspace: what `CLIENT PAUSE WRITE`
    /// holds back.
    fn writes(&self) -> bool {
        match self {
            Request::Text(cmd) => text_writes(cmd),
            Request::Binary(req) => !matches!(
                req.opcode,
                bin::Opcode::Get
                    | bin::Opcode::Quit
                    | bin::Opcode::Noop
                    | bin::Opcode::Version
                    | bin::Opcode::Stat
                    | bin::Opcode::Verbosity
            ),
        }
    }
}

/// True if a text or meta command changes the keyspace (touches and
/// `mg`'s TTL and vivify count, as Redis counts GETEX).
fn text_writes(cmd: &Command<'_>) -> bool {
    match cmd {
        Command::Get(g) => g.exptime.is_some(),
        Command::MetaGet(m) => m.ttl.is_some() || m.vivify.is_some(),
        Command::Store(_)
        | Command::Delete { .. }
        | Command::Arith { .. }
        | Command::Touch { .. }
        | Command::FlushAll { .. }
        | Command::MetaSet(_)
        | Command::MetaDelete(_)
        | Command::MetaArith(_) => true,
        _ => false,
    }
}

impl Protocol for Memcache {
    type Cmd<'a> = Request<'a>;
    const NAME: &'static str = "memcached";

    fn parse<'a>(&mut self, input: &'a [u8]) -> Parsed<Request<'a>> {
        let binary = *self
            .binary
            .get_or_insert(input.first() == Some(&bin::REQUEST_MAGIC));
        if binary {
            let r = bin::parse(input, &self.limits);
            if let Parsed::Invalid(e) = &r {
                if let ErrorKind::McBinary {
                    status: bin::status::TOO_LARGE,
                    ..
                } = e.kind()
                {
                    if let Some(key) = bin::key_of(input) {
                        self.shared.store.delete(key);
                    }
                }
            }
            return match r {
                Parsed::Done { cmd, consumed } => Parsed::Done {
                    cmd: Request::Binary(cmd),
                    consumed,
                },
                Parsed::Incomplete { need } => Parsed::Incomplete { need },
                Parsed::Invalid(e) => Parsed::Invalid(e),
            };
        }
        let r = self.parser.parse(input, &self.limits);
        if let Parsed::Invalid(e) = &r {
            if e.kind() == ErrorKind::McServerError(mc::TOO_LARGE) {
                drop_refused_key(&self.shared, input);
            }
        }
        match r {
            Parsed::Done { cmd, consumed } => Parsed::Done {
                cmd: Request::Text(cmd),
                consumed,
            },
            Parsed::Incomplete { need } => Parsed::Incomplete { need },
            Parsed::Invalid(e) => Parsed::Invalid(e),
        }
    }

    fn execute(&mut self, cmd: &Request<'_>, resume: usize, out: &mut Out<'_>) -> Step {
        // A RESP client's `CLIENT PAUSE` holds memcached clients back too:
        // they write the same keyspace.
        self.paused_until = self.shared.clients.hold_back(|| cmd.writes(), out.waker);
        if self.paused_until.is_some() {
            return Step::Block;
        }
        let mut ctx = Ctx {
            shared: &self.shared,
            db: &*self.shared.store,
            out,
            resume,
        };
        match cmd {
            Request::Text(cmd) => dispatch(&mut ctx, cmd.clone()),
            Request::Binary(req) => binary::execute(&mut ctx, req),
        }
    }

    fn park(&self) -> Option<Park> {
        self.paused_until.map(|until| Park {
            deadline: Some(until),
        })
    }

    fn write_too_large(&self, out: &mut Out<'_>) {
        if self.binary == Some(true) {
            bin::write_error(out, 0, bin::status::TOO_LARGE, 0);
        } else {
            out.copy(b"SERVER_ERROR request too large\r\n");
        }
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

/// memcached over UDP: one request per datagram, replies split into
/// datagrams of at most 1400 bytes with the 8-byte frame header. The
/// commands memcached serves over UDP are served, except those whose
/// effect one spoofed datagram could multiply (`gat`, `gats`, `touch`,
/// `flush_all`, `mg` with `T` or `N`, `shutdown`, `cache_memlimit`).
///
/// Under `CLIENT PAUSE`, writes are dropped unanswered (a datagram
/// cannot wait).
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
            Parsed::Done { cmd, .. } if udp_refuses(&cmd) => {
                reply.copy(b"SERVER_ERROR command not served over UDP\r\n")
            }
            Parsed::Done { cmd, .. }
                if self.shared.clients.paused(|| text_writes(&cmd)).is_some() =>
            {
                // A datagram cannot wait: dropped, as if lost (clients
                // retry lost requests).
                log::debug!("memcached-udp: a write from {} dropped: paused", dgram.from);
                return;
            }
            Parsed::Done { cmd, .. } => {
                let mut ctx = Ctx {
                    shared: &self.shared,
                    db: &*self.shared.store,
                    out: &mut reply,
                    resume: 0,
                };
                // A recorded reply never fills: the command runs through.
                let _ = dispatch(&mut ctx, cmd);
            }
            Parsed::Incomplete { .. } => reply.copy(mc::ERROR),
            Parsed::Invalid(e) => {
                if e.kind() == ErrorKind::McServerError(mc::TOO_LARGE) {
                    drop_refused_key(&self.shared, body);
                }
                e.write_reply(&mut reply)
            }
        }
        let amp = self.shared.config.udp_amplification;
        if amp > 0 && reply.len > amp.saturating_mul(data.len()) {
            reply = Recorded::default();
            reply.copy(b"SERVER_ERROR reply too large for UDP\r\n");
        }
        send_udp_reply(header.request_id, &reply, dgram, out);
    }
}

/// Commands refused over UDP, where the source address is unverified: a
/// change whose reach is not bounded by the datagram itself — re-timing
/// keys (`gat`, `gats`, `touch`, `mg` with `T`), flushing everything,
/// shutting down — and `quit` (no connection to close).
fn udp_refuses(cmd: &Command<'_>) -> bool {
    match cmd {
        Command::Get(g) => g.exptime.is_some(),
        Command::Touch { .. }
        | Command::FlushAll { .. }
        | Command::Shutdown
        | Command::CacheMemlimit { .. }
        | Command::Quit => true,
        Command::MetaGet(m) => m.ttl.is_some() || m.vivify.is_some(),
        _ => false,
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
