//! Generates code for `schemas/shapes.proto` twice: granola's (granola-build,
//! into `$OUT_DIR/granola/`) and prost's (prost-build over protox, a pure
//! Rust protobuf compiler, into `$OUT_DIR`), so no `protoc` is needed.

fn main() {
    let proto = "schemas/shapes.proto";
    println!("cargo:rerun-if-changed={proto}");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("granola");
    std::fs::create_dir_all(&out).expect("create OUT_DIR/granola");
    if let Err(e) = granola_build::Config::new()
        .out_dir(&out)
        .compile_protos(&[proto], &["schemas"])
    {
        panic!("granola-build failed:\n{e}");
    }
    let fds = protox::compile([proto], ["schemas"]).expect("protox failed to compile shapes.proto");
    // Default prost configuration: `bytes` fields are `Vec<u8>` and `string`
    // fields are `String` (not `bytes::Bytes`).
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("prost-build failed");
}
