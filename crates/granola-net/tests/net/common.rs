//! Shared helpers: deterministic message specs, byte patterns, pumps that
//! move frames across a datapath pair, and an echo service for the server.

use granola::{Buf, Decode, Pool};
use granola_net::datapath::Datapath;
use granola_net::server::{Accepted, Close, ConnIo, Service, Session};
use granola_net::{Flushed, Frame, FrameHeader, RxBuffer, TxQueue, FLAG_RESPONSE};
use granola_tests::sample::{Inner, Sample};
use std::io;
use std::net::{TcpListener, TcpStream};

/// The copy threshold the tests' TX queues and encoders use.
pub const THRESHOLD: usize = 512;

/// A byte pattern that depends on the position and a seed (so shifted,
/// swapped or stale bytes are detected).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    let mut w = 0u64;
    while v.len() < len {
        let x = (w ^ seed.rotate_left(17) ^ 0x5555_aaaa_0f0f_f0f0)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(seed);
        v.extend_from_slice(&x.to_le_bytes());
        w += 1;
    }
    v.truncate(len);
    v
}

/// What a test message contains; everything is derived from it, so the
/// expected contents can be rebuilt after every handle has been dropped.
#[derive(Clone, Debug)]
pub struct Spec {
    pub id: u32,
    pub seed: u64,
    /// Length of `data` (referenced when >= THRESHOLD, in the pool).
    pub data_len: usize,
    /// Lengths of the `vals` entries.
    pub vals: Vec<usize>,
    /// Length of `inner.payload`.
    pub inner_len: usize,
}

impl Spec {
    pub fn new(id: u32, data_len: usize, vals: Vec<usize>) -> Spec {
        Spec {
            id,
            seed: 0x1000 + id as u64 * 7919,
            data_len,
            vals,
            inner_len: 100,
        }
    }

    pub fn data(&self) -> Vec<u8> {
        pattern(self.seed, self.data_len)
    }

    pub fn val(&self, i: usize) -> Vec<u8> {
        pattern(self.seed ^ (0xABCD_0000 + i as u64), self.vals[i])
    }

    pub fn inner(&self) -> Vec<u8> {
        pattern(self.seed ^ 0xFEED, self.inner_len)
    }

    pub fn name(&self) -> String {
        format!("msg-{}", self.id)
    }

    /// The values of this spec allocated in `pool` (data first, then vals).
    pub fn values(&self, pool: &Pool) -> Vec<Buf> {
        let mut v = vec![pool.alloc_copy(&self.data()).expect("pool")];
        for i in 0..self.vals.len() {
            v.push(pool.alloc_copy(&self.val(i)).expect("pool"));
        }
        v
    }

    /// Builds the message from pool values made by [`Spec::values`]; the
    /// large ones go by reference under THRESHOLD, the small ones are
    /// copied when it is encoded.
    pub fn build(&self, values: &[Buf]) -> Sample<'static> {
        Sample {
            id: self.id,
            name: self.name().into(),
            data: values[0].clone().into(),
            vals: values[1..].iter().map(|v| v.clone().into()).collect(),
            keys: vec!["k0".into(), format!("key-{}", self.seed).into()],
            nums: (0..(self.id % 5) as i32).map(|i| i * -3 + 1).collect(),
            inner: Some(Inner {
                a: self.seed,
                payload: self.inner().into(),
                ..Default::default()
            }),
            items: vec![
                Inner {
                    a: 1,
                    ..Default::default()
                },
                Inner {
                    payload: b"item-payload".into(),
                    ..Default::default()
                },
            ],
            flag: self.id % 2 == 0,
            ratio: self.id as f64 / 4.0,
            ..Default::default()
        }
    }

    /// Referenced entries the message will have under THRESHOLD.
    pub fn referenced(&self) -> usize {
        std::iter::once(self.data_len)
            .chain(self.vals.iter().copied())
            .filter(|&l| l >= THRESHOLD)
            .count()
    }

    /// Checks a decoded message against the spec, field by field.
    pub fn check(&self, m: &Sample<'_>) {
        assert_eq!(m.id, self.id, "id");
        assert_eq!(
            m.name.as_str().expect("utf-8"),
            self.name(),
            "name of {}",
            self.id
        );
        assert!(m.data == self.data(), "data of message {}", self.id);
        assert_eq!(m.vals.len(), self.vals.len(), "vals count of {}", self.id);
        for (i, v) in m.vals.iter().enumerate() {
            assert!(*v == self.val(i), "vals[{i}] of message {}", self.id);
        }
        let keys: Vec<&str> = m.keys.iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(keys, ["k0".to_string(), format!("key-{}", self.seed)]);
        let nums: Vec<i32> = (0..(self.id % 5) as i32).map(|i| i * -3 + 1).collect();
        assert_eq!(m.nums, nums, "nums of {}", self.id);
        let inner = m.inner.as_ref().expect("inner present");
        assert_eq!(inner.a, self.seed);
        assert!(
            inner.payload == self.inner(),
            "inner payload of {}",
            self.id
        );
        assert_eq!(m.items.len(), 2);
        assert_eq!(m.items[0].a, 1);
        assert!(m.items[1].payload == b"item-payload");
        assert_eq!(m.flag, self.id % 2 == 0);
        assert_eq!(m.ratio, self.id as f64 / 4.0);
    }

    /// The full encoded frame (header + payload) this spec sends.
    pub fn frame_bytes(&self, pool: &Pool, kind: u16) -> Vec<u8> {
        let values = self.values(pool);
        let m = self.build(&values);
        let sga = granola::Message::to_sga_with(&m, THRESHOLD).unwrap();
        frame_of(kind, self.id, 0, &sga.to_vec())
    }
}

