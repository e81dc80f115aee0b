//! Fuzzes the resumable parsers (`resp::Parser`, `memcache::Parser`) the
//! session driver uses: the input arrives in pieces (sizes taken from the
//! input), and at every piece the resumed parse must agree with a fresh
//! parse of the same bytes — the same command and length when complete, the
//! same error when invalid, incomplete when it is. After a command the
//! parser goes on with the rest, as a connection does.
#![no_main]

use granola_kv::protocol::{memcache, resp, Limits, Parsed};
use libfuzzer_sys::fuzz_target;

fn same_kind<A, B>(a: &Parsed<A>, b: &Parsed<B>) -> bool {
    matches!(
        (a, b),
        (Parsed::Done { .. }, Parsed::Done { .. })
            | (Parsed::Incomplete { .. }, Parsed::Incomplete { .. })
            | (Parsed::Invalid(_), Parsed::Invalid(_))
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let Some((&step, input)) = rest.split_first() else {
        return;
    };
    let step = usize::from(step % 16) + 1;
    let mut limits = if sel & 1 == 1 {
        Limits {
            max_inline: 40,
            max_args: 5,
            max_bulk: 16,
            max_line: 30,
            max_get_line: 60,
            max_value_len: 16,
            ..Limits::default()
        }
    } else {
        Limits::default()
    };
    // Half the time, as a client yet to AUTH.
    limits.auth_required = sel & 2 == 2;
    // RESP
    let mut p = resp::Parser::default();
    let (mut start, mut end) = (0, 0);
    while end < input.len() {
        end = (end + step).min(input.len());
        let buf = &input[start..end];
        let resumed = p.parse(buf, &limits);
        let fresh = resp::parse(buf, &limits);
        assert!(same_kind(&resumed, &fresh), "{resumed:?} vs {fresh:?}");
        match resumed {
            Parsed::Done { consumed, .. } => {
                assert_eq!(resumed, fresh);
                start += consumed;
                end = start;
            }
            Parsed::Invalid(_) => {
                assert_eq!(resumed, fresh);
                break;
            }
            Parsed::Incomplete { .. } => {}
        }
    }
    // memcached
    let mut p = memcache::Parser::default();
    let (mut start, mut end) = (0, 0);
    while end < input.len() {
        end = (end + step).min(input.len());
        let buf = &input[start..end];
        let resumed = p.parse(buf, &limits);
        let fresh = memcache::parse(buf, &limits);
        assert!(same_kind(&resumed, &fresh), "{resumed:?} vs {fresh:?}");
        match resumed {
            Parsed::Done { consumed, .. } => {
                assert_eq!(resumed, fresh);
                start += consumed;
                end = start;
            }
            Parsed::Invalid(e) => {
                assert_eq!(resumed, fresh);
                match e.recovery() {
                    granola_kv::protocol::Recovery::Skip(n) if n <= buf.len() => {
                        start += n;
                        end = start;
                    }
                    _ => break,
                }
            }
            Parsed::Incomplete { .. } => {}
        }
    }
});
