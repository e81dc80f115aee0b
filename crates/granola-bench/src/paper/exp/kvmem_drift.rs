//! `kvmem`, second part: resident memory against the limit while value
//! sizes drift (issue 10).
//!
//! Each server starts fresh with the same `-m` and is written five times
//! its limit through the memcached protocol, twice:
//!
//! - **drift**: phases of one value size each, 28 B ... 128 KiB, equal
//!   bytes per phase, new keys every phase;
//! - **zipf mix**: sizes drawn from 16 log-spaced sizes (32 B ... 256 KiB)
//!   with Zipf weights (small sizes most frequent), keys drawn from a
//!   Zipf-like hot set, so items are overwritten with other sizes.
//!
//! The server's RSS is sampled after every batch. After each workload a
//! value of every size-class boundary up to the item limit is set (the
//! issue's "100 % of sets succeed after drift"), then again after
//! `flush_all`. Values carry their key and a checksum; a sample of gets
//! checks that no wrong byte is returned. Servers: granola-kv, memcached
//! with its default slab automover (`slab_automove=1`) and with
//! `-o slab_automove=0`.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;

use crate::load::{Protocol, Transport};

use super::super::plot::{self, Figure};
use super::super::report::Doc;
use super::super::servers::{Kind, Server, ServerSpec};
use super::super::Settings;

/// Largest value tried after the drift: 1 MiB minus room for memcached's
/// item header and key (its `-I 1m` counts the whole item).
const MAX_VALUE: usize = (1 << 20) - 1024;

#[derive(Clone, Debug, serde::Serialize)]
struct Run {
    system: String,
    workload: &'static str,
    limit_mib: usize,
    /// (MiB written, RSS MiB) after each batch.
    rss_curve: Vec<(f64, f64)>,
    rss_start_mib: f64,
    rss_max_mib: f64,
    target_mib: f64,
    sets: u64,
    sets_failed: u64,
    sweep_ok: usize,
    sweep_total: usize,
    sweep_after_flush_ok: usize,
    values_checked: u64,
    wrong_values: u64,
}

struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Conn {
    fn open(srv: &Server) -> Result<Conn, String> {
        let addr = srv.addr(Protocol::Memcached, Transport::Tcp)?;
        let w = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        w.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        w.set_nodelay(true).map_err(|e| e.to_string())?;
        let r = BufReader::new(w.try_clone().map_err(|e| e.to_string())?);
        Ok(Conn { w, r })
    }

    fn line(&mut self) -> Result<String, String> {
        let mut l = String::new();
        self.r.read_line(&mut l).map_err(|e| e.to_string())?;
        if l.is_empty() {
            return Err("server closed the connection".into());
        }
        Ok(l)
    }

    /// Pipelined sets; returns how many were STORED.
    fn sets(&mut self, items: &[(String, usize)]) -> Result<u64, String> {
        let mut req = Vec::new();
        for (k, len) in items {
            req.extend_from_slice(format!("set {k} 0 0 {len}\r\n").as_bytes());
            req.extend_from_slice(&value(k, *len));
            req.extend_from_slice(b"\r\n");
        }
        self.w.write_all(&req).map_err(|e| e.to_string())?;
        let mut ok = 0;
        for _ in items {
            if self.line()? == "STORED\r\n" {
                ok += 1;
            }
        }
        Ok(ok)
    }

    /// Some(true) = present and intact, Some(false) = present but wrong,
    /// None = miss.
    fn check(&mut self, key: &str) -> Result<Option<bool>, String> {
        self.w
            .write_all(format!("get {key}\r\n").as_bytes())
            .map_err(|e| e.to_string())?;
        let head = self.line()?;
        if head == "END\r\n" {
            return Ok(None);
        }
        let len: usize = head
            .split_whitespace()
            .nth(3)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("bad reply {head:?}"))?;
        let mut v = vec![0u8; len + 2];
        std::io::Read::read_exact(&mut self.r, &mut v).map_err(|e| e.to_string())?;
        let end = self.line()?;
        v.truncate(len);
        Ok(Some(end == "END\r\n" && v == value(key, len)))
    }
}

/// Pseudo-random bytes that values are cut from (at an offset that
/// depends on the key), so building one is a copy, not a loop per byte.
fn block() -> &'static [u8] {
    static BLOCK: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BLOCK.get_or_init(|| {
        let mut rng = Lcg(0x2545_f491_4f6c_dd1d);
        (0..(2usize << 20) / 8)
            .flat_map(|_| rng.next().to_le_bytes())
            .collect()
    })
}

