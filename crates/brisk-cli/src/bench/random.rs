//! `brisk bench random`: random reads of one object, swept over block size × queue depth. Each point
//! is one closed-loop run of [`measure`]: `queue_depth` reads of `block_size` bytes at random
//! aligned offsets always in flight for the point's duration, through one
//! [`BatchReader`](brisk_client::batch::BatchReader) (by default a connection per read in flight
//! up to 64, requests pipelined past that).
//! Figures per point: IOPS, MiB/s, client CPU seconds per GiB, p50/p99 latency, the process's
//! threads and sockets, and, with the embedded server, the server's CPU seconds per GiB.
//!
//! **Defaults, and why.** Block sizes 4 KiB, 64 KiB, 256 KiB, 1 MiB, 4 MiB (a page, a small and a
//! large columnar chunk, a download part's order of size) × queue depths 1, 4, 16, 64, 256 (powers
//! of 4: the x axis of the charts is even, and 64 is the figure the issue and `docs/random-reads.md`
//! quote) = 25 points of 2 s: 50 s of reads, about a minute and a half with the 1 GiB object written
//! first on 2 cores. 2 s is the shortest run whose figures settle here: the slowest point (4 MiB at
//! queue depth 1, about 100 reads per second on this machine) still completes some 200 reads, enough
//! for a median and a rough p99, and CPU time is counted in 10 ms ticks, so 2 s of reads is read to
//! better than 1 %. The object is 1 GiB so that the reads spread over more than the caches of the
//! CPU (the server's page cache holds it anyway: this measures the data path, not a disk).
//! `--quick` (CI): 4 KiB and 256 KiB at queue depths 1 and 16, 500 ms each, a 64 MiB object.
//!
//! Memory: each point holds `queue_depth` buffers of `block_size` bytes (256 × 4 MiB = 1 GiB at the
//! largest default point), allocated once per point and reused for every read.
//!
//! With `--endpoint-url` it runs against any S3 server: it writes its own object under
//! `brisk-bench/` and deletes it at the end, or reads an existing one given with `--key` (which it
//! neither writes nor deletes).

use std::time::Duration;

use serde_json::{Value, json};

use super::cases::{KEY_PREFIX, Target, Written, check_random};
use super::chart::{COLORS, Series, YScale, line_chart};
use super::measure::GIB;
use super::procfs::Process;
use super::random_point::{Figures, MeasureOptions, measure};
use super::report::{Machine, STYLE, escape, figures_json, ms};
use super::server::ServerSettings;
use super::{BenchError, ClientSizing, Status, command_line, in_session};
use crate::args::{GlobalArgs, PipeliningArg, RandomArgs};
use crate::exit::CliError;
use crate::size::human;

pub const DEFAULT_BLOCK_SIZES: [usize; 5] = [4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];
pub const DEFAULT_QUEUE_DEPTHS: [usize; 5] = [1, 4, 16, 64, 256];
pub const DEFAULT_DURATION: Duration = Duration::from_secs(2);
pub const DEFAULT_OBJECT_SIZE: usize = 1 << 30;
pub const QUICK_BLOCK_SIZES: [usize; 2] = [4 << 10, 256 << 10];
pub const QUICK_QUEUE_DEPTHS: [usize; 2] = [1, 16];
pub const QUICK_DURATION: Duration = Duration::from_millis(500);
pub const QUICK_OBJECT_SIZE: usize = 64 << 20;

/// The standard suite's `random` case: the headline point, 256 KiB at queue depth 64, for 3 s per
/// run (500 ms with `--quick`), on the suite's transfer object.
pub const SUITE_BLOCK_SIZE: usize = 256 << 10;
pub const SUITE_QUEUE_DEPTH: usize = 64;
pub const SUITE_DURATION: Duration = Duration::from_secs(3);
pub const QUICK_SUITE_DURATION: Duration = Duration::from_millis(500);

/// The object the sweep reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Object {
    /// An existing key (`--key`), neither written nor deleted.
    Existing(String),
    /// An object of this size the run writes and deletes.
    Write(u64),
}

