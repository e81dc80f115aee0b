//! A CPU cap for the servers under test: a cgroup whose CFS bandwidth
//! quota lets its processes run for a fraction of one CPU.
//!
//! On a 2-CPU machine one `redis-benchmark` process on the client CPU is
//! often slower than the server it drives, so an uncapped run measures
//! the client. Capped at, say, half a CPU, every server is the bottleneck
//! again and requests/s compare the servers' work per CPU — the softirq
//! work they do on their own CPU included, since the kernel charges that
//! to the task it runs in. cgroup v2 (`cpu.max`) is used where its `cpu`
//! controller is available, else cgroup v1 (`cpu.cfs_quota_us`).

use std::fs;
use std::path::{Path, PathBuf};

/// The CFS period: short, so a capped server stalls for at most a few
/// milliseconds at a time.
const PERIOD_US: u64 = 10_000;

/// A cgroup limiting its processes to a share of one CPU; removed on drop
/// (once its processes have exited).
pub struct CpuCap {
    dir: PathBuf,
    fraction: f64,
}

impl CpuCap {
    /// Creates the cgroup with a quota of `fraction` of one CPU (0 < f ≤ 1).
    pub fn new(fraction: f64) -> Result<CpuCap, String> {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(format!(
                "--server-cpu-cap {fraction}: give a share of one CPU in (0, 1]"
            ));
        }
        let quota = ((PERIOD_US as f64) * fraction).round().max(1000.0) as u64;
        let name = format!("granola-bench-cap-{}", std::process::id());
        let v2 = Path::new("/sys/fs/cgroup");
        let v2_cpu = fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "cpu"));
        let dir = if v2_cpu {
            // The parent must hand the cpu controller down.
            let _ = fs::write(v2.join("cgroup.subtree_control"), "+cpu");
            let dir = v2.join(&name);
            make(&dir)?;
            write(&dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
            dir
        } else {
            let dir = Path::new("/sys/fs/cgroup/cpu").join(&name);
            make(&dir)?;
            write(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
            write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
            dir
        };
        Ok(CpuCap { dir, fraction })
    }

    /// The share of one CPU the quota allows.
    pub fn fraction(&self) -> f64 {
        self.fraction
    }

    /// Moves process `pid` (all its threads) into the cgroup.
    pub fn add(&self, pid: u32) -> Result<(), String> {
        write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }

    /// Seconds the cgroup's tasks have spent held back by the quota
    /// (`cpu.stat`: cgroup v2's `throttled_usec`, v1's `throttled_time`
    /// in nanoseconds); 0 where the kernel does not say.
    pub fn throttled_s(&self) -> f64 {
        let stat = fs::read_to_string(self.dir.join("cpu.stat")).unwrap_or_default();
        let field = |name: &str| {
            stat.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
        };
        field("throttled_usec ")
            .map(|us| us / 1e6)
            .or_else(|| field("throttled_time ").map(|ns| ns / 1e9))
            .unwrap_or(0.0)
    }
}

impl Drop for CpuCap {
    fn drop(&mut self) {
        // Fails while a process is still inside: the cgroup is then left
        // behind, empty once that process exits, and says whose it was.
        let _ = fs::remove_dir(&self.dir);
    }
}

fn make(dir: &Path) -> Result<(), String> {
    fs::create_dir(dir).map_err(|e| {
        format!(
            "create cgroup {}: {e} (the CPU cap needs root and a cgroup cpu controller)",
            dir.display()
        )
    })
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    fs::write(path, value).map_err(|e| format!("write {value} to {}: {e}", path.display()))
}
