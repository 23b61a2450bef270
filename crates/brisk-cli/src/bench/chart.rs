//! Line charts as inline SVG for `brisk bench random` (one line per block size against queue depth)
//! and `brisk bench mixed` (one line per operation against a percentile, or against time).
//!
//! The x axis is logarithmic in base 2 (queue depths 1, 4, 16, 64, 256 fall evenly), with a tick at
//! each depth swept, or linear with labelled ticks ([`XAxis`]). The y axis is linear from 0, or logarithmic by decades when the values span more
//! than one (IOPS of 4 KiB and 4 MiB blocks differ a hundredfold; on a linear axis the large blocks
//! would lie flat on the floor). Every point carries a `<title>`, shown when the pointer rests on it.

use std::fmt::Write as _;

use super::report::escape;

/// One line: its name in the legend, its colour and its points `(x, y, tooltip)`.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64, String)>,
}

/// Colours of the lines in order (distinct for people with the common colour blindnesses, in the
/// order of the Okabe–Ito palette).
pub const COLORS: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#000000", "#f0e442",
];

/// The y axis's scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YScale {
    Linear,
    /// By decades when the values span more than a factor of 10, else linear.
    LogIfWide,
}

const WIDTH: f64 = 820.0;
const HEIGHT: f64 = 380.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 62.0;
const BOTTOM: f64 = 52.0;

/// A chart of `series` against x (drawn at `log2(x)`), with `x_ticks` labelled.
pub fn line_chart(
    title: &str,
    x_title: &str,
    y_title: &str,
    x_ticks: &[f64],
    series: &[Series],
    scale: YScale,
) -> String {
    line_chart_on(
        title,
        x_title,
        y_title,
        &XAxis::Log2(x_ticks),
        series,
        scale,
    )
}

/// The x axis of [`line_chart_on`].
#[derive(Debug, Clone, Copy)]
pub enum XAxis<'a> {
    /// Drawn at `log2(x)`, a tick labelled with its value at each of these.
    Log2(&'a [f64]),
    /// Drawn at `x`, a tick at each of these with its label (`p99`, `10 s`).
    Linear(&'a [(f64, String)]),
}

/// A chart of `series` against the x axis `x_axis`.
pub fn line_chart_on(
    title: &str,
    x_title: &str,
    y_title: &str,
    x_axis: &XAxis<'_>,
    series: &[Series],
    scale: YScale,
) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let log = matches!(x_axis, XAxis::Log2(_));
    let to_axis = |x: f64| {
        if log {
            x.max(f64::MIN_POSITIVE).log2()
        } else {
            x
        }
    };
    let x_ticks: Vec<(f64, String)> = match x_axis {
        XAxis::Log2(ticks) => ticks.iter().map(|&x| (x, x.to_string())).collect(),
        XAxis::Linear(ticks) => ticks.to_vec(),
    };
    let xs: Vec<f64> = x_ticks
        .iter()
        .map(|t| t.0)
        .chain(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)))
        .filter(|x| !log || *x > 0.0)
        .map(to_axis)
        .collect();
    let (x_min, x_max) = bounds(&xs).unwrap_or((0.0, 1.0));
    let x_span = if x_max > x_min { x_max - x_min } else { 1.0 };
    let x_at = |x: f64| {
        if x_max > x_min {
            LEFT + (to_axis(x) - x_min) / x_span * plot_w
        } else {
            LEFT + plot_w / 2.0
        }
    };
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite() && *y >= 0.0)
        .collect();
    let axis = YAxis::new(&ys, scale);
    let y_at = |y: f64| TOP + plot_h * (1.0 - axis.fraction(y));

    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         role=\"img\" aria-label=\"{t}\"><text x=\"0\" y=\"18\" font-size=\"15\" \
         font-weight=\"bold\">{t}</text>",
        t = escape(title)
    );
    // Legend: a short line and the series' name, left to right.
    let mut lx = LEFT;
    for s in series {
        let _ = write!(
            svg,
            "<line x1=\"{lx}\" y1=\"38\" x2=\"{x2}\" y2=\"38\" stroke=\"{c}\" stroke-width=\"3\"/>\
             <text x=\"{tx}\" y=\"42\" font-size=\"13\">{label}</text>",
            x2 = lx + 18.0,
            c = s.color,
            tx = lx + 23.0,
            label = escape(&s.label),
        );
        lx += 23.0 + 8.0 * s.label.chars().count() as f64 + 18.0;
    }
    // Grid and y labels.
    for (value, label) in axis.ticks() {
        let y = y_at(value);
        let _ = write!(
            svg,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{x2}\" y2=\"{y:.1}\" stroke=\"#e2e8f0\"/>\
             <text x=\"{tx}\" y=\"{ty:.1}\" font-size=\"12\" text-anchor=\"end\" \
             fill=\"#4a5568\">{label}</text>",
            x2 = WIDTH - RIGHT,
            tx = LEFT - 6.0,
            ty = y + 4.0,
        );
    }
    // x ticks.
    for (x, label) in &x_ticks {
        let px = x_at(*x);
        let _ = write!(
            svg,
            "<line x1=\"{px:.1}\" y1=\"{TOP}\" x2=\"{px:.1}\" y2=\"{yb}\" stroke=\"#edf2f7\"/>\
             <text x=\"{px:.1}\" y=\"{ty}\" font-size=\"12\" text-anchor=\"middle\" \
             fill=\"#4a5568\">{label}</text>",
            yb = TOP + plot_h,
            ty = TOP + plot_h + 16.0,
            label = escape(label),
        );
    }
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{yb}\" x2=\"{x2}\" y2=\"{yb}\" stroke=\"#4a5568\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{yb}\" stroke=\"#4a5568\"/>\
         <text x=\"{cx}\" y=\"{xt}\" font-size=\"13\" text-anchor=\"middle\">{x_title}</text>\
         <text x=\"14\" y=\"{cy}\" font-size=\"13\" text-anchor=\"middle\" \
         transform=\"rotate(-90 14 {cy})\">{y_title}</text>",
        yb = TOP + plot_h,
        x2 = WIDTH - RIGHT,
        cx = LEFT + plot_w / 2.0,
        xt = HEIGHT - 10.0,
        cy = TOP + plot_h / 2.0,
        x_title = escape(x_title),
        y_title = escape(y_title),
    );
    if ys.is_empty() {
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" fill=\"#4a5568\">no figures</text>",
            LEFT + 10.0,
            TOP + 20.0
        );
    }
    for s in series {
        let mut path = String::new();
        for (x, y, _) in s.points.iter().filter(|p| p.1.is_finite()) {
            let command = if path.is_empty() { 'M' } else { 'L' };
            let _ = write!(path, "{command}{:.1},{:.1} ", x_at(*x), y_at(*y));
        }
        if !path.is_empty() {
            let _ = write!(
                svg,
                "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" \
                 stroke-linejoin=\"round\"/>",
                path.trim_end(),
                s.color
            );
        }
        for (x, y, tip) in s.points.iter().filter(|p| p.1.is_finite()) {
            let _ = write!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{}\"><title>{}</title></circle>",
                x_at(*x),
                y_at(*y),
                s.color,
                escape(tip)
            );
        }
    }
    svg.push_str("</svg>\n");
    svg
}

