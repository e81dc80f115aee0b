//! `kvmem`: memory per item (issue 4's target: at or below memcached).
//!
//! Each server starts fresh (pinned, alone), its resident memory
//! (`VmRSS` of `/proc/PID/status`) is read, 1 M items of a 20 B key and a
//! 100 B value are loaded (memcached protocol for granola-kv and
//! memcached, RESP for Redis), and the RSS growth is divided by the item
//! count. The servers' own accounting is reported beside it (granola-kv and
//! memcached `stats` `bytes`, Redis `used_memory` growth), and the item
//! counts and evictions are checked.
//!
//! Then (`kvmem_drift`) RSS against the limit over time under size drift
//! and a Zipf mix of sizes, beside memcached with and without its slab
//! automover; and (`kvmem_collections`) list push/pop and hash set/delete
//! cost against the collection's size, beside Redis.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::load::Protocol;

use super::super::measure;
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Doc, Table};
use super::super::servers::{stat, Kind, Server, ServerSpec};
use super::super::Settings;
use super::kvmem_collections::Shape;
use super::{workload, System};

#[derive(Clone, Debug, serde::Serialize)]
struct Mem {
    system: String,
    items_loaded: u64,
    items_reported: Option<f64>,
    evictions: Option<f64>,
    rss_before: u64,
    rss_after: u64,
    rss_per_item: f64,
    own_bytes_per_item: Option<f64>,
    own_metric: &'static str,
    load_s: f64,
}

