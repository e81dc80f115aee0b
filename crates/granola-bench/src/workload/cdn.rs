//! CDN objects split into sub-objects (Cornflakes Table 2).
//!
//! Cornflakes drew 1 M object sizes from the Tragen generator's "image"
//! class: between 1000 bytes and about 116 MB, mean about 20 KB. Tragen's
//! footprint descriptors are not reproduced here; instead sizes follow a
//! **bounded Pareto** on [1000 B, 116 MB] whose tail index is solved so the
//! mean is exactly `mean` (default 20 000 B; α ≈ 0.85 — heavy-tailed: median
//! ≈ 2.3 KB, a few objects of many MB). Sizes are a pure function of
//! (seed, object id).
//!
//! Each object is stored as a vector of `sub` = 8192-byte sub-objects (the
//! last one shorter) under one 64-byte key. One op fetches a whole object:
//! one GetFromList per sub-object, all sent at the op's scheduled time, so
//! the achieved op rate is **whole objects per second**. On memcached the
//! sub-objects are sub-keys (`key.i`), on Redis list elements (`LINDEX`).
//! Object popularity: Zipf(`zipf`, default 0.99; 0 = uniform).
//!
//! Loading writes the first up to 256 sub-objects with one PutList and
//! appends the rest one by one, so no load message exceeds 2 MiB.

use super::dist::{key_rng, BoundedPareto, Popularity};
use super::{Cmd, KeyRef, Op, Workload};
use crate::load::Rng64;

/// Key prefix.
pub const PREFIX: &str = "cdn:";

/// Sub-objects written by the first PutList of a load.
pub const LOAD_CHUNK: u32 = 256;

/// CDN parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct CdnConfig {
    /// Number of objects (default 10 000, ≈ 200 MB).
    pub objects: u64,
    /// Smallest object (1000 B).
    pub min: f64,
    /// Largest object (116 MB).
    pub max: f64,
    /// Mean object size (20 000 B).
    pub mean: f64,
    /// Sub-object size (8192 B).
    pub sub: u32,
    /// Zipf exponent of object popularity (0.99).
    pub zipf: f64,
    /// Key length (64).
    pub key_len: u16,
    /// Seed of the size draws.
    pub seed: u64,
}

impl Default for CdnConfig {
    fn default() -> Self {
        CdnConfig {
            objects: 10_000,
            min: 1000.0,
            max: 116e6,
            mean: 20_000.0,
            sub: 8192,
            zipf: 0.99,
            key_len: 64,
            seed: 0xcd0,
        }
    }
}

/// The CDN workload.
#[derive(Clone, Debug)]
pub struct Cdn {
    cfg: CdnConfig,
    sizes: BoundedPareto,
    pop: Popularity,
}

impl Cdn {
    /// A workload from its parameters.
    pub fn new(cfg: CdnConfig) -> Result<Cdn, String> {
        if !(cfg.min > 0.0 && cfg.min < cfg.mean && cfg.mean < cfg.max) || cfg.sub == 0 {
            return Err("cdn: need 0 < min < mean < max and sub > 0".into());
        }
        let alpha = BoundedPareto::alpha_for_mean(cfg.min, cfg.max, cfg.mean);
        Ok(Cdn {
            sizes: BoundedPareto {
                lo: cfg.min,
                hi: cfg.max,
                alpha,
            },
            pop: Popularity::new(cfg.objects, cfg.zipf)?,
            cfg,
        })
    }

    /// The size distribution.
    pub fn distribution(&self) -> BoundedPareto {
        self.sizes
    }

    /// Size of object `id` in bytes.
    pub fn size_of(&self, id: u64) -> u32 {
        let mut rng = key_rng(self.cfg.seed, id);
        (self.sizes.sample(&mut rng).round() as u64).clamp(1, u64::from(u32::MAX)) as u32
    }

    /// Number of sub-objects of an object of `size` bytes, and the last one's length.
    pub fn pieces(&self, size: u32) -> (u32, u32) {
        let n = size.div_ceil(self.cfg.sub).max(1);
        (n, size - self.cfg.sub * (n - 1))
    }

