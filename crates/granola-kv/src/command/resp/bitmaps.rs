//! Bitmaps: strings read and written as bit arrays (SETBIT, GETBIT,
//! BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO), as Redis numbers the
//! bits: bit 0 is the most significant bit of the first byte. Offsets go
//! up to 2^32 - 1 as in Redis, and a write that would grow the string past
//! `--proto-max-bulk-len` (capped by `-m`) is refused before anything is
//! allocated.

use super::strings::rewrite;
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::Command;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

const ERR_OFFSET: &[u8] = b"ERR bit offset is not an integer or out of range";
const ERR_SYNTAX: &[u8] = b"ERR syntax error";
const ERR_INT: &[u8] = b"ERR value is not an integer or out of range";
const ERR_TOO_BIG: &[u8] = b"ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// A bit offset: 0 ..= 2^32 - 1.
fn bit_offset(b: &[u8]) -> Option<u64> {
    parse_i64(b)
        .filter(|&o| (0..1 << 32).contains(&o))
        .map(|o| o as u64)
}

/// Bytes needed to hold bits `[0, end_bit)`; `None` (error written) past
/// the largest value.
fn bytes_for(ctx: &mut Ctx<'_>, end_bit: u64) -> Option<usize> {
    let n = end_bit.div_ceil(8) as usize;
    if n > ctx.shared.config.max_bulk() {
        ctx.error(ERR_TOO_BIG);
        return None;
    }
    Some(n)
}

fn get_bit(v: &[u8], bit: u64) -> u8 {
    v.get((bit / 8) as usize)
        .map_or(0, |b| (b >> (7 - bit % 8)) & 1)
}

/// `SETBIT key offset value`: the bit's old value.
pub fn setbit(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(bit) = bit_offset(arg(cmd, 2)) else {
        ctx.error(ERR_OFFSET);
        return Step::Done;
    };
    let on = match arg(cmd, 3) {
        b"0" => false,
        b"1" => true,
        _ => {
            ctx.error(b"ERR bit is not an integer or out of range");
            return Step::Done;
        }
    };
    let Some(len) = bytes_for(ctx, bit + 1) else {
        return Step::Done;
    };
    let mut was = 0;
    if rewrite(ctx, arg(cmd, 1), |_, old| {
        let mut v = old.unwrap_or_default().to_vec();
        was = get_bit(&v, bit);
        if v.len() < len {
            v.resize(len, 0);
        }
        let mask = 1u8 << (7 - bit % 8);
        let byte = &mut v[(bit / 8) as usize];
        *byte = if on { *byte | mask } else { *byte & !mask };
        Some(v)
    })
    .is_some()
    {
        ctx.int(i64::from(was));
    }
    Step::Done
}

/// `GETBIT key offset`.
pub fn getbit(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(bit) = bit_offset(arg(cmd, 2)) else {
        ctx.error(ERR_OFFSET);
        return Step::Done;
    };
    if let Ok(item) = ctx.string(arg(cmd, 1)) {
        ctx.int(item.map_or(0, |i| i64::from(get_bit(i.value_bytes(), bit))));
    }
    Step::Done
}

/// A `[start end [BYTE|BIT]]` range of BITCOUNT / BITPOS over a value of
/// `len` bytes, as a bit range `[from, to)`; `None` for an empty range.
/// Negative indexes count from the end, as in Redis.
fn bit_range(len: usize, start: i64, end: i64, bits: bool) -> Option<(u64, u64)> {
    let total = if bits { len as i64 * 8 } else { len as i64 };
    let fix = |i: i64| if i < 0 { (total + i).max(0) } else { i };
    let (s, e) = (fix(start), fix(end).min(total - 1));
    if total == 0 || s > e {
        return None;
    }
    let unit = if bits { 1 } else { 8 };
    Some((s as u64 * unit, (e as u64 + 1) * unit))
}

/// Parses `[start end [BYTE|BIT]]` from argument `at`: `Ok(None)` when
/// absent, `Err(())` (error written) when malformed. `end_optional`: a
/// start alone is allowed (BITPOS).
#[allow(clippy::type_complexity)]
fn range_args(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'_>,
    at: usize,
    end_optional: bool,
) -> Result<Option<(i64, Option<i64>, bool)>, ()> {
    let n = cmd.len();
    if n <= at {
        return Ok(None);
    }
    if n == at + 1 && !end_optional || n > at + 3 {
        ctx.error(ERR_SYNTAX);
        return Err(());
    }
    let Some(start) = parse_i64(arg(cmd, at)) else {
        ctx.error(ERR_INT);
        return Err(());
    };
    let end = match cmd.arg(at + 1) {
        None => None,
        Some(e) => match parse_i64(e) {
            Some(e) => Some(e),
            None => {
                ctx.error(ERR_INT);
                return Err(());
            }
        },
    };
    let bits = match cmd.arg(at + 2).map(<[u8]>::to_ascii_uppercase).as_deref() {
        None | Some(b"BYTE") => false,
        Some(b"BIT") => true,
        Some(_) => {
            ctx.error(ERR_SYNTAX);
            return Err(());
        }
    };
    Ok(Some((start, end, bits)))
}

