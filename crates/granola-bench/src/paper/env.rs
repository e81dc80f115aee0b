//! The machine and its processes, from `/proc`: load average, CPU model,
//! per-CPU busy time, a process's CPU time and resident memory, the date.

use serde::Serialize;
use std::path::Path;

/// What the machine was and how busy it was (the JSON `machine` object).
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `model name` of the first CPU in `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus: usize,
    /// Kernel release.
    pub kernel: String,
    /// Total memory, GiB.
    pub mem_gib: f64,
    /// `/proc/loadavg` (1, 5, 15 min) when the experiment started.
    pub loadavg_start: [f64; 3],
    /// The same when it finished.
    pub loadavg_end: [f64; 3],
    /// Versions of the programs involved (`redis-server --version`, …).
    pub versions: std::collections::BTreeMap<String, String>,
}

impl Machine {
    /// Reads the static facts and the current load.
    pub fn probe() -> Machine {
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| "unknown".into());
        let mem_kib = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        Machine {
            cpu_model,
            // Not available_parallelism: this process is pinned to one CPU.
            cpus: cpuinfo
                .lines()
                .filter(|l| l.starts_with("processor"))
                .count()
                .max(1),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
            mem_gib: (mem_kib / (1 << 20) as f64 * 10.0).round() / 10.0,
            loadavg_start: loadavg(),
            loadavg_end: [0.0; 3],
            versions: Default::default(),
        }
    }
}

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `/proc/loadavg`: the 1, 5 and 15 minute load averages.
pub fn loadavg() -> [f64; 3] {
    let s = read("/proc/loadavg");
    let mut it = s
        .split_whitespace()
        .map(|v| v.parse::<f64>().unwrap_or(0.0));
    [
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
        it.next().unwrap_or(0.0),
    ]
}

/// Clock ticks per second of `/proc` times (USER_HZ; 100 on Linux).
const TICKS: f64 = 100.0;

/// CPU time (user + system, all threads) of process `pid`, in seconds;
/// `None` if it is gone.
pub fn process_cpu_s(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at
    // field 3 (state); utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS)
}

/// Resident memory (`VmRSS`) of process `pid`, in bytes.
pub fn process_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// One CPU's tick counters from `/proc/stat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system: time some task ran.
    pub task: u64,
    /// irq + softirq (on loopback, largely the network stack's own work).
    pub irq: u64,
    /// steal: the hypervisor ran someone else.
    pub steal: u64,
    /// All columns but guest time.
    pub total: u64,
}

/// Tick counters of each CPU (`/proc/stat` `cpuN` lines, in order).
pub fn cpu_ticks() -> Vec<CpuTicks> {
    read("/proc/stat")
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .map(|l| {
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().unwrap_or(0))
                .collect();
            let f = |i: usize| v.get(i).copied().unwrap_or(0);
            CpuTicks {
                task: f(0) + f(1) + f(2),
                irq: f(5) + f(6),
                steal: f(7),
                total: (0..8).map(f).sum(),
            }
        })
        .collect()
}

/// How one CPU was used between two [`cpu_ticks`] readings (fractions of
/// its time).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct CpuShare {
    /// Not idle (tasks, interrupts, steal).
    pub busy: f64,
    /// Tasks (user + system).
    pub task: f64,
    /// Interrupts and softirqs (on loopback, much of the network stack).
    pub irq: f64,
    /// Stolen by the hypervisor.
    pub steal: f64,
}

/// The share of each CPU between two readings.
pub fn cpu_share(before: &[CpuTicks], after: &[CpuTicks]) -> Vec<CpuShare> {
    before
        .iter()
        .zip(after)
        .map(|(b, a)| {
            let t = a.total.saturating_sub(b.total);
            if t == 0 {
                return CpuShare::default();
            }
            let f = |x: u64, y: u64| x.saturating_sub(y) as f64 / t as f64;
            CpuShare {
                busy: f(a.task + a.irq + a.steal, b.task + b.irq + b.steal),
                task: f(a.task, b.task),
                irq: f(a.irq, b.irq),
                steal: f(a.steal, b.steal),
            }
        })
        .collect()
}

/// Seconds one CPU spent on tasks and interrupts between two
/// [`cpu_ticks`] readings (idle and steal left out): a server's whole cost
/// when it is pinned alone there, softirq work included, which the kernel
/// charges to no process.
pub fn cpu_work_s(before: &[CpuTicks], after: &[CpuTicks], cpu: usize) -> f64 {
    match (before.get(cpu), after.get(cpu)) {
        (Some(b), Some(a)) => (a.task + a.irq).saturating_sub(b.task + b.irq) as f64 / TICKS,
        _ => 0.0,
    }
}

/// The current UTC time as `2026-11-21T13:05:00Z`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format_utc(secs)
}

/// Formats seconds since the epoch as an ISO 8601 UTC timestamp.
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// First line of `program args` (stdout or stderr), trimmed; `None` if it
/// does not run.
pub fn version_of(program: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    String::from_utf8_lossy(&text)
        .lines()
        .next()
        .map(|l| l.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_795_266_300), "2026-11-21T13:05:00Z");
    }

    #[test]
    fn proc_readers() {
        let me = std::process::id();
        assert!(process_cpu_s(me).is_some());
        assert!(process_rss(me).unwrap() > 0);
        let a = cpu_ticks();
        assert!(!a.is_empty());
        assert_eq!(cpu_share(&a, &a), vec![CpuShare::default(); a.len()]);
        assert!(loadavg()[0] >= 0.0);
    }
}