/// A value that names its key and length, then bytes chosen by the key,
/// then a tag of the header: a value returned for the wrong key, cut
/// short or mixed with another one does not compare equal.
fn value(key: &str, len: usize) -> Vec<u8> {
    let head = format!("{key}|{len}|");
    let tag = fnv(head.as_bytes());
    let mut v = Vec::with_capacity(len);
    if len >= head.len() + 8 {
        v.extend_from_slice(head.as_bytes());
    }
    let body = len.saturating_sub(v.len() + 8.min(len));
    let off = (tag as usize) % (block().len() - MAX_VALUE);
    v.extend_from_slice(&block()[off..off + body]);
    v.extend_from_slice(&tag.to_le_bytes()[..len - v.len()]);
    v
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Every size-class boundary up to [`MAX_VALUE`].
fn sweep_sizes() -> Vec<usize> {
    let mut sizes = vec![1, 28];
    let mut s = 32usize;
    while s <= MAX_VALUE {
        sizes.extend([s - 1, s + s / 4, s + s / 2]);
        s *= 2;
    }
    sizes.push(MAX_VALUE);
    sizes.retain(|&n| n <= MAX_VALUE);
    sizes
}

fn sweep(c: &mut Conn, tag: &str) -> Result<(usize, usize), String> {
    let sizes = sweep_sizes();
    let mut ok = 0;
    for &len in &sizes {
        let key = format!("{tag}:{len}");
        if c.sets(&[(key.clone(), len)])? == 1 && c.check(&key)? == Some(true) {
            ok += 1;
        }
    }
    Ok((ok, sizes.len()))
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }
    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 53) as f64
    }
}

/// Index drawn with Zipf(1) weights over `n` ranks.
fn zipf(rng: &mut Lcg, cdf: &[f64]) -> usize {
    let u = rng.unit() * cdf[cdf.len() - 1];
    cdf.partition_point(|&c| c < u).min(cdf.len() - 1)
}

fn cdf(n: usize) -> Vec<f64> {
    let mut acc = 0.0;
    (1..=n)
        .map(|r| {
            acc += 1.0 / r as f64;
            acc
        })
        .collect()
}

fn run_one(
    s: &Settings,
    spec: &ServerSpec,
    workload: &'static str,
    limit: usize,
) -> Result<Run, String> {
    let srv = Server::start(spec, &s.programs, s.server_cpu, &s.log_dir)?;
    std::thread::sleep(Duration::from_millis(300));
    let mib = |b: u64| b as f64 / 1048576.0;
    let rss0 = srv.rss();
    let mut c = Conn::open(&srv)?;
    let total = 5 * (limit << 20);
    let mut written = 0usize;
    let mut curve = Vec::new();
    let (mut sets, mut stored) = (0u64, 0u64);
    let (mut checked, mut wrong) = (0u64, 0u64);
    let mut recent: Vec<String> = Vec::new();
    let mut rng = Lcg(0x9e37_79b9_7f4a_7c15);
    let batch_bytes = 512 << 10;
    match workload {
        "drift" => {
            let sizes = [
                28usize, 100, 300, 1000, 3000, 10_000, 30_000, 100_000, 131_072,
            ];
            let per_phase = total / sizes.len();
            for (phase, &len) in sizes.iter().enumerate() {
                let count = per_phase / (len + 40);
                let mut i = 0;
                while i < count {
                    let n = (batch_bytes / (len + 40)).clamp(1, count - i);
                    let items: Vec<(String, usize)> =
                        (i..i + n).map(|j| (format!("d{phase}:{j}"), len)).collect();
                    stored += c.sets(&items)?;
                    sets += n as u64;
                    written += n * len;
                    recent = items.into_iter().map(|(k, _)| k).collect();
                    i += n;
                    curve.push((mib(written as u64), mib(srv.rss())));
                }
                for k in recent.iter().rev().take(20) {
                    if let Some(ok) = c.check(k)? {
                        checked += 1;
                        wrong += u64::from(!ok);
                    }
                }
            }
        }
        _ => {
            let sizes: Vec<usize> = (0..16).map(|i| 32usize << (i * 13 / 10)).collect();
            let size_cdf = cdf(sizes.len());
            let keys = 100_000;
            let key_cdf = cdf(keys);
            while written < total {
                let mut items = Vec::new();
                let mut b = 0;
                while b < batch_bytes {
                    let len = sizes[zipf(&mut rng, &size_cdf)].min(MAX_VALUE);
                    let k = zipf(&mut rng, &key_cdf);
                    // The size is part of the key's value: a rewrite of a key
                    // with another size is a new version of it.
                    items.push((format!("z{k}:{len}"), len));
                    b += len + 40;
                }
                stored += c.sets(&items)?;
                sets += items.len() as u64;
                written += b;
                curve.push((mib(written as u64), mib(srv.rss())));
                for (k, _) in items.iter().rev().take(5) {
                    if let Some(ok) = c.check(k)? {
                        checked += 1;
                        wrong += u64::from(!ok);
                    }
                }
            }
        }
    }
    let (sweep_ok, sweep_total) = sweep(&mut c, "after")?;
    c.w.write_all(b"flush_all\r\n").map_err(|e| e.to_string())?;
    c.line()?;
    let (sweep_flush_ok, _) = sweep(&mut c, "flushed")?;
    curve.push((mib(written as u64), mib(srv.rss())));
    let rss_max = curve.iter().map(|p| p.1).fold(0.0, f64::max);
    srv.stop();
    Ok(Run {
        system: spec.label.clone(),
        workload,
        limit_mib: limit,
        rss_curve: curve,
        rss_start_mib: mib(rss0),
        rss_max_mib: rss_max,
        target_mib: 1.10 * limit as f64 + 32.0,
        sets,
        sets_failed: sets - stored,
        sweep_ok,
        sweep_total,
        sweep_after_flush_ok: sweep_flush_ok,
        values_checked: checked,
        wrong_values: wrong,
    })
}

