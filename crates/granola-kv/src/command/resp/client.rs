//! `CLIENT` and its subcommands, each one function the command table
//! names (`client|id`, `client|kill`, ...). Tracking's (`TRACKING`,
//! `CACHING`, `GETREDIR`, `TRACKINGINFO`) live with tracking.

use super::blocking::Unblock;
use super::clients::{self, PauseMode};
use super::connection::valid_name;
use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use std::time::{Duration, Instant};

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `CLIENT ID`.
pub fn id(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.int(ctx.conn.info.id as i64);
    Step::Done
}

/// `CLIENT GETNAME`: the name, or null.
pub fn getname(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    if ctx.conn.info.name.is_empty() {
        ctx.null();
    } else {
        let name = ctx.conn.info.name.clone();
        ctx.bytes(&name);
    }
    Step::Done
}

/// `CLIENT SETNAME name`.
pub fn setname(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let name = arg(cmd, 2);
    if valid_name(name) {
        ctx.conn.info.name = name.to_vec();
        ctx.conn.publish();
        ctx.ok();
    } else {
        ctx.error(b"ERR Client names cannot contain spaces, newlines or special characters.");
    }
    Step::Done
}

/// `CLIENT SETINFO LIB-NAME name | LIB-VER version`.
pub fn setinfo(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let attr = arg(cmd, 2).to_ascii_lowercase();
    let value = arg(cmd, 3);
    if !valid_name(value) && !value.is_empty() {
        ctx.error(
            b"ERR lib-name and lib-ver cannot contain spaces, newlines or special characters.",
        );
        return Step::Done;
    }
    match &attr[..] {
        b"lib-name" => ctx.conn.info.lib_name = value.to_vec(),
        b"lib-ver" => ctx.conn.info.lib_ver = value.to_vec(),
        _ => {
            ctx.error(b"ERR Unrecognized option");
            return Step::Done;
        }
    }
    ctx.conn.publish();
    ctx.ok();
    Step::Done
}

/// `CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...]`.
pub fn list(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let mut pubsub: Option<Option<bool>> = None;
    let mut ids: Option<Vec<u64>> = None;
    let mut i = 2;
    while i < cmd.len() {
        let option = arg(cmd, i);
        if option.eq_ignore_ascii_case(b"TYPE") && i + 1 < cmd.len() {
            match client_type(arg(cmd, i + 1)) {
                Some(t) => pubsub = Some(t),
                None => {
                    unknown_type(ctx, arg(cmd, i + 1));
                    return Step::Done;
                }
            }
            i += 2;
        } else if option.eq_ignore_ascii_case(b"ID") && i + 1 < cmd.len() {
            let mut chosen = Vec::new();
            i += 1;
            while let Some(a) = cmd.arg(i) {
                match parse_i64(a).filter(|&id| id > 0) {
                    Some(id) => chosen.push(id as u64),
                    None => {
                        ctx.error(b"ERR Invalid client ID");
                        return Step::Done;
                    }
                }
                i += 1;
            }
            ids = Some(chosen);
        } else {
            ctx.error(b"ERR syntax error");
            return Step::Done;
        }
    }
    let now_s = ctx.shared.store.clock().coarse_s();
    let text = ctx.shared.clients.list(now_s, |id, info| {
        pubsub.is_none_or(|t| t == Some(info.pubsub))
            && ids.as_ref().is_none_or(|ids| ids.contains(&id))
    });
    ctx.verbatim(text.as_bytes());
    Step::Done
}

/// A client type's name: `Some(pubsub?)` for the types a connection here
/// can have, `None` inside for master and replica (no one is), `None` for
/// no such type.
fn client_type(name: &[u8]) -> Option<Option<bool>> {
    let t = name.to_ascii_lowercase();
    match &t[..] {
        b"normal" => Some(Some(false)),
        b"pubsub" => Some(Some(true)),
        b"master" | b"replica" | b"slave" => Some(None),
        _ => None,
    }
}

fn unknown_type(ctx: &mut Ctx<'_>, name: &[u8]) {
    let text = format!(
        "ERR Unknown client type '{}'",
        String::from_utf8_lossy(name)
    );
    ctx.error(text.as_bytes());
}

/// `CLIENT INFO`: this connection's `CLIENT LIST` line.
pub fn info(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let now_s = ctx.shared.store.clock().coarse_s();
    let text = ctx.conn.info.line(&ctx.conn.handle, now_s);
    ctx.verbatim(text.as_bytes());
    Step::Done
}

/// `CLIENT NO-EVICT ON|OFF`: connections are never evicted here (their
/// buffers have their own share of `-m`), so it only shows in `CLIENT
/// LIST` (`flags=e`).
pub fn no_evict(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Some(on) = on_off(ctx, cmd) {
        ctx.conn.info.no_evict = on;
        ctx.conn.publish();
        ctx.ok();
    }
    Step::Done
}

