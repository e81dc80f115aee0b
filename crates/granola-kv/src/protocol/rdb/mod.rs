//! One value in Redis's RDB serialization, as DUMP writes and RESTORE
//! reads it.
//!
//! ```text
//!   payload = <type u8> <value ...> <RDB version u16 LE> <CRC-64 u64 LE>
//!             \____________ CRC-64/Redis (Jones) covers these ___________/
//! ```
//!
//! # Writing ([`Dump`], [`StreamDump`])
//! granola-kv writes the plainest types every Redis since 5 and Valkey
//! load: `STRING` (0), `LIST` (1), `SET` (2), `HASH` (4) and `ZSET_2` (5),
//! strings raw (never integer- or LZF-encoded), under RDB version 9. A
//! Redis that restores one converts it to its own compact encodings as
//! it would after loading any RDB file.
//!
//! A stream has no plain type: its one form is listpack nodes
//! ([`StreamDump`]). It is written as `STREAM_LISTPACKS_2` (19) under RDB
//! version 10 ([`STREAM_WRITE_VERSION`]), which Redis 7.0 and later and
//! every Valkey restore. The choice, against the alternatives:
//!
//! - `STREAM_LISTPACKS` (15) under version 9 would restore on Redis 5 and
//!   6 too, but has no place for the stream's max-deleted ID and
//!   entries-added count or a group's entries-read: the restoring server
//!   guesses them, so XINFO and a group's lag would differ from
//!   granola-kv's.
//! - `STREAM_LISTPACKS_3` (21, version 11) adds each consumer's active
//!   time, but Redis 7.0 refuses version 11 outright. Under 19 the
//!   restoring server takes a consumer's active time to be its seen time
//!   (what it does with its own older dumps): the one thing lost.
//!
//! Nodes are cut where Redis cuts its own (4096 bytes, 100 entries, its
//! defaults), so a restored stream grows as Redis's would. Strings in
//! the nodes are written as strings, never as listpack integers: Redis
//! reads either.
//!
//! # Reading ([`decode`])
//! What Redis 7.x's DUMP writes: those types, and `ZSET` (3, scores as
//! text), `SET_INTSET` (11), `HASH_LISTPACK` (16), `ZSET_LISTPACK` (17),
//! `LIST_QUICKLIST_2` (18) and `SET_LISTPACK` (20); streams as
//! `STREAM_LISTPACKS` (15, Redis 5 and 6), `_2` (19, Redis 7.0) and `_3`
//! (21, Redis 7.2 and Valkey); strings raw, as integers or
//! LZF-compressed; RDB versions up to 11 (Redis 7.2's), and Valkey 9's
//! 80 ([`VALKEY_VERSION`]). Refused with
//! [`RdbError::Format`]: modules, and Redis 6's ziplist encodings (types
//! 9, 10, 12, 13, 14), as well as empty collections (Redis refuses those
//! too; an empty stream is a value, kept for its last ID and groups).
//!
//! A stream is checked whole, where Redis checks only what its
//! `sanitize-dump-payload` asks for: every node's listpack entry by
//! entry (counts, flags, each entry's element count), IDs strictly
//! ascending and not above the last ID, the stated length, unique group
//! and consumer names, and every pending entry owned by exactly one of
//! its group's consumers. From type 15 the missing bookkeeping is
//! estimated as Redis estimates it (entries-added = length, a group's
//! entries-read where it can be known).
//!
//! Like Redis's loader, bytes after the value (before the footer) are
//! ignored.
//!
//! # Limits
//! The payload is untrusted. Every count and length is checked against the
//! bytes that are left before anything is reserved, and what the value
//! takes once decoded (its bytes, plus [`ELEMENT_COST`] per element) is
//! charged to a budget the caller gives: an LZF string that claims a
//! gigabyte, or a listpack of a million empty strings, fails with
//! [`RdbError::TooLarge`] before it is allocated.

use crate::store::StreamId;
use crc::{Crc, CRC_64_REDIS};

mod file;
mod listpack;
mod stream;

pub use file::RdbFile;
pub use stream::{RdbConsumer, RdbGroup, RdbPending, RdbStream, StreamDump};

