//! The libraries Redis loads into every script beside `redis`: `cjson`,
//! `cmsgpack` and `bit`. Job queues pass their options packed (BullMQ
//! unpacks every job's options with `cmsgpack.unpack` and writes its
//! events with `cjson.encode`), so a script engine without them fails
//! those clients outright.
//!
//! Each answers as the library Redis 7 bundles does, checked against a
//! real redis-server in `tests/redis_differential.rs`:
//! - `cjson.encode` (numbers as `%.14g`, `/` escaped, an empty table as
//!   `{}`, sparse arrays refused, 1000 levels at most), `cjson.decode`
//!   (`null` as `cjson.null`), `cjson.null`;
//! - `cmsgpack.pack` (integral numbers as the smallest integer, other
//!   numbers as a float when a float holds them exactly, 16 levels at
//!   most), `cmsgpack.unpack`, `unpack_one` and `unpack_limit` (like
//!   Redis's, they refuse `bin` and `ext` values);
//! - `bit` (LuaJIT's BitOp: `tobit`, `tohex`, `bnot`, `band`, `bor`,
//!   `bxor`, `lshift`, `rshift`, `arshift`, `rol`, `ror`, `bswap`).
//!
//! `struct` has a file of its own ([`super::scripting_struct`]).
//!
//! Differences: the cjson configuration functions (`encode_max_depth`,
//! ...) are absent. Output larger than the worker's Lua memory limit
//! is refused, so a script cannot grow Rust-side buffers past it.

use mlua::{Error as LuaError, LightUserData, Lua, MultiValue, Table, Value};
use std::io::Write as _;

/// Nesting `cjson.encode` follows before it refuses (cjson's default).
const JSON_MAX_DEPTH: usize = 1000;
/// Nesting `cmsgpack.pack` follows; deeper tables are packed as nil.
const MSGPACK_MAX_NESTING: usize = 16;
/// Nesting `cmsgpack.unpack` reads before it calls the input bad.
const MSGPACK_MAX_DEPTH: usize = 256;
/// cjson refuses an array whose largest index passes this many times its
/// entry count, once that index passes [`SPARSE_SAFE`].
const SPARSE_RATIO: f64 = 2.0;
const SPARSE_SAFE: f64 = 10.0;

/// Puts `cjson`, `cmsgpack` and `bit` into the globals; `max_output` caps
/// what one encode may produce.
pub fn install(lua: &Lua, max_output: usize) -> mlua::Result<()> {
    let g = lua.globals();
    g.raw_set("cjson", cjson(lua, max_output)?)?;
    g.raw_set("cmsgpack", cmsgpack(lua, max_output)?)?;
    g.raw_set("bit", bit(lua)?)?;
    Ok(())
}

pub(super) fn runtime(msg: impl Into<String>) -> LuaError {
    LuaError::runtime(msg.into())
}

/// Lua's name of a value's type, as error texts give it.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::LightUserData(_) | Value::UserData(_) => "userdata",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        // Lua 5.1 coerces numeric strings where a number is expected.
        Value::String(s) => std::str::from_utf8(&s.as_bytes())
            .ok()
            .and_then(|t| t.trim().parse::<f64>().ok()),
        _ => None,
    }
}

/// Argument `i` (1-based) of `name` as a number, or Lua's error text.
pub(super) fn number_arg(args: &MultiValue, i: usize, name: &str) -> mlua::Result<f64> {
    let v = args.get(i - 1);
    v.and_then(as_number).ok_or_else(|| {
        let got = v.map_or("no value", type_name);
        runtime(format!(
            "bad argument #{i} to '{name}' (number expected, got {got})"
        ))
    })
}