/// Set bits in `v` within bits `[from, to)`.
fn count_ones(v: &[u8], from: u64, to: u64) -> u64 {
    let mut n = 0u64;
    let mut bit = from;
    while bit < to && bit % 8 != 0 {
        n += u64::from(get_bit(v, bit));
        bit += 1;
    }
    let whole_end = to - to % 8;
    if bit < whole_end {
        let bytes = &v[(bit / 8) as usize..(whole_end / 8) as usize];
        n += bytes.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        bit = whole_end;
    }
    while bit < to {
        n += u64::from(get_bit(v, bit));
        bit += 1;
    }
    n
}

/// `BITCOUNT key [start end [BYTE|BIT]]`.
pub fn bitcount(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    // In Redis's order: the key first (a missing one counts 0, whatever
    // follows), then the range, where two negative ends the wrong way
    // round count 0 before the unit is read.
    let Ok(item) = ctx.string(arg(cmd, 1)) else {
        return Step::Done;
    };
    let Some(item) = item else {
        ctx.int(0);
        return Step::Done;
    };
    if let (4 | 5, Some(s), Some(e)) = (cmd.len(), parse_i64(arg(cmd, 2)), parse_i64(arg(cmd, 3))) {
        if s < 0 && e < 0 && s > e {
            ctx.int(0);
            return Step::Done;
        }
    }
    let Ok(range) = range_args(ctx, cmd, 2, false) else {
        return Step::Done;
    };
    let v = item.value_bytes();
    let (start, end, bits) = match range {
        Some((s, e, bits)) => (s, e.unwrap_or(-1), bits),
        None => (0, -1, false),
    };
    let n = bit_range(v.len(), start, end, bits).map_or(0, |(f, t)| count_ones(v, f, t));
    ctx.int(n as i64);
    Step::Done
}

/// `BITPOS key bit [start [end [BYTE|BIT]]]`: the first bit set to `bit`.
pub fn bitpos(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    // In Redis's order: the bit, the key (a missing one is all zeros,
    // whatever follows), then the range.
    let want = match parse_i64(arg(cmd, 2)) {
        Some(0) => 0u8,
        Some(1) => 1,
        Some(_) => {
            ctx.error(b"ERR The bit argument must be 1 or 0.");
            return Step::Done;
        }
        None => {
            ctx.error(ERR_INT);
            return Step::Done;
        }
    };
    let Ok(item) = ctx.string(arg(cmd, 1)) else {
        return Step::Done;
    };
    let Some(item) = item else {
        ctx.int(if want == 1 { -1 } else { 0 });
        return Step::Done;
    };
    let Ok(range) = range_args(ctx, cmd, 3, true) else {
        return Step::Done;
    };
    let v = item.value_bytes();
    let (start, end, bits, end_given) = match range {
        Some((s, Some(e), bits)) => (s, e, bits, true),
        Some((s, None, bits)) => (s, -1, bits, false),
        None => (0, -1, false, false),
    };
    let Some((from, to)) = bit_range(v.len(), start, end, bits) else {
        ctx.int(-1);
        return Step::Done;
    };
    let found = (from..to).find(|&b| get_bit(v, b) == want);
    let pos = match found {
        Some(b) => b as i64,
        // Looking for a clear bit with no end given: the string is taken
        // as padded with zeros on the right, as in Redis.
        None if want == 0 && !end_given => to as i64,
        None => -1,
    };
    ctx.int(pos);
    Step::Done
}

