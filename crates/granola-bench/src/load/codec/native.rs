//! The native granola KV protocol: granola-net frames
//! ([`granola_net::frame::FrameHeader`]) carrying granola-encoded messages of
//! `crates/granola-kv/proto/kv.proto`.
//!
//! | command | kind | request | response |
//! |---|---|---|---|
//! | Get | 1 | `GetReq` | `GetResp` |
//! | Set | 2 | `PutReq` | `Ack` |
//! | MultiGet | 3 | `GetMReq` | `GetMResp` |
//! | PutList | 6 | `PutListReq` | `Ack` |
//! | GetList | 5 | `GetListReq { all: true }` | `GetListResp` |
//! | Append | 7 | `AppendToListReq` | `Ack` (count = new length) |
//! | GetFromList | 8 | `GetFromListReq` | `GetResp` |
//! | Delete | 9 | `DeleteReq` | `Ack` |
//! | Echo | 0 | `GetListResp` (the pieces as `values`) | the same message |
//!
//! The frame id is the low 32 bits of the request id; the response must
//! carry the same kind and id with [`FLAG_RESPONSE`]. Status 0 is OK, 1
//! (NOT_FOUND) a miss, anything else an error. The client encodes with a
//! copy threshold of `usize::MAX` (its values are generated, not pooled) into
//! the connection's transmit buffer, and decodes responses where they lie.

use granola::{Context, Decode, Message, Pool};
use granola_net::frame::{FrameHeader, FLAG_RESPONSE, FRAME_HEADER_LEN};

use super::{Codec, EncodeError, Expect, Outcome, Peek, ReqSlot, Sink, Step};
use crate::load::stats::ErrorKind;
use crate::load::value::{fnv1a64, write_key, ValueSpec};
use crate::workload::{Cmd, Op};

/// Generated types of `kv.proto`.
#[allow(missing_docs, clippy::all, rustdoc::broken_intra_doc_links)]
pub mod kv {
    include!(concat!(env!("OUT_DIR"), "/kv/kv.rs"));
}

/// Request kinds (kv.proto comments).
pub mod kind {
    /// Echo.
    pub const ECHO: u16 = 0;
    /// Get.
    pub const GET: u16 = 1;
    /// Put.
    pub const PUT: u16 = 2;
    /// GetM.
    pub const GET_M: u16 = 3;
    /// PutM.
    pub const PUT_M: u16 = 4;
    /// GetList.
    pub const GET_LIST: u16 = 5;
    /// PutList.
    pub const PUT_LIST: u16 = 6;
    /// AppendToList.
    pub const APPEND: u16 = 7;
    /// GetFromList.
    pub const GET_FROM_LIST: u16 = 8;
    /// Delete.
    pub const DELETE: u16 = 9;
}

/// Response status codes.
pub mod status {
    /// OK.
    pub const OK: u32 = 0;
    /// Not found.
    pub const NOT_FOUND: u32 = 1;
}

/// Key hash of echo pieces.
pub const ECHO_KEY_HASH: u64 = super::resp::ECHO_KEY_HASH;

/// The native protocol.
pub struct Native {
    ctx: Context,
    key: Vec<u8>,
    scratch: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Native {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Native").finish_non_exhaustive()
    }
}

impl Native {
    /// A codec (reserves a small pool for its [`Context`]).
    pub fn new() -> std::io::Result<Native> {
        let pool = Pool::with_capacity(granola::SEGMENT_SIZE)?;
        Ok(Native {
            ctx: Context::new(&pool).with_copy_threshold(usize::MAX),
            key: Vec::with_capacity(256),
            scratch: Vec::new(),
        })
    }