/// `CLIENT NO-TOUCH ON|OFF`: while on, the client's reads leave the
/// items they read as they were (access time, `OBJECT IDLETIME`, recency
/// for eviction), but for TOUCH's.
pub fn no_touch(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if let Some(on) = on_off(ctx, cmd) {
        ctx.conn.info.no_touch = on;
        ctx.conn.publish();
        ctx.ok();
    }
    Step::Done
}

/// ON (true) or OFF (false); Redis's error otherwise.
fn on_off(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Option<bool> {
    let on = super::choice(arg(cmd, 2), b"ON", b"OFF");
    if on.is_none() {
        ctx.error(b"ERR syntax error");
    }
    on
}

/// `CLIENT REPLY ON|OFF|SKIP`: OFF silences every reply until ON; SKIP
/// the next command's. Neither OFF nor SKIP answers itself (see
/// [`Replies`](super::Replies)).
pub fn reply(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let a = arg(cmd, 2);
    if a.eq_ignore_ascii_case(b"ON") {
        ctx.conn.replies = super::Replies::On;
        ctx.ok();
    } else if a.eq_ignore_ascii_case(b"OFF") {
        ctx.conn.replies = super::Replies::Off;
    } else if a.eq_ignore_ascii_case(b"SKIP") {
        if ctx.conn.replies != super::Replies::Off {
            ctx.conn.replies = super::Replies::SkipNext;
        }
    } else {
        ctx.error(b"ERR syntax error");
    }
    Step::Done
}

/// `CLIENT PAUSE milliseconds [WRITE|ALL]`: holds back every client's
/// commands (or those that write) until the time passes or `CLIENT
/// UNPAUSE`. A held-back command waits unread, as a blocked one does.
/// memcached and native clients are held back alike (they write the same
/// keyspace); their UDP writes are dropped meanwhile, as if lost.
pub fn pause(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let mode = match cmd.arg(3) {
        None => PauseMode::All,
        Some(m) if m.eq_ignore_ascii_case(b"ALL") => PauseMode::All,
        Some(m) if m.eq_ignore_ascii_case(b"WRITE") => PauseMode::Write,
        Some(_) => {
            ctx.error(b"ERR CLIENT PAUSE mode must be WRITE or ALL");
            return Step::Done;
        }
    };
    if cmd.len() > 4 {
        ctx.error(b"ERR syntax error");
        return Step::Done;
    }
    match parse_i64(arg(cmd, 2)) {
        None => ctx.error(b"ERR timeout is not an integer or out of range"),
        Some(ms) if ms < 0 => ctx.error(b"ERR timeout is negative"),
        Some(ms) => {
            let until = Instant::now()
                .checked_add(Duration::from_millis(ms as u64))
                // Far enough to mean "until UNPAUSE".
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 32));
            ctx.shared.clients.pause(until, mode);
            ctx.ok();
        }
    }
    Step::Done
}

