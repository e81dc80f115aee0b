//! The native protocol with a baseline serializer: granola-kv started with
//! `--serializer prost|flatbuffers|capnp` (Cornflakes §6.1.3's library
//! comparison), spoken through granola-kv's own client codecs
//! ([`granola_kv::server::baselines::client`]).
//!
//! Frames, kinds, ids, status codes and the commands' mapping are those of
//! [`native`](super::native) — the same code (`native::Spell`) turns each
//! [`Cmd`] into a granola-kv
//! [`Request`](granola_kv::server::baselines::Request) and records its
//! expectation, so every serializer sends the same keys and values and is
//! checked the same way. Only the payloads differ: the request is encoded
//! by the library straight into the connection's transmit buffer, and a
//! response is decoded by the library (prost into an owned message,
//! flatbuffers verified in place, capnp in place or from an aligned copy)
//! and every returned value is compared with its [`ValueSpec`]. A payload
//! the library refuses is `malformed`.
//!
//! Echo (kind 0) exists only in the granola wire format, so the echo
//! workload is not [`supported`](Codec::supports).

use granola_kv::server::baselines::client::{self, NativeCodec};
use granola_kv::server::baselines::{Response, Serializer};

use super::native::{
    ack_outcome, check_frame, encode_kv, list_outcome, peek_frame, value_outcome, values_outcome,
    NativeReq, Spell,
};
use super::{Codec, EncodeError, Expect, Outcome, Peek, Sink, Step};
use crate::load::stats::ErrorKind;
use crate::load::value::ValueSpec;
use crate::workload::{Cmd, Op};

/// The native protocol over one of granola-kv's serializers.
pub struct Baseline {
    codec: Box<dyn NativeCodec>,
    name: &'static str,
    spell: Spell,
}

impl std::fmt::Debug for Baseline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Baseline")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Baseline {
    /// A codec for `serializer` (the granola ones reserve a small pool,
    /// hence the `io::Result`).
    pub fn new(serializer: Serializer) -> std::io::Result<Baseline> {
        Ok(Baseline {
            codec: client::codec(serializer)?,
            name: name(serializer),
            spell: Spell::default(),
        })
    }

    /// The serializer spoken.
    pub fn serializer(&self) -> Serializer {
        self.codec.serializer()
    }
}

/// The protocol name of `serializer`: `native:<serializer>`.
pub fn name(serializer: Serializer) -> &'static str {
    match serializer {
        Serializer::Granola => "native:granola",
        Serializer::GranolaCopy => "native:granola-copy",
        Serializer::GranolaRef => "native:granola-ref",
        Serializer::Prost => "native:prost",
        Serializer::Flatbuffers => "native:flatbuffers",
        Serializer::Capnp => "native:capnp",
    }
}

/// Classifies a decoded response against the request's expectation, as
/// [`native`](super::native) classifies its messages.
fn check_response(resp: Response<&[u8]>, expect: Expect, specs: &[ValueSpec]) -> Outcome {
    match (expect, resp) {
        (Expect::Value, Response::Value { status, value }) => match specs.first() {
            // A missing value with status OK is an empty one, as in granola.
            Some(spec) => value_outcome(status, value.unwrap_or_default(), spec),
            None => Outcome::Err(ErrorKind::Unexpected),
        },
        (Expect::Values, Response::Values { status, values }) => super::native::by_status(status)
            .unwrap_or_else(|| values_outcome(specs, values.into_iter())),
        (Expect::List | Expect::Echo, Response::List { status, values }) => {
            list_outcome(status, expect, specs, values.into_iter())
        }
        (
            Expect::Stored | Expect::Deleted | Expect::Count(_) | Expect::AnyCount,
            Response::Ack { status, count },
        ) => ack_outcome(status, count, expect),
        // The client codec picks the message by the frame's kind, which
        // matched the request's: another message means a codec mismatch.
        _ => Outcome::Err(ErrorKind::Unexpected),
    }
}

