//! Facebook memcached pools ETC, USR, APP, VAR, SYS.
//!
//! Source: Atikoglu, Xu, Frachtenberg, Jiang, Paleczny, "Workload Analysis
//! of a Large-Scale Key-Value Store", SIGMETRICS'12 (as used by Hippos,
//! seed 002 §2.1 and Table 3).
//!
//! **Operation mixes** (Hippos Table 3, from the same traces; UPDATE = SET):
//!
//! | pool | GET | SET | DELETE |
//! |---|---|---|---|
//! | USR | 99.7% | 0.2% | 0.1% |
//! | ETC | 73.4% | 2.3% | 24.0% |
//! | APP | 83.4% | 5.2% | 11.4% |
//! | VAR | 18.0% | 82.0% | — |
//! | SYS | 67.5% | 32.5% | — |
//!
//! **ETC sizes** (Atikoglu §5, fitted models): key size
//! GEV(μ = 30.7984, σ = 8.20449, ξ = 0.078688); value size: with
//! probability 0.44155 one of the small sizes 0–14 B with the paper's
//! discrete weights ([`ETC_SMALL_VALUES`]), else 15 B + Generalized Pareto
//! (θ = 0, σ = 214.476, k = 0.348238) — the same split the YCSB and mutilate
//! ports of the model use.
//!
//! **USR**: two key sizes, 16 B and 21 B (equally likely — the paper gives
//! no split), and virtually one value size, 2 B.
//!
//! **APP, VAR, SYS: approximations.** The paper does not publish fitted
//! models for them; Hippos quotes their 99th-percentile key sizes (45, 30,
//! 45 B) and value sizes (450, 200, 640 B). We keep ETC's shapes and scale
//! them to those percentiles: keys GEV(μ, 0.2664·μ, 0.078688) with μ = p99 /
//! 2.477 (ETC's ratio σ/μ; p99 of that GEV = 2.477·μ), values Generalized
//! Pareto(0, σ, 0.348238) with σ = p99 / 11.40, without the discrete part.
//!
//! Keys are 8 bytes at least (our key spelling needs room for the id; a
//! shorter draw gives the shortest key that names the id) and values at most
//! 1 000 000 B (memcached's default item limit). Sizes are a pure function
//! of (pool, seed, key id); popularity is Zipf(`zipf`, default 0.99). A GET
//! that misses is refilled with a SET in the same op
//! ([`Workload::demand_fill`]), as a look-aside cache client does.

use super::dist::{key_rng, GenPareto, Gev, Popularity};
use super::{KeyRef, Op, Workload};
use crate::load::Rng64;
use rand::RngExt;

/// ETC's discrete small-value sizes 0..=14 and their probabilities
/// (Atikoglu et al.); they sum to 0.44155.
pub const ETC_SMALL_VALUES: [f64; 15] = [
    0.00536, 0.00047, 0.17820, 0.09239, 0.00018, 0.02740, 0.00065, 0.00606, 0.00023, 0.00837,
    0.00837, 0.08989, 0.00092, 0.00326, 0.01980,
];

/// Largest value generated.
pub const MAX_VALUE: u32 = 1_000_000;

/// The five pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// General-purpose, mixed sizes.
    Etc,
    /// User-account data: tiny values, almost all GETs.
    Usr,
    /// Application data.
    App,
    /// Server-side browser state: mostly SETs.
    Var,
    /// System data.
    Sys,
}

impl Pool {
    /// All pools.
    pub const ALL: [Pool; 5] = [Pool::Etc, Pool::Usr, Pool::App, Pool::Var, Pool::Sys];

