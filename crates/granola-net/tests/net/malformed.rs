//! Malformed input at the receive buffer: no allocation of an
//! attacker-chosen size, no growth beyond what actually arrived.

use crate::common::*;
use granola::Decode;
use granola_net::datapath::Datapath;
use granola_net::mem::{FaultInjector, Faults, MemPipe};
use granola_net::rx::RxError;
use granola_net::{FrameHeader, RxBuffer};
use granola_tests::sample::Sample;
use proptest::prelude::*;
use std::io::{self, IoSlice};

fn send_all(p: &mut MemPipe, bytes: &[u8]) {
    assert_eq!(p.send_gather(&[IoSlice::new(bytes)]).unwrap(), bytes.len());
}

fn header(len: u32) -> [u8; 12] {
    FrameHeader {
        len,
        kind: 1,
        flags: 0,
        id: 9,
    }
    .to_bytes()
}

/// Reads until WouldBlock; returns (bytes, eof).
fn read_all<D: Datapath>(rx: &mut RxBuffer, dp: &mut D) -> Result<(usize, bool), io::Error> {
    let mut n = 0;
    loop {
        match rx.read_from(dp) {
            Ok(st) if st.eof => return Ok((n, true)),
            Ok(st) => n += st.bytes,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok((n, false)),
            Err(e) => return Err(e),
        }
    }
}

#[test]
fn frame_beyond_cap_is_refused_without_allocating_it() {
    let pool = pool(64 << 20);
    let baseline = pool.stats();
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut rx = RxBuffer::new(pool.clone(), 4096, 64 << 20);
    // A good frame first, then one announcing 3 GiB.
    send_all(&mut a, &header(3));
    send_all(&mut a, b"abc");
    send_all(&mut a, &header(3 << 30));
    send_all(&mut a, &[0u8; 100]);
    read_all(&mut rx, &mut b).unwrap();
    let mut frames = Vec::new();
    let e = rx.take_frames(64 << 20, &mut frames).unwrap_err();
    assert_eq!(
        e,
        RxError::FrameTooLarge {
            len: 3 << 30,
            max: 64 << 20
        }
    );
    // Even a cap of 1 byte less than the announced size is enforced.
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut rx2 = RxBuffer::new(pool.clone(), 4096, 64 << 20);
    send_all(&mut a, &header(1001));
    read_all(&mut rx2, &mut b).unwrap();
    assert!(matches!(
        rx2.take_frames(1000, &mut frames),
        Err(RxError::FrameTooLarge {
            len: 1001,
            max: 1000
        })
    ));
    assert!(pool.stats().live_bytes - baseline.live_bytes <= 64 << 10);
    drop(rx);
    drop(rx2);
    assert_no_leak(&pool, baseline);
}

#[test]
fn truncated_header_then_eof() {
    let pool = pool(16 << 20);
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut rx = RxBuffer::new(pool.clone(), 4096, 1 << 20);
    send_all(&mut a, &header(10)[..7]);
    a.close();
    let (n, eof) = read_all(&mut rx, &mut b).unwrap();
    assert_eq!((n, eof), (7, true));
    let mut frames = Vec::new();
    assert_eq!(rx.take_frames(1 << 20, &mut frames).unwrap(), 0);
    // The leftover is visible, so a session can report the truncation.
    assert_eq!(rx.data(), &header(10)[..7]);

    // Truncated payload then EOF: same.
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut rx = RxBuffer::new(pool.clone(), 4096, 1 << 20);
    send_all(&mut a, &header(10));
    send_all(&mut a, b"12345");
    drop(a);
    assert_eq!(read_all(&mut rx, &mut b).unwrap(), (17, true));
    assert_eq!(rx.take_frames(1 << 20, &mut frames).unwrap(), 0);
    assert_eq!(rx.data().len(), 17);
}

