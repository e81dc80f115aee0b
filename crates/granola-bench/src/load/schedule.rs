//! Open-loop arrival schedules.
//!
//! Each client thread draws its own Poisson process: inter-arrival gaps
//! are exponential with mean `1 / rate`, accumulated in nanoseconds since
//! the run's start. The schedule says when a request *should* be sent; the
//! load generator sends it then, or as soon as it can when late, and
//! measures latency from the scheduled time, so a stalled client or server
//! shows up as latency instead of silently lowering the offered load
//! (no coordinated omission).

use rand::RngExt;
use rand_distr::{Distribution, Exp};

use super::Rng64;

/// A Poisson arrival process: exponential gaps at `rate` per second.
#[derive(Debug)]
pub struct PoissonSchedule {
    exp: Exp<f64>,
    /// Next arrival, in ns since the start (fractional part kept).
    next_ns: f64,
}

impl PoissonSchedule {
    /// A schedule at `rate` arrivals per second (must be > 0), starting at 0.
    pub fn new(rate: f64) -> PoissonSchedule {
        assert!(rate > 0.0 && rate.is_finite(), "rate must be positive");
        PoissonSchedule {
            exp: Exp::new(rate / 1e9).expect("positive rate"),
            next_ns: 0.0,
        }
    }

    /// Draws the first gap: the process starts at a random phase, so
    /// threads do not all send at t = 0.
    pub fn start(&mut self, rng: &mut Rng64) {
        self.next_ns = self.exp.sample(rng);
    }

    /// The current arrival time in ns since the start.
    #[inline]
    pub fn peek(&self) -> u64 {
        self.next_ns as u64
    }

    /// Returns the current arrival time and advances to the next.
    #[inline]
    pub fn advance(&mut self, rng: &mut Rng64) -> u64 {
        let t = self.next_ns as u64;
        self.next_ns += self.exp.sample(rng);
        t
    }
}

/// A uniform draw in `[0, 1)` (helper for samplers).
#[inline]
pub fn unit(rng: &mut Rng64) -> f64 {
    rng.random::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn mean_rate_within_tolerance() {
        for &rate in &[1_000.0, 100_000.0, 2_000_000.0] {
            let mut rng = Rng64::seed_from_u64(42);
            let mut s = PoissonSchedule::new(rate);
            s.start(&mut rng);
            let n = 200_000u64;
            let mut last = 0;
            let mut gaps_sq = 0.0;
            let mut prev = s.advance(&mut rng);
            for _ in 0..n {
                let t = s.advance(&mut rng);
                assert!(t >= prev, "arrivals are non-decreasing");
                let g = (t - prev) as f64;
                gaps_sq += g * g;
                prev = t;
                last = t;
            }
            let measured = n as f64 / (last as f64 / 1e9);
            let err = (measured - rate).abs() / rate;
            // 200k exponential gaps: relative s.e. of the mean ~0.22%.
            assert!(err < 0.01, "rate {rate}: measured {measured} ({err:.4})");
            // Exponential: E[g^2] = 2 mean^2 (coefficient of variation 1).
            let mean = last as f64 / n as f64;
            let cv2 = gaps_sq / n as f64 / (mean * mean) - 1.0;
            assert!((cv2 - 1.0).abs() < 0.05, "rate {rate}: squared CV {cv2}");
        }
    }
}
