//! MONITOR: the client receives every command the server runs, one line
//! each, as Redis writes them: `+<unix seconds>.<microseconds> [<db>
//! <client address>] "ARG" "arg" ...` (`[<db> lua]` for a script's
//! `redis.call`), the arguments quoted with C escapes, passwords of AUTH
//! and HELLO ... AUTH shown as `(redacted)`. A command is shown after it
//! ran (a script before, so its commands follow it); a transaction's
//! commands when EXEC runs them, then EXEC.
//! Administrative commands (CONFIG, CLIENT, MONITOR ...) are not shown, as
//! in Redis. The lines go through the Pub/Sub mailboxes, so a monitor
//! that does not read is cut off at the same output limit.
//!
//! While monitoring, the connection may only RESET or QUIT; anything else
//! gets Redis's error.

use super::table::Spec;
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::Command;
use std::io::Write as _;

/// `MONITOR`.
pub fn monitor(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    if ctx.conn.exec {
        ctx.error(b"ERR MONITOR is not allowed inside MULTI or a script");
        return Step::Done;
    }
    match super::pubsub::subscriber(ctx, "monitor") {
        Some(sub) => sub.monitor(),
        None => return Step::Done,
    }
    ctx.ok();
    Step::Done
}

/// True if `spec` is shown before it runs: a script, so that its
/// `redis.call`s follow it, as in Redis.
#[inline]
pub fn shown_first(spec: &Spec) -> bool {
    spec.traits.has(super::table::Traits::SCRIPT)
}

/// True if a monitoring connection may run `name`.
pub fn allowed_while_monitoring(name: &str) -> bool {
    matches!(name, "quit" | "reset")
}

/// Shows `cmd`, which just ran, to the monitoring clients (one load while
/// there are none).
#[inline(always)]
pub fn feed(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>) {
    if ctx.shared.bus.monitored() {
        show(ctx, spec, cmd);
    }
}

#[inline(never)]
fn show(ctx: &Ctx<'_>, spec: &Spec, cmd: &Command<'_>) {
    if spec.flags.contains(&"admin") {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut line = Vec::with_capacity(64);
    let _ = write!(
        line,
        "{}.{:06} [{} ",
        now.as_secs(),
        now.subsec_micros(),
        ctx.conn.info.db
    );
    if ctx.conn.script {
        line.extend_from_slice(b"lua]");
    } else {
        line.extend_from_slice(ctx.conn.info.addr.as_bytes());
        line.push(b']');
    }
    let mut redact = match spec.name {
        "auth" => usize::MAX,
        _ => 0,
    };
    for (i, arg) in cmd.args().enumerate() {
        line.push(b' ');
        if redact > 0 && i > 0 {
            redact -= 1;
            quote(b"(redacted)", &mut line);
            continue;
        }
        quote(arg, &mut line);
        if spec.name == "hello" && arg.eq_ignore_ascii_case(b"AUTH") {
            // Username and password.
            redact = 2;
        }
    }
    ctx.shared.bus.feed_monitors(&line);
}

/// `arg` in double quotes with C escapes (Redis's `sdscatrepr`).
fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn arguments_are_quoted_as_redis_quotes_them() {
        let mut out = Vec::new();
        quote(b"k\"\\\n\x01 \t\r\x07\x08\xff", &mut out);
        assert_eq!(out, b"\"k\\\"\\\\\\n\\x01 \\t\\r\\a\\b\\xff\"");
    }
}
