//! Lua's `struct` library as Redis bundles it: `struct.pack(fmt, ...)`,
//! `struct.unpack(fmt, data [, pos])` and `struct.size(fmt)`, packing
//! numbers and strings into binary strings by a format, as C structs lay
//! them out on x86-64. Scripts use it for compact values (counters and
//! timestamps packed into one string, fixed-width records).
//!
//! The format's options (spaces ignored):
//!
//! ```text
//!   >  <      big / little endian from here on (little by default)
//!   ![n]      align fields to n bytes (a power of two; 8 without n)
//!   x         one zero byte of padding
//!   b B       signed / unsigned char    (1 byte)
//!   h H       signed / unsigned short   (2)
//!   l L       signed / unsigned long    (8)
//!   T         size_t                    (8)
//!   i[n] I[n] signed / unsigned integer of n bytes (4 by default, 32 at most)
//!   f  d      float (4) / double (8)
//!   s         zero-terminated string
//!   c[n]      n chars (1 by default); c0: the whole string when packing,
//!             the length read just before it when unpacking
//! ```
//!
//! Results and error texts are Redis 7's, checked against a real
//! redis-server in `tests/redis_differential.rs`. Integers wider than 8
//! bytes hold the 64-bit value and zeros beyond it.

use super::scripting_libs::{number_arg, runtime, string_arg};
use mlua::{Lua, MultiValue, Table, Value};

/// The widest `i[n]` / `I[n]`.
const MAX_INT_SIZE: usize = 32;
/// `!` without a number.
const MAX_ALIGN: usize = 8;

/// The format's state: byte order and alignment.
struct Header {
    little: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Header {
        Header {
            little: true,
            align: 1,
        }
    }
}

/// A format being read, option by option.
struct Format<'a> {
    fmt: &'a [u8],
    at: usize,
}

impl Format<'_> {
    fn next_opt(&mut self) -> Option<u8> {
        let c = self.fmt.get(self.at).copied()?;
        self.at += 1;
        Some(c)
    }

    /// The number at the cursor, or `default` if there is none.
    fn number(&mut self, default: usize) -> mlua::Result<usize> {
        if !self.fmt.get(self.at).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut n: usize = 0;
        while let Some(d) = self.fmt.get(self.at).filter(|c| c.is_ascii_digit()) {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(usize::from(d - b'0')))
                .filter(|&n| n <= i32::MAX as usize)
                .ok_or_else(|| runtime("integral size overflow"))?;
            self.at += 1;
        }
        Ok(n)
    }

    /// The size of option `opt`, reading its number if it takes one.
    fn size(&mut self, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let n = self.number(4)?;
                if n > MAX_INT_SIZE {
                    return Err(runtime(format!(
                        "integral size {n} is larger than limit of {MAX_INT_SIZE}"
                    )));
                }
                n
            }
            _ => 0,
        })
    }

    /// Applies a control option (byte order, alignment, space); anything
    /// else is not an option.
    /// `function` names the caller in the error.
    fn control(&mut self, opt: u8, h: &mut Header, function: &str) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.number(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(runtime(format!("alignment {a} is not a power of 2")));
                }
                h.align = a;
            }
            _ => {
                return Err(runtime(format!(
                    "bad argument #1 to '{function}' (invalid format option '{}')",
                    char::from(opt)
                )))
            }
        }
        Ok(())
    }
}

/// Padding before a field of `size` bytes at offset `len`.
fn padding(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

fn is_integer(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// Puts `struct` into the globals.
pub fn install(lua: &Lua) -> mlua::Result<()> {
    let t: Table = lua.create_table()?;
    t.raw_set("pack", lua.create_function(|lua, args| pack(lua, &args))?)?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args| unpack(lua, &args))?,
    )?;
    t.raw_set("size", lua.create_function(|_, args| size(&args))?)?;
    lua.globals().raw_set("struct", t)?;
    Ok(())
}

