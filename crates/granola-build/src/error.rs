//! Errors: every problem found in the input, with its location.

use std::fmt;

/// One problem, at a position in a `.proto` file when there is one.
///
/// Displays as `file:line:column: message` (parts that are unknown are
/// left out), the format editors and terminals turn into links.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
    message: String,
}

impl Diagnostic {
    /// A diagnostic at `file:line:column` (1-based).
    pub fn new(
        file: impl Into<String>,
        line: u32,
        column: u32,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            file: Some(file.into()),
            line: Some(line),
            column: Some(column),
            message: message.into(),
        }
    }

    /// A diagnostic about a whole file, or with no file at all.
    pub fn without_position(file: Option<String>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file,
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// The file (the path it was found at when known, else its name
    /// relative to an include directory).
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// The 1-based line.
    pub fn line(&self) -> Option<u32> {
        self.line
    }

    /// The 1-based column.
    pub fn column(&self) -> Option<u32> {
        self.column
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}:")?;
            if let Some(line) = self.line {
                write!(f, "{line}:")?;
                if let Some(column) = self.column {
                    write!(f, "{column}:")?;
                }
            }
            f.write_str(" ")?;
        }
        f.write_str(&self.message)
    }
}

/// Why code generation failed: one or more [`Diagnostic`]s (all problems
/// found, not just the first), or an I/O failure writing the output.
///
/// `Display` prints one diagnostic per line:
///
/// ```text
/// schemas/bad.proto:4:1: enum `Color` is not supported by granola (use an integer field such as `int32` instead)
/// ```
#[derive(Debug)]
pub struct Error {
    diagnostics: Vec<Diagnostic>,
    io: Option<std::io::Error>,
}

impl Error {
    /// An error made of `diagnostics` (must not be empty).
    pub fn new(diagnostics: Vec<Diagnostic>) -> Error {
        debug_assert!(!diagnostics.is_empty());
        Error {
            diagnostics,
            io: None,
        }
    }

    pub(crate) fn io(what: String, err: std::io::Error) -> Error {
        Error {
            diagnostics: vec![Diagnostic::without_position(None, format!("{what}: {err}"))],
            io: Some(err),
        }
    }

    /// Every problem found, in file order.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.as_ref().map(|e| e as _)
    }
}

/// Converts a protox (parse or check) error into diagnostics with
/// line/column positions. `path_of` maps a proto file name (relative to an
/// include directory) to the path to report.
pub(crate) fn from_protox(err: &protox::Error, path_of: &dyn Fn(&str) -> String) -> Error {
    let file = err.file().map(path_of);
    let mut out = Vec::new();
    collect_miette(err, file.as_deref(), &mut out);
    if out.is_empty() {
        out.push(Diagnostic::without_position(file, err.to_string()));
    }
    Error::new(out)
}

fn collect_miette(d: &dyn miette::Diagnostic, file: Option<&str>, out: &mut Vec<Diagnostic>) {
    let mut message = d.to_string();
    if message.contains("found 'edition'") {
        // protox 0.10 parses proto2/proto3 only.
        message = "editions (`edition = \"2023\"`) are not supported by granola's schema parser yet; write `syntax = \"proto3\";` (editions with default features are proto3 with explicit presence, which every granola field already has)".to_owned();
    }
    if let Some(help) = d.help() {
        message.push_str(&format!(" (help: {help})"));
    }
    let position = d.source_code().and_then(|src| {
        let label = d.labels()?.next()?;
        let contents = src.read_span(label.inner(), 0, 0).ok()?;
        let line = u32::try_from(contents.line() + 1).ok()?;
        let column = u32::try_from(contents.column() + 1).ok()?;
        let mut message = message.clone();
        if let Some(text) = label.label() {
            message.push_str(&format!(": {text}"));
        }
        Some((line, column, message))
    });
    let related: Vec<&dyn miette::Diagnostic> =
        d.related().map(Iterator::collect).unwrap_or_default();
    match position {
        Some((line, column, message)) => out.push(Diagnostic {
            file: file.map(str::to_owned),
            line: Some(line),
            column: Some(column),
            message,
        }),
        None if related.is_empty() => out.push(Diagnostic::without_position(
            file.map(str::to_owned),
            message,
        )),
        None => {}
    }
    for r in related {
        // Related parse errors carry no source of their own: use the file's.
        let before = out.len();
        collect_miette(r, file, out);
        if out.len() > before && out[before].line.is_none() {
            if let (Some(src), Some(label)) =
                (d.source_code(), r.labels().and_then(|mut l| l.next()))
            {
                if let Ok(c) = src.read_span(label.inner(), 0, 0) {
                    out[before].line = u32::try_from(c.line() + 1).ok();
                    out[before].column = u32::try_from(c.column() + 1).ok();
                }
            }
        }
    }
}
