//! Connection commands: SELECT CLIENT QUIT.

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};

/// `SELECT db` (only database 0).
pub fn select(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match parse_i64(cmd.arg(1).unwrap_or_default()) {
        Some(0) => ctx.ok(),
        Some(_) => ctx.error(b"ERR DB index is out of range"),
        None => ctx.raw(resp::ERR_NOT_INTEGER),
    }
    Step::Done
}

/// `CLIENT SETNAME / SETINFO ...`: accepted.
pub fn client(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.ok();
    Step::Done
}

/// `QUIT`.
pub fn quit(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.ok();
    Step::Close(String::new())
}
