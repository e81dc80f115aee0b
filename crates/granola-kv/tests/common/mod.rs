//! Helpers shared by the server tests: an in-process server that shuts down
//! when dropped, a blocking TCP client with exact-bytes expectations, a RESP
//! reply reader, memcached `stats`, native frames and memcached UDP framing.
//!
//! Every wait is bounded by a socket timeout ([`IO_TIMEOUT`]) or an explicit
//! deadline; none is a timing assertion.
#![allow(dead_code)]

use granola::Message;
use granola_kv::server::config::Config;
use granola_kv::server::{start, Addrs, Running, Shared};
use granola_net::{FrameHeader, FRAME_HEADER_LEN};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest any single read may block before the test fails.
pub const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// A server running in this process; shut down and joined on drop.
pub struct Server {
    running: Option<Running>,
    /// Bound addresses.
    pub addrs: Addrs,
    /// Store and counters.
    pub shared: Arc<Shared>,
}

/// The test configuration: every protocol on kernel-chosen ports, 2
/// threads, a fixed 1024-byte copy threshold (never `auto`).
pub fn config() -> Config {
    let mut c = Config::for_tests();
    c.copy_threshold = "1024".to_string();
    c
}

impl Server {
    /// Starts a server with `cfg`.
    pub fn start(cfg: Config) -> Server {
        let running = start(cfg).expect("server starts");
        Server {
            addrs: running.addrs.clone(),
            shared: running.shared.clone(),
            running: Some(running),
        }
    }

    /// Starts a server with `cfg` on a port below the ephemeral range,
    /// free for TCP and UDP, that `place` writes into the configuration
    /// (for clients that must be told the port before it is bound). A port
    /// found free can be taken before the server binds it, so an "address
    /// in use" tries another port. Returns the server and its port.
    pub fn start_on_free_port(cfg: Config, place: impl Fn(&mut Config, u16)) -> (Server, u16) {
        let mut tries = 0;
        loop {
            let port = granola_tests::ports::free_tcp_udp_port();
            let mut c = cfg.clone();
            c.ephemeral_ports = false;
            place(&mut c, port);
            match start(c) {
                Ok(running) => {
                    let srv = Server {
                        addrs: running.addrs.clone(),
                        shared: running.shared.clone(),
                        running: Some(running),
                    };
                    return (srv, port);
                }
                Err(e) if e.kind() == ErrorKind::AddrInUse && tries < 10 => {
                    eprintln!("port {port} taken before the server bound it ({e}); another");
                    tries += 1;
                }
                Err(e) => panic!("server starts on port {port}: {e}"),
            }
        }
    }

    /// Starts a server with [`config`].
    pub fn default_config() -> Server {
        Server::start(config())
    }

    /// memcached TCP address.
    pub fn mc(&self) -> SocketAddr {
        self.addrs.memcache.expect("memcached port on")
    }

    /// RESP address.
    pub fn resp(&self) -> SocketAddr {
        self.addrs.resp.expect("resp port on")
    }

    /// Native TCP address.
    pub fn native(&self) -> SocketAddr {
        self.addrs.native.expect("native port on")
    }

    /// memcached UDP address.
    pub fn mc_udp(&self) -> SocketAddr {
        self.addrs.memcache_udp.expect("memcached udp port on")
    }

    /// Native UDP address.
    pub fn native_udp(&self) -> SocketAddr {
        self.addrs.native_udp.expect("native udp port on")
    }

