//! Generates the prost code for `schemas/shapes.proto` with protox (a pure
//! Rust protobuf compiler), so no `protoc` binary is needed.

fn main() {
    let proto = "schemas/shapes.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["schemas"]).expect("protox failed to compile shapes.proto");
    // Default prost configuration: `bytes` fields are `Vec<u8>` and `string`
    // fields are `String` (not `bytes::Bytes`).
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("prost-build failed");
}
