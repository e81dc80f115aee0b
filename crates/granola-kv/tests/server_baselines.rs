//! The native protocol with every `--serializer`: a server per serializer,
//! in process, driven over real TCP (and UDP) connections by the matching
//! client codec (`server::baselines::client`). Every value that comes back
//! is compared byte for byte with what was stored, for values below and
//! above the copy threshold (1 KiB), lists of 2 × 2 KiB and 64 KiB values.

use granola_kv::server::baselines::client::{self, NativeCodec};
use granola_kv::server::baselines::{Request, Response, Serializer};
use granola_kv::server::config::Config;
use granola_kv::server::native::{kind, status};
use granola_kv::server::{self, Running};
use granola_net::{FrameHeader, FLAG_RESPONSE, FRAME_HEADER_LEN};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

type Owned = Response<Vec<u8>>;

fn start(serializer: Serializer) -> Running {
    let mut config = Config::for_tests();
    // The UDP checks fetch values far above the default amplification cap
    // (10x the request), which `server_udp` tests.
    config.udp_amplification = 1 << 20;
    config.serializer = serializer;
    server::start(config).expect("server starts")
}

/// A deterministic value of `len` bytes, different per `seed`.
fn value(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(31)
                .wrapping_add(u32::from(seed) * 7) as u8
        })
        .collect()
}

struct Conn {
    stream: TcpStream,
    codec: Box<dyn NativeCodec>,
    next_id: u32,
}

impl Conn {
    fn new(addr: SocketAddr, serializer: Serializer) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            codec: client::codec(serializer).expect("codec"),
            next_id: 1,
        }
    }

    /// Reads one response frame; checks the response flag.
    fn read_frame(&mut self) -> (FrameHeader, Vec<u8>) {
        let mut h = [0u8; FRAME_HEADER_LEN];
        self.stream.read_exact(&mut h).expect("response header");
        let h = FrameHeader::read(&h).unwrap();
        assert_eq!(h.flags & FLAG_RESPONSE, FLAG_RESPONSE, "{h:?}");
        let mut payload = vec![0u8; h.len as usize];
        self.stream
            .read_exact(&mut payload)
            .expect("response payload");
        (h, payload)
    }

    /// Sends a raw frame and returns the decoded response to it.
    fn raw(&mut self, kind: u16, payload: &[u8]) -> Owned {
        let id = self.next_id;
        self.next_id += 1;
        let mut wire = FrameHeader {
            len: payload.len() as u32,
            kind,
            flags: 0,
            id,
        }
        .to_bytes()
        .to_vec();
        wire.extend_from_slice(payload);
        self.stream.write_all(&wire).unwrap();
        let (h, payload) = self.read_frame();
        assert_eq!((h.kind, h.id), (kind, id));
        self.codec
            .decode_response_owned(h.kind, &payload)
            .expect("response decodes")
    }

    fn call(&mut self, req: &Request<'_>) -> Owned {
        let mut payload = Vec::new();
        self.codec.encode_request(req, &mut payload);
        self.raw(req.kind(), &payload)
    }

    /// Sends every request in one write, then reads the replies in order.
    fn pipeline(&mut self, reqs: &[Request<'_>]) -> Vec<Owned> {
        let first = self.next_id;
        let mut wire = Vec::new();
        for r in reqs {
            client::encode_frame(&mut *self.codec, self.next_id, r, &mut wire);
            self.next_id += 1;
        }
        self.stream.write_all(&wire).unwrap();
        reqs.iter()
            .enumerate()
            .map(|(i, r)| {
                let (h, payload) = self.read_frame();
                assert_eq!((h.kind, h.id), (r.kind(), first + i as u32));
                self.codec.decode_response_owned(h.kind, &payload).unwrap()
            })
            .collect()
    }

    fn put(&mut self, key: &[u8], v: &[u8]) {
        let r = self.call(&Request::Put { key, value: v });
        assert_eq!(
            r,
            Response::Ack {
                status: status::OK,
                count: 1
            }
        );
    }

    fn get(&mut self, key: &[u8]) -> Owned {
        self.call(&Request::Get { key })
    }
}

fn hit(v: &[u8]) -> Owned {
    Response::Value {
        status: status::OK,
        value: Some(v.to_vec()),
    }
}

fn miss() -> Owned {
    Response::Value {
        status: status::NOT_FOUND,
        value: None,
    }
}

fn ack(st: u32, count: u64) -> Owned {
    Response::Ack { status: st, count }
}