pub(super) fn string_arg(args: &MultiValue, i: usize, name: &str) -> mlua::Result<Vec<u8>> {
    match args.get(i - 1) {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(v @ (Value::Integer(_) | Value::Number(_))) => {
            let mut out = Vec::new();
            format_g14(as_number(v).unwrap_or(0.0), &mut out);
            Ok(out)
        }
        v => Err(runtime(format!(
            "bad argument #{i} to '{name}' (string expected, got {})",
            v.map_or("no value", type_name)
        ))),
    }
}

/// C's `%.14g`: how Lua 5.1 and cjson print a number.
fn format_g14(n: f64, out: &mut Vec<u8>) {
    if n.is_nan() {
        out.extend_from_slice(if n.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if n.is_infinite() {
        out.extend_from_slice(if n < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    if n == 0.0 {
        out.extend_from_slice(if n.is_sign_negative() { b"-0" } else { b"0" });
        return;
    }
    // %g takes the exponent of the %e form at the same precision, after
    // rounding.
    let sci = format!("{n:.13e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..14).contains(&exp) {
        out.extend_from_slice(trim_fraction(mantissa).as_bytes());
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else {
        let fixed = format!("{n:.*}", (13 - exp) as usize);
        out.extend_from_slice(trim_fraction(&fixed).as_bytes());
    }
}

/// `1.500` -> `1.5`, `2.000` -> `2`.
fn trim_fraction(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

// ---------------------------------------------------------------- cjson

fn cjson(lua: &Lua, max_output: usize) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "encode",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(runtime("bad argument #1 to 'encode' (expected 1 argument)"));
            }
            let mut out = Vec::new();
            json_encode(&args[0], 0, &mut out, max_output)?;
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(runtime("bad argument #1 to 'decode' (expected 1 argument)"));
            }
            let text = string_arg(&args, 1, "decode")?;
            json_decode(lua, &text)
        })?,
    )?;
    t.raw_set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    Ok(t)
}

/// Room the recursive encoders and decoders keep on the stack before a
/// level runs on a fresh heap segment (deep nesting must not overflow a
/// worker's stack).
const STACK_RED_ZONE: usize = 64 << 10;
const STACK_GROWTH: usize = 1 << 20;

fn json_encode(v: &Value, depth: usize, out: &mut Vec<u8>, max: usize) -> mlua::Result<()> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || {
        json_encode_level(v, depth, out, max)
    })
}

fn json_encode_level(v: &Value, depth: usize, out: &mut Vec<u8>, max: usize) -> mlua::Result<()> {
    if out.len() > max {
        return Err(runtime(
            "Cannot serialise: the output passes the script memory limit",
        ));
    }
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(_) | Value::Number(_) => {
            let n = as_number(v).unwrap_or(0.0);
            if !n.is_finite() {
                return Err(runtime("Cannot serialise number: must not be NaN or Inf"));
            }
            format_g14(n, out);
        }
        Value::String(s) => json_string(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth + 1 > JSON_MAX_DEPTH {
                return Err(runtime(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                )));
            }
            match array_length(t)? {
                Some(n) if n > 0 => {
                    out.push(b'[');
                    for i in 1..=n {
                        if i > 1 {
                            out.push(b',');
                        }
                        json_encode(&t.raw_get::<Value>(i)?, depth + 1, out, max)?;
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut first = true;
                    for pair in t.pairs::<Value, Value>() {
                        let (k, item) = pair?;
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        match &k {
                            Value::String(s) => json_string(&s.as_bytes(), out),
                            Value::Integer(_) | Value::Number(_) => {
                                out.push(b'"');
                                format_g14(as_number(&k).unwrap_or(0.0), out);
                                out.push(b'"');
                            }
                            other => {
                                return Err(runtime(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    type_name(other)
                                )))
                            }
                        }
                        out.push(b':');
                        json_encode(&item, depth + 1, out, max)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return Err(runtime(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            )))
        }
    }
    Ok(())
}

