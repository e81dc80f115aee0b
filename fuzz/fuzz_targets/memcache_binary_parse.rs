//! Fuzzes the memcached binary protocol parser.
//!
//! The input is parsed the way a connection consumes its receive buffer:
//! request after request, advancing by `consumed` or the error's skip,
//! until it is incomplete or must close. Invariants checked, beyond "no
//! panic":
//! - `Done` consumes exactly header + body, a request depends only on its
//!   own bytes (re-parsing them gives the same request) and without its
//!   last byte it is incomplete; its key is within the key limit;
//! - an error's skip is at least the header, and its reply is one whole
//!   response frame (or nothing, for a silent close);
//! - `Incomplete { need: Some(n) }` asks for more than it has;
//! - responses compose for whatever the parser produced.
#![no_main]

use granola_kv::protocol::memcache::binary::{self, HEADER_LEN, RESPONSE_MAGIC};
use granola_kv::protocol::{Limits, Parsed, Recovery};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks tiny limits half of the time, to reach the limit
    // paths with short inputs.
    let Some((&sel, input)) = data.split_first() else {
        return;
    };
    let limits = if sel & 1 == 1 {
        Limits {
            max_key_len: 8,
            max_value_len: 32,
            ..Limits::default()
        }
    } else {
        Limits::default()
    };
    let mut pos = 0;
    while let Some(rest) = input.get(pos..).filter(|r| !r.is_empty()) {
        let result = binary::parse(rest, &limits);
        match &result {
            Parsed::Done { cmd, consumed } => {
                let n = *consumed;
                assert!(n >= HEADER_LEN && n <= rest.len());
                assert_eq!(
                    n,
                    HEADER_LEN + cmd.extras.len() + cmd.key.len() + cmd.value.len()
                );
                assert!(cmd.key.len() <= limits.max_key_len);
                assert!(n - HEADER_LEN <= binary::max_body(&limits));
                assert_eq!(binary::parse(&rest[..n], &limits), result);
                assert!(matches!(
                    binary::parse(&rest[..n - 1], &limits),
                    Parsed::Incomplete { .. }
                ));
                assert_eq!(binary::key_of(rest), Some(cmd.key));
                let mut out = Vec::new();
                binary::write_response(&mut out, cmd, 0, 1, &[0; 4], cmd.key, cmd.value);
                assert_eq!(out.len(), n + 4 - cmd.extras.len());
                pos += n;
            }
            Parsed::Incomplete { need } => {
                if let Some(need) = need {
                    assert!(*need > rest.len());
                }
                break;
            }
            Parsed::Invalid(e) => {
                let mut out = Vec::new();
                e.write_reply(&mut out);
                assert_eq!(out.is_empty(), e.is_silent());
                if !out.is_empty() {
                    assert_eq!(out[0], RESPONSE_MAGIC);
                    let body = u32::from_be_bytes([out[8], out[9], out[10], out[11]]);
                    assert_eq!(out.len(), HEADER_LEN + body as usize);
                }
                match e.recovery() {
                    Recovery::Skip(n) => {
                        assert!(n >= HEADER_LEN);
                        pos = pos.saturating_add(n);
                    }
                    Recovery::Close => break,
                }
            }
        }
    }
});
