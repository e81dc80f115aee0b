//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (LOAD,
//! EXISTS, FLUSH, KILL, HELP), with Redis's `redis` library in the script
//! (`call`, `pcall`, `error_reply`, `status_reply`, `sha1hex`, `log`).
//! Client libraries reach for scripts for what must happen at once:
//! redis-py's `Lock` releases and extends its lock with one, rate limiters
//! and job queues are written as scripts.
//!
//! A script runs alone, as EXEC does (it holds the RESP gate; inside MULTI
//! the EXEC already holds it), on a Lua 5.1 state of its worker thread.
//! Its commands answer in RESP2 whatever the client speaks, and never
//! wait (a BLPOP answers at once, as inside MULTI). Replies convert as in
//! Redis: integer <-> number, bulk <-> string, nil bulk -> false, array <->
//! table, status <-> `{ok=...}`, error <-> `{err=...}`.
//!
//! Differences from Redis, all to keep one script from harming the other
//! clients (it holds every RESP client while it runs):
//! - a script that runs past `--script-time-limit` is stopped with an
//!   error (Redis answers others BUSY and waits for SCRIPT KILL); `pcall`
//!   and `xpcall` cannot catch that error, and `coroutine` is absent;
//! - a worker's Lua memory is capped at a 32nd of `-m` (4 to 256 MiB),
//!   and a state left holding more than half of that after a script (in
//!   globals set with `rawset`) is replaced by a fresh one;
//! - the script cache holds at most [`CACHE_BYTES`] of script text; past
//!   that SCRIPT LOAD fails and EVAL runs without caching;
//! - globals are guarded by a metatable (creating one, or reading one that
//!   does not exist, is an error, as in Redis), not by Redis's read-only
//!   tables: a script that removes the metatable changes its worker's Lua
//!   state for later scripts.
//!
//! Scripts also get `cjson`, `cmsgpack` and `bit` ([`super::scripting_libs`])
//! and `struct` ([`super::scripting_struct`]); `redis.setresp(3)` is not
//! provided. FUNCTION and FCALL ([`super::functions`]) run their libraries
//! on the same Lua states (the function-specific parts of the state, the
//! library loading and `register_function`, are here with the rest of it).

use super::{dispatch_into, table, Ctx};
use crate::command::Step;
use crate::protocol::resp::{self, Command, Version};
use crate::protocol::{Limits, Parsed};
use crate::server::config::Config;
use mlua::{
    Error as LuaError, Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value,
    VmState,
};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Script text the cache holds at most (hostile SCRIPT LOADs cannot grow
/// it past this).
pub const CACHE_BYTES: usize = 16 << 20;
/// Compiled scripts a worker keeps before it starts afresh.
const COMPILED_MAX: usize = 1024;
/// Nesting of a script's returned tables converted to a reply.
const MAX_DEPTH: usize = 64;

/// What a Lua chunk is, which names it in error texts and tracebacks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Chunk {
    /// An EVAL script.
    Script,
    /// A FUNCTION library.
    Function,
}

impl Chunk {
    /// The chunk name Redis gives it (`user_script:3: ...`).
    pub(super) fn name(self) -> &'static str {
        match self {
            Chunk::Script => "user_script",
            Chunk::Function => "user_function",
        }
    }
}

/// Scripts by SHA1 (40 lower-case hex digits), shared by every connection.
#[derive(Default)]
pub struct Scripts {
    cache: Mutex<Cache>,
}

/// The scripts, and the bytes of their text.
#[derive(Default)]
struct Cache {
    by_sha: HashMap<String, Arc<[u8]>>,
    bytes: usize,
}

impl Scripts {
    /// Caches `body`; its SHA1, and whether it is cached (false when the
    /// cache is full).
    pub fn load(&self, body: &[u8]) -> (String, bool) {
        let sha = sha1_hex(body);
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.by_sha.contains_key(&sha) {
            return (sha, true);
        }
        if c.bytes + body.len() > CACHE_BYTES {
            return (sha, false);
        }
        c.bytes += body.len();
        c.by_sha.insert(sha.clone(), Arc::from(body));
        (sha, true)
    }

    /// The script whose SHA1 is `sha` (any case).
    pub fn get(&self, sha: &[u8]) -> Option<Arc<[u8]>> {
        let sha = std::str::from_utf8(sha).ok()?.to_ascii_lowercase();
        let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.by_sha.get(&sha).cloned()
    }

    /// Forgets every script.
    pub fn flush(&self) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        *c = Default::default();
    }
}

fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// `EVAL script numkeys [key ...] [arg ...]`.
pub fn eval(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_script(ctx, cmd, false, false)
}

/// `EVALSHA sha1 numkeys [key ...] [arg ...]`.
pub fn evalsha(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_script(ctx, cmd, true, false)
}

/// `EVAL_RO`: EVAL whose script may not write.
pub fn eval_ro(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_script(ctx, cmd, false, true)
}

/// `EVALSHA_RO`: EVALSHA whose script may not write.
pub fn evalsha_ro(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    run_script(ctx, cmd, true, true)
}

