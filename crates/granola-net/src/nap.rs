//! Idle naps: a worker that has just served something and finds nothing
//! ready sleeps briefly on a timer, then looks once more, before it
//! blocks (in `epoll_wait`, or on the io_uring loop in an
//! `io_uring_enter` that waits for completions).
//!
//! Why. A blocked worker is woken by whichever peer sends
//! next, and the sender's CPU pays for that wake-up (a cross-CPU
//! interrupt; several microseconds on a virtual machine). A server faster
//! than its clients blocks every few requests, so its clients spend part
//! of their CPU waking it: on the 2-CPU VM this was measured on,
//! redis-benchmark woke granola-kv about 10 000 times per million GETs and
//! used 10 % more CPU per request than against Redis 7, which is slower and
//! almost never blocks (bench/RESULTS.md, "Idle naps"). A napping worker
//! is on no wait queue: what arrives meanwhile wakes nobody, and the nap
//! ends on the worker's own timer.
//!
//! What it costs. A request that arrives during a nap waits for its end,
//! so a nap lasts at most half of the turn that preceded it (a worker that
//! served one small request naps a few microseconds) and at most the
//! configured longest nap. And each nap is a timer wake-up of the
//! worker's own, taken whether or not anything arrives meanwhile: the
//! server spends more CPU per request
//! (on the VM above 0.57 → 0.65 µs per pipelined GET, 20 → 28 µs per
//! unpipelined one on a single connection) to save its clients theirs.
//! Under a CPU quota that CPU comes out of the quota, where it bought less
//! than it cost; so a worker in a cgroup with a CPU quota does not nap (it
//! looks for one every sweep). And since the server's CPU per request is
//! what a shared machine pays, naps are off unless configured
//! ([`ServerConfig::idle_nap`](crate::server::ServerConfig::idle_nap);
//! granola-kv's `--idle-nap-us`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How late a napping worker's timer may fire (the kernel's default
/// slack, 50 µs, is as long as a whole nap).
pub const TIMER_SLACK: Duration = Duration::from_micros(1);

/// Shorter naps are not worth a timer.
const MIN_NAP: Duration = Duration::from_micros(1);

/// One worker's nap policy.
#[derive(Debug)]
pub struct IdleNap {
    /// The longest nap (zero: never nap).
    max: Duration,
    /// A CPU quota applies to the process (as last looked up).
    quota: bool,
}

impl IdleNap {
    /// Naps of at most `max` (`None`: never nap), unless a CPU quota
    /// applies to the process.
    pub fn new(max: Option<Duration>) -> IdleNap {
        let mut nap = IdleNap {
            max: max.unwrap_or(Duration::ZERO),
            quota: false,
        };
        nap.refresh();
        nap
    }

    /// Whether naps are configured at all.
    pub fn enabled(&self) -> bool {
        !self.max.is_zero()
    }

    /// Looks again whether a CPU quota applies (the process can be moved
    /// into a cgroup, or its quota changed, while it runs).
    pub fn refresh(&mut self) {
        if self.enabled() {
            self.quota = cpu_quota_applies();
        }
    }

    /// How long to nap after a turn that began at `turn_started` and served
    /// something, with nothing ready now; `None`: block at once.
    pub fn length(&self, turn_started: Instant) -> Option<Duration> {
        if !self.enabled() || self.quota {
            return None;
        }
        let nap = (turn_started.elapsed() / 2).min(self.max);
        (nap >= MIN_NAP).then_some(nap)
    }
}

/// Whether a cgroup this process is in, or one above it, limits its CPU
/// time: cgroup v2's `cpu.max` or v1's `cpu.cfs_quota_us`. False where
/// neither can be read.
pub fn cpu_quota_applies() -> bool {
    let Ok(own) = std::fs::read_to_string("/proc/self/cgroup") else {
        return false;
    };
    quota_files(&own)
        .iter()
        .any(|file| ancestors(file).any(|f| has_quota(&f)))
}

/// The CPU quota file of each cgroup hierarchy named in `proc_self_cgroup`
/// (the text of `/proc/self/cgroup`) that has a `cpu` controller, at the
/// usual mount points.
fn quota_files(proc_self_cgroup: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in proc_self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        if controllers.is_empty() {
            files.push(Path::new("/sys/fs/cgroup").join(rel).join("cpu.max"));
        } else if controllers.split(',').any(|c| c == "cpu") {
            for mount in ["cpu", "cpu,cpuacct", "cpuacct,cpu"] {
                let dir = Path::new("/sys/fs/cgroup").join(mount);
                if dir.is_dir() {
                    files.push(dir.join(rel).join("cpu.cfs_quota_us"));
                    break;
                }
            }
        }
    }
    files
}

/// `file`, then the same file name in each directory above its own, below
/// `/sys/fs/cgroup` (v2's root has no quota file; a v1 controller's root
/// has one that never limits).
fn ancestors(file: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    let name = file.file_name().unwrap_or_default();
    file.ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with("/sys/fs/cgroup") && *dir != Path::new("/sys/fs/cgroup"))
        .map(move |dir| dir.join(name))
}

/// Whether a quota file (either version) sets a limit.
fn has_quota(file: &Path) -> bool {
    std::fs::read_to_string(file).is_ok_and(|text| limits(&text))
}

/// Whether the text of `cpu.max` (`max 100000` or `50000 100000`) or
/// `cpu.cfs_quota_us` (`-1` or `50000`) sets a limit.
fn limits(text: &str) -> bool {
    match text.split_whitespace().next() {
        Some("max") | None => false,
        Some(quota) => quota.parse::<i64>().is_ok_and(|q| q > 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_texts() {
        assert!(!limits("max 100000\n"));
        assert!(limits("50000 100000\n"));
        assert!(!limits("-1\n"));
        assert!(limits("5000\n"));
        assert!(!limits(""));
        assert!(!limits("garbage"));
    }

    #[test]
    fn quota_files_per_version() {
        let v2 = quota_files("0::/system.slice/app.service\n");
        assert_eq!(
            v2,
            vec![PathBuf::from(
                "/sys/fs/cgroup/system.slice/app.service/cpu.max"
            )]
        );
        // v1 lines without a cpu controller name no quota file.
        assert!(quota_files("4:memory:/a\n3:pids:/a\n").is_empty());
        assert!(quota_files("not a cgroup line\n").is_empty());
    }

    #[test]
    fn the_walk_stays_under_the_mount() {
        let walked: Vec<_> = ancestors(Path::new("/sys/fs/cgroup/a/b/cpu.max")).collect();
        assert_eq!(
            walked,
            vec![
                PathBuf::from("/sys/fs/cgroup/a/b/cpu.max"),
                PathBuf::from("/sys/fs/cgroup/a/cpu.max"),
            ]
        );
    }

    #[test]
    fn naps_are_half_the_turn_and_capped() {
        let nap = IdleNap {
            max: Duration::from_micros(50),
            quota: false,
        };
        let long_turn = Instant::now() - Duration::from_millis(5);
        assert_eq!(nap.length(long_turn), Some(Duration::from_micros(50)));
        // A turn that just began: under a microsecond of nap, so none.
        assert_eq!(nap.length(Instant::now() + Duration::from_secs(1)), None);
        let off = IdleNap {
            max: Duration::ZERO,
            quota: false,
        };
        assert_eq!(off.length(long_turn), None);
        let quota = IdleNap {
            max: Duration::from_micros(50),
            quota: true,
        };
        assert_eq!(quota.length(long_turn), None);
    }
}
