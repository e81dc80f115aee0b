//! Twitter cache traces: a reader for the published format, a synthetic
//! generator with the paper's mix, and value splitting.
//!
//! # The trace format
//!
//! The anonymized Twemcache traces (Yang et al., OSDI'20; the
//! `twitter/cache-trace` repository) are CSV, one request per line:
//!
//! ```text
//! timestamp,anonymized key,key size,value size,client id,operation,TTL
//! 0,nz:u:eeW511W3dcH3de3d15ec,24,306,12,get,0
//! ```
//!
//! `timestamp` is in seconds; `operation` is one of
//! get/gets/set/add/replace/cas/append/prepend/delete/incr/decr; `TTL` is 0
//! for reads. [`Trace::parse`] maps get/gets to GET, the writes to SET,
//! delete to DELETE, and skips incr/decr (counted in [`TraceStats`]). Keys
//! are renamed to dense ids in order of first appearance, spelled
//! `tw:<hex id>` padded to the trace's key size; each key keeps the value
//! size of its first appearance (later sizes of the same key are counted in
//! [`TraceStats::resized`]), so a GET's expected length is known. Only the
//! first `max_keys` distinct keys are kept (Cornflakes preloads the first
//! 4 M); requests for later keys are dropped and counted. Timestamps are
//! read but not used for pacing: the load generator's Poisson schedule sets
//! the rate, the trace sets the order of keys and operations.
//!
//! # Splitting
//!
//! Values larger than `split` bytes (default 8192, a datagram's worth; the
//! paper splits at the MTU) are stored as sub-keys `key.0, key.1, …` of
//! `split` bytes and a remainder; a GET or SET of the value becomes one
//! command per piece, all in one op, so throughput counts whole values.
//!
//! # Synthetic generator
//!
//! [`SynthConfig`] mimics trace cluster 4 as Cornflakes describes it
//! ("about 32% of the requests query objects larger than 512 \[bytes\], and
//! about 8% of requests are put requests"), with the cluster's published
//! mean key size (67 B) and mean value size (2439 B):
//!
//! * two key populations: "large" keys (fraction `large_frac` = 0.32 of the
//!   ids) get a `large_frac` share of the requests, small keys the rest;
//!   within each, popularity is Zipf(`zipf`, default 0.99). Choosing the
//!   population per request keeps the share of large requests at 32%
//!   whatever a few hot keys happen to weigh.
//! * small values: log-uniform on [8, 512] B (mean 121 B); large values:
//!   log-uniform on [513, 30720] B (mean 7382 B); overall request-weighted
//!   mean ≈ 0.68·121 + 0.32·7382 ≈ 2444 B.
//! * key sizes uniform on [48, 86] B (mean 67).
//! * each request is a SET with probability `put_frac` = 0.08, else a GET.
//!
//! Sizes are pure functions of (seed, key id).

use std::collections::HashMap;
use std::io::BufRead;

use super::dist::{key_rng, LogUniform, Popularity};
use super::{KeyRef, Op, Workload};
use crate::load::Rng64;
use rand::RngExt;

/// Key prefix.
pub const PREFIX: &str = "tw:";

/// Default split size (bytes).
pub const DEFAULT_SPLIT: u32 = 8192;

/// Appends the commands for one value of `len` bytes at `key`, split into
/// pieces of at most `split` bytes (sub-keys `key.i`) when larger.
pub fn push_split(op: &mut Op, key: KeyRef, len: u32, split: u32, write: bool) {
    if len <= split || split == 0 {
        if write {
            op.set(key, len);
        } else {
            op.get(key, len);
        }
        return;
    }
    let n = len.div_ceil(split);
    for i in 0..n {
        let piece = if i + 1 == n {
            len - split * (n - 1)
        } else {
            split
        };
        if write {
            op.set(key.with_sub(i), piece);
        } else {
            op.get(key.with_sub(i), piece);
        }
    }
}

/// A trace operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOp {
    /// get, gets.
    Get,
    /// set, add, replace, cas, append, prepend.
    Set,
    /// delete.
    Delete,
}

/// One kept request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceReq {
    /// Timestamp (s).
    pub ts: u32,
    /// Dense key id (index into [`Trace::keys`]).
    pub key: u32,
    /// Operation.
    pub op: TraceOp,
}

/// Per-key facts of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceKey {
    /// Key size from the trace.
    pub key_size: u16,
    /// Value size of the key's first appearance.
    pub value_size: u32,
}

/// What [`Trace::parse`] kept, dropped and changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    /// Lines read (excluding blank lines and `#` comments).
    pub lines: u64,
    /// Requests kept.
    pub kept: u64,
    /// incr/decr (and unknown operations) skipped.
    pub skipped_ops: u64,
    /// Requests for keys beyond `max_keys`, dropped.
    pub dropped_keys: u64,
    /// Requests whose value size differed from the key's first size.
    pub resized: u64,
}