    fn key(&self, id: u64) -> KeyRef {
        KeyRef::new(PREFIX, id, self.cfg.key_len)
    }
}

impl Workload for Cdn {
    fn describe(&self) -> String {
        let c = &self.cfg;
        format!(
            "cdn:objects={},min={},max={},mean={},alpha={:.4},sub={},zipf={}",
            c.objects, c.min, c.max, c.mean, self.sizes.alpha, c.sub, c.zipf
        )
    }

    fn load_count(&self) -> u64 {
        self.cfg.objects
    }

    fn load_op(&self, i: u64, op: &mut Op) {
        op.clear();
        let (n, last) = self.pieces(self.size_of(i));
        let sub = self.cfg.sub;
        let len = |j: u32| if j + 1 == n { last } else { sub };
        let key = self.key(i);
        op.put_list(key, (0..n.min(LOAD_CHUNK)).map(len));
        for j in LOAD_CHUNK..n {
            op.cmds.push(Cmd::Append {
                key,
                index: j,
                len: len(j),
            });
        }
    }

    fn next_op(&mut self, rng: &mut Rng64, op: &mut Op) {
        op.clear();
        let id = self.pop.sample(rng);
        let (n, last) = self.pieces(self.size_of(id));
        let key = self.key(id);
        for j in 0..n {
            let len = if j + 1 == n { last } else { self.cfg.sub };
            op.cmds.push(Cmd::GetFromList { key, index: j, len });
        }
    }

    fn fork(&self, _thread: usize, _threads: usize) -> Box<dyn Workload> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn object_sizes_have_the_paper_range_and_mean() {
        let c = Cdn::new(CdnConfig::default()).unwrap();
        let d = c.distribution();
        assert!((d.mean() - 20_000.0).abs() < 1.0);
        assert!(d.alpha > 0.5 && d.alpha < 1.2, "alpha {}", d.alpha);
        let n = 1_000_000u64;
        let (mut sum, mut min, mut max) = (0f64, u32::MAX, 0u32);
        for id in 0..n {
            let s = c.size_of(id);
            sum += f64::from(s);
            min = min.min(s);
            max = max.max(s);
        }
        let mean = sum / n as f64;
        // Heavy tail: the sample mean's s.e. at 1 M draws is ~3%; the seed is
        // fixed, so this does not flake.
        assert!((mean - 20_000.0).abs() / 20_000.0 < 0.15, "mean {mean}");
        assert!(min >= 1000 && f64::from(max) <= 116e6, "{min} {max}");
        assert!(max > 1_000_000, "the tail reaches MBs: {max}");
    }

    #[test]
    fn an_op_fetches_every_sub_object() {
        let mut c = Cdn::new(CdnConfig {
            objects: 50,
            ..Default::default()
        })
        .unwrap();
        let mut rng = Rng64::seed_from_u64(9);
        let mut op = Op::default();
        for _ in 0..100 {
            c.next_op(&mut rng, &mut op);
            let mut total = 0u64;
            let mut id = None;
            for (j, cmd) in op.cmds.iter().enumerate() {
                let Cmd::GetFromList { key, index, len } = *cmd else {
                    panic!("{cmd:?}")
                };
                assert_eq!(index as usize, j);
                assert!(len <= 8192 && len > 0);
                assert!(id.is_none_or(|i| i == key.id));
                id = Some(key.id);
                total += u64::from(len);
            }
            assert_eq!(total, u64::from(c.size_of(id.unwrap())));
        }
        // Loading a big object: one PutList of 256, then appends.
        let big = (0..10_000)
            .find(|&i| c.size_of(i) > 3 << 20)
            .expect("a >3 MB object");
        c.load_op(big, &mut op);
        assert!(matches!(op.cmds[0], Cmd::PutList { n: LOAD_CHUNK, .. }));
        assert!(matches!(
            op.cmds[1],
            Cmd::Append {
                index: LOAD_CHUNK,
                ..
            }
        ));
    }
}