    /// The codec's context (tests build responses with it).
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

/// Frames `m` into `slot`.
fn frame<M: Message>(slot: &mut ReqSlot<'_>, kind: u16, m: &M) {
    let sizes = m.encoded_sizes();
    let at = slot.tx.len();
    let len = sizes.total_len();
    slot.tx.resize(at + FRAME_HEADER_LEN + len, 0);
    FrameHeader {
        len: len as u32,
        kind,
        flags: 0,
        id: slot.id as u32,
    }
    .write(&mut slot.tx[at..]);
    m.encode(&sizes, &mut slot.tx[at + FRAME_HEADER_LEN..], |_| {
        unreachable!("copy threshold usize::MAX: no zero-copy entries")
    })
    .expect("encode into a buffer of encoded_sizes()");
    *slot.aux = u32::from(kind);
}

/// Spells `k` into `key` (cleared) and returns its hash.
fn spell(k: &crate::workload::KeyRef, key: &mut Vec<u8>) -> u64 {
    key.clear();
    write_key(k, key);
    fnv1a64(key)
}

/// Pieces of `v` as one slice: the pattern itself when it fits, else `buf`.
fn value_bytes<'b>(v: &ValueSpec, buf: &'b mut Vec<u8>) -> &'b [u8] {
    match v.as_slice() {
        Some(s) => s,
        None => {
            buf.clear();
            v.write(buf);
            buf
        }
    }
}

impl Codec for Native {
    fn name(&self) -> &'static str {
        "native"
    }

    fn supports(&self, _cmd: &Cmd) -> bool {
        true
    }

    fn encode(&mut self, op: &Op, cmd: &Cmd, sink: &mut dyn Sink) -> Result<(), EncodeError> {
        self.ctx.reset();
        let ctx = &self.ctx;
        let key = &mut self.key;
        let scratch = &mut self.scratch;
        let mut slot = sink.begin().ok_or(EncodeError::Overflow)?;
        match *cmd {
            Cmd::Get { key: k, len } => {
                let h = spell(&k, key);
                let mut m = kv::GetReq::new(ctx);
                m.set_key(key);
                frame(&mut slot, kind::GET, &m);
                slot.specs.push(ValueSpec {
                    key_hash: h,
                    elem: 0,
                    len,
                });
                *slot.expect = Expect::Value;
            }
            Cmd::GetFromList { key: k, index, len } => {
                let h = spell(&k, key);
                let mut m = kv::GetFromListReq::new(ctx);
                m.set_key(key);
                m.set_index(i64::from(index));
                frame(&mut slot, kind::GET_FROM_LIST, &m);
                slot.specs.push(ValueSpec {
                    key_hash: h,
                    elem: index,
                    len,
                });
                *slot.expect = Expect::Value;
            }
            Cmd::MultiGet { first, n } => {
                let mut m = kv::GetMReq::new(ctx);
                m.init_keys(n as usize);
                for &(k, len) in op.key_range(first, n) {
                    let h = spell(&k, key);
                    m.append_keys(key);
                    slot.specs.push(ValueSpec {
                        key_hash: h,
                        elem: 0,
                        len,
                    });
                }
                frame(&mut slot, kind::GET_M, &m);
                *slot.expect = Expect::Values;
            }
            Cmd::Set { key: k, len } => {
                let h = spell(&k, key);
                if scratch.is_empty() {
                    scratch.push(Vec::new());
                }
                let v = ValueSpec {
                    key_hash: h,
                    elem: 0,
                    len,
                };
                let mut m = kv::PutReq::new(ctx);
                m.set_key(key);
                m.set_value(value_bytes(&v, &mut scratch[0]));
                frame(&mut slot, kind::PUT, &m);
                *slot.expect = Expect::Stored;
            }
            Cmd::Append { key: k, index, len } => {
                let h = spell(&k, key);
                if scratch.is_empty() {
                    scratch.push(Vec::new());
                }
                let v = ValueSpec {
                    key_hash: h,
                    elem: index,
                    len,
                };
                let mut m = kv::AppendToListReq::new(ctx);
                m.set_key(key);
                m.set_value(value_bytes(&v, &mut scratch[0]));
                frame(&mut slot, kind::APPEND, &m);
                *slot.expect = Expect::Count(u64::from(index) + 1);
            }
            Cmd::Delete { key: k } => {
                spell(&k, key);
                let mut m = kv::DeleteReq::new(ctx);
                m.set_key(key);
                frame(&mut slot, kind::DELETE, &m);
                *slot.expect = Expect::Deleted;
            }
            Cmd::GetList { key: k, first, n } => {
                let h = spell(&k, key);
                let mut m = kv::GetListReq::new(ctx);
                m.set_key(key);
                m.set_all(true);
                frame(&mut slot, kind::GET_LIST, &m);
                for (i, &len) in op.range(first, n).iter().enumerate() {
                    slot.specs.push(ValueSpec {
                        key_hash: h,
                        elem: i as u32,
                        len,
                    });
                }
                *slot.expect = Expect::List;
            }
            Cmd::PutList { key: k, first, n } => {
                let h = spell(&k, key);
                let lens = op.range(first, n);
                if scratch.len() < lens.len() {
                    scratch.resize_with(lens.len(), Vec::new);
                }
                let mut m = kv::PutListReq::new(ctx);
                m.set_key(key);
                m.init_values(lens.len());
                for ((i, &len), buf) in lens.iter().enumerate().zip(scratch.iter_mut()) {
                    let v = ValueSpec {
                        key_hash: h,
                        elem: i as u32,
                        len,
                    };
                    m.append_values(value_bytes(&v, buf));
                }
                frame(&mut slot, kind::PUT_LIST, &m);
                *slot.expect = Expect::Stored;
            }
            Cmd::Echo { first, n } => {
                let lens = op.range(first, n);
                if scratch.len() < lens.len() {
                    scratch.resize_with(lens.len(), Vec::new);
                }
                let mut m = kv::GetListResp::new(ctx);
                m.set_status(status::OK);
                m.init_values(lens.len());
                for ((i, &len), buf) in lens.iter().enumerate().zip(scratch.iter_mut()) {
                    let v = ValueSpec {
                        key_hash: ECHO_KEY_HASH,
                        elem: i as u32,
                        len,
                    };
                    m.append_values(value_bytes(&v, buf));
                    slot.specs.push(v);
                }
                frame(&mut slot, kind::ECHO, &m);
                *slot.expect = Expect::Echo;
            }
        }
        Ok(())
    }

    fn peek(&self, rx: &[u8]) -> Peek {
        match FrameHeader::read(rx) {
            None => Peek::NeedMore,
            Some(h) => Peek::Id {
                id: h.id,
                len: FRAME_HEADER_LEN + h.len as usize,
            },
        }
    }

    fn check(&mut self, rx: &[u8], expect: Expect, aux: u32, specs: &[ValueSpec]) -> Step {
        let Some(h) = FrameHeader::read(rx) else {
            return Step::NeedMore;
        };
        let len = FRAME_HEADER_LEN + h.len as usize;
        if rx.len() < len {
            return Step::NeedMore;
        }
        let outcome = if h.flags & FLAG_RESPONSE == 0 || u32::from(h.kind) != aux {
            Outcome::Err(ErrorKind::Unexpected)
        } else {
            let payload = &rx[FRAME_HEADER_LEN..len];
            let o = check_payload(&self.ctx, payload, expect, specs);
            self.ctx.reset();
            o
        };
        Step::Done { len, outcome }
    }
}

