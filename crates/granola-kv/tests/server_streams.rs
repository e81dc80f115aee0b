//! Streams over RESP: transcripts of every stream command against the
//! replies Redis 7 gives (RESP2 bytes exactly; RESP3's XREAD map), large
//! entries sent by reference and read back whole, and a stream written
//! past the memory limit staying within it.

mod common;

use common::*;

fn rt(c: &mut Client, args: &[&str], want: &[u8]) {
    c.roundtrip(&resp_cmd(args), want);
}

fn err(c: &mut Client, args: &[&str], starts: &str) {
    match c.resp(args) {
        Resp::Error(e) => assert!(
            e.starts_with(starts.as_bytes()),
            "{args:?}: {}",
            String::from_utf8_lossy(&e)
        ),
        r => panic!("{args:?}: {r:?}, wanted an error {starts}"),
    }
}

/// `[id, [f, v, ...]]` as RESP2 bytes.
fn entry(id: &str, parts: &[&str]) -> Vec<u8> {
    let mut out = b"*2\r\n".to_vec();
    out.extend_from_slice(&resp_bulk(id.as_bytes()));
    out.extend_from_slice(format!("*{}\r\n", parts.len()).as_bytes());
    for p in parts {
        out.extend_from_slice(&resp_bulk(p.as_bytes()));
    }
    out
}

fn entries(list: &[(&str, &[&str])]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", list.len()).into_bytes();
    for (id, parts) in list {
        out.extend_from_slice(&entry(id, parts));
    }
    out
}

fn id_of(r: Resp) -> (u64, u64) {
    let Resp::Bulk(Some(b)) = r else {
        panic!("not an ID: {r:?}");
    };
    let s = String::from_utf8(b).unwrap();
    let (ms, seq) = s.split_once('-').expect("ms-seq");
    (ms.parse().unwrap(), seq.parse().unwrap())
}