#[test]
fn trickle_under_a_huge_header_grows_by_what_arrived() {
    let pool = pool(256 << 20);
    let baseline = pool.stats();
    let (a, b) = MemPipe::pair(1 << 20);
    let mut a = a;
    let mut b = FaultInjector::new(
        b,
        Faults {
            max_recv: Some(1000),
            ..Faults::default()
        },
    );
    let chunk = 4096;
    let mut rx = RxBuffer::new(pool.clone(), chunk, 65 << 20);
    send_all(&mut a, &header(64 << 20));
    let mut arrived = 12;
    let mut frames = Vec::new();
    let piece = vec![7u8; 3000];
    while arrived < (2 << 20) {
        send_all(&mut a, &piece);
        arrived += piece.len();
        read_all(&mut rx, &mut b).unwrap();
        assert_eq!(rx.take_frames(64 << 20, &mut frames).unwrap(), 0);
        assert_eq!(rx.data().len(), arrived);
        let used = pool.stats().live_bytes - baseline.live_bytes;
        assert!(
            used <= 2 * arrived + chunk,
            "{used} bytes of buffer for {arrived} bytes received"
        );
    }
    drop(rx);
    assert_no_leak(&pool, baseline);
}

/// A peer's next large request grows the buffer from its first chunk to
/// the size its last one needed at once, instead of doubling from 16 KiB
/// again with a copy each time; a connection gone idle forgets it.
#[test]
fn the_next_large_request_grows_the_buffer_once() {
    let pool = pool(16 << 20);
    let baseline = pool.stats();
    let (mut a, mut b) = MemPipe::pair(4 << 20);
    let mut rx = RxBuffer::new(pool.clone(), 4096, 4 << 20);
    let payload = vec![3u8; 1 << 20];
    let total = 12 + payload.len();
    let mut frames = Vec::new();
    // Sends one request and reads it as far as two reads take it.
    let mut two_reads = |rx: &mut RxBuffer| {
        send_all(&mut a, &header(payload.len() as u32));
        send_all(&mut a, &payload);
        rx.read_from(&mut b).unwrap();
        rx.read_from(&mut b).unwrap();
        let got = rx.data().len();
        read_all(rx, &mut b).unwrap();
        assert_eq!(rx.take_frames(4 << 20, &mut frames).unwrap(), 1);
        assert!(frames.pop().unwrap().payload == payload[..]);
        got
    };
    assert_eq!(two_reads(&mut rx), 8192, "the first doubles from 4 KiB");
    assert_eq!(two_reads(&mut rx), total, "the second grows once");
    rx.release_idle();
    assert_eq!(two_reads(&mut rx), 8192, "idle: forgotten");
    drop(rx);
    assert_no_leak(&pool, baseline);
}

#[test]
fn unfinished_input_beyond_the_buffer_cap_is_an_error() {
    let pool = pool(16 << 20);
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut rx = RxBuffer::new(pool.clone(), 1024, 8192);
    send_all(&mut a, &header(60_000));
    send_all(&mut a, &[1u8; 20_000]);
    let e = read_all(&mut rx, &mut b).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(rx.data().len() <= 8192 + 1024);
}

#[test]
fn garbage_with_a_huge_length_prefix() {
    let pool = pool(16 << 20);
    let (mut a, mut b) = MemPipe::pair(1 << 20);
    let mut rx = RxBuffer::new(pool.clone(), 4096, 1 << 20);
    send_all(&mut a, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    read_all(&mut rx, &mut b).unwrap();
    let mut frames = Vec::new();
    // "GET " as a little-endian length is ~542 MB.
    assert!(matches!(
        rx.take_frames(64 << 20, &mut frames),
        Err(RxError::FrameTooLarge { .. })
    ));
    assert!(frames.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Random bytes (optionally behind a plausible length prefix): the
    /// splitter and the decoder return errors, never panic, and never hand
    /// out a frame longer than the cap.
    #[test]
    fn garbage_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..3000),
        prefix in prop::option::of(0u32..2000),
        max_recv in 1usize..600,
    ) {
        let pool = pool(16 << 20);
        let (mut a, b) = MemPipe::pair(1 << 20);
        let mut b = FaultInjector::new(b, Faults { max_recv: Some(max_recv), ..Faults::default() });
        let mut rx = RxBuffer::new(pool.clone(), 256, 1 << 20);
        if let Some(len) = prefix {
            send_all(&mut a, &header(len));
        }
        send_all(&mut a, &bytes);
        a.close();
        let mut frames = Vec::new();
        loop {
            match rx.read_from(&mut b) {
                Ok(st) if st.eof => break,
                Ok(_) => {}
                Err(e) => panic!("read: {e}"),
            }
            if rx.take_frames(2000, &mut frames).is_err() {
                break;
            }
        }
        for f in &frames {
            prop_assert!(f.payload.len() <= 2000);
            prop_assert_eq!(f.payload.len(), f.header.len as usize);
            let _ = Sample::decode_shared(&f.payload, THRESHOLD);
        }
    }
}