/// `SCRIPT LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC] |
/// KILL | HELP`.
pub fn script(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = cmd.arg(1).unwrap_or_default().to_ascii_lowercase();
    let scripts = &ctx.shared.scripts;
    match (&sub[..], cmd.len()) {
        (b"load", 3) => {
            let body = cmd.arg(2).unwrap_or_default();
            // Compiled first, as Redis does: a script that cannot run is
            // not cached.
            if let Err(e) = with_vm(&ctx.shared.config, |vm| {
                vm.compile(&sha1_hex(body), body).map(|_| ())
            }) {
                ctx.error(compile_error(&e).as_bytes());
                return Step::Done;
            }
            match scripts.load(body) {
                (sha, true) => ctx.bytes(sha.as_bytes()),
                (_, false) => ctx.error(b"ERR script cache full: SCRIPT FLUSH first"),
            }
        }
        (b"exists", n) if n >= 3 => {
            let found: Vec<bool> = cmd
                .args()
                .skip(2)
                .map(|s| scripts.get(s).is_some())
                .collect();
            ctx.array(found.len());
            for f in found {
                ctx.int(i64::from(f));
            }
        }
        (b"flush", 2) => {
            scripts.flush();
            ctx.ok();
        }
        (b"flush", 3) if matches!(&cmd.arg(2).unwrap_or_default().to_ascii_lowercase()[..], b"async" | b"sync") => {
            scripts.flush();
            ctx.ok();
        }
        (b"kill", 2) => ctx.error(b"NOTBUSY No scripts in execution right now."),
        (b"help", 2) => ctx.help(&[
            b"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            b"EXISTS <sha1> [<sha1> ...]",
            b"    Return information about the existence of the scripts in the script cache.",
            b"FLUSH [ASYNC|SYNC]",
            b"    Flush the Lua scripts cache. Very dangerous on replicas.",
            b"    When called without the optional mode argument, the behavior is determined by the",
            b"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            b"    * ASYNC: Asynchronously flush the scripts cache.",
            b"    * SYNC: Synchronously flush the scripts cache.",
            b"KILL",
            b"    Kill the currently executing Lua script.",
            b"LOAD <script>",
            b"    Load a script into the scripts cache without executing it.",
            b"HELP",
            b"    Prints this help.",
        ]),
        _ => ctx.unknown_subcommand("SCRIPT", cmd.arg(1).unwrap_or_default()),
    }
    Step::Done
}

/// A script's or function's keys and arguments.
pub(super) type KeysAndArgs<'c> = (Vec<&'c [u8]>, Vec<&'c [u8]>);

/// The keys and arguments after a script's or function's `numkeys`
/// (argument 2), or `None` with the error replied (`not_a_number` when
/// numkeys is not an integer: EVAL and FCALL word that differently).
pub(super) fn keys_and_args<'c>(
    ctx: &mut Ctx<'_>,
    cmd: &Command<'c>,
    not_a_number: &[u8],
) -> Option<KeysAndArgs<'c>> {
    let argc = cmd.len() - 3;
    let numkeys = match std::str::from_utf8(cmd.arg(2).unwrap_or_default())
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        None => {
            ctx.error(not_a_number);
            return None;
        }
        Some(n) if n < 0 => {
            ctx.error(b"ERR Number of keys can't be negative");
            return None;
        }
        Some(n) if n as u64 > argc as u64 => {
            ctx.error(b"ERR Number of keys can't be greater than number of args");
            return None;
        }
        Some(n) => n as usize,
    };
    let keys = cmd.args().skip(3).take(numkeys).collect();
    let args = cmd.args().skip(3 + numkeys).collect();
    Some((keys, args))
}

/// Runs `f` on this worker's Lua state with the client alone (it holds
/// the RESP gate, unless an EXEC running it already does); a failure
/// becomes the error reply, naming `name` (a script's SHA1, a function).
pub(super) fn run_alone(
    ctx: &mut Ctx<'_>,
    name: &str,
    chunk: Chunk,
    f: impl FnOnce(&mut Ctx<'_>, &mut Vm) -> mlua::Result<()>,
) {
    let gate = &ctx.shared.resp_gate;
    let took = !ctx.conn.alone;
    let _alone = took.then(|| gate.exclusive(&mut ctx.conn.gate));
    ctx.conn.alone = true;
    let outcome = with_vm(&ctx.shared.config, |vm| f(ctx, vm));
    if took {
        ctx.conn.alone = false;
    }
    if let Err(e) = outcome {
        ctx.conn.error_counted = counted_error(&e);
        ctx.error(run_error(&e, name, chunk).as_bytes());
    }
}

/// EVAL and its kin: the script (or its SHA1), then numkeys, keys, args.
fn run_script(ctx: &mut Ctx<'_>, cmd: &Command<'_>, by_sha: bool, read_only: bool) -> Step {
    let Some((keys, args)) =
        keys_and_args(ctx, cmd, b"ERR value is not an integer or out of range")
    else {
        return Step::Done;
    };
    let first = cmd.arg(1).unwrap_or_default();
    let (sha, body) = if by_sha {
        match ctx.shared.scripts.get(first) {
            Some(body) => (String::from_utf8_lossy(first).to_ascii_lowercase(), body),
            None => {
                ctx.error(b"NOSCRIPT No matching script. Please use EVAL.");
                return Step::Done;
            }
        }
    } else {
        let (sha, _) = ctx.shared.scripts.load(first);
        (sha, Arc::from(first))
    };
    run_alone(ctx, &sha, Chunk::Script, |ctx, vm| {
        let f = vm.compile(&sha, &body)?;
        vm.run(ctx, &f, &keys, &args, read_only, Chunk::Script)
    });
    Step::Done
}

/// A worker thread's Lua state.
pub(super) struct Vm {
    lua: Lua,
    compiled: HashMap<String, Function>,
    /// Function libraries loaded on this state, by library id: their
    /// functions by name.
    libraries: HashMap<u64, HashMap<String, Function>>,
    /// When the running script must stop (the instruction hook checks).
    deadline: Rc<Cell<Option<Instant>>>,
}

thread_local! {
    static VM: RefCell<Option<Vm>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's Lua state (made on first use, and made
/// again when a script left it holding too much).
pub(super) fn with_vm<R>(
    config: &Config,
    f: impl FnOnce(&mut Vm) -> mlua::Result<R>,
) -> mlua::Result<R> {
    let memory = config.script_memory_limit();
    VM.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Vm::new(memory)?);
        }
        let vm = slot.as_mut().expect("made above");
        vm.deadline
            .set(Some(Instant::now() + config.script_time_limit()));
        let r = f(vm);
        vm.deadline.set(None);
        if vm.lua.used_memory() > memory / 2 {
            let _ = vm.lua.gc_collect();
            if vm.lua.used_memory() > memory / 2 {
                *slot = None;
            }
        }
        r
    })
}

