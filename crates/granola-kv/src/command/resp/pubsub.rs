//! Redis Pub/Sub: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! PUBLISH, the sharded SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH, and PUBSUB
//! (CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB, HELP); where
//! messages go: [`super::pubsub_bus`]. The server is one shard, so shard
//! channels are channels of a namespace of their own, as in a Redis
//! server outside a cluster.
//!
//! A RESP3 client gets its messages as push frames and may run any command
//! meanwhile. A RESP2 client in subscribed mode may run only (P)SUBSCRIBE,
//! (P)UNSUBSCRIBE, PING (answered `["pong", message]`), QUIT and RESET, as
//! in Redis; other commands get Redis's error. Unlike Redis, (un)subscribing
//! inside MULTI is refused (one reply per channel would not fit EXEC's
//! reply).

use super::pubsub_bus::{Delivery, Subscriber, Topic};
use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::{self, Command, Version};
use crate::protocol::ReplySink;

/// `SUBSCRIBE channel [channel ...]`.
pub fn subscribe(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    change(ctx, cmd, Topic::Channel, true)
}

/// `PSUBSCRIBE pattern [pattern ...]`.
pub fn psubscribe(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    change(ctx, cmd, Topic::Pattern, true)
}

/// `SSUBSCRIBE shardchannel [shardchannel ...]`.
pub fn ssubscribe(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    change(ctx, cmd, Topic::Shard, true)
}

/// `UNSUBSCRIBE [channel ...]` (none: every channel).
pub fn unsubscribe(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    change(ctx, cmd, Topic::Channel, false)
}

/// `PUNSUBSCRIBE [pattern ...]` (none: every pattern).
pub fn punsubscribe(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    change(ctx, cmd, Topic::Pattern, false)
}

/// `SUNSUBSCRIBE [shardchannel ...]` (none: every shard channel).
pub fn sunsubscribe(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    change(ctx, cmd, Topic::Shard, false)
}

/// (Un)subscribes the connection; one `[kind, name, count]` reply per
/// name, as Redis answers.
fn change(ctx: &mut Ctx<'_>, cmd: &Command<'_>, topic: Topic, add: bool) -> Step {
    let word: &[u8] = match (topic, add) {
        (Topic::Channel, true) => b"subscribe",
        (Topic::Pattern, true) => b"psubscribe",
        (Topic::Shard, true) => b"ssubscribe",
        (Topic::Channel, false) => b"unsubscribe",
        (Topic::Pattern, false) => b"punsubscribe",
        (Topic::Shard, false) => b"sunsubscribe",
    };
    if ctx.conn.exec {
        // One reply per name would break the EXEC reply's element count.
        ctx.error(
            format!(
                "ERR {} is not allowed inside MULTI",
                String::from_utf8_lossy(word).to_uppercase()
            )
            .as_bytes(),
        );
        return Step::Done;
    }
    let names: Vec<&[u8]> = cmd.args().skip(1).collect();
    let version = ctx.version();
    if add {
        if subscriber(ctx, "subscribe").is_none() {
            return Step::Done;
        }
        let Some(sub) = ctx.conn.sub.as_mut() else {
            return Step::Done;
        };
        for name in names {
            sub.add(name, topic);
            confirm(ctx.out, version, word, Some(name), sub.count(topic));
        }
        show_mode(ctx);
        return Step::Done;
    }
    let Some(sub) = ctx.conn.sub.as_mut() else {
        // Nothing to leave: one reply naming nothing, or one per name.
        if names.is_empty() {
            confirm(ctx.out, version, word, None, 0);
        }
        for name in names {
            confirm(ctx.out, version, word, Some(name), 0);
        }
        return Step::Done;
    };
    let targets: Vec<Vec<u8>> = if names.is_empty() {
        sub.names(topic)
    } else {
        names.iter().map(|n| n.to_vec()).collect()
    };
    if targets.is_empty() {
        confirm(ctx.out, version, word, None, sub.count(topic));
    }
    for name in &targets {
        sub.remove(name, topic);
        confirm(ctx.out, version, word, Some(name), sub.count(topic));
    }
    if sub.total() == 0 {
        ctx.conn.sub = None; // leaves subscribed mode
    }
    show_mode(ctx);
    Step::Done
}

