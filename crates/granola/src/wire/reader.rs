//! Decoding: checked views over untrusted bytes.
//!
//! [`HeaderReader::new_checked`] validates a header's bitmap and slot area
//! once; after that, its accessors only do checked arithmetic against the
//! input length, so none can panic or read out of bounds whatever the bytes
//! say. Every list element and nested header is charged against the
//! [`DecodeCx`] budget before anything is allocated for it.

use super::{
    header_len, DecodeError, DecodeErrorKind as K, DecodeOptions, WireScalar, ENTRY_LEN, FIELD_LEN,
    SLOT_LEN,
};

/// Decoding state shared by all headers of one message: the input, the
/// limits, and the remaining item budget.
pub struct DecodeCx<'a> {
    obj: &'a [u8],
    /// The pool buffer `obj` is, and the size from which bytes fields
    /// reference it instead of borrowing it.
    packet: Option<(&'a crate::Buf, usize)>,
    opts: DecodeOptions,
    budget: usize,
    /// Bytes of decoded structs and list storage still allowed.
    bytes_budget: usize,
}

impl<'a> DecodeCx<'a> {
    /// Starts decoding `obj` under `opts`.
    #[inline]
    pub fn new(obj: &'a [u8], opts: &DecodeOptions) -> Result<Self, DecodeError> {
        if obj.len() > opts.max_message_len {
            return Err(DecodeError::new(K::MessageTooLarge, 0));
        }
        Ok(DecodeCx {
            obj,
            packet: None,
            opts: *opts,
            // One item per input byte at most: no aliasing trick can make
            // the decoder do more work than the input is long.
            budget: opts.max_items.min(obj.len()),
            bytes_budget: opts.decoded_bytes_limit(obj.len()),
        })
    }

    /// Starts decoding the pool buffer `packet`: bytes fields of at least
    /// `threshold` bytes become references into it.
    #[inline]
    pub fn with_packet(
        packet: &'a crate::Buf,
        opts: &DecodeOptions,
        threshold: usize,
    ) -> Result<Self, DecodeError> {
        let mut cx = DecodeCx::new(packet, opts)?;
        cx.packet = Some((packet, threshold));
        Ok(cx)
    }

    /// A decoded bytes field's value: a reference into the packet if it is
    /// large enough (see [`with_packet`](Self::with_packet)), else borrowed.
    #[inline]
    pub fn hybrid(&self, b: &'a [u8]) -> crate::HybridBytes<'a> {
        if let Some((packet, threshold)) = self.packet {
            if b.len() >= threshold {
                // `b` was sliced from `obj`, which is `packet`'s bytes.
                let start = b.as_ptr().addr() - self.obj.as_ptr().addr();
                if let Some(buf) = packet.try_slice(start..start + b.len()) {
                    return crate::HybridBytes::Shared(buf);
                }
            }
        }
        crate::HybridBytes::Borrowed(b)
    }

    /// Charges `n` bytes of decoded memory (structs, list storage) before
    /// they are allocated.
    #[inline]
    pub fn charge_bytes(&mut self, n: usize, field: u32) -> Result<(), DecodeError> {
        match self.bytes_budget.checked_sub(n) {
            Some(b) => {
                self.bytes_budget = b;
                Ok(())
            }
            None => Err(DecodeError::new(K::DecodedTooLarge, field)),
        }
    }

    /// Checks the root header (at offset 0).
    #[inline]
    pub fn root(&mut self) -> Result<HeaderReader<'a>, DecodeError> {
        HeaderReader::new_checked(self, 0, 0, 0)
    }

    #[inline]
    fn charge(&mut self, n: usize, field: u32) -> Result<(), DecodeError> {
        match self.budget.checked_sub(n) {
            Some(b) => {
                self.budget = b;
                Ok(())
            }
            None => Err(DecodeError::new(K::TooManyItems, field)),
        }
    }

    /// The nested header at `off` (`len` bytes by its parent's word),
    /// charged to the budget; errors name `field` unless they name one of
    /// their own.
    #[inline]
    fn nested_at(
        &mut self,
        off: usize,
        len: usize,
        depth: u32,
        field: u32,
    ) -> Result<HeaderReader<'a>, DecodeError> {
        nested_at(
            self.obj,
            &self.opts,
            Some(&mut self.budget),
            off,
            len,
            depth,
            field,
        )
    }

    /// The decode limits in force.
    pub fn options(&self) -> &DecodeOptions {
        &self.opts
    }
}

