//! Redis's blocking commands over real sockets: BLPOP/BRPOP/BLMPOP/BLMOVE/
//! BRPOPLPUSH and BZPOPMIN/BZPOPMAX/BZMPOP, served when another client
//! writes (on either worker thread) or answered at their timeout; a work
//! queue whose every job is taken exactly once; clients that leave while
//! blocked; and MULTI, where nothing waits. And `CLIENT PAUSE`, which
//! holds back memcached and native clients as it holds RESP ones.

mod common;

use common::*;
use granola::Decode;
use granola_kv::proto as kv;
use granola_kv::server::native::{kind, status};
use std::collections::HashSet;
use std::io::Read;
use std::time::{Duration, Instant};

fn bulk(s: &str) -> Resp {
    Resp::Bulk(Some(s.as_bytes().to_vec()))
}

fn arr(items: Vec<Resp>) -> Resp {
    Resp::Array(Some(items))
}

fn blocked_clients(srv: &Server) -> u64 {
    resp_info_u64(srv.resp(), "blocked_clients")
}

/// Waits until `n` clients are blocked (so a following write is sure to
/// find them waiting, not arrive first).
fn until_blocked(srv: &Server, n: u64) {
    srv.wait_for(&format!("{n} blocked clients"), |s| blocked_clients(s) == n);
}

#[test]
fn a_timeout_answers_null_and_waits_that_long() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    let t0 = Instant::now();
    assert_eq!(c.resp(&["BLPOP", "nothing", "0.2"]), Resp::Array(None));
    assert!(
        t0.elapsed() >= Duration::from_millis(200),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(c.resp(&["BRPOPLPUSH", "a", "b", "0.05"]), Resp::Bulk(None));
    assert_eq!(
        c.resp(&["BLMOVE", "a", "b", "LEFT", "RIGHT", "0.05"]),
        Resp::Bulk(None)
    );
    assert_eq!(
        c.resp(&["BLMPOP", "0.05", "2", "a", "b", "LEFT"]),
        Resp::Array(None)
    );
    assert_eq!(c.resp(&["BZPOPMIN", "z", "0.05"]), Resp::Array(None));
    assert_eq!(
        c.resp(&["BZMPOP", "0.05", "1", "z", "MAX"]),
        Resp::Array(None)
    );
    // RESP3's null.
    let mut hello = resp_cmd(&["HELLO", "3"]);
    hello.extend_from_slice(&resp_cmd(&["PING"]));
    c.send(&hello);
    c.read_until(b"+PONG\r\n");
    c.send(&resp_cmd(&["BLPOP", "nothing", "0.05"]));
    assert_eq!(c.read_line(), b"_\r\n");
    assert_eq!(blocked_clients(&srv), 0);
}

#[test]
fn data_already_there_is_served_at_once() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    c.resp(&["RPUSH", "l2", "x", "y", "z"]);
    // The first non-empty key, in the order given.
    assert_eq!(
        c.resp(&["BLPOP", "l1", "l2", "0"]),
        arr(vec![bulk("l2"), bulk("x")])
    );
    assert_eq!(
        c.resp(&["BRPOP", "l2", "0"]),
        arr(vec![bulk("l2"), bulk("z")])
    );
    c.resp(&["RPUSH", "l3", "a", "b", "c"]);
    assert_eq!(
        c.resp(&["BLMPOP", "0", "2", "l1", "l3", "RIGHT", "COUNT", "2"]),
        arr(vec![bulk("l3"), arr(vec![bulk("c"), bulk("b")])])
    );
    assert_eq!(
        c.resp(&["LMPOP", "1", "l3", "LEFT", "COUNT", "5"]),
        arr(vec![bulk("l3"), arr(vec![bulk("a")])])
    );
    assert_eq!(c.resp(&["LMPOP", "1", "l3", "LEFT"]), Resp::Array(None));
    assert_eq!(
        c.resp(&["BLMOVE", "l2", "d", "LEFT", "LEFT", "0"]),
        bulk("y")
    );
    assert_eq!(c.resp(&["LRANGE", "d", "0", "-1"]), arr(vec![bulk("y")]));
    c.resp(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(
        c.resp(&["BZPOPMAX", "z", "0"]),
        arr(vec![bulk("z"), bulk("c"), bulk("3")])
    );
    assert_eq!(
        c.resp(&["BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"]),
        arr(vec![
            bulk("z"),
            arr(vec![
                arr(vec![bulk("a"), bulk("1")]),
                arr(vec![bulk("b"), bulk("2")])
            ])
        ])
    );
    assert_eq!(c.resp(&["ZMPOP", "1", "z", "MIN"]), Resp::Array(None));
}

