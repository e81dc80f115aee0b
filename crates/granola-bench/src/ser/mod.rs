//! Serialization microbenchmark.
//!
//! # What is measured
//!
//! * **serialize**: from the source fields of message `i` (cold bytes spread
//!   over a big heap area) to a message that is ready to hand to `sendmsg`:
//!   a contiguous buffer (reused between messages) or, for capnp and the
//!   iovec floor, a list of (pointer, length) pieces. Building the library's
//!   in-memory object from the source bytes is part of it.
//! * **decode-and-touch**: decode one pre-serialized wire buffer (cold:
//!   every message has its own copy, visited in a random order, caches
//!   flushed before every batch) and read the first byte and the length of
//!   every bytes/string field (see [`shapes::touch`]).
//! * **wire bytes** per message.
//!
//! # Method
//!
//! For every shape, every library is `prepare`d (it pre-serializes all
//! messages into its own wire buffers, which the runner checks against
//! [`ShapeSet::checksum`]). Then, per repetition, the libraries run in a
//! freshly shuffled order; each runs one batch of serializations and one
//! batch of decodes over all messages, each batch preceded by a cache flush
//! (a write sweep over a buffer larger than the LLC). ns/message of each
//! batch is one sample; medians and quartiles over the repetitions are
//! reported.
//!
//! # Adding a library
//!
//! Implement [`SerLib`] and register it in [`all_libs`] (granola's own
//! variants go in `granola_lib.rs`, whose `libs()` is already registered).

pub mod bincode_lib;
pub mod bitcode_lib;
pub mod buffa_lib;
pub mod capnp_lib;
pub mod flatbuffers_lib;
pub mod floors;
pub mod granola_lib;
pub mod prost_lib;
pub mod rkyv_lib;
pub mod shapes;
#[cfg(test)]
mod tests;

/// flatc 25.12.19 output for `schemas/shapes.fbs` (checked in; regenerate
/// with `bench/regen-baselines.sh`).
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks,
    unused_imports,
    dead_code,
    missing_docs
)]
#[rustfmt::skip]
#[path = "gen/shapes_generated.rs"]
pub mod shapes_fbs;

/// capnpc-rust 0.27 output for `schemas/shapes.capnp` (checked in;
/// regenerate with `bench/regen-baselines.sh`).
#[allow(
    unsafe_code,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks,
    unused_imports,
    dead_code,
    missing_docs
)]
#[rustfmt::skip]
#[path = "gen/shapes_capnp.rs"]
pub mod shapes_capnp;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Instant;

pub use shapes::{FieldRef, MsgKind, Rng, Shape, ShapeSet, Source};

/// One library (or floor) under test.
///
/// The runner calls, for every shape: `prepare(set)` once, then repeatedly
/// (timed) `serialize(set, i)` for `i in 0..set.len()` and
/// `decode_touch(w)` for `w in set.decode_order()`, with cache flushes in
/// between batches. `set` is the same `ShapeSet` for `prepare` and all the
/// following calls.
pub trait SerLib {
    /// Name in the report and for `--libs` (e.g. `"prost"`, `"granola-hybrid"`).
    fn name(&self) -> &str;

    /// Untimed set-up for a new shape: drop the state of the previous shape,
    /// size reused buffers, copy the source data into library-owned memory
    /// if the library needs to (granola: its pool), and pre-serialize every
    /// message `0..set.len()` into its own wire buffer (one allocation per
    /// message, so the buffers are spread over memory) for `decode_touch`.
    fn prepare(&mut self, set: &ShapeSet);

    /// Serializes message `i` of `set` until it is ready for `sendmsg`
    /// (contiguous bytes in a reused buffer, or an iovec-style list of
    /// pieces); returns the wire bytes. The result must not be optimizable
    /// away (keep it in `self` and/or pass it through `black_box`).
    fn serialize(&mut self, set: &ShapeSet, i: usize) -> usize;

    /// Decodes the pre-serialized wire buffer of message `wire_index` and
    /// touches every bytes/string field with [`shapes::touch`]; returns the
    /// sum of the touches plus the id for [`MsgKind::IdPair`] (so it equals
    /// [`ShapeSet::checksum`]).
    fn decode_touch(&mut self, wire_index: usize) -> u64;

