//! granola-kv's UDP protocols over AF_XDP: the server runs in one network
//! namespace with `--datapath xdp` on its end of a veth pair, the clients
//! (kernel sockets) in another. memcached UDP GETs (single- and
//! multi-datagram replies, the amplification bound) and native GET/PUT
//! (values referenced from the store, replies above the MTU as IPv4
//! fragments), with TCP (on epoll) writing the same store.
//!
//! Skips loudly where namespaces or AF_XDP are unavailable; under
//! `GRANOLA_REQUIRE_PEERS` a root run that cannot make namespaces fails,
//! and whenever the probe says AF_XDP works a fallback fails.

mod common;

use common::*;
use granola::Decode;
use granola_kv::proto as kv;
use granola_kv::server::native::{kind, status};
use granola_kv::server::{start, Running};
use granola_net::{DatapathKind, FrameHeader, XdpConfig, FRAME_HEADER_LEN};
use granola_tests::netns::Veth;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

struct XdpServer {
    running: Option<Running>,
    veth: Veth,
}

impl Drop for XdpServer {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.handle.shutdown();
            r.handle.join();
        }
    }
}

fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    Veth::in_ns(ns, granola_net::xdp::enter_netns, f)
}

fn start_xdp(amplification: usize) -> Option<XdpServer> {
    start_xdp_with(amplification, |_| {})
}

fn start_xdp_with(
    amplification: usize,
    tune: impl FnOnce(&mut granola_kv::server::config::Config),
) -> Option<XdpServer> {
    let veth = Veth::create_or_skip("granola-kv over AF_XDP")?;
    let mut cfg = config();
    cfg.listen = veth.server_ip.parse().unwrap();
    cfg.threads = Some(1);
    cfg.udp_amplification = amplification;
    tune(&mut cfg);
    cfg.datapath = DatapathKind::Xdp(XdpConfig::default());
    cfg.xdp_if = Some(veth.server_if.clone());
    let kind = cfg.datapath_kind();
    let running = in_ns(&veth.server_ns, || {
        kind.probe()?;
        Ok::<_, String>(start(cfg).expect("server starts"))
    });
    let running = match running {
        Ok(r) => r,
        Err(why) => {
            eprintln!("SKIPPED: AF_XDP not available here: {why}");
            return None;
        }
    };
    assert!(
        matches!(running.handle.datapath, DatapathKind::Xdp(_)),
        "probe passed but the server runs {}",
        running.handle.datapath
    );
    let info = running.handle.xdp.clone().unwrap();
    eprintln!(
        "granola-kv AF_XDP on {}: {} mode ({} XDP)",
        info.interface,
        info.mode.name(),
        info.attach
    );
    Some(XdpServer {
        running: Some(running),
        veth,
    })
}

impl XdpServer {
    fn addrs(&self) -> &granola_kv::server::Addrs {
        &self.running.as_ref().unwrap().addrs
    }
    fn udp_client(&self, to: SocketAddr) -> UdpSocket {
        let ip = self.veth.client_ip.clone();
        in_ns(&self.veth.client_ns, || {
            let s = UdpSocket::bind(format!("{ip}:0")).unwrap();
            s.connect(to).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            s
        })
    }
    fn tcp_client(&self) -> Client {
        let to = self.addrs().memcache.unwrap();
        in_ns(&self.veth.client_ns, || Client::connect(to))
    }
}

#[test]
fn memcached_udp_gets_over_af_xdp() {
    let Some(srv) = start_xdp(100_000) else {
        return;
    };
    let mut c = srv.tcp_client();
    let s = srv.udp_client(srv.addrs().memcache_udp.unwrap());
    // Up to 10 KiB: in copy mode each extra descriptor of a packet becomes
    // a page-sized skb fragment in the kernel, so a long burst of
    // multi-datagram replies can overrun the client socket's default
    // receive buffer on a loaded machine.
    for (i, size) in [5usize, 1391, 1400, 4096, 10 << 10].into_iter().enumerate() {
        let value = pattern(i as u64, size);
        let key = format!("v{size}");
        c.roundtrip(&mc_set_cmd(key.as_bytes(), 3, &value), b"STORED\r\n");
        let mut want = mc_value_reply(key.as_bytes(), 3, &value, None);
        want.extend_from_slice(b"END\r\n");
        s.send(&mc_udp_request(
            10 + i as u16,
            format!("get {key}\r\n").as_bytes(),
        ))
        .unwrap();
        let (reply, n) = mc_udp_reply(&s, 10 + i as u16);
        assert_eq!(n, want.len().div_ceil(1400 - 8), "datagrams for {size}");
        assert_bytes(&reply, &want, &format!("{size}-byte value over AF_XDP"));
    }
    s.send(&mc_udp_request(99, b"get nope\r\n")).unwrap();
    assert_bytes(&mc_udp_reply(&s, 99).0, b"END\r\n", "miss");
    let x = &srv.running.as_ref().unwrap().handle.xdp_stats;
    assert!(x.rx_delivered.load(std::sync::atomic::Ordering::Relaxed) >= 6);
}