/// Tells `CLIENT LIST` (and `CLIENT KILL TYPE`) whether the connection is
/// in subscribed mode now, and to how many channels, patterns and shard
/// channels.
fn show_mode(ctx: &mut Ctx<'_>) {
    let subscribed = ctx.conn.sub.as_ref().is_some_and(|s| s.subscribed());
    let counts = ctx.conn.sub.as_ref().map_or([0; 3], |s| s.subscriptions());
    if subscribed != ctx.conn.info.pubsub || counts != ctx.conn.info.subscriptions {
        ctx.conn.info.pubsub = subscribed;
        ctx.conn.info.subscriptions = counts;
        ctx.conn.publish();
    }
}

/// The connection's mailbox owner, made on first use (SUBSCRIBE, MONITOR,
/// CLIENT TRACKING); `None`, with an error reply, if the connection cannot
/// be woken to deliver (`what` it tried to do).
pub fn subscriber<'c>(ctx: &'c mut Ctx<'_>, what: &str) -> Option<&'c mut Subscriber> {
    if ctx.conn.sub.is_none() {
        let Some(waker) = ctx.conn.waker.clone() else {
            ctx.error(format!("ERR this connection cannot {what}").as_bytes());
            return None;
        };
        ctx.conn.sub = Some(Subscriber::new(
            ctx.shared.bus.clone(),
            ctx.conn.info.id,
            waker,
        ));
    }
    ctx.conn.sub.as_mut()
}

/// The channel a RESP2 connection receives client tracking's
/// invalidations on when another connection redirects them to it.
pub const TRACKING_CHANNEL: &[u8] = b"__redis__:invalidate";

/// `[word, name, count]` as a push frame (RESP3) or an array (RESP2).
fn confirm(out: &mut dyn ReplySink, v: Version, word: &[u8], name: Option<&[u8]>, count: usize) {
    resp::write_push_header(out, 3, v);
    resp::write_bulk_bytes(out, word);
    match name {
        Some(n) => resp::write_bulk_bytes(out, n),
        None => resp::write_null(out, v),
    }
    resp::write_integer(out, count as i64);
}

/// `PUBLISH channel message`: the number of clients that received it.
pub fn publish(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let channel = cmd.arg(1).unwrap_or_default();
    let message = cmd.arg(2).unwrap_or_default();
    let n = ctx.shared.bus.publish(channel, message);
    own_messages_first(ctx);
    ctx.int(n as i64);
    Step::Done
}

/// A publisher subscribed to what it published gets the message before
/// PUBLISH's reply, as from Redis, which writes both to the client's
/// buffer in that order (not inside EXEC or a script, whose reply is
/// being assembled; it then arrives after, as it would from anyone else).
fn own_messages_first(ctx: &mut Ctx<'_>) {
    if ctx.conn.sub.is_some() && !ctx.conn.exec && !ctx.conn.script {
        // Over its output limit the connection is closed at its next
        // read, which says why.
        let _ = deliver(ctx.conn, ctx.out);
    }
}

/// `SPUBLISH shardchannel message`: the number of clients that received
/// it (shard channel subscribers only).
pub fn spublish(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let channel = cmd.arg(1).unwrap_or_default();
    let message = cmd.arg(2).unwrap_or_default();
    let n = ctx.shared.bus.spublish(channel, message);
    own_messages_first(ctx);
    ctx.int(n as i64);
    Step::Done
}