/// Lua that runs once per state: the guard on globals; `pcall` and
/// `xpcall` that pass a stopped script's error on and hand the script an
/// error raised in Rust as its text; and `__run`, which runs a script
/// under the handler that turns `error({err = ...})` into its reply.
const PRELUDE: &str = r#"
local rawpcall, rawxpcall, stopped, errtext, on_error, error, setmetatable, ipairs, tostring =
    pcall, xpcall, __stopped, __errtext, __on_error, error, setmetatable, ipairs, tostring
local function checked(ok, ...)
    if stopped() then error("script stopped", 0) end
    if ok then return ok, ... end
    return ok, errtext((...))
end
pcall = function(...) return checked(rawpcall(...)) end
xpcall = function(...) return checked(rawxpcall(...)) end
__run = function(f)
    local ok, v = rawxpcall(f, on_error)
    if ok then return v end
    error(v, 0)
end
__run_function = function(f, keys, args)
    local ok, v = rawxpcall(function() return f(keys, args) end, on_error)
    if ok then return v end
    error(v, 0)
end
-- A function library's globals: `redis` is the load-time API while the
-- library loads (the caller then removes it, so its functions find the
-- whole library); every other name is read from the shared globals, and
-- none can be set, as in Redis.
local G = _G
__library_env = function(register)
    local api = {register_function = register, log = redis.log}
    for _, k in ipairs({"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"}) do
        api[k] = redis[k]
    end
    setmetatable(api, {__index = function(_, k)
        error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end})
    return setmetatable({redis = api}, {
        __index = function(_, k) return G[k] end,
        __newindex = function() error("Attempt to modify a readonly table", 2) end,
    })
end
__stopped, __errtext, __on_error = nil, nil, nil
setmetatable(_G, {
    __newindex = function(_, k)
        error("Script attempted to create global variable '" .. tostring(k) .. "'", 2)
    end,
    __index = function(_, k)
        error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end,
})
"#;