/// What to run, from the options (explicit values win over `--quick`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RandomPlan {
    /// Ascending, without repeats.
    pub block_sizes: Vec<usize>,
    /// Ascending, without repeats.
    pub queue_depths: Vec<usize>,
    pub duration: Duration,
    pub connections: usize,
    pub pipelining: PipeliningArg,
    pub object: Object,
}

impl RandomPlan {
    pub fn from_args(global: &GlobalArgs, args: &RandomArgs) -> Result<Self, CliError> {
        let pick = |given: &[usize], quick: &[usize], default: &[usize]| {
            let mut v = match (given, args.quick) {
                ([], true) => quick.to_vec(),
                ([], false) => default.to_vec(),
                (given, _) => given.to_vec(),
            };
            v.sort_unstable();
            v.dedup();
            v
        };
        let block_sizes = pick(&args.block_size, &QUICK_BLOCK_SIZES, &DEFAULT_BLOCK_SIZES);
        let queue_depths = pick(
            &args.queue_depth,
            &QUICK_QUEUE_DEPTHS,
            &DEFAULT_QUEUE_DEPTHS,
        );
        let duration = args.duration.unwrap_or(if args.quick {
            QUICK_DURATION
        } else {
            DEFAULT_DURATION
        });
        let object = match &args.key {
            Some(_) if super::external_endpoint(global).is_none() => {
                return Err(CliError::Usage(
                    "bench random: --key reads an existing object of --endpoint-url; without \
                     --endpoint-url the benchmark writes its own object (--object-size)"
                        .into(),
                ));
            }
            Some(key) => Object::Existing(key.clone()),
            None => {
                let size = args.object_size.unwrap_or(if args.quick {
                    QUICK_OBJECT_SIZE
                } else {
                    DEFAULT_OBJECT_SIZE
                }) as u64;
                if size == 0 {
                    return Err(CliError::Usage(
                        "bench random: the object must be at least 1 byte".into(),
                    ));
                }
                check_blocks_fit(&block_sizes, size)?;
                Object::Write(size)
            }
        };
        Ok(Self {
            block_sizes,
            queue_depths,
            duration,
            connections: args.connections,
            pipelining: args.pipelining,
            object,
        })
    }

    fn points(&self) -> usize {
        self.block_sizes.len() * self.queue_depths.len()
    }
}

/// Every block must fit in the object at least once.
fn check_blocks_fit(block_sizes: &[usize], object_size: u64) -> Result<(), CliError> {
    match block_sizes.iter().find(|&&b| b as u64 > object_size) {
        Some(&b) => Err(CliError::Usage(format!(
            "bench random: a block of {} is larger than the object ({}, {object_size} bytes); \
             give a smaller --block-size or a larger --object-size",
            human(b as u64),
            human(object_size)
        ))),
        None => Ok(()),
    }
}

/// One point of the sweep.
#[derive(Debug, Clone)]
pub struct Point {
    pub block_size: usize,
    pub queue_depth: usize,
    pub figures: Figures,
    /// The embedded server's CPU seconds over the point (`None` against another endpoint).
    pub server_cpu_seconds: Option<f64>,
}

impl Point {
    /// Server CPU seconds per GiB read.
    pub fn server_cpu_s_per_gib(&self) -> Option<f64> {
        let gib = self.figures.bytes as f64 / GIB;
        self.server_cpu_seconds
            .filter(|_| gib > 0.0)
            .map(|cpu| cpu / gib)
    }
}

/// Everything one sweep found.
#[derive(Debug, Clone)]
pub struct RandomReport {
    pub command: String,
    /// `embedded` or the `--endpoint-url`.
    pub endpoint: String,
    pub server: Option<ServerSettings>,
    pub machine: Machine,
    pub bucket: String,
    pub key: String,
    pub object_size: u64,
    /// Whether the run wrote (and deleted) the object.
    pub object_written: bool,
    pub duration: Duration,
    pub connections: usize,
    pub pipelining: PipeliningArg,
    /// The client's memory budget, bytes, and where it came from.
    pub memory_budget: (usize, String),
    pub points: Vec<Point>,
}

/// Runs `brisk bench random` and prints or writes what it found.
pub async fn run(global: &GlobalArgs, args: &RandomArgs) -> Result<(), BenchError> {
    let plan = RandomPlan::from_args(global, args)?;
    let status = Status::new(global.quiet);
    let report = sweep(global, args, &plan, &status).await;
    status.clear();
    let report = report?;
    super::emit(
        global,
        args.place.json_file.as_deref(),
        &args.report,
        &report.to_json(),
        &report.table(),
        &report.html(),
    )
}

