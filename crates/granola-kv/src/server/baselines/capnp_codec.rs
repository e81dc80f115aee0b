//! capnp 0.27 (`schemas/kv.capnp`, generated code checked in:
//! `gen/kv_capnp.rs`).
//!
//! A frame's payload is capnp's standard stream framing: the segment table
//! (`u32` segment count − 1, a `u32` word count per segment, padded to a
//! word) followed by the segments.
//!
//! Requests are read in place with `read_message_from_flat_slice_no_alloc`
//! when the payload is 8-byte aligned; a frame payload starts 12 bytes into
//! its frame, so usually it is not, and it is first copied into a reused
//! aligned scratch (capnp's `unaligned` feature would avoid the copy but
//! slows every read, and is workspace-wide).
//!
//! Replies are built by a `message::Builder` over capnp's `HeapAllocator`
//! (its default, zeroed segments from `calloc`) whose first segment is sized
//! from the reply, so a reply is normally one segment. The segment table and then each segment (from
//! `get_segments_for_output`) are copied into the TX chunk as their own
//! pieces: capnp's scatter-gather output, copied because the segments are
//! the builder's memory, not pool memory the TX queue could hold (see the
//! [module docs](super)).

use super::client::{DecodeError, NativeCodec};
use super::kv_capnp::{
    ack, append_to_list_req, delete_req, get_from_list_req, get_list_req, get_list_resp, get_m_req,
    get_m_resp, get_req, get_resp, put_list_req, put_m_req, put_req,
};
use super::out::FrameOut;
use super::{Reply, Request, Response, Serializer, ServerCodec};
use crate::server::native::{kind, status};
use capnp::message::{Builder, HeapAllocator, ReaderOptions};
use capnp::serialize::NoAllocSliceSegments;
use capnp::Word;
use granola::Buf;
use granola_net::tx::SendError;
use granola_net::FrameHeader;

/// Scratch vectors larger than this are dropped after use, so one huge
/// message does not pin its memory for the connection's lifetime.
const KEEP_SCRATCH_WORDS: usize = (1 << 20) / 8;

type Msg<'a> = capnp::message::Reader<NoAllocSliceSegments<'a>>;

/// The capnp codec (server and client side).
#[derive(Default)]
pub struct CapnpCodec {
    /// Aligned copy of a payload being read.
    read: Vec<Word>,
    /// Segment table of the message being sent.
    table: Vec<u8>,
}

impl std::fmt::Debug for CapnpCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapnpCodec").finish_non_exhaustive()
    }
}

/// Words of a `Data` value.
fn words(len: usize) -> usize {
    len.div_ceil(8)
}

/// First-segment size (words) that holds `resp` whole.
fn response_words(resp: &Response<Buf>) -> usize {
    match resp {
        Response::Value { value, .. } => 4 + value.as_ref().map_or(0, |v| words(v.len())),
        Response::Values { values, .. } => {
            8 + values.len().div_ceil(64)
                + values
                    .iter()
                    .map(|v| 1 + v.as_ref().map_or(0, |v| words(v.len())))
                    .sum::<usize>()
        }
        Response::List { values, .. } => {
            8 + values.iter().map(|v| 1 + words(v.len())).sum::<usize>()
        }
        Response::Ack { .. } => 4,
    }
}

/// First-segment size (words) that holds `req` whole.
fn request_words(req: &Request<'_>) -> usize {
    let list = |l: &[&[u8]]| l.iter().map(|v| 1 + words(v.len())).sum::<usize>();
    8 + match *req {
        Request::Get { key }
        | Request::GetList { key, .. }
        | Request::GetFromList { key, .. }
        | Request::Delete { key } => words(key.len()),
        Request::Put { key, value } | Request::AppendToList { key, value } => {
            words(key.len()) + words(value.len())
        }
        Request::GetM { keys } => list(keys),
        Request::PutM { keys, values } => list(keys) + list(values),
        Request::PutList { key, values } => words(key.len()) + list(values),
    }
}

/// Builds a message whose first segment has `words` words and hands its
/// segments to `send`.
fn build<R>(
    words: usize,
    fill: impl FnOnce(&mut Builder<HeapAllocator>),
    send: impl FnOnce(&[&[u8]]) -> R,
) -> R {
    let words = words.min(1 << 28) as u32;
    let mut b = Builder::new(HeapAllocator::new().first_segment_words(words));
    fill(&mut b);
    let segments = b.get_segments_for_output();
    send(&segments)
}