    /// Connections the network layer has open now.
    pub fn conns_open(&self) -> u64 {
        let net = self.shared.net.get().expect("net stats set at start");
        net.conns_open.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits (bounded) until `cond` holds; panics with `what` if it never
    /// does within [`IO_TIMEOUT`].
    pub fn wait_for(&self, what: &str, mut cond: impl FnMut(&Server) -> bool) {
        let deadline = Instant::now() + IO_TIMEOUT;
        while !cond(self) {
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Waits (bounded) until the server-wide referenced reply bytes reach
/// `at_least`: a worker folds its counters in right after its send, which
/// may be a moment after the client has the bytes.
pub fn wait_referenced(srv: &Server, at_least: u64) {
    let net = srv.shared.net.get().unwrap().clone();
    srv.wait_for(&format!("reply_bytes_referenced >= {at_least}"), |_| {
        net.bytes_referenced
            .load(std::sync::atomic::Ordering::Relaxed)
            >= at_least
    });
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.handle.shutdown();
            r.handle.join();
        }
    }
}

/// Shows bytes readably in assertion messages (long runs abbreviated).
pub fn show(b: &[u8]) -> String {
    if b.len() <= 600 {
        return b.escape_ascii().to_string();
    }
    format!(
        "{} ...({} bytes)... {}",
        b[..300].escape_ascii(),
        b.len() - 600,
        b[b.len() - 300..].escape_ascii()
    )
}

/// Asserts two byte strings are equal, printing both readably (and the
/// first differing offset) if not.
#[track_caller]
pub fn assert_bytes(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        panic!(
            "{what}: bytes differ at offset {at} (got {} bytes, want {})\n got: {}\nwant: {}",
            got.len(),
            want.len(),
            show(got),
            show(want)
        );
    }
}

/// A blocking client connection with a read buffer.
pub struct Client {
    /// The socket.
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    /// Connects, with [`IO_TIMEOUT`] on reads and writes.
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        Client { s, buf: Vec::new() }
    }

    /// Wraps an already connected stream (setting the same timeouts).
    pub fn from_stream(s: TcpStream) -> Client {
        s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
        Client { s, buf: Vec::new() }
    }

    /// Writes all of `bytes`.
    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("send");
    }

    fn fill(&mut self) -> usize {
        let mut tmp = [0u8; 64 << 10];
        match self.s.read(&mut tmp) {
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                n
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => 0,
            Err(e) => panic!(
                "read failed ({e}); have {} unread bytes: {}",
                self.buf.len(),
                show(&self.buf)
            ),
        }
    }

    /// True if a reply byte is here or arrives within `wait`.
    pub fn ready_within(&mut self, wait: Duration) -> bool {
        if !self.buf.is_empty() {
            return true;
        }
        self.s.set_read_timeout(Some(wait)).unwrap();
        let mut tmp = [0u8; 64 << 10];
        let got = match self.s.read(&mut tmp) {
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                n > 0
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
            Err(e) => panic!("read failed ({e})"),
        };
        self.s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
        got
    }

    /// Reads exactly `n` bytes.
    pub fn read_n(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            if self.fill() == 0 {
                panic!(
                    "connection closed after {} of {n} bytes: {}",
                    self.buf.len(),
                    show(&self.buf)
                );
            }
        }
        let rest = self.buf.split_off(n);
        std::mem::replace(&mut self.buf, rest)
    }

    /// Reads `want.len()` bytes and asserts they are `want`.
    #[track_caller]
    pub fn expect(&mut self, want: &[u8]) {
        let got = self.read_n(want.len());
        assert_bytes(&got, want, "reply");
    }

    /// Sends `req`, then asserts the reply is exactly `want`.
    #[track_caller]
    pub fn roundtrip(&mut self, req: &[u8], want: &[u8]) {
        self.send(req);
        let got = self.read_n(want.len());
        assert_bytes(&got, want, &format!("reply to {}", show(req)));
    }

    /// Reads through the first occurrence of `end` (included).
    pub fn read_until(&mut self, end: &[u8]) -> Vec<u8> {
        let mut from = 0;
        loop {
            if let Some(p) = find(&self.buf[from..], end) {
                return self.read_n(from + p + end.len());
            }
            from = self.buf.len().saturating_sub(end.len());
            if self.fill() == 0 {
                panic!(
                    "connection closed before {}: {}",
                    show(end),
                    show(&self.buf)
                );
            }
        }
    }

    /// Reads one `\r\n`-terminated line (included).
    pub fn read_line(&mut self) -> Vec<u8> {
        self.read_until(b"\r\n")
    }

    /// Reads until the server closes the connection; returns what came
    /// before the close.
    pub fn read_to_close(&mut self) -> Vec<u8> {
        while self.fill() > 0 {}
        std::mem::take(&mut self.buf)
    }

    /// Asserts the server closed the connection with nothing more sent.
    #[track_caller]
    pub fn expect_closed(&mut self) {
        let rest = self.read_to_close();
        assert!(rest.is_empty(), "bytes before close: {}", show(&rest));
    }

    /// Closes the write side.
    pub fn shutdown_write(&self) {
        let _ = self.s.shutdown(Shutdown::Write);
    }
}

/// Position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

// ---------------------------------------------------------------- memcached

