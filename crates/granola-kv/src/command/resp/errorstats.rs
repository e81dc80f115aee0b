//! INFO errorstats: error replies counted by their code (the first word:
//! `ERR`, `WRONGTYPE`, `NOAUTH`...), as Redis counts them — a command's
//! own error and a request refused before it ran — with the total in INFO
//! stats (`total_error_replies`). At most [`MAX_CODES`] codes are kept,
//! as in Redis; errors of newer codes count in the total only.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Distinct codes kept (Redis keeps 128).
pub const MAX_CODES: usize = 128;

/// The longest code kept; a longer first word is cut.
const MAX_CODE_LEN: usize = 32;

/// An error reply's code, taken from its first bytes.
#[derive(Clone, Copy, Default)]
pub struct ErrorCode {
    bytes: [u8; MAX_CODE_LEN],
    len: u8,
}

impl ErrorCode {
    /// The code of `reply` (`-CODE rest\r\n`), if it is an error.
    pub fn of(reply: &[u8]) -> Option<ErrorCode> {
        let text = reply.strip_prefix(b"-")?;
        let end = text
            .iter()
            .position(|&b| b == b' ' || b == b'\r')
            .unwrap_or(text.len())
            .min(MAX_CODE_LEN);
        let mut code = ErrorCode::default();
        code.bytes[..end].copy_from_slice(&text[..end]);
        code.len = end as u8;
        Some(code)
    }

    /// A code given as text (a refusal written elsewhere).
    pub fn named(name: &str) -> ErrorCode {
        ErrorCode::of(format!("-{name}").as_bytes()).unwrap_or_default()
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The counters of one server.
#[derive(Debug, Default)]
pub struct ErrorStats {
    by_code: Mutex<BTreeMap<Vec<u8>, u64>>,
    total: AtomicU64,
}

impl ErrorStats {
    /// Counts one error reply.
    pub fn add(&self, code: ErrorCode) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let mut map = self.by_code.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(code.as_bytes()) {
            *n += 1;
        } else if map.len() < MAX_CODES {
            map.insert(code.as_bytes().to_vec(), 1);
        }
    }

    /// `CONFIG RESETSTAT`: no errors so far.
    pub fn reset(&self) {
        self.by_code
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.total.store(0, Ordering::Relaxed);
    }

    /// Error replies so far.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// INFO's `# Errorstats` lines, codes in byte order (as Redis lists
    /// them).
    pub fn write_section(&self, t: &mut String) {
        let map = self.by_code.lock().unwrap_or_else(|e| e.into_inner());
        for (code, n) in map.iter() {
            let _ = write!(
                t,
                "errorstat_{}:count={n}\r\n",
                String::from_utf8_lossy(code)
            );
        }
    }
}
