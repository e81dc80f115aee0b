//! Smoke test of the echo benchmark (`granola-bench echo`): every variant
//! runs its server and client briefly over TCP loopback, and every reply
//! must come back verified byte for byte. No timing assertions.

use std::sync::Arc;
use std::time::Duration;

use granola::Pool;
use granola_bench::echo;
use granola_net::TxConfig;

use echo::fig2::Fig2Variant;
use echo::harness::{self, RunResult, RunSpec};
use echo::pieces::{PieceSet, PieceVariant};

fn spec(tx: TxConfig) -> RunSpec {
    RunSpec {
        depth: 8,
        warmup: Duration::from_millis(50),
        measure: Duration::from_millis(200),
        max_messages: 100_000,
        tx,
        ..RunSpec::default()
    }
}

fn pools() -> (Pool, Pool) {
    (
        Pool::with_capacity(1 << 30).expect("server pool"),
        Pool::with_capacity(1 << 30).expect("client pool"),
    )
}

fn check(name: &str, r: &RunResult) {
    assert!(r.msgs > 0, "{name}: no replies in the window: {r:?}");
    assert!(r.verified_total >= r.msgs, "{name}: {r:?}");
    assert!(r.msgs_per_s > 0.0 && r.p50_us > 0.0, "{name}: {r:?}");
}

#[test]
fn granola_variants_echo_the_list_shape() {
    let (server, client) = pools();
    for v in Fig2Variant::GRANOLA {
        let r = harness::run(
            &spec(TxConfig::default()),
            &server,
            &client,
            v.handler_factory(),
            v.client(7),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v.name()));
        check(v.name(), &r);
        // The two 2 KiB values go by reference exactly when the variant
        // says so.
        match v {
            Fig2Variant::Fused | Fig2Variant::Sga => {
                assert!(r.referenced_bytes_per_msg >= 4096.0, "{}: {r:?}", v.name())
            }
            _ => assert_eq!(r.referenced_bytes_per_msg, 0.0, "{}: {r:?}", v.name()),
        }
    }
}

#[test]
fn peer_variants_echo_the_list_shape() {
    let (server, client) = pools();
    for v in [
        Fig2Variant::Prost,
        Fig2Variant::Flatbuffers,
        Fig2Variant::Capnp,
    ] {
        let r = harness::run(
            &spec(TxConfig::default()),
            &server,
            &client,
            v.handler_factory(),
            v.client(7),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v.name()));
        check(v.name(), &r);
    }
}

#[test]
fn piece_variants_send_verified_pieces() {
    let (server, client) = pools();
    // 4 KiB in 4 pieces of 1 KiB: at the threshold, so `hybrid` references.
    let set = Arc::new(PieceSet::new(&server, 4096, 4, 4 << 20, 11).expect("pieces"));
    for v in PieceVariant::PART2 {
        let r = harness::run(
            &spec(v.tx_config()),
            &server,
            &client,
            v.handler_factory(&set),
            v.client(&set),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v.name()));
        check(v.name(), &r);
        if v.copies() {
            assert_eq!(r.referenced_bytes_per_msg, 0.0, "{}: {r:?}", v.name());
        } else {
            assert!(r.referenced_bytes_per_msg >= 4096.0, "{}: {r:?}", v.name());
        }
    }
    // Small pieces: hybrid copies them.
    let small = Arc::new(PieceSet::new(&server, 1024, 8, 1 << 20, 12).expect("pieces"));
    let v = PieceVariant::Hybrid;
    let r = harness::run(
        &spec(v.tx_config()),
        &server,
        &client,
        v.handler_factory(&small),
        v.client(&small),
    )
    .expect("hybrid, small pieces");
    check("hybrid small", &r);
    assert_eq!(r.referenced_bytes_per_msg, 0.0, "{r:?}");
}

#[test]
fn zerocopy_variant_sends_verified_replies() {
    let (server, client) = pools();
    let set = Arc::new(PieceSet::new(&server, 64 << 10, 1, 8 << 20, 13).expect("pieces"));
    for v in PieceVariant::PART3 {
        let r = harness::run(
            &spec(v.tx_config()),
            &server,
            &client,
            v.handler_factory(&set),
            v.client(&set),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v.name()));
        check(v.name(), &r);
        if v == PieceVariant::ZeroCopy && r.zc_completed == 0 {
            // Completions are collected as they arrive; a kernel without
            // SO_ZEROCOPY makes the server fall back to plain sends.
            eprintln!("note: no MSG_ZEROCOPY completions seen (unsupported here?)");
        }
    }
}

/// Part 4: the list shape over UDP, the server on kernel sockets and on
/// AF_XDP, between namespaces made here; every reply verified, fused
/// referencing its values. Skips loudly where namespaces cannot be
/// made (and fails then under `GRANOLA_REQUIRE_PEERS` as root); a server
/// that falls back from AF_XDP fails the run.
#[test]
fn the_list_shape_echoes_over_udp_and_af_xdp() {
    use echo::udp::{self, ServerPath};
    let Some(veth) = granola_tests::netns::Veth::create_or_skip("the echo over AF_XDP") else {
        return;
    };
    let pool = || Pool::with_capacity(256 << 20).expect("pool");
    let (server, client) = (pool(), pool());
    let spec = RunSpec {
        depth: 4,
        ..spec(udp::tx_config())
    };
    for path in ServerPath::ALL {
        for v in [Fig2Variant::Fused, Fig2Variant::Prost] {
            let name = format!("{} {}", path.name(), v.name());
            let r = udp::run(&spec, &veth, path, v, 7, &server, &client)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            // (A run fails by itself if over 1 % of requests are lost.)
            check(&name, &r);
            if v == Fig2Variant::Fused {
                assert!(r.referenced_bytes_per_msg >= 4096.0, "{name}: {r:?}");
            }
        }
    }
}
