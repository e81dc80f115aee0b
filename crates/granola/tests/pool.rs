//! Pool, Buf and BufMut behaviour: recovery, counts, reuse only at zero,
//! concurrency. Runs under Miri too (small pools, fewer iterations).

use granola::{Buf, Pool, PoolConfig, MAX_SLOT_SIZE, SEGMENT_SIZE};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The segment of pool `p` that holds `x`.
fn segment_of(p: &Pool, x: &Buf) -> u32 {
    let (base, _) = p.region();
    ((x.as_ptr().addr() - base.as_ptr().addr()) / SEGMENT_SIZE) as u32
}

fn pool(capacity: usize) -> Pool {
    Pool::new(PoolConfig {
        capacity,
        huge_pages: false,
        budget: None,
    })
    .unwrap()
}

const ITERS: usize = if cfg!(miri) { 20 } else { 2000 };

#[test]
fn alloc_write_freeze_read() {
    let p = pool(4 * SEGMENT_SIZE);
    let mut w = p.alloc(100).unwrap();
    assert_eq!(w.capacity(), 112, "100 B rounds up to the 112 B class");
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
    // Large path: a run of segments, its length rounded to pages,
    // recoverable from its middle.
    let big = 3 * SEGMENT_SIZE + 5;
    let mut w = p.alloc(big).unwrap();
    assert_eq!(w.capacity(), 3 * SEGMENT_SIZE + 4096);
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

#[test]
fn fine_size_classes() {
    let p = pool(16 * SEGMENT_SIZE);
    for (size, slot) in [
        (1, 64),
        (64, 64),
        (65, 80),
        (100, 112),
        (148, 160),
        (161, 192),
        (200, 224),
        (257, 320),
        (1000, 1024),
        (1025, 1280),
    ] {
        let w = p.alloc(size).unwrap();
        assert_eq!(w.capacity(), slot, "{size} B");
        assert_eq!(Pool::slot_size_for(size), slot);
        let b = w.freeze();
        assert_eq!(p.slot_size(&b), slot);
    }
    // Slots of a non-power-of-two class are carved back to back, and
    // recover finds the right one from any byte of it.
    let bufs: Vec<Buf> = (0..50u8)
        .map(|i| p.alloc_copy(&[i; 150]).unwrap())
        .collect();
    for pair in bufs.windows(2) {
        assert_eq!(pair[1].as_ptr().addr() - pair[0].as_ptr().addr(), 160);
    }
    for (i, b) in bufs.iter().enumerate() {
        for at in [0, 1, 79, 149] {
            let r = p.recover(&b[at..at + 1]).unwrap();
            assert!(r.same_slot(b));
            assert_eq!(r[0], i as u8);
        }
    }
}

#[test]
fn handle_round_trip() {
    let p = pool(2 * SEGMENT_SIZE);
    let b = p.alloc_copy(b"indexed item").unwrap();
    let keep = b.clone();
    let h = p.into_handle(b).unwrap();
    assert_eq!(keep.ref_count(), 2, "the handle owns one reference");
    // A slot has at most one raw handle.
    let again = p.into_handle(keep.clone()).unwrap_err();
    assert_eq!(keep.ref_count(), 3);
    drop(again);
    let whole = p.from_handle(h).unwrap();
    assert_eq!(whole.len(), 64, "the whole slot, not the old view");
    assert_eq!(&whole[..12], b"indexed item");
    assert!(whole.same_slot(&keep));
    assert!(p.from_handle(h).is_none(), "the reference was taken back");
    assert!(!p.release_handle(h), "nothing left to release");
    assert_eq!(keep.ref_count(), 2);
    // The slot may get a new handle now.
    let h2 = p.into_handle(whole).unwrap();
    assert_eq!(h2, h);
    assert!(p.release_handle(h2));
    assert!(!p.release_handle(h2), "released once only");
    assert_eq!(keep.ref_count(), 1);
    drop(keep);
    assert_eq!(p.stats().live_slots, 0);
}

#[test]
fn a_slot_held_by_its_handle_and_one_buf_is_rewritten_in_place() {
    let p = pool(2 * SEGMENT_SIZE);
    let h = p.into_handle(p.alloc_copy(b"old value").unwrap()).unwrap();
    let mut b = p.try_acquire(h).unwrap();
    assert!(p.rewrite_in_place(&mut b, Some(7), |bytes| {
        assert_eq!(bytes.len(), 64, "the whole slot");
        bytes[..9].copy_from_slice(b"new value");
    }));
    assert_eq!(&b[..9], b"new value");
    assert_eq!(b.ref_count(), 2, "the handle's and ours, as before");
    assert_eq!(b.slot_word().load(std::sync::atomic::Ordering::Relaxed), 7);
    // Without a word, the slot's word stays.
    assert!(p.rewrite_in_place(&mut b, None, |bytes| bytes[0] = b'N'));
    assert_eq!(b.slot_word().load(std::sync::atomic::Ordering::Relaxed), 7);
    let reader = p.try_acquire(h).expect("acquirable again");
    assert_eq!(&reader[..9], b"New value");
    assert_eq!(p.stats().live_slots, 1, "no slot was allocated");
    drop((b, reader));
    assert!(p.release_handle(h));
    assert_eq!(p.stats().live_slots, 0);
}

#[test]
fn a_slot_anyone_else_can_read_is_not_rewritten() {
    let p = pool(2 * SEGMENT_SIZE);
    let never = |_: &mut [u8]| panic!("must not be called");
    // Another Buf (a reply being sent) holds the slot.
    let h = p.into_handle(p.alloc_copy(b"sent").unwrap()).unwrap();
    let mut b = p.try_acquire(h).unwrap();
    let in_flight = b.clone();
    assert!(!p.rewrite_in_place(&mut b, None, never));
    assert_eq!(&in_flight[..4], b"sent");
    drop(in_flight);
    // A view of part of the slot.
    let mut part = b.slice(..4);
    assert!(!p.rewrite_in_place(&mut part, None, never));
    drop(part);
    assert!(p.rewrite_in_place(&mut b, Some(7), |bytes| bytes[0] = b'S'));
    assert_eq!(&b[..4], b"Sent");
    // No handle: the slot may be shared in ways the count cannot show.
    let mut lone = p.alloc_copy(b"lone").unwrap();
    assert!(!p.rewrite_in_place(&mut lone, None, never));
    // Another pool's buffer.
    let q = pool(2 * SEGMENT_SIZE);
    let hq = q.into_handle(q.alloc_copy(b"theirs").unwrap()).unwrap();
    let mut theirs = q.try_acquire(hq).unwrap();
    assert!(!p.rewrite_in_place(&mut theirs, None, never));
    drop((b, lone, theirs));
    assert!(p.release_handle(h));
    assert!(q.release_handle(hq));
}

#[test]
fn a_slot_being_rewritten_cannot_be_acquired() {
    let p = pool(2 * SEGMENT_SIZE);
    let h = p.into_handle(p.alloc_copy(b"x").unwrap()).unwrap();
    let mut b = p.try_acquire(h).unwrap();
    assert!(p.rewrite_in_place(&mut b, None, |_| {
        assert!(p.try_acquire(h).is_none(), "a reader looks again later");
        assert!(p.from_handle(h).is_none());
        assert!(!p.release_handle(h));
    }));
    drop(b);
    assert!(p.release_handle(h));
}

#[test]
fn concurrent_readers_see_whole_rewrites_only() {
    // A writer rewrites one slot with runs of one byte value; readers that
    // acquire it must never see a mix of two runs.
    let p = Arc::new(pool(2 * SEGMENT_SIZE));
    let h = p.into_handle(p.alloc_copy(&[0u8; 100]).unwrap()).unwrap();
    let rewrites = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut seen = 0;
            for _ in 0..ITERS {
                if let Some(b) = p.try_acquire(h) {
                    assert!(b[..100].iter().all(|&x| x == b[0]), "torn rewrite");
                    seen += 1;
                }
            }
            seen
        });
        let mut done = 0;
        for i in 0..ITERS {
            if let Some(mut b) = p.try_acquire(h) {
                if p.rewrite_in_place(&mut b, Some(7), |bytes| bytes[..100].fill(i as u8)) {
                    done += 1;
                }
            }
        }
        reader.join().unwrap();
        done
    });
    assert!(rewrites > 0);
    assert!(p.release_handle(h));
    assert_eq!(p.stats().live_slots, 0);
}