/// A frame (header + payload) as bytes.
pub fn frame_of(kind: u16, id: u32, flags: u16, payload: &[u8]) -> Vec<u8> {
    let h = FrameHeader {
        len: payload.len() as u32,
        kind,
        flags,
        id,
    };
    let mut v = h.to_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

/// A pool for one test.
pub fn pool(bytes: usize) -> Pool {
    Pool::with_capacity(bytes).expect("pool")
}

/// A frame header for request `id`.
pub fn hdr(id: u32) -> FrameHeader {
    FrameHeader {
        len: 0,
        kind: 3,
        flags: 0,
        id,
    }
}

/// Moves bytes from `tx` over `a` to `rx` over `b` until `want` frames
/// have been received (or panics after `max_rounds` rounds without
/// finishing). Calls `between` after every round (e.g. to churn the pool).
#[allow(clippy::too_many_arguments)]
pub fn pump<A: Datapath + ?Sized, B: Datapath + ?Sized>(
    tx: &mut TxQueue,
    a: &mut A,
    rx: &mut RxBuffer,
    b: &mut B,
    max_frame: usize,
    want: usize,
    max_rounds: usize,
    mut between: impl FnMut(),
) -> Vec<Frame> {
    let mut frames = Vec::new();
    for _ in 0..max_rounds {
        match tx.flush(a) {
            Ok(Flushed::All) | Ok(Flushed::Blocked) => {}
            Err(e) => panic!("flush: {e}"),
        }
        loop {
            match rx.read_from(b) {
                Ok(st) => {
                    assert!(!st.eof, "unexpected end of stream");
                    rx.take_frames(max_frame, &mut frames)
                        .expect("valid frames");
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("read: {e}"),
            }
            if frames.len() >= want {
                break;
            }
        }
        between();
        if frames.len() >= want && tx.is_empty() {
            return frames;
        }
    }
    panic!(
        "pump: only {} of {want} frames after {max_rounds} rounds ({} bytes still queued)",
        frames.len(),
        tx.queued_bytes()
    );
}

/// Fills freed pool slots of the sizes a test uses with `fill`, repeatedly
/// (alloc, fill, freeze, drop), so a slot freed too early gets overwritten.
pub fn churn(pool: &Pool, sizes: &[usize], rounds: usize, fill: u8) {
    for _ in 0..rounds {
        let mut held = Vec::new();
        for &s in sizes {
            // Stop at exhaustion: the test still checks bytes afterwards.
            if let Some(mut w) = pool.alloc(s) {
                let cap = w.capacity();
                w.as_full_mut_slice()[..cap].fill(fill);
                w.set_len(cap);
                held.push(w.freeze());
            }
        }
        drop(held);
    }
}

/// A connected loopback TCP pair (client, server side).
pub fn tcp_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let c = TcpStream::connect(l.local_addr().unwrap()).expect("connect");
    let (s, _) = l.accept().expect("accept");
    (c, s)
}

// ---------------------------------------------------------------------------
// Echo service (the paper's echo application: decode, re-serialize, reply)

pub struct Echo {
    pub max_frame: usize,
}

pub struct EchoSession {
    frames: Vec<Frame>,
    max_frame: usize,
}

impl Service for Echo {
    fn name(&self) -> &str {
        "echo-test"
    }
    fn session(&self, _conn: &Accepted) -> Box<dyn Session> {
        Box::new(EchoSession {
            frames: Vec::new(),
            max_frame: self.max_frame,
        })
    }
}

impl Session for EchoSession {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        self.frames.clear();
        io.rx
            .take_frames(self.max_frame, &mut self.frames)
            .map_err(|e| Close::new(e.to_string()))?;
        for f in self.frames.drain(..) {
            let m = Sample::decode_shared(&f.payload, THRESHOLD)
                .map_err(|e| Close::new(format!("decode: {e}")))?;
            let h = FrameHeader {
                flags: FLAG_RESPONSE,
                ..f.header
            };
            io.tx
                .send_object(h, &m)
                .map_err(|e| Close::new(format!("send: {e}")))?;
        }
        Ok(())
    }
}

/// Reads one frame from a blocking stream: (header, payload).
pub fn read_frame(s: &mut TcpStream) -> io::Result<(FrameHeader, Vec<u8>)> {
    use std::io::Read;
    let mut h = [0u8; granola_net::FRAME_HEADER_LEN];
    s.read_exact(&mut h)?;
    let h = FrameHeader::read(&h).expect("12 bytes");
    let mut p = vec![0u8; h.len as usize];
    s.read_exact(&mut p)?;
    Ok((h, p))
}

/// Polls `cond` every millisecond for up to `secs` seconds.
pub fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    cond()
}

/// Asserts that the pool holds exactly the live slots it held at
/// `baseline` (segments carved for size classes stay carved, so only the
/// slot counters are compared).
#[track_caller]
pub fn assert_no_leak(pool: &Pool, baseline: granola::PoolStats) {
    let now = pool.stats();
    assert_eq!(
        (now.live_slots, now.live_bytes),
        (baseline.live_slots, baseline.live_bytes),
        "pool slots leaked: {now:?} vs baseline {baseline:?}"
    );
}
