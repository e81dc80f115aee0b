//! What a standalone, memory-only server answers to the cluster,
//! replication and persistence commands: Redis's own replies where a
//! standalone Redis without replicas gives them (`CLUSTER ...`,
//! `READONLY`, `FAILOVER`, `REPLICAOF NO ONE`, `SHUTDOWN ABORT`,
//! `WAITAOF` without appendonly), and a refusal saying why where Redis
//! would act (saving to disk, replicating, stopping on a client's word).

use super::Ctx;
use crate::command::Step;
use crate::protocol::resp::Command;

const NO_CLUSTER: &[u8] = b"ERR This instance has cluster support disabled";

/// `CLUSTER subcommand ...`, and the cluster connection modes `READONLY`,
/// `READWRITE`, `ASKING`.
pub fn cluster(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.error(NO_CLUSTER);
    Step::Done
}

/// `REPLICAOF` / `SLAVEOF host port`: `NO ONE` is already so.
pub fn replicaof(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let no_one = cmd.arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"NO"))
        && cmd.arg(2).is_some_and(|a| a.eq_ignore_ascii_case(b"ONE"));
    if no_one {
        ctx.ok();
    } else {
        ctx.error(b"ERR granola-kv does not replicate: it runs as a master only");
    }
    Step::Done
}

/// `FAILOVER [...]`: there are no replicas to fail over to.
pub fn failover(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.error(b"ERR FAILOVER requires connected replicas.");
    Step::Done
}

/// `SAVE`, `BGSAVE`, `BGREWRITEAOF`.
pub fn save(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.error(b"ERR granola-kv keeps no data on disk (no RDB, no AOF): it is a cache");
    Step::Done
}

/// `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]`: refused, as the
/// memcached port refuses `shutdown`; `ABORT` has nothing to abort.
pub fn shutdown(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() == 2 && cmd.arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"ABORT")) {
        ctx.error(b"ERR No shutdown in progress.");
    } else {
        ctx.error(
            b"ERR granola-kv does not stop on a client's command: send the process SIGTERM or SIGINT",
        );
    }
    Step::Done
}

/// `WAITAOF numlocal numreplicas timeout`: no AOF and no replicas, so
/// `[0, 0]` at once, or Redis's error when local fsyncs are asked for.
pub fn waitaof(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let num = |i| super::parse_i64(cmd.arg(i).unwrap_or_default());
    match (num(1), num(2), num(3)) {
        (Some(local), Some(replicas), Some(timeout)) if local >= 0 && replicas >= 0 => {
            if timeout < 0 {
                ctx.error(b"ERR timeout is negative");
            } else if local > 0 {
                ctx.error(
                    b"ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
                );
            } else {
                ctx.array(2);
                ctx.int(0);
                ctx.int(0);
            }
        }
        _ => ctx.error(b"ERR value is out of range, must be positive"),
    }
    Step::Done
}
