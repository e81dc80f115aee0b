//! Time for expiry: Unix milliseconds, from the system or from a test hook;
//! and a coarse clock in whole seconds for access times.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, from the system clock. What
/// `expires_at_ms` is measured in: memcached's relative exptime `n`
/// (seconds, `n <= 30 days`) becomes `now_ms() + n * 1000`, an absolute one
/// `n * 1000`; Redis `EX s` / `PX ms` become `now_ms() + s * 1000` /
/// `now_ms() + ms`. Use [`Store::now_ms`](super::Store::now_ms) so tests can
/// control time.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The store's clock: the system clock, or a manual one for tests.
///
/// ```
/// use granola_kv::store::Clock;
/// let c = Clock::manual(1_000);
/// c.advance_ms(500);
/// assert_eq!(c.now_ms(), 1_500);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicU64>>,
}

impl Clock {
    /// The system clock ([`now_ms`]).
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A clock that stands still at `start_ms` until moved by
    /// [`set_ms`](Self::set_ms) / [`advance_ms`](Self::advance_ms). Clones
    /// share the time.
    pub fn manual(start_ms: u64) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicU64::new(start_ms))),
        }
    }

    /// Current time in Unix milliseconds.
    #[inline]
    pub fn now_ms(&self) -> u64 {
        match &self.manual {
            Some(t) => t.load(Ordering::Relaxed),
            None => now_ms(),
        }
    }

    /// Current time in whole Unix seconds, as of the last tick of a clock
    /// thread (at most 100 ms old). Reading it is one load; every read of
    /// an item marks its access time with it, where `now_ms` (a
    /// `clock_gettime`, about 30 ns here) would cost a few per cent of a
    /// GET. memcached and Redis keep such a clock for the same reason.
    #[inline]
    pub fn coarse_s(&self) -> u64 {
        match &self.manual {
            Some(t) => t.load(Ordering::Relaxed) / 1000,
            None => coarse_s(),
        }
    }

    /// Sets a manual clock (no effect on the system clock).
    pub fn set_ms(&self, ms: u64) {
        if let Some(t) = &self.manual {
            t.store(ms, Ordering::Relaxed);
        }
    }

    /// Moves a manual clock forward (no effect on the system clock).
    pub fn advance_ms(&self, ms: u64) {
        if let Some(t) = &self.manual {
            t.fetch_add(ms, Ordering::Relaxed);
        }
    }
}

/// Tick of the coarse clock.
const COARSE_TICK: Duration = Duration::from_millis(100);

/// The process's coarse clock: Unix seconds, kept current by one thread
/// (started by the first read) that wakes every [`COARSE_TICK`].
fn coarse_s() -> u64 {
    static COARSE: OnceLock<Arc<AtomicU64>> = OnceLock::new();
    let t = COARSE.get_or_init(|| {
        let t = Arc::new(AtomicU64::new(now_ms() / 1000));
        let ticked = t.clone();
        let started = std::thread::Builder::new()
            .name("granola-clock".into())
            .spawn(move || loop {
                std::thread::sleep(COARSE_TICK);
                ticked.store(now_ms() / 1000, Ordering::Relaxed);
            });
        if let Err(e) = started {
            // Access times would stand still; everything else works.
            log::error!("cannot start the clock thread: {e}; access times will not advance");
        }
        t
    });
    t.load(Ordering::Relaxed)
}
