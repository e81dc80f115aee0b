//! `kvmem --cases lists,hashes`: the cost of one write against the size of
//! the collection it lands in, beside Redis.
//!
//! For each server (granola-kv and Redis over RESP, each started fresh on
//! the server CPU) and each size L (10, 100, 1k, 10k, 100k, 1M; `--quick`
//! stops at 100k; granola-kv keeps a list of up to about 580 of these
//! 10-byte elements in one item and rewrites it per write), a collection is filled to L with pipelined multi-value writes,
//! then pairs of writes that keep it at L are sent, pipelined 32 pairs
//! deep: `RPUSH key v` / `LPOP key` for lists, `HSET key new-field v` /
//! `HDEL key oldest-field` for hashes. The cost per operation is the
//! server's CPU time over the pairs (from `/proc`) divided by the number
//! of operations; wall time per operation is reported beside it. Every
//! reply is checked (an LPOP must return the element pushed L pushes
//! earlier; each HSET must add and each HDEL remove one field). Sizes and
//! servers are interleaved across repetitions; medians.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::load::{Protocol, Transport};

use super::super::measure::{median, rotation};
use super::super::plot::{self, Figure};
use super::super::report::{round, text, Table};
use super::super::servers::{Kind, Server, ServerSpec};
use super::super::Settings;

/// Pairs sent per measurement (each pair is two operations).
const PAIRS: usize = 100_000;
/// Pairs in flight at once.
const DEPTH: usize = 32;

/// Which collection a case writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// RPUSH + LPOP on a list.
    List,
    /// HSET of a new field + HDEL of the oldest on a hash.
    Hash,
}

