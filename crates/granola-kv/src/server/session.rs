//! The one session driver every TCP protocol runs on.
//!
//! A protocol supplies a resumable parser and an `execute`
//! ([`Protocol`]); the driver owns everything else a connection needs:
//!
//! ```text
//!   on_input:  loop
//!     swallowing?          drop input bytes an error said to skip
//!     need > received?     wait: the parser said how much must arrive first
//!     parse (resumes)      Done -> execute (may pause) -> consume
//!                          Incomplete -> remember `need`, wait
//!                          Invalid -> error reply, skip or close
//! ```
//!
//! - **Back-pressure, also inside a command.** Replies go to an [`Out`],
//!   whose [`ReplySink::full`] turns true once the connection's queued reply
//!   bytes pass the back-pressure mark. A command producing many replies
//!   (multi-key get, MGET, LRANGE...) checks it between elements and
//!   returns [`Step::Pause`] with how far it got; the driver leaves the
//!   request unconsumed and calls it again with that position once the
//!   queue has drained. Queued reply bytes per connection are therefore
//!   bounded by the mark plus one element, whatever the request.
//! - **Pipelining.** Every complete request in the input is answered before
//!   the server flushes, so a pipelined batch leaves in one gathering send.
//! - **Bounded work per received byte.** Parsers keep their progress
//!   between calls, and a parse is not even attempted before the input
//!   reaches the length the last one said it needs.

use crate::protocol::{Parsed, ProtocolError, Recovery, ReplySink};
use granola::Buf;
use granola_net::park::{ConnWaker, Park};
use granola_net::server::{Close, ConnIo, Session};
use granola_net::TxQueue;

pub use crate::command::Step;

/// A TCP protocol: its parser state, its connection state and its commands.
pub trait Protocol: Send + 'static {
    /// A parsed request, borrowing the input.
    type Cmd<'a>;

    /// Name for log lines.
    const NAME: &'static str;

    /// Parses one request from the start of `input` (resuming the last
    /// incomplete parse of the same input).
    fn parse<'a>(&mut self, input: &'a [u8]) -> Parsed<Self::Cmd<'a>>;

    /// Runs a request, from `resume` (0 the first time; else what the last
    /// [`Step::Pause`] returned for this same request).
    /// `cmd` is lent, not moved: a parsed request can be large (a RESP
    /// one carries its first arguments), and a move is a copy.
    fn execute(&mut self, cmd: &Self::Cmd<'_>, resume: usize, out: &mut Out<'_>) -> Step;

    /// The reply to a request that can never fit the receive buffer
    /// (before the connection is closed).
    fn write_too_large(&self, out: &mut Out<'_>);

    /// What a request that returned [`Step::Block`] waits for (see
    /// [`granola_net::park`]); `None` when none is waiting.
    fn park(&self) -> Option<Park> {
        None
    }

    /// Writes what arrived for the connection from other clients (Pub/Sub
    /// messages) before its input is read, while the reply queue is under
    /// its mark; `Err` closes the connection with that reason.
    fn deliver(&mut self, _out: &mut Out<'_>) -> Result<(), String> {
        Ok(())
    }

    /// True while [`deliver`](Self::deliver) left something undelivered.
    fn has_output(&self) -> bool {
        false
    }

    /// Called when the driver has read all it will of the input for now
    /// (before the replies are flushed, and before a close).
    fn input_done(&mut self) {}

    /// True once another connection closed this one (`CLIENT KILL`): the
    /// driver stops before the next request and closes it, after the
    /// replies already queued.
    fn killed(&self) -> bool {
        false
    }
}

/// Where replies go: the connection's TX queue, with its back-pressure
/// mark. Framing is copied into the TX chunk; stored values at or above the
/// copy threshold are queued by reference. An allocation failure (pool
/// exhausted) is remembered by the queue, whose next flush fails and closes
/// the connection with a log line.
pub struct Out<'a> {
    /// The TX queue (native replies are serialized straight into it).
    pub tx: &'a mut TxQueue,
    /// Queued reply bytes above which [`ReplySink::full`] is true.
    pub mark: usize,
    /// Runs the connection's session again while it waits (see
    /// [`granola_net::park`]).
    pub waker: &'a ConnWaker,
}

impl ReplySink for Out<'_> {
    fn copy(&mut self, bytes: &[u8]) {
        let _ = self.tx.copy(bytes);
    }

    fn value(&mut self, value: &Buf) {
        let _ = self.tx.value(value);
    }

    fn full(&self) -> bool {
        self.tx.queued_bytes() > self.mark
    }

    fn copies(&self, len: usize) -> bool {
        len < self.tx.config().copy_threshold
    }

    fn region(&mut self, n: usize, _first: u8) -> Option<&mut [u8]> {
        // On failure the queue remembers it, as for `copy`.
        self.tx.reserve(n).ok()
    }
}