#[test]
fn bad_arguments_get_redis_errors() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    let err = |c: &mut Client, args: &[&str], want: &str| match c.resp(args) {
        Resp::Error(e) => assert_eq!(String::from_utf8_lossy(&e), want, "{args:?}"),
        r => panic!("{args:?}: {r:?}"),
    };
    err(&mut c, &["BLPOP", "k", "-1"], "ERR timeout is negative");
    err(
        &mut c,
        &["BLPOP", "k", "soon"],
        "ERR timeout is not a float or out of range",
    );
    err(
        &mut c,
        &["BLPOP", "k", "inf"],
        "ERR timeout is not a float or out of range",
    );
    err(
        &mut c,
        &["BLMPOP", "0", "0", "k", "LEFT"],
        "ERR numkeys should be greater than 0",
    );
    err(
        &mut c,
        &["BLMPOP", "0", "2", "k", "LEFT"],
        "ERR syntax error",
    );
    err(&mut c, &["LMPOP", "1", "k", "UP"], "ERR syntax error");
    err(
        &mut c,
        &["LMPOP", "1", "k", "LEFT", "COUNT", "0"],
        "ERR count should be greater than 0",
    );
    err(
        &mut c,
        &["BZMPOP", "0", "1", "z", "LEFT"],
        "ERR syntax error",
    );
    err(
        &mut c,
        &["BLMOVE", "a", "b", "UP", "LEFT", "0"],
        "ERR syntax error",
    );
    err(
        &mut c,
        &["BLPOP", "k"],
        "ERR wrong number of arguments for 'blpop' command",
    );
    c.resp(&["SET", "s", "v"]);
    match c.resp(&["BLPOP", "s", "0"]) {
        Resp::Error(e) => assert!(e.starts_with(b"WRONGTYPE"), "{}", show(&e)),
        r => panic!("{r:?}"),
    }
    match c.resp(&["BZPOPMIN", "s", "0"]) {
        Resp::Error(e) => assert!(e.starts_with(b"WRONGTYPE"), "{}", show(&e)),
        r => panic!("{r:?}"),
    }
    assert_eq!(blocked_clients(&srv), 0);
}

#[test]
fn a_push_from_another_client_wakes_the_waiter() {
    let srv = Server::default_config();
    // The test server runs two workers; connections land on either, so
    // over the rounds both a same-worker and a cross-worker wake happen.
    for round in 0..6 {
        let addr = srv.resp();
        let key = format!("q{round}");
        let k2 = key.clone();
        let waiter = std::thread::spawn(move || {
            let mut w = Client::connect(addr);
            // A pipelined PING waits behind the blocked BLPOP.
            let mut req = resp_cmd(&["BLPOP", "other", &k2, "10"]);
            req.extend_from_slice(&resp_cmd(&["PING"]));
            w.send(&req);
            let got = w.read_resp();
            assert_eq!(w.read_resp(), Resp::Simple(b"PONG".to_vec()));
            got
        });
        until_blocked(&srv, 1);
        let mut p = Client::connect(srv.resp());
        assert_eq!(p.resp(&["LPUSH", &key, "job"]), Resp::Int(1));
        let got = waiter.join().unwrap();
        assert_eq!(got, arr(vec![bulk(&key), bulk("job")]));
        // Taken, not left behind.
        assert_eq!(p.resp(&["LLEN", &key]), Resp::Int(0));
        assert_eq!(blocked_clients(&srv), 0);
    }
}