#[test]
fn stream_transcript() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    // Explicit IDs, a bare ms, and `ms-*`.
    rt(&mut c, &["XADD", "s", "1-1", "a", "1"], &resp_bulk(b"1-1"));
    rt(&mut c, &["XADD", "s", "1-*", "b", "2"], &resp_bulk(b"1-2"));
    rt(
        &mut c,
        &["XADD", "s", "5", "c", "3", "d", "4"],
        &resp_bulk(b"5-0"),
    );
    err(
        &mut c,
        &["XADD", "s", "5-0", "x", "y"],
        "ERR The ID specified in XADD is equal or smaller",
    );
    err(
        &mut c,
        &["XADD", "s", "4-*", "x", "y"],
        "ERR The ID specified in XADD is equal or smaller",
    );
    err(
        &mut c,
        &["XADD", "t", "0-0", "x", "y"],
        "ERR The ID specified in XADD must be greater than 0-0",
    );
    err(
        &mut c,
        &["XADD", "s", "1-x", "x", "y"],
        "ERR Invalid stream ID",
    );
    err(
        &mut c,
        &["XADD", "s", "*", "x"],
        "ERR wrong number of arguments for 'xadd'",
    );
    rt(&mut c, &["EXISTS", "t"], b":0\r\n");
    rt(&mut c, &["XLEN", "s"], b":3\r\n");
    rt(&mut c, &["XLEN", "missing"], b":0\r\n");
    rt(&mut c, &["TYPE", "s"], b"+stream\r\n");
    rt(&mut c, &["OBJECT", "ENCODING", "s"], &resp_bulk(b"stream"));

    let all: &[(&str, &[&str])] = &[
        ("1-1", &["a", "1"]),
        ("1-2", &["b", "2"]),
        ("5-0", &["c", "3", "d", "4"]),
    ];
    rt(&mut c, &["XRANGE", "s", "-", "+"], &entries(all));
    rt(
        &mut c,
        &["XRANGE", "s", "-", "+", "COUNT", "2"],
        &entries(&all[..2]),
    );
    rt(&mut c, &["XRANGE", "s", "1", "1"], &entries(&all[..2]));
    rt(&mut c, &["XRANGE", "s", "(1-1", "+"], &entries(&all[1..]));
    rt(&mut c, &["XRANGE", "s", "5", "1"], b"*0\r\n");
    rt(&mut c, &["XRANGE", "missing", "-", "+"], b"*0\r\n");
    let rev: Vec<_> = all.iter().rev().copied().collect();
    rt(&mut c, &["XREVRANGE", "s", "+", "-"], &entries(&rev));
    rt(
        &mut c,
        &["XREVRANGE", "s", "+", "-", "COUNT", "1"],
        &entries(&rev[..1]),
    );
    rt(
        &mut c,
        &["XREVRANGE", "s", "(5-0", "-"],
        &entries(&rev[1..]),
    );
    err(&mut c, &["XRANGE", "s", "x", "+"], "ERR Invalid stream ID");
    err(
        &mut c,
        &["XRANGE", "s", "-", "+", "COUNT"],
        "ERR syntax error",
    );

    // XREAD (RESP2: an array of [key, entries]; nothing: a null array).
    let mut want = b"*1\r\n*2\r\n".to_vec();
    want.extend_from_slice(&resp_bulk(b"s"));
    want.extend_from_slice(&entries(&all[1..]));
    rt(&mut c, &["XREAD", "STREAMS", "s", "1-1"], &want);
    let mut want = b"*1\r\n*2\r\n".to_vec();
    want.extend_from_slice(&resp_bulk(b"s"));
    want.extend_from_slice(&entries(&all[..1]));
    rt(
        &mut c,
        &["XREAD", "COUNT", "1", "STREAMS", "s", "missing", "0", "0"],
        &want,
    );
    rt(&mut c, &["XREAD", "STREAMS", "s", "$"], b"*-1\r\n");
    let mut want = b"*1\r\n*2\r\n".to_vec();
    want.extend_from_slice(&resp_bulk(b"s"));
    want.extend_from_slice(&entries(&all[2..]));
    rt(&mut c, &["XREAD", "STREAMS", "s", "+"], &want);
    err(
        &mut c,
        &["XREAD", "STREAMS", "s", "t", "0"],
        "ERR Unbalanced 'xread' list of streams",
    );
    // Nothing after `$` within 10 ms (the waiting itself: server_blocking.rs).
    rt(
        &mut c,
        &["XREAD", "BLOCK", "10", "STREAMS", "s", "$"],
        b"*-1\r\n",
    );
    err(
        &mut c,
        &["XREAD", "BLOCK", "-1", "STREAMS", "s", "$"],
        "ERR timeout is negative",
    );
    err(
        &mut c,
        &["XREAD", "BLOCK", "soon", "STREAMS", "s", "$"],
        "ERR timeout is not an integer or out of range",
    );
    err(
        &mut c,
        &["XREAD", "STREAMS", "s", "nope"],
        "ERR Invalid stream ID",
    );

    // XDEL, then the deleted ID is not reused.
    rt(&mut c, &["XDEL", "s", "1-2", "9-9"], b":1\r\n");
    err(&mut c, &["XDEL", "s", "bad"], "ERR Invalid stream ID");
    rt(&mut c, &["XDEL", "missing", "1-1"], b":0\r\n");
    rt(&mut c, &["EXISTS", "missing"], b":0\r\n");
    rt(&mut c, &["XADD", "s", "5-*", "e", "5"], &resp_bulk(b"5-1"));
    rt(&mut c, &["XLEN", "s"], b":3\r\n");

    // XINFO STREAM: Redis' fields by name.
    match c.resp(&["XINFO", "STREAM", "s"]) {
        Resp::Array(Some(v)) => {
            let field = |name: &str| {
                let i = v
                    .iter()
                    .position(|r| *r == bulk(name))
                    .unwrap_or_else(|| panic!("{name} in {v:?}"));
                v[i + 1].clone()
            };
            assert_eq!(field("length"), Resp::Int(3));
            assert_eq!(
                field("last-generated-id"),
                Resp::Bulk(Some(b"5-1".to_vec()))
            );
            assert_eq!(
                field("max-deleted-entry-id"),
                Resp::Bulk(Some(b"1-2".to_vec()))
            );
            assert_eq!(field("entries-added"), Resp::Int(4));
            assert_eq!(field("groups"), Resp::Int(0));
            assert!(
                matches!(field("first-entry"), Resp::Array(Some(e)) if e[0] == Resp::Bulk(Some(b"1-1".to_vec())))
            );
            assert!(
                matches!(field("last-entry"), Resp::Array(Some(e)) if e[0] == Resp::Bulk(Some(b"5-1".to_vec())))
            );
        }
        r => panic!("XINFO STREAM: {r:?}"),
    }
    rt(&mut c, &["XINFO", "GROUPS", "s"], b"*0\r\n");
    err(&mut c, &["XINFO", "STREAM", "missing"], "ERR no such key");

    // Trimming: MAXLEN exact, MINID, LIMIT only with `~`, XADD's own trim.
    for ms in 10..20 {
        let id = format!("{ms}-0");
        rt(
            &mut c,
            &["XADD", "s", &id, "n", &ms.to_string()],
            &resp_bulk(id.as_bytes()),
        );
    }
    rt(&mut c, &["XTRIM", "s", "MAXLEN", "10"], b":3\r\n");
    rt(&mut c, &["XTRIM", "s", "MINID", "=", "12"], b":2\r\n");
    err(
        &mut c,
        &["XTRIM", "s", "MAXLEN", "5", "LIMIT", "1"],
        "ERR syntax error, LIMIT cannot be used without the special ~ option",
    );
    rt(
        &mut c,
        &["XTRIM", "s", "MAXLEN", "~", "5", "LIMIT", "1"],
        b":1\r\n",
    );
    err(
        &mut c,
        &["XTRIM", "s", "MAXLEN", "-1"],
        "ERR The MAXLEN argument must be >= 0",
    );
    err(&mut c, &["XTRIM", "s", "SIZE", "1"], "ERR syntax error");
    rt(
        &mut c,
        &["XADD", "s", "MAXLEN", "2", "20-0", "n", "20"],
        &resp_bulk(b"20-0"),
    );
    rt(
        &mut c,
        &["XRANGE", "s", "-", "+"],
        &entries(&[("19-0", &["n", "19"]), ("20-0", &["n", "20"])]),
    );
    rt(
        &mut c,
        &["XADD", "s", "MINID", "20", "21-0", "n", "21"],
        &resp_bulk(b"21-0"),
    );
    rt(&mut c, &["XLEN", "s"], b":2\r\n");

    // NOMKSTREAM: nothing created for a missing key.
    rt(
        &mut c,
        &["XADD", "none", "NOMKSTREAM", "*", "f", "v"],
        b"$-1\r\n",
    );
    rt(&mut c, &["EXISTS", "none"], b":0\r\n");
    rt(
        &mut c,
        &["XADD", "s", "NOMKSTREAM", "22-0", "f", "v"],
        &resp_bulk(b"22-0"),
    );

    // An emptied stream stays, and remembers its last ID.
    rt(&mut c, &["XTRIM", "s", "MAXLEN", "0"], b":3\r\n");
    rt(&mut c, &["EXISTS", "s"], b":1\r\n");
    rt(&mut c, &["XLEN", "s"], b":0\r\n");
    err(
        &mut c,
        &["XADD", "s", "22-0", "f", "v"],
        "ERR The ID specified in XADD is equal or smaller",
    );
    rt(
        &mut c,
        &["XADD", "s", "MAXLEN", "0", "23-0", "f", "v"],
        &resp_bulk(b"23-0"),
    );
    rt(&mut c, &["XLEN", "s"], b":0\r\n");

    // XSETID.
    rt(&mut c, &["XSETID", "s", "100-0"], b"+OK\r\n");
    err(
        &mut c,
        &["XADD", "s", "99-0", "f", "v"],
        "ERR The ID specified in XADD is equal or smaller",
    );
    rt(
        &mut c,
        &["XADD", "s", "100-*", "f", "v"],
        &resp_bulk(b"100-1"),
    );
    err(
        &mut c,
        &["XSETID", "s", "50-0"],
        "ERR The ID specified in XSETID is smaller than the target stream top item",
    );
    err(&mut c, &["XSETID", "missing", "1-0"], "ERR no such key");

    // Auto IDs: Unix milliseconds, strictly increasing.
    let mut last = (0, 0);
    for _ in 0..50 {
        let id = id_of(c.resp(&["XADD", "auto", "*", "k", "v"]));
        assert!(id > last, "{id:?} after {last:?}");
        last = id;
    }
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(
        last.0 <= now_ms && last.0 + 60_000 > now_ms,
        "{last:?} vs {now_ms}"
    );

    // Type errors both ways; COPY, RENAME and DEL.
    rt(&mut c, &["SET", "str", "x"], b"+OK\r\n");
    err(&mut c, &["XADD", "str", "*", "f", "v"], "WRONGTYPE");
    err(&mut c, &["XRANGE", "str", "-", "+"], "WRONGTYPE");
    err(&mut c, &["XREAD", "STREAMS", "str", "0"], "WRONGTYPE");
    err(&mut c, &["GET", "auto"], "WRONGTYPE");
    err(&mut c, &["HSET", "auto", "f", "v"], "WRONGTYPE");
    rt(&mut c, &["COPY", "auto", "auto2"], b":1\r\n");
    rt(&mut c, &["XLEN", "auto2"], b":50\r\n");
    rt(&mut c, &["RENAME", "auto2", "auto3"], b"+OK\r\n");
    rt(&mut c, &["XLEN", "auto3"], b":50\r\n");
    rt(&mut c, &["TYPE", "auto3"], b"+stream\r\n");
    rt(&mut c, &["DEL", "auto", "auto3"], b":2\r\n");
}