/// Runs the drift part and adds its notes, JSON and figure to `doc`.
pub fn run(s: &Settings, doc: &mut Doc) -> Result<serde_json::Value, String> {
    let limit = if s.quick { 16 } else { 64 };
    let mut specs = vec![ServerSpec::granola("granola-kv").memory(limit)];
    match s.peer_missing(Kind::Memcached) {
        Some(why) => doc.notes.push(format!("drift: skipped memcached: {why}")),
        None => {
            let mut auto = ServerSpec::memcached().memory(limit);
            auto.label = "memcached (slab_automove=1)".into();
            let mut off = ServerSpec::memcached().memory(limit);
            off.label = "memcached (slab_automove=0)".into();
            off.extra_args = vec!["-o".into(), "slab_automove=0".into()];
            specs.extend([auto, off]);
        }
    }
    let mut runs = Vec::new();
    for workload in ["drift", "zipf mix"] {
        for spec in &specs {
            let r = run_one(s, spec, workload, limit)?;
            let line = format!(
                "{workload}, {}: -m {limit}: RSS max {:.1} MiB (target <= {:.1}: {}); sets failed {} of {}; after drift {}/{} sizes stored, after flush_all {}/{}; {} wrong of {} values checked",
                r.system,
                r.rss_max_mib,
                r.target_mib,
                if r.rss_max_mib <= r.target_mib { "met" } else { "MISSED" },
                r.sets_failed,
                r.sets,
                r.sweep_ok,
                r.sweep_total,
                r.sweep_after_flush_ok,
                r.sweep_total,
                r.wrong_values,
                r.values_checked
            );
            s.say(&format!("  {line}"));
            doc.notes.push(line);
            runs.push(r);
        }
    }
    for workload in ["drift", "zipf mix"] {
        let fig = Figure::Lines {
            title: format!(
                "RSS under {workload}, -m {limit} MiB (target {:.0} MiB)",
                1.1 * limit as f64 + 32.0
            ),
            x_label: "MiB written".into(),
            y_label: "server RSS (MiB)".into(),
            series: runs
                .iter()
                .filter(|r| r.workload == workload)
                .map(|r| (r.system.clone(), r.rss_curve.clone()))
                .collect(),
            log_x: false,
            log_y: false,
        };
        let name = format!("kvmem-{}", workload.replace(' ', "-"));
        for p in plot::save(&fig, &s.fig_dir.join(name))? {
            doc.figures.push(p.display().to_string());
        }
    }
    Ok(json!(runs))
}