#[test]
fn blmove_and_bzpopmin_wake_on_their_writes() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let mover = std::thread::spawn(move || {
        Client::connect(addr).resp(&["BLMOVE", "src", "dst", "RIGHT", "LEFT", "10"])
    });
    let popper = std::thread::spawn(move || Client::connect(addr).resp(&["BZPOPMIN", "z", "10"]));
    until_blocked(&srv, 2);
    let mut p = Client::connect(srv.resp());
    p.resp(&["RPUSH", "src", "a", "b"]);
    p.resp(&["ZADD", "z", "7", "m"]);
    assert_eq!(mover.join().unwrap(), bulk("b"));
    assert_eq!(
        popper.join().unwrap(),
        arr(vec![bulk("z"), bulk("m"), bulk("7")])
    );
    assert_eq!(p.resp(&["LRANGE", "src", "0", "-1"]), arr(vec![bulk("a")]));
    assert_eq!(p.resp(&["LRANGE", "dst", "0", "-1"]), arr(vec![bulk("b")]));
    // A BLMOVE's push wakes whoever waits on its destination.
    let chained = std::thread::spawn(move || Client::connect(addr).resp(&["BLPOP", "dst2", "10"]));
    until_blocked(&srv, 1);
    p.resp(&["RPUSH", "src2", "c"]);
    assert_eq!(
        p.resp(&["BLMOVE", "src2", "dst2", "LEFT", "LEFT", "1"]),
        bulk("c")
    );
    assert_eq!(chained.join().unwrap(), arr(vec![bulk("dst2"), bulk("c")]));
}

/// A client blocked on a list of database 1 is served when SWAPDB brings
/// a database where that list has elements, as in Redis; one whose key is
/// still empty waits on.
#[test]
fn swapdb_serves_clients_blocked_in_the_swapped_database() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let waiter = std::thread::spawn(move || {
        let mut c = Client::connect(addr);
        assert_eq!(c.resp(&["SELECT", "1"]), Resp::Simple(b"OK".to_vec()));
        let t0 = Instant::now();
        let got = c.resp(&["BLPOP", "q", "10"]);
        (got, t0.elapsed())
    });
    let idle = std::thread::spawn(move || {
        let mut c = Client::connect(addr);
        assert_eq!(c.resp(&["SELECT", "1"]), Resp::Simple(b"OK".to_vec()));
        c.resp(&["BLPOP", "empty", "0.5"])
    });
    until_blocked(&srv, 2);
    let mut p = Client::connect(srv.resp());
    p.resp(&["RPUSH", "q", "x"]);
    assert_eq!(p.resp(&["SWAPDB", "0", "1"]), Resp::Simple(b"OK".to_vec()));
    let (got, waited) = waiter.join().unwrap();
    assert_eq!(got, arr(vec![bulk("q"), bulk("x")]));
    // Served by the swap, not found when its 10 s ran out.
    assert!(waited < Duration::from_secs(9), "{waited:?}");
    assert_eq!(idle.join().unwrap(), Resp::Array(None));
}

