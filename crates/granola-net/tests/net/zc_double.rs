//! The zero-copy in-flight discipline against a datapath double whose
//! completions arrive late and out of order: a referenced slot is held
//! until the completion of every send that carried it, and only then;
//! turning zero-copy off with sends in flight keeps collecting their
//! completions; empty datagrams are refused.

use crate::common::*;
use granola::Buf;
use granola_net::mem::{FaultInjector, Faults, MemPipe, ZcDouble};
use granola_net::tx::SendError;
use granola_net::udp::UdpTx;
use granola_net::{Flushed, TxConfig, TxQueue};

fn zc_cfg() -> TxConfig {
    TxConfig {
        copy_threshold: 1024,
        zerocopy: true,
        ..TxConfig::default()
    }
}

/// Queues `v` by reference behind a small copied header and flushes.
fn send_one(tx: &mut TxQueue, dp: &mut ZcDouble<impl granola_net::Datapath>, id: u32, v: &Buf) {
    tx.send_bytes(hdr(id), b"hdr").unwrap();
    tx.reference(v);
    assert_eq!(tx.flush(dp).unwrap(), Flushed::All);
}

/// Reads everything the peer end holds.
fn drain(peer: &mut MemPipe) -> Vec<u8> {
    let mut out = vec![0u8; peer.available()];
    let n = granola_net::Datapath::recv(peer, &mut out).unwrap_or(0);
    out.truncate(n);
    out
}

#[test]
fn late_out_of_order_completions_release_exactly_their_sends() {
    let pool = pool(16 << 20);
    let baseline = pool.stats();
    let (a, mut peer) = MemPipe::pair(1 << 20);
    let mut dp = ZcDouble::new(a);
    let mut tx = TxQueue::new(pool.clone(), zc_cfg());
    let vals: Vec<Buf> = (0..3)
        .map(|i| pool.alloc_copy(&pattern(i, 4096)).unwrap())
        .collect();
    for (i, v) in vals.iter().enumerate() {
        send_one(&mut tx, &mut dp, i as u32, v);
    }
    assert_eq!(dp.zc_sends, 3);
    assert_eq!(tx.zerocopy_in_flight(), 3);
    // The peer has the bytes, the table still holds every value.
    let got = drain(&mut peer);
    for v in &vals {
        assert!(got.windows(v.len()).any(|w| w == &v[..]), "value intact");
    }
    for v in &vals {
        assert_eq!(v.ref_count(), 2, "held by the in-flight table");
    }
    // The last send completes first.
    dp.complete(2, 2);
    tx.poll_completions(&mut dp).unwrap();
    assert_eq!(
        vals.iter().map(Buf::ref_count).collect::<Vec<_>>(),
        [2, 2, 1]
    );
    // Nothing more arrives for a while: polls release nothing.
    for _ in 0..3 {
        tx.poll_completions(&mut dp).unwrap();
    }
    assert_eq!(tx.zerocopy_in_flight(), 2);
    dp.complete(0, 0);
    tx.poll_completions(&mut dp).unwrap();
    assert_eq!(
        vals.iter().map(Buf::ref_count).collect::<Vec<_>>(),
        [1, 2, 1]
    );
    dp.complete(1, 1);
    tx.poll_completions(&mut dp).unwrap();
    assert_eq!(tx.zerocopy_in_flight(), 0);
    assert!(vals.iter().all(|v| v.ref_count() == 1));
    assert_eq!(tx.stats().zc_completed, 3);
    drop((vals, tx));
    assert_no_leak(&pool, baseline);
}

/// Short writes split one value over several zero-copy sends; each parks
/// its own reference, and the value is free only after the last of them
/// completes, whatever the order.
#[test]
fn a_value_split_over_short_sends_is_held_until_all_complete() {
    let pool = pool(16 << 20);
    let (a, mut peer) = MemPipe::pair(1 << 20);
    let faults = Faults {
        max_send: Some(1000),
        ..Faults::default()
    };
    let mut dp = ZcDouble::new(FaultInjector::new(a, faults));
    let mut tx = TxQueue::new(pool.clone(), zc_cfg());
    let v = pool.alloc_copy(&pattern(9, 8192)).unwrap();
    tx.send_bytes(hdr(1), b"hdr").unwrap();
    tx.reference(&v);
    while tx.flush(&mut dp).unwrap() == Flushed::Blocked {}
    let sends = dp.zc_sends;
    assert!(sends >= 9, "{sends} sends of 1000 bytes");
    assert_eq!(tx.zerocopy_in_flight(), sends as usize);
    assert!(drain(&mut peer).ends_with(&v[..]));
    // Complete all but the first, in reverse order.
    for seq in (1..sends).rev() {
        dp.complete(seq, seq);
        tx.poll_completions(&mut dp).unwrap();
        assert!(v.ref_count() > 1, "released before send 0 completed");
    }
    dp.complete(0, 0);
    tx.poll_completions(&mut dp).unwrap();
    assert_eq!(v.ref_count(), 1);
    assert_eq!(tx.zerocopy_in_flight(), 0);
}

/// Turning zero-copy off with sends in flight: later sends are plain, and
/// the earlier ones are still collected by `flush` until the table is
/// empty (before, their references stayed until the queue was dropped).
#[test]
fn disabling_zerocopy_keeps_collecting_completions() {
    let pool = pool(16 << 20);
    let (a, mut peer) = MemPipe::pair(1 << 20);
    let mut dp = ZcDouble::new(a);
    let mut tx = TxQueue::new(pool.clone(), zc_cfg());
    let v0 = pool.alloc_copy(&pattern(1, 4096)).unwrap();
    let v1 = pool.alloc_copy(&pattern(2, 4096)).unwrap();
    send_one(&mut tx, &mut dp, 0, &v0);
    tx.disable_zerocopy();
    send_one(&mut tx, &mut dp, 1, &v1);
    assert_eq!(dp.zc_sends, 1, "the second send is plain");
    assert_eq!(v1.ref_count(), 1, "a plain send holds nothing after it");
    assert_eq!(v0.ref_count(), 2);
    dp.complete(0, 0);
    // No poll_completions call: the next flush (nothing queued) collects.
    assert_eq!(tx.flush(&mut dp).unwrap(), Flushed::All);
    assert_eq!(tx.zerocopy_in_flight(), 0);
    assert_eq!(v0.ref_count(), 1);
    assert!(!drain(&mut peer).is_empty());
}

#[test]
fn empty_datagrams_are_refused() {
    let pool = pool(4 << 20);
    let mut tx = UdpTx::new(pool.clone(), zc_cfg(), 1400);
    let b = tx.datagram("127.0.0.1:9".parse().unwrap());
    assert_eq!(b.finish(), Err(SendError::Empty));
    assert_eq!(tx.queued(), 0);
    let mut b = tx.datagram("127.0.0.1:9".parse().unwrap());
    b.copy(b"x").unwrap();
    b.finish().unwrap();
    assert_eq!(tx.queued(), 1);
}
