//! Pool, Buf and BufMut behaviour: recovery, counts, reuse only at zero,
//! concurrency. Runs under Miri too (small pools, fewer iterations).

use granola::{Buf, Pool, PoolConfig, MAX_SLOT_SIZE, SEGMENT_SIZE};
use std::sync::Arc;

fn pool(capacity: usize) -> Pool {
    Pool::new(PoolConfig {
        capacity,
        huge_pages: false,
    })
    .unwrap()
}

const ITERS: usize = if cfg!(miri) { 20 } else { 2000 };

#[test]
fn alloc_write_freeze_read() {
    let p = pool(4 * SEGMENT_SIZE);
    let mut w = p.alloc(100).unwrap();
    assert_eq!(w.capacity(), 128, "100 B rounds up to the 128 B class");
    w.extend_from_slice(b"abc");
    assert_eq!(w.as_slice(), b"abc");
    let b = w.freeze();
    assert_eq!(&b[..], b"abc");
    assert_eq!(b.ref_count(), 1);
    assert_eq!(p.stats().live_slots, 1);
    drop(b);
    assert_eq!(p.stats().live_slots, 0);
}

#[test]
fn recover_inside_and_outside() {
    let p = pool(4 * SEGMENT_SIZE);
    let b = p.alloc_copy(&[1u8; 1000]).unwrap();
    let r = p.recover(&b[10..20]).expect("slice inside a live slot");
    assert_eq!(r.len(), 10);
    assert!(r.same_slot(&b));
    assert_eq!(b.ref_count(), 2);
    let stack = [0u8; 64];
    assert!(p.recover(&stack).is_none(), "stack memory");
    let heap = vec![0u8; 4096];
    assert!(p.recover(&heap).is_none(), "heap memory");
    assert!(p.recover(&b[5..5]).is_none(), "empty slice");
    let other = pool(SEGMENT_SIZE * 2);
    assert!(other.recover(&b).is_none(), "another pool's memory");
    drop(r);
    assert_eq!(b.ref_count(), 1);
}

#[test]
fn recover_refuses_a_slot_held_by_a_writer() {
    let p = pool(2 * SEGMENT_SIZE);
    let mut w = p.alloc(64).unwrap();
    w.extend_from_slice(&[3u8; 64]);
    // Sharing this slot would let the writer change bytes a Buf can see.
    assert!(p.recover(w.as_slice()).is_none());
    let b = w.freeze();
    assert!(p.recover(&b).is_some());
}

#[test]
fn slot_reused_only_when_count_reaches_zero() {
    let p = pool(2 * SEGMENT_SIZE);
    let a = p.alloc_copy(b"first").unwrap();
    let addr = a.as_ptr().addr();
    let a2 = a.clone();
    drop(a);
    // a2 still holds the slot: a new allocation must not land on it.
    let c = p.alloc_copy(b"second").unwrap();
    assert_ne!(c.as_ptr().addr(), addr);
    assert_eq!(&a2[..], b"first");
    drop(a2);
    // Freed: LIFO reuse hands the same slot out next.
    let d = p.alloc_copy(b"third").unwrap();
    assert_eq!(d.as_ptr().addr(), addr);
    drop((c, d));
    assert_eq!(p.stats().live_slots, 0);
}

#[test]
fn slices_share_the_slot() {
    let p = pool(2 * SEGMENT_SIZE);
    let b = p.alloc_copy(b"hello world").unwrap();
    let s = b.slice(6..);
    assert_eq!(&s[..], b"world");
    assert_eq!(b.ref_count(), 2);
    assert!(b.try_slice(3..100).is_none());
    let (start, end) = (5, 3); // a reversed range from untrusted numbers
    assert!(b.try_slice(start..end).is_none());
    assert_eq!(&b.slice(..=4)[..], b"hello");
    drop(b);
    assert_eq!(&s[..], b"world", "the slice keeps the slot alive");
    assert_eq!(p.stats().live_slots, 1);
}