#[test]
fn releasing_the_last_reference_through_a_handle_frees_the_slot() {
    let p = pool(2 * SEGMENT_SIZE);
    let h = p.into_handle(p.alloc_copy(&[1u8; 300]).unwrap()).unwrap();
    assert_eq!(p.stats().live_slots, 1);
    assert!(p.release_handle(h));
    assert_eq!(p.stats().live_slots, 0);
    assert!(p.try_acquire(h).is_none(), "freed slot");
}

#[test]
fn handles_of_another_pool_are_refused() {
    let p = pool(2 * SEGMENT_SIZE);
    let q = pool(2 * SEGMENT_SIZE);
    let b = q.alloc_copy(b"elsewhere").unwrap();
    let b = p.into_handle(b).unwrap_err();
    assert_eq!(b.ref_count(), 1);
    assert!(p.try_acquire(u32::MAX).is_none(), "out of range");
    assert!(!p.release_handle(u32::MAX));
    assert!(p.from_handle(u32::MAX).is_none());
}

#[test]
fn try_acquire_live_free_writer_held_and_reused() {
    let p = pool(2 * SEGMENT_SIZE);
    let a = p.alloc_copy(b"version 1").unwrap();
    let h = p.into_handle(a).unwrap();
    // Live: a new, independent reference over the whole slot.
    let r = p.try_acquire(h).unwrap();
    assert_eq!(&r[..9], b"version 1");
    assert_eq!(r.ref_count(), 2);
    // The reader's reference keeps the bytes after the table lets go.
    assert!(p.release_handle(h));
    assert_eq!(&r[..9], b"version 1");
    drop(r);
    // Free: refused.
    assert!(p.try_acquire(h).is_none());
    // Held by a writer (LIFO reuse hands out the same slot): refused.
    let mut w = p.alloc(9).unwrap();
    w.extend_from_slice(b"version 2");
    assert!(p.try_acquire(h).is_none(), "a BufMut owns it");
    // Reused and frozen: acquired, but it is someone else's data now —
    // the caller must check (here, the bytes).
    let b = w.freeze();
    let r = p.try_acquire(h).unwrap();
    assert!(r.same_slot(&b));
    assert_eq!(&r[..9], b"version 2");
}

