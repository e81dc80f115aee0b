//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`: the longest
//! common subsequence of two strings, as Redis 7 finds it (the same
//! dynamic programme and walk back, so the same subsequence and the same
//! match ranges, last first).
//!
//! The programme's table has `(len1 + 1) × (len2 + 1)` cells of 4 bytes,
//! built while the command runs; as in Redis, a table over
//! `--proto-max-bulk-len` (itself at most `-m`) is refused before it is
//! allocated, and one the allocator cannot give is an error, not an
//! abort.

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use crate::store::Kind;

/// A run of consecutive matches: its ranges (inclusive) in each string.
struct Match {
    a: (usize, usize),
    b: (usize, usize),
}

/// What LCS reports.
#[derive(Default)]
struct Options {
    len: bool,
    idx: bool,
    min_match_len: usize,
    with_match_len: bool,
}

fn options(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Option<Options> {
    let mut o = Options::default();
    let mut args = cmd.args().skip(3);
    while let Some(a) = args.next() {
        if a.eq_ignore_ascii_case(b"LEN") {
            o.len = true;
        } else if a.eq_ignore_ascii_case(b"IDX") {
            o.idx = true;
        } else if a.eq_ignore_ascii_case(b"WITHMATCHLEN") {
            o.with_match_len = true;
        } else if a.eq_ignore_ascii_case(b"MINMATCHLEN") {
            let Some(n) = args.next() else {
                ctx.error(b"ERR syntax error");
                return None;
            };
            match parse_i64(n) {
                // Redis takes a negative length as 0.
                Some(n) => o.min_match_len = n.max(0) as usize,
                None => {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return None;
                }
            }
        } else {
            ctx.error(b"ERR syntax error");
            return None;
        }
    }
    if o.len && o.idx {
        ctx.error(b"ERR If you want both the length and indexes, please just use IDX.");
        return None;
    }
    Some(o)
}

/// A key's string (empty when absent); `None` (error written) for another
/// type.
fn string_of(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<Vec<u8>> {
    match ctx.db.get(key) {
        None => Some(Vec::new()),
        Some(item) if item.kind() == Kind::String => Some(item.value_bytes().to_vec()),
        Some(_) => {
            ctx.error(b"ERR The specified keys must contain string values");
            None
        }
    }
}

/// `LCS`.
pub fn lcs(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(o) = options(ctx, cmd) else {
        return Step::Done;
    };
    let (Some(a), Some(b)) = (
        string_of(ctx, cmd.arg(1).unwrap_or_default()),
        string_of(ctx, cmd.arg(2).unwrap_or_default()),
    ) else {
        return Step::Done;
    };
    let cells = (a.len() as u128 + 1) * (b.len() as u128 + 1);
    if cells * 4 > ctx.shared.config.max_bulk() as u128 {
        ctx.error(b"ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
        return Step::Done;
    }
    let Some(table) = Table::build(&a, &b) else {
        ctx.error(b"ERR Insufficient memory for LCS");
        return Step::Done;
    };
    let (common, matches) = table.walk_back(&a, &b, o.min_match_len);
    if o.len {
        ctx.int(common.len() as i64);
    } else if o.idx {
        ctx.map(2);
        ctx.bytes(b"matches");
        ctx.array(matches.len());
        for m in &matches {
            ctx.array(if o.with_match_len { 3 } else { 2 });
            for (start, end) in [m.a, m.b] {
                ctx.array(2);
                ctx.int(start as i64);
                ctx.int(end as i64);
            }
            if o.with_match_len {
                ctx.int((m.a.1 - m.a.0 + 1) as i64);
            }
        }
        ctx.bytes(b"len");
        ctx.int(common.len() as i64);
    } else {
        ctx.bytes(&common);
    }
    Step::Done
}

/// `len[i][j]`: the LCS length of the first `i` bytes of one string and
/// the first `j` of the other, row by row.
struct Table {
    len: Vec<u32>,
    width: usize,
}

impl Table {
    fn build(a: &[u8], b: &[u8]) -> Option<Table> {
        let width = b.len() + 1;
        let cells = (a.len() + 1).checked_mul(width)?;
        let mut len = Vec::new();
        len.try_reserve_exact(cells).ok()?;
        len.resize(cells, 0u32);
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                len[i * width + j] = if a[i - 1] == b[j - 1] {
                    len[(i - 1) * width + j - 1] + 1
                } else {
                    len[(i - 1) * width + j].max(len[i * width + j - 1])
                };
            }
        }
        Some(Table { len, width })
    }

    fn at(&self, i: usize, j: usize) -> u32 {
        self.len[i * self.width + j]
    }

    /// From the ends back: the common subsequence, and its runs of
    /// consecutive matches at least `min` long (all when `min` is 0), the
    /// last first. On a tie the walk moves back in the second string, as
    /// Redis's does.
    fn walk_back(&self, a: &[u8], b: &[u8], min: usize) -> (Vec<u8>, Vec<Match>) {
        let (mut i, mut j) = (a.len(), b.len());
        let mut common = Vec::with_capacity(self.at(i, j) as usize);
        let mut matches = Vec::new();
        // The run being followed back: its starts and ends.
        let mut run: Option<Match> = None;
        let emit = |run: &mut Option<Match>, matches: &mut Vec<Match>| {
            if let Some(m) = run.take() {
                if m.a.1 - m.a.0 + 1 >= min {
                    matches.push(m);
                }
            }
        };
        while i > 0 && j > 0 {
            if a[i - 1] == b[j - 1] {
                common.push(a[i - 1]);
                match run.as_mut() {
                    // One step back in both: the run goes on.
                    Some(m) if m.a.0 == i && m.b.0 == j => {
                        m.a.0 -= 1;
                        m.b.0 -= 1;
                    }
                    _ => {
                        emit(&mut run, &mut matches);
                        run = Some(Match {
                            a: (i - 1, i - 1),
                            b: (j - 1, j - 1),
                        });
                    }
                }
                i -= 1;
                j -= 1;
            } else {
                if self.at(i - 1, j) > self.at(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                emit(&mut run, &mut matches);
            }
        }
        emit(&mut run, &mut matches);
        common.reverse();
        (common, matches)
    }
}
