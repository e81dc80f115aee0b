//! Fuzzes the RESP2 request parser (multibulk and inline).
//!
//! The input is parsed the way a connection consumes its receive buffer,
//! command after command, until it is incomplete or must close. Invariants
//! checked, beyond "no panic":
//! - `Done` consumes 1..=len bytes and a command depends only on its own
//!   bytes: re-parsing exactly those bytes gives the same command, and
//!   without the last byte the request is incomplete;
//! - the argument views agree: `len()`, `args()` and `arg(i)`;
//! - a multibulk re-encoding of the command parses back to it;
//! - every protocol error closes, with a one-line `-ERR` reply;
//! - `Incomplete { need: Some(n) }` asks for more than it has;
//! - an inline line the copy-free split may take (no quote, backslash,
//!   NUL...) splits into the same words with Redis's copying split, which
//!   never panics on any line.
#![no_main]

use granola_kv::protocol::resp::{self, Command};
use granola_kv::protocol::{Limits, Parsed};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks tiny limits half of the time.
    let Some((&sel, input)) = data.split_first() else {
        return;
    };
    let mut limits = if sel & 1 == 1 {
        Limits {
            max_inline: 40,
            max_args: 5,
            max_bulk: 16,
            ..Limits::default()
        }
    } else {
        Limits::default()
    };
    // Half the time, as a client yet to AUTH.
    limits.auth_required = sel & 2 == 2;
    let mut pos = 0;
    while let Some(rest) = input.get(pos..).filter(|r| !r.is_empty()) {
        let result = resp::parse(rest, &limits);
        match &result {
            Parsed::Done { cmd, consumed } => {
                let n = *consumed;
                assert!(n > 0 && n <= rest.len());
                assert_eq!(resp::parse(&rest[..n], &limits), result);
                assert!(matches!(
                    resp::parse(&rest[..n - 1], &limits),
                    Parsed::Incomplete { .. }
                ));
                check_args(cmd);
                if cmd.is_inline() {
                    check_inline(&rest[..n], cmd);
                }
                pos += n;
            }
            Parsed::Incomplete { need } => {
                if let Some(need) = need {
                    assert!(*need > rest.len());
                }
                break;
            }
            Parsed::Invalid(e) => {
                assert!(e.must_close());
                let mut out = Vec::new();
                e.write_reply(&mut out);
                assert!(out.starts_with(b"-ERR Protocol error: "));
                let line = out.strip_suffix(b"\r\n").expect("CRLF");
                assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
                break;
            }
        }
    }
});

fn check_inline(request: &[u8], cmd: &Command<'_>) {
    let line = request.strip_suffix(b"\n").unwrap_or(request);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !cmd.is_empty() {
        assert_eq!(cmd.inline_line(), line);
    }
    let split = resp::inline::split(line);
    if !resp::inline::needs_split(line) {
        let args: Vec<Vec<u8>> = cmd.args().map(<[u8]>::to_vec).collect();
        assert_eq!(split, Some(args));
    }
}

fn check_args(cmd: &Command<'_>) {
    let args: Vec<&[u8]> = cmd.args().collect();
    assert_eq!(args.len(), cmd.len());
    assert_eq!(cmd.is_empty(), args.is_empty());
    for (i, a) in args.iter().enumerate() {
        assert_eq!(cmd.arg(i), Some(*a));
    }
    assert_eq!(cmd.arg(args.len()), None);
    assert_eq!(cmd.name(), args.first().copied().unwrap_or_default());
    if !args.is_empty() {
        let mut encoded = Vec::new();
        resp::encode_command(&args, &mut encoded);
        let generous = Limits {
            max_bulk: usize::MAX,
            max_args: usize::MAX,
            ..Limits::default()
        };
        match resp::parse(&encoded, &generous) {
            Parsed::Done {
                cmd: again,
                consumed,
            } => {
                assert_eq!(consumed, encoded.len());
                assert_eq!(&again, cmd);
            }
            other => panic!("re-encoded command does not parse: {other:?}"),
        }
        let mut out = Vec::new();
        resp::write_unknown_command(&mut out, cmd);
        let line = out.strip_suffix(b"\r\n").expect("CRLF");
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        let mut out = Vec::new();
        resp::write_wrong_arity(&mut out, cmd.name());
        let line = out.strip_suffix(b"\r\n").expect("CRLF");
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
    }
}
