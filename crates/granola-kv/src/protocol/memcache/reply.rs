//! Classic memcached replies. Fixed lines are constants (`sink.copy(END)`);
//! lines with values are functions. Meta replies are methods of the meta
//! commands ([`super::MetaGet::write_hit`], ...).

use crate::protocol::num::Line;
use crate::protocol::ReplySink;
use granola::Buf;

/// Ends a retrieval (and `stats`).
pub const END: &[u8] = b"END\r\n";
/// Storage succeeded.
pub const STORED: &[u8] = b"STORED\r\n";
/// `add`/`replace`/`append`/`prepend` condition not met.
pub const NOT_STORED: &[u8] = b"NOT_STORED\r\n";
/// `cas`: the item changed since it was fetched.
pub const EXISTS: &[u8] = b"EXISTS\r\n";
/// No such item (`cas`, `delete`, `incr`/`decr`, `touch`).
pub const NOT_FOUND: &[u8] = b"NOT_FOUND\r\n";
/// `delete` succeeded.
pub const DELETED: &[u8] = b"DELETED\r\n";
/// `touch` succeeded.
pub const TOUCHED: &[u8] = b"TOUCHED\r\n";
/// `flush_all`, `verbosity`.
pub const OK: &[u8] = b"OK\r\n";
/// `stats reset`.
pub const RESET: &[u8] = b"RESET\r\n";
/// Unknown command (also [`crate::protocol::ErrorKind::McError`]).
pub const ERROR: &[u8] = b"ERROR\r\n";
/// `mn`.
pub const MN: &[u8] = b"MN\r\n";
/// Meta miss without flags (`me` miss).
pub const EN: &[u8] = b"EN\r\n";
/// `incr`/`decr`/`ma` on a value that is not a decimal number.
pub const NON_NUMERIC: &[u8] = b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
/// The store could not allocate.
pub const OUT_OF_MEMORY: &[u8] = b"SERVER_ERROR out of memory storing object\r\n";

/// Outcome of a storage command (`set`... and `ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreResult {
    /// `STORED` / `HD`.
    Stored,
    /// `NOT_STORED` / `NS`.
    NotStored,
    /// `EXISTS` / `EX`.
    Exists,
    /// `NOT_FOUND` / `NF`.
    NotFound,
}

/// Writes `STORED`, `NOT_STORED`, `EXISTS` or `NOT_FOUND`.
pub fn write_store_result<S: ReplySink + ?Sized>(sink: &mut S, result: StoreResult) {
    sink.copy(match result {
        StoreResult::Stored => STORED,
        StoreResult::NotStored => NOT_STORED,
        StoreResult::Exists => EXISTS,
        StoreResult::NotFound => NOT_FOUND,
    });
}

/// Writes one retrieval hit: `VALUE <key> <flags> <bytes>[ <cas>]\r\n`
/// (copied), the value ([`ReplySink::value`]), then `\r\n`. Pass `cas` for
/// `gets`/`gats`.
pub fn write_value<S: ReplySink + ?Sized>(
    sink: &mut S,
    key: &[u8],
    flags: u32,
    value: &Buf,
    cas: Option<u64>,
) {
    let mut line = Line::new(sink);
    line.push(b"VALUE ")
        .push(key)
        .push(b" ")
        .push_u64(u64::from(flags))
        .push(b" ")
        .push_u64(value.len() as u64);
    if let Some(cas) = cas {
        line.push(b" ").push_u64(cas);
    }
    line.push(b"\r\n");
    line.sink().value(value);
    line.push(b"\r\n");
    line.finish();
}

/// Writes the `incr`/`decr` result: `<value>\r\n`.
pub fn write_number<S: ReplySink + ?Sized>(sink: &mut S, value: u64) {
    let mut line = Line::new(sink);
    line.push_u64(value).push(b"\r\n");
    line.finish();
}

/// Writes `STAT <name> <value>\r\n`.
pub fn write_stat<S: ReplySink + ?Sized>(sink: &mut S, name: &[u8], value: &[u8]) {
    let mut line = Line::new(sink);
    line.push(b"STAT ")
        .push(name)
        .push(b" ")
        .push(value)
        .push(b"\r\n");
    line.finish();
}

/// Writes `STAT <name> <value>\r\n` for a number.
pub fn write_stat_u64<S: ReplySink + ?Sized>(sink: &mut S, name: &[u8], value: u64) {
    let mut line = Line::new(sink);
    line.push(b"STAT ")
        .push(name)
        .push(b" ")
        .push_u64(value)
        .push(b"\r\n");
    line.finish();
}

/// Writes `VERSION <version>\r\n`.
pub fn write_version<S: ReplySink + ?Sized>(sink: &mut S, version: &[u8]) {
    let mut line = Line::new(sink);
    line.push(b"VERSION ").push(version).push(b"\r\n");
    line.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use granola::Pool;

    #[test]
    fn replies() {
        let pool = Pool::with_capacity(1 << 20).unwrap();
        let v = pool.alloc_copy(b"hello").unwrap();
        let mut out = Vec::new();
        write_value(&mut out, b"k1", 7, &v, None);
        write_value(&mut out, b"k2", 0, &v, Some(u64::MAX));
        out.extend_from_slice(END);
        assert_eq!(
            out,
            b"VALUE k1 7 5\r\nhello\r\nVALUE k2 0 5 18446744073709551615\r\nhello\r\nEND\r\n"
        );
        let mut out = Vec::new();
        write_store_result(&mut out, StoreResult::Stored);
        write_store_result(&mut out, StoreResult::NotStored);
        write_store_result(&mut out, StoreResult::Exists);
        write_store_result(&mut out, StoreResult::NotFound);
        write_number(&mut out, 42);
        write_stat(&mut out, b"version", b"1.6.0");
        write_stat_u64(&mut out, b"curr_items", 3);
        write_version(&mut out, b"1.6.21");
        assert_eq!(
            out,
            &b"STORED\r\nNOT_STORED\r\nEXISTS\r\nNOT_FOUND\r\n42\r\n\
STAT version 1.6.0\r\nSTAT curr_items 3\r\nVERSION 1.6.21\r\n"[..]
        );
    }
}
