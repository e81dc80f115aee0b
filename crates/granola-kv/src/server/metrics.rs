//! What the server cron ([`cron`](super::cron)) measures over time for
//! INFO: the peak of used memory and Redis's instantaneous rates
//! (commands, input and output bytes per second, each the mean of the
//! last 16 samples taken 100 ms apart, as Redis's `instantaneous_*`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Samples averaged, as Redis's `STATS_METRIC_SAMPLES`.
const SAMPLES: usize = 16;

/// One rate: per-second samples of a counter.
#[derive(Default)]
struct Rate {
    last: Option<(Instant, u64)>,
    samples: [f64; SAMPLES],
    at: usize,
}

impl Rate {
    fn sample(&mut self, now: Instant, value: u64) {
        if let Some((t, v)) = self.last {
            let secs = now.duration_since(t).as_secs_f64();
            if secs > 0.0 {
                self.samples[self.at % SAMPLES] = value.saturating_sub(v) as f64 / secs;
                self.at += 1;
            }
        }
        self.last = Some((now, value));
    }

    fn per_second(&self) -> f64 {
        self.samples.iter().sum::<f64>() / SAMPLES as f64
    }
}

/// The measured rates and peaks.
#[derive(Default)]
pub struct Metrics {
    peak_bytes: AtomicU64,
    rates: Mutex<[Rate; 3]>,
    expire_cut_short: AtomicU64,
}

/// The counters a sample reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Commands so far.
    pub commands: u64,
    /// Bytes received so far.
    pub input_bytes: u64,
    /// Bytes sent so far.
    pub output_bytes: u64,
}

impl Metrics {
    /// Takes one sample of `counts` and of used memory `used_bytes`.
    pub fn sample(&self, now: Instant, counts: Counts, used_bytes: u64) {
        self.note_memory(used_bytes);
        let mut r = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        r[0].sample(now, counts.commands);
        r[1].sample(now, counts.input_bytes);
        r[2].sample(now, counts.output_bytes);
    }

    /// Raises the peak to `used_bytes` if above it.
    pub fn note_memory(&self, used_bytes: u64) {
        self.peak_bytes.fetch_max(used_bytes, Ordering::Relaxed);
    }

    /// The most memory used at a sample (`used_memory_peak`).
    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes.load(Ordering::Relaxed)
    }

    /// (`instantaneous_ops_per_sec`, `instantaneous_input_kbps`,
    /// `instantaneous_output_kbps`).
    pub fn instantaneous(&self) -> (u64, f64, f64) {
        let r = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        (
            r[0].per_second().round() as u64,
            r[1].per_second() / 1024.0,
            r[2].per_second() / 1024.0,
        )
    }

    /// Counts an active expiry cycle that ran out of time before its turn
    /// was done (`expired_time_cap_reached_count`).
    pub fn expire_cut_short(&self) {
        self.expire_cut_short.fetch_add(1, Ordering::Relaxed);
    }

    /// Active expiry cycles cut short so far.
    pub fn expire_cut_short_count(&self) -> u64 {
        self.expire_cut_short.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rates_are_the_mean_of_sixteen_samples() {
        let m = Metrics::default();
        let t0 = Instant::now();
        let step = Duration::from_millis(100);
        // 1000 commands and 10 KiB in, 20 KiB out every 100 ms.
        for i in 0..=SAMPLES as u64 {
            let counts = Counts {
                commands: i * 1000,
                input_bytes: i * 10 * 1024,
                output_bytes: i * 20 * 1024,
            };
            m.sample(t0 + step * i as u32, counts, 100 + i);
        }
        let (ops, input, output) = m.instantaneous();
        assert_eq!(ops, 10_000);
        assert!((input - 100.0).abs() < 1e-6 && (output - 200.0).abs() < 1e-6);
        assert_eq!(m.peak_bytes(), 100 + SAMPLES as u64);
        m.note_memory(5);
        assert_eq!(m.peak_bytes(), 100 + SAMPLES as u64);
    }
}
