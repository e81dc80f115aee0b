//! `DEBUG`: what client libraries and test suites use of Redis's DEBUG
//! (PROTOCOL and ERROR to test a client's parser, SLEEP, OBJECT,
//! POPULATE, SET-ACTIVE-EXPIRE, LOG, and DIGEST/DIGEST-VALUE to compare
//! datasets). Refused unless
//! `--enable-debug-command` allows the client, with Redis's text, as
//! Redis refuses it by default.
//!
//! Not served: what only makes sense inside Redis (RELOAD and the other
//! RDB/AOF subcommands, the crash subcommands, encoding internals such as
//! LISTPACK, QUICKLIST, SDSLEN, HTSTATS); they get Redis's error for an
//! unknown subcommand.
//!
//! Unlike Redis, `DEBUG SLEEP` delays the caller's reply only: the server
//! goes on serving everyone else (the connection waits as a blocked
//! command does, so `CLIENT KILL` and `CLIENT UNBLOCK` reach it; inside
//! MULTI it answers at once).

use super::blocking::wait_for;
use super::{digest, dump, keys, Ctx};
use crate::command::Step;
use crate::protocol::resp::{Command, Version};
use crate::server::config::DebugCommand;
use crate::store::{Meta, SetMode, StoreError};
use std::time::Duration;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// `DEBUG <subcommand> [arg ...]`.
pub fn debug(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if !allowed(ctx) {
        ctx.error(
            b"ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
              you can run it from a local connection, otherwise you need to set this option in the \
              configuration file, and then restart the server.",
        );
        return Step::Done;
    }
    let sub = arg(cmd, 1).to_ascii_uppercase();
    match (&sub[..], cmd.len()) {
        (b"HELP", 2) => help(ctx),
        (b"SLEEP", 3) => return sleep(ctx, arg(cmd, 2)),
        (b"OBJECT", 3) => object(ctx, arg(cmd, 2)),
        (b"PROTOCOL", 3) => protocol(ctx, arg(cmd, 2)),
        (b"ERROR", 3) => ctx.error(arg(cmd, 2)),
        (b"LOG", 3) => {
            log::warn!("DEBUG LOG: {}", String::from_utf8_lossy(arg(cmd, 2)));
            ctx.ok();
        }
        (b"SET-ACTIVE-EXPIRE", 3) => {
            // Redis reads the number as C's atoi: anything but 0 is on.
            let on = arg(cmd, 2) != b"0";
            ctx.shared.store.set_active_expiry(on);
            ctx.ok();
        }
        (b"POPULATE", 3..=5) => populate(ctx, cmd),
        (b"DIGEST", 2) => digest::dataset(ctx),
        (b"DIGEST-VALUE", _) => {
            let keys: Vec<&[u8]> = (2..cmd.len()).map(|i| arg(cmd, i)).collect();
            digest::values(ctx, &keys);
        }
        _ => {
            let name = String::from_utf8_lossy(arg(cmd, 1));
            ctx.error(
                format!(
                    "ERR unknown subcommand or wrong number of arguments for '{name}'. Try DEBUG HELP."
                )
                .as_bytes(),
            );
        }
    }
    Step::Done
}

/// `--enable-debug-command` lets this client run DEBUG.
fn allowed(ctx: &Ctx<'_>) -> bool {
    match ctx.shared.config.enable_debug_command {
        DebugCommand::Yes => true,
        DebugCommand::No => false,
        DebugCommand::Local => ctx
            .conn
            .info
            .addr
            .parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().is_loopback()),
    }
}

fn help(ctx: &mut Ctx<'_>) {
    ctx.help(&[
        b"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        b"DIGEST",
        b"    Output a hex signature representing the current DB content.",
        b"DIGEST-VALUE <key> [<key> ...]",
        b"    Output a hex signature of the values of all the specified keys.",
        b"ERROR <string>",
        b"    Return a Redis protocol error with <string> as message. Useful for clients",
        b"    unit tests to simulate Redis errors.",
        b"LOG <message>",
        b"    Write <message> to the server log.",
        b"OBJECT <key>",
        b"    Show low level info about `key` and associated value.",
        b"POPULATE <count> [<prefix>] [<size>]",
        b"    Create <count> string keys named key:<num>. If <prefix> is specified then",
        b"    it is used instead of the 'key' prefix.",
        b"PROTOCOL <type>",
        b"    Reply with a test value of the specified type. <type> can be: string,",
        b"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
        b"    true, false.",
        b"SET-ACTIVE-EXPIRE <0|1>",
        b"    Setting it to 0 disables expiring keys in background when they are not",
        b"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
        b"    default.",
        b"SLEEP <seconds>",
        b"    Delay this client's reply for <seconds>. Decimals allowed.",
        b"HELP",
        b"    Prints this help.",
    ]);
}

/// `DEBUG SLEEP seconds`: the reply after that long. The number is read
/// as C's `strtod` reads it in Redis: what does not parse is 0.
fn sleep(ctx: &mut Ctx<'_>, secs: &[u8]) -> Step {
    let secs = std::str::from_utf8(secs)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(0.0);
    if secs == 0.0 && ctx.conn.blocked.is_none() {
        ctx.ok();
        return Step::Done;
    }
    // More than a year is as good as never (blocking commands cap there).
    let wait = Duration::from_secs_f64(secs.min(365.0 * 86_400.0));
    wait_for(ctx, &[], Some(wait), |_| false, |ctx| ctx.ok())
}

