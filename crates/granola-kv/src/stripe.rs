//! Per-thread stripes of counters: each thread counts in its own cache
//! line, so threads on different cores do not share one.
//!
//! The first threads each own a stripe and add with a plain load and
//! store, no locked instruction: nothing else may write an owned counter,
//! so a reset does not zero it but keeps a base that readers subtract.
//! Threads past those share the last stripe and add atomically.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// This thread's number: 0, 1, 2... in the order threads first ask,
/// never reused (per-thread counters key on it).
pub fn thread_index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    INDEX.with(|i| *i)
}

/// Where this thread counts among `stripes` stripes.
#[derive(Clone, Copy, Debug)]
pub struct Stripe {
    /// The stripe.
    pub index: usize,
    /// Whether this thread is its only writer.
    pub owned: bool,
}

impl Stripe {
    /// This thread's stripe among `stripes` (at least one).
    #[inline]
    pub fn mine(stripes: usize) -> Stripe {
        Stripe::of(thread_index(), stripes)
    }

    /// The stripe of the thread numbered `i`.
    #[inline]
    fn of(i: usize, stripes: usize) -> Stripe {
        if i + 1 < stripes {
            Stripe {
                index: i,
                owned: true,
            }
        } else {
            Stripe {
                index: stripes - 1,
                owned: false,
            }
        }
    }

    /// Adds one to `counter`, a counter of this stripe that only adds (a
    /// reset moves a base, see the module); its value before.
    #[inline]
    pub fn bump(self, counter: &AtomicU64) -> u64 {
        if self.owned {
            let n = counter.load(Ordering::Relaxed);
            counter.store(n + 1, Ordering::Relaxed);
            n
        } else {
            counter.fetch_add(1, Ordering::Relaxed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn owners_and_sharers_lose_no_count() {
        // More threads than stripes: the last stripe is shared.
        const STRIPES: usize = 3;
        const THREADS: usize = 8;
        const ADDS: u64 = 20_000;
        let counters: Arc<[AtomicU64; STRIPES]> = Arc::new(Default::default());
        // Numbered here, not by `thread_index`, which other tests in
        // this process have already taken past the owned stripes.
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                let counters = counters.clone();
                std::thread::spawn(move || {
                    let s = Stripe::of(i, STRIPES);
                    assert_eq!(s.owned, i + 1 < STRIPES);
                    for _ in 0..ADDS {
                        s.bump(&counters[s.index]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let total: u64 = counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, THREADS as u64 * ADDS);
    }
}
