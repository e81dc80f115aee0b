//! Redis' glob patterns (KEYS, SCAN MATCH, CONFIG GET): `*`, `?`,
//! `[abc]`, `[^a-z]`, and `\` to escape.

/// True if `s` matches `pattern`. Iterative with one backtrack point per
/// `*`, so the cost is O(|pattern| * |s|) at worst.
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p, i));
                    p += 1;
                    continue;
                }
                b'?' if i < s.len() => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' if i < s.len() => {
                    if let Some((ok, next)) = class(pattern, p, s[i], &eq) {
                        if ok {
                            p = next;
                            i += 1;
                            continue;
                        }
                    } else if eq(b'[', s[i]) {
                        // An unterminated class is a literal '['.
                        p += 1;
                        i += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() && i < s.len() && eq(pattern[p + 1], s[i]) => {
                    p += 2;
                    i += 1;
                    continue;
                }
                c if c != b'?' && c != b'[' && c != b'\\' && i < s.len() && eq(c, s[i]) => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'\\' if p + 1 == pattern.len() && i < s.len() && eq(b'\\', s[i]) => {
                    p += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
        } else if i == s.len() {
            return true;
        }
        // Mismatch: let the last `*` swallow one more byte.
        match star {
            Some((sp, si)) if si < s.len() => {
                star = Some((sp, si + 1));
                p = sp + 1;
                i = si + 1;
            }
            _ => return false,
        }
    }
}

/// Matches `c` against the class starting at `pattern[p] == '['`: whether
/// it matched and where the pattern continues; None if unterminated.
fn class(pattern: &[u8], p: usize, c: u8, eq: &dyn Fn(u8, u8) -> bool) -> Option<(bool, usize)> {
    let mut j = p + 1;
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut hit = false;
    loop {
        let b = *pattern.get(j)?;
        if b == b']' {
            return Some((hit != negate, j + 1));
        }
        if b == b'\\' {
            let e = *pattern.get(j + 1)?;
            hit |= eq(e, c);
            j += 2;
        } else if pattern.get(j + 1) == Some(&b'-')
            && pattern.get(j + 2).is_some_and(|&e| e != b']')
        {
            let (mut lo, mut hi) = (b, pattern[j + 2]);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            hit |= (lo..=hi).contains(&c)
                || (lo..=hi).contains(&c.to_ascii_lowercase()) && eq(c, c.to_ascii_lowercase());
            j += 3;
        } else {
            hit |= eq(b, c);
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        let yes: &[(&str, &str)] = &[
            ("*", ""),
            ("*", "abc"),
            ("h?llo", "hello"),
            ("h*llo", "heeeello"),
            ("h[ae]llo", "hallo"),
            ("h[^e]llo", "hallo"),
            ("h[a-b]llo", "hbllo"),
            ("a\\*b", "a*b"),
            ("*:*", "user:1"),
            ("user:*", "user:"),
            ("[", "["),
        ];
        for (p, s) in yes {
            assert!(matches(p.as_bytes(), s.as_bytes(), false), "{p} ~ {s}");
        }
        let no: &[(&str, &str)] = &[
            ("h?llo", "hllo"),
            ("h[^e]llo", "hello"),
            ("h[a-b]llo", "hcllo"),
            ("a\\*b", "axb"),
            ("user:*", "use"),
            ("abc", "abcd"),
        ];
        for (p, s) in no {
            assert!(!matches(p.as_bytes(), s.as_bytes(), false), "{p} !~ {s}");
        }
        assert!(matches(b"MAX*", b"maxmemory", true));
    }
}
