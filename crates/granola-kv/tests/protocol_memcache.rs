//! memcached text protocol: parsing from exact bytes, pipelining, prefixes,
//! malformed input, limits, replies byte for byte, round trips.

use granola::{Buf, Pool};
use granola_kv::protocol::memcache::{
    self, write_number, write_stat, write_stat_u64, write_store_result, write_value, write_version,
    ArithMode, Command, DeleteResult, GetKind, MeInfo, MetaItem, MetaKey, MissResult, Store,
    StoreMode, StoreResult, END, KEY_BUF_LEN,
};
use granola_kv::protocol::{ErrorKind, Limits, Parsed, ProtocolError, Recovery};
use proptest::prelude::*;
use std::sync::OnceLock;

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool::with_capacity(16 << 20).expect("pool"))
}

fn buf(bytes: &[u8]) -> Buf {
    pool().alloc_copy(bytes).expect("alloc")
}

fn parse(input: &[u8]) -> Parsed<Command<'_>> {
    memcache::parse(input, &Limits::default())
}

fn done(input: &[u8]) -> Command<'_> {
    match parse(input) {
        Parsed::Done { cmd, consumed } => {
            assert_eq!(consumed, input.len(), "{}", input.escape_ascii());
            cmd
        }
        other => panic!("{}: {other:?}", input.escape_ascii()),
    }
}

fn invalid(input: &[u8]) -> ProtocolError {
    invalid_with(input, &Limits::default())
}

fn invalid_with(input: &[u8], limits: &Limits) -> ProtocolError {
    match memcache::parse(input, limits) {
        Parsed::Invalid(e) => e,
        other => panic!("{}: {other:?}", input.escape_ascii()),
    }
}

fn reply(e: &ProtocolError) -> String {
    let mut out = Vec::new();
    e.write_reply(&mut out);
    String::from_utf8(out).unwrap()
}

fn keys<'a>(c: &Command<'a>) -> Vec<&'a [u8]> {
    match c {
        Command::Get(g) => g.keys.clone().collect(),
        other => panic!("{other:?}"),
    }
}

/// Every valid request used below, with a name for messages.
const VALID: &[&[u8]] = &[
    b"get a\r\n",
    b"get a bb ccc\r\n",
    b"gets a\r\n",
    b"gat 10 a b\r\n",
    b"gats -1 a\r\n",
    b"gat 10\r\n",
    b"set k 1 2 3\r\nabc\r\n",
    b"set k 1 2 0 noreply\r\n\r\n",
    b"add k 0 0 1\r\nx\r\n",
    b"replace k 0 0 1\r\nx\r\n",
    b"append k 0 0 1\r\nx\r\n",
    b"prepend k 0 0 1\r\nx\r\n",
    b"cas k 0 0 1 99\r\nx\r\n",
    b"cas k 0 0 1 99 noreply\r\nx\r\n",
    b"set k 0 0 4\r\n\r\n\r\n\r\n",
    b"delete k\r\n",
    b"delete k 0\r\n",
    b"delete k noreply\r\n",
    b"delete k 0 noreply\r\n",
    b"incr k 5\r\n",
    b"decr k 18446744073709551615 noreply\r\n",
    b"touch k 100\r\n",
    b"touch k 100 noreply\r\n",
    b"flush_all\r\n",
    b"flush_all 30\r\n",
    b"flush_all noreply\r\n",
    b"flush_all 30 noreply\r\n",
    b"stats\r\n",
    b"stats slabs\r\n",
    b"stats detail on\r\n",
    b"version\r\n",
    b"verbosity 1\r\n",
    b"verbosity 1 noreply\r\n",
    b"quit\r\n",
    b"mn\r\n",
    b"mg k\r\n",
    b"mg k v f c s t k Oabc q\r\n",
    b"mg Zm9v b v k\r\n",
    b"mg k T30 N10 R5 E77 u h l\r\n",
    b"ms k 3\r\nabc\r\n",
    b"ms k 3 T60 F5 c k O1 MA C9 I q E8\r\nabc\r\n",
    b"ms Zm9v 0 b\r\n\r\n",
    b"md k\r\n",
    b"md k q C5 I T30 k O9 E4\r\n",
    b"ma k\r\n",
    b"ma k MD D5 J10 N30 T60 v c t k O1 q C3 E4\r\n",
    b"me k\r\n",
    b"me Zm9v b\r\n",
    b"get a\n",
    b"  get   a   b  \r\n",
];

#[test]
fn every_valid_request_parses_whole() {
    for &req in VALID {
        done(req);
    }
}

#[test]
fn every_proper_prefix_is_incomplete() {
    for &req in VALID {
        for cut in 0..req.len() {
            match parse(&req[..cut]) {
                Parsed::Incomplete { need } => {
                    if let Some(n) = need {
                        assert!(n > cut && n <= req.len(), "{}", req.escape_ascii());
                    }
                }
                other => panic!("{} cut at {cut}: {other:?}", req.escape_ascii()),
            }
        }
    }
}

#[test]
fn pipelined() {
    let all: Vec<u8> = VALID.concat();
    let mut pos = 0;
    let mut n = 0;
    while pos < all.len() {
        match parse(&all[pos..]) {
            Parsed::Done { consumed, .. } => {
                assert_eq!(consumed, VALID[n].len(), "{}", VALID[n].escape_ascii());
                pos += consumed;
                n += 1;
            }
            other => panic!("at {pos}: {other:?}"),
        }
    }
    assert_eq!(n, VALID.len());
}

