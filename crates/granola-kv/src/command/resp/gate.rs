//! Isolation for `EXEC` and multi-key writes (MSET, DEL of several keys,
//! RENAME, SMOVE, SUNIONSTORE, ...): while one runs, no other RESP command
//! runs (Redis runs commands one at a time; granola-kv runs them on every
//! worker thread at once, so these have to stop the others).
//!
//! Every RESP command enters the gate shared: it bumps a counter of its
//! own (one per thread, on its own cache line, so commands on different
//! threads never write the same line) and checks the `exclusive` flag.
//! EXEC takes the mutex, sets the flag, and waits until every counter is
//! zero; commands that see the flag step back and wait on the mutex. The
//! Dekker-style handshake (each side writes its own word, then reads the
//! other's, all SeqCst) means a command and an EXEC never both proceed.
//! memcached and native requests do not enter the gate: a transaction or
//! multi-key write is isolated from other Redis clients only. Multi-key
//! reads (MGET, SUNION) enter shared, so they see a multi-key write whole
//! or not at all; two single-key SETs in a row may land between their
//! keys, except for an MGET (up to 4096 keys and 16 MiB of values), which
//! validates its reads as one snapshot and, if writers keep outrunning the
//! check, runs again alone (`strings.rs`, `mod.rs`'s `run_gated`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

const SLOTS: usize = 64;

#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicUsize);

/// The gate (one per server).
pub struct Gate {
    lock: Mutex<()>,
    exclusive: AtomicBool,
    slots: [Slot; SLOTS],
    /// Commands that ran again alone (an MGET whose snapshot writers
    /// outran): INFO's `mget_snapshots_alone`.
    pub retried_alone: AtomicU64,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            lock: Mutex::new(()),
            exclusive: AtomicBool::new(false),
            slots: std::array::from_fn(|_| Slot::default()),
            retried_alone: AtomicU64::new(0),
        }
    }
}

/// This thread's stripe (0..64) for per-thread counters.
pub fn my_slot() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    }
    SLOT.with(|s| *s)
}

/// A command inside the gate (shared).
pub struct Shared<'a>(&'a Slot);

impl Drop for Shared<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A transaction inside the gate (alone).
pub struct Exclusive<'a> {
    gate: &'a Gate,
    _lock: MutexGuard<'a, ()>,
}

impl Drop for Exclusive<'_> {
    fn drop(&mut self) {
        self.gate.exclusive.store(false, Ordering::SeqCst);
    }
}

impl Gate {
    /// Enters for one ordinary command.
    pub fn shared(&self) -> Shared<'_> {
        let slot = &self.slots[my_slot()];
        loop {
            slot.0.fetch_add(1, Ordering::SeqCst);
            if !self.exclusive.load(Ordering::SeqCst) {
                return Shared(slot);
            }
            slot.0.fetch_sub(1, Ordering::SeqCst);
            // A transaction runs: wait for it.
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Enters alone (the caller holds no shared entry).
    pub fn exclusive(&self) -> Exclusive<'_> {
        let lock = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.exclusive.store(true, Ordering::SeqCst);
        for slot in &self.slots {
            while slot.0.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
        }
        Exclusive {
            gate: self,
            _lock: lock,
        }
    }
}
