//! Unsupported or invalid schemas: each must fail with a diagnostic that
//! names the file, the line and the construct.

use std::path::Path;

const DIR: &str = "tests/errors";

fn errors(name: &str) -> granola_build::Error {
    match granola_build::Config::new().generate(&[Path::new(DIR).join(name)], &[DIR]) {
        Ok(files) => panic!(
            "{name}: expected an error, generated {} file(s)",
            files.len()
        ),
        Err(e) => e,
    }
}

/// Asserts that some diagnostic is in `file` at `line` and mentions every
/// string in `words`.
#[track_caller]
fn expect(name: &str, line: u32, words: &[&str]) {
    let e = errors(name);
    let text = e.to_string();
    let hit = e.diagnostics().iter().any(|d| {
        d.file().is_some_and(|f| f.ends_with(name))
            && d.line() == Some(line)
            && words.iter().all(|w| d.message().contains(w))
    });
    assert!(
        hit,
        "{name}: no diagnostic at line {line} mentioning {words:?} in:\n{text}"
    );
    // The Display form carries the position too.
    assert!(text.contains(&format!("{name}:{line}:")), "{text}");
}

/// Constructs granola once rejected (enums, maps, oneofs) now compile.
#[test]
fn enums_maps_and_oneofs_compile() {
    for name in [
        "enum.proto",
        "nested_enum.proto",
        "enum_field.proto",
        "map.proto",
        "oneof.proto",
    ] {
        let files = granola_build::Config::new()
            .generate(&[Path::new(DIR).join(name)], &[DIR])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!files.is_empty(), "{name}");
    }
}

#[test]
fn enum_variant_clash_is_rejected() {
    // `MODE_FAST` loses its `MODE_` prefix and becomes `Fast`, as does `FAST`.
    expect(
        "enum_clash.proto",
        5,
        &["`FAST`", "variant `Fast`", "MODE_FAST"],
    );
}

#[test]
fn editions_get_a_clear_error() {
    expect("edition.proto", 1, &["editions", "syntax = \"proto3\""]);
}

#[test]
fn proto2_is_rejected() {
    expect("proto2.proto", 1, &["proto2 syntax", "not supported"]);
}

#[test]
fn required_is_rejected() {
    expect("required.proto", 4, &["required field `id`"]);
}

#[test]
fn group_is_rejected() {
    expect("group.proto", 4, &["group", "not supported"]);
}

#[test]
fn extend_is_rejected() {
    // descriptor.proto (imported only for the option) is not compiled, so
    // this is the only error.
    expect(
        "extend.proto",
        6,
        &["extension `my_option`", "google.protobuf.FieldOptions"],
    );
    assert_eq!(errors("extend.proto").diagnostics().len(), 1);
}

#[test]
fn extension_range_is_rejected() {
    expect("extensions.proto", 5, &["extension range", "not supported"]);
    expect("extensions.proto", 9, &["extension `extra`"]);
}

#[test]
fn import_public_is_rejected() {
    expect(
        "import_public.proto",
        3,
        &["`import public`", "not supported"],
    );
}

#[test]
fn field_number_above_max_is_rejected() {
    expect(
        "field_number.proto",
        5,
        &["field number 32769", "too_big", "32768"],
    );
    // 32768 itself is fine.
    assert_eq!(errors("field_number.proto").diagnostics().len(), 1);
}

#[test]
fn name_clashes_are_rejected() {
    // Enum field `kind` generates `set_kind()`, as does enum field
    // `set_kind` (its getter). (Fields whose snake-case names collide are
    // already rejected by the parser's JSON-name check.)
    expect(
        "name_clash.proto",
        6,
        &["method `set_kind`", "clashes", "`kind`"],
    );
}

#[test]
fn unusable_message_name_is_rejected() {
    expect("bad_name.proto", 3, &["message name `u32`"]);
}

#[test]
fn all_problems_are_reported() {
    let e = errors("many.proto");
    assert_eq!(e.diagnostics().len(), 3, "{e}");
    expect("many.proto", 4, &["message name `u64`"]);
    expect("many.proto", 11, &["set_kind", "clashes"]);
    expect("many.proto", 12, &["field number 40000"]);
}

#[test]
fn parse_errors_have_positions() {
    let e = errors("parse_error.proto");
    let d = &e.diagnostics()[0];
    assert!(d.file().unwrap().ends_with("parse_error.proto"), "{e}");
    assert_eq!(d.line(), Some(4), "{e}");
    assert!(d.column().is_some(), "{e}");
}

#[test]
fn missing_import_is_reported() {
    let e = errors("missing_import.proto");
    let text = e.to_string();
    assert!(text.contains("does_not_exist.proto"), "{text}");
    assert!(text.contains("missing_import.proto:3:"), "{text}");
}

#[test]
fn missing_input_is_reported() {
    let e = errors("no_such_file.proto");
    assert!(e.to_string().contains("no_such_file.proto"), "{e}");
}

#[test]
fn error_type_is_std_error() {
    fn is_error<E: std::error::Error + Send + Sync + 'static>(_: &E) {}
    let e = errors("bad_name.proto");
    is_error(&e);
    let d = &e.diagnostics()[0];
    assert_eq!(d.line(), Some(3));
    assert_eq!(d.column(), Some(1));
    assert!(e.to_string().starts_with(d.file().unwrap()));
}
