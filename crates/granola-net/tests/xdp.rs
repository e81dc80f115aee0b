//! The AF_XDP datapath between two network namespaces joined by a veth
//! pair, created here and deleted on drop (also when a test panics): a UDP
//! echo service behind the XDP program, served from pool frames, answering
//! a kernel UDP socket in the other namespace; replies larger than the MTU
//! go out as IPv4 fragments; and a value replaced while its descriptor may
//! still be on the TX ring is never torn.
//!
//! Where namespaces or AF_XDP are not available the tests say so on stderr
//! and pass, except under `GRANOLA_REQUIRE_PEERS` when running as root
//! (namespaces expected) or when the probe said AF_XDP works (then a
//! fallback to kernel sockets is a failure).

use granola::{Buf, Pool};
use granola_net::server::{DatagramHandler, DatagramService, Server, ServerConfig, ServerHandle};
use granola_net::udp::{Datagram, UdpTx};
use granola_net::{DatapathKind, TxConfig, XdpConfig};
use granola_tests::netns::Veth;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    Veth::in_ns(ns, granola_net::xdp::enter_netns, f)
}

/// Sets up the pair and starts `svc` on AF_XDP in the server namespace;
/// `None` (after saying why) when this machine cannot run it.
fn start(svc: Arc<dyn DatagramService>, pool: &Pool) -> Option<(Veth, ServerHandle)> {
    let veth = Veth::create_or_skip("AF_XDP tests")?;
    let xcfg = XdpConfig {
        interface: veth.server_if.clone(),
        ..XdpConfig::default()
    };
    let kind = DatapathKind::Xdp(xcfg);
    let ip = veth.server_ip.clone();
    let started: Result<ServerHandle, String> = in_ns(&veth.server_ns, || {
        kind.probe()?;
        let cfg = ServerConfig {
            threads: 1,
            datapath: kind.clone(),
            tx: TxConfig {
                copy_threshold: 512,
                ..TxConfig::default()
            },
            ..ServerConfig::default()
        };
        let h = Server::new(pool.clone(), cfg)
            .udp(format!("{ip}:0").parse().unwrap(), svc)
            .start()
            .expect("server starts");
        Ok(h)
    });
    match started {
        Err(why) => {
            eprintln!("SKIPPED: AF_XDP not available here: {why}");
            None
        }
        Ok(h) => {
            // The probe said yes: a fallback is a failure, always.
            assert!(
                matches!(h.datapath, DatapathKind::Xdp(_)),
                "probe passed but the server runs {}",
                h.datapath
            );
            let info = h.xdp.clone().expect("xdp info");
            eprintln!(
                "AF_XDP on {} queue {}: {} mode ({} XDP), MTU {}",
                info.interface,
                info.queue_id,
                info.mode.name(),
                info.attach,
                info.mtu
            );
            Some((veth, h))
        }
    }
}

fn client(veth: &Veth) -> UdpSocket {
    let addr = format!("{}:0", veth.client_ip);
    in_ns(&veth.client_ns, || {
        let s = UdpSocket::bind(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        s
    })
}

/// Sends `req` and waits for one reply (retrying twice on loss).
fn call(sock: &UdpSocket, to: SocketAddr, req: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; 70_000];
    for _ in 0..3 {
        sock.send_to(req, to).unwrap();
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            assert_eq!(from, to, "reply from the service address");
            buf.truncate(n);
            return buf;
        }
    }
    panic!("no reply to a {}-byte request", req.len());
}

// ---------------------------------------------------------------- echo

struct Echo;
struct EchoHandler;

impl DatagramService for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn handler(&self) -> Box<dyn DatagramHandler> {
        Box::new(EchoHandler)
    }
}

impl DatagramHandler for EchoHandler {
    fn on_datagram(&mut self, d: &Datagram, out: &mut UdpTx) {
        // Requests "x<N>" ask for N bytes; others are echoed (the received
        // frame goes back out by reference when above the threshold).
        let mut b = out.datagram(d.from);
        if let Some(n) = d
            .data
            .strip_prefix(b"x")
            .and_then(|s| std::str::from_utf8(s).ok()?.parse::<usize>().ok())
        {
            let body: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            b.copy(&body).unwrap();
        } else {
            b.value(&d.data).unwrap();
        }
        b.finish().unwrap();
    }
}

