//! Sessions that wait for something other than their own input.
//!
//! A Redis client in `BLPOP` has sent its request and now waits for another
//! client's push, or for its timeout. Its session returns from
//! [`Session::on_input`](crate::server::Session::on_input) with the request
//! still unconsumed and says so through
//! [`Session::park`](crate::server::Session::park): a [`Park`] naming the
//! [`Doorbell`] generation it saw before it last looked, and its deadline.
//! The worker runs the session again (`on_input` with no new input) as
//! soon as the doorbell has rung since then, or at the deadline; the
//! session decides what that means (try the pop again, or answer the
//! timeout).
//!
//! A ring also wakes every worker thread waiting in the kernel, so a push
//! on one thread reaches a client parked on another at once, not at the
//! next timeout tick. Nothing is paid while no session is parked: the
//! service rings only when it has waiters (its own bookkeeping), and a
//! worker with no parked session never looks at the bell.

use crate::sys::Waker;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What parked sessions of one service wait on. The service keeps it and
/// hands it to the server through
/// [`Service::doorbell`](crate::server::Service::doorbell).
#[derive(Default)]
pub struct Doorbell {
    /// Rings so far.
    rung: AtomicU64,
    /// The wakers of the workers serving the service.
    wakers: Mutex<Vec<Arc<Waker>>>,
}

impl Doorbell {
    /// A bell no one has rung.
    pub fn new() -> Doorbell {
        Doorbell::default()
    }

    /// Rings so far. A session reads this *before* it looks for what it
    /// waits on, and parks with it: a ring in between makes the worker run
    /// it again at once.
    pub fn generation(&self) -> u64 {
        self.rung.load(Ordering::SeqCst)
    }

    /// Something parked sessions may be waiting for happened: every parked
    /// session runs again, and every worker blocked in the kernel wakes.
    pub fn ring(&self) {
        self.rung.fetch_add(1, Ordering::SeqCst);
        for w in self.wakers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            w.wake();
        }
    }

    /// A worker serving the service: rings wake it.
    pub(crate) fn attach(&self, waker: Arc<Waker>) {
        self.wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(waker);
    }
}

/// A parked session's condition: run it again once the doorbell's
/// generation differs from `seen`, or at `deadline` (`None`: no deadline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Park {
    /// The generation read before the session last looked.
    pub seen: u64,
    /// When it gives up waiting.
    pub deadline: Option<Instant>,
}

impl Park {
    /// True if the session should run again now.
    pub(crate) fn due(&self, bell: &Doorbell, now: Instant) -> bool {
        bell.generation() != self.seen || self.deadline.is_some_and(|d| d <= now)
    }
}

/// The parked connections of one worker (indexes into its connection
/// table), and when the worker must wake up for them.
#[derive(Default)]
pub(crate) struct Parked {
    conns: Vec<usize>,
}

impl Parked {
    /// No connection is parked.
    pub(crate) fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Notes that connection `idx` parked (once).
    pub(crate) fn add(&mut self, idx: usize) {
        if !self.conns.contains(&idx) {
            self.conns.push(idx);
        }
    }

    /// Forgets connection `idx` (closed, or no longer parked).
    pub(crate) fn remove(&mut self, idx: usize) {
        self.conns.retain(|&i| i != idx);
    }

    /// The parked connections, oldest first (a copy: running them may
    /// change the list).
    pub(crate) fn snapshot(&self) -> Vec<usize> {
        self.conns.clone()
    }

    /// How long the worker may wait in the kernel, at most `cap_ms`, given
    /// the parked sessions' deadlines (`deadline_of` gives one connection's).
    pub(crate) fn wait_ms(
        &self,
        cap_ms: i32,
        now: Instant,
        deadline_of: impl Fn(usize) -> Option<Instant>,
    ) -> i32 {
        let mut ms = cap_ms;
        for &i in &self.conns {
            if let Some(d) = deadline_of(i) {
                // Round up: waking a millisecond early would only park again.
                let left = d.saturating_duration_since(now);
                let left_ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
                ms = ms.min(left_ms);
            }
        }
        ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_ring_after_the_look_makes_a_park_due() {
        let bell = Doorbell::new();
        let now = Instant::now();
        let p = Park {
            seen: bell.generation(),
            deadline: None,
        };
        assert!(!p.due(&bell, now));
        bell.ring();
        assert!(p.due(&bell, now));
    }

    #[test]
    fn a_deadline_makes_a_park_due() {
        let bell = Doorbell::new();
        let now = Instant::now();
        let p = Park {
            seen: bell.generation(),
            deadline: Some(now + Duration::from_millis(5)),
        };
        assert!(!p.due(&bell, now));
        assert!(p.due(&bell, now + Duration::from_millis(5)));
    }

    #[test]
    fn the_wait_ends_at_the_nearest_deadline() {
        let mut parked = Parked::default();
        parked.add(3);
        parked.add(3);
        parked.add(7);
        assert_eq!(parked.snapshot(), vec![3, 7]);
        let now = Instant::now();
        let deadline = |i: usize| (i == 7).then(|| now + Duration::from_micros(2500));
        assert_eq!(parked.wait_ms(100, now, deadline), 3);
        assert_eq!(parked.wait_ms(100, now, |_| None), 100);
        parked.remove(3);
        assert_eq!(parked.snapshot(), vec![7]);
    }
}
