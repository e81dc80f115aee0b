//! The memcached text protocol (`get`, multi-key `get`, `set`, `delete`),
//! over TCP or UDP.
//!
//! Lists have no memcached form: a list's element `i` lives under the
//! sub-key `key.i` ([`KeyRef::with_sub`]), so GetList is a multi-key `get`
//! of the sub-keys, PutList one `set` each, GetFromList and Append a single
//! `get`/`set`. Every `VALUE` block is checked: its key (by hash) against the
//! requested keys in order (memcached omits misses, keeping the order), its
//! length and every byte.
//!
//! Over UDP each request is one datagram that starts with memcached's 8-byte
//! frame header (request id, sequence number 0, datagram count 1, reserved
//! 0); responses may span several datagrams, which the load generator
//! reassembles before calling [`Codec::check`].

use super::{find_crlf, parse_u64, Codec, EncodeError, Expect, Outcome, Peek, Sink, Step};
use crate::load::stats::ErrorKind;
use crate::load::value::{fnv1a64, push_decimal, write_key, KeyRef, ValueSpec};
use crate::workload::{Cmd, Op};

/// Memcached text protocol.
#[derive(Debug, Default)]
pub struct Memcached {
    udp: bool,
    key: Vec<u8>,
}

impl Memcached {
    /// A codec for TCP (`udp = false`) or UDP.
    pub fn new(udp: bool) -> Memcached {
        Memcached {
            udp,
            key: Vec::with_capacity(256),
        }
    }

    fn header(&self, slot_id: u64, tx: &mut Vec<u8>) {
        if self.udp {
            tx.extend_from_slice(&(slot_id as u16).to_be_bytes());
            tx.extend_from_slice(&[0, 0, 0, 1, 0, 0]);
        }
    }

    fn get(&mut self, keys: &[(KeyRef, u32)], sink: &mut dyn Sink) -> Result<(), EncodeError> {
        let s = sink.begin().ok_or(EncodeError::Overflow)?;
        self.header(s.id, s.tx);
        s.tx.extend_from_slice(b"get");
        for (k, len) in keys {
            s.tx.push(b' ');
            let at = s.tx.len();
            write_key(k, s.tx);
            s.specs.push(ValueSpec {
                key_hash: fnv1a64(&s.tx[at..]),
                elem: 0,
                len: *len,
            });
        }
        s.tx.extend_from_slice(b"\r\n");
        *s.expect = if keys.len() == 1 {
            Expect::Value
        } else {
            Expect::Values
        };
        Ok(())
    }

    fn set(&mut self, key: &KeyRef, len: u32, sink: &mut dyn Sink) -> Result<(), EncodeError> {
        let s = sink.begin().ok_or(EncodeError::Overflow)?;
        self.header(s.id, s.tx);
        self.key.clear();
        write_key(key, &mut self.key);
        s.tx.extend_from_slice(b"set ");
        s.tx.extend_from_slice(&self.key);
        s.tx.extend_from_slice(b" 0 0 ");
        push_decimal(s.tx, u64::from(len));
        s.tx.extend_from_slice(b"\r\n");
        ValueSpec::new(&self.key, 0, len).write(s.tx);
        s.tx.extend_from_slice(b"\r\n");
        *s.expect = Expect::Stored;
        Ok(())
    }
}

