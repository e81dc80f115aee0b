//! Figures (plotters): grouped bar charts for the tables, throughput–latency
//! curves, and the threshold heatmap with its crossover line. Each figure is
//! written twice, `<stem>.png` and `<stem>.svg`. Text uses the Ubuntu font
//! embedded by `epaint_default_fonts`, so no system fonts are needed.

use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const FONT: &str = "sans-serif";

/// Series colours (colour-blind-safe Tableau 10 order).
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// A category axis: values 0…n, one tick at each category's centre
/// (i + 0.5) labelled with its name.
#[derive(Clone, Debug)]
struct Categories {
    labels: Vec<String>,
}

impl Categories {
    fn new(labels: &[String]) -> Categories {
        Categories {
            labels: labels.to_vec(),
        }
    }

    fn n(&self) -> f64 {
        self.labels.len().max(1) as f64
    }
}

impl Ranged for Categories {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let f = value / self.n();
        let len = f64::from(limit.1 - limit.0);
        if !f.is_finite() {
            return limit.1;
        }
        if len >= 0.0 {
            limit.0 + (len * f + 1e-3).floor() as i32
        } else {
            limit.0 + (len * f - 1e-3).ceil() as i32
        }
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            (0..self.labels.len()).map(|i| i as f64 + 0.5).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.n()
    }
}

impl ValueFormatter<f64> for Categories {
    fn format_ext(&self, value: &f64) -> String {
        self.labels
            .get(value.floor().max(0.0) as usize)
            .cloned()
            .unwrap_or_default()
    }
}

fn init_fonts() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        )
        .is_err()
        {
            eprintln!("warning: could not register the plot font");
        }
    });
}

/// A figure to draw.
#[derive(Clone, Debug)]
pub enum Figure {
    /// Grouped bars: one group per category, one bar per series.
    Bars {
        /// Title.
        title: String,
        /// Y axis label (with unit).
        y_label: String,
        /// Group labels.
        categories: Vec<String>,
        /// (series name, one value per category; None = not measured).
        series: Vec<(String, Vec<Option<f64>>)>,
    },
    /// Lines through points, one per series.
    Lines {
        /// Title.
        title: String,
        /// X axis label (with unit).
        x_label: String,
        /// Y axis label (with unit).
        y_label: String,
        /// (series name, points).
        series: Vec<(String, Vec<(f64, f64)>)>,
        /// Logarithmic x axis.
        log_x: bool,
        /// Logarithmic y axis.
        log_y: bool,
    },
    /// A matrix of cells coloured by value (diverging around 0), each cell
    /// labelled with its value, and a line through `crossover`.
    Heatmap {
        /// Title.
        title: String,
        /// X axis label.
        x_label: String,
        /// Y axis label.
        y_label: String,
        /// Column labels (left to right).
        x_ticks: Vec<String>,
        /// Row labels (bottom to top).
        y_ticks: Vec<String>,
        /// `values[row][col]`; None = not measured.
        values: Vec<Vec<Option<f64>>>,
        /// Points of the crossover line in cell coordinates (column 0's
        /// centre is x = 0.5, row 0's is y = 0.5).
        crossover: Vec<(f64, f64)>,
        /// Label of the crossover line in the legend.
        crossover_label: String,
    },
}

/// Writes `fig` to `<stem>.png` and `<stem>.svg`; returns both paths.
pub fn save(fig: &Figure, stem: &Path) -> Result<Vec<PathBuf>, String> {
    init_fonts();
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let size = match fig {
        Figure::Heatmap { .. } => (1100, 700),
        _ => (1000, 620),
    };
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw(fig, &root)?;
        root.present()
            .map_err(|e| format!("{}: {e:?}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        draw(fig, &root)?;
        root.present()
            .map_err(|e| format!("{}: {e:?}", svg.display()))?;
    }
    Ok(vec![png, svg])
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("plot: {e:?}")
}

/// 1234567 → "1.23M", 45600 → "45.6k".
pub fn si(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.3}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn draw<DB: DrawingBackend>(fig: &Figure, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    match fig {
        Figure::Bars {
            title,
            y_label,
            categories,
            series,
        } => bars(root, title, y_label, categories, series),
        Figure::Lines {
            title,
            x_label,
            y_label,
            series,
            log_x,
            log_y,
        } => lines(root, title, x_label, y_label, series, *log_x, *log_y),
        Figure::Heatmap {
            title,
            x_label,
            y_label,
            x_ticks,
            y_ticks,
            values,
            crossover,
            crossover_label,
        } => heatmap(
            root,
            title,
            (x_label, y_label),
            (x_ticks, y_ticks),
            values,
            crossover,
            crossover_label,
        ),
    }
}

fn bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> Result<(), String> {
    let n = categories.len().max(1);
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .copied()
        .filter(|x| x.is_finite())
        .fold(0.0f64, f64::max);
    let top = if max > 0.0 { max * 1.18 } else { 1.0 };
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 26))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(Categories::new(categories), 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .y_label_formatter(&|y| si(*y))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(err)?;
    let k = series.len().max(1) as f64;
    let w = 0.8 / k;
    let annotate = series.len() * n <= 16;
    for (j, (name, vals)) in series.iter().enumerate() {
        let c = color(j);
        let rects = vals.iter().enumerate().filter_map(move |(i, v)| {
            let v = (*v)?;
            let x0 = i as f64 + 0.1 + j as f64 * w;
            Some(Rectangle::new([(x0, 0.0), (x0 + w * 0.92, v)], c.filled()))
        });
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
        if annotate {
            let style =
                TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
            let labels = vals.iter().enumerate().filter_map(move |(i, v)| {
                let v = (*v)?;
                let x = i as f64 + 0.1 + (j as f64 + 0.46) * w;
                Some(Text::new(si(v), (x, v + top * 0.005), style.clone()))
            });
            chart.draw_series(labels).map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .draw()
        .map_err(err)?;
    Ok(())
}

fn bounds(series: &[(String, Vec<(f64, f64)>)], pick: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for (_, pts) in series {
        for p in pts {
            let v = pick(p);
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    if !lo.is_finite() {
        (0.0, 1.0)
    } else if hi <= lo {
        (lo * 0.9, hi * 1.1 + 1e-9)
    } else {
        (lo, hi)
    }
}

#[allow(clippy::too_many_arguments)]
fn lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_x: bool,
    log_y: bool,
) -> Result<(), String> {
    let (x0, x1) = bounds(series, |p| p.0);
    let (y0, y1) = bounds(series, |p| p.1);
    let pad = |lo: f64, hi: f64, log: bool| {
        if log {
            ((lo * 0.8).max(1e-9), hi * 1.25)
        } else {
            ((lo - (hi - lo) * 0.05).max(0.0), hi + (hi - lo) * 0.08)
        }
    };
    let (x0, x1) = pad(x0, x1, log_x);
    let (y0, y1) = pad(y0, y1, log_y);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .x_label_formatter(&|x| si(*x))
                .y_label_formatter(&|y| si(*y))
                .label_style((FONT, 16))
                .axis_desc_style((FONT, 18))
                .draw()
                .map_err(err)?;
            for (j, (name, pts)) in series.iter().enumerate() {
                let c = color(j);
                let pts: Vec<(f64, f64)> = pts
                    .iter()
                    .copied()
                    .filter(|p| p.0.is_finite() && p.1.is_finite())
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(err)?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3))
                    });
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 4, c.filled())))
                    .map_err(err)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font((FONT, 16))
                .draw()
                .map_err(err)?;
        }};
    }
    let mut b = ChartBuilder::on(root);
    b.caption(title, (FONT, 26))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80);
    match (log_x, log_y) {
        (false, false) => body!(b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?),
        (true, false) => body!(b
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
            .map_err(err)?),
        (false, true) => body!(b
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(err)?),
        (true, true) => body!(b
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(err)?),
    }
    Ok(())
}

