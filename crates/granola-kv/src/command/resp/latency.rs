//! `LATENCY` and its subcommands. granola-kv keeps no latency monitor
//! (no events are sampled, as in Redis with `latency-monitor-threshold 0`);
//! it keeps per-command histograms of the timed calls (see
//! [`commandstats`](super::commandstats)).

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

/// `LATENCY HISTOGRAM [command ...]`: per command, its timed calls and
/// their cumulative distribution over power-of-two microsecond buckets.
pub fn histogram(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let names: Vec<&[u8]> = cmd.args().skip(2).collect();
    let entries = ctx.shared.commandstats.latency_histograms(&names);
    ctx.map(entries.len());
    for (spec, cdf) in entries {
        ctx.bytes(spec.name.as_bytes());
        ctx.map(2);
        ctx.bytes(b"calls");
        ctx.int(cdf.calls as i64);
        ctx.bytes(b"histogram_usec");
        ctx.map(cdf.buckets.len());
        for (usec, count) in cdf.buckets {
            ctx.int(usec as i64);
            ctx.int(count as i64);
        }
    }
    Step::Done
}

/// `LATENCY DOCTOR`: says why there is nothing to analyse.
pub fn doctor(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.verbatim(
        b"granola-kv keeps no latency monitor, so there are no latency events to analyse. \
          INFO commandstats and latencystats, and LATENCY HISTOGRAM, report each command's \
          calls and times.\n",
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
