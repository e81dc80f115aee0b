//! UDP: one datagram per message, sendmmsg/recvmmsg batches, clear errors
//! for oversize messages, consistent rollback.

use crate::common::*;
use granola::{Buf, Decode, Message};
use granola_net::udp::{self, Datagram, UdpRx, UdpTx, MAX_DATAGRAM};
use granola_net::{FrameHeader, SendError, TxConfig};
use granola_tests::sample::Sample;
use std::net::UdpSocket;

fn cfg() -> TxConfig {
    TxConfig {
        copy_threshold: THRESHOLD,
        ..TxConfig::default()
    }
}

/// A receiving socket with a receive buffer large enough that loopback
/// does not drop a test's burst.
fn receiver() -> UdpSocket {
    let s = udp::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    socket2::SockRef::from(&s)
        .set_recv_buffer_size(4 << 20)
        .unwrap();
    s
}

/// Receives until `want` datagrams arrived (bounded wait).
fn recv_n(rx: &mut UdpRx, sock: &UdpSocket, want: usize) -> Vec<Datagram> {
    let mut out = Vec::new();
    let ok = wait_for(5, || {
        match rx.recv_batch(sock, &mut out) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("recv_batch: {e}"),
        }
        out.len() >= want
    });
    assert!(ok, "received {} of {want} datagrams", out.len());
    out
}

fn assert_nothing_arrives(rx: &mut UdpRx, sock: &UdpSocket) {
    let mut out = Vec::new();
    match rx.recv_batch(sock, &mut out) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("expected nothing, got {other:?} ({} datagrams)", out.len()),
    }
}

fn check_datagram(d: &Datagram, s: &Spec, from: std::net::SocketAddr) {
    assert_eq!(d.from, from);
    let h = FrameHeader::read(&d.data).expect("frame header");
    assert_eq!(h.id, s.id);
    assert_eq!(h.len as usize, d.data.len() - 12, "len = rest of datagram");
    let payload: Buf = d.data.slice(12..);
    let m = Sample::decode_shared(&payload, THRESHOLD).expect("decode");
    s.check(&m);
    if s.data_len >= THRESHOLD {
        // Received into a pool slot: the decoded field references it.
        assert!(m.data.is_shared());
    }
}

#[test]
fn batch_of_100_datagrams() {
    let pool = pool(256 << 20);
    let baseline = pool.stats();
    let dst = receiver();
    let to = dst.local_addr().unwrap();
    let src = udp::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    let from = src.local_addr().unwrap();
    let mut tx = UdpTx::new(pool.clone(), cfg(), MAX_DATAGRAM);
    let specs: Vec<Spec> = (0..100)
        .map(|i| Spec::new(i, if i % 2 == 0 { 2048 } else { 100 }, vec![600, 5]))
        .collect();
    {
        for s in &specs {
            let values = s.values(&pool);
            tx.send_object(to, hdr(s.id), &s.build(&values)).unwrap();
            // The app's handles go right away; the queue holds the values.
        }
        churn(&pool, &[600, 2048], 3, 0x77);
    }
    assert_eq!(tx.queued(), 100);
    assert_eq!(tx.flush(&src).unwrap(), granola_net::Flushed::All);
    assert_eq!(tx.queued(), 0);
    let st = tx.stats();
    // 100 datagrams in ceil(100 / MAX_BATCH) sendmmsg calls.
    assert_eq!(
        st.syscalls as usize,
        100usize.div_ceil(granola_net::os::MAX_BATCH)
    );
    assert!(st.gather.entries_referenced >= 150);
    let mut rx = UdpRx::new(pool.clone(), 32, MAX_DATAGRAM + 1);
    let got = recv_n(&mut rx, &dst, 100);
    assert_eq!(got.len(), 100);
    assert_eq!(rx.truncated, 0);
    for (d, s) in got.iter().zip(&specs) {
        check_datagram(d, s, from);
    }
    drop(got);
    drop(rx);
    drop(tx);
    assert_no_leak(&pool, baseline);
}

#[test]
fn oversize_is_an_error_and_nothing_is_sent() {
    let pool = pool(64 << 20);
    let dst = receiver();
    let to = dst.local_addr().unwrap();
    let src = udp::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    let mut tx = UdpTx::new(pool.clone(), cfg(), MAX_DATAGRAM);
    let s = Spec::new(1, 70_000, vec![]);
    let values = s.values(&pool);
    let m = s.build(&values);
    let e = tx.send_object(to, hdr(1), &m).unwrap_err();
    assert!(matches!(
        e,
        SendError::TooLarge {
            max: MAX_DATAGRAM,
            ..
        }
    ));
    // Just over the limit by one byte, through the builder.
    let mut b = tx.datagram(to);
    b.copy(&[1u8; 100]).unwrap();
    b.value(&values[0].slice(..MAX_DATAGRAM - 99)).unwrap();
    assert_eq!(b.len(), MAX_DATAGRAM + 1);
    assert!(matches!(b.finish(), Err(SendError::TooLarge { .. })));
    assert_eq!(tx.queued(), 0);
    assert_eq!(tx.flush(&src).unwrap(), granola_net::Flushed::All);
    assert_eq!(tx.stats().syscalls, 0, "nothing was sent");
    let mut rx = UdpRx::new(pool.clone(), 8, MAX_DATAGRAM + 1);
    assert_nothing_arrives(&mut rx, &dst);
    drop(m);
    assert_eq!(
        values[0].ref_count(),
        1,
        "refused datagrams hold no reference"
    );
    // A smaller limit is enforced too.
    let mut small = UdpTx::new(pool.clone(), cfg(), 1000);
    let s = Spec::new(2, 900, vec![]);
    let v = s.values(&pool);
    assert!(matches!(
        small.send_object(to, hdr(2), &s.build(&v)),
        Err(SendError::TooLarge { max: 1000, .. })
    ));
    assert_eq!(small.queued(), 0);
}