/// A parsed trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Distinct keys, by dense id.
    pub keys: Vec<TraceKey>,
    /// Requests, in trace order.
    pub reqs: Vec<TraceReq>,
    /// Parse statistics.
    pub stats: TraceStats,
}

impl Trace {
    /// Parses the CSV format from `r`, keeping the first `max_keys` distinct
    /// keys. Malformed lines are errors (with their line number).
    pub fn parse(r: impl BufRead, max_keys: usize) -> Result<Trace, String> {
        let mut t = Trace::default();
        let mut ids: HashMap<String, u32> = HashMap::new();
        for (lineno, line) in r.lines().enumerate() {
            let line = line.map_err(|e| format!("line {}: {e}", lineno + 1))?;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            t.stats.lines += 1;
            let bad = |what: &str| format!("line {}: {what}: {line:?}", lineno + 1);
            // The key may in principle hold commas: take the timestamp from
            // the left and the five numeric/op fields from the right.
            let (ts, rest) = line.split_once(',').ok_or_else(|| bad("too few fields"))?;
            let mut right = rest.rsplitn(6, ',');
            let ttl = right.next();
            let opname = right.next();
            let _client = right.next();
            let vsize = right.next();
            let ksize = right.next();
            let key = right.next().ok_or_else(|| bad("too few fields"))?;
            let (_ttl, opname, vsize, ksize) = (
                ttl.ok_or_else(|| bad("no ttl"))?,
                opname.ok_or_else(|| bad("no operation"))?,
                vsize.ok_or_else(|| bad("no value size"))?,
                ksize.ok_or_else(|| bad("no key size"))?,
            );
            let ts: u32 = ts.trim().parse().map_err(|_| bad("bad timestamp"))?;
            let ksize: u16 = ksize.trim().parse().map_err(|_| bad("bad key size"))?;
            let vsize: u32 = vsize.trim().parse().map_err(|_| bad("bad value size"))?;
            let op = match opname.trim() {
                "get" | "gets" => TraceOp::Get,
                "set" | "add" | "replace" | "cas" | "append" | "prepend" => TraceOp::Set,
                "delete" => TraceOp::Delete,
                _ => {
                    t.stats.skipped_ops += 1;
                    continue;
                }
            };
            let id = match ids.get(key) {
                Some(&id) => id,
                None if ids.len() >= max_keys => {
                    t.stats.dropped_keys += 1;
                    continue;
                }
                None => {
                    let id = t.keys.len() as u32;
                    ids.insert(key.to_owned(), id);
                    t.keys.push(TraceKey {
                        key_size: ksize,
                        value_size: vsize,
                    });
                    id
                }
            };
            let k = &t.keys[id as usize];
            // Reads of absent keys carry size 0 in some traces: not a resize.
            if vsize != k.value_size && vsize != 0 {
                t.stats.resized += 1;
            }
            t.reqs.push(TraceReq { ts, key: id, op });
            t.stats.kept += 1;
        }
        Ok(t)
    }

