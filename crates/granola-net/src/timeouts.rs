//! Connection timeouts, checked by a periodic sweep of each worker's
//! connections (never per request):
//!
//! - **write timeout**: a connection with replies queued whose peer has
//!   read nothing (no byte accepted by the kernel) for
//!   [`ServerConfig::write_timeout`](crate::server::ServerConfig::write_timeout)
//!   is closed with a log line;
//! - **idle timeout** (memcached's `-o idle_timeout`): a connection that
//!   sent no input for
//!   [`ServerConfig::idle_timeout`](crate::server::ServerConfig::idle_timeout) and
//!   has nothing queued is closed;
//! - a connection with nothing queued and no input for a sweep period
//!   gives its TX buffer (and its receive buffer, when it holds no
//!   unconsumed input) back to the pool, so idle connections hold none (a
//!   busy connection keeps reusing its buffers with no pool traffic per
//!   request).
//!
//! The sweep runs every [`SWEEP_EVERY`] from the event loops' existing
//! wake-ups (both already wait at most 100 ms), so the timeouts fire
//! within about that much of their configured value and cost no timer or
//! syscall of their own.

use crate::tx::TxQueue;
use std::time::{Duration, Instant};

/// How often a worker checks its connections' timers.
pub const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// The timeouts a sweep applies.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Limits {
    pub(crate) write: Option<Duration>,
    pub(crate) idle: Option<Duration>,
}

/// One connection's timer state.
#[derive(Debug)]
pub(crate) struct ConnTimer {
    /// When input last arrived (set by the event loop on each read).
    pub(crate) last_input: Instant,
    /// When the TX queue was last seen empty or moving.
    last_progress: Instant,
    /// The queue's sent-byte total at the last sweep.
    sent_seen: u64,
}

/// What a sweep decided for one connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Keep,
    /// Nothing queued, no recent input: give the TX buffer (and an empty
    /// receive buffer) back.
    Release,
    /// Close with this reason (for the log line).
    Close(String),
}

impl ConnTimer {
    pub(crate) fn new(now: Instant) -> ConnTimer {
        ConnTimer {
            last_input: now,
            last_progress: now,
            sent_seen: 0,
        }
    }

    /// Checks one connection at a sweep.
    pub(crate) fn sweep(&mut self, tx: &TxQueue, now: Instant, limits: Limits) -> Verdict {
        let sent = tx.sent_total();
        if tx.is_empty() || sent != self.sent_seen {
            self.sent_seen = sent;
            self.last_progress = now;
        } else if let Some(t) = limits.write {
            let stalled = now.saturating_duration_since(self.last_progress);
            if stalled >= t {
                return Verdict::Close(format!(
                    "write timeout: peer read none of {} queued reply bytes for {:.1} s",
                    tx.queued_bytes(),
                    stalled.as_secs_f64()
                ));
            }
        }
        if !tx.is_empty() {
            return Verdict::Keep;
        }
        let quiet = now.saturating_duration_since(self.last_input);
        if let Some(t) = limits.idle {
            if quiet >= t {
                return Verdict::Close(format!(
                    "idle timeout: no input for {:.1} s",
                    quiet.as_secs_f64()
                ));
            }
        }
        if quiet >= SWEEP_EVERY {
            Verdict::Release
        } else {
            Verdict::Keep
        }
    }
}