impl Vm {
    fn new(memory: usize) -> mlua::Result<Vm> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::default(),
        )?;
        lua.set_memory_limit(memory)?;
        let g = lua.globals();
        for name in [
            "dofile",
            "loadfile",
            "load",
            "loadstring",
            "print",
            "getfenv",
            "setfenv",
            "newproxy",
            "coroutine",
            "module",
            "require",
        ] {
            g.raw_set(name, Value::Nil)?;
        }
        g.raw_set("redis", redis_library(&lua)?)?;
        super::scripting_libs::install(&lua, memory)?;
        super::scripting_struct::install(&lua)?;
        g.raw_set("KEYS", lua.create_table()?)?;
        g.raw_set("ARGV", lua.create_table()?)?;
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let past = {
            let d = deadline.clone();
            move || d.get().is_some_and(|t| Instant::now() >= t)
        };
        let stopped = past.clone();
        g.raw_set(
            "__stopped",
            lua.create_function(move |_, ()| Ok(stopped()))?,
        )?;
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(10_000),
            move |_, _| {
                if past() {
                    Err(LuaError::runtime("script stopped"))
                } else {
                    Ok(VmState::Continue)
                }
            },
        )?;
        // What `pcall` returns for an error raised in Rust (a command's, a
        // library's): its text, as Redis's pcall gives a string.
        g.raw_set(
            "__errtext",
            lua.create_function(|lua, e: Value| {
                Ok(match e {
                    Value::Error(e) => Value::String(lua.create_string(caught_text(&e))?),
                    other => other,
                })
            })?,
        )?;
        // The script's error handler: `error({err = "..."})` becomes the
        // script's own error reply, with the line it was raised on.
        g.raw_set(
            "__on_error",
            lua.create_function(|lua, e: Value| {
                let Value::Table(t) = &e else {
                    return Ok(e);
                };
                let Ok(Value::String(text)) = t.raw_get::<Value>("err") else {
                    return Ok(e);
                };
                let line = (1..64)
                    .map_while(|level| {
                        lua.inspect_stack(level, |d| {
                            let src = d.source().short_src.is_some_and(|s| {
                                s == Chunk::Script.name() || s == Chunk::Function.name()
                            });
                            src.then(|| d.current_line()).flatten()
                        })
                    })
                    .flatten()
                    .next();
                let counted = matches!(t.raw_get::<Value>(COUNTED_FIELD), Ok(Value::Boolean(true)));
                Ok(Value::Error(Box::new(LuaError::external(TableError(
                    text.to_string_lossy(),
                    line,
                    counted,
                )))))
            })?,
        )?;
        lua.load(PRELUDE).set_name("@prelude").exec()?;
        Ok(Vm {
            lua,
            compiled: HashMap::new(),
            libraries: HashMap::new(),
            deadline,
        })
    }

    /// The compiled script `sha` (compiling `body` the first time).
    fn compile(&mut self, sha: &str, body: &[u8]) -> mlua::Result<Function> {
        if let Some(f) = self.compiled.get(sha) {
            return Ok(f.clone());
        }
        if self.compiled.len() >= COMPILED_MAX {
            self.compiled.clear();
        }
        let f = self
            .lua
            .load(body)
            .set_name(format!("@{}", Chunk::Script.name()))
            .into_function()
            .map_err(|e| LuaError::external(Compile(e.to_string())))?;
        self.compiled.insert(sha.to_string(), f.clone());
        Ok(f)
    }

    /// Function `name` of library `id`, loading the library's `code` on
    /// this state first if it has not been (each worker's state loads a
    /// library on its first call there). Before loading one, the libraries
    /// for which `live` is false (deleted, replaced) are dropped.
    pub(super) fn library_function(
        &mut self,
        id: u64,
        code: &[u8],
        name: &str,
        live: impl Fn(u64) -> bool,
    ) -> mlua::Result<Option<Function>> {
        if !self.libraries.contains_key(&id) {
            self.libraries.retain(|&id, _| live(id));
            let registered = self.load_library(code)?;
            let functions = registered
                .into_iter()
                .map(|r| (r.name, r.callback))
                .collect();
            self.libraries.insert(id, functions);
        }
        Ok(self.libraries.get(&id).and_then(|l| l.get(name)).cloned())
    }

    /// Runs a library's code (its `#!lua` line blanked) with the load-time
    /// `redis` API and returns what it registered, in order. Nothing else
    /// of the API is there while it loads, and it can set no global.
    pub(super) fn load_library(&self, code: &[u8]) -> mlua::Result<Vec<Registered>> {
        let lua = &self.lua;
        let chunk = lua
            .load(code)
            .set_name(format!("@{}", Chunk::Function.name()))
            .into_function()
            .map_err(|e| {
                let text = match &e {
                    LuaError::SyntaxError { message, .. } => message.clone(),
                    e => reply_error_text(e),
                };
                LuaError::external(Compile(format!(
                    "ERR Error compiling function: {}",
                    text.replace(['\r', '\n'], " ")
                )))
            })?;
        let registered = RefCell::new(Vec::<Registered>::new());
        lua.scope(|scope| {
            let register = scope.create_function(|_, argv: MultiValue| {
                let r = Registered::from_args(argv)?;
                let mut all = registered.borrow_mut();
                if all.iter().any(|x| x.name == r.name) {
                    return Err(reply_error("ERR Function already exists in the library"));
                }
                all.push(r);
                Ok(())
            })?;
            let env: Table = lua
                .globals()
                .raw_get::<Function>("__library_env")?
                .call(register)?;
            chunk.set_environment(env.clone())?;
            chunk.call::<()>(())?;
            // From now on `redis` is the shared runtime API.
            env.raw_remove("redis")?;
            Ok(())
        })?;
        Ok(registered.into_inner())
    }

    /// Runs `f` with `redis.call` / `redis.pcall` bound to `ctx`, and
    /// writes its result as the reply: a script with KEYS and ARGV set, a
    /// function called with them as its two arguments.
    pub(super) fn run(
        &self,
        ctx: &mut Ctx<'_>,
        f: &Function,
        keys: &[&[u8]],
        args: &[&[u8]],
        read_only: bool,
        chunk: Chunk,
    ) -> mlua::Result<()> {
        let lua = &self.lua;
        let g = lua.globals();
        let strings = |l: &[&[u8]]| -> mlua::Result<Table> {
            lua.create_sequence_from(
                l.iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )
        };
        let (keys, args) = (strings(keys)?, strings(args)?);
        if chunk == Chunk::Script {
            g.raw_set("KEYS", keys.clone())?;
            g.raw_set("ARGV", args.clone())?;
        }
        let redis: Table = g.raw_get("redis")?;
        // The script's commands see RESP2 and never wait; a SELECT in it
        // lasts until it ends (as in Redis 7).
        let (version, exec, db) = (ctx.conn.version, ctx.conn.exec, ctx.conn.info.db);
        ctx.conn.version = Version::Resp2;
        ctx.conn.exec = true;
        ctx.conn.script = true;
        let cell = RefCell::new(&mut *ctx);
        let result = lua.scope(|scope| {
            let call = scope.create_function(|lua, argv: MultiValue| {
                let reply = command(&mut cell.borrow_mut(), &argv, read_only)?;
                match reply_to_lua(lua, &reply)? {
                    Reply::Error(msg) => Err(LuaError::external(ReplyError(msg, true))),
                    Reply::Value(v) => Ok(v),
                }
            })?;
            let pcall = scope.create_function(|lua, argv: MultiValue| {
                let reply = match command(&mut cell.borrow_mut(), &argv, read_only) {
                    Ok(r) => r,
                    Err(e) => return error_table(lua, &reply_error_text(&e), false),
                };
                match reply_to_lua(lua, &reply)? {
                    Reply::Error(msg) => error_table(lua, &msg, true),
                    Reply::Value(v) => Ok(v),
                }
            })?;
            redis.raw_set("call", call)?;
            redis.raw_set("pcall", pcall)?;
            let r = match chunk {
                Chunk::Script => lua.globals().raw_get::<Function>("__run")?.call::<Value>(f),
                Chunk::Function => lua
                    .globals()
                    .raw_get::<Function>("__run_function")?
                    .call::<Value>((f, keys, args)),
            };
            redis.raw_set("call", Value::Nil)?;
            redis.raw_set("pcall", Value::Nil)?;
            r
        });
        ctx.conn.version = version;
        ctx.conn.exec = exec;
        ctx.conn.script = false;
        ctx.conn.info.db = db;
        let value = result?;
        write_value(ctx, &value, 0);
        Ok(())
    }
}