/// cjson's array test: every key a positive integer. `Some(largest
/// index)` for an array (0 for an empty table), `None` for an object; an
/// excessively sparse array is an error.
fn array_length(t: &Table) -> mlua::Result<Option<usize>> {
    let (mut max, mut items) = (0f64, 0f64);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        match k {
            Value::Integer(i) if i >= 1 => max = max.max(i as f64),
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => max = max.max(n),
            _ => return Ok(None),
        }
        items += 1.0;
    }
    if max > items * SPARSE_RATIO && max > SPARSE_SAFE {
        return Err(runtime("Cannot serialise table: excessively sparse array"));
    }
    Ok(Some(max as usize))
}

fn json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                let _ = write!(out, "\\u{b:04x}");
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// cjson's decoder, byte for byte: strings may hold any bytes (cjson
/// passes them through; a UTF-8 parser would refuse them), numbers are
/// read as C's `strtod` reads them (so `+1`, `01`, `0x10`, `inf` and `nan`
/// pass, as in cjson's default), and errors read `Expected <what> but
/// found <token> at character <n>`.
struct JsonParser<'a> {
    lua: &'a Lua,
    buf: &'a [u8],
    at: usize,
    depth: usize,
}

/// A token: its kind and where it starts (errors count from 1).
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Number(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    /// cjson's T_ERROR, with its text.
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(text) => text,
        }
    }
}

/// The deepest nesting `cjson.decode` reads (cjson's default).
const JSON_MAX_DECODE_DEPTH: usize = 1000;

fn json_decode(lua: &Lua, text: &[u8]) -> mlua::Result<Value> {
    // A C string to cjson: a NUL ends it.
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    let mut p = JsonParser {
        lua,
        buf: &text[..end],
        at: 0,
        depth: 0,
    };
    let (first, at) = p.next_token();
    let v = p.value(first, at)?;
    match p.next_token() {
        (Token::End, _) => Ok(v),
        (t, at) => Err(parse_error("the end", &t, at)),
    }
}

fn parse_error(expected: &str, found: &Token, at: usize) -> LuaError {
    runtime(format!(
        "Expected {expected} but found {} at character {}",
        found.name(),
        at + 1
    ))
}

