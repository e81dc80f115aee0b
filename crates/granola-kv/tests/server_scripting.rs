//! Lua scripting over real sockets: Redis's conversions between replies
//! and Lua values (byte for byte in RESP2 and RESP3), errors from
//! `redis.call` and `redis.pcall`, the script cache, read-only scripts,
//! commands a script may not run, scripts that run alone (no lost update
//! among clients on both workers), and a runaway script stopped while the
//! other clients go on.

mod common;

use common::*;
use std::time::{Duration, Instant};

fn bulk(b: &str) -> Resp {
    Resp::Bulk(Some(b.as_bytes().to_vec()))
}

fn error_text(r: Resp) -> String {
    match r {
        Resp::Error(e) => String::from_utf8(e).unwrap(),
        r => panic!("not an error: {r:?}"),
    }
}

#[test]
fn values_convert_as_in_redis() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    // Lua -> reply, byte for byte (the replies Redis 7 sends).
    for (script, want) in [
        ("return 1", &b":1\r\n"[..]),
        ("return 3.99", b":3\r\n"),
        ("return -2.5", b":-2\r\n"),
        ("return 'x'", b"$1\r\nx\r\n"),
        ("return true", b":1\r\n"),
        ("return false", b"$-1\r\n"),
        ("return nil", b"$-1\r\n"),
        (
            "return {1, 'a', {2}, nil, 5}",
            b"*3\r\n:1\r\n$1\r\na\r\n*1\r\n:2\r\n",
        ),
        ("return {}", b"*0\r\n"),
        ("return redis.status_reply('FINE')", b"+FINE\r\n"),
        ("return {ok = 'FINE'}", b"+FINE\r\n"),
        ("return redis.error_reply('MY fault')", b"-MY fault\r\n"),
        (
            "return {err = 'ERR bad\\r\\nthing'}",
            b"-ERR bad  thing\r\n",
        ),
    ] {
        c.send(&resp_cmd(&["EVAL", script, "0"]));
        c.expect(want);
    }
    // Reply -> Lua: the types a script sees, round-tripped.
    c.resp(&["RPUSH", "l", "a", "b"]);
    assert_eq!(
        c.resp(&[
            "EVAL",
            "return {redis.call('SET', KEYS[1], ARGV[1]).ok, redis.call('GET', KEYS[1]), \
             redis.call('INCR', 'n'), tostring(redis.call('GET', 'missing')), \
             redis.call('LRANGE', 'l', 0, -1)}",
            "1",
            "k",
            "v",
        ]),
        Resp::Array(Some(vec![
            bulk("OK"),
            bulk("v"),
            Resp::Int(1),
            bulk("false"),
            Resp::Array(Some(vec![bulk("a"), bulk("b")])),
        ]))
    );
    // Numbers as arguments go as Redis formats them.
    assert_eq!(
        c.resp(&[
            "EVAL",
            "redis.call('SET', 'f', 10) return redis.call('GET', 'f')",
            "0"
        ]),
        bulk("10")
    );
    // RESP3 clients get the same conversions in their protocol.
    let mut hello = resp_cmd(&["HELLO", "3"]);
    hello.extend(resp_cmd(&["PING"]));
    c.send(&hello);
    c.read_until(b"+PONG\r\n");
    c.send(&resp_cmd(&["EVAL", "return nil", "0"]));
    c.expect(b"_\r\n");
    c.send(&resp_cmd(&[
        "EVAL",
        "return redis.call('HGETALL', 'none')",
        "0",
    ]));
    c.expect(b"*0\r\n");
}

