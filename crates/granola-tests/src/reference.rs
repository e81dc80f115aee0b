// Hand-written reference of what granola-build emits for
// schemas/sample.proto (package `sample`). It is the contract between the
// runtime and the code generator: the generator's output for sample.proto
// must have exactly this API and the same encode/decode behaviour.

/// `sample.Inner`
pub struct Inner<'a> {
    __ctx: &'a ::granola::Context,
    a: ::core::option::Option<u64>,
    payload: ::core::option::Option<::granola::HybridBytes<'a>>,
}

impl<'a> Inner<'a> {
    /// An empty message (no field present).
    pub fn new(ctx: &'a ::granola::Context) -> Self {
        Inner {
            __ctx: ctx,
            a: ::core::option::Option::None,
            payload: ::core::option::Option::None,
        }
    }

    /// The context this message allocates from.
    pub fn context(&self) -> &'a ::granola::Context {
        self.__ctx
    }

    pub fn has_a(&self) -> bool {
        self.a.is_some()
    }
    pub fn get_a(&self) -> u64 {
        self.a.unwrap_or_default()
    }
    pub fn set_a(&mut self, value: u64) {
        self.a = ::core::option::Option::Some(value);
    }
    pub fn clear_a(&mut self) {
        self.a = ::core::option::Option::None;
    }

    pub fn has_payload(&self) -> bool {
        self.payload.is_some()
    }
    pub fn get_payload(&self) -> &[u8] {
        match &self.payload {
            ::core::option::Option::Some(f) => f.as_slice(),
            ::core::option::Option::None => &[],
        }
    }
    pub fn payload_field(&self) -> ::core::option::Option<&::granola::HybridBytes<'a>> {
        self.payload.as_ref()
    }
    pub fn set_payload(&mut self, value: &[u8]) {
        self.payload = ::core::option::Option::Some(::granola::HybridBytes::new(value, self.__ctx));
    }
    pub fn set_payload_buf(&mut self, value: ::granola::Buf) {
        self.payload =
            ::core::option::Option::Some(::granola::HybridBytes::from_buf(value, self.__ctx));
    }
    pub fn set_payload_field(&mut self, value: ::granola::HybridBytes<'a>) {
        self.payload = ::core::option::Option::Some(value);
    }
    pub fn clear_payload(&mut self) {
        self.payload = ::core::option::Option::None;
    }

    #[inline]
    fn __bitmap(&self) -> [u32; 1] {
        let mut bm = [0u32; 1];
        if self.a.is_some() {
            bm[0] |= 1 << 0;
        }
        if self.payload.is_some() {
            bm[0] |= 1 << 1;
        }
        bm
    }
}

impl<'a> ::granola::Message for Inner<'a> {
    #[inline]
    fn __header_len(&self) -> usize {
        let bm = self.__bitmap();
        ::granola::__private::header_len(
            ::granola::__private::used_words(&bm),
            ::granola::__private::present_count(&bm),
        )
    }

    fn __accumulate(&self, sizes: &mut ::granola::EncodedSizes) {
        sizes.header_len += self.__header_len();
        if let ::core::option::Option::Some(f) = &self.payload {
            sizes.add_bytes(f);
        }
    }

    fn __encode_header<F: FnMut(&::granola::Buf)>(
        &self,
        enc: &mut ::granola::__private::Encoder<'_, F>,
        at: usize,
    ) {
        let bm = self.__bitmap();
        let mut slot = enc.begin_header(at, &bm[..::granola::__private::used_words(&bm)]);
        if let ::core::option::Option::Some(v) = self.a {
            enc.put_scalar(slot, v);
            slot += 8;
        }
        if let ::core::option::Option::Some(f) = &self.payload {
            enc.put_bytes(slot, f);
            slot += 8;
        }
        let _ = slot;
    }
}

impl<'a> ::granola::Decode<'a> for Inner<'a> {
    fn __decode(
        ctx: &'a ::granola::Context,
        cx: &mut ::granola::__private::DecodeCx<'a>,
        h: &::granola::__private::HeaderReader<'a>,
    ) -> ::core::result::Result<Self, ::granola::DecodeError> {
        let _ = &cx;
        let mut m = Inner::new(ctx);
        m.a = h.scalar::<u64>(1);
        if let ::core::option::Option::Some(b) = h.bytes(2)? {
            m.payload = ::core::option::Option::Some(::granola::HybridBytes::decoded(b, ctx));
        }
        ::core::result::Result::Ok(m)
    }
}