/// The `redis` table, without `call` and `pcall` (bound per run).
fn redis_library(lua: &Lua) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, msg: mlua::String| {
            error_table(lua, &error_reply_text(&msg.to_string_lossy()), false)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, msg: mlua::String| {
            let t = lua.create_table()?;
            t.raw_set("ok", msg)?;
            Ok(Value::Table(t))
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, s: mlua::String| Ok(sha1_hex(&s.as_bytes())))?,
    )?;
    redis.raw_set("log", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    redis.raw_set(
        "setresp",
        lua.create_function(|_, v: i64| match v {
            2 => Ok(()),
            _ => Err(LuaError::runtime("granola-kv scripts speak RESP2 only")),
        })?,
    )?;
    let yes = lua.create_function(|_, _: MultiValue| Ok(true))?;
    redis.raw_set("set_repl", yes.clone())?;
    redis.raw_set("replicate_commands", yes)?;
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, v)?;
    }
    Ok(redis)
}

/// `{err = msg}`; marked, as Redis marks it, when it is a command's error
/// reply, which INFO errorstats counted when the command answered (so a
/// script returning it does not count it twice).
fn error_table(lua: &Lua, msg: &str, counted: bool) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", msg)?;
    if counted {
        t.raw_set(COUNTED_FIELD, true)?;
    }
    Ok(Value::Table(t))
}

/// The text of `redis.error_reply(msg)`, as Redis 7 makes it: the code is
/// the first word (after a leading `-`), or `ERR` if `msg` is one word.
fn error_reply_text(msg: &str) -> String {
    let text = msg.strip_prefix('-').unwrap_or(msg);
    if text.contains(' ') {
        text.to_string()
    } else {
        format!("ERR {text}")
    }
}

/// The field Redis 7 sets in the error tables of `redis.call`/`pcall`.
const COUNTED_FIELD: &str = "ignore_error_stats_update";

/// True if the script failed with an error INFO errorstats already
/// counted: a command's, from `redis.call` or raised from `redis.pcall`'s
/// table.
fn counted_error(e: &LuaError) -> bool {
    match cause(e) {
        LuaError::ExternalError(x) => {
            x.downcast_ref::<ReplyError>().is_some_and(|r| r.1)
                || x.downcast_ref::<TableError>().is_some_and(|t| t.2)
        }
        _ => false,
    }
}

/// A function a library registered with `redis.register_function`.
pub(super) struct Registered {
    pub name: String,
    pub callback: Function,
    pub description: Option<String>,
    pub flags: Vec<&'static str>,
}

/// The flags `redis.register_function` accepts.
const FUNCTION_FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