impl JsonParser<'_> {
    fn peek(&self, i: usize) -> u8 {
        self.buf.get(self.at + i).copied().unwrap_or(0)
    }

    /// The next token and where it starts (for errors in strings, where
    /// the error is).
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.peek(0), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let at = self.at;
        let single = match self.peek(0) {
            0 => return (Token::End, at),
            b'{' => Some(Token::ObjBegin),
            b'}' => Some(Token::ObjEnd),
            b'[' => Some(Token::ArrBegin),
            b']' => Some(Token::ArrEnd),
            b':' => Some(Token::Colon),
            b',' => Some(Token::Comma),
            _ => None,
        };
        if let Some(t) = single {
            self.at += 1;
            return (t, at);
        }
        let rest = &self.buf[at..];
        match rest[0] {
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => (self.number(), at),
            _ if rest.starts_with(b"true") => {
                self.at += 4;
                (Token::Bool(true), at)
            }
            _ if rest.starts_with(b"false") => {
                self.at += 5;
                (Token::Bool(false), at)
            }
            _ if rest.starts_with(b"null") => {
                self.at += 4;
                (Token::Null, at)
            }
            _ if invalid_json_number(rest) => (self.number(), at),
            _ => (Token::Error("invalid token"), at),
        }
    }

    fn number(&mut self) -> Token {
        match strtod(&self.buf[self.at..]) {
            Some((n, used)) => {
                self.at += used;
                Token::Number(n)
            }
            None => Token::Error("invalid number"),
        }
    }

    fn string(&mut self) -> (Token, usize) {
        let start = self.at;
        self.at += 1;
        let mut out = Vec::new();
        loop {
            match self.peek(0) {
                b'"' => {
                    self.at += 1;
                    return (Token::Str(out), start);
                }
                0 => return (Token::Error("unexpected end of string"), self.at),
                b'\\' => {
                    let esc = match self.peek(1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            match self.unicode_escape() {
                                Some((c, used)) => {
                                    let mut utf8 = [0; 4];
                                    out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                                    self.at += used;
                                }
                                None => {
                                    return (Token::Error("invalid unicode escape code"), self.at)
                                }
                            }
                            continue;
                        }
                        _ => return (Token::Error("invalid escape code"), self.at),
                    };
                    out.push(esc);
                    self.at += 2;
                }
                b => {
                    out.push(b);
                    self.at += 1;
                }
            }
        }
    }

    /// `\uXXXX`, or a surrogate pair of two: the character and the bytes
    /// the escape takes.
    fn unicode_escape(&self) -> Option<(char, usize)> {
        let hex = |from: usize| -> Option<u32> {
            let digits = self.buf.get(self.at + from..self.at + from + 4)?;
            let text = std::str::from_utf8(digits).ok()?;
            if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            u32::from_str_radix(text, 16).ok()
        };
        let first = hex(2)?;
        match first {
            0xdc00..=0xdfff => None,
            0xd800..=0xdbff => {
                if self.peek(6) != b'\\' || self.peek(7) != b'u' {
                    return None;
                }
                let low = hex(8)?;
                if !(0xdc00..=0xdfff).contains(&low) {
                    return None;
                }
                let c = 0x10000 + ((first - 0xd800) << 10) + (low - 0xdc00);
                Some((char::from_u32(c)?, 12))
            }
            c => Some((char::from_u32(c)?, 6)),
        }
    }

    fn value(&mut self, token: Token, at: usize) -> mlua::Result<Value> {
        Ok(match token {
            Token::Str(s) => Value::String(self.lua.create_string(&s)?),
            Token::Number(n) => Value::Number(n),
            Token::Bool(b) => Value::Boolean(b),
            Token::Null => Value::LightUserData(LightUserData(std::ptr::null_mut())),
            Token::ObjBegin | Token::ArrBegin => {
                self.depth += 1;
                if self.depth > JSON_MAX_DECODE_DEPTH {
                    return Err(runtime(format!(
                        "Found too many nested data structures ({}) at character {}",
                        self.depth,
                        at + 1
                    )));
                }
                let object = matches!(token, Token::ObjBegin);
                let t = stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || {
                    if object {
                        self.object()
                    } else {
                        self.array()
                    }
                })?;
                self.depth -= 1;
                Value::Table(t)
            }
            other => return Err(parse_error("value", &other, at)),
        })
    }

    fn object(&mut self) -> mlua::Result<Table> {
        let t = self.lua.create_table()?;
        let (mut token, mut at) = self.next_token();
        if matches!(token, Token::ObjEnd) {
            return Ok(t);
        }
        loop {
            let Token::Str(key) = token else {
                return Err(parse_error("object key string", &token, at));
            };
            let (colon, colon_at) = self.next_token();
            if !matches!(colon, Token::Colon) {
                return Err(parse_error("colon", &colon, colon_at));
            }
            let (v, v_at) = self.next_token();
            let v = self.value(v, v_at)?;
            t.raw_set(self.lua.create_string(&key)?, v)?;
            let (next, next_at) = self.next_token();
            match next {
                Token::ObjEnd => return Ok(t),
                Token::Comma => {}
                other => return Err(parse_error("comma or object end", &other, next_at)),
            }
            (token, at) = self.next_token();
        }
    }

    fn array(&mut self) -> mlua::Result<Table> {
        let t = self.lua.create_table()?;
        let (mut token, mut at) = self.next_token();
        if matches!(token, Token::ArrEnd) {
            return Ok(t);
        }
        for i in 1.. {
            let v = self.value(token, at)?;
            t.raw_set(i, v)?;
            let (next, next_at) = self.next_token();
            match next {
                Token::ArrEnd => return Ok(t),
                Token::Comma => {}
                other => return Err(parse_error("comma or array end", &other, next_at)),
            }
            (token, at) = self.next_token();
        }
        Ok(t)
    }
}

