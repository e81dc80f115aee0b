//! memcached over UDP (the 8-byte frame header, multi-datagram replies, the
//! amplification bound, only get/gets) and the native protocol over UDP.
//!
//! No test waits for the *absence* of a reply: a request that must get no
//! answer (a runt, a multi-datagram request) is followed by a valid one on
//! the same socket, and the first datagram back must answer the valid one.

mod common;

use common::*;
use granola::Decode;
use granola_kv::proto as kv;
use granola_kv::server::native::{kind, status};
use granola_net::{FrameHeader, FRAME_HEADER_LEN};
use std::net::UdpSocket;

/// Stores `value` under `key` over memcached TCP.
fn tcp_set(srv: &Server, key: &str, value: &[u8]) {
    let mut c = Client::connect(srv.mc());
    c.roundtrip(&mc_set_cmd(key.as_bytes(), 3, value), b"STORED\r\n");
}

/// Sends `body` as request `id` and returns the reassembled reply and its
/// datagram count.
fn udp_call(s: &UdpSocket, id: u16, body: &[u8]) -> (Vec<u8>, usize) {
    s.send(&mc_udp_request(id, body)).unwrap();
    mc_udp_reply(s, id)
}

/// Receives one datagram and returns its request id.
fn next_reply_id(s: &UdpSocket) -> u16 {
    let mut buf = vec![0u8; 65536];
    let n = s.recv(&mut buf).expect("a reply");
    assert!(n >= 8);
    u16::from_be_bytes([buf[0], buf[1]])
}

#[test]
fn get_and_gets_single_datagram() {
    let srv = Server::default_config();
    tcp_set(&srv, "k", b"value");
    let s = udp_client(srv.mc_udp());
    let (reply, n) = udp_call(&s, 7, b"get k\r\n");
    assert_eq!(n, 1);
    assert_bytes(&reply, b"VALUE k 3 5\r\nvalue\r\nEND\r\n", "udp get");
    let (reply, n) = udp_call(&s, 8, b"get nope\r\n");
    assert_eq!(n, 1);
    assert_bytes(&reply, b"END\r\n", "udp miss");
    // gets: the same CAS unique as over TCP.
    let mut c = Client::connect(srv.mc());
    c.send(b"gets k\r\n");
    let tcp_reply = c.read_until(b"END\r\n");
    let (reply, _) = udp_call(&s, 9, b"gets k\r\n");
    assert_bytes(&reply, &tcp_reply, "udp gets = tcp gets");
    assert!(reply.starts_with(b"VALUE k 3 5 "));
    // Request ids are echoed, whatever they are.
    let (reply, _) = udp_call(&s, 0xffff, b"get k nope k\r\n");
    assert_bytes(
        &reply,
        b"VALUE k 3 5\r\nvalue\r\nVALUE k 3 5\r\nvalue\r\nEND\r\n",
        "udp multi-get",
    );
}

#[test]
fn multi_datagram_reply_within_the_amplification_bound() {
    // Default factor (10): a reply may be at most 10x the request datagram.
    let srv = Server::default_config();
    let value = pattern(3, 10 << 10);
    tcp_set(&srv, "big", &value);
    let s = udp_client(srv.mc_udp());
    let mut want = mc_value_reply(b"big", 3, &value, None);
    want.extend_from_slice(b"END\r\n");

    // A short request for 10 KiB is refused...
    let (reply, n) = udp_call(&s, 1, b"get big\r\n");
    assert_eq!(n, 1);
    assert_bytes(
        &reply,
        b"SERVER_ERROR reply too large for UDP\r\n",
        "amplification bound",
    );
    // ...a request padded (with keys that miss) to a tenth of the reply is
    // answered, in several datagrams reassembled by sequence number.
    let mut req = b"get big".to_vec();
    let mut i = 0;
    while (req.len() + 2 + 8) * 10 < want.len() {
        req.extend_from_slice(format!(" pad{i:04}").as_bytes());
        i += 1;
    }
    req.extend_from_slice(b"\r\n");
    let (reply, n) = udp_call(&s, 2, &req);
    assert!(n >= 8, "10 KiB in 1400-byte datagrams: {n} datagrams");
    assert_bytes(&reply, &want, "reassembled 10 KiB reply");
    // The bound is exact: the same request without its last pad key (8
    // bytes shorter, now under a tenth of the reply) is refused.
    let mut short = req.clone();
    let cut = short.len() - 2 - 8; // the last " padNNNN"
    short.drain(cut..cut + 8);
    assert!((short.len() + 8) * 10 < want.len());
    let (reply, _) = udp_call(&s, 3, &short);
    assert_bytes(
        &reply,
        b"SERVER_ERROR reply too large for UDP\r\n",
        "just below the bound",
    );
}