/// Runs the experiment.
pub fn run(s: &Settings) -> Result<Doc, String> {
    let mut doc = s.doc("kvmem", "Memory per item (issue 4): 20 B key + 100 B value");
    let items = s.keys.unwrap_or(if s.quick { 100_000 } else { 1_000_000 });
    let spec = format!("ycsb:keys={items},value=100,key_len=20");
    let w = workload(&spec)?;
    let mut systems = vec![System::new(
        ServerSpec::granola("granola-kv").memory(2048),
        Protocol::Memcached,
    )];
    for kind in [Kind::Memcached, Kind::Redis] {
        match s.peer_missing(kind) {
            Some(why) => {
                eprintln!("skipped: {why}");
                doc.notes.push(format!("skipped: {why}"));
            }
            None => systems.push(match kind {
                Kind::Memcached => {
                    System::new(ServerSpec::memcached().memory(2048), Protocol::Memcached)
                }
                _ => System::new(ServerSpec::redis(), Protocol::Resp),
            }),
        }
    }
    let mut rows = Vec::new();
    for sys in &systems {
        if !s.want(sys.label()) {
            continue;
        }
        let srv = Server::start(&sys.spec, &s.programs, s.server_cpu, &s.log_dir)?;
        std::thread::sleep(Duration::from_millis(300));
        let rss0 = srv.rss();
        let own0 = own_bytes(&srv)?;
        let t = Instant::now();
        let r = measure::load_into(&srv, &s.client(sys.protocol), w.as_ref())?;
        let load_s = t.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(300));
        let rss1 = srv.rss();
        let own1 = own_bytes(&srv)?;
        let (count, evictions) = counts(&srv)?;
        let m = Mem {
            system: sys.label().into(),
            items_loaded: r.counts.ops_good(),
            items_reported: count,
            evictions,
            rss_before: rss0,
            rss_after: rss1,
            rss_per_item: rss1.saturating_sub(rss0) as f64 / items as f64,
            own_bytes_per_item: match (own0.1, own1.1) {
                (Some(a), Some(b)) => Some((b - a) / items as f64),
                _ => None,
            },
            own_metric: own1.0,
            load_s,
        };
        s.say(&format!(
            "  {}: RSS {:.1} -> {:.1} MiB, {:.1} B/item; {} {:?} B/item; items {:?}, evictions {:?}",
            m.system,
            rss0 as f64 / 1048576.0,
            rss1 as f64 / 1048576.0,
            m.rss_per_item,
            m.own_metric,
            m.own_bytes_per_item.map(|x| x.round()),
            m.items_reported,
            m.evictions
        ));
        if m.items_reported.is_some_and(|c| c < items as f64) {
            doc.notes.push(format!(
                "{}: holds {:?} of {items} items after loading",
                m.system, m.items_reported
            ));
        }
        srv.stop();
        rows.push(m);
    }
    let mc = rows
        .iter()
        .find(|r| r.system == "memcached")
        .map(|r| r.rss_per_item);
    let mut table = Table::new(&[
        "server",
        "items",
        "RSS before MiB",
        "RSS after MiB",
        "RSS growth B/item",
        "own accounting B/item",
        "evictions",
        "vs memcached",
    ]);
    for m in &rows {
        table.row(vec![
            text(m.system.as_str()),
            round(m.items_reported.unwrap_or(f64::NAN), 0),
            round(m.rss_before as f64 / 1048576.0, 1),
            round(m.rss_after as f64 / 1048576.0, 1),
            round(m.rss_per_item, 1),
            m.own_bytes_per_item.map_or(serde_json::Value::Null, |x| {
                text(format!("{x:.1} ({})", m.own_metric))
            }),
            round(m.evictions.unwrap_or(f64::NAN), 0),
            mc.map_or(serde_json::Value::Null, |mc| round(m.rss_per_item / mc, 2)),
        ]);
    }
    if let (Some(g), Some(mc)) = (rows.iter().find(|r| r.system == "granola-kv"), mc) {
        doc.notes.push(format!(
            "granola-kv {:.0} B/item vs memcached {mc:.0} B/item: target ≤ memcached — {}",
            g.rss_per_item,
            if g.rss_per_item <= mc {
                "met"
            } else {
                "MISSED"
            }
        ));
    }
    doc.notes.push("RSS growth includes the allocator's and index's overhead and page rounding (granola-kv's pool may use 2 MiB transparent huge pages); the servers' own counts are what each says it stores (memcached's `bytes` excludes slab overhead and its hash table).".into());
    doc.table = table;
    doc.params =
        s.params(json!({"items": items, "key_len": 20, "value_len": 100, "workload": spec}));
    doc.paper = json!({
        "source": "issue 4 target; MEASUREMENTS.md on this machine: memcached 1.6.18 206 B/item, Redis 7.0.15 220 B/item",
        "memcached_b_per_item": 206, "redis_b_per_item": 220,
    });
    let drift = if s.want("drift") {
        super::kvmem_drift::run(s, &mut doc)?
    } else {
        serde_json::Value::Null
    };
    let mut collections = |shape: Shape| -> Result<serde_json::Value, String> {
        if s.want(shape.name()) {
            super::kvmem_collections::run(s, shape, &mut doc)
        } else {
            Ok(serde_json::Value::Null)
        }
    };
    let lists = collections(Shape::List)?;
    let hashes = collections(Shape::Hash)?;
    doc.extra = json!({ "memory": rows, "drift": drift, "lists": lists, "hashes": hashes });
    let fig = Figure::Bars {
        title: format!("Memory per item, {items} items of 20 B key + 100 B value"),
        y_label: "RSS growth per item (bytes)".into(),
        categories: rows.iter().map(|r| r.system.clone()).collect(),
        series: vec![(
            "RSS growth / items".into(),
            rows.iter().map(|r| Some(r.rss_per_item)).collect(),
        )],
    };
    // Only when the per-item case ran (`--cases lists` alone must not
    // overwrite its figure with an empty one).
    if !rows.is_empty() {
        for p in plot::save(&fig, &s.fig_dir.join("kvmem"))? {
            doc.figures.push(p.display().to_string());
        }
    }
    Ok(doc)
}

/// The server's own count of stored bytes: (metric name, value).
fn own_bytes(srv: &Server) -> Result<(&'static str, Option<f64>), String> {
    Ok(match srv.spec.kind {
        Kind::Granola | Kind::Memcached => ("stats bytes", stat(&srv.memcached_stats()?, "bytes")),
        Kind::Redis | Kind::Valkey => (
            "used_memory",
            stat(&srv.redis_info("memory")?, "used_memory"),
        ),
    })
}

/// (items held, evictions).
fn counts(srv: &Server) -> Result<(Option<f64>, Option<f64>), String> {
    Ok(match srv.spec.kind {
        Kind::Granola | Kind::Memcached => {
            let st = srv.memcached_stats()?;
            (stat(&st, "curr_items"), stat(&st, "evictions"))
        }
        Kind::Redis | Kind::Valkey => {
            let ks = srv.redis_info("keyspace")?;
            let keys = ks.iter().find(|(k, _)| k == "db0").and_then(|(_, v)| {
                v.split(',')
                    .find_map(|f| f.strip_prefix("keys="))
                    .and_then(|n| n.parse().ok())
            });
            let st = srv.redis_info("stats")?;
            (keys, stat(&st, "evicted_keys"))
        }
    })
}