/// The RDB version [`Dump`] writes: the oldest that has every type it uses
/// (Redis 5 and 6 write it), so Redis 5 and later and Valkey restore it.
pub const WRITE_VERSION: u16 = 9;

/// The RDB version of a stream's payload ([`StreamDump`]): the oldest
/// with `STREAM_LISTPACKS_2` (Redis 7.0's).
pub const STREAM_WRITE_VERSION: u16 = 10;

/// The newest RDB version [`decode`] accepts (Redis 7.2's).
pub const READ_VERSION: u16 = 11;

/// The RDB version Valkey 9 writes (its numbers go on from 80, clear of
/// Redis's 12 and later): accepted too. The types it writes that
/// [`decode`] knows are laid out as under version 11; any other type is
/// refused by its type byte.
pub const VALKEY_VERSION: u16 = 80;

/// What each decoded element is charged besides its bytes: about its
/// vector entry and heap header.
pub const ELEMENT_COST: usize = 32;

const CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
const TYPE_SET_LISTPACK: u8 = 20;
const TYPE_STREAM_LISTPACKS: u8 = 15;
const TYPE_STREAM_LISTPACKS_2: u8 = 19;
const TYPE_STREAM_LISTPACKS_3: u8 = 21;

/// Quicklist node containers.
const NODE_PLAIN: u64 = 1;
const NODE_PACKED: u64 = 2;

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum RdbValue {
    /// A string.
    String(Vec<u8>),
    /// A list, head first.
    List(Vec<Vec<u8>>),
    /// A set's members (as stored; duplicates are the caller's to drop).
    Set(Vec<Vec<u8>>),
    /// A hash's fields and values.
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A sorted set's members and scores.
    ZSet(Vec<(Vec<u8>, f64)>),
    /// A stream (possibly empty).
    Stream(Box<RdbStream>),
}

/// Why a payload was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdbError {
    /// Shorter than the footer, a newer RDB version, or a checksum that
    /// does not match (Redis: `DUMP payload version or checksum are
    /// wrong`).
    Footer,
    /// Not a value this reader knows, or malformed (Redis: `Bad data
    /// format`).
    Format,
    /// Decoded, it would take more than the budget.
    TooLarge,
}

/// Builds a DUMP payload: [`Dump::string`] for a string; for a
/// collection, [`Dump::new`] with its type and length, then its elements
/// in order ([`Dump::element`]; a sorted set's member then
/// [`Dump::score`]; a hash's field then value), then [`Dump::finish`].
pub struct Dump {
    out: Vec<u8>,
}

/// The collection types [`Dump`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpType {
    /// Elements in order.
    List,
    /// Members.
    Set,
    /// Field, value, field, value, ...
    Hash,
    /// Member, score, member, score, ...
    ZSet,
}

impl Dump {
    /// A collection of `len` elements (pairs for a hash or sorted set).
    pub fn new(kind: DumpType, len: usize) -> Dump {
        let t = match kind {
            DumpType::List => TYPE_LIST,
            DumpType::Set => TYPE_SET,
            DumpType::Hash => TYPE_HASH,
            DumpType::ZSet => TYPE_ZSET_2,
        };
        let mut out = vec![t];
        put_len(&mut out, len as u64);
        Dump { out }
    }

    /// The whole payload of a string.
    pub fn string(value: &[u8]) -> Vec<u8> {
        let mut d = Dump {
            out: vec![TYPE_STRING],
        };
        d.element(value);
        d.finish()
    }

    /// One element (a member, field, value, or list entry).
    pub fn element(&mut self, bytes: &[u8]) {
        put_len(&mut self.out, bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }

    /// A sorted set member's score, after the member.
    pub fn score(&mut self, score: f64) {
        self.out.extend_from_slice(&score.to_le_bytes());
    }

    /// The payload, with its version and checksum.
    pub fn finish(self) -> Vec<u8> {
        seal(self.out, WRITE_VERSION)
    }
}

/// The opcode before a function library's code in a FUNCTION DUMP
/// payload (Redis 7.0 GA on; 246 was its pre-release form).
const OPCODE_FUNCTION2: u8 = 245;

/// A FUNCTION DUMP payload of libraries' `codes`.
pub fn encode_functions<'a>(codes: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for code in codes {
        out.push(OPCODE_FUNCTION2);
        put_len(&mut out, code.len() as u64);
        out.extend_from_slice(code);
    }
    seal(out, WRITE_VERSION)
}

