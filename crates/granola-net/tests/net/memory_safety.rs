//! The key test: a value's memory is never reused while a send
//! still references it. The application drops its handles right after
//! send_object, the pool is churned hard (freed slots get refilled with a
//! different pattern) while the queue drains slowly, and every byte the peer
//! receives is checked. Afterwards no slot is leaked.

use crate::common::*;
use granola::{Decode, Message};
use granola_net::mem::{FaultInjector, Faults, MemPipe};
use granola_net::{Flushed, RxBuffer, TcpDatapath, TxConfig, TxQueue};
use granola_tests::sample::Sample;
use std::io::Read;

/// Sizes the pool is churned with: every slot class the values, the TX
/// chunks and the receive buffers use.
const CHURN: &[usize] = &[
    64,
    128,
    THRESHOLD,
    700,
    1024,
    4096,
    5000,
    16 << 10,
    64 << 10,
    100 << 10,
    256 << 10,
    1 << 20,
    3 << 20,
];

fn specs(n: u32) -> Vec<Spec> {
    (0..n)
        .map(|i| {
            let big = match i % 4 {
                0 => 700,
                1 => 5000,
                2 => 100 << 10,
                _ => 1 << 20,
            };
            Spec::new(100 + i, big, vec![THRESHOLD, 10, big / 2 + 1, 4096])
        })
        .collect()
}

#[test]
fn handles_dropped_pool_churned_during_slow_partial_flushes() {
    let pool = pool(512 << 20);
    let baseline = pool.stats();
    let specs = specs(24);
    let expected: Vec<Vec<u8>> = specs.iter().map(|s| s.frame_bytes(&pool, 3)).collect();
    assert_no_leak(&pool, baseline);

    let (a, b) = MemPipe::pair(1 << 20);
    let mut a = FaultInjector::new(
        a,
        Faults {
            max_send: Some(3001),
            send_would_block_every: Some(3),
            ..Faults::default()
        },
    );
    let mut b = FaultInjector::new(
        b,
        Faults {
            max_recv: Some(7777),
            recv_would_block_every: Some(4),
            ..Faults::default()
        },
    );
    let mut tx = TxQueue::new(
        pool.clone(),
        TxConfig {
            copy_threshold: THRESHOLD,
            chunk_size: 4096,
            ..TxConfig::default()
        },
    );
    {
        for s in &specs {
            // The application's only handles: dropped (with the message)
            // as soon as send_object returns.
            let values = s.values(&pool);
            let m = s.build(&values);
            tx.send_object(hdr(s.id), &m).unwrap();
            drop(m);
            drop(values);
            // Overwrite whatever was freed before anything is flushed.
            churn(&pool, CHURN, 2, 0xEE);
        }
    }
    assert!(tx.stats().gather.entries_referenced >= specs.len() as u64 * 3);
    let mut rx = RxBuffer::new(pool.clone(), 4096, 8 << 20);
    let mut round = 0u32;
    let frames = pump(
        &mut tx,
        &mut a,
        &mut rx,
        &mut b,
        64 << 20,
        specs.len(),
        200_000,
        || {
            round += 1;
            // Aggressive reuse while the queue drains.
            if round % 16 == 0 {
                churn(&pool, CHURN, 1, round as u8);
            }
        },
    );
    assert!(
        tx.stats().syscalls > 100,
        "the queue drained in many partial flushes"
    );
    for ((s, f), want) in specs.iter().zip(&frames).zip(&expected) {
        assert_eq!(f.header.id, s.id);
        assert!(f.payload[..] == want[12..], "payload bytes of {}", s.id);
        s.check(&Sample::decode_shared(&f.payload, THRESHOLD).unwrap());
    }
    drop(frames);
    drop(rx);
    drop(tx);
    assert_no_leak(&pool, baseline);
}

/// Real TCP with a receiver that starts late and reads slowly through a
/// small receive buffer: short writes land inside iovecs of 64 KiB–8 MiB.
#[test]
fn handles_dropped_pool_churned_tcp_slow_reader() {
    let pool = pool(1 << 30);
    let baseline = pool.stats();
    let sizes = [64 << 10, 1 << 20, 8 << 20, 300 << 10, 3 << 20, 64 << 10];
    let specs: Vec<Spec> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| Spec::new(200 + i as u32, n, vec![n / 3 + 1, 5]))
        .collect();
    let expected: Vec<Vec<u8>> = specs.iter().map(|s| s.frame_bytes(&pool, 3)).collect();

    let (c, s) = tcp_pair();
    let sock = socket2::SockRef::from(&s);
    sock.set_recv_buffer_size(16 << 10).unwrap();
    socket2::SockRef::from(&c)
        .set_send_buffer_size(32 << 10)
        .unwrap();
    let total: usize = expected.iter().map(Vec::len).sum();
    let reader = std::thread::spawn(move || {
        let mut s = s;
        // Starts late, then reads in small pieces.
        std::thread::sleep(std::time::Duration::from_millis(50));
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        let mut got = Vec::with_capacity(total);
        let mut piece = vec![0u8; 50_000];
        while got.len() < total {
            let n = s.read(&mut piece).expect("read");
            assert!(n > 0, "early EOF after {} bytes", got.len());
            got.extend_from_slice(&piece[..n]);
        }
        got
    });

    let mut dp = TcpDatapath::new(c).unwrap();
    let mut tx = TxQueue::new(
        pool.clone(),
        TxConfig {
            copy_threshold: THRESHOLD,
            ..TxConfig::default()
        },
    );
    {
        for s in &specs {
            let values = s.values(&pool);
            tx.send_object(hdr(s.id), &s.build(&values)).unwrap();
        }
    }
    churn(&pool, &sizes, 2, 0x11);
    let mut blocked = 0u64;
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut i = 0u8;
    loop {
        match tx.flush(&mut dp).unwrap() {
            Flushed::All => break,
            Flushed::Blocked => {
                blocked += 1;
                i = i.wrapping_add(1);
                churn(&pool, &sizes, 1, i);
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        assert!(std::time::Instant::now() < end, "flush timed out");
    }
    assert!(blocked > 0, "the slow reader forced short writes");
    let got = reader.join().unwrap();
    let want: Vec<u8> = expected.concat();
    assert_eq!(got.len(), want.len());
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
        panic!("byte {at} of {} differs on the wire", want.len());
    }
    drop(tx);
    assert_no_leak(&pool, baseline);
}

/// Replacing a message's referenced field after send_object (the handle
/// the application would overwrite) does not change what goes out.
#[test]
fn replacing_fields_after_send_does_not_change_the_wire() {
    let pool = pool(64 << 20);
    let s = Spec::new(7, 4096, vec![2048]);
    let want = s.frame_bytes(&pool, 3);
    let values = s.values(&pool);
    let mut m = s.build(&values);
    drop(values);
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut tx = TxQueue::new(
        pool.clone(),
        TxConfig {
            copy_threshold: THRESHOLD,
            ..TxConfig::default()
        },
    );
    tx.send_object(hdr(7), &m).unwrap();
    // Replace the fields: the old values' last app reference goes away.
    let other = pool.alloc_copy(&[0x42; 4096]).unwrap();
    m.data = other.clone().into();
    m.vals = vec![other.into()];
    churn(&pool, &[2048, 4096], 3, 0x99);
    let mut out = vec![0u8; want.len()];
    assert_eq!(tx.flush(&mut a).unwrap(), Flushed::All);
    assert_eq!(
        granola_net::Datapath::recv(&mut b, &mut out).unwrap(),
        want.len()
    );
    assert!(out == want);
    assert_ne!(m.to_vec().unwrap(), want[12..]);
}
