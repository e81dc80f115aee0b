//! RESP2 (Redis): `GET`, `MGET`, `SET`, `DEL`, `LRANGE`, `RPUSH`, `LINDEX`,
//! `ECHO`, over TCP.
//!
//! Requests are arrays of bulk strings. Lists are Redis lists: GetList is
//! `LRANGE key 0 -1`, PutList is `DEL key` then `RPUSH key v0 … vn-1` (two
//! requests in the op, so reloading does not grow the list), GetFromList is
//! `LINDEX`, Append is `RPUSH` of one element (expecting the new length).
//! `ECHO` sends the concatenated pieces and checks them piece by piece.

use super::{find_crlf, parse_i64, Codec, EncodeError, Expect, Outcome, Peek, Sink, Step};
use crate::load::stats::ErrorKind;
use crate::load::value::{fnv1a64, push_decimal, write_key, KeyRef, ValueSpec};
use crate::workload::{Cmd, Op};

/// Key hash of echo pieces (they have no key).
pub const ECHO_KEY_HASH: u64 = 0xec40_ec40_ec40_ec40;

/// RESP2.
#[derive(Debug, Default)]
pub struct Resp {
    key: Vec<u8>,
}

impl Resp {
    /// A codec.
    pub fn new() -> Resp {
        Resp {
            key: Vec::with_capacity(256),
        }
    }

    fn key_for(&mut self, k: &KeyRef) -> u64 {
        self.key.clear();
        write_key(k, &mut self.key);
        fnv1a64(&self.key)
    }
}

fn array(tx: &mut Vec<u8>, n: usize) {
    tx.push(b'*');
    push_decimal(tx, n as u64);
    tx.extend_from_slice(b"\r\n");
}

fn bulk(tx: &mut Vec<u8>, b: &[u8]) {
    tx.push(b'$');
    push_decimal(tx, b.len() as u64);
    tx.extend_from_slice(b"\r\n");
    tx.extend_from_slice(b);
    tx.extend_from_slice(b"\r\n");
}

fn bulk_value(tx: &mut Vec<u8>, v: &ValueSpec) {
    tx.push(b'$');
    push_decimal(tx, u64::from(v.len));
    tx.extend_from_slice(b"\r\n");
    v.write(tx);
    tx.extend_from_slice(b"\r\n");
}

fn bulk_num(tx: &mut Vec<u8>, n: i64) {
    let mut buf = [0u8; 21];
    let mut i = buf.len();
    let mut u = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    bulk(tx, &buf[i..]);
}

