//! The thread that runs the store's active expiry ([`Store::expire_cycle`])
//! ten times a second, as Redis's server cron does (`hz 10`), each run
//! held to a millisecond: at most 1 % of a CPU, spent only while expiring
//! items exist.

use crate::store::Store;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Time between two cycles.
const PERIOD: Duration = Duration::from_millis(100);

/// Most time one cycle takes.
const BUDGET: Duration = Duration::from_millis(1);

/// Starts the thread; it ends once `store` is dropped.
pub fn spawn(store: &Arc<Store>) -> std::io::Result<()> {
    let store: Weak<Store> = Arc::downgrade(store);
    std::thread::Builder::new()
        .name("granola-expire".into())
        .spawn(move || loop {
            std::thread::sleep(PERIOD);
            let Some(store) = store.upgrade() else {
                return;
            };
            store.expire_cycle(BUDGET);
        })?;
    Ok(())
}
