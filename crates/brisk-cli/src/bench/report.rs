//! What a run printed and wrote: a table on stdout (or one JSON document with `--json`), the same
//! document as a file (`--json-file`), and an HTML page with inline SVG bar charts (`--report`).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::cases::CaseResult;
use super::measure::Stats;
use super::random_point::Figures;
use super::server::ServerSettings;
use crate::args::CaseKind;
use crate::size::human;

/// The file `--report DIR` writes.
pub const REPORT_FILE: &str = "index.html";

/// The machine the figures come from (the `machine` object of every JSON document).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory_bytes: u64,
    pub kernel: String,
}

impl Machine {
    /// Read from `/proc` (fields it cannot read are left empty or 0).
    pub fn current() -> Self {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_default();
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| {
                l.strip_prefix("MemTotal:")?
                    .split_whitespace()
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .map_or(0, |kib| kib * 1024);
        Self {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
        }
    }

    /// The page subtitle's start: `brisk VERSION · CPU · N cores · RAM · Linux KERNEL`.
    pub fn describe(&self) -> String {
        format!(
            "brisk {} · {} · {} cores · {} RAM · Linux {}",
            env!("CARGO_PKG_VERSION"),
            self.cpu,
            self.cores,
            human(self.memory_bytes),
            self.kernel
        )
    }
}

/// One case's figures, computed once and shown three ways: the printed table, the HTML table and
/// the JSON document.
#[derive(Debug, Clone, serde::Serialize)]
struct CaseRow<'a> {
    case: &'static str,
    label: &'a str,
    bytes: u64,
    runs: usize,
    gib_per_s: Option<Stats>,
    fraction_of_loopback: Option<f64>,
    cpu_s_per_gib: Option<Stats>,
    peak_rss_bytes: Option<Stats>,
    rss_growth_bytes: Option<Stats>,
    amplification: Option<Stats>,
}

impl<'a> CaseRow<'a> {
    fn new(report: &Report, case: &'a CaseResult) -> Self {
        Self {
            case: case.kind.name(),
            label: &case.label,
            bytes: case.bytes,
            runs: case.samples.len(),
            gib_per_s: case.gib_per_s(),
            fraction_of_loopback: report.fraction_of_loopback(case),
            cpu_s_per_gib: case.cpu_s_per_gib(),
            peak_rss_bytes: case.peak_rss(),
            rss_growth_bytes: case.rss_growth(),
            amplification: case.amplification(),
        }
    }
}

fn median(s: Option<Stats>) -> Option<f64> {
    s.map(|s| s.median)
}

/// Everything one run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The command line as given.
    pub command: String,
    /// `embedded` or the `--endpoint-url`.
    pub endpoint: String,
    /// The embedded server's settings (`None` against another endpoint).
    pub server: Option<ServerSettings>,
    pub machine: Machine,
    pub repeat: usize,
    pub part_size: usize,
    pub concurrency: usize,
    /// The client's memory budget, bytes.
    pub memory_budget: usize,
    /// Where the budget came from (`--max-memory`, `MemTotal + the largest GET`, ...).
    pub memory_budget_source: String,
    pub cases: Vec<CaseResult>,
    /// What was skipped and why.
    pub notes: Vec<String>,
}

impl Report {
    /// The median loopback rate, GiB/s.
    pub fn loopback_ceiling(&self) -> Option<f64> {
        self.cases
            .iter()
            .find(|c| c.kind == CaseKind::Loopback)
            .and_then(|c| c.gib_per_s())
            .map(|s| s.median)
    }

    /// A case's median rate as a fraction of the loopback ceiling.
    pub fn fraction_of_loopback(&self, case: &CaseResult) -> Option<f64> {
        let ceiling = self.loopback_ceiling().filter(|c| *c > 0.0)?;
        Some(case.gib_per_s()?.median / ceiling)
    }

