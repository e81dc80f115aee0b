//! A no-op cache server: the floor of a datapath. It frames memcached text
//! and RESP requests just enough to find where each ends, stores nothing,
//! and answers every GET with one canned value of `--value` bytes (sent by
//! reference from the pool, as granola-kv sends stored values) and every
//! other command with a fixed status. What it costs per request is what the
//! datapath (event loop, receive, send) costs; the benchmark quotes
//! granola-kv against it.
//!
//! ```sh
//! cargo run --release -p granola-net --example noop -- --datapath uring --port 11999 --value 20
//! ```
//!
//! Protocol is sniffed per request: `*` starts a RESP array, anything else
//! is a memcached text line.

use std::net::SocketAddr;
use std::sync::Arc;

use granola::{Buf, Pool};
use granola_net::server::{Accepted, Close, ConnIo, Server, ServerConfig, Service, Session};
use granola_net::DatapathKind;

struct Noop {
    value: Buf,
    resp_head: Vec<u8>,
}

impl Service for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn session(&self, _conn: &Accepted) -> Box<dyn Session> {
        Box::new(NoopSession {
            value: self.value.clone(),
            resp_head: self.resp_head.clone(),
        })
    }
}

struct NoopSession {
    value: Buf,
    resp_head: Vec<u8>,
}

fn line(data: &[u8]) -> Option<usize> {
    data.windows(2).position(|w| w == b"\r\n")
}

fn num(bytes: &[u8]) -> Option<usize> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Length of one complete RESP request at the front of `data`, and whether
/// its command is GET. `Ok(None)`: incomplete.
fn resp_request(data: &[u8]) -> Result<Option<(usize, bool)>, Close> {
    let Some(end) = line(data) else {
        return Ok(None);
    };
    let n = num(&data[1..end]).ok_or_else(|| Close::new("bad array header"))?;
    let mut at = end + 2;
    let mut is_get = false;
    for i in 0..n.min(1024) {
        let Some(e) = line(&data[at..]) else {
            return Ok(None);
        };
        if data.get(at) != Some(&b'$') {
            return Err(Close::new("expected a bulk string"));
        }
        let len = num(&data[at + 1..at + e]).ok_or_else(|| Close::new("bad bulk length"))?;
        if len > 64 << 20 {
            return Err(Close::new("bulk string too long"));
        }
        let body = at + e + 2;
        if data.len() < body + len + 2 {
            return Ok(None);
        }
        if i == 0 {
            is_get = data[body..body + len].eq_ignore_ascii_case(b"GET");
        }
        at = body + len + 2;
    }
    Ok(Some((at, is_get)))
}

/// Length of one complete memcached text request, and whether it is a GET.
fn memcached_request(data: &[u8]) -> Result<Option<(usize, bool)>, Close> {
    let Some(end) = line(data) else {
        return Ok(None);
    };
    let words: Vec<&[u8]> = data[..end]
        .split(|&b| b == b' ')
        .filter(|w| !w.is_empty())
        .collect();
    match words.first().copied() {
        Some(b"get") | Some(b"gets") => Ok(Some((end + 2, true))),
        Some(b"set") | Some(b"add") | Some(b"replace") => {
            let n = words
                .get(4)
                .and_then(|w| num(w))
                .ok_or_else(|| Close::new("bad storage command"))?;
            if n > 64 << 20 {
                return Err(Close::new("value too long"));
            }
            let total = end + 2 + n + 2;
            Ok((data.len() >= total).then_some((total, false)))
        }
        _ => Ok(Some((end + 2, false))),
    }
}

impl Session for NoopSession {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        loop {
            let data = io.rx.data();
            if data.is_empty() {
                return Ok(());
            }
            let resp = data[0] == b'*';
            let parsed = if resp {
                resp_request(data)?
            } else {
                memcached_request(data)?
            };
            let Some((len, is_get)) = parsed else {
                return Ok(());
            };
            let oom = |_| Close::new("out of memory");
            match (resp, is_get) {
                (true, true) => {
                    io.tx.copy(&self.resp_head).map_err(oom)?;
                    io.tx.value(&self.value).map_err(oom)?;
                    io.tx.copy(b"\r\n").map_err(oom)?;
                }
                (true, false) => io.tx.copy(b"+OK\r\n").map_err(oom)?,
                (false, true) => {
                    // The key is not echoed: a fixed one keeps this a no-op.
                    let head = format!("VALUE k 0 {}\r\n", self.value.len());
                    io.tx.copy(head.as_bytes()).map_err(oom)?;
                    io.tx.value(&self.value).map_err(oom)?;
                    io.tx.copy(b"\r\nEND\r\n").map_err(oom)?;
                }
                (false, false) => io.tx.copy(b"STORED\r\n").map_err(oom)?,
            }
            io.rx.consume(len);
        }
    }
}

fn main() -> std::io::Result<()> {
    let mut port = 11999u16;
    let mut value_len = 20usize;
    let mut datapath = DatapathKind::Epoll;
    let mut threads = 1usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--port" => port = v.parse().expect("--port N"),
            "--value" => value_len = v.parse().expect("--value BYTES"),
            "--datapath" => datapath = v.parse().expect("--datapath epoll|uring"),
            "-t" | "--threads" => threads = v.parse().expect("-t N"),
            other => panic!("unknown flag {other}"),
        }
    }
    let pool = Pool::with_capacity(256 << 20)?;
    let value = pool
        .alloc_copy(&vec![b'x'; value_len])
        .expect("pool has room for the value");
    let svc = Arc::new(Noop {
        resp_head: format!("${value_len}\r\n").into_bytes(),
        value,
    });
    let cfg = ServerConfig {
        threads,
        datapath,
        ..ServerConfig::default()
    };
    let h = Server::new(pool, cfg)
        .tcp(SocketAddr::from(([127, 0, 0, 1], port)), svc)
        .start()?;
    eprintln!(
        "noop: {} on {} ({} threads)",
        h.datapath, h.tcp_addrs[0], threads
    );
    h.join();
    Ok(())
}