/// `BITOP AND|OR|XOR|NOT destkey key [key ...]`: the length of the result
/// stored at `destkey` (an empty result deletes it).
pub fn bitop(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let op = arg(cmd, 1).to_ascii_uppercase();
    if !matches!(&op[..], b"AND" | b"OR" | b"XOR" | b"NOT") {
        ctx.error(ERR_SYNTAX);
        return Step::Done;
    }
    let sources: Vec<&[u8]> = cmd.args().skip(3).collect();
    if op == b"NOT" && sources.len() != 1 {
        ctx.error(b"ERR BITOP NOT must be called with a single source key.");
        return Step::Done;
    }
    let mut values = Vec::with_capacity(sources.len());
    for key in &sources {
        match ctx.string(key) {
            Ok(item) => values.push(item),
            Err(_) => return Step::Done,
        }
    }
    fn bytes(i: &Option<crate::store::Item>) -> &[u8] {
        i.as_ref().map_or(&[][..], |i| i.value_bytes())
    }
    let len = values.iter().map(|v| bytes(v).len()).max().unwrap_or(0);
    let mut out = vec![0u8; len];
    if op == b"NOT" {
        for (o, b) in out.iter_mut().zip(bytes(&values[0])) {
            *o = !b;
        }
    } else {
        for (i, o) in out.iter_mut().enumerate() {
            let mut col = values.iter().map(|v| bytes(v).get(i).copied().unwrap_or(0));
            let first = col.next().unwrap_or(0);
            *o = col.fold(first, |acc, b| match &op[..] {
                b"AND" => acc & b,
                b"OR" => acc | b,
                _ => acc ^ b,
            });
        }
    }
    let dest = arg(cmd, 2);
    if out.is_empty() {
        ctx.db.delete(dest);
    } else if let Err(e) = ctx.db.set(
        dest,
        &out,
        crate::store::Meta::default(),
        crate::store::SetMode::Set,
    ) {
        ctx.store_error(e);
        return Step::Done;
    }
    ctx.int(len as i64);
    Step::Done
}

/// A BITFIELD type: `i1`..`i64` or `u1`..`u63`.
#[derive(Clone, Copy)]
struct Field {
    signed: bool,
    bits: u32,
}

impl Field {
    fn parse(b: &[u8]) -> Option<Field> {
        let (signed, n) = match b.first()?.to_ascii_lowercase() {
            b'i' => (true, &b[1..]),
            b'u' => (false, &b[1..]),
            _ => return None,
        };
        let bits: u32 = std::str::from_utf8(n).ok()?.parse().ok()?;
        let max = if signed { 64 } else { 63 };
        (1..=max).contains(&bits).then_some(Field { signed, bits })
    }

    fn min(self) -> i128 {
        if self.signed {
            -(1i128 << (self.bits - 1))
        } else {
            0
        }
    }

    fn max(self) -> i128 {
        if self.signed {
            (1i128 << (self.bits - 1)) - 1
        } else {
            (1i128 << self.bits) - 1
        }
    }

    /// The field's value from its raw bits.
    fn decode(self, raw: u64) -> i128 {
        if self.signed && raw >> (self.bits - 1) & 1 == 1 {
            i128::from(raw) - (1i128 << self.bits)
        } else {
            i128::from(raw)
        }
    }

    /// `v` fitted to the field by `overflow`; `None` for FAIL out of range.
    fn fit(self, v: i128, overflow: Overflow) -> Option<i128> {
        if (self.min()..=self.max()).contains(&v) {
            return Some(v);
        }
        match overflow {
            Overflow::Fail => None,
            Overflow::Sat => Some(v.clamp(self.min(), self.max())),
            Overflow::Wrap => Some(self.decode((v as u128 & ((1u128 << self.bits) - 1)) as u64)),
        }
    }
}

#[derive(Clone, Copy)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

enum Op {
    Get(Field, u64),
    Set(Field, u64, i64, Overflow),
    Incr(Field, u64, i64, Overflow),
}

fn read_bits(v: &[u8], at: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0, |acc, i| acc << 1 | u64::from(get_bit(v, at + i)))
}

fn write_bits(v: &mut [u8], at: u64, bits: u32, value: u64) {
    for i in 0..u64::from(bits) {
        let bit = at + i;
        let on = value >> (u64::from(bits) - 1 - i) & 1 == 1;
        let mask = 1u8 << (7 - bit % 8);
        let byte = &mut v[(bit / 8) as usize];
        *byte = if on { *byte | mask } else { *byte & !mask };
    }
}

/// `BITFIELD key [GET type offset] [SET type offset value] [INCRBY type
/// offset increment] [OVERFLOW WRAP|SAT|FAIL] ...`.
pub fn bitfield(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    bitfield_ops(ctx, cmd, false)
}

/// `BITFIELD_RO key [GET type offset] ...`.
pub fn bitfield_ro(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    bitfield_ops(ctx, cmd, true)
}