fn bounds(values: &[f64]) -> Option<(f64, f64)> {
    let mut it = values.iter().copied().filter(|v| v.is_finite());
    let first = it.next()?;
    Some(it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
}

/// The y axis: linear from 0 to a round top, or decades.
#[derive(Debug, Clone, Copy, PartialEq)]
enum YAxis {
    Linear { top: f64, step: f64 },
    Log { low: i32, high: i32 },
}

impl YAxis {
    fn new(values: &[f64], scale: YScale) -> Self {
        let (lo, hi) = bounds(values).unwrap_or((0.0, 1.0));
        if scale == YScale::LogIfWide && lo > 0.0 && hi / lo > 10.0 {
            let low = lo.log10().floor() as i32;
            let high = (hi.log10().ceil() as i32).max(low + 1);
            return Self::Log { low, high };
        }
        let step = nice_step(hi.max(f64::MIN_POSITIVE) / 5.0);
        let top = ((hi / step).ceil() * step).max(step);
        Self::Linear { top, step }
    }

    /// Where `y` lies from the bottom (0) to the top (1).
    fn fraction(self, y: f64) -> f64 {
        match self {
            Self::Linear { top, .. } => (y / top).clamp(0.0, 1.0),
            Self::Log { low, high } => {
                let v = y.max(10f64.powi(low)).log10();
                ((v - low as f64) / (high - low) as f64).clamp(0.0, 1.0)
            }
        }
    }

    fn ticks(self) -> Vec<(f64, String)> {
        match self {
            Self::Linear { top, step } => {
                let n = (top / step).round() as usize;
                (0..=n)
                    .map(|i| {
                        let v = step * i as f64;
                        (v, number(v))
                    })
                    .collect()
            }
            Self::Log { low, high } => (low..=high)
                .map(|e| {
                    let v = 10f64.powi(e);
                    (v, number(v))
                })
                .collect(),
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A tick label: `0.05`, `2.5`, `800`, `12k`, `1.5M`.
fn number(v: f64) -> String {
    if v >= 1e6 {
        trim(format!("{:.1}", v / 1e6)) + "M"
    } else if v >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        trim(format!("{v:.1}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

fn trim(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(label: &str, points: &[(f64, f64)]) -> Series {
        Series {
            label: label.into(),
            color: COLORS[0],
            points: points
                .iter()
                .map(|&(x, y)| (x, y, format!("{x} → {y}")))
                .collect(),
        }
    }

    #[test]
    fn steps_and_labels_are_round() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(130.0), 200.0);
        assert_eq!(nice_step(4.1), 5.0);
        assert_eq!(number(12_000.0), "12k");
        assert_eq!(number(1_500_000.0), "1.5M");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(800.0), "800");
    }

    #[test]
    fn a_wide_range_gets_decades() {
        let axis = YAxis::new(&[120.0, 9_000.0], YScale::LogIfWide);
        assert_eq!(axis, YAxis::Log { low: 2, high: 4 });
        assert_eq!(axis.ticks().len(), 3);
        assert!((axis.fraction(1_000.0) - 0.5).abs() < 1e-9);
        let narrow = YAxis::new(&[120.0, 900.0], YScale::LogIfWide);
        assert_eq!(
            narrow,
            YAxis::Linear {
                top: 1000.0,
                step: 200.0
            }
        );
    }

    #[test]
    fn lines_points_and_tooltips_are_drawn() {
        let svg = line_chart(
            "IOPS <by> depth",
            "queue depth",
            "IOPS",
            &[1.0, 4.0, 16.0],
            &[
                series("4 KiB", &[(1.0, 100.0), (4.0, 350.0), (16.0, 900.0)]),
                series("1 MiB", &[(1.0, 50.0), (4.0, 90.0)]),
            ],
            YScale::LogIfWide,
        );
        assert_eq!(svg.matches("<path").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains("IOPS &lt;by&gt; depth"));
        assert!(svg.contains("<title>4 → 350</title>"));
        assert!(svg.ends_with("</svg>\n"));
        let empty = line_chart("t", "x", "y", &[1.0], &[], YScale::Linear);
        assert!(empty.contains("no figures"));
    }
}
