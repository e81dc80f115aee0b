//! Memory per item: load items with 20 B keys and 100 B values and report
//! store bytes per item (pool slot bytes + index bytes, what the memory
//! limit counts) and the RSS growth per item (/proc/self/statm).
//!
//! The 1 M-item measurement (the issue's target: <= 206 B per item, what
//! memcached uses on this machine):
//!
//! ```sh
//! cargo test --release -p granola-kv --test store_memory -- --ignored --nocapture
//! ```
//!
//! The default run loads 100 k items and checks the accounted figure.

use granola::{Pool, PoolConfig};
use granola_kv::store::{Meta, SetMode, Store, StoreConfig};

fn rss_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

struct Report {
    items: usize,
    store_per_item: f64,
    slot_per_item: f64,
    index_per_item: f64,
    rss_per_item: Option<f64>,
}

fn load(items: u32) -> Report {
    let pool = Pool::new(PoolConfig {
        capacity: 2 << 30,
        huge_pages: false,
        budget: None,
    })
    .unwrap();
    let store = Store::new(
        pool,
        StoreConfig {
            memory_limit: 1 << 30,
            ..Default::default()
        },
    );
    let rss0 = rss_bytes();
    let mut key = [0u8; 20];
    let mut value = [0u8; 100];
    for i in 0..items {
        let k = format!("key:{i:016}");
        key.copy_from_slice(k.as_bytes());
        value[..4].copy_from_slice(&i.to_le_bytes());
        store
            .set(&key, &value, Meta::default(), SetMode::Set)
            .unwrap();
    }
    let rss1 = rss_bytes();
    let st = store.stats();
    assert_eq!(st.items, items as usize);
    assert_eq!(st.evictions, 0);
    // Spot-check the data.
    for i in (0..items).step_by(997) {
        let k = format!("key:{i:016}");
        let it = store.get(k.as_bytes()).unwrap();
        assert_eq!(&it.value_bytes()[..4], i.to_le_bytes());
    }
    let n = items as f64;
    Report {
        items: items as usize,
        store_per_item: (st.item_bytes + st.index_bytes) as f64 / n,
        slot_per_item: st.item_bytes as f64 / n,
        index_per_item: st.index_bytes as f64 / n,
        rss_per_item: rss0.zip(rss1).map(|(a, b)| b.saturating_sub(a) as f64 / n),
    }
}

fn print(r: &Report) {
    println!(
        "{} items (20 B key, 100 B value): store {:.1} B/item (slots {:.1} + index {:.1}), RSS delta {} B/item",
        r.items,
        r.store_per_item,
        r.slot_per_item,
        r.index_per_item,
        r.rss_per_item.map_or("n/a".into(), |v| format!("{v:.1}")),
    );
}

#[test]
fn accounted_bytes_per_small_item() {
    let r = load(100_000);
    print(&r);
    assert_eq!(r.slot_per_item, 160.0, "148 B items take 160 B slots");
    assert!(
        r.store_per_item <= 206.0,
        "{:.1} B per item",
        r.store_per_item
    );
}

/// Values from 256 KiB up cost about their size: up to 1 MiB a slot that
/// 7 ... 2 of fit in a segment, above it their 4 KiB pages. When slots
/// above 256 KiB were powers of two and a large value took whole 2 MiB
/// segments, a 32 MiB store held 0.58 (300 KiB values), 0.57 (600 KiB),
/// 0.50 (1.1 MiB) and 0.45 (2.1 MiB) of its limit in values when it first
/// evicted; now 0.87, 0.86, 0.97 and 0.96. Every value is checked
/// afterwards (its key and length are in its bytes).
#[test]
fn large_values_cost_about_their_size() {
    const LIMIT: usize = 32 << 20;
    for size in [300 << 10, 600 << 10, 1100 << 10, 2100 << 10] {
        let store = Store::new(
            // The server's pool has class slack beyond the limit too.
            Pool::new(PoolConfig {
                capacity: LIMIT + (8 << 20),
                huge_pages: false,
                budget: None,
            })
            .unwrap(),
            StoreConfig {
                memory_limit: LIMIT,
                max_item_size: 4 << 20,
                ..Default::default()
            },
        );
        let value = |i: u32| {
            let mut v = format!("{i}:{size}:").into_bytes();
            v.resize(size, i as u8);
            v
        };
        let mut stored = 0u32;
        loop {
            store
                .set(
                    format!("k{stored}").as_bytes(),
                    &value(stored),
                    Meta::default(),
                    SetMode::Set,
                )
                .unwrap();
            if store.stats().evictions > 0 {
                break;
            }
            stored += 1;
        }
        let held = stored as f64 * size as f64 / LIMIT as f64;
        println!("{size} B values: {stored} stored at the first eviction, {held:.2} of the limit");
        assert!(held >= 0.8, "{size} B values: {held:.2} of the limit");
        for i in 0..=stored {
            if let Some(it) = store.get(format!("k{i}").as_bytes()) {
                assert!(it.value_bytes() == value(i).as_slice(), "k{i}");
            }
        }
        assert!(store.stats().bytes <= LIMIT);
    }
}

#[test]
#[ignore = "1 M items: run in release with --ignored --nocapture"]
fn one_million_items() {
    let r = load(1_000_000);
    print(&r);
    assert!(r.store_per_item <= 206.0);
}
