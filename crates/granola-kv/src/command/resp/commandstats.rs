//! One server's command statistics: per command and subcommand its calls,
//! refusals and failures, an estimate of the time spent in it (INFO
//! commandstats), and a latency histogram (INFO latencystats, `LATENCY
//! HISTOGRAM`). `CONFIG RESETSTAT` zeroes them.
//!
//! Counters are striped over threads so concurrent calls do not share a
//! cache line; calls are counted without a locked instruction (see
//! [`crate::stripe`]), so `CONFIG RESETSTAT` moves each stripe's base to
//! its call count instead of zeroing it. One call in 16 is timed: two
//! clock reads on every command would cost the pipelined hot path several
//! percent, and a sample of one in 16 gives the mean and the percentiles
//! of a command called a few thousand times. The histograms hold those
//! timed calls only, so `LATENCY HISTOGRAM`'s `calls` counts them, not
//! every call (INFO commandstats has every call).
//!
//! Histograms are HdrHistograms with Redis's bounds (1 ns to 1 s, two
//! significant digits), so percentiles and buckets read as Redis's do.

use super::table::{self, Spec};
use crate::stripe::Stripe as Mine;
use hdrhistogram::Histogram;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

const STRIPES: usize = 8;

/// One call in this many is timed.
const SAMPLE_EVERY: u64 = 16;

/// The histograms' range (ns) and precision, as Redis's.
const LOWEST_NS: u64 = 1;
const HIGHEST_NS: u64 = 1_000_000_000;
const SIGNIFICANT_DIGITS: u8 = 2;

/// Redis's default `latency-tracking-info-percentiles`.
const DEFAULT_PERCENTILES: [f64; 3] = [50.0, 99.0, 99.9];

#[repr(align(64))]
#[derive(Default)]
struct Stripe {
    /// Calls ever counted here (never zeroed; see `base`).
    calls: AtomicU64,
    /// `calls` at the last reset (written by the reset only).
    base: AtomicU64,
    timed: AtomicU64,
    timed_ns: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
}

impl Stripe {
    /// Calls since the last reset.
    fn calls(&self) -> u64 {
        let calls = self.calls.load(Ordering::Relaxed);
        calls.saturating_sub(self.base.load(Ordering::Relaxed))
    }

    /// The counters a reset zeroes (all but the call count).
    fn zeroed(&self) -> [&AtomicU64; 4] {
        [&self.timed, &self.timed_ns, &self.rejected, &self.failed]
    }
}

/// A histogram of one command's timed calls, made at its first.
type Latency = OnceLock<Mutex<Histogram<u64>>>;

/// One server's command statistics, a row per [`table::all`] entry.
pub struct CommandStats {
    rows: Box<[[Stripe; STRIPES]]>,
    latency: Box<[Latency]>,
    /// `latency-tracking`: timed calls go into the histograms.
    tracking: AtomicBool,
    /// `latency-tracking-info-percentiles`: what INFO latencystats shows.
    percentiles: Mutex<Vec<f64>>,
}

impl Default for CommandStats {
    fn default() -> CommandStats {
        CommandStats {
            rows: table::all().map(|_| Default::default()).collect(),
            latency: table::all().map(|_| OnceLock::new()).collect(),
            tracking: AtomicBool::new(true),
            percentiles: Mutex::new(DEFAULT_PERCENTILES.to_vec()),
        }
    }
}

/// One command's statistics.
pub struct CallStats {
    /// Calls so far.
    pub calls: u64,
    /// Estimated microseconds spent in them: the timed calls' mean times
    /// every call.
    pub usec: u64,
    /// Refused before running ([`CommandStats::reject`]).
    pub rejected: u64,
    /// Ran and answered with an error.
    pub failed: u64,
}

impl CommandStats {
    /// This thread's stripe of `spec`'s row, and where it counts.
    #[inline]
    fn stripe_of(&self, spec: &'static Spec) -> Option<(&Stripe, Mine)> {
        let row = self.rows.get(table::row(spec)?)?;
        let mine = Mine::mine(STRIPES);
        Some((&row[mine.index], mine))
    }

    #[inline]
    fn stripe(&self, spec: &'static Spec) -> Option<&Stripe> {
        self.stripe_of(spec).map(|(s, _)| s)
    }

    /// Counts a call of `spec` as it begins; `Some(now)` for the one call in 16 that is timed,
    /// the first after a reset included.
    /// Redis counts a call once it has run, so a command does not see
    /// itself: INFO and `CONFIG RESETSTAT` make up for that
    /// ([`calls`](Self::calls), [`reset`](Self::reset)).
    #[inline]
    pub fn begin(&self, spec: &'static Spec) -> Option<Instant> {
        let (s, mine) = self.stripe_of(spec)?;
        let n = mine.bump(&s.calls);
        let since_reset = n.wrapping_sub(s.base.load(Ordering::Relaxed));
        (since_reset % SAMPLE_EVERY == 0).then(Instant::now)
    }