/// The stream framing's segment table for `segments`.
fn segment_table(segments: &[&[u8]], table: &mut Vec<u8>) {
    table.clear();
    let count = segments.len().max(1) as u32 - 1;
    table.extend_from_slice(&count.to_le_bytes());
    for s in segments {
        table.extend_from_slice(&((s.len() / 8) as u32).to_le_bytes());
    }
    if table.len() % 8 != 0 {
        table.extend_from_slice(&[0; 4]);
    }
}

/// Reads the message in `payload`, from an aligned copy if need be.
fn read<'a>(scratch: &'a mut Vec<Word>, payload: &'a [u8]) -> capnp::Result<Msg<'a>> {
    let mut bytes: &[u8] = if (payload.as_ptr() as usize) % 8 == 0 {
        payload
    } else {
        let n = words(payload.len());
        if scratch.len() < n {
            *scratch = Word::allocate_zeroed_vec(n.next_power_of_two());
        }
        let copy = &mut Word::words_to_bytes_mut(&mut scratch[..n])[..payload.len()];
        copy.copy_from_slice(payload);
        copy
    };
    capnp::serialize::read_message_from_flat_slice_no_alloc(&mut bytes, ReaderOptions::new())
}

fn collect<'a>(l: capnp::data_list::Reader<'a>, out: &mut Vec<&'a [u8]>) -> capnp::Result<()> {
    out.reserve(l.len() as usize);
    for v in l.iter() {
        out.push(v?);
    }
    Ok(())
}

/// The request of kind `k` in `msg`; `None` for an unknown kind. List
/// fields are collected into `keys` / `values`.
fn parse<'m: 'v, 'v>(
    k: u16,
    msg: &'m Msg<'_>,
    keys: &'v mut Vec<&'m [u8]>,
    values: &'v mut Vec<&'m [u8]>,
) -> capnp::Result<Option<Request<'v>>> {
    Ok(Some(match k {
        kind::GET => Request::Get {
            key: msg.get_root::<get_req::Reader>()?.get_key()?,
        },
        kind::PUT => {
            let m = msg.get_root::<put_req::Reader>()?;
            Request::Put {
                key: m.get_key()?,
                value: m.get_value()?,
            }
        }
        kind::GET_M => {
            collect(msg.get_root::<get_m_req::Reader>()?.get_keys()?, keys)?;
            Request::GetM { keys }
        }
        kind::PUT_M => {
            let m = msg.get_root::<put_m_req::Reader>()?;
            collect(m.get_keys()?, keys)?;
            collect(m.get_values()?, values)?;
            Request::PutM { keys, values }
        }
        kind::GET_LIST => {
            let m = msg.get_root::<get_list_req::Reader>()?;
            Request::GetList {
                key: m.get_key()?,
                start: m.get_start(),
                end: m.get_end(),
                all: m.get_all(),
            }
        }
        kind::PUT_LIST => {
            let m = msg.get_root::<put_list_req::Reader>()?;
            collect(m.get_values()?, values)?;
            Request::PutList {
                key: m.get_key()?,
                values,
            }
        }
        kind::APPEND_TO_LIST => {
            let m = msg.get_root::<append_to_list_req::Reader>()?;
            Request::AppendToList {
                key: m.get_key()?,
                value: m.get_value()?,
            }
        }
        kind::GET_FROM_LIST => {
            let m = msg.get_root::<get_from_list_req::Reader>()?;
            Request::GetFromList {
                key: m.get_key()?,
                index: m.get_index(),
            }
        }
        kind::DELETE => Request::Delete {
            key: msg.get_root::<delete_req::Reader>()?.get_key()?,
        },
        _ => return Ok(None),
    }))
}

fn set_list<'a>(
    mut l: capnp::data_list::Builder<'_>,
    items: impl Iterator<Item = Option<&'a [u8]>>,
) {
    for (i, v) in items.enumerate() {
        l.set(i as u32, v.unwrap_or(&[]));
    }
}