#[test]
fn try_acquire_large_objects() {
    let p = pool(if cfg!(miri) { 3 } else { 4 } * SEGMENT_SIZE);
    let mut w = p.alloc(SEGMENT_SIZE + 1).unwrap();
    w.set_len(SEGMENT_SIZE + 1);
    w.as_mut_slice()[SEGMENT_SIZE] = 9;
    let h = p.into_handle(w.freeze()).unwrap();
    let r = p.try_acquire(h).unwrap();
    assert_eq!(r.len(), SEGMENT_SIZE + 4096);
    assert_eq!(r[SEGMENT_SIZE], 9);
    assert_eq!(p.slot_size(&r), SEGMENT_SIZE + 4096);
    // A handle naming the second segment of the run is not a slot.
    assert!(p.try_acquire(h + (1 << 15)).is_none());
    assert!(p.release_handle(h));
    drop(r);
    assert_eq!(p.stats().segments_in_use, 0);
}

#[test]
fn concurrent_readers_never_see_a_recycled_slot_unchecked() {
    // A writer keeps swapping the table entry to new slots whose bytes are
    // all one version number; readers load, acquire, then re-load the entry:
    // if it is unchanged the slot they hold is the one the table owned, and
    // its bytes must be uniform.
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let p = pool(4 * SEGMENT_SIZE);
    let first = p.into_handle(p.alloc_copy(&[0u8; 200]).unwrap()).unwrap();
    let entry = Arc::new(AtomicU64::new(first as u64));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (p, entry, stop) = (p.clone(), Arc::clone(&entry), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut validated = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let e = entry.load(Ordering::Acquire);
                    if let Some(b) = p.try_acquire(e as u32) {
                        if entry.load(Ordering::Acquire) == e {
                            assert!(b[..200].iter().all(|&x| x == b[0]), "torn slot");
                            validated += 1;
                        }
                    }
                }
                validated
            })
        })
        .collect();
    for v in 1..=ITERS as u64 {
        let b = p.alloc_copy(&[v as u8; 200]).unwrap();
        let h = p.into_handle(b).unwrap();
        let old = entry.swap(h as u64, Ordering::AcqRel);
        assert!(p.release_handle(old as u32));
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert!(p.release_handle(entry.load(Ordering::Relaxed) as u32));
    assert_eq!(p.stats().live_slots, 0);
}

#[test]
#[ignore = "timing: cargo test --release -p granola --test pool recover_cost -- --ignored --nocapture"]
fn recover_cost() {
    let p = pool(64 * SEGMENT_SIZE);
    for size in [128usize, 150, 1000, 1300] {
        let bufs: Vec<Buf> = (0..4096)
            .map(|_| p.alloc_copy(&vec![1u8; size]).unwrap())
            .collect();
        let n = 4_000_000usize;
        let t = std::time::Instant::now();
        let mut acc = 0usize;
        for i in 0..n {
            let b = &bufs[i & 4095];
            let r = p.recover(&b[(i % size)..]).unwrap();
            acc += r.len();
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "recover + drop, {size} B objects ({} B slots): {ns:.1} ns ({acc})",
            Pool::slot_size_for(size)
        );
    }
}

/// Fills a 2-segment pool with one class, frees everything, and checks
/// that another class can now take both segments (no calcification).
#[test]
fn emptied_segments_move_to_another_class() {
    let p = pool(2 * SEGMENT_SIZE);
    // Large slots keep the test quick under Miri.
    let a = 64 << 10;
    let per = SEGMENT_SIZE / a;
    let small: Vec<Buf> = (0..2 * per)
        .map(|i| p.alloc_copy(&vec![i as u8; a]).unwrap())
        .collect();
    assert!(p.alloc(a).is_none(), "full");
    assert!(p.alloc(100).is_none(), "no segment for another class");
    drop(small);
    // The carving segment stays with its class; the other one is free.
    assert!(p.stats().segments_released >= 1);
    let n = 2 * (SEGMENT_SIZE / (32 << 10));
    let other: Vec<Buf> = (0..n)
        .map(|i| p.alloc_copy(&vec![i as u8; 30_000]).unwrap())
        .collect();
    for (i, b) in other.iter().enumerate() {
        assert_eq!(&b[..], &vec![i as u8; 30_000][..]);
    }
    assert_eq!(p.stats().segments_in_use, 2);
}

