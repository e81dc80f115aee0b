//! The paper's echo application on granola-net: the server decodes each
//! request, builds a new message from the decoded fields and sends it back
//! with serialize-and-send; large values travel as references into the
//! receive buffer, never copied in user space.
//!
//! ```sh
//! cargo run -p granola-net --example echo
//! ```
//!
//! The message type is `sample.Sample` of `granola-tests` (a `uint32 id`,
//! a `string name`, `repeated bytes vals`, ...). The client is a plain
//! blocking `TcpStream` speaking the frame format of
//! [`granola_net::frame`]: 12-byte header, then the granola object.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use granola::{Decode, Message, Pool, DEFAULT_COPY_THRESHOLD};
use granola_net::server::{Accepted, Close, ConnIo, Server, ServerConfig, Service, Session};
use granola_net::{FrameHeader, FLAG_RESPONSE, FRAME_HEADER_LEN};
use granola_tests::sample::Sample;

/// Makes one [`EchoSession`] per connection.
struct EchoService;

impl Service for EchoService {
    fn name(&self) -> &str {
        "echo"
    }

    fn session(&self, _conn: &Accepted) -> Box<dyn Session> {
        Box::new(EchoSession { frames: Vec::new() })
    }
}

struct EchoSession {
    frames: Vec<granola_net::Frame>,
}

impl Session for EchoSession {
    fn on_input(&mut self, io: &mut ConnIo<'_>) -> Result<(), Close> {
        // Every complete frame; each payload is a `Buf` sharing the receive
        // buffer, which lives in the pool.
        io.rx
            .take_frames(granola_net::frame::DEFAULT_MAX_FRAME, &mut self.frames)
            .map_err(|e| Close::new(e.to_string()))?;
        for frame in self.frames.drain(..) {
            // Fields of at least 1 KiB (the default threshold) become `Buf`
            // references into the receive buffer; smaller ones borrow it.
            let req = Sample::decode_shared(&frame.payload, DEFAULT_COPY_THRESHOLD)
                .map_err(|e| Close::new(format!("bad request: {e}")))?;

            // A new message from the decoded fields, moved over: no copy of
            // the bytes, no reference-count traffic.
            let reply = Sample {
                id: req.id,
                name: req.name,
                vals: req.vals,
                ..Default::default()
            };

            // Serialize-and-send: headers and small fields go into the TX
            // buffer, each large value becomes its own iovec of one
            // `sendmsg`. The queue holds the references until the kernel has
            // the bytes; the server flushes after this call returns.
            let header = FrameHeader {
                len: 0, // filled in by send_object
                kind: 0,
                flags: FLAG_RESPONSE,
                id: frame.header.id,
            };
            io.tx
                .send_object(header, &reply)
                .map_err(|e| Close::new(e.to_string()))?;
        }
        Ok(())
    }
}

/// Sends one framed message and reads the framed reply.
fn round_trip(stream: &mut TcpStream, id: u32, payload: &[u8]) -> std::io::Result<Vec<u8>> {
    let header = FrameHeader {
        len: payload.len() as u32,
        kind: 0,
        flags: 0,
        id,
    };
    stream.write_all(&header.to_bytes())?;
    stream.write_all(payload)?;
    let mut h = [0u8; FRAME_HEADER_LEN];
    stream.read_exact(&mut h)?;
    let h = FrameHeader::read(&h).expect("a whole header");
    assert!(h.is_response() && h.id == id, "unexpected reply {h:?}");
    let mut reply = vec![0u8; h.len as usize];
    stream.read_exact(&mut reply)?;
    Ok(reply)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Registered memory for receive buffers, TX buffers and values.
    let pool = Pool::with_capacity(256 << 20)?;
    let server = Server::new(
        pool.clone(),
        ServerConfig {
            threads: 1,
            ..ServerConfig::default()
        },
    )
    .tcp("127.0.0.1:0".parse()?, Arc::new(EchoService))
    .start()?;
    let addr = server.tcp_addrs[0];
    println!("echo server on {addr}");

    // The client's requests borrow its values (heap memory, so they are
    // copied into the message's bytes).
    let mut stream = TcpStream::connect(addr)?;
    let sizes = [16usize, 300, 2048, 8192];
    let rounds = 100u32;
    for id in 0..rounds {
        let values: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&n| (0..n).map(|i| (i as u32 ^ id) as u8).collect())
            .collect();
        let req = Sample {
            id,
            name: format!("request {id}").into(),
            vals: values.iter().map(Into::into).collect(),
            ..Default::default()
        };

        let reply_bytes = round_trip(&mut stream, id, &req.to_vec().unwrap())?;
        let reply = Sample::decode(&reply_bytes)?;
        assert_eq!(reply.id, id);
        assert_eq!(reply.name.as_str()?, format!("request {id}"));
        assert_eq!(reply.vals.len(), values.len());
        for (got, want) in reply.vals.iter().zip(&values) {
            assert_eq!(&got[..], &want[..], "value of {} bytes", want.len());
        }
    }
    drop(stream);

    server.shutdown();
    let stats = server.stats.clone();
    server.join();
    println!(
        "{rounds} echoes verified; server copied {} B and referenced {} B in {} sendmsg calls",
        stats.bytes_copied.load(Ordering::Relaxed),
        stats.bytes_referenced.load(Ordering::Relaxed),
        stats.send_calls.load(Ordering::Relaxed),
    );
    Ok(())
}