#[test]
fn retrievals() {
    let c = done(b"get a bb ccc\r\n");
    assert_eq!(keys(&c), [&b"a"[..], b"bb", b"ccc"]);
    let Command::Get(g) = &c else { unreachable!() };
    assert_eq!((g.kind, g.exptime, g.keys.len()), (GetKind::Get, None, 3));
    assert!(!g.with_cas());
    let Command::Get(g) = done(b"gets a\r\n") else {
        panic!()
    };
    assert!(g.with_cas());
    let Command::Get(g) = done(b"gat 10 a b\r\n") else {
        panic!()
    };
    assert_eq!((g.kind, g.exptime), (GetKind::Gat, Some(10)));
    assert_eq!(g.keys.collect::<Vec<_>>(), [&b"a"[..], b"b"]);
    let Command::Get(g) = done(b"gats -1 a\r\n") else {
        panic!()
    };
    assert_eq!((g.kind, g.exptime), (GetKind::Gats, Some(-1)));
    let Command::Get(g) = done(b"gat 10\r\n") else {
        panic!()
    };
    assert_eq!(g.keys.len(), 0);
    assert_eq!(keys(&done(b"  get   a   b  \r\n")), [&b"a"[..], b"b"]);
    // Keys are bytes; tabs and other bytes are part of them, as in memcached.
    assert_eq!(keys(&done(b"get a\tb \xff\r\n")), [&b"a\tb"[..], b"\xff"]);
    // A 250-byte key is fine.
    let key = vec![b'k'; 250];
    let req = [&b"get "[..], &key, b"\r\n"].concat();
    assert_eq!(keys(&done(&req)), [&key[..]]);
}

#[test]
fn storage() {
    let store = |mode, key, flags, exptime, data, cas, noreply| {
        Command::Store(Store {
            mode,
            key,
            flags,
            exptime,
            data,
            cas,
            noreply,
        })
    };
    assert_eq!(
        done(b"set k 1 2 3\r\nabc\r\n"),
        store(StoreMode::Set, &b"k"[..], 1, 2, &b"abc"[..], None, false)
    );
    assert_eq!(
        done(b"set k 1 2 0 noreply\r\n\r\n"),
        store(StoreMode::Set, b"k", 1, 2, b"", None, true)
    );
    assert_eq!(
        done(b"add k 0 0 1\r\nx\r\n"),
        store(StoreMode::Add, b"k", 0, 0, b"x", None, false)
    );
    assert_eq!(
        done(b"replace k 0 0 1\r\nx\r\n"),
        store(StoreMode::Replace, b"k", 0, 0, b"x", None, false)
    );
    assert_eq!(
        done(b"append k 0 0 1\r\nx\r\n"),
        store(StoreMode::Append, b"k", 0, 0, b"x", None, false)
    );
    assert_eq!(
        done(b"prepend k 0 0 1\r\nx\r\n"),
        store(StoreMode::Prepend, b"k", 0, 0, b"x", None, false)
    );
    assert_eq!(
        done(b"cas k 0 0 1 99 noreply\r\nx\r\n"),
        store(StoreMode::Cas, b"k", 0, 0, b"x", Some(99), true)
    );
    // Data may contain CR LF; only the length counts.
    assert_eq!(
        done(b"set k 0 0 4\r\n\r\n\r\n\r\n"),
        store(StoreMode::Set, b"k", 0, 0, b"\r\n\r\n", None, false)
    );
    assert_eq!(
        done(b"set k 4294967295 -2147483648 1\r\nx\r\n"),
        store(StoreMode::Set, b"k", u32::MAX, i32::MIN, b"x", None, false)
    );
    // memcached ignores a sixth token that is not "noreply".
    assert_eq!(
        done(b"set k 0 0 1 junk\r\nx\r\n"),
        store(StoreMode::Set, b"k", 0, 0, b"x", None, false)
    );
}

#[test]
fn other_classic_commands() {
    assert_eq!(
        done(b"delete k\r\n"),
        Command::Delete {
            key: b"k",
            noreply: false
        }
    );
    assert_eq!(
        done(b"delete k 0\r\n"),
        Command::Delete {
            key: b"k",
            noreply: false
        }
    );
    assert_eq!(
        done(b"delete k noreply\r\n"),
        Command::Delete {
            key: b"k",
            noreply: true
        }
    );
    assert_eq!(
        done(b"delete k 0 noreply\r\n"),
        Command::Delete {
            key: b"k",
            noreply: true
        }
    );
    assert_eq!(
        done(b"incr k 5\r\n"),
        Command::Arith {
            key: b"k",
            decr: false,
            delta: 5,
            noreply: false
        }
    );
    assert_eq!(
        done(b"decr k 18446744073709551615 noreply\r\n"),
        Command::Arith {
            key: b"k",
            decr: true,
            delta: u64::MAX,
            noreply: true
        }
    );
    assert_eq!(
        done(b"touch k 100 noreply\r\n"),
        Command::Touch {
            key: b"k",
            exptime: 100,
            noreply: true
        }
    );
    for (req, delay, noreply) in [
        (&b"flush_all\r\n"[..], 0, false),
        (b"flush_all 30\r\n", 30, false),
        (b"flush_all noreply\r\n", 0, true),
        (b"flush_all 30 noreply\r\n", 30, true),
    ] {
        assert_eq!(done(req), Command::FlushAll { delay, noreply });
    }
    let Command::Stats { args } = done(b"stats\r\n") else {
        panic!()
    };
    assert_eq!(args.count(), 0);
    let Command::Stats { args } = done(b"stats detail on\r\n") else {
        panic!()
    };
    assert_eq!(args.collect::<Vec<_>>(), [&b"detail"[..], b"on"]);
    assert_eq!(done(b"version\r\n"), Command::Version);
    assert_eq!(done(b"version extra\r\n"), Command::Version);
    assert_eq!(done(b"quit\r\n"), Command::Quit);
    assert_eq!(
        done(b"verbosity 1 noreply\r\n"),
        Command::Verbosity {
            level: 1,
            noreply: true
        }
    );
    assert_eq!(done(b"mn\r\n"), Command::MetaNoop);
}