    /// The table printed at the end of a run (medians).
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<24} {:>8} {:>12} {:>10} {:>11} {:>11} {:>9}",
            "case", "GiB/s", "of loopback", "CPU s/GiB", "peak RSS", "RSS growth", "growth/size"
        );
        for case in &self.cases {
            let row = CaseRow::new(self, case);
            let _ = writeln!(
                out,
                "{:<24} {:>8} {:>12} {:>10} {:>11} {:>11} {:>9}",
                row.label,
                fixed(median(row.gib_per_s), 2),
                percent(row.fraction_of_loopback),
                fixed(median(row.cpu_s_per_gib), 2),
                bytes(median(row.peak_rss_bytes)),
                bytes(median(row.rss_growth_bytes)),
                fixed(median(row.amplification), 3),
            );
        }
        for case in self.cases.iter().filter(|c| !c.random.is_empty()) {
            let _ = writeln!(out, "{}: {}", case.label, random_line(case));
        }
        let _ = writeln!(
            out,
            "median of {} run(s); part size {}, {} in flight; {}; {}",
            self.repeat,
            human(self.part_size as u64),
            self.concurrency,
            self.budget_line(),
            self.server_line()
        );
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out
    }

    fn budget_line(&self) -> String {
        format!(
            "memory budget {} ({})",
            human(self.memory_budget as u64),
            self.memory_budget_source
        )
    }

    fn server_line(&self) -> String {
        match &self.server {
            Some(s) => s.describe(),
            None => format!("endpoint {}", self.endpoint),
        }
    }

    /// The JSON document of `--json` and `--json-file`.
    pub fn to_json(&self) -> Value {
        let cases: Vec<Value> = self
            .cases
            .iter()
            .map(|c| {
                let mut v = serde_json::to_value(CaseRow::new(self, c)).unwrap_or(Value::Null);
                v["random"] = random_json(c);
                v["samples"] = serde_json::to_value(&c.samples).unwrap_or(Value::Null);
                v
            })
            .collect();
        json!({
            "brisk_version": env!("CARGO_PKG_VERSION"),
            "command": self.command,
            "endpoint": self.endpoint,
            "server": self.server.as_ref().map(ServerSettings::to_json),
            "machine": self.machine,
            "repeat": self.repeat,
            "part_size": self.part_size,
            "concurrency": self.concurrency,
            "memory_budget": self.memory_budget,
            "memory_budget_source": self.memory_budget_source,
            "loopback_gib_per_s": self.loopback_ceiling(),
            "cases": cases,
            "notes": self.notes,
        })
    }

    /// The HTML page: three charts, the table with min and max, the settings and the command.
    pub fn html(&self) -> String {
        let ceiling = self.loopback_ceiling();
        let throughput: Vec<Bar> = self
            .cases
            .iter()
            .filter_map(|c| {
                let rate = c.gib_per_s()?.median;
                let of = percent(self.fraction_of_loopback(c));
                Some(Bar::new(
                    c,
                    rate,
                    format!("{rate:.2} GiB/s · {of} of loopback"),
                ))
            })
            .collect();
        let amplification: Vec<Bar> = self
            .cases
            .iter()
            .filter(|c| c.kind != CaseKind::Loopback)
            .filter_map(|c| {
                let amp = c.amplification()?.median;
                let growth = bytes(c.rss_growth().map(|s| s.median));
                Some(Bar::new(c, amp, format!("{amp:.3} × size (+{growth})")))
            })
            .collect();
        let cpu: Vec<Bar> = self
            .cases
            .iter()
            .filter_map(|c| {
                let v = c.cpu_s_per_gib()?.median;
                Some(Bar::new(c, v, format!("{v:.2} s/GiB")))
            })
            .collect();
        let mut page = String::new();
        let _ = write!(
            page,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>brisk bench</title><style>{STYLE}</style></head><body>\n\
             <h1>brisk bench</h1>\n<p class=\"sub\">{}</p>\n",
            escape(&format!(
                "{} · median of {} run(s)",
                self.machine.describe(),
                self.repeat
            ))
        );
        page.push_str(&bar_chart(
            "Throughput against the loopback ceiling (GiB/s, longer is better)",
            &throughput,
            ceiling.map(|c| (format!("loopback {c:.2} GiB/s"), c)),
        ));
        page.push_str(&bar_chart(
            "Memory amplification: peak RSS growth / bytes moved (shorter is better)",
            &amplification,
            Some(("1 × size".to_owned(), 1.0)),
        ));
        page.push_str(&bar_chart(
            "CPU seconds (user + system) per GiB (shorter is better)",
            &cpu,
            None,
        ));
        page.push_str(&self.html_table());
        let _ = writeln!(
            page,
            "<h2>Settings</h2><ul><li>{}</li><li>part size {}, {} in flight</li>\
             <li>{}</li><li>endpoint {}</li></ul>",
            escape(&self.server_line()),
            human(self.part_size as u64),
            self.concurrency,
            escape(&self.budget_line()),
            escape(&self.endpoint)
        );
        if !self.notes.is_empty() {
            page.push_str("<h2>Notes</h2><ul>");
            for note in &self.notes {
                let _ = write!(page, "<li>{}</li>", escape(note));
            }
            page.push_str("</ul>\n");
        }
        let _ = write!(
            page,
            "<h2>Command</h2><pre>{}</pre>\n<p class=\"sub\">Peak RSS is the kernel's high-water mark \
             (VmHWM) of the measured process, reset before each run; the server is a separate \
             process. See docs/bench.md.</p>\n</body></html>\n",
            escape(&self.command)
        );
        page
    }

    fn html_table(&self) -> String {
        let mut t = String::from(
            "<h2>Figures</h2><table><tr><th>case</th><th>GiB/s median (min–max)</th>\
             <th>of loopback</th><th>CPU s/GiB</th><th>peak RSS</th><th>RSS growth</th>\
             <th>growth / size</th></tr>\n",
        );
        let range = |s: Option<Stats>, digits: usize| match s {
            Some(s) => format!(
                "{:.digits$} ({:.digits$}–{:.digits$})",
                s.median, s.min, s.max
            ),
            None => "–".to_owned(),
        };
        for c in &self.cases {
            let row = CaseRow::new(self, c);
            let _ = writeln!(
                t,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(row.label),
                range(row.gib_per_s, 2),
                percent(row.fraction_of_loopback),
                range(row.cpu_s_per_gib, 2),
                bytes(median(row.peak_rss_bytes)),
                bytes(median(row.rss_growth_bytes)),
                range(row.amplification, 3),
            );
        }
        t.push_str("</table>\n");
        for c in self.cases.iter().filter(|c| !c.random.is_empty()) {
            let _ = writeln!(
                t,
                "<p><b>{}</b>: {} (medians; <code>brisk bench random</code> sweeps block size × \
                 queue depth)</p>",
                escape(&c.label),
                escape(&random_line(c))
            );
        }
        t
    }
}

