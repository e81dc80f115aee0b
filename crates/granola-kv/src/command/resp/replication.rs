//! The part of Redis's replication protocol that exports a snapshot:
//! `REPLCONF rdb-only 1` then `SYNC` sends the dataset as an RDB file,
//! which is what `redis-cli --rdb <file>` asks for. The file loads into
//! Redis 7 or Valkey (a backup, or a move off granola-kv in one step).
//!
//! - The file is streamed: SYNC answers `$EOF:<40-character mark>`, then
//!   the file in pieces between back-pressure pauses (the walk's cursor
//!   and the checksum kept on the connection), then the mark, so the
//!   export holds the encodings of a few keys (16 index buckets' worth)
//!   beyond the reply queue's mark, not the file.
//! - Expired keys are left out; every database with keys gets a SELECTDB.
//! - Each key's idle time (LRU policies) or LFU counter (LFU policies)
//!   goes before it, as Redis writes them, so a Redis loading the file
//!   under the same kind of policy keeps which keys are hot.
//! - Every type goes as DUMP writes it (`protocol/rdb.rs`). The header
//!   says RDB version 9, so a file without streams loads into Redis 5 and
//!   6 too; a stream is `STREAM_LISTPACKS_2`, which Redis 7.0 and later
//!   and Valkey load from a file of any version (the loader checks each
//!   key's type, not the header's version against it).
//! - Refused mid-way, with the connection closed before the end mark
//!   (`redis-cli` then reports the transfer as failed) and a log line
//!   saying why: an index that grew during the walk (a key could then
//!   appear twice, and Redis refuses a file with a repeated key). The
//!   walk is not a snapshot: keys written meanwhile may or may not be in
//!   the file.
//! - Replicas are not served: granola-kv has no replication. `SYNC` and
//!   `PSYNC` without `rdb-only` get an error that says so.

use super::Ctx;
use crate::command::databases::split_stored;
use crate::command::Step;
use crate::protocol::rdb::RdbFile;
use crate::protocol::resp::Command;

/// An export under way.
pub struct Export {
    file: RdbFile,
    /// The walk's cursor (0 again at its end).
    cursor: u64,
    /// The database of the last key written.
    db: Option<u8>,
    /// The index's size when the walk began.
    buckets: usize,
    mark: [u8; 40],
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export")
            .field("cursor", &self.cursor)
            .field("db", &self.db)
            .finish()
    }
}

const NO_REPLICATION: &[u8] = b"ERR granola-kv has no replication: only an RDB export is served \
    (REPLCONF rdb-only 1, then SYNC, as redis-cli --rdb sends)";

/// `REPLCONF option value [option value ...]`: `rdb-only` is kept; the
/// other options a replica or `redis-cli` sends (`capa`,
/// `listening-port`, ...) are accepted and ignored.
pub fn replconf(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    if cmd.len() % 2 == 0 {
        ctx.error(b"ERR syntax error");
        return Step::Done;
    }
    for i in (1..cmd.len()).step_by(2) {
        let option = cmd.arg(i).unwrap_or_default();
        if option.eq_ignore_ascii_case(b"rdb-only") {
            match super::parse_i64(cmd.arg(i + 1).unwrap_or_default()) {
                Some(n @ (0 | 1)) => ctx.conn.rdb_only = n == 1,
                Some(_) => {
                    ctx.error(b"ERR value is out of range, value must between 0 and 1");
                    return Step::Done;
                }
                None => {
                    ctx.error(b"ERR value is not an integer or out of range");
                    return Step::Done;
                }
            }
        }
    }
    ctx.ok();
    Step::Done
}

/// `PSYNC replid offset`: refused (no replication).
pub fn psync(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    ctx.error(NO_REPLICATION);
    Step::Done
}

/// `SYNC`: the RDB export after `REPLCONF rdb-only 1`, else refused.
pub fn sync(ctx: &mut Ctx<'_>, _cmd: &Command<'_>) -> Step {
    let mut export = match ctx.conn.export.take() {
        Some(e) => e,
        None if !ctx.conn.rdb_only => {
            ctx.error(NO_REPLICATION);
            return Step::Done;
        }
        None => {
            let mut mark = [0u8; 40];
            mark.copy_from_slice(&crate::server::random_hex_id().as_bytes()[..40]);
            ctx.raw(b"$EOF:");
            ctx.raw(&mark);
            ctx.raw(b"\r\n");
            let mut out = Vec::new();
            let file = RdbFile::start(&mut out);
            ctx.raw(&out);
            Box::new(Export {
                file,
                cursor: 0,
                db: None,
                buckets: ctx.shared.store.index_buckets(),
                mark,
            })
        }
    };
    let shared = ctx.shared;
    loop {
        let mut out = Vec::new();
        let mut refused = None;
        let e = &mut *export;
        e.cursor = shared.store.scan(e.cursor, 16, |item| {
            if refused.is_some() {
                return;
            }
            let (stored, key) = split_stored(item.key());
            let number = shared.dbs.number(stored);
            // None: the key went while the walk reached it.
            let Some(payload) = super::dump::payload(item) else {
                return;
            };
            if e.db != Some(number) {
                e.file.select_db(&mut out, number);
                e.db = Some(number);
            }
            let history = shared.store.use_history(item);
            e.file
                .key(&mut out, key, item.expires_at_ms(), history, &payload);
        });
        if refused.is_none() && shared.store.index_buckets() != e.buckets {
            refused = Some("RDB export refused: the index grew during the walk".into());
        }
        if let Some(why) = refused {
            log::warn!("{}: {why}", ctx.conn.info.addr);
            return Step::Close(Box::new(why));
        }
        ctx.raw(&out);
        if e.cursor == 0 {
            let Export { file, mark, .. } = *export;
            let mut out = Vec::new();
            file.finish(&mut out);
            ctx.raw(&out);
            ctx.raw(&mark);
            return Step::Done;
        }
        if ctx.full() {
            ctx.conn.export = Some(export);
            return Step::Pause(1);
        }
    }
}