#[test]
fn meta_get() {
    let Command::MetaGet(g) = done(b"mg k v f c s t k Oabc q\r\n") else {
        panic!()
    };
    assert_eq!(
        g.key,
        MetaKey {
            raw: b"k",
            binary: false
        }
    );
    assert!(g.value && g.quiet && !g.no_bump);
    assert_eq!(g.opaque, Some(&b"abc"[..]));
    assert!(g.has_flag(b's') && g.has_flag(b'k') && !g.has_flag(b'h'));
    let Command::MetaGet(g) = done(b"mg k T30 N10 R5 E77 u h l\r\n") else {
        panic!()
    };
    assert_eq!(
        (g.ttl, g.vivify, g.recache, g.new_cas, g.no_bump),
        (Some(30), Some(10), Some(5), Some(77), true)
    );
    let Command::MetaGet(g) = done(b"mg Zm9v b v\r\n") else {
        panic!()
    };
    assert!(g.key.binary);
    let mut kb = [0u8; KEY_BUF_LEN];
    assert_eq!(g.key.bytes(&mut kb), b"foo");
}

#[test]
fn meta_set_delete_arith_debug() {
    let Command::MetaSet(s) = done(b"ms k 3 T60 F5 c k O1 MA C9 I q E8\r\nabc\r\n") else {
        panic!()
    };
    assert_eq!(s.data, b"abc");
    assert_eq!(
        (s.exptime, s.client_flags, s.mode, s.compare_cas, s.new_cas),
        (60, 5, StoreMode::Append, Some(9), Some(8))
    );
    assert!(s.invalidate && s.quiet);
    assert_eq!(s.store_mode(), StoreMode::Append);
    for (m, mode) in [
        ("E", StoreMode::Add),
        ("a", StoreMode::Append),
        ("P", StoreMode::Prepend),
        ("R", StoreMode::Replace),
        ("S", StoreMode::Set),
    ] {
        let req = format!("ms k 1 M{m}\r\nx\r\n");
        let Command::MetaSet(s) = done(req.as_bytes()) else {
            panic!()
        };
        assert_eq!(s.mode, mode);
    }
    let Command::MetaSet(s) = done(b"ms k 1 C5\r\nx\r\n") else {
        panic!()
    };
    assert_eq!((s.mode, s.store_mode()), (StoreMode::Set, StoreMode::Cas));
    let Command::MetaSet(s) = done(b"ms k 0\r\n\r\n") else {
        panic!()
    };
    assert_eq!((s.data, s.exptime, s.client_flags), (&b""[..], 0, 0));

    let Command::MetaDelete(d) = done(b"md k q C5 I T30 k O9 E4\r\n") else {
        panic!()
    };
    assert_eq!(
        (d.quiet, d.compare_cas, d.invalidate, d.ttl, d.new_cas),
        (true, Some(5), true, Some(30), Some(4))
    );

    let Command::MetaArith(a) = done(b"ma k\r\n") else {
        panic!()
    };
    assert_eq!(
        (a.mode, a.delta, a.initial, a.vivify, a.value),
        (ArithMode::Incr, 1, 0, None, false)
    );
    let Command::MetaArith(a) = done(b"ma k MD D5 J10 N30 T60 v c t k O1 q C3 E4\r\n") else {
        panic!()
    };
    assert_eq!(
        (a.mode, a.delta, a.initial, a.vivify, a.ttl),
        (ArithMode::Decr, 5, 10, Some(30), Some(60))
    );
    assert_eq!(
        (a.compare_cas, a.new_cas, a.quiet, a.value),
        (Some(3), Some(4), true, true)
    );
    for (m, mode) in [
        ("I", ArithMode::Incr),
        ("+", ArithMode::Incr),
        ("-", ArithMode::Decr),
    ] {
        let req = format!("ma k M{m}\r\n");
        let Command::MetaArith(a) = done(req.as_bytes()) else {
            panic!()
        };
        assert_eq!(a.mode, mode);
    }

    let Command::MetaDebug(m) = done(b"me Zm9v b\r\n") else {
        panic!()
    };
    assert!(m.key.binary);
    let Command::MetaDebug(m) = done(b"me k\r\n") else {
        panic!()
    };
    assert!(!m.key.binary);
}

