//! RESP2: parsing from exact bytes, pipelining, prefixes, malformed input,
//! limits, replies byte for byte, round trips.

use granola::{Buf, Pool};
use granola_kv::protocol::resp::{
    self, encode_command, write_array_header, write_bulk, write_bulk_bytes, write_error,
    write_integer, write_null_array, write_null_bulk, write_simple, write_unknown_command,
    write_wrong_arity, Command, ERR_NOT_INTEGER, ERR_WRONGTYPE, INLINE_ARGS, NULL_BULK, OK,
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
    resp::parse(input, &Limits::default())
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

fn args<'a>(c: &Command<'a>) -> Vec<&'a [u8]> {
    c.args().collect()
}

fn invalid_with(input: &[u8], limits: &Limits) -> ProtocolError {
    match resp::parse(input, limits) {
        Parsed::Invalid(e) => e,
        other => panic!("{}: {other:?}", input.escape_ascii()),
    }
}

fn reply(e: &ProtocolError) -> String {
    let mut out = Vec::new();
    e.write_reply(&mut out);
    String::from_utf8(out).unwrap()
}

const VALID: &[&[u8]] = &[
    b"*1\r\n$4\r\nPING\r\n",
    b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\n\r\n\r\n\r\n",
    b"*0\r\n",
    b"*-1\r\n",
    b"PING\r\n",
    b"PING\n",
    b"get key\r\n",
    b"  set  k  \"a b\"  'c d' \r\n",
    b"\r\n",
    b"*2\r\n$4\r\nMGET\r\n$3\r\n\x00\xff\n\r\n",
];

#[test]
fn every_valid_request_parses_whole() {
    for &req in VALID {
        done(req);
    }
}

