//! Size and popularity distributions, sampled by inverse transform from
//! one uniform draw (so a per-key RNG gives each key a fixed size).

use rand::RngExt;
use rand_distr::{Distribution, Zipf};

use crate::load::value::mix64;
use crate::load::Rng64;
use rand::SeedableRng;

/// A uniform draw in `(0, 1]` (never 0, so logs and negative powers are
/// finite).
#[inline]
pub fn unit_open(rng: &mut Rng64) -> f64 {
    1.0 - rng.random::<f64>()
}

/// An RNG private to one key of one workload: sizes drawn from it are a
/// pure function of `(seed, id)`, so the loader and every client thread
/// agree on them without sharing state.
pub fn key_rng(seed: u64, id: u64) -> Rng64 {
    Rng64::seed_from_u64(mix64(seed ^ mix64(id.wrapping_add(0x51_7cc1_b727_220a))))
}

/// Generalized extreme value distribution (location `mu`, scale `sigma`,
/// shape `xi != 0`): `x = mu + sigma/xi * ((-ln u)^-xi - 1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gev {
    /// Location.
    pub mu: f64,
    /// Scale.
    pub sigma: f64,
    /// Shape.
    pub xi: f64,
}

impl Gev {
    /// The quantile at `u` in (0, 1).
    pub fn quantile(&self, u: f64) -> f64 {
        self.mu + self.sigma / self.xi * ((-u.ln()).powf(-self.xi) - 1.0)
    }

    /// A sample.
    pub fn sample(&self, rng: &mut Rng64) -> f64 {
        let u = unit_open(rng).min(1.0 - 1e-12);
        self.quantile(u)
    }
}

/// Generalized Pareto distribution (location `theta`, scale `sigma`, shape
/// `k != 0`): `x = theta + sigma/k * (u^-k - 1)`; mean `theta + sigma/(1-k)`
/// for `k < 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GenPareto {
    /// Location.
    pub theta: f64,
    /// Scale.
    pub sigma: f64,
    /// Shape.
    pub k: f64,
}

impl GenPareto {
    /// The quantile at `p` in [0, 1).
    pub fn quantile(&self, p: f64) -> f64 {
        self.theta + self.sigma / self.k * ((1.0 - p).powf(-self.k) - 1.0)
    }

    /// The mean (finite for `k < 1`).
    pub fn mean(&self) -> f64 {
        self.theta + self.sigma / (1.0 - self.k)
    }

    /// A sample.
    pub fn sample(&self, rng: &mut Rng64) -> f64 {
        self.quantile(1.0 - unit_open(rng))
    }
}

/// Bounded (truncated) Pareto on `[lo, hi]` with shape `alpha`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoundedPareto {
    /// Smallest value.
    pub lo: f64,
    /// Largest value.
    pub hi: f64,
    /// Tail index.
    pub alpha: f64,
}

impl BoundedPareto {
    /// The quantile at `p` in [0, 1].
    pub fn quantile(&self, p: f64) -> f64 {
        let (l, h, a) = (self.lo, self.hi, self.alpha);
        let la = l.powf(a);
        let ha = h.powf(a);
        // Inverse of F(x) = (1 - (l/x)^a) / (1 - (l/h)^a).
        (-(p * ha - p * la - ha) / (ha * la)).powf(-1.0 / a)
    }

    /// The mean (closed form).
    pub fn mean(&self) -> f64 {
        let (l, h, a) = (self.lo, self.hi, self.alpha);
        if (a - 1.0).abs() < 1e-12 {
            return h * l / (h - l) * (h / l).ln();
        }
        let la = l.powf(a);
        la / (1.0 - (l / h).powf(a)) * (a / (a - 1.0)) * (l.powf(1.0 - a) - h.powf(1.0 - a))
    }

    /// A sample.
    pub fn sample(&self, rng: &mut Rng64) -> f64 {
        self.quantile(rng.random::<f64>())
    }

    /// The shape `alpha` giving mean `mean` on `[lo, hi]` (bisection; the
    /// mean falls as alpha grows).
    pub fn alpha_for_mean(lo: f64, hi: f64, mean: f64) -> f64 {
        let (mut a, mut b) = (0.01, 5.0);
        for _ in 0..200 {
            let m = 0.5 * (a + b);
            if (BoundedPareto { lo, hi, alpha: m }).mean() > mean {
                a = m;
            } else {
                b = m;
            }
        }
        0.5 * (a + b)
    }
}

