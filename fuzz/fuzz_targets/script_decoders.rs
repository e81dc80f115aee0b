//! Fuzzes the decoders scripts reach with client bytes: `cjson.decode`,
//! `cmsgpack.unpack` and `struct.unpack` / `struct.size` / `struct.pack`
//! (EVAL's ARGV is any bytes a client sends, formats included).
//!
//! The input goes to both on a Lua state with a memory limit, and what
//! they return is encoded again (`cjson.encode`, `cmsgpack.pack`) and
//! decoded again. Each call either returns or raises a Lua error: no
//! panic, no abort (deep nesting runs on the heap), no allocation of a
//! size the input states (counts allocate as their entries arrive), and
//! the round trip decodes whatever the encoders wrote.
#![no_main]

use granola_kv::command::resp::{scripting_libs, scripting_struct};
use libfuzzer_sys::fuzz_target;
use mlua::{Lua, LuaOptions, StdLib};
use std::cell::RefCell;

thread_local! {
    static LUA: RefCell<Option<Lua>> = const { RefCell::new(None) };
}

const CHECK: &str = r##"
local input = ...
local ok, v = pcall(cjson.decode, input)
if ok then
    local ok2, text = pcall(cjson.encode, v)
    if ok2 then
        -- What the encoder wrote, the decoder reads.
        assert(pcall(cjson.decode, text), "cjson: encoded text does not decode")
    end
end
local function collect(...) return select("#", ...), {...} end
local ok3, n, values = pcall(function() return collect(cmsgpack.unpack(input)) end)
if ok3 and n > 0 then
    local bytes = cmsgpack.pack(unpack(values, 1, n))
    local ok5, err = pcall(cmsgpack.unpack, bytes)
    -- A map key nested past pack's 16 levels is packed as nil, which no
    -- Lua table holds: Redis's cmsgpack fails the same way.
    assert(ok5 or tostring(err):find("table index is nil", 1, true),
        "cmsgpack: packed bytes do not unpack")
end
-- struct: the first byte says how many of the next are the format.
local len = input:byte(1) or 0
local fmt, data = input:sub(2, 1 + len % 24), input:sub(2 + len % 24)
pcall(struct.size, fmt)
local ok4, m, got = pcall(function() return collect(struct.unpack(fmt, data)) end)
if ok4 and m > 1 then
    -- Packing what was read may fail (c0, strings with zero bytes) but
    -- never crashes.
    pcall(struct.pack, fmt, unpack(got, 1, m - 1))
end
"##;

fuzz_target!(|data: &[u8]| {
    LUA.with(|cell| {
        let mut slot = cell.borrow_mut();
        let lua = slot.get_or_insert_with(|| {
            let lua = Lua::new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH,
                LuaOptions::default(),
            )
            .expect("a Lua state");
            scripting_libs::install(&lua, 8 << 20).expect("the libraries");
            scripting_struct::install(&lua).expect("struct");
            lua.set_memory_limit(64 << 20).expect("a memory limit");
            lua
        });
        let input = lua.create_string(data);
        let Ok(input) = input else {
            return; // over the memory limit
        };
        match lua.load(CHECK).call::<()>(input) {
            Ok(()) => {}
            Err(e) => {
                let text = e.to_string();
                assert!(!text.contains("do not"), "{text} for {data:?}");
            }
        }
    });
});