impl ::core::cmp::PartialEq for Inner<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.a == other.a && self.payload == other.payload
    }
}

impl ::core::fmt::Debug for Inner<'_> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        let mut d = f.debug_struct("Inner");
        if let ::core::option::Option::Some(v) = &self.a {
            d.field("a", v);
        }
        if let ::core::option::Option::Some(v) = &self.payload {
            d.field("payload", v);
        }
        d.finish()
    }
}

/// `sample.Sample`
pub struct Sample<'a> {
    __ctx: &'a ::granola::Context,
    id: ::core::option::Option<u32>,
    name: ::core::option::Option<::granola::HybridStr<'a>>,
    data: ::core::option::Option<::granola::HybridBytes<'a>>,
    vals: ::core::option::Option<::granola::List<'a, ::granola::HybridBytes<'a>>>,
    keys: ::core::option::Option<::granola::List<'a, ::granola::HybridStr<'a>>>,
    nums: ::core::option::Option<::granola::List<'a, i32>>,
    inner: ::core::option::Option<::granola::__private::ArenaBox<'a, Inner<'a>>>,
    items: ::core::option::Option<::granola::List<'a, Inner<'a>>>,
    flag: ::core::option::Option<bool>,
    ratio: ::core::option::Option<f64>,
}

impl<'a> Sample<'a> {
    /// An empty message (no field present).
    pub fn new(ctx: &'a ::granola::Context) -> Self {
        Sample {
            __ctx: ctx,
            id: ::core::option::Option::None,
            name: ::core::option::Option::None,
            data: ::core::option::Option::None,
            vals: ::core::option::Option::None,
            keys: ::core::option::Option::None,
            nums: ::core::option::Option::None,
            inner: ::core::option::Option::None,
            items: ::core::option::Option::None,
            flag: ::core::option::Option::None,
            ratio: ::core::option::Option::None,
        }
    }