    /// Parses `etc`, `usr`, `app`, `var`, `sys`.
    pub fn parse(s: &str) -> Result<Pool, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "etc" => Pool::Etc,
            "usr" => Pool::Usr,
            "app" => Pool::App,
            "var" => Pool::Var,
            "sys" => Pool::Sys,
            _ => return Err(format!("unknown pool {s:?} (etc, usr, app, var, sys)")),
        })
    }

    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Pool::Etc => "etc",
            Pool::Usr => "usr",
            Pool::App => "app",
            Pool::Var => "var",
            Pool::Sys => "sys",
        }
    }

    /// Key prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            Pool::Etc => "etc:",
            Pool::Usr => "usr:",
            Pool::App => "app:",
            Pool::Var => "var:",
            Pool::Sys => "sys:",
        }
    }

    /// `(GET, SET, DELETE)` fractions, normalized to sum to 1 (ETC's
    /// published shares sum to 99.7%).
    pub fn mix(self) -> (f64, f64, f64) {
        let (g, s, d) = self.published_mix();
        let t = g + s + d;
        (g / t, s / t, d / t)
    }

    /// `(GET, SET, DELETE)` as published (Hippos Table 3).
    pub fn published_mix(self) -> (f64, f64, f64) {
        match self {
            Pool::Usr => (0.997, 0.002, 0.001),
            Pool::Etc => (0.734, 0.023, 0.240),
            Pool::App => (0.834, 0.052, 0.114),
            Pool::Var => (0.180, 0.820, 0.0),
            Pool::Sys => (0.675, 0.325, 0.0),
        }
    }

    fn scaled(p99_key: f64, p99_value: f64) -> (Gev, GenPareto) {
        let mu = p99_key / 2.477;
        (
            Gev {
                mu,
                sigma: 0.2664 * mu,
                xi: 0.078688,
            },
            GenPareto {
                theta: 0.0,
                sigma: p99_value / 11.40,
                k: 0.348238,
            },
        )
    }

    /// `(key size, value size)` of key `id` under `seed`.
    pub fn sizes(self, seed: u64, id: u64) -> (u16, u32) {
        let mut rng = key_rng(seed ^ ((self as u64) << 56), id);
        let (key, value) = match self {
            Pool::Usr => {
                let k = if rng.random::<bool>() { 16.0 } else { 21.0 };
                (k, 2.0)
            }
            Pool::Etc => {
                let k = Gev {
                    mu: 30.7984,
                    sigma: 8.20449,
                    xi: 0.078688,
                }
                .sample(&mut rng);
                let u: f64 = rng.random();
                let mut acc = 0.0;
                let mut v = None;
                for (size, p) in ETC_SMALL_VALUES.iter().enumerate() {
                    acc += p;
                    if u < acc {
                        v = Some(size as f64);
                        break;
                    }
                }
                let v = v.unwrap_or_else(|| {
                    15.0 + GenPareto {
                        theta: 0.0,
                        sigma: 214.476,
                        k: 0.348238,
                    }
                    .sample(&mut rng)
                });
                (k, v)
            }
            Pool::App => {
                let (k, v) = Self::scaled(45.0, 450.0);
                (k.sample(&mut rng), v.sample(&mut rng))
            }
            Pool::Var => {
                let (k, v) = Self::scaled(30.0, 200.0);
                (k.sample(&mut rng), v.sample(&mut rng))
            }
            Pool::Sys => {
                let (k, v) = Self::scaled(45.0, 640.0);
                (k.sample(&mut rng), v.sample(&mut rng))
            }
        };
        (
            key.round().clamp(8.0, 250.0) as u16,
            (value.round() as u32).min(MAX_VALUE),
        )
    }
}

/// Facebook pool parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct FacebookConfig {
    /// The pool.
    pub pool: Pool,
    /// Number of keys (default 100 000).
    pub keys: u64,
    /// Zipf exponent (0.99).
    pub zipf: f64,
    /// Seed of the size draws.
    pub seed: u64,
}

impl Default for FacebookConfig {
    fn default() -> Self {
        FacebookConfig {
            pool: Pool::Etc,
            keys: 100_000,
            zipf: 0.99,
            seed: 0xfb,
        }
    }
}

/// A Facebook pool workload.
#[derive(Clone, Debug)]
pub struct Facebook {
    cfg: FacebookConfig,
    pop: Popularity,
}

impl Facebook {
    /// A workload from its parameters.
    pub fn new(cfg: FacebookConfig) -> Result<Facebook, String> {
        Ok(Facebook {
            pop: Popularity::new(cfg.keys, cfg.zipf)?,
            cfg,
        })
    }

    fn key_and_len(&self, id: u64) -> (KeyRef, u32) {
        let (ks, vs) = self.cfg.pool.sizes(self.cfg.seed, id);
        (KeyRef::new(self.cfg.pool.prefix(), id, ks), vs)
    }
}

