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

use crate::store::{StreamId, StreamMeta};
use crc::{Crc, CRC_64_REDIS};

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

/// A decoded stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RdbStream {
    /// Its entries in ID order, each its fields and values (field, value,
    /// field, value, ...).
    pub entries: Vec<(StreamId, Vec<Vec<u8>>)>,
    /// Its last ID, max-deleted ID and entries-added count.
    pub meta: StreamMeta,
    /// Its consumer groups.
    pub groups: Vec<RdbGroup>,
}

/// A stream's consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdbGroup {
    /// Its name.
    pub name: Vec<u8>,
    /// The last ID delivered.
    pub last_delivered: StreamId,
    /// Entries read, when known.
    pub entries_read: Option<u64>,
    /// Its pending entries, in ID order.
    pub pending: Vec<RdbPending>,
    /// Its consumers.
    pub consumers: Vec<RdbConsumer>,
}

/// A delivered, unacknowledged entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RdbPending {
    /// The entry's ID.
    pub id: StreamId,
    /// When it was last delivered (Unix ms).
    pub delivered_ms: u64,
    /// How many times it was delivered.
    pub deliveries: u64,
    /// Its owner: an index into the group's consumers.
    pub consumer: usize,
}

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdbConsumer {
    /// Its name.
    pub name: Vec<u8>,
    /// Its last attempted interaction (Unix ms).
    pub seen_ms: u64,
    /// Its last successful interaction, if any.
    pub active_ms: Option<u64>,
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

/// Entry flags in a stream node: deleted (kept in place until the node
/// goes), and fields the same as the node's first entry's (only the
/// values are written).
const ENTRY_DELETED: i64 = 1;
const ENTRY_SAMEFIELDS: i64 = 2;

/// A node is closed once it holds this many bytes or entries (Redis's
/// default `stream-node-max-bytes` and `stream-node-max-entries`).
const NODE_MAX_BYTES: usize = 4096;
const NODE_MAX_ENTRIES: u64 = 100;

/// A listpack's element count when it does not fit its 16-bit field.
const LP_COUNT_UNKNOWN: u16 = u16::MAX;

/// Builds a stream's payload: [`StreamDump::entry`] for each entry in ID
/// order, then [`StreamDump::finish`] with the stream's bookkeeping and
/// groups.
///
/// Each node is a key (its first entry's ID, 16 bytes big-endian) and a
/// listpack:
///
/// ```text
///   master: live-count | deleted-count | n | field_1 .. field_n | 0
///   entry:  flags | ms - master.ms | seq - master.seq
///           | (SAMEFIELDS: value_1 .. value_n | else: n | field | value ...)
///           | elements in the entry before this one
/// ```
#[derive(Default)]
pub struct StreamDump {
    /// The closed nodes, as they go in the payload.
    nodes: Vec<u8>,
    node_count: u64,
    open: Option<Node>,
    first: Option<StreamId>,
    len: u64,
}

/// The node being filled.
struct Node {
    master: StreamId,
    fields: Vec<Vec<u8>>,
    /// The entries' listpack elements.
    body: Vec<u8>,
    elements: usize,
    live: u64,
}

impl StreamDump {
    /// A stream with no entries yet.
    pub fn new() -> StreamDump {
        StreamDump::default()
    }

    /// The next entry: `id` above every earlier one, `parts` its fields
    /// and values (field, value, field, value, ...).
    pub fn entry(&mut self, id: StreamId, parts: &[&[u8]]) {
        let bytes: usize = parts.iter().map(|p| p.len()).sum();
        if let Some(n) = &self.open {
            if 7 + n.body.len() + bytes >= NODE_MAX_BYTES || n.live >= NODE_MAX_ENTRIES {
                self.close();
            }
        }
        let pairs = parts.len() / 2;
        let node = self.open.get_or_insert_with(|| Node {
            master: id,
            fields: parts
                .iter()
                .step_by(2)
                .take(pairs)
                .map(|f| f.to_vec())
                .collect(),
            body: Vec::new(),
            elements: 0,
            live: 0,
        });
        let same = node.fields.len() == pairs
            && node
                .fields
                .iter()
                .zip(parts.iter().step_by(2))
                .all(|(a, b)| a == b);
        let b = &mut node.body;
        lp_int(b, if same { ENTRY_SAMEFIELDS } else { 0 });
        lp_int(b, id.ms.wrapping_sub(node.master.ms) as i64);
        lp_int(b, id.seq.wrapping_sub(node.master.seq) as i64);
        let written = if same {
            for v in parts.iter().skip(1).step_by(2).take(pairs) {
                lp_str(b, v);
            }
            3 + pairs
        } else {
            lp_int(b, pairs as i64);
            for p in &parts[..pairs * 2] {
                lp_str(b, p);
            }
            4 + 2 * pairs
        };
        lp_int(b, written as i64);
        node.elements += written + 1;
        node.live += 1;
        self.first.get_or_insert(id);
        self.len += 1;
    }

    /// Writes the open node out.
    fn close(&mut self) {
        let Some(n) = self.open.take() else {
            return;
        };
        let mut lp = vec![0u8; 6];
        lp_int(&mut lp, n.live as i64);
        lp_int(&mut lp, 0);
        lp_int(&mut lp, n.fields.len() as i64);
        for f in &n.fields {
            lp_str(&mut lp, f);
        }
        lp_int(&mut lp, 0);
        lp.extend_from_slice(&n.body);
        lp.push(0xff);
        let total = u32::try_from(lp.len()).unwrap_or(u32::MAX);
        lp[..4].copy_from_slice(&total.to_le_bytes());
        let count = u16::try_from(n.elements + n.fields.len() + 4)
            .ok()
            .filter(|&c| c != LP_COUNT_UNKNOWN)
            .unwrap_or(LP_COUNT_UNKNOWN);
        lp[4..6].copy_from_slice(&count.to_le_bytes());
        put_len(&mut self.nodes, 16);
        self.nodes.extend_from_slice(&n.master.to_bytes());
        put_len(&mut self.nodes, lp.len() as u64);
        self.nodes.extend_from_slice(&lp);
        self.node_count += 1;
    }

    /// The payload: the entries given, then `meta` (the last ID at least
    /// the last entry's) and `groups`.
    pub fn finish(self, meta: &StreamMeta, groups: &[RdbGroup]) -> Vec<u8> {
        self.finish_as(TYPE_STREAM_LISTPACKS_2, meta, groups)
    }

    /// [`finish`](Self::finish) as stream type `t` (15, 19 or 21), under
    /// the oldest RDB version that has it.
    fn finish_as(mut self, t: u8, meta: &StreamMeta, groups: &[RdbGroup]) -> Vec<u8> {
        self.close();
        let mut out = vec![t];
        put_len(&mut out, self.node_count);
        out.append(&mut self.nodes);
        put_len(&mut out, self.len);
        put_id(&mut out, meta.last_id);
        if t >= TYPE_STREAM_LISTPACKS_2 {
            put_id(&mut out, self.first.unwrap_or(StreamId::MIN));
            put_id(&mut out, meta.max_deleted);
            put_len(&mut out, meta.entries_added);
        }
        put_len(&mut out, groups.len() as u64);
        for g in groups {
            put_len(&mut out, g.name.len() as u64);
            out.extend_from_slice(&g.name);
            put_id(&mut out, g.last_delivered);
            if t >= TYPE_STREAM_LISTPACKS_2 {
                // Unknown is -1 as an unsigned length.
                put_len(&mut out, g.entries_read.unwrap_or(u64::MAX));
            }
            put_len(&mut out, g.pending.len() as u64);
            for p in &g.pending {
                out.extend_from_slice(&p.id.to_bytes());
                out.extend_from_slice(&p.delivered_ms.to_le_bytes());
                put_len(&mut out, p.deliveries);
            }
            put_len(&mut out, g.consumers.len() as u64);
            for (i, c) in g.consumers.iter().enumerate() {
                put_len(&mut out, c.name.len() as u64);
                out.extend_from_slice(&c.name);
                out.extend_from_slice(&c.seen_ms.to_le_bytes());
                if t >= TYPE_STREAM_LISTPACKS_3 {
                    // Never active is -1.
                    out.extend_from_slice(&c.active_ms.unwrap_or(u64::MAX).to_le_bytes());
                }
                let own = g.pending.iter().filter(|p| p.consumer == i);
                put_len(&mut out, own.clone().count() as u64);
                for p in own {
                    out.extend_from_slice(&p.id.to_bytes());
                }
            }
        }
        let version = match t {
            TYPE_STREAM_LISTPACKS => WRITE_VERSION,
            TYPE_STREAM_LISTPACKS_2 => STREAM_WRITE_VERSION,
            _ => READ_VERSION,
        };
        seal(out, version)
    }
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// Appends a listpack element's backlen: `len` (its encoding and data),
/// 7 bits a byte, the low bits last, every byte but the first marked.
fn lp_backlen(out: &mut Vec<u8>, len: usize) {
    let bytes = match len {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    for i in (0..bytes).rev() {
        let b = (len >> (7 * i)) as u8 & 0x7f;
        out.push(if i == bytes - 1 { b } else { b | 0x80 });
    }
}

/// Appends a listpack integer in its smallest encoding.
fn lp_int(out: &mut Vec<u8>, v: i64) {
    let start = out.len();
    match v {
        0..=127 => out.push(v as u8),
        -4096..=4095 => {
            let raw = (v as u16) & 0x1fff;
            out.extend_from_slice(&[0xc0 | (raw >> 8) as u8, raw as u8]);
        }
        _ => {
            let (tag, n) = if i16::try_from(v).is_ok() {
                (0xf1, 2)
            } else if (-(1 << 23)..1 << 23).contains(&v) {
                (0xf2, 3)
            } else if i32::try_from(v).is_ok() {
                (0xf3, 4)
            } else {
                (0xf4, 8)
            };
            out.push(tag);
            out.extend_from_slice(&v.to_le_bytes()[..n]);
        }
    }
    let len = out.len() - start;
    lp_backlen(out, len);
}

/// Appends a listpack string.
fn lp_str(out: &mut Vec<u8>, s: &[u8]) {
    let start = out.len();
    let n = s.len();
    if n < 64 {
        out.push(0x80 | n as u8);
    } else if n < 4096 {
        out.extend_from_slice(&[0xe0 | (n >> 8) as u8, n as u8]);
    } else {
        out.push(0xf0);
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
    let len = out.len() - start;
    lp_backlen(out, len);
}

/// The checksum of a whole RDB file, kept as it is written.
static FILE_CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

const OPCODE_EXPIRETIME_MS: u8 = 252;
const OPCODE_SELECTDB: u8 = 254;
const OPCODE_EOF: u8 = 255;

/// An RDB file (version [`WRITE_VERSION`]) written in pieces, for a
/// transfer that cannot hold the whole file: each call appends to `out`
/// and adds what it appended to the file's checksum. The keys come from
/// DUMP payloads ([`Dump`]), whose type byte and value are the file's.
pub struct RdbFile {
    crc: crc::Digest<'static, u64>,
}

impl RdbFile {
    /// The file's header.
    pub fn start(out: &mut Vec<u8>) -> RdbFile {
        let mut f = RdbFile {
            crc: FILE_CRC64.digest(),
        };
        f.append(out, |o| {
            o.extend_from_slice(format!("REDIS{WRITE_VERSION:04}").as_bytes())
        });
        f
    }

    fn append(&mut self, out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
        let start = out.len();
        write(out);
        self.crc.update(&out[start..]);
    }

    /// The keys that follow are database `n`'s.
    pub fn select_db(&mut self, out: &mut Vec<u8>, n: u8) {
        self.append(out, |o| {
            o.push(OPCODE_SELECTDB);
            put_len(o, u64::from(n));
        });
    }

    /// One key: its expiry (Unix ms, 0 for none) and its value as a DUMP
    /// `payload` gives it (nothing is written for a payload too short to
    /// be one).
    pub fn key(&mut self, out: &mut Vec<u8>, key: &[u8], expires_at_ms: u64, payload: &[u8]) {
        // Type byte, value, then the footer: 2 bytes of version, 8 of CRC.
        let Some((&kind, value)) = payload
            .get(..payload.len().saturating_sub(10))
            .and_then(|p| p.split_first())
        else {
            return;
        };
        self.append(out, |o| {
            if expires_at_ms != 0 {
                o.push(OPCODE_EXPIRETIME_MS);
                o.extend_from_slice(&expires_at_ms.to_le_bytes());
            }
            o.push(kind);
            put_len(o, key.len() as u64);
            o.extend_from_slice(key);
            o.extend_from_slice(value);
        });
    }

    /// The end of the file and its checksum.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        self.append(out, |o| o.push(OPCODE_EOF));
        out.extend_from_slice(&self.crc.finalize().to_le_bytes());
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
            Ok(RdbValue::Set(listpack(&blob, &mut r.budget)?))
        }
        TYPE_HASH_LISTPACK | TYPE_ZSET_LISTPACK => {
            let blob = r.string()?;
            let flat = listpack(&blob, &mut r.budget)?;
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
            Ok(RdbValue::Stream(Box::new(stream(&mut r, t)?)))
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
                        let elems = listpack(&blob, &mut r.budget)?;
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

/// The entries of a listpack, integers as their decimal text (see
/// [`Listpack`]).
fn listpack(blob: &[u8], budget: &mut usize) -> Result<Vec<Vec<u8>>, RdbError> {
    let mut lp = Listpack::open(blob)?;
    let mut out = Vec::new();
    while let Some(e) = lp.next()? {
        out.push(e.bytes(budget)?);
    }
    Ok(out)
}

/// A listpack element.
#[derive(Clone, Copy)]
enum Lp<'a> {
    Str(&'a [u8]),
    Int(i64),
}

impl Lp<'_> {
    /// Its bytes (an integer as its decimal text), charged to `budget`.
    fn bytes(self, budget: &mut usize) -> Result<Vec<u8>, RdbError> {
        let bytes = match self {
            Lp::Str(s) => s.to_vec(),
            Lp::Int(v) => v.to_string().into_bytes(),
        };
        *budget = budget
            .checked_sub(bytes.len() + ELEMENT_COST)
            .ok_or(RdbError::TooLarge)?;
        Ok(bytes)
    }

    /// Its value as an integer: a string of one is taken too.
    fn int(self) -> Result<i64, RdbError> {
        match self {
            Lp::Int(v) => Ok(v),
            Lp::Str(s) => std::str::from_utf8(s)
                .ok()
                .filter(|t| !t.starts_with('+'))
                .and_then(|t| t.parse().ok())
                .ok_or(RdbError::Format),
        }
    }
}

/// A listpack's elements, checked as they are read:
///
/// ```text
///   total_bytes u32 LE | count u16 LE | element ... | 0xFF
///   element = encoding (+ data) | backlen (1-5 bytes: the element's length)
/// ```
///
/// The total must be the blob's length, each backlen must be the one
/// its element's length has, the end byte must end the blob, and the
/// count (unless 65535, unknown) must be the elements'.
struct Listpack<'a> {
    blob: &'a [u8],
    at: usize,
    seen: usize,
}

impl<'a> Listpack<'a> {
    fn open(blob: &'a [u8]) -> Result<Listpack<'a>, RdbError> {
        if blob.len() < 7 || blob.get(..4) != Some(&(blob.len() as u32).to_le_bytes()[..]) {
            return Err(RdbError::Format);
        }
        Ok(Listpack {
            blob,
            at: 6,
            seen: 0,
        })
    }

    /// The next element (None at the end).
    fn next(&mut self) -> Result<Option<Lp<'a>>, RdbError> {
        let bad = RdbError::Format;
        let b = *self.blob.get(self.at).ok_or(bad)?;
        if b == 0xff {
            let count = u16::from_le_bytes([self.blob[4], self.blob[5]]);
            if self.at + 1 != self.blob.len()
                || (count != LP_COUNT_UNKNOWN && usize::from(count) != self.seen)
            {
                return Err(bad);
            }
            return Ok(None);
        }
        let tail = &self.blob[self.at..];
        let int = |n: usize| -> Result<i64, RdbError> {
            let d = tail.get(1..1 + n).ok_or(bad)?;
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(d);
            let shift = 64 - 8 * n as u32;
            Ok((i64::from_le_bytes(w) << shift) >> shift)
        };
        let str_at = |head: usize, len: usize| -> Result<(Lp<'a>, usize), RdbError> {
            let end = head.checked_add(len).ok_or(bad)?;
            Ok((Lp::Str(tail.get(head..end).ok_or(bad)?), end))
        };
        // The element, and its length before its backlen.
        let (e, len) = match b {
            0x00..=0x7f => (Lp::Int(i64::from(b)), 1),
            0x80..=0xbf => str_at(1, usize::from(b & 0x3f))?,
            0xc0..=0xdf => {
                let lo = *tail.get(1).ok_or(bad)?;
                let raw = i64::from(b & 0x1f) << 8 | i64::from(lo);
                (Lp::Int((raw << 51) >> 51), 2)
            }
            0xe0..=0xef => {
                let lo = *tail.get(1).ok_or(bad)?;
                str_at(2, usize::from(b & 0x0f) << 8 | usize::from(lo))?
            }
            0xf0 => {
                let n = tail.get(1..5).ok_or(bad)?;
                str_at(
                    5,
                    u32::from_le_bytes(n.try_into().map_err(|_| bad)?) as usize,
                )?
            }
            0xf1 => (Lp::Int(int(2)?), 3),
            0xf2 => (Lp::Int(int(3)?), 4),
            0xf3 => (Lp::Int(int(4)?), 5),
            0xf4 => (Lp::Int(int(8)?), 9),
            _ => return Err(bad),
        };
        let mut want = Vec::with_capacity(5);
        lp_backlen(&mut want, len);
        let end = len.checked_add(want.len()).ok_or(bad)?;
        if tail.get(len..end) != Some(&want[..]) {
            return Err(bad);
        }
        self.at += end;
        self.seen += 1;
        Ok(Some(e))
    }

    /// The next element, which must be there.
    fn element(&mut self) -> Result<Lp<'a>, RdbError> {
        self.next()?.ok_or(RdbError::Format)
    }

    /// The next element as an integer.
    fn int(&mut self) -> Result<i64, RdbError> {
        self.element()?.int()
    }

    /// The next element as a count (not negative).
    fn count(&mut self) -> Result<u64, RdbError> {
        u64::try_from(self.int()?).map_err(|_| RdbError::Format)
    }
}

/// A stream of type `t` (15, 19 or 21), after its type byte.
fn stream(r: &mut Reader<'_>, t: u8) -> Result<RdbStream, RdbError> {
    let bad = RdbError::Format;
    let mut s = RdbStream::default();
    // Each node takes bytes, so a false count runs out of them.
    let nodes = r.len()?;
    for _ in 0..nodes {
        let key = r.string()?;
        let master = StreamId::from_bytes(&key).ok_or(bad)?;
        let blob = r.string()?;
        stream_node(&blob, master, &mut s.entries, &mut r.budget)?;
    }
    let length = r.len()?;
    s.meta.last_id = r.id()?;
    let first = s.entries.first().map_or(StreamId::MIN, |e| e.0);
    if t >= TYPE_STREAM_LISTPACKS_2 {
        // The first ID is what the entries say.
        r.id()?;
        s.meta.max_deleted = r.id()?;
        s.meta.entries_added = r.len()?;
    } else {
        s.meta.entries_added = length;
    }
    let last_entry = s.entries.last().map(|e| e.0);
    if length != s.entries.len() as u64
        || last_entry.is_some_and(|l| l > s.meta.last_id)
        || s.meta.entries_added < length
    {
        return Err(bad);
    }
    let groups = r.len()?;
    for _ in 0..groups {
        let name = r.string()?;
        let last_delivered = r.id()?;
        let entries_read = if t >= TYPE_STREAM_LISTPACKS_2 {
            Some(r.len()?).filter(|&n| n != u64::MAX)
        } else {
            estimate_read(&s, length, first, last_delivered)
        };
        // An ID, a delivery time, a count: at least 25 bytes each.
        let n = r.count_any(25)?;
        let mut pending = Vec::with_capacity(n);
        for _ in 0..n {
            r.charge(16)?;
            let id = StreamId::from_bytes(r.take(16)?).ok_or(bad)?;
            let delivered_ms = u64::from_le_bytes(r.array()?);
            let deliveries = r.len()?;
            if pending.last().is_some_and(|p: &RdbPending| p.id >= id) {
                return Err(bad);
            }
            pending.push(RdbPending {
                id,
                delivered_ms,
                deliveries,
                consumer: usize::MAX,
            });
        }
        // A name, a seen time, a count: at least 10 bytes each.
        let n = r.count_any(10)?;
        let mut consumers = Vec::with_capacity(n);
        for i in 0..n {
            let name = r.string()?;
            let seen_ms = u64::from_le_bytes(r.array()?);
            let active_ms = if t >= TYPE_STREAM_LISTPACKS_3 {
                Some(u64::from_le_bytes(r.array()?)).filter(|&a| a != u64::MAX)
            } else {
                Some(seen_ms)
            };
            for _ in 0..r.count_any(16)? {
                let id = StreamId::from_bytes(r.take(16)?).ok_or(bad)?;
                let at = pending
                    .binary_search_by_key(&id, |p| p.id)
                    .map_err(|_| bad)?;
                if pending[at].consumer != usize::MAX {
                    return Err(bad);
                }
                pending[at].consumer = i;
            }
            consumers.push(RdbConsumer {
                name,
                seen_ms,
                active_ms,
            });
        }
        if pending.iter().any(|p| p.consumer == usize::MAX) || has_repeats(&consumers, |c| &c.name)
        {
            return Err(bad);
        }
        s.groups.push(RdbGroup {
            name,
            last_delivered,
            entries_read,
            pending,
            consumers,
        });
    }
    if has_repeats(&s.groups, |g| &g.name) {
        return Err(bad);
    }
    Ok(s)
}

/// True if two of `items` have the same name.
fn has_repeats<T>(items: &[T], name: impl Fn(&T) -> &[u8]) -> bool {
    let mut names: Vec<&[u8]> = items.iter().map(name).collect();
    names.sort_unstable();
    names.windows(2).any(|w| w[0] == w[1])
}

/// A group's entries-read in a type 15 stream, which has none: known
/// where the position of its last delivered ID is (nothing deleted is
/// recorded, and everything ever added is still there).
fn estimate_read(s: &RdbStream, length: u64, first: StreamId, last: StreamId) -> Option<u64> {
    let added = s.meta.entries_added;
    if added == 0 || last == s.meta.last_id || (length == 0 && last < s.meta.last_id) {
        return Some(added);
    }
    if last > s.meta.last_id {
        return None;
    }
    match last.cmp(&first) {
        std::cmp::Ordering::Less => Some(added - length),
        std::cmp::Ordering::Equal => Some(added - length + 1),
        std::cmp::Ordering::Greater => None,
    }
}

/// The live entries of one node's listpack (see [`StreamDump`]), each
/// above the last of `entries`, appended to them.
fn stream_node(
    blob: &[u8],
    master: StreamId,
    entries: &mut Vec<(StreamId, Vec<Vec<u8>>)>,
    budget: &mut usize,
) -> Result<(), RdbError> {
    let bad = RdbError::Format;
    let mut lp = Listpack::open(blob)?;
    let live = lp.count()?;
    let deleted = lp.count()?;
    let n = lp.count()?;
    // The master fields, each at least 2 bytes of the listpack.
    if n > blob.len() as u64 / 2 {
        return Err(bad);
    }
    let mut fields = Vec::with_capacity(n as usize);
    for _ in 0..n {
        fields.push(lp.element()?);
    }
    if lp.int()? != 0 {
        return Err(bad);
    }
    let (mut seen_live, mut seen_deleted) = (0u64, 0u64);
    while let Some(flags) = lp.next()? {
        let flags = flags.int()?;
        let id = StreamId {
            ms: master.ms.wrapping_add(lp.int()? as u64),
            seq: master.seq.wrapping_add(lp.int()? as u64),
        };
        let same = flags & ENTRY_SAMEFIELDS != 0;
        let keep = flags & ENTRY_DELETED == 0;
        let pairs = if same { n } else { lp.count()? };
        let mut parts = Vec::new();
        for i in 0..pairs {
            let field = match same {
                true => fields.get(i as usize).copied().ok_or(bad)?,
                false => lp.element()?,
            };
            let value = lp.element()?;
            if keep {
                parts.push(field.bytes(budget)?);
                parts.push(value.bytes(budget)?);
            }
        }
        let want = if same { 3 + pairs } else { 4 + 2 * pairs };
        if lp.count()? != want {
            return Err(bad);
        }
        if !keep {
            seen_deleted += 1;
            continue;
        }
        if entries.last().is_some_and(|e| e.0 >= id) {
            return Err(bad);
        }
        *budget = budget.checked_sub(ELEMENT_COST).ok_or(RdbError::TooLarge)?;
        entries.push((id, parts));
        seen_live += 1;
    }
    if (seen_live, seen_deleted) != (live, deleted) {
        return Err(bad);
    }
    Ok(())
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

    fn sid(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Redis 7.0.15's DUMP of a stream: entries 1-1 (a 1 b hello), 1-2
    /// (deleted) and 5-0 (other v); group g at 1-1 with entries-read
    /// unknown, 1-1 pending for alice, bob with nothing pending.
    #[test]
    fn reads_a_stream_redis_dumps() {
        let p = hex(
            "130110000000000000000100000000000000014048480000001900020101010201816102816202\
             000102010001000101018568656c6c6f0605010301000101010201817802050100010401dfff02\
             0101856f74686572068176020601ff0205000101010203010167010181ffffffffffffffff0100\
             000000000000010000000000000001483b131ea2010000010205616c696365483b131ea2010000\
             010000000000000001000000000000000103626f624c3b131ea2010000000a008758d5319bf14cd2",
        );
        let Ok(RdbValue::Stream(s)) = decode(&p, 1 << 20) else {
            panic!("{:?}", decode(&p, 1 << 20));
        };
        let v = |b: &[&str]| b.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            s.entries,
            vec![
                (sid(1, 1), v(&["a", "1", "b", "hello"])),
                (sid(5, 0), v(&["other", "v"]))
            ]
        );
        assert_eq!(
            s.meta,
            StreamMeta {
                last_id: sid(5, 0),
                max_deleted: sid(1, 2),
                entries_added: 3
            }
        );
        let t = 0x01a2_1e13_3b48;
        assert_eq!(
            s.groups,
            vec![RdbGroup {
                name: b"g".to_vec(),
                last_delivered: sid(1, 1),
                entries_read: None,
                pending: vec![RdbPending {
                    id: sid(1, 1),
                    delivered_ms: t,
                    deliveries: 1,
                    consumer: 0
                }],
                consumers: vec![
                    RdbConsumer {
                        name: b"alice".to_vec(),
                        seen_ms: t,
                        active_ms: Some(t)
                    },
                    RdbConsumer {
                        name: b"bob".to_vec(),
                        seen_ms: t + 4,
                        active_ms: Some(t + 4)
                    }
                ]
            }]
        );
    }

    /// A stream with what every part of the format has: nodes cut by
    /// count and by bytes, entries with the master's fields and without,
    /// integers, an empty value, an ID below its node's master in seq,
    /// two groups, a consumer never active, an unknown entries-read.
    fn sample(n: u64, scale: usize) -> RdbStream {
        let mut entries = Vec::new();
        for i in 0..n {
            let parts: Vec<Vec<u8>> = match i % 5 {
                0 => vec![b"f".to_vec(), i.to_string().into_bytes()],
                1 => vec![b"f".to_vec(), b"".to_vec(), b"g".to_vec(), b"-7".to_vec()],
                2 => vec![b"big".to_vec(), vec![b'x'; scale * 3 * (i as usize % 20)]],
                3 => vec![
                    b"f".to_vec(),
                    (-(i as i64) * 100_000_000_000).to_string().into_bytes(),
                ],
                _ => vec![b"f".to_vec(), vec![0xff; scale * 50]],
            };
            // Seqs up and down: below the node's first entry's too.
            entries.push((sid(1_000 + i, (i * 7919) % 13), parts));
        }
        entries.push((sid(u64::MAX - 1, 0), vec![b"k".to_vec(), b"v".to_vec()]));
        let consumers = vec![
            RdbConsumer {
                name: b"alice".to_vec(),
                seen_ms: 1_700_000_000_000,
                active_ms: Some(1_699_999_999_000),
            },
            RdbConsumer {
                name: b"bob".to_vec(),
                seen_ms: 5,
                active_ms: None,
            },
        ];
        let pending = (0..10)
            .map(|i| RdbPending {
                id: entries[i * (n as usize - 1) / 10].0,
                delivered_ms: 1_700_000_000_000 + i as u64,
                deliveries: 1 + i as u64 * 1000,
                consumer: i % 2,
            })
            .collect();
        RdbStream {
            meta: StreamMeta {
                last_id: sid(u64::MAX - 1, 5),
                max_deleted: sid(3, 3),
                entries_added: 400,
            },
            entries,
            groups: vec![
                RdbGroup {
                    name: b"g1".to_vec(),
                    last_delivered: sid(2_000, 0),
                    entries_read: Some(77),
                    pending,
                    consumers,
                },
                RdbGroup {
                    name: b"g2".to_vec(),
                    last_delivered: StreamId::MIN,
                    entries_read: None,
                    ..RdbGroup::default()
                },
            ],
        }
    }

    fn dump_as(s: &RdbStream, t: u8) -> Vec<u8> {
        let mut d = StreamDump::new();
        for (id, parts) in &s.entries {
            let parts: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
            d.entry(*id, &parts);
        }
        d.finish_as(t, &s.meta, &s.groups)
    }

    #[test]
    fn streams_round_trip_in_every_type() {
        let s = sample(250, 100);
        // 21 keeps everything.
        assert_eq!(
            decode(&dump_as(&s, TYPE_STREAM_LISTPACKS_3), usize::MAX),
            Ok(RdbValue::Stream(Box::new(s.clone())))
        );
        // 19 (what DUMP writes): a consumer's active time is its seen time.
        let p = dump_as(&s, TYPE_STREAM_LISTPACKS_2);
        assert_eq!(
            p[p.len() - 10..p.len() - 8],
            STREAM_WRITE_VERSION.to_le_bytes()
        );
        let mut want = s.clone();
        for c in &mut want.groups[0].consumers {
            c.active_ms = Some(c.seen_ms);
        }
        assert_eq!(
            decode(&p, usize::MAX),
            Ok(RdbValue::Stream(Box::new(want.clone())))
        );
        // Several nodes were written: by count, and by bytes.
        assert!(p.len() > 250 * 1000);
        // 15: nothing deleted recorded, entries-added is the length, and a
        // group's entries-read only where it can be known.
        let mut old = want;
        old.meta.max_deleted = StreamId::MIN;
        old.meta.entries_added = old.entries.len() as u64;
        old.groups[0].entries_read = None;
        old.groups[1].entries_read = Some(0);
        assert_eq!(
            decode(&dump_as(&s, TYPE_STREAM_LISTPACKS), usize::MAX),
            Ok(RdbValue::Stream(Box::new(old)))
        );
        // An empty stream with a group is a value.
        let empty = RdbStream {
            entries: Vec::new(),
            meta: StreamMeta {
                last_id: sid(9, 9),
                max_deleted: sid(9, 9),
                entries_added: 4,
            },
            groups: vec![s.groups[1].clone()],
        };
        assert_eq!(
            decode(&dump_as(&empty, TYPE_STREAM_LISTPACKS_3), 1 << 10),
            Ok(RdbValue::Stream(Box::new(empty)))
        );
    }

    #[test]
    fn listpack_integers_and_backlens_round_trip() {
        let ints = [
            0i64,
            127,
            128,
            -1,
            4095,
            -4096,
            4096,
            -4097,
            32767,
            -32768,
            32768,
            8_388_607,
            -8_388_608,
            8_388_608,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::MAX,
            i64::MIN,
        ];
        let strs = [0usize, 63, 64, 4095, 4096, 16_378, 16_379, 20_000];
        let mut lp = vec![0u8; 6];
        for v in ints {
            lp_int(&mut lp, v);
        }
        for n in strs {
            lp_str(&mut lp, &vec![b'q'; n]);
        }
        lp.push(0xff);
        let n = lp.len() as u32;
        lp[..4].copy_from_slice(&n.to_le_bytes());
        lp[4..6].copy_from_slice(&((ints.len() + strs.len()) as u16).to_le_bytes());
        let mut it = Listpack::open(&lp).unwrap();
        for v in ints {
            assert!(matches!(it.next(), Ok(Some(Lp::Int(x))) if x == v), "{v}");
        }
        for n in strs {
            assert!(
                matches!(it.next(), Ok(Some(Lp::Str(s))) if s.len() == n),
                "{n}"
            );
        }
        assert!(matches!(it.next(), Ok(None)));
        // A wrong count, and a wrong backlen, are refused.
        let mut bad = lp.clone();
        bad[4] ^= 1;
        assert_eq!(
            listpack(&bad, &mut usize::MAX.clone()),
            Err(RdbError::Format)
        );
        let mut bad = lp.clone();
        bad[7] ^= 1;
        assert_eq!(
            listpack(&bad, &mut usize::MAX.clone()),
            Err(RdbError::Format)
        );
    }

    #[test]
    fn hostile_streams_are_refused_without_panics() {
        let s = sample(30, 1);
        let p = dump_as(&s, TYPE_STREAM_LISTPACKS_3);
        let body = &p[..p.len() - 10];
        // Every truncation, and every byte changed, sealed again: an error
        // or a value, never a panic.
        for cut in 1..body.len() {
            assert!(decode(&seal(body[..cut].to_vec(), 11), usize::MAX).is_err());
        }
        for at in (0..body.len()).step_by(7) {
            for x in [1u8, 0x80, 0xff] {
                let mut b = body.to_vec();
                b[at] ^= x;
                let _ = decode(&seal(b, 11), usize::MAX);
            }
        }
        // The budget is charged: the entries alone take more than 2 KB.
        assert_eq!(decode(&p, 2_000), Err(RdbError::TooLarge));
        let payload = |s: &RdbStream| dump_as(s, TYPE_STREAM_LISTPACKS_3);
        let refused = |s: RdbStream| {
            assert_eq!(decode(&payload(&s), usize::MAX), Err(RdbError::Format));
        };
        // A pending entry without an owner; one owned twice (below).
        let mut t = s.clone();
        t.groups[0].pending[3].consumer = 9;
        refused(t);
        // Two groups, or two consumers, of one name.
        let mut t = s.clone();
        t.groups[1].name = b"g1".to_vec();
        refused(t);
        let mut t = s.clone();
        t.groups[0].consumers[1].name = b"alice".to_vec();
        refused(t);
        // The last ID below the last entry's.
        let mut t = s.clone();
        t.meta.last_id = sid(5, 0);
        refused(t);
        // Entries out of order.
        let mut t = s.clone();
        t.entries.swap(3, 4);
        refused(t);
        // Pending entries out of order.
        let mut t = s.clone();
        t.groups[0].pending.swap(0, 1);
        refused(t);

        // Counts far beyond the bytes: nodes, groups, a PEL, consumers.
        let mut head = vec![TYPE_STREAM_LISTPACKS_2, 0, 0];
        put_id(&mut head, sid(1, 1));
        put_id(&mut head, StreamId::MIN);
        put_id(&mut head, StreamId::MIN);
        put_len(&mut head, 0);
        for tail in [
            vec![0x81, 0, 0, 1, 0, 0, 0, 0, 0],
            vec![1, 1, b'g', 0, 0, 0, 0x81, 0, 0, 1, 0, 0, 0, 0, 0],
            vec![1, 1, b'g', 0, 0, 0, 0, 0x80, 0x7f, 0xff, 0xff, 0xff],
        ] {
            let mut b = head.clone();
            b.extend_from_slice(&tail);
            assert_eq!(decode(&seal(b, 10), usize::MAX), Err(RdbError::Format));
        }
        let mut nodes = vec![TYPE_STREAM_LISTPACKS_2, 0x81];
        nodes.extend_from_slice(&u64::MAX.to_be_bytes());
        assert_eq!(decode(&seal(nodes, 10), usize::MAX), Err(RdbError::Format));

        // A consumer claiming an entry another owns: one group, its one
        // pending entry alice's; bob's PEL count (0, the last byte) made
        // 1, with that ID.
        let mut t = s.clone();
        t.groups.truncate(1);
        t.groups[0].pending.truncate(1);
        t.groups[0].pending[0].consumer = 0;
        let p = payload(&t);
        let mut b = p[..p.len() - 10].to_vec();
        let last = b.len() - 1;
        assert_eq!(b[last], 0);
        b[last] = 1;
        b.extend_from_slice(&t.groups[0].pending[0].id.to_bytes());
        assert_eq!(decode(&seal(b, 11), usize::MAX), Err(RdbError::Format));
    }
}
