//! Compiles every schema in `schemas/` with granola-build into `$OUT_DIR`.

fn main() {
    let mut protos: Vec<std::path::PathBuf> = std::fs::read_dir("schemas")
        .expect("read schemas/")
        .map(|e| e.expect("read schemas/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "proto"))
        .collect();
    protos.sort();
    println!("cargo:rerun-if-changed=schemas");
    if let Err(e) = granola_build::compile_protos(&protos, &["schemas"]) {
        panic!("granola-build failed:\n{e}");
    }
}