    /// Whether the library has a decoder (the memcpy and iovec floors do
    /// not; their `decode_touch` is never called).
    fn can_decode(&self) -> bool {
        true
    }
}

/// All libraries, floors first. The order here is the report order.
pub fn all_libs() -> Vec<Box<dyn SerLib>> {
    let mut libs: Vec<Box<dyn SerLib>> = vec![
        Box::new(floors::Memcpy::default()),
        Box::new(floors::IovecOnly::default()),
        Box::new(floors::Handwritten::default()),
    ];
    // ---- REGISTRATION POINT: granola variants (src/ser/granola_lib.rs) ----
    libs.extend(granola_lib::libs());
    // ---- peers ----
    libs.push(Box::new(prost_lib::Prost::default()));
    libs.push(Box::new(buffa_lib::Buffa::default()));
    libs.push(Box::new(flatbuffers_lib::Flatbuffers::default()));
    libs.push(Box::new(capnp_lib::Capnp::default()));
    libs.push(Box::new(rkyv_lib::Rkyv::default()));
    libs.push(Box::new(bincode_lib::Bincode::default()));
    libs.push(Box::new(bitcode_lib::Bitcode::default()));
    libs
}

/// Copies `bytes` into a fresh, exactly sized allocation (wire buffers for
/// `decode_touch`).
pub fn wire_copy(bytes: &[u8]) -> Vec<u8> {
    bytes.to_vec()
}

/// The wire buffers of every message of `set`: `encode` writes message `i`
/// into `out` (cleared and reused), each result is copied out exactly
/// sized. `prepare` of the libraries that encode into a `Vec<u8>`.
pub fn encode_all(
    set: &ShapeSet,
    out: &mut Vec<u8>,
    mut encode: impl FnMut(&mut Vec<u8>, &ShapeSet, usize) -> usize,
) -> Vec<Vec<u8>> {
    (0..set.len())
        .map(|i| {
            encode(out, set, i);
            wire_copy(out)
        })
        .collect()
}

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Shapes to run, in order.
    pub shapes: Vec<Shape>,
    /// Repetitions per (library, shape).
    pub reps: usize,
    /// Size of the source area (bytes).
    pub source_bytes: usize,
    /// Size of the cache-flush buffer (bytes).
    pub flush_bytes: usize,
    /// Target source bytes per batch; the message count is this divided by
    /// the shape's nominal size, clamped to `[min_messages, max_messages]`.
    pub batch_bytes: usize,
    /// Lower bound on messages per batch.
    pub min_messages: usize,
    /// Upper bound on messages per batch.
    pub max_messages: usize,
    /// Seed of everything random.
    pub seed: u64,
}

impl Default for RunConfig {
    fn default() -> RunConfig {
        RunConfig {
            shapes: Shape::ALL.to_vec(),
            reps: 15,
            source_bytes: 256 << 20,
            flush_bytes: 64 << 20,
            batch_bytes: 64 << 20,
            min_messages: 32,
            max_messages: 16384,
            seed: 0x0067_7261_6e6f_6c61,
        }
    }
}

impl RunConfig {
    /// Smoke-test settings: a few seconds in total.
    pub fn quick() -> RunConfig {
        RunConfig {
            reps: 3,
            batch_bytes: 8 << 20,
            min_messages: 8,
            max_messages: 2048,
            ..RunConfig::default()
        }
    }

    /// Messages per batch for `shape`.
    pub fn messages_for(&self, shape: Shape) -> usize {
        (self.batch_bytes / shape.nominal_bytes())
            .clamp(self.min_messages, self.max_messages.max(self.min_messages))
    }
}

/// Median and quartiles of a sample, in ns/message.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub median: f64,
    /// 75th percentile.
    pub p75: f64,
}