#[test]
fn errors_follow_redis() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    c.resp(&["SET", "s", "text"]);
    // redis.call fails the script with the command's error and code.
    let e = error_text(c.resp(&["EVAL", "return redis.call('INCR', KEYS[1])", "1", "s"]));
    assert!(
        e.starts_with("ERR value is not an integer or out of range script: "),
        "{e}"
    );
    let e = error_text(c.resp(&["EVAL", "return redis.call('LPUSH', KEYS[1], 'x')", "1", "s"]));
    assert!(e.starts_with("WRONGTYPE "), "{e}");
    // redis.pcall hands the error to the script as a table.
    assert_eq!(
        c.resp(&["EVAL", "return redis.pcall('INCR', KEYS[1]).err", "1", "s"]),
        bulk("ERR value is not an integer or out of range")
    );
    assert!(
        error_text(c.resp(&["EVAL", "return redis.pcall('INCR', 's')", "0"]))
            .starts_with("ERR value is not an integer")
    );
    // Lua's own errors, globals, compile errors, arguments.
    let e = error_text(c.resp(&["EVAL", "return x", "0"]));
    assert!(
        e.contains("Script attempted to access nonexistent global variable 'x'")
            && !e.contains('\n'),
        "{e}"
    );
    let e = error_text(c.resp(&["EVAL", "y = 1", "0"]));
    assert!(
        e.contains("Script attempted to create global variable 'y'"),
        "{e}"
    );
    let e = error_text(c.resp(&["EVAL", "retur 1", "0"]));
    assert!(
        e.starts_with("ERR Error compiling script (new function): "),
        "{e}"
    );
    let e = error_text(c.resp(&["EVAL", "return redis.call()", "0"]));
    assert!(e.contains("Please specify at least one argument"), "{e}");
    let e = error_text(c.resp(&["EVAL", "return redis.call('SET', 'k', {})", "0"]));
    assert!(e.contains("must be strings or integers"), "{e}");
    assert_eq!(
        c.resp(&["EVAL", "return 1", "-1"]),
        Resp::Error(b"ERR Number of keys can't be negative".to_vec())
    );
    assert_eq!(
        c.resp(&["EVAL", "return 1", "2", "a"]),
        Resp::Error(b"ERR Number of keys can't be greater than number of args".to_vec())
    );
    assert_eq!(
        c.resp(&["EVAL", "return 1", "x"]),
        Resp::Error(b"ERR value is not an integer or out of range".to_vec())
    );
    // What a script may not run, and what a read-only one may not.
    for cmd in [
        "'SUBSCRIBE', 'a'",
        "'MULTI'",
        "'EVAL', 'return 1', '0'",
        "'CLIENT', 'ID'",
    ] {
        let e = error_text(c.resp(&["EVAL", &format!("return redis.call({cmd})"), "0"]));
        assert!(e.contains("not allowed from script"), "{cmd}: {e}");
    }
    // A container's unknown subcommand is an unknown command; too few
    // arguments, its own error.
    let e = error_text(c.resp(&["EVAL", "return redis.call('CLIENT', 'a')", "0"]));
    assert!(
        e.contains("Unknown Redis command called from script"),
        "{e}"
    );
    let e = error_text(c.resp(&["EVAL", "return redis.call('CLIENT')", "0"]));
    assert!(
        e.contains("Wrong number of args calling Redis command from script"),
        "{e}"
    );
    let e = error_text(c.resp(&["EVAL", "return redis.call('NOSUCH')", "0"]));
    assert!(
        e.contains("Unknown Redis command called from script"),
        "{e}"
    );
    let e = error_text(c.resp(&["EVAL_RO", "return redis.call('SET', 'a', 'b')", "0"]));
    assert!(
        e.contains("Write commands are not allowed from read-only scripts"),
        "{e}"
    );
    assert_eq!(
        c.resp(&["EVAL_RO", "return redis.call('GET', 's')", "0"]),
        bulk("text")
    );
    // Nothing waits in a script: blocking pops are refused (flagged
    // `noscript`, as in Redis 7), and so is XREAD's BLOCK, as Redis does.
    for (script, want) in [
        (
            "return redis.call('BLPOP', 'empty', 0)",
            "ERR This Redis command is not allowed from script",
        ),
        (
            "return redis.call('XREAD', 'BLOCK', 0, 'STREAMS', 'nostream', '$')",
            "ERR XREAD command is not allowed with BLOCK option from scripts",
        ),
    ] {
        let t = Instant::now();
        let Resp::Error(e) = c.resp(&["EVAL", script, "0"]) else {
            panic!("{script}")
        };
        let e = String::from_utf8(e).unwrap();
        assert!(e.starts_with(want), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5));
    }
    // The connection is as it was: its protocol, commands and database
    // (a SELECT in a script lasts until the script ends).
    assert_eq!(
        c.resp(&[
            "EVAL",
            "redis.call('SELECT', 3) redis.call('SET', 's', 'in 3') return redis.call('GET', 's')",
            "0"
        ]),
        bulk("in 3")
    );
    assert_eq!(c.resp(&["GET", "s"]), bulk("text"));
    // MGET reads as one snapshot in a script too.
    assert_eq!(
        c.resp(&["EVAL", "return redis.call('MGET', 's', 'none', 's')", "0"]),
        Resp::Array(Some(vec![bulk("text"), Resp::Bulk(None), bulk("text")]))
    );
}