#[inline]
fn read_u32(obj: &[u8], at: usize) -> Option<u32> {
    let b = obj.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[inline]
fn read_u64(obj: &[u8], at: usize) -> Option<u64> {
    let b = obj.get(at..at.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// Present fields in bitmap words 1.. of the bitmap at `bitmap_at` (which
/// the caller has checked lies in `obj`). Inlined: a call here would make
/// every header check save and restore registers around it.
#[inline(always)]
fn count_rest(obj: &[u8], bitmap_at: usize, words: usize) -> usize {
    (1..words)
        .map(|w| read_u32(obj, bitmap_at + 4 * w).map_or(0, |v| v.count_ones() as usize))
        .sum()
}

/// A validated view of one message header.
#[derive(Clone, Copy)]
pub struct HeaderReader<'a> {
    obj: &'a [u8],
    /// Bitmap word 0 (fields 1..=32, where most messages live), read once.
    word0: u32,
    bitmap_at: usize,
    words: usize,
    /// The slots, one per present field, then the kind bytes (the rest of
    /// the header): a slice, so that reading slot `i` is one bounds check,
    /// and the one the header's length check already gives.
    slots: &'a [u8],
    len: usize,
    depth: u32,
}

impl<'a> HeaderReader<'a> {
    /// Validates the header at `at` (its bitmap and slots must lie in the
    /// input). `stated_len` is the length recorded by the parent (0 for the
    /// root, which has none).
    #[inline]
    pub fn new_checked(
        cx: &mut DecodeCx<'a>,
        at: usize,
        depth: u32,
        stated_len: usize,
    ) -> Result<HeaderReader<'a>, DecodeError> {
        HeaderReader::check(
            cx.obj,
            &cx.opts,
            at,
            depth,
            stated_len,
            Some(&mut cx.budget),
        )
    }

    /// The checks of [`new_checked`](Self::new_checked) without a budget
    /// (read-only views allocate nothing, so there is nothing to charge).
    /// A one-word bitmap, where nearly every message lives, takes a path
    /// with no loop: on a cold message the fewer instructions stand between
    /// this header's load and the next message's, the more of their cache
    /// misses the CPU overlaps.
    #[inline(always)]
    fn check(
        obj: &'a [u8],
        opts: &DecodeOptions,
        at: usize,
        depth: u32,
        stated_len: usize,
        budget: Option<&mut usize>,
    ) -> Result<HeaderReader<'a>, DecodeError> {
        if depth > opts.max_depth {
            return Err(DecodeError::new(K::TooDeep, 0));
        }
        let words = read_u32(obj, at).ok_or(DecodeError::new(K::Truncated, 0))?;
        if let Some(budget) = budget {
            *budget = budget
                .checked_sub(1)
                .ok_or(DecodeError::new(K::TooManyItems, 0))?;
        }
        if words > opts.max_bitmap_words.max(1) {
            return Err(DecodeError::new(K::BitmapTooLarge, 0));
        }
        let words = words as usize;
        let bitmap_at = at + 4;
        let slots_at = bitmap_at + 4 * words;
        if slots_at > obj.len() {
            return Err(DecodeError::new(K::Truncated, 0));
        }
        // In bounds: slots_at <= obj.len() was checked above.
        let word0 = if words > 0 {
            read_u32(obj, bitmap_at).unwrap_or(0)
        } else {
            0
        };
        let mut present = word0.count_ones() as usize;
        if words > 1 {
            present += count_rest(obj, bitmap_at, words);
        }
        let len = header_len(words, present);
        if at + len > obj.len() {
            return Err(DecodeError::new(K::Truncated, 0));
        }
        if stated_len != 0 && stated_len != len {
            return Err(DecodeError::new(K::BadHeaderLen, 0));
        }
        // In bounds: the header was checked just above.
        let slots = obj
            .get(slots_at..at + len)
            .ok_or(DecodeError::new(K::Truncated, 0))?;
        Ok(HeaderReader {
            obj,
            word0,
            bitmap_at,
            words,
            slots,
            len,
            depth,
        })
    }

    /// This header's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a header with no fields present.
    pub fn is_empty(&self) -> bool {
        self.len == header_len(self.words, 0)
    }

    /// Bitmap words.
    #[inline]
    pub fn words(&self) -> usize {
        self.words
    }

    /// Bitmap word 0 (0 if there is none).
    #[inline(always)]
    pub fn first_word(&self) -> u32 {
        self.word0
    }

    /// Bitmap word `w` (0 beyond the bitmap).
    #[inline]
    pub fn word(&self, w: usize) -> u32 {
        if w >= self.words {
            return 0;
        }
        if w == 0 {
            return self.word0;
        }
        // In bounds: new_checked validated the whole bitmap.
        read_u32(self.obj, self.bitmap_at + 4 * w).unwrap_or(0)
    }

    /// True if field `number` (1-based) is present.
    #[inline]
    pub fn has(&self, number: u32) -> bool {
        let bit = (number as usize).wrapping_sub(1);
        if bit < 32 {
            // `word0` is 0 when there is no bitmap word, so fields 1..=32
            // (nearly all) need no look at the word count.
            return self.word0 & (1 << bit) != 0;
        }
        let w = bit / 32;
        w < self.words && self.word(w) & (1 << (bit % 32)) != 0
    }

    /// The slot index (0-based, among present fields) of field `number`,
    /// which must be present.
    #[inline]
    fn index_of(&self, number: u32) -> usize {
        let bit = (number - 1) as usize;
        if bit < 32 {
            return (self.word0 & ((1u32 << bit) - 1)).count_ones() as usize;
        }
        let (w, b) = (bit / 32, bit % 32);
        let mut index = (self.word(w) & ((1u32 << b) - 1)).count_ones() as usize;
        for i in 0..w {
            index += self.word(i).count_ones() as usize;
        }
        index
    }

    /// The raw 8-byte slot of field `number`, if present.
    #[inline]
    pub fn slot(&self, number: u32) -> Option<u64> {
        if !self.has(number) {
            return None;
        }
        let at = self.index_of(number) * SLOT_LEN;
        read_u64(self.slots, at)
    }

    /// The kind byte (see [`kind`](super::kind)) of field `number`, if
    /// present.
    #[inline]
    pub fn kind(&self, number: u32) -> Option<u8> {
        if !self.has(number) {
            return None;
        }
        // The kinds follow the slots, one byte per present field, in slot
        // order.
        let present = self.slots.len() / FIELD_LEN;
        self.slots
            .get(present * SLOT_LEN + self.index_of(number))
            .copied()
    }

    /// A scalar field's value, if present.
    #[inline]
    pub fn scalar<T: WireScalar>(&self, number: u32) -> Option<T> {
        self.slot(number).map(T::from_slot)
    }

    #[inline]
    fn pair(&self, number: u32) -> Option<(usize, usize)> {
        self.slot(number).map(split_pair)
    }

    /// A bytes/string field's data, if present.
    #[inline]
    pub fn bytes(&self, number: u32) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.pair(number) {
            None => Ok(None),
            Some((len, off)) => range(self.obj, off, len, number).map(Some),
        }
    }

    /// A repeated field's entry array (`width` bytes per entry), if
    /// present. The list's decoded storage (`count` elements of `T`) is
    /// charged to the budget here, before the caller allocates it.
    #[inline]
    pub fn list<T>(
        &self,
        cx: &mut DecodeCx<'a>,
        number: u32,
        width: usize,
    ) -> Result<Option<ListReader<'a>>, DecodeError> {
        let Some((count, _)) = self.pair(number) else {
            return Ok(None);
        };
        if count > cx.opts.max_list_len as usize {
            return Err(DecodeError::new(K::ListTooLong, number));
        }
        cx.charge(count, number)?;
        cx.charge_bytes(count.saturating_mul(std::mem::size_of::<T>()), number)?;
        self.list_at(&cx.opts, number, width)
    }

    /// A repeated field's entry array, bounds and `max_list_len` checked.
    #[inline]
    fn list_at(
        &self,
        opts: &DecodeOptions,
        number: u32,
        width: usize,
    ) -> Result<Option<ListReader<'a>>, DecodeError> {
        let Some((count, off)) = self.pair(number) else {
            return Ok(None);
        };
        if count > opts.max_list_len as usize {
            return Err(DecodeError::new(K::ListTooLong, number));
        }
        let bytes = count
            .checked_mul(width)
            .ok_or(DecodeError::new(K::OutOfBounds, number))?;
        let entries = range(self.obj, off, bytes, number)?;
        Ok(Some(ListReader {
            obj: self.obj,
            entries,
            count,
            width,
            depth: self.depth,
            field: number,
        }))
    }

    /// A nested message's header, validated, if present; the decoded `T`
    /// is charged to the budget.
    #[inline]
    pub fn nested<T>(
        &self,
        cx: &mut DecodeCx<'a>,
        number: u32,
    ) -> Result<Option<HeaderReader<'a>>, DecodeError> {
        match self.pair(number) {
            None => Ok(None),
            Some((len, off)) => {
                cx.charge_bytes(std::mem::size_of::<T>(), number)?;
                cx.nested_at(off, len, self.depth + 1, number).map(Some)
            }
        }
    }
}

