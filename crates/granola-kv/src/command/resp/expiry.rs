//! Expiry arguments shared by SET, GETEX, EXPIRE and friends: parsing,
//! Redis' range checks, and the conversion to the store's absolute
//! milliseconds.

use super::parse_i64;

/// An expiry argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Relative, in ms (EX/PX, EXPIRE/PEXPIRE).
    In(i64),
    /// Absolute Unix ms (EXAT/PXAT, EXPIREAT/PEXPIREAT).
    At(i64),
}

/// Why an expiry argument was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// Not an integer.
    NotInteger,
    /// Out of range (overflows when converted, or not positive where it
    /// must be).
    Range,
}

/// Parses `n` in `unit` ms (1000 for seconds), as relative or absolute.
/// Redis refuses values whose ms or absolute time overflow.
pub fn parse(arg: &[u8], unit: i64, absolute: bool, now_ms: u64) -> Result<When, Bad> {
    let n = parse_i64(arg).ok_or(Bad::NotInteger)?;
    let ms = n.checked_mul(unit).ok_or(Bad::Range)?;
    if absolute {
        Ok(When::At(ms))
    } else {
        (now_ms as i64).checked_add(ms).ok_or(Bad::Range)?;
        Ok(When::In(ms))
    }
}

impl When {
    /// The absolute time in Unix ms (may be in the past: <= now).
    pub fn at_ms(self, now_ms: u64) -> i64 {
        match self {
            When::In(ms) => (now_ms as i64).saturating_add(ms),
            When::At(ms) => ms,
        }
    }
}
