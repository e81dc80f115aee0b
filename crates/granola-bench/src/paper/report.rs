//! The JSON document each experiment writes, and its table as Markdown.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::env::{self, Machine};
use super::measure::Point;

/// Version tag of the JSON layout (bump on incompatible changes).
pub const SCHEMA: &str = "granola-paper/1";

/// A table: column names and rows of cells (numbers, strings or null).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Table {
    /// Column headers (with units).
    pub columns: Vec<String>,
    /// Rows; each as long as `columns`.
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// A table with these columns.
    pub fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<Value>) {
        self.rows.push(cells);
    }

    /// GitHub Markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        s += &format!("| {} |\n", self.columns.join(" | "));
        s += &format!(
            "|{}\n",
            self.columns.iter().map(|_| "---|").collect::<String>()
        );
        for r in &self.rows {
            let cells: Vec<String> = r.iter().map(cell).collect();
            s += &format!("| {} |\n", cells.join(" | "));
        }
        s
    }
}

fn cell(v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if n.is_i64() || n.is_u64() || x.abs() >= 100.0 {
                format!("{x:.0}")
            } else if x.abs() >= 10.0 {
                format!("{x:.1}")
            } else {
                format!("{x:.2}")
            }
        }
        other => other.to_string(),
    }
}

/// A number cell (NaN and infinities become null).
pub fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// A number cell rounded to `digits` decimals.
pub fn round(x: f64, digits: i32) -> Value {
    let m = 10f64.powi(digits);
    num((x * m).round() / m)
}

/// A text cell.
pub fn text(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

/// One experiment's output (`<json-dir>/<experiment>.json`).
///
/// See the [module docs](super) for the field-by-field layout.
#[derive(Clone, Debug, Serialize)]
pub struct Doc {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// Experiment name (`redis`, `threshold`, …).
    pub experiment: String,
    /// What it reproduces.
    pub title: String,
    /// The command line that produced it.
    pub command: String,
    /// `--quick` run.
    pub quick: bool,
    /// UTC start time.
    pub started: String,
    /// UTC end time.
    pub finished: String,
    /// Wall time, s.
    pub elapsed_s: f64,
    /// Machine and load.
    pub machine: Machine,
    /// Parameters (durations, repetitions, connections, keys, …).
    pub params: Value,
    /// The result table (medians).
    pub table: Table,
    /// The paper's published numbers for the same table.
    pub paper: Value,
    /// Experiment-specific results (heatmap matrix, curves, memory, …).
    pub extra: Value,
    /// Every run.
    pub runs: Vec<Point>,
    /// Remarks: deviations, client-bound runs, missing peers.
    pub notes: Vec<String>,
    /// Figures written (paths).
    pub figures: Vec<String>,
}

impl Doc {
    /// An empty document for `experiment`, stamped now.
    pub fn new(experiment: &str, title: &str, command: &str, quick: bool) -> Doc {
        Doc {
            schema: SCHEMA,
            experiment: experiment.into(),
            title: title.into(),
            command: command.into(),
            quick,
            started: env::now_utc(),
            finished: String::new(),
            elapsed_s: 0.0,
            machine: Machine::probe(),
            params: Value::Null,
            table: Table::default(),
            paper: Value::Null,
            extra: Value::Null,
            runs: Vec::new(),
            notes: Vec::new(),
            figures: Vec::new(),
        }
    }

    /// Stamps the end and writes `<dir>/<experiment>.json` and `.md`.
    pub fn write(&mut self, dir: &Path, elapsed_s: f64) -> Result<PathBuf, String> {
        self.finished = env::now_utc();
        self.elapsed_s = elapsed_s;
        self.machine.loadavg_end = env::loadavg();
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(format!("{}.json", self.experiment));
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        let md = dir.join(format!("{}.md", self.experiment));
        std::fs::write(&md, self.markdown()).map_err(|e| format!("{}: {e}", md.display()))?;
        Ok(path)
    }

    /// The table with its context, as Markdown.
    pub fn markdown(&self) -> String {
        let m = &self.machine;
        let mut s = format!("### {}\n\n", self.title);
        s += &format!(
            "- date: {} ({:.0} s){}\n- machine: {}, {} CPUs, {} GiB, kernel {}; load average {:.2} / {:.2} / {:.2} at start, {:.2} / {:.2} / {:.2} at end\n- command: `{}`\n",
            self.started,
            self.elapsed_s,
            if self.quick { ", --quick" } else { "" },
            m.cpu_model,
            m.cpus,
            m.mem_gib,
            m.kernel,
            m.loadavg_start[0],
            m.loadavg_start[1],
            m.loadavg_start[2],
            m.loadavg_end[0],
            m.loadavg_end[1],
            m.loadavg_end[2],
            self.command
        );
        for (k, v) in &m.versions {
            s += &format!("- {k}: {v}\n");
        }
        s += "\n";
        s += &self.table.markdown();
        if !self.notes.is_empty() {
            s += "\n";
            for n in &self.notes {
                s += &format!("- {n}\n");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_table() {
        let mut t = Table::new(&["case", "ops/s", "ratio"]);
        t.row(vec![text("get"), num(123456.7), round(1.234, 2)]);
        t.row(vec![text("mget"), num(f64::NAN), num(12.345)]);
        let md = t.markdown();
        assert!(md.starts_with("| case | ops/s | ratio |\n|---|---|---|\n"));
        assert!(md.contains("| get | 123457 | 1.23 |"), "{md}");
        assert!(md.contains("| mget | — | 12.3 |"), "{md}");
    }
}