impl Shape {
    /// The case name (`--cases`), also the figure's and JSON's name.
    pub fn name(self) -> &'static str {
        match self {
            Shape::List => "lists",
            Shape::Hash => "hashes",
        }
    }

    fn ops(self) -> &'static str {
        match self {
            Shape::List => "RPUSH/LPOP",
            Shape::Hash => "HSET/HDEL",
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
struct Cost {
    system: String,
    length: usize,
    rep: usize,
    ops: usize,
    server_cpu_us_per_op: f64,
    wall_us_per_op: f64,
}

/// Runs the case; returns its JSON and appends its table and notes.
pub fn run(
    s: &Settings,
    shape: Shape,
    doc: &mut super::super::report::Doc,
) -> Result<serde_json::Value, String> {
    let case = shape.name();
    let lengths: &[usize] = if s.quick {
        &[10, 100, 1_000, 10_000, 100_000]
    } else {
        &[10, 100, 1_000, 10_000, 100_000, 1_000_000]
    };
    let mut specs = vec![ServerSpec::granola("granola-kv").memory(2048)];
    match s.peer_missing(Kind::Redis) {
        Some(why) => doc.notes.push(format!("{case}: skipped Redis: {why}")),
        None => specs.push(ServerSpec::redis()),
    }
    let reps = s.reps_or(3);
    let mut costs = Vec::new();
    for rep in 0..reps {
        for si in rotation(specs.len(), rep) {
            let spec = &specs[si];
            let srv = Server::start(spec, &s.programs, s.server_cpu, &s.log_dir)?;
            std::thread::sleep(Duration::from_millis(300));
            let addr = srv.addr(Protocol::Resp, Transport::Tcp)?;
            for li in rotation(lengths.len(), rep) {
                let length = lengths[li];
                let key = format!("{case}:{length}:{rep}");
                let mut c = Resp::connect(addr)?;
                fill(&mut c, shape, &key, length)?;
                let cpu0 = srv.cpu_s();
                let t = Instant::now();
                pairs(&mut c, shape, &key, length, PAIRS)?;
                let wall = t.elapsed().as_secs_f64();
                let cpu = srv.cpu_s() - cpu0;
                let ops = 2 * PAIRS;
                let cost = Cost {
                    system: spec.label.clone(),
                    length,
                    rep,
                    ops,
                    server_cpu_us_per_op: cpu * 1e6 / ops as f64,
                    wall_us_per_op: wall * 1e6 / ops as f64,
                };
                s.say(&format!(
                    "  {case} {} L={length}: {:.3} us server CPU/op, {:.3} us wall/op",
                    cost.system, cost.server_cpu_us_per_op, cost.wall_us_per_op
                ));
                c.command(&[b"DEL", key.as_bytes()])?;
                costs.push(cost);
            }
            srv.stop();
        }
    }
    let med = |sys: &str, l: usize, f: fn(&Cost) -> f64| -> Option<(f64, f64, f64)> {
        let v: Vec<f64> = costs
            .iter()
            .filter(|c| c.system == sys && c.length == l)
            .map(f)
            .collect();
        (!v.is_empty()).then(|| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (median(&v), lo, hi)
        })
    };
    let mut table = Table::new(&[
        "size (elements)",
        "granola-kv CPU us/op (min-max)",
        "Redis CPU us/op (min-max)",
        "granola-kv / Redis CPU",
        "granola-kv wall us/op",
        "Redis wall us/op",
    ]);
    let span = |m: Option<(f64, f64, f64)>| {
        m.map_or(text("—"), |(m, lo, hi)| {
            text(format!("{m:.3} ({lo:.3}-{hi:.3})"))
        })
    };
    for &l in lengths {
        let g = med("granola-kv", l, |c| c.server_cpu_us_per_op);
        let r = med("redis", l, |c| c.server_cpu_us_per_op);
        table.row(vec![
            round(l as f64, 0),
            span(g),
            span(r),
            match (g, r) {
                (Some(g), Some(r)) => round(g.0 / r.0, 2),
                _ => serde_json::Value::Null,
            },
            med("granola-kv", l, |c| c.wall_us_per_op).map_or(text("—"), |m| round(m.0, 3)),
            med("redis", l, |c| c.wall_us_per_op).map_or(text("—"), |m| round(m.0, 3)),
        ]);
    }
    let top = *lengths.last().unwrap_or(&0);
    if let (Some(g), Some(r)) = (
        med("granola-kv", top, |c| c.server_cpu_us_per_op),
        med("redis", top, |c| c.server_cpu_us_per_op),
    ) {
        let ratio = g.0 / r.0;
        doc.notes.push(format!(
            "{case}: {} at {top} elements cost {ratio:.2}x Redis per operation in server CPU (target ≤ 2x): {}",
            shape.ops(),
            if ratio <= 2.0 { "met" } else { "MISSED" }
        ));
    }
    doc.notes.push(format!(
        "{case}: {PAIRS} {} pairs per point, {DEPTH} pairs in flight, one connection; medians of {reps}; server CPU from /proc",
        shape.ops()
    ));
    doc.notes.push(format!(
        "{case}: {} cost against size\n\n{}",
        shape.ops(),
        table.markdown()
    ));
    let fig = Figure::Lines {
        title: format!("{} server CPU per operation against size", shape.ops()),
        x_label: "collection size (elements)".into(),
        y_label: "server CPU per operation (us)".into(),
        series: ["granola-kv", "redis"]
            .iter()
            .map(|sys| {
                (
                    sys.to_string(),
                    lengths
                        .iter()
                        .filter_map(|&l| {
                            med(sys, l, |c| c.server_cpu_us_per_op).map(|m| (l as f64, m.0))
                        })
                        .collect(),
                )
            })
            .collect(),
        log_x: true,
        log_y: false,
    };
    for p in plot::save(&fig, &s.fig_dir.join(format!("kvmem-{case}")))? {
        doc.figures.push(p.display().to_string());
    }
    Ok(json!({ "pairs": PAIRS, "depth": DEPTH, "costs": costs }))
}

/// The `i`-th element written (a list element, or a hash field and its
/// value): self-describing, so an LPOP reply can be checked.
fn element(i: usize) -> String {
    format!("e{i:09}")
}

