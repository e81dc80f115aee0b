//! Redis 7's own description of its commands (`table/key_specs.rs`):
//! their flags and key positions as `COMMAND INFO` reports them, and key
//! specifications — where a command's keys are and what it does to them
//! (`RO`/`RW`/`OW`/`RM` and `access`/`update`/`insert`/`delete`) — which
//! `COMMAND GETKEYSANDFLAGS` walks as Redis does. granola-kv's own flags
//! and key positions (`table.rs`) are what it runs by; where Redis 7.0
//! says otherwise (a deletion flagged `denyoom` here, the ALLKEYS that
//! sends ZUNIONSTORE alone through the gate), COMMAND INFO says what
//! Redis says.

use super::table::{self, Spec};
use super::Ctx;
use crate::protocol::resp::Command;

/// What Redis 7.0 reports of one command or subcommand.
pub struct RedisCommand {
    /// `container|sub` for a subcommand.
    pub name: &'static str,
    /// Its flags, in Redis's order.
    pub flags: &'static [&'static str],
    /// First key, last key, step.
    pub keys: (i32, i32, i32),
    /// Its tips.
    pub tips: &'static [&'static str],
    /// Its key specifications.
    pub specs: &'static [KeySpec],
}

/// One key specification.
pub struct KeySpec {
    /// Redis's note on it.
    pub notes: Option<&'static str>,
    /// What the command does to these keys.
    pub flags: &'static [&'static str],
    /// Where the search for the keys begins.
    pub begin: Begin,
    /// How the keys are found from there.
    pub find: Find,
}

/// Where a key search begins.
pub enum Begin {
    /// At this argument.
    Index(i32),
    /// After this keyword, searched from this argument on (backwards from
    /// the end if negative).
    Keyword(&'static str, i32),
    /// Only the command's own logic knows.
    Unknown,
}

/// How keys are found from where the search begins.
pub enum Find {
    /// From there to `last` (relative; negative: from the end, or with
    /// `limit` a fraction of the rest), every `step`.
    Range { last: i32, step: i32, limit: i32 },
    /// A count at `at` (relative), the keys from `first` on, every `step`.
    Keynum { at: i32, first: i32, step: i32 },
    /// Only the command's own logic knows.
    Unknown,
}

/// What Redis 7.0 reports of the command or subcommand called `name`.
fn of(name: &str) -> Option<&'static RedisCommand> {
    let all = table::KEY_SPECS;
    all.binary_search_by(|c| c.name.cmp(name))
        .ok()
        .map(|i| &all[i])
}

/// `spec`'s flags and key positions as `COMMAND INFO` shows them:
/// Redis's, or for what Redis 7.0 lacks granola-kv's own.
pub fn reported(spec: &Spec) -> (Vec<&'static str>, (i32, i32, i32)) {
    match of(spec.name) {
        Some(c) => (c.flags.to_vec(), c.keys),
        None => (spec.flags.to_vec(), spec.keys),
    }
}

/// True if scripts may not call `spec` (flagged `noscript` by Redis or
/// here).
pub fn noscript(spec: &Spec) -> bool {
    spec.flags.contains(&"noscript") || of(spec.name).is_some_and(|c| c.flags.contains(&"noscript"))
}

/// `COMMAND INFO`'s tips and key specs of `spec`.
pub fn write_info(ctx: &mut Ctx<'_>, spec: &Spec) {
    let (tips, specs) = of(spec.name).map_or((&[][..], &[][..]), |c| (c.tips, c.specs));
    ctx.set(tips.len());
    for t in tips {
        ctx.bytes(t.as_bytes());
    }
    // A set, in RESP3, as Redis 7.0 sends it.
    ctx.set(specs.len());
    for k in specs {
        ctx.map(if k.notes.is_some() { 4 } else { 3 });
        if let Some(notes) = k.notes {
            ctx.bytes(b"notes");
            ctx.bytes(notes.as_bytes());
        }
        ctx.bytes(b"flags");
        write_flags(ctx, k.flags);
        ctx.bytes(b"begin_search");
        ctx.map(2);
        ctx.bytes(b"type");
        match k.begin {
            Begin::Index(i) => {
                ctx.bytes(b"index");
                ctx.bytes(b"spec");
                ctx.map(1);
                ctx.bytes(b"index");
                ctx.int(i64::from(i));
            }
            Begin::Keyword(word, from) => {
                ctx.bytes(b"keyword");
                ctx.bytes(b"spec");
                ctx.map(2);
                ctx.bytes(b"keyword");
                ctx.bytes(word.as_bytes());
                ctx.bytes(b"startfrom");
                ctx.int(i64::from(from));
            }
            Begin::Unknown => {
                ctx.bytes(b"unknown");
                ctx.bytes(b"spec");
                ctx.map(0);
            }
        }
        ctx.bytes(b"find_keys");
        ctx.map(2);
        ctx.bytes(b"type");
        match k.find {
            Find::Range { last, step, limit } => {
                ctx.bytes(b"range");
                ctx.bytes(b"spec");
                ctx.map(3);
                for (name, v) in [("lastkey", last), ("keystep", step), ("limit", limit)] {
                    ctx.bytes(name.as_bytes());
                    ctx.int(i64::from(v));
                }
            }
            Find::Keynum { at, first, step } => {
                ctx.bytes(b"keynum");
                ctx.bytes(b"spec");
                ctx.map(3);
                for (name, v) in [("keynumidx", at), ("firstkey", first), ("keystep", step)] {
                    ctx.bytes(name.as_bytes());
                    ctx.int(i64::from(v));
                }
            }
            Find::Unknown => {
                ctx.bytes(b"unknown");
                ctx.bytes(b"spec");
                ctx.map(0);
            }
        }
    }
}