/// A result stored by SORT or GEORADIUS wakes whoever waits on its
/// destination, as Redis's does: the destination follows a STORE option,
/// not a fixed position.
#[test]
fn stored_results_wake_their_destination_waiters() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let lister = std::thread::spawn(move || Client::connect(addr).resp(&["BLPOP", "sorted", "10"]));
    let zpopper =
        std::thread::spawn(move || Client::connect(addr).resp(&["BZPOPMIN", "near", "10"]));
    until_blocked(&srv, 2);
    let mut p = Client::connect(srv.resp());
    p.resp(&["RPUSH", "src", "3", "1", "2"]);
    assert_eq!(p.resp(&["SORT", "src", "STORE", "sorted"]), Resp::Int(3));
    assert_eq!(lister.join().unwrap(), arr(vec![bulk("sorted"), bulk("1")]));
    p.resp(&["GEOADD", "g", "13.361389", "38.115556", "Palermo"]);
    assert_eq!(
        p.resp(&["GEORADIUS", "g", "13", "38", "100", "km", "STORE", "near"]),
        Resp::Int(1)
    );
    match zpopper.join().unwrap() {
        Resp::Array(Some(v)) => assert_eq!(v[..2], [bulk("near"), bulk("Palermo")]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_client_that_leaves_while_blocked_takes_nothing() {
    let srv = Server::default_config();
    {
        let mut gone = Client::connect(srv.resp());
        gone.send(&resp_cmd(&["BLPOP", "jobs", "0"]));
        until_blocked(&srv, 1);
    } // closed here
    until_blocked(&srv, 0);
    let mut p = Client::connect(srv.resp());
    p.resp(&["RPUSH", "jobs", "j1"]);
    assert_eq!(
        p.resp(&["LRANGE", "jobs", "0", "-1"]),
        arr(vec![bulk("j1")])
    );
}

/// CLIENT KILL of a client blocked in BLPOP closes it at once and it
/// takes nothing; one that never sent a request is closed at once too.
#[test]
fn a_killed_client_closes_while_blocked_and_takes_nothing() {
    let srv = Server::default_config();
    let mut victim = Client::connect(srv.resp());
    let id = match victim.resp(&["CLIENT", "ID"]) {
        Resp::Int(i) => i.to_string(),
        other => panic!("CLIENT ID: {other:?}"),
    };
    victim.send(&resp_cmd(&["BLPOP", "jobs", "0"]));
    until_blocked(&srv, 1);
    let mut k = Client::connect(srv.resp());
    assert_eq!(k.resp(&["CLIENT", "KILL", "ID", &id]), Resp::Int(1));
    victim.expect_closed();
    until_blocked(&srv, 0);
    k.resp(&["RPUSH", "jobs", "j1"]);
    assert_eq!(
        k.resp(&["LRANGE", "jobs", "0", "-1"]),
        arr(vec![bulk("j1")])
    );
    // Connected and silent: listed (once its worker has accepted it),
    // killed, and closed at once, with nothing sent.
    let mut silent = Client::connect(srv.resp());
    let addr = silent.s.local_addr().unwrap().to_string();
    let listed = |k: &mut Client| match k.resp(&["CLIENT", "LIST"]) {
        Resp::Bulk(Some(b)) => String::from_utf8_lossy(&b).contains(&format!("addr={addr} ")),
        other => panic!("CLIENT LIST: {other:?}"),
    };
    srv.wait_for("the silent client listed", |_| listed(&mut k));
    assert_eq!(k.resp(&["CLIENT", "KILL", "ADDR", &addr]), Resp::Int(1));
    silent.expect_closed();
    assert_eq!(k.resp(&["PING"]), Resp::Simple(b"PONG".to_vec()));
}

#[test]
fn inside_multi_nothing_waits() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    c.resp(&["MULTI"]);
    assert_eq!(
        c.resp(&["BLPOP", "none", "0"]),
        Resp::Simple(b"QUEUED".to_vec())
    );
    assert_eq!(
        c.resp(&["RPUSH", "l", "v"]),
        Resp::Simple(b"QUEUED".to_vec())
    );
    assert_eq!(
        c.resp(&["BRPOP", "l", "0"]),
        Resp::Simple(b"QUEUED".to_vec())
    );
    assert_eq!(
        c.resp(&["EXEC"]),
        arr(vec![
            Resp::Array(None),
            Resp::Int(1),
            arr(vec![bulk("l"), bulk("v")])
        ])
    );
}

/// One job's text: its producer, number and a checksum of both, so a torn
/// or invented job is caught.
fn job(producer: usize, n: usize) -> String {
    let body = format!("p{producer}-n{n}");
    format!("{body}-{:016x}", fnv(body.as_bytes()))
}

#[test]
fn a_work_queue_hands_every_job_out_exactly_once() {
    const PRODUCERS: usize = 3;
    const JOBS: usize = 300;
    const CONSUMERS: usize = 4;
    let srv = Server::default_config();
    let addr = srv.resp();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut got = Vec::new();
                let deadline = Instant::now() + Duration::from_secs(60);
                while Instant::now() < deadline {
                    match c.resp(&["BRPOP", "work", "stop", "5"]) {
                        Resp::Array(Some(kv)) if kv[0] == bulk("stop") => break,
                        Resp::Array(Some(kv)) => {
                            let Resp::Bulk(Some(v)) = &kv[1] else {
                                panic!("{kv:?}")
                            };
                            got.push(String::from_utf8(v.clone()).unwrap());
                        }
                        r => panic!("BRPOP gave {r:?}"),
                    }
                }
                got
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for n in 0..JOBS {
                    let Resp::Int(_) = c.resp(&["LPUSH", "work", &job(p, n)]) else {
                        panic!("LPUSH failed");
                    };
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    // The queue drains before the consumers are told to stop.
    srv.wait_for("the queue to drain", |s| {
        Client::connect(s.resp()).resp(&["LLEN", "work"]) == Resp::Int(0)
    });
    let mut c = Client::connect(addr);
    let stops: Vec<String> = (0..CONSUMERS).map(|i| format!("stop{i}")).collect();
    let mut push = vec!["RPUSH", "stop"];
    push.extend(stops.iter().map(String::as_str));
    c.resp(&push);
    let mut seen = HashSet::new();
    let mut total = 0;
    for h in consumers {
        for j in h.join().unwrap() {
            total += 1;
            let (body, sum) = j.rsplit_once('-').expect("job shape");
            assert_eq!(
                sum,
                format!("{:016x}", fnv(body.as_bytes())),
                "torn job {j}"
            );
            assert!(seen.insert(j.clone()), "job {j} handed out twice");
        }
    }
    assert_eq!(total, PRODUCERS * JOBS, "jobs lost");
    assert_eq!(blocked_clients(&srv), 0);
}

#[test]
fn xread_block_waits_for_entries_after_dollar() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let mut p = Client::connect(addr);
    p.resp(&["XADD", "s", "1-1", "old", "x"]);
    let reader = std::thread::spawn(move || {
        Client::connect(addr).resp(&["XREAD", "BLOCK", "0", "STREAMS", "other", "s", "0-0", "$"])
    });
    until_blocked(&srv, 1);
    // `$` was the last ID when the read began: only the new entry comes.
    p.resp(&["XADD", "s", "2-1", "new", "y"]);
    assert_eq!(
        reader.join().unwrap(),
        arr(vec![arr(vec![
            bulk("s"),
            arr(vec![arr(vec![
                bulk("2-1"),
                arr(vec![bulk("new"), bulk("y")])
            ])])
        ])])
    );
}

#[test]
fn xreadgroup_block_delivers_new_entries_and_holds_them_pending() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let mut p = Client::connect(addr);
    assert_eq!(
        p.resp(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]),
        Resp::Simple(b"OK".to_vec())
    );
    let worker = std::thread::spawn(move || {
        Client::connect(addr).resp(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "w1",
            "BLOCK",
            "5000",
            "COUNT",
            "10",
            "STREAMS",
            "q",
            ">",
        ])
    });
    until_blocked(&srv, 1);
    p.resp(&["XADD", "q", "5-0", "job", "1"]);
    assert_eq!(
        worker.join().unwrap(),
        arr(vec![arr(vec![
            bulk("q"),
            arr(vec![arr(vec![
                bulk("5-0"),
                arr(vec![bulk("job"), bulk("1")])
            ])])
        ])])
    );
    let Resp::Array(Some(summary)) = p.resp(&["XPENDING", "q", "g"]) else {
        panic!("XPENDING");
    };
    assert_eq!(summary[0], Resp::Int(1));
    // A consumer's history answers at once, BLOCK or not.
    let t0 = Instant::now();
    assert_eq!(
        p.resp(&[
            "XREADGROUP",
            "GROUP",
            "g",
            "w2",
            "BLOCK",
            "5000",
            "STREAMS",
            "q",
            "0"
        ]),
        arr(vec![arr(vec![bulk("q"), arr(vec![])])])
    );
    assert!(t0.elapsed() < Duration::from_secs(4));
}