impl Codec for Resp {
    fn name(&self) -> &'static str {
        "resp"
    }

    fn supports(&self, _cmd: &Cmd) -> bool {
        true
    }

    fn encode(&mut self, op: &Op, cmd: &Cmd, sink: &mut dyn Sink) -> Result<(), EncodeError> {
        match *cmd {
            Cmd::Get { key, len } | Cmd::GetFromList { key, len, .. } => {
                let h = self.key_for(&key);
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                if let Cmd::GetFromList { index, .. } = *cmd {
                    array(s.tx, 3);
                    bulk(s.tx, b"LINDEX");
                    bulk(s.tx, &self.key);
                    bulk_num(s.tx, i64::from(index));
                    s.specs.push(ValueSpec {
                        key_hash: h,
                        elem: index,
                        len,
                    });
                } else {
                    array(s.tx, 2);
                    bulk(s.tx, b"GET");
                    bulk(s.tx, &self.key);
                    s.specs.push(ValueSpec {
                        key_hash: h,
                        elem: 0,
                        len,
                    });
                }
                *s.expect = Expect::Value;
            }
            Cmd::MultiGet { first, n } => {
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                array(s.tx, 1 + n as usize);
                bulk(s.tx, b"MGET");
                for &(k, len) in op.key_range(first, n) {
                    self.key.clear();
                    write_key(&k, &mut self.key);
                    bulk(s.tx, &self.key);
                    s.specs.push(ValueSpec {
                        key_hash: fnv1a64(&self.key),
                        elem: 0,
                        len,
                    });
                }
                *s.expect = Expect::Values;
            }
            Cmd::Set { key, len } => {
                let h = self.key_for(&key);
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                array(s.tx, 3);
                bulk(s.tx, b"SET");
                bulk(s.tx, &self.key);
                bulk_value(
                    s.tx,
                    &ValueSpec {
                        key_hash: h,
                        elem: 0,
                        len,
                    },
                );
                *s.expect = Expect::Stored;
            }
            Cmd::Delete { key } => {
                self.key_for(&key);
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                array(s.tx, 2);
                bulk(s.tx, b"DEL");
                bulk(s.tx, &self.key);
                *s.expect = Expect::Deleted;
            }
            Cmd::GetList { key, first, n } => {
                let h = self.key_for(&key);
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                array(s.tx, 4);
                bulk(s.tx, b"LRANGE");
                bulk(s.tx, &self.key);
                bulk(s.tx, b"0");
                bulk(s.tx, b"-1");
                for (i, &len) in op.range(first, n).iter().enumerate() {
                    s.specs.push(ValueSpec {
                        key_hash: h,
                        elem: i as u32,
                        len,
                    });
                }
                *s.expect = Expect::List;
            }
            Cmd::PutList { key, first, n } => {
                let h = self.key_for(&key);
                {
                    let s = sink.begin().ok_or(EncodeError::Overflow)?;
                    array(s.tx, 2);
                    bulk(s.tx, b"DEL");
                    bulk(s.tx, &self.key);
                    *s.expect = Expect::AnyCount;
                }
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                array(s.tx, 2 + n as usize);
                bulk(s.tx, b"RPUSH");
                bulk(s.tx, &self.key);
                for (i, &len) in op.range(first, n).iter().enumerate() {
                    bulk_value(
                        s.tx,
                        &ValueSpec {
                            key_hash: h,
                            elem: i as u32,
                            len,
                        },
                    );
                }
                *s.expect = Expect::Count(u64::from(n));
            }
            Cmd::Append { key, index, len } => {
                let h = self.key_for(&key);
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                array(s.tx, 3);
                bulk(s.tx, b"RPUSH");
                bulk(s.tx, &self.key);
                bulk_value(
                    s.tx,
                    &ValueSpec {
                        key_hash: h,
                        elem: index,
                        len,
                    },
                );
                *s.expect = Expect::Count(u64::from(index) + 1);
            }
            Cmd::Echo { first, n } => {
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                let lens = op.range(first, n);
                let total: u64 = lens.iter().map(|&l| u64::from(l)).sum();
                array(s.tx, 2);
                bulk(s.tx, b"ECHO");
                s.tx.push(b'$');
                push_decimal(s.tx, total);
                s.tx.extend_from_slice(b"\r\n");
                for (i, &len) in lens.iter().enumerate() {
                    let v = ValueSpec {
                        key_hash: ECHO_KEY_HASH,
                        elem: i as u32,
                        len,
                    };
                    v.write(s.tx);
                    s.specs.push(v);
                }
                s.tx.extend_from_slice(b"\r\n");
                *s.expect = Expect::Echo;
            }
        }
        Ok(())
    }

    fn peek(&self, rx: &[u8]) -> Peek {
        if rx.is_empty() {
            Peek::NeedMore
        } else {
            Peek::Fifo
        }
    }

    fn check(&mut self, rx: &[u8], expect: Expect, _aux: u32, specs: &[ValueSpec]) -> Step {
        // First find the reply's extent without comparing values.
        let len = match reply_len(rx, 0, 0) {
            Ok(Some(l)) => l,
            Ok(None) => return Step::NeedMore,
            Err(e) => return Step::Fatal(e),
        };
        let r = &rx[..len];
        let done = |outcome| Step::Done { len, outcome };
        if r[0] == b'-' {
            return done(Outcome::Err(ErrorKind::ServerError));
        }
        let unexpected = Outcome::Err(ErrorKind::Unexpected);
        match expect {
            Expect::Stored => done(if r == b"+OK\r\n" {
                Outcome::Ok
            } else {
                unexpected
            }),
            Expect::Deleted => done(match integer(r) {
                Some(1) => Outcome::Ok,
                Some(0) => Outcome::Miss,
                _ => unexpected,
            }),
            Expect::AnyCount => done(if integer(r).is_some() {
                Outcome::Ok
            } else {
                unexpected
            }),
            Expect::Count(n) => done(match integer(r) {
                Some(got) if got == n as i64 => Outcome::Ok,
                Some(_) => Outcome::Err(ErrorKind::WrongLength),
                None => unexpected,
            }),
            Expect::Value => done(match bulk_at(r, 0) {
                Some((Some(v), _)) => Outcome::of_value(&specs[0], v),
                Some((None, _)) => Outcome::Miss,
                None => unexpected,
            }),
            Expect::Echo => done(match bulk_at(r, 0) {
                Some((Some(v), _)) => check_concat(specs, v),
                _ => unexpected,
            }),
            Expect::Values | Expect::List => {
                let Some((n, mut pos)) = header_num(r, b'*') else {
                    return done(unexpected);
                };
                if expect == Expect::List && n == 0 {
                    return done(Outcome::Miss);
                }
                if n != specs.len() as i64 {
                    return done(Outcome::Err(ErrorKind::WrongLength));
                }
                let mut outcome = Outcome::Ok;
                for spec in specs {
                    match bulk_at(r, pos) {
                        Some((Some(v), next)) => {
                            outcome = outcome.and(Outcome::of_value(spec, v));
                            pos = next;
                        }
                        Some((None, next)) => {
                            outcome = outcome.and(Outcome::Miss);
                            pos = next;
                        }
                        None => return done(unexpected),
                    }
                }
                done(outcome)
            }
        }
    }
}

