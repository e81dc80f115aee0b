//! One step of HSCAN, SSCAN or ZSCAN: the shared argument parsing and
//! reply; each command says what a matching entry puts in the reply. The
//! cursor itself is the table's (see `store/dict.rs`: it counts down, so
//! entries present for the whole scan are always returned).

use super::collections::{read, CType};
use super::{glob, parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::Element;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// Runs one step of a scan over the table of type `t` at the key
/// (argument 1): `[cursor, [entries...]]`, each matching entry written by
/// `emit` as `width` reply elements. `no_values`: NOVALUES is accepted
/// (HSCAN).
pub fn scan_step(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'_>,
    t: CType,
    no_values: bool,
    width: fn(&ScanOptions<'_>) -> usize,
    emit: fn(&mut Ctx<'_>, &ScanOptions<'_>, &Element, &Element),
) -> Step {
    let Some(opts) = scan_options(ctx, cmd, no_values) else {
        return Step::Done;
    };
    let _ = read(ctx, arg(cmd, 1), t, |ctx, d| {
        let mut hits: Vec<(&Element, &Element)> = Vec::new();
        let next = d.map_or(0, |d| {
            d.scan(opts.cursor, opts.count, |k, v| {
                if opts.matches(k) {
                    hits.push((k, v));
                }
            })
        });
        ctx.array(2);
        ctx.bytes(next.to_string().as_bytes());
        ctx.array(hits.len() * width(&opts));
        for (k, v) in hits {
            emit(ctx, &opts, k, v);
        }
    });
    Step::Done
}

/// The arguments of HSCAN/SSCAN/ZSCAN after the key.
pub struct ScanOptions<'a> {
    /// Where to go on (0: start).
    pub cursor: u64,
    /// `MATCH` pattern.
    pub pattern: Option<&'a [u8]>,
    /// `COUNT` (default 10): entries visited per call.
    pub count: usize,
    /// `NOVALUES` (HSCAN): fields only.
    pub no_values: bool,
}

impl ScanOptions<'_> {
    /// True if `field` passes `MATCH`.
    pub fn matches(&self, field: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob::matches(p, field, false))
    }
}

/// Parses `cursor [MATCH p] [COUNT n] [NOVALUES]` (NOVALUES only if
/// `values`: HSCAN); None if invalid (error written).
fn scan_options<'a>(ctx: &mut Ctx<'_>, cmd: &Command<'a>, values: bool) -> Option<ScanOptions<'a>> {
    let Some(cursor) = std::str::from_utf8(arg(cmd, 2))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    else {
        ctx.error(b"ERR invalid cursor");
        return None;
    };
    let mut opts = ScanOptions {
        cursor,
        pattern: None,
        count: 10,
        no_values: false,
    };
    let mut args = cmd.args().skip(3);
    while let Some(o) = args.next() {
        if values && o.eq_ignore_ascii_case(b"NOVALUES") {
            opts.no_values = true;
            continue;
        }
        match args.next() {
            Some(v) if o.eq_ignore_ascii_case(b"MATCH") => opts.pattern = Some(v),
            Some(v) if o.eq_ignore_ascii_case(b"COUNT") => match parse_i64(v) {
                Some(n) if n > 0 => opts.count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => {
                    ctx.raw(resp::ERR_SYNTAX);
                    return None;
                }
                None => {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return None;
                }
            },
            _ => {
                ctx.raw(resp::ERR_SYNTAX);
                return None;
            }
        }
    }
    Some(opts)
}
