//! MSG_ZEROCOPY over TCP and UDP: bytes intact at the peer, and referenced
//! slots released only when the kernel's completion arrives. On loopback
//! the kernel copies and says so; the tests print what it reported.

use crate::common::*;
use granola::{Buf, Decode};
use granola_net::datapath::Datapath;
use granola_net::udp::{self, UdpRx, UdpTx, MAX_DATAGRAM};
use granola_net::{Flushed, FrameHeader, RxBuffer, TcpDatapath, TxConfig, TxQueue};
use granola_tests::sample::Sample;
use std::io;

fn cfg() -> TxConfig {
    TxConfig {
        copy_threshold: THRESHOLD,
        zerocopy: true,
        ..TxConfig::default()
    }
}

#[test]
fn tcp_zerocopy_releases_on_completion() {
    let pool = pool(512 << 20);
    let baseline = pool.stats();
    let (c, s) = tcp_pair();
    let mut a = TcpDatapath::new(c).unwrap();
    let mut b = TcpDatapath::new(s).unwrap();
    if let Err(e) = a.enable_zerocopy() {
        println!("skipped: MSG_ZEROCOPY unsupported: {e}");
        return;
    }
    let mut tx = TxQueue::new(pool.clone(), cfg());
    let specs: Vec<Spec> = (0..40)
        .map(|i| Spec::new(i, 4096 + i as usize * 1000, vec![64 << 10, 30]))
        .collect();
    let expected: Vec<Vec<u8>> = specs.iter().map(|s| s.frame_bytes(&pool, 3)).collect();
    // Clones of half the referenced values, kept to observe their counts;
    // the other half's only handles are dropped at once.
    let mut kept: Vec<Buf> = Vec::new();
    {
        for (i, s) in specs.iter().enumerate() {
            let values = s.values(&pool);
            tx.send_object(hdr(s.id), &s.build(&values)).unwrap();
            if i % 2 == 0 {
                kept.extend(values.into_iter().filter(|v| v.len() >= THRESHOLD));
            }
        }
    }
    churn(&pool, &[4096, 16 << 10, 40 << 10, 64 << 10], 2, 0x3C);
    // First flush: nothing can have been released yet (releases happen
    // only inside poll_completions, on this thread, after a send).
    let mut rx = RxBuffer::new(pool.clone(), 64 << 10, 16 << 20);
    let mut frames = Vec::new();
    let _ = tx.flush(&mut a).unwrap();
    assert!(tx.zerocopy_in_flight() > 0);
    let first_sent = tx.stats().bytes_sent;
    assert!(first_sent > 0);
    // Every kept value is still referenced by the queue or the in-flight
    // table (ours + theirs): nothing is released before a completion.
    assert!(kept.iter().all(|k| k.ref_count() > 1), "released too early");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let flushed = tx.flush(&mut a).unwrap();
        loop {
            match rx.read_from(&mut b) {
                Ok(st) => {
                    assert!(!st.eof);
                    rx.take_frames(16 << 20, &mut frames).unwrap();
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("read: {e}"),
            }
        }
        churn(&pool, &[4096, 64 << 10], 1, 0xC3);
        if flushed == Flushed::All && frames.len() == specs.len() {
            break;
        }
        assert!(std::time::Instant::now() < end, "transfer timed out");
    }
    for ((f, s), want) in frames.iter().zip(&specs).zip(&expected) {
        assert!(f.payload[..] == want[12..], "bytes of {}", s.id);
        s.check(&Sample::decode_shared(&f.payload, THRESHOLD).unwrap());
    }
    // Completions: bounded wait, 1 ms polls.
    let done = wait_for(5, || {
        tx.poll_completions(&mut a).unwrap();
        tx.zerocopy_in_flight() == 0
    });
    assert!(
        done,
        "{} zero-copy sends never completed",
        tx.zerocopy_in_flight()
    );
    for k in &kept {
        assert_eq!(k.ref_count(), 1, "released after completion");
    }
    let st = tx.stats();
    println!(
        "tcp MSG_ZEROCOPY: {} sends, {} completions, {} flagged copied by the kernel",
        st.syscalls, st.zc_completed, st.zc_copied
    );
    assert_eq!(st.zc_completed, st.syscalls, "one completion per send");
    drop((kept, frames, rx, tx));
    assert_no_leak(&pool, baseline);
}