/// The libraries' codes in a FUNCTION DUMP payload (LZF-compressed codes
/// too, as Redis writes long ones), charging them to `budget` bytes.
pub fn decode_functions(payload: &[u8], budget: usize) -> Result<Vec<Vec<u8>>, RdbError> {
    let body = check_footer(payload)?;
    let mut r = Reader { rest: body, budget };
    let mut codes = Vec::new();
    while !r.rest.is_empty() {
        if r.byte()? != OPCODE_FUNCTION2 {
            return Err(RdbError::Format);
        }
        codes.push(r.string()?);
    }
    Ok(codes)
}

/// Appends the footer to a value's bytes: `version`, then the CRC-64 of
/// both.
pub fn seal(mut body: Vec<u8>, version: u16) -> Vec<u8> {
    body.extend_from_slice(&version.to_le_bytes());
    let crc = CRC64.checksum(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// Appends an RDB length: 6 bits, 14 bits, or a 32- or 64-bit big-endian
/// number after a marker byte.
fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Checks the footer of `payload` and decodes its value, charging what it
/// takes to `budget` bytes. An empty collection is refused in every
/// encoding, as Redis refuses it.
pub fn decode(payload: &[u8], budget: usize) -> Result<RdbValue, RdbError> {
    let v = decode_value(payload, budget)?;
    let empty = match &v {
        RdbValue::String(_) => false,
        RdbValue::List(l) | RdbValue::Set(l) => l.is_empty(),
        RdbValue::Hash(h) => h.is_empty(),
        RdbValue::ZSet(z) => z.is_empty(),
        RdbValue::Stream(_) => false,
    };
    if empty {
        return Err(RdbError::Format);
    }
    Ok(v)
}

fn decode_value(payload: &[u8], budget: usize) -> Result<RdbValue, RdbError> {
    let body = check_footer(payload)?;
    let mut r = Reader { rest: body, budget };
    let t = r.byte()?;
    match t {
        TYPE_STRING => Ok(RdbValue::String(r.string()?)),
        TYPE_LIST | TYPE_SET => {
            let n = r.count(1)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(r.string()?);
            }
            Ok(if t == TYPE_LIST {
                RdbValue::List(v)
            } else {
                RdbValue::Set(v)
            })
        }
        TYPE_HASH => {
            let n = r.count(2)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push((r.string()?, r.string()?));
            }
            Ok(RdbValue::Hash(v))
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count(2)?;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let s = if t == TYPE_ZSET_2 {
                    f64::from_le_bytes(r.array()?)
                } else {
                    r.text_double()?
                };
                if s.is_nan() {
                    return Err(RdbError::Format);
                }
                v.push((m, s));
            }
            Ok(RdbValue::ZSet(v))
        }
        TYPE_SET_INTSET => {
            let blob = r.string()?;
            Ok(RdbValue::Set(intset(&blob, &mut r.budget)?))
        }
        TYPE_SET_LISTPACK => {
            let blob = r.string()?;
            Ok(RdbValue::Set(listpack::elements(&blob, &mut r.budget)?))
        }
        TYPE_HASH_LISTPACK | TYPE_ZSET_LISTPACK => {
            let blob = r.string()?;
            let flat = listpack::elements(&blob, &mut r.budget)?;
            if flat.len() % 2 != 0 {
                return Err(RdbError::Format);
            }
            let mut it = flat.into_iter();
            let mut pairs = Vec::new();
            while let (Some(a), Some(b)) = (it.next(), it.next()) {
                pairs.push((a, b));
            }
            if t == TYPE_HASH_LISTPACK {
                return Ok(RdbValue::Hash(pairs));
            }
            let scored = pairs
                .into_iter()
                .map(|(m, s)| {
                    let s = std::str::from_utf8(&s)
                        .ok()
                        .and_then(|s| s.parse::<f64>().ok())
                        .filter(|s| !s.is_nan())
                        .ok_or(RdbError::Format)?;
                    Ok((m, s))
                })
                .collect::<Result<_, _>>()?;
            Ok(RdbValue::ZSet(scored))
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
            Ok(RdbValue::Stream(Box::new(stream::read(&mut r, t)?)))
        }
        TYPE_LIST_QUICKLIST_2 => {
            let nodes = r.count(2)?;
            let mut v = Vec::new();
            for _ in 0..nodes {
                let container = r.len()?;
                let blob = r.string()?;
                match container {
                    NODE_PLAIN => v.push(blob),
                    NODE_PACKED => {
                        let elems = listpack::elements(&blob, &mut r.budget)?;
                        if elems.is_empty() {
                            return Err(RdbError::Format);
                        }
                        v.extend(elems);
                    }
                    _ => return Err(RdbError::Format),
                }
            }
            if v.is_empty() {
                return Err(RdbError::Format);
            }
            Ok(RdbValue::List(v))
        }
        _ => Err(RdbError::Format),
    }
}