#[test]
fn the_script_cache() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    let body = "return ARGV[1] .. KEYS[1]";
    let sha = match c.resp(&["SCRIPT", "LOAD", body]) {
        Resp::Bulk(Some(s)) => String::from_utf8(s).unwrap(),
        r => panic!("{r:?}"),
    };
    // The SHA1 of the text, as Redis computes it.
    assert_eq!(
        c.resp(&["EVAL", "return redis.sha1hex(ARGV[1])", "0", body]),
        bulk(&sha)
    );
    assert_eq!(c.resp(&["EVALSHA", &sha, "1", "k", "a"]), bulk("ak"));
    assert_eq!(
        c.resp(&["EVALSHA", &sha.to_uppercase(), "1", "k", "b"]),
        bulk("bk")
    );
    assert_eq!(c.resp(&["EVALSHA_RO", &sha, "1", "k", "c"]), bulk("ck"));
    // EVAL caches what it runs.
    c.resp(&["EVAL", "return 7", "0"]);
    let seven = match c.resp(&["EVAL", "return redis.sha1hex('return 7')", "0"]) {
        Resp::Bulk(Some(s)) => String::from_utf8(s).unwrap(),
        r => panic!("{r:?}"),
    };
    assert_eq!(
        c.resp(&[
            "SCRIPT",
            "EXISTS",
            &sha,
            &seven,
            "0000000000000000000000000000000000000000"
        ]),
        Resp::Array(Some(vec![Resp::Int(1), Resp::Int(1), Resp::Int(0)]))
    );
    assert_eq!(c.resp(&["EVALSHA", &seven, "0"]), Resp::Int(7));
    // Another connection sees the same cache.
    let mut other = Client::connect(srv.resp());
    assert_eq!(other.resp(&["EVALSHA", &sha, "1", "x", "y"]), bulk("yx"));
    // A script that cannot compile is not cached.
    assert!(error_text(c.resp(&["SCRIPT", "LOAD", "retur 1"])).starts_with("ERR Error compiling"));
    assert_eq!(c.resp(&["SCRIPT", "FLUSH"]), Resp::Simple(b"OK".to_vec()));
    assert_eq!(
        c.resp(&["EVALSHA", &sha, "1", "k", "a"]),
        Resp::Error(b"NOSCRIPT No matching script. Please use EVAL.".to_vec())
    );
    assert_eq!(
        c.resp(&["SCRIPT", "KILL"]),
        Resp::Error(b"NOTBUSY No scripts in execution right now.".to_vec())
    );
    // The cache is bounded: past 16 MiB of script text SCRIPT LOAD fails
    // and EVAL still runs, uncached. (Each script is a little over 1 MiB.)
    let big = |i: usize| format!("return '{}' .. {i}", "x".repeat(1 << 20));
    for i in 0..15 {
        assert!(
            matches!(c.resp(&["SCRIPT", "LOAD", &big(i)]), Resp::Bulk(Some(_))),
            "{i}"
        );
    }
    assert_eq!(
        c.resp(&["SCRIPT", "LOAD", &big(15)]),
        Resp::Error(b"ERR script cache full: SCRIPT FLUSH first".to_vec())
    );
    let body = big(17);
    let sha = match c.resp(&["EVAL", "return redis.sha1hex(ARGV[1])", "0", &body]) {
        Resp::Bulk(Some(s)) => String::from_utf8(s).unwrap(),
        r => panic!("{r:?}"),
    };
    match c.resp(&["EVAL", &body, "0"]) {
        Resp::Bulk(Some(v)) => assert_eq!(v.len(), (1 << 20) + 2),
        r => panic!("{r:?}"),
    }
    assert_eq!(
        c.resp(&["EVALSHA", &sha, "0"]),
        Resp::Error(b"NOSCRIPT No matching script. Please use EVAL.".to_vec())
    );
    c.resp(&["SCRIPT", "FLUSH", "ASYNC"]);
    assert!(matches!(
        c.resp(&["SCRIPT", "LOAD", &big(15)]),
        Resp::Bulk(Some(_))
    ));
}