impl Codec for Memcached {
    fn name(&self) -> &'static str {
        "memcached"
    }

    fn supports(&self, cmd: &Cmd) -> bool {
        !matches!(cmd, Cmd::Echo { .. })
    }

    fn udp_frame_header(&self) -> bool {
        true
    }

    fn encode(&mut self, op: &Op, cmd: &Cmd, sink: &mut dyn Sink) -> Result<(), EncodeError> {
        match *cmd {
            Cmd::Get { key, len } => self.get(&[(key, len)], sink),
            Cmd::MultiGet { first, n } => self.get(op.key_range(first, n), sink),
            Cmd::Set { key, len } => self.set(&key, len, sink),
            Cmd::Delete { key } => {
                let s = sink.begin().ok_or(EncodeError::Overflow)?;
                self.header(s.id, s.tx);
                s.tx.extend_from_slice(b"delete ");
                write_key(&key, s.tx);
                s.tx.extend_from_slice(b"\r\n");
                *s.expect = Expect::Deleted;
                Ok(())
            }
            Cmd::GetList { key, first, n } => {
                // Up to 64 sub-keys per request keeps lines short.
                let lens = op.range(first, n);
                for (c, chunk) in lens.chunks(64).enumerate() {
                    let s = sink.begin().ok_or(EncodeError::Overflow)?;
                    self.header(s.id, s.tx);
                    s.tx.extend_from_slice(b"get");
                    for (i, len) in chunk.iter().enumerate() {
                        s.tx.push(b' ');
                        let at = s.tx.len();
                        write_key(&key.with_sub((c * 64 + i) as u32), s.tx);
                        s.specs.push(ValueSpec {
                            key_hash: fnv1a64(&s.tx[at..]),
                            elem: 0,
                            len: *len,
                        });
                    }
                    s.tx.extend_from_slice(b"\r\n");
                    *s.expect = Expect::List;
                }
                Ok(())
            }
            Cmd::PutList { key, first, n } => {
                for (i, &len) in op.range(first, n).iter().enumerate() {
                    self.set(&key.with_sub(i as u32), len, sink)?;
                }
                Ok(())
            }
            Cmd::GetFromList { key, index, len } => self.get(&[(key.with_sub(index), len)], sink),
            Cmd::Append { key, index, len } => self.set(&key.with_sub(index), len, sink),
            Cmd::Echo { .. } => Err(EncodeError::Unsupported("memcached has no echo")),
        }
    }

    fn peek(&self, rx: &[u8]) -> Peek {
        if rx.is_empty() {
            Peek::NeedMore
        } else {
            Peek::Fifo
        }
    }

    fn check(&mut self, rx: &[u8], expect: Expect, _aux: u32, specs: &[ValueSpec]) -> Step {
        let Some(eol) = find_crlf(rx, 0) else {
            return if rx.len() > 4096 {
                Step::Fatal("memcached: line too long")
            } else {
                Step::NeedMore
            };
        };
        let line = &rx[..eol];
        let done = |len, outcome| Step::Done { len, outcome };
        // Error lines can answer any command.
        if line.starts_with(b"SERVER_ERROR")
            || line.starts_with(b"CLIENT_ERROR")
            || line == b"ERROR"
        {
            return done(eol + 2, Outcome::Err(ErrorKind::ServerError));
        }
        match expect {
            Expect::Stored => match line {
                b"STORED" => done(eol + 2, Outcome::Ok),
                b"NOT_STORED" => done(eol + 2, Outcome::Err(ErrorKind::ServerError)),
                _ => Step::Fatal("memcached: unexpected reply to set"),
            },
            Expect::Deleted => match line {
                b"DELETED" => done(eol + 2, Outcome::Ok),
                b"NOT_FOUND" => done(eol + 2, Outcome::Miss),
                _ => Step::Fatal("memcached: unexpected reply to delete"),
            },
            Expect::Value | Expect::Values | Expect::List => check_values(rx, specs),
            Expect::Count(_) | Expect::AnyCount | Expect::Echo => {
                Step::Fatal("memcached: bad expectation")
            }
        }
    }
}

/// Checks `VALUE <key> <flags> <bytes>\r\n<data>\r\n … END\r\n` against
/// `specs` (requested keys in order; missing ones are misses). A first pass
/// only walks the headers to find `END`, so an incomplete response costs no
/// value comparisons.
fn check_values(rx: &[u8], specs: &[ValueSpec]) -> Step {
    match walk_values(rx, specs, false) {
        Ok(Step::Done { .. }) => walk_values(rx, specs, true).unwrap_or_else(Step::Fatal),
        Ok(other) => other,
        Err(e) => Step::Fatal(e),
    }
}

