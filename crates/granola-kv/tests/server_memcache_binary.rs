//! memcached's binary protocol against a real server over TCP: transcripts
//! of request frames and the exact response frames, quiet pipelines, large
//! values (sent by reference), and bad input.

mod common;

use common::*;

const OPAQUE: u32 = 0xdead_beef;

/// A request frame.
fn req(op: u8, cas: u64, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut f = vec![0x80, op];
    f.extend_from_slice(&(key.len() as u16).to_be_bytes());
    f.push(extras.len() as u8);
    f.extend_from_slice(&[0, 0, 0]);
    f.extend_from_slice(&((extras.len() + key.len() + value.len()) as u32).to_be_bytes());
    f.extend_from_slice(&OPAQUE.to_be_bytes());
    f.extend_from_slice(&cas.to_be_bytes());
    f.extend_from_slice(extras);
    f.extend_from_slice(key);
    f.extend_from_slice(value);
    f
}

/// A response frame, its magic and opaque checked.
struct Resp {
    op: u8,
    status: u16,
    cas: u64,
    extras: Vec<u8>,
    key: Vec<u8>,
    value: Vec<u8>,
}

fn read_resp(c: &mut Client) -> Resp {
    let h = c.read_n(24);
    assert_eq!(h[0], 0x81, "response magic: {}", show(&h));
    assert_eq!(&h[12..16], &OPAQUE.to_be_bytes(), "opaque echoed");
    let key_len = u16::from_be_bytes([h[2], h[3]]) as usize;
    let extras_len = h[4] as usize;
    let body = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
    let b = c.read_n(body);
    Resp {
        op: h[1],
        status: u16::from_be_bytes([h[6], h[7]]),
        cas: u64::from_be_bytes(h[16..24].try_into().unwrap()),
        extras: b[..extras_len].to_vec(),
        key: b[extras_len..extras_len + key_len].to_vec(),
        value: b[extras_len + key_len..].to_vec(),
    }
}

fn set_extras(flags: u32, exptime: u32) -> Vec<u8> {
    [flags.to_be_bytes(), exptime.to_be_bytes()].concat()
}

fn arith_extras(delta: u64, initial: u64, exptime: u32) -> Vec<u8> {
    let mut e = delta.to_be_bytes().to_vec();
    e.extend_from_slice(&initial.to_be_bytes());
    e.extend_from_slice(&exptime.to_be_bytes());
    e
}

#[test]
fn transcript_of_every_command() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.mc());
    // set, get with flags and CAS
    c.send(&req(0x01, 0, &set_extras(0x1234, 0), b"k", b"hello"));
    let r = read_resp(&mut c);
    assert_eq!((r.op, r.status), (0x01, 0));
    let cas = r.cas;
    assert_ne!(cas, 0);
    c.send(&req(0x00, 0, &[], b"k", b""));
    let r = read_resp(&mut c);
    assert_eq!((r.status, r.cas), (0, cas));
    assert_eq!(r.extras, 0x1234u32.to_be_bytes());
    assert!(r.key.is_empty());
    assert_eq!(r.value, b"hello");
    // getk carries the key; a miss says Not found (getk: the key)
    c.send(&req(0x0c, 0, &[], b"k", b""));
    assert_eq!(read_resp(&mut c).key, b"k");
    c.send(&req(0x00, 0, &[], b"nope", b""));
    let r = read_resp(&mut c);
    assert_eq!((r.status, r.value.as_slice()), (0x0001, &b"Not found"[..]));
    c.send(&req(0x0c, 0, &[], b"nope", b""));
    let r = read_resp(&mut c);
    assert_eq!((r.status, r.key.as_slice()), (0x0001, &b"nope"[..]));
    // CAS: stale -> exists; right -> stored; set with CAS on a missing key
    c.send(&req(0x01, cas + 1000, &set_extras(0, 0), b"k", b"x"));
    assert_eq!(read_resp(&mut c).status, 0x0002);
    c.send(&req(0x01, cas, &set_extras(0, 0), b"k", b"y"));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x01, 5, &set_extras(0, 0), b"missing", b"x"));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    // add / replace / append / prepend
    c.send(&req(0x02, 0, &set_extras(0, 0), b"k", b"x"));
    assert_eq!(read_resp(&mut c).status, 0x0002);
    c.send(&req(0x03, 0, &set_extras(0, 0), b"missing", b"x"));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    c.send(&req(0x0e, 0, &[], b"missing", b"x"));
    assert_eq!(read_resp(&mut c).status, 0x0005);
    c.send(&req(0x0e, 0, &[], b"k", b"z"));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x0f, 0, &[], b"k", b"a"));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x00, 0, &[], b"k", b""));
    assert_eq!(read_resp(&mut c).value, b"ayz");
    // incr: initial value on a miss, no creation with all-ones expiration,
    // non-numeric, decr stops at 0
    c.send(&req(0x05, 0, &arith_extras(5, 10, 0xffff_ffff), b"n", b""));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    c.send(&req(0x05, 0, &arith_extras(5, 10, 0), b"n", b""));
    let r = read_resp(&mut c);
    assert_eq!(
        (r.status, r.value.as_slice()),
        (0, &10u64.to_be_bytes()[..])
    );
    c.send(&req(0x05, 0, &arith_extras(5, 10, 0), b"n", b""));
    assert_eq!(read_resp(&mut c).value, 15u64.to_be_bytes());
    c.send(&req(0x06, 0, &arith_extras(100, 0, 0), b"n", b""));
    assert_eq!(read_resp(&mut c).value, 0u64.to_be_bytes());
    c.send(&req(0x05, 0, &arith_extras(1, 0, 0), b"k", b""));
    assert_eq!(read_resp(&mut c).status, 0x0006);
    // touch / gat / gatk
    c.send(&req(0x1c, 0, &100u32.to_be_bytes(), b"k", b""));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x1c, 0, &100u32.to_be_bytes(), b"nope", b""));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    c.send(&req(0x23, 0, &100u32.to_be_bytes(), b"k", b""));
    let r = read_resp(&mut c);
    assert_eq!(
        (r.key.as_slice(), r.value.as_slice()),
        (&b"k"[..], &b"ayz"[..])
    );
    // delete (with a stale CAS first)
    c.send(&req(0x04, 1, &[], b"k", b""));
    assert_eq!(read_resp(&mut c).status, 0x0002);
    c.send(&req(0x04, 0, &[], b"k", b""));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x04, 0, &[], b"k", b""));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    // version, noop, verbosity, stat, flush
    c.send(&req(0x0b, 0, &[], b"", b""));
    assert_eq!(read_resp(&mut c).value, b"1.6.21");
    c.send(&req(0x0a, 0, &[], b"", b""));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x10, 0, &[], b"", b""));
    let mut names = Vec::new();
    loop {
        let r = read_resp(&mut c);
        if r.key.is_empty() {
            break;
        }
        names.push(String::from_utf8(r.key).unwrap());
    }
    assert!(names.iter().any(|n| n == "curr_items"), "{names:?}");
    c.send(&req(0x10, 0, &[], b"settings", b""));
    let r = read_resp(&mut c);
    assert!(!r.key.is_empty());
    while !read_resp(&mut c).key.is_empty() {}
    c.send(&req(0x10, 0, &[], b"bogus", b""));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    c.send(&req(0x08, 0, &[], b"", b""));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x00, 0, &[], b"n", b""));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    // unknown opcode: an error, the connection lives on
    c.send(&req(0x55, 0, &[], b"x", b"yz"));
    assert_eq!(read_resp(&mut c).status, 0x0081);
    // quit: a reply, then the connection closes
    c.send(&req(0x07, 0, &[], b"", b""));
    assert_eq!(read_resp(&mut c).op, 0x07);
    c.expect_closed();
}