/// (request, reply, bytes skipped; 0 means close)
#[rustfmt::skip]
const MALFORMED: &[(&[u8], &str, usize)] = &[
    (b"bogus\r\n", "ERROR\r\n", 7),
    (b"GET a\r\n", "ERROR\r\n", 7),
    (b"\r\n", "ERROR\r\n", 2),
    (b"\n", "ERROR\r\n", 1),
    (b"g a\r\n", "ERROR\r\n", 5),
    (b"get\r\n", "ERROR\r\n", 5),
    (b"gets   \r\n", "ERROR\r\n", 9),
    (b"gat\r\n", "ERROR\r\n", 5),
    (b"gat x a\r\n", "CLIENT_ERROR invalid exptime argument\r\n", 9),
    (b"set k 0 0\r\n", "ERROR\r\n", 11),
    (b"set k 0 0 1 noreply x\r\n", "ERROR\r\n", 23),
    (b"cas k 0 0 1\r\n", "ERROR\r\n", 13),
    (b"set k 0 0 -1\r\n", "CLIENT_ERROR bad command line format\r\n", 14),
    (b"set k 0 0 x\r\n", "CLIENT_ERROR bad command line format\r\n", 13),
    (b"set k 0 0 99999999999\r\n", "CLIENT_ERROR bad command line format\r\n", 23),
    (b"set k 0 0 2147483645\r\n", "SERVER_ERROR object too large for cache\r\n", 22 + 2147483645 + 2),
    (b"set k 0 0 2147483646\r\n", "CLIENT_ERROR bad command line format\r\n", 22),
    // Bad fields with a valid length: the block is swallowed too.
    (b"set k -1 0 1\r\n", "CLIENT_ERROR bad command line format\r\n", 14 + 3),
    (b"set k 0 x 1\r\n", "CLIENT_ERROR bad command line format\r\n", 13 + 3),
    (b"cas k 0 0 1 x\r\n", "CLIENT_ERROR bad command line format\r\n", 15 + 3),
    (b"set k 0 0 2000000\r\n", "SERVER_ERROR object too large for cache\r\n", 19 + 2_000_002),
    (b"set k 0 0 1\r\nab\r\n", "CLIENT_ERROR bad data chunk\r\n", 16),
    (b"set k 0 0 1\r\nx\n\n", "CLIENT_ERROR bad data chunk\r\n", 16),
    (b"delete\r\n", "ERROR\r\n", 8),
    (b"delete k 1\r\n", "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n", 12),
    (b"delete k 0 0\r\n", "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n", 14),
    (b"delete a b c d\r\n", "ERROR\r\n", 16),
    (b"incr k\r\n", "ERROR\r\n", 8),
    (b"incr k x\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n", 10),
    (b"incr k -1\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n", 11),
    (b"decr k 18446744073709551616\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n", 29),
    (b"touch k\r\n", "ERROR\r\n", 9),
    (b"touch k x\r\n", "CLIENT_ERROR invalid exptime argument\r\n", 11),
    (b"flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n", 13),
    (b"flush_all 1 2 3\r\n", "ERROR\r\n", 17),
    (b"verbosity\r\n", "ERROR\r\n", 11),
    (b"verbosity x\r\n", "CLIENT_ERROR bad command line format\r\n", 13),
    (b"mx k\r\n", "ERROR\r\n", 6),
    (b"mg\r\n", "ERROR\r\n", 4),
    (b"mg k z\r\n", "CLIENT_ERROR invalid flag\r\n", 8),
    (b"mg k v v\r\n", "CLIENT_ERROR duplicate flag\r\n", 10),
    (b"mg k \xff\r\n", "CLIENT_ERROR duplicate flag\r\n", 8),
    (b"mg k Tx\r\n", "CLIENT_ERROR bad token in command line format\r\n", 9),
    (b"mg k T\r\n", "CLIENT_ERROR bad token in command line format\r\n", 8),
    (b"mg k N99999999999\r\n", "CLIENT_ERROR bad token in command line format\r\n", 19),
    (b"mg !!!! b\r\n", "CLIENT_ERROR error decoding key\r\n", 11),
    (b"mg k a b c d e f g h i j l m n o p r s t\r\n", "CLIENT_ERROR options flags are too long\r\n", 42),
    (b"mg k O123456789012345678901234567890123\r\n", "CLIENT_ERROR opaque token too long\r\n", 41),
    (b"ms k\r\n", "CLIENT_ERROR bad command line format\r\n", 6),
    (b"ms k x\r\n", "CLIENT_ERROR bad command line format\r\n", 8),
    (b"ms k -5\r\n", "CLIENT_ERROR bad command line format\r\n", 9),
    // ms flag errors after a valid length swallow the block.
    (b"ms k 2 z\r\n", "CLIENT_ERROR invalid flag\r\n", 10 + 4),
    (b"ms k 2 v\r\n", "CLIENT_ERROR invalid flag\r\n", 10 + 4),
    (b"ms k 2 T1 T2\r\n", "CLIENT_ERROR duplicate flag\r\n", 14 + 4),
    (b"ms k 2 Fx\r\n", "CLIENT_ERROR bad command line format\r\n", 11 + 4),
    (b"ms k 2 MX\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n", 11 + 4),
    (b"ms k 2 MAA\r\n", "CLIENT_ERROR incorrect length for M token\r\n", 12 + 4),
    (b"ms k 2 a b c d e f g h i j l m n o p r s\r\n", "CLIENT_ERROR options flags too long\r\n", 42 + 4),
    (b"ms k 2000000 T1\r\n", "SERVER_ERROR object too large for cache\r\n", 17 + 2_000_002),
    (b"ms k 1\r\nxy\r\n", "CLIENT_ERROR bad data chunk\r\n", 11),
    (b"md\r\n", "ERROR\r\n", 4),
    (b"md k v\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n", 8),
    (b"md k q q\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n", 10),
    (b"md k Cx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n", 9),
    (b"md k O123456789012345678901234567890123\r\n", "CLIENT_ERROR opaque token too long\r\n", 41),
    (b"ma\r\n", "ERROR\r\n", 4),
    (b"ma k f\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n", 8),
    (b"ma k Dx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n", 9),
    (b"ma k Mx\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n", 9),
    (b"me\r\n", "CLIENT_ERROR bad command line format\r\n", 4),
    (b"me !!!! b\r\n", "CLIENT_ERROR bad command line format\r\n", 11),
];

