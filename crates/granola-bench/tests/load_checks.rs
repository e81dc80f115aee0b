//! The load generator against a tiny in-process memcached that corrupts
//! some values: every corruption is caught and counted, nothing else is.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use granola_bench::load::{self, LoadConfig, Mode, Protocol};
use granola_bench::workload::WorkloadSpec;

/// Serves `get`/`set` over TCP; flips one byte of every `corrupt_every`-th
/// GET hit (0 = never) and counts the flips.
fn fake_memcached(corrupt_every: u64) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let store: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>> = Arc::default();
    let flips = Arc::new(AtomicU64::new(0));
    let hits = Arc::new(AtomicU64::new(0));
    let f = flips.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let (store, flips, hits) = (store.clone(), f.clone(), hits.clone());
            std::thread::spawn(move || {
                let mut w = conn.try_clone().unwrap();
                let mut r = BufReader::new(conn);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    if r.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                    let parts: Vec<&str> = text.split(' ').collect();
                    let mut out = Vec::new();
                    match parts[0] {
                        "set" => {
                            let n: usize = parts[4].parse().unwrap();
                            let mut v = vec![0; n + 2];
                            r.read_exact(&mut v).unwrap();
                            v.truncate(n);
                            store
                                .lock()
                                .unwrap()
                                .insert(parts[1].as_bytes().to_vec(), v);
                            out.extend_from_slice(b"STORED\r\n");
                        }
                        "get" => {
                            for k in &parts[1..] {
                                if let Some(v) = store.lock().unwrap().get(k.as_bytes()) {
                                    let mut v = v.clone();
                                    let h = hits.fetch_add(1, Ordering::Relaxed) + 1;
                                    if corrupt_every > 0 && h % corrupt_every == 0 && !v.is_empty()
                                    {
                                        let at = v.len() / 2;
                                        v[at] ^= 0x20;
                                        flips.fetch_add(1, Ordering::Relaxed);
                                    }
                                    out.extend_from_slice(
                                        format!("VALUE {k} 0 {}\r\n", v.len()).as_bytes(),
                                    );
                                    out.extend_from_slice(&v);
                                    out.extend_from_slice(b"\r\n");
                                }
                            }
                            out.extend_from_slice(b"END\r\n");
                        }
                        _ => out.extend_from_slice(b"ERROR\r\n"),
                    }
                    if w.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, flips)
}

fn config(addr: SocketAddr, mode: Mode) -> LoadConfig {
    LoadConfig {
        addr,
        protocol: Protocol::Memcached,
        mode,
        conns: 2,
        duration: Duration::from_millis(800),
        warmup: Duration::from_millis(100),
        timeout: Duration::from_secs(10),
        ..LoadConfig::default()
    }
}

#[test]
fn every_corrupted_value_is_counted() {
    let (addr, flips) = fake_memcached(7);
    let w = "ycsb:keys=300,value=1000"
        .parse::<WorkloadSpec>()
        .unwrap()
        .build()
        .unwrap();
    let cfg = config(addr, Mode::Closed { depth: 4 });
    let l = load::load(&cfg, w.as_ref()).unwrap();
    assert_eq!((l.counts.ops, l.errors), (300, 0), "{:?}", l.counts);
    let r = load::run(&cfg, w.as_ref()).unwrap();
    eprintln!("{}", r.summary());
    let caught = r.counts.errors.wrong_value + r.warmup.errors.wrong_value;
    assert!(caught > 10, "{:?}", r.counts);
    assert_eq!(
        caught,
        flips.load(Ordering::Relaxed),
        "each flip caught once"
    );
    assert_eq!(
        r.counts.errors.total(),
        r.counts.errors.wrong_value,
        "{:?}",
        r.counts.errors
    );
    assert_eq!(r.counts.req_timeout, 0);
    // Failed ops are not in the latency histogram or the achieved rate.
    assert_eq!(r.latency_us.count, r.counts.ops_ok + r.counts.ops_miss);
    assert_eq!(r.counts.ops_error, r.counts.errors.wrong_value);
}

#[test]
fn clean_server_open_loop_and_multi_get() {
    let (addr, flips) = fake_memcached(0);
    let w = "ycsb:keys=200,value=300,shape=multi:3"
        .parse::<WorkloadSpec>()
        .unwrap()
        .build()
        .unwrap();
    let cfg = config(addr, Mode::Open { rate: 2000.0 });
    load::load(&cfg, w.as_ref()).unwrap();
    let r = load::run(&cfg, w.as_ref()).unwrap();
    eprintln!("{}", r.summary());
    assert_eq!(r.errors, 0, "{:?}", r.counts);
    assert!(r.counts.ops > 1000, "{:?}", r.counts);
    assert!(r.ratio() > 0.8, "{}", r.achieved_rps);
    assert_eq!(flips.load(Ordering::Relaxed), 0);
    // The op cap bounds the run.
    let capped = LoadConfig {
        requests: Some(100),
        ..cfg
    };
    let r = load::run(&capped, w.as_ref()).unwrap();
    assert_eq!(r.counts.ops, 100, "{:?}", r.counts);
    // Nobody listening: a clear error, not a hang.
    let dead = LoadConfig {
        addr: "127.0.0.1:1".parse().unwrap(),
        ..config(addr, Mode::Closed { depth: 1 })
    };
    assert!(load::run(&dead, w.as_ref()).is_err());
}