#[test]
fn quiet_commands_answer_only_misses_and_errors() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.mc());
    let mut batch = Vec::new();
    batch.extend(req(0x11, 0, &set_extras(0, 0), b"a", b"1")); // setq
    batch.extend(req(0x12, 0, &set_extras(0, 0), b"a", b"2")); // addq: exists
    batch.extend(req(0x09, 0, &[], b"a", b"")); // getq hit
    batch.extend(req(0x09, 0, &[], b"b", b"")); // getq miss: silent
    batch.extend(req(0x0d, 0, &[], b"a", b"")); // getkq hit
    batch.extend(req(0x14, 0, &[], b"b", b"")); // deleteq miss: error
    batch.extend(req(0x0a, 0, &[], b"", b"")); // noop
    c.send(&batch);
    let got: Vec<(u8, u16)> = (0..5)
        .map(|_| {
            let r = read_resp(&mut c);
            (r.op, r.status)
        })
        .collect();
    assert_eq!(
        got,
        [
            (0x12, 0x0002),
            (0x09, 0),
            (0x0d, 0),
            (0x14, 0x0001),
            (0x0a, 0)
        ]
    );
    // quitq closes without a reply
    c.send(&req(0x17, 0, &[], b"", b""));
    c.expect_closed();
}

#[test]
fn large_values_and_limits() {
    let srv = Server::default_config();
    let mut c = Client::connect(srv.mc());
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    c.send(&req(0x01, 0, &set_extras(7, 0), b"big", &big));
    assert_eq!(read_resp(&mut c).status, 0);
    c.send(&req(0x00, 0, &[], b"big", b""));
    assert_eq!(read_resp(&mut c).value, big);
    // Over the item limit: Too large, the old value is gone, the body is
    // swallowed and the connection lives on.
    let huge = vec![b'x'; (1 << 20) + 1];
    c.send(&req(0x01, 0, &set_extras(0, 0), b"big", &huge));
    assert_eq!(read_resp(&mut c).status, 0x0003);
    c.send(&req(0x00, 0, &[], b"big", b""));
    assert_eq!(read_resp(&mut c).status, 0x0001);
    // A body far over the limit is refused from its header alone.
    let mut h = req(0x01, 0, &set_extras(0, 0), b"k", b"");
    h[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
    c.send(&h[..24]);
    assert_eq!(read_resp(&mut c).status, 0x0003);
}

#[test]
fn bad_frames_get_errors_or_a_close() {
    let srv = Server::default_config();
    // key length beyond the body: Invalid arguments, then carry on
    let mut c = Client::connect(srv.mc());
    let mut f = req(0x00, 0, &[], b"key", b"");
    f[2..4].copy_from_slice(&200u16.to_be_bytes());
    c.send(&f);
    assert_eq!(read_resp(&mut c).status, 0x0004);
    // get with extras: Invalid arguments
    c.send(&req(0x00, 0, &[1, 2, 3, 4], b"k", b""));
    assert_eq!(read_resp(&mut c).status, 0x0004);
    c.send(&req(0x0a, 0, &[], b"", b""));
    assert_eq!(read_resp(&mut c).status, 0);
    // a bad magic mid-stream: closed
    let mut bad = req(0x0a, 0, &[], b"", b"");
    bad[0] = 0x81;
    c.send(&bad);
    c.expect_closed();
    // The text protocol still works on other connections.
    let mut t = Client::connect(srv.mc());
    t.roundtrip(b"version\r\n", b"VERSION 1.6.21\r\n");
}