/// Diverging colour for `v` in −`scale`…+`scale`: red (negative) through
/// white to blue (positive).
fn diverging(v: f64, scale: f64) -> RGBColor {
    let t = (v / scale.max(1e-9)).clamp(-1.0, 1.0);
    let mix = |a: u8, b: u8, f: f64| (f64::from(a) + (f64::from(b) - f64::from(a)) * f) as u8;
    if t >= 0.0 {
        RGBColor(mix(255, 33, t), mix(255, 102, t), mix(255, 172, t))
    } else {
        RGBColor(mix(255, 202, -t), mix(255, 0, -t), mix(255, 32, -t))
    }
}

#[allow(clippy::too_many_arguments)]
fn heatmap<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    (x_label, y_label): (&str, &str),
    (x_ticks, y_ticks): (&[String], &[String]),
    values: &[Vec<Option<f64>>],
    crossover: &[(f64, f64)],
    crossover_label: &str,
) -> Result<(), String> {
    let scale = values
        .iter()
        .flatten()
        .flatten()
        .map(|v| v.abs())
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 24))
        .margin(16)
        .x_label_area_size(55)
        .y_label_area_size(70)
        .build_cartesian_2d(Categories::new(x_ticks), Categories::new(y_ticks))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(err)?;
    let mut cells = Vec::new();
    let mut labels = Vec::new();
    let style = TextStyle::from((FONT, 15).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    for (r, row) in values.iter().enumerate() {
        for (c, v) in row.iter().enumerate() {
            let (x, y) = (c as f64, r as f64);
            match v {
                Some(v) if v.is_finite() => {
                    cells.push(Rectangle::new(
                        [(x, y), (x + 1.0, y + 1.0)],
                        diverging(*v, scale).filled(),
                    ));
                    labels.push(Text::new(
                        format!("{v:+.0}%"),
                        (x + 0.5, y + 0.5),
                        style.clone(),
                    ));
                }
                _ => {
                    cells.push(Rectangle::new(
                        [(x, y), (x + 1.0, y + 1.0)],
                        RGBColor(230, 230, 230).filled(),
                    ));
                    labels.push(Text::new(
                        "n/a".to_string(),
                        (x + 0.5, y + 0.5),
                        style.clone(),
                    ));
                }
            }
        }
    }
    chart.draw_series(cells).map_err(err)?;
    chart.draw_series(labels).map_err(err)?;
    let green = RGBColor(0, 150, 60);
    if !crossover.is_empty() {
        chart
            .draw_series(LineSeries::new(crossover.to_vec(), green.stroke_width(4)))
            .map_err(err)?
            .label(crossover_label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], green.stroke_width(4))
            });
        chart
            .draw_series(crossover.iter().map(|p| Circle::new(*p, 6, green.filled())))
            .map_err(err)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, 16))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_format() {
        assert_eq!(si(1_234_567.0), "1.235M");
        assert_eq!(si(45_600.0), "46k");
        assert_eq!(si(4_560.0), "4.6k");
        assert_eq!(si(12.0), "12");
        assert_eq!(si(0.5), "0.50");
    }

    #[test]
    fn diverging_ends() {
        assert_eq!(diverging(0.0, 10.0), RGBColor(255, 255, 255));
        assert_eq!(diverging(10.0, 10.0), RGBColor(33, 102, 172));
        assert_eq!(diverging(-20.0, 10.0), RGBColor(202, 0, 32));
    }
}