#[test]
fn abandoned_datagrams_roll_back_cleanly() {
    let pool = pool(64 << 20);
    let dst = receiver();
    let to = dst.local_addr().unwrap();
    let src = udp::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    let from = src.local_addr().unwrap();
    let mut tx = UdpTx::new(
        pool.clone(),
        TxConfig {
            // Small chunks so a datagram's copies span a chunk change.
            chunk_size: 256,
            ..cfg()
        },
        MAX_DATAGRAM,
    );
    let big = pool.alloc_copy(&pattern(1, 4000)).unwrap();
    let specs: Vec<Spec> = (0..4).map(|i| Spec::new(i, 1500, vec![20])).collect();
    let values: Vec<Vec<Buf>> = specs.iter().map(|s| s.values(&pool)).collect();

    tx.send_object(to, hdr(0), &specs[0].build(&values[0]))
        .unwrap();
    // Abandoned: copies (spilling into a new chunk) and a reference.
    let mut b = tx.datagram(to);
    b.copy(&[0xEE; 200]).unwrap();
    b.value(&big).unwrap();
    b.copy(&[0xEF; 300]).unwrap();
    b.abandon();
    assert_eq!(tx.queued(), 1);
    assert_eq!(big.ref_count(), 1, "the abandoned reference is released");
    tx.send_object(to, hdr(1), &specs[1].build(&values[1]))
        .unwrap();
    // Refused as too large after partial building: rolled back too.
    let mut b = tx.datagram(to);
    b.copy(&[0xEE; 30]).unwrap();
    for _ in 0..17 {
        b.value(&big).unwrap();
    }
    assert!(b.finish().is_err());
    assert_eq!(big.ref_count(), 1);
    // Dropped without finish or abandon (e.g. by `?` after an error):
    // also rolled back.
    {
        let mut b = tx.datagram(to);
        b.copy(&[0xDD; 10]).unwrap();
        b.value(&big).unwrap();
    }
    assert_eq!(tx.queued(), 2);
    assert_eq!(big.ref_count(), 1);
    // A hand-built datagram after all that.
    let mut b = tx.datagram(to);
    let payload = specs[2].build(&values[2]).to_vec().unwrap();
    let h = FrameHeader {
        len: payload.len() as u32,
        ..hdr(2)
    };
    b.copy(&h.to_bytes()).unwrap();
    b.copy(&payload[..10]).unwrap();
    b.copy(&payload[10..]).unwrap();
    b.finish().unwrap();
    tx.send_object(to, hdr(3), &specs[3].build(&values[3]))
        .unwrap();
    assert_eq!(tx.queued(), 4);
    assert_eq!(tx.flush(&src).unwrap(), granola_net::Flushed::All);
    let mut rx = UdpRx::new(pool.clone(), 8, MAX_DATAGRAM + 1);
    let got = recv_n(&mut rx, &dst, 4);
    assert_eq!(got.len(), 4);
    for (d, s) in got.iter().zip(&specs) {
        check_datagram(d, s, from);
    }
    assert_nothing_arrives(&mut rx, &dst);
}

#[test]
fn recv_batch_flags_truncated_datagrams() {
    let pool = pool(16 << 20);
    let dst = receiver();
    let src = UdpSocket::bind("127.0.0.1:0").unwrap();
    src.send_to(&[1u8; 3000], dst.local_addr().unwrap())
        .unwrap();
    src.send_to(&[2u8; 100], dst.local_addr().unwrap()).unwrap();
    let mut rx = UdpRx::new(pool.clone(), 4, 1024);
    let mut out = Vec::new();
    assert!(wait_for(5, || {
        let _ = rx.recv_batch(&dst, &mut out);
        out.len() + rx.truncated as usize >= 2
    }));
    assert_eq!(rx.truncated, 1);
    assert_eq!(out.len(), 1);
    assert_eq!(&out[0].data[..], &[2u8; 100][..]);
}

/// A datagram whose piece could not be added (pool exhausted) is refused
/// by finish() and rolled back, instead of going out with a hole.
#[test]
fn builder_refuses_a_datagram_with_a_missing_piece() {
    // Two segments: one for the small-class chunks, one taken by `hog`.
    let pool = pool(4 << 20);
    let dst = receiver();
    let to = dst.local_addr().unwrap();
    let src = udp::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    let mut tx = UdpTx::new(
        pool.clone(),
        TxConfig {
            chunk_size: 256,
            ..cfg()
        },
        MAX_DATAGRAM,
    );
    let mut b = tx.datagram(to);
    b.copy(b"first piece").unwrap();
    b.finish().unwrap();
    let hog = pool.alloc(2 << 20).expect("second segment");
    let mut b = tx.datagram(to);
    b.copy(b"head").unwrap();
    // Needs a large chunk: no segment left.
    assert_eq!(b.copy(&[0u8; 1 << 20]), Err(SendError::OutOfMemory));
    b.copy(b"tail").unwrap();
    assert_eq!(b.finish(), Err(SendError::OutOfMemory));
    assert_eq!(tx.queued(), 1);
    drop(hog);
    // The failed allocation is reported once by flush; then the queue goes.
    let first = tx.flush(&src);
    if first.is_err() {
        assert_eq!(tx.flush(&src).unwrap(), granola_net::Flushed::All);
    }
    let mut rx = UdpRx::new(pool.clone(), 4, 2048);
    let got = recv_n(&mut rx, &dst, 1);
    assert_eq!(&got[0].data[..], b"first piece");
    assert_nothing_arrives(&mut rx, &dst);
}