fn check_concat(specs: &[ValueSpec], v: &[u8]) -> Outcome {
    let total: usize = specs.iter().map(|s| s.len as usize).sum();
    if v.len() != total {
        return Outcome::Err(ErrorKind::WrongLength);
    }
    let mut off = 0;
    let mut o = Outcome::Ok;
    for s in specs {
        o = o.and(Outcome::of_value(s, &v[off..off + s.len as usize]));
        off += s.len as usize;
    }
    o
}

/// `<tag><number>\r\n` at the start of `r`: the number and the offset after it.
fn header_num(r: &[u8], tag: u8) -> Option<(i64, usize)> {
    if r.first() != Some(&tag) {
        return None;
    }
    let eol = find_crlf(r, 1)?;
    Some((parse_i64(&r[1..eol])?, eol + 2))
}

fn integer(r: &[u8]) -> Option<i64> {
    header_num(r, b':').map(|(n, _)| n)
}

/// A bulk string at `pos`: `(Some(bytes) | None for nil, offset after)`.
fn bulk_at(r: &[u8], pos: usize) -> Option<(Option<&[u8]>, usize)> {
    let (n, data) = header_num(&r[pos..], b'$')?;
    if n < 0 {
        return Some((None, pos + data));
    }
    let start = pos + data;
    let end = start + n as usize;
    Some((Some(r.get(start..end)?), end + 2))
}

