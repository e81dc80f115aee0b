//! granola's variants: hybrid (default threshold), only-copy, only-reference,
//! and `granola-view` (hybrid serialize; decode through the generated
//! read-only view, which builds no struct and takes no references).
//!
//! Code generated at build time by granola-build from the same
//! `schemas/shapes.proto` the prost baseline uses.
//!
//! * Source data lives in granola's pool, as a granola application's I/O
//!   data would: `prepare` copies every source field into its own pool
//!   slot (spread over memory, so slots and their refcounts are cold).
//! * **serialize** = build the message from those fields (bytes through the
//!   paper's `CFPtr::new(&[u8])` path, i.e. pointer recovery; the string
//!   through `set_value_buf`, since a `&str` over pool bytes would need a
//!   UTF-8 check or `unsafe`), then the fused encode: headers + copied
//!   bytes into one reused head buffer, and each zero-copy entry appended to
//!   an iovec list with a cloned `Buf` held for it — what the datapath's
//!   in-flight table does. The message is dropped and the arena reset inside
//!   the timed region, and the held references of the previous message are
//!   released at the start of the next one, so every refcount increment and
//!   decrement is paid for.
//! * **decode-and-touch** = `Decode::decode` from a received buffer in the
//!   pool, then the length and first byte of every field through the bytes
//!   accessors (no UTF-8 validation: granola validates strings only when
//!   `get_*()` as `&str` is called; the peers' string decoders validate).

use std::hint::black_box;

use granola::{Buf, Context, Decode, Message, Pool, PoolConfig, DEFAULT_COPY_THRESHOLD};

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
        Box::new(Granola::new("granola-hybrid", DEFAULT_COPY_THRESHOLD)),
        Box::new(Granola::new("granola-copy", usize::MAX)),
        Box::new(Granola::new("granola-ref", 0)),
        Box::new(Granola::new("granola-view", DEFAULT_COPY_THRESHOLD).with_view()),
    ]
}

/// One granola variant (a copy threshold).
pub struct Granola {
    name: &'static str,
    pool: Pool,
    ctx: Context,
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
    /// Decode through `<Msg>View` instead of `Decode::decode`.
    view: bool,
}

impl Granola {
    fn new(name: &'static str, threshold: usize) -> Granola {
        let pool = Pool::new(PoolConfig {
            capacity: 4 << 30,
            huge_pages: true,
        })
        .expect("reserve the benchmark pool");
        let ctx = Context::new(&pool).with_copy_threshold(threshold);
        Granola {
            name,
            pool,
            ctx,
            kind: None,
            fields: Vec::new(),
            wire: Vec::new(),
            head: Vec::new(),
            iovecs: Vec::new(),
            in_flight: Vec::new(),
            view: false,
        }
    }

    fn with_view(mut self) -> Granola {
        self.view = true;
        self
    }

    /// Decode-and-touch through the read-only views: the root header is
    /// checked, then each field is read in place.
    fn view_touch(&self, buf: &[u8]) -> u64 {
        let opts = self.ctx.decode_options();
        let list = |l: Option<granola::wire::ListReader<'_>>| -> u64 {
            let Some(l) = l else { return 0 };
            (0..l.len()).fold(0u64, |a, i| {
                a.wrapping_add(touch(l.bytes(i).expect("decode")))
            })
        };
        match self.kind.expect("prepared") {
            MsgKind::StringMsg => {
                let v = gr::StringMsgView::new(buf, opts).expect("decode");
                touch(v.value_bytes().expect("decode"))
            }
            MsgKind::IdPair => {
                let v = gr::IdPairView::new(buf, opts).expect("decode");
                u64::from(v.id())
                    .wrapping_add(touch(v.first().expect("decode")))
                    .wrapping_add(touch(v.second().expect("decode")))
            }
            MsgKind::ValueList => {
                let v = gr::ValueListView::new(buf, opts).expect("decode");
                list(v.values().expect("decode"))
            }
            MsgKind::KeyValues => {
                let v = gr::KeyValuesView::new(buf, opts).expect("decode");
                list(v.keys().expect("decode")).wrapping_add(list(v.values().expect("decode")))
            }
            MsgKind::Blob => {
                let v = gr::BlobView::new(buf, opts).expect("decode");
                touch(v.data().expect("decode"))
            }
        }
    }

    /// Fused encode into `head` + `iovecs`, holding references in
    /// `in_flight`; returns the wire bytes.
    fn send<M: Message>(
        m: &M,
        head: &mut Vec<u8>,
        iovecs: &mut Vec<(usize, usize)>,
        in_flight: &mut Vec<Buf>,
    ) -> usize {
        let sizes = m.encoded_sizes();
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
        self.ctx.reset();
        let ctx = &self.ctx;
        let f = &self.fields[i];
        let (head, iov, fl) = (&mut self.head, &mut self.iovecs, &mut self.in_flight);
        match self.kind.expect("prepared") {
            MsgKind::StringMsg => {
                let mut m = gr::StringMsg::new(ctx);
                m.set_value_buf(f[0].clone());
                Self::send(&m, head, iov, fl)
            }
            MsgKind::IdPair => {
                let mut m = gr::IdPair::new(ctx);
                m.set_id(id);
                m.set_first(&f[0]);
                m.set_second(&f[1]);
                Self::send(&m, head, iov, fl)
            }
            MsgKind::ValueList => {
                let mut m = gr::ValueList::new(ctx);
                m.init_values(f.len());
                for v in f {
                    m.append_values(v);
                }
                Self::send(&m, head, iov, fl)
            }
            MsgKind::KeyValues => {
                let (keys, values) = f.split_at(f.len() / 2);
                let mut m = gr::KeyValues::new(ctx);
                m.init_keys(keys.len());
                for k in keys {
                    m.append_keys(k);
                }
                m.init_values(values.len());
                for v in values {
                    m.append_values(v);
                }
                Self::send(&m, head, iov, fl)
            }
            MsgKind::Blob => {
                let mut m = gr::Blob::new(ctx);
                m.set_data(&f[0]);
                Self::send(&m, head, iov, fl)
            }
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
        if self.view {
            return self.view_touch(&self.wire[wire_index]);
        }
        self.ctx.reset();
        let ctx = &self.ctx;
        let buf = &self.wire[wire_index];
        match self.kind.expect("prepared") {
            MsgKind::StringMsg => {
                let m = gr::StringMsg::decode(ctx, buf).expect("decode");
                touch(m.get_value_bytes())
            }
            MsgKind::IdPair => {
                let m = gr::IdPair::decode(ctx, buf).expect("decode");
                u64::from(m.get_id())
                    .wrapping_add(touch(m.get_first()))
                    .wrapping_add(touch(m.get_second()))
            }
            MsgKind::ValueList => {
                let m = gr::ValueList::decode(ctx, buf).expect("decode");
                m.get_values()
                    .iter()
                    .fold(0u64, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::KeyValues => {
                let m = gr::KeyValues::decode(ctx, buf).expect("decode");
                let k = m
                    .get_keys()
                    .iter()
                    .fold(0u64, |a, v| a.wrapping_add(touch(v)));
                m.get_values()
                    .iter()
                    .fold(k, |a, v| a.wrapping_add(touch(v)))
            }
            MsgKind::Blob => {
                let m = gr::Blob::decode(ctx, buf).expect("decode");
                touch(m.get_data())
            }
        }
    }
}
