//! `granola-bench` command line: `granola-bench ser [--quick] [--json out.json] ...`.
#![deny(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use granola_bench::ser::{self, RunConfig, Shape};

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
    }
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