/// The `random` case's own figures in one line: IOPS, MiB/s, CPU, latency, threads, sockets.
fn random_line(case: &CaseResult) -> String {
    let median = |f: fn(&super::random_point::Figures) -> f64| {
        case.random_stats(f).map_or(0.0, |s| s.median)
    };
    format!(
        "{:.0} IOPS, {:.1} MiB/s, {:.2} CPU s/GiB, p50 {:.2} ms, p99 {:.2} ms, {:.0} threads, \
         {:.0} sockets, {:.0} errors",
        median(|f| f.iops),
        median(|f| f.mib_per_s),
        median(|f| f.cpu_s_per_gib),
        median(|f| f.latency_p50.as_secs_f64() * 1e3),
        median(|f| f.latency_p99.as_secs_f64() * 1e3),
        median(|f| f.threads as f64),
        median(|f| f.sockets as f64),
        case.random.iter().map(|f| f.errors).sum::<u64>() as f64,
    )
}

/// A duration in milliseconds, as the JSON documents and tables give latencies.
pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One measured run's figures as JSON: a point of `brisk bench random`, or a run of the suite's
/// `random` case.
pub(super) fn figures_json(f: &Figures) -> Value {
    json!({
        "reads": f.reads,
        "errors": f.errors,
        "bytes": f.bytes,
        "seconds": f.elapsed.as_secs_f64(),
        "iops": f.iops,
        "mib_per_s": f.mib_per_s,
        "cpu_seconds": f.cpu_seconds,
        "cpu_s_per_gib": f.cpu_s_per_gib,
        "p50_ms": ms(f.latency_p50),
        "p99_ms": ms(f.latency_p99),
        "threads": f.threads,
        "sockets": f.sockets,
        "max_connections": f.connections,
        "pipelined": f.pipelined,
        "fell_back": f.fell_back,
    })
}