/// `stats` over a fresh connection, as name → value.
pub fn mc_stats(addr: SocketAddr) -> HashMap<String, String> {
    let mut c = Client::connect(addr);
    c.send(b"stats\r\n");
    let text = c.read_until(b"END\r\n");
    let text = String::from_utf8(text).expect("stats is text");
    let mut out = HashMap::new();
    for line in text.lines() {
        if line == "END" {
            break;
        }
        let mut it = line.splitn(3, ' ');
        assert_eq!(it.next(), Some("STAT"), "stats line {line:?}");
        let name = it.next().expect("stat name").to_string();
        let value = it.next().expect("stat value").to_string();
        out.insert(name, value);
    }
    out
}

/// One numeric stat.
pub fn mc_stat(addr: SocketAddr, name: &str) -> u64 {
    let stats = mc_stats(addr);
    stats
        .get(name)
        .unwrap_or_else(|| panic!("stats lacks {name}: {stats:?}"))
        .parse()
        .expect("numeric stat")
}

/// `RESTORE <key> 0 <payload> <option> <n>`: a DUMP payload restored
/// without a TTL, with one option and its number (IDLETIME, FREQ).
pub fn restore_cmd(key: &str, payload: &[u8], option: &str, n: &str) -> Vec<Vec<u8>> {
    [
        b"RESTORE",
        key.as_bytes(),
        b"0",
        payload,
        option.as_bytes(),
        n.as_bytes(),
    ]
    .map(<[u8]>::to_vec)
    .to_vec()
}

/// `set <key> <flags> 0 <len>\r\n<value>\r\n`.
pub fn mc_set_cmd(key: &[u8], flags: u32, value: &[u8]) -> Vec<u8> {
    let mut v = format!("set {} {flags} 0 {}\r\n", key.escape_ascii(), value.len()).into_bytes();
    v.extend_from_slice(value);
    v.extend_from_slice(b"\r\n");
    v
}

/// Sets `count` keys `<prefix><i>` to `value_len`-byte values, pipelined
/// in batches of 64, checking every reply.
pub fn mc_fill(c: &mut Client, prefix: &str, count: usize, value_len: usize) {
    let value = pattern(value_len as u64, value_len);
    let mut batch = Vec::new();
    let mut want = Vec::new();
    for i in 0..count {
        batch.extend_from_slice(&mc_set_cmd(format!("{prefix}{i}").as_bytes(), 0, &value));
        want.extend_from_slice(b"STORED\r\n");
        if (i + 1) % 64 == 0 || i + 1 == count {
            c.roundtrip(&batch, &want);
            batch.clear();
            want.clear();
        }
    }
}

/// The `VALUE` block a hit returns (without `END`).
pub fn mc_value_reply(key: &[u8], flags: u32, value: &[u8], cas: Option<u64>) -> Vec<u8> {
    let mut v = format!("VALUE {} {flags} {}", key.escape_ascii(), value.len()).into_bytes();
    if let Some(c) = cas {
        v.extend_from_slice(format!(" {c}").as_bytes());
    }
    v.extend_from_slice(b"\r\n");
    v.extend_from_slice(value);
    v.extend_from_slice(b"\r\n");
    v
}

/// Reads one `get` reply for at most one key: `Some((flags, value))` or
/// `None` for a miss.
pub fn mc_read_get(c: &mut Client) -> Option<(u32, Vec<u8>)> {
    let line = c.read_line();
    if line == b"END\r\n" {
        return None;
    }
    let text = std::str::from_utf8(&line).expect("VALUE line is text");
    let parts: Vec<&str> = text.trim_end().split(' ').collect();
    assert!(
        parts.len() >= 4 && parts[0] == "VALUE",
        "not a VALUE line: {text:?}"
    );
    let flags: u32 = parts[2].parse().unwrap();
    let len: usize = parts[3].parse().unwrap();
    let mut v = c.read_n(len + 2);
    assert_eq!(&v[len..], b"\r\n", "value not followed by CRLF");
    v.truncate(len);
    c.expect(b"END\r\n");
    Some((flags, v))
}

// --------------------------------------------------------------------- RESP

