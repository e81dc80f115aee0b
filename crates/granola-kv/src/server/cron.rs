//! The server cron: a thread that, ten times a second as Redis's
//! (`hz 10`), runs the store's active expiry ([`Store::expire_cycle`],
//! held to a millisecond: at most 1 % of a CPU, spent only while
//! expiring items exist) and samples what INFO reports over time
//! ([`Metrics`](super::metrics::Metrics)).
//!
//! [`Store::expire_cycle`]: crate::store::Store::expire_cycle

use super::Shared;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// Time between two runs.
const PERIOD: Duration = Duration::from_millis(100);

/// Most time one run's expiry cycle takes.
const EXPIRE_BUDGET: Duration = Duration::from_millis(1);

/// Starts the thread; it ends once `shared` is dropped.
pub fn spawn(shared: &Arc<Shared>) -> std::io::Result<()> {
    let shared: Weak<Shared> = Arc::downgrade(shared);
    std::thread::Builder::new()
        .name("granola-cron".into())
        .spawn(move || loop {
            std::thread::sleep(PERIOD);
            let Some(shared) = shared.upgrade() else {
                return;
            };
            run(&shared);
        })?;
    Ok(())
}

fn run(shared: &Shared) {
    let cycle = shared.store.expire_cycle(EXPIRE_BUDGET);
    if cycle.cut_short {
        shared.metrics.expire_cut_short();
    }
    let counts = super::metrics::Counts {
        commands: shared.commandstats.total_calls(None),
        input_bytes: shared.net_counter(|n| &n.bytes_received),
        output_bytes: shared.net_counter(|n| &n.bytes_copied)
            + shared.net_counter(|n| &n.bytes_referenced),
    };
    shared
        .metrics
        .sample(Instant::now(), counts, shared.store.stats().bytes as u64);
}