    /// The context this message allocates from.
    pub fn context(&self) -> &'a ::granola::Context {
        self.__ctx
    }

    // uint32 id = 1;
    pub fn has_id(&self) -> bool {
        self.id.is_some()
    }
    pub fn get_id(&self) -> u32 {
        self.id.unwrap_or_default()
    }
    pub fn set_id(&mut self, value: u32) {
        self.id = ::core::option::Option::Some(value);
    }
    pub fn clear_id(&mut self) {
        self.id = ::core::option::Option::None;
    }

    // string name = 2;
    pub fn has_name(&self) -> bool {
        self.name.is_some()
    }
    pub fn get_name(&self) -> ::core::result::Result<&str, ::core::str::Utf8Error> {
        match &self.name {
            ::core::option::Option::Some(f) => f.as_str(),
            ::core::option::Option::None => ::core::result::Result::Ok(""),
        }
    }
    pub fn get_name_bytes(&self) -> &[u8] {
        match &self.name {
            ::core::option::Option::Some(f) => f.as_bytes(),
            ::core::option::Option::None => &[],
        }
    }
    pub fn name_field(&self) -> ::core::option::Option<&::granola::HybridStr<'a>> {
        self.name.as_ref()
    }
    pub fn set_name(&mut self, value: &str) {
        self.name = ::core::option::Option::Some(::granola::HybridStr::new(value, self.__ctx));
    }
    pub fn set_name_buf(&mut self, value: ::granola::Buf) {
        self.name = ::core::option::Option::Some(::granola::HybridStr::from_buf(value, self.__ctx));
    }
    pub fn set_name_field(&mut self, value: ::granola::HybridStr<'a>) {
        self.name = ::core::option::Option::Some(value);
    }
    pub fn clear_name(&mut self) {
        self.name = ::core::option::Option::None;
    }

    // bytes data = 3;
    pub fn has_data(&self) -> bool {
        self.data.is_some()
    }
    pub fn get_data(&self) -> &[u8] {
        match &self.data {
            ::core::option::Option::Some(f) => f.as_slice(),
            ::core::option::Option::None => &[],
        }
    }
    pub fn data_field(&self) -> ::core::option::Option<&::granola::HybridBytes<'a>> {
        self.data.as_ref()
    }
    pub fn set_data(&mut self, value: &[u8]) {
        self.data = ::core::option::Option::Some(::granola::HybridBytes::new(value, self.__ctx));
    }
    pub fn set_data_buf(&mut self, value: ::granola::Buf) {
        self.data =
            ::core::option::Option::Some(::granola::HybridBytes::from_buf(value, self.__ctx));
    }
    pub fn set_data_field(&mut self, value: ::granola::HybridBytes<'a>) {
        self.data = ::core::option::Option::Some(value);
    }
    pub fn clear_data(&mut self) {
        self.data = ::core::option::Option::None;
    }

    // repeated bytes vals = 4;
    pub fn has_vals(&self) -> bool {
        self.vals.is_some()
    }
    pub fn get_vals(&self) -> &[::granola::HybridBytes<'a>] {
        match &self.vals {
            ::core::option::Option::Some(l) => l,
            ::core::option::Option::None => &[],
        }
    }
    pub fn vals_len(&self) -> usize {
        self.get_vals().len()
    }
    pub fn init_vals(&mut self, capacity: usize) {
        self.vals = ::core::option::Option::Some(::granola::List::with_capacity_in(
            capacity,
            self.__ctx.arena(),
        ));
    }
    pub fn append_vals(&mut self, value: &[u8]) {
        let v = ::granola::HybridBytes::new(value, self.__ctx);
        self.append_vals_field(v);
    }
    pub fn append_vals_buf(&mut self, value: ::granola::Buf) {
        let v = ::granola::HybridBytes::from_buf(value, self.__ctx);
        self.append_vals_field(v);
    }
    pub fn append_vals_field(&mut self, value: ::granola::HybridBytes<'a>) {
        let ctx = self.__ctx;
        self.vals
            .get_or_insert_with(|| ::granola::List::with_capacity_in(0, ctx.arena()))
            .push(value);
    }
    pub fn clear_vals(&mut self) {
        self.vals = ::core::option::Option::None;
    }

    // repeated string keys = 5;
    pub fn has_keys(&self) -> bool {
        self.keys.is_some()
    }
    pub fn get_keys(&self) -> &[::granola::HybridStr<'a>] {
        match &self.keys {
            ::core::option::Option::Some(l) => l,
            ::core::option::Option::None => &[],
        }
    }
    pub fn keys_len(&self) -> usize {
        self.get_keys().len()
    }
    pub fn init_keys(&mut self, capacity: usize) {
        self.keys = ::core::option::Option::Some(::granola::List::with_capacity_in(
            capacity,
            self.__ctx.arena(),
        ));
    }
    pub fn append_keys(&mut self, value: &str) {
        let v = ::granola::HybridStr::new(value, self.__ctx);
        self.append_keys_field(v);
    }
    pub fn append_keys_buf(&mut self, value: ::granola::Buf) {
        let v = ::granola::HybridStr::from_buf(value, self.__ctx);
        self.append_keys_field(v);
    }
    pub fn append_keys_field(&mut self, value: ::granola::HybridStr<'a>) {
        let ctx = self.__ctx;
        self.keys
            .get_or_insert_with(|| ::granola::List::with_capacity_in(0, ctx.arena()))
            .push(value);
    }
    pub fn clear_keys(&mut self) {
        self.keys = ::core::option::Option::None;
    }

    // repeated int32 nums = 6;
    pub fn has_nums(&self) -> bool {
        self.nums.is_some()
    }
    pub fn get_nums(&self) -> &[i32] {
        match &self.nums {
            ::core::option::Option::Some(l) => l,
            ::core::option::Option::None => &[],
        }
    }
    pub fn nums_len(&self) -> usize {
        self.get_nums().len()
    }
    pub fn init_nums(&mut self, capacity: usize) {
        self.nums = ::core::option::Option::Some(::granola::List::with_capacity_in(
            capacity,
            self.__ctx.arena(),
        ));
    }
    pub fn append_nums(&mut self, value: i32) {
        let ctx = self.__ctx;
        self.nums
            .get_or_insert_with(|| ::granola::List::with_capacity_in(0, ctx.arena()))
            .push(value);
    }
    pub fn clear_nums(&mut self) {
        self.nums = ::core::option::Option::None;
    }

    // Inner inner = 7;
    pub fn has_inner(&self) -> bool {
        self.inner.is_some()
    }
    pub fn get_inner(&self) -> ::core::option::Option<&Inner<'a>> {
        self.inner.as_deref()
    }
    pub fn mut_inner(&mut self) -> &mut Inner<'a> {
        let ctx = self.__ctx;
        self.inner.get_or_insert_with(|| {
            ::granola::__private::ArenaBox::new_in(Inner::new(ctx), ctx.arena())
        })
    }
    pub fn set_inner(&mut self, value: Inner<'a>) {
        self.inner = ::core::option::Option::Some(::granola::__private::ArenaBox::new_in(
            value,
            self.__ctx.arena(),
        ));
    }
    pub fn clear_inner(&mut self) {
        self.inner = ::core::option::Option::None;
    }

    // repeated Inner items = 8;
    pub fn has_items(&self) -> bool {
        self.items.is_some()
    }
    pub fn get_items(&self) -> &[Inner<'a>] {
        match &self.items {
            ::core::option::Option::Some(l) => l,
            ::core::option::Option::None => &[],
        }
    }
    pub fn get_items_mut(&mut self) -> &mut [Inner<'a>] {
        match &mut self.items {
            ::core::option::Option::Some(l) => l.as_mut_slice(),
            ::core::option::Option::None => &mut [],
        }
    }
    pub fn items_len(&self) -> usize {
        self.get_items().len()
    }
    pub fn init_items(&mut self, capacity: usize) {
        self.items = ::core::option::Option::Some(::granola::List::with_capacity_in(
            capacity,
            self.__ctx.arena(),
        ));
    }
    /// Appends a new, empty element and returns it for filling in.
    pub fn append_items(&mut self) -> &mut Inner<'a> {
        let ctx = self.__ctx;
        self.push_items(Inner::new(ctx));
        let l = self.get_items_mut();
        let n = l.len();
        &mut l[n - 1]
    }
    pub fn push_items(&mut self, value: Inner<'a>) {
        let ctx = self.__ctx;
        self.items
            .get_or_insert_with(|| ::granola::List::with_capacity_in(0, ctx.arena()))
            .push(value);
    }
    pub fn clear_items(&mut self) {
        self.items = ::core::option::Option::None;
    }

    // bool flag = 9;
    pub fn has_flag(&self) -> bool {
        self.flag.is_some()
    }
    pub fn get_flag(&self) -> bool {
        self.flag.unwrap_or_default()
    }
    pub fn set_flag(&mut self, value: bool) {
        self.flag = ::core::option::Option::Some(value);
    }
    pub fn clear_flag(&mut self) {
        self.flag = ::core::option::Option::None;
    }

    // double ratio = 10;
    pub fn has_ratio(&self) -> bool {
        self.ratio.is_some()
    }
    pub fn get_ratio(&self) -> f64 {
        self.ratio.unwrap_or_default()
    }
    pub fn set_ratio(&mut self, value: f64) {
        self.ratio = ::core::option::Option::Some(value);
    }
    pub fn clear_ratio(&mut self) {
        self.ratio = ::core::option::Option::None;
    }

    #[inline]
    fn __bitmap(&self) -> [u32; 1] {
        let mut bm = [0u32; 1];
        if self.id.is_some() {
            bm[0] |= 1 << 0;
        }
        if self.name.is_some() {
            bm[0] |= 1 << 1;
        }
        if self.data.is_some() {
            bm[0] |= 1 << 2;
        }
        if self.vals.is_some() {
            bm[0] |= 1 << 3;
        }
        if self.keys.is_some() {
            bm[0] |= 1 << 4;
        }
        if self.nums.is_some() {
            bm[0] |= 1 << 5;
        }
        if self.inner.is_some() {
            bm[0] |= 1 << 6;
        }
        if self.items.is_some() {
            bm[0] |= 1 << 7;
        }
        if self.flag.is_some() {
            bm[0] |= 1 << 8;
        }
        if self.ratio.is_some() {
            bm[0] |= 1 << 9;
        }
        bm
    }
}

