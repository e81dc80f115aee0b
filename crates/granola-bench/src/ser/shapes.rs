//! Message shapes, the cold source area and the message instances.
//!
//! Every message instance is a list of field byte slices into one big source
//! area (an ASCII `str`, so any field can also be read as a `&str` without
//! validation). The fields of a cold shape are scattered in a random order
//! over the whole area (≥ 256 MiB, several times the 32 MiB LLC), so the
//! source bytes of each message are cold once the caches have been flushed.

use std::sync::Arc;

/// Message type of a shape (the messages of `schemas/shapes.proto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgKind {
    /// `StringMsg { string value }`: one field, read as a string.
    StringMsg,
    /// `IdPair { uint32 id; bytes first; bytes second }`: id + two fields.
    IdPair,
    /// `ValueList { repeated bytes values }`.
    ValueList,
    /// `KeyValues { repeated bytes keys; repeated bytes values }`: the first
    /// half of the fields are the keys, the second half the values.
    KeyValues,
    /// `Blob { bytes data }`: one field.
    Blob,
}

/// A benchmark shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// One 1 KiB string, cold.
    A,
    /// One 1 KiB string; every message reuses the same source (and decode
    /// reuses the same wire buffer), so everything is hot.
    AHot,
    /// u32 id + 2 × 2 KiB bytes.
    B,
    /// 8 bytes values, sizes sampled from the Google protobuf size buckets.
    C,
    /// 16 × 64 B keys + 16 × 4 KiB values.
    D,
    /// One 64 KiB bytes field.
    E64k,
    /// One 1 MiB bytes field.
    E1m,
}

impl Shape {
    /// All shapes, in report order.
    pub const ALL: [Shape; 7] = [
        Shape::A,
        Shape::AHot,
        Shape::B,
        Shape::C,
        Shape::D,
        Shape::E64k,
        Shape::E1m,
    ];

    /// Name used on the command line and in the JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Shape::A => "a",
            Shape::AHot => "a-hot",
            Shape::B => "b",
            Shape::C => "c",
            Shape::D => "d",
            Shape::E64k => "e-64k",
            Shape::E1m => "e-1m",
        }
    }

    /// Inverse of [`Shape::name`].
    pub fn from_name(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The schema message of this shape.
    pub fn kind(self) -> MsgKind {
        match self {
            Shape::A | Shape::AHot => MsgKind::StringMsg,
            Shape::B => MsgKind::IdPair,
            Shape::C => MsgKind::ValueList,
            Shape::D => MsgKind::KeyValues,
            Shape::E64k | Shape::E1m => MsgKind::Blob,
        }
    }

    /// Whether the source (and the decoded wire buffer) is reused, i.e. hot.
    pub fn is_hot(self) -> bool {
        self == Shape::AHot
    }

    /// Approximate mean source bytes per message (used to size batches).
    pub fn nominal_bytes(self) -> usize {
        match self {
            Shape::A | Shape::AHot => 1024,
            Shape::B => 4 + 2 * 2048,
            Shape::C => 8 * 215,
            Shape::D => 16 * (64 + 4096),
            Shape::E64k => 64 << 10,
            Shape::E1m => 1 << 20,
        }
    }

    /// Field lengths of one message instance (sizes of shape c are sampled).
    fn field_lens(self, rng: &mut Rng, out: &mut Vec<usize>) {
        out.clear();
        match self {
            Shape::A | Shape::AHot => out.push(1024),
            Shape::B => out.extend([2048, 2048]),
            Shape::C => out.extend((0..8).map(|_| sample_bucket_size(rng))),
            Shape::D => {
                out.extend([64; 16]);
                out.extend([4096; 16]);
            }
            Shape::E64k => out.push(64 << 10),
            Shape::E1m => out.push(1 << 20),
        }
    }
}

/// Google's protobuf field size distribution (bytes fields), as
/// `(min, max, percent)`; the open-ended `> 4096` bucket is capped at 8 KiB.
pub const SIZE_BUCKETS: [(usize, usize, f64); 9] = [
    (1, 8, 33.8),
    (9, 16, 15.3),
    (17, 22, 7.6),
    (23, 32, 13.5),
    (33, 64, 10.6),
    (65, 128, 6.1),
    (129, 512, 8.0),
    (513, 4096, 3.7),
    (4097, 8192, 1.36),
];

