//! `granola-kv`: the cache server binary. `--help` lists the flags.

use clap::Parser;
use granola_kv::server::{self, config::Config};
use signal_hook::consts::{SIGINT, SIGTERM};

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let config = Config::parse();
    let running = match server::start(config) {
        Ok(r) => r,
        Err(e) => {
            log::error!("granola-kv failed to start: {e}");
            std::process::exit(1);
        }
    };
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot install signal handlers: {e}");
            std::process::exit(1);
        }
    };
    if let Some(sig) = signals.forever().next() {
        log::info!("signal {sig}: shutting down");
    }
    running.handle.shutdown();
    running.handle.join();
    log::info!("granola-kv stopped");
}
