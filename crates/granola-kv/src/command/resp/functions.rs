//! Redis 7 functions: FUNCTION (LOAD, DELETE, FLUSH, LIST, STATS, DUMP,
//! RESTORE, KILL, HELP), FCALL and FCALL_RO. A library is Lua code whose first line is
//! `#!lua name=<library>` and which registers its functions with
//! `redis.register_function`; FCALL calls one by name with its keys and
//! arguments as the callback's two parameters. Client libraries load
//! them once (redis-py's `function_load`) instead of shipping a script's
//! text or SHA1 with every call.
//!
//! The libraries live here, shared by every connection; each worker's Lua
//! state ([`super::scripting`]) loads a library the first time one of its
//! functions is called there, and runs it as it runs scripts: alone, with
//! the same time and memory limits. While a library loads, its `redis`
//! holds only `register_function`, `log` and the log levels, and it can
//! set no global (as in Redis).
//!
//! FUNCTION DUMP and RESTORE move libraries in Redis's payload format,
//! both ways between granola-kv and Redis 7.

use super::scripting::{self, Chunk, INVALID_NAME};
use super::{glob, Ctx};
use crate::command::Step;
use crate::protocol::rdb::{self, RdbError};
use crate::protocol::resp::Command;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Library code held at most, all libraries together (hostile LOADs
/// cannot grow it past this).
pub const LIBRARY_BYTES: usize = 16 << 20;

/// The loaded libraries, shared by every connection.
#[derive(Default)]
pub struct Functions {
    inner: Mutex<Libraries>,
}

#[derive(Default)]
struct Libraries {
    /// By library name (listed in name order, as Redis does not promise
    /// an order).
    by_name: BTreeMap<String, Arc<Library>>,
    /// Function name to its library.
    by_function: HashMap<String, Arc<Library>>,
    /// Bytes of code of every library.
    bytes: usize,
    /// The id the next loaded library gets.
    next_id: u64,
}

/// One library as FUNCTION LIST shows it.
struct Library {
    /// Unique per load: a worker's Lua state keys the compiled library by
    /// it, so a library loaded again (REPLACE) is compiled afresh.
    id: u64,
    name: String,
    code: Arc<[u8]>,
    functions: Vec<FunctionInfo>,
}

/// A function's name, description and flags.
struct FunctionInfo {
    name: String,
    description: Option<String>,
    flags: Vec<&'static str>,
}

impl Functions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Libraries> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The library holding function `name`.
    fn library_of(&self, name: &str) -> Option<Arc<Library>> {
        self.lock().by_function.get(name).cloned()
    }

    /// True if a library with this id is loaded.
    fn live(&self, id: u64) -> bool {
        self.lock().by_name.values().any(|l| l.id == id)
    }
}