#[test]
fn xread_is_a_map_in_resp3() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    c.send(&resp_cmd(&["HELLO", "3"]));
    c.read_until(b"modules\r\n");
    c.read_until(b"*0\r\n");
    rt(&mut c, &["XADD", "s", "1-0", "f", "v"], &resp_bulk(b"1-0"));
    let mut want = b"%1\r\n".to_vec();
    want.extend_from_slice(&resp_bulk(b"s"));
    want.extend_from_slice(&entries(&[("1-0", &["f", "v"])]));
    rt(&mut c, &["XREAD", "STREAMS", "s", "0"], &want);
    rt(&mut c, &["XREAD", "STREAMS", "s", "$"], b"_\r\n");
    rt(
        &mut c,
        &["XADD", "none", "NOMKSTREAM", "*", "f", "v"],
        b"_\r\n",
    );
}

/// Entries above the copy threshold go out by reference and come back
/// byte for byte, beside small ones in the same entry.
#[test]
fn large_entries_go_by_reference() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    let before = mc_stat(srv.mc(), "reply_bytes_referenced");
    let big = pattern(7, 64 << 10);
    let mut req = resp_cmd(&[
        &b"XADD"[..],
        b"big",
        b"1-0",
        b"small",
        b"x",
        b"payload",
        &big,
    ]);
    c.send(&req);
    c.expect(&resp_bulk(b"1-0"));
    let mut want = b"*1\r\n*2\r\n".to_vec();
    want.extend_from_slice(&resp_bulk(b"1-0"));
    want.extend_from_slice(b"*4\r\n");
    for p in [&b"small"[..], b"x", b"payload", &big] {
        want.extend_from_slice(&resp_bulk(p));
    }
    req = resp_cmd(&["XRANGE", "big", "-", "+"]);
    c.roundtrip(&req, &want);
    c.roundtrip(&req, &want);
    wait_referenced(&srv, before + 2 * big.len() as u64);
}

