//! The `granola-build` binary writes the same files as the library.

use std::path::Path;
use std::process::Command;

#[test]
fn cli_writes_generated_files() {
    let out = std::env::temp_dir().join(format!("granola-build-cli-{}", std::process::id()));
    let status = Command::new(env!("CARGO_BIN_EXE_granola-build"))
        .args(["--out-dir"])
        .arg(&out)
        .args(["-I", "tests/golden", "tests/golden/nested.proto"])
        .status()
        .unwrap();
    assert!(status.success());
    let expected = granola_build::Config::new()
        .generate(&[Path::new("tests/golden/nested.proto")], &["tests/golden"])
        .unwrap();
    for f in expected {
        assert_eq!(
            std::fs::read_to_string(out.join(&f.name)).unwrap(),
            f.content
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn cli_reports_errors_with_positions() {
    let out = std::env::temp_dir().join(format!("granola-build-cli-err-{}", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_granola-build"))
        .arg("--out-dir")
        .arg(&out)
        .args(["-I", "tests/errors", "tests/errors/many.proto"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr =
        String::from_utf8(output.stdout.into_iter().chain(output.stderr).collect()).unwrap();
    assert!(
        stderr.contains("tests/errors/many.proto:4:1: message name `u64` cannot be used in Rust"),
        "{stderr}"
    );
    assert!(
        stderr.contains("many.proto:12:16: field number 40000"),
        "{stderr}"
    );
    assert!(!out.exists());
}