impl<'a> HeaderReader<'a> {
    /// For read-only views: checks the root header of `obj` under `opts`.
    #[inline(always)]
    pub fn view_root(
        obj: &'a [u8],
        opts: &'a DecodeOptions,
    ) -> Result<HeaderReader<'a>, DecodeError> {
        if obj.len() > opts.max_message_len {
            return Err(DecodeError::new(K::MessageTooLarge, 0));
        }
        // One bitmap word, where nearly every message lives: the checks of
        // `check` in the fewest instructions. On a cold message the header
        // load misses, and the fewer instructions stand between one
        // message's load and the next one's, the more of those misses the
        // CPU runs at once.
        if let Some(&[w0, w1, w2, w3, b0, b1, b2, b3]) = obj.first_chunk::<8>() {
            let word0 = u32::from_le_bytes([b0, b1, b2, b3]);
            let present = word0.count_ones() as usize;
            let len = header_len(1, present);
            if u32::from_le_bytes([w0, w1, w2, w3]) == 1 {
                if let Some(slots) = obj.get(8..len) {
                    return Ok(HeaderReader {
                        obj,
                        word0,
                        bitmap_at: 4,
                        words: 1,
                        slots,
                        len,
                        depth: 0,
                    });
                }
            }
        }
        let mut error = DecodeError::new(K::Truncated, 0);
        match HeaderReader::view_root_general(obj, opts, &mut error) {
            Some(h) => Ok(h),
            None => Err(error),
        }
    }

    /// [`view_root`](Self::view_root) for any bitmap, out of line so that
    /// the one-word path inlined into each view stays short. The error
    /// comes back apart from the header: in a `Result` it would share the
    /// header's bytes, and the compiler then carries the input's length in
    /// two halves through every view (5 instructions per message).
    #[inline(never)]
    fn view_root_general(
        obj: &'a [u8],
        opts: &'a DecodeOptions,
        error: &mut DecodeError,
    ) -> Option<HeaderReader<'a>> {
        HeaderReader::check(obj, opts, 0, 0, 0, None)
            .map_err(|e| *error = e)
            .ok()
    }

    /// For read-only views: a nested message's header, validated (bounds,
    /// stated length, depth), if present. A view allocates nothing, so no
    /// budget is charged: its work is what the caller asks for.
    #[inline]
    pub fn view_nested(
        &self,
        opts: &'a DecodeOptions,
        number: u32,
    ) -> Result<Option<HeaderReader<'a>>, DecodeError> {
        match self.slot(number) {
            None => Ok(None),
            Some(v) => {
                let (len, off) = split_pair(v);
                nested_at(self.obj, opts, None, off, len, self.depth + 1, number).map(Some)
            }
        }
    }

    /// For read-only views: a repeated field's entry array, if present
    /// (bounds and `max_list_len` checked; nothing charged).
    #[inline]
    pub fn view_list(
        &self,
        opts: &'a DecodeOptions,
        number: u32,
        width: usize,
    ) -> Result<Option<ListReader<'a>>, DecodeError> {
        self.list_at(opts, number, width)
    }
}

