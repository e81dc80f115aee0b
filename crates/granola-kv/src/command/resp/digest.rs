//! `DEBUG DIGEST` and `DEBUG DIGEST-VALUE`: a SHA-1 signature of the
//! whole dataset or of single values, computed by Redis's rules so that
//! the same data gives the same hex string on granola-kv, Redis and
//! Valkey. Test suites and migration checks compare datasets with it
//! (after DUMP/RESTORE, MIGRATE, or a copy between servers).
//!
//! Redis's rules, over logical content only (never an encoding):
//!
//! - `xor(d, data)`: `d ^= SHA1(data)`; order-free, for the members of
//!   sets, hashes and sorted sets and for the keys of a database.
//! - `mix(d, data)`: `d = SHA1(d ^ SHA1(data))`; ordered, for a list's
//!   elements, a stream's entries, and each pair of a hash or sorted set.
//! - A key: `mix(0, key)`, then the value's digest is mixed into it: its
//!   type number, its content, and `xor("!!expire!!")` if it has a TTL.
//! - The dataset: for each database holding keys, in number order, the
//!   running digest is mixed with the number (4 bytes, big-endian), then
//!   every key's digest is xored in (`xor`, so its SHA-1).
//!
//! A dataset written meanwhile can give a digest of no one moment: the
//! walk is not a snapshot (Redis computes it with every other client
//! held back).

use super::Ctx;
use crate::command::databases::split_stored;
use crate::store::{Item, Kind};
use std::ops::Bound;

type Digest = [u8; 20];

fn sha1(data: &[u8]) -> Digest {
    sha1_smol::Sha1::from(data).digest().bytes()
}

/// `d ^= other`.
fn xor_in(d: &mut Digest, other: &Digest) {
    for (a, b) in d.iter_mut().zip(other) {
        *a ^= b;
    }
}

/// `d ^= SHA1(data)`.
fn xor(d: &mut Digest, data: &[u8]) {
    xor_in(d, &sha1(data));
}

/// `d = SHA1(d ^ SHA1(data))`.
fn mix(d: &mut Digest, data: &[u8]) {
    xor(d, data);
    *d = sha1(d);
}

/// The type numbers Redis mixes in (its `OBJ_*` constants).
fn type_number(kind: Kind) -> u32 {
    match kind {
        Kind::String => 0,
        Kind::List => 1,
        Kind::Set => 2,
        Kind::ZSet => 3,
        Kind::Hash => 4,
        Kind::Stream => 6,
    }
}

/// Mixes `item`'s value into `d`, as Redis's `xorObjectDigest` does.
fn mix_value(d: &mut Digest, item: &Item) {
    mix(d, &type_number(item.kind()).to_be_bytes());
    match item.kind() {
        Kind::String => mix(d, item.value_bytes()),
        Kind::List => {
            for e in item.list_range(0, -1) {
                mix(d, &e);
            }
        }
        Kind::Set => {
            item.read_dict(|dict| {
                for (member, _) in dict.iter() {
                    xor(d, member.bytes());
                }
            });
        }
        Kind::Hash => {
            item.read_dict(|dict| {
                for (field, value) in dict.iter() {
                    let mut pair = Digest::default();
                    mix(&mut pair, field.bytes());
                    mix(&mut pair, value.bytes());
                    xor(d, &pair);
                }
            });
        }
        Kind::ZSet => {
            item.read_dict(|dict| {
                for (member, _) in dict.iter() {
                    let score = dict.score(member.bytes()).unwrap_or(0.0);
                    let mut pair = Digest::default();
                    mix(&mut pair, member.bytes());
                    mix(&mut pair, format_g17(score).as_bytes());
                    xor(d, &pair);
                }
            });
        }
        Kind::Stream => {
            item.read_dict(|dict| {
                for e in dict.stream_range(Bound::Unbounded, Bound::Unbounded) {
                    mix(d, format!("{}.{}", e.id.ms, e.id.seq).as_bytes());
                    let fields = e.fields.bytes();
                    for r in e.parts() {
                        mix(d, &fields[r]);
                    }
                }
            });
        }
    }
    if item.expires_at_ms() != 0 {
        xor(d, b"!!expire!!");
    }
}

fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// `DEBUG DIGEST`: the dataset's signature (40 zeros when it is empty).
pub(super) fn dataset(ctx: &mut Ctx<'_>) {
    // Each database's keys' digests, xored in, by database number.
    let mut per_db: Vec<Option<Digest>> = vec![None; 256];
    let mut cursor = 0;
    loop {
        cursor = ctx.shared.store.scan(cursor, 1024, |item| {
            let (stored, key) = split_stored(item.key());
            let number = ctx.shared.dbs.number(stored);
            let mut d = Digest::default();
            mix(&mut d, key);
            mix_value(&mut d, item);
            xor(
                per_db[usize::from(number)].get_or_insert_with(Digest::default),
                &d,
            );
        });
        if cursor == 0 {
            break;
        }
    }
    let mut d = Digest::default();
    for (number, sum) in per_db.iter().enumerate() {
        if let Some(sum) = sum {
            mix(&mut d, &(number as u32).to_be_bytes());
            xor_in(&mut d, sum);
        }
    }
    ctx.simple(hex(&d).as_bytes());
}

/// `DEBUG DIGEST-VALUE key ...`: each value's signature, without its key
/// (40 zeros for a missing key).
pub(super) fn values(ctx: &mut Ctx<'_>, keys: &[&[u8]]) {
    ctx.array(keys.len());
    for key in keys {
        let mut d = Digest::default();
        if let Some(item) = ctx.db.peek(key) {
            mix_value(&mut d, &item);
        }
        ctx.simple(hex(&d).as_bytes());
    }
}

/// A double as C's `printf("%.17g")` writes it: 17 significant digits,
/// trailing zeros dropped, exponent form below 1e-4 and from 1e17.
fn format_g17(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rounded to 17 significant digits first: %g picks its form by the
    // exponent of the rounded number.
    let sci = format!("{f:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    fn trim(s: &str) -> &str {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.')
        } else {
            s
        }
    }
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.unsigned_abs())
    } else {
        let fixed = format!("{f:.*}", (16 - exp) as usize);
        trim(&fixed).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::format_g17;

    #[test]
    fn doubles_print_as_printf_g17() {
        // What glibc's printf("%.17g") writes for each.
        for (f, text) in [
            (1.0, "1"),
            (1.1, "1.1000000000000001"),
            (-2.5, "-2.5"),
            (0.1, "0.10000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e16, "10000000000000000"),
            (3.0e300, "3.0000000000000002e+300"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (0.0, "0"),
        ] {
            assert_eq!(format_g17(f), text, "{f:e}");
        }
    }
}