/// `PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT |
/// SHARDCHANNELS [pattern] | SHARDNUMSUB [shardchannel ...] | HELP`.
pub fn pubsub(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = cmd.arg(1).unwrap_or_default().to_ascii_lowercase();
    let bus = ctx.shared.bus.clone();
    let topic = if sub.starts_with(b"shard") {
        Topic::Shard
    } else {
        Topic::Channel
    };
    match (&sub[..], cmd.len()) {
        (b"channels" | b"shardchannels", 2 | 3) => {
            let list = bus.channels(topic, cmd.arg(2));
            ctx.array(list.len());
            for c in &list {
                ctx.bytes(c);
            }
        }
        (b"numsub" | b"shardnumsub", _) => {
            let names: Vec<&[u8]> = cmd.args().skip(2).collect();
            // A flat array in RESP3 too, as Redis answers.
            ctx.array(2 * names.len());
            for n in names {
                ctx.bytes(n);
                ctx.int(bus.numsub(topic, n) as i64);
            }
        }
        (b"numpat", 2) => ctx.int(bus.numpat() as i64),
        (b"help", 2) => ctx.help(&[
            b"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            b"CHANNELS [<pattern>]",
            b"    Return the currently active channels matching a <pattern> (default: '*').",
            b"NUMPAT",
            b"    Return number of subscriptions to patterns.",
            b"NUMSUB [<channel> ...]",
            b"    Return the number of subscribers for the specified channels, excluding",
            b"    pattern subscriptions(default: no channels).",
            b"SHARDCHANNELS [<pattern>]",
            b"    Return the currently active shard level channels matching a <pattern> (default: '*').",
            b"SHARDNUMSUB [<shardchannel> ...]",
            b"    Return the number of subscribers for the specified shard level channel(s)",
            b"HELP",
            b"    Prints this help.",
        ]),
        _ => ctx.unknown_subcommand("PUBSUB", cmd.arg(1).unwrap_or_default()),
    }
    Step::Done
}

/// Writes the messages waiting for the connection's subscriptions (called
/// before its input is read, and when a publisher wakes it) until the
/// reply queue is over its mark; `Err` once the subscriber passed its
/// output limit (the connection is closed).
pub fn deliver(conn: &super::Conn, out: &mut dyn ReplySink) -> Result<(), String> {
    let Some(sub) = conn.sub.as_ref() else {
        return Ok(());
    };
    sub.within_limit()?;
    let v = conn.version;
    while !out.full() {
        let Some(d) = sub.next() else {
            break;
        };
        let (pattern, shard, channel, payload) = match d {
            Delivery::Message {
                pattern,
                shard,
                channel,
                payload,
            } => (pattern, shard, channel, payload),
            Delivery::Monitor(line) => {
                out.copy(b"+");
                out.copy(&line);
                out.copy(b"\r\n");
                continue;
            }
            Delivery::Invalidate(keys) => {
                if v == Version::Resp3 {
                    resp::write_push_header(out, 2, v);
                    resp::write_bulk_bytes(out, b"invalidate");
                } else if sub.subscribed() {
                    // A RESP2 redirect target in subscribed mode: a
                    // message on the tracking channel, as Redis sends it.
                    resp::write_array_header(out, 3);
                    resp::write_bulk_bytes(out, b"message");
                    resp::write_bulk_bytes(out, TRACKING_CHANNEL);
                } else {
                    // RESP2 outside subscribed mode cannot carry it: dropped,
                    // as Redis drops it.
                    continue;
                }
                match keys {
                    None => resp::write_null(out, v),
                    Some(keys) => {
                        resp::write_array_header(out, keys.len());
                        for k in keys.iter() {
                            resp::write_bulk_bytes(out, k);
                        }
                    }
                }
                continue;
            }
            Delivery::RedirectBroken(id) => {
                if v == Version::Resp3 {
                    resp::write_push_header(out, 2, v);
                    resp::write_bulk_bytes(out, b"tracking-redir-broken");
                    resp::write_integer(out, id as i64);
                }
                continue;
            }
        };
        match pattern {
            None => {
                resp::write_push_header(out, 3, v);
                resp::write_bulk_bytes(out, if shard { b"smessage" } else { b"message" });
            }
            Some(p) => {
                resp::write_push_header(out, 4, v);
                resp::write_bulk_bytes(out, b"pmessage");
                resp::write_bulk_bytes(out, &p);
            }
        }
        resp::write_bulk_bytes(out, &channel);
        resp::write_bulk_bytes(out, &payload);
    }
    Ok(())
}

/// True if a RESP2 connection in subscribed mode may run `name`.
pub fn allowed_while_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "psubscribe"
            | "ssubscribe"
            | "unsubscribe"
            | "punsubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}