fn pack(lua: &Lua, args: &MultiValue) -> mlua::Result<mlua::String> {
    let fmt = string_arg(args, 1, "pack")?;
    // C's struct pushes a nil after the arguments before it reads them, so
    // the first one missing is "nil", not "no value".
    let args = &MultiValue::from_iter(args.iter().cloned().chain([Value::Nil]));
    let mut f = Format { fmt: &fmt, at: 0 };
    let mut h = Header::default();
    let mut out = Vec::new();
    let mut arg = 2;
    while let Some(opt) = f.next_opt() {
        let size = f.size(opt)?;
        let pad = padding(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            _ if is_integer(opt) => {
                let n = number_arg(args, arg, "pack")?;
                arg += 1;
                // C's conversions: negative numbers through the signed type.
                let v = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                // Least significant byte first; zeros past the eighth.
                let le = v.to_le_bytes();
                let bytes = (0..size).map(|i| le.get(i).copied().unwrap_or(0));
                if h.little {
                    out.extend(bytes);
                } else {
                    out.extend(bytes.rev());
                }
            }
            b'x' => out.push(0),
            b'f' => {
                let v = number_arg(args, arg, "pack")? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                });
            }
            b'd' => {
                let v = number_arg(args, arg, "pack")?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = string_arg(args, arg, "pack")?;
                arg += 1;
                let n = if size == 0 { s.len() } else { size };
                if s.len() < n {
                    // C's struct names the argument after the string.
                    return Err(runtime(format!(
                        "bad argument #{arg} to 'pack' (string too short)"
                    )));
                }
                out.extend_from_slice(&s[..n]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(opt, &mut h, "pack")?,
        }
    }
    lua.create_string(&out)
}

fn unpack(lua: &Lua, args: &MultiValue) -> mlua::Result<MultiValue> {
    let fmt = string_arg(args, 1, "unpack")?;
    let data = string_arg(args, 2, "unpack")?;
    let start = match args.get(2) {
        None | Some(Value::Nil) => 1,
        Some(_) => number_arg(args, 3, "unpack")? as i64,
    };
    let too_short = || runtime("bad argument #2 to 'unpack' (data string too short)");
    let mut pos = usize::try_from(start - 1)
        .ok()
        .filter(|&p| p <= data.len())
        .ok_or_else(|| runtime("bad argument #3 to 'unpack' (offset must be 1 or greater)"))?;
    let mut f = Format { fmt: &fmt, at: 0 };
    let mut h = Header::default();
    let mut out: Vec<Value> = Vec::new();
    while let Some(opt) = f.next_opt() {
        let mut size = f.size(opt)?;
        pos += padding(pos, &h, opt, size);
        if size > data.len() || pos > data.len() - size {
            return Err(too_short());
        }
        match opt {
            _ if is_integer(opt) => {
                let bytes = &data[pos..pos + size];
                // Most significant byte first; bytes past the eighth push
                // the first ones out, as C's shifts of a 64-bit integer do.
                let push = |v: u64, b: &u8| (v << 8) | u64::from(*b);
                let mut v = if h.little {
                    bytes.iter().rev().fold(0, push)
                } else {
                    bytes.iter().fold(0, push)
                };
                let n = if opt.is_ascii_lowercase() && (1..=8).contains(&size) {
                    let mask = u64::MAX << (size * 8 - 1);
                    if v & mask != 0 {
                        v |= mask;
                    }
                    v as i64 as f64
                } else {
                    v as f64
                };
                out.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().map_err(|_| too_short())?;
                let v = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                out.push(Value::Number(f64::from(v)));
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().map_err(|_| too_short())?;
                let v = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                out.push(Value::Number(v));
            }
            b'c' => {
                if size == 0 {
                    let n = match out.pop() {
                        Some(Value::Number(n)) => n,
                        Some(Value::Integer(n)) => n as f64,
                        _ => return Err(runtime("format 'c0' needs a previous size")),
                    };
                    size = n as usize;
                    if size > data.len() || pos > data.len() - size {
                        return Err(too_short());
                    }
                }
                out.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(runtime("unfinished string in data"));
                };
                out.push(Value::String(lua.create_string(&data[pos..pos + len])?));
                size = len + 1;
            }
            _ => f.control(opt, &mut h, "unpack")?,
        }
        pos += size;
    }
    out.push(Value::Integer(pos as i64 + 1));
    Ok(MultiValue::from_iter(out))
}

fn size(args: &MultiValue) -> mlua::Result<i64> {
    let fmt = string_arg(args, 1, "size")?;
    let mut f = Format { fmt: &fmt, at: 0 };
    let mut h = Header::default();
    let mut pos = 0usize;
    while let Some(opt) = f.next_opt() {
        let size = f.size(opt)?;
        pos += padding(pos, &h, opt, size);
        if opt == b's' {
            return Err(runtime(
                "bad argument #1 to 'size' (option 's' has no fixed size)",
            ));
        }
        if opt == b'c' && size == 0 {
            return Err(runtime(
                "bad argument #1 to 'size' (option 'c0' has no fixed size)",
            ));
        }
        if !opt.is_ascii_alphanumeric() {
            f.control(opt, &mut h, "size")?;
        }
        pos += size;
    }
    Ok(pos as i64)
}