fn bitfield_ops(ctx: &mut Ctx<'_>, cmd: &Command<'_>, read_only: bool) -> Step {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut i = 2;
    while i < cmd.len() {
        let word = arg(cmd, i).to_ascii_uppercase();
        let need = match &word[..] {
            b"GET" => 2,
            b"SET" | b"INCRBY" => 3,
            b"OVERFLOW" => 1,
            _ => {
                ctx.error(ERR_SYNTAX);
                return Step::Done;
            }
        };
        if i + need >= cmd.len() {
            ctx.error(ERR_SYNTAX);
            return Step::Done;
        }
        if word == b"OVERFLOW" {
            overflow = match &arg(cmd, i + 1).to_ascii_uppercase()[..] {
                b"WRAP" => Overflow::Wrap,
                b"SAT" => Overflow::Sat,
                b"FAIL" => Overflow::Fail,
                _ => {
                    ctx.error(b"ERR Invalid OVERFLOW type specified");
                    return Step::Done;
                }
            };
            i += 2;
            continue;
        }
        if read_only && word != b"GET" {
            ctx.error(b"ERR BITFIELD_RO only supports the GET subcommand");
            return Step::Done;
        }
        let Some(field) = Field::parse(arg(cmd, i + 1)) else {
            ctx.error(
                b"ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
            );
            return Step::Done;
        };
        let off = arg(cmd, i + 2);
        let at = match off.strip_prefix(b"#") {
            Some(n) => parse_i64(n)
                .filter(|&n| n >= 0)
                .and_then(|n| n.checked_mul(i64::from(field.bits))),
            None => parse_i64(off),
        }
        .filter(|&o| o >= 0 && o + i64::from(field.bits) <= 1 << 32);
        let Some(at) = at.map(|o| o as u64) else {
            ctx.error(ERR_OFFSET);
            return Step::Done;
        };
        let op = match &word[..] {
            b"GET" => Op::Get(field, at),
            _ => {
                let Some(n) = parse_i64(arg(cmd, i + 3)) else {
                    ctx.error(ERR_INT);
                    return Step::Done;
                };
                if word == b"SET" {
                    Op::Set(field, at, n, overflow)
                } else {
                    Op::Incr(field, at, n, overflow)
                }
            }
        };
        ops.push(op);
        i += need + 1;
    }
    let writes = ops.iter().any(|op| !matches!(op, Op::Get(..)));
    let end_bit = ops
        .iter()
        .map(|op| match op {
            Op::Get(f, at) | Op::Set(f, at, ..) | Op::Incr(f, at, ..) => at + u64::from(f.bits),
        })
        .max()
        .unwrap_or(0);
    let mut results: Vec<Option<i128>> = Vec::new();
    if !writes {
        let Ok(item) = ctx.string(arg(cmd, 1)) else {
            return Step::Done;
        };
        let v = item.as_ref().map_or(&[][..], |i| i.value_bytes());
        for op in &ops {
            if let Op::Get(f, at) = op {
                results.push(Some(f.decode(read_bits(v, *at, f.bits))));
            }
        }
    } else {
        let Some(len) = bytes_for(ctx, end_bit) else {
            return Step::Done;
        };
        let done = rewrite(ctx, arg(cmd, 1), |_, old| {
            results.clear();
            let mut v = old.unwrap_or_default().to_vec();
            if v.len() < len {
                v.resize(len, 0);
            }
            for op in &ops {
                let r = match *op {
                    Op::Get(f, at) => Some(f.decode(read_bits(&v, at, f.bits))),
                    Op::Set(f, at, n, of) => {
                        let old = f.decode(read_bits(&v, at, f.bits));
                        // An unsigned field takes the value as a u64, as
                        // Redis reads it (-1 is then 2^64 - 1).
                        let n = if f.signed {
                            i128::from(n)
                        } else {
                            i128::from(n as u64)
                        };
                        f.fit(n, of).map(|new| {
                            write_bits(&mut v, at, f.bits, new as u64);
                            old
                        })
                    }
                    Op::Incr(f, at, n, of) => {
                        let old = f.decode(read_bits(&v, at, f.bits));
                        f.fit(old + i128::from(n), of).inspect(|&new| {
                            write_bits(&mut v, at, f.bits, new as u64);
                        })
                    }
                };
                results.push(r);
            }
            Some(v)
        });
        if done.is_none() {
            return Step::Done;
        }
    }
    ctx.array(results.len());
    for r in results {
        match r {
            Some(n) => ctx.int(n as i64),
            None => ctx.null(),
        }
    }
    Step::Done
}