impl Codec for Baseline {
    fn name(&self) -> &'static str {
        self.name
    }

    fn supports(&self, cmd: &Cmd) -> bool {
        !matches!(cmd, Cmd::Echo { .. })
    }

    fn encode(&mut self, op: &Op, cmd: &Cmd, sink: &mut dyn Sink) -> Result<(), EncodeError> {
        if !self.supports(cmd) {
            return Err(EncodeError::Unsupported("echo (granola wire format only)"));
        }
        let codec = &mut *self.codec;
        let mut slot = sink.begin().ok_or(EncodeError::Overflow)?;
        self.spell
            .request(op, cmd, &mut slot, |req, slot| match *req {
                NativeReq::Kv(r) => {
                    encode_kv(codec, &r, slot);
                    Ok(())
                }
                NativeReq::Echo(_) => Err(EncodeError::Unsupported("echo")),
            })
    }

    fn peek(&self, rx: &[u8]) -> Peek {
        peek_frame(rx)
    }

    fn check(&mut self, rx: &[u8], expect: Expect, aux: u32, specs: &[ValueSpec]) -> Step {
        let codec = &mut *self.codec;
        check_frame(rx, aux, |kind, payload| {
            let mut outcome = Outcome::Err(ErrorKind::Malformed);
            match codec.decode_response(kind, payload, &mut |r| {
                outcome = check_response(r, expect, specs);
            }) {
                Ok(()) => outcome,
                Err(_) => Outcome::Err(ErrorKind::Malformed),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_sink::VecSink;
    use super::*;
    use crate::workload::KeyRef;
    use granola_kv::server::baselines::Request;
    use granola_kv::server::config::Config;
    use granola_net::frame::{FrameHeader, FLAG_RESPONSE, FRAME_HEADER_LEN};
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    /// A granola-kv speaking one serializer, in this process, so responses
    /// are built by the real server-side encoders; stopped on drop.
    struct Server(Option<granola_kv::server::Running>);

    impl Drop for Server {
        fn drop(&mut self) {
            if let Some(r) = self.0.take() {
                r.handle.shutdown();
                r.handle.join();
            }
        }
    }

    fn start(serializer: Serializer) -> (Server, TcpStream) {
        let mut config = Config::for_tests();
        config.serializer = serializer;
        config.threads = Some(1);
        config.udp_port = 0;
        config.native_udp_port = 0;
        config.no_huge_pages = true;
        let running = granola_kv::server::start(config).expect("server starts");
        let addr = running.addrs.native.expect("native port");
        let conn = TcpStream::connect(addr).expect("connect");
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        (Server(Some(running)), conn)
    }

    /// One response frame (header and payload).
    fn read_frame(conn: &mut TcpStream) -> Vec<u8> {
        let mut f = vec![0u8; FRAME_HEADER_LEN];
        conn.read_exact(&mut f).expect("response header");
        let h = FrameHeader::read(&f).unwrap();
        f.resize(FRAME_HEADER_LEN + h.len as usize, 0);
        conn.read_exact(&mut f[FRAME_HEADER_LEN..])
            .expect("response payload");
        f
    }

    /// Encodes every command of `op`, sends them, and checks each response
    /// with the codec; the outcomes in order.
    fn run(c: &mut Baseline, conn: &mut TcpStream, op: &Op) -> Vec<Outcome> {
        let mut sink = VecSink::default();
        for cmd in &op.cmds {
            c.encode(op, cmd, &mut sink).unwrap();
        }
        // The frames: one per command, ids in order, lengths adding up.
        let mut at = 0;
        for (i, r) in sink.reqs.iter().enumerate() {
            assert_eq!(r.1, at);
            let h = FrameHeader::read(&sink.tx[at..]).unwrap();
            assert_eq!((h.id, h.flags, u32::from(h.kind)), (i as u32, 0, r.3));
            at += FRAME_HEADER_LEN + h.len as usize;
        }
        assert_eq!(at, sink.tx.len());
        conn.write_all(&sink.tx).unwrap();
        sink.reqs
            .iter()
            .map(|(id, _, expect, aux, specs)| {
                let f = read_frame(conn);
                assert_eq!(
                    c.peek(&f),
                    Peek::Id {
                        id: *id as u32,
                        len: f.len()
                    }
                );
                assert_eq!(
                    c.check(&f[..f.len() - 1], *expect, *aux, specs),
                    Step::NeedMore
                );
                match c.check(&f, *expect, *aux, specs) {
                    Step::Done { len, outcome } if len == f.len() => outcome,
                    s => panic!("{s:?}"),
                }
            })
            .collect()
    }

    /// Stores `value` under `key` through the library's own client codec,
    /// bypassing the generator (to plant wrong values).
    fn put_raw(c: &mut Baseline, conn: &mut TcpStream, key: &KeyRef, value: &[u8]) {
        let mut wire = Vec::new();
        let req = Request::Put {
            key: &key.to_vec(),
            value,
        };
        client::encode_frame(&mut *c.codec, 9999, &req, &mut wire);
        conn.write_all(&wire).unwrap();
        let f = read_frame(conn);
        let r = c
            .codec
            .decode_response(req.kind(), &f[FRAME_HEADER_LEN..], &mut |r| {
                assert_eq!(r.status(), 0, "{r:?}");
            });
        assert_eq!(r, Ok(()));
    }

    fn round_trip(serializer: Serializer) {
        let (_srv, mut conn) = start(serializer);
        let mut c = Baseline::new(serializer).unwrap();
        assert_eq!(c.serializer().is_granola(), serializer.is_granola());
        let small = KeyRef::new("t:", 1, 30);
        // Above one pattern window: written into the codec's buffers.
        let big = KeyRef::new("t:", 2, 30);
        let list = KeyRef::new("l:", 3, 64);
        let absent = KeyRef::new("t:", 4, 30);
        let lens = [8, 2048, 70_000];

        let mut load = Op::default();
        load.set(small, 3000);
        load.set(big, 100_000);
        load.put_list(list, lens);
        assert_eq!(run(&mut c, &mut conn, &load), [Outcome::Ok; 3]);

        let mut op = Op::default();
        op.get(small, 3000);
        op.get(big, 100_000);
        op.get_list(list, lens);
        op.cmds.push(Cmd::GetFromList {
            key: list,
            index: 2,
            len: 70_000,
        });
        op.multi_get([(small, 3000), (big, 100_000)]);
        op.multi_get([(small, 3000), (absent, 10)]);
        op.get(absent, 10);
        op.cmds.push(Cmd::Append {
            key: list,
            index: 3,
            len: 10,
        });
        // The list now has 4 elements: a wrong count.
        op.cmds.push(Cmd::Append {
            key: list,
            index: 3,
            len: 10,
        });
        op.delete(small);
        op.delete(small);
        op.get(small, 3000);
        op.get_list(absent, [1]);
        use ErrorKind::WrongLength;
        assert_eq!(
            run(&mut c, &mut conn, &op),
            [
                Outcome::Ok,
                Outcome::Ok,
                Outcome::Ok,
                Outcome::Ok,
                Outcome::Ok,
                Outcome::Miss,
                Outcome::Miss,
                Outcome::Ok,
                Outcome::Err(WrongLength),
                Outcome::Ok,
                Outcome::Miss,
                Outcome::Miss,
                Outcome::Miss,
            ],
            "{serializer}"
        );

        // Values stored by someone else: one wrong byte, one short, and
        // another key's value of the right length.
        let spec = ValueSpec::new(&big.to_vec(), 0, 100_000);
        let mut bad = spec.to_vec();
        bad[77_777] ^= 0x40;
        put_raw(&mut c, &mut conn, &big, &bad);
        let mut op = Op::default();
        op.get(big, 100_000);
        op.multi_get([(absent, 10), (big, 100_000)]);
        assert_eq!(
            run(&mut c, &mut conn, &op),
            [Outcome::Err(ErrorKind::WrongValue); 2]
        );
        put_raw(&mut c, &mut conn, &big, &spec.to_vec()[..99_999]);
        op.clear();
        op.get(big, 100_000);
        assert_eq!(run(&mut c, &mut conn, &op), [Outcome::Err(WrongLength)]);
        put_raw(
            &mut c,
            &mut conn,
            &big,
            &ValueSpec::new(b"x", 0, 100_000).to_vec(),
        );
        assert_eq!(
            run(&mut c, &mut conn, &op),
            [Outcome::Err(ErrorKind::WrongValue)]
        );
    }

    #[test]
    fn prost_against_granola_kv() {
        round_trip(Serializer::Prost);
    }

    #[test]
    fn flatbuffers_against_granola_kv() {
        round_trip(Serializer::Flatbuffers);
    }

    #[test]
    fn capnp_against_granola_kv() {
        round_trip(Serializer::Capnp);
    }

    #[test]
    fn granola_client_codec_against_granola_kv() {
        round_trip(Serializer::Granola);
    }

    #[test]
    fn bad_frames_and_echo() {
        for ser in [
            Serializer::Prost,
            Serializer::Flatbuffers,
            Serializer::Capnp,
        ] {
            let mut c = Baseline::new(ser).unwrap();
            assert_eq!(c.name(), format!("native:{ser}"));
            let mut op = Op::default();
            op.echo([16]);
            op.get(KeyRef::new("t:", 1, 30), 10);
            let mut sink = VecSink::default();
            assert!(!c.supports(&op.cmds[0]));
            assert!(matches!(
                c.encode(&op, &op.cmds[0], &mut sink),
                Err(EncodeError::Unsupported(_))
            ));
            assert!(sink.reqs.is_empty() && sink.tx.is_empty(), "no slot taken");
            c.encode(&op, &op.cmds[1], &mut sink).unwrap();
            let (_, _, expect, aux, specs) = sink.reqs.pop().unwrap();
            assert_eq!(
                (expect, aux, specs.len()),
                (
                    Expect::Value,
                    u32::from(granola_kv::server::native::kind::GET),
                    1
                )
            );
            let frame = |flags: u16, kind: u16, payload: &[u8]| {
                let mut f = FrameHeader {
                    len: payload.len() as u32,
                    kind,
                    flags,
                    id: 0,
                }
                .to_bytes()
                .to_vec();
                f.extend_from_slice(payload);
                f
            };
            let done = |outcome| Step::Done { len: 15, outcome };
            // A payload the library refuses; a request frame; another kind.
            let garbage = frame(FLAG_RESPONSE, aux as u16, &[0xff, 0xff, 0xff]);
            assert_eq!(
                c.check(&garbage, expect, aux, &specs),
                done(Outcome::Err(ErrorKind::Malformed)),
                "{ser}"
            );
            let request = frame(0, aux as u16, &[0, 0, 0]);
            assert_eq!(
                c.check(&request, expect, aux, &specs),
                done(Outcome::Err(ErrorKind::Unexpected))
            );
            let other = frame(FLAG_RESPONSE, aux as u16 + 1, &[0, 0, 0]);
            assert_eq!(
                c.check(&other, expect, aux, &specs),
                done(Outcome::Err(ErrorKind::Unexpected))
            );
            assert_eq!(c.peek(&garbage[..11]), Peek::NeedMore);
        }
    }

    #[test]
    fn responses_are_classified_like_native() {
        let spec = ValueSpec::new(b"k", 0, 5);
        let v = spec.to_vec();
        let specs = [spec, ValueSpec::new(b"k", 1, 5)];
        let v1 = specs[1].to_vec();
        let value = |status, value| Response::Value { status, value };
        let one = &specs[..1];
        assert_eq!(
            check_response(value(0, Some(&v[..])), Expect::Value, one),
            Outcome::Ok
        );
        assert_eq!(
            check_response(value(1, None), Expect::Value, one),
            Outcome::Miss
        );
        assert_eq!(
            check_response(value(4, None), Expect::Value, one),
            Outcome::Err(ErrorKind::ServerError)
        );
        assert_eq!(
            check_response(value(0, None), Expect::Value, one),
            Outcome::Err(ErrorKind::WrongLength)
        );
        fn list(values: Vec<&[u8]>) -> Response<&[u8]> {
            Response::List { status: 0, values }
        }
        assert_eq!(
            check_response(list(vec![&v, &v1]), Expect::List, &specs),
            Outcome::Ok
        );
        assert_eq!(
            check_response(list(vec![]), Expect::List, &specs),
            Outcome::Miss
        );
        assert_eq!(
            check_response(list(vec![&v]), Expect::List, &specs),
            Outcome::Err(ErrorKind::WrongLength)
        );
        assert_eq!(
            check_response(list(vec![&v1, &v]), Expect::List, &specs),
            Outcome::Err(ErrorKind::WrongValue)
        );
        fn values(values: Vec<Option<&[u8]>>) -> Response<&[u8]> {
            Response::Values { status: 0, values }
        }
        assert_eq!(
            check_response(values(vec![Some(&v), None]), Expect::Values, &specs[..]),
            Outcome::Miss
        );
        assert_eq!(
            check_response(values(vec![Some(&v)]), Expect::Values, &specs[..]),
            Outcome::Err(ErrorKind::WrongLength)
        );
        let ack = |status, count| Response::Ack { status, count };
        assert_eq!(check_response(ack(0, 1), Expect::Stored, &[]), Outcome::Ok);
        assert_eq!(
            check_response(ack(1, 0), Expect::Deleted, &[]),
            Outcome::Miss
        );
        assert_eq!(
            check_response(ack(1, 0), Expect::Stored, &[]),
            Outcome::Err(ErrorKind::ServerError)
        );
        assert_eq!(
            check_response(ack(0, 2), Expect::Count(3), &[]),
            Outcome::Err(ErrorKind::WrongLength)
        );
        // Another message than the request's.
        assert_eq!(
            check_response(ack(0, 1), Expect::Value, one),
            Outcome::Err(ErrorKind::Unexpected)
        );
    }
}
