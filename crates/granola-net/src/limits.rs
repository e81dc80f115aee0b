//! Connection limits, as memcached and Redis keep them:
//!
//! - at start, the connection limit is checked against `RLIMIT_NOFILE`:
//!   the soft limit is raised (up to the hard one) to fit it, or the
//!   connection limit is lowered to what fits, with a log line
//!   ([`fit_conn_limit`]);
//! - when `accept` fails for lack of descriptors or memory (`EMFILE`,
//!   `ENFILE`, `ENOBUFS`, `ENOMEM`), the worker stops accepting for a short
//!   pause instead of retrying in a loop, and says so in at most one log
//!   line per [`LOG_EVERY`] ([`AcceptBackoff`]);
//! - a connection over the limit gets the protocol's error line (from
//!   [`Service::refusal`](crate::server::Service::refusal)) before it is
//!   closed ([`refuse`]).
//!
//! The `getrlimit`/`setrlimit` calls themselves are in the syscall module.

use std::io::{self, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Descriptors a server needs besides its connections: listeners and
/// epoll/eventfd per worker, log files, stdio, the occasional pipe.
pub const RESERVED_FDS: usize = 32;

/// How long accepting pauses after the process ran out of descriptors.
pub const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// At most one log line about failing accepts per this long.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// The process's `RLIMIT_NOFILE` as (soft, hard).
pub fn nofile_limit() -> io::Result<(u64, u64)> {
    crate::sys::nofile_limit()
}

/// Sets the soft `RLIMIT_NOFILE` (keeping the hard one; a soft limit above
/// it is lowered to it).
pub fn set_nofile_soft(soft: u64) -> io::Result<()> {
    let (_, hard) = nofile_limit()?;
    crate::sys::set_nofile_limit(soft.min(hard), hard)
}

/// The connection limit the process can honour: `max_conns` if
/// `max_conns + extra_fds` descriptors fit the soft `RLIMIT_NOFILE`
/// (raising it towards the hard limit if needed), else as many as fit
/// (at least 1). Logs what it changed.
pub fn fit_conn_limit(max_conns: usize, extra_fds: usize) -> usize {
    let need = (max_conns + extra_fds) as u64;
    let Ok((soft, hard)) = nofile_limit() else {
        return max_conns;
    };
    if soft >= need {
        return max_conns;
    }
    let target = need.min(hard);
    if target > soft {
        match set_nofile_soft(target) {
            Ok(()) => log::info!(
                "raised the open-file limit (RLIMIT_NOFILE) from {soft} to {target} for {max_conns} connections"
            ),
            Err(e) => log::warn!("cannot raise the open-file limit from {soft} to {target}: {e}"),
        }
    }
    let have = nofile_limit().map_or(soft, |(s, _)| s);
    if have >= need {
        return max_conns;
    }
    let fit = (have as usize).saturating_sub(extra_fds).max(1);
    log::warn!(
        "connection limit lowered from {max_conns} to {fit}: the open-file limit is {have} (hard {hard}) and {extra_fds} descriptors are kept for the server"
    );
    fit
}

/// True for accept errors that mean "no resources right now" (retrying at
/// once would fail the same way).
pub fn is_resource_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// A worker's state after an accept failed for lack of resources.
#[derive(Debug, Default)]
pub struct AcceptBackoff {
    paused_until: Option<Instant>,
    last_log: Option<Instant>,
    suppressed: u64,
}

impl AcceptBackoff {
    /// Records a failed accept: accepting pauses for [`ACCEPT_PAUSE`]; a log
    /// line is written unless one was in the last [`LOG_EVERY`] (then the
    /// failure is counted into the next line).
    pub fn failed(&mut self, service: &str, e: &io::Error, now: Instant) {
        self.paused_until = Some(now + ACCEPT_PAUSE);
        if self
            .last_log
            .is_some_and(|t| now.duration_since(t) < LOG_EVERY)
        {
            self.suppressed += 1;
            return;
        }
        let more = match self.suppressed {
            0 => String::new(),
            n => format!(" ({n} more since the last report)"),
        };
        log::warn!(
            "{service}: accept failed: {e}; not accepting for {} ms at a time{more}",
            ACCEPT_PAUSE.as_millis()
        );
        self.last_log = Some(now);
        self.suppressed = 0;
    }

    /// True while accepting is paused.
    pub fn paused(&self) -> bool {
        self.paused_until.is_some()
    }

    /// True (and the pause ends) once the pause is over.
    pub fn resume_due(&mut self, now: Instant) -> bool {
        match self.paused_until {
            Some(t) if now >= t => {
                self.paused_until = None;
                true
            }
            _ => false,
        }
    }
}

/// Admits a freshly accepted connection, or — when `max_conns` are open —
/// answers it with the service's refusal line, closes it, counts it and
/// logs (rate-limited: the 1st, 2nd, 4th, 8th... refusal). `None`: refused.
pub(crate) fn admit(
    stats: &crate::server::ServerStats,
    max_conns: usize,
    service: &dyn crate::server::Service,
    stream: TcpStream,
    peer: std::net::SocketAddr,
) -> Option<TcpStream> {
    use std::sync::atomic::Ordering;
    if (stats.conns_open.load(Ordering::Relaxed) as usize) < max_conns {
        return Some(stream);
    }
    let refused = stats.conns_refused.fetch_add(1, Ordering::Relaxed) + 1;
    if refused.is_power_of_two() {
        log::warn!(
            "{}: refusing {peer}: {max_conns} connections open (max_conns); {refused} refused so far",
            service.name(),
        );
    }
    refuse(stream, service.refusal());
    None
}

/// Answers a connection over the limit with `line` (best effort: one
/// non-blocking write into a fresh socket's empty send buffer) and closes
/// it.
pub fn refuse(mut stream: TcpStream, line: Option<&[u8]>) {
    if let Some(line) = line {
        let _ = stream.set_nonblocking(true);
        let _ = stream.write(line);
    }
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_pauses_and_logs_once_per_period() {
        let mut b = AcceptBackoff::default();
        let t0 = Instant::now();
        let e = io::Error::from_raw_os_error(libc::EMFILE);
        assert!(is_resource_error(&e));
        assert!(!is_resource_error(&io::Error::from_raw_os_error(
            libc::ECONNABORTED
        )));
        b.failed("test", &e, t0);
        assert!(b.paused());
        assert!(!b.resume_due(t0 + ACCEPT_PAUSE / 2));
        assert!(b.resume_due(t0 + ACCEPT_PAUSE));
        assert!(!b.paused());
        b.failed("test", &e, t0 + Duration::from_secs(1));
        assert_eq!(
            b.suppressed, 1,
            "second failure within LOG_EVERY is not logged"
        );
        b.failed("test", &e, t0 + LOG_EVERY + Duration::from_secs(1));
        assert_eq!(b.suppressed, 0, "logged again after LOG_EVERY");
    }

    #[test]
    fn conn_limit_fits_the_open_file_limit() {
        let (soft, _) = nofile_limit().unwrap();
        // A limit that fits is kept.
        assert_eq!(fit_conn_limit(4, RESERVED_FDS), 4);
        // An absurd one is lowered to what the (possibly raised) soft
        // limit allows.
        let fit = fit_conn_limit(usize::MAX / 4, RESERVED_FDS);
        let (now, _) = nofile_limit().unwrap();
        assert!(now >= soft);
        assert_eq!(fit, (now as usize - RESERVED_FDS).max(1));
    }
}
