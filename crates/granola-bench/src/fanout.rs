//! `granola-bench fanout`: Pub/Sub fan-out through a Redis-protocol
//! server.
//!
//! `--subscribers` connections SUBSCRIBE to one channel; one publisher
//! sends `--messages` PUBLISH commands, pipelined `--depth` at a time.
//! Every message carries its sequence number and must reach every
//! subscriber in order (a lost, reordered or torn message fails the run).
//! Reports messages delivered per second; the calling script reads the
//! server's CPU from `/proc`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Arguments of `granola-bench fanout`.
#[derive(clap::Args, Debug, Clone)]
pub struct FanoutArgs {
    /// Server (RESP) address.
    #[arg(long, default_value = "127.0.0.1:6379")]
    pub addr: SocketAddr,
    /// Subscribers.
    #[arg(long, default_value_t = 8)]
    pub subscribers: usize,
    /// Messages published.
    #[arg(long, default_value_t = 50_000)]
    pub messages: usize,
    /// Payload bytes per message (at least 16).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// PUBLISH commands in flight.
    #[arg(long, default_value_t = 16)]
    pub depth: usize,
}

/// What one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FanoutReport {
    /// Messages delivered (messages × subscribers).
    pub delivered: u64,
    /// From the first PUBLISH to the last delivery.
    pub seconds: f64,
    /// Deliveries per second.
    pub rate: f64,
}

fn line(r: &mut BufReader<TcpStream>, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.clear();
    r.read_until(b'\n', buf)?;
    if buf.is_empty() {
        return Err(std::io::Error::other("connection closed"));
    }
    Ok(())
}

/// The payload of message `i`: its number, then filler.
fn payload(i: usize, size: usize) -> Vec<u8> {
    let mut p = format!("{i:016}").into_bytes();
    p.resize(size.max(16), b'.');
    p
}

/// Reads one `["message", channel, payload]` and returns the payload.
fn read_message(r: &mut BufReader<TcpStream>, buf: &mut Vec<u8>) -> std::io::Result<Vec<u8>> {
    line(r, buf)?;
    if buf.as_slice() != b"*3\r\n" && buf.as_slice() != b">3\r\n" {
        return Err(std::io::Error::other(format!(
            "not a message: {}",
            String::from_utf8_lossy(buf)
        )));
    }
    let mut last = Vec::new();
    for _ in 0..3 {
        line(r, buf)?;
        let n: usize = std::str::from_utf8(&buf[1..buf.len() - 2])
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other("bad bulk length"))?;
        last = vec![0u8; n + 2];
        r.read_exact(&mut last)?;
        last.truncate(n);
    }
    Ok(last)
}

/// Runs the fan-out.
pub fn run(args: &FanoutArgs) -> std::io::Result<FanoutReport> {
    let mut subs = Vec::new();
    for _ in 0..args.subscribers {
        let s = TcpStream::connect(args.addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut w = s.try_clone()?;
        w.write_all(b"*2\r\n$9\r\nSUBSCRIBE\r\n$6\r\nfanout\r\n")?;
        let mut r = BufReader::new(s);
        let mut buf = Vec::new();
        for _ in 0..4 {
            line(&mut r, &mut buf)?; // *3, subscribe, fanout, :1
            if buf.first() == Some(&b'$') {
                line(&mut r, &mut buf)?;
            }
        }
        subs.push(r);
    }
    let t0 = Instant::now();
    let (messages, size) = (args.messages, args.size);
    let readers: Vec<_> = subs
        .into_iter()
        .map(|mut r| {
            std::thread::spawn(move || -> std::io::Result<u64> {
                let mut buf = Vec::new();
                for i in 0..messages {
                    let got = read_message(&mut r, &mut buf)?;
                    if got != payload(i, size) {
                        return Err(std::io::Error::other(format!(
                            "message {i}: got {}",
                            String::from_utf8_lossy(&got[..got.len().min(40)])
                        )));
                    }
                }
                Ok(messages as u64)
            })
        })
        .collect();
    let s = TcpStream::connect(args.addr)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut w = s.try_clone()?;
    let mut r = BufReader::new(s);
    let mut buf = Vec::new();
    let mut sent = 0;
    let mut answered = 0;
    while answered < messages {
        let mut req = Vec::new();
        while sent < messages && sent - answered < args.depth {
            let p = payload(sent, size);
            req.extend_from_slice(b"*3\r\n$7\r\nPUBLISH\r\n$6\r\nfanout\r\n");
            req.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
            req.extend_from_slice(&p);
            req.extend_from_slice(b"\r\n");
            sent += 1;
        }
        w.write_all(&req)?;
        // Read the replies for this batch (integers).
        while answered < sent {
            line(&mut r, &mut buf)?;
            if buf.first() != Some(&b':') {
                return Err(std::io::Error::other(format!(
                    "PUBLISH answered {}",
                    String::from_utf8_lossy(&buf)
                )));
            }
            answered += 1;
        }
    }
    let mut delivered = 0;
    for h in readers {
        delivered += h
            .join()
            .map_err(|_| std::io::Error::other("subscriber panicked"))??;
    }
    let seconds = t0.elapsed().as_secs_f64();
    Ok(FanoutReport {
        delivered,
        seconds,
        rate: delivered as f64 / seconds,
    })
}