/// cjson's test for number forms JSON does not allow but its default
/// still reads: a leading `+`, hex, leading zeros, `inf`, `nan`.
fn invalid_json_number(s: &[u8]) -> bool {
    let mut p = s;
    if p.first() == Some(&b'+') {
        return true;
    }
    if p.first() == Some(&b'-') {
        p = &p[1..];
    }
    match p.first() {
        Some(b'0') => matches!(p.get(1), Some(b'x' | b'X' | b'0'..=b'9')),
        Some(c) if *c <= b'9' => false,
        _ => {
            let head = |w: &[u8]| p.len() >= 3 && p[..3].eq_ignore_ascii_case(w);
            head(b"inf") || head(b"nan")
        }
    }
}

/// C's `strtod` on the front of `s`: the number and the bytes it took,
/// `None` if none. Decimal (with fraction and exponent), hex integers,
/// `inf`/`infinity` and `nan`, each with an optional sign.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let mut i = 0;
    let negative = match s.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = |n: f64| if negative { -n } else { n };
    let rest = &s[i..];
    let starts = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
    if starts(b"infinity") {
        return Some((sign(f64::INFINITY), i + 8));
    }
    if starts(b"inf") {
        return Some((sign(f64::INFINITY), i + 3));
    }
    if starts(b"nan") {
        return Some((sign(f64::NAN), i + 3));
    }
    if starts(b"0x") {
        let digits = rest[2..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        if digits > 0 {
            let n = rest[2..2 + digits].iter().fold(0f64, |acc, &b| {
                acc * 16.0 + f64::from((b as char).to_digit(16).unwrap_or(0))
            });
            return Some((sign(n), i + 2 + digits));
        }
        // "0x" alone: strtod reads the 0.
        return Some((sign(0.0), i + 1));
    }
    let digits = |from: usize| s[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let int = digits(i);
    let mut end = i + int;
    let mut frac = 0;
    if s.get(end) == Some(&b'.') {
        frac = digits(end + 1);
        if int + frac > 0 {
            end += 1 + frac;
        }
    }
    if int + frac == 0 {
        return None;
    }
    if matches!(s.get(end), Some(b'e' | b'E')) {
        let mut e = end + 1;
        if matches!(s.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        let exp = digits(e);
        if exp > 0 {
            end = e + exp;
        }
    }
    let text = std::str::from_utf8(&s[..end]).ok()?;
    text.parse::<f64>().ok().map(|n| (n, end))
}

// ------------------------------------------------------------- cmsgpack

fn cmsgpack(lua: &Lua, max_output: usize) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(move |lua, args: MultiValue| {
            if args.is_empty() {
                return Err(runtime(
                    "bad argument #0 to 'pack' (MessagePack pack needs input.)",
                ));
            }
            let mut out = Vec::new();
            for v in args.iter() {
                msgpack_encode(v, 0, &mut out, max_output)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args: MultiValue| {
            let input = string_arg(&args, 1, "unpack")?;
            unpack_full(lua, &input, 0, 0)
        })?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, args: MultiValue| {
            let input = string_arg(&args, 1, "unpack_one")?;
            let offset = optional_integer(&args, 2, "unpack_one")?;
            unpack_full(lua, &input, 1, offset)
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(|lua, args: MultiValue| {
            let input = string_arg(&args, 1, "unpack_limit")?;
            let limit = number_arg(&args, 2, "unpack_limit")? as i64;
            let offset = optional_integer(&args, 3, "unpack_limit")?;
            unpack_full(lua, &input, limit, offset)
        })?,
    )?;
    Ok(t)
}

fn optional_integer(args: &MultiValue, i: usize, name: &str) -> mlua::Result<i64> {
    match args.get(i - 1) {
        None | Some(Value::Nil) => Ok(0),
        Some(_) => Ok(number_arg(args, i, name)? as i64),
    }
}

/// lua-cmsgpack's `IS_INT64_EQUIVALENT`.
fn as_int64(n: f64) -> Option<i64> {
    // -2^63 <= n < 2^63.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (-LIMIT..LIMIT)
        .contains(&n)
        .then_some(n as i64)
        .filter(|i| *i as f64 == n)
}

fn msgpack_encode(v: &Value, level: usize, out: &mut Vec<u8>, max: usize) -> mlua::Result<()> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || {
        msgpack_encode_level(v, level, out, max)
    })
}

fn msgpack_encode_level(
    v: &Value,
    level: usize,
    out: &mut Vec<u8>,
    max: usize,
) -> mlua::Result<()> {
    use rmp::encode;
    if out.len() > max {
        return Err(runtime(
            "MessagePack pack: the output passes the script memory limit",
        ));
    }
    // Writes into a Vec cannot fail.
    match v {
        Value::Boolean(b) => {
            let _ = encode::write_bool(out, *b);
        }
        Value::Integer(_) | Value::Number(_) => {
            let n = as_number(v).unwrap_or(0.0);
            match as_int64(n) {
                Some(i) if i >= 0 => {
                    let _ = encode::write_uint(out, i as u64);
                }
                Some(i) => {
                    let _ = encode::write_sint(out, i);
                }
                None if f64::from(n as f32) == n => {
                    let _ = encode::write_f32(out, n as f32);
                }
                None => {
                    let _ = encode::write_f64(out, n);
                }
            }
        }
        Value::String(s) => {
            let bytes = s.as_bytes();
            let _ = encode::write_str_len(out, bytes.len() as u32);
            out.extend_from_slice(&bytes);
        }
        Value::Table(t) if level < MSGPACK_MAX_NESTING => {
            let (mut max_key, mut count, mut array) = (0f64, 0usize, true);
            for pair in t.pairs::<Value, Value>() {
                let (k, _) = pair?;
                count += 1;
                match k {
                    Value::Integer(i) if i >= 1 => max_key = max_key.max(i as f64),
                    Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => max_key = max_key.max(n),
                    _ => array = false,
                }
            }
            if array && max_key == count as f64 {
                let _ = encode::write_array_len(out, count as u32);
                for i in 1..=count {
                    msgpack_encode(&t.raw_get::<Value>(i)?, level + 1, out, max)?;
                }
            } else {
                let _ = encode::write_map_len(out, count as u32);
                for pair in t.pairs::<Value, Value>() {
                    let (k, item) = pair?;
                    msgpack_encode(&k, level + 1, out, max)?;
                    msgpack_encode(&item, level + 1, out, max)?;
                }
            }
        }
        // nil, functions, userdata and tables nested too deep.
        _ => {
            let _ = encode::write_nil(out);
        }
    }
    Ok(())
}

/// lua-cmsgpack's `mp_unpack_full`: `limit` 0 and `offset` 0 decode
/// everything and return only the values; otherwise at most `limit`
/// values (all when 0) from `offset`, preceded by the next offset (-1
/// once the input is used up).
fn unpack_full(lua: &Lua, input: &[u8], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    if offset < 0 || limit < 0 {
        return Err(runtime(format!(
            "Invalid request to unpack with offset of {offset} and limit of {limit}."
        )));
    }
    if offset as u64 > input.len() as u64 {
        return Err(runtime(format!(
            "Start offset {offset} greater than input length {}.",
            input.len()
        )));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if limit == 0 && decode_all {
        i64::MAX
    } else {
        limit
    };
    let mut cur = Cursor {
        buf: input,
        at: offset as usize,
    };
    let mut values = Vec::new();
    while cur.at < input.len() && (values.len() as i64) < limit {
        values.push(msgpack_decode(lua, &mut cur, 0)?);
    }
    if !decode_all {
        let next = if cur.at == input.len() {
            -1
        } else {
            cur.at as i64
        };
        values.insert(0, Value::Integer(next));
    }
    Ok(MultiValue::from_iter(values))
}

struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

fn missing() -> LuaError {
    runtime("Missing bytes in input.")
}

fn bad_format() -> LuaError {
    runtime("Bad data format in input.")
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> mlua::Result<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or_else(missing)?;
        let bytes = self.buf.get(self.at..end).ok_or_else(missing)?;
        self.at = end;
        Ok(bytes)
    }

    fn be(&mut self, n: usize) -> mlua::Result<u64> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }
}