fn walk_values(rx: &[u8], specs: &[ValueSpec], verify: bool) -> Result<Step, &'static str> {
    let mut pos = 0;
    let mut next = 0; // next spec that may match
    let mut outcome = Outcome::Ok;
    loop {
        let Some(eol) = find_crlf(rx, pos) else {
            return Ok(Step::NeedMore);
        };
        let line = &rx[pos..eol];
        if line == b"END" {
            if next < specs.len() {
                outcome = outcome.and(Outcome::Miss);
            }
            return Ok(Step::Done {
                len: eol + 2,
                outcome,
            });
        }
        let rest = line
            .strip_prefix(b"VALUE ")
            .ok_or("memcached: expected VALUE or END")?;
        let mut f = rest.split(|&c| c == b' ');
        let (Some(key), Some(_flags), Some(bytes)) = (f.next(), f.next(), f.next()) else {
            return Err("memcached: short VALUE line");
        };
        let n = parse_u64(bytes).ok_or("memcached: bad VALUE length")?;
        let data = eol + 2;
        let end = data.saturating_add(n as usize);
        if rx.len() < end.saturating_add(2) {
            return Ok(Step::NeedMore);
        }
        if &rx[end..end + 2] != b"\r\n" {
            return Err("memcached: value not followed by CRLF");
        }
        if verify {
            let h = fnv1a64(key);
            match specs[next..].iter().position(|s| s.key_hash == h) {
                Some(skip) => {
                    if skip > 0 {
                        outcome = outcome.and(Outcome::Miss);
                    }
                    let spec = &specs[next + skip];
                    outcome = outcome.and(Outcome::of_value(spec, &rx[data..end]));
                    next += skip + 1;
                }
                None => outcome = outcome.and(Outcome::Err(ErrorKind::WrongKey)),
            }
        } else {
            next = next.saturating_add(1);
        }
        pos = end + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_sink::VecSink;
    use super::*;

    fn reply_for(key: &[u8], spec: &ValueSpec) -> Vec<u8> {
        let mut r = b"VALUE ".to_vec();
        r.extend_from_slice(key);
        r.extend_from_slice(format!(" 0 {}\r\n", spec.len).as_bytes());
        spec.write(&mut r);
        r.extend_from_slice(b"\r\n");
        r
    }

    #[test]
    fn get_round_trip_and_wrong_byte() {
        let mut c = Memcached::new(false);
        let mut sink = VecSink::default();
        let mut op = Op::default();
        let key = KeyRef::new("t:", 7, 10);
        op.get(key, 100);
        c.encode(&op, &op.cmds[0].clone(), &mut sink).unwrap();
        assert_eq!(sink.tx, b"get t:7-------\r\n");
        let (_, _, expect, aux, specs) = sink.reqs.pop().unwrap();
        assert_eq!(expect, Expect::Value);
        let mut r = reply_for(&key.to_vec(), &specs[0]);
        r.extend_from_slice(b"END\r\n");
        // Incomplete at every cut, complete at the end.
        for cut in 0..r.len() {
            assert_eq!(
                c.check(&r[..cut], expect, aux, &specs),
                Step::NeedMore,
                "cut {cut}"
            );
        }
        assert_eq!(
            c.check(&r, expect, aux, &specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Ok
            }
        );
        let mut bad = r.clone();
        let at = bad.len() - 10;
        bad[at] ^= 1;
        assert_eq!(
            c.check(&bad, expect, aux, &specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Err(ErrorKind::WrongValue)
            }
        );
        assert_eq!(
            c.check(b"END\r\n", expect, aux, &specs),
            Step::Done {
                len: 5,
                outcome: Outcome::Miss
            }
        );
        let mut wrong = reply_for(b"other", &specs[0]);
        wrong.extend_from_slice(b"END\r\n");
        assert_eq!(
            c.check(&wrong, expect, aux, &specs),
            Step::Done {
                len: wrong.len(),
                outcome: Outcome::Err(ErrorKind::WrongKey)
            }
        );
        assert!(matches!(
            c.check(b"HUH\r\n", expect, aux, &specs),
            Step::Fatal(_)
        ));
    }

    #[test]
    fn multi_get_with_a_miss_and_set() {
        let mut c = Memcached::new(true);
        let mut sink = VecSink::default();
        let mut op = Op::default();
        let (a, b) = (KeyRef::new("y:", 1, 0), KeyRef::new("y:", 2, 0));
        op.multi_get([(a, 5), (b, 6)]);
        op.set(a, 3);
        for cmd in op.cmds.clone() {
            c.encode(&op, &cmd, &mut sink).unwrap();
        }
        let first = sink.reqs[1].1;
        assert_eq!(&sink.tx[..8], &[0, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(&sink.tx[8..first], b"get y:1 y:2\r\n");
        assert_eq!(&sink.tx[first..first + 8], &[0, 1, 0, 0, 0, 1, 0, 0]);
        let set = &sink.tx[first + 8..];
        assert!(
            set.starts_with(b"set y:1 0 0 3\r\n") && set.ends_with(b"\r\n") && set.len() == 15 + 5
        );
        let (_, _, expect, aux, specs) = &sink.reqs[0];
        // Only b is returned: a miss, not an error.
        let mut r = reply_for(b"y:2", &specs[1]);
        r.extend_from_slice(b"END\r\n");
        assert_eq!(
            c.check(&r, *expect, *aux, specs),
            Step::Done {
                len: r.len(),
                outcome: Outcome::Miss
            }
        );
        let (_, _, expect, aux, specs) = &sink.reqs[1];
        assert_eq!(
            c.check(b"STORED\r\n", *expect, *aux, specs),
            Step::Done {
                len: 8,
                outcome: Outcome::Ok
            }
        );
        assert_eq!(
            c.check(b"SERVER_ERROR out of memory\r\n", *expect, *aux, specs),
            Step::Done {
                len: 28,
                outcome: Outcome::Err(ErrorKind::ServerError)
            }
        );
    }
}