/// Every request kind, values below and above 1 KiB.
fn round_trips(s: Serializer) {
    let running = start(s);
    let mut c = Conn::new(running.addrs.native.unwrap(), s);
    let sizes = [0usize, 1, 100, 1023, 1024, 2048, 4096, 64 << 10];

    // Put / Get.
    for (i, &len) in sizes.iter().enumerate() {
        let key = format!("str:{len}");
        let v = value(i as u8, len);
        c.put(key.as_bytes(), &v);
        assert_eq!(c.get(key.as_bytes()), hit(&v), "{s}: get {len} B");
    }
    assert_eq!(c.get(b"absent"), miss());
    // Overwrite: the new value, whole.
    let v2 = value(99, 3000);
    c.put(b"str:4096", &v2);
    assert_eq!(c.get(b"str:4096"), hit(&v2));

    // GetM: hits of every size and misses, in order.
    let keys: Vec<String> = sizes.iter().map(|l| format!("str:{l}")).collect();
    let mut ks: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
    ks.insert(2, b"absent");
    ks.push(b"also-absent");
    let r = c.call(&Request::GetM { keys: &ks });
    let Response::Values { status: st, values } = r else {
        panic!("{s}: GetM answered {r:?}")
    };
    assert_eq!(st, status::OK);
    assert_eq!(values.len(), ks.len());
    for (k, got) in ks.iter().zip(&values) {
        let want = match *k {
            b"absent" | b"also-absent" => None,
            b"str:4096" => Some(v2.clone()),
            _ => {
                let len: usize = std::str::from_utf8(&k[4..]).unwrap().parse().unwrap();
                let i = sizes.iter().position(|&l| l == len).unwrap();
                Some(value(i as u8, len))
            }
        };
        assert_eq!(got, &want, "{s}: GetM {}", k.escape_ascii());
    }

    // PutM then GetM.
    let (a, b) = (value(1, 10), value(2, 5000));
    let r = c.call(&Request::PutM {
        keys: &[b"m:a", b"m:b"],
        values: &[&a, &b],
    });
    assert_eq!(r, ack(status::OK, 2));
    let r = c.call(&Request::GetM {
        keys: &[b"m:b", b"m:a"],
    });
    assert_eq!(
        r,
        Response::Values {
            status: status::OK,
            values: vec![Some(b.clone()), Some(a.clone())]
        }
    );
    // Unequal lengths: BAD_REQUEST.
    let r = c.call(&Request::PutM {
        keys: &[b"m:c"],
        values: &[],
    });
    assert_eq!(r.status(), status::BAD_REQUEST, "{s}: {r:?}");

    // PutList 2 × 2048, GetList.
    let (e0, e1) = (value(10, 2048), value(11, 2048));
    let r = c.call(&Request::PutList {
        key: b"list",
        values: &[&e0, &e1],
    });
    assert_eq!(r, ack(status::OK, 2));
    let all = Request::GetList {
        key: b"list",
        start: 0,
        end: 0,
        all: true,
    };
    let r = c.call(&all);
    assert_eq!(
        r,
        Response::List {
            status: status::OK,
            values: vec![e0.clone(), e1.clone()]
        },
        "{s}"
    );
    let r = c.call(&Request::GetList {
        key: b"list",
        start: -1,
        end: -1,
        all: false,
    });
    assert_eq!(
        r,
        Response::List {
            status: status::OK,
            values: vec![e1.clone()]
        }
    );

    // AppendToList: small and 64 KiB elements.
    let (e2, e3) = (value(12, 7), value(13, 64 << 10));
    assert_eq!(
        c.call(&Request::AppendToList {
            key: b"list",
            value: &e2
        }),
        ack(status::OK, 3)
    );
    assert_eq!(
        c.call(&Request::AppendToList {
            key: b"list",
            value: &e3
        }),
        ack(status::OK, 4)
    );
    // Appending creates a list.
    assert_eq!(
        c.call(&Request::AppendToList {
            key: b"new-list",
            value: &e2
        }),
        ack(status::OK, 1)
    );

    // GetFromList.
    for (index, want) in [
        (0i64, &e0),
        (1, &e1),
        (2, &e2),
        (3, &e3),
        (-1, &e3),
        (-4, &e0),
    ] {
        let r = c.call(&Request::GetFromList {
            key: b"list",
            index,
        });
        assert_eq!(r, hit(want), "{s}: GetFromList {index}");
    }
    for (key, index) in [(&b"list"[..], 4i64), (b"list", -5), (b"absent", 0)] {
        let r = c.call(&Request::GetFromList { key, index });
        assert_eq!(r, miss(), "{s}: GetFromList {} {index}", key.escape_ascii());
    }
    let r = c.call(&all);
    assert_eq!(
        r,
        Response::List {
            status: status::OK,
            values: vec![e0.clone(), e1.clone(), e2.clone(), e3.clone()]
        }
    );

    // Wrong types.
    let r = c.get(b"list");
    assert_eq!(r.status(), status::WRONG_TYPE, "{s}: {r:?}");
    let r = c.call(&Request::GetFromList {
        key: b"str:100",
        index: 0,
    });
    assert_eq!(r.status(), status::WRONG_TYPE);
    let r = c.call(&Request::GetList {
        key: b"str:100",
        start: 0,
        end: -1,
        all: false,
    });
    assert_eq!(r.status(), status::WRONG_TYPE);
    let r = c.call(&Request::AppendToList {
        key: b"str:100",
        value: b"x",
    });
    assert_eq!(r, ack(status::WRONG_TYPE, 0));
    let r = c.call(&Request::GetList {
        key: b"absent",
        start: 0,
        end: -1,
        all: false,
    });
    assert_eq!(r.status(), status::NOT_FOUND);

    // PutList replaces a string; a list of many mixed sizes.
    let many: Vec<Vec<u8>> = (0..40)
        .map(|i| value(i, (i as usize * 97) % 3000))
        .collect();
    let many_refs: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
    let r = c.call(&Request::PutList {
        key: b"str:100",
        values: &many_refs,
    });
    assert_eq!(r, ack(status::OK, 40));
    let r = c.call(&Request::GetList {
        key: b"str:100",
        start: 0,
        end: -1,
        all: false,
    });
    assert_eq!(
        r,
        Response::List {
            status: status::OK,
            values: many.clone()
        }
    );

    // Delete.
    assert_eq!(
        c.call(&Request::Delete { key: b"list" }),
        ack(status::OK, 1)
    );
    assert_eq!(
        c.call(&Request::Delete { key: b"list" }),
        ack(status::NOT_FOUND, 0)
    );
    let r = c.call(&all);
    assert_eq!(r.status(), status::NOT_FOUND);
    assert_eq!(
        c.call(&Request::Delete { key: b"str:0" }),
        ack(status::OK, 1)
    );
    assert_eq!(c.get(b"str:0"), miss());

    // Undecodable payloads and unknown kinds: BAD_REQUEST, connection kept.
    let r = c.raw(kind::GET, &[0xff; 3]);
    assert_eq!(r.status(), status::BAD_REQUEST, "{s}: {r:?}");
    let r = c.raw(kind::PUT_LIST, &[0xff; 3]);
    assert_eq!(r.status(), status::BAD_REQUEST, "{s}: {r:?}");
    let r = c.raw(77, &[]);
    assert_eq!(r, ack(status::BAD_REQUEST, 0), "{s}");
    let v = value(3, 1500);
    c.put(b"after-bad", &v);
    assert_eq!(c.get(b"after-bad"), hit(&v));

    // Pipelined: one write, replies in order.
    let big = value(20, 64 << 10);
    let small = value(21, 50);
    let reqs = [
        Request::Put {
            key: b"p:big",
            value: &big,
        },
        Request::Put {
            key: b"p:small",
            value: &small,
        },
        Request::Get { key: b"p:big" },
        Request::Get { key: b"p:small" },
        Request::GetM {
            keys: &[b"p:small", b"p:big", b"p:none"],
        },
        Request::Delete { key: b"p:small" },
        Request::Get { key: b"p:small" },
    ];
    let got = c.pipeline(&reqs);
    assert_eq!(
        got,
        vec![
            ack(status::OK, 1),
            ack(status::OK, 1),
            hit(&big),
            hit(&small),
            Response::Values {
                status: status::OK,
                values: vec![Some(small.clone()), Some(big.clone()), None]
            },
            ack(status::OK, 1),
            miss(),
        ],
        "{s}"
    );

    running.handle.shutdown();
    running.handle.join();
}

