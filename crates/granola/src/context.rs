//! [`Context`]: the per-message (or per-request) arena, pool and policy.

use crate::wire::DecodeOptions;
use crate::Pool;
use bumpalo::Bump;

/// The default copy threshold in bytes: fields at least this large are sent
/// by reference when their memory is in the pool; smaller ones are copied.
///
/// Cornflakes measured 512 B on ConnectX-5 NICs. On ordinary Linux the
/// "NIC" is the kernel's gather in `sendmsg`, where every extra iovec of cold
/// data costs a serialized DRAM miss (300–550 ns measured on our dev box);
/// with the datapath's prefetch the gather-vs-copy crossover sits at
/// 0.5–1 KiB pieces, so we pick the upper end. A datapath can calibrate and
/// override it per machine (`Context::with_copy_threshold`).
pub const DEFAULT_COPY_THRESHOLD: usize = 1024;

/// Arena + pool + policy for building and decoding messages.
///
/// Generated message types borrow a `Context` (`Msg<'a>` holds `&'a
/// Context`): copied field bytes and list storage live in its bump arena and
/// are freed all at once by [`reset`](Self::reset) (which the borrow checker
/// only allows when no message is alive). Referenced fields hold [`Buf`]s,
/// which keep their pool memory alive independently of the arena.
///
/// [`Buf`]: crate::Buf
pub struct Context {
    arena: Bump,
    pool: Pool,
    copy_threshold: usize,
    decode_options: DecodeOptions,
}

impl Context {
    /// A context over `pool` with the default threshold and decode limits.
    pub fn new(pool: &Pool) -> Context {
        Context {
            arena: Bump::new(),
            pool: pool.clone(),
            copy_threshold: DEFAULT_COPY_THRESHOLD,
            decode_options: DecodeOptions::default(),
        }
    }

    /// Sets the copy threshold: `0` references every field it can,
    /// `usize::MAX` copies every field.
    pub fn with_copy_threshold(mut self, bytes: usize) -> Context {
        self.copy_threshold = bytes;
        self
    }

    /// Sets the limits applied when decoding untrusted input.
    pub fn with_decode_options(mut self, options: DecodeOptions) -> Context {
        self.decode_options = options;
        self
    }

    /// The copy threshold in bytes.
    #[inline]
    pub fn copy_threshold(&self) -> usize {
        self.copy_threshold
    }

    /// The pool used to recover references.
    #[inline]
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The decode limits.
    #[inline]
    pub fn decode_options(&self) -> &DecodeOptions {
        &self.decode_options
    }

    /// The bump arena (for generated code and advanced users).
    #[inline]
    pub fn arena(&self) -> &Bump {
        &self.arena
    }

    /// Frees everything allocated in the arena, keeping its largest chunk for
    /// reuse. Call between requests.
    pub fn reset(&mut self) {
        self.arena.reset();
    }

    /// Bytes currently allocated from the arena's chunks.
    pub fn arena_bytes(&self) -> usize {
        self.arena.allocated_bytes()
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("copy_threshold", &self.copy_threshold)
            .field("arena_bytes", &self.arena.allocated_bytes())
            .finish()
    }
}