/// The library name of `code`'s first line, `#!lua name=<library>`, or
/// Redis's error.
fn library_name(code: &[u8]) -> Result<String, String> {
    let line = code.split(|&c| c == b'\n').next().unwrap_or_default();
    let Some(meta) = line.strip_prefix(b"#!") else {
        return Err("ERR Missing library metadata".into());
    };
    let meta = String::from_utf8_lossy(meta);
    let mut parts = meta.trim_end_matches('\r').split(' ');
    let engine = parts.next().unwrap_or_default();
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    let mut name = None;
    for part in parts.filter(|p| !p.is_empty()) {
        match part.strip_prefix("name=") {
            Some(n) => name = Some(n.to_string()),
            None => return Err(format!("ERR Invalid metadata value given: {part}")),
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if !scripting::valid_name(name.as_bytes()) {
        return Err(INVALID_NAME.into());
    }
    Ok(name)
}

/// The code Lua runs: from the end of the `#!` line on, so the first
/// line is empty and line numbers in errors count it as Redis's do.
fn lua_code(code: &[u8]) -> &[u8] {
    let end = code.iter().position(|&c| c == b'\n').unwrap_or(code.len());
    &code[end..]
}

/// A library compiled and loaded once, not yet installed.
struct Compiled {
    name: String,
    code: Arc<[u8]>,
    functions: Vec<FunctionInfo>,
}

/// Runs each of `codes` once on this worker's Lua state to learn what it
/// registers (each worker loads it again on its first call there), or
/// Redis's error. All of them run under one time limit, as one script
/// does: a payload of many libraries cannot hold the worker for longer.
fn compile(ctx: &Ctx<'_>, codes: &[&[u8]]) -> Result<Vec<Compiled>, String> {
    scripting::with_vm(&ctx.shared.config, |vm| {
        Ok(codes.iter().map(|c| compile_on(vm, c)).collect())
    })
    .map_err(|e| scripting::load_error(&e))?
}

fn compile_on(vm: &scripting::Vm, code: &[u8]) -> Result<Compiled, String> {
    let name = library_name(code)?;
    let lua = lua_code(code);
    let registered = vm
        .load_library(lua)
        .map_err(|e| scripting::load_error(&e))?;
    if registered.is_empty() {
        return Err("ERR No functions registered".into());
    }
    Ok(Compiled {
        name,
        code: Arc::from(code),
        functions: registered
            .into_iter()
            .map(|r| FunctionInfo {
                name: r.name,
                description: r.description,
                flags: r.flags,
            })
            .collect(),
    })
}

/// Installs `new` all or nothing, after deleting every installed library
/// if `flush` (only if `new` installs). A library of the same name as an
/// installed one replaces it if `replace`, else fails with `exists`'s
/// text; a function name another library (installed and staying, or in
/// `new`) already has fails.
fn install(
    functions: &Functions,
    new: Vec<Compiled>,
    replace: bool,
    flush: bool,
    exists: impl Fn(&str) -> String,
) -> Result<(), String> {
    let mut libs = functions.lock();
    if !flush {
        return install_into(&mut libs, new, replace, exists);
    }
    // Ids stay unique: workers key their compiled libraries by them.
    let empty = Libraries {
        next_id: libs.next_id,
        ..Libraries::default()
    };
    let old = std::mem::replace(&mut *libs, empty);
    let outcome = install_into(&mut libs, new, replace, exists);
    if outcome.is_err() {
        // Nothing was installed: the checks come first.
        *libs = old;
    }
    outcome
}

fn install_into(
    libs: &mut Libraries,
    new: Vec<Compiled>,
    replace: bool,
    exists: impl Fn(&str) -> String,
) -> Result<(), String> {
    let mut taken: HashMap<&str, &str> = HashMap::new();
    let mut bytes = libs.bytes;
    for (i, lib) in new.iter().enumerate() {
        if new[..i].iter().any(|n| n.name == lib.name) {
            // Twice in one payload: Redis refuses the second as a LOAD
            // would.
            return Err(format!("ERR Library '{}' already exists", lib.name));
        }
        if let Some(old) = libs.by_name.get(&lib.name) {
            if !replace {
                return Err(exists(&lib.name));
            }
            bytes -= old.code.len();
        }
        bytes += lib.code.len();
        for f in &lib.functions {
            let other = libs.by_function.get(&f.name).map(|l| l.name.as_str());
            let clash = other.is_some_and(|o| !new.iter().any(|n| n.name == o))
                || taken.insert(&f.name, &lib.name).is_some();
            if clash {
                return Err(format!("ERR Function {} already exists", f.name));
            }
        }
    }
    if bytes > LIBRARY_BYTES {
        return Err("ERR function libraries are full: FUNCTION DELETE or FLUSH first".into());
    }
    for lib in new {
        if let Some(old) = libs.by_name.get(&lib.name).cloned() {
            remove(libs, &old);
        }
        let id = libs.next_id;
        libs.next_id += 1;
        let library = Arc::new(Library {
            id,
            name: lib.name,
            code: lib.code,
            functions: lib.functions,
        });
        for f in &library.functions {
            libs.by_function.insert(f.name.clone(), library.clone());
        }
        libs.bytes += library.code.len();
        libs.by_name.insert(library.name.clone(), library);
    }
    Ok(())
}

/// `FUNCTION LOAD [REPLACE] code`.
fn load(ctx: &mut Ctx<'_>, cmd: &Command<'_>) {
    let n = cmd.len();
    let mut replace = false;
    for opt in cmd.args().take(n - 1).skip(2) {
        if opt.eq_ignore_ascii_case(b"replace") {
            replace = true;
        } else {
            let opt = String::from_utf8_lossy(opt).into_owned();
            ctx.error(format!("ERR Unknown option given: {opt}").as_bytes());
            return;
        }
    }
    let code = cmd.arg(n - 1).unwrap_or_default();
    let exists = |name: &str| format!("ERR Library '{name}' already exists");
    // Redis reports an existing library before compiling the new one.
    match library_name(code) {
        Ok(name) if !replace && ctx.shared.functions.lock().by_name.contains_key(&name) => {
            ctx.error(exists(&name).as_bytes());
            return;
        }
        Ok(_) => {}
        Err(e) => {
            ctx.error(e.as_bytes());
            return;
        }
    }
    let outcome = compile(ctx, &[code]).and_then(|new| {
        let name = new.first().map(|l| l.name.clone()).unwrap_or_default();
        install(&ctx.shared.functions, new, replace, false, exists).map(|()| name)
    });
    match outcome {
        Ok(name) => ctx.bytes(name.as_bytes()),
        Err(e) => ctx.error(e.as_bytes()),
    }
}

/// `FUNCTION DUMP`: every library's code in Redis's payload format, which
/// FUNCTION RESTORE here or in Redis 7 reads.
fn dump(ctx: &mut Ctx<'_>) {
    let payload = {
        let libs = ctx.shared.functions.lock();
        rdb::encode_functions(libs.by_name.values().map(|l| &l.code[..]))
    };
    ctx.bytes(&payload);
}

/// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`: the libraries of a
/// FUNCTION DUMP (ours or Redis 7's), all or nothing.
fn restore(ctx: &mut Ctx<'_>, cmd: &Command<'_>) {
    let policy = cmd.arg(3).map(<[u8]>::to_ascii_lowercase);
    let (flush, replace) = match policy.as_deref() {
        None | Some(b"append") => (false, false),
        Some(b"replace") => (false, true),
        Some(b"flush") => (true, true),
        Some(_) => {
            ctx.error(
                b"ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            );
            return;
        }
    };
    let payload = cmd.arg(2).unwrap_or_default();
    let codes = match rdb::decode_functions(payload, LIBRARY_BYTES) {
        Ok(codes) => codes,
        Err(RdbError::Footer) => {
            ctx.error(b"ERR DUMP payload version or checksum are wrong");
            return;
        }
        Err(_) => {
            ctx.error(b"ERR given type is not a function");
            return;
        }
    };
    let codes: Vec<&[u8]> = codes.iter().map(Vec::as_slice).collect();
    let outcome = compile(ctx, &codes).and_then(|new| {
        install(&ctx.shared.functions, new, replace, flush, |name| {
            format!("ERR Library {name} already exists")
        })
    });
    match outcome {
        Ok(()) => ctx.ok(),
        Err(e) => ctx.error(e.as_bytes()),
    }
}

fn remove(libs: &mut Libraries, library: &Library) {
    for f in &library.functions {
        libs.by_function.remove(&f.name);
    }
    libs.bytes -= library.code.len();
    libs.by_name.remove(&library.name);
}

/// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`.
fn list(ctx: &mut Ctx<'_>, cmd: &Command<'_>) {
    let (mut pattern, mut with_code) = (None, false);
    let mut args = cmd.args().skip(2);
    while let Some(a) = args.next() {
        if a.eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
        } else if a.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            match args.next() {
                Some(p) => pattern = Some(p),
                None => {
                    ctx.error(b"ERR library name argument was not given");
                    return;
                }
            }
        } else {
            let a = String::from_utf8_lossy(a).into_owned();
            ctx.error(format!("ERR Unknown argument {a}").as_bytes());
            return;
        }
    }
    let libs: Vec<Arc<Library>> = ctx
        .shared
        .functions
        .lock()
        .by_name
        .values()
        .filter(|l| pattern.is_none_or(|p| glob::matches(p, l.name.as_bytes(), false)))
        .cloned()
        .collect();
    ctx.array(libs.len());
    for l in libs {
        ctx.map(if with_code { 4 } else { 3 });
        ctx.bytes(b"library_name");
        ctx.bytes(l.name.as_bytes());
        ctx.bytes(b"engine");
        ctx.bytes(b"LUA");
        ctx.bytes(b"functions");
        ctx.array(l.functions.len());
        for f in &l.functions {
            ctx.map(3);
            ctx.bytes(b"name");
            ctx.bytes(f.name.as_bytes());
            ctx.bytes(b"description");
            match &f.description {
                Some(d) => ctx.bytes(d.as_bytes()),
                None => ctx.null(),
            }
            ctx.bytes(b"flags");
            ctx.set(f.flags.len());
            for flag in &f.flags {
                ctx.simple(flag.as_bytes());
            }
        }
        if with_code {
            ctx.bytes(b"library_code");
            ctx.bytes(&l.code);
        }
    }
}

/// `FUNCTION STATS`: no function is ever running when a client can ask
/// (a function runs alone).
fn stats(ctx: &mut Ctx<'_>) {
    let (libraries, functions) = {
        let libs = ctx.shared.functions.lock();
        (libs.by_name.len(), libs.by_function.len())
    };
    ctx.map(2);
    ctx.bytes(b"running_script");
    ctx.null();
    ctx.bytes(b"engines");
    ctx.map(1);
    ctx.bytes(b"LUA");
    ctx.map(2);
    ctx.bytes(b"libraries_count");
    ctx.int(libraries as i64);
    ctx.bytes(b"functions_count");
    ctx.int(functions as i64);
}

/// `FUNCTION <subcommand> ...`.
pub fn function(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    let sub = cmd.arg(1).unwrap_or_default().to_ascii_lowercase();
    // Redis's arity per subcommand (negative: at least).
    let arity: i64 = match &sub[..] {
        b"load" => -3,
        b"delete" => 3,
        b"flush" => -2,
        b"list" => -2,
        b"stats" | b"kill" | b"help" | b"dump" => 2,
        b"restore" => -3,
        _ => {
            ctx.unknown_subcommand("FUNCTION", cmd.arg(1).unwrap_or_default());
            return Step::Done;
        }
    };
    let n = cmd.len() as i64;
    if (arity >= 0 && n != arity) || (arity < 0 && n < -arity) {
        let sub = String::from_utf8_lossy(&sub).into_owned();
        ctx.error(format!("ERR wrong number of arguments for 'function|{sub}' command").as_bytes());
        return Step::Done;
    }
    match (&sub[..], cmd.len()) {
        (b"load", _) => load(ctx, cmd),
        (b"delete", _) => {
            let name = String::from_utf8_lossy(cmd.arg(2).unwrap_or_default()).into_owned();
            let mut libs = ctx.shared.functions.lock();
            match libs.by_name.get(&name).cloned() {
                Some(l) => {
                    remove(&mut libs, &l);
                    drop(libs);
                    ctx.ok();
                }
                None => {
                    drop(libs);
                    ctx.error(b"ERR Library not found");
                }
            }
        }
        (b"flush", 2) => flush(ctx),
        (b"flush", 3) => {
            let mode = cmd.arg(2).unwrap_or_default();
            if mode.eq_ignore_ascii_case(b"async") || mode.eq_ignore_ascii_case(b"sync") {
                flush(ctx);
            } else {
                ctx.error(b"ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            }
        }
        (b"list", _) => list(ctx, cmd),
        (b"dump", _) => dump(ctx),
        (b"restore", 3 | 4) => restore(ctx, cmd),
        (b"stats", 2) => stats(ctx),
        (b"kill", 2) => ctx.error(b"NOTBUSY No scripts in execution right now."),
        (b"help", 2) => ctx.help(&[
            b"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            b"LOAD [REPLACE] <FUNCTION CODE>",
            b"    Create a new library with the given library name and code.",
            b"DELETE <LIBRARY NAME>",
            b"    Delete the given library.",
            b"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            b"    Return general information on all the libraries:",
            b"    * Library name",
            b"    * The engine used to run the Library",
            b"    * Library description",
            b"    * Functions list",
            b"    * Library code (if WITHCODE is given)",
            b"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            b"STATS",
            b"    Return information about the current function running:",
            b"    * Function name",
            b"    * Command used to run the function",
            b"    * Duration in MS that the function is running",
            b"    If no function is running, return nil",
            b"    In addition, returns a list of available engines.",
            b"KILL",
            b"    Kill the current running function.",
            b"DUMP",
            b"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            b"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            b"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            b"    control how to handle existing libraries (default APPEND):",
            b"    * FLUSH: delete all existing libraries.",
            b"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            b"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            b"      libraries with the new libraries (notice that even on this option there is a chance of failure",
            b"      in case of functions name collision with another library).",
            b"FLUSH [ASYNC|SYNC]",
            b"    Delete all the libraries.",
            b"    When called without the optional mode argument, the behavior is determined by the",
            b"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            b"    * ASYNC: Asynchronously flush the libraries.",
            b"    * SYNC: Synchronously flush the libraries.",
            b"HELP",
            b"    Prints this help.",
        ]),
        _ => ctx.unknown_subcommand("FUNCTION", cmd.arg(1).unwrap_or_default()),
    }
    Step::Done
}

fn flush(ctx: &mut Ctx<'_>) {
    clear(&ctx.shared.functions);
    ctx.ok();
}

/// Deletes every library.
fn clear(functions: &Functions) {
    let mut libs = functions.lock();
    // Ids stay unique: workers key their compiled libraries by them.
    let next_id = libs.next_id;
    *libs = Libraries {
        next_id,
        ..Libraries::default()
    };
}

/// `FCALL function numkeys [key ...] [arg ...]`.
pub fn fcall(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    call(ctx, cmd, false)
}

/// `FCALL_RO`: FCALL of a function flagged `no-writes`.
pub fn fcall_ro(ctx: &mut Ctx<'_>, cmd: &Command<'_>) -> Step {
    call(ctx, cmd, true)
}

fn call(ctx: &mut Ctx<'_>, cmd: &Command<'_>, ro_command: bool) -> Step {
    let Some((keys, args)) = scripting::keys_and_args(ctx, cmd, b"ERR Bad number of keys provided")
    else {
        return Step::Done;
    };
    // Function names are ASCII: a name that is not UTF-8 names none.
    let name = std::str::from_utf8(cmd.arg(1).unwrap_or_default()).unwrap_or_default();
    let Some(library) = ctx.shared.functions.library_of(name) else {
        ctx.error(b"ERR Function not found");
        return Step::Done;
    };
    let no_writes = library
        .functions
        .iter()
        .any(|f| f.name == name && f.flags.contains(&"no-writes"));
    if ro_command && !no_writes {
        ctx.error(b"ERR Can not execute a script with write flag using *_ro command.");
        return Step::Done;
    }
    let shared = ctx.shared;
    scripting::run_alone(ctx, name, Chunk::Function, |ctx, vm| {
        let live = |id| shared.functions.live(id);
        match vm.library_function(library.id, lua_code(&library.code), name, live)? {
            Some(f) => vm.run(ctx, &f, &keys, &args, no_writes, Chunk::Function),
            // The library loaded here registered other functions than
            // where it was first loaded (its code branches on something
            // that differs): as if the function were not there.
            None => Err(mlua::Error::runtime("Function not found")),
        }
    });
    Step::Done
}