    /// Reads and parses a trace file.
    pub fn from_file(path: &std::path::Path, max_keys: usize) -> Result<Trace, String> {
        let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Trace::parse(std::io::BufReader::new(f), max_keys)
            .map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Replays a [`Trace`]: each client thread starts at its own offset and
/// loops over the requests in order.
#[derive(Clone, Debug)]
pub struct TraceReplay {
    trace: std::sync::Arc<Trace>,
    split: u32,
    pos: usize,
    name: String,
}

impl TraceReplay {
    /// A replay of `trace` with value splitting at `split` bytes (0: never).
    pub fn new(trace: Trace, split: u32, name: String) -> Result<TraceReplay, String> {
        if trace.reqs.is_empty() {
            return Err(format!("trace {name}: no requests"));
        }
        Ok(TraceReplay {
            trace: std::sync::Arc::new(trace),
            split,
            pos: 0,
            name,
        })
    }

    fn key(&self, id: u32) -> KeyRef {
        KeyRef::new(PREFIX, u64::from(id), self.trace.keys[id as usize].key_size)
    }
}

impl Workload for TraceReplay {
    fn describe(&self) -> String {
        format!(
            "twitter:file={},keys={},requests={},split={}",
            self.name,
            self.trace.keys.len(),
            self.trace.reqs.len(),
            self.split
        )
    }

    fn load_count(&self) -> u64 {
        self.trace.keys.len() as u64
    }

    fn load_op(&self, i: u64, op: &mut Op) {
        op.clear();
        let k = self.trace.keys[i as usize];
        push_split(op, self.key(i as u32), k.value_size, self.split, true);
    }

    fn next_op(&mut self, _rng: &mut Rng64, op: &mut Op) {
        op.clear();
        let r = self.trace.reqs[self.pos];
        self.pos = (self.pos + 1) % self.trace.reqs.len();
        let key = self.key(r.key);
        let len = self.trace.keys[r.key as usize].value_size;
        match r.op {
            TraceOp::Get => push_split(op, key, len, self.split, false),
            TraceOp::Set => push_split(op, key, len, self.split, true),
            TraceOp::Delete if len > self.split && self.split > 0 => {
                for i in 0..len.div_ceil(self.split) {
                    op.delete(key.with_sub(i));
                }
            }
            TraceOp::Delete => op.delete(key),
        }
    }

    fn fork(&self, thread: usize, threads: usize) -> Box<dyn Workload> {
        let mut w = self.clone();
        w.pos = self.trace.reqs.len() * thread / threads.max(1);
        Box::new(w)
    }
}

/// Synthetic Twitter-like workload parameters (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub struct SynthConfig {
    /// Number of keys (default 100 000).
    pub keys: u64,
    /// Fraction of requests (and of keys) with values > 512 B (0.32).
    pub large_frac: f64,
    /// Fraction of requests that are SETs (0.08).
    pub put_frac: f64,
    /// Zipf exponent within each population (0.99).
    pub zipf: f64,
    /// Split size (8192; 0 = never split).
    pub split: u32,
    /// Seed of the per-key size draws.
    pub seed: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            keys: 100_000,
            large_frac: 0.32,
            put_frac: 0.08,
            zipf: 0.99,
            split: DEFAULT_SPLIT,
            seed: 0x0771_77e4,
        }
    }
}

/// Small values: log-uniform on [8, 512] B.
pub const SMALL: LogUniform = LogUniform { lo: 8.0, hi: 512.0 };
/// Large values: log-uniform on [513, 30720] B.
pub const LARGE: LogUniform = LogUniform {
    lo: 513.0,
    hi: 30720.0,
};

/// The synthetic Twitter-like workload.
#[derive(Clone, Debug)]
pub struct TwitterSynth {
    cfg: SynthConfig,
    n_small: u64,
    small: Popularity,
    large: Popularity,
}

impl TwitterSynth {
    /// A workload from its parameters.
    pub fn new(cfg: SynthConfig) -> Result<TwitterSynth, String> {
        if !(0.0..=1.0).contains(&cfg.large_frac) || !(0.0..=1.0).contains(&cfg.put_frac) {
            return Err("twitter: fractions must be within [0, 1]".into());
        }
        let n_large =
            ((cfg.keys as f64 * cfg.large_frac).round() as u64).clamp(1, cfg.keys.max(2) - 1);
        let n_small = cfg.keys - n_large;
        Ok(TwitterSynth {
            small: Popularity::new(n_small, cfg.zipf)?,
            large: Popularity::new(n_large, cfg.zipf)?,
            n_small,
            cfg,
        })
    }

    /// `(key size, value size)` of key `id`.
    pub fn sizes(&self, id: u64) -> (u16, u32) {
        let mut rng = key_rng(self.cfg.seed, id);
        let ks = rng.random_range(48u16..=86);
        let d = if id < self.n_small { SMALL } else { LARGE };
        let vs = (d.sample(&mut rng).round() as u32).clamp(d.lo as u32, d.hi as u32);
        (ks, vs)
    }

    fn push(&self, op: &mut Op, id: u64, write: bool) {
        let (ks, vs) = self.sizes(id);
        push_split(op, KeyRef::new(PREFIX, id, ks), vs, self.cfg.split, write);
    }
}

impl Workload for TwitterSynth {
    fn describe(&self) -> String {
        let c = &self.cfg;
        format!(
            "twitter-synth:keys={},large_frac={},put_frac={},zipf={},split={}",
            c.keys, c.large_frac, c.put_frac, c.zipf, c.split
        )
    }

    fn load_count(&self) -> u64 {
        self.cfg.keys
    }

    fn load_op(&self, i: u64, op: &mut Op) {
        op.clear();
        self.push(op, i, true);
    }

    fn next_op(&mut self, rng: &mut Rng64, op: &mut Op) {
        op.clear();
        let id = if rng.random::<f64>() < self.cfg.large_frac {
            self.n_small + self.large.sample(rng)
        } else {
            self.small.sample(rng)
        };
        let write = rng.random::<f64>() < self.cfg.put_frac;
        self.push(op, id, write);
    }

    fn fork(&self, _thread: usize, _threads: usize) -> Box<dyn Workload> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Cmd;
    use rand::SeedableRng;