/// A class whose only item is rewritten between two sizes empties a
/// segment on every write. The last two released segments keep their
/// pages, and the next segment a class needs is taken from them: no fresh
/// (zeroed) pages per write. A third release gives the oldest back to the
/// kernel (under Miri pages are never given back, so that part is skipped).
#[test]
fn released_segments_stay_warm_for_the_next_class() {
    let p = pool(8 * SEGMENT_SIZE);
    // A slot of `size` with its whole capacity filled with `byte`.
    let fill = |size: usize, byte: u8| {
        let mut w = p.alloc(size).unwrap();
        w.as_full_mut_slice().fill(byte);
        w.set_len(size);
        w.freeze()
    };
    let big = 64 << 10;
    let first = fill(big, 0xA5);
    let at = first.as_ptr() as usize;
    drop(first); // its segment empties: released, warm
    let mut again = p.alloc(big).unwrap();
    let bytes = again.as_full_mut_slice();
    assert_eq!(bytes.as_ptr() as usize, at, "the warm segment is reused");
    assert!(bytes.iter().all(|&b| b == 0xA5), "its pages were kept");
    drop(again);
    // Three segments of another class, released in order: the warm ones
    // are the last two, the first goes back to the kernel.
    let other = 32 << 10;
    let per = SEGMENT_SIZE / other;
    let segs: Vec<Vec<Buf>> = (0..3u8)
        .map(|k| (0..per).map(|_| fill(other, 0x40 + k)).collect())
        .collect();
    assert_eq!(p.stats().segments_in_use, 3);
    drop(segs);
    assert_eq!(p.stats().segments_in_use, 0);
    // Taken again: the warm ones first (newest first), then the discarded
    // one. The first byte of each segment tells which it is.
    let mut firsts = Vec::new();
    let mut held = Vec::new();
    for i in 0..3 * per {
        let mut w = p.alloc(other).unwrap();
        if i % per == 0 {
            firsts.push(w.as_full_mut_slice()[0]);
        }
        w.set_len(0);
        held.push(w.freeze());
    }
    let discarded = if cfg!(miri) { 0x40 } else { 0 };
    assert_eq!(firsts, [0x42, 0x41, discarded]);
}

/// A buffer that doubles from 16 KiB to 8 MiB, each size freed once the
/// next is allocated (a receive buffer growing under one large request),
/// fits an 8-segment pool: the segments the small sizes released (two of
/// them kept warm) must be usable by the large runs.
#[test]
fn a_doubling_buffer_fits_after_small_sizes_released_their_segments() {
    let p = pool(8 * SEGMENT_SIZE);
    let mut size = 16 << 10;
    let mut cur = p.alloc(size).unwrap();
    while size < 8 << 20 {
        size *= 2;
        cur = p
            .alloc(size)
            .unwrap_or_else(|| panic!("{size} B: {:?}", p.stats()));
    }
    drop(cur);
    assert_eq!(p.stats().segments_in_use, 0);
}

/// A drained segment serves no allocation, waits for its last reference
/// (a send in flight) and then goes to whichever class needs it; the
/// in-flight bytes are intact until then.
#[test]
fn drained_segment_is_reused_only_after_the_last_reference() {
    let p = pool(2 * SEGMENT_SIZE);
    let a = 64 << 10;
    let per = SEGMENT_SIZE / a;
    let mut held: Vec<Buf> = (0..per)
        .map(|i| p.alloc_copy(&vec![i as u8; a]).unwrap())
        .collect();
    // A second class fills the other segment.
    let keep = p.alloc_copy(&[7u8; 100]).unwrap();
    let seg0 = {
        let (base, _) = p.region();
        ((held[0].as_ptr().addr() - base.as_ptr().addr()) / SEGMENT_SIZE) as u32
    };
    // Stored items are owned through handles; one is also "in flight".
    let handles: Vec<u32> = held.drain(..).map(|b| p.into_handle(b).unwrap()).collect();
    let in_flight = p.try_acquire(handles[3]).unwrap();
    // Free one slot so the class has a free-list entry in that segment.
    assert!(p.release_handle(handles[0]));
    let listed = p.drain_segment(seg0);
    assert_eq!(listed.len(), per - 1, "every remaining handle is listed");
    assert_eq!(p.stats().segments_draining, 1);
    // The freed slot of the draining segment is not handed out again.
    assert!(p.alloc(a).is_none());
    for h in listed {
        assert!(p.release_handle(h));
    }
    // Still draining: the send holds one slot.
    assert_eq!(p.stats().segments_draining, 1);
    // The other class's segment still serves its own class.
    assert!(p.alloc(100).is_some_and(|b| {
        let (base, _) = p.region();
        (b.as_slice().as_ptr().addr() - base.as_ptr().addr()) / SEGMENT_SIZE != seg0 as usize
    }));
    assert_eq!(&in_flight[..], &vec![3u8; a][..]);
    drop(in_flight);
    assert_eq!(p.stats().segments_draining, 0);
    // Now another class gets the segment.
    let big = p.alloc_copy(&[9u8; 200_000]).unwrap();
    assert_eq!(&big[..], &[9u8; 200_000][..]);
    assert_eq!(&keep[..], &[7u8; 100][..]);
}