/// The `random` case's figures for the JSON document (null for other cases).
fn random_json(case: &CaseResult) -> Value {
    if case.random.is_empty() {
        return Value::Null;
    }
    let stats = |f: fn(&Figures) -> f64| match case.random_stats(f) {
        Some(s) => json!({"median": s.median, "min": s.min, "max": s.max}),
        None => Value::Null,
    };
    json!({
        "block_size": case.bytes,
        "iops": stats(|f| f.iops),
        "mib_per_s": stats(|f| f.mib_per_s),
        "cpu_s_per_gib": stats(|f| f.cpu_s_per_gib),
        "p50_ms": stats(|f| f.latency_p50.as_secs_f64() * 1e3),
        "p99_ms": stats(|f| f.latency_p99.as_secs_f64() * 1e3),
        "runs": case.random.iter().map(figures_json).collect::<Vec<_>>(),
    })
}

pub(super) const STYLE: &str = "body{font:15px/1.4 system-ui,sans-serif;max-width:860px;margin:2em auto;color:#1a202c}\
h1{margin-bottom:0}.sub{color:#4a5568}table{border-collapse:collapse}\
td,th{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:right}\
td:first-child,th:first-child{text-align:left}svg{display:block;margin:1em 0}\
pre{background:#f7fafc;padding:8px;overflow-x:auto}";

/// One bar of a chart.
#[derive(Debug, Clone)]
struct Bar {
    label: String,
    value: f64,
    text: String,
    color: &'static str,
}

impl Bar {
    fn new(case: &CaseResult, value: f64, text: String) -> Self {
        let color = match case.kind {
            CaseKind::Loopback => "#a0aec0",
            CaseKind::Server => "#dd6b20",
            CaseKind::Random => "#2f855a",
            _ => "#2b6cb0",
        };
        Self {
            label: case.label.clone(),
            value: if value.is_finite() {
                value.max(0.0)
            } else {
                0.0
            },
            text,
            color,
        }
    }
}

/// Chart geometry, in SVG user units.
const CHART_WIDTH: f64 = 820.0;
const LABEL_WIDTH: f64 = 160.0;
const TEXT_WIDTH: f64 = 250.0;
const ROW_HEIGHT: f64 = 28.0;
const TOP: f64 = 46.0;

/// A horizontal bar chart as inline SVG, with an optional dashed reference line (the loopback
/// ceiling, or 1 × size).
fn bar_chart(title: &str, bars: &[Bar], reference: Option<(String, f64)>) -> String {
    let plot = CHART_WIDTH - LABEL_WIDTH - TEXT_WIDTH;
    let top_value = bars
        .iter()
        .map(|b| b.value)
        .chain(reference.as_ref().map(|r| r.1))
        .fold(0.0f64, f64::max);
    let scale = if top_value > 0.0 {
        plot / top_value
    } else {
        0.0
    };
    let height = TOP + ROW_HEIGHT * bars.len().max(1) as f64 + 10.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{CHART_WIDTH}\" height=\"{height}\" \
         role=\"img\" aria-label=\"{t}\"><text x=\"0\" y=\"18\" font-size=\"15\" \
         font-weight=\"bold\">{t}</text>",
        t = escape(title)
    );
    if bars.is_empty() {
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{}\" fill=\"#4a5568\">no figures</text>",
            TOP + 14.0
        );
    }
    for (i, bar) in bars.iter().enumerate() {
        let y = TOP + ROW_HEIGHT * i as f64;
        let width = (bar.value * scale).max(1.0);
        let _ = write!(
            svg,
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\" font-size=\"13\">{label}</text>\
             <rect x=\"{LABEL_WIDTH}\" y=\"{y}\" width=\"{width:.1}\" height=\"{h}\" fill=\"{color}\"/>\
             <text x=\"{vx:.1}\" y=\"{ty}\" font-size=\"13\">{text}</text>",
            lx = LABEL_WIDTH - 8.0,
            ty = y + 15.0,
            label = escape(&bar.label),
            h = ROW_HEIGHT - 8.0,
            color = bar.color,
            vx = LABEL_WIDTH + width + 6.0,
            text = escape(&bar.text),
        );
    }
    if let Some((label, value)) = reference {
        let x = LABEL_WIDTH + value * scale;
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" y1=\"{y1}\" x2=\"{x:.1}\" y2=\"{y2}\" stroke=\"#e53e3e\" \
             stroke-dasharray=\"4 3\"/><text x=\"{x:.1}\" y=\"{ly}\" font-size=\"12\" \
             fill=\"#e53e3e\" text-anchor=\"middle\">{label}</text>",
            y1 = TOP - 6.0,
            y2 = height - 6.0,
            ly = TOP - 10.0,
            label = escape(&label),
        );
    }
    svg.push_str("</svg>\n");
    svg
}

pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn fixed(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

fn percent(fraction: Option<f64>) -> String {
    fraction.map_or_else(|| "–".to_owned(), |f| format!("{:.0} %", f * 100.0))
}

fn bytes(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| human(v.max(0.0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::measure::Sample;

    fn case(kind: CaseKind, label: &str, bytes: u64, seconds: f64, growth: u64) -> CaseResult {
        CaseResult {
            kind,
            label: label.to_owned(),
            bytes,
            random: Vec::new(),
            samples: vec![Sample {
                seconds,
                cpu_seconds: seconds / 2.0,
                rss_before: 10 << 20,
                peak_rss: (10 << 20) + growth,
            }],
        }
    }

    fn report() -> Report {
        Report {
            command: "brisk bench --cases <all>".into(),
            endpoint: "embedded".into(),
            server: Some(ServerSettings::from_args(&[])),
            machine: Machine::current(),
            repeat: 1,
            part_size: 8 << 20,
            concurrency: 4,
            memory_budget: 13 << 30,
            memory_budget_source: "MemTotal + the largest GET".into(),
            cases: vec![
                case(CaseKind::Loopback, "loopback 1.0 GiB", 1 << 30, 0.25, 0),
                case(CaseKind::Get, "get 1.0 GiB", 1 << 30, 0.5, 1 << 30),
                case(CaseKind::Server, "server 1.0 GiB", 1 << 30, 1.0, 40 << 20),
            ],
            notes: vec![],
        }
    }

    #[test]
    fn rates_are_shown_against_the_loopback_ceiling() {
        let r = report();
        assert_eq!(r.loopback_ceiling(), Some(4.0));
        assert_eq!(r.fraction_of_loopback(&r.cases[1]), Some(0.5));
        let table = r.table();
        assert!(table.contains("50 %"), "{table}");
        assert!(
            table.contains("memory budget 13.0 GiB (MemTotal + the largest GET)"),
            "{table}"
        );
        assert_eq!(
            r.to_json()["memory_budget_source"],
            "MemTotal + the largest GET"
        );
        assert!(table.contains("fsync on, MD5 ETags on"), "{table}");
        let json = r.to_json();
        assert_eq!(json["cases"][1]["amplification"]["median"], 1.0);
        assert_eq!(json["loopback_gib_per_s"], 4.0);
        assert_eq!(json["server"]["fsync"], true);
    }

    #[test]
    fn the_page_has_three_charts_and_escapes_text() {
        let page = report().html();
        assert_eq!(page.matches("<svg").count(), 3);
        assert!(page.contains("get 1.0 GiB"));
        assert!(page.contains("brisk bench --cases &lt;all&gt;"));
        assert!(!page.contains("<all>"));
        assert!(page.contains("loopback 4.00 GiB/s"));
    }

    #[test]
    fn an_empty_chart_says_so() {
        let svg = bar_chart("t", &[], None);
        assert!(svg.contains("no figures") && svg.ends_with("</svg>\n"));
    }
}