impl Stats {
    /// Quartiles (linear interpolation) of `v`.
    pub fn of(v: &[f64]) -> Stats {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let q = |p: f64| -> f64 {
            if s.is_empty() {
                return f64::NAN;
            }
            let x = p * (s.len() - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            s[lo] + (s[hi] - s[lo]) * (x - lo as f64)
        };
        Stats {
            p25: q(0.25),
            median: q(0.5),
            p75: q(0.75),
        }
    }
}

/// Result for one (library, shape).
#[derive(Clone, Debug)]
pub struct Record {
    /// Library name.
    pub library: String,
    /// Shape name.
    pub shape: String,
    /// Serialize, ns/message.
    pub serialize: Stats,
    /// Decode-and-touch, ns/message (`None` for the copy/iovec floors).
    pub deserialize: Option<Stats>,
    /// Mean wire bytes per message.
    pub wire_bytes: f64,
    /// Mean source (field payload) bytes per message.
    pub payload_bytes: f64,
    /// Messages per batch.
    pub messages: usize,
    /// Repetitions.
    pub reps: usize,
}

/// Evicts the caches by a read-modify-write sweep (one byte per cache line)
/// over a buffer larger than the LLC.
pub struct CacheFlusher {
    buf: Vec<u8>,
}

impl CacheFlusher {
    /// A flusher with a `bytes`-sized buffer.
    pub fn new(bytes: usize) -> CacheFlusher {
        CacheFlusher {
            buf: vec![1u8; bytes.max(64)],
        }
    }

    /// Sweeps the buffer.
    pub fn flush(&mut self) {
        for line in self.buf.chunks_exact_mut(64) {
            line[0] = line[0].wrapping_add(1);
        }
        black_box(&mut self.buf);
    }
}

/// Runs the benchmark over `libs`; `progress` receives status lines.
pub fn run(
    cfg: &RunConfig,
    libs: &mut [Box<dyn SerLib>],
    mut progress: impl FnMut(&str),
) -> Vec<Record> {
    let t0 = Instant::now();
    progress(&format!(
        "source area {} MiB, flush {} MiB, {} reps",
        cfg.source_bytes >> 20,
        cfg.flush_bytes >> 20,
        cfg.reps
    ));
    let source = Source::new(cfg.source_bytes, cfg.seed);
    let mut flusher = CacheFlusher::new(cfg.flush_bytes);
    let mut records = Vec::new();
    for (si, &shape) in cfg.shapes.iter().enumerate() {
        let n = cfg.messages_for(shape);
        let set = ShapeSet::generate(shape, &source, n, cfg.seed.wrapping_add(si as u64));
        let payload = (0..n).map(|i| set.payload_bytes(i)).sum::<usize>() as f64 / n as f64;
        progress(&format!(
            "[{:6.1}s] shape {}: {} messages, {:.0} payload bytes/message",
            t0.elapsed().as_secs_f64(),
            shape.name(),
            n,
            payload
        ));
        let mut wire: HashMap<usize, f64> = HashMap::new();
        for (li, lib) in libs.iter_mut().enumerate() {
            lib.prepare(&set);
            // Check the wire buffers and the decoders (untimed).
            let mut bytes = 0usize;
            for i in 0..n {
                bytes += lib.serialize(&set, i);
                if lib.can_decode() {
                    let got = lib.decode_touch(i);
                    let want = set.checksum(i);
                    assert_eq!(
                        got,
                        want,
                        "{}: decode_touch({i}) of shape {} returned a wrong checksum",
                        lib.name(),
                        shape.name()
                    );
                }
            }
            wire.insert(li, bytes as f64 / n as f64);
        }
        let mut ser: Vec<Vec<f64>> = vec![Vec::with_capacity(cfg.reps); libs.len()];
        let mut de: Vec<Vec<f64>> = vec![Vec::with_capacity(cfg.reps); libs.len()];
        let mut rng = Rng::new(cfg.seed ^ 0x5348_5546 ^ ((si as u64) << 32));
        let mut order: Vec<usize> = (0..libs.len()).collect();
        for _rep in 0..cfg.reps {
            rng.shuffle(&mut order);
            for &li in &order {
                let lib = &mut libs[li];
                flusher.flush();
                let start = Instant::now();
                let mut total = 0usize;
                for i in 0..n {
                    total = total.wrapping_add(lib.serialize(&set, i));
                }
                let ns = start.elapsed().as_nanos() as f64 / n as f64;
                black_box(total);
                ser[li].push(ns);

                if lib.can_decode() {
                    flusher.flush();
                    let start = Instant::now();
                    let mut sum = 0u64;
                    for &w in set.decode_order() {
                        sum = sum.wrapping_add(lib.decode_touch(w));
                    }
                    let ns = start.elapsed().as_nanos() as f64 / n as f64;
                    black_box(sum);
                    de[li].push(ns);
                }
            }
        }
        for (li, lib) in libs.iter().enumerate() {
            records.push(Record {
                library: lib.name().to_owned(),
                shape: shape.name().to_owned(),
                serialize: Stats::of(&ser[li]),
                deserialize: lib.can_decode().then(|| Stats::of(&de[li])),
                wire_bytes: wire[&li],
                payload_bytes: payload,
                messages: n,
                reps: cfg.reps,
            });
        }
    }
    progress(&format!("done in {:.1}s", t0.elapsed().as_secs_f64()));
    records
}

/// Renders the records as a table: one row per library, one column group
/// per shape (serialize / decode-and-touch ns per message, wire bytes).
pub fn format_table(records: &[Record]) -> String {
    let mut libs: Vec<&str> = Vec::new();
    let mut shapes: Vec<&str> = Vec::new();
    for r in records {
        if !libs.contains(&r.library.as_str()) {
            libs.push(&r.library);
        }
        if !shapes.contains(&r.shape.as_str()) {
            shapes.push(&r.shape);
        }
    }
    let find = |l: &str, s: &str| records.iter().find(|r| r.library == l && r.shape == s);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ns/message, median over repetitions: serialize / decode-and-touch (wire bytes)"
    );
    let w0 = libs.iter().map(|l| l.len()).max().unwrap_or(7).max(7);
    let cell = 26;
    let _ = write!(out, "{:w0$}", "library");
    for s in &shapes {
        let _ = write!(out, " | {s:>cell$}");
    }
    out.push('\n');
    let _ = writeln!(out, "{}", "-".repeat(w0 + shapes.len() * (cell + 3)));
    for l in &libs {
        let _ = write!(out, "{l:w0$}");
        for s in &shapes {
            let c = match find(l, s) {
                Some(r) => {
                    let de = r
                        .deserialize
                        .map_or_else(|| "-".to_owned(), |d| format!("{:.0}", d.median));
                    format!("{:.0} / {} ({:.0})", r.serialize.median, de, r.wire_bytes)
                }
                None => String::new(),
            };
            let _ = write!(out, " | {c:>cell$}");
        }
        out.push('\n');
    }
    out
}

fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}", x)
    } else {
        "null".to_owned()
    }
}

/// Renders the records as a JSON array (one object per (library, shape)).
pub fn to_json(records: &[Record]) -> String {
    let mut o = String::from("[\n");
    for (k, r) in records.iter().enumerate() {
        let (d, d25, d75) = match r.deserialize {
            Some(d) => (json_num(d.median), json_num(d.p25), json_num(d.p75)),
            None => ("null".into(), "null".into(), "null".into()),
        };
        let _ = write!(
            o,
            "  {{\"library\": {}, \"shape\": {}, \"serialize_ns\": {}, \"serialize_p25\": {}, \
             \"serialize_p75\": {}, \"deserialize_ns\": {}, \"deserialize_p25\": {}, \
             \"deserialize_p75\": {}, \"wire_bytes\": {}, \"payload_bytes\": {}, \
             \"messages\": {}, \"reps\": {}}}",
            json_str(&r.library),
            json_str(&r.shape),
            json_num(r.serialize.median),
            json_num(r.serialize.p25),
            json_num(r.serialize.p75),
            d,
            d25,
            d75,
            json_num(r.wire_bytes),
            json_num(r.payload_bytes),
            r.messages,
            r.reps
        );
        o.push_str(if k + 1 < records.len() { ",\n" } else { "\n" });
    }
    o.push_str("]\n");
    o
}