/// The coldest segment is the one least recently allocated from or
/// touched.
#[test]
fn coldest_segment_follows_touches() {
    let p = pool(4 * SEGMENT_SIZE);
    let a = p.alloc_copy(&[1u8; 4096]).unwrap();
    let b = p.alloc_copy(&[2u8; 100]).unwrap();
    let c = p.alloc_copy(&[3u8; 1000]).unwrap();
    let seg = |x: &Buf| segment_of(&p, x);
    assert_eq!(p.coldest_segment(), Some(seg(&a)));
    p.touch(&a);
    assert_eq!(p.coldest_segment(), Some(seg(&b)));
    // A new segment advances the allocation clock; touching a and b now
    // leaves c the coldest.
    let d = p.alloc_copy(&[4u8; 30_000]).unwrap();
    p.touch(&a);
    p.touch(&b);
    assert_eq!(p.coldest_segment(), Some(seg(&c)));
    assert_ne!(seg(&d), seg(&c));
}

/// The segments to compact are those whose items all fit in the free
/// slots of their class's other segments, sparsest first; one whose items
/// do not fit is not offered, nor is a large run or a draining segment.
/// `segment_handles` lists a segment's owned slots without draining it.
#[test]
fn movable_segments_fit_their_items_elsewhere() {
    let p = pool(8 * SEGMENT_SIZE);
    let seg = |x: &Buf| segment_of(&p, x);
    let a = 64 << 10;
    let per = SEGMENT_SIZE / a;
    // Two full segments of one class, and a large run.
    let mut first: Vec<Buf> = (0..per)
        .map(|_| p.alloc_copy(&vec![1u8; a]).unwrap())
        .collect();
    let mut second: Vec<Buf> = (0..per)
        .map(|_| p.alloc_copy(&vec![2u8; a]).unwrap())
        .collect();
    let _large = p.alloc_copy(&vec![3u8; MAX_SLOT_SIZE + 1]).unwrap();
    assert_ne!(seg(&first[0]), seg(&second[0]));
    // Full: no item could move.
    assert_eq!(p.movable_segments().first().copied(), None);
    // Three free slots in the first segment; the second keeps four items.
    first.truncate(per - 3);
    second.truncate(4);
    assert_eq!(
        p.movable_segments().first().copied(),
        None,
        "4 items, 3 free slots"
    );
    first.truncate(per - 4);
    assert_eq!(p.movable_segments().first().copied(), Some(seg(&second[0])));
    // Sparser still, the first segment's items do not fit in the second.
    first.truncate(2);
    assert_eq!(p.movable_segments().first().copied(), Some(seg(&first[0])));
    // A draining segment is not offered (its free slots left the free
    // list), nor counted as room for another's items.
    let (f, s2) = (seg(&first[0]), seg(&second[0]));
    assert!(
        p.segment_handles(f).is_empty(),
        "no slot is owned by a handle"
    );
    assert_eq!(p.segment_live(f), 2, "yet two slots live there");
    let owned: Vec<u32> = first
        .iter()
        .map(|b| p.into_handle(b.clone()).unwrap())
        .collect();
    let mut listed = p.segment_handles(f);
    listed.sort_unstable();
    assert_eq!(listed, owned);
    assert_eq!(p.segment_live(f), owned.len(), "every live slot is owned");
    assert!(!p.is_draining(f), "listing does not drain");
    for h in owned {
        assert!(p.release_handle(h));
    }
    p.drain_segment(f);
    assert!(p.is_draining(f) && !p.is_draining(s2));
    assert_eq!(p.movable_segments().first().copied(), None);
    first.clear();
    assert!(!p.is_draining(f), "released with its last slot");
    assert_eq!(
        p.movable_segments().first().copied(),
        None,
        "4 items, no other segment"
    );
    assert!(second.iter().all(|b| seg(b) == s2 && b[0] == 2));
}