impl<'a> ListReader<'a> {
    /// For read-only views: element `i`'s header, validated (`i <
    /// len()`).
    #[inline]
    pub fn view_nested(
        &self,
        opts: &'a DecodeOptions,
        i: usize,
    ) -> Result<HeaderReader<'a>, DecodeError> {
        let (len, off) = self.pair(i);
        nested_at(self.obj, opts, None, off, len, self.depth + 1, self.field)
    }
}

/// A `(u32 len, u32 offset)` pair read as one little-endian `u64`.
#[inline(always)]
fn split_pair(entry: u64) -> (usize, usize) {
    ((entry & 0xffff_ffff) as usize, (entry >> 32) as usize)
}

#[inline]
fn range(obj: &[u8], off: usize, len: usize, field: u32) -> Result<&[u8], DecodeError> {
    off.checked_add(len)
        .and_then(|end| obj.get(off..end))
        .ok_or(DecodeError::new(K::OutOfBounds, field))
}

/// The nested header at `off`, `len` bytes long by its parent's word;
/// errors name `field` unless they name one of their own.
fn nested_at<'a>(
    obj: &'a [u8],
    opts: &DecodeOptions,
    budget: Option<&mut usize>,
    off: usize,
    len: usize,
    depth: u32,
    field: u32,
) -> Result<HeaderReader<'a>, DecodeError> {
    if len == 0 {
        return Err(DecodeError::new(K::BadHeaderLen, field));
    }
    HeaderReader::check(obj, opts, off, depth, len, budget).map_err(|e| DecodeError {
        kind: e.kind,
        field: if e.field == 0 { field } else { e.field },
    })
}

