//! Replies of the text protocols go into granola-net's TX queue: protocol
//! framing is copied into the TX chunk, stored values at or above the copy
//! threshold become their own iovec referencing the store's slot.

use crate::protocol::ReplySink;
use granola_net::TxQueue;

/// A [`ReplySink`] over a connection's TX queue. An allocation failure
/// (pool exhausted) is remembered by the queue, whose next flush fails and
/// closes the connection with a log line.
pub struct TxSink<'a>(pub &'a mut TxQueue);

impl ReplySink for TxSink<'_> {
    fn copy(&mut self, bytes: &[u8]) {
        let _ = self.0.copy(bytes);
    }

    fn value(&mut self, value: &granola::Buf) {
        let _ = self.0.value(value);
    }
}