/// A connection running protocol `P`.
pub struct Driver<P> {
    proto: P,
    /// Input bytes still to discard after an error (memcached's swallow).
    swallow: usize,
    /// Do not parse before this many input bytes are there.
    need: usize,
    /// The paused request's resume position.
    resume: usize,
}

impl<P: Protocol> Driver<P> {
    /// A connection over `proto`.
    pub fn new(proto: P) -> Driver<P> {
        Driver {
            proto,
            swallow: 0,
            need: 0,
            resume: 0,
        }
    }
}

/// The driver's decision about the input after one parse.
enum Next {
    /// Consume this many bytes (then close, with this reason, if given).
    Consume(usize, Option<String>),
    /// The command paused at this position.
    Pause(usize),
    /// The command waits for another client; the request stays.
    Block,
    /// Wait for this many input bytes.
    Wait(usize),
    /// Skip this many bytes (possibly more than received).
    Skip(usize),
    /// Close now.
    Close(Close),
}

fn protocol_close(name: &str, e: &ProtocolError) -> Close {
    Close::new(format!("{name}: protocol error: {e}"))
}

impl<P: Protocol> Session for Driver<P> {
    fn park(&self) -> Option<Park> {
        self.proto.park()
    }

    fn has_output(&self) -> bool {
        self.proto.has_output()
    }

    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        let r = self.read_input(io);
        self.proto.input_done();
        r
    }
}

impl<P: Protocol> Driver<P> {
    fn read_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        let mut out = Out {
            tx: &mut *io.tx,
            mark: io.backpressure,
            waker: io.waker,
        };
        if self.proto.killed() {
            return Err(Close::new(String::new()));
        }
        self.proto.deliver(&mut out).map_err(Close::new)?;
        loop {
            if self.swallow > 0 {
                let n = self.swallow.min(io.rx.data().len());
                io.rx.consume(n);
                self.swallow -= n;
                if self.swallow > 0 {
                    return Ok(());
                }
            }
            if out.full() {
                // The rest of the input waits until the replies queued so
                // far have drained (the server calls again then).
                return Ok(());
            }
            let data = io.rx.data();
            if data.is_empty() || data.len() < self.need {
                return Ok(());
            }
            let data_len = data.len();
            // What to do with the input, decided while the parse borrows it.
            let next = match self.proto.parse(data) {
                Parsed::Done { ref cmd, consumed } => {
                    self.need = 0;
                    match self.proto.execute(cmd, self.resume, &mut out) {
                        Step::Done => Next::Consume(consumed, None),
                        Step::Pause(at) => Next::Pause(at),
                        Step::Block => Next::Block,
                        Step::Close(reason) => Next::Consume(consumed, Some(*reason)),
                    }
                }
                Parsed::Incomplete { need } => Next::Wait(need.unwrap_or(0)),
                Parsed::Invalid(e) => {
                    self.need = 0;
                    self.resume = 0;
                    e.write_reply(&mut out);
                    match e.recovery() {
                        Recovery::Skip(n) => Next::Skip(n),
                        Recovery::Close => Next::Close(protocol_close(P::NAME, &e)),
                    }
                }
            };
            match next {
                Next::Consume(n, close) => {
                    self.resume = 0;
                    io.rx.consume(n);
                    if let Some(reason) = close {
                        return Err(Close::new(reason));
                    }
                    if self.proto.killed() {
                        return Err(Close::new(String::new()));
                    }
                    // What the command made for this very connection (its
                    // own invalidations, say) follows its reply, before the
                    // next command's, as from Redis.
                    if self.proto.has_output() {
                        self.proto.deliver(&mut out).map_err(Close::new)?;
                    }
                }
                Next::Pause(at) => {
                    self.resume = at;
                    return Ok(());
                }
                Next::Block => return Ok(()),
                Next::Wait(need) => {
                    if need > io.rx.max() {
                        self.proto.write_too_large(&mut out);
                        return Err(Close::new(format!(
                            "{}: request larger than the receive buffer",
                            P::NAME
                        )));
                    }
                    self.need = need;
                    return Ok(());
                }
                Next::Skip(n) => {
                    let k = n.min(data_len);
                    io.rx.consume(k);
                    self.swallow = n - k;
                }
                Next::Close(c) => return Err(c),
            }
        }
    }
}