fn fill_response(b: &mut Builder<HeapAllocator>, resp: &Response<Buf>) {
    match resp {
        Response::Value { status, value } => {
            let mut r = b.init_root::<get_resp::Builder>();
            r.set_status(*status);
            if let Some(v) = value {
                r.set_value(v);
            }
        }
        Response::Values { status, values } => {
            let mut r = b.init_root::<get_m_resp::Builder>();
            r.set_status(*status);
            let n = values.len() as u32;
            set_list(
                r.reborrow().init_values(n),
                values.iter().map(|v| v.as_deref()),
            );
            let mut found = r.init_found(n);
            for (i, v) in values.iter().enumerate() {
                found.set(i as u32, v.is_some());
            }
        }
        Response::List { status, values } => {
            let mut r = b.init_root::<get_list_resp::Builder>();
            r.set_status(*status);
            set_list(
                r.init_values(values.len() as u32),
                values.iter().map(|v| Some(&v[..])),
            );
        }
        Response::Ack { status, count } => {
            let mut r = b.init_root::<ack::Builder>();
            r.set_status(*status);
            r.set_count(*count);
        }
    }
}

fn fill_request(b: &mut Builder<HeapAllocator>, req: &Request<'_>) {
    match *req {
        Request::Get { key } => b.init_root::<get_req::Builder>().set_key(key),
        Request::Put { key, value } => {
            let mut r = b.init_root::<put_req::Builder>();
            r.set_key(key);
            r.set_value(value);
        }
        Request::GetM { keys } => {
            let r = b.init_root::<get_m_req::Builder>();
            set_list(
                r.init_keys(keys.len() as u32),
                keys.iter().map(|v| Some(*v)),
            );
        }
        Request::PutM { keys, values } => {
            let mut r = b.init_root::<put_m_req::Builder>();
            set_list(
                r.reborrow().init_keys(keys.len() as u32),
                keys.iter().map(|v| Some(*v)),
            );
            set_list(
                r.init_values(values.len() as u32),
                values.iter().map(|v| Some(*v)),
            );
        }
        Request::GetList {
            key,
            start,
            end,
            all,
        } => {
            let mut r = b.init_root::<get_list_req::Builder>();
            r.set_key(key);
            r.set_start(start);
            r.set_end(end);
            r.set_all(all);
        }
        Request::PutList { key, values } => {
            let mut r = b.init_root::<put_list_req::Builder>();
            r.set_key(key);
            set_list(
                r.init_values(values.len() as u32),
                values.iter().map(|v| Some(*v)),
            );
        }
        Request::AppendToList { key, value } => {
            let mut r = b.init_root::<append_to_list_req::Builder>();
            r.set_key(key);
            r.set_value(value);
        }
        Request::GetFromList { key, index } => {
            let mut r = b.init_root::<get_from_list_req::Builder>();
            r.set_key(key);
            r.set_index(index);
        }
        Request::Delete { key } => b.init_root::<delete_req::Builder>().set_key(key),
    }
}

impl ServerCodec for CapnpCodec {
    const NAME: &'static str = "capnp";

    fn server() -> CapnpCodec {
        CapnpCodec::default()
    }