#[test]
fn scripts_run_alone() {
    // Read-modify-write in a script from clients on both workers: a script
    // that interleaved with another would lose an increment.
    let srv = Server::default_config();
    const CLIENTS: usize = 6;
    const EACH: usize = 300;
    let script = "local v = tonumber(redis.call('GET', KEYS[1]) or '0') \
                  redis.call('SET', KEYS[1], tostring(v + 1)) return v + 1";
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| {
                let mut c = Client::connect(srv.resp());
                for _ in 0..EACH {
                    match c.resp(&["EVAL", script, "1", "counter"]) {
                        Resp::Int(n) => assert!(n >= 1),
                        r => panic!("{r:?}"),
                    }
                }
            });
        }
        // A plain client reading meanwhile sees whole values only.
        s.spawn(|| {
            let mut c = Client::connect(srv.resp());
            for _ in 0..200 {
                match c.resp(&["GET", "counter"]) {
                    Resp::Bulk(None) => {}
                    Resp::Bulk(Some(v)) => {
                        assert!(std::str::from_utf8(&v).unwrap().parse::<usize>().is_ok())
                    }
                    r => panic!("{r:?}"),
                }
            }
        });
    });
    let mut c = Client::connect(srv.resp());
    assert_eq!(
        c.resp(&["GET", "counter"]),
        bulk(&(CLIENTS * EACH).to_string())
    );
    // Inside MULTI the EXEC already runs alone: the script runs in it.
    c.send(&resp_cmd(&["MULTI"]));
    c.send(&resp_cmd(&["EVAL", script, "1", "counter"]));
    c.send(&resp_cmd(&["EXEC"]));
    c.expect(b"+OK\r\n+QUEUED\r\n*1\r\n");
    c.expect(format!(":{}\r\n", CLIENTS * EACH + 1).as_bytes());
}

#[test]
fn a_state_left_holding_much_memory_is_replaced() {
    let srv = Server::default_config();
    let limit = srv.shared.config.script_memory_limit();
    let mut c = Client::connect(srv.resp());
    // A global set past the guard keeps 60 % of the state's limit.
    let fill = format!(
        "local t = {{}} for i = 1, {} do t[i] = string.rep('x', 1000) .. i end rawset(_G, 'kept', t) return #t",
        limit * 6 / 10 / 1100
    );
    assert!(matches!(c.resp(&["EVAL", &fill, "0"]), Resp::Int(n) if n > 0));
    // Every worker's state answers the same afterwards: none kept it.
    for _ in 0..4 {
        let mut other = Client::connect(srv.resp());
        assert_eq!(
            other.resp(&["EVAL", "return type(rawget(_G, 'kept'))", "0"]),
            bulk("nil")
        );
    }
    // A small global survives (the state is kept while it is small).
    c.resp(&["EVAL", "rawset(_G, 'small', 1) return 1", "0"]);
    assert_eq!(
        c.resp(&["EVAL", "return rawget(_G, 'small')", "0"]),
        Resp::Int(1)
    );
}

#[test]
fn a_runaway_script_is_stopped_and_others_go_on() {
    let mut cfg = config();
    cfg.script_time_limit_ms = 300;
    let srv = Server::start(cfg);
    let mut other = Client::connect(srv.resp());
    other.resp(&["SET", "k", "v"]);
    for script in [
        "while true do end",
        // pcall cannot catch the stop.
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        // Nor can the script outgrow its memory instead.
        "local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 4096) .. i end",
    ] {
        let mut c = Client::connect(srv.resp());
        let t = Instant::now();
        let e = error_text(c.resp(&["EVAL", script, "0"]));
        assert!(
            e.contains("ran past --script-time-limit") || e.contains("more memory than allowed"),
            "{script}: {e}"
        );
        assert!(t.elapsed() < Duration::from_secs(10), "{script}");
        // The connection and the others work on.
        assert_eq!(c.resp(&["EVAL", "return 1", "0"]), Resp::Int(1));
        assert_eq!(other.resp(&["GET", "k"]), bulk("v"));
    }
}