/// Length of the complete reply starting at `pos`, `None` if incomplete.
fn reply_len(rx: &[u8], pos: usize, depth: u32) -> Result<Option<usize>, &'static str> {
    if depth > 8 {
        return Err("resp: nesting too deep");
    }
    let Some(&tag) = rx.get(pos) else {
        return Ok(None);
    };
    let Some(eol) = find_crlf(rx, pos) else {
        return if rx.len() - pos > 4096 {
            Err("resp: line too long")
        } else {
            Ok(None)
        };
    };
    let line_end = eol + 2;
    match tag {
        b'+' | b'-' | b':' => Ok(Some(line_end - pos)),
        b'$' => {
            let n = parse_i64(&rx[pos + 1..eol]).ok_or("resp: bad bulk length")?;
            if n < 0 {
                return Ok(Some(line_end - pos));
            }
            let end = line_end + n as usize + 2;
            if rx.len() < end {
                return Ok(None);
            }
            if &rx[end - 2..end] != b"\r\n" {
                return Err("resp: bulk not followed by CRLF");
            }
            Ok(Some(end - pos))
        }
        b'*' => {
            let n = parse_i64(&rx[pos + 1..eol]).ok_or("resp: bad array length")?;
            let mut at = line_end;
            for _ in 0..n.max(0) {
                match reply_len(rx, at, depth + 1)? {
                    Some(l) => at += l,
                    None => return Ok(None),
                }
            }
            Ok(Some(at - pos))
        }
        _ => Err("resp: unknown reply type"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_sink::VecSink;
    use super::*;

    fn encode(op: &Op) -> VecSink {
        let mut c = Resp::new();
        let mut sink = VecSink::default();
        for cmd in &op.cmds {
            c.encode(op, cmd, &mut sink).unwrap();
        }
        sink
    }

    fn bulk_of(spec: &ValueSpec) -> Vec<u8> {
        let mut r = Vec::new();
        bulk_value(&mut r, spec);
        r
    }

    #[test]
    fn get_and_mget() {
        let mut op = Op::default();
        let k = KeyRef::new("y:", 3, 0);
        op.get(k, 50);
        op.multi_get([(k, 50), (KeyRef::new("y:", 4, 0), 60)]);
        let sink = encode(&op);
        assert!(sink
            .tx
            .starts_with(b"*2\r\n$3\r\nGET\r\n$3\r\ny:3\r\n*3\r\n$4\r\nMGET\r\n"));
        let mut c = Resp::new();
        let (_, _, e, a, specs) = &sink.reqs[0];
        let r = bulk_of(&specs[0]);
        for cut in 0..r.len() {
            assert_eq!(c.check(&r[..cut], *e, *a, specs), Step::NeedMore);
        }
        assert_eq!(
            c.check(&r, *e, *a, specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );
        let mut bad = r.clone();
        bad[10] ^= 4;
        assert_eq!(
            c.check(&bad, *e, *a, specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Err(ErrorKind::WrongValue)
            }
        );
        assert_eq!(
            c.check(b"$-1\r\n", *e, *a, specs),
            Step::Done {
                len: 5,
                outcome: Outcome::Miss
            }
        );
        assert_eq!(
            c.check(b"-ERR x\r\n", *e, *a, specs),
            Step::Done {
                len: 8,
                outcome: Outcome::Err(ErrorKind::ServerError)
            }
        );
        let (_, _, e, a, specs) = &sink.reqs[1];
        let mut r = b"*2\r\n".to_vec();
        r.extend(bulk_of(&specs[0]));
        r.extend_from_slice(b"$-1\r\n");
        assert_eq!(
            c.check(&r, *e, *a, specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Miss
            }
        );
    }

    #[test]
    fn lists_and_echo() {
        let mut op = Op::default();
        let k = KeyRef::new("y:", 9, 0);
        op.put_list(k, [10, 20]);
        op.get_list(k, [10, 20]);
        op.echo([3, 4]);
        let sink = encode(&op);
        assert_eq!(sink.reqs.len(), 4);
        let mut c = Resp::new();
        let chk = |c: &mut Resp, i: usize, r: &[u8]| {
            let (_, _, e, a, specs) = &sink.reqs[i];
            c.check(r, *e, *a, specs)
        };
        assert_eq!(
            chk(&mut c, 0, b":0\r\n"),
            Step::Done {
                len: 4,
                outcome: Outcome::Ok
            }
        );
        assert_eq!(
            chk(&mut c, 1, b":2\r\n"),
            Step::Done {
                len: 4,
                outcome: Outcome::Ok
            }
        );
        assert_eq!(
            chk(&mut c, 1, b":3\r\n"),
            Step::Done {
                len: 4,
                outcome: Outcome::Err(ErrorKind::WrongLength)
            }
        );
        let specs = &sink.reqs[2].4;
        let mut r = b"*2\r\n".to_vec();
        r.extend(bulk_of(&specs[0]));
        r.extend(bulk_of(&specs[1]));
        assert_eq!(
            chk(&mut c, 2, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );
        assert_eq!(
            chk(&mut c, 2, b"*0\r\n"),
            Step::Done {
                len: 4,
                outcome: Outcome::Miss
            }
        );
        // Elements swapped: wrong values.
        let mut swapped = b"*2\r\n".to_vec();
        swapped.extend(bulk_of(&ValueSpec {
            len: 10,
            ..specs[1]
        }));
        swapped.extend(bulk_of(&ValueSpec {
            len: 20,
            ..specs[0]
        }));
        assert!(matches!(
            chk(&mut c, 2, &swapped),
            Step::Done {
                outcome: Outcome::Err(_),
                ..
            }
        ));
        let specs = &sink.reqs[3].4;
        let mut v = Vec::new();
        specs[0].write(&mut v);
        specs[1].write(&mut v);
        let mut r = Vec::new();
        bulk(&mut r, &v);
        assert_eq!(
            chk(&mut c, 3, &r),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );
    }
}
