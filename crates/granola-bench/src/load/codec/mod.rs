//! Protocol codecs: turn workload [`Cmd`]s into wire requests and check
//! responses in place.
//!
//! A codec writes each wire request through a [`Sink`], which hands out the
//! request's id, the connection's transmit buffer and the request's
//! expectation ([`Expect`] plus the [`ValueSpec`]s of the values it should
//! return). Checking never copies: [`Codec::check`] reads the response
//! where it lies in the receive buffer, compares every returned value with
//! the deterministic generator, and says how many bytes it used.

pub mod baseline;
pub mod memcached;
pub mod native;
pub mod resp;

use crate::load::stats::ErrorKind;
use crate::load::value::ValueSpec;
use crate::workload::{Cmd, Op};

/// What a response should look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Expect {
    /// One value (`specs[0]`) or a miss.
    #[default]
    Value,
    /// One value per spec, in order; any may miss.
    Values,
    /// A whole list: one element per spec; an empty/absent list is a miss.
    List,
    /// A write acknowledgement.
    Stored,
    /// A delete acknowledgement (not found = miss).
    Deleted,
    /// An integer reply / count of exactly this value (RPUSH length,
    /// AppendToList count).
    Count(u64),
    /// Any integer reply (Redis `DEL` before `RPUSH`).
    AnyCount,
    /// The echoed pieces, one spec each.
    Echo,
}

/// One wire request being written (from [`Sink::begin`]).
pub struct ReqSlot<'a> {
    /// Request id (codecs that carry ids put its low bits on the wire).
    pub id: u64,
    /// The connection's transmit buffer: append the request.
    pub tx: &'a mut Vec<u8>,
    /// Expected values (empty on entry).
    pub specs: &'a mut Vec<ValueSpec>,
    /// The expectation (set by the codec).
    pub expect: &'a mut Expect,
    /// Codec-private word kept with the request (e.g. the native kind).
    pub aux: &'a mut u32,
}

/// Where codecs put requests.
pub trait Sink {
    /// Starts a new wire request; `None` when the connection cannot take
    /// another (too many outstanding).
    fn begin(&mut self) -> Option<ReqSlot<'_>>;
}

/// A response to a request, classified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Everything as expected.
    Ok,
    /// A well-formed "not found" (counted, not an error).
    Miss,
    /// Wrong or failed.
    Err(ErrorKind),
}

impl Outcome {
    /// Combines outcomes of parts of one response: errors win over misses.
    pub fn and(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::Err(e), _) | (_, Outcome::Err(e)) => Outcome::Err(e),
            (Outcome::Miss, _) | (_, Outcome::Miss) => Outcome::Miss,
            _ => Outcome::Ok,
        }
    }

    /// Outcome of checking a returned value.
    pub fn of_value(spec: &ValueSpec, got: &[u8]) -> Outcome {
        match spec.check(got) {
            Ok(()) => Outcome::Ok,
            Err(crate::load::value::ValueMismatch::Length { .. }) => {
                Outcome::Err(ErrorKind::WrongLength)
            }
            Err(crate::load::value::ValueMismatch::Bytes { .. }) => {
                Outcome::Err(ErrorKind::WrongValue)
            }
        }
    }
}

/// What the start of a receive buffer holds (stream transports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peek {
    /// Not enough bytes to tell.
    NeedMore,
    /// A response without id: it answers the oldest outstanding request.
    Fifo,
    /// A framed response for request `id` (low 32 bits), `len` bytes in all.
    Id {
        /// Wire id.
        id: u32,
        /// Total frame length.
        len: usize,
    },
}

/// Result of [`Codec::check`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The response is not complete yet.
    NeedMore,
    /// One response of `len` bytes, classified.
    Done {
        /// Bytes consumed.
        len: usize,
        /// Classification.
        outcome: Outcome,
    },
    /// Unparseable: the stream cannot be resynchronized.
    Fatal(&'static str),
}

/// Why a command could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The protocol has no such command.
    Unsupported(&'static str),
    /// Too many outstanding requests on the connection.
    Overflow,
}

/// A wire protocol.
pub trait Codec: Send {
    /// Protocol name.
    fn name(&self) -> &'static str;

    /// Whether `cmd` can be expressed.
    fn supports(&self, cmd: &Cmd) -> bool;

    /// Writes the wire request(s) for `cmd` of `op`.
    fn encode(&mut self, op: &Op, cmd: &Cmd, sink: &mut dyn Sink) -> Result<(), EncodeError>;

    /// Classifies the start of a stream receive buffer.
    fn peek(&self, rx: &[u8]) -> Peek;

    /// Checks one response at the start of `rx` against its request.
    fn check(&mut self, rx: &[u8], expect: Expect, aux: u32, specs: &[ValueSpec]) -> Step;

    /// Whether UDP requests and responses carry memcached's 8-byte frame
    /// header (else a datagram holds one native frame).
    fn udp_frame_header(&self) -> bool {
        false
    }
}

/// Finds `\r\n` in `buf` at or after `from`; returns the index of `\r`.
#[inline]
pub(crate) fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        let j = memchr::memchr(b'\n', buf.get(i..)?)? + i;
        if j > from && buf[j - 1] == b'\r' {
            return Some(j - 1);
        }
        i = j + 1;
    }
}

/// Parses an unsigned decimal.
#[inline]
pub(crate) fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    let mut n = 0u64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u64::from(c - b'0');
    }
    Some(n)
}

/// Parses a signed decimal.
#[inline]
pub(crate) fn parse_i64(b: &[u8]) -> Option<i64> {
    match b.first() {
        Some(b'-') => parse_u64(&b[1..]).map(|n| -(n as i64)),
        _ => parse_u64(b).map(|n| n as i64),
    }
}

#[cfg(test)]
pub(crate) mod test_sink {
    //! A [`Sink`] for codec unit tests.
    use super::*;

    /// Collects requests.
    #[derive(Default)]
    pub struct VecSink {
        pub tx: Vec<u8>,
        pub reqs: Vec<(u64, usize, Expect, u32, Vec<ValueSpec>)>,
        pub next_id: u64,
    }

    impl Sink for VecSink {
        fn begin(&mut self) -> Option<ReqSlot<'_>> {
            let id = self.next_id;
            self.next_id += 1;
            self.reqs
                .push((id, self.tx.len(), Expect::Value, 0, Vec::new()));
            let r = self.reqs.last_mut().unwrap();
            Some(ReqSlot {
                id,
                tx: &mut self.tx,
                specs: &mut r.4,
                expect: &mut r.2,
                aux: &mut r.3,
            })
        }
    }
}