#[test]
fn exact_commands() {
    let c = done(b"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n");
    assert_eq!(args(&c), [&b"GET"[..], b"key"]);
    assert!(c.is(b"get") && c.is(b"GET") && !c.is(b"getx"));
    assert_eq!(
        (c.len(), c.name(), c.arg(1)),
        (2, &b"GET"[..], Some(&b"key"[..]))
    );
    let c = done(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\n\r\n\r\n\r\n");
    assert_eq!(args(&c), [&b"SET"[..], b"k", b"\r\n\r\n"]);
    let c = done(b"*2\r\n$4\r\nMGET\r\n$3\r\n\x00\xff\n\r\n");
    assert_eq!(c.arg(1), Some(&b"\x00\xff\n"[..]));
    let c = done(b"  set  k  \"a b\"  'c d' \r\n");
    assert_eq!(args(&c), [&b"set"[..], b"k", b"a b", b"c d"]);
    assert_eq!(args(&done(b"PING\n")), [&b"PING"[..]]);
    // Inline and multibulk encodings of the same arguments are equal.
    assert_eq!(
        done(b"get key\r\n"),
        done(b"*2\r\n$3\r\nget\r\n$3\r\nkey\r\n")
    );
    for empty in [&b"*0\r\n"[..], b"*-1\r\n", b"\r\n", b" \t \r\n"] {
        let c = done(empty);
        assert!(c.is_empty());
        assert_eq!(c.args().count(), 0);
    }
}

#[test]
fn many_arguments() {
    let words: Vec<Vec<u8>> = (0..100).map(|i| format!("w{i}").into_bytes()).collect();
    let mut req = Vec::new();
    encode_command(&words, &mut req);
    let c = done(&req);
    assert_eq!(c.len(), 100);
    assert!(c.args().eq(words.iter().map(|w| &w[..])));
    assert_eq!(c.args().len(), 100);
    for i in [0, INLINE_ARGS - 1, INLINE_ARGS, 99] {
        assert_eq!(c.arg(i), Some(&words[i][..]));
    }
    assert_eq!(c.arg(100), None);
}

#[test]
fn every_proper_prefix_is_incomplete() {
    for &req in VALID {
        for cut in 0..req.len() {
            match parse(&req[..cut]) {
                Parsed::Incomplete { need } => {
                    if let Some(n) = need {
                        assert!(
                            n > cut && n <= req.len(),
                            "{} cut {cut}: {n}",
                            req.escape_ascii()
                        );
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
    for (i, &req) in VALID.iter().enumerate() {
        let Parsed::Done { consumed, .. } = parse(&all[pos..]) else {
            panic!("request {i}")
        };
        assert_eq!(consumed, req.len(), "{}", req.escape_ascii());
        pos += consumed;
    }
    assert_eq!(pos, all.len());
}

#[test]
fn incomplete_need() {
    // The data of a bulk string: the exact end is known.
    assert_eq!(
        parse(b"*1\r\n$10\r\nabc"),
        Parsed::Incomplete {
            need: Some(9 + 10 + 2)
        }
    );
    // Later arguments count at least 6 bytes each.
    assert_eq!(
        parse(b"*3\r\n$3\r\nSET\r\n"),
        Parsed::Incomplete {
            need: Some(13 + 12)
        }
    );
    assert_eq!(parse(b"*3\r"), Parsed::Incomplete { need: None });
    assert_eq!(parse(b"PIN"), Parsed::Incomplete { need: None });
    assert_eq!(parse(b""), Parsed::Incomplete { need: None });
}

/// (request, reply); every RESP protocol error closes the connection.
#[rustfmt::skip]
const MALFORMED: &[(&[u8], &str)] = &[
    (b"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*01\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*+1\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1 \r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\rx", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*99999999999\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*2147483648\r\n", "-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\nx", "-ERR Protocol error: expected '$', got 'x'\r\n"),
    (b"*1\r\n\r\n", "-ERR Protocol error: expected '$', got ' '\r\n"),
    (b"*2\r\n$1\r\na\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"),
    (b"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$10000000000\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$1048577\r\n", "-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$1\r\nab\r\n", "-ERR Protocol error: expected CRLF after bulk data\r\n"),
    (b"set k \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
    (b"set k 'abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
    (b"set k \"a\"b\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
    (b"set k \"a\\\"\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"),
];

#[test]
fn malformed_requests() {
    for &(req, want) in MALFORMED {
        let e = invalid_with(req, &Limits::default());
        assert_eq!(reply(&e), want, "{}", req.escape_ascii());
        assert_eq!(e.recovery(), Recovery::Close, "{}", req.escape_ascii());
        assert!(!e.is_silent());
    }
}

#[test]
fn limits() {
    let limits = Limits::default();
    // Header lines with no CR within the inline limit.
    let mut star = b"*".to_vec();
    star.extend(std::iter::repeat_n(b'1', limits.max_inline + 1));
    assert_eq!(
        reply(&invalid_with(&star, &limits)),
        "-ERR Protocol error: too big mbulk count string\r\n"
    );
    assert_eq!(
        resp::parse(&star[..limits.max_inline], &limits),
        Parsed::Incomplete { need: None }
    );
    let mut dollar = b"*1\r\n$".to_vec();
    dollar.extend(std::iter::repeat_n(b'1', limits.max_inline + 1));
    assert_eq!(
        reply(&invalid_with(&dollar, &limits)),
        "-ERR Protocol error: too big bulk count string\r\n"
    );
    // Inline lines.
    let long = vec![b'a'; limits.max_inline + 1];
    assert_eq!(
        reply(&invalid_with(&long, &limits)),
        "-ERR Protocol error: too big inline request\r\n"
    );
    assert_eq!(
        resp::parse(&long[..limits.max_inline], &limits),
        Parsed::Incomplete { need: None }
    );
    let mut ok = long[..limits.max_inline].to_vec();
    ok.extend_from_slice(b"\n");
    assert!(matches!(resp::parse(&ok, &limits), Parsed::Done { .. }));
    // Custom limits.
    let small = Limits {
        max_args: 2,
        max_bulk: 3,
        ..Limits::default()
    };
    assert!(matches!(
        resp::parse(b"*2\r\n$3\r\nabc\r\n$0\r\n\r\n", &small),
        Parsed::Done { .. }
    ));
    let e = invalid_with(b"*3\r\n", &small);
    assert_eq!(
        e.kind(),
        ErrorKind::RespProtocol("invalid multibulk length")
    );
    let e = invalid_with(b"*1\r\n$4\r\n", &small);
    assert_eq!(e.kind(), ErrorKind::RespProtocol("invalid bulk length"));
    // A huge count is refused from the header alone: nothing is reserved.
    let e = invalid_with(b"*1\r\n$10737418240\r\n", &limits);
    assert!(e.must_close());
    // The largest allowed count (Redis's INT_MAX) with no data yet: a
    // lower bound, no allocation.
    let Parsed::Incomplete { need: Some(n) } = resp::parse(b"*2147483647\r\n", &limits) else {
        panic!()
    };
    assert_eq!(n, 13 + 6 * 2147483647);
}

fn resp_cmd<A: AsRef<[u8]>>(words: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_command(words, &mut out);
    out
}

/// Before AUTH (`--requirepass`), Redis's limits: at most 10 arguments
/// of at most 16384 bytes; the same requests parse once authenticated.
#[test]
fn unauthenticated_limits() {
    let before = Limits {
        auth_required: true,
        ..Limits::default()
    };
    let after = Limits::default();
    let eleven = resp_cmd(&["DEL", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]);
    let ten = resp_cmd(&["DEL", "a", "b", "c", "d", "e", "f", "g", "h", "i"]);
    let long = resp_cmd(&[&b"ECHO"[..], &[b'x'; 16385]]);
    let longest = resp_cmd(&[&b"ECHO"[..], &[b'x'; 16384]]);
    for (req, why) in [
        (&eleven, "unauthenticated multibulk length"),
        (&long, "unauthenticated bulk length"),
    ] {
        let e = invalid_with(req, &before);
        assert_eq!(e.kind(), ErrorKind::RespProtocol(why));
        assert_eq!(reply(&e), format!("-ERR Protocol error: {why}\r\n"));
        assert_eq!(e.recovery(), Recovery::Close);
        // Also from the header alone, with the rest still to come.
        let e = invalid_with(&req[..req.len() - 20], &before);
        assert_eq!(e.kind(), ErrorKind::RespProtocol(why));
        assert!(matches!(resp::parse(req, &after), Parsed::Done { .. }));
    }
    for req in [&ten, &longest] {
        assert!(matches!(resp::parse(req, &before), Parsed::Done { .. }));
    }
    // Inline requests are not limited (Redis limits multibulks only).
    assert!(matches!(
        resp::parse(b"DEL a b c d e f g h i j k l\r\n", &before),
        Parsed::Done { .. }
    ));
}

#[test]
fn encoders() {
    let v = buf(b"value");
    let mut out = Vec::new();
    write_simple(&mut out, b"OK");
    out.extend_from_slice(OK);
    write_error(&mut out, b"ERR boom");
    out.extend_from_slice(ERR_NOT_INTEGER);
    out.extend_from_slice(ERR_WRONGTYPE);
    write_integer(&mut out, 0);
    write_integer(&mut out, 1000);
    write_integer(&mut out, -1);
    write_bulk(&mut out, &v);
    write_bulk(&mut out, &buf(b""));
    write_bulk_bytes(&mut out, b"a\r\nb");
    write_null_bulk(&mut out);
    out.extend_from_slice(NULL_BULK);
    write_array_header(&mut out, 2);
    write_array_header(&mut out, 0);
    write_null_array(&mut out);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "+OK\r\n+OK\r\n-ERR boom\r\n\
         -ERR value is not an integer or out of range\r\n\
         -WRONGTYPE Operation against a key holding the wrong kind of value\r\n\
         :0\r\n:1000\r\n:-1\r\n\
         $5\r\nvalue\r\n$0\r\n\r\n$4\r\na\r\nb\r\n$-1\r\n$-1\r\n*2\r\n*0\r\n*-1\r\n"
    );
}

#[test]
fn command_errors() {
    let mut out = Vec::new();
    write_unknown_command(&mut out, &done(b"foo a b\r\n"));
    write_unknown_command(&mut out, &done(b"*1\r\n$6\r\nFOOBAR\r\n"));
    write_wrong_arity(&mut out, b"GET");
    write_wrong_arity(&mut out, b"set");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n\
         -ERR unknown command 'FOOBAR', with args beginning with: \r\n\
         -ERR wrong number of arguments for 'get' command\r\n\
         -ERR wrong number of arguments for 'set' command\r\n"
    );
}

/// A sink that records what was referenced.
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
fn bulk_values_go_by_reference() {
    let v = buf(&[7u8; 5000]);
    let mut r = Recorder::default();
    write_bulk(&mut r, &v);
    assert_eq!(
        r.parts,
        [
            (false, b"$5000\r\n".to_vec()),
            (true, vec![7u8; 5000]),
            (false, b"\r\n".to_vec())
        ]
    );
}

proptest! {
    #[test]
    fn multibulk_round_trip(
        words in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 1..30),
    ) {
        let mut req = Vec::new();
        encode_command(&words, &mut req);
        let c = done(&req);
        prop_assert_eq!(c.len(), words.len());
        prop_assert!(c.args().eq(words.iter().map(|w| &w[..])));
        for (i, w) in words.iter().enumerate() {
            prop_assert_eq!(c.arg(i), Some(&w[..]));
        }
        // Pipelined with a partial copy after it.
        let mut two = req.clone();
        two.extend_from_slice(&req[..req.len() - 1]);
        let Parsed::Done { consumed, .. } = parse(&two) else { panic!() };
        prop_assert_eq!(consumed, req.len());
        let incomplete = matches!(parse(&two[consumed..]), Parsed::Incomplete { .. });
        prop_assert!(incomplete);
    }

    #[test]
    fn inline_round_trip(
        words in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![33u8..=33, 35u8..=38, 40u8..=41, 43u8..=91, 93u8..=126, 128u8..=255], 1..20),
            1..20),
        quoted in proptest::collection::vec(any::<bool>(), 20),
    ) {
        let mut line = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if i > 0 { line.push(b' '); }
            if quoted[i] {
                line.push(b'"');
                line.extend_from_slice(w);
                line.push(b'"');
            } else {
                line.extend_from_slice(w);
            }
        }
        line.extend_from_slice(b"\r\n");
        let c = done(&line);
        prop_assert!(c.args().eq(words.iter().map(|w| &w[..])));
        let mut mb = Vec::new();
        encode_command(&words, &mut mb);
        prop_assert_eq!(c, done(&mb));
    }

    /// Arbitrary bytes: never a panic; results are consistent.
    #[test]
    fn arbitrary_input(input in proptest::collection::vec(
        prop_oneof![Just(b'*'), Just(b'$'), Just(b'\r'), Just(b'\n'), Just(b'1'), Just(b'-'),
                    Just(b'"'), Just(b' '), any::<u8>()], 0..200)) {
        let mut pos = 0;
        while pos < input.len() {
            match parse(&input[pos..]) {
                Parsed::Done { consumed, cmd } => {
                    prop_assert!(consumed > 0 && consumed <= input.len() - pos);
                    prop_assert_eq!(cmd.args().count(), cmd.len());
                    pos += consumed;
                }
                Parsed::Invalid(e) => { prop_assert!(e.must_close()); break; }
                Parsed::Incomplete { need } => {
                    if let Some(n) = need { prop_assert!(n > input.len() - pos); }
                    break;
                }
            }
        }
    }
}

/// The resumable parser agrees with a fresh parse at every split point,
/// and a 1.2 MB DEL of 100,000 keys trickled in byte by byte completes
/// with O(1) work per byte (a parser that rescanned would need ~10^11 byte
/// visits here: the test would not finish).
#[test]
fn resumable_parser_trickled() {
    use granola_kv::protocol::resp::Parser;
    let keys: Vec<String> = (0..100_000).map(|i| format!("key:{i}")).collect();
    let mut args: Vec<&[u8]> = vec![b"DEL"];
    args.extend(keys.iter().map(|k| k.as_bytes()));
    let mut req = Vec::new();
    encode_command(&args, &mut req);
    req.extend_from_slice(b"PING\r\n");
    let limits = Limits::default();
    let mut p = Parser::default();
    let mut done = None;
    for end in 1..=req.len() {
        match p.parse(&req[..end], &limits) {
            Parsed::Incomplete { .. } => {}
            Parsed::Done { cmd, consumed } => {
                assert_eq!(end, consumed);
                assert_eq!(cmd.len(), 100_001);
                assert_eq!(cmd.arg(99_999), Some(&b"key:99998"[..]));
                done = Some(consumed);
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let consumed = done.expect("the DEL completes");
    let rest = &req[consumed..];
    let mut q = Parser::default();
    for end in 1..rest.len() {
        assert!(matches!(
            q.parse(&rest[..end], &limits),
            Parsed::Incomplete { .. }
        ));
    }
    match q.parse(rest, &limits) {
        Parsed::Done { cmd, consumed } => {
            assert!(cmd.is(b"ping"));
            assert_eq!(consumed, rest.len());
        }
        other => panic!("{other:?}"),
    }
}

proptest! {
    /// Random requests (valid or not) split at random points: the resumed
    /// parse equals a fresh parse whenever it completes or fails.
    #[test]
    fn resumable_parser_agrees(
        words in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..6),
        junk in proptest::collection::vec(any::<u8>(), 0..8),
        step in 1usize..9,
        inline in any::<bool>(),
    ) {
        use granola_kv::protocol::resp::Parser;
        let mut input = Vec::new();
        if inline {
            for w in &words {
                input.extend(w.iter().filter(|b| !b.is_ascii_whitespace() && **b != b'"' && **b != b'\''));
                input.push(b' ');
            }
            input.extend_from_slice(b"\r\n");
        } else {
            encode_command(&words, &mut input);
        }
        input.extend_from_slice(&junk);
        let limits = Limits { max_bulk: 8, ..Limits::default() };
        let mut p = Parser::default();
        let mut end = 0;
        while end < input.len() {
            end = (end + step).min(input.len());
            let resumed = p.parse(&input[..end], &limits);
            let fresh = resp::parse(&input[..end], &limits);
            match (&resumed, &fresh) {
                (Parsed::Incomplete { .. }, Parsed::Incomplete { .. }) => {}
                _ => {
                    prop_assert_eq!(resumed, fresh);
                    break;
                }
            }
        }
    }
}