/// A RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    /// `+...`
    Simple(Vec<u8>),
    /// `-...`
    Error(Vec<u8>),
    /// `:n`
    Int(i64),
    /// `$n` (None: `$-1`)
    Bulk(Option<Vec<u8>>),
    /// `*n` (None: `*-1`)
    Array(Option<Vec<Resp>>),
    /// RESP3 `%n`: keys and values in turn.
    Map(Vec<Resp>),
    /// RESP3 `~n`
    Set(Vec<Resp>),
    /// RESP3 `_`
    Null,
    /// RESP3 `,` (the text as sent)
    Double(Vec<u8>),
    /// RESP3 `#t` / `#f`
    Bool(bool),
    /// RESP3 `(` (the digits as sent)
    BigNum(Vec<u8>),
    /// RESP3 `=`: the format and the text (`txt:...`)
    Verbatim(Vec<u8>),
    /// RESP3 `>`
    Push(Vec<Resp>),
    /// RESP3 `|`: the attribute map's keys and values in turn, then the
    /// reply it comes with
    Attributed(Vec<Resp>, Box<Resp>),
}

/// Encodes a command as a RESP multibulk request.
pub fn resp_cmd<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A bulk string reply's bytes: `$<len>\r\n<bytes>\r\n`.
pub fn resp_bulk(b: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", b.len()).into_bytes();
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
    out
}

impl Client {
    /// Reads one RESP reply.
    pub fn read_resp(&mut self) -> Resp {
        let line = self.read_line();
        let body = &line[1..line.len() - 2];
        let num = || -> i64 {
            std::str::from_utf8(body)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("bad RESP number line {}", show(&line)))
        };
        match line[0] {
            b'+' => Resp::Simple(body.to_vec()),
            b'-' => Resp::Error(body.to_vec()),
            b':' => Resp::Int(num()),
            b'$' => {
                let n = num();
                if n < 0 {
                    return Resp::Bulk(None);
                }
                let mut v = self.read_n(n as usize + 2);
                assert_eq!(&v[n as usize..], b"\r\n", "bulk not followed by CRLF");
                v.truncate(n as usize);
                Resp::Bulk(Some(v))
            }
            b'*' => {
                let n = num();
                if n < 0 {
                    return Resp::Array(None);
                }
                Resp::Array(Some((0..n).map(|_| self.read_resp()).collect()))
            }
            b'%' => Resp::Map((0..2 * num()).map(|_| self.read_resp()).collect()),
            b'~' => Resp::Set((0..num()).map(|_| self.read_resp()).collect()),
            b'_' => Resp::Null,
            b',' => Resp::Double(body.to_vec()),
            b'#' => Resp::Bool(body == b"t"),
            b'(' => Resp::BigNum(body.to_vec()),
            b'=' => {
                let n = num() as usize;
                let mut v = self.read_n(n + 2);
                assert_eq!(&v[n..], b"\r\n", "verbatim string not followed by CRLF");
                v.truncate(n);
                Resp::Verbatim(v)
            }
            b'>' => Resp::Push((0..num()).map(|_| self.read_resp()).collect()),
            b'|' => {
                let attributes = (0..2 * num()).map(|_| self.read_resp()).collect();
                Resp::Attributed(attributes, Box::new(self.read_resp()))
            }
            _ => panic!("not a RESP reply: {}", show(&line)),
        }
    }

    /// Sends one command and reads its reply.
    pub fn resp<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Resp {
        self.send(&resp_cmd(args));
        self.read_resp()
    }
}

/// `INFO` field `name` (a number) over a fresh RESP connection.
pub fn resp_info_u64(addr: SocketAddr, name: &str) -> u64 {
    resp_info_str(addr, name).parse().unwrap()
}

