//! `brisk bench`: brisk's main job on this machine. With no arguments it starts the embedded server
//! (a child process on a temporary directory, 127.0.0.1, a free port) and runs the standard suite;
//! with `--endpoint-url` it runs against any S3 server. See `docs/bench.md` for what each figure
//! means and how it is measured.
//!
//! The suite, in order: the loopback ceiling, in-memory GETs, a download to a file, an upload from
//! that file (during which the embedded server's memory is read too), and one point of random reads
//! (256 KiB blocks at queue depth 64). Each case runs `--repeat` times; medians are printed, min and
//! max are in the JSON.
//!
//! `brisk bench random` ([`random`]) sweeps random reads over block size × queue depth;
//! `brisk bench mixed` ([`mixed`]) runs a mix of GET, PUT, HEAD, DELETE and LIST, as warp does.

mod cases;
mod chart;
mod loopback;
mod measure;
mod mixed;
mod payload;
mod procfs;
mod random;
mod random_point;
mod report;
mod server;
mod xorshift;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use brisk_client::{Client, Credentials, TransferOptions};
use brisk_mem::MemoryBudget;
use thiserror::Error;

use crate::args::{BenchArgs, BenchCommand, BenchPlaceArgs, CaseKind, GlobalArgs};
use crate::exit::CliError;
use cases::{KEY_PREFIX, Target, Written};
use report::{Machine, Report};
use server::{ServerProcess, ServerSettings, WorkDir};

/// In-memory GET sizes of the standard suite: 256 MiB (seed 001's object was 258 MB) and 1 GiB.
pub const DEFAULT_GET_SIZES: [usize; 2] = [256 << 20, 1 << 30];
/// Download, upload and loopback size of the standard suite: 4 GiB, 512 parts of 8 MiB, long enough
/// that connection set-up and the first part do not weigh on the rate.
pub const DEFAULT_TRANSFER_SIZE: usize = 4 << 30;
/// Runs per case: 3, the fewest with a median that ignores one outlier.
pub const DEFAULT_REPEAT: u32 = 3;
/// `--quick` (CI): a 16 MiB GET, 64 MiB transfers (8 parts), one run each.
pub const QUICK_GET_SIZE: usize = 16 << 20;
pub const QUICK_TRANSFER_SIZE: usize = 64 << 20;
pub const QUICK_REPEAT: u32 = 1;
/// Bucket the embedded server's run uses.
pub const EMBEDDED_BUCKET: &str = "brisk-bench";
/// Exit code after Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED_EXIT: u8 = 130;

