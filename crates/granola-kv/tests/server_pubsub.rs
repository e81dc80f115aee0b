//! Redis Pub/Sub over real sockets: the exact RESP2 replies and RESP3 push
//! frames Redis 7 sends, messages reaching subscribers on either worker,
//! subscribed mode's rules, subscriptions cleaned up when a client leaves,
//! and a subscriber that never reads cut off at its output limit while
//! publishers and the other subscribers go on.

mod common;

use common::*;

fn push3(word: &str, name: &str, n: i64) -> Vec<u8> {
    let mut v = b"*3\r\n".to_vec();
    v.extend(resp_bulk(word.as_bytes()));
    v.extend(resp_bulk(name.as_bytes()));
    v.extend(format!(":{n}\r\n").into_bytes());
    v
}

fn message(channel: &str, payload: &[u8]) -> Vec<u8> {
    let mut v = b"*3\r\n".to_vec();
    v.extend(resp_bulk(b"message"));
    v.extend(resp_bulk(channel.as_bytes()));
    v.extend(resp_bulk(payload));
    v
}

fn numsub(srv: &Server, channel: &str) -> i64 {
    let mut c = Client::connect(srv.resp());
    match c.resp(&["PUBSUB", "NUMSUB", channel]) {
        Resp::Array(Some(v)) => match v[1] {
            Resp::Int(n) => n,
            ref r => panic!("{r:?}"),
        },
        r => panic!("{r:?}"),
    }
}

