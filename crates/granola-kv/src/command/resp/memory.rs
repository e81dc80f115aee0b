//! `MEMORY USAGE key [SAMPLES count]` and `MEMORY HELP`.
//!
//! USAGE reports what the key holds against `-m` ([`Item::memory_usage`]):
//! its item slot, its index cell and a collection's chunks or table. The
//! whole collection is counted, so SAMPLES (Redis estimates large
//! collections from a sample) is accepted and has no effect. Like `OBJECT`,
//! looking does not count as using the key. `redis-cli --memkeys` reads it.
//!
//! [`Item::memory_usage`]: crate::store::Item::memory_usage

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::Command;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `MEMORY <subcommand> ...`.
pub fn memory(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = arg(cmd, 1).to_ascii_uppercase();
    match &sub[..] {
        b"HELP" if cmd.len() == 2 => {
            ctx.help(&[
                b"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                b"USAGE <key> [SAMPLES <count>]",
                b"    Return memory in bytes used by <key> and its value.",
            ]);
        }
        b"USAGE" if cmd.len() == 3 || cmd.len() == 5 => {
            if cmd.len() == 5 {
                let samples = parse_i64(arg(cmd, 4));
                if !arg(cmd, 3).eq_ignore_ascii_case(b"SAMPLES") {
                    ctx.error(b"ERR syntax error");
                    return Step::Done;
                }
                if samples.is_none_or(|n| n < 0) {
                    ctx.error(b"ERR value is out of range, must be positive");
                    return Step::Done;
                }
            }
            match ctx.db.peek(arg(cmd, 2)) {
                Some(item) => ctx.int(item.memory_usage() as i64),
                None => ctx.null(),
            }
        }
        _ => {
            ctx.unknown_subcommand("MEMORY", arg(cmd, 1), true);
        }
    }
    Step::Done
}