impl<'a> ::granola::Message for Sample<'a> {
    #[inline]
    fn __header_len(&self) -> usize {
        let bm = self.__bitmap();
        ::granola::__private::header_len(
            ::granola::__private::used_words(&bm),
            ::granola::__private::present_count(&bm),
        )
    }

    fn __accumulate(&self, sizes: &mut ::granola::EncodedSizes) {
        sizes.header_len += self.__header_len();
        if let ::core::option::Option::Some(f) = &self.name {
            sizes.add_bytes(f.as_hybrid());
        }
        if let ::core::option::Option::Some(f) = &self.data {
            sizes.add_bytes(f);
        }
        if let ::core::option::Option::Some(l) = &self.vals {
            sizes.header_len += l.len() * ::granola::__private::ENTRY_LEN;
            for f in l.iter() {
                sizes.add_bytes(f);
            }
        }
        if let ::core::option::Option::Some(l) = &self.keys {
            sizes.header_len += l.len() * ::granola::__private::ENTRY_LEN;
            for f in l.iter() {
                sizes.add_bytes(f.as_hybrid());
            }
        }
        if let ::core::option::Option::Some(l) = &self.nums {
            sizes.header_len += l.len() * <i32 as ::granola::__private::WireScalar>::WIDTH;
        }
        if let ::core::option::Option::Some(m) = &self.inner {
            ::granola::Message::__accumulate(&**m, sizes);
        }
        if let ::core::option::Option::Some(l) = &self.items {
            sizes.header_len += l.len() * ::granola::__private::ENTRY_LEN;
            for m in l.iter() {
                ::granola::Message::__accumulate(m, sizes);
            }
        }
    }

