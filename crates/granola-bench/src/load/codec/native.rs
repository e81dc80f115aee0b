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

use granola::{Decode, Message};
use granola_kv::server::baselines::client::{self, NativeCodec};
use granola_kv::server::baselines::{GranolaCodec, Request};
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

/// Request kinds: granola-kv's, plus the echo benchmark's own.
pub mod kind {
    pub use granola_kv::command::native::kind::*;
    /// Echo (the echo benchmark's servers; granola-kv has no such request).
    pub const ECHO: u16 = 0;
}

/// Response status codes (granola-kv's).
pub use granola_kv::command::native::status;

/// Key hash of echo pieces.
pub const ECHO_KEY_HASH: u64 = super::resp::ECHO_KEY_HASH;

/// The native protocol.
pub struct Native {
    kv_codec: GranolaCodec,
    spell: Spell,
}

impl std::fmt::Debug for Native {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Native").finish_non_exhaustive()
    }
}

impl Native {
    /// A codec.
    pub fn new() -> std::io::Result<Native> {
        Ok(Native {
            kv_codec: GranolaCodec::new()?,
            spell: Spell::default(),
        })
    }
}

/// Frames `m` into `slot`.
fn frame<M: Message>(slot: &mut ReqSlot<'_>, kind: u16, m: &M) {
    let sizes = m.encoded_sizes_with(usize::MAX);
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

/// A workload command as a native request: one of granola-kv's requests
/// (every serializer has them), or an echo (kind 0, granola only: the
/// server answers a `GetListResp` with the message it received).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NativeReq<'a> {
    /// A KV request.
    Kv(Request<'a>),
    /// Echo of these pieces.
    Echo(&'a [&'a [u8]]),
}

/// Reused buffers that spell one command's keys and values, shared by the
/// native codec and the baseline serializers' ([`super::baseline`]), so
/// every serializer sends the same requests and expects the same values.
#[derive(Default)]
pub(crate) struct Spell {
    /// Every key of the command, back to back.
    keys: Vec<u8>,
    /// Where each key ends in `keys`.
    ends: Vec<usize>,
    /// Values too long for one pattern window, written out.
    values: Vec<Vec<u8>>,
    /// Allocation of the key list of a GetM, kept empty between commands
    /// (see [`recycle`]).
    key_refs: Vec<&'static [u8]>,
    /// Allocation of the value list of a PutList or echo, kept empty.
    value_refs: Vec<&'static [u8]>,
}

/// Empties `v` and keeps its allocation for the next command: the slices
/// borrowed this command's buffers, so the vector cannot be kept as is,
/// but collecting its (empty) iterator into a vector of the same layout
/// reuses its memory in place.
fn recycle(mut v: Vec<&[u8]>) -> Vec<&'static [u8]> {
    v.clear();
    v.into_iter().map(|_| &[][..]).collect()
}