/// Key flags as Redis lists them: a set of simple strings.
pub fn write_flags(ctx: &mut Ctx<'_>, flags: &[&str]) {
    ctx.set(flags.len());
    for f in flags {
        ctx.simple(f.as_bytes());
    }
}

/// The keys of `cmd` (run as `spec`) with their flags, as `COMMAND
/// GETKEYSANDFLAGS` finds them: by the key specs, or for the commands
/// whose flags or keys only their own logic knows, as that logic does in
/// Redis. `None`: the arguments do not fit the specs.
pub fn keys_and_flags(
    spec: &Spec,
    cmd: &Command<'_>,
) -> Option<Vec<(usize, &'static [&'static str])>> {
    let is = |i: usize, word: &[u8]| cmd.arg(i).is_some_and(|a| a.eq_ignore_ascii_case(word));
    const RO: &[&str] = &["RO", "access"];
    const RW_UPDATE: &[&str] = &["RW", "access", "update"];
    const OW_UPDATE: &[&str] = &["OW", "update"];
    match spec.name {
        // SET with GET reads the key first.
        "set" => {
            let get = (3..cmd.len()).any(|i| is(i, b"GET"));
            return Some(vec![(1, if get { RW_UPDATE } else { OW_UPDATE })]);
        }
        // BITFIELD is read-only with GETs (and OVERFLOWs) alone.
        "bitfield" => {
            let mut i = 2;
            let mut read_only = true;
            while i < cmd.len() {
                let rest = cmd.len() - i - 1;
                if is(i, b"GET") && rest >= 2 {
                    i += 3;
                } else if is(i, b"OVERFLOW") && rest >= 1 {
                    i += 2;
                } else {
                    read_only = false;
                    break;
                }
            }
            return Some(vec![(1, if read_only { RO } else { RW_UPDATE })]);
        }
        // SORT_RO reads its key; SORT's STORE destination (BY and GET
        // patterns name no key here); MIGRATE's keys.
        "sort_ro" => return Some(vec![(1, RO)]),
        "sort" | "migrate" => {
            let specs = of(spec.name).map_or(&[][..], |c| c.specs);
            let positions = spec.moved_keys(cmd).unwrap_or_default();
            return Some(
                positions
                    .into_iter()
                    .enumerate()
                    .map(|(i, pos)| {
                        let flags = if spec.name == "sort" && i > 0 {
                            OW_UPDATE
                        } else {
                            specs.first().map_or(RO, |k| k.flags)
                        };
                        (pos, flags)
                    })
                    .collect(),
            );
        }
        _ => {}
    }
    let argc = cmd.len() as i64;
    let mut found = Vec::new();
    for k in of(spec.name).map_or(&[][..], |c| c.specs) {
        let first = match k.begin {
            Begin::Index(i) => i64::from(i),
            Begin::Keyword(word, from) => {
                let from = i64::from(from);
                let (start, end) = if from > 0 {
                    (from, argc - 1)
                } else {
                    (argc + from, 0)
                };
                let mut i = start;
                let mut at = None;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if is(i as usize, word.as_bytes()) {
                        at = Some(i + 1);
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                match at {
                    Some(first) => first,
                    None => continue,
                }
            }
            Begin::Unknown => continue,
        };
        let (first, last, step) = match k.find {
            Find::Range { last, step, limit } => {
                let (last, limit) = (i64::from(last), i64::from(limit));
                let end = if last >= 0 {
                    first + last
                } else if limit == 0 {
                    argc + last
                } else {
                    first + ((argc - first) / limit + last)
                };
                (first, end, i64::from(step))
            }
            Find::Keynum {
                at,
                first: from,
                step,
            } => {
                let at = first + i64::from(at);
                if at >= argc || at < 0 {
                    return None;
                }
                let n = super::parse_i64(cmd.arg(at as usize)?).filter(|n| *n >= 0)?;
                let start = first + i64::from(from);
                (start, start + n - 1, i64::from(step))
            }
            Find::Unknown => continue,
        };
        if last >= argc || last < first || first >= argc || step <= 0 {
            return None;
        }
        let mut i = first;
        while i <= last {
            found.push((i as usize, k.flags));
            i += step;
        }
    }
    Some(found)
}