/// `DEBUG OBJECT key`: Redis's line, with the fields that mean the same
/// here (no address: granola-kv shows none of its memory layout).
fn object(ctx: &mut Ctx<'_>, key: &[u8]) {
    let Some(item) = ctx.db.peek(key) else {
        ctx.error(b"ERR no such key");
        return;
    };
    let idle = ctx.db.access(&item).idle_s;
    // Redis's LRU clock: seconds, 24 bits.
    let lru = (ctx.db.now_ms() / 1000).saturating_sub(idle) & 0xFF_FFFF;
    let line = format!(
        "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:{lru} lru_seconds_idle:{idle}",
        String::from_utf8_lossy(keys::encoding(&item)),
        dump::serialized_len(&item).unwrap_or(0),
    );
    ctx.simple(line.as_bytes());
}

/// `DEBUG PROTOCOL type`: Redis's test value of each RESP3 type, as
/// RESP2 shows it to a RESP2 client.
fn protocol(ctx: &mut Ctx<'_>, name: &[u8]) {
    let resp3 = ctx.version() == Version::Resp3;
    let boolean = |ctx: &mut Ctx<'_>, b: bool| match (resp3, b) {
        (true, true) => ctx.raw(b"#t\r\n"),
        (true, false) => ctx.raw(b"#f\r\n"),
        (false, b) => ctx.int(i64::from(b)),
    };
    match &name.to_ascii_lowercase()[..] {
        b"string" => ctx.bytes(b"Hello World"),
        b"integer" => ctx.int(12345),
        // Redis's test value, not π.
        b"double" => ctx.raw(if resp3 {
            b",3.141\r\n"
        } else {
            b"$5\r\n3.141\r\n"
        }),
        b"bignum" if resp3 => ctx.raw(b"(1234567999999999999999999999999999999\r\n"),
        b"bignum" => ctx.bytes(b"1234567999999999999999999999999999999"),
        b"null" => ctx.null(),
        b"array" | b"set" => {
            if name.eq_ignore_ascii_case(b"set") {
                ctx.set(3);
            } else {
                ctx.array(3);
            }
            for i in 0..3 {
                ctx.int(i);
            }
        }
        b"map" => {
            ctx.map(3);
            for i in 0..3 {
                ctx.int(i);
                boolean(ctx, i == 1);
            }
        }
        b"attrib" => {
            if resp3 {
                ctx.raw(b"|1\r\n");
                ctx.bytes(b"key-popularity");
                ctx.array(2);
                ctx.bytes(b"key:123");
                ctx.int(90);
            }
            ctx.bytes(b"Some real reply following the attribute");
        }
        b"push" if resp3 => {
            ctx.raw(b">2\r\n");
            ctx.bytes(b"server-cpu-usage");
            ctx.int(42);
            ctx.bytes(b"Some real reply following the push reply");
        }
        b"push" => ctx.error(b"ERR RESP2 is not supported by this command"),
        b"verbatim" => ctx.verbatim(b"This is a verbatim\nstring"),
        b"true" => boolean(ctx, true),
        b"false" => boolean(ctx, false),
        _ => ctx.error(
            b"ERR Wrong protocol type name. Please use one of the following: \
              string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

/// `DEBUG POPULATE count [prefix] [size]`: string keys `prefix:n` (`key`
/// by default) holding `value:n`, padded with zero bytes or cut to `size`;
/// keys that exist are left alone.
fn populate(ctx: &mut Ctx<'_>, cmd: &Command<'_>) {
    let positive = |a: &[u8]| super::parse_i64(a).filter(|n| *n >= 0);
    let Some(count) = positive(arg(cmd, 2)) else {
        ctx.error(b"ERR value is out of range, must be positive");
        return;
    };
    let prefix = cmd.arg(3).unwrap_or(b"key");
    let size = match cmd.arg(4) {
        None => None,
        Some(a) => match positive(a) {
            Some(n) if n as usize > ctx.shared.config.max_bulk() => {
                ctx.error(b"ERR size is larger than proto-max-bulk-len");
                return;
            }
            Some(n) => Some(n as usize),
            None => {
                ctx.error(b"ERR value is out of range, must be positive");
                return;
            }
        },
    };
    let mut key = Vec::new();
    let mut value = Vec::new();
    for n in 0..count {
        key.clear();
        key.extend_from_slice(prefix);
        key.push(b':');
        key.extend_from_slice(n.to_string().as_bytes());
        value.clear();
        value.extend_from_slice(format!("value:{n}").as_bytes());
        if let Some(size) = size {
            value.resize(size, 0);
        }
        match ctx.db.set(&key, &value, Meta::default(), SetMode::Add) {
            Ok(_) | Err(StoreError::NotStored) | Err(StoreError::Exists) => {}
            Err(e) => {
                ctx.store_error(e);
                return;
            }
        }
    }
    ctx.ok();
}
