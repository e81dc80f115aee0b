//! Inline requests as Redis splits them (`SET k "a b\x41"` typed at a
//! terminal): double quotes take `\n`, `\r`, `\t`, `\b`, `\a`, `\xHH` and
//! `\<any>`; single quotes take `\'`; a quote inside a word starts a quoted
//! part of it; a closing quote must end the word; a NUL byte ends the
//! words (Redis, which finds the line's end with `strchr`, waits at a NUL
//! for a line end it never finds; here the words before it are answered).
//! The parser ([`super::Parser`]) splits at blanks and quotes
//! without copying, which is exact for every line [`needs_split`] passes
//! over; the server splits the others here, into owned arguments.

/// True if `line` (without its line end) holds anything the copying
/// split must read: a quote, a backslash, NUL, vertical tab or form feed.
pub fn needs_split(line: &[u8]) -> bool {
    line.iter()
        .any(|&b| matches!(b, b'"' | b'\'' | b'\\' | 0 | 0x0b | 0x0c))
}

/// C's `isspace` in the C locale.
fn blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Splits `line` into arguments as Redis does; `None` for unbalanced
/// quotes (or a closing quote not ending its word).
pub fn split(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    // Redis reads the line as a C string.
    let line = line.split(|&b| b == 0).next().unwrap_or_default();
    let at = |i: usize| line.get(i).copied();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while at(i).is_some_and(blank) {
            i += 1;
        }
        if at(i).is_none() {
            return Some(args);
        }
        let mut arg = Vec::new();
        let (mut double, mut single) = (false, false);
        loop {
            let c = at(i);
            if double {
                match c? {
                    b'\\' if at(i + 1) == Some(b'x') => {
                        match (at(i + 2).and_then(hex), at(i + 3).and_then(hex)) {
                            (Some(h), Some(l)) => {
                                arg.push(h * 16 + l);
                                i += 3;
                            }
                            _ => {
                                arg.push(b'x');
                                i += 1;
                            }
                        }
                    }
                    b'\\' if at(i + 1).is_some() => {
                        i += 1;
                        arg.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    b'"' => {
                        if at(i + 1).is_some_and(|b| !blank(b)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    other => arg.push(other),
                }
            } else if single {
                match c? {
                    b'\\' if at(i + 1) == Some(b'\'') => {
                        i += 1;
                        arg.push(b'\'');
                    }
                    b'\'' => {
                        if at(i + 1).is_some_and(|b| !blank(b)) {
                            return None;
                        }
                        i += 1;
                        break;
                    }
                    other => arg.push(other),
                }
            } else {
                match c {
                    None | Some(b' ' | b'\n' | b'\r' | b'\t') => break,
                    Some(b'"') => double = true,
                    Some(b'\'') => single = true,
                    Some(other) => arg.push(other),
                }
            }
            i += 1;
        }
        args.push(arg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Option<Vec<String>> {
        split(line.as_bytes()).map(|v| {
            v.into_iter()
                .map(|a| String::from_utf8_lossy(&a).into_owned())
                .collect()
        })
    }

    #[test]
    fn splits_as_redis_does() {
        assert_eq!(
            words("SET a \"hello world\"").unwrap(),
            ["SET", "a", "hello world"]
        );
        assert_eq!(words(r#"SET b "x\x41y\n""#).unwrap(), ["SET", "b", "xAy\n"]);
        assert_eq!(words(r"SET c 'it\'s'").unwrap(), ["SET", "c", "it's"]);
        assert_eq!(words(r#"ECHO "a\"b""#).unwrap(), ["ECHO", "a\"b"]);
        assert_eq!(words(r#"ECHO "\u" "\xZZ""#).unwrap(), ["ECHO", "u", "xZZ"]);
        assert_eq!(
            words(r#"ECHO "\t\r\b\a""#).unwrap(),
            ["ECHO", "\t\r\u{8}\u{7}"]
        );
        // A quote inside a word quotes the rest of it.
        assert_eq!(words(r#"ECHO a"b c""#).unwrap(), ["ECHO", "ab c"]);
        // Single quotes keep other backslashes.
        assert_eq!(words(r"ECHO 'a\nb'").unwrap(), ["ECHO", r"a\nb"]);
        assert_eq!(words("  ECHO\t''  ").unwrap(), ["ECHO", ""]);
        // NUL ends the line.
        assert_eq!(words("ECHO a\0b c").unwrap(), ["ECHO", "a"]);
        assert_eq!(words("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn refuses_unbalanced_quotes() {
        for bad in [
            r#"ECHO "a"#,
            "ECHO 'a",
            r#"ECHO "a"b"#,
            "ECHO 'a'b",
            r#"ECHO "a\""#,
            r#"ECHO "\"#,
        ] {
            assert_eq!(words(bad), None, "{bad}");
        }
    }
}
