//! Serialize-and-send round trips: send_object over the in-memory pipe and a
//! real TCP connection, decoded and compared field by field; the non-fused
//! paths put the same bytes on the wire.

use crate::common::*;
use granola::{Decode, Message};
use granola_net::mem::MemPipe;
use granola_net::tx::MAX_IOV;
use granola_net::{Frame, RxBuffer, TcpDatapath, TxConfig, TxQueue};
use granola_tests::sample::Sample;

fn specs() -> Vec<Spec> {
    vec![
        // Everything small: one copied iovec.
        Spec::new(1, 10, vec![3, 0, 100]),
        // Large data, mixed vals.
        Spec::new(2, 4096, vec![THRESHOLD, THRESHOLD - 1, 20_000]),
        // Exactly at the threshold and just under.
        Spec::new(3, THRESHOLD - 1, vec![THRESHOLD]),
        // Big: several chunks' worth, plus a large-object (> 1 MiB) value.
        Spec::new(4, 1 << 20, vec![3 << 20, 64]),
        Spec::new(5, 0, vec![]),
    ]
}

fn cfg() -> TxConfig {
    TxConfig {
        copy_threshold: THRESHOLD,
        ..TxConfig::default()
    }
}

fn check_frames(specs: &[Spec], frames: &[Frame]) {
    assert_eq!(frames.len(), specs.len());
    for (s, f) in specs.iter().zip(frames) {
        assert_eq!(f.header.id, s.id, "frames arrive in order");
        assert_eq!(f.header.kind, 3);
        let m = Sample::decode_shared(&f.payload, THRESHOLD).expect("decode");
        s.check(&m);
        // Decoded large fields reference the receive buffer (zero-copy RX).
        if s.data_len >= THRESHOLD {
            assert!(m.data.is_shared());
        }
    }
}

#[test]
fn send_object_round_trip_mem_pipe() {
    let pool = pool(256 << 20);
    let specs = specs();
    let values: Vec<_> = specs.iter().map(|s| s.values(&pool)).collect();
    let (mut a, mut b) = MemPipe::pair(256 << 10);
    let mut tx = TxQueue::new(pool.clone(), cfg());
    let mut rx = RxBuffer::new(pool.clone(), 4096, 16 << 20);
    let mut referenced = 0;
    for (s, v) in specs.iter().zip(&values) {
        let m = s.build(v);
        assert_eq!(
            m.encoded_sizes_with(THRESHOLD).zero_copy_count(),
            s.referenced()
        );
        referenced += s.referenced();
        tx.send_object(hdr(s.id), &m).unwrap();
    }
    let st = tx.stats();
    assert_eq!(st.gather.entries_referenced as usize, referenced);
    assert!(st.gather.bytes_referenced >= (1 << 20) + (3 << 20) + 20_000);
    let frames = pump(
        &mut tx,
        &mut a,
        &mut rx,
        &mut b,
        64 << 20,
        specs.len(),
        10_000,
        || {},
    );
    check_frames(&specs, &frames);
    assert_eq!(tx.queued_bytes(), 0);
}

#[test]
fn send_object_round_trip_tcp() {
    let pool = pool(256 << 20);
    let specs = specs();
    let values: Vec<_> = specs.iter().map(|s| s.values(&pool)).collect();
    let (c, s) = tcp_pair();
    let mut a = TcpDatapath::new(c).unwrap();
    let mut b = TcpDatapath::new(s).unwrap();
    let mut tx = TxQueue::new(pool.clone(), cfg());
    let mut rx = RxBuffer::new(pool.clone(), 16 << 10, 16 << 20);
    for (s, v) in specs.iter().zip(&values) {
        tx.send_object(hdr(s.id), &s.build(v)).unwrap();
    }
    let frames = pump(
        &mut tx,
        &mut a,
        &mut rx,
        &mut b,
        64 << 20,
        specs.len(),
        1_000_000,
        || {},
    );
    check_frames(&specs, &frames);
    let st = tx.stats();
    // The 4 MiB of large values cannot fit one loopback send buffer:
    // several gathering calls, all bytes accounted.
    let total: usize = frames.iter().map(|f| f.payload.len() + 12).sum();
    assert_eq!(st.bytes_sent as usize, total);
    assert!(st.syscalls >= 1);
}

/// The bytes a queue puts on the wire for `send`, through a MemPipe.
fn wire_bytes(pool: &granola::Pool, send: impl FnOnce(&mut TxQueue)) -> Vec<u8> {
    let (mut a, mut b) = MemPipe::pair(64 << 20);
    let mut tx = TxQueue::new(
        pool.clone(),
        TxConfig {
            // Small chunks: headers spill across chunks too.
            chunk_size: 256,
            ..cfg()
        },
    );
    send(&mut tx);
    assert_eq!(tx.flush(&mut a).unwrap(), granola_net::Flushed::All);
    let mut out = vec![0u8; b.available()];
    let n = granola_net::Datapath::recv(&mut b, &mut out).unwrap();
    assert_eq!(n, out.len());
    out
}