/// One request per datagram; a reply too large for a datagram is answered
/// with TOO_LARGE.
fn udp(s: Serializer) {
    let running = start(s);
    let mut tcp = Conn::new(running.addrs.native.unwrap(), s);
    let small = value(1, 300);
    let mid = value(2, 4096);
    let huge = value(3, 64 << 10);
    tcp.put(b"u:small", &small);
    tcp.put(b"u:mid", &mid);
    tcp.put(b"u:huge", &huge);

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let to = running.addrs.native_udp.unwrap();
    let mut codec = client::codec(s).unwrap();
    let mut ask = |id: u32, req: &Request<'_>| -> Owned {
        let mut wire = Vec::new();
        client::encode_frame(&mut *codec, id, req, &mut wire);
        sock.send_to(&wire, to).unwrap();
        let mut buf = vec![0u8; 70_000];
        let (n, _) = sock.recv_from(&mut buf).expect("reply datagram");
        let h = FrameHeader::read(&buf[..n]).unwrap();
        assert_eq!((h.kind, h.id, h.flags), (req.kind(), id, FLAG_RESPONSE));
        assert_eq!(h.len as usize, n - FRAME_HEADER_LEN);
        codec
            .decode_response_owned(h.kind, &buf[FRAME_HEADER_LEN..n])
            .unwrap()
    };
    assert_eq!(
        ask(1, &Request::Get { key: b"u:small" }),
        hit(&small),
        "{s}"
    );
    assert_eq!(ask(2, &Request::Get { key: b"u:mid" }), hit(&mid), "{s}");
    assert_eq!(ask(3, &Request::Get { key: b"u:none" }), miss(), "{s}");
    let r = ask(4, &Request::Get { key: b"u:huge" });
    assert_eq!(r.status(), status::TOO_LARGE, "{s}: {r:?}");
    let r = ask(
        5,
        &Request::GetM {
            keys: &[b"u:mid", b"u:small"],
        },
    );
    assert_eq!(
        r,
        Response::Values {
            status: status::OK,
            values: vec![Some(mid.clone()), Some(small.clone())]
        }
    );
    let r = ask(
        6,
        &Request::Put {
            key: b"u:new",
            value: &small,
        },
    );
    assert_eq!(r, ack(status::OK, 1));
    assert_eq!(tcp.get(b"u:new"), hit(&small));

    running.handle.shutdown();
    running.handle.join();
}

