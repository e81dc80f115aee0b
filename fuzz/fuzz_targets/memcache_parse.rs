//! Fuzzes the memcached text protocol parser (classic and meta commands).
//!
//! The input is parsed the way a connection consumes its receive buffer:
//! command after command, advancing by `consumed` or the error's skip, until
//! it is incomplete or must close. Invariants checked, beyond "no panic":
//! - `Done` consumes 1..=len bytes and a command depends only on its own
//!   bytes: re-parsing exactly those bytes gives the same command, and
//!   without the last byte the request is incomplete;
//! - an error's skip is > 0, and re-parsing exactly the skipped bytes gives
//!   the same error; its reply is empty iff it is silent, else one line;
//! - `Incomplete { need: Some(n) }` asks for more than it has;
//! - reply encoders accept whatever the parser produced.
#![no_main]

use granola::{Buf, Pool};
use granola_kv::protocol::memcache::{
    self, Command, DeleteResult, MeInfo, MetaItem, MissResult, StoreResult,
};
use granola_kv::protocol::{Limits, Parsed, Recovery};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn value() -> &'static Buf {
    static POOL: OnceLock<Pool> = OnceLock::new();
    static VALUE: OnceLock<Buf> = OnceLock::new();
    let pool = POOL.get_or_init(|| Pool::with_capacity(1 << 20).expect("pool"));
    VALUE.get_or_init(|| pool.alloc_copy(b"fuzz value").expect("alloc"))
}

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
            max_line: 48,
            max_get_line: 96,
            ..Limits::default()
        }
    } else {
        Limits::default()
    };
    let mut pos = 0;
    while let Some(rest) = input.get(pos..).filter(|r| !r.is_empty()) {
        let result = memcache::parse(rest, &limits);
        match &result {
            Parsed::Done { cmd, consumed } => {
                let n = *consumed;
                assert!(n > 0 && n <= rest.len());
                assert_eq!(memcache::parse(&rest[..n], &limits), result);
                assert!(matches!(
                    memcache::parse(&rest[..n - 1], &limits),
                    Parsed::Incomplete { .. }
                ));
                exercise(cmd);
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
                if let Some(line) = out.strip_suffix(b"\r\n") {
                    assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
                }
                match e.recovery() {
                    Recovery::Skip(n) => {
                        assert!(n > 0);
                        if n <= rest.len() {
                            assert_eq!(memcache::parse(&rest[..n], &limits), result);
                        }
                        pos = pos.saturating_add(n);
                    }
                    Recovery::Close => break,
                }
            }
        }
    }
});

/// Walks the command and writes every reply it can get.
fn exercise(cmd: &Command<'_>) {
    let v = value();
    let mut out = Vec::new();
    match cmd {
        Command::Get(g) => {
            assert_eq!(g.keys.len(), g.keys.clone().count());
            for k in g.keys.clone() {
                assert!(!k.is_empty() && !k.contains(&b' '));
                memcache::write_value(&mut out, k, 1, v, g.with_cas().then_some(2));
            }
        }
        Command::Store(s) => {
            assert!(s.data.len() <= Limits::default().max_value_len);
            memcache::write_store_result(&mut out, StoreResult::Stored);
        }
        Command::Stats { args } => {
            for a in args.clone() {
                memcache::write_stat(&mut out, a, a);
            }
        }
        Command::MetaGet(g) => {
            g.write_hit(&mut out, v, &MetaItem::default());
            g.write_miss(&mut out);
            let mut kb = [0u8; memcache::KEY_BUF_LEN];
            let _ = g.key.bytes(&mut kb);
        }
        Command::MetaSet(s) => {
            s.write_result(&mut out, StoreResult::Exists, 1);
            let _ = s.store_mode();
        }
        Command::MetaDelete(d) => d.write_result(&mut out, DeleteResult::NotFound),
        Command::MetaArith(a) => {
            a.write_value(&mut out, 10, 1, -1);
            a.write_miss(&mut out, MissResult::NotFound);
        }
        Command::MetaDebug(m) => m.write_hit(&mut out, &MeInfo::default()),
        _ => {}
    }
    assert!(out.is_empty() || out.ends_with(b"\r\n"));
}