#[test]
fn client_unblock_ends_a_wait_as_timeout_or_error() {
    let srv = Server::default_config();
    let addr = srv.resp();
    for (how, want) in [
        (None, Resp::Array(None)),
        (Some("TIMEOUT"), Resp::Array(None)),
        (
            Some("ERROR"),
            Resp::Error(b"UNBLOCKED client unblocked via CLIENT UNBLOCK".to_vec()),
        ),
    ] {
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let mut w = Client::connect(addr);
            let Resp::Int(id) = w.resp(&["CLIENT", "ID"]) else {
                panic!("CLIENT ID");
            };
            tx.send(id).unwrap();
            w.resp(&["BLPOP", "never", "0"])
        });
        let id = rx.recv().unwrap().to_string();
        until_blocked(&srv, 1);
        let mut c = Client::connect(addr);
        let mut args = vec!["CLIENT", "UNBLOCK", &id];
        args.extend(how);
        assert_eq!(c.resp(&args), Resp::Int(1));
        assert_eq!(waiter.join().unwrap(), want);
        // Not blocked (any more): 0.
        assert_eq!(c.resp(&["CLIENT", "UNBLOCK", &id]), Resp::Int(0));
    }
    let mut c = Client::connect(addr);
    match c.resp(&["CLIENT", "UNBLOCK", "1", "LATER"]) {
        Resp::Error(e) => assert!(e.starts_with(b"ERR CLIENT UNBLOCK reason"), "{}", show(&e)),
        r => panic!("{r:?}"),
    }
}