/// A validated view of a repeated field's entry array.
#[derive(Clone, Copy)]
pub struct ListReader<'a> {
    obj: &'a [u8],
    entries: &'a [u8],
    count: usize,
    width: usize,
    depth: u32,
    field: u32,
}

impl<'a> ListReader<'a> {
    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.count
    }

    /// The entry array's bytes (`len() * width`).
    #[inline]
    pub fn entries(&self) -> &'a [u8] {
        self.entries
    }

    /// True if the list has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Element `i` of a scalar list (`i < len()`, width `T::WIDTH`).
    #[inline]
    pub fn scalar<T: WireScalar>(&self, i: usize) -> T {
        debug_assert_eq!(self.width, T::WIDTH);
        match self.entries.get(i * T::WIDTH..(i + 1) * T::WIDTH) {
            Some(b) => T::read_entry(b),
            None => T::default(),
        }
    }

    #[inline]
    fn pair(&self, i: usize) -> (usize, usize) {
        // One 8-byte read: one bounds check where two 4-byte reads took two.
        let entry = i
            .checked_mul(ENTRY_LEN)
            .and_then(|at| read_u64(self.entries, at))
            .unwrap_or(0);
        split_pair(entry)
    }

    /// Element `i` of a bytes/string list.
    #[inline]
    pub fn bytes(&self, i: usize) -> Result<&'a [u8], DecodeError> {
        let (len, off) = self.pair(i);
        range(self.obj, off, len, self.field)
    }

    /// The elements of a bytes/string list, in order: what
    /// [`bytes`](Self::bytes) gives for each index, without an index to
    /// check against the array.
    #[inline]
    pub fn bytes_iter(&self) -> impl ExactSizeIterator<Item = Result<&'a [u8], DecodeError>> + 'a {
        let (obj, field) = (self.obj, self.field);
        self.entries.chunks_exact(ENTRY_LEN).map(move |e| {
            let entry = e.first_chunk::<8>().map_or(0, |b| u64::from_le_bytes(*b));
            let (len, off) = split_pair(entry);
            range(obj, off, len, field)
        })
    }

    /// Element `i` of a message list: its validated header (its storage
    /// was charged with the list).
    #[inline]
    pub fn nested(&self, cx: &mut DecodeCx<'a>, i: usize) -> Result<HeaderReader<'a>, DecodeError> {
        let (len, off) = self.pair(i);
        cx.nested_at(off, len, self.depth + 1, self.field)
    }
}