impl Registered {
    /// `register_function(name, callback)` or `register_function{
    /// function_name=..., callback=..., flags={...}, description=...}`.
    fn from_args(argv: MultiValue) -> mlua::Result<Registered> {
        let mut it = argv.into_iter();
        let (name, callback, description, flags) = match (it.next(), it.next(), it.next()) {
            (Some(Value::Table(t)), None, None) => {
                let (mut name, mut callback, mut description) = (None, None, None);
                let mut flags = Vec::new();
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    // A key that is not a string is no argument Redis knows.
                    let key = match &k {
                        Value::String(k) => k.as_bytes().to_vec(),
                        _ => Vec::new(),
                    };
                    match &key[..] {
                        b"function_name" => name = Some(v),
                        b"callback" => callback = Some(v),
                        b"description" => description = Some(v),
                        b"flags" => flags = function_flags(v)?,
                        _ => {
                            return Err(reply_error(
                                "ERR unknown argument given to redis.register_function",
                            ))
                        }
                    }
                }
                (name, callback, description, flags)
            }
            (Some(_), None, None) => {
                return Err(reply_error(
                    "ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).",
                ))
            }
            (Some(_), Some(callback), None) if !matches!(callback, Value::Function(_)) => {
                return Err(reply_error(
                    "ERR second argument to redis.register_function must be a function",
                ))
            }
            (Some(name), Some(callback), None) => (Some(name), Some(callback), None, Vec::new()),
            _ => {
                return Err(reply_error(
                    "ERR wrong number of arguments to redis.register_function",
                ))
            }
        };
        // Numbers stand for their text, as Lua's `tostring` gives it.
        let text = |v: &Value| match v {
            Value::String(s) => Some(s.to_string_lossy()),
            Value::Integer(i) => Some(i.to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let name =
            match name.as_ref().map(&text) {
                Some(Some(s)) => s,
                Some(None) => return Err(reply_error(
                    "ERR function_name argument given to redis.register_function must be a string",
                )),
                None => {
                    return Err(reply_error(
                        "ERR redis.register_function must get a function name argument",
                    ))
                }
            };
        if !valid_name(name.as_bytes()) {
            // Redis 7.0 words a bad function name as a bad library name.
            return Err(reply_error(INVALID_NAME));
        }
        let callback = match callback {
            Some(Value::Function(f)) => f,
            Some(_) => {
                return Err(reply_error(
                    "ERR callback argument given to redis.register_function must be a function",
                ))
            }
            None => {
                return Err(reply_error(
                    "ERR redis.register_function must get a callback argument",
                ))
            }
        };
        let description = match &description {
            None | Some(Value::Nil) => None,
            Some(v) => match text(v) {
                Some(s) => Some(s),
                None => return Err(reply_error(
                    "ERR description argument given to redis.register_function must be a string",
                )),
            },
        };
        Ok(Registered {
            name,
            callback,
            description,
            flags,
        })
    }
}

/// The flags table of a `register_function` call.
fn function_flags(v: Value) -> mlua::Result<Vec<&'static str>> {
    let Value::Table(t) = v else {
        return Err(reply_error(
            "ERR flags argument to redis.register_function must be a table representing function flags",
        ));
    };
    let mut flags = Vec::new();
    for f in t.sequence_values::<Value>() {
        let known = match f? {
            Value::String(f) => FUNCTION_FLAGS
                .iter()
                .find(|k| k.as_bytes() == &f.as_bytes()[..]),
            _ => None,
        };
        match known {
            Some(k) => flags.push(*k),
            None => return Err(reply_error("ERR unknown flag given")),
        }
    }
    Ok(flags)
}

/// Redis's error for a library or function name that is not
/// `[A-Za-z0-9_]+`.
pub(super) const INVALID_NAME: &str = "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long";

/// A library or function name Redis accepts.
pub(super) fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

fn reply_error(msg: &str) -> LuaError {
    LuaError::external(ReplyError(msg.to_string(), false))
}

/// The error reply of a FUNCTION LOAD whose library failed to compile or
/// to load, in Redis 7's words.
pub(super) fn load_error(e: &LuaError) -> String {
    if let LuaError::ExternalError(x) = cause(e) {
        if let Some(Compile(text)) = x.downcast_ref::<Compile>() {
            return text.clone();
        }
    }
    if matches!(cause(e), LuaError::MemoryError(_)) {
        return "ERR script used more memory than allowed".to_string();
    }
    let text = caught_text(e);
    if text.contains("script stopped") {
        return "ERR script stopped: it ran past --script-time-limit".to_string();
    }
    let text = if text.starts_with("ERR ") {
        text
    } else {
        format!("ERR {text}")
    };
    format!("ERR Error registering functions: {text}").replace(['\r', '\n'], " ")
}

/// A compile error of a script.
#[derive(Debug)]
struct Compile(String);

impl std::fmt::Display for Compile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Compile {}

/// An error reply of a command the script called with `redis.call` (true:
/// counted in INFO errorstats then), or an error raised in Rust: the
/// script fails with it.
#[derive(Debug)]
struct ReplyError(String, bool);

impl std::fmt::Display for ReplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ReplyError {}

/// A script's `error({err = "..."})`: the text is its error reply; the
/// line it was raised on, if found; whether INFO errorstats counted it
/// (a `redis.pcall` table raised again).
#[derive(Debug)]
struct TableError(String, Option<usize>, bool);

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TableError {}

/// The innermost error of a chain of callback errors.
fn cause(e: &LuaError) -> &LuaError {
    match e {
        LuaError::CallbackError { cause, .. } => self::cause(cause),
        e => e,
    }
}