/// Log-uniform on `[lo, hi]`: `ln x` uniform; mean `(hi - lo) / ln(hi/lo)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogUniform {
    /// Smallest value.
    pub lo: f64,
    /// Largest value.
    pub hi: f64,
}

impl LogUniform {
    /// A sample.
    pub fn sample(&self, rng: &mut Rng64) -> f64 {
        (self.lo.ln() + rng.random::<f64>() * (self.hi / self.lo).ln()).exp()
    }

    /// The mean.
    pub fn mean(&self) -> f64 {
        (self.hi - self.lo) / (self.hi / self.lo).ln()
    }
}

/// A histogram distribution: bucket `i` (inclusive range `ranges[i]`) has
/// weight `weights[i]`; within a bucket sizes are uniform.
#[derive(Clone, Debug, PartialEq)]
pub struct Buckets {
    ranges: Vec<(u32, u32)>,
    /// Cumulative, normalized to end at 1.
    cdf: Vec<f64>,
}

impl Buckets {
    /// Buckets from `(lo, hi, weight)`; weights need not sum to 1.
    pub fn new(spec: &[(u32, u32, f64)]) -> Buckets {
        let total: f64 = spec.iter().map(|b| b.2).sum();
        let mut acc = 0.0;
        let mut cdf = Vec::with_capacity(spec.len());
        for b in spec {
            acc += b.2 / total;
            cdf.push(acc);
        }
        if let Some(last) = cdf.last_mut() {
            *last = 1.0;
        }
        Buckets {
            ranges: spec.iter().map(|b| (b.0, b.1)).collect(),
            cdf,
        }
    }

    /// The buckets' inclusive ranges.
    pub fn ranges(&self) -> &[(u32, u32)] {
        &self.ranges
    }

    /// Normalized probability of bucket `i`.
    pub fn prob(&self, i: usize) -> f64 {
        self.cdf[i] - if i == 0 { 0.0 } else { self.cdf[i - 1] }
    }

    /// Index of the bucket holding `size`, if any.
    pub fn bucket_of(&self, size: u32) -> Option<usize> {
        self.ranges
            .iter()
            .position(|&(lo, hi)| (lo..=hi).contains(&size))
    }

    /// A sample.
    pub fn sample(&self, rng: &mut Rng64) -> u32 {
        let u: f64 = rng.random();
        let i = self
            .cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1);
        let (lo, hi) = self.ranges[i];
        rng.random_range(lo..=hi)
    }
}

/// Key popularity: Zipf over ranks `1..=n` with exponent `s`
/// (`rand_distr::Zipf`, rejection-inversion sampling), or uniform when
/// `s == 0`. Returns a key id in `0..n` (id = rank − 1: the server hashes
/// keys, so where the hot ids sit does not matter).
#[derive(Clone, Debug)]
pub struct Popularity {
    n: u64,
    zipf: Option<Zipf<f64>>,
}

impl Popularity {
    /// Zipf(`s`) over `n` keys (`s = 0`: uniform).
    pub fn new(n: u64, s: f64) -> Result<Popularity, String> {
        if n == 0 {
            return Err("need at least one key".into());
        }
        let zipf = if s > 0.0 {
            Some(Zipf::new(n as f64, s).map_err(|e| format!("zipf({n}, {s}): {e}"))?)
        } else {
            None
        };
        Ok(Popularity { n, zipf })
    }