    fn __encode_header<F: FnMut(&::granola::Buf)>(
        &self,
        enc: &mut ::granola::__private::Encoder<'_, F>,
        at: usize,
    ) {
        let bm = self.__bitmap();
        let mut slot = enc.begin_header(at, &bm[..::granola::__private::used_words(&bm)]);
        if let ::core::option::Option::Some(v) = self.id {
            enc.put_scalar(slot, v);
            slot += 8;
        }
        if let ::core::option::Option::Some(f) = &self.name {
            enc.put_bytes(slot, f.as_hybrid());
            slot += 8;
        }
        if let ::core::option::Option::Some(f) = &self.data {
            enc.put_bytes(slot, f);
            slot += 8;
        }
        if let ::core::option::Option::Some(l) = &self.vals {
            enc.put_bytes_list(slot, l.iter());
            slot += 8;
        }
        if let ::core::option::Option::Some(l) = &self.keys {
            enc.put_bytes_list(slot, l.iter().map(::granola::HybridStr::as_hybrid));
            slot += 8;
        }
        if let ::core::option::Option::Some(l) = &self.nums {
            enc.put_scalar_list(slot, l);
            slot += 8;
        }
        if let ::core::option::Option::Some(m) = &self.inner {
            let h = enc.put_nested(slot, ::granola::Message::__header_len(&**m));
            ::granola::Message::__encode_header(&**m, enc, h);
            slot += 8;
        }
        if let ::core::option::Option::Some(l) = &self.items {
            let arr = enc.put_message_list(slot, l.len());
            for (i, m) in l.iter().enumerate() {
                let h = enc.put_nested(
                    arr + i * ::granola::__private::ENTRY_LEN,
                    ::granola::Message::__header_len(m),
                );
                ::granola::Message::__encode_header(m, enc, h);
            }
            slot += 8;
        }
        if let ::core::option::Option::Some(v) = self.flag {
            enc.put_scalar(slot, v);
            slot += 8;
        }
        if let ::core::option::Option::Some(v) = self.ratio {
            enc.put_scalar(slot, v);
            slot += 8;
        }
        let _ = slot;
    }
}

