//! `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//! [AUTH password | AUTH2 username password] [KEYS key ...]`: moves keys
//! to another server (Redis, Valkey or granola-kv) by DUMP and RESTORE,
//! with Redis's replies and errors. Keys move the other way too: Redis's
//! MIGRATE into granola-kv sends RESTORE (or RESTORE-ASKING), which reads
//! Redis's payloads.
//!
//! As in Redis, the command waits for the target (up to `timeout` ms for
//! each step): here that holds one worker, not the whole server. Unlike
//! Redis, the connection is not kept for the next MIGRATE.

use super::{dump, parse_i64, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

fn arg<'a>(cmd: &Command<'a>, i: usize) -> &'a [u8] {
    cmd.arg(i).unwrap_or_default()
}

/// What the options asked for.
struct Options<'c> {
    copy: bool,
    replace: bool,
    /// AUTH's password, or AUTH2's user and password.
    auth: Option<(Option<&'c [u8]>, &'c [u8])>,
    keys: Vec<&'c [u8]>,
}

/// `MIGRATE ...`.
pub fn migrate(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let Some(opts) = options(ctx, cmd) else {
        return Step::Done;
    };
    let (Some(db), Some(timeout)) = (parse_i64(arg(cmd, 4)), parse_i64(arg(cmd, 5))) else {
        ctx.error(b"ERR value is not an integer or out of range");
        return Step::Done;
    };
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    // The keys that exist, with their payloads and time to live (ms, 0:
    // none); an expired key is not moved.
    let now = ctx.db.now_ms();
    let mut moving = Vec::new();
    for &key in &opts.keys {
        let Some(item) = ctx.db.peek(key) else {
            continue;
        };
        let ttl = match item.expires_at_ms() {
            0 => 0,
            at if at <= now => continue,
            at => at - now,
        };
        let Some(payload) = dump::payload(&item) else {
            ctx.error(b"ERR MIGRATE of a stream is not supported by granola-kv");
            return Step::Done;
        };
        moving.push((key, ttl, payload));
    }
    if moving.is_empty() {
        ctx.simple(b"NOKEY");
        return Step::Done;
    }
    let mut request = Vec::new();
    match opts.auth {
        Some((None, password)) => resp::encode_command(&[&b"AUTH"[..], password], &mut request),
        Some((Some(user), password)) => {
            resp::encode_command(&[&b"AUTH"[..], user, password], &mut request)
        }
        None => {}
    }
    let db = db.to_string();
    resp::encode_command(&[&b"SELECT"[..], db.as_bytes()], &mut request);
    for (key, ttl, payload) in &moving {
        let ttl = ttl.to_string();
        let mut words: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), payload];
        if opts.replace {
            words.push(b"REPLACE");
        }
        resp::encode_command(&words, &mut request);
    }
    let host = String::from_utf8_lossy(arg(cmd, 1)).into_owned();
    let port = String::from_utf8_lossy(arg(cmd, 2)).into_owned();
    let replies = match exchange(
        &host,
        &port,
        timeout,
        &request,
        moving.len() + 1 + usize::from(opts.auth.is_some()),
    ) {
        Ok(replies) => replies,
        Err(Failure::Connect) => {
            ctx.error(b"IOERR error or timeout connecting to the client");
            return Step::Done;
        }
        Err(Failure::Write) => {
            ctx.error(b"IOERR error or timeout writing to target instance");
            return Step::Done;
        }
        Err(Failure::Read) => {
            ctx.error(b"IOERR error or timeout reading to target instance");
            return Step::Done;
        }
    };
    // AUTH and SELECT first: their error ends it, nothing moved.
    let setup = 1 + usize::from(opts.auth.is_some());
    if let Some(e) = replies[..setup].iter().find(|r| r.starts_with('-')) {
        target_error(ctx, e);
        return Step::Done;
    }
    // Each key the target restored leaves here (but for COPY); the first
    // refusal is the reply.
    let mut refused = None;
    for ((key, _, _), reply) in moving.iter().zip(&replies[setup..]) {
        if reply.starts_with('-') {
            refused.get_or_insert(reply);
        } else if !opts.copy {
            ctx.db.delete(key);
        }
    }
    match refused {
        Some(e) => target_error(ctx, e),
        None => ctx.ok(),
    }
    Step::Done
}

/// The options after the timeout, with Redis's errors.
fn options<'c>(ctx: &mut Ctx<'_>, cmd: &Command<'c>) -> Option<Options<'c>> {
    let mut o = Options {
        copy: false,
        replace: false,
        auth: None,
        keys: Vec::new(),
    };
    let mut i = 6;
    while i < cmd.len() {
        let word = arg(cmd, i);
        let more = cmd.len() - i - 1;
        if word.eq_ignore_ascii_case(b"COPY") {
            o.copy = true;
        } else if word.eq_ignore_ascii_case(b"REPLACE") {
            o.replace = true;
        } else if word.eq_ignore_ascii_case(b"AUTH") && more >= 1 {
            o.auth = Some((None, arg(cmd, i + 1)));
            i += 1;
        } else if word.eq_ignore_ascii_case(b"AUTH2") && more >= 2 {
            o.auth = Some((Some(arg(cmd, i + 1)), arg(cmd, i + 2)));
            i += 2;
        } else if word.eq_ignore_ascii_case(b"KEYS") {
            if !arg(cmd, 3).is_empty() {
                ctx.error(
                    b"ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                );
                return None;
            }
            o.keys = (i + 1..cmd.len()).map(|k| arg(cmd, k)).collect();
            break;
        } else {
            ctx.error(b"ERR syntax error");
            return None;
        }
        i += 1;
    }
    if o.keys.is_empty() {
        o.keys.push(arg(cmd, 3));
    }
    Some(o)
}

/// Where talking to the target failed.
enum Failure {
    Connect,
    Write,
    Read,
}

/// Sends `request` to `host:port` and reads `replies` replies, each as its
/// first line (RESTORE, SELECT and AUTH answer in one line).
fn exchange(
    host: &str,
    port: &str,
    timeout: Duration,
    request: &[u8],
    replies: usize,
) -> Result<Vec<String>, Failure> {
    let addr = format!("{host}:{port}")
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or(Failure::Connect)?;
    let stream = match TcpStream::connect_timeout(&addr, timeout) {
        Ok(s) => s,
        // Refused at once: Redis connects without waiting and finds out
        // when it writes.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Err(Failure::Write),
        Err(_) => return Err(Failure::Connect),
    };
    let _ = stream.set_nodelay(true);
    stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| stream.set_read_timeout(Some(timeout)))
        .map_err(|_| Failure::Connect)?;
    (&stream).write_all(request).map_err(|_| Failure::Write)?;
    let mut reader = BufReader::new(&stream);
    let mut out = Vec::with_capacity(replies);
    for _ in 0..replies {
        let mut line = Vec::new();
        // A reply line is short; a target that sends more is not one.
        let n = (&mut reader)
            .take(64 << 10)
            .read_until(b'\n', &mut line)
            .map_err(|_| Failure::Read)?;
        if n == 0 || !line.ends_with(b"\r\n") {
            return Err(Failure::Read);
        }
        line.truncate(line.len() - 2);
        out.push(String::from_utf8_lossy(&line).into_owned());
    }
    Ok(out)
}

/// Redis's reply for the target's error line `line` (`-...`).
fn target_error(ctx: &mut Ctx<'_>, line: &str) {
    let text = format!(
        "ERR Target instance replied with error: {}",
        line.trim_start_matches('-')
    );
    ctx.error(text.as_bytes());
}
