//! Compiles the native protocol schema (proto/kv.proto) twice: with
//! granola-build (the server's own messages, `$OUT_DIR/kv.rs`) and with
//! prost-build over protox, a pure-Rust protobuf compiler, so no `protoc` is
//! needed (the prost baseline of `--serializer prost`,
//! `$OUT_DIR/prost/kv.rs`). The flatbuffers and capnp baselines' code is
//! checked in (`src/server/baselines/gen/`, `bench/regen-baselines.sh`).

fn main() {
    println!("cargo:rerun-if-changed=proto");
    // No `unknown_fields`: the server answers requests and never forwards
    // a message, so there is nothing a newer client's fields would survive
    // into (they are skipped, as before).
    if let Err(e) = granola_build::Config::new()
        .unknown_fields(false)
        .compile_protos(&["proto/kv.proto"], &["proto"])
    {
        panic!("granola-build failed:\n{e}");
    }
    #[cfg(feature = "baselines")]
    compile_prost_baseline();
}

/// The prost baseline (`--features baselines`).
#[cfg(feature = "baselines")]
fn compile_prost_baseline() {
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let prost_out = out_dir.join("prost");
    std::fs::create_dir_all(&prost_out).expect("create OUT_DIR/prost");
    let fds = protox::compile(["proto/kv.proto"], ["proto"]).expect("protox failed on kv.proto");
    // Default prost configuration: `bytes` fields are `Vec<u8>` (as in
    // granola-bench's microbenchmark).
    prost_build::Config::new()
        .out_dir(&prost_out)
        .compile_fds(fds)
        .expect("prost-build failed on kv.proto");
}
