//! Google protobuf bytes-field sizes (Cornflakes Table 1, Figure 6).
//!
//! Field sizes come from the fleet-wide size histogram of Google's protobuf
//! study (Karandikar et al., ProtoAcc, Figure 4c, as used by Cornflakes
//! §6.1.4):
//!
//! | bytes | 1–8 | 9–16 | 17–22 | 23–32 | 33–64 | 65–128 | 129–512 | 513–4096 | > 4096 |
//! |---|---|---|---|---|---|---|---|---|---|
//! | share | 33.8% | 15.3% | 7.6% | 13.5% | 10.6% | 6.1% | 8.0% | 3.7% | 1.36% |
//!
//! Sizes are uniform within a bucket. The open last bucket is capped at
//! **8192 bytes** (4097–8192): one field then still fits one 8 KiB
//! datagram, the size the CDN workload and Cornflakes' jumbo frames use.
//! The shares sum to 99.96%; they are normalized.
//!
//! Each key holds a list whose length is uniform in `[min_len, max_len]`
//! (Cornflakes: 1, 1–4, 1–8, 1–16) and whose element sizes are drawn from
//! the histogram; a list whose total exceeds `max_total` (default 8192) is
//! redrawn, as the paper resamples lists larger than an MTU. Lists are a
//! pure function of (seed, key id) ([`key_rng`]). Requests read whole lists
//! (GetList / LRANGE / memcached multi-get of sub-keys); keys are 64 bytes,
//! popularity Zipf(`zipf`, default 0.99).

use super::dist::{key_rng, Buckets, Popularity};
use super::{KeyRef, Op, Workload};
use crate::load::Rng64;
use rand::RngExt;

/// Key prefix.
pub const PREFIX: &str = "ggl:";

/// The size buckets `(lo, hi, percent)`, last bucket capped at 8192.
pub const BUCKETS: [(u32, u32, f64); 9] = [
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

/// Google workload parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct GoogleConfig {
    /// Number of keys (default 100 000).
    pub keys: u64,
    /// Shortest list (default 1).
    pub min_len: u32,
    /// Longest list (default 8).
    pub max_len: u32,
    /// Largest list total in bytes; larger lists are redrawn (default 8192).
    pub max_total: u32,
    /// Zipf exponent of key popularity (default 0.99; 0 = uniform).
    pub zipf: f64,
    /// Key length (default 64).
    pub key_len: u16,
    /// Seed of the per-key size draws.
    pub seed: u64,
}

impl Default for GoogleConfig {
    fn default() -> Self {
        GoogleConfig {
            keys: 100_000,
            min_len: 1,
            max_len: 8,
            max_total: 8192,
            zipf: 0.99,
            key_len: 64,
            seed: 0x600613,
        }
    }
}

/// The Google bytes-size workload.
#[derive(Clone, Debug)]
pub struct Google {
    cfg: GoogleConfig,
    sizes: Buckets,
    pop: Popularity,
    scratch: Vec<u32>,
}

impl Google {
    /// A workload from its parameters.
    pub fn new(cfg: GoogleConfig) -> Result<Google, String> {
        if cfg.min_len == 0 || cfg.min_len > cfg.max_len {
            return Err(format!(
                "google: need 1 <= min_len <= max_len, got {}..{}",
                cfg.min_len, cfg.max_len
            ));
        }
        if cfg.max_total < cfg.max_len {
            return Err("google: max_total below max_len".into());
        }
        let pop = Popularity::new(cfg.keys, cfg.zipf)?;
        Ok(Google {
            cfg,
            sizes: Buckets::new(&BUCKETS),
            pop,
            scratch: Vec::new(),
        })
    }

    /// The size histogram.
    pub fn sizes(&self) -> &Buckets {
        &self.sizes
    }

    /// The element sizes of key `id`'s list, into `out` (cleared).
    pub fn list_of(&self, id: u64, out: &mut Vec<u32>) {
        let mut rng = key_rng(self.cfg.seed, id);
        let n = rng.random_range(self.cfg.min_len..=self.cfg.max_len);
        loop {
            out.clear();
            let mut total = 0u64;
            for _ in 0..n {
                let s = self.sizes.sample(&mut rng);
                total += u64::from(s);
                out.push(s);
            }
            if total <= u64::from(self.cfg.max_total) {
                return;
            }
        }
    }

    fn key(&self, id: u64) -> KeyRef {
        KeyRef::new(PREFIX, id, self.cfg.key_len)
    }
}

impl Workload for Google {
    fn describe(&self) -> String {
        let c = &self.cfg;
        format!(
            "google:keys={},list={}-{},max_total={},zipf={},key_len={}",
            c.keys, c.min_len, c.max_len, c.max_total, c.zipf, c.key_len
        )
    }

    fn load_count(&self) -> u64 {
        self.cfg.keys
    }

    fn load_op(&self, i: u64, op: &mut Op) {
        op.clear();
        let mut lens = Vec::new();
        self.list_of(i, &mut lens);
        op.put_list(self.key(i), lens);
    }

    fn next_op(&mut self, rng: &mut Rng64, op: &mut Op) {
        op.clear();
        let id = self.pop.sample(rng);
        let mut lens = std::mem::take(&mut self.scratch);
        self.list_of(id, &mut lens);
        op.get_list(self.key(id), lens.iter().copied());
        self.scratch = lens;
    }

    fn fork(&self, _thread: usize, _threads: usize) -> Box<dyn Workload> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_sizes_follow_the_buckets() {
        // Single-element lists with no total cap: elements are raw draws.
        let g = Google::new(GoogleConfig {
            max_len: 1,
            max_total: u32::MAX,
            ..Default::default()
        })
        .unwrap();
        let total: f64 = BUCKETS.iter().map(|b| b.2).sum();
        let mut counts = [0u32; 9];
        let mut v = Vec::new();
        let n = 200_000;
        for id in 0..n {
            g.list_of(id, &mut v);
            assert_eq!(v.len(), 1);
            counts[g.sizes().bucket_of(v[0]).expect("in a bucket")] += 1;
        }
        for (i, b) in BUCKETS.iter().enumerate() {
            let want = b.2 / total;
            let got = f64::from(counts[i]) / n as f64;
            // Binomial s.e. at n = 200k is < 0.0011; allow 4 s.e. + 2% relative.
            assert!(
                (got - want).abs() < 0.005 + 0.02 * want,
                "bucket {i}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn lists_have_their_lengths_and_caps() {
        let g = Google::new(GoogleConfig {
            min_len: 1,
            max_len: 16,
            ..Default::default()
        })
        .unwrap();
        let mut v = Vec::new();
        let mut seen = [false; 17];
        for id in 0..20_000 {
            g.list_of(id, &mut v);
            assert!((1..=16).contains(&v.len()));
            assert!(v.iter().map(|&x| u64::from(x)).sum::<u64>() <= 8192);
            seen[v.len()] = true;
            let mut again = Vec::new();
            g.list_of(id, &mut again);
            assert_eq!(v, again, "a key's list is a pure function of its id");
        }
        assert!(seen[1..].iter().all(|&s| s), "every length occurs");
    }
}
