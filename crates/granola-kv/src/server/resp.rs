//! RESP (the Redis protocol) on the session driver: the resumable parser
//! from [`crate::protocol::resp`], the commands from
//! [`crate::command::resp`].
//!
//! A bulk string's `$<len>\r\n` is copied into the TX chunk; the value is
//! handed to [`ReplySink::value`], so a stored value at or above the copy
//! threshold leaves by reference
//! (Cornflakes' Redis integration, seed 000 §6.2). Pipelined commands are
//! all answered before the flush.
//!
//! Differences from Redis, by design: `MSET` is not atomic across keys
//! (but a MULTI/EXEC is); lists are copy-on-write (see
//! [`crate::store`]), so `RPUSH` on a long list costs O(length).

use crate::command::resp::{dispatch, pubsub, touches, Conn, Ctx, Replies, Silenced};
use crate::command::Step;
use crate::protocol::resp::{self, Command, Parser};
use crate::protocol::{Limits, Parsed, ReplySink};
use crate::server::session::{Out, Protocol};
use crate::server::Shared;
use granola_net::park::Park;
use granola_net::server::Accepted;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Client ids (`CLIENT ID`), unique per process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A RESP connection's protocol state.
pub struct Resp {
    shared: Arc<Shared>,
    limits: Limits,
    parser: Parser,
    conn: Conn,
}

impl Resp {
    /// A new connection over the shared state.
    pub fn new(shared: Arc<Shared>, accepted: &Accepted) -> Resp {
        let limits = Limits {
            max_bulk: shared.config.max_bulk(),
            max_value_len: shared.config.max_bulk(),
            ..Limits::default()
        };
        let conn = Conn::new(
            NEXT_ID.fetch_add(1, Ordering::Relaxed),
            accepted,
            shared.config.requirepass.is_none(),
            shared.clients.clone(),
            shared.watch_book.clone(),
        );
        Resp {
            shared,
            limits,
            parser: Parser::default(),
            conn,
        }
    }

    /// Runs an inline request with quotes or escapes: split as Redis
    /// splits it (see [`resp::inline`]), as a multibulk of the words.
    #[inline(never)]
    fn run_split(&mut self, line: &[u8], resume: usize, out: &mut Out<'_>) -> Step {
        let Some(words) = resp::inline::split(line) else {
            resp::write_error(out, b"ERR Protocol error: unbalanced quotes in request");
            return Step::Close(Box::new(
                "resp: protocol error: unbalanced quotes in request".into(),
            ));
        };
        let mut encoded = Vec::with_capacity(line.len() + 16 * words.len());
        resp::encode_command(&words, &mut encoded);
        // Redis limits what an unauthenticated client sends as a multibulk
        // only; these words came inline.
        let limits = Limits {
            auth_required: false,
            ..self.limits
        };
        match resp::parse(&encoded, &limits) {
            Parsed::Done { cmd, .. } => self.run(&cmd, resume, out),
            // Words of a line within the inline limit are within every
            // other limit too.
            _ => {
                resp::write_error(out, b"ERR Protocol error: invalid inline request");
                Step::Done
            }
        }
    }

    /// Runs one request.
    fn run(&mut self, cmd: &Command<'_>, resume: usize, out: &mut Out<'_>) -> Step {
        if cmd.is_empty() {
            return Step::Done;
        }
        let db = self
            .shared
            .dbs
            .db(&self.shared.store, self.conn.info.db)
            .touching(touches(&self.conn, cmd));
        // `CLIENT REPLY OFF` or `SKIP`: answered into nothing, but for
        // `CLIENT REPLY ON`, which answers.
        let replies = self.conn.replies;
        let mut silenced = Silenced;
        let out: &mut dyn ReplySink = if replies.silent() && !is_reply_on(cmd) {
            &mut silenced
        } else {
            out
        };
        let mut ctx = Ctx {
            shared: &self.shared,
            db: &db,
            conn: &mut self.conn,
            out,
            resume,
        };
        let step = dispatch(&mut ctx, cmd);
        if self.conn.replies != Replies::On && matches!(step, Step::Done | Step::Close(_)) {
            self.conn.replies = self.conn.replies.after_command();
        }
        step
    }
}

impl Protocol for Resp {
    type Cmd<'a> = Command<'a>;
    const NAME: &'static str = "resp";

    fn parse<'a>(&mut self, input: &'a [u8]) -> Parsed<Command<'a>> {
        self.limits.auth_required = !self.conn.authed;
        self.parser.parse(input, &self.limits)
    }

    fn execute(&mut self, cmd: &Command<'_>, resume: usize, out: &mut Out<'_>) -> Step {
        if cmd.is_inline() && resp::inline::needs_split(cmd.inline_line()) {
            return self.run_split(cmd.inline_line(), resume, out);
        }
        self.run(cmd, resume, out)
    }

    fn write_too_large(&self, out: &mut Out<'_>) {
        resp::write_error(out, b"ERR Protocol error: request too large");
    }

    fn park(&self) -> Option<Park> {
        if self.conn.handle.killed() {
            // Run once more, to close (see `killed`).
            return Some(Park { deadline: None });
        }
        if let Some(until) = self.conn.paused_until {
            // Held back by `CLIENT PAUSE`: runs again when it ends, or
            // when `CLIENT UNPAUSE` wakes it.
            return Some(Park {
                deadline: Some(until),
            });
        }
        match (&self.conn.blocked, &self.conn.sub) {
            (Some(b), _) => Some(b.park()),
            // Subscribed: runs whenever a publisher wakes it.
            (None, Some(_)) => Some(Park { deadline: None }),
            (None, None) => None,
        }
    }

    fn deliver(&mut self, out: &mut Out<'_>) -> Result<(), String> {
        pubsub::deliver(&self.conn, out)
    }

    fn has_output(&self) -> bool {
        self.conn.sub.as_ref().is_some_and(|s| s.has_mail())
    }

    fn killed(&self) -> bool {
        self.conn.handle.killed()
    }

    fn input_done(&mut self) {
        // Out of the gate once a batch is answered (see `gate`).
        self.shared.resp_gate.leave(&mut self.conn.gate);
    }
}

impl Drop for Resp {
    fn drop(&mut self) {
        // Also when a command panicked while the connection was entered.
        self.shared.resp_gate.leave(&mut self.conn.gate);
    }
}

/// True for `CLIENT REPLY ON`.
fn is_reply_on(cmd: &Command<'_>) -> bool {
    cmd.len() == 3
        && cmd.name().eq_ignore_ascii_case(b"CLIENT")
        && cmd.arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"REPLY"))
        && cmd.arg(2).is_some_and(|a| a.eq_ignore_ascii_case(b"ON"))
}
