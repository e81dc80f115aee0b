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
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Instant;

/// What parked sessions of one service wait on. The service keeps it and
/// hands it to the server through
/// [`Service::doorbell`](crate::server::Service::doorbell).
#[derive(Default)]
pub struct Doorbell {
    /// Rings so far.
    rung: AtomicU64,
    /// The wakers of the workers serving the service, with each worker's
    /// thread.
    wakers: Mutex<Vec<(ThreadId, Arc<Waker>)>>,
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
    /// The worker that rings (a session's write) is not woken through its
    /// eventfd: it looks at its parked sessions before it waits again.
    pub fn ring(&self) {
        self.rung.fetch_add(1, Ordering::SeqCst);
        let me = std::thread::current().id();
        for (thread, w) in self.wakers.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            if *thread != me {
                w.wake();
            }
        }
    }

    /// The worker running on this thread serves the service: rings from
    /// other threads wake it.
    pub(crate) fn attach(&self, waker: Arc<Waker>) {
        self.wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((std::thread::current().id(), waker));
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
/// table), oldest first, and when the worker must look at them again.
///
/// Looking costs O(parked), so a worker looks only when it may find
/// something: a doorbell rang since the last look, a session parked that
/// was already due (rung between its look and its park), or the earliest
/// deadline passed. A busy worker with thousands of blocked clients pays
/// nothing per event-loop turn otherwise.
#[derive(Default)]
pub(crate) struct Parked {
    /// Park order -> connection.
    order: BTreeMap<u64, usize>,
    /// Connection -> its place in `order`.
    place: HashMap<usize, u64>,
    next_place: u64,
    /// The bells' generations (summed) when the last look began.
    looked_at: u64,
    /// A session parked that is already due.
    due_now: bool,
    /// The earliest deadline of a parked session, if any.
    next_deadline: Option<Instant>,
}

impl Parked {
    /// No connection is parked.
    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Notes that connection `idx` parked with `park` on a bell now at
    /// `generation`; a connection already parked keeps its place.
    pub(crate) fn add(&mut self, idx: usize, park: Park, generation: u64) {
        if !self.place.contains_key(&idx) {
            self.place.insert(idx, self.next_place);
            self.order.insert(self.next_place, idx);
            self.next_place += 1;
        }
        self.due_now |= park.seen != generation;
        if let Some(d) = park.deadline {
            self.next_deadline = Some(self.next_deadline.map_or(d, |n| n.min(d)));
        }
    }

    /// Forgets connection `idx` (closed, or no longer parked).
    pub(crate) fn remove(&mut self, idx: usize) {
        if let Some(place) = self.place.remove(&idx) {
            self.order.remove(&place);
        }
    }

    /// Whether a look may find a due session: `generations` is the
    /// bells' generations summed.
    pub(crate) fn look_due(&self, generations: u64, now: Instant) -> bool {
        self.due_now
            || generations != self.looked_at
            || self.next_deadline.is_some_and(|d| d <= now)
    }

    /// Starts a look: returns the parked connections, oldest first (a
    /// copy: running them changes the set). Sessions that park during the
    /// look are noted as usual; `end_look` adds the deadlines it saw.
    pub(crate) fn begin_look(&mut self, generations: u64) -> Vec<usize> {
        self.looked_at = generations;
        self.due_now = false;
        self.next_deadline = None;
        self.order.values().copied().collect()
    }

    /// Ends a look that saw `earliest` as the earliest deadline of the
    /// sessions still parked.
    pub(crate) fn end_look(&mut self, earliest: Option<Instant>) {
        if let Some(d) = earliest {
            self.next_deadline = Some(self.next_deadline.map_or(d, |n| n.min(d)));
        }
    }

    /// How long the worker may wait in the kernel, at most `cap_ms`.
    pub(crate) fn wait_ms(&self, cap_ms: i32, now: Instant) -> i32 {
        if self.due_now {
            return 0;
        }
        match self.next_deadline {
            // Round up: waking a millisecond early would only park again.
            Some(d) => {
                let left = d.saturating_duration_since(now);
                let left_ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
                cap_ms.min(left_ms)
            }
            None => cap_ms,
        }
    }
}

/// The generations of `bells` summed: changes whenever one of them rings.
pub(crate) fn generations(bells: &[Option<Arc<Doorbell>>]) -> u64 {
    bells
        .iter()
        .flatten()
        .fold(0u64, |a, b| a.wrapping_add(b.generation()))
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
    fn a_worker_looks_only_when_something_may_be_due() {
        let bell = Doorbell::new();
        let now = Instant::now();
        let mut parked = Parked::default();
        let g = bell.generation();
        let p = |deadline| Park { seen: g, deadline };
        parked.add(3, p(None), g);
        parked.add(7, p(Some(now + Duration::from_micros(2500))), g);
        parked.add(3, p(None), g);
        assert_eq!(parked.begin_look(g), vec![3, 7]);
        parked.end_look(Some(now + Duration::from_micros(2500)));
        // Nothing rang, no deadline passed: no look.
        assert!(!parked.look_due(g, now));
        assert_eq!(parked.wait_ms(100, now), 3);
        assert!(parked.look_due(g, now + Duration::from_millis(3)));
        bell.ring();
        assert!(parked.look_due(bell.generation(), now));
        // A session that parks with an old generation is due at once.
        parked.add(9, p(None), bell.generation());
        assert_eq!(parked.wait_ms(100, now), 0);
        parked.remove(3);
        assert_eq!(parked.begin_look(bell.generation()), vec![7, 9]);
        assert!(!parked.look_due(bell.generation(), now));
    }
}