    /// Number of keys.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// A key id in `0..n`.
    #[inline]
    pub fn sample(&self, rng: &mut Rng64) -> u64 {
        match &self.zipf {
            Some(z) => (z.sample(rng) as u64).clamp(1, self.n) - 1,
            None => rng.random_range(0..self.n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng() -> Rng64 {
        Rng64::seed_from_u64(7)
    }

    #[test]
    fn zipf_rank_frequencies_follow_the_law() {
        let n = 1000u64;
        let s = 0.99;
        let p = Popularity::new(n, s).unwrap();
        let mut r = rng();
        let draws = 1_000_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            counts[p.sample(&mut r) as usize] += 1;
        }
        let h: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        for rank in [1usize, 2, 5, 10, 100] {
            let want = (rank as f64).powf(-s) / h;
            let got = counts[rank - 1] as f64 / draws as f64;
            assert!(
                (got - want).abs() / want < 0.1,
                "rank {rank}: {got} vs {want}"
            );
        }
        // The top 10% of keys take the share the law gives them.
        let top: u64 = counts[..100].iter().sum();
        let want: f64 = (1..=100).map(|k| (k as f64).powf(-s)).sum::<f64>() / h;
        let got = top as f64 / draws as f64;
        assert!((got - want).abs() < 0.01, "top-100 share {got} vs {want}");
        let u = Popularity::new(10, 0.0).unwrap();
        assert!((0..1000).all(|_| u.sample(&mut r) < 10));
    }

    #[test]
    fn gev_and_gpd_match_their_quantiles() {
        let g = Gev {
            mu: 30.7984,
            sigma: 8.20449,
            xi: 0.078688,
        };
        let mut r = rng();
        let mut v: Vec<f64> = (0..200_000).map(|_| g.sample(&mut r)).collect();
        v.sort_by(f64::total_cmp);
        for q in [0.1, 0.5, 0.9, 0.99] {
            let got = v[(q * v.len() as f64) as usize];
            let want = g.quantile(q);
            assert!(
                (got - want).abs() / want < 0.02,
                "GEV q{q}: {got} vs {want}"
            );
        }
        // Median of GEV = mu + sigma/xi ((ln 2)^-xi - 1) ≈ 33.9 for ETC keys.
        assert!((g.quantile(0.5) - 33.87).abs() < 0.1, "{}", g.quantile(0.5));
        let p = GenPareto {
            theta: 0.0,
            sigma: 214.476,
            k: 0.348238,
        };
        let mut v: Vec<f64> = (0..200_000).map(|_| p.sample(&mut r)).collect();
        v.sort_by(f64::total_cmp);
        for q in [0.1, 0.5, 0.9] {
            let got = v[(q * v.len() as f64) as usize];
            let want = p.quantile(q);
            assert!(
                (got - want).abs() / want < 0.03,
                "GPD q{q}: {got} vs {want}"
            );
        }
        assert!((p.mean() - 329.1).abs() < 0.5, "{}", p.mean());
    }

    #[test]
    fn bounded_pareto_mean_and_bounds() {
        let a = BoundedPareto::alpha_for_mean(1000.0, 116e6, 20_000.0);
        let d = BoundedPareto {
            lo: 1000.0,
            hi: 116e6,
            alpha: a,
        };
        assert!((d.mean() - 20_000.0).abs() < 1.0);
        assert!((d.quantile(0.0) - 1000.0).abs() < 1e-6);
        assert!((d.quantile(1.0) - 116e6).abs() / 116e6 < 1e-9);
        // Closed form against a numeric integral of the quantile function.
        let steps = 2_000_000;
        let num: f64 = (0..steps)
            .map(|i| d.quantile((i as f64 + 0.5) / steps as f64))
            .sum::<f64>()
            / steps as f64;
        assert!(
            (num - d.mean()).abs() / d.mean() < 0.02,
            "{num} vs {}",
            d.mean()
        );
        let lu = LogUniform { lo: 8.0, hi: 512.0 };
        let mut r = rng();
        let m: f64 = (0..200_000).map(|_| lu.sample(&mut r)).sum::<f64>() / 200_000.0;
        assert!(
            (m - lu.mean()).abs() / lu.mean() < 0.02,
            "{m} vs {}",
            lu.mean()
        );
    }

    #[test]
    fn buckets_hit_their_weights() {
        let b = Buckets::new(&[(1, 8, 3.0), (9, 16, 1.0)]);
        let mut r = rng();
        let mut c = [0u32; 2];
        for _ in 0..100_000 {
            let s = b.sample(&mut r);
            c[b.bucket_of(s).unwrap()] += 1;
        }
        assert!((f64::from(c[0]) / 100_000.0 - 0.75).abs() < 0.01, "{c:?}");
        assert!((b.prob(1) - 0.25).abs() < 1e-12);
    }
}