#[test]
fn malformed_requests() {
    for &(req, want, skip) in MALFORMED {
        let e = invalid(req);
        assert_eq!(reply(&e), want, "{}", req.escape_ascii());
        let recovery = if skip == 0 {
            Recovery::Close
        } else {
            Recovery::Skip(skip)
        };
        assert_eq!(e.recovery(), recovery, "{}", req.escape_ascii());
    }
}

#[test]
fn long_keys() {
    let key = "k".repeat(251);
    let bad = "CLIENT_ERROR bad command line format\r\n";
    let line = format!("get a {key}\r\n");
    let e = invalid(line.as_bytes());
    assert_eq!(
        (reply(&e).as_str(), e.recovery()),
        (bad, Recovery::Skip(line.len()))
    );
    // Storage commands: the data block (length known) is swallowed.
    let line = format!("set {key} 0 0 5\r\n");
    let e = invalid(line.as_bytes());
    assert_eq!(
        (reply(&e).as_str(), e.recovery()),
        (bad, Recovery::Skip(line.len() + 7))
    );
    for cmd in ["delete", "touch", "incr", "decr", "mg", "md", "ma", "me"] {
        let arg = match cmd {
            "touch" | "incr" | "decr" => " 1",
            _ => "",
        };
        let line = format!("{cmd} {key}{arg}\r\n");
        let e = invalid(line.as_bytes());
        assert_eq!(reply(&e), bad, "{cmd}");
        assert_eq!(e.recovery(), Recovery::Skip(line.len()), "{cmd}");
    }
    let line = format!("ms {key} 5\r\n");
    let e = invalid(line.as_bytes());
    assert_eq!(
        (reply(&e).as_str(), e.recovery()),
        (bad, Recovery::Skip(line.len() + 7))
    );
    // With a custom limit.
    let limits = Limits {
        max_key_len: 3,
        ..Limits::default()
    };
    assert!(matches!(
        memcache::parse(b"get abc\r\n", &limits),
        Parsed::Done { .. }
    ));
    let e = invalid_with(b"get abcd\r\n", &limits);
    assert_eq!(reply(&e), bad);
}

#[test]
fn noreply_suppresses_classic_errors_only() {
    for req in [
        &b"set k 0 x 1 noreply\r\n"[..],
        b"set k 0 0 2000000 noreply\r\n",
        b"set k 0 0 1 noreply\r\nab\r\n",
        b"incr k x noreply\r\n",
        b"touch k x noreply\r\n",
        b"delete k 1 noreply\r\n",
        b"flush_all x noreply\r\n",
        b"verbosity x noreply\r\n",
    ] {
        let e = invalid(req);
        assert!(e.is_silent(), "{}", req.escape_ascii());
        assert_eq!(reply(&e), "");
    }
    // Meta commands always report errors; `q` only hides nominal replies.
    for req in [&b"mg k q z\r\n"[..], b"ms k 1 q z\r\n", b"md k q v\r\n"] {
        let e = invalid(req);
        assert!(!e.is_silent(), "{}", req.escape_ascii());
    }
}

#[test]
fn huge_lengths_never_allocate_or_wait() {
    // A length beyond i32 is a format error, decided from the line alone.
    let e = invalid(b"set k 0 0 99999999999\r\n");
    assert_eq!(
        e.kind(),
        ErrorKind::McClientError("bad command line format")
    );
    assert_eq!(e.recovery(), Recovery::Skip(23));
    // A length within i32 but above the value limit: too large, swallowed,
    // reported at once (no need to buffer the 2 GB).
    let e = invalid(b"set k 0 0 2147483000\r\n");
    assert_eq!(
        e.kind(),
        ErrorKind::McServerError("object too large for cache")
    );
    assert_eq!(e.recovery(), Recovery::Skip(22 + 2147483000 + 2));
    // At the limit the parser waits for exactly the block.
    let limits = Limits::default();
    let line = format!("set k 0 0 {}\r\n", limits.max_value_len);
    assert_eq!(
        parse(line.as_bytes()),
        Parsed::Incomplete {
            need: Some(line.len() + limits.max_value_len + 2)
        }
    );
    assert!(line.len() + limits.max_value_len + 2 <= limits.memcache_max_request());
}

