//! granola's variants: hybrid (default threshold), only-copy, only-reference,
//! `granola-owned` (hybrid serialize; decode into an owned `'static`
//! message with `Decode::decode_buf`, which references the received buffer
//! for large fields and copies small ones) and `granola-view` (hybrid
//! serialize; decode through the generated read-only view, which builds no
//! struct and takes no references).
//!
//! Code generated at build time by granola-build from the same
//! `schemas/shapes.proto` the prost baseline uses.
//!
//! * Source data lives in granola's pool, as a granola application's I/O
//!   data would: `prepare` copies every source field into its own pool
//!   slot (spread over memory, so slots and their refcounts are cold).
//! * **serialize** = build the message from those fields (each field a
//!   clone of the application's `Buf`, one reference-count increment, as a
//!   cache replying with stored values does), then the fused encode at the
//!   variant's copy threshold: headers + copied bytes into one reused head
//!   buffer, and each zero-copy entry appended to an iovec list with a
//!   cloned `Buf` held for it — what the datapath's in-flight table does.
//!   The message is dropped inside the timed region, and the held
//!   references of the previous message are released at the start of the
//!   next one, so every refcount increment and decrement is paid for.
//! * **decode-and-touch** = `Decode::decode` (borrowing) from a received
//!   buffer in the pool, then the length and first byte of every field (no
//!   UTF-8 validation: granola validates strings only when `as_str()` is
//!   called; the peers' string decoders validate).

use std::hint::black_box;

use granola::{Buf, Decode, DecodeOptions, Message, Pool, PoolConfig, DEFAULT_COPY_THRESHOLD};

use super::shapes::{touch, MsgKind, ShapeSet};
use super::SerLib;

/// The generated types of `schemas/shapes.proto`.
#[allow(missing_docs)]
pub mod gr {
    include!(concat!(env!("OUT_DIR"), "/granola/shapes.rs"));
}

/// granola's variants, in report order.
pub fn libs() -> Vec<Box<dyn SerLib>> {
    vec![
        Box::new(Granola::new(
            "granola-hybrid",
            DEFAULT_COPY_THRESHOLD,
            Decoder::Borrowed,
        )),
        Box::new(Granola::new("granola-copy", usize::MAX, Decoder::Borrowed)),
        Box::new(Granola::new("granola-ref", 0, Decoder::Borrowed)),
        Box::new(Granola::new(
            "granola-owned",
            DEFAULT_COPY_THRESHOLD,
            Decoder::Owned,
        )),
        Box::new(GranolaView(
            Granola::new("granola-view", DEFAULT_COPY_THRESHOLD, Decoder::View),
            None,
        )),
    ]
}

/// How a variant decodes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Decoder {
    /// `Decode::decode`: fields borrow the received buffer.
    Borrowed,
    /// `Decode::decode_buf`: an owned message.
    Owned,
    /// The generated read-only `<Msg>View`.
    View,
}

/// One granola variant (a copy threshold and a decoder).
pub struct Granola {
    name: &'static str,
    pool: Pool,
    threshold: usize,
    decoder: Decoder,
    options: DecodeOptions,
    kind: Option<MsgKind>,
    /// Source fields of every message, each in its own pool slot.
    fields: Vec<Vec<Buf>>,
    /// Received wire buffers (in the pool), one per message.
    wire: Vec<Buf>,
    /// Fused output: headers + copied bytes.
    head: Vec<u8>,
    /// Fused output: one (pointer, length) per zero-copy entry.
    iovecs: Vec<(usize, usize)>,
    /// References held for the zero-copy entries "in flight".
    in_flight: Vec<Buf>,
}

impl Granola {
    fn new(name: &'static str, threshold: usize, decoder: Decoder) -> Granola {
        let pool = Pool::new(PoolConfig {
            capacity: 4 << 30,
            huge_pages: true,
            budget: None,
        })
        .expect("reserve the benchmark pool");
        Granola {
            name,
            pool,
            threshold,
            decoder,
            options: DecodeOptions::default(),
            kind: None,
            fields: Vec::new(),
            wire: Vec::new(),
            head: Vec::new(),
            iovecs: Vec::new(),
            in_flight: Vec::new(),
        }
    }