/// Starts what is needed, runs every point, and removes what it created, whatever happened.
async fn sweep(
    global: &GlobalArgs,
    args: &RandomArgs,
    plan: &RandomPlan,
    status: &Status,
) -> Result<RandomReport, BenchError> {
    let sizing = ClientSizing {
        largest_get: 0,
        connections: plan.connections,
        repeat: 1,
    };
    let ran = in_session(
        global,
        &args.place,
        sizing,
        status,
        async |target, written| run_points(target, plan, written, status).await,
    )
    .await?;
    let (key, object_size, points) = ran.outcome;
    Ok(RandomReport {
        command: command_line(),
        endpoint: ran.endpoint,
        server: ran.server,
        machine: Machine::current(),
        bucket: ran.bucket,
        key,
        object_size,
        object_written: matches!(plan.object, Object::Write(_)),
        duration: plan.duration,
        connections: plan.connections,
        pipelining: plan.pipelining,
        memory_budget: ran.memory_budget,
        points,
    })
}

/// Writes (or finds) the object, then measures every point: block sizes ascending, and for each,
/// queue depths ascending.
async fn run_points(
    target: &Target<'_>,
    plan: &RandomPlan,
    written: &mut Written,
    status: &Status,
) -> Result<(String, u64, Vec<Point>), BenchError> {
    let (key, size) = match &plan.object {
        Object::Write(size) => {
            let key = format!("{KEY_PREFIX}random-{size}");
            status.show(&format!("storing a {} object", human(*size)));
            target.store(&key, *size, written).await?;
            (key, *size)
        }
        Object::Existing(key) => {
            let head = target
                .client
                .head(target.bucket, key)
                .await
                .map_err(|e| CliError::s3(format!("head s3://{}/{key}", target.bucket), e))?;
            check_blocks_fit(&plan.block_sizes, head.content_length)?;
            (key.clone(), head.content_length)
        }
    };
    let total = plan.points();
    let mut points = Vec::with_capacity(total);
    for &block_size in &plan.block_sizes {
        for &queue_depth in &plan.queue_depths {
            status.show(&format!(
                "random {} QD {queue_depth} ({}/{total})",
                human(block_size as u64),
                points.len() + 1
            ));
            let options = MeasureOptions {
                key: key.clone(),
                block_size,
                queue_depth,
                connections: plan.connections,
                pipelining: plan.pipelining.into(),
                duration: plan.duration,
                ..MeasureOptions::default()
            };
            let server_cpu = |pid: Option<u32>| -> Result<Option<f64>, BenchError> {
                pid.map(|pid| Process::Pid(pid).cpu_seconds())
                    .transpose()
                    .map_err(BenchError::Measure)
            };
            let server_before = server_cpu(target.server_pid)?;
            let figures = measure(target.client, target.bucket, &options)
                .await
                .map_err(|e| {
                    CliError::s3(
                        format!(
                            "random {} reads of s3://{}/{key}",
                            human(block_size as u64),
                            target.bucket
                        ),
                        e,
                    )
                })?;
            let server_after = server_cpu(target.server_pid)?;
            check_random(&figures, block_size as u64)?;
            points.push(Point {
                block_size,
                queue_depth,
                figures,
                server_cpu_seconds: server_before
                    .zip(server_after)
                    .map(|(b, a)| (a - b).max(0.0)),
            });
        }
    }
    Ok((key, size, points))
}

fn pipelining_name(p: PipeliningArg) -> &'static str {
    match p {
        PipeliningArg::Auto => "auto",
        PipeliningArg::On => "on",
        PipeliningArg::Off => "off",
    }
}