#[test]
fn line_limits() {
    let limits = Limits::default();
    // No newline within max_line: close, without a reply (as memcached).
    let junk = vec![b'x'; limits.max_line + 1];
    let e = invalid(&junk);
    assert_eq!(e.kind(), ErrorKind::McLineTooLong);
    assert!(e.must_close() && e.is_silent());
    assert_eq!(reply(&e), "");
    // Up to max_line without a newline: wait.
    assert_eq!(
        parse(&junk[..limits.max_line]),
        Parsed::Incomplete { need: None }
    );
    // A newline after max_line does not help a non-retrieval command.
    let mut long = b"set ".to_vec();
    long.extend(std::iter::repeat_n(b'k', limits.max_line));
    long.extend_from_slice(b" 0 0 1\r\nx\r\n");
    assert!(invalid(&long).must_close());
    // Multi-gets may be longer, up to max_get_line.
    let mut get = b"get".to_vec();
    for i in 0..1000 {
        get.extend_from_slice(format!(" key:{i}").as_bytes());
    }
    assert!(get.len() > limits.max_line);
    assert_eq!(parse(&get), Parsed::Incomplete { need: None });
    get.extend_from_slice(b"\r\n");
    assert_eq!(keys(&done(&get)).len(), 1000);
    let small = Limits {
        max_get_line: 5000,
        ..Limits::default()
    };
    assert!(invalid_with(&get, &small).must_close());
    // Leading spaces before get are fine (up to 100, as memcached).
    let mut spaced = vec![b' '; 50];
    spaced.extend_from_slice(&get);
    assert_eq!(keys(&done(&spaced)).len(), 1000);
}

#[test]
fn classic_replies() {
    let v = buf(b"hello");
    let mut out = Vec::new();
    write_value(&mut out, b"k", 3, &v, None);
    write_value(&mut out, b"k", 0, &buf(b""), Some(7));
    out.extend_from_slice(END);
    assert_eq!(out, b"VALUE k 3 5\r\nhello\r\nVALUE k 0 0 7\r\n\r\nEND\r\n");
    let mut out = Vec::new();
    write_store_result(&mut out, StoreResult::Exists);
    write_number(&mut out, 0);
    write_number(&mut out, u64::MAX);
    write_stat(&mut out, b"pid", b"1");
    write_stat_u64(&mut out, b"uptime", 10);
    write_version(&mut out, b"1.6.21");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "EXISTS\r\n0\r\n18446744073709551615\r\nSTAT pid 1\r\nSTAT uptime 10\r\nVERSION 1.6.21\r\n"
    );
}

/// A sink that records which bytes were referenced, to check that values go
/// through `value` rather than being copied.
#[derive(Default)]
struct Recorder {
    parts: Vec<(bool, Vec<u8>)>,
}

impl granola_kv::protocol::ReplySink for Recorder {
    fn copy(&mut self, bytes: &[u8]) {
        self.parts.push((false, bytes.to_vec()));
    }
    fn value(&mut self, value: &Buf) {
        self.parts.push((true, value.to_vec()));
    }
}

#[test]
fn values_go_by_reference() {
    let v = buf(&[b'v'; 4096]);
    let mut r = Recorder::default();
    write_value(&mut r, b"key", 1, &v, Some(2));
    assert_eq!(r.parts.len(), 3);
    assert_eq!(r.parts[0], (false, b"VALUE key 1 4096 2\r\n".to_vec()));
    assert_eq!(r.parts[1], (true, vec![b'v'; 4096]));
    assert_eq!(r.parts[2], (false, b"\r\n".to_vec()));

    let Command::MetaGet(g) = done(b"mg key v s\r\n") else {
        panic!()
    };
    let mut r = Recorder::default();
    g.write_hit(&mut r, &v, &MetaItem::default());
    assert_eq!(r.parts.len(), 3);
    assert_eq!(r.parts[0], (false, b"VA 4096 s4096\r\n".to_vec()));
    assert!(r.parts[1].0);
}