/// The value bytes of `payload` once its version and checksum check out.
fn check_footer(payload: &[u8]) -> Result<&[u8], RdbError> {
    let split = payload.len().checked_sub(10).ok_or(RdbError::Footer)?;
    let (body, footer) = payload.split_at(split);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > READ_VERSION && version != VALKEY_VERSION {
        return Err(RdbError::Footer);
    }
    let (covered, crc) = payload.split_at(split + 2);
    let want = u64::from_le_bytes(crc.try_into().map_err(|_| RdbError::Footer)?);
    if CRC64.checksum(covered) != want {
        return Err(RdbError::Footer);
    }
    Ok(body)
}

struct Reader<'a> {
    rest: &'a [u8],
    budget: usize,
}

/// An RDB length, or the special string encoding a length byte names.
enum Len {
    Plain(u64),
    Int8,
    Int16,
    Int32,
    Lzf,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], RdbError> {
        if n > self.rest.len() {
            return Err(RdbError::Format);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        self.take(N)?.try_into().map_err(|_| RdbError::Format)
    }

    fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.array::<1>()?[0])
    }

    fn encoded_len(&mut self) -> Result<Len, RdbError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain(u64::from(b & 0x3f) << 8 | u64::from(self.byte()?)),
            2 => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
                0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
                _ => return Err(RdbError::Format),
            },
            _ => match b & 0x3f {
                0 => Len::Int8,
                1 => Len::Int16,
                2 => Len::Int32,
                3 => Len::Lzf,
                _ => return Err(RdbError::Format),
            },
        })
    }

    fn len(&mut self) -> Result<u64, RdbError> {
        match self.encoded_len()? {
            Len::Plain(n) => Ok(n),
            _ => Err(RdbError::Format),
        }
    }

    /// A collection's element count, each element taking at least
    /// `min_bytes` of what is left; it must be at least 1.
    fn count(&mut self, min_bytes: usize) -> Result<usize, RdbError> {
        let n = self.len()?;
        match usize::try_from(n) {
            Ok(n) if n >= 1 && n <= self.rest.len() / min_bytes => Ok(n),
            _ => Err(RdbError::Format),
        }
    }

    /// A count that may be 0, each element taking at least `min_bytes` of
    /// what is left.
    fn count_any(&mut self, min_bytes: usize) -> Result<usize, RdbError> {
        let n = self.len()?;
        match usize::try_from(n) {
            Ok(n) if n <= self.rest.len() / min_bytes => Ok(n),
            _ => Err(RdbError::Format),
        }
    }

    /// A stream ID: two lengths.
    fn id(&mut self) -> Result<StreamId, RdbError> {
        Ok(StreamId {
            ms: self.len()?,
            seq: self.len()?,
        })
    }

    fn charge(&mut self, bytes: usize) -> Result<(), RdbError> {
        self.budget = self
            .budget
            .checked_sub(bytes.saturating_add(ELEMENT_COST))
            .ok_or(RdbError::TooLarge)?;
        Ok(())
    }

    /// An RDB string: raw, an integer, or LZF-compressed.
    fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        let s = match self.encoded_len()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| RdbError::Format)?;
                self.charge(n)?;
                self.take(n)?.to_vec()
            }
            Len::Int8 => {
                let v = i64::from(i8::from_le_bytes(self.array()?));
                self.int_text(v)?
            }
            Len::Int16 => {
                let v = i64::from(i16::from_le_bytes(self.array()?));
                self.int_text(v)?
            }
            Len::Int32 => {
                let v = i64::from(i32::from_le_bytes(self.array()?));
                self.int_text(v)?
            }
            Len::Lzf => {
                let clen = usize::try_from(self.len()?).map_err(|_| RdbError::Format)?;
                let len = usize::try_from(self.len()?).map_err(|_| RdbError::Format)?;
                // One 3-byte back reference expands to at most 264 bytes.
                if clen == 0 || len == 0 || len > clen.saturating_mul(88) {
                    return Err(RdbError::Format);
                }
                self.charge(len)?;
                let packed = self.take(clen)?;
                match lzf::decompress(packed, len) {
                    Ok(v) if v.len() == len => v,
                    _ => return Err(RdbError::Format),
                }
            }
        };
        Ok(s)
    }

    /// An integer-encoded string's text, charged like any string.
    fn int_text(&mut self, v: i64) -> Result<Vec<u8>, RdbError> {
        let s = v.to_string().into_bytes();
        self.charge(s.len())?;
        Ok(s)
    }

    /// The old sorted set's text score: a length byte (253 NaN, 254
    /// +inf, 255 -inf) and that many ASCII bytes.
    fn text_double(&mut self) -> Result<f64, RdbError> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.take(usize::from(n))?;
                std::str::from_utf8(text)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or(RdbError::Format)
            }
        }
    }
}

