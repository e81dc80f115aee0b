//! Isolation for `EXEC` and multi-key writes (MSET, DEL of several keys,
//! RENAME, SMOVE, SUNIONSTORE, ...): while one runs, no other RESP command
//! runs (Redis runs commands one at a time; granola-kv runs them on every
//! worker thread at once, so these have to stop the others).
//!
//! Every RESP command enters the gate shared: it bumps a counter of its
//! thread's own (one per thread, on its own cache line, so commands on
//! different threads never write the same line) and checks the
//! `exclusive` flag. EXEC takes the mutex, sets the flag, and waits until
//! every counter is zero; commands that see the flag step back and wait
//! on the mutex. The Dekker-style handshake (each side writes its own
//! word, then reads the other's, all SeqCst) means a command and an EXEC
//! never both proceed.
//!
//! A connection stays entered from its first command in a read of its
//! input to the end of that read ([`Gate::leave`], which the RESP
//! protocol calls before the driver flushes the replies): the
//! handshake's two locked read-modify-writes are paid once per pipelined
//! batch, not per command. A connection leaves before it waits for
//! anything the gate guards (entering alone, or a transaction running
//! elsewhere), so no two wait on each other; an EXEC on another thread
//! waits at most for the batch in progress.
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

/// A connection's place in the gate: the slot it counts in while it is
/// entered. Leave before dropping it ([`Gate::leave`]).
#[derive(Default, Debug)]
pub struct Entry(Option<usize>);

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
    /// Enters for an ordinary command (nothing to do if `entry` is in).
    #[inline]
    pub fn shared(&self, entry: &mut Entry) {
        if entry.0.is_none() {
            self.enter(entry);
        }
    }

    #[inline(never)]
    fn enter(&self, entry: &mut Entry) {
        let i = crate::stripe::thread_index() % SLOTS;
        let slot = &self.slots[i].0;
        loop {
            slot.fetch_add(1, Ordering::SeqCst);
            if !self.exclusive.load(Ordering::SeqCst) {
                entry.0 = Some(i);
                return;
            }
            slot.fetch_sub(1, Ordering::SeqCst);
            // A transaction runs: wait for it.
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// Takes `entry` out of the gate, if it is in.
    #[inline]
    pub fn leave(&self, entry: &mut Entry) {
        if let Some(i) = entry.0.take() {
            self.slots[i].0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Enters alone (`entry` leaves its shared place first).
    pub fn exclusive(&self, entry: &mut Entry) -> Exclusive<'_> {
        self.leave(entry);
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