#[test]
fn meta_replies() {
    let v = buf(b"hello");
    let item = MetaItem {
        key: b"k",
        key_binary: false,
        client_flags: 5,
        cas: 99,
        ttl: -1,
        last_access: 3,
        fetched: true,
        win: false,
        stale: false,
        token_sent: false,
    };
    let hit = |req: &[u8], item: &MetaItem| {
        let Command::MetaGet(g) = done(req) else {
            panic!()
        };
        let mut out = Vec::new();
        g.write_hit(&mut out, &v, item);
        String::from_utf8(out).unwrap()
    };
    let miss = |req: &[u8]| {
        let Command::MetaGet(g) = done(req) else {
            panic!()
        };
        let mut out = Vec::new();
        g.write_miss(&mut out);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(hit(b"mg k\r\n", &item), "HD\r\n");
    assert_eq!(hit(b"mg k v\r\n", &item), "VA 5\r\nhello\r\n");
    assert_eq!(
        hit(b"mg k s v f c t l h k Oop\r\n", &item),
        "VA 5 s5 f5 c99 t-1 l3 h1 kk Oop\r\nhello\r\n"
    );
    assert_eq!(
        hit(b"mg k t f\r\n", &MetaItem { ttl: 30, ..item }),
        "HD t30 f5\r\n"
    );
    // `k` names the key as stored: base64 with `b` for a key stored so,
    // whichever form the request used.
    let stored_b64 = MetaItem {
        key_binary: true,
        ..item
    };
    assert_eq!(hit(b"mg k k\r\n", &stored_b64), "HD kaw== b\r\n");
    assert_eq!(hit(b"mg aw== b k\r\n", &item), "HD kk\r\n");
    assert_eq!(
        hit(
            b"mg k c\r\n",
            &MetaItem {
                win: true,
                stale: true,
                token_sent: true,
                ..item
            }
        ),
        "HD c99 Z X W\r\n"
    );
    let foo_b64 = MetaItem {
        key: b"foo",
        key_binary: true,
        ..item
    };
    assert_eq!(hit(b"mg Zm9v b k\r\n", &foo_b64), "HD kZm9v b\r\n");
    assert_eq!(miss(b"mg k v s Oop k\r\n"), "EN Oop kk\r\n");
    assert_eq!(miss(b"mg k v q\r\n"), "");

    let ms = |req: &[u8], r: StoreResult| {
        let Command::MetaSet(s) = done(req) else {
            panic!()
        };
        let mut out = Vec::new();
        s.write_result(&mut out, r, 77);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(ms(b"ms k 1\r\nx\r\n", StoreResult::Stored), "HD\r\n");
    assert_eq!(
        ms(b"ms k 1 c O5 k\r\nx\r\n", StoreResult::Stored),
        "HD c77 O5 kk\r\n"
    );
    assert_eq!(ms(b"ms k 1 q\r\nx\r\n", StoreResult::Stored), "");
    assert_eq!(ms(b"ms k 1 q\r\nx\r\n", StoreResult::NotStored), "NS\r\n");
    assert_eq!(ms(b"ms k 1 O1\r\nx\r\n", StoreResult::Exists), "EX O1\r\n");
    assert_eq!(ms(b"ms k 1\r\nx\r\n", StoreResult::NotFound), "NF\r\n");

    let md = |req: &[u8], r: DeleteResult| {
        let Command::MetaDelete(d) = done(req) else {
            panic!()
        };
        let mut out = Vec::new();
        d.write_result(&mut out, r);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(md(b"md k\r\n", DeleteResult::Deleted), "HD\r\n");
    assert_eq!(md(b"md k q\r\n", DeleteResult::Deleted), "");
    assert_eq!(md(b"md k q k\r\n", DeleteResult::NotFound), "NF kk\r\n");
    assert_eq!(md(b"md k O9\r\n", DeleteResult::Exists), "EX O9\r\n");

    let ma = |req: &[u8]| {
        let Command::MetaArith(a) = done(req) else {
            panic!()
        };
        let mut out = Vec::new();
        a.write_value(&mut out, 1234, 8, -1);
        a.write_miss(&mut out, MissResult::NotFound);
        a.write_miss(&mut out, MissResult::Exists);
        a.write_miss(&mut out, MissResult::NotStored);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(ma(b"ma k\r\n"), "HD\r\nNF\r\nEX\r\nNS\r\n");
    assert_eq!(
        ma(b"ma k v c t O1 k\r\n"),
        "VA 4 c8 t-1 O1 kk\r\n1234\r\nNF O1 kk\r\nEX O1 kk\r\nNS O1 kk\r\n"
    );
    assert_eq!(ma(b"ma k q v\r\n"), "NF\r\nEX\r\nNS\r\n");

    let Command::MetaDebug(m) = done(b"me k\r\n") else {
        panic!()
    };
    let mut out = Vec::new();
    m.write_hit(
        &mut out,
        &MeInfo {
            exp: -1,
            la: 5,
            cas: 3,
            fetched: false,
            cls: 1,
            size: 68,
        },
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "ME k exp=-1 la=5 cas=3 fetch=no cls=1 size=68\r\n"
    );
}

#[test]
fn swallow_then_continue() {
    // After a too-large set, the block is skipped and parsing resumes.
    let limits = Limits {
        max_value_len: 4,
        ..Limits::default()
    };
    let input = b"set k 0 0 10\r\n0123456789\r\nget k\r\n";
    let Parsed::Invalid(e) = memcache::parse(input, &limits) else {
        panic!()
    };
    let Recovery::Skip(n) = e.recovery() else {
        panic!()
    };
    assert_eq!(n, 26);
    assert!(matches!(
        memcache::parse(&input[n..], &limits),
        Parsed::Done {
            cmd: Command::Get(_),
            consumed: 7
        }
    ));
}

// ---- round trips ----------------------------------------------------------

fn key_strategy() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(33u8..=255, 1..=250)
}

fn mode_strategy() -> impl Strategy<Value = StoreMode> {
    prop_oneof![
        Just(StoreMode::Set),
        Just(StoreMode::Add),
        Just(StoreMode::Replace),
        Just(StoreMode::Append),
        Just(StoreMode::Prepend),
        Just(StoreMode::Cas),
    ]
}

fn mode_name(m: StoreMode) -> &'static str {
    match m {
        StoreMode::Set => "set",
        StoreMode::Add => "add",
        StoreMode::Replace => "replace",
        StoreMode::Append => "append",
        StoreMode::Prepend => "prepend",
        StoreMode::Cas => "cas",
    }
}

proptest! {
    #[test]
    fn store_round_trip(
        mode in mode_strategy(),
        key in key_strategy(),
        flags in any::<u32>(),
        exptime in any::<i32>(),
        data in proptest::collection::vec(any::<u8>(), 0..2000),
        cas in any::<u64>(),
        noreply in any::<bool>(),
        spaces in 1usize..3,
    ) {
        let sp = " ".repeat(spaces);
        let mut req = format!("{}{sp}", mode_name(mode)).into_bytes();
        req.extend_from_slice(&key);
        req.extend_from_slice(format!("{sp}{flags}{sp}{exptime}{sp}{}", data.len()).as_bytes());
        let cas = (mode == StoreMode::Cas).then_some(cas);
        if let Some(c) = cas {
            req.extend_from_slice(format!(" {c}").as_bytes());
        }
        if noreply {
            req.extend_from_slice(b" noreply");
        }
        req.extend_from_slice(b"\r\n");
        req.extend_from_slice(&data);
        req.extend_from_slice(b"\r\n");
        let want = Command::Store(Store { mode, key: &key, flags, exptime, data: &data, cas, noreply });
        prop_assert_eq!(parse(&req), Parsed::Done { cmd: want, consumed: req.len() });
        // Pipelined twice, then a prefix of a third.
        let mut two = req.repeat(2);
        two.extend_from_slice(&req[..req.len() / 2]);
        let Parsed::Done { consumed, .. } = parse(&two) else { panic!() };
        prop_assert_eq!(consumed, req.len());
        let Parsed::Done { consumed, .. } = parse(&two[req.len()..]) else { panic!() };
        prop_assert_eq!(consumed, req.len());
        let incomplete = matches!(parse(&two[2 * req.len()..]), Parsed::Incomplete { .. });
        prop_assert!(incomplete);
    }

    #[test]
    fn get_round_trip(
        keys in proptest::collection::vec(key_strategy(), 1..50),
        gat in proptest::option::of(any::<i32>()),
        cas in any::<bool>(),
    ) {
        let name = match (gat.is_some(), cas) {
            (false, false) => "get",
            (false, true) => "gets",
            (true, false) => "gat",
            (true, true) => "gats",
        };
        let mut req = name.as_bytes().to_vec();
        if let Some(e) = gat {
            req.extend_from_slice(format!(" {e}").as_bytes());
        }
        for k in &keys {
            req.push(b' ');
            req.extend_from_slice(k);
        }
        req.extend_from_slice(b"\r\n");
        let Parsed::Done { cmd: Command::Get(g), consumed } = parse(&req) else { panic!() };
        prop_assert_eq!(consumed, req.len());
        prop_assert_eq!(g.exptime, gat);
        prop_assert_eq!(g.with_cas(), cas);
        prop_assert_eq!(g.keys.len(), keys.len());
        prop_assert!(g.keys.eq(keys.iter().map(|k| &k[..])));
    }

    #[test]
    fn meta_get_round_trip(
        key in proptest::collection::vec(33u8..127, 1..=250),
        flags in proptest::sample::subsequence(b"cfhklqstuv".to_vec(), 0..10),
        ttl in proptest::option::of(any::<i32>()),
        opaque in proptest::option::of(proptest::collection::vec(33u8..127, 0..31)),
    ) {
        let mut req = b"mg ".to_vec();
        req.extend_from_slice(&key);
        for f in &flags {
            req.extend_from_slice(&[b' ', *f]);
        }
        if let Some(t) = ttl {
            req.extend_from_slice(format!(" T{t}").as_bytes());
        }
        if let Some(o) = &opaque {
            req.extend_from_slice(b" O");
            req.extend_from_slice(o);
        }
        req.extend_from_slice(b"\r\n");
        let Parsed::Done { cmd: Command::MetaGet(g), consumed } = parse(&req) else { panic!() };
        prop_assert_eq!(consumed, req.len());
        prop_assert_eq!(g.key.raw, &key[..]);
        prop_assert_eq!(g.ttl, ttl);
        prop_assert_eq!(g.opaque, opaque.as_deref());
        prop_assert_eq!(g.value, flags.contains(&b'v'));
        prop_assert_eq!(g.quiet, flags.contains(&b'q'));
        for f in &flags {
            prop_assert!(g.has_flag(*f));
        }
    }

    /// Arbitrary bytes: never a panic; results are consistent.
    #[test]
    fn arbitrary_input(input in proptest::collection::vec(
        prop_oneof![Just(b' '), Just(b'\r'), Just(b'\n'), Just(b'0'), Just(b'1'), any::<u8>(),
                    Just(b's'), Just(b'g'), Just(b'm')], 0..300)) {
        let mut pos = 0;
        while pos < input.len() {
            match parse(&input[pos..]) {
                Parsed::Done { consumed, .. } => {
                    prop_assert!(consumed > 0 && consumed <= input.len() - pos);
                    pos += consumed;
                }
                Parsed::Invalid(e) => match e.recovery() {
                    Recovery::Skip(n) => { prop_assert!(n > 0); pos += n; }
                    Recovery::Close => break,
                },
                Parsed::Incomplete { need } => {
                    if let Some(n) = need { prop_assert!(n > input.len() - pos); }
                    break;
                }
            }
        }
    }
}
