//! `MODULE` and its subcommands. granola-kv loads no modules (Redis
//! modules are C libraries built against Redis's own API): the list is
//! empty and loading is refused with the reason.

use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::Command;

/// `MODULE LIST`: none.
pub fn list(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.array(0);
    Step::Done
}

/// `MODULE LOAD path [arg ...]` and `MODULE LOADEX ...`.
pub fn load(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.error(b"ERR granola-kv does not load Redis modules");
    Step::Done
}

/// `MODULE UNLOAD name`: no module has that name.
pub fn unload(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.error(b"ERR Error unloading module: no such module with that name");
    Step::Done
}

/// `MODULE HELP`.
pub fn help(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.help(&[
        b"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"LIST",
        b"    Return a list of loaded modules.",
        b"LOAD <path> [<arg> ...]",
        b"    Load a module library from <path>, passing to it any optional arguments.",
        b"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
        b"    Load a module library from <path>, while passing it module configurations and optional arguments.",
        b"UNLOAD <name>",
        b"    Unload a module.",
        b"HELP",
        b"    Prints this help.",
    ]);
    Step::Done
}