#[test]
fn fused_sga_and_bytes_paths_give_identical_wire_bytes() {
    let pool = pool(128 << 20);
    // Dirty the pool first, so bytes the encoder fails to write show up as
    // differences against the zeroed buffers of to_vec/to_sga.
    churn(&pool, &[64, 256, 4096, 16 << 10, 64 << 10], 4, 0xA5);
    for s in specs() {
        let values = s.values(&pool);
        let m = s.build(&values);
        // The queue's threshold is THRESHOLD: the same layout as to_sga's.
        let sga = m.to_sga_with(THRESHOLD).unwrap();
        let expected = frame_of(3, s.id, 0, &sga.to_vec());
        let fused = wire_bytes(&pool, |tx| tx.send_object(hdr(s.id), &m).unwrap());
        let non_fused = wire_bytes(&pool, |tx| tx.send_sga(hdr(s.id), &sga).unwrap());
        let copied = wire_bytes(&pool, |tx| tx.send_bytes(hdr(s.id), &sga.to_vec()).unwrap());
        assert!(fused == expected, "send_object bytes differ for {}", s.id);
        assert!(non_fused == expected, "send_sga bytes differ for {}", s.id);
        assert!(copied == expected, "send_bytes bytes differ for {}", s.id);
    }
}

#[test]
fn more_entries_than_one_sendmsg_takes() {
    // 3 * MAX_IOV referenced values: flushes split the iovec list.
    let pool = pool(64 << 20);
    let s = Spec::new(9, 600, vec![THRESHOLD; 3 * MAX_IOV]);
    let values = s.values(&pool);
    let (mut a, mut b) = MemPipe::pair(16 << 20);
    let mut tx = TxQueue::new(pool.clone(), cfg());
    let mut rx = RxBuffer::new(pool.clone(), 4096, 16 << 20);
    tx.send_object(hdr(9), &s.build(&values)).unwrap();
    tx.send_object(hdr(10), &s.build(&values)).unwrap();
    let frames = pump(&mut tx, &mut a, &mut rx, &mut b, 64 << 20, 2, 100, || {});
    assert_eq!(frames.len(), 2);
    let m = Sample::decode_shared(&frames[0].payload, THRESHOLD).unwrap();
    s.check(&m);
    assert_eq!(frames[1].payload[..], frames[0].payload[..]);
    let st = tx.stats();
    assert!(st.syscalls >= 6, "{} iovecs need >= 6 calls", st.iovecs);
    assert!(st.iovecs as usize >= 2 * (3 * MAX_IOV + 1));
}

#[test]
fn too_large_is_refused_and_nothing_is_queued() {
    let pool = pool(32 << 20);
    let s = Spec::new(1, 8192, vec![]);
    let values = s.values(&pool);
    let m = s.build(&values);
    let mut tx = TxQueue::new(
        pool.clone(),
        TxConfig {
            max_frame: 4096,
            ..cfg()
        },
    );
    let e = tx.send_object(hdr(1), &m).unwrap_err();
    assert!(matches!(
        e,
        granola_net::SendError::TooLarge { max: 4096, .. }
    ));
    assert!(tx.send_sga(hdr(1), &m.to_sga().unwrap()).is_err());
    assert!(tx.send_bytes(hdr(1), &m.to_vec().unwrap()).is_err());
    assert!(tx.is_empty());
    assert_eq!(tx.queued_bytes(), 0);
    // The refused message holds no extra reference.
    drop(m);
    assert_eq!(values[0].ref_count(), 1);
}

#[test]
fn queued_replies_go_out_in_one_gathering_call() {
    let pool = pool(64 << 20);
    let (mut a, mut b) = MemPipe::pair(16 << 20);
    let mut tx = TxQueue::new(pool.clone(), cfg());
    let specs: Vec<Spec> = (0..40)
        .map(|i| Spec::new(i, 40 + i as usize * 50, vec![7]))
        .collect();
    for s in &specs {
        let values = s.values(&pool);
        tx.send_object(hdr(s.id), &s.build(&values)).unwrap();
    }
    assert_eq!(tx.flush(&mut a).unwrap(), granola_net::Flushed::All);
    // 40 replies, some with referenced data (< MAX_IOV iovecs): one call.
    assert_eq!(tx.stats().syscalls, 1);
    let mut rx = RxBuffer::new(pool.clone(), 4096, 16 << 20);
    let frames = pump(&mut tx, &mut a, &mut rx, &mut b, 1 << 20, 40, 10, || {});
    check_frames(&specs, &frames);
}