/// A stream written to three times a 32 MiB limit: XADD is refused with
/// Redis' OOM error once the stream fills the store (the key being
/// written is not evicted under it), and `used_memory` never passes
/// `maxmemory`; every entry still there reads back whole.
#[test]
fn a_stream_stays_within_the_limit() {
    const LIMIT_MB: usize = 32;
    let mut cfg = config();
    cfg.memory_mb = LIMIT_MB;
    cfg.udp_port = 0;
    cfg.native_udp_port = 0;
    let srv = Server::start(cfg);
    let mut c = Client::connect(srv.resp());
    let value = |i: usize| {
        let mut v = format!("{i}|").into_bytes();
        v.extend_from_slice(&pattern(i as u64, 300));
        v
    };
    let (mut stored, mut refused) = (0usize, 0usize);
    for i in 1..=3 * (LIMIT_MB << 20) / 300 {
        match c.resp(&[
            &b"XADD"[..],
            b"s",
            format!("{i}-0").as_bytes(),
            b"v",
            &value(i),
        ]) {
            Resp::Bulk(Some(_)) => stored += 1,
            Resp::Error(e) if e.starts_with(b"OOM") => {
                refused += 1;
                if refused > 100 {
                    break;
                }
            }
            r => panic!("XADD {i}: {r:?}"),
        }
    }
    assert!(
        refused > 0,
        "{stored} entries of 300 B fit in {LIMIT_MB} MiB?"
    );
    let used = resp_info_u64(srv.resp(), "used_memory");
    let max = resp_info_u64(srv.resp(), "maxmemory");
    assert!(used <= max, "used_memory {used} > maxmemory {max}");
    let len = match c.resp(&["XLEN", "s"]) {
        Resp::Int(n) => n as usize,
        r => panic!("{r:?}"),
    };
    assert!(len > 0 && len <= stored, "XLEN {len}, stored {stored}");
    // Every entry there is whole (its value names its ID), read a page
    // at a time from after the last ID seen, as consumers do.
    let (mut seen, mut after) = (0, "-".to_string());
    loop {
        let Resp::Array(Some(page)) = c.resp(&["XRANGE", "s", &after, "+", "COUNT", "1000"]) else {
            panic!("XRANGE page after {after}");
        };
        if page.is_empty() {
            break;
        }
        for e in page {
            let Resp::Array(Some(e)) = e else {
                panic!("{e:?}")
            };
            let (Resp::Bulk(Some(id)), Resp::Array(Some(parts))) = (&e[0], &e[1]) else {
                panic!("{e:?}");
            };
            let id = String::from_utf8(id.clone()).unwrap();
            let i: usize = id.trim_end_matches("-0").parse().unwrap();
            assert_eq!(parts[1], Resp::Bulk(Some(value(i))), "entry {i}");
            after = format!("({id}");
            seen += 1;
        }
    }
    assert_eq!(seen, len);
}

