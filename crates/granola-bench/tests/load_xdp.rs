//! The load generator's AF_XDP client (`--transport xdp`) against
//! granola-kv on AF_XDP, between two network namespaces joined by a veth
//! pair (created here, deleted on drop): memcached and native UDP GETs of
//! small values (one frame per reply) and of values whose replies span
//! several datagrams (memcached) or arrive as IPv4 fragments that the
//! client reassembles (native). Every reply is checked as on the
//! kernel transports (key, version, checksum of the value).
//!
//! Skips loudly where namespaces or AF_XDP are unavailable; under
//! `GRANOLA_REQUIRE_PEERS` a root run that cannot make namespaces fails,
//! and whenever the probe says AF_XDP works a fallback fails.

use granola_bench::load::{self, LoadConfig, Mode, Protocol, Transport};
use granola_bench::workload::WorkloadSpec;
use granola_kv::server::config::Config;
use granola_kv::server::{start, Running};
use granola_net::{DatapathKind, XdpConfig};
use granola_tests::netns::Veth;
use std::net::SocketAddr;
use std::time::Duration;

fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    Veth::in_ns(ns, granola_net::xdp::enter_netns, f)
}

/// granola-kv with `--datapath xdp` in the server namespace; `None` (after
/// saying why) where this machine cannot run it.
fn start_server() -> Option<(Veth, Running)> {
    let veth = Veth::create_or_skip("the AF_XDP client")?;
    let mut cfg = Config::for_tests();
    cfg.listen = veth.server_ip.parse().unwrap();
    cfg.threads = Some(1);
    cfg.udp_amplification = 100_000;
    cfg.datapath = DatapathKind::Xdp(XdpConfig::default());
    cfg.xdp_if = Some(veth.server_if.clone());
    let kind = cfg.datapath_kind();
    let running = in_ns(&veth.server_ns, || {
        kind.probe()?;
        Ok::<_, String>(start(cfg).expect("server starts"))
    });
    match running {
        Ok(r) => {
            assert!(
                matches!(r.handle.datapath, DatapathKind::Xdp(_)),
                "probe passed but the server runs {}",
                r.handle.datapath
            );
            Some((veth, r))
        }
        Err(why) => {
            eprintln!("SKIPPED: AF_XDP not available here: {why}");
            None
        }
    }
}

/// Loads the workload over TCP, then runs it closed-loop over the AF_XDP
/// client and checks every reply.
fn run(veth: &Veth, protocol: Protocol, tcp: SocketAddr, udp: SocketAddr, value: usize) {
    let spec = format!("ycsb:keys=500,value={value}");
    let base = LoadConfig {
        addr: tcp,
        protocol,
        conns: 3,
        duration: Duration::from_millis(700),
        warmup: Duration::from_millis(100),
        timeout: Duration::from_secs(2),
        xdp: XdpConfig {
            interface: veth.client_if.clone(),
            ..XdpConfig::default()
        },
        ..LoadConfig::default()
    };
    let xdp = LoadConfig {
        addr: udp,
        transport: Transport::Xdp,
        mode: Mode::Closed { depth: 8 },
        ..base.clone()
    };
    let (loaded, r) = in_ns(&veth.client_ns, || {
        let w = spec.parse::<WorkloadSpec>().unwrap().build().unwrap();
        let l = load::load(&base, w.as_ref()).unwrap();
        (l, load::run(&xdp, w.as_ref()).unwrap())
    });
    let what = format!("{} GETs of {value} B over AF_XDP", protocol.name());
    eprintln!("{what}: {}", r.summary());
    assert_eq!((loaded.counts.ops, loaded.errors), (500, 0), "{what}: load");
    assert_eq!(r.counts.errors.total(), 0, "{what}: {:?}", r.counts.errors);
    assert!(r.counts.ops > 300, "{what}: only {} ops", r.counts.ops);
    // Every key was loaded: a GET that misses lost its reply somewhere.
    assert_eq!(r.counts.ops_miss, 0, "{what}: {:?}", r.counts);
    // A reply lost on the veth pair times out; none should be.
    assert!(
        r.counts.req_timeout * 100 <= r.counts.ops,
        "{what}: {} of {} timed out",
        r.counts.req_timeout,
        r.counts.ops
    );
}

#[test]
fn af_xdp_client_checks_every_reply() {
    let Some((veth, running)) = start_server() else {
        return;
    };
    let a = running.addrs.clone();
    for value in [100, 3000] {
        run(
            &veth,
            Protocol::Memcached,
            a.memcache.unwrap(),
            a.memcache_udp.unwrap(),
            value,
        );
        run(
            &veth,
            Protocol::Native,
            a.native.unwrap(),
            a.native_udp.unwrap(),
            value,
        );
    }
    // Not one thread may use AF_XDP per queue.
    let two = LoadConfig {
        addr: a.memcache_udp.unwrap(),
        transport: Transport::Xdp,
        threads: 2,
        mode: Mode::Closed { depth: 1 },
        ..LoadConfig::default()
    };
    let w = "ycsb:keys=10"
        .parse::<WorkloadSpec>()
        .unwrap()
        .build()
        .unwrap();
    let err = load::run(&two, w.as_ref()).unwrap_err();
    assert!(err.contains("one client thread"), "{err}");
    running.handle.shutdown();
    running.handle.join();
}