/// The batch `values` (prefetch, then the hybrid rule per value) puts the
/// same bytes on the wire as a loop of `value`, with the same split between
/// copied and referenced bytes, with prefetch on and off.
#[test]
fn values_batch_matches_value_one_by_one() {
    let pool = pool(64 << 20);
    let lens = [
        0,
        1,
        63,
        THRESHOLD - 1,
        THRESHOLD,
        64,
        5000,
        200,
        3 * THRESHOLD,
    ];
    let values: Vec<_> = lens
        .iter()
        .enumerate()
        .map(|(i, &n)| pool.alloc_copy(&pattern(i as u64, n)).unwrap())
        .collect();
    let expected: Vec<u8> = values.iter().flat_map(|v| v.iter().copied()).collect();
    let referenced: usize = lens.iter().filter(|&&n| n >= THRESHOLD).sum();
    for prefetch in [granola_net::Prefetch::Off, granola_net::Prefetch::Lines(2)] {
        let mut stats = Vec::new();
        for batch in [true, false] {
            let (mut a, mut b) = MemPipe::pair(1 << 20);
            let mut tx = TxQueue::new(pool.clone(), TxConfig { prefetch, ..cfg() });
            if batch {
                tx.values(&values).unwrap();
            } else {
                for v in &values {
                    tx.value(v).unwrap();
                }
            }
            assert_eq!(tx.flush(&mut a).unwrap(), granola_net::Flushed::All);
            let mut out = vec![0u8; b.available()];
            let n = granola_net::Datapath::recv(&mut b, &mut out).unwrap();
            assert_eq!(&out[..n], &expected[..], "batch={batch} {prefetch:?}");
            let g = tx.stats().gather;
            assert_eq!(g.bytes_referenced as usize, referenced);
            stats.push(tx.stats());
        }
        assert_eq!(stats[0], stats[1], "{prefetch:?}");
    }
}

#[test]
fn empty_reservations_do_not_stall_the_queue() {
    let pool = pool(16 << 20);
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut tx = TxQueue::new(pool.clone(), cfg());
    assert!(tx.reserve(0).unwrap().is_empty());
    tx.copy(b"").unwrap();
    tx.send_bytes(hdr(1), b"").unwrap();
    let v = pool.alloc_copy(&[5u8; 2000]).unwrap();
    tx.reference(&v.slice(..0));
    tx.value(&v).unwrap();
    assert!(tx.reserve(0).unwrap().is_empty());
    assert_eq!(tx.queued_bytes(), 12 + 2000);
    assert_eq!(tx.flush(&mut a).unwrap(), granola_net::Flushed::All);
    assert!(tx.is_empty());
    let mut out = vec![0u8; 4096];
    let n = granola_net::Datapath::recv(&mut b, &mut out).unwrap();
    assert_eq!(&out[..12], &frame_of(3, 1, 0, b"")[..]);
    assert_eq!(&out[12..n], &[5u8; 2000][..]);
}

/// An object the encoder refuses (over 4 GiB on the wire, made of one
/// 1 MiB value referenced 4100 times) leaves no half-written frame in the
/// stream, even though its head was merged into the previous frame's
/// copied segment.
#[test]
fn encode_failure_rolls_the_frame_back() {
    let pool = pool(64 << 20);
    let big = pool.alloc_copy(&pattern(5, 1 << 20)).unwrap();
    let huge = Sample {
        vals: vec![big.clone().into(); 4100],
        ..Default::default()
    };
    assert!(huge.encoded_len() > u32::MAX as usize);
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut tx = TxQueue::new(
        pool.clone(),
        TxConfig {
            max_frame: usize::MAX,
            // Room for the refused head in the same chunk: it is merged
            // into frame 1's segment before the encoder fails.
            chunk_size: 1 << 20,
            ..cfg()
        },
    );
    let s1 = Spec::new(1, 100, vec![]);
    let s2 = Spec::new(2, 2000, vec![10]);
    let v1 = s1.values(&pool);
    let v2 = s2.values(&pool);
    tx.send_object(hdr(1), &s1.build(&v1)).unwrap();
    let queued = tx.queued_bytes();
    let e = tx.send_object(hdr(9), &huge).unwrap_err();
    assert!(matches!(e, granola_net::SendError::Encode(_)), "{e:?}");
    assert_eq!(
        tx.queued_bytes(),
        queued,
        "nothing of the refused frame stays"
    );
    drop(huge);
    assert_eq!(big.ref_count(), 1, "its references are dropped");
    tx.send_object(hdr(2), &s2.build(&v2)).unwrap();
    let mut rx = RxBuffer::new(pool.clone(), 4096, 1 << 20);
    let frames = pump(&mut tx, &mut a, &mut rx, &mut b, 1 << 20, 2, 100, || {});
    check_frames(&[s1, s2], &frames);
}