impl<'a> ::granola::Decode<'a> for Sample<'a> {
    fn __decode(
        ctx: &'a ::granola::Context,
        cx: &mut ::granola::__private::DecodeCx<'a>,
        h: &::granola::__private::HeaderReader<'a>,
    ) -> ::core::result::Result<Self, ::granola::DecodeError> {
        let _ = &cx;
        let mut m = Sample::new(ctx);
        m.id = h.scalar::<u32>(1);
        if let ::core::option::Option::Some(b) = h.bytes(2)? {
            m.name = ::core::option::Option::Some(::granola::HybridStr::from_bytes_unchecked(
                ::granola::HybridBytes::decoded(b, ctx),
            ));
        }
        if let ::core::option::Option::Some(b) = h.bytes(3)? {
            m.data = ::core::option::Option::Some(::granola::HybridBytes::decoded(b, ctx));
        }
        if let ::core::option::Option::Some(l) = h.list(cx, 4, ::granola::__private::ENTRY_LEN)? {
            let mut v = ::granola::List::with_capacity_in(l.len(), ctx.arena());
            for i in 0..l.len() {
                v.push(::granola::HybridBytes::decoded(l.bytes(i)?, ctx));
            }
            m.vals = ::core::option::Option::Some(v);
        }
        if let ::core::option::Option::Some(l) = h.list(cx, 5, ::granola::__private::ENTRY_LEN)? {
            let mut v = ::granola::List::with_capacity_in(l.len(), ctx.arena());
            for i in 0..l.len() {
                v.push(::granola::HybridStr::from_bytes_unchecked(
                    ::granola::HybridBytes::decoded(l.bytes(i)?, ctx),
                ));
            }
            m.keys = ::core::option::Option::Some(v);
        }
        if let ::core::option::Option::Some(l) =
            h.list(cx, 6, <i32 as ::granola::__private::WireScalar>::WIDTH)?
        {
            let mut v = ::granola::List::with_capacity_in(l.len(), ctx.arena());
            for i in 0..l.len() {
                v.push(l.scalar::<i32>(i));
            }
            m.nums = ::core::option::Option::Some(v);
        }
        if let ::core::option::Option::Some(n) = h.nested(cx, 7)? {
            let v = <Inner<'a> as ::granola::Decode<'a>>::__decode(ctx, cx, &n)?;
            m.inner = ::core::option::Option::Some(::granola::__private::ArenaBox::new_in(
                v,
                ctx.arena(),
            ));
        }
        if let ::core::option::Option::Some(l) = h.list(cx, 8, ::granola::__private::ENTRY_LEN)? {
            let mut v = ::granola::List::with_capacity_in(l.len(), ctx.arena());
            for i in 0..l.len() {
                let n = l.nested(cx, i)?;
                v.push(<Inner<'a> as ::granola::Decode<'a>>::__decode(ctx, cx, &n)?);
            }
            m.items = ::core::option::Option::Some(v);
        }
        m.flag = h.scalar::<bool>(9);
        m.ratio = h.scalar::<f64>(10);
        ::core::result::Result::Ok(m)
    }
}

/// Equality means "same fields, same values"; floats compare by bit
/// pattern, so it is reflexive (NaN == NaN) and implies identical encoding.
impl ::core::cmp::PartialEq for Sample<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.data == other.data
            && self.vals.as_deref() == other.vals.as_deref()
            && self.keys.as_deref() == other.keys.as_deref()
            && self.nums.as_deref() == other.nums.as_deref()
            && self.inner.as_deref() == other.inner.as_deref()
            && self.items.as_deref() == other.items.as_deref()
            && self.flag == other.flag
            && self.ratio.map(f64::to_bits) == other.ratio.map(f64::to_bits)
    }
}

impl ::core::fmt::Debug for Sample<'_> {
    fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
        let mut d = f.debug_struct("Sample");
        if let ::core::option::Option::Some(v) = &self.id {
            d.field("id", v);
        }
        if let ::core::option::Option::Some(v) = &self.name {
            d.field("name", v);
        }
        if let ::core::option::Option::Some(v) = &self.data {
            d.field("data", v);
        }
        if let ::core::option::Option::Some(v) = &self.vals {
            d.field("vals", v);
        }
        if let ::core::option::Option::Some(v) = &self.keys {
            d.field("keys", v);
        }
        if let ::core::option::Option::Some(v) = &self.nums {
            d.field("nums", v);
        }
        if let ::core::option::Option::Some(v) = &self.inner {
            d.field("inner", &**v);
        }
        if let ::core::option::Option::Some(v) = &self.items {
            d.field("items", v);
        }
        if let ::core::option::Option::Some(v) = &self.flag {
            d.field("flag", v);
        }
        if let ::core::option::Option::Some(v) = &self.ratio {
            d.field("ratio", v);
        }
        d.finish()
    }
}