/// An error's message, without the Lua stack traceback mlua appends.
fn reply_error_text(e: &LuaError) -> String {
    let text = match cause(e) {
        LuaError::ExternalError(x) => x.to_string(),
        LuaError::RuntimeError(m) => m.clone(),
        e => e.to_string(),
    };
    match text.find("\nstack traceback:") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn compile_error(e: &LuaError) -> String {
    let text = reply_error_text(e).replace(['\r', '\n'], " ");
    format!("ERR Error compiling script (new function): {text}")
}

/// The text `pcall` hands a script for an error raised in Rust.
fn caught_text(e: &LuaError) -> String {
    if let LuaError::ExternalError(x) = cause(e) {
        if let Some(ReplyError(msg, _)) = x.downcast_ref::<ReplyError>() {
            return msg.clone();
        }
        if let Some(TableError(msg, _, _)) = x.downcast_ref::<TableError>() {
            return msg.clone();
        }
    }
    reply_error_text(e)
}

/// The script line an error was raised on: from its text
/// (`user_script:N: ...`), else from the traceback of the Rust call that
/// raised it.
fn script_line(e: &LuaError, text: &str, chunk: Chunk) -> Option<u32> {
    let prefix = format!("{}:", chunk.name());
    let line_in = |s: &str| -> Option<u32> {
        let at = s.find(&prefix)? + prefix.len();
        let digits: String = s[at..].chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    if text.starts_with(&prefix) {
        return line_in(text);
    }
    let mut e = e;
    loop {
        match e {
            LuaError::CallbackError { traceback, cause } => {
                if let Some(n) = line_in(traceback) {
                    return Some(n);
                }
                e = cause;
            }
            _ => return None,
        }
    }
}

/// The error reply of a script that failed, in Redis 7's form: `<text>
/// script: <sha>, on @user_script:<line>.`, the text located
/// (`user_script:<line>: `) unless a command or the script's own
/// `error({err = ...})` gave it.
///
/// A function's error names the function and `@user_function` instead.
pub(super) fn run_error(e: &LuaError, sha: &str, chunk: Chunk) -> String {
    let name = chunk.name();
    let inner = cause(e);
    let (text, located) = match inner {
        LuaError::ExternalError(x) if x.downcast_ref::<Compile>().is_some() => {
            return compile_error(e);
        }
        LuaError::ExternalError(x) if x.downcast_ref::<ReplyError>().is_some() => {
            (caught_text(e), true)
        }
        LuaError::ExternalError(x) if x.downcast_ref::<TableError>().is_some() => {
            let line = x.downcast_ref::<TableError>().and_then(|t| t.1);
            let mut out = format!("{} script: {sha}", caught_text(e));
            if let Some(n) = line {
                out.push_str(&format!(", on @{name}:{n}."));
            }
            return out.replace(['\r', '\n'], " ");
        }
        LuaError::MemoryError(_) => {
            return "ERR script used more memory than allowed".to_string();
        }
        _ => {
            let m = reply_error_text(e);
            if m.contains("script stopped") {
                return "ERR script stopped: it ran past --script-time-limit".to_string();
            }
            if m == "not enough memory" {
                return "ERR script used more memory than allowed".to_string();
            }
            (m, false)
        }
    };
    let line = script_line(e, &text, chunk);
    let mut out = String::new();
    if !located {
        out.push_str("ERR ");
        if let (Some(n), false) = (line, text.starts_with(&format!("{name}:"))) {
            out.push_str(&format!("{name}:{n}: "));
        }
    }
    out.push_str(&text);
    out.push_str(" script: ");
    out.push_str(sha);
    if let Some(n) = line {
        out.push_str(&format!(", on @{name}:{n}."));
    }
    out.replace(['\r', '\n'], " ")
}

/// Runs one `redis.call`: the command's RESP2 reply.
fn command(ctx: &mut Ctx<'_>, argv: &MultiValue, read_only: bool) -> mlua::Result<Vec<u8>> {
    if argv.is_empty() {
        return Err(LuaError::runtime(
            "Please specify at least one argument for this redis lib call",
        ));
    }
    let mut req = format!("*{}\r\n", argv.len()).into_bytes();
    for v in argv {
        let bytes: Vec<u8> = match v {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Integer(i) => i.to_string().into_bytes(),
            Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => {
                (*n as i64).to_string().into_bytes()
            }
            Value::Number(n) => n.to_string().into_bytes(),
            _ => {
                return Err(LuaError::runtime(
                    "Lua redis lib command arguments must be strings or integers",
                ))
            }
        };
        req.extend_from_slice(format!("${}\r\n", bytes.len()).as_bytes());
        req.extend_from_slice(&bytes);
        req.extend_from_slice(b"\r\n");
    }
    let limits = Limits {
        max_bulk: usize::MAX,
        max_args: usize::MAX,
        ..Limits::default()
    };
    let Parsed::Done { cmd, .. } = resp::parse(&req, &limits) else {
        return Err(LuaError::runtime("command could not be encoded"));
    };
    let refuse = |msg: &str| {
        let reply = format!("-{msg}\r\n").into_bytes();
        count_error(ctx, &reply);
        Ok(reply)
    };
    // A known command refused counts as rejected (INFO commandstats), as
    // in Redis.
    let spec = match table::resolve(&cmd) {
        Ok(spec) => spec,
        Err(table::Miss::Arity(spec)) => {
            ctx.shared.commandstats.reject(spec);
            return refuse("ERR Wrong number of args calling Redis command from script");
        }
        Err(_) => return refuse("ERR Unknown Redis command called from script"),
    };
    if super::key_specs::noscript(spec) || NOT_IN_SCRIPTS.contains(&spec.container()) {
        ctx.shared.commandstats.reject(spec);
        return refuse("ERR This Redis command is not allowed from script");
    }
    if read_only && spec.flags.contains(&"write") {
        ctx.shared.commandstats.reject(spec);
        return refuse("ERR Write commands are not allowed from read-only scripts.");
    }
    let mut out: Vec<u8> = Vec::new();
    let _ = dispatch_into(ctx.shared, ctx.conn, &mut out, &cmd);
    count_error(ctx, &out);
    Ok(out)
}

/// Counts a command's error reply to a script in INFO errorstats, as
/// Redis counts it when the command answers, caught or not.
fn count_error(ctx: &Ctx<'_>, reply: &[u8]) {
    if let Some(code) = super::errorstats::ErrorCode::of(reply) {
        ctx.shared.errors.add(code);
    }
}

/// Commands a script may not run beyond those flagged `noscript`: the
/// ones that change the connection's mode.
const NOT_IN_SCRIPTS: &[&str] = &[
    "multi",
    "exec",
    "discard",
    "watch",
    "unwatch",
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "script",
    "fcall",
    "fcall_ro",
    "function",
    "hello",
    "auth",
    "quit",
    "reset",
    "client",
];

/// A command's reply as the script sees it.
enum Reply {
    Value(Value),
    Error(String),
}

/// Converts a RESP2 reply to Lua values, as Redis does.
fn reply_to_lua(lua: &Lua, bytes: &[u8]) -> mlua::Result<Reply> {
    let mut at = 0;
    if bytes.first() == Some(&b'-') {
        let end = line_end(bytes, 0)?;
        return Ok(Reply::Error(
            String::from_utf8_lossy(&bytes[1..end]).into_owned(),
        ));
    }
    Ok(Reply::Value(value_at(lua, bytes, &mut at, 0)?))
}

fn line_end(bytes: &[u8], from: usize) -> mlua::Result<usize> {
    bytes
        .get(from..)
        .and_then(|rest| memchr::memmem::find(rest, b"\r\n"))
        .map(|i| from + i)
        .ok_or_else(|| LuaError::runtime("reply could not be read"))
}

fn value_at(lua: &Lua, bytes: &[u8], at: &mut usize, depth: usize) -> mlua::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(LuaError::runtime("reply nested too deeply"));
    }
    let end = line_end(bytes, *at)?;
    let kind = bytes[*at];
    let line = &bytes[*at + 1..end];
    *at = end + 2;
    let number = || -> mlua::Result<i64> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| LuaError::runtime("reply could not be read"))
    };
    Ok(match kind {
        b'+' => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(line)?)?;
            Value::Table(t)
        }
        b'-' => error_table(lua, &String::from_utf8_lossy(line), false)?,
        b':' => Value::Number(number()? as f64),
        b'$' => match number()? {
            n if n < 0 => Value::Boolean(false),
            n => {
                let n = n as usize;
                let s = bytes
                    .get(*at..*at + n)
                    .ok_or_else(|| LuaError::runtime("reply could not be read"))?;
                *at += n + 2;
                Value::String(lua.create_string(s)?)
            }
        },
        b'*' => match number()? {
            n if n < 0 => Value::Boolean(false),
            n => {
                let t = lua.create_table()?;
                for i in 1..=n {
                    t.raw_set(i, value_at(lua, bytes, at, depth + 1)?)?;
                }
                Value::Table(t)
            }
        },
        _ => return Err(LuaError::runtime("reply could not be read")),
    })
}