fn opt(value: Option<f64>, digits: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

/// Column widths of the printed table, in the order of [`point_cells`].
const TEXT_WIDTHS: [usize; 12] = [10, 5, 9, 9, 10, 12, 8, 8, 7, 7, 5, 6];

/// One point's figures as the cells of a table row, formatted once for the printed table and the
/// HTML page: block, QD, IOPS, MiB/s, CPU s/GiB, server s/GiB, p50 ms, p99 ms, threads, sockets,
/// connections, errors.
fn point_cells(p: &Point) -> [String; 12] {
    let f = &p.figures;
    [
        human(p.block_size as u64),
        p.queue_depth.to_string(),
        format!("{:.0}", f.iops),
        format!("{:.1}", f.mib_per_s),
        format!("{:.3}", f.cpu_s_per_gib),
        opt(p.server_cpu_s_per_gib(), 3),
        format!("{:.2}", ms(f.latency_p50)),
        format!("{:.2}", ms(f.latency_p99)),
        f.threads.to_string(),
        f.sockets.to_string(),
        f.connections.to_string(),
        f.errors.to_string(),
    ]
}

impl RandomReport {
    fn settings_line(&self) -> String {
        let server = match &self.server {
            Some(s) => s.describe(),
            None => format!("endpoint {}", self.endpoint),
        };
        format!(
            "object s3://{}/{} ({}{}); {:.1} s per point; up to {} connections, pipelining {}; \
             memory budget {} ({}); {server}",
            self.bucket,
            self.key,
            human(self.object_size),
            if self.object_written {
                ", written by the run"
            } else {
                ""
            },
            self.duration.as_secs_f64(),
            self.connections,
            pipelining_name(self.pipelining),
            human(self.memory_budget.0 as u64),
            self.memory_budget.1,
        )
    }

    /// The table printed at the end of a run.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let header: Vec<String> = [
            "block",
            "QD",
            "IOPS",
            "MiB/s",
            "CPU s/GiB",
            "server s/GiB",
            "p50 ms",
            "p99 ms",
            "threads",
            "sockets",
            "conns",
            "errors",
        ]
        .iter()
        .zip(TEXT_WIDTHS)
        .map(|(name, width)| format!("{name:>width$}"))
        .collect();
        let _ = writeln!(out, "{}", header.join(" "));
        for p in &self.points {
            let cells = point_cells(p);
            let line: Vec<String> = cells
                .iter()
                .zip(TEXT_WIDTHS)
                .map(|(cell, width)| format!("{cell:>width$}"))
                .collect();
            let _ = writeln!(out, "{}", line.join(" "));
        }
        let _ = writeln!(out, "{}", self.settings_line());
        out
    }

    /// The JSON document of `--json` and `--json-file`.
    pub fn to_json(&self) -> Value {
        let points: Vec<Value> = self
            .points
            .iter()
            .map(|p| {
                let mut v = figures_json(&p.figures);
                v["block_size"] = json!(p.block_size);
                v["queue_depth"] = json!(p.queue_depth);
                v["server_cpu_seconds"] = json!(p.server_cpu_seconds);
                v["server_cpu_s_per_gib"] = json!(p.server_cpu_s_per_gib());
                v
            })
            .collect();
        json!({
            "brisk_version": env!("CARGO_PKG_VERSION"),
            "benchmark": "random",
            "command": self.command,
            "endpoint": self.endpoint,
            "server": self.server.as_ref().map(ServerSettings::to_json),
            "machine": self.machine,
            "bucket": self.bucket,
            "key": self.key,
            "object_size": self.object_size,
            "object_written": self.object_written,
            "duration_s": self.duration.as_secs_f64(),
            "connections": self.connections,
            "pipelining": pipelining_name(self.pipelining),
            "memory_budget": self.memory_budget.0,
            "memory_budget_source": self.memory_budget.1,
            "points": points,
        })
    }

    /// One line per block size, against queue depth.
    fn series(&self, figure: impl Fn(&Point) -> Option<f64>, unit: &str) -> Vec<Series> {
        let mut blocks: Vec<usize> = self.points.iter().map(|p| p.block_size).collect();
        blocks.dedup();
        blocks
            .iter()
            .enumerate()
            .map(|(i, &block)| Series {
                label: human(block as u64),
                color: COLORS[i % COLORS.len()],
                points: self
                    .points
                    .iter()
                    .filter(|p| p.block_size == block)
                    .filter_map(|p| {
                        let v = figure(p)?;
                        let tip = format!(
                            "{} at queue depth {}: {} {unit}",
                            human(block as u64),
                            p.queue_depth,
                            if v >= 100.0 {
                                format!("{v:.0}")
                            } else {
                                format!("{v:.3}")
                            }
                        );
                        Some((p.queue_depth as f64, v, tip))
                    })
                    .collect(),
            })
            .collect()
    }

    /// The HTML page: IOPS, bandwidth and CPU against queue depth, one line per block size, then
    /// the table, the settings and the command.
    pub fn html(&self) -> String {
        use std::fmt::Write as _;
        let mut depths: Vec<f64> = self.points.iter().map(|p| p.queue_depth as f64).collect();
        depths.sort_by(f64::total_cmp);
        depths.dedup();
        let mut page = String::new();
        let _ = write!(
            page,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>brisk bench random</title><style>{STYLE}</style></head><body>\n\
             <h1>brisk bench random</h1>\n<p class=\"sub\">{}</p>\n",
            escape(&format!(
                "{} · random aligned reads of a {} object, {:.1} s per point",
                self.machine.describe(),
                human(self.object_size),
                self.duration.as_secs_f64()
            ))
        );
        let x = "queue depth (reads in flight)";
        page.push_str(&line_chart(
            "Reads per second against queue depth, per block size (higher is better)",
            x,
            "IOPS",
            &depths,
            &self.series(|p| Some(p.figures.iops), "IOPS"),
            YScale::LogIfWide,
        ));
        page.push_str(&line_chart(
            "Bandwidth against queue depth, per block size (higher is better)",
            x,
            "MiB/s",
            &depths,
            &self.series(|p| Some(p.figures.mib_per_s), "MiB/s"),
            YScale::Linear,
        ));
        page.push_str(&line_chart(
            "Client CPU seconds (user + system) per GiB read (lower is better)",
            x,
            "CPU s/GiB",
            &depths,
            &self.series(|p| Some(p.figures.cpu_s_per_gib), "CPU s/GiB"),
            YScale::LogIfWide,
        ));
        page.push_str(
            "<h2>Figures</h2><table><tr><th>block</th><th>QD</th><th>IOPS</th><th>MiB/s</th>\
             <th>CPU s/GiB</th><th>server CPU s/GiB</th><th>p50 ms</th><th>p99 ms</th>\
             <th>threads</th><th>sockets</th><th>connections</th><th>errors</th></tr>\n",
        );
        for p in &self.points {
            let cells: String = point_cells(p)
                .iter()
                .map(|cell| format!("<td>{}</td>", escape(cell)))
                .collect();
            let _ = writeln!(page, "<tr>{cells}</tr>");
        }
        page.push_str("</table>\n");
        let _ = write!(
            page,
            "<h2>Settings</h2><p>{}</p>\n<h2>Command</h2><pre>{}</pre>\n<p class=\"sub\">Each \
             point keeps queue-depth reads in flight for its duration (a closed loop); latency is \
             from submission to completion. Client CPU is this process's user + system time; the \
             server is a separate process, its CPU read from /proc. Threads and sockets are this \
             process's. See docs/bench.md.</p>\n</body></html>\n",
            escape(&self.settings_line()),
            escape(&self.command)
        );
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<(GlobalArgs, RandomArgs), clap::Error> {
        let cli = crate::args::Cli::try_parse_from(["brisk"].iter().chain(args))?;
        match cli.command {
            crate::args::Command::Bench(crate::args::BenchArgs {
                command: Some(crate::args::BenchCommand::Random(r)),
                ..
            }) => Ok((cli.global, *r)),
            _ => unreachable!(),
        }
    }

    fn plan(args: &[&str]) -> Result<RandomPlan, CliError> {
        let (g, r) = parse(args).unwrap();
        RandomPlan::from_args(&g, &r)
    }

    #[test]
    fn defaults_quick_and_explicit_points() {
        let standard = plan(&["bench", "random"]).unwrap();
        assert_eq!(standard.block_sizes, DEFAULT_BLOCK_SIZES.to_vec());
        assert_eq!(standard.queue_depths, DEFAULT_QUEUE_DEPTHS.to_vec());
        assert_eq!(standard.points(), 25);
        assert_eq!(standard.duration, Duration::from_secs(2));
        assert_eq!(standard.object, Object::Write(1 << 30));
        assert_eq!(standard.connections, 64);
        let quick = plan(&["bench", "random", "--quick"]).unwrap();
        assert_eq!(quick.points(), 4);
        assert_eq!(quick.object, Object::Write(64 << 20));
        let one = plan(&[
            "--endpoint-url",
            "http://127.0.0.1:9",
            "bench",
            "random",
            "--bucket",
            "b",
            "--key",
            "k",
            "--block-size",
            "256KiB",
            "--queue-depth",
            "64,64",
            "--duration",
            "15s",
            "--pipelining",
            "off",
            "--connections",
            "64",
        ])
        .unwrap();
        assert_eq!(one.block_sizes, vec![256 << 10]);
        assert_eq!(one.queue_depths, vec![64]);
        assert_eq!(one.duration, Duration::from_secs(15));
        assert_eq!(one.object, Object::Existing("k".into()));
        assert_eq!(one.pipelining, PipeliningArg::Off);
        assert_eq!(one.connections, 64);
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in [
            &["bench", "random", "--queue-depth", "0"][..],
            &["bench", "random", "--block-size", "0"],
            &["bench", "random", "--duration", "0s"],
            &["bench", "random", "--duration", "soon"],
            &["bench", "random", "--pipelining", "sometimes"],
            &["bench", "random", "--connections", "0"],
            &["bench", "random", "--key", "k"],
            &["bench", "--quick", "random"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let err = plan(&["bench", "random", "--bucket", "b", "--key", "k"]).unwrap_err();
        assert!(err.to_string().contains("--endpoint-url"), "{err}");
        let err = plan(&[
            "bench",
            "random",
            "--object-size",
            "1MiB",
            "--block-size",
            "4MiB",
        ])
        .unwrap_err();
        assert!(err.to_string().contains("larger than the object"), "{err}");
        assert_eq!(err.exit_code(), crate::exit::code::USAGE);
    }

    fn figures(iops: f64) -> Figures {
        Figures {
            reads: iops as u64,
            errors: 0,
            bytes: iops as u64 * 4096,
            elapsed: Duration::from_secs(1),
            iops,
            mib_per_s: iops * 4096.0 / (1 << 20) as f64,
            cpu_seconds: 0.1,
            cpu_s_per_gib: 0.5,
            latency_p50: Duration::from_micros(500),
            latency_p99: Duration::from_millis(3),
            threads: 3,
            sockets: 4,
            connections: 4,
            pipelined: 0,
            fell_back: false,
        }
    }

    #[test]
    fn the_report_has_a_line_per_block_size_in_each_chart() {
        let points = [4096usize, 1 << 20]
            .iter()
            .flat_map(|&block| {
                [1usize, 16].map(|qd| Point {
                    block_size: block,
                    queue_depth: qd,
                    figures: figures(100.0 * qd as f64),
                    server_cpu_seconds: Some(0.2),
                })
            })
            .collect();
        let report = RandomReport {
            command: "brisk bench random <x>".into(),
            endpoint: "embedded".into(),
            server: Some(ServerSettings::from_args(&[])),
            machine: Machine::current(),
            bucket: "b".into(),
            key: "k".into(),
            object_size: 64 << 20,
            object_written: true,
            duration: Duration::from_millis(500),
            connections: 8,
            pipelining: PipeliningArg::Auto,
            memory_budget: (5 << 30, "MemTotal + the largest GET".into()),
            points,
        };
        let page = report.html();
        assert_eq!(page.matches("<svg").count(), 3);
        assert_eq!(page.matches("<path").count(), 6);
        assert!(page.contains("brisk bench random &lt;x&gt;"));
        let json = report.to_json();
        assert_eq!(json["points"].as_array().unwrap().len(), 4);
        assert_eq!(json["points"][1]["queue_depth"], 16);
        assert_eq!(json["points"][1]["reads"], 1600);
        let table = report.table();
        assert_eq!(table.lines().count(), 6, "{table}");
        assert!(table.contains("4.0 KiB"), "{table}");
        assert!(
            table.contains("memory budget 5.0 GiB (MemTotal + the largest GET)"),
            "{table}"
        );
        assert_eq!(json["memory_budget"], 5u64 << 30);
    }
}
