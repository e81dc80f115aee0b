//! Sessions that wait for something other than their own input.
//!
//! A Redis client in `BLPOP` has sent its request and now waits for another
//! client's push, or for its timeout. Its session returns from
//! [`Session::on_input`](crate::server::Session::on_input) with the request
//! still unconsumed and says so through
//! [`Session::park`](crate::server::Session::park), with its deadline. The
//! worker runs the session again (`on_input` with no new input) when
//! someone calls the connection's [`ConnWaker`], or at the deadline; the
//! session decides what that means (look again, or answer the timeout).
//!
//! The session hands its [`ConnWaker`] (from
//! [`ConnIo::waker`](crate::server::ConnIo::waker)) to whatever it waits
//! on, *before* it last looks: a write after that look wakes it. A wake
//! from another thread queues the connection on its worker and writes
//! that worker's eventfd; a wake from the worker's own thread only queues
//! it (the worker drains its queue before it waits again). Only the woken
//! connections run again, whatever the number of waiting ones, and a
//! worker with nothing woken and no deadline due does no parking work at
//! all.

use crate::sys::Waker;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::Instant;

/// A parked session's condition: its deadline (`None`: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Park {
    /// When it gives up waiting.
    pub deadline: Option<Instant>,
}

/// One worker's queue of woken connections.
pub(crate) struct Wakeups {
    /// `(connection index, connection stamp)` woken since the last drain.
    woken: Mutex<Vec<(usize, u64)>>,
    /// Something is in `woken` (checked without the lock every turn).
    pending: AtomicBool,
    /// The worker's eventfd.
    waker: Arc<Waker>,
    /// The worker's thread, once it runs.
    owner: OnceLock<ThreadId>,
}

impl Wakeups {
    pub(crate) fn new(waker: Arc<Waker>) -> Arc<Wakeups> {
        Arc::new(Wakeups {
            woken: Mutex::new(Vec::new()),
            pending: AtomicBool::new(false),
            waker,
            owner: OnceLock::new(),
        })
    }

    /// Called first thing on the worker's thread.
    pub(crate) fn set_owner(&self) {
        let _ = self.owner.set(std::thread::current().id());
    }

    /// Something was woken since the last drain: the worker must not wait
    /// in the kernel before it drains (a wake from its own thread writes
    /// no eventfd).
    pub(crate) fn pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }

    /// The connections woken since the last call (appended to `out`).
    pub(crate) fn drain(&self, out: &mut Vec<(usize, u64)>) {
        // A plain load first: this runs every event-loop turn, and the
        // swap (a locked read-modify-write) is only needed when set.
        if !self.pending.load(Ordering::Acquire) || !self.pending.swap(false, Ordering::AcqRel) {
            return;
        }
        out.append(&mut self.woken.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// Wakes one parked connection: cheap to clone, usable from any thread.
/// A wake for a connection that has closed, or is not parked, does nothing.
#[derive(Clone)]
pub struct ConnWaker {
    wakeups: Arc<Wakeups>,
    idx: usize,
    stamp: u64,
}

impl ConnWaker {
    pub(crate) fn new(wakeups: Arc<Wakeups>, idx: usize, stamp: u64) -> ConnWaker {
        ConnWaker {
            wakeups,
            idx,
            stamp,
        }
    }

    /// Runs the connection's session again soon, if it is parked.
    pub fn wake(&self) {
        let w = &self.wakeups;
        w.woken
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((self.idx, self.stamp));
        w.pending.store(true, Ordering::Release);
        if w.owner.get() != Some(&std::thread::current().id()) {
            w.waker.wake();
        }
    }
}

impl std::fmt::Debug for ConnWaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnWaker")
            .field("idx", &self.idx)
            .field("stamp", &self.stamp)
            .finish()
    }
}

/// The connections to run again now: those woken since the last call and
/// those whose deadline passed (appended to `out`).
pub(crate) fn due_now(wakeups: &Wakeups, deadlines: &mut Deadlines, out: &mut Vec<(usize, u64)>) {
    wakeups.drain(out);
    deadlines.due(Instant::now(), out);
}

/// One worker's parked connections with a deadline, earliest first
/// (entries of connections no longer parked are dropped when they come
/// up).
#[derive(Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Reverse<(Instant, usize, u64)>>,
}

impl Deadlines {
    /// Connection `idx` (stamp `stamp`) parked until `at`.
    pub(crate) fn add(&mut self, at: Instant, idx: usize, stamp: u64) {
        self.heap.push(Reverse((at, idx, stamp)));
    }

    /// The connections whose deadline is at or before `now` (appended to
    /// `out`).
    pub(crate) fn due(&mut self, now: Instant, out: &mut Vec<(usize, u64)>) {
        while let Some(Reverse((at, idx, stamp))) = self.heap.peek().copied() {
            if at > now {
                break;
            }
            self.heap.pop();
            out.push((idx, stamp));
        }
    }

    /// How long the worker may wait in the kernel, at most `cap_ms`.
    pub(crate) fn wait_ms(&self, cap_ms: i32, now: Instant) -> i32 {
        match self.heap.peek() {
            // Round up: waking a millisecond early would only wait again.
            Some(Reverse((at, _, _))) => {
                let left = at.saturating_duration_since(now);
                let left_ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
                cap_ms.min(left_ms)
            }
            None => cap_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_wake_queues_the_connection_once_drained() {
        let wakeups = Wakeups::new(Arc::new(Waker::new().unwrap()));
        wakeups.set_owner();
        let a = ConnWaker::new(wakeups.clone(), 3, 11);
        let b = ConnWaker::new(wakeups.clone(), 7, 12);
        let mut out = Vec::new();
        wakeups.drain(&mut out);
        assert!(out.is_empty());
        a.wake();
        b.clone().wake();
        wakeups.drain(&mut out);
        assert_eq!(out, vec![(3, 11), (7, 12)]);
        out.clear();
        wakeups.drain(&mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn deadlines_come_due_in_order() {
        let now = Instant::now();
        let mut d = Deadlines::default();
        assert_eq!(d.wait_ms(100, now), 100);
        d.add(now + Duration::from_millis(9), 1, 1);
        d.add(now + Duration::from_micros(2500), 2, 2);
        assert_eq!(d.wait_ms(100, now), 3);
        let mut out = Vec::new();
        d.due(now + Duration::from_millis(3), &mut out);
        assert_eq!(out, vec![(2, 2)]);
        d.due(now + Duration::from_millis(10), &mut out);
        assert_eq!(out, vec![(2, 2), (1, 1)]);
        assert_eq!(d.wait_ms(100, now), 100);
    }
}