    /// Decode-and-touch through the read-only views: the root header is
    /// checked, then each field is read in place.
    fn view_touch(&self, buf: &[u8]) -> u64 {
        view_reader(self.kind.expect("prepared"))(buf, &self.options)
    }

    /// Fused encode into `head` + `iovecs`, holding references in
    /// `in_flight`; returns the wire bytes.
    fn send<M: Message>(
        m: &M,
        threshold: usize,
        head: &mut Vec<u8>,
        iovecs: &mut Vec<(usize, usize)>,
        in_flight: &mut Vec<Buf>,
    ) -> usize {
        let sizes = m.encoded_sizes_with(threshold);
        if head.len() < sizes.head_len() {
            head.resize(sizes.head_len(), 0);
        }
        m.encode(&sizes, &mut head[..], |b| {
            iovecs.push((b.as_ptr() as usize, b.len()));
            in_flight.push(b.clone());
        })
        .expect("encode");
        sizes.total_len()
    }

    fn build_and_send(&mut self, i: usize, id: u32) -> usize {
        self.iovecs.clear();
        self.in_flight.clear(); // the previous send "completed"
        let f = &self.fields[i];
        let t = self.threshold;
        let (head, iov, fl) = (&mut self.head, &mut self.iovecs, &mut self.in_flight);
        let bufs = |s: &[Buf]| -> Vec<granola::HybridBytes<'static>> {
            s.iter().map(|b| b.clone().into()).collect()
        };
        match self.kind.expect("prepared") {
            MsgKind::StringMsg => {
                let m = gr::StringMsg {
                    value: f[0].clone().into(),
                    ..Default::default()
                };
                Self::send(&m, t, head, iov, fl)
            }
            MsgKind::IdPair => {
                let m = gr::IdPair {
                    id,
                    first: f[0].clone().into(),
                    second: f[1].clone().into(),
                    ..Default::default()
                };
                Self::send(&m, t, head, iov, fl)
            }
            MsgKind::ValueList => {
                let m = gr::ValueList {
                    values: bufs(f),
                    ..Default::default()
                };
                Self::send(&m, t, head, iov, fl)
            }
            MsgKind::KeyValues => {
                let (keys, values) = f.split_at(f.len() / 2);
                let m = gr::KeyValues {
                    keys: bufs(keys),
                    values: bufs(values),
                    ..Default::default()
                };
                Self::send(&m, t, head, iov, fl)
            }
            MsgKind::Blob => {
                let m = gr::Blob {
                    data: f[0].clone().into(),
                    ..Default::default()
                };
                Self::send(&m, t, head, iov, fl)
            }
        }
    }

    /// Decode-and-touch with `Decode::decode` (borrowed) or
    /// `Decode::decode_buf` (owned), whichever the variant uses.
    fn decode_touch_struct(&self, buf: &Buf) -> u64 {
        macro_rules! decode {
            ($t:ty) => {
                match self.decoder {
                    Decoder::Owned => {
                        <$t>::decode_buf_with(buf, &self.options, self.threshold).expect("decode")
                    }
                    _ => <$t>::decode_with(buf, &self.options).expect("decode"),
                }
            };
        }
        let all = |l: &[granola::HybridBytes<'_>], a: u64| {
            l.iter().fold(a, |a, v| a.wrapping_add(touch(v)))
        };
        match self.kind.expect("prepared") {
            MsgKind::StringMsg => touch(decode!(gr::StringMsg).value.as_bytes()),
            MsgKind::IdPair => {
                let m = decode!(gr::IdPair);
                u64::from(m.id)
                    .wrapping_add(touch(&m.first))
                    .wrapping_add(touch(&m.second))
            }
            MsgKind::ValueList => all(&decode!(gr::ValueList).values, 0),
            MsgKind::KeyValues => {
                let m = decode!(gr::KeyValues);
                all(&m.values, all(&m.keys, 0))
            }
            MsgKind::Blob => touch(&decode!(gr::Blob).data),
        }
    }
}