#[test]
fn resp2_transcript() {
    let srv = Server::default_config();
    let mut s = Client::connect(srv.resp());
    s.send(&resp_cmd(&["SUBSCRIBE", "news", "sports"]));
    s.expect(&push3("subscribe", "news", 1));
    s.expect(&push3("subscribe", "sports", 2));
    s.send(&resp_cmd(&["PSUBSCRIBE", "n*"]));
    s.expect(&push3("psubscribe", "n*", 3));
    let mut p = Client::connect(srv.resp());
    assert_eq!(p.resp(&["PUBLISH", "news", "hello"]), Resp::Int(2));
    assert_eq!(p.resp(&["PUBLISH", "nothing-here", "x"]), Resp::Int(1));
    assert_eq!(p.resp(&["PUBLISH", "weather", "x"]), Resp::Int(0));
    s.expect(&message("news", b"hello"));
    let mut pm = b"*4\r\n".to_vec();
    for part in [&b"pmessage"[..], b"n*", b"news", b"hello"] {
        pm.extend(resp_bulk(part));
    }
    s.expect(&pm);
    let mut pm2 = b"*4\r\n".to_vec();
    for part in [&b"pmessage"[..], b"n*", b"nothing-here", b"x"] {
        pm2.extend(resp_bulk(part));
    }
    s.expect(&pm2);
    // Subscribed mode: PING answers in the messages' shape; other
    // commands are refused with Redis's text.
    s.send(&resp_cmd(&["PING"]));
    s.expect(b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    s.send(&resp_cmd(&["PING", "hi"]));
    s.expect(b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");
    s.send(&resp_cmd(&["GET", "k"]));
    s.expect(b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n");
    assert_eq!(
        p.resp(&["PUBSUB", "CHANNELS"]),
        Resp::Array(Some(vec![
            Resp::Bulk(Some(b"news".to_vec())),
            Resp::Bulk(Some(b"sports".to_vec()))
        ]))
    );
    assert_eq!(p.resp(&["PUBSUB", "NUMPAT"]), Resp::Int(1));
    assert_eq!(resp_info_u64(srv.resp(), "pubsub_channels"), 2);
    assert_eq!(resp_info_u64(srv.resp(), "pubsub_patterns"), 1);
    // UNSUBSCRIBE with no names leaves every channel, one reply each.
    s.send(&resp_cmd(&["UNSUBSCRIBE"]));
    s.expect(&push3("unsubscribe", "news", 2));
    s.expect(&push3("unsubscribe", "sports", 1));
    s.send(&resp_cmd(&["PUNSUBSCRIBE"]));
    s.expect(&push3("punsubscribe", "n*", 0));
    // Out of subscribed mode: commands run again.
    s.send(&resp_cmd(&["GET", "k"]));
    s.expect(b"$-1\r\n");
    // Nothing to leave.
    s.send(&resp_cmd(&["UNSUBSCRIBE"]));
    s.expect(b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
    assert_eq!(p.resp(&["PUBSUB", "NUMPAT"]), Resp::Int(0));
    assert_eq!(numsub(&srv, "news"), 0);
}

#[test]
fn shard_channels_are_a_namespace_of_their_own() {
    // Replies compared byte for byte with Redis 7.0's.
    let srv = Server::default_config();
    let mut s = Client::connect(srv.resp());
    s.send(&resp_cmd(&["SSUBSCRIBE", "a", "b"]));
    s.expect(&push3("ssubscribe", "a", 1));
    s.expect(&push3("ssubscribe", "b", 2));
    // Channel and pattern replies count channels and patterns only.
    s.send(&resp_cmd(&["SUBSCRIBE", "a"]));
    s.expect(&push3("subscribe", "a", 1));
    s.send(&resp_cmd(&["PSUBSCRIBE", "*"]));
    s.expect(&push3("psubscribe", "*", 2));
    let mut p = Client::connect(srv.resp());
    // SPUBLISH reaches shard subscribers only; PUBLISH never reaches them.
    assert_eq!(p.resp(&["SPUBLISH", "a", "x"]), Resp::Int(1));
    assert_eq!(p.resp(&["PUBLISH", "a", "y"]), Resp::Int(2));
    assert_eq!(p.resp(&["SPUBLISH", "zz", "q"]), Resp::Int(0));
    let mut smessage = b"*3\r\n".to_vec();
    for part in [&b"smessage"[..], b"a", b"x"] {
        smessage.extend(resp_bulk(part));
    }
    s.expect(&smessage);
    s.expect(&message("a", b"y"));
    s.read_until(b"$1\r\ny\r\n"); // the pattern's copy
    let bulks = |names: &[&str]| {
        Resp::Array(Some(
            names
                .iter()
                .map(|n| Resp::Bulk(Some(n.as_bytes().to_vec())))
                .collect(),
        ))
    };
    assert_eq!(p.resp(&["PUBSUB", "SHARDCHANNELS"]), bulks(&["a", "b"]));
    assert_eq!(p.resp(&["PUBSUB", "SHARDCHANNELS", "b*"]), bulks(&["b"]));
    assert_eq!(p.resp(&["PUBSUB", "CHANNELS"]), bulks(&["a"]));
    assert_eq!(
        p.resp(&["PUBSUB", "SHARDNUMSUB", "a", "zz"]),
        Resp::Array(Some(vec![
            Resp::Bulk(Some(b"a".to_vec())),
            Resp::Int(1),
            Resp::Bulk(Some(b"zz".to_vec())),
            Resp::Int(0)
        ]))
    );
    // SUNSUBSCRIBE with no names leaves every shard channel; subscribed
    // mode lasts while any subscription of any kind is left.
    s.send(&resp_cmd(&["SUNSUBSCRIBE"]));
    s.expect(&push3("sunsubscribe", "a", 1));
    s.expect(&push3("sunsubscribe", "b", 0));
    s.send(&resp_cmd(&["GET", "k"]));
    s.read_until(b"are allowed in this context\r\n");
    s.send(&resp_cmd(&["UNSUBSCRIBE"]));
    s.expect(&push3("unsubscribe", "a", 1));
    s.send(&resp_cmd(&["PUNSUBSCRIBE"]));
    s.expect(&push3("punsubscribe", "*", 0));
    s.send(&resp_cmd(&["SUNSUBSCRIBE"]));
    s.expect(b"*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n");
    s.send(&resp_cmd(&["GET", "k"]));
    s.expect(b"$-1\r\n");
    assert_eq!(p.resp(&["PUBSUB", "SHARDCHANNELS"]), bulks(&[]));
}

#[test]
fn resp3_gets_push_frames_and_runs_commands_while_subscribed() {
    let srv = Server::default_config();
    let mut s = Client::connect(srv.resp());
    let mut hello = resp_cmd(&["HELLO", "3"]);
    hello.extend(resp_cmd(&["PING"]));
    s.send(&hello);
    s.read_until(b"+PONG\r\n");
    s.send(&resp_cmd(&["SUBSCRIBE", "ch"]));
    s.expect(b">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n");
    s.send(&resp_cmd(&["SET", "k", "v"]));
    s.expect(b"+OK\r\n");
    Client::connect(srv.resp()).resp(&["PUBLISH", "ch", "m"]);
    s.expect(b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n");
    s.send(&resp_cmd(&["UNSUBSCRIBE", "other"]));
    s.expect(b">3\r\n$11\r\nunsubscribe\r\n$5\r\nother\r\n:1\r\n");
    // RESET leaves subscribed mode.
    s.send(&resp_cmd(&["RESET"]));
    s.expect(b"+RESET\r\n");
    assert_eq!(numsub(&srv, "ch"), 0);
}

#[test]
fn every_subscriber_gets_every_message_in_order() {
    const SUBSCRIBERS: usize = 6;
    const MESSAGES: usize = 200;
    let srv = Server::default_config();
    let addr = srv.resp();
    // Spread over both workers; each checks every message's sequence
    // number and checksum.
    let subs: Vec<Client> = (0..SUBSCRIBERS)
        .map(|_| {
            let mut s = Client::connect(addr);
            s.send(&resp_cmd(&["SUBSCRIBE", "feed"]));
            s.expect(&push3("subscribe", "feed", 1));
            s
        })
        .collect();
    assert_eq!(numsub(&srv, "feed"), SUBSCRIBERS as i64);
    let mut p = Client::connect(addr);
    for i in 0..MESSAGES {
        let body = format!("m{i}-{:016x}", fnv(format!("m{i}").as_bytes()));
        assert_eq!(
            p.resp(&["PUBLISH", "feed", &body]),
            Resp::Int(SUBSCRIBERS as i64)
        );
    }
    let readers: Vec<_> = subs
        .into_iter()
        .map(|mut s| {
            std::thread::spawn(move || {
                for i in 0..MESSAGES {
                    let body = format!("m{i}-{:016x}", fnv(format!("m{i}").as_bytes()));
                    s.expect(&message("feed", body.as_bytes()));
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn a_subscriber_that_leaves_is_unsubscribed() {
    let srv = Server::default_config();
    {
        let mut s = Client::connect(srv.resp());
        s.send(&resp_cmd(&["SUBSCRIBE", "gone"]));
        s.expect(&push3("subscribe", "gone", 1));
        assert_eq!(numsub(&srv, "gone"), 1);
    }
    srv.wait_for("the subscription to go", |s| numsub(s, "gone") == 0);
    let mut p = Client::connect(srv.resp());
    assert_eq!(p.resp(&["PUBLISH", "gone", "x"]), Resp::Int(0));
}

#[test]
fn a_subscriber_that_never_reads_is_cut_off_and_others_go_on() {
    let srv = Server::default_config();
    let addr = srv.resp();
    let mut stuck = Client::connect(addr);
    stuck.send(&resp_cmd(&["SUBSCRIBE", "firehose"]));
    stuck.expect(&push3("subscribe", "firehose", 1));
    let mut good = Client::connect(addr);
    good.send(&resp_cmd(&["SUBSCRIBE", "firehose"]));
    good.expect(&push3("subscribe", "firehose", 1));
    // 64 MiB published (twice the 32 MiB limit). `good` reads each
    // message before the next is published, so only `stuck` falls behind
    // (a subscriber slower than its publisher is cut off too, as in
    // Redis: that is not what this checks).
    let payload = vec![b'x'; 256 << 10];
    let want = message("firehose", &payload);
    let mut p = Client::connect(addr);
    let mut receivers = Vec::new();
    for _ in 0..256 {
        let Resp::Int(n) = p.resp(&[&b"PUBLISH"[..], b"firehose", &payload]) else {
            panic!("PUBLISH failed");
        };
        receivers.push(n);
        good.expect(&want);
    }
    // Both received until `stuck` passed the limit, then only `good`.
    assert_eq!(receivers[0], 2);
    assert_eq!(*receivers.last().unwrap(), 1, "{receivers:?}");
    srv.wait_for("the stuck subscriber's connection to end", |s| {
        numsub(s, "firehose") == 1
    });
    // Its connection is closed (after whatever it had been sent).
    stuck.read_to_close();
}

#[test]
fn subscribing_inside_multi_is_refused_with_one_reply() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.resp());
    c.resp(&["MULTI"]);
    c.resp(&["SUBSCRIBE", "a", "b"]);
    c.resp(&["PUBLISH", "a", "x"]);
    match c.resp(&["EXEC"]) {
        Resp::Array(Some(v)) => {
            assert_eq!(v.len(), 2);
            assert_eq!(
                v[0],
                Resp::Error(b"ERR SUBSCRIBE is not allowed inside MULTI".to_vec())
            );
            assert_eq!(v[1], Resp::Int(0));
        }
        r => panic!("{r:?}"),
    }
    // Not subscribed: commands run.
    assert_eq!(c.resp(&["GET", "k"]), Resp::Bulk(None));
}

/// Client tracking sees memcached writes: a RESP3 client that read `k`
/// (and `m`) is told when a memcached text `set`, a meta `md` and a
/// binary-protocol `delete` change them, and of a memcached `flush_all`.
#[test]
fn tracking_clients_are_told_of_memcached_writes() {
    let srv = Server::default_config();
    let mut t = Client::connect(srv.resp());
    let mut setup = resp_cmd(&["HELLO", "3"]);
    setup.extend(resp_cmd(&["CLIENT", "TRACKING", "ON"]));
    setup.extend(resp_cmd(&["GET", "k"]));
    setup.extend(resp_cmd(&["GET", "m"]));
    setup.extend(resp_cmd(&["GET", "b"]));
    setup.extend(resp_cmd(&["PING"]));
    t.send(&setup);
    let got = t.read_until(b"+PONG\r\n");
    assert!(
        find(&got, b"+OK\r\n_\r\n_\r\n_\r\n").is_some(),
        "{}",
        show(&got)
    );
    let invalidated = |key: &str| {
        format!(
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n${}\r\n{key}\r\n+PONG\r\n",
            key.len()
        )
        .into_bytes()
    };
    let mut mc = Client::connect(srv.mc());
    mc.roundtrip(&mc_set_cmd(b"k", 0, b"v"), b"STORED\r\n");
    t.send(&resp_cmd(&["PING"]));
    t.expect(&invalidated("k"));
    mc.roundtrip(b"set m 0 0 1\r\nx\r\nmd m q\r\nmn\r\n", b"STORED\r\nMN\r\n");
    t.send(&resp_cmd(&["PING"]));
    // The set, then the meta delete (the key was no longer tracked
    // after the first invalidation, so one push).
    t.expect(&invalidated("m"));
    t.send(&resp_cmd(&["GET", "b"]));
    t.expect(b"_\r\n");
    // Binary protocol (its own connection: the first byte picks the
    // protocol): delete (opcode 0x04) of "b", a miss but a write.
    let mut bin = Client::connect(srv.mc());
    let mut req = vec![0x80, 0x04, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
    req.extend_from_slice(&[0; 8]);
    req.push(b'b');
    bin.send(&req);
    let reply = bin.read_n(24);
    assert_eq!(reply[0], 0x81, "a binary response");
    t.send(&resp_cmd(&["PING"]));
    t.expect(&invalidated("b"));
    mc.roundtrip(b"flush_all\r\n", b"OK\r\n");
    t.send(&resp_cmd(&["PING"]));
    t.expect(b">2\r\n$10\r\ninvalidate\r\n_\r\n+PONG\r\n");
}