/// In a pool of a group, whose large objects take small-class segments:
/// for a large object that finds no free run, `movable_runs` offers the
/// windows of consecutive segments whose items fit in free slots of their
/// class outside the window, fewest items first; a window with a large
/// run in it is never offered, and free segments in one cost nothing.
#[test]
fn movable_runs_are_windows_whose_items_fit_elsewhere() {
    let config = PoolConfig {
        capacity: 6 * SEGMENT_SIZE,
        huge_pages: false,
        budget: None,
    };
    let p = Pool::new_group(&[config]).unwrap().pop().unwrap();
    let seg = |x: &Buf| segment_of(&p, x);
    let a = 64 << 10;
    let per = SEGMENT_SIZE / a;
    // Four full segments of one class, then a large run over the last two.
    let mut segs: Vec<Vec<Buf>> = (0..4u8)
        .map(|i| {
            (0..per)
                .map(|_| p.alloc_copy(&vec![i; a]).unwrap())
                .collect()
        })
        .collect();
    let large = p.alloc_copy(&vec![9u8; SEGMENT_SIZE + 1]).unwrap();
    assert_eq!(
        segs.iter().map(|s| seg(&s[0])).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert_eq!(seg(&large), 4);
    assert!(p.movable_runs(2, 4).is_empty(), "no free slot anywhere");
    // Free slots: 2, 26, 28 and 12; live: 30, 6, 4 and 20.
    for (s, keep) in segs.iter_mut().zip([30, 6, 4, 20]) {
        s.truncate(keep);
    }
    // [1, 2]: 10 items, 14 free slots outside; [2, 3]: 24 and 28;
    // [0, 1]: 36 and 40; [3, 4] and [4, 5] hold the large run.
    assert_eq!(p.movable_runs(2, 4), [vec![1, 2], vec![2, 3], vec![0, 1]]);
    assert_eq!(p.movable_runs(2, 2), [vec![1, 2], vec![2, 3]]);
    assert!(
        p.movable_runs(5, 4).is_empty(),
        "every window of 5 has the run"
    );
    // Five more items: 63 free slots, fewer than the 64 two segments hold,
    // so no two segments of the class can be emptied.
    let extra: Vec<Buf> = (0..5)
        .map(|_| p.alloc_copy(&vec![7u8; a]).unwrap())
        .collect();
    assert!(p.movable_runs(2, 4).is_empty());
    // Segment 0 emptied and released: a window over it only empties 1.
    drop(extra);
    segs[0].clear();
    assert_eq!(p.movable_runs(2, 4), [vec![1], vec![1, 2], vec![2, 3]]);
    assert!(p.movable_runs(0, 4).is_empty());
    // A pool of its own places large objects in address space of their
    // own: no window of its segments is ever needed.
    let alone = pool(6 * SEGMENT_SIZE);
    let small: Vec<Buf> = (0..per / 2)
        .map(|_| alone.alloc_copy(&vec![1u8; a]).unwrap())
        .collect();
    assert!(alone.movable_runs(2, 4).is_empty());
    let big = alone.alloc_copy(&vec![9u8; SEGMENT_SIZE + 1]).unwrap();
    assert!(
        segment_of(&alone, &big) >= 6,
        "past the small-class segments"
    );
    drop(small);
}

/// A large object costs its pages, not whole segments: the capacity bounds
/// small-class segments in use (whole) plus large objects (by pages), and
/// what a freed large object leaves can serve either.
#[test]
#[cfg_attr(
    miri,
    ignore = "15 MiB of large objects written and read take Miri minutes"
)]
fn large_objects_cost_their_pages_not_whole_segments() {
    let p = pool(8 * SEGMENT_SIZE);
    let size = SEGMENT_SIZE / 2 + SEGMENT_SIZE / 20 + 3; // 1.1 MiB
    let charged = size.div_ceil(4096) * 4096;
    assert_eq!(Pool::slot_size_for(size), charged);
    let mut big = Vec::new();
    while let Some(b) = p.alloc_copy(&vec![big.len() as u8; size]) {
        big.push(b);
    }
    // 14 of them in 16 MiB (whole segments: 8).
    assert_eq!(big.len(), 8 * SEGMENT_SIZE / charged);
    assert_eq!(p.stats().resident_bytes, big.len() * charged);
    assert!(
        p.alloc(64).is_none(),
        "{} B left: no room for a segment",
        8 * SEGMENT_SIZE - big.len() * charged
    );
    big.pop();
    assert!(p.alloc(64).is_none());
    big.pop();
    let small = p.alloc_copy(b"fits").unwrap();
    assert_eq!(p.stats().resident_bytes, big.len() * charged + SEGMENT_SIZE);
    assert!(p.alloc(size).is_none(), "the segment took that room");
    for (i, b) in big.iter().enumerate() {
        assert_eq!(b.len(), size);
        assert!(b.iter().all(|&x| x == i as u8));
    }
    drop((big, small));
    // The small segment and the last four large objects freed keep their
    // pages for the next allocation.
    assert_eq!(p.stats().resident_bytes, SEGMENT_SIZE + 4 * charged);
    // The next large object takes a warm one's pages (and address).
    let again = p.alloc_copy(&vec![7u8; size]).unwrap();
    assert_eq!(p.stats().resident_bytes, SEGMENT_SIZE + 4 * charged);
    assert!(again.iter().all(|&x| x == 7));
    // Small-class segments take room from warm large objects: here all
    // the room there is (7 segments of 64 KiB slots beside `again`).
    let small: Vec<Buf> = std::iter::from_fn(|| p.alloc_copy(&[3u8; 64 << 10])).collect();
    assert_eq!(
        small.len(),
        32 * ((8 * SEGMENT_SIZE - charged) / SEGMENT_SIZE)
    );
    assert_eq!(
        p.stats().resident_bytes,
        charged + small.len() / 32 * SEGMENT_SIZE
    );
}

/// A large run whose object no handle owns (its owner let it go while a
/// send still holds it) is not offered for draining: draining it could
/// free nothing, and offering it again and again would starve the owner's
/// eviction of every other segment.
#[test]
fn coldest_segment_passes_over_runs_no_handle_owns() {
    let p = pool(4 * SEGMENT_SIZE);
    let seg = |x: &Buf| segment_of(&p, x);
    let big = p.alloc_copy(&vec![5u8; MAX_SLOT_SIZE + 1]).unwrap();
    let small = p.alloc_copy(&[6u8; 100]).unwrap();
    let h = p.into_handle(big.clone()).unwrap();
    assert_eq!(p.coldest_segment(), Some(seg(&big)));
    // The owner drops its handle; a send still holds the object.
    assert!(p.release_handle(h));
    assert_eq!(p.coldest_segment(), Some(seg(&small)));
    // Owned by a handle again, it is a candidate again.
    let h = p.into_handle(big.clone()).unwrap();
    assert_eq!(p.coldest_segment(), Some(seg(&big)));
    assert!(p.release_handle(h));
    assert_eq!(p.coldest_segment(), Some(seg(&small)));
    assert!(big.iter().all(|&b| b == 5));
}