impl SerLib for Granola {
    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.kind = Some(set.kind());
        self.wire.clear();
        self.in_flight.clear();
        self.fields = (0..set.len())
            .map(|i| {
                set.fields(i)
                    .map(|b| self.pool.alloc_copy(b).expect("bench pool exhausted"))
                    .collect()
            })
            .collect();
        let mut wire = Vec::with_capacity(set.len());
        for i in 0..set.len() {
            let total = self.build_and_send(i, set.id(i));
            // The received object = head bytes + zero-copy bytes.
            let zero_copy: usize = self.in_flight.iter().map(|b| b.len()).sum();
            let mut rx = self.head[..total - zero_copy].to_vec();
            for b in &self.in_flight {
                rx.extend_from_slice(b);
            }
            wire.push(self.pool.alloc_copy(&rx).expect("bench pool exhausted"));
        }
        self.in_flight.clear();
        self.wire = wire;
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        let n = self.build_and_send(i, set.id(i));
        black_box((&self.head, &self.iovecs));
        n
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        let buf = &self.wire[wire_index];
        match self.decoder {
            Decoder::View => self.view_touch(buf),
            Decoder::Borrowed | Decoder::Owned => self.decode_touch_struct(buf),
        }
    }
}

/// Decode-and-touch of one message type through its read-only view.
type ViewReader = fn(&[u8], &DecodeOptions) -> u64;

/// The view reader of a message type. Each is a function of its own, as
/// each peer's decoder is, so the registers the list types need are not
/// saved for every message.
fn view_reader(kind: MsgKind) -> ViewReader {
    match kind {
        MsgKind::StringMsg => view_string,
        MsgKind::IdPair => view_id_pair,
        MsgKind::ValueList => view_value_list,
        MsgKind::KeyValues => view_key_values,
        MsgKind::Blob => view_blob,
    }
}

/// The view variant as a type of its own, so that its `decode_touch` is a
/// function of its own. The shape's reader is picked once, when the shape
/// is prepared, as the hand-written floor has no per-message dispatch.
pub struct GranolaView(Granola, Option<ViewReader>);

impl SerLib for GranolaView {
    fn name(&self) -> &str {
        self.0.name
    }

    fn prepare(&mut self, set: &ShapeSet) {
        self.0.prepare(set);
        self.1 = Some(view_reader(set.kind()));
    }

    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize {
        self.0.serialize(set, i)
    }

    fn decode_touch(&mut self, wire_index: usize) -> u64 {
        self.1.expect("prepared")(&self.0.wire[wire_index], &self.0.options)
    }
}

fn touch_list(l: Option<granola::wire::ListReader<'_>>) -> u64 {
    let Some(l) = l else { return 0 };
    l.bytes_iter()
        .fold(0u64, |a, b| a.wrapping_add(touch(b.expect("decode"))))
}

#[inline(never)]
fn view_string(buf: &[u8], opts: &DecodeOptions) -> u64 {
    let v = gr::StringMsgView::new(buf, opts).expect("decode");
    touch(v.value_bytes().expect("decode"))
}

#[inline(never)]
fn view_id_pair(buf: &[u8], opts: &DecodeOptions) -> u64 {
    let v = gr::IdPairView::new(buf, opts).expect("decode");
    u64::from(v.id())
        .wrapping_add(touch(v.first().expect("decode")))
        .wrapping_add(touch(v.second().expect("decode")))
}

#[inline(never)]
fn view_value_list(buf: &[u8], opts: &DecodeOptions) -> u64 {
    let v = gr::ValueListView::new(buf, opts).expect("decode");
    touch_list(v.values().expect("decode"))
}

#[inline(never)]
fn view_key_values(buf: &[u8], opts: &DecodeOptions) -> u64 {
    let v = gr::KeyValuesView::new(buf, opts).expect("decode");
    touch_list(v.keys().expect("decode")).wrapping_add(touch_list(v.values().expect("decode")))
}

#[inline(never)]
fn view_blob(buf: &[u8], opts: &DecodeOptions) -> u64 {
    let v = gr::BlobView::new(buf, opts).expect("decode");
    touch(v.data().expect("decode"))
}