fn by_status(status: u32) -> Option<Outcome> {
    match status {
        status::OK => None,
        status::NOT_FOUND => Some(Outcome::Miss),
        _ => Some(Outcome::Err(ErrorKind::ServerError)),
    }
}

fn check_payload(ctx: &Context, payload: &[u8], expect: Expect, specs: &[ValueSpec]) -> Outcome {
    let malformed = Outcome::Err(ErrorKind::Malformed);
    match expect {
        Expect::Value => match kv::GetResp::decode(ctx, payload) {
            Err(_) => malformed,
            Ok(m) => by_status(m.get_status())
                .unwrap_or_else(|| Outcome::of_value(&specs[0], m.get_value())),
        },
        Expect::Values => match kv::GetMResp::decode(ctx, payload) {
            Err(_) => malformed,
            Ok(m) => by_status(m.get_status()).unwrap_or_else(|| {
                let (vals, found) = (m.get_values(), m.get_found());
                if vals.len() != specs.len() || (found.len() != specs.len() && !found.is_empty()) {
                    return Outcome::Err(ErrorKind::WrongLength);
                }
                let mut o = Outcome::Ok;
                for (i, spec) in specs.iter().enumerate() {
                    if found.get(i) == Some(&false) {
                        o = o.and(Outcome::Miss);
                    } else {
                        o = o.and(Outcome::of_value(spec, vals[i].as_slice()));
                    }
                }
                o
            }),
        },
        Expect::List | Expect::Echo => match kv::GetListResp::decode(ctx, payload) {
            Err(_) => malformed,
            Ok(m) => by_status(m.get_status()).unwrap_or_else(|| {
                let vals = m.get_values();
                if expect == Expect::List && vals.is_empty() {
                    return Outcome::Miss;
                }
                if vals.len() != specs.len() {
                    return Outcome::Err(ErrorKind::WrongLength);
                }
                specs.iter().zip(vals).fold(Outcome::Ok, |o, (s, v)| {
                    o.and(Outcome::of_value(s, v.as_slice()))
                })
            }),
        },
        Expect::Stored | Expect::Deleted | Expect::Count(_) | Expect::AnyCount => {
            match kv::Ack::decode(ctx, payload) {
                Err(_) => malformed,
                Ok(m) => match by_status(m.get_status()) {
                    Some(Outcome::Miss) if expect != Expect::Deleted => {
                        Outcome::Err(ErrorKind::ServerError)
                    }
                    Some(o) => o,
                    None => match expect {
                        Expect::Count(n) if m.get_count() != n => {
                            Outcome::Err(ErrorKind::WrongLength)
                        }
                        _ => Outcome::Ok,
                    },
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_sink::VecSink;
    use super::*;
    use crate::workload::KeyRef;

    /// Frames a hand-built response.
    fn response<M: Message>(kind: u16, id: u32, m: &M) -> Vec<u8> {
        let body = m.to_vec();
        let mut r = FrameHeader {
            len: body.len() as u32,
            kind,
            flags: FLAG_RESPONSE,
            id,
        }
        .to_bytes()
        .to_vec();
        r.extend(body);
        r
    }

    #[test]
    fn get_request_and_response() {
        let mut c = Native::new().unwrap();
        let mut sink = VecSink {
            next_id: 41,
            ..Default::default()
        };
        let mut op = Op::default();
        let key = KeyRef::new("ycsb:", 5, 30);
        op.get(key, 4096);
        c.encode(&op, &op.cmds[0].clone(), &mut sink).unwrap();
        // The request: a frame of kind 1, id 41, whose payload decodes as
        // GetReq with our key.
        let h = FrameHeader::read(&sink.tx).unwrap();
        assert_eq!((h.kind, h.flags, h.id), (kind::GET, 0, 41));
        assert_eq!(h.len as usize + FRAME_HEADER_LEN, sink.tx.len());
        let req = kv::GetReq::decode(c.context(), &sink.tx[FRAME_HEADER_LEN..]).unwrap();
        assert_eq!(req.get_key(), &key.to_vec()[..]);
        drop(req);
        let (id, _, expect, aux, specs) = sink.reqs.pop().unwrap();
        assert_eq!(c.peek(&sink.tx[..5]), Peek::NeedMore);

        // A hand-built response.
        let pool = Pool::with_capacity(granola::SEGMENT_SIZE).unwrap();
        let ctx = Context::new(&pool);
        let value = specs[0].to_vec();
        let mut m = kv::GetResp::new(&ctx);
        m.set_status(status::OK);
        m.set_value(&value);
        let r = response(kind::GET, id as u32, &m);
        assert_eq!(
            c.peek(&r),
            Peek::Id {
                id: 41,
                len: r.len()
            }
        );
        assert_eq!(
            c.check(&r[..r.len() - 1], expect, aux, &specs),
            Step::NeedMore
        );
        assert_eq!(
            c.check(&r, expect, aux, &specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );

        // One wrong byte is caught.
        let mut bad = value.clone();
        bad[4000] ^= 0x10;
        let mut m = kv::GetResp::new(&ctx);
        m.set_value(&bad);
        let r = response(kind::GET, 41, &m);
        assert_eq!(
            c.check(&r, expect, aux, &specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Err(ErrorKind::WrongValue)
            }
        );
        // NOT_FOUND is a miss; a request frame (no RESPONSE flag) is unexpected.
        let mut m = kv::GetResp::new(&ctx);
        m.set_status(status::NOT_FOUND);
        let r = response(kind::GET, 41, &m);
        assert_eq!(
            c.check(&r, expect, aux, &specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Miss
            }
        );
        let mut r2 = r.clone();
        r2[6] = 0;
        assert_eq!(
            c.check(&r2, expect, aux, &specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Err(ErrorKind::Unexpected)
            }
        );
        // Garbage payload: malformed, still one frame consumed.
        let mut g = FrameHeader {
            len: 3,
            kind: kind::GET,
            flags: FLAG_RESPONSE,
            id: 41,
        }
        .to_bytes()
        .to_vec();
        g.extend_from_slice(&[0xff, 0xff, 0xff]);
        assert_eq!(
            c.check(&g, expect, aux, &specs),
            Step::Done {
                len: 15,
                outcome: Outcome::Err(ErrorKind::Malformed)
            }
        );
    }

    #[test]
    fn lists_multi_get_put_and_echo() {
        let mut c = Native::new().unwrap();
        let mut sink = VecSink::default();
        let mut op = Op::default();
        let key = KeyRef::new("ggl:", 1, 64);
        op.put_list(key, [8, 100_000]);
        op.get_list(key, [8, 100_000]);
        op.multi_get([(key, 3), (KeyRef::new("ggl:", 2, 64), 4)]);
        op.echo([2048, 2048]);
        op.cmds.push(Cmd::Append {
            key,
            index: 2,
            len: 10,
        });
        for cmd in op.cmds.clone() {
            c.encode(&op, &cmd, &mut sink).unwrap();
        }
        let kinds: Vec<u32> = sink.reqs.iter().map(|r| r.3).collect();
        assert_eq!(
            kinds,
            [
                kind::PUT_LIST,
                kind::GET_LIST,
                kind::GET_M,
                kind::ECHO,
                kind::APPEND
            ]
            .map(u32::from)
        );
        // The PutList carries the generated values the GetList expects.
        let start = sink.reqs[0].1;
        let put = kv::PutListReq::decode(
            c.context(),
            &sink.tx[start + FRAME_HEADER_LEN..sink.reqs[1].1],
        )
        .unwrap();
        let specs = &sink.reqs[1].4;
        assert_eq!(put.get_values().len(), 2);
        for (s, v) in specs.iter().zip(put.get_values()) {
            assert_eq!(s.check(v.as_slice()), Ok(()));
        }
        drop(put);

        let pool = Pool::with_capacity(granola::SEGMENT_SIZE).unwrap();
        let ctx = Context::new(&pool);
        let chk = |c: &mut Native, i: usize, r: &[u8]| {
            let (_, _, e, a, specs) = &sink.reqs[i];
            c.check(r, *e, *a, specs)
        };
        let mut ack = kv::Ack::new(&ctx);
        ack.set_count(1);
        let r = response(kind::PUT_LIST, 0, &ack);
        assert_eq!(
            chk(&mut c, 0, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );

        let vals: Vec<Vec<u8>> = sink.reqs[1].4.iter().map(|s| s.to_vec()).collect();
        let mut l = kv::GetListResp::new(&ctx);
        for v in &vals {
            l.append_values(v);
        }
        let r = response(kind::GET_LIST, 1, &l);
        assert_eq!(
            chk(&mut c, 1, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );

        let vals: Vec<Vec<u8>> = sink.reqs[2].4.iter().map(|s| s.to_vec()).collect();
        let mut g = kv::GetMResp::new(&ctx);
        g.append_values(&vals[0]);
        g.append_values(b"");
        g.append_found(true);
        g.append_found(false);
        let r = response(kind::GET_M, 2, &g);
        assert_eq!(
            chk(&mut c, 2, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Miss
            }
        );

        // Echo: the server returns our payload unchanged.
        let (s, e) = (sink.reqs[3].1, sink.reqs[4].1);
        let mut echoed = sink.tx[s..e].to_vec();
        echoed[6] = FLAG_RESPONSE as u8;
        assert_eq!(
            chk(&mut c, 3, &echoed),
            Step::Done {
                len: echoed.len(),
                outcome: Outcome::Ok
            }
        );

        let mut ack = kv::Ack::new(&ctx);
        ack.set_count(2);
        let r = response(kind::APPEND, 4, &ack);
        assert_eq!(
            chk(&mut c, 4, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Err(ErrorKind::WrongLength)
            }
        );
    }
}