impl Spell {
    /// Spells `cmd` of `op`, records in `slot` what its response must hold
    /// (the [`Expect`] and one [`ValueSpec`] per returned value), and hands
    /// the request to `encode`, which writes it into `slot`.
    pub(crate) fn request<R>(
        &mut self,
        op: &Op,
        cmd: &Cmd,
        slot: &mut ReqSlot<'_>,
        encode: impl FnOnce(&NativeReq<'_>, &mut ReqSlot<'_>) -> R,
    ) -> R {
        let Spell {
            keys,
            ends,
            values,
            key_refs,
            value_refs,
        } = self;
        keys.clear();
        match *cmd {
            Cmd::Get { key: k, len } => {
                write_key(&k, keys);
                slot.specs.push(ValueSpec {
                    key_hash: fnv1a64(keys),
                    elem: 0,
                    len,
                });
                *slot.expect = Expect::Value;
                encode(&NativeReq::Kv(Request::Get { key: keys }), slot)
            }
            Cmd::GetFromList { key: k, index, len } => {
                write_key(&k, keys);
                slot.specs.push(ValueSpec {
                    key_hash: fnv1a64(keys),
                    elem: index,
                    len,
                });
                *slot.expect = Expect::Value;
                let req = Request::GetFromList {
                    key: keys,
                    index: i64::from(index),
                };
                encode(&NativeReq::Kv(req), slot)
            }
            Cmd::MultiGet { first, n } => {
                ends.clear();
                for &(k, len) in op.key_range(first, n) {
                    let at = keys.len();
                    write_key(&k, keys);
                    ends.push(keys.len());
                    slot.specs.push(ValueSpec {
                        key_hash: fnv1a64(&keys[at..]),
                        elem: 0,
                        len,
                    });
                }
                let mut refs: Vec<&[u8]> = std::mem::take(key_refs);
                let mut at = 0;
                for &end in ends.iter() {
                    refs.push(&keys[at..end]);
                    at = end;
                }
                *slot.expect = Expect::Values;
                let r = encode(&NativeReq::Kv(Request::GetM { keys: &refs }), slot);
                *key_refs = recycle(refs);
                r
            }
            Cmd::Set { key: k, len } => {
                write_key(&k, keys);
                if values.is_empty() {
                    values.push(Vec::new());
                }
                let v = ValueSpec {
                    key_hash: fnv1a64(keys),
                    elem: 0,
                    len,
                };
                *slot.expect = Expect::Stored;
                let req = Request::Put {
                    key: keys,
                    value: value_bytes(&v, &mut values[0]),
                };
                encode(&NativeReq::Kv(req), slot)
            }
            Cmd::Append { key: k, index, len } => {
                write_key(&k, keys);
                if values.is_empty() {
                    values.push(Vec::new());
                }
                let v = ValueSpec {
                    key_hash: fnv1a64(keys),
                    elem: index,
                    len,
                };
                *slot.expect = Expect::Count(u64::from(index) + 1);
                let req = Request::AppendToList {
                    key: keys,
                    value: value_bytes(&v, &mut values[0]),
                };
                encode(&NativeReq::Kv(req), slot)
            }
            Cmd::Delete { key: k } => {
                write_key(&k, keys);
                *slot.expect = Expect::Deleted;
                encode(&NativeReq::Kv(Request::Delete { key: keys }), slot)
            }
            Cmd::GetList { key: k, first, n } => {
                write_key(&k, keys);
                let h = fnv1a64(keys);
                for (i, &len) in op.range(first, n).iter().enumerate() {
                    slot.specs.push(ValueSpec {
                        key_hash: h,
                        elem: i as u32,
                        len,
                    });
                }
                *slot.expect = Expect::List;
                // The whole list (`all`): its length is what is checked.
                let req = Request::GetList {
                    key: keys,
                    start: 0,
                    end: 0,
                    all: true,
                };
                encode(&NativeReq::Kv(req), slot)
            }
            Cmd::PutList { key: k, first, n } => {
                write_key(&k, keys);
                let h = fnv1a64(keys);
                let lens = op.range(first, n);
                let refs = element_values(lens, h, values, value_refs, None);
                *slot.expect = Expect::Stored;
                let r = encode(
                    &NativeReq::Kv(Request::PutList {
                        key: keys,
                        values: &refs,
                    }),
                    slot,
                );
                *value_refs = recycle(refs);
                r
            }
            Cmd::Echo { first, n } => {
                let lens = op.range(first, n);
                let refs = element_values(lens, ECHO_KEY_HASH, values, value_refs, Some(slot));
                *slot.expect = Expect::Echo;
                let r = encode(&NativeReq::Echo(&refs), slot);
                *value_refs = recycle(refs);
                r
            }
        }
    }
}

/// The values of elements `0..lens.len()` of the key hashing to `h`, as
/// slices in the (emptied) allocation of `refs`, long ones written into
/// `bufs`; with `expect`, each one's spec is also pushed there.
fn element_values<'b>(
    lens: &[u32],
    h: u64,
    bufs: &'b mut Vec<Vec<u8>>,
    refs: &mut Vec<&'static [u8]>,
    mut expect: Option<&mut ReqSlot<'_>>,
) -> Vec<&'b [u8]> {
    if bufs.len() < lens.len() {
        bufs.resize_with(lens.len(), Vec::new);
    }
    let mut out: Vec<&[u8]> = std::mem::take(refs);
    for ((i, &len), buf) in lens.iter().enumerate().zip(bufs.iter_mut()) {
        let v = ValueSpec {
            key_hash: h,
            elem: i as u32,
            len,
        };
        out.push(value_bytes(&v, buf));
        if let Some(slot) = expect.as_deref_mut() {
            slot.specs.push(v);
        }
    }
    out
}

/// Frames the KV request `r` into `slot` with `codec`'s payload encoding
/// (every serializer, granola's included) and remembers its kind, which
/// the response must carry.
pub(crate) fn encode_kv(codec: &mut dyn NativeCodec, r: &Request<'_>, slot: &mut ReqSlot<'_>) {
    client::encode_frame(codec, slot.id as u32, r, slot.tx);
    *slot.aux = u32::from(r.kind());
}

