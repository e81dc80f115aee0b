//! Compiles every schema in `schemas/` with granola-build into `$OUT_DIR`.

fn main() {
    let mut protos: Vec<std::path::PathBuf> = std::fs::read_dir("schemas")
        .expect("read schemas/")
        .map(|e| e.expect("read schemas/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "proto"))
        .collect();
    protos.sort();
    println!("cargo:rerun-if-changed=schemas");
    // Read-only views too (`Config::views`), tested in tests/views.rs.
    if let Err(e) = granola_build::Config::new()
        .views(true)
        .compile_protos(&protos, &["schemas"])
    {
        panic!("granola-build failed:\n{e}");
    }
    // `lang.proto` again with the Config options prost users expect: the
    // well-known types taken from the first build (extern_path), attributes
    // on types and fields, and one include file for every package.
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("ext");
    let r = granola_build::Config::new()
        .out_dir(&out)
        .extern_path(".google.protobuf", "crate::google::protobuf")
        .type_attribute(".lang.Shape", "#[must_use]")
        .type_attribute(".lang.Color", "#[doc(alias = \"Colour\")]")
        .field_attribute(".lang.Shape.body", "#[doc(hidden)]")
        .include_file("mod.rs")
        .compile_protos(&["schemas/lang.proto"], &["schemas"]);
    if let Err(e) = r {
        panic!("granola-build (ext) failed:\n{e}");
    }
}
