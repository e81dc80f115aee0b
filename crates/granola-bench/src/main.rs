//! `granola-bench` command line:
//! `granola-bench ser [--quick] [--json out.json] ...` (serialization),
//! `granola-bench load --protocol resp --addr 127.0.0.1:6379 --workload ycsb --rate 50k ...`
//! (load generator; see `docs/load-generator.md`), and
//! `granola-bench paper <name>|all [--quick]` (the papers' experiments; see `granola_bench::paper`),
//! `granola-bench pingpong --addr 127.0.0.1:6379` (blocking-command round trips), and
//! `granola-bench fanout --addr 127.0.0.1:6379` (Pub/Sub fan-out).
#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use granola_bench::load::{self, LoadConfig, Mode, Protocol, Transport};
use granola_bench::ser::{self, RunConfig, Shape};
use granola_bench::workload::WorkloadSpec;

#[derive(Parser, Debug)]
#[command(name = "granola-bench", about = "granola benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serialization microbenchmark: serialize and decode-and-touch, cold source data.
    Ser(SerArgs),
    /// Load generator: open-loop Poisson (or closed-loop) load against a
    /// memcached, Redis or granola-kv server; every response checked.
    Load(LoadArgs),
    /// The papers' experiments (Cornflakes, Hippos, zFlatBuffers): JSON +
    /// PNG + SVG; `paper all --quick` for a few minutes' smoke run.
    Paper(granola_bench::paper::PaperArgs),
    /// Echo benchmark (issue #3): serialize-and-send vs copying variants and
    /// peer libraries, copy vs gather of cold pieces, MSG_ZEROCOPY.
    Echo(granola_bench::echo::EchoArgs),
    /// Blocking-command round trips (LPUSH/BLPOP ping-pong) against a
    /// Redis-protocol server; `--idle-clients N` parks N clients in BLPOP.
    /// Prints one JSON line.
    Pingpong(granola_bench::pingpong::PingPongArgs),
    /// Pub/Sub fan-out: one publisher, N subscribers, every message
    /// checked in order. Prints one JSON line.
    Fanout(granola_bench::fanout::FanoutArgs),
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Workloads (--workload NAME[:key=value,...]):
  ycsb[:keys=1M,zipf=0.99,value=4k,key_len=30,shape=single|multi:K|list:K|vector:K]
  google[:keys=100k,list=1-8,max_total=8k,zipf=0.99]
  twitter[:file=bench/data/twitter-sample.csv,max_keys=4M,split=8k]   (trace)
  twitter[:keys=100k,large_frac=0.32,put_frac=0.08,zipf=0.99,split=8k] (synthetic)
  cdn[:objects=10k,mean=20000,max=116000000,sub=8k,zipf=0.99]
  etc|usr|app|var|sys[:keys=100k,zipf=0.99]   (Facebook pools)
  echo[:shape=1k|2x2048|128k]

Examples:
  granola-bench load --protocol resp --addr 127.0.0.1:6379 --workload ycsb:keys=100k --rate 50k
  granola-bench load --protocol memcached --addr 127.0.0.1:11211 --workload etc --sweep 20k:200k:10 --json out.json
  granola-bench load --protocol resp --addr 127.0.0.1:6379 --closed --depth 16 --workload ycsb:value=4k --cpus 1
  granola-bench load --protocol memcached --transport udp --workload usr --rate 100k
  granola-bench load --protocol memcached --transport xdp --xdp-if veth1 --addr 10.0.0.1:11211 --workload ycsb --closed
  granola-bench load --protocol native:prost --addr 127.0.0.1:11311 --workload google:list=1-8 --closed --depth 16
      (granola-kv --serializer prost; also native:flatbuffers, native:capnp)")]