/// Hostile and random stream and consumer-group commands (IDs at the
/// edges of the ID space, options in any order, wrong types, empty and
/// large arguments): every
/// one gets a well-formed reply, the server keeps serving, and afterwards
/// each stream's length agrees with what a full range returns.
#[test]
fn random_stream_commands_get_well_formed_replies() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    rt(&mut c, &["SET", "str", "x"], b"+OK\r\n");
    let big = "x".repeat(3000);
    let max = "18446744073709551615";
    let max_id = format!("{max}-{max}");
    let tokens: Vec<String> = [
        "*",
        "-",
        "+",
        "$",
        "0",
        "0-0",
        "0-1",
        "1",
        "1-1",
        "5-*",
        "(3",
        "(0-0",
        "-1",
        "100",
        "99999999999999999999",
        "MAXLEN",
        "MINID",
        "~",
        "=",
        "LIMIT",
        "COUNT",
        "STREAMS",
        "NOMKSTREAM",
        "BLOCK",
        "STREAM",
        "GROUPS",
        "FULL",
        "HELP",
        "ENTRIESADDED",
        "MAXDELETEDID",
        "f",
        "v",
        "",
        "s",
        "t",
        "str",
        "GROUP",
        "g",
        "c",
        ">",
        "CREATE",
        "SETID",
        "DESTROY",
        "CREATECONSUMER",
        "DELCONSUMER",
        "MKSTREAM",
        "ENTRIESREAD",
        "CONSUMERS",
        "NOACK",
        "JUSTID",
        "FORCE",
        "IDLE",
        "TIME",
        "RETRYCOUNT",
        "LASTID",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        big,
        format!("{max}-*"),
        max_id.clone(),
        format!("({max_id}"),
    ])
    .collect();
    let commands = [
        "XADD",
        "XRANGE",
        "XREVRANGE",
        "XDEL",
        "XTRIM",
        "XLEN",
        "XREAD",
        "XSETID",
        "XINFO",
        "XGROUP",
        "XREADGROUP",
        "XACK",
        "XPENDING",
        "XCLAIM",
        "XAUTOCLAIM",
    ];
    let keys = ["s", "t", "str", "missing"];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let (mut answered, mut errors) = (0, 0);
    for round in 0..4000 {
        let mut args: Vec<String> = vec![commands[next(commands.len())].to_string()];
        if round % 3 == 0 {
            // Well-formed appends keep the streams growing.
            args = ["XADD", keys[round % 2], "*", "f"]
                .map(String::from)
                .to_vec();
            args.push(round.to_string());
        } else {
            args.push(keys[next(keys.len())].to_string());
            for _ in 0..next(9) {
                args.push(tokens[next(tokens.len())].clone());
            }
        }
        // `read_resp` panics on anything but one well-formed reply.
        match c.resp(&args) {
            Resp::Error(_) => errors += 1,
            _ => answered += 1,
        }
    }
    // Not only errors: the appends (until a random XSETID moves a stream
    // to the last possible ID), and the random reads that hit.
    assert!(
        answered > 500 && errors > 500,
        "{answered} answers, {errors} errors"
    );
    rt(&mut c, &["PING"], b"+PONG\r\n");
    for key in ["s", "t"] {
        let len = match c.resp(&["XLEN", key]) {
            Resp::Int(n) => n as usize,
            r => panic!("XLEN {key}: {r:?}"),
        };
        match c.resp(&["XRANGE", key, "-", "+"]) {
            Resp::Array(Some(v)) => assert_eq!(v.len(), len, "{key}"),
            r => panic!("XRANGE {key}: {r:?}"),
        }
    }
    assert!(srv.conns_open() >= 1, "the connection survived");
}