/// Writes `req` as granola messages of `kv.proto` into `slot`: the KV
/// requests through granola-kv's own client codec (one encoder for the
/// format), the echo request (a `GetListResp` of the pieces) here.
fn encode_granola(kv_codec: &mut GranolaCodec, req: &NativeReq<'_>, slot: &mut ReqSlot<'_>) {
    match *req {
        NativeReq::Kv(r) => encode_kv(kv_codec, &r, slot),
        NativeReq::Echo(pieces) => {
            let m = kv::GetListResp {
                status: status::OK,
                values: pieces.iter().map(|&p| p.into()).collect(),
            };
            frame(slot, kind::ECHO, &m);
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
        let kv_codec = &mut self.kv_codec;
        let mut slot = sink.begin().ok_or(EncodeError::Overflow)?;
        self.spell.request(op, cmd, &mut slot, |req, slot| {
            encode_granola(kv_codec, req, slot)
        });
        Ok(())
    }

    fn peek(&self, rx: &[u8]) -> Peek {
        peek_frame(rx)
    }

    fn check(&mut self, rx: &[u8], expect: Expect, aux: u32, specs: &[ValueSpec]) -> Step {
        check_frame(rx, aux, |_, payload| check_payload(payload, expect, specs))
    }
}

/// [`Codec::peek`] of native frames (any serializer).
pub(crate) fn peek_frame(rx: &[u8]) -> Peek {
    match FrameHeader::read(rx) {
        None => Peek::NeedMore,
        Some(h) => Peek::Id {
            id: h.id,
            len: FRAME_HEADER_LEN + h.len as usize,
        },
    }
}

/// [`Codec::check`] of native frames (any serializer): one whole frame at
/// the start of `rx`, a response of the request's kind (`aux`), whose
/// payload `payload(kind, payload)` classifies.
pub(crate) fn check_frame(
    rx: &[u8],
    aux: u32,
    payload: impl FnOnce(u16, &[u8]) -> Outcome,
) -> Step {
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
        payload(h.kind, &rx[FRAME_HEADER_LEN..len])
    };
    Step::Done { len, outcome }
}

/// The outcome a status code decides on its own: `None` for OK (the values
/// decide), a miss for NOT_FOUND, a server error for the rest.
pub(crate) fn by_status(status: u32) -> Option<Outcome> {
    match status {
        status::OK => None,
        status::NOT_FOUND => Some(Outcome::Miss),
        _ => Some(Outcome::Err(ErrorKind::ServerError)),
    }
}

/// A `GetResp` of `status` holding `value`.
pub(crate) fn value_outcome(status: u32, value: &[u8], spec: &ValueSpec) -> Outcome {
    by_status(status).unwrap_or_else(|| Outcome::of_value(spec, value))
}

/// A `GetMResp` with OK status: one entry per spec (`None`: not found).
pub(crate) fn values_outcome<'v>(
    specs: &[ValueSpec],
    vals: impl ExactSizeIterator<Item = Option<&'v [u8]>>,
) -> Outcome {
    if vals.len() != specs.len() {
        return Outcome::Err(ErrorKind::WrongLength);
    }
    specs.iter().zip(vals).fold(Outcome::Ok, |o, (spec, v)| {
        o.and(v.map_or(Outcome::Miss, |v| Outcome::of_value(spec, v)))
    })
}

/// A `GetListResp` of `status`: the whole list (or the echoed pieces).
pub(crate) fn list_outcome<'v>(
    status: u32,
    expect: Expect,
    specs: &[ValueSpec],
    vals: impl ExactSizeIterator<Item = &'v [u8]>,
) -> Outcome {
    if let Some(o) = by_status(status) {
        return o;
    }
    if expect == Expect::List && vals.len() == 0 {
        return Outcome::Miss;
    }
    if vals.len() != specs.len() {
        return Outcome::Err(ErrorKind::WrongLength);
    }
    specs
        .iter()
        .zip(vals)
        .fold(Outcome::Ok, |o, (s, v)| o.and(Outcome::of_value(s, v)))
}

/// An `Ack` of `status` and `count` answering a write or delete.
pub(crate) fn ack_outcome(status: u32, count: u64, expect: Expect) -> Outcome {
    match by_status(status) {
        Some(Outcome::Miss) if expect != Expect::Deleted => Outcome::Err(ErrorKind::ServerError),
        Some(o) => o,
        None => match expect {
            Expect::Count(n) if count != n => Outcome::Err(ErrorKind::WrongLength),
            _ => Outcome::Ok,
        },
    }
}