#[test]
fn udp_zerocopy_releases_on_completion() {
    let pool = pool(256 << 20);
    let baseline = pool.stats();
    let dst = udp::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    socket2::SockRef::from(&dst)
        .set_recv_buffer_size(4 << 20)
        .unwrap();
    let src = udp::bind("127.0.0.1:0".parse().unwrap(), false).unwrap();
    if let Err(e) = udp::enable_zerocopy(&src) {
        println!("skipped: MSG_ZEROCOPY unsupported: {e}");
        return;
    }
    let to = dst.local_addr().unwrap();
    let mut tx = UdpTx::new(pool.clone(), cfg(), MAX_DATAGRAM);
    let specs: Vec<Spec> = (0..50)
        .map(|i| Spec::new(i, 8000, vec![2000, 10]))
        .collect();
    let mut kept = Vec::new();
    {
        for s in &specs {
            let values = s.values(&pool);
            tx.send_object(to, hdr(s.id), &s.build(&values)).unwrap();
            kept.push(values[0].clone());
        }
    }
    churn(&pool, &[2000, 8000], 3, 0x5A);
    assert_eq!(tx.flush(&src).unwrap(), Flushed::All);
    assert_eq!(
        tx.zerocopy_in_flight(),
        50,
        "one in-flight entry per datagram"
    );
    assert!(kept.iter().all(|k| k.ref_count() == 2));
    let mut rx = UdpRx::new(pool.clone(), 32, MAX_DATAGRAM + 1);
    let mut got = Vec::new();
    assert!(wait_for(5, || {
        let _ = rx.recv_batch(&dst, &mut got);
        got.len() >= 50
    }));
    for (d, s) in got.iter().zip(&specs) {
        let h = FrameHeader::read(&d.data).unwrap();
        assert_eq!(h.id, s.id);
        s.check(&Sample::decode(&d.data[12..]).unwrap());
    }
    let done = wait_for(5, || {
        tx.poll_completions(&src).unwrap();
        // Each datagram's value is released with its own completion.
        let released = kept.iter().filter(|k| k.ref_count() == 1).count();
        assert_eq!(released, 50 - tx.zerocopy_in_flight());
        tx.zerocopy_in_flight() == 0
    });
    assert!(
        done,
        "{} zero-copy datagrams never completed",
        tx.zerocopy_in_flight()
    );
    let st = tx.stats();
    println!(
        "udp MSG_ZEROCOPY: {} datagrams, {} completions, {} flagged copied by the kernel",
        specs.len(),
        st.zc_completed,
        st.zc_copied
    );
    assert_eq!(st.zc_completed, 50);
    drop((kept, got, rx, tx));
    assert_no_leak(&pool, baseline);
}

/// Thousands of small zero-copy sends, each flushed on its own: the
/// kernel's per-socket notification and option-memory limits must not
/// turn into errors (completions are collected as the queue goes).
#[test]
fn tcp_zerocopy_many_small_flushes() {
    let pool = pool(256 << 20);
    let baseline = pool.stats();
    let (c, s) = tcp_pair();
    let mut a = TcpDatapath::new(c).unwrap();
    if let Err(e) = a.enable_zerocopy() {
        println!("skipped: MSG_ZEROCOPY unsupported: {e}");
        return;
    }
    let n = 3000u32;
    let spec = Spec::new(1, 2048, vec![]);
    let frame = spec.frame_bytes(&pool, 3);
    let total = frame.len() * n as usize;
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut s = s;
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        let mut got = vec![0u8; total];
        s.read_exact(&mut got).map(|_| got)
    });
    let mut tx = TxQueue::new(pool.clone(), cfg());
    let values = spec.values(&pool);
    {
        let m = spec.build(&values);
        for _ in 0..n {
            tx.send_object(hdr(1), &m).unwrap();
            loop {
                match tx.flush(&mut a) {
                    Ok(Flushed::All) => break,
                    Ok(Flushed::Blocked) => std::thread::yield_now(),
                    Err(e) => panic!("flush failed after {} sends: {e}", tx.stats().syscalls),
                }
            }
        }
    }
    let got = reader.join().unwrap().expect("reader");
    assert!(got.chunks(frame.len()).all(|c| c == frame));
    assert!(wait_for(5, || {
        tx.poll_completions(&mut a).unwrap();
        tx.zerocopy_in_flight() == 0
    }));
    assert_eq!(values[0].ref_count(), 1);
    let st = tx.stats();
    println!(
        "tcp MSG_ZEROCOPY small sends: {} sends, {} completions, {} copied",
        st.syscalls, st.zc_completed, st.zc_copied
    );
    drop((values, tx));
    assert_no_leak(&pool, baseline);
}

/// Dropping a queue before its zero-copy sends completed must not hand
/// the pages back to the pool: the references are leaked instead.
#[test]
fn dropping_a_queue_with_sends_in_flight_leaks_instead_of_reusing() {
    let pool = pool(64 << 20);
    let (c, s) = tcp_pair();
    let mut a = TcpDatapath::new(c).unwrap();
    if let Err(e) = a.enable_zerocopy() {
        println!("skipped: MSG_ZEROCOPY unsupported: {e}");
        return;
    }
    let v = pool.alloc_copy(&pattern(3, 8192)).unwrap();
    let mut tx = TxQueue::new(pool.clone(), cfg());
    tx.send_bytes(hdr(1), b"x").unwrap();
    tx.reference(&v);
    assert_eq!(tx.flush(&mut a).unwrap(), Flushed::All);
    // No poll has run: the send is in flight, whatever the kernel did.
    assert_eq!(tx.zerocopy_in_flight(), 1);
    assert_eq!(v.ref_count(), 2);
    drop(tx);
    assert_eq!(v.ref_count(), 2, "in-flight reference leaked, not released");
    drop(s);
}