#[test]
fn the_idle_timeout_spares_a_blocked_client() {
    let mut cfg = config();
    cfg.idle_timeout_secs = 1;
    let srv = Server::start(cfg);
    let addr = srv.resp();
    let waiter = std::thread::spawn(move || Client::connect(addr).resp(&["BLPOP", "late", "0"]));
    until_blocked(&srv, 1);
    // Past the idle timeout and several sweeps.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(blocked_clients(&srv), 1, "the blocked client was closed");
    Client::connect(addr).resp(&["RPUSH", "late", "v"]);
    assert_eq!(waiter.join().unwrap(), arr(vec![bulk("late"), bulk("v")]));
}

#[test]
fn the_longest_waiting_client_is_served_first() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let mut waiters = Vec::new();
    for i in 0..3 {
        waiters.push(std::thread::spawn(move || {
            Client::connect(addr).resp(&["BLPOP", "fifo", "10"])
        }));
        until_blocked(&srv, i + 1);
    }
    let mut p = Client::connect(addr);
    for (i, w) in waiters.into_iter().enumerate() {
        let v = format!("v{i}");
        p.resp(&["RPUSH", "fifo", &v]);
        assert_eq!(w.join().unwrap(), arr(vec![bulk("fifo"), bulk(&v)]));
    }
}

#[test]
fn one_push_of_several_elements_reaches_as_many_waiters() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let got = c.resp(&["BLPOP", "many", "10"]);
                (got, c)
            })
        })
        .collect();
    until_blocked(&srv, 4);
    let mut p = Client::connect(addr);
    p.resp(&["RPUSH", "many", "x", "y", "z"]);
    // Three are served, the fourth still waits; one more push serves it.
    srv.wait_for("three served", |s| blocked_clients(s) == 1);
    p.resp(&["RPUSH", "many", "w"]);
    let mut got: Vec<String> = waiters
        .into_iter()
        .map(|h| {
            let (r, _c) = h.join().unwrap();
            let Resp::Array(Some(kv)) = r else {
                panic!("{r:?}")
            };
            let Resp::Bulk(Some(v)) = &kv[1] else {
                panic!("{kv:?}")
            };
            String::from_utf8(v.clone()).unwrap()
        })
        .collect();
    got.sort();
    assert_eq!(got, ["w", "x", "y", "z"]);
    assert_eq!(blocked_clients(&srv), 0);
}

#[test]
fn a_waiter_whose_element_was_taken_waits_on() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let waiter = std::thread::spawn(move || Client::connect(addr).resp(&["BLPOP", "k", "10"]));
    until_blocked(&srv, 1);
    // The push wakes the waiter, but the transaction's LPOP takes the
    // element first (nothing runs between EXEC's commands).
    let mut p = Client::connect(addr);
    p.resp(&["MULTI"]);
    p.resp(&["RPUSH", "k", "taken"]);
    p.resp(&["LPOP", "k"]);
    assert_eq!(p.resp(&["EXEC"]), arr(vec![Resp::Int(1), bulk("taken")]));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(blocked_clients(&srv), 1, "the waiter stopped waiting");
    p.resp(&["RPUSH", "k", "mine"]);
    assert_eq!(waiter.join().unwrap(), arr(vec![bulk("k"), bulk("mine")]));
}

/// Nothing arrives on `c` for a moment (its request is held back).
fn nothing_yet(c: &mut Client) {
    c.s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut b = [0u8; 1];
    let r = c.s.read(&mut b);
    assert!(r.is_err(), "a reply arrived during the pause: {r:?} {b:?}");
    c.s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
}

