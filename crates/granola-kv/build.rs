//! Compiles the native protocol schema (proto/kv.proto) with granola-build.

fn main() {
    println!("cargo:rerun-if-changed=proto");
    if let Err(e) = granola_build::compile_protos(&["proto/kv.proto"], &["proto"]) {
        panic!("granola-build failed:\n{e}");
    }
}