/// Fills the collection with elements 0..length, 1000 per command.
fn fill(c: &mut Resp, shape: Shape, key: &str, length: usize) -> Result<(), String> {
    let mut i = 0;
    while i < length {
        let n = (length - i).min(1000);
        let vals: Vec<String> = (i..i + n).map(element).collect();
        let (cmd, want): (&[u8], _) = match shape {
            Shape::List => (b"RPUSH", format!(":{}", i + n)),
            Shape::Hash => (b"HSET", format!(":{n}")),
        };
        let mut args: Vec<&[u8]> = vec![cmd, key.as_bytes()];
        for v in &vals {
            args.push(v.as_bytes());
            if shape == Shape::Hash {
                args.push(v.as_bytes());
            }
        }
        let reply = c.command(&args)?;
        if reply != want {
            return Err(format!("filling {key}: {reply}, want {want}"));
        }
        i += n;
    }
    Ok(())
}

/// `count` pairs that keep the collection at `length`, `DEPTH` in flight,
/// each reply checked (see the module docs).
fn pairs(c: &mut Resp, shape: Shape, key: &str, length: usize, count: usize) -> Result<(), String> {
    let mut sent = 0;
    let mut got = 0;
    let mut buf = Vec::new();
    while got < count {
        buf.clear();
        let n = DEPTH.min(count - sent);
        for k in 0..n {
            let new = element(length + sent + k);
            let old = element(sent + k);
            match shape {
                Shape::List => {
                    write_cmd(&mut buf, &[b"RPUSH", key.as_bytes(), new.as_bytes()]);
                    write_cmd(&mut buf, &[b"LPOP", key.as_bytes()]);
                }
                Shape::Hash => {
                    let (k, f) = (key.as_bytes(), new.as_bytes());
                    write_cmd(&mut buf, &[b"HSET", k, f, f]);
                    write_cmd(&mut buf, &[b"HDEL", k, old.as_bytes()]);
                }
            }
        }
        c.w.write_all(&buf).map_err(|e| e.to_string())?;
        sent += n;
        for _ in 0..n {
            let (want_write, want_remove) = match shape {
                Shape::List => (format!(":{}", length + 1), element(got)),
                Shape::Hash => (":1".to_string(), ":1".to_string()),
            };
            let write = c.reply()?;
            if write != want_write {
                return Err(format!("{key}: write reply {write}, want {want_write}"));
            }
            let remove = c.reply()?;
            if remove != want_remove {
                return Err(format!(
                    "{key}: removal reply {remove:?}, want {want_remove:?}"
                ));
            }
            got += 1;
        }
    }
    Ok(())
}

fn write_cmd(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A minimal blocking RESP2 client: integer, status, error and bulk
/// replies, rendered as text (`:n`, `+OK`, `-ERR..`, the bulk's bytes).
struct Resp {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Resp {
    fn connect(addr: std::net::SocketAddr) -> Result<Resp, String> {
        let w = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        w.set_nodelay(true).map_err(|e| e.to_string())?;
        w.set_read_timeout(Some(Duration::from_secs(30)))
            .map_err(|e| e.to_string())?;
        let r = BufReader::new(w.try_clone().map_err(|e| e.to_string())?);
        Ok(Resp { w, r })
    }

    fn command(&mut self, args: &[&[u8]]) -> Result<String, String> {
        let mut buf = Vec::new();
        write_cmd(&mut buf, args);
        self.w.write_all(&buf).map_err(|e| e.to_string())?;
        self.reply()
    }

    fn reply(&mut self) -> Result<String, String> {
        let mut line = String::new();
        self.r.read_line(&mut line).map_err(|e| e.to_string())?;
        let line = line.trim_end();
        match line.as_bytes().first() {
            Some(b'$') => {
                let n: i64 = line[1..].parse().map_err(|_| format!("bad bulk {line}"))?;
                if n < 0 {
                    return Ok("(nil)".into());
                }
                let mut data = vec![0u8; n as usize + 2];
                std::io::Read::read_exact(&mut self.r, &mut data).map_err(|e| e.to_string())?;
                data.truncate(n as usize);
                String::from_utf8(data).map_err(|e| e.to_string())
            }
            Some(b':' | b'+' | b'-') => Ok(line.to_owned()),
            _ => Err(format!("unexpected reply {line:?}")),
        }
    }
}
