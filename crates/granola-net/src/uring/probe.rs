//! Run-time checks that io_uring can be used here, each failure with a
//! reason for the fallback log line.

/// Oldest kernel with every feature the loop uses: multishot accept (5.19),
/// provided-buffer rings (5.19), multishot receive and `SEND_ZC` (6.0).
const MIN_KERNEL: (u32, u32) = (6, 0);

/// `Ok` if an io_uring event loop can run in this process.
pub(crate) fn probe() -> Result<(), String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_err(|e| format!("cannot read the kernel version: {e}"))?;
    let version = parse_release(release.trim())
        .ok_or_else(|| format!("unparsable kernel version {:?}", release.trim()))?;
    if version < MIN_KERNEL {
        return Err(format!(
            "kernel {} is older than {}.{}",
            release.trim(),
            MIN_KERNEL.0,
            MIN_KERNEL.1
        ));
    }
    // 0: allowed; 1: only for members of kernel.io_uring_group (the ring
    // creation below tells); 2: disabled for everyone.
    if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
        if v.trim() == "2" {
            return Err("kernel.io_uring_disabled = 2".into());
        }
    }
    super::ring::probe_ring()
}

/// `"6.18.44-foo"` -> `(6, 18)`.
fn parse_release(s: &str) -> Option<(u32, u32)> {
    let mut it = s.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::parse_release;

    #[test]
    fn kernel_release() {
        assert_eq!(parse_release("6.18.44-fc-v669"), Some((6, 18)));
        assert_eq!(parse_release("5.4.0"), Some((5, 4)));
        assert_eq!(parse_release("garbage"), None);
    }
}