fn check_payload(payload: &[u8], expect: Expect, specs: &[ValueSpec]) -> Outcome {
    let malformed = Outcome::Err(ErrorKind::Malformed);
    match expect {
        Expect::Value => match kv::GetResp::decode(payload) {
            Err(_) => malformed,
            Ok(m) => value_outcome(m.status, &m.value, &specs[0]),
        },
        Expect::Values => match kv::GetMResp::decode(payload) {
            Err(_) => malformed,
            Ok(m) => by_status(m.status).unwrap_or_else(|| {
                let (vals, found) = (&m.values, &m.found);
                if found.len() != vals.len() && !found.is_empty() {
                    return Outcome::Err(ErrorKind::WrongLength);
                }
                values_outcome(
                    specs,
                    vals.iter()
                        .enumerate()
                        .map(|(i, v)| (found.get(i) != Some(&false)).then(|| v.as_slice())),
                )
            }),
        },
        Expect::List | Expect::Echo => match kv::GetListResp::decode(payload) {
            Err(_) => malformed,
            Ok(m) => list_outcome(
                m.status,
                expect,
                specs,
                m.values.iter().map(|v| v.as_slice()),
            ),
        },
        Expect::Stored | Expect::Deleted | Expect::Count(_) | Expect::AnyCount => {
            match kv::Ack::decode(payload) {
                Err(_) => malformed,
                Ok(m) => ack_outcome(m.status, m.count, expect),
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
        let body = m.to_vec().unwrap();
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
    fn recycled_lists_keep_their_memory() {
        let keys = [b"a".to_vec(), b"b".to_vec()];
        let mut v: Vec<&[u8]> = Vec::with_capacity(64);
        v.extend(keys.iter().map(Vec::as_slice));
        let v = recycle(v);
        assert!(v.is_empty() && v.capacity() >= 64, "{}", v.capacity());
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
        let req = kv::GetReq::decode(&sink.tx[FRAME_HEADER_LEN..]).unwrap();
        assert_eq!(&req.key[..], &key.to_vec()[..]);
        drop(req);
        let (id, _, expect, aux, specs) = sink.reqs.pop().unwrap();
        assert_eq!(c.peek(&sink.tx[..5]), Peek::NeedMore);

        // A hand-built response.
        let value = specs[0].to_vec();
        let m = kv::GetResp {
            status: status::OK,
            value: (&value).into(),
        };
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
        let m = kv::GetResp {
            value: (&bad).into(),
            ..Default::default()
        };
        let r = response(kind::GET, 41, &m);
        assert_eq!(
            c.check(&r, expect, aux, &specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Err(ErrorKind::WrongValue)
            }
        );
        // NOT_FOUND is a miss; a request frame (no RESPONSE flag) is unexpected.
        let m = kv::GetResp {
            status: status::NOT_FOUND,
            ..Default::default()
        };
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
                kind::APPEND_TO_LIST
            ]
            .map(u32::from)
        );
        // The PutList carries the generated values the GetList expects.
        let start = sink.reqs[0].1;
        let put =
            kv::PutListReq::decode(&sink.tx[start + FRAME_HEADER_LEN..sink.reqs[1].1]).unwrap();
        let specs = &sink.reqs[1].4;
        assert_eq!(put.values.len(), 2);
        for (s, v) in specs.iter().zip(&put.values) {
            assert_eq!(s.check(v.as_slice()), Ok(()));
        }
        drop(put);

        let chk = |c: &mut Native, i: usize, r: &[u8]| {
            let (_, _, e, a, specs) = &sink.reqs[i];
            c.check(r, *e, *a, specs)
        };
        let ack = kv::Ack {
            count: 1,
            ..Default::default()
        };
        let r = response(kind::PUT_LIST, 0, &ack);
        assert_eq!(
            chk(&mut c, 0, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );

        let vals: Vec<Vec<u8>> = sink.reqs[1].4.iter().map(|s| s.to_vec()).collect();
        let l = kv::GetListResp {
            values: vals.iter().map(Into::into).collect(),
            ..Default::default()
        };
        let r = response(kind::GET_LIST, 1, &l);
        assert_eq!(
            chk(&mut c, 1, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );

        let vals: Vec<Vec<u8>> = sink.reqs[2].4.iter().map(|s| s.to_vec()).collect();
        let g = kv::GetMResp {
            values: vec![(&vals[0]).into(), b"".into()],
            found: vec![true, false],
            ..Default::default()
        };
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

        let ack = kv::Ack {
            count: 2,
            ..Default::default()
        };
        let r = response(kind::APPEND_TO_LIST, 4, &ack);
        assert_eq!(
            chk(&mut c, 4, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Err(ErrorKind::WrongLength)
            }
        );
    }
}