/// A field of `INFO` (every section), as text.
pub fn resp_info_str(addr: SocketAddr, name: &str) -> String {
    let mut c = Client::connect(addr);
    let Resp::Bulk(Some(text)) = c.resp(&["INFO"]) else {
        panic!("INFO is not a bulk string");
    };
    let text = String::from_utf8(text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO lacks {name}: {text}"))
        .trim()
        .to_string()
}

// ------------------------------------------------------------------- native

/// One request frame: header (`kind`, `id`) and the encoded message.
pub fn native_frame<M: Message>(kind: u16, id: u32, msg: &M) -> Vec<u8> {
    native_raw(kind, id, &msg.to_vec().unwrap())
}

/// A frame with an arbitrary payload.
pub fn native_raw(kind: u16, id: u32, payload: &[u8]) -> Vec<u8> {
    let h = FrameHeader {
        len: payload.len() as u32,
        kind,
        flags: 0,
        id,
    };
    let mut v = h.to_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

impl Client {
    /// Reads one native frame: its header and payload.
    pub fn read_frame(&mut self) -> (FrameHeader, Vec<u8>) {
        let head = self.read_n(FRAME_HEADER_LEN);
        let h = FrameHeader::read(&head).unwrap();
        let payload = self.read_n(h.len as usize);
        (h, payload)
    }

    /// Reads one reply frame and checks it answers request (`kind`, `id`).
    #[track_caller]
    pub fn read_reply_to(&mut self, kind: u16, id: u32) -> Vec<u8> {
        let (h, payload) = self.read_frame();
        assert!(
            h.is_response(),
            "reply frame lacks the response flag: {h:?}"
        );
        assert_eq!((h.kind, h.id), (kind, id), "reply to the wrong request");
        payload
    }
}

// ---------------------------------------------------------- memcached UDP

/// A UDP socket connected to `addr` with [`IO_TIMEOUT`] reads.
pub fn udp_client(addr: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s
}

/// A request datagram: the 8-byte header (id, seq 0, total 1) + `body`.
pub fn mc_udp_request(id: u16, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(8 + body.len());
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(&0u16.to_be_bytes());
    v.extend_from_slice(&1u16.to_be_bytes());
    v.extend_from_slice(&0u16.to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// Receives every datagram of the reply to request `id` and reassembles it
/// by sequence number. Checks the headers (same id and total in every
/// datagram, each sequence number once). Returns the reply and the number
/// of datagrams.
pub fn mc_udp_reply(s: &UdpSocket, id: u16) -> (Vec<u8>, usize) {
    let mut parts: Vec<Option<Vec<u8>>> = Vec::new();
    let mut total = None;
    let mut buf = vec![0u8; 65536];
    loop {
        let n = s.recv(&mut buf).expect("reply datagram");
        assert!(n >= 8, "runt reply datagram");
        assert!(
            n <= 1400,
            "reply datagram of {n} bytes: above memcached's 1400"
        );
        let at = |i: usize| u16::from_be_bytes([buf[i], buf[i + 1]]);
        let (rid, seq, tot, rsvd) = (at(0), at(2), at(4), at(6));
        if rid != id {
            continue; // a late reply to an earlier request
        }
        assert_eq!(rsvd, 0, "reserved header field");
        match total {
            None => {
                assert!(tot >= 1);
                total = Some(tot);
                parts = vec![None; tot as usize];
            }
            Some(t) => assert_eq!(t, tot, "total changed between datagrams"),
        }
        let slot = parts
            .get_mut(seq as usize)
            .unwrap_or_else(|| panic!("sequence {seq} beyond total {tot}"));
        assert!(slot.is_none(), "sequence {seq} received twice");
        *slot = Some(buf[8..n].to_vec());
        if parts.iter().all(Option::is_some) {
            break;
        }
    }
    let n = parts.len();
    (parts.into_iter().flatten().flatten().collect(), n)
}

/// A deterministic byte pattern of `len` bytes for `seed` (xorshift, eight
/// bytes per step: cheap even in unoptimised test builds).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// This process's resident set size in bytes (the servers the tests start
/// run in it): `VmRSS` of /proc/self/status.
pub fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .expect("VmRSS in kB")
        << 10
}

/// FNV-1a 64: the checksum self-verifying test values carry.
pub fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    })
}

/// xorshift for the random differential tests: the same commands every
/// run, unless `GRANOLA_DIFF_SEED` is set (any number, mixed into each
/// test's own seed and printed, so a failure under a seed can be run
/// again): longer hunts for differences than the suite's own fixed runs,
/// by hand.
pub struct Rng(u64);

impl Rng {
    pub fn seeded(own: u64) -> Rng {
        let extra = std::env::var("GRANOLA_DIFF_SEED")
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        match extra {
            Some(x) => {
                eprintln!("GRANOLA_DIFF_SEED={x}");
                // Never 0: xorshift would stay there.
                Rng((own ^ x.wrapping_mul(0x9e37_79b9_7f4a_7c15)).max(1))
            }
            None => Rng(own),
        }
    }

    /// A number in `0..n`.
    pub fn n(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    /// One of `xs`.
    pub fn pick(&mut self, xs: &[&str]) -> String {
        xs[self.n(xs.len() as u64) as usize].to_string()
    }
}

/// CPU ticks (user + system) the process `pid` has used.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the parenthesised command name; utime and stime are
    // fields 14 and 15 (1-based) of the whole line.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}