/// Why a benchmark run failed.
#[derive(Debug, Error)]
pub enum BenchError {
    /// An S3 operation, a local file or the configuration failed (as in the other commands).
    #[error(transparent)]
    Cli(#[from] CliError),
    #[error(transparent)]
    Server(#[from] server::ServerError),
    /// `/proc` could not be read or written (the benchmark needs Linux's `/proc`).
    #[error("measuring memory and CPU through /proc: {0}")]
    Measure(#[source] std::io::Error),
    /// An operation moved another number of bytes than the case's size.
    #[error("{what} moved {got} bytes, expected {expected}")]
    WrongCount {
        what: String,
        got: u64,
        expected: u64,
    },
    /// A random-read run completed no read in its time.
    #[error("random reads: none completed ({errors} failed)")]
    NoReads { errors: u64 },
    #[error("interrupted; the server was stopped and the objects written were deleted")]
    Interrupted,
}

impl BenchError {
    pub fn exit_code(&self) -> u8 {
        use crate::exit::code;
        match self {
            Self::Cli(e) => e.exit_code(),
            Self::Server(_) | Self::Measure(_) => code::LOCAL_IO,
            Self::WrongCount { .. } | Self::NoReads { .. } => code::S3,
            Self::Interrupted => INTERRUPTED_EXIT,
        }
    }
}

/// What to run, from the options (explicit sizes win over `--quick`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub get_sizes: Vec<u64>,
    pub transfer_size: u64,
    pub repeat: usize,
    pub cases: Vec<CaseKind>,
    /// How long each run of the `random` case reads.
    pub random_duration: std::time::Duration,
}

impl Plan {
    pub fn from_args(args: &BenchArgs) -> Result<Self, CliError> {
        let get_sizes: Vec<usize> = match (&args.size_get[..], args.quick) {
            ([], true) => vec![QUICK_GET_SIZE],
            ([], false) => DEFAULT_GET_SIZES.to_vec(),
            (sizes, _) => sizes.to_vec(),
        };
        let transfer_size = args.size_transfer.unwrap_or(if args.quick {
            QUICK_TRANSFER_SIZE
        } else {
            DEFAULT_TRANSFER_SIZE
        });
        if get_sizes.contains(&0) || transfer_size == 0 {
            return Err(CliError::Usage(
                "bench: sizes must be at least 1 byte".into(),
            ));
        }
        let repeat = args.repeat.unwrap_or(if args.quick {
            QUICK_REPEAT
        } else {
            DEFAULT_REPEAT
        });
        let mut cases = if args.cases.is_empty() {
            CaseKind::ALL.to_vec()
        } else {
            args.cases.clone()
        };
        cases.sort();
        cases.dedup();
        Ok(Self {
            get_sizes: get_sizes.into_iter().map(|s| s as u64).collect(),
            transfer_size: transfer_size as u64,
            repeat: repeat as usize,
            cases,
            random_duration: if args.quick {
                random::QUICK_SUITE_DURATION
            } else {
                random::SUITE_DURATION
            },
        })
    }

    fn has(&self, kind: CaseKind) -> bool {
        self.cases.contains(&kind)
    }
}

/// Runs `brisk bench`, prints the result or the error, and returns the exit code.
pub async fn run(global: GlobalArgs, args: BenchArgs) -> ExitCode {
    let outcome = match &args.command {
        Some(BenchCommand::Random(random)) => random::run(&global, random).await,
        Some(BenchCommand::Mixed(mixed)) => mixed::run(&global, mixed).await,
        None => run_checked(&global, &args).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("brisk: bench: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

async fn run_checked(global: &GlobalArgs, args: &BenchArgs) -> Result<(), BenchError> {
    let mut plan = Plan::from_args(args)?;
    let status = Status::new(global.quiet);
    let mut notes = Vec::new();
    if external_endpoint(global).is_some() && plan.has(CaseKind::Server) {
        plan.cases.retain(|c| *c != CaseKind::Server);
        notes.push(
            "server: not run against --endpoint-url (it reads the embedded server's process)"
                .to_owned(),
        );
    }
    let report = suite(global, args, &plan, notes, &status).await;
    status.clear();
    let report = report?;
    emit(
        global,
        args.place.json_file.as_deref(),
        &args.report,
        &report.to_json(),
        &report.table(),
        &report.html(),
    )
}

/// Prints the table (or the JSON document with `--json`; nothing with `-q`), writes the JSON to
/// `--json-file` and the page to `<report>/index.html`.
fn emit(
    global: &GlobalArgs,
    json_file: Option<&std::path::Path>,
    report_dir: &std::path::Path,
    json: &serde_json::Value,
    table: &str,
    html: &str,
) -> Result<(), BenchError> {
    if global.json {
        println!("{json}");
    } else if !global.quiet {
        print!("{table}");
    }
    if let Some(path) = json_file {
        std::fs::write(path, format!("{json:#}\n"))
            .map_err(|e| CliError::local(format!("write {}", path.display()), e))?;
    }
    let page = report_dir.join(report::REPORT_FILE);
    std::fs::create_dir_all(report_dir)
        .and_then(|()| std::fs::write(&page, html))
        .map_err(|e| CliError::local(format!("write the report in {}", report_dir.display()), e))?;
    if !global.quiet && !global.json {
        println!("report: {}", page.display());
    }
    Ok(())
}

/// Starts what is needed, runs the plan's cases, and removes what it created, whatever happened.
async fn suite(
    global: &GlobalArgs,
    args: &BenchArgs,
    plan: &Plan,
    notes: Vec<String>,
    status: &Status,
) -> Result<Report, BenchError> {
    let largest_get = plan.get_sizes.iter().copied().max().unwrap_or(0) as usize;
    let sizing = ClientSizing {
        largest_get,
        connections: 0,
        repeat: plan.repeat,
    };
    let options = transfer_options(global);
    let ran = in_session(
        global,
        &args.place,
        sizing,
        status,
        async |target, written| run_cases(target, plan, written, status).await,
    )
    .await?;
    Ok(Report {
        command: command_line(),
        endpoint: ran.endpoint,
        server: ran.server,
        machine: Machine::current(),
        repeat: plan.repeat,
        part_size: options.part_size,
        concurrency: options.parts_in_flight,
        memory_budget: ran.memory_budget.0,
        memory_budget_source: ran.memory_budget.1,
        cases: ran.outcome,
        notes,
    })
}

/// How a benchmark's client is built and its cases repeated.
struct ClientSizing {
    /// The largest in-memory GET (the budget is raised to hold it).
    largest_get: usize,
    /// Connections per host (0: the CLI's default from `--concurrency`).
    connections: usize,
    /// Runs of each case.
    repeat: usize,
}

/// The client's memory budget and where it came from: `--max-memory`, or the process-wide default
/// (`BRISK_MAX_MEMORY`, else a share of the cgroup limit or `MemTotal`) plus the largest GET, so
/// that a `get_bytes` never waits for blocks the pool keeps for reuse.
fn bench_budget(global: &GlobalArgs, largest_get: usize) -> Result<(usize, String), CliError> {
    match global.max_memory {
        Some(bytes) => Ok((bytes, "--max-memory".to_owned())),
        None => {
            let choice =
                brisk_mem::process_default_budget().map_err(|e| CliError::Usage(e.to_string()))?;
            Ok((
                choice.bytes.saturating_add(largest_get),
                format!("{} + the largest GET", choice.source),
            ))
        }
    }
}

/// What a benchmark produced, and where it ran (for its report).
struct Ran<T> {
    outcome: T,
    /// `--endpoint-url`, or `embedded`.
    endpoint: String,
    /// The embedded server's settings, when it ran on one.
    server: Option<ServerSettings>,
    /// The bucket it used.
    bucket: String,
    /// The client's memory budget, bytes, and where it came from.
    memory_budget: (usize, String),
}

/// Runs `run` in a benchmark session: Ctrl-C and SIGTERM handlers registered before anything is
/// started (so they always reach the clean-up), the work directory, the embedded server unless
/// `--endpoint-url` is given, the client and the bucket; afterwards, whatever happened, the objects
/// written are deleted, a bucket the run created is removed, the server is killed and reaped and
/// the work directory removed.
async fn in_session<T>(
    global: &GlobalArgs,
    place: &BenchPlaceArgs,
    sizing: ClientSizing,
    status: &Status,
    run: impl for<'t> AsyncFnOnce(&'t Target<'t>, &'t mut Written) -> Result<T, BenchError>,
) -> Result<Ran<T>, BenchError> {
    use tokio::signal::unix::{SignalKind, signal};
    // clap's `conflicts_with` sees `--endpoint-url` only when it comes after `bench`.
    if place.tls && external_endpoint(global).is_some() {
        return Err(CliError::Usage(
            "--tls serves the embedded server over HTTPS; with --endpoint-url, give an \
             https:// URL instead"
                .into(),
        )
        .into());
    }
    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|e| CliError::local("listen for Ctrl-C", e))?;
    let mut terminate =
        signal(SignalKind::terminate()).map_err(|e| CliError::local("listen for SIGTERM", e))?;
    let work = work_dir(place.work_dir.as_deref())?;
    let tls = if place.tls {
        Some(server::TlsFiles::self_signed(work.path())?)
    } else {
        None
    };
    let server = start_server(global, &work, &place.server_arg, tls.as_ref(), status).await?;
    let client = build_client(
        global,
        server.as_ref(),
        tls.as_ref(),
        sizing.largest_get,
        sizing.connections,
    )?;
    let (bucket, created_bucket) =
        prepare_bucket(&client, place.bucket.as_deref(), server.is_some()).await?;
    let target = Target {
        client: &client,
        bucket: &bucket,
        server_pid: server.as_ref().map(ServerProcess::pid),
        files: work.path(),
        options: transfer_options(global),
        repeat: sizing.repeat,
    };
    let mut written = Written::default();
    let outcome = tokio::select! {
        r = run(&target, &mut written) => r,
        _ = interrupt.recv() => Err(BenchError::Interrupted),
        _ = terminate.recv() => Err(BenchError::Interrupted),
    };
    status.show("cleaning up");
    clean_up(&client, &bucket, &written, created_bucket).await;
    Ok(Ran {
        outcome: outcome?,
        endpoint: external_endpoint(global)
            .cloned()
            .unwrap_or_else(|| "embedded".to_owned()),
        server: server
            .as_ref()
            .map(|_| ServerSettings::from_args(&place.server_arg).with_tls(place.tls)),
        bucket,
        memory_budget: bench_budget(global, sizing.largest_get)?,
    })
    // `server` (killed and reaped) and `work` (removed) are dropped here, and on every early return.
}

/// The run's directory under `--work-dir` or the system's temporary directory.
fn work_dir(parent: Option<&std::path::Path>) -> Result<WorkDir, CliError> {
    let parent = parent.map_or_else(std::env::temp_dir, ToOwned::to_owned);
    WorkDir::create(&parent)
        .map_err(|e| CliError::local(format!("create a directory in {}", parent.display()), e))
}

/// Starts the embedded server in `work` unless `--endpoint-url` is given.
async fn start_server(
    global: &GlobalArgs,
    work: &WorkDir,
    extra_args: &[String],
    tls: Option<&server::TlsFiles>,
    status: &Status,
) -> Result<Option<ServerProcess>, BenchError> {
    if external_endpoint(global).is_some() {
        return Ok(None);
    }
    status.show("starting the embedded server");
    let root = work.path().join("server");
    let mut extra = extra_args.to_vec();
    if let Some(tls) = tls {
        extra.extend(tls.server_args());
    }
    let started = tokio::task::spawn_blocking(move || ServerProcess::start(&root, &extra))
        .await
        .map_err(|e| CliError::local("start the embedded server", std::io::Error::other(e)))?;
    Ok(Some(started?))
}

/// The endpoint a benchmark runs against instead of the embedded server: `--endpoint-url` (S3),
/// or `--azure-endpoint-url` (Azure Blob, configured from `AZURE_STORAGE_*`).
pub(crate) fn external_endpoint(global: &GlobalArgs) -> Option<&String> {
    global
        .endpoint_url
        .as_ref()
        .or(global.azure_endpoint_url.as_ref())
}

/// Transfers (and the objects' set-up) use the CLI's `--part-size`, `--concurrency` and
/// `--payload-signing`.
fn transfer_options(global: &GlobalArgs) -> TransferOptions {
    TransferOptions {
        part_size: global.part_size,
        parts_in_flight: global.concurrency.max(1),
        payload_signing: global.payload_signing.into(),
        ..TransferOptions::default()
    }
}

/// The client: the embedded server's keys, or the usual configuration (flags, environment,
/// profile). The budget: [`bench_budget`]. Connections per host: one
/// more than `--concurrency`, or `connections` (random reads) if that is more.
fn build_client(
    global: &GlobalArgs,
    server: Option<&ServerProcess>,
    tls: Option<&server::TlsFiles>,
    largest_get: usize,
    connections: usize,
) -> Result<Client, CliError> {
    let (budget, _) = bench_budget(global, largest_get)?;
    let mut builder = Client::builder()
        .max_connections_per_host((global.concurrency.max(1) + 1).max(connections))
        .memory_budget(MemoryBudget::new(budget));
    match server {
        Some(server) => {
            builder = builder
                .endpoint(server.url().to_owned())
                .region(brisk_server::config::DEFAULT_REGION)
                .credentials(Credentials::new(
                    server.access_key.clone(),
                    server.secret_key.clone(),
                ));
            if let Some(tls) = tls {
                builder = builder.ca_bundle(tls.certificate.clone());
            }
        }
        None if global.endpoint_url.is_none() && global.azure_endpoint_url.is_some() => {
            builder = builder
                .endpoint(global.azure_endpoint_url.clone().unwrap_or_default())
                .azure(brisk_client::AzureSettings::new())
                .anonymous(global.no_sign_request);
        }
        None => {
            if let Some(url) = &global.endpoint_url {
                builder = builder.endpoint(url.clone());
            }
            if let Some(region) = &global.region {
                builder = builder.region(region.clone());
            }
            if let Some(profile) = &global.profile {
                builder = builder.profile(profile.clone());
            }
            builder = builder.anonymous(global.no_sign_request);
        }
    }
    Ok(builder.build()?)
}

/// The bucket to use and whether this run created it (and so removes it): the embedded server's
/// `brisk-bench`, `--bucket` as given, or a new `brisk-bench-<random>`.
async fn prepare_bucket(
    client: &Client,
    given: Option<&str>,
    embedded: bool,
) -> Result<(String, bool), BenchError> {
    if let Some(bucket) = given {
        return Ok((bucket.to_owned(), false));
    }
    let bucket = if embedded {
        EMBEDDED_BUCKET.to_owned()
    } else {
        let (suffix, _) = server::generate_keys();
        format!("brisk-bench-{}", suffix[10..].to_ascii_lowercase())
    };
    client.create_bucket(&bucket).await.map_err(|e| {
        CliError::s3(
            format!("create bucket {}", cases::object_url(client, &bucket, "")),
            e,
        )
    })?;
    Ok((bucket, true))
}

async fn run_cases(
    target: &Target<'_>,
    plan: &Plan,
    written: &mut Written,
    status: &Status,
) -> Result<Vec<cases::CaseResult>, BenchError> {
    let repeat = plan.repeat;
    let mut results = Vec::new();
    let progress =
        |label: String| move |run: usize| status.show(&format!("{label} ({}/{repeat})", run + 1));
    let transfer = plan.transfer_size;
    let transfer_label = crate::size::human(transfer);
    if plan.has(CaseKind::Loopback) {
        let label = format!("loopback {transfer_label}");
        results.push(target.loopback(transfer, &progress(label)).await?);
    }
    if plan.has(CaseKind::Get) {
        for &size in &plan.get_sizes {
            let key = format!("{KEY_PREFIX}get-{size}");
            let human = crate::size::human(size);
            status.show(&format!("storing a {human} object"));
            target.store(&key, size, written).await?;
            results.push(
                target
                    .get(&key, size, &progress(format!("get {human}")))
                    .await?,
            );
            target
                .client
                .delete(target.bucket, &key)
                .await
                .map_err(|e| CliError::s3(format!("delete {}", target.url(&key)), e))?;
        }
    }
    let wants_upload = plan.has(CaseKind::Upload) || plan.has(CaseKind::Server);
    let wants_random = plan.has(CaseKind::Random);
    if plan.has(CaseKind::Download) || wants_upload || wants_random {
        // The random reads read the transfer object too, after the upload wrote it again.
        let key = format!("{KEY_PREFIX}transfer-{transfer}");
        let file: PathBuf = target.files.join("transfer.bin");
        status.show(&format!("storing a {transfer_label} object"));
        target.store(&key, transfer, written).await?;
        if plan.has(CaseKind::Download) {
            let label = format!("download {transfer_label}");
            results.push(
                target
                    .download(&key, transfer, &file, &progress(label))
                    .await?,
            );
        } else if wants_upload {
            status.show(&format!("downloading the {transfer_label} upload source"));
            target.fetch(&key, &file).await?;
        }
        if wants_upload {
            let label = format!("upload {transfer_label}");
            let (client_side, server_side) = target
                .upload(&key, transfer, &file, &progress(label))
                .await?;
            if plan.has(CaseKind::Upload) {
                results.push(client_side);
            }
            if plan.has(CaseKind::Server) {
                results.extend(server_side);
            }
        }
        let _ = std::fs::remove_file(&file);
        if wants_random {
            let (block, depth) = (random::SUITE_BLOCK_SIZE, random::SUITE_QUEUE_DEPTH);
            let label = format!("random {} QD {depth}", crate::size::human(block as u64));
            let options = random_point::MeasureOptions {
                key: key.clone(),
                block_size: block.min(transfer as usize),
                queue_depth: depth,
                duration: plan.random_duration,
                ..Default::default()
            };
            results.push(target.random(&options, &progress(label)).await?);
        }
    }
    Ok(results)
}

/// Deletes the keys this run wrote and the bucket it created. Best effort: a failure here is
/// reported but does not hide the figures (or the error) of the run.
async fn clean_up(client: &Client, bucket: &str, written: &Written, created_bucket: bool) {
    for key in &written.keys {
        match client.delete(bucket, key).await {
            Ok(()) | Err(brisk_client::Error::NoSuchKey(_)) => {}
            Err(e) => eprintln!(
                "brisk: bench: could not delete {}: {e}",
                cases::object_url(client, bucket, key)
            ),
        }
    }
    if created_bucket && let Err(e) = client.delete_bucket(bucket).await {
        eprintln!(
            "brisk: bench: could not remove bucket {}: {e}",
            cases::object_url(client, bucket, "")
        );
    }
}

/// The command line as given, for the report (`brisk` for the program's path).
fn command_line() -> String {
    let mut words: Vec<String> = std::env::args().skip(1).collect();
    words.insert(0, "brisk".to_owned());
    words.join(" ")
}

/// The progress line on stderr: which case or point is running. Off with `--quiet` or when stderr is not a
/// terminal.
#[derive(Debug)]
struct Status {
    enabled: bool,
}

impl Status {
    fn new(quiet: bool) -> Self {
        Self {
            enabled: !quiet && std::io::stderr().is_terminal(),
        }
    }

    fn show(&self, what: &str) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2Kbrisk bench: {what}");
            let _ = err.flush();
        }
    }

    fn clear(&self) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Plan {
        let cli = crate::args::Cli::try_parse_from(["brisk", "bench"].iter().chain(args)).unwrap();
        match cli.command {
            crate::args::Command::Bench(a) => Plan::from_args(&a).unwrap(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_quick_and_explicit_sizes() {
        let standard = plan(&[]);
        assert_eq!(standard.get_sizes, vec![256 << 20, 1 << 30]);
        assert_eq!(standard.transfer_size, 4 << 30);
        assert_eq!(standard.repeat, 3);
        assert_eq!(standard.cases, CaseKind::ALL.to_vec());
        let quick = plan(&["--quick"]);
        assert_eq!(quick.get_sizes, vec![16 << 20]);
        assert_eq!((quick.transfer_size, quick.repeat), (64 << 20, 1));
        let chosen = plan(&[
            "--quick",
            "--size-get",
            "1MiB,2MiB",
            "--repeat",
            "2",
            "--cases",
            "upload,get",
        ]);
        assert_eq!(chosen.get_sizes, vec![1 << 20, 2 << 20]);
        assert_eq!(chosen.repeat, 2);
        assert_eq!(chosen.cases, vec![CaseKind::Get, CaseKind::Upload]);
    }

    #[test]
    fn bad_options_are_refused() {
        let parse =
            |a: &[&str]| crate::args::Cli::try_parse_from(["brisk", "bench"].iter().chain(a));
        assert!(parse(&["--repeat", "0"]).is_err());
        assert!(parse(&["--cases", "get,teleport"]).is_err());
        assert!(parse(&["--size-get", "12 parsecs"]).is_err());
        let cli = parse(&["--size-transfer", "0"]).unwrap();
        let crate::args::Command::Bench(a) = cli.command else {
            unreachable!()
        };
        assert!(Plan::from_args(&a).is_err());
    }
}
