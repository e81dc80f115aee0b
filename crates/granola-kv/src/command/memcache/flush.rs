//! `flush_all [delay]`.

use super::Ctx;
use crate::protocol::memcache::{self as mc, expiry, Expiry};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One pending `flush_all <delay>` (memcached keeps one flush time: a later
/// command replaces it) and whether its timer thread is running — at most
/// one, however many delayed flushes clients send.
#[derive(Default, Debug)]
pub struct DelayedFlush {
    /// Deadline in store milliseconds; 0 = none pending.
    at_ms: AtomicU64,
    /// A timer thread is running.
    timer: AtomicBool,
}

/// Flushes now, or after `delay` seconds on a timer thread (memcached
/// marks items older than the deadline instead; the observable behaviour —
/// everything set before the flush time is gone after it — is the same).
/// A later `flush_all` replaces a pending one.
pub fn execute(ctx: &mut Ctx<'_>, delay: i32, noreply: bool) {
    let shared = ctx.shared;
    shared.memcache.cmd_flush.fetch_add(1, Ordering::Relaxed);
    let pending = &shared.memcache.delayed_flush;
    let at_ms = match expiry(i64::from(delay), ctx.now_unix()) {
        Expiry::Never | Expiry::Expired => {
            pending.at_ms.store(0, Ordering::SeqCst);
            ctx.db.flush_all();
            None
        }
        Expiry::At(s) => Some(s.saturating_mul(1000).max(1)),
    };
    if let Some(at_ms) = at_ms {
        pending.at_ms.store(at_ms, Ordering::SeqCst);
        if !pending.timer.swap(true, Ordering::SeqCst) {
            let pending = pending.clone();
            let store = shared.store.clone();
            std::thread::spawn(move || loop {
                let at = pending.at_ms.load(Ordering::SeqCst);
                if at == 0 {
                    // Nothing pending: stop, unless a deadline arrived
                    // meanwhile and no other timer has claimed it.
                    pending.timer.store(false, Ordering::SeqCst);
                    if pending.at_ms.load(Ordering::SeqCst) == 0
                        || pending.timer.swap(true, Ordering::SeqCst)
                    {
                        return;
                    }
                    continue;
                }
                let now = store.now_ms();
                if now >= at {
                    if pending
                        .at_ms
                        .compare_exchange(at, 0, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                    {
                        store.flush_all();
                    }
                    continue;
                }
                // Short naps: a replaced (earlier or cancelled) deadline is
                // seen.
                std::thread::sleep(std::time::Duration::from_millis((at - now).min(100)));
            });
        }
    }
    if !noreply {
        ctx.out.copy(mc::OK);
    }
}