fn msgpack_decode(lua: &Lua, cur: &mut Cursor<'_>, depth: usize) -> mlua::Result<Value> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || {
        msgpack_decode_level(lua, cur, depth)
    })
}

fn msgpack_decode_level(lua: &Lua, cur: &mut Cursor<'_>, depth: usize) -> mlua::Result<Value> {
    use rmp::Marker as M;
    if depth > MSGPACK_MAX_DEPTH {
        return Err(bad_format());
    }
    let marker = M::from_u8(cur.take(1)?[0]);
    let number = |n: f64| Ok(Value::Number(n));
    match marker {
        M::FixPos(n) => number(f64::from(n)),
        M::FixNeg(n) => number(f64::from(n)),
        M::Null => Ok(Value::Nil),
        M::True => Ok(Value::Boolean(true)),
        M::False => Ok(Value::Boolean(false)),
        M::U8 => number(cur.be(1)? as f64),
        M::U16 => number(cur.be(2)? as f64),
        M::U32 => number(cur.be(4)? as f64),
        // lua-cmsgpack reads a uint64 as an int64.
        M::U64 => number(cur.be(8)? as i64 as f64),
        M::I8 => number(f64::from(cur.be(1)? as u8 as i8)),
        M::I16 => number(f64::from(cur.be(2)? as u16 as i16)),
        M::I32 => number(f64::from(cur.be(4)? as u32 as i32)),
        M::I64 => number(cur.be(8)? as i64 as f64),
        M::F32 => number(f64::from(f32::from_bits(cur.be(4)? as u32))),
        M::F64 => number(f64::from_bits(cur.be(8)?)),
        M::FixStr(n) => string(lua, cur, usize::from(n)),
        M::Str8 => {
            let n = cur.be(1)? as usize;
            string(lua, cur, n)
        }
        M::Str16 => {
            let n = cur.be(2)? as usize;
            string(lua, cur, n)
        }
        M::Str32 => {
            let n = cur.be(4)? as usize;
            string(lua, cur, n)
        }
        M::FixArray(n) => array(lua, cur, usize::from(n), depth),
        M::Array16 => {
            let n = cur.be(2)? as usize;
            array(lua, cur, n, depth)
        }
        M::Array32 => {
            let n = cur.be(4)? as usize;
            array(lua, cur, n, depth)
        }
        M::FixMap(n) => map(lua, cur, usize::from(n), depth),
        M::Map16 => {
            let n = cur.be(2)? as usize;
            map(lua, cur, n, depth)
        }
        M::Map32 => {
            let n = cur.be(4)? as usize;
            map(lua, cur, n, depth)
        }
        // bin and ext, as in the library Redis bundles, and 0xc1.
        _ => Err(bad_format()),
    }
}

