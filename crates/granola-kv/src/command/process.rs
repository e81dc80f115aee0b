//! Facts about the server process that `stats` and `INFO` report.

/// User and system CPU seconds of the process, from `/proc/self/stat`
/// (in clock ticks of 1/100 s, Linux's USER_HZ).
pub fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the parenthesised command name; utime and stime are
    // the 14th and 15th fields of the line.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (ticks(11), ticks(12))
}

/// Resident memory of the process in bytes (`VmRSS` of
/// `/proc/self/status`; 0 if unreadable).
pub fn rss_bytes() -> u64 {
    kib_field("/proc/self/status", "VmRSS:") * 1024
}

/// The machine's memory in bytes (`MemTotal` of `/proc/meminfo`; 0 if
/// unreadable).
pub fn total_memory_bytes() -> u64 {
    kib_field("/proc/meminfo", "MemTotal:") * 1024
}

/// The `<name> <n> kB` line of a `/proc` file, in KiB.
fn kib_field(path: &str, name: &str) -> u64 {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_and_machine() {
        let rss = rss_bytes();
        let total = total_memory_bytes();
        assert!(rss > 1 << 20 && rss < total, "{rss} of {total}");
        let (user, sys) = cpu_seconds();
        assert!(user >= 0.0 && sys >= 0.0);
    }
}