/// Samples one field size: a bucket by its weight, then uniform within it.
pub fn sample_bucket_size(rng: &mut Rng) -> usize {
    let total: f64 = SIZE_BUCKETS.iter().map(|b| b.2).sum();
    let mut x = rng.next_f64() * total;
    for &(lo, hi, w) in &SIZE_BUCKETS {
        if x < w {
            return lo + rng.below((hi - lo + 1) as u64) as usize;
        }
        x -= w;
    }
    let (lo, hi, _) = SIZE_BUCKETS[SIZE_BUCKETS.len() - 1];
    lo + rng.below((hi - lo + 1) as u64) as usize
}

/// Small deterministic PRNG (SplitMix64); good enough for sampling.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `[0, n)` (`n > 0`; tiny modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// The big source area: random printable ASCII, so every sub-slice is valid
/// UTF-8 and can be handed out as `&str` in O(1).
#[derive(Clone, Debug)]
pub struct Source {
    text: Arc<str>,
}

impl Source {
    /// Allocates and fills `bytes` bytes of random ASCII (`0x40..=0x7e`).
    pub fn new(bytes: usize, seed: u64) -> Source {
        let mut rng = Rng::new(seed ^ 0x5352_4345);
        let mut v = vec![0u8; bytes];
        for chunk in v.chunks_mut(8) {
            let r = rng.next_u64().to_le_bytes();
            for (d, s) in chunk.iter_mut().zip(r) {
                // 0x40..=0x7e: printable ASCII, never 0 (so touches are visible).
                *d = 0x40 + (s % 63);
            }
        }
        let text = String::from_utf8(v).expect("ASCII is UTF-8");
        Source {
            text: Arc::from(text),
        }
    }

    /// Size of the area in bytes.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether the area is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }
}

/// One field of a message instance: a slice of the source area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRef {
    /// Byte offset into the source area.
    pub off: usize,
    /// Length in bytes.
    pub len: usize,
}

#[derive(Clone, Copy, Debug)]
struct MsgSpec {
    id: u32,
    first_field: usize,
    num_fields: usize,
}

/// The message instances of one shape: what every library serializes.
///
/// Message `i` has an id ([`ShapeSet::id`], meaningful for [`MsgKind::IdPair`]
/// only) and a list of fields ([`ShapeSet::fields`]) that are slices of the
/// shared source area. A library that keeps its own copy of the data (e.g. in
/// a memory pool) copies these bytes at `prepare` time.
#[derive(Clone, Debug)]
pub struct ShapeSet {
    shape: Shape,
    source: Source,
    refs: Vec<FieldRef>,
    msgs: Vec<MsgSpec>,
    decode_order: Vec<usize>,
}

