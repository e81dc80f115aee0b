//! `granola-bench pingpong`: what a wake-up costs a Redis-protocol server.
//!
//! Each pair of client threads passes a token through two lists: one
//! thread `LPUSH`es it on `ping` and waits in `BLPOP pong`, the other
//! waits in `BLPOP ping` and pushes it on `pong`. One round trip is four
//! commands and two wake-ups of a blocked client, so the round trips per
//! second (and the server CPU per round trip, which the calling script
//! reads from `/proc`) measure the blocking path end to end.
//!
//! `--idle-clients N` first parks N more connections in `BLPOP` on keys
//! no one pushes to, and keeps them there during the run: with `--pairs 0`
//! nothing else happens (a server that waits without polling uses no CPU
//! meanwhile); with pairs, the ping-pong runs beside N waiting clients (a
//! server whose cost per wake-up grows with the number of waiters shows
//! it here).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Arguments of `granola-bench pingpong`.
#[derive(clap::Args, Debug, Clone)]
pub struct PingPongArgs {
    /// Server (RESP) address.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub addr: SocketAddr,
    /// Pairs of client threads, each passing its own token.
    #[arg(long, default_value_t = 1)]
    pub pairs: usize,
    /// How long to run.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Park this many more connections in BLPOP during the run.
    #[arg(long, default_value_t = 0)]
    pub idle_clients: usize,
}

/// A RESP connection that sends commands and skips over their replies,
/// keeping only what the ping-pong needs.
struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
    line: Vec<u8>,
}

impl Conn {
    fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Conn {
            w: s.try_clone()?,
            r: BufReader::new(s),
            line: Vec::new(),
        })
    }

    fn send(&mut self, args: &[&[u8]]) -> std::io::Result<()> {
        let mut req = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.w.write_all(&req)
    }

    /// Reads one reply; returns the last bulk string in it (BLPOP's
    /// element), `None` for a null or an integer.
    fn reply(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        self.line.clear();
        self.r.read_until(b'\n', &mut self.line)?;
        let bad = || std::io::Error::other("bad RESP reply");
        let n: i64 = std::str::from_utf8(
            self.line
                .get(1..self.line.len().saturating_sub(2))
                .ok_or_else(bad)?,
        )
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
        match self.line.first() {
            Some(b'*') => {
                let mut last = None;
                for _ in 0..n.max(0) {
                    last = self.reply()?;
                }
                Ok(last)
            }
            Some(b'$') if n >= 0 => {
                let mut v = vec![0u8; n as usize + 2];
                self.r.read_exact(&mut v)?;
                v.truncate(n as usize);
                Ok(Some(v))
            }
            Some(b'-') => Err(std::io::Error::other(format!(
                "server error: {}",
                String::from_utf8_lossy(&self.line)
            ))),
            Some(_) => Ok(None),
            None => Err(bad()),
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> std::io::Result<Option<Vec<u8>>> {
        self.send(args)?;
        self.reply()
    }
}

/// What one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PingPongReport {
    /// Round trips completed (all pairs).
    pub round_trips: u64,
    /// Wall time.
    pub seconds: f64,
    /// Round trips per second.
    pub rate: f64,
}

/// Runs the ping-pong (or, with `idle_clients`, the idle check).
pub fn run(args: &PingPongArgs) -> std::io::Result<PingPongReport> {
    let span = Duration::from_secs_f64(args.seconds);
    let mut idle = Vec::with_capacity(args.idle_clients);
    for i in 0..args.idle_clients {
        let mut c = Conn::open(args.addr)?;
        c.send(&[b"BLPOP", format!("idle:{i}").as_bytes(), b"0"])?;
        idle.push(c);
    }
    if args.pairs == 0 {
        std::thread::sleep(span);
        return Ok(PingPongReport {
            round_trips: 0,
            seconds: args.seconds,
            rate: 0.0,
        });
    }
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let mut pingers = Vec::new();
    let mut pongers = Vec::new();
    for p in 0..args.pairs {
        let (ping, pong) = (format!("pp:{p}:ping"), format!("pp:{p}:pong"));
        let mut a = Conn::open(args.addr)?;
        let mut b = Conn::open(args.addr)?;
        a.call(&[b"DEL", ping.as_bytes(), pong.as_bytes()])?;
        let (ping2, pong2) = (ping.clone(), pong.clone());
        pongers.push(std::thread::spawn(move || -> std::io::Result<()> {
            loop {
                let got = b.call(&[b"BLPOP", ping2.as_bytes(), b"0"])?;
                if got.as_deref() == Some(b"stop") {
                    return Ok(());
                }
                b.call(&[b"LPUSH", pong2.as_bytes(), b"token"])?;
            }
        }));
        let stop = stop.clone();
        pingers.push(std::thread::spawn(move || -> std::io::Result<u64> {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                a.call(&[b"LPUSH", ping.as_bytes(), b"token"])?;
                let got = a.call(&[b"BLPOP", pong.as_bytes(), b"0"])?;
                if got.as_deref() != Some(b"token") {
                    return Err(std::io::Error::other(format!("BLPOP gave {got:?}")));
                }
                n += 1;
            }
            a.call(&[b"LPUSH", ping.as_bytes(), b"stop"])?;
            Ok(n)
        }));
    }
    std::thread::sleep(span);
    stop.store(true, Ordering::Relaxed);
    let mut round_trips = 0;
    for h in pingers {
        round_trips += h
            .join()
            .map_err(|_| std::io::Error::other("pinger panicked"))??;
    }
    let seconds = t0.elapsed().as_secs_f64();
    for h in pongers {
        h.join()
            .map_err(|_| std::io::Error::other("ponger panicked"))??;
    }
    Ok(PingPongReport {
        round_trips,
        seconds,
        rate: round_trips as f64 / seconds,
    })
}