/// Waits until the server has accounted at least `bytes` sent bytes.
fn sent_at_least(running: &Running, bytes: u64) -> (u64, u64) {
    let s = &running.handle.stats;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let copied = s.bytes_copied.load(Ordering::Relaxed);
        let referenced = s.bytes_referenced.load(Ordering::Relaxed);
        if copied + referenced >= bytes || Instant::now() > deadline {
            return (copied, referenced);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What each serializer's send path does with a stored value: granola
/// references values at or above the threshold, granola-copy never,
/// granola-ref always; the baselines copy (their replies are the library's
/// own bytes).
fn send_path(s: Serializer) {
    let running = start(s);
    let mut c = Conn::new(running.addrs.native.unwrap(), s);
    let small = value(1, 100);
    let big = value(2, 64 << 10);
    c.put(b"small", &small);
    c.put(b"big", &big);
    let before = sent_at_least(&running, 0);
    let before = before.0 + before.1;
    assert_eq!(c.get(b"small"), hit(&small));
    let (_, ref_small) = sent_at_least(&running, before + 100);
    assert_eq!(c.get(b"big"), hit(&big));
    let (_, ref_all) = sent_at_least(&running, before + 100 + (64 << 10));
    match s {
        Serializer::Granola => {
            assert_eq!(ref_small, 0, "{s}: 100 B is below the threshold");
            assert!(ref_all >= 64 << 10, "{s}: {ref_all}");
        }
        Serializer::GranolaRef => {
            assert!(ref_small >= 100, "{s}: {ref_small}");
            assert!(ref_all >= 100 + (64 << 10), "{s}: {ref_all}");
        }
        _ => assert_eq!(ref_all, 0, "{s}: nothing by reference"),
    }
    running.handle.shutdown();
    running.handle.join();
}

macro_rules! per_serializer {
    ($($name:ident => $s:expr),* $(,)?) => {$(
        mod $name {
            use super::*;

            #[test]
            fn round_trips() {
                super::round_trips($s);
            }

            #[test]
            fn udp() {
                super::udp($s);
            }

            #[test]
            fn send_path() {
                super::send_path($s);
            }
        }
    )*};
}

per_serializer! {
    granola => Serializer::Granola,
    granola_copy => Serializer::GranolaCopy,
    granola_ref => Serializer::GranolaRef,
    prost => Serializer::Prost,
    flatbuffers => Serializer::Flatbuffers,
    capnp => Serializer::Capnp,
}

#[test]
fn serializer_names_round_trip() {
    for s in Serializer::ALL {
        assert_eq!(s.name().parse::<Serializer>(), Ok(s));
        assert_eq!(s.to_string(), s.name());
    }
    assert!("protobuf".parse::<Serializer>().is_err());
    assert_eq!(Serializer::default(), Serializer::Granola);
    use clap::Parser;
    let c = Config::parse_from(["granola-kv", "--serializer", "granola-copy"]);
    assert_eq!(c.serializer, Serializer::GranolaCopy);
    let c = Config::parse_from(["granola-kv"]);
    assert_eq!(c.serializer, Serializer::Granola);
}

#[test]
fn frames_match_the_request() {
    for s in Serializer::ALL {
        let mut codec = client::codec(s).unwrap();
        let mut wire = vec![0xaa];
        client::encode_frame(&mut *codec, 42, &Request::Delete { key: b"k" }, &mut wire);
        let h = FrameHeader::read(&wire[1..]).unwrap();
        assert_eq!((h.kind, h.id, h.flags), (kind::DELETE, 42, 0));
        assert_eq!(h.len as usize, wire.len() - 1 - FRAME_HEADER_LEN);
    }
}