/// `CLIENT PAUSE` from a RESP client holds back memcached (text, meta and
/// binary) and native clients too: under WRITE their writes wait, unread,
/// while their reads go on; `CLIENT UNPAUSE` runs the writes at once, in
/// order; ALL holds reads until the pause's time ends; UDP writes are
/// dropped meanwhile.
#[test]
fn client_pause_holds_back_memcached_and_native_clients() {
    let srv = Server::default_config();
    let mut admin = Client::connect(srv.resp());
    let mut mc = Client::connect(srv.mc());
    let mut meta = Client::connect(srv.mc());
    let mut binary = Client::connect(srv.mc());
    let mut native = Client::connect(srv.native());
    let udp = udp_client(srv.mc_udp());
    mc.roundtrip(b"set k 0 0 1\r\na\r\n", b"STORED\r\n");
    let ok = Resp::Simple(b"OK".to_vec());
    assert_eq!(admin.resp(&["CLIENT", "PAUSE", "60000", "WRITE"]), ok);

    // Reads go on.
    mc.roundtrip(b"get k\r\n", b"VALUE k 0 1\r\na\r\nEND\r\n");
    meta.roundtrip(b"mg k v\r\n", b"VA 1\r\na\r\n");
    // Writes wait, and what was sent after them waits behind them.
    mc.send(b"set k 0 0 1\r\nb\r\nget k\r\n");
    meta.send(b"ma counter N0 J5 v\r\nmn\r\n");
    // A binary SET of "bin" = "v" (opcode 0x01, 8 bytes of extras).
    let mut set = vec![0x80, 0x01, 0, 3, 8, 0, 0, 0];
    set.extend_from_slice(&(8u32 + 3 + 1).to_be_bytes());
    set.extend_from_slice(&[0; 12]);
    set.extend_from_slice(&[0; 8]);
    set.extend_from_slice(b"binv");
    binary.send(&set);
    let put = kv::PutReq {
        key: (b"nat").into(),
        value: (b"v").into(),
    };
    native.send(&native_frame(kind::PUT, 1, &put));
    udp.send(&mc_udp_request(7, b"set u 0 0 1\r\nx\r\n"))
        .unwrap();
    let native_udp = udp_client(srv.native_udp());
    let put_udp = kv::PutReq {
        key: (b"nu").into(),
        value: (b"v").into(),
    };
    native_udp
        .send(&native_frame(kind::PUT, 9, &put_udp))
        .unwrap();
    for c in [&mut mc, &mut meta, &mut binary, &mut native] {
        nothing_yet(c);
    }
    assert_eq!(admin.resp(&["GET", "k"]), bulk("a"));
    assert_eq!(
        admin.resp(&["EXISTS", "counter", "bin", "nat"]),
        Resp::Int(0)
    );

    assert_eq!(admin.resp(&["CLIENT", "UNPAUSE"]), ok);
    mc.expect(b"STORED\r\nVALUE k 0 1\r\nb\r\nEND\r\n");
    meta.expect(b"VA 1\r\n5\r\nMN\r\n");
    let reply = binary.read_n(24);
    assert_eq!(&reply[..2], &[0x81, 0x01], "binary SET reply");
    assert_eq!(&reply[6..8], &[0, 0], "binary SET status");
    let ack = native.read_reply_to(kind::PUT, 1);
    assert_eq!(kv::Ack::decode(&ack).unwrap().status, status::OK);
    assert_eq!(admin.resp(&["GET", "nat"]), bulk("v"));
    assert_eq!(admin.resp(&["GET", "bin"]), bulk("v"));
    // The UDP writes were dropped unanswered, not kept for later.
    assert_eq!(admin.resp(&["EXISTS", "u", "nu"]), Resp::Int(0));
    let mut buf = [0u8; 64];
    for s in [&udp, &native_udp] {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        assert!(s.recv(&mut buf).is_err(), "a reply to a dropped write");
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    }
    udp.send(&mc_udp_request(8, b"set u 0 0 1\r\nx\r\n"))
        .unwrap();
    let n = udp.recv(&mut buf).unwrap();
    assert_eq!(
        &buf[8..n],
        b"STORED\r\n",
        "reply to the request after the pause"
    );

    // ALL holds reads too, till its time ends (no UNPAUSE).
    assert_eq!(admin.resp(&["CLIENT", "PAUSE", "400", "ALL"]), ok);
    let t0 = Instant::now();
    mc.roundtrip(b"get k\r\n", b"VALUE k 0 1\r\nb\r\nEND\r\n");
    let get = kv::GetReq {
        key: (b"nat").into(),
    };
    native.send(&native_frame(kind::GET, 2, &get));
    let _ = native.read_reply_to(kind::GET, 2);
    assert!(
        t0.elapsed() >= Duration::from_millis(350),
        "{:?}",
        t0.elapsed()
    );
}