#[test]
fn large_replies_with_a_raised_factor() {
    let mut cfg = config();
    cfg.udp_amplification = 100_000;
    let srv = Server::start(cfg);
    let s = udp_client(srv.mc_udp());
    for (i, size) in [1usize, 1391, 1392, 1400, 4096, 10 << 10, 100 << 10]
        .into_iter()
        .enumerate()
    {
        let value = pattern(i as u64, size);
        let key = format!("v{size}");
        tcp_set(&srv, &key, &value);
        let mut want = mc_value_reply(key.as_bytes(), 3, &value, None);
        want.extend_from_slice(b"END\r\n");
        let (reply, n) = udp_call(&s, 100 + i as u16, format!("get {key}\r\n").as_bytes());
        assert_eq!(n, want.len().div_ceil(1400 - 8), "datagrams for {size}");
        assert_bytes(&reply, &want, &format!("{size}-byte value over UDP"));
    }
}

/// What memcached serves over UDP is served; what one spoofed datagram
/// could multiply (re-timing keys, flushing) is refused.
#[test]
fn udp_commands() {
    let srv = Server::default_config();
    let s = udp_client(srv.mc_udp());
    for (id, body, want) in [
        (1u16, &b"set k 0 0 1\r\nx\r\n"[..], &b"STORED\r\n"[..]),
        (2, b"mg k v\r\n", b"VA 1\r\nx\r\n"),
        (3, b"incr n 1\r\n", b"NOT_FOUND\r\n"),
        (4, b"delete k\r\n", b"DELETED\r\n"),
        (5, b"version\r\n", b"VERSION 1.6.21\r\n"),
        (6, b"mn\r\n", b"MN\r\n"),
    ] {
        let (reply, _) = udp_call(&s, id, body);
        assert_bytes(&reply, want, &show(body));
    }
    tcp_set(&srv, "t", b"v");
    let refused = b"SERVER_ERROR command not served over UDP\r\n";
    for (id, body) in [
        (10u16, &b"gat 100 t\r\n"[..]),
        (11, b"gats 100 t\r\n"),
        (12, b"touch t 100\r\n"),
        (13, b"flush_all\r\n"),
        (14, b"mg t v T100\r\n"),
        (15, b"shutdown\r\n"),
    ] {
        let (reply, _) = udp_call(&s, id, body);
        assert_bytes(&reply, refused, &show(body));
    }
    // Nothing was flushed or re-timed.
    let (reply, _) = udp_call(&s, 20, b"mg t v t\r\n");
    assert_bytes(&reply, b"VA 1 t-1\r\nv\r\n", "t untouched");
    let (reply, _) = udp_call(&s, 21, b"bogus\r\n");
    assert_bytes(&reply, b"ERROR\r\n", "unknown command");
}

#[test]
fn runts_and_multi_datagram_requests_are_ignored() {
    let srv = Server::default_config();
    tcp_set(&srv, "k", b"v");
    let s = udp_client(srv.mc_udp());
    for (i, runt) in [&b""[..], b"\x00", b"\x00\x01\x00\x00\x00\x01\x00"]
        .into_iter()
        .enumerate()
    {
        s.send(runt).unwrap();
        // A multi-datagram request (total = 2): dropped, as memcached does.
        let mut multi = mc_udp_request(500 + i as u16, b"get k\r\n");
        multi[5] = 2;
        s.send(&multi).unwrap();
        s.send(&mc_udp_request(600 + i as u16, b"get k\r\n"))
            .unwrap();
        assert_eq!(
            next_reply_id(&s),
            600 + i as u16,
            "first reply after a runt answers the valid request"
        );
    }
    let (reply, _) = udp_call(&s, 700, b"get k\r\n");
    assert_bytes(&reply, b"VALUE k 3 1\r\nv\r\nEND\r\n", "still serving");
}

/// A native request datagram (one whole frame).
fn native_dgram<M: granola::Message>(k: u16, id: u32, msg: &M) -> Vec<u8> {
    native_frame(k, id, msg)
}

