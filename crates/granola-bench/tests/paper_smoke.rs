//! Smoke test of `granola-bench paper`: the smallest experiment end to end
//! (`large`, two sizes, a fraction of a second per run) against a real
//! granola-kv process, and `kvmem` on a few thousand items against
//! memcached and Redis when they are installed (skipped loudly otherwise;
//! set `GRANOLA_REQUIRE_PEERS=1` to make their absence a failure).
//!
//! The granola-kv binary is looked for in `GRANOLA_KV_BIN`, then next to
//! this test's target directory (`cargo test --workspace` builds it). The
//! parts that need no server — the JSON and plot writers, the knee rules —
//! run in any case.

use std::path::PathBuf;

use granola_bench::paper::measure::knee_with;
use granola_bench::paper::plot::{self, Figure};
use granola_bench::paper::report::{num, text, Doc, Table};
use granola_bench::paper::servers::{which, Programs};
use granola_bench::paper::{self, PaperArgs};

fn granola_kv() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GRANOLA_KV_BIN") {
        return Some(PathBuf::from(p));
    }
    Programs::find(None, None, None, None).granola_kv
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("granola-paper-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn client_cpu() -> String {
    let n = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| s.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(1);
    (if n > 1 { 1 } else { 0 }).to_string()
}

fn json(path: PathBuf) -> serde_json::Value {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn writers_and_knee_rules() {
    let dir = tempdir("writers");
    // Hippos' rule: the highest achieved load meeting 95% with mean < 1 ms.
    let pts = [
        (100e3, 99e3, 80.0),
        (200e3, 199e3, 600.0),
        (300e3, 296e3, 1800.0),
        (400e3, 300e3, 40e3),
    ];
    assert_eq!(knee_with(&pts, Some(1000.0)), Some(1));
    assert_eq!(knee_with(&pts, None), Some(2));

    let mut doc = Doc::new("smoke", "writer smoke test", "test", true);
    let mut t = Table::new(&["case", "ops/s"]);
    t.row(vec![text("a"), num(1.5e5)]);
    doc.table = t;
    let path = doc.write(&dir, 0.1).unwrap();
    let v = json(path);
    assert_eq!(v["schema"], "granola-paper/1");
    assert_eq!(v["table"]["rows"][0][1], 150000.0);
    assert!(dir.join("smoke.md").exists());

    let figs = [
        Figure::Bars {
            title: "bars".into(),
            y_label: "ops/s".into(),
            categories: vec!["a".into(), "b".into()],
            series: vec![("x".into(), vec![Some(1.0), None])],
        },
        Figure::Lines {
            title: "lines".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![("s".into(), vec![(1.0, 2.0), (10.0, 3.0)])],
            log_x: true,
            log_y: true,
        },
        Figure::Heatmap {
            title: "heat".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_ticks: vec!["1".into(), "2".into()],
            y_ticks: vec!["a".into()],
            values: vec![vec![Some(-10.0), Some(20.0)]],
            crossover: vec![(1.2, 0.5)],
            crossover_label: "crossover".into(),
        },
    ];
    for (i, f) in figs.iter().enumerate() {
        for p in plot::save(f, &dir.join(format!("f{i}"))).unwrap() {
            assert!(
                std::fs::metadata(&p).unwrap().len() > 500,
                "{}",
                p.display()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn large_end_to_end() {
    let Some(bin) = granola_kv() else {
        assert!(
            std::env::var_os("GRANOLA_REQUIRE_PEERS").is_none(),
            "GRANOLA_REQUIRE_PEERS is set but granola-kv is not built"
        );
        eprintln!(
            "skipped: granola-kv binary not built (cargo build -p granola-kv --features baselines, or set GRANOLA_KV_BIN)"
        );
        return;
    };
    let dir = tempdir("large");
    let d = dir.to_string_lossy().into_owned();
    let args = PaperArgs::parse_from([
        "large",
        "--quick",
        "--cases",
        "1KiB,16KiB",
        "--duration",
        "0.3s",
        "--keys",
        "300",
        "--retries",
        "0",
        "--client-cpu",
        &client_cpu(),
        "--json-dir",
        &d,
        "--fig-dir",
        &d,
        "--granola-kv",
        &bin.to_string_lossy(),
        "--quiet",
    ])
    .unwrap();
    paper::run(args).unwrap();
    let v = json(dir.join("large.json"));
    let rows = v["table"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in rows {
        // hybrid and only-copy ops/s measured, payload moved.
        assert!(
            r[3].as_f64().unwrap() > 0.0 && r[7].as_f64().unwrap() > 0.0,
            "{r:?}"
        );
    }
    for run in v["runs"].as_array().unwrap() {
        assert_eq!(run["errors"], 0, "{run}");
    }
    for f in [
        "large-latency.png",
        "large-latency.svg",
        "large-throughput.png",
    ] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kvmem_against_peers() {
    let require = std::env::var_os("GRANOLA_REQUIRE_PEERS").is_some();
    let missing: Vec<&str> = ["memcached", "redis-server"]
        .into_iter()
        .filter(|p| which(p).is_none())
        .collect();
    if !missing.is_empty() {
        assert!(
            !require,
            "GRANOLA_REQUIRE_PEERS is set but {} not installed (run bench/setup.sh)",
            missing.join(", ")
        );
        eprintln!(
            "skipped: {} not installed (run bench/setup.sh)",
            missing.join(", ")
        );
        return;
    }
    let Some(bin) = granola_kv() else {
        assert!(
            !require,
            "GRANOLA_REQUIRE_PEERS is set but granola-kv is not built"
        );
        eprintln!("skipped: granola-kv binary not built");
        return;
    };
    let dir = tempdir("kvmem");
    let d = dir.to_string_lossy().into_owned();
    let args = PaperArgs::parse_from([
        "kvmem",
        "--quick",
        "--keys",
        "5000",
        "--client-cpu",
        &client_cpu(),
        "--json-dir",
        &d,
        "--fig-dir",
        &d,
        "--granola-kv",
        &bin.to_string_lossy(),
        "--quiet",
    ])
    .unwrap();
    paper::run(args).unwrap();
    let v = json(dir.join("kvmem.json"));
    let rows = v["table"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    for r in rows {
        assert_eq!(r[1].as_f64(), Some(5000.0), "every item stored: {r:?}");
        let per_item = r[4].as_f64().unwrap();
        assert!(per_item > 100.0 && per_item < 2000.0, "{r:?}");
    }
    // The drift part: granola-kv stored every set and every size after the
    // drift, and returned no wrong value.
    let drift = v["extra"]["drift"].as_array().unwrap();
    assert_eq!(drift.len(), 6, "2 workloads x 3 servers");
    for r in drift.iter().filter(|r| r["system"] == "granola-kv") {
        assert_eq!(r["sets_failed"], 0, "{r}");
        assert_eq!(r["sweep_ok"], r["sweep_total"], "{r}");
        assert_eq!(r["sweep_after_flush_ok"], r["sweep_total"], "{r}");
        assert_eq!(r["wrong_values"], 0, "{r}");
        assert!(r["rss_max_mib"].as_f64().unwrap() > 0.0, "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