/// `CLIENT UNPAUSE`.
pub fn unpause(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.shared.clients.unpause();
    ctx.ok();
    Step::Done
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: 1 if that client was blocked.
pub fn unblock(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let how = match cmd.arg(3) {
        None => Some(Unblock::Timeout),
        Some(w) if w.eq_ignore_ascii_case(b"TIMEOUT") => Some(Unblock::Timeout),
        Some(w) if w.eq_ignore_ascii_case(b"ERROR") => Some(Unblock::Error),
        Some(_) => None,
    };
    match (parse_i64(arg(cmd, 2)), how) {
        _ if cmd.len() > 4 => ctx.error(b"ERR syntax error"),
        (Some(id), Some(how)) if id >= 0 => {
            let done = ctx.shared.waiters.unblock(id as u64, how);
            ctx.int(i64::from(done));
        }
        (None, _) => ctx.raw(resp::ERR_NOT_INTEGER),
        _ => ctx.error(b"ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
    }
    Step::Done
}

/// `CLIENT KILL ip:port` (OK, or an error if no such client), or `CLIENT
/// KILL filter value ...` with ID, ADDR, LADDR, TYPE, USER, MAXAGE and
/// SKIPME (how many were closed). A killed connection closes after the replies
/// already queued for it, before its next request; the killing one
/// itself (`SKIPME no`) after this reply.
pub fn kill(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let mut filter = clients::KillFilter {
        skip: Some(ctx.conn.info.id),
        ..Default::default()
    };
    if cmd.len() == 3 {
        filter.addr = Some(String::from_utf8_lossy(arg(cmd, 2)).into_owned());
        filter.skip = None;
        if ctx.shared.clients.kill(&filter) == 0 {
            ctx.error(b"ERR No such client");
        } else {
            ctx.ok();
        }
        return Step::Done;
    }
    if cmd.len() % 2 != 0 {
        ctx.error(b"ERR syntax error");
        return Step::Done;
    }
    let mut args = cmd.args().skip(2);
    while let (Some(name), Some(value)) = (args.next(), args.next()) {
        let name = name.to_ascii_lowercase();
        match &name[..] {
            b"id" => match parse_i64(value).filter(|&id| id > 0) {
                Some(id) => filter.id = Some(id as u64),
                None => {
                    ctx.error(b"ERR client-id should be greater than 0");
                    return Step::Done;
                }
            },
            b"addr" => filter.addr = Some(String::from_utf8_lossy(value).into_owned()),
            b"laddr" => filter.laddr = Some(String::from_utf8_lossy(value).into_owned()),
            b"type" => match client_type(value) {
                Some(t) => filter.pubsub = Some(t),
                None => {
                    unknown_type(ctx, value);
                    return Step::Done;
                }
            },
            b"user" => {
                if value != b"default" {
                    ctx.error(
                        format!("ERR No such user '{}'", String::from_utf8_lossy(value)).as_bytes(),
                    );
                    return Step::Done;
                }
                // `default` is every connection's user: no narrowing.
            }
            b"maxage" => match parse_i64(value).filter(|&s| s >= 0) {
                Some(s) => filter.max_age = Some(s as u64),
                None => {
                    ctx.raw(resp::ERR_NOT_INTEGER);
                    return Step::Done;
                }
            },
            b"skipme" => {
                if value.eq_ignore_ascii_case(b"yes") {
                    filter.skip = Some(ctx.conn.info.id);
                } else if value.eq_ignore_ascii_case(b"no") {
                    filter.skip = None;
                } else {
                    ctx.error(b"ERR syntax error");
                    return Step::Done;
                }
            }
            _ => {
                ctx.error(b"ERR syntax error");
                return Step::Done;
            }
        }
    }
    let n = ctx.shared.clients.kill(&filter);
    ctx.int(n as i64);
    Step::Done
}

/// `CLIENT HELP`.
pub fn help(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.help(&[
        b"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"CACHING (YES|NO)",
        b"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        b"GETREDIR",
        b"    Return the client ID we are redirecting to when tracking is enabled.",
        b"GETNAME",
        b"    Return the name of the current connection.",
        b"ID",
        b"    Return the ID of the current connection.",
        b"INFO",
        b"    Return information about the current client connection.",
        b"KILL <ip:port>",
        b"    Kill connection made from <ip:port>.",
        b"KILL <option> <value> [<option> <value> [...]]",
        b"    Kill connections. Options are:",
        b"    * ADDR <ip:port>",
        b"      Kill connections made from the specified address",
        b"    * LADDR <ip:port>",
        b"      Kill connections made to specified local address",
        b"    * ID <client-id>",
        b"      Kill the connection with this ID.",
        b"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        b"      Kill connections by type.",
        b"    * USER <username>",
        b"      Kill connections authenticated by <username>.",
        b"    * MAXAGE <seconds>",
        b"      Kill connections older than <seconds>.",
        b"    * SKIPME (YES|NO)",
        b"      Skip killing current connection (default: yes).",
        b"LIST [options ...]",
        b"    Return information about client connections. Options:",
        b"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        b"      Return clients of specified type.",
        b"    * ID <client-id> [<client-id> ...]",
        b"      Return clients with these IDs.",
        b"UNPAUSE",
        b"    Stop the current client pause, resuming traffic.",
        b"PAUSE <timeout> [WRITE|ALL]",
        b"    Suspend all, or just write, clients for <timeout> milliseconds.",
        b"REPLY (ON|OFF|SKIP)",
        b"    Control the replies sent to the current connection.",
        b"SETNAME <name>",
        b"    Assign the name <name> to the current connection.",
        b"SETINFO <LIB-NAME|LIB-VER> <value>",
        b"    Set client library name or version.",
        b"UNBLOCK <clientid> [TIMEOUT|ERROR]",
        b"    Unblock the specified blocked client.",
        b"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        b"         [OPTIN] [OPTOUT] [NOLOOP]",
        b"    Control server assisted client side caching.",
        b"TRACKINGINFO",
        b"    Report tracking status for the current connection.",
        b"NO-EVICT (ON|OFF)",
        b"    Protect current client connection from eviction.",
        b"NO-TOUCH (ON|OFF)",
        b"    Will not touch LRU/LFU stats when this mode is on.",
        b"HELP",
        b"    Prints this help.",
    ]);
    Step::Done
}