/// The members of an intset: `encoding u32` (2, 4 or 8 bytes per
/// member), `length u32`, then the members, little-endian.
fn intset(blob: &[u8], budget: &mut usize) -> Result<Vec<Vec<u8>>, RdbError> {
    let word = |at: usize| -> Result<u32, RdbError> {
        blob.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or(RdbError::Format)
    };
    let (width, n) = (word(0)? as usize, word(4)? as usize);
    if !matches!(width, 2 | 4 | 8) || n == 0 || blob.len() != 8 + n.saturating_mul(width) {
        return Err(RdbError::Format);
    }
    let mut out = Vec::with_capacity(n);
    for m in blob[8..].chunks_exact(width) {
        let v = match *m {
            [a, b] => i64::from(i16::from_le_bytes([a, b])),
            [a, b, c, d] => i64::from(i32::from_le_bytes([a, b, c, d])),
            _ => i64::from_le_bytes(m.try_into().map_err(|_| RdbError::Format)?),
        };
        let s = v.to_string().into_bytes();
        *budget = budget
            .checked_sub(s.len() + ELEMENT_COST)
            .ok_or(RdbError::TooLarge)?;
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Payloads Redis 7.0.15 wrote with DUMP (its own RDB version 10).
    #[test]
    fn reads_what_redis_dumps() {
        let hello = b"\x00\x05hello\n\x00cr\xdfve4 \n";
        assert_eq!(
            decode(hello, 1 << 20),
            Ok(RdbValue::String(b"hello".to_vec()))
        );
        let mut bad = hello.to_vec();
        bad[3] ^= 1;
        assert_eq!(decode(&bad, 1 << 20), Err(RdbError::Footer));
        assert_eq!(decode(b"\x00", 1 << 20), Err(RdbError::Footer));
    }

    #[test]
    fn round_trips_what_it_writes() {
        let v = Dump::string(b"value");
        assert_eq!(decode(&v, 1 << 20), Ok(RdbValue::String(b"value".to_vec())));
        let mut d = Dump::new(DumpType::ZSet, 2);
        d.element(b"a");
        d.score(1.5);
        d.element(&[b'x'; 300]);
        d.score(f64::NEG_INFINITY);
        let z = d.finish();
        assert_eq!(
            decode(&z, 1 << 20),
            Ok(RdbValue::ZSet(vec![
                (b"a".to_vec(), 1.5),
                (vec![b'x'; 300], f64::NEG_INFINITY)
            ]))
        );
        assert_eq!(decode(&z, 300), Err(RdbError::TooLarge));
        let mut d = Dump::new(DumpType::List, 70_000);
        for i in 0..70_000u32 {
            d.element(&i.to_le_bytes());
        }
        match decode(&d.finish(), 1 << 30) {
            Ok(RdbValue::List(l)) => assert_eq!(l.len(), 70_000),
            other => panic!("{other:?}"),
        }
    }

    fn with_footer(body: &[u8], version: u16) -> Vec<u8> {
        seal(body.to_vec(), version)
    }

    #[test]
    fn empty_listpacks_are_refused() {
        // A hash listpack, a set listpack and a zset listpack of no entries:
        // total length 7, count 0, the end byte.
        for t in [TYPE_HASH_LISTPACK, TYPE_SET_LISTPACK, TYPE_ZSET_LISTPACK] {
            let body = vec![t, 7, 7, 0, 0, 0, 0, 0, 0xff];
            assert_eq!(decode(&seal(body, 11), usize::MAX), Err(RdbError::Format));
        }
    }

    #[test]
    fn listpack_and_intset_entries() {
        // A listpack: "ab", 7, -3 (13-bit), 300 (13-bit), -70000 (24-bit).
        let mut lp = vec![0u8; 6];
        lp.extend_from_slice(&[0x82, b'a', b'b', 3]);
        lp.extend_from_slice(&[0x07, 1]);
        lp.extend_from_slice(&[0xdf, 0xfd, 2]);
        lp.extend_from_slice(&[0xc1, 0x2c, 2]);
        let v = (-70000i32).to_le_bytes();
        lp.extend_from_slice(&[0xf2, v[0], v[1], v[2], 4]);
        lp.push(0xff);
        let n = lp.len() as u32;
        lp[..4].copy_from_slice(&n.to_le_bytes());
        lp[4..6].copy_from_slice(&5u16.to_le_bytes());
        let mut body = vec![TYPE_SET_LISTPACK, lp.len() as u8];
        body.extend_from_slice(&lp);
        let want: Vec<Vec<u8>> = ["ab", "7", "-3", "300", "-70000"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        assert_eq!(
            decode(&with_footer(&body, 11), 1 << 20),
            Ok(RdbValue::Set(want))
        );
        assert_eq!(
            decode(&with_footer(&body, 12), 1 << 20),
            Err(RdbError::Footer)
        );
        assert!(decode(&with_footer(&body, VALKEY_VERSION), 1 << 20).is_ok());
        // An intset of 16-bit members.
        let mut is = vec![2, 0, 0, 0, 2, 0, 0, 0];
        is.extend_from_slice(&(-5i16).to_le_bytes());
        is.extend_from_slice(&9i16.to_le_bytes());
        let mut body = vec![TYPE_SET_INTSET, is.len() as u8];
        body.extend_from_slice(&is);
        assert_eq!(
            decode(&with_footer(&body, 10), 1 << 20),
            Ok(RdbValue::Set(vec![b"-5".to_vec(), b"9".to_vec()]))
        );
    }

    #[test]
    fn hostile_lengths_fail_before_allocating() {
        // A list claiming 2^40 elements, an LZF string claiming 4 GB.
        let mut huge = vec![TYPE_LIST, 0x81];
        huge.extend_from_slice(&(1u64 << 40).to_be_bytes());
        assert_eq!(
            decode(&with_footer(&huge, 9), 1 << 30),
            Err(RdbError::Format)
        );
        let mut lzf = vec![TYPE_STRING, 0xc3, 4, 0x80];
        lzf.extend_from_slice(&u32::MAX.to_be_bytes());
        lzf.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            decode(&with_footer(&lzf, 9), 1 << 30),
            Err(RdbError::Format)
        );
        for t in [6u8, 7, 9, 10, 12, 13, 14, 15, 19, 21, 99] {
            assert_eq!(
                decode(&with_footer(&[t, 1, 1], 9), 1 << 20),
                Err(RdbError::Format)
            );
        }
        assert_eq!(
            decode(&with_footer(&[TYPE_SET, 0], 9), 1 << 20),
            Err(RdbError::Format)
        );
    }
}