#[test]
fn native_udp_over_af_xdp() {
    let Some(srv) = start_xdp(100_000) else {
        return;
    };
    let s = srv.udp_client(srv.addrs().native_udp.unwrap());
    let reply = |s: &UdpSocket, k: u16, id: u32| {
        let mut buf = vec![0u8; 70_000];
        let n = s.recv(&mut buf).unwrap_or_else(|e| {
            panic!(
                "native reply over AF_XDP: {e}; {:?}",
                srv.running.as_ref().unwrap().handle.xdp_stats
            )
        });
        let h = FrameHeader::read(&buf[..n]).expect("frame header");
        assert!(h.is_response());
        assert_eq!((h.kind, h.id), (k, id));
        assert_eq!(h.len as usize, n - FRAME_HEADER_LEN);
        buf[FRAME_HEADER_LEN..n].to_vec()
    };
    let put = |s: &UdpSocket, id: u32, key: &[u8], value: &[u8]| {
        let p = kv::PutReq {
            key: (key).into(),
            value: (value).into(),
        };
        s.send(&native_frame(kind::PUT, id, &p)).unwrap();
        let r = reply(s, kind::PUT, id);
        let a = kv::Ack::decode(&r).unwrap();
        (a.status, a.count)
    };
    let get = |s: &UdpSocket, id: u32, key: &[u8]| {
        let g = kv::GetReq { key: (key).into() };
        s.send(&native_frame(kind::GET, id, &g)).unwrap();
        let r = reply(s, kind::GET, id);
        let g = kv::GetResp::decode(&r).unwrap();
        (g.status, g.value.to_vec())
    };
    // Values are stored from the received frame.
    assert_eq!(put(&s, 1, b"k", b"small"), (status::OK, 1));
    assert_eq!(get(&s, 2, b"k"), (status::OK, b"small".to_vec()));
    assert_eq!(get(&s, 3, b"nope"), (status::NOT_FOUND, vec![]));
    let mid = pattern(1, 1300);
    assert_eq!(put(&s, 4, b"mid", &mid), (status::OK, 1));
    assert_eq!(get(&s, 5, b"mid"), (status::OK, mid));
    // Large values set over TCP go out by reference in IPv4 fragments.
    let mut c = srv.tcp_client();
    for (i, size) in [4096usize, 40 << 10].into_iter().enumerate() {
        let big = pattern(10 + i as u64, size);
        c.roundtrip(&mc_set_cmd(b"big", 0, &big), b"STORED\r\n");
        assert_eq!(get(&s, 6 + i as u32, b"big"), (status::OK, big));
    }
    let net = &srv.running.as_ref().unwrap().handle.stats;
    assert!(
        net.bytes_referenced
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 4096
    );
    // PUT requests larger than a frame arrive as IPv4 fragments, which
    // the AF_XDP worker reassembles; the values read back whole.
    for (i, size) in [2000usize, 20_000, 60_000].into_iter().enumerate() {
        let v = pattern(20 + i as u64, size);
        assert_eq!(put(&s, 10 + i as u32, b"large", &v), (status::OK, 1));
        assert_eq!(get(&s, 20 + i as u32, b"large"), (status::OK, v));
    }
    let x = srv.running.as_ref().unwrap().handle.xdp_stats.clone();
    assert!(x.rx_reassembled.load(std::sync::atomic::Ordering::Relaxed) >= 3);
    assert_eq!(
        x.kernel_path_delivered
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    // An operator sees the same in memcached `stats` (and RESP INFO).
    let to = srv.addrs().memcache.unwrap();
    let st = in_ns(&srv.veth.client_ns, || mc_stats(to));
    assert_eq!(st["datapath"], "xdp");
    assert_eq!(st["xdp_mode"], "copy", "veth is copy mode");
    assert_eq!(st["xdp_interface"], srv.veth.server_if);
    assert!(st["xdp_rx_reassembled"].parse::<u64>().unwrap() >= 3);
    assert!(st["xdp_rx_delivered"].parse::<u64>().unwrap() >= 10);
}

/// A self-verifying value: `zc|version|` then bytes derived from it, then
/// an 8-byte FNV-1a checksum of everything before it.
fn versioned(version: u64, len: usize) -> Vec<u8> {
    let mut v = format!("zc|{version}|").into_bytes();
    v.extend_from_slice(&pattern(version, len - v.len() - 8));
    let sum = fnv(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

/// The version a value read back carries; panics on a torn or foreign
/// byte.
fn verified_version(got: &[u8], len: usize) -> u64 {
    assert_eq!(got.len(), len, "length");
    let version: u64 = got
        .strip_prefix(b"zc|")
        .and_then(|t| t.split(|&b| b == b'|').next())
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
        .unwrap_or_else(|| panic!("no header: {}", show(&got[..32])));
    assert!(
        got == versioned(version, len),
        "torn value (version {version})"
    );
    version
}

/// With the item pool and the connection pool carved from one mapping
/// (one UMEM), reply descriptors name stored values where they lie:
/// nothing is copied into the UMEM. Values replaced over TCP while their
/// replies are queued arrive whole (the descriptor holds the old value).
/// veth is copy mode, where replies are copied behind their headers by
/// default; `--xdp-gather-min 0` makes every payload piece a descriptor
/// of its own, as zero-copy mode does above 512 B.
#[test]
fn stored_values_are_named_by_tx_descriptors() {
    let Some(srv) = start_xdp_with(100_000, |c| c.xdp_gather_min = Some(0)) else {
        return;
    };
    let mut c = srv.tcp_client();
    let s = srv.udp_client(srv.addrs().native_udp.unwrap());
    let get = |id: u32| {
        let g = kv::GetReq {
            key: b"zc"[..].into(),
        };
        s.send(&native_frame(kind::GET, id, &g)).unwrap();
    };
    let x = srv.running.as_ref().unwrap().handle.xdp_stats.clone();
    let read = |s: &UdpSocket| {
        let mut buf = vec![0u8; 70_000];
        let n = s
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("native reply over AF_XDP: {e}; {x:?}"));
        let h = FrameHeader::read(&buf[..n]).expect("frame header");
        assert_eq!(h.len as usize, n - FRAME_HEADER_LEN);
        let g = kv::GetResp::decode(&buf[FRAME_HEADER_LEN..n]).unwrap();
        assert_eq!(g.status, status::OK);
        g.value.to_vec()
    };
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let mut sent = 0u64;
    for (round, len) in [1000usize, 4096, 9000, 30_000].into_iter().enumerate() {
        let mut newest = 0;
        for v in 0..20u64 {
            let version = (round as u64) << 32 | v;
            c.roundtrip(
                &mc_set_cmd(b"zc", 0, &versioned(version, len)),
                b"STORED\r\n",
            );
            // GETs queued, then the value replaced at once. In copy mode
            // every descriptor after a packet's first becomes a page-sized
            // skb fragment, so a burst of large multi-fragment replies
            // would overrun the client's default receive buffer: one at a
            // time above 10 KB.
            let queued = if len > 10_000 { 1 } else { 3 };
            for i in 0..queued {
                get((version as u32) * 4 + i);
            }
            let next = version + 1;
            c.roundtrip(&mc_set_cmd(b"zc", 0, &versioned(next, len)), b"STORED\r\n");
            for _ in 0..queued {
                let got = verified_version(&read(&s), len);
                assert!(got == version || got == next, "stale: {got} for {version}");
                newest = newest.max(got);
            }
            sent += u64::from(queued) * len as u64;
        }
        assert!(
            newest >= (round as u64) << 32 | 19,
            "{len} B: replies not current"
        );
    }
    assert!(
        load(&x.tx_bytes_gathered) >= sent,
        "stored values sent by reference: {} of {sent} bytes",
        load(&x.tx_bytes_gathered)
    );
    assert_eq!(
        load(&x.tx_bytes_copied_in),
        0,
        "nothing copied into the UMEM"
    );
    let to = srv.addrs().memcache.unwrap();
    let st = in_ns(&srv.veth.client_ns, || mc_stats(to));
    assert_eq!(st["xdp_tx_bytes_copied_in"], "0");
    assert!(st["xdp_tx_bytes_gathered"].parse::<u64>().unwrap() >= sent);
}
