//! `get`, `gets`, `gat`, `gats`.

use super::{string_item, Ctx};
use crate::command::Step;
use crate::protocol::memcache::{self as mc, Get, GetKind};
use std::sync::atomic::Ordering;

/// One `VALUE` block per key found, then `END`. Pauses between keys when
/// the reply queue fills (a 1 MB line of keys queues at most about the
/// back-pressure mark).
pub fn execute(ctx: &mut Ctx<'_>, g: Get<'_>) -> Step {
    let counters = &ctx.shared.memcache;
    let cas = g.with_cas();
    let touch = g.exptime.map(|e| ctx.expires_ms(i64::from(e)));
    let from = ctx.resume;
    if from == 0 && (g.kind == GetKind::Gat || g.kind == GetKind::Gats) {
        counters.cmd_touch.fetch_add(1, Ordering::Relaxed);
    }
    for (n, key) in g.keys.enumerate().skip(from) {
        if n > from && ctx.out.full() {
            return Step::Pause(n);
        }
        counters.cmd_get.fetch_add(1, Ordering::Relaxed);
        let item = match touch {
            Some(at) => ctx.db.touch(key, at),
            None => ctx.db.get(key),
        };
        if let Some(item) = string_item(item) {
            mc::write_value(
                ctx.out,
                key,
                item.flags(),
                &item.value(),
                cas.then(|| item.cas()),
            );
        }
    }
    ctx.out.copy(mc::END);
    Step::Done
}
