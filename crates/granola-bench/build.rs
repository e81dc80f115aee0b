//! Generates code for `schemas/shapes.proto` three times: granola's
//! (granola-build, into `$OUT_DIR/granola/`), prost's (prost-build over
//! protox, a pure Rust protobuf compiler, into `$OUT_DIR`) and buffa's
//! (buffa-build over the same protox descriptor set, into
//! `$OUT_DIR/buffa/`), so no `protoc` is needed; and
//! granola's code for the KV server's native protocol
//! (`../granola-kv/proto/kv.proto`, into `$OUT_DIR/kv/`), which the load
//! generator speaks.

fn main() {
    let proto = "schemas/shapes.proto";
    println!("cargo:rerun-if-changed={proto}");
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let out = out_dir.join("granola");
    std::fs::create_dir_all(&out).expect("create OUT_DIR/granola");
    if let Err(e) = granola_build::Config::new()
        .out_dir(&out)
        .views(true)
        .compile_protos(&[proto], &["schemas"])
    {
        panic!("granola-build failed:\n{e}");
    }

    let kv = "../granola-kv/proto/kv.proto";
    println!("cargo:rerun-if-changed={kv}");
    let kv_out = out_dir.join("kv");
    std::fs::create_dir_all(&kv_out).expect("create OUT_DIR/kv");
    // As the server compiles it: no `unknown_fields`.
    if let Err(e) = granola_build::Config::new()
        .out_dir(&kv_out)
        .unknown_fields(false)
        .compile_protos(&[kv], &["../granola-kv/proto"])
    {
        panic!("granola-build failed on kv.proto:\n{e}");
    }

    let fds = protox::compile([proto], ["schemas"]).expect("protox failed to compile shapes.proto");
    // Default prost configuration: `bytes` fields are `Vec<u8>` and `string`
    // fields are `String` (not `bytes::Bytes`).
    let fds_path = out_dir.join("shapes.fds");
    std::fs::write(&fds_path, prost::Message::encode_to_vec(&fds)).expect("write shapes.fds");
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("prost-build failed");

    // buffa with its borrowed views; owned types keep the defaults
    // (`Vec<u8>`, `String`), as prost's do.
    let buffa_out = out_dir.join("buffa");
    std::fs::create_dir_all(&buffa_out).expect("create OUT_DIR/buffa");
    buffa_build::Config::new()
        .descriptor_set(&fds_path)
        .files(&["shapes.proto"])
        .out_dir(&buffa_out)
        .generate_views(true)
        .include_file("mod.rs")
        .compile()
        .expect("buffa-build failed");
}