fn string(lua: &Lua, cur: &mut Cursor<'_>, n: usize) -> mlua::Result<Value> {
    Ok(Value::String(lua.create_string(cur.take(n)?)?))
}

/// The table grows entry by entry: a stated count costs nothing until
/// the input delivers its entries.
fn array(lua: &Lua, cur: &mut Cursor<'_>, n: usize, depth: usize) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for i in 1..=n {
        t.raw_set(i, msgpack_decode(lua, cur, depth + 1)?)?;
    }
    Ok(Value::Table(t))
}

fn map(lua: &Lua, cur: &mut Cursor<'_>, n: usize, depth: usize) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for _ in 0..n {
        let k = msgpack_decode(lua, cur, depth + 1)?;
        let v = msgpack_decode(lua, cur, depth + 1)?;
        t.raw_set(k, v)?;
    }
    Ok(Value::Table(t))
}

// ------------------------------------------------------------------ bit

/// BitOp's conversion: the number rounded (half to even) and its low 32
/// bits read as signed, the 2^52 + 2^51 trick BitOp itself uses.
fn tobit(n: f64) -> i32 {
    (n + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}

type Unary = fn(i32) -> i32;
type Fold = fn(i32, i32) -> i32;
type Shift = fn(i32, u32) -> i32;

fn bit(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let unary: [(&str, Unary); 3] = [
        ("tobit", |x| x),
        ("bnot", |x| !x),
        ("bswap", |x| x.swap_bytes()),
    ];
    for (name, f) in unary {
        t.raw_set(
            name,
            lua.create_function(move |_, args: MultiValue| {
                Ok(f(tobit(number_arg(&args, 1, name)?)))
            })?,
        )?;
    }
    let folds: [(&str, Fold); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, f) in folds {
        t.raw_set(
            name,
            lua.create_function(move |_, args: MultiValue| {
                let mut acc = tobit(number_arg(&args, 1, name)?);
                for i in 2..=args.len() {
                    acc = f(acc, tobit(number_arg(&args, i, name)?));
                }
                Ok(acc)
            })?,
        )?;
    }
    let shifts: [(&str, Shift); 5] = [
        ("lshift", |x, n| ((x as u32) << n) as i32),
        ("rshift", |x, n| ((x as u32) >> n) as i32),
        ("arshift", |x, n| x >> n),
        ("rol", |x, n| (x as u32).rotate_left(n) as i32),
        ("ror", |x, n| (x as u32).rotate_right(n) as i32),
    ];
    for (name, f) in shifts {
        t.raw_set(
            name,
            lua.create_function(move |_, args: MultiValue| {
                let x = tobit(number_arg(&args, 1, name)?);
                let n = tobit(number_arg(&args, 2, name)?) as u32 & 31;
                Ok(f(x, n))
            })?,
        )?;
    }
    t.raw_set(
        "tohex",
        lua.create_function(|_, args: MultiValue| {
            let x = tobit(number_arg(&args, 1, "tohex")?) as u32;
            let n = match args.get(1) {
                None | Some(Value::Nil) => 8,
                Some(_) => tobit(number_arg(&args, 2, "tohex")?),
            };
            let (digits, upper) = (n.unsigned_abs().min(8) as usize, n < 0);
            let text = if upper {
                format!("{x:08X}")
            } else {
                format!("{x:08x}")
            };
            Ok(text[8 - digits..].to_owned())
        })?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g14(n: f64) -> String {
        let mut out = Vec::new();
        format_g14(n, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_print_as_c_does_with_14_digits() {
        for (n, text) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e-5, "1e-05"),
            (1e14, "1e+14"),
            (1e13, "10000000000000"),
            (123_456_789_012_345_678.0, "1.2345678901235e+17"),
            (9_007_199_254_740_992.0, "9.007199254741e+15"),
            (1.0 / 3.0, "0.33333333333333"),
            (-0.0, "-0"),
            (0.0001, "0.0001"),
            (-2.5e-7, "-2.5e-07"),
            (99_999_999_999_999.5, "1e+14"),
        ] {
            assert_eq!(g14(n), text, "{n}");
        }
    }

    #[test]
    fn tobit_rounds_half_to_even_and_wraps() {
        assert_eq!(tobit(4_294_967_301.0), 5);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(1.5), 2);
        assert_eq!(tobit(2.5), 2);
        assert_eq!(tobit(-1.5), -2);
        assert_eq!(tobit(2_147_483_648.0), i32::MIN);
    }
}
