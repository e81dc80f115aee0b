//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]`: the longest
//! common subsequence of two strings, as Redis 7 finds it (the same
//! dynamic programme and walk back, so the same subsequence and the same
//! match ranges, last first).
//!
//! The programme's table has `(len1 + 1) × (len2 + 1)` cells of 4 bytes.
//! As in Redis, a table over `--proto-max-bulk-len` (itself at most `-m`)
//! is refused before anything is built; within that, granola-kv keeps
//! only about `2·√len1` of its rows ([`Table`]), so the memory the
//! command takes grows with the strings' lengths' square root times the
//! second's, not their product; memory the allocator cannot give is an
//! error, not an abort.

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
    let (common, matches) = table.walk_back(o.min_match_len);
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

/// `len[i][j]`, the LCS length of the first `i` bytes of one string and
/// the first `j` of the other, kept in `O(m·√n)` memory: every `k`-th row
/// (`k ≈ √n`) is kept from the forward pass, and the walk back rebuilds
/// the `k` rows of the block it is in from the block's first row. Twice
/// the work of the whole `n × m` table Redis keeps, with the same walk,
/// in a fraction of its memory (8 MB instead of 390 MB for two 10 kB
/// strings: `bench/RESULTS.md`).
struct Table<'s> {
    a: &'s [u8],
    b: &'s [u8],
    /// Rows kept between blocks: row `c·k` at `c`.
    checkpoints: Vec<Vec<u32>>,
    k: usize,
    /// Rows `base..=base + k` (fewer at the end), rebuilt as the walk
    /// reaches them.
    block: Vec<Vec<u32>>,
    base: usize,
}

impl<'s> Table<'s> {
    /// The forward pass; `None` if the allocator cannot give the rows.
    fn build(a: &'s [u8], b: &'s [u8]) -> Option<Table<'s>> {
        let k = ((a.len() + 1) as f64).sqrt().ceil().max(1.0) as usize;
        let row = || -> Option<Vec<u32>> {
            let mut r = Vec::new();
            r.try_reserve_exact(b.len() + 1).ok()?;
            r.resize(b.len() + 1, 0);
            Some(r)
        };
        let mut checkpoints = vec![row()?];
        let (mut prev, mut cur) = (row()?, row()?);
        for i in 1..=a.len() {
            Self::next_row(a[i - 1], b, &prev, &mut cur);
            std::mem::swap(&mut prev, &mut cur);
            if i % k == 0 {
                checkpoints.push(prev.clone());
            }
        }
        let block = (0..=k).map(|_| row()).collect::<Option<Vec<_>>>()?;
        Some(Table {
            a,
            b,
            checkpoints,
            k,
            block,
            // No block built yet.
            base: usize::MAX,
        })
    }

    /// Row `i` from row `i - 1` (`prev`), `byte` being `a[i - 1]`.
    fn next_row(byte: u8, b: &[u8], prev: &[u32], cur: &mut [u32]) {
        cur[0] = 0;
        for j in 1..=b.len() {
            cur[j] = if byte == b[j - 1] {
                prev[j - 1] + 1
            } else {
                prev[j].max(cur[j - 1])
            };
        }
    }

    /// `len[i][j]`, for rows `i` the walk back reaches in order (each
    /// block is rebuilt once).
    fn at(&mut self, i: usize, j: usize) -> u32 {
        if self.base == usize::MAX || i < self.base || i > self.base + self.k {
            let c = i / self.k;
            self.base = c * self.k;
            self.block[0].copy_from_slice(&self.checkpoints[c]);
            let last = (self.base + self.k).min(self.a.len());
            for r in self.base + 1..=last {
                let (done, rest) = self.block.split_at_mut(r - self.base);
                Self::next_row(
                    self.a[r - 1],
                    self.b,
                    &done[r - self.base - 1],
                    &mut rest[0],
                );
            }
        }
        self.block[i - self.base][j]
    }

    /// From the ends back: the common subsequence, and its runs of
    /// consecutive matches at least `min` long (all when `min` is 0), the
    /// last first. On a tie the walk moves back in the second string, as
    /// Redis's does.
    fn walk_back(mut self, min: usize) -> (Vec<u8>, Vec<Match>) {
        let (a, b) = (self.a, self.b);
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
                // Row i - 1 first: it may start a new block, which holds
                // row i too.
                let up = self.at(i - 1, j);
                if up > self.at(i, j - 1) {
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