impl ShapeSet {
    /// Generates `messages` instances of `shape` over `source`.
    ///
    /// Cold shapes place every field at a random position of the area (in a
    /// random order, with random gaps, 16-byte aligned); the hot shape makes
    /// every message reference the same field.
    pub fn generate(shape: Shape, source: &Source, messages: usize, seed: u64) -> ShapeSet {
        assert!(messages > 0);
        let mut rng = Rng::new(seed ^ (shape as u64).wrapping_mul(0x1000_0000_01b3));
        let mut msgs = Vec::with_capacity(messages);
        let mut lens = Vec::new();
        let mut all_lens = Vec::new();
        let distinct = if shape.is_hot() { 1 } else { messages };
        for _ in 0..distinct {
            shape.field_lens(&mut rng, &mut lens);
            msgs.push(MsgSpec {
                id: rng.next_u64() as u32,
                first_field: all_lens.len(),
                num_fields: lens.len(),
            });
            all_lens.extend_from_slice(&lens);
        }
        let align = |x: usize| (x + 15) & !15;
        let total: usize = all_lens.iter().map(|&l| align(l)).sum();
        assert!(
            total <= source.len(),
            "source area of {} MiB too small for {} messages of shape {} ({} MiB)",
            source.len() >> 20,
            messages,
            shape.name(),
            total >> 20
        );
        // Place the fields in a random order with random gaps that add up to
        // at most the slack, so they spread over the whole area.
        let mut order: Vec<usize> = (0..all_lens.len()).collect();
        rng.shuffle(&mut order);
        let slack = source.len() - total;
        let raw_gaps: Vec<f64> = order.iter().map(|_| rng.next_f64()).collect();
        let gap_sum: f64 = raw_gaps.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let mut refs = vec![FieldRef { off: 0, len: 0 }; all_lens.len()];
        let mut pos = 0usize;
        for (&f, g) in order.iter().zip(raw_gaps) {
            pos += ((g / gap_sum * slack as f64) as usize) & !15;
            refs[f] = FieldRef {
                off: pos,
                len: all_lens[f],
            };
            pos = align(pos + all_lens[f]);
        }
        debug_assert!(pos <= source.len());
        while msgs.len() < messages {
            let m = msgs[0];
            msgs.push(m);
        }
        let decode_order = if shape.is_hot() {
            vec![0; messages]
        } else {
            let mut o: Vec<usize> = (0..messages).collect();
            rng.shuffle(&mut o);
            o
        };
        ShapeSet {
            shape,
            source: source.clone(),
            refs,
            msgs,
            decode_order,
        }
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The schema message of the shape.
    pub fn kind(&self) -> MsgKind {
        self.shape.kind()
    }

    /// Number of message instances.
    pub fn len(&self) -> usize {
        self.msgs.len()
    }

    /// Whether there are no messages.
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// The id of message `i` (only serialized for [`MsgKind::IdPair`]).
    pub fn id(&self, i: usize) -> u32 {
        self.msgs[i].id
    }

    /// A reference to the id of message `i` (for gather-style floors).
    pub fn id_ref(&self, i: usize) -> &u32 {
        &self.msgs[i].id
    }

    /// The field references of message `i`.
    pub fn field_refs(&self, i: usize) -> &[FieldRef] {
        let m = &self.msgs[i];
        &self.refs[m.first_field..m.first_field + m.num_fields]
    }

    /// Number of fields of message `i`.
    pub fn num_fields(&self, i: usize) -> usize {
        self.msgs[i].num_fields
    }

    /// The bytes of a field.
    pub fn bytes(&self, f: FieldRef) -> &[u8] {
        &self.source.text.as_bytes()[f.off..f.off + f.len]
    }

    /// The bytes of a field as a `str` (O(1): the source is ASCII).
    pub fn str(&self, f: FieldRef) -> &str {
        &self.source.text[f.off..f.off + f.len]
    }

    /// Field `j` of message `i`.
    pub fn field(&self, i: usize, j: usize) -> &[u8] {
        self.bytes(self.field_refs(i)[j])
    }

    /// Field `j` of message `i` as a `str`.
    pub fn field_str(&self, i: usize, j: usize) -> &str {
        self.str(self.field_refs(i)[j])
    }

    /// The fields of message `i`, in schema order (for
    /// [`MsgKind::KeyValues`]: all keys, then all values).
    pub fn fields(&self, i: usize) -> impl ExactSizeIterator<Item = &[u8]> + Clone + '_ {
        self.field_refs(i).iter().map(|&f| self.bytes(f))
    }

    /// For [`MsgKind::KeyValues`]: the key fields and the value fields.
    pub fn keys_values(&self, i: usize) -> (&[FieldRef], &[FieldRef]) {
        let r = self.field_refs(i);
        r.split_at(r.len() / 2)
    }

    /// Total field bytes of message `i`.
    pub fn payload_bytes(&self, i: usize) -> usize {
        self.field_refs(i).iter().map(|f| f.len).sum()
    }

    /// Largest total field bytes over all messages.
    pub fn max_payload_bytes(&self) -> usize {
        (0..self.len())
            .map(|i| self.payload_bytes(i))
            .max()
            .unwrap_or(0)
    }

    /// The wire indices decode visits, in order: a random permutation for a
    /// cold shape (so consecutive decodes are far apart in memory), all zero
    /// for the hot shape.
    pub fn decode_order(&self) -> &[usize] {
        &self.decode_order
    }

    /// The checksum `decode_touch` must return for message `i`:
    /// `id + Σ (len + first byte)` over the fields (the id counts only for
    /// [`MsgKind::IdPair`]).
    pub fn checksum(&self, i: usize) -> u64 {
        let id = if self.kind() == MsgKind::IdPair {
            u64::from(self.id(i))
        } else {
            0
        };
        self.fields(i).fold(id, |acc, f| acc.wrapping_add(touch(f)))
    }
}

/// "Touches" a decoded field: its length plus its first byte.
#[inline(always)]
pub fn touch(field: &[u8]) -> u64 {
    field.len() as u64 + u64::from(field.first().copied().unwrap_or(0))
}