    fn sample_path() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/data/twitter-sample.csv")
    }

    #[test]
    fn reads_the_sample_file() {
        let t = Trace::from_file(&sample_path(), usize::MAX).unwrap();
        assert!(t.stats.lines >= 1000, "{:?}", t.stats);
        assert_eq!(
            t.stats.kept + t.stats.skipped_ops + t.stats.dropped_keys,
            t.stats.lines
        );
        assert!(t.keys.len() > 100);
        let gets = t.reqs.iter().filter(|r| r.op == TraceOp::Get).count() as f64;
        let sets = t.reqs.iter().filter(|r| r.op == TraceOp::Set).count() as f64;
        let n = t.reqs.len() as f64;
        assert!(
            gets / n > 0.8 && sets / n > 0.03,
            "gets {gets} sets {sets} of {n}"
        );
        // Timestamps never decrease.
        assert!(t.reqs.windows(2).all(|w| w[0].ts <= w[1].ts));
        // max_keys drops requests for later keys.
        let t2 = Trace::from_file(&sample_path(), 10).unwrap();
        assert_eq!(t2.keys.len(), 10);
        assert!(t2.stats.dropped_keys > 0);
    }

    #[test]
    fn parses_fields_and_ops() {
        let csv = "0,nz:u:a,24,306,12,get,0\n\
                   # comment\n\
                   0,nz:u:b,10,20000,3,set,60\n\
                   1,odd,key,5,7,2,incr,0\n\
                   1,nz:u:a,24,300,12,gets,0\n\
                   2,nz:u:b,10,0,3,delete,0\n";
        let t = Trace::parse(csv.as_bytes(), usize::MAX).unwrap();
        assert_eq!(t.stats.lines, 5);
        assert_eq!(t.stats.skipped_ops, 1);
        assert_eq!(t.stats.resized, 1);
        assert_eq!(
            t.keys,
            vec![
                TraceKey {
                    key_size: 24,
                    value_size: 306
                },
                TraceKey {
                    key_size: 10,
                    value_size: 20000
                }
            ]
        );
        let ops: Vec<_> = t.reqs.iter().map(|r| (r.key, r.op)).collect();
        assert_eq!(
            ops,
            vec![
                (0, TraceOp::Get),
                (1, TraceOp::Set),
                (0, TraceOp::Get),
                (1, TraceOp::Delete)
            ]
        );
        assert!(Trace::parse("x,1,2\n".as_bytes(), 10).is_err());

        // Splitting: 20000 B at 8192 -> 8192 + 8192 + 3616 on sub-keys.
        let mut w = TraceReplay::new(t, 8192, "inline".into()).unwrap();
        let mut rng = Rng64::seed_from_u64(0);
        let mut op = Op::default();
        w.next_op(&mut rng, &mut op);
        assert!(matches!(op.cmds[..], [Cmd::Get { len: 306, .. }]));
        w.next_op(&mut rng, &mut op);
        let lens: Vec<_> = op
            .cmds
            .iter()
            .map(|c| match c {
                Cmd::Set { key, len } => (key.sub, *len),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(lens, vec![(0, 8192), (1, 8192), (2, 3616)]);
        w.load_op(1, &mut op);
        assert_eq!(op.cmds.len(), 3);
    }

    #[test]
    fn synthetic_mix_matches_its_parameters() {
        let mut w = TwitterSynth::new(SynthConfig {
            split: 0,
            ..Default::default()
        })
        .unwrap();
        let mut rng = Rng64::seed_from_u64(3);
        let mut op = Op::default();
        let (mut large, mut puts, mut bytes) = (0u64, 0u64, 0u64);
        let n = 200_000u64;
        for _ in 0..n {
            w.next_op(&mut rng, &mut op);
            let (len, put) = match op.cmds[0] {
                Cmd::Get { len, .. } => (len, false),
                Cmd::Set { len, .. } => (len, true),
                ref c => panic!("{c:?}"),
            };
            large += u64::from(len > 512);
            puts += u64::from(put);
            bytes += u64::from(len);
        }
        let (lf, pf) = (large as f64 / n as f64, puts as f64 / n as f64);
        assert!((lf - 0.32).abs() < 0.01, "large share {lf}");
        assert!((pf - 0.08).abs() < 0.005, "put share {pf}");
        // Mean value size: within 15% of 2444 B (Zipf concentrates requests
        // on a few keys, so the request-weighted mean is noisy).
        let mean = bytes as f64 / n as f64;
        assert!((mean - 2444.0).abs() / 2444.0 < 0.15, "mean {mean}");
        let want = 0.68 * SMALL.mean() + 0.32 * LARGE.mean();
        assert!((want - 2444.0).abs() < 15.0, "{want}");
    }
}