/// A budget below the capacity bounds the live slot bytes (each slot at
/// its slot size, a large object at its pages), whatever the
/// classes; freeing gives the bytes back, and a failed allocation charges
/// nothing.
#[test]
fn budget_bounds_live_bytes_below_the_capacity() {
    let p = Pool::new(PoolConfig {
        capacity: 4 * SEGMENT_SIZE,
        huge_pages: false,
        budget: Some(SEGMENT_SIZE + (64 << 10)),
    })
    .unwrap();
    // Seven classes in four segments would not fit without the slack;
    // here the budget, not the segments, is what stops them.
    let a = p.alloc(16 << 10).unwrap();
    let b = p.alloc(32 << 10).unwrap();
    let c = p.alloc(64 << 10).unwrap();
    assert_eq!(p.stats().budget_used, 112 << 10);
    // A large object is charged its pages: 2 MiB + 4 KiB is over budget.
    assert!(p.alloc(SEGMENT_SIZE + 1).is_none());
    assert_eq!(p.stats().budget_used, 112 << 10);
    let d = p.alloc(MAX_SLOT_SIZE).unwrap();
    assert_eq!(p.stats().budget_used, (112 << 10) + MAX_SLOT_SIZE);
    drop((a, b));
    assert!(
        p.alloc(MAX_SLOT_SIZE + 1).is_none(),
        "1 MiB + 4 KiB is over"
    );
    assert_eq!(p.stats().budget_used, (64 << 10) + MAX_SLOT_SIZE);
    drop((c, d));
    assert_eq!(p.stats().budget_used, 0);
    // Everything back: the whole budget is there again.
    let run = p.alloc(SEGMENT_SIZE).unwrap();
    let rest = p.alloc(64 << 10).unwrap();
    assert!(p.alloc(64).is_none());
    drop((run, rest));
    assert_eq!(p.stats().budget_used, 0);
}

/// Classes take turns on a small pool many times: free-list entries of a
/// released segment are never handed out again (no slot is given twice).
#[test]
fn segments_change_class_many_times_without_double_allocation() {
    let p = pool(3 * SEGMENT_SIZE);
    let rounds = if cfg!(miri) { 2 } else { 20 };
    let sizes = [100usize, 4096, 1000, 30_000, 64];
    for r in 0..rounds {
        let size = sizes[r % sizes.len()];
        let mut live = Vec::new();
        let mut i = 0u32;
        while let Some(mut w) = p.alloc(size) {
            w.extend_from_slice(&i.to_le_bytes());
            live.push((i, w.freeze()));
            i += 1;
            if cfg!(miri) && i > 50 {
                break;
            }
            // Free every third one at once (entries in the free lists).
            if i % 3 == 0 {
                live.pop();
            }
        }
        for (i, b) in &live {
            assert_eq!(&b[..4], &i.to_le_bytes(), "round {r} size {size}");
        }
    }
}

#[test]
fn the_slot_word_is_per_slot_and_starts_at_zero() {
    use std::sync::atomic::Ordering::Relaxed;
    let p = pool(2 * SEGMENT_SIZE);
    let a = p.alloc_copy(b"first").unwrap();
    let b = p.alloc_copy(b"other").unwrap();
    let large = p.alloc_copy(&vec![7u8; MAX_SLOT_SIZE + 1]).unwrap();
    for buf in [&a, &b, &large] {
        assert_eq!(buf.slot_word().load(Relaxed), 0);
    }
    a.slot_word().store(42, Relaxed);
    large.slot_word().store(9, Relaxed);
    // Shared by clones, sub-slices and recovered views of the slot; no
    // other slot sees it; the counts beside it are untouched.
    assert_eq!(a.slice(1..3).slot_word().load(Relaxed), 42);
    assert_eq!(p.recover(&a[2..4]).unwrap().slot_word().load(Relaxed), 42);
    assert_eq!(b.slot_word().load(Relaxed), 0);
    assert_eq!(large.slice(100..).slot_word().load(Relaxed), 9);
    assert_eq!((a.ref_count(), b.ref_count(), large.ref_count()), (1, 1, 1));
    // A handle round trip keeps it; a reused slot starts at zero again.
    let h = p.into_handle(a).unwrap();
    let a = p.try_acquire(h).unwrap();
    assert_eq!(a.slot_word().load(Relaxed), 42);
    let addr = a.as_ptr().addr();
    assert!(p.release_handle(h));
    drop(a);
    let c = p.alloc_copy(b"third").unwrap();
    assert_eq!(c.as_ptr().addr(), addr, "LIFO reuse of the same slot");
    assert_eq!(c.slot_word().load(Relaxed), 0);
}

#[test]
fn a_buf_knows_its_slot_size() {
    let pool = Pool::with_capacity(8 << 20).unwrap();
    for len in [1usize, 64, 65, 3000, 70_000, 2 << 20] {
        let b = pool.alloc_copy(&vec![1u8; len]).unwrap();
        assert_eq!(b.slot_size(), pool.slot_size(&b), "{len}");
        assert_eq!(b.slot_size(), Pool::slot_size_for(len), "{len}");
        // A view of part of the slot costs the whole slot.
        assert_eq!(b.slice(..1).slot_size(), b.slot_size());
    }
}