/// Receives one native reply datagram and checks its header.
fn native_reply(s: &UdpSocket, k: u16, id: u32) -> Vec<u8> {
    let mut buf = vec![0u8; 70_000];
    let n = s.recv(&mut buf).expect("native udp reply");
    let h = FrameHeader::read(&buf[..n]).expect("frame header");
    assert!(h.is_response());
    assert_eq!((h.kind, h.id), (k, id));
    assert_eq!(
        h.len as usize,
        n - FRAME_HEADER_LEN,
        "one frame per datagram"
    );
    buf[FRAME_HEADER_LEN..n].to_vec()
}

#[test]
fn native_udp_round_trip_and_too_large() {
    // Replies here exceed the default amplification factor (10): raised,
    // so this test sees the datagram limit; the cap is tested below.
    let mut cfg = common::config();
    cfg.udp_amplification = 100_000;
    let srv = Server::start(cfg);
    let s = udp_client(srv.native_udp());
    let put = |s: &UdpSocket, id: u32, key: &[u8], value: &[u8]| {
        let p = kv::PutReq {
            key: (key).into(),
            value: (value).into(),
        };
        s.send(&native_dgram(kind::PUT, id, &p)).unwrap();
        let r = native_reply(s, kind::PUT, id);
        let a = kv::Ack::decode(&r).unwrap();
        (a.status, a.count)
    };
    let get = |s: &UdpSocket, id: u32, key: &[u8]| {
        let g = kv::GetReq { key: (key).into() };
        s.send(&native_dgram(kind::GET, id, &g)).unwrap();
        let r = native_reply(s, kind::GET, id);
        let g = kv::GetResp::decode(&r).unwrap();
        (g.status, g.value.to_vec())
    };
    assert_eq!(put(&s, 1, b"k", b"small"), (status::OK, 1));
    assert_eq!(get(&s, 2, b"k"), (status::OK, b"small".to_vec()));
    assert_eq!(get(&s, 3, b"nope"), (status::NOT_FOUND, vec![]));
    // 40 KiB fits a datagram (and goes by reference).
    let mid = pattern(1, 40 << 10);
    assert_eq!(put(&s, 4, b"mid", &mid), (status::OK, 1));
    assert_eq!(get(&s, 5, b"mid"), (status::OK, mid));
    // Visible over TCP too: one store.
    let mut c = Client::connect(srv.mc());
    c.roundtrip(b"get k\r\n", b"VALUE k 0 5\r\nsmall\r\nEND\r\n");
    // A value too large for a datagram: TOO_LARGE instead.
    let big = pattern(2, 100 << 10);
    c.roundtrip(&mc_set_cmd(b"big", 0, &big), b"STORED\r\n");
    assert_eq!(get(&s, 6, b"big"), (status::TOO_LARGE, vec![]));
    // Runts and frames whose length disagrees with the datagram are
    // dropped; the next request is answered first.
    s.send(b"short").unwrap();
    let mut bad_len = native_raw(kind::GET, 99, b"abc");
    bad_len[0] = 9;
    s.send(&bad_len).unwrap();
    assert_eq!(get(&s, 7, b"k"), (status::OK, b"small".to_vec()));
    // An undecodable payload gets BAD_REQUEST.
    s.send(&native_raw(kind::PUT, 8, &[0xff; 20])).unwrap();
    let r = native_reply(&s, kind::PUT, 8);
    assert_eq!(kv::Ack::decode(&r).unwrap().status, status::BAD_REQUEST);
}

/// Native UDP keeps the amplification cap too: a small request for a large
/// value gets TOO_LARGE, not the value.
#[test]
fn native_udp_amplification_cap() {
    let srv = Server::default_config();
    let s = udp_client(srv.native_udp());
    let mut c = Client::connect(srv.mc());
    c.roundtrip(&mc_set_cmd(b"small", 0, b"tiny"), b"STORED\r\n");
    c.roundtrip(&mc_set_cmd(b"amp", 0, &pattern(3, 4000)), b"STORED\r\n");
    for (id, key, want) in [
        (1, &b"small"[..], status::OK),
        (2, b"amp", status::TOO_LARGE),
    ] {
        let g = kv::GetReq { key: (key).into() };
        s.send(&native_dgram(kind::GET, id, &g)).unwrap();
        let r = native_reply(&s, kind::GET, id);
        let g = kv::GetResp::decode(&r).unwrap();
        assert_eq!(g.status, want, "{}", show(key));
    }
}