struct LoadArgs {
    /// Wire protocol: memcached, resp, native (granola payloads), or
    /// native:SERIALIZER for granola-kv --serializer prost|flatbuffers|capnp
    /// (native frames, that library's payloads; no echo workload).
    #[arg(long, default_value = "memcached")]
    protocol: String,
    /// Transport: tcp, udp (memcached get / native), or xdp (the same
    /// datagrams over an AF_XDP socket on --xdp-if; one client thread;
    /// needs root).
    #[arg(long, default_value = "tcp")]
    transport: String,
    /// --transport xdp: the client's network interface.
    #[arg(long, default_value = "")]
    xdp_if: String,
    /// --transport xdp: attach the XDP program in generic (skb) mode.
    #[arg(long)]
    xdp_generic: bool,
    /// --transport xdp: the server's MAC as IP=MAC (default: the kernel's
    /// neighbour table).
    #[arg(long)]
    xdp_neighbour: Vec<String>,
    /// Server address.
    #[arg(long, default_value = "127.0.0.1:11211")]
    addr: std::net::SocketAddr,
    /// Workload and its parameters (see below).
    #[arg(long, default_value = "ycsb")]
    workload: String,
    /// Offered load of one open-loop run (ops/s; 50k, 1.5M).
    #[arg(long)]
    rate: Option<String>,
    /// Offered loads of a sweep, comma separated.
    #[arg(long, value_delimiter = ',')]
    rates: Vec<String>,
    /// A sweep of evenly spaced offered loads: start:end:steps.
    #[arg(long)]
    sweep: Option<String>,
    /// Closed loop: --depth ops outstanding per connection.
    #[arg(long)]
    closed: bool,
    /// Outstanding ops per connection in closed loop (pipelining depth).
    #[arg(long, default_value_t = 1)]
    depth: u32,
    /// Client threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Connections per thread.
    #[arg(long, default_value_t = 4)]
    conns: usize,
    /// Measurement window per run (10s, 500ms).
    #[arg(long, default_value = "10s")]
    duration: String,
    /// Warm-up before each window.
    #[arg(long, default_value = "1s")]
    warmup: String,
    /// Cap on measured ops per run.
    #[arg(long)]
    requests: Option<String>,
    /// Per-request deadline.
    #[arg(long, default_value = "1s")]
    timeout: String,
    /// CPUs to pin client threads to, comma separated (e.g. 1).
    #[arg(long, value_delimiter = ',')]
    cpus: Vec<usize>,
    /// Skip the loader phase (the server already holds the workload's keys).
    #[arg(long)]
    no_load: bool,
    /// Only run the loader phase.
    #[arg(long)]
    load_only: bool,
    /// Loader: outstanding SETs per connection.
    #[arg(long, default_value_t = 32)]
    load_depth: u32,
    /// Write the runs as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Exit with failure if any request failed (errors or timeouts).
    #[arg(long)]
    strict: bool,
    /// Seed of the workload RNGs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(clap::Args, Debug)]
struct SerArgs {
    /// Write the results as a JSON array of records to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Fast smoke run (a few seconds): fewer messages and repetitions.
    #[arg(long)]
    quick: bool,
    /// Shapes to run (comma separated): a,a-hot,b,c,d,e-64k,e-1m.
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<String>,
    /// Libraries to run (comma separated names as printed; default: all).
    #[arg(long, value_delimiter = ',')]
    libs: Vec<String>,
    /// Repetitions per (library, shape); default 15, quick 3.
    #[arg(long)]
    reps: Option<usize>,
    /// CPU to pin the process to.
    #[arg(long, default_value_t = 1)]
    cpu: usize,
    /// Do not pin to a CPU.
    #[arg(long)]
    no_pin: bool,
    /// Size of the source heap area the message fields are spread over (MiB).
    #[arg(long, default_value_t = 256)]
    source_mib: usize,
    /// Size of the buffer streamed over to flush the caches between batches (MiB).
    #[arg(long, default_value_t = 64)]
    flush_mib: usize,
    /// Target source bytes per batch (MiB); default 64, quick 8.
    #[arg(long)]
    batch_mib: Option<usize>,
    /// Maximum messages per batch; default 16384, quick 2048.
    #[arg(long)]
    max_messages: Option<usize>,
    /// Seed for source data, size sampling and shuffling.
    #[arg(long, default_value_t = 0x0067_7261_6e6f_6c61)]
    seed: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Ser(args) => match run_ser(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Load(args) => match run_load(args) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Paper(args) => match granola_bench::paper::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Fanout(args) => print_json(granola_bench::fanout::run(&args)),
        Command::Pingpong(args) => print_json(granola_bench::pingpong::run(&args)),
        Command::Echo(args) => match granola_bench::echo::main(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

fn run_load(a: LoadArgs) -> Result<ExitCode, String> {
    let spec: WorkloadSpec = a.workload.parse()?;
    let workload = spec.build()?;
    let mut rates = Vec::new();
    if let Some(r) = &a.rate {
        rates.push(load::parse_rate(r)?);
    }
    for r in &a.rates {
        rates.push(load::parse_rate(r)?);
    }
    if let Some(s) = &a.sweep {
        rates.extend(load::parse_sweep(s)?);
    }
    if a.closed && !rates.is_empty() {
        return Err("--closed takes no --rate/--rates/--sweep".into());
    }
    if !a.closed && rates.is_empty() && !a.load_only {
        return Err("give --rate, --rates or --sweep (open loop), or --closed".into());
    }
    let cfg = LoadConfig {
        addr: a.addr,
        protocol: Protocol::parse(&a.protocol)?,
        transport: Transport::parse(&a.transport)?,
        mode: if a.closed {
            Mode::Closed { depth: a.depth }
        } else {
            Mode::Open {
                rate: rates.first().copied().unwrap_or(1.0),
            }
        },
        threads: a.threads.max(1),
        conns: a.conns.max(1),
        duration: load::parse_duration(&a.duration)?,
        warmup: load::parse_duration(&a.warmup)?,
        requests: a
            .requests
            .as_deref()
            .map(load::parse_count)
            .transpose()?
            .map(|n| n as u64),
        timeout: load::parse_duration(&a.timeout)?,
        cpus: a.cpus.clone(),
        seed: a.seed,
        load_depth: a.load_depth.max(1),
        xdp: granola_net::XdpConfig {
            interface: a.xdp_if.clone(),
            generic: a.xdp_generic,
            neighbours: a
                .xdp_neighbour
                .iter()
                .map(|s| {
                    granola_net::xdp::parse_neighbour(s)
                        .ok_or_else(|| format!("--xdp-neighbour {s:?}: not IP=MAC"))
                })
                .collect::<Result<_, _>>()?,
            ..granola_net::XdpConfig::default()
        },
        ..LoadConfig::default()
    };
    eprintln!("workload {}", workload.describe());
    let mut failures = 0;
    let loaded = if a.no_load || workload.load_count() == 0 {
        None
    } else {
        eprintln!("loading {} items over TCP ...", workload.load_count());
        let r = load::load(&cfg, workload.as_ref())?;
        eprintln!(
            "loaded {} ops in {:.1} s ({:.0} ops/s), {} failed requests",
            r.counts.ops, r.wall_s, r.achieved_rps, r.errors
        );
        failures += r.errors;
        Some(r)
    };
    let (runs, knee) = if a.load_only {
        (Vec::new(), None)
    } else if a.closed {
        let r = load::run(&cfg, workload.as_ref())?;
        println!("{}", r.summary());
        (vec![r], None)
    } else {
        let s = load::sweep(&cfg, workload.as_ref(), &rates, !a.quiet)?;
        for r in &s.runs {
            println!("{}", r.summary());
        }
        if s.runs.len() > 1 {
            match &s.knee {
                Some(k) => println!(
                    "knee (achieved >= 95% of offered): offered {:.0} achieved {:.0} ops/s, p99 {:.1} us",
                    k.offered_rps, k.achieved_rps, k.p99_us
                ),
                None => println!("knee: no run achieved 95% of its offered load"),
            }
        }
        (s.runs, s.knee)
    };
    for r in &runs {
        failures += r.errors;
        if r.errors > 0 {
            eprintln!(
                "warning: {} failed requests (errors {:?}, timeouts {})",
                r.errors, r.counts.errors, r.counts.req_timeout
            );
        }
    }
    if let Some(path) = &a.json {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let doc = serde_json::json!({ "load": loaded, "runs": runs, "knee": knee });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(if a.strict && failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn run_ser(args: SerArgs) -> Result<(), String> {
    let shapes = if args.shapes.is_empty() {
        Shape::ALL.to_vec()
    } else {
        args.shapes
            .iter()
            .map(|s| Shape::from_name(s).ok_or_else(|| format!("unknown shape {s:?}")))
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut libs = ser::all_libs();
    if !args.libs.is_empty() {
        for want in &args.libs {
            if !libs.iter().any(|l| l.name() == want) {
                let names: Vec<_> = libs.iter().map(|l| l.name().to_owned()).collect();
                return Err(format!(
                    "unknown library {want:?}; known: {}",
                    names.join(",")
                ));
            }
        }
        libs.retain(|l| args.libs.iter().any(|w| w == l.name()));
    }
    let mut cfg = if args.quick {
        RunConfig::quick()
    } else {
        RunConfig::default()
    };
    cfg.shapes = shapes;
    cfg.seed = args.seed;
    cfg.source_bytes = args.source_mib << 20;
    cfg.flush_bytes = args.flush_mib << 20;
    if let Some(r) = args.reps {
        cfg.reps = r.max(1);
    }
    if let Some(b) = args.batch_mib {
        cfg.batch_bytes = b << 20;
    }
    if let Some(m) = args.max_messages {
        cfg.max_messages = m.max(1);
    }

    if !args.no_pin {
        let ok = core_affinity::set_for_current(core_affinity::CoreId { id: args.cpu });
        if !ok {
            eprintln!("warning: could not pin to CPU {}", args.cpu);
        } else {
            eprintln!("pinned to CPU {}", args.cpu);
        }
    }

    let records = ser::run(&cfg, &mut libs, |msg| eprintln!("{msg}"));
    print!("{}", ser::format_table(&records));
    if let Some(path) = args.json {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(&path, ser::to_json(&records))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// Prints a run's report as one JSON line (or its error).
fn print_json<T: serde::Serialize>(r: std::io::Result<T>) -> ExitCode {
    match r {
        Ok(r) => {
            println!(
                "{}",
                serde_json::to_string(&r).expect("a report serializes")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
