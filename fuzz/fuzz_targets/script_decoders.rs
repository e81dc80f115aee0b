//! Fuzzes the decoders scripts reach with client bytes: `cjson.decode` and
//! `cmsgpack.unpack` (EVAL's ARGV is any bytes a client sends).
//!
//! The input goes to both on a Lua state with a memory limit, and what
//! they return is encoded again (`cjson.encode`, `cmsgpack.pack`) and
//! decoded again. Each call either returns or raises a Lua error: no
//! panic, no abort (deep nesting runs on the heap), no allocation of a
//! size the input states (counts allocate as their entries arrive), and
//! the round trip decodes whatever the encoders wrote.
#![no_main]

use granola_kv::command::resp::scripting_libs;
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
    assert(pcall(cmsgpack.unpack, bytes), "cmsgpack: packed bytes do not unpack")
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