impl Workload for Facebook {
    fn describe(&self) -> String {
        let c = &self.cfg;
        format!("fb:pool={},keys={},zipf={}", c.pool.name(), c.keys, c.zipf)
    }

    fn load_count(&self) -> u64 {
        self.cfg.keys
    }

    fn load_op(&self, i: u64, op: &mut Op) {
        op.clear();
        let (k, l) = self.key_and_len(i);
        op.set(k, l);
    }

    fn next_op(&mut self, rng: &mut Rng64, op: &mut Op) {
        op.clear();
        let (k, l) = self.key_and_len(self.pop.sample(rng));
        let (get, set, _) = self.cfg.pool.mix();
        let u: f64 = rng.random();
        if u < get {
            op.get(k, l);
        } else if u < get + set {
            op.set(k, l);
        } else {
            op.delete(k);
        }
    }

    fn fork(&self, _thread: usize, _threads: usize) -> Box<dyn Workload> {
        Box::new(self.clone())
    }

    /// Memcached at Facebook is a demand-filled look-aside cache: a GET miss
    /// is followed by a SET (Nishtala et al., NSDI'13), which keeps ETC's 24%
    /// DELETEs from draining the working set.
    fn demand_fill(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Cmd;
    use rand::SeedableRng;

    #[test]
    fn etc_sizes_follow_the_model() {
        let n = 200_000u64;
        let mut small = [0u32; 15];
        let mut keys = Vec::new();
        let mut big = Vec::new();
        for id in 0..n {
            let (k, v) = Pool::Etc.sizes(1, id);
            keys.push(f64::from(k));
            if v < 15 {
                small[v as usize] += 1;
            } else {
                big.push(f64::from(v - 15));
            }
        }
        let p_small = f64::from(small.iter().sum::<u32>()) / n as f64;
        assert!((p_small - 0.44155).abs() < 0.01, "{p_small}");
        let p2 = f64::from(small[2]) / n as f64;
        assert!((p2 - 0.1782).abs() < 0.01, "{p2}");
        keys.sort_by(f64::total_cmp);
        let median = keys[keys.len() / 2];
        assert!((median - 34.0).abs() <= 1.0, "key median {median}");
        big.sort_by(f64::total_cmp);
        let gpd = GenPareto {
            theta: 0.0,
            sigma: 214.476,
            k: 0.348238,
        };
        let med = big[big.len() / 2];
        assert!(
            (med - gpd.quantile(0.5)).abs() / gpd.quantile(0.5) < 0.05,
            "{med}"
        );
    }

    #[test]
    fn mixes_and_scaled_percentiles() {
        for pool in Pool::ALL {
            let (g, s, d) = pool.mix();
            assert!((g + s + d - 1.0).abs() < 1e-9, "{pool:?}");
            let mut w = Facebook::new(FacebookConfig {
                pool,
                keys: 1000,
                ..Default::default()
            })
            .unwrap();
            let mut rng = Rng64::seed_from_u64(5);
            let mut op = Op::default();
            let mut c = [0u32; 3];
            let n = 100_000;
            for _ in 0..n {
                w.next_op(&mut rng, &mut op);
                c[match op.cmds[0] {
                    Cmd::Get { .. } => 0,
                    Cmd::Set { .. } => 1,
                    Cmd::Delete { .. } => 2,
                    ref x => panic!("{x:?}"),
                }] += 1;
            }
            for (i, want) in [g, s, d].into_iter().enumerate() {
                let got = f64::from(c[i]) / f64::from(n);
                assert!(
                    (got - want).abs() < 0.01,
                    "{pool:?} op {i}: {got} vs {want}"
                );
            }
        }
        assert!(matches!(Pool::Usr.sizes(0, 3), (16 | 21, 2)));
        // APP: p99 of values near 450 B.
        let mut v: Vec<u32> = (0..100_000).map(|id| Pool::App.sizes(2, id).1).collect();
        v.sort_unstable();
        let p99 = f64::from(v[99_000]);
        assert!((p99 - 450.0).abs() / 450.0 < 0.1, "APP p99 {p99}");
    }
}