/// Pools carved from one mapping: each allocates and accounts on its own
/// (one's budget running out leaves the other serving), one registration
/// covers both, and a buffer outlives every pool handle of its group.
#[test]
fn pools_of_a_group_share_one_registration() {
    let cfg = |segments: usize, budget: Option<usize>| PoolConfig {
        capacity: segments * SEGMENT_SIZE,
        huge_pages: false,
        budget,
    };
    let mut pools = Pool::new_group(&[cfg(2, None), cfg(1, Some(8192))]).unwrap();
    let frames = pools.pop().unwrap();
    let items = pools.pop().unwrap();
    let value = items.alloc_copy(&[3u8; 3000]).unwrap();
    let frame = frames.alloc_copy(&[4u8; 4096]).unwrap();
    let frame2 = frames.alloc_copy(&[5u8; 4096]).unwrap();
    assert!(frames.alloc(4096).is_none(), "the frame pool's own budget");
    assert!(items.alloc(4096).is_some(), "the item pool still serves");
    assert!(items.contains(&value) && !frames.contains(&value));
    assert!(frames.in_registration(&value) && items.in_registration(&frame));
    assert!(!frames.in_registration(&[0u8; 4]));
    let (base, len) = frames.registration();
    assert_eq!(items.registration(), (base, len));
    assert_eq!(len, 3 * SEGMENT_SIZE);
    for b in [&value, &frame, &frame2] {
        let off = b.as_ptr().addr() - base.as_ptr().addr();
        assert!(off + b.len() <= len);
    }
    assert_eq!(items.stats().live_slots, 1);
    assert_eq!(frames.stats().live_slots, 2);
    drop((items, frames, frame, frame2));
    assert!(
        value.iter().all(|&b| b == 3),
        "the mapping outlives the pools"
    );
}

/// Registering a group pins every pool of it: a large object freed in
/// the other pool keeps its pages (the kernel would otherwise keep
/// reading the old ones for a descriptor while the process faulted in new
/// ones). A pool made alone keeps a freed large object's pages for the
/// next one, and gives them back when something else needs the room.
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri has no pages to give back, and 1 MiB objects take it minutes"
)]
fn registering_a_group_pins_every_pool_of_it() {
    let cfg = PoolConfig {
        capacity: 2 * SEGMENT_SIZE,
        huge_pages: false,
        budget: None,
    };
    let pools = Pool::new_group(&[cfg.clone(), cfg.clone()]).unwrap();
    let alone = Pool::new(cfg).unwrap();
    let _ = pools[1].registration();
    let size = MAX_SLOT_SIZE + 1;
    // A large object written and freed, and then `then` done: whether the
    // next large object finds the same run, and the old bytes in it.
    let reuse = |p: &Pool, then: &dyn Fn()| {
        let first = p.alloc_copy(&vec![0x5A; size]).unwrap();
        let at = first.as_ptr() as usize;
        drop(first);
        then();
        let mut again = p.alloc(size).unwrap();
        let bytes = &again.as_full_mut_slice()[..size];
        (
            bytes.as_ptr() as usize == at,
            bytes.iter().all(|&b| b == 0x5A),
        )
    };
    assert_eq!(reuse(&pools[0], &|| ()), (true, true), "pinned");
    assert_eq!(reuse(&alone, &|| ()), (true, true), "warm");
    // Small-class segments needing all the room: the freed object's pages
    // went back to the kernel.
    let fill = || {
        let small: Vec<Buf> = std::iter::from_fn(|| alone.alloc_copy(&[1u8; 64 << 10])).collect();
        assert_eq!(small.len(), 64);
    };
    assert_eq!(reuse(&alone, &fill), (true, false), "given back");
}

/// A writer can name itself in its slot's word, and the segment lists
/// the words of the slots still being written (not frozen or free ones):
/// how a cache finds who must finish writing before a segment can empty.
#[test]
fn segment_writers_name_the_slots_still_being_written() {
    let p = pool(4 * SEGMENT_SIZE);
    let seg = |ptr: *const u8| {
        let (base, _) = p.region();
        ((ptr.addr() - base.as_ptr().addr()) / SEGMENT_SIZE) as u32
    };
    let frozen = p.alloc_copy(&[1u8; 100]).unwrap();
    let s = seg(frozen.as_ptr());
    let mut w = p.alloc(100).unwrap();
    w.extend_from_slice(&[2u8; 10]);
    w.slot_word().store(0xfeed, Ordering::Relaxed);
    assert_eq!(seg(w.as_slice().as_ptr()), s, "same class, same segment");
    assert_eq!(p.segment_writers(s), vec![0xfeed]);
    assert_eq!(p.segment_live(s), 2);
    // Frozen, the word stays with the slot, and it is no writer's.
    let b = w.freeze();
    assert_eq!(b.slot_word().load(Ordering::Relaxed), 0xfeed);
    assert!(p.segment_writers(s).is_empty());
    drop((b, frozen));
    assert_eq!(p.segment_live(s), 0);
}