    /// After a call [`begin`](Self::begin) counted: its time if it was
    /// timed, and whether it answered with an error.
    #[inline]
    pub fn end(&self, spec: &'static Spec, start: Option<Instant>, failed: bool) {
        if let Some(start) = start {
            self.record(spec, start.elapsed().as_nanos() as u64);
        }
        if failed {
            self.fail(spec);
        }
    }

    /// Counts a call of `spec` that ran and answered with an error.
    fn fail(&self, spec: &'static Spec) {
        if let Some(s) = self.stripe(spec) {
            s.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Adds a timed call of `spec` that took `ns` nanoseconds.
    #[cold]
    fn record(&self, spec: &'static Spec, ns: u64) {
        if let Some(s) = self.stripe(spec) {
            s.timed.fetch_add(1, Ordering::Relaxed);
            s.timed_ns.fetch_add(ns, Ordering::Relaxed);
        }
        if !self.tracking.load(Ordering::Relaxed) {
            return;
        }
        if let Some(cell) = table::row(spec).and_then(|row| self.latency.get(row)) {
            let h = cell.get_or_init(|| Mutex::new(new_histogram()));
            let mut h = h.lock().unwrap_or_else(|e| e.into_inner());
            h.saturating_record(ns.clamp(LOWEST_NS, HIGHEST_NS));
        }
    }

    /// Counts a call of `spec` refused before it ran (wrong arity, not
    /// authenticated, or queued with such an error inside MULTI); it is
    /// not a call (as in Redis).
    pub fn reject(&self, spec: &'static Spec) {
        if let Some(s) = self.stripe(spec) {
            s.rejected.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Commands called (or refused) at least once, with their statistics,
    /// as the command `running` sees them: without its own call, which
    /// Redis counts once it has run.
    pub fn calls(
        &self,
        running: Option<&'static Spec>,
    ) -> impl Iterator<Item = (&'static Spec, CallStats)> + '_ {
        table::all()
            .zip(self.rows.iter())
            .map(move |(s, row)| {
                let sum = |f: fn(&Stripe) -> &AtomicU64| -> u64 {
                    row.iter().map(|c| f(c).load(Ordering::Relaxed)).sum()
                };
                let own = u64::from(running.is_some_and(|r| std::ptr::eq(s, r)));
                let (calls, timed, ns) = (
                    row.iter()
                        .map(Stripe::calls)
                        .sum::<u64>()
                        .saturating_sub(own),
                    sum(|c| &c.timed),
                    sum(|c| &c.timed_ns),
                );
                let usec = if timed == 0 {
                    0
                } else {
                    (u128::from(ns) * u128::from(calls) / u128::from(timed) / 1000) as u64
                };
                let (rejected, failed) = (sum(|c| &c.rejected), sum(|c| &c.failed));
                (
                    s,
                    CallStats {
                        calls,
                        usec,
                        rejected,
                        failed,
                    },
                )
            })
            .filter(|(_, st)| st.calls + st.rejected > 0)
    }

    /// Every command call so far, as `running` sees them (see
    /// [`calls`](Self::calls)).
    pub fn total_calls(&self, running: Option<&'static Spec>) -> u64 {
        let all: u64 = self.rows.iter().flatten().map(Stripe::calls).sum();
        all.saturating_sub(u64::from(running.is_some()))
    }

    /// A copy of `spec`'s histogram, if a call of it was timed.
    fn histogram(&self, spec: &'static Spec) -> Option<Histogram<u64>> {
        let h = self.latency.get(table::row(spec)?)?.get()?;
        let h = h.lock().unwrap_or_else(|e| e.into_inner());
        (!h.is_empty()).then(|| h.clone())
    }

    /// Commands with a histogram, in table order.
    fn histograms(&self) -> impl Iterator<Item = (&'static Spec, Histogram<u64>)> + '_ {
        table::all().filter_map(|s| Some((s, self.histogram(s)?)))
    }

    /// INFO latencystats' lines: per command, the configured percentiles
    /// in microseconds (`latency_percentiles_usec_set:p50=4.015,...`).
    pub fn write_latency_section(&self, t: &mut String) {
        let percentiles = self.percentiles();
        for (spec, h) in self.histograms() {
            let _ = write!(t, "latency_percentiles_usec_{}:", spec.name);
            for (i, p) in percentiles.iter().enumerate() {
                let usec = h.value_at_percentile(*p) as f64 / 1000.0;
                let sep = if i == 0 { "" } else { "," };
                let _ = write!(t, "{sep}p{p}={usec:.3}");
            }
            t.push_str("\r\n");
        }
    }

    /// `LATENCY HISTOGRAM`'s entries for `names` (every command with a
    /// histogram if none): a container's name stands for its
    /// subcommands; an unknown name is skipped; a name given twice
    /// answers twice, as in Redis.
    pub fn latency_histograms(&self, names: &[&[u8]]) -> Vec<(&'static Spec, Cdf)> {
        if names.is_empty() {
            return self.histograms().map(|(s, h)| (s, cdf(&h))).collect();
        }
        let mut out = Vec::new();
        for name in names {
            let Some(spec) = table::lookup_full(name) else {
                continue;
            };
            let specs: Vec<&'static Spec> = if spec.subs.is_empty() {
                vec![spec]
            } else {
                spec.subs.iter().collect()
            };
            for s in specs {
                if let Some(h) = self.histogram(s) {
                    out.push((s, cdf(&h)));
                }
            }
        }
        out
    }

    /// `latency-tracking`.
    pub fn tracking(&self) -> bool {
        self.tracking.load(Ordering::Relaxed)
    }

    /// Sets `latency-tracking`.
    pub fn set_tracking(&self, on: bool) {
        self.tracking.store(on, Ordering::Relaxed);
    }

    /// `latency-tracking-info-percentiles`.
    pub fn percentiles(&self) -> Vec<f64> {
        self.percentiles
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets `latency-tracking-info-percentiles` from its text (numbers
    /// between spaces); Redis's reason if it is not that.
    pub fn set_percentiles(&self, text: &[u8]) -> Result<(), &'static str> {
        let words = std::str::from_utf8(text).map_err(|_| INVALID_PERCENTILES)?;
        let mut ps = Vec::new();
        for w in words.split_ascii_whitespace() {
            let p: f64 = w.parse().map_err(|_| INVALID_PERCENTILES)?;
            if !(0.0..=100.0).contains(&p) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                );
            }
            ps.push(p);
        }
        *self.percentiles.lock().unwrap_or_else(|e| e.into_inner()) = ps;
        Ok(())
    }

    /// `CONFIG RESETSTAT`, run as `running`: every counter and histogram
    /// back to zero, but for the running call itself, which Redis counts
    /// once it has run.
    pub fn reset(&self, running: Option<&'static Spec>) {
        for stripe in self.rows.iter().flatten() {
            for c in stripe.zeroed() {
                c.store(0, Ordering::Relaxed);
            }
            // A call counted meanwhile by the stripe's owner either lands
            // before this load (and is reset) or after it (and counts).
            let calls = stripe.calls.load(Ordering::Relaxed);
            stripe.base.store(calls, Ordering::Relaxed);
        }
        if let Some(s) = running.and_then(|r| self.stripe(r)) {
            // The running call, already counted, counts after the reset.
            s.base.fetch_sub(1, Ordering::Relaxed);
        }
        for h in self.latency.iter().filter_map(OnceLock::get) {
            h.lock().unwrap_or_else(|e| e.into_inner()).reset();
        }
    }
}

const INVALID_PERCENTILES: &str = "Invalid latency-tracking-info-percentiles parameters";

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("constant bounds that HdrHistogram accepts")
}

/// A command's latency distribution as `LATENCY HISTOGRAM` gives it: the
/// timed calls, and per power-of-two bucket of microseconds that holds
/// any, the calls up to its top.
pub struct Cdf {
    /// Timed calls.
    pub calls: u64,
    /// (bucket top in µs, calls up to it), ascending.
    pub buckets: Vec<(u64, u64)>,
}

/// Redis's walk: buckets doubling from 1024 ns, each holding the values up
/// to the highest its top stands for (HdrHistogram's equivalent range),
/// named by that in whole µs and listed where its cumulative count grew.
fn cdf(h: &Histogram<u64>) -> Cdf {
    // (top in ns, calls in the bucket), ascending.
    let mut rows: Vec<(u64, u64)> = Vec::new();
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let mut level = 1024u64;
        while value > h.highest_equivalent(level) && level < HIGHEST_NS {
            level *= 2;
        }
        let top = h.highest_equivalent(level);
        match rows.last_mut() {
            Some((t, n)) if *t == top => *n += v.count_at_value(),
            _ => rows.push((top, v.count_at_value())),
        }
    }
    let mut cumulative = 0;
    let buckets = rows
        .into_iter()
        .map(|(top, n)| {
            cumulative += n;
            (top / 1000, cumulative)
        })
        .collect();
    Cdf {
        calls: h.len(),
        buckets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_named_as_redis_names_them() {
        // Redis 7 answers LATENCY HISTOGRAM with these bucket names for
        // calls of 0.5, 3.5, 12, 30, 60 and 120 µs; 32.9 µs is in the
        // range 32768 ns stands for, so in the bucket named 33.
        let mut h = new_histogram();
        for ns in [500, 3_500, 12_000, 30_000, 32_900, 60_000, 120_000, 120_001] {
            h.record(ns).unwrap();
        }
        let c = cdf(&h);
        assert_eq!(c.calls, 8);
        assert_eq!(
            c.buckets,
            vec![(1, 1), (4, 2), (16, 3), (33, 5), (66, 6), (132, 8)]
        );
    }

    #[test]
    fn percentiles_are_checked_as_redis_checks_them() {
        let s = CommandStats::default();
        assert_eq!(s.set_percentiles(b"99.99 50.5 0"), Ok(()));
        assert_eq!(s.percentiles(), vec![99.99, 50.5, 0.0]);
        assert_eq!(s.set_percentiles(b"abc"), Err(INVALID_PERCENTILES));
        assert!(s.set_percentiles(b"101").is_err());
        assert_eq!(s.percentiles(), vec![99.99, 50.5, 0.0]);
        assert_eq!(s.set_percentiles(b""), Ok(()));
        assert!(s.percentiles().is_empty());
    }
}