    fn decode_request<R>(
        &mut self,
        k: u16,
        payload: &[u8],
        f: impl FnOnce(Option<Request<'_>>) -> R,
    ) -> R {
        let r = match read(&mut self.read, payload) {
            Ok(msg) => {
                let (mut keys, mut values) = (Vec::new(), Vec::new());
                match parse(k, &msg, &mut keys, &mut values) {
                    Ok(req) => f(req),
                    Err(_) => f(None),
                }
            }
            Err(_) => f(None),
        };
        if self.read.len() > KEEP_SCRATCH_WORDS {
            self.read = Vec::new();
        }
        r
    }

    fn send_response<O: FrameOut>(
        &mut self,
        header: FrameHeader,
        resp: &Response<Buf>,
        out: &mut O,
    ) -> Result<(), SendError> {
        let table = &mut self.table;
        build(
            response_words(resp),
            |b| fill_response(b, resp),
            |segments| {
                segment_table(segments, table);
                out.frame_copied(header, table, segments)
            },
        )
    }
}

fn decode_response(k: u16, msg: &Msg<'_>, f: &mut dyn FnMut(Response<&[u8]>)) -> capnp::Result<()> {
    match Reply::of_kind(k) {
        Reply::Value => {
            let m = msg.get_root::<get_resp::Reader>()?;
            let status = m.get_status();
            let value = if status == status::OK {
                Some(m.get_value()?)
            } else {
                None
            };
            f(Response::Value { status, value });
        }
        Reply::Values => {
            let m = msg.get_root::<get_m_resp::Reader>()?;
            let found = m.get_found()?;
            let mut values = Vec::new();
            for (i, v) in m.get_values()?.iter().enumerate() {
                let i = i as u32;
                let hit = i >= found.len() || found.get(i);
                values.push(if hit { Some(v?) } else { None });
            }
            f(Response::Values {
                status: m.get_status(),
                values,
            });
        }
        Reply::List => {
            let m = msg.get_root::<get_list_resp::Reader>()?;
            let mut values = Vec::new();
            collect(m.get_values()?, &mut values)?;
            f(Response::List {
                status: m.get_status(),
                values,
            });
        }
        Reply::Ack => {
            let m = msg.get_root::<ack::Reader>()?;
            f(Response::Ack {
                status: m.get_status(),
                count: m.get_count(),
            });
        }
    }
    Ok(())
}

impl NativeCodec for CapnpCodec {
    fn serializer(&self) -> Serializer {
        Serializer::Capnp
    }

    fn encode_request(&mut self, req: &Request<'_>, out: &mut Vec<u8>) {
        let table = &mut self.table;
        build(
            request_words(req),
            |b| fill_request(b, req),
            |segments| {
                segment_table(segments, table);
                out.extend_from_slice(table);
                for s in segments {
                    out.extend_from_slice(s);
                }
            },
        );
    }

    fn decode_response(
        &mut self,
        k: u16,
        payload: &[u8],
        f: &mut dyn FnMut(Response<&[u8]>),
    ) -> Result<(), DecodeError> {
        let err = |e| DecodeError::new(Serializer::Capnp, e);
        let r = read(&mut self.read, payload)
            .and_then(|msg| decode_response(k, &msg, f))
            .map_err(err);
        if self.read.len() > KEEP_SCRATCH_WORDS {
            self.read = Vec::new();
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message of several segments (a tiny first segment forces them)
    /// framed with its segment table, read back from an unaligned copy.
    #[test]
    fn multi_segment_messages_round_trip_unaligned() {
        let values: Vec<Vec<u8>> = (0..3u8).map(|i| vec![i + 1; 5000 + i as usize]).collect();
        let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let req = Request::PutList {
            key: b"k",
            values: &refs,
        };
        let mut wire = vec![0u8; 4]; // payload at an odd word offset
        let mut table = Vec::new();
        let segs = build(
            1,
            |b| fill_request(b, &req),
            |segments| {
                segment_table(segments, &mut table);
                for s in segments {
                    wire.extend_from_slice(s);
                }
                segments.len()
            },
        );
        assert!(segs > 1, "{segs} segment(s)");
        assert_eq!(table.len(), (4 * (segs + 1)).next_multiple_of(8));
        wire.splice(4..4, table);
        let mut scratch = Vec::new();
        let payload = &wire[4..];
        let got = {
            let msg = read(&mut scratch, payload).expect("reads");
            let (mut k, mut v) = (Vec::new(), Vec::new());
            let r = parse(kind::PUT_LIST, &msg, &mut k, &mut v)
                .unwrap()
                .unwrap();
            match r {
                Request::PutList { key, values } => (
                    key.to_vec(),
                    values.iter().map(|v| v.to_vec()).collect::<Vec<_>>(),
                ),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(got, (b"k".to_vec(), values));
    }

    #[test]
    fn truncated_payloads_do_not_decode() {
        let mut c = CapnpCodec::default();
        let mut wire = Vec::new();
        c.encode_request(
            &Request::Put {
                key: b"k",
                value: &[7; 100],
            },
            &mut wire,
        );
        for cut in [0, 3, 8, wire.len() - 8] {
            let got = c.decode_request(kind::PUT, &wire[..cut], |r| r.is_some());
            assert!(!got, "cut at {cut}");
        }
        assert!(c.decode_request(kind::PUT, &wire, |r| r.is_some()));
    }
}