#[test]
fn echo_over_af_xdp() {
    let pool = Pool::with_capacity(64 << 20).unwrap();
    let Some((veth, h)) = start(Arc::new(Echo), &pool) else {
        return;
    };
    let to: SocketAddr = format!("{}:{}", veth.server_ip, h.udp_addrs[0].port())
        .parse()
        .unwrap();
    let sock = client(&veth);
    for (i, len) in [1usize, 7, 100, 511, 512, 1000, 1400, 1472]
        .iter()
        .enumerate()
    {
        let req: Vec<u8> = (0..*len).map(|j| (i * 31 + j) as u8 | 0x80).collect();
        assert_eq!(call(&sock, to, &req), req, "echo of {len} bytes");
    }
    // Replies larger than one frame: IPv4 fragments the kernel reassembles.
    for n in [1473usize, 3000, 9000, 40_000, 65_507] {
        let got = call(&sock, to, format!("x{n}").as_bytes());
        assert_eq!(got.len(), n);
        assert!(got.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
    }
    // Requests larger than the MTU arrive as IP fragments: the program
    // steers them to the AF_XDP socket too, and the worker reassembles
    // them (up to a whole 64 KiB datagram).
    let x = &h.xdp_stats;
    for n in [1473usize, 3000, 9000, 40_000, 65_507] {
        let big: Vec<u8> = (0..n).map(|i| (i % 253) as u8).collect();
        assert_eq!(call(&sock, to, &big), big, "fragmented request of {n} B");
    }
    assert!(x.rx_reassembled.load(Ordering::Relaxed) >= 5);
    assert_eq!(x.kernel_path_delivered.load(Ordering::Relaxed), 0);
    assert!(x.rx_delivered.load(Ordering::Relaxed) >= 18);
    // Every fragment was a packet of its own (IP payload 1480 at MTU 1500).
    let mtu = h.xdp.as_ref().unwrap().mtu as usize;
    let fragments: usize = [1473usize, 3000, 9000, 40_000, 65_507]
        .iter()
        .map(|n| (n + 8).div_ceil((mtu - 20) / 8 * 8))
        .sum();
    assert!(x.tx_packets.load(Ordering::Relaxed) >= (8 + fragments) as u64);
    assert!(h.stats.bytes_referenced.load(Ordering::Relaxed) > 0);
    h.shutdown();
    h.join();
}

// ---------------------------------------------------------------- torn

/// Replies with the current value by reference, then replaces it at once
/// and churns the pool, so a freed slot would be rewritten while its
/// descriptor is still queued.
struct Replacing {
    pool: Pool,
    current: Arc<Mutex<(u8, Buf)>>,
}
struct ReplacingHandler(Replacing);

const VALUE: usize = 3000;

impl DatagramService for Replacing {
    fn name(&self) -> &str {
        "replacing"
    }
    fn handler(&self) -> Box<dyn DatagramHandler> {
        Box::new(ReplacingHandler(Replacing {
            pool: self.pool.clone(),
            current: self.current.clone(),
        }))
    }
}

impl DatagramHandler for ReplacingHandler {
    fn on_datagram(&mut self, d: &Datagram, out: &mut UdpTx) {
        let r = &self.0;
        let mut cur = r.current.lock().unwrap();
        let mut b = out.datagram(d.from);
        b.value(&cur.1).unwrap();
        b.finish().unwrap();
        let next = cur.0.wrapping_add(1);
        *cur = (next, r.pool.alloc_copy(&[next; VALUE]).unwrap());
        // Reuse freed slots of the same class with garbage.
        for _ in 0..8 {
            let g = r.pool.alloc_copy(&[0xEE; VALUE]).unwrap();
            drop(g);
        }
    }
}

#[test]
fn replaced_values_are_never_torn() {
    let pool = Pool::with_capacity(64 << 20).unwrap();
    let svc = Arc::new(Replacing {
        pool: pool.clone(),
        current: Arc::new(Mutex::new((1, pool.alloc_copy(&[1; VALUE]).unwrap()))),
    });
    let Some((veth, h)) = start(svc, &pool) else {
        return;
    };
    let to: SocketAddr = format!("{}:{}", veth.server_ip, h.udp_addrs[0].port())
        .parse()
        .unwrap();
    let sock = client(&veth);
    // Bursts: many requests in flight, replies checked as they come.
    let mut buf = vec![0u8; 10_000];
    let mut got = 0;
    for _burst in 0..10 {
        for _ in 0..20 {
            sock.send_to(b"get", to).unwrap();
        }
        for _ in 0..20 {
            let Ok((n, _)) = sock.recv_from(&mut buf) else {
                break;
            };
            assert_eq!(n, VALUE);
            let first = buf[0];
            assert_ne!(first, 0xEE, "a freed slot's garbage was sent");
            assert!(
                buf[..n].iter().all(|&b| b == first),
                "torn reply: starts with {first}"
            );
            got += 1;
        }
    }
    assert!(got >= 150, "only {got} of 200 replies arrived");
    assert!(h.stats.bytes_referenced.load(Ordering::Relaxed) >= (VALUE * got) as u64);
    h.shutdown();
    h.join();
}

// ---------------------------------------------------------------- client

/// The AF_XDP client (`XdpClient`, made for load generators) against the
/// echo service on AF_XDP: both ends bypass the kernel stack. Replies that
/// fit a frame arrive whole on the AF_XDP socket; larger ones arrive as
/// IPv4 fragments on it too, and the client reassembles them (none reach
/// its kernel sockets).
#[test]
fn af_xdp_client_against_af_xdp_server() {
    use granola_net::xdp::{Sent, XdpClient};
    let pool = Pool::with_capacity(64 << 20).unwrap();
    let Some((veth, h)) = start(Arc::new(Echo), &pool) else {
        return;
    };
    let server: std::net::SocketAddrV4 = format!("{}:{}", veth.server_ip, h.udp_addrs[0].port())
        .parse()
        .unwrap();
    let ccfg = XdpConfig {
        interface: veth.client_if.clone(),
        ..XdpConfig::default()
    };
    let client_pool = Pool::with_capacity(64 << 20).unwrap();
    let mut c = in_ns(&veth.client_ns, || {
        XdpClient::open(&ccfg, client_pool, server, 3).expect("AF_XDP client opens")
    });
    eprintln!("client: {:?}", c.info());
    assert_eq!(c.ports().len(), 3);
    // Requests of every size up to a frame's payload, from every port; the
    // small ones twice over so the ring wraps.
    let mut want: Vec<(u16, Vec<u8>)> = Vec::new();
    for round in 0..300usize {
        let len = [1usize, 8, 100, 511, 512, 1000, 1472][round % 7];
        let port = c.ports()[round % 3];
        let req: Vec<u8> = (0..len).map(|j| (round * 7 + j) as u8).collect();
        assert_eq!(c.send(port, &req).unwrap(), Sent::Queued);
        want.push((port, req));
        if round % 16 == 15 {
            c.flush().unwrap();
        }
    }
    c.flush().unwrap();
    // Two replies larger than the MTU come back as fragments.
    for n in [3000usize, 20_000] {
        assert_eq!(
            c.send(c.ports()[0], format!("x{n}").as_bytes()).unwrap(),
            Sent::Queued
        );
    }
    c.flush().unwrap();
    let mut got: Vec<(u16, Vec<u8>)> = Vec::new();
    let mut big: Vec<Vec<u8>> = Vec::new();
    let mut kbuf = vec![0u8; 70_000];
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while (got.len() < want.len() || big.len() < 2) && std::time::Instant::now() < deadline {
        let n = c.recv(64, |port, payload| {
            if payload.len() > 1472 {
                big.push(payload.to_vec());
            } else {
                got.push((port, payload.to_vec()));
            }
        });
        let through_kernel = c.recv_kernel(&mut kbuf, |_, _| {});
        assert_eq!(through_kernel, 0, "a reply took the kernel path");
        c.flush().unwrap();
        if n == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // UDP may reorder nothing here (one queue, one flow per port), and the
    // veth pair loses nothing at this rate: every reply, in order per port.
    assert_eq!(got.len(), want.len(), "replies over AF_XDP");
    for port in c.ports().to_vec() {
        let w: Vec<&Vec<u8>> = want.iter().filter(|r| r.0 == port).map(|r| &r.1).collect();
        let g: Vec<&Vec<u8>> = got.iter().filter(|r| r.0 == port).map(|r| &r.1).collect();
        assert!(w == g, "port {port}: replies differ from requests");
    }
    big.sort_by_key(Vec::len);
    assert_eq!(big.iter().map(Vec::len).collect::<Vec<_>>(), [3000, 20_000]);
    for b in &big {
        assert!(b.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8));
    }
    drop(c);
    h.shutdown();
    h.join();
}