fn bulk(s: &str) -> Resp {
    Resp::Bulk(Some(s.as_bytes().to_vec()))
}

fn arr(v: Vec<Resp>) -> Resp {
    Resp::Array(Some(v))
}

/// `[id, [f, v]]` as a parsed reply.
fn entry_of(id: &str, f: &str, v: &str) -> Resp {
    arr(vec![bulk(id), arr(vec![bulk(f), bulk(v)])])
}

/// `[[key, entries]]`, XREADGROUP's RESP2 reply for one stream.
fn one_stream(key: &str, entries: Vec<Resp>) -> Resp {
    arr(vec![arr(vec![bulk(key), arr(entries)])])
}

/// Consumer groups as Redis 7 answers them: create (MKSTREAM, BUSYGROUP),
/// new entries and a consumer's history (a deleted entry as nil), the
/// PEL in XPENDING's two forms, XACK, XCLAIM, XAUTOCLAIM (deleted IDs
/// reported and dropped), XINFO GROUPS/CONSUMERS, SETID, consumers made
/// and deleted, DESTROY, and the errors.
#[test]
fn consumer_groups_transcript() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    for (id, v) in [("1-0", "a"), ("2-0", "b"), ("3-0", "c")] {
        rt(
            &mut c,
            &["XADD", "q", id, "f", v],
            &resp_bulk(id.as_bytes()),
        );
    }
    err(
        &mut c,
        &["XGROUP", "CREATE", "missing", "g", "$"],
        "ERR The XGROUP subcommand requires the key to exist",
    );
    rt(&mut c, &["XGROUP", "CREATE", "q", "g", "0"], b"+OK\r\n");
    err(&mut c, &["XGROUP", "CREATE", "q", "g", "0"], "BUSYGROUP");
    rt(
        &mut c,
        &["XGROUP", "CREATE", "new", "g", "$", "MKSTREAM"],
        b"+OK\r\n",
    );
    rt(&mut c, &["XLEN", "new"], b":0\r\n");
    rt(&mut c, &["TYPE", "new"], b"+stream\r\n");

    let read = |c: &mut Client, who: &str, extra: &[&str], from: &str| {
        let mut args = vec!["XREADGROUP", "GROUP", "g", who];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["STREAMS", "q", from]);
        c.resp(&args)
    };
    assert_eq!(
        read(&mut c, "alice", &["COUNT", "2"], ">"),
        one_stream(
            "q",
            vec![entry_of("1-0", "f", "a"), entry_of("2-0", "f", "b")]
        )
    );
    assert_eq!(
        read(&mut c, "bob", &[], ">"),
        one_stream("q", vec![entry_of("3-0", "f", "c")])
    );
    assert_eq!(read(&mut c, "bob", &[], ">"), Resp::Array(None));
    assert_eq!(
        c.resp(&["XPENDING", "q", "g"]),
        arr(vec![
            Resp::Int(3),
            bulk("1-0"),
            bulk("3-0"),
            arr(vec![
                arr(vec![bulk("alice"), bulk("2")]),
                arr(vec![bulk("bob"), bulk("1")])
            ]),
        ])
    );
    // alice's history: what she holds, after the ID given.
    assert_eq!(
        read(&mut c, "alice", &[], "0"),
        one_stream(
            "q",
            vec![entry_of("1-0", "f", "a"), entry_of("2-0", "f", "b")]
        )
    );
    rt(&mut c, &["XACK", "q", "g", "1-0", "9-0"], b":1\r\n");
    match c.resp(&["XPENDING", "q", "g", "-", "+", "10"]) {
        Resp::Array(Some(rows)) => {
            let got: Vec<(Resp, Resp, Resp)> = rows
                .into_iter()
                .map(|r| match r {
                    Resp::Array(Some(f)) => {
                        assert!(matches!(f[2], Resp::Int(ms) if ms >= 0), "{f:?}");
                        (f[0].clone(), f[1].clone(), f[3].clone())
                    }
                    r => panic!("{r:?}"),
                })
                .collect();
            assert_eq!(
                got,
                [
                    // Read again from alice's history: two deliveries.
                    (bulk("2-0"), bulk("alice"), Resp::Int(2)),
                    (bulk("3-0"), bulk("bob"), Resp::Int(1)),
                ]
            );
        }
        r => panic!("XPENDING: {r:?}"),
    }
    // A deleted entry stays pending; the history shows it as nil.
    rt(&mut c, &["XDEL", "q", "2-0"], b":1\r\n");
    assert_eq!(
        read(&mut c, "alice", &[], "0"),
        one_stream("q", vec![arr(vec![bulk("2-0"), Resp::Array(None)])])
    );
    // carol claims bob's entry: one more delivery.
    assert_eq!(
        c.resp(&["XCLAIM", "q", "g", "carol", "0", "3-0"]),
        arr(vec![entry_of("3-0", "f", "c")])
    );
    match c.resp(&["XPENDING", "q", "g", "-", "+", "10", "carol"]) {
        Resp::Array(Some(rows)) => {
            assert_eq!(rows.len(), 1);
            let Resp::Array(Some(f)) = &rows[0] else {
                panic!("{rows:?}")
            };
            assert_eq!(
                (&f[0], &f[1], &f[3]),
                (&bulk("3-0"), &bulk("carol"), &Resp::Int(2))
            );
        }
        r => panic!("{r:?}"),
    }
    assert_eq!(
        c.resp(&["XCLAIM", "q", "g", "carol", "3600000", "3-0"]),
        arr(vec![]),
        "not idle long enough"
    );
    // dave takes everything idle: the deleted 2-0 leaves the PEL.
    assert_eq!(
        c.resp(&["XAUTOCLAIM", "q", "g", "dave", "0", "0"]),
        arr(vec![
            bulk("0-0"),
            arr(vec![entry_of("3-0", "f", "c")]),
            arr(vec![bulk("2-0")])
        ])
    );
    assert_eq!(
        c.resp(&["XAUTOCLAIM", "q", "g", "dave", "0", "0", "JUSTID"]),
        arr(vec![bulk("0-0"), arr(vec![bulk("3-0")]), arr(vec![])])
    );
    match c.resp(&["XINFO", "GROUPS", "q"]) {
        Resp::Array(Some(groups)) => {
            assert_eq!(groups.len(), 1);
            let Resp::Array(Some(g)) = &groups[0] else {
                panic!("{groups:?}")
            };
            let field = |name: &str| {
                let i = g.iter().position(|r| *r == bulk(name)).expect(name);
                g[i + 1].clone()
            };
            assert_eq!(field("name"), bulk("g"));
            assert_eq!(field("consumers"), Resp::Int(4));
            assert_eq!(field("pending"), Resp::Int(1));
            assert_eq!(field("last-delivered-id"), bulk("3-0"));
            assert_eq!(field("entries-read"), Resp::Int(3));
            assert_eq!(field("lag"), Resp::Int(0));
        }
        r => panic!("XINFO GROUPS: {r:?}"),
    }
    match c.resp(&["XINFO", "CONSUMERS", "q", "g"]) {
        Resp::Array(Some(cs)) => assert_eq!(cs.len(), 4),
        r => panic!("XINFO CONSUMERS: {r:?}"),
    }
    match c.resp(&["XINFO", "STREAM", "q"]) {
        Resp::Array(Some(v)) => {
            let i = v.iter().position(|r| *r == bulk("groups")).unwrap();
            assert_eq!(v[i + 1], Resp::Int(1));
        }
        r => panic!("{r:?}"),
    }
    rt(
        &mut c,
        &["XGROUP", "DELCONSUMER", "q", "g", "dave"],
        b":1\r\n",
    );
    rt(
        &mut c,
        &["XGROUP", "CREATECONSUMER", "q", "g", "erin"],
        b":1\r\n",
    );
    rt(
        &mut c,
        &["XGROUP", "CREATECONSUMER", "q", "g", "erin"],
        b":0\r\n",
    );
    // Back to the start: erin gets what is left, with NOACK nothing pends.
    rt(&mut c, &["XGROUP", "SETID", "q", "g", "0"], b"+OK\r\n");
    assert_eq!(
        read(&mut c, "erin", &["NOACK"], ">"),
        one_stream(
            "q",
            vec![entry_of("1-0", "f", "a"), entry_of("3-0", "f", "c")]
        )
    );
    assert_eq!(
        c.resp(&["XPENDING", "q", "g"]),
        arr(vec![
            Resp::Int(0),
            Resp::Bulk(None),
            Resp::Bulk(None),
            Resp::Array(None)
        ])
    );
    // Errors.
    err(
        &mut c,
        &["XREADGROUP", "GROUP", "nope", "x", "STREAMS", "q", ">"],
        "NOGROUP",
    );
    // BLOCK on a group whose consumers have read everything: null at the
    // timeout (the waiting itself: server_blocking.rs).
    assert_eq!(
        c.resp(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "x",
            "BLOCK",
            "10",
            "STREAMS",
            "q",
            ">"
        ]),
        Resp::Array(None)
    );
    err(&mut c, &["XPENDING", "q", "nope"], "NOGROUP");
    err(&mut c, &["XCLAIM", "q", "nope", "x", "0", "1-0"], "NOGROUP");
    err(&mut c, &["XGROUP", "SETID", "q", "nope", "0"], "NOGROUP");
    rt(&mut c, &["XACK", "missing", "g", "1-0"], b":0\r\n");
    rt(&mut c, &["XGROUP", "DESTROY", "q", "g"], b":1\r\n");
    rt(&mut c, &["XGROUP", "DESTROY", "q", "g"], b":0\r\n");
    err(
        &mut c,
        &["XREADGROUP", "GROUP", "g", "x", "STREAMS", "q", ">"],
        "NOGROUP",
    );
}