/// Writes the script's result as the reply, converted as Redis does.
fn write_value(ctx: &mut Ctx<'_>, v: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        ctx.error(b"ERR reached lua stack limit");
        return;
    }
    match v {
        Value::Nil | Value::Boolean(false) => ctx.null(),
        Value::Boolean(true) => ctx.int(1),
        Value::Integer(i) => ctx.int(*i),
        Value::Number(n) => ctx.int(*n as i64),
        Value::String(s) => ctx.bytes(&s.as_bytes()),
        Value::Table(t) => {
            if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
                let text = e.to_string_lossy().replace(['\r', '\n'], " ");
                let counted = matches!(t.raw_get::<Value>(COUNTED_FIELD), Ok(Value::Boolean(true)));
                if depth == 0 {
                    // The reply's own error is counted as it goes out,
                    // unless a command's error counted already.
                    ctx.conn.error_counted = counted;
                } else if !counted {
                    // One inside an array: Redis counts it too.
                    count_error(ctx, format!("-{text}").as_bytes());
                }
                ctx.error(text.as_bytes());
            } else if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
                let text = s.to_string_lossy().replace(['\r', '\n'], " ");
                ctx.simple(text.as_bytes());
            } else {
                let items: Vec<Value> = (1..)
                    .map_while(|i| match t.raw_get::<Value>(i) {
                        Ok(Value::Nil) | Err(_) => None,
                        Ok(v) => Some(v),
                    })
                    .collect();
                ctx.array(items.len());
                for item in &items {
                    write_value(ctx, item, depth + 1);
                }
            }
        }
        _ => ctx.null(),
    }
}
