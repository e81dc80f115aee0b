//! `granola-build`: compile `.proto` files to granola Rust code from the
//! command line (the same output as the library's `compile_protos`).
//!
//! ```text
//! granola-build --out-dir src/generated -I schemas schemas/kv.proto
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Compile proto3 schemas into granola Rust code.
#[derive(Parser, Debug)]
#[command(name = "granola-build", version, about)]
struct Args {
    /// Directory to write `<package>.rs` files to (created if missing).
    #[arg(short = 'o', long, value_name = "DIR")]
    out_dir: PathBuf,

    /// Directory to look up imports in (repeatable). Defaults to the
    /// directory of each input file.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    includes: Vec<PathBuf>,

    /// Generate messages without an `unknown_fields` field (a re-encode
    /// then drops the fields the schema does not know, as prost does).
    #[arg(long)]
    no_unknown_fields: bool,

    /// Also generate a read-only `<Name>View<'a>` per message.
    #[arg(long)]
    views: bool,

    /// The `.proto` files to compile.
    #[arg(required = true, value_name = "FILE")]
    protos: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = granola_build::Config::new()
        .out_dir(&args.out_dir)
        .emit_rerun_if_changed(false)
        .unknown_fields(!args.no_unknown_fields)
        .views(args.views)
        .compile_protos(&args.protos, &args.includes);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            for d in e.diagnostics() {
                eprintln!("error: {d}");
            }
            ExitCode::FAILURE
        }
    }
}
