//! `LATENCY` and its subcommands. granola-kv keeps no latency monitor
//! (no events are sampled, as in Redis with `latency-monitor-threshold 0`)
//! and no per-command histograms: INFO commandstats has each command's
//! calls and time.

use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::Command;

/// `LATENCY LATEST`: no events.
pub fn latest(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.array(0);
    Step::Done
}

/// `LATENCY HISTORY event`: no samples.
pub fn history(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.array(0);
    Step::Done
}

/// `LATENCY RESET [event ...]`: how many events were reset (none).
pub fn reset(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.int(0);
    Step::Done
}

/// `LATENCY GRAPH event`: Redis's error for an event without samples.
pub fn graph(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let event = String::from_utf8_lossy(cmd.arg(2).unwrap_or_default());
    ctx.error(format!("ERR No samples available for event '{event}'").as_bytes());
    Step::Done
}

/// `LATENCY HISTOGRAM [command ...]`: no histograms are kept, so none is
/// reported.
pub fn histogram(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.map(0);
    Step::Done
}

/// `LATENCY DOCTOR`: says why there is nothing to analyse.
pub fn doctor(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.verbatim(
        b"granola-kv keeps no latency monitor, so there are no latency events to analyse. \
          INFO commandstats reports each command's calls and time.\n",
    );
    Step::Done
}

/// `LATENCY HELP`.
pub fn help(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.help(&[
        b"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"DOCTOR",
        b"    Return a human readable latency analysis report.",
        b"GRAPH <event>",
        b"    Return an ASCII latency graph for the <event> class.",
        b"HISTORY <event>",
        b"    Return time-latency samples for the <event> class.",
        b"LATEST",
        b"    Return the latest latency samples for all events.",
        b"RESET [<event> ...]",
        b"    Reset latency data of one or more <event> classes.",
        b"    (default: reset all data for all event classes)",
        b"HISTOGRAM [COMMAND ...]",
        b"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        b"    If no commands are specified then all histograms are replied.",
        b"HELP",
        b"    Prints this help.",
    ]);
    Step::Done
}
