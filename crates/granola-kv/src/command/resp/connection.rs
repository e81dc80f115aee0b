//! Connection commands: HELLO AUTH SELECT RESET QUIT (CLIENT is `client`).

use super::{parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command, Version};

/// The Redis version granola-kv answers as (what clients' feature checks
/// read); granola-kv's own is `granola_kv_version` in INFO.
pub const REDIS_VERSION: &str = "7.2.4";

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// Checks a password against `--requirepass`; writes the error if wrong.
fn check_password(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> bool {
    let ok = match &ctx.shared.config.requirepass {
        // No password: the default user has none (any password works).
        None => user == b"default",
        Some(p) => user == b"default" && p.as_bytes() == pass,
    };
    if !ok {
        let context = if ctx.conn.exec { "multi" } else { "toplevel" };
        let now_s = ctx.shared.store.clock().coarse_s();
        let info = ctx.conn.info.line(&ctx.conn.handle, now_s);
        ctx.shared.acl_log.denied_auth(user, info, context);
        ctx.error(b"WRONGPASS invalid username-password pair or user is disabled.");
    }
    ok
}

/// `AUTH [username] password`.
pub fn auth(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let (user, pass): (&[u8], &[u8]) = match cmd.len() {
        2 => (b"default", arg(cmd, 1)),
        3 => (arg(cmd, 1), arg(cmd, 2)),
        _ => {
            ctx.raw(resp::ERR_SYNTAX);
            return Step::Done;
        }
    };
    if cmd.len() == 2 && ctx.shared.config.requirepass.is_none() {
        ctx.error(b"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
        return Step::Done;
    }
    if check_password(ctx, user, pass) {
        ctx.conn.authed = true;
        ctx.ok();
    }
    Step::Done
}

/// `HELLO [protover [AUTH username password] [SETNAME clientname]]`.
pub fn hello(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let mut version = ctx.conn.version;
    let mut i = 1;
    if cmd.len() > 1 {
        match parse_i64(arg(cmd, 1)) {
            Some(2) => version = Version::Resp2,
            Some(3) => version = Version::Resp3,
            Some(_) => {
                ctx.error(b"NOPROTO unsupported protocol version");
                return Step::Done;
            }
            None => {
                ctx.error(b"ERR Protocol version is not an integer or out of range");
                return Step::Done;
            }
        }
        i = 2;
    }
    let mut name = None;
    while i < cmd.len() {
        let opt = arg(cmd, i);
        if opt.eq_ignore_ascii_case(b"AUTH") && i + 2 < cmd.len() {
            if !check_password(ctx, arg(cmd, i + 1), arg(cmd, i + 2)) {
                return Step::Done;
            }
            ctx.conn.authed = true;
            i += 3;
        } else if opt.eq_ignore_ascii_case(b"SETNAME") && i + 1 < cmd.len() {
            let n = arg(cmd, i + 1);
            if !valid_name(n) {
                ctx.error(
                    b"ERR Client names cannot contain spaces, newlines or special characters.",
                );
                return Step::Done;
            }
            name = Some(n);
            i += 2;
        } else {
            ctx.error(b"ERR Syntax error in HELLO option");
            return Step::Done;
        }
    }
    if !ctx.conn.authed {
        ctx.error(b"NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
        return Step::Done;
    }
    if let Some(n) = name {
        ctx.conn.info.name = n.to_vec();
    }
    ctx.conn.version = version;
    ctx.conn.info.resp = if version == Version::Resp3 { 3 } else { 2 };
    ctx.conn.publish();
    ctx.map(7);
    ctx.bytes(b"server");
    ctx.bytes(b"redis");
    ctx.bytes(b"version");
    ctx.bytes(REDIS_VERSION.as_bytes());
    ctx.bytes(b"proto");
    ctx.int(i64::from(ctx.conn.info.resp));
    ctx.bytes(b"id");
    ctx.int(ctx.conn.info.id as i64);
    ctx.bytes(b"mode");
    ctx.bytes(b"standalone");
    ctx.bytes(b"role");
    ctx.bytes(b"master");
    ctx.bytes(b"modules");
    ctx.array(0);
    Step::Done
}

/// A name `CLIENT SETNAME` (or HELLO's SETNAME) accepts: printable, no
/// spaces.
pub(super) fn valid_name(n: &[u8]) -> bool {
    n.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

/// `SELECT db` (`--databases`, default 16).
pub fn select(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    match parse_i64(arg(cmd, 1)) {
        Some(n) if (0..i64::from(ctx.shared.config.databases)).contains(&n) => {
            ctx.conn.info.db = n as u8;
            ctx.conn.publish();
            ctx.ok();
        }
        Some(_) => ctx.error(b"ERR DB index is out of range"),
        None => ctx.raw(resp::ERR_NOT_INTEGER),
    }
    Step::Done
}

/// `RESET`: back to a fresh connection's state.
pub fn reset(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.conn.multi = None;
    ctx.conn.watch_book.forget(&mut ctx.conn.watched);
    super::transaction::note(ctx);
    ctx.conn.tracking = None;
    ctx.conn.sub = None;
    ctx.conn.version = Version::Resp2;
    ctx.conn.info.db = 0;
    ctx.conn.info.name.clear();
    ctx.conn.info.resp = 2;
    ctx.conn.info.redir = -1;
    ctx.conn.info.pubsub = false;
    ctx.conn.authed = ctx.shared.config.requirepass.is_none();
    ctx.conn.publish();
    ctx.simple(b"RESET");
    Step::Done
}

/// `QUIT`.
pub fn quit(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.ok();
    Step::Close(Box::default())
}