#[test]
fn every_size_class_and_large_objects() {
    let p = pool(if cfg!(miri) { 10 } else { 32 } * SEGMENT_SIZE);
    let mut size = 1;
    while size <= MAX_SLOT_SIZE {
        let w = p.alloc(size).unwrap();
        assert!(w.capacity() >= size && w.capacity() < 2 * size.max(64));
        drop(w);
        size *= if cfg!(miri) { 16 } else { 2 };
    }
    // Large path: a run of whole segments, recoverable from its middle.
    let big = 3 * SEGMENT_SIZE + 5;
    let mut w = p.alloc(big).unwrap();
    assert_eq!(w.capacity(), 4 * SEGMENT_SIZE);
    w.set_len(big);
    w.as_mut_slice()[big - 1] = 0xAB;
    let b = w.freeze();
    let tail = p.recover(&b[big - 10..]).unwrap();
    assert_eq!(tail[9], 0xAB);
    assert!(tail.same_slot(&b));
    let segs = p.stats().segments_in_use;
    drop((b, tail));
    assert_eq!(p.stats().segments_in_use, segs - 4, "large runs go back");
    // ...and can be handed out again.
    assert!(p.alloc(big).is_some());
}

#[test]
fn exhaustion_returns_none() {
    let p = pool(2 * SEGMENT_SIZE);
    let a = p.alloc(SEGMENT_SIZE).unwrap(); // large path: one whole segment
    let b = p.alloc(MAX_SLOT_SIZE).unwrap(); // carves the other into 2 slots
    assert!(p.alloc(SEGMENT_SIZE).is_none(), "no segment left");
    let c = p.alloc(MAX_SLOT_SIZE).unwrap();
    assert!(p.alloc(MAX_SLOT_SIZE).is_none(), "both 1 MiB slots taken");
    assert!(p.alloc(64).is_none(), "no segment for a new class");
    drop(c);
    assert!(p.alloc(MAX_SLOT_SIZE).is_some(), "freed slot is reusable");
    drop((a, b));
}

#[test]
fn pool_outlives_its_handle_while_bufs_live() {
    let b: Buf;
    {
        let p = pool(2 * SEGMENT_SIZE);
        b = p.alloc_copy(b"kept alive by the slot").unwrap();
    }
    assert_eq!(&b[..], b"kept alive by the slot");
}

#[test]
fn bufmut_write_trait_and_overflow() {
    use std::io::Write;
    let p = pool(2 * SEGMENT_SIZE);
    let mut w = p.alloc(64).unwrap();
    assert_eq!(w.write(&[7u8; 100]).unwrap(), 64);
    assert!(w.try_extend_from_slice(b"x").is_err());
    assert_eq!(w.remaining(), 0);
    let full = w.as_full_mut_slice().len();
    assert_eq!(full, 64);
}

#[test]
fn concurrent_clone_drop_and_recover() {
    let p = pool(8 * SEGMENT_SIZE);
    let bufs: Arc<Vec<Buf>> = Arc::new(
        (0..16)
            .map(|i| p.alloc_copy(&vec![i as u8; 700]).unwrap())
            .collect(),
    );
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let bufs = Arc::clone(&bufs);
            let p = p.clone();
            std::thread::spawn(move || {
                for i in 0..ITERS {
                    let b = &bufs[(i + t) % bufs.len()];
                    let c = b.clone();
                    let r = p.recover(&c[1..]).unwrap();
                    assert!(r.iter().all(|&x| x == c[0]));
                    // Churn other slots of the same class meanwhile.
                    let tmp = p.alloc_copy(&[0xEEu8; 700]).unwrap();
                    drop((c, r, tmp));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(b.ref_count(), 1);
        assert!(
            b.iter().all(|&x| x == i as u8),
            "no slot was recycled under a live Buf"
        );
    }
}

#[test]
fn bufs_cross_threads_and_free_there() {
    let p = pool(4 * SEGMENT_SIZE);
    let b = p.alloc_copy(&[5u8; 4096]).unwrap();
    let clones: Vec<Buf> = (0..8).map(|_| b.clone()).collect();
    let h = std::thread::spawn(move || clones.into_iter().map(|c| c[100] as usize).sum::<usize>());
    assert_eq!(h.join().unwrap(), 40);
    assert_eq!(b.ref_count(), 1);
    drop(b);
    assert_eq!(p.stats().live_slots, 0);
}
