//! The command line: global options and one struct per subcommand.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::size::parse_size;

/// Default parts or ranges in flight per transfer: the client's `parts_in_flight` default (4 × 8 MiB
/// keeps a 1 Gb/s link at 100 ms per request busy, and stays inside a 32 MiB budget).
pub const DEFAULT_CONCURRENCY: usize = brisk_client::transfer::DEFAULT_PARTS_IN_FLIGHT;

/// Default lifetime of a presigned URL: one hour, as the AWS CLI.
pub const DEFAULT_PRESIGN_SECONDS: u64 = 3600;

/// S3 refuses presigned URLs valid for more than 7 days.
pub const MAX_PRESIGN_SECONDS: u64 = 7 * 24 * 3600;

/// More requests in flight than this only queue for connections and budget.
pub const MAX_CONCURRENCY: usize = 256;

fn parse_concurrency(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?}: give a number from 1 to {MAX_CONCURRENCY}"
        )),
    }
}

const EXAMPLES: &str = "\
Examples:
  brisk --endpoint-url http://127.0.0.1:9000 mb s3://photos
  brisk cp ./holiday.jpg s3://photos/2026/holiday.jpg
  brisk cp s3://photos/2026/holiday.jpg ./copy.jpg
  brisk mv ./outbox s3://photos/inbox --recursive
  brisk sync ./site s3://www --delete --exclude '*.tmp'
  brisk cp ./album s3://photos/album --recursive --exclude '*' --include '*.jpg'
  tar c ./album | brisk cp - s3://photos/album.tar --max-memory 64MiB
  brisk cp s3://photos/album.tar - | tar t
  brisk ls s3://photos --recursive --human-readable --summarize
  brisk presign s3://photos/2026/holiday.jpg --expires-in 600
  AZURE_STORAGE_CONNECTION_STRING=UseDevelopmentStorage=true brisk cp ./a.jpg az://photos/a.jpg
  brisk cp az://photos/a.jpg s3://photos/a.jpg
  brisk serve --root ./data --listen 127.0.0.1:9000
  brisk bench --quick

Exit codes: 0 ok, 1 S3 error, 2 usage, 3 not found, 4 auth, 5 network, 6 local I/O.";

#[derive(Debug, Parser)]
#[command(
    name = "brisk",
    version,
    about = "Move objects to and from S3 with bounded memory",
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command accepts (before or after the subcommand).
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// S3 endpoint, e.g. http://127.0.0.1:9000 (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile, or AWS).
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// Azure Blob endpoint for az:// URLs, e.g. http://127.0.0.1:10000/devstoreaccount1 for an
    /// emulator (default: BlobEndpoint of AZURE_STORAGE_CONNECTION_STRING, else
    /// https://<AZURE_STORAGE_ACCOUNT>.blob.core.windows.net).
    #[arg(long, global = true, value_name = "URL")]
    pub azure_endpoint_url: Option<String>,
    /// Region requests are signed for (default: AWS_REGION, the profile, us-east-1).
    #[arg(long, global = true)]
    pub region: Option<String>,
    /// Profile of ~/.aws/credentials and ~/.aws/config (default: AWS_PROFILE, then "default").
    #[arg(long, global = true)]
    pub profile: Option<String>,
    /// Do not look for credentials; for public buckets and anonymous servers.
    #[arg(long, global = true)]
    pub no_sign_request: bool,
    /// Hard cap on the memory transfers buffer, e.g. 256MiB (default: BRISK_MAX_MEMORY, else half
    /// of the memory the process may use, cgroup limit or MemTotal, at least 1GiB; --debug shows it).
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    pub max_memory: Option<usize>,
    /// Parts or ranges in flight per transfer.
    #[arg(long, global = true, default_value_t = DEFAULT_CONCURRENCY, value_parser = parse_concurrency)]
    pub concurrency: usize,
    /// Downloads keep `--concurrency` streams throughout. Without it, a download of 2 GiB or more
    /// measures whether one stream carries it as fast for less CPU (a server that is the bound)
    /// and goes on with one if so.
    #[arg(long, global = true)]
    pub fixed_streams: bool,
    /// Multipart part size and streaming range size, e.g. 8MiB (5MiB .. 8MiB for streams).
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size,
          default_value = "8MiB")]
    pub part_size: usize,
    /// How uploads protect their payload: `auto` signs it over http:// and sends it unsigned with a
    /// CRC32C over https://; `unsigned` sends it unsigned with a CRC32C everywhere (over http://, a
    /// file's parts then leave it with sendfile, the checksum as a trailer: under a third of the CPU
    /// of a signed upload, but the bytes are protected against damage, not against tampering on the
    /// network); `signed` always signs it.
    #[arg(long, global = true, value_enum, default_value_t = PayloadSigningArg::Auto)]
    pub payload_signing: PayloadSigningArg,
    /// Print results as JSON (one document per line).
    #[arg(long, global = true)]
    pub json: bool,
    /// Print nothing but errors; no progress bars.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Print the client's debug events on stderr: retries, resumed reads, checksum checks and
    /// failures (RUST_LOG, when set, chooses the events instead).
    #[arg(long, global = true)]
    pub debug: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Copy files and objects: local to s3:// or az://, back, between them, - for stdin/stdout.
    Cp(CpArgs),
    /// Make a directory or prefix like another: copy what is missing, of another size, or newer.
    Sync(SyncArgs),
    /// Move files and objects: copy, check the copy, then delete the source (same directions as cp).
    Mv(CpArgs),
    /// List buckets (az:// lists containers), or objects and prefixes under s3://bucket[/prefix] or az://container[/prefix].
    Ls(LsArgs),
    /// Delete an object, or every object under a prefix with --recursive.
    Rm(RmArgs),
    /// Make a bucket.
    Mb(BucketArgs),
    /// Remove a bucket (--force: delete its objects first).
    Rb(RbArgs),
    /// Write an object to stdout.
    Cat(CatArgs),
    /// Print a presigned URL for an object.
    Presign(PresignArgs),
    /// Print a shell completion script.
    Completions(CompletionArgs),
    /// Serve a directory as an S3-compatible endpoint.
    Serve(ServeArgs),
    /// Measure GET, download, upload and random reads against the embedded server (or --endpoint-url).
    Bench(BenchArgs),
}

#[derive(Debug, Args)]
pub struct CpArgs {
    /// Source: a local path, s3://bucket/key, or - (stdin).
    pub source: String,
    /// Destination: a local path, s3://bucket/key, or - (stdout).
    pub destination: String,
    /// Copy every file under a directory or every object under a prefix.
    #[arg(long)]
    pub recursive: bool,
    #[command(flatten)]
    pub select: SelectArgs,
    /// Downloads of objects with no stored checksum: also check the file against the ETag when it
    /// is an MD5 (single-part uploads), in a second pass over the file.
    #[arg(long)]
    pub verify_md5: bool,
    #[command(flatten)]
    pub headers: ObjectHeaderArgs,
}

/// What uploads store with each object besides its bytes, as the AWS CLI's options say it.
#[derive(Debug, Clone, Args)]
pub struct ObjectHeaderArgs {
    /// The Content-Type every uploaded object gets (default: guessed from each file's extension,
    /// e.g. text/html for .html; none for stdin or a name without a known extension).
    #[arg(long, value_name = "TYPE")]
    pub content_type: Option<String>,
    /// Do not guess a Content-Type from file extensions: objects get --content-type or the
    /// service's default (binary/octet-stream on S3).
    #[arg(long)]
    pub no_guess_mime_type: bool,
    /// Cache-Control of uploaded objects, e.g. max-age=3600.
    #[arg(long, value_name = "VALUE")]
    pub cache_control: Option<String>,
    /// Content-Disposition of uploaded objects.
    #[arg(long, value_name = "VALUE")]
    pub content_disposition: Option<String>,
    /// Content-Encoding of uploaded objects, e.g. gzip for files stored compressed.
    #[arg(long, value_name = "VALUE")]
    pub content_encoding: Option<String>,
    /// Content-Language of uploaded objects.
    #[arg(long, value_name = "VALUE")]
    pub content_language: Option<String>,
    /// Expires of uploaded objects (an HTTP date, e.g. "Wed, 21 Oct 2037 07:28:00 GMT").
    #[arg(long, value_name = "DATE")]
    pub expires: Option<String>,
    /// User metadata of uploaded objects: KEY=VALUE[,KEY=VALUE...] or a JSON object, as the AWS
    /// CLI takes it (x-amz-meta-KEY; Azure x-ms-meta-KEY).
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = parse_metadata)]
    pub metadata: Option<Metadata>,
}

/// `--metadata`: (name, value) pairs, names lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata(pub Vec<(String, String)>);

/// `k1=v1,k2=v2` or `{"k1": "v1"}` as (name, value) pairs; names are lower-cased, as S3 keeps them.
pub fn parse_metadata(text: &str) -> Result<Metadata, String> {
    let pairs: Vec<(String, String)> = if text.trim_start().starts_with('{') {
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))?;
        map.into_iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => Ok((k, s)),
                other => Err(format!("metadata values are strings; {k} is {other}")),
            })
            .collect::<Result<_, _>>()?
    } else {
        text.split(',')
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.trim().to_owned(), v.to_owned()))
                    .ok_or_else(|| format!("{pair:?} is not KEY=VALUE"))
            })
            .collect::<Result<_, _>>()?
    };
    for (name, value) in &pairs {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !valid {
            return Err(format!(
                "metadata name {name:?}: use letters, digits, '-', '_' and '.'"
            ));
        }
        if value.bytes().any(|b| b.is_ascii_control() || !b.is_ascii()) {
            return Err(format!(
                "metadata value of {name:?}: use printable ASCII (S3 sends metadata as HTTP headers)"
            ));
        }
    }
    Ok(Metadata(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
    ))
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Source: a local directory, s3://bucket[/prefix] or az://container[/prefix].
    pub source: String,
    /// Destination: a local directory, s3://bucket[/prefix] or az://container[/prefix].
    pub destination: String,
    /// Also delete what the destination has and the source does not (within --include/--exclude).
    #[arg(long)]
    pub delete: bool,
    /// Compare sizes only: a file of the same size is not copied whatever its time.
    #[arg(long)]
    pub size_only: bool,
    /// Downloads: a file of the same size is skipped only when its time equals the object's exactly.
    #[arg(long)]
    pub exact_timestamps: bool,
    #[command(flatten)]
    pub select: SelectArgs,
    #[command(flatten)]
    pub headers: ObjectHeaderArgs,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// s3://bucket[/prefix] or az://container[/prefix]; none lists the buckets, az:// the containers.
    pub path: Option<String>,
    /// Every object under the prefix, not only the first level.
    #[arg(long)]
    pub recursive: bool,
    /// Sizes as 1.5 KiB, 3.0 MiB.
    #[arg(long)]
    pub human_readable: bool,
    /// Print the number of objects and their total size at the end.
    #[arg(long)]
    pub summarize: bool,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// s3://bucket/key, or s3://bucket[/prefix] with --recursive.
    pub path: String,
    /// Delete every object under the prefix.
    #[arg(long)]
    pub recursive: bool,
    #[command(flatten)]
    pub select: SelectArgs,
}

/// Which paths or keys a command acts on (`cp`, `rm`), and whether it only says what it would do.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Select paths or keys matching a glob again (applied in order with --exclude; the last match
    /// wins; with --recursive).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out paths or keys matching a glob (applied in order with --include; the last match
    /// wins; with --recursive).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Print what would be done, do nothing.
    #[arg(long)]
    pub dryrun: bool,
}

#[derive(Debug, Args)]
pub struct BucketArgs {
    /// s3://bucket
    pub bucket: String,
}

#[derive(Debug, Args)]
pub struct RbArgs {
    /// s3://bucket
    pub bucket: String,
    /// Delete every object in the bucket first.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct CatArgs {
    /// s3://bucket/key
    pub path: String,
}

#[derive(Debug, Args)]
pub struct PresignArgs {
    /// s3://bucket/key
    pub path: String,
    /// Seconds the URL stays valid (1 .. 604800).
    #[arg(long, default_value_t = DEFAULT_PRESIGN_SECONDS,
          value_parser = clap::value_parser!(u64).range(1..=MAX_PRESIGN_SECONDS))]
    pub expires_in: u64,
    /// A URL to PUT the object with, instead of GET.
    #[arg(long)]
    pub put: bool,
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Directory holding buckets, objects and metadata (created if missing).
    #[arg(long)]
    pub root: PathBuf,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = brisk_server::config::DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Access key id requests must be signed with (a random one is generated when neither key is given).
    #[arg(long, env = "BRISK_ACCESS_KEY", requires = "secret_key")]
    pub access_key: Option<String>,
    /// Secret access key.
    #[arg(
        long,
        env = "BRISK_SECRET_KEY",
        requires = "access_key",
        hide_env_values = true
    )]
    pub secret_key: Option<String>,
    /// Region of the credential scope and of GetBucketLocation.
    #[arg(long, default_value = brisk_server::config::DEFAULT_REGION)]
    pub region: String,
    /// Accept unsigned requests (local development only).
    #[arg(long)]
    pub anonymous: bool,
    /// Base domain of virtual-hosted-style requests (bucket.<domain>).
    #[arg(long, default_value = brisk_server::config::DEFAULT_BASE_DOMAIN)]
    pub base_domain: String,
    /// Read buffer per connection in bytes, or e.g. 64KiB, 1MiB.
    #[arg(long, default_value_t = brisk_server::config::DEFAULT_READ_BUFFER_SIZE, value_parser = parse_size)]
    pub read_buffer_size: usize,
    /// Do not fsync bodies and metadata (benchmarks and throwaway data only).
    #[arg(long)]
    pub no_fsync: bool,
    /// ETags are CRC-64/NVME instead of MD5 (cheaper; clients comparing MD5s will disagree).
    #[arg(long)]
    pub no_md5_etag: bool,
    /// Connections served at once.
    #[arg(long, default_value_t = brisk_server::config::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Slowest average rate a request body may arrive at, enforced 30 s after its head (0: off).
    #[arg(long, value_name = "SIZE", default_value = "1KiB", value_parser = parse_size)]
    pub min_body_rate: usize,
    /// The access log on standard error, one line per request: plain, json or off.
    #[arg(long, value_name = "FORMAT", default_value = "plain", value_parser = ["plain", "json", "off"])]
    pub log_format: String,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Stop when standard input reaches its end: a parent that starts the server with a pipe as its
    /// stdin ties the server's life to its own, even if the parent is killed with SIGKILL.
    #[arg(long)]
    pub stop_on_stdin_eof: bool,
}

/// Most runs per case `brisk bench` accepts.
pub const MAX_BENCH_REPEAT: u32 = 100;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// A benchmark other than the standard suite.
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// Sizes of the in-memory GET objects, comma-separated [default: 256MiB,1GiB; 16MiB with --quick].
    #[arg(long, value_name = "SIZE,...", value_delimiter = ',', value_parser = parse_size)]
    pub size_get: Vec<usize>,
    /// Size of the download, the upload and the loopback copy [default: 4GiB; 64MiB with --quick].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size_transfer: Option<usize>,
    /// Runs of each case; the median is printed [default: 3; 1 with --quick].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_BENCH_REPEAT as i64))]
    pub repeat: Option<u32>,
    /// Cases to run, comma-separated [default: all].
    #[arg(long, value_name = "CASE,...", value_delimiter = ',', value_enum)]
    pub cases: Vec<CaseKind>,
    /// Small sizes and one run (CI): 16MiB GET, 64MiB transfers.
    #[arg(long)]
    pub quick: bool,
    /// Directory the HTML report (index.html) is written to.
    #[arg(long, value_name = "DIR", default_value = "brisk-bench-report")]
    pub report: PathBuf,
    /// Where it runs and what it writes besides the report.
    #[command(flatten)]
    pub place: BenchPlaceArgs,
}

/// One kind of `brisk bench` case (`--cases`); `bench/cases.rs` runs each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum CaseKind {
    /// The machine's loopback ceiling.
    Loopback,
    /// In-memory GET (`get_bytes`).
    Get,
    /// Download to a file.
    Download,
    /// Upload from a file.
    Upload,
    /// The embedded server's memory and CPU while it receives the uploads.
    Server,
    /// Random reads at queue depth (one point; `brisk bench random` sweeps).
    Random,
}

impl CaseKind {
    pub const ALL: [CaseKind; 6] = [
        CaseKind::Loopback,
        CaseKind::Get,
        CaseKind::Download,
        CaseKind::Upload,
        CaseKind::Server,
        CaseKind::Random,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::Get => "get",
            Self::Download => "download",
            Self::Upload => "upload",
            Self::Server => "server",
            Self::Random => "random",
        }
    }
}

/// What every `brisk bench` benchmark takes about where it runs and what it writes.
#[derive(Debug, Args)]
pub struct BenchPlaceArgs {
    /// Also write the JSON document to FILE (--json prints it on stdout instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json_file: Option<PathBuf>,
    /// Bucket to use with --endpoint-url [default: a new brisk-bench-<random>, removed after].
    #[arg(long)]
    pub bucket: Option<String>,
    /// Where the embedded server's data and the downloaded file go [default: the system's temp dir].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// An extra argument for the embedded `brisk serve`, e.g. --server-arg=--no-fsync (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub server_arg: Vec<String>,
    /// Run the embedded server over HTTPS, with a self-signed certificate made for this run and
    /// trusted by the benchmark's client only (with --endpoint-url, give an https:// URL instead).
    #[arg(long, conflicts_with = "endpoint_url")]
    pub tls: bool,
}

/// Benchmarks of `brisk bench` besides the standard suite.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Random reads of one object: a sweep of block size x queue depth (IOPS, MiB/s, CPU, latency).
    Random(Box<RandomArgs>),
    /// GET, PUT, HEAD, DELETE and LIST by percentage for a fixed time, as warp mixed (rate, latency, CPU).
    ///
    /// A population of objects is uploaded first; the mix then runs on it, its PUTs replacing what
    /// its DELETEs remove, and every object written is deleted at the end.
    Mixed(Box<MixedArgs>),
}

/// Most reads in flight `brisk bench random` accepts.
pub const MAX_QUEUE_DEPTH: usize = 4096;

fn parse_queue_depth(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_QUEUE_DEPTH).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?}: a queue depth is a number from 1 to {MAX_QUEUE_DEPTH}"
        )),
    }
}

fn parse_block_size(text: &str) -> Result<usize, String> {
    match parse_size(text)? {
        0 => Err(format!("{text:?}: a block is at least 1 byte")),
        n => Ok(n),
    }
}

fn parse_connections(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_CONCURRENCY).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?}: give a number of connections from 1 to {MAX_CONCURRENCY}"
        )),
    }
}

/// `15s`, `500ms`, `2m`, or a number of seconds (`2.5`); more than 0 and at most an hour.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    use std::time::Duration;
    let t = text.trim();
    let seconds = |s: &str| s.trim().parse::<f64>().ok();
    let value = if let Some(ms) = t.strip_suffix("ms") {
        seconds(ms).map(|v| v / 1000.0)
    } else if let Some(s) = t.strip_suffix('s') {
        seconds(s)
    } else if let Some(m) = t.strip_suffix('m') {
        seconds(m).map(|v| v * 60.0)
    } else {
        seconds(t)
    };
    match value {
        Some(v) if v.is_finite() && v > 0.0 && v <= 3600.0 => Ok(Duration::from_secs_f64(v)),
        Some(_) => Err(format!(
            "{text:?}: a duration is more than 0 and at most 1 hour"
        )),
        None => Err(format!("{text:?} is not a duration (e.g. 3s, 500ms, 2m)")),
    }
}

/// `--payload-signing`: how uploads protect their payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PayloadSigningArg {
    /// Signed over http://, unsigned with a checksum over https://.
    Auto,
    /// The payload's SHA-256 is signed.
    Signed,
    /// `UNSIGNED-PAYLOAD` or an aws-chunked trailer: integrity from the CRC32C checksum.
    Unsigned,
}

impl From<PayloadSigningArg> for brisk_client::PayloadSigning {
    fn from(p: PayloadSigningArg) -> Self {
        match p {
            PayloadSigningArg::Auto => Self::Auto,
            PayloadSigningArg::Signed => Self::Signed,
            PayloadSigningArg::Unsigned => Self::Unsigned,
        }
    }
}

/// Whether `brisk bench random` pipelines requests on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PipeliningArg {
    /// Pipelined until the server shows it closes connections.
    Auto,
    /// Always pipelined.
    On,
    /// One request at a time per connection.
    Off,
}

impl From<PipeliningArg> for brisk_client::batch::Pipelining {
    fn from(p: PipeliningArg) -> Self {
        match p {
            PipeliningArg::Auto => Self::Auto,
            PipeliningArg::On => Self::On,
            PipeliningArg::Off => Self::Off,
        }
    }
}

#[derive(Debug, Args)]
pub struct RandomArgs {
    /// Block sizes to sweep, comma-separated [default: 4KiB,64KiB,256KiB,1MiB,4MiB; 4KiB,256KiB with --quick].
    #[arg(long, value_name = "SIZE,...", value_delimiter = ',', value_parser = parse_block_size)]
    pub block_size: Vec<usize>,
    /// Queue depths (reads in flight) to sweep, comma-separated [default: 1,4,16,64,256; 1,16 with --quick].
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = parse_queue_depth)]
    pub queue_depth: Vec<usize>,
    /// How long each point reads, e.g. 2s, 500ms [default: 2s; 500ms with --quick].
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Connections used at most [default: the batch reader's, 64].
    #[arg(long, value_name = "N", value_parser = parse_connections,
          default_value_t = brisk_client::batch::DEFAULT_BATCH_CONNECTIONS)]
    pub connections: usize,
    /// Whether requests are pipelined on a connection.
    #[arg(long, value_enum, default_value_t = PipeliningArg::Auto)]
    pub pipelining: PipeliningArg,
    /// An existing object to read (with --endpoint-url and --bucket); it is neither written nor deleted.
    #[arg(long, requires = "bucket")]
    pub key: Option<String>,
    /// Size of the object written when no --key is given [default: 1GiB; 64MiB with --quick].
    #[arg(long, value_name = "SIZE", value_parser = parse_size, conflicts_with = "key")]
    pub object_size: Option<usize>,
    /// Few points and short ones (CI): 4KiB,256KiB x QD 1,16, 500ms each, a 64MiB object.
    #[arg(long)]
    pub quick: bool,
    /// Directory the HTML report (index.html) is written to.
    #[arg(long, value_name = "DIR", default_value = "brisk-bench-random-report")]
    pub report: PathBuf,
    /// Where it runs and what it writes besides the report.
    #[command(flatten)]
    pub place: BenchPlaceArgs,
}

/// An operation of `brisk bench mixed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MixedOp {
    Get,
    Put,
    Head,
    Delete,
    List,
}

impl MixedOp {
    pub const ALL: [MixedOp; 5] = [Self::Get, Self::Put, Self::Head, Self::Delete, Self::List];

    pub fn name(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Put => "put",
            Self::Head => "head",
            Self::Delete => "delete",
            Self::List => "list",
        }
    }
}

/// `--mix`: each operation's weight, in [`MixedOp::ALL`]'s order (0 for one not named). Weights
/// are shares of their sum, so `get=45,head=30,put=15,delete=10` is in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix(pub [f64; 5]);

/// warp's `mixed` default: 45 % GET, 30 % HEAD, 15 % PUT, 10 % DELETE.
pub const DEFAULT_MIX: &str = "get=45,head=30,put=15,delete=10";

/// `get=45,head=30,put=15,delete=10,list=0`: names of [`MixedOp`], each once, with a
/// non-negative number; the sum must be more than 0.
pub fn parse_mix(text: &str) -> Result<Mix, String> {
    let mut weights = [None; 5];
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not OPERATION=PERCENT (e.g. get=45)"))?;
        let name = name.trim().to_ascii_lowercase();
        let op = MixedOp::ALL
            .iter()
            .position(|op| op.name() == name)
            .ok_or_else(|| {
                format!("{name:?} is not an operation: use get, put, head, delete and list")
            })?;
        let weight: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| format!("{name}={value}: a percentage is a number of 0 or more"))?;
        if weights[op].replace(weight).is_some() {
            return Err(format!("{name} is given twice"));
        }
    }
    let weights = weights.map(|w| w.unwrap_or(0.0));
    if weights.iter().sum::<f64>() <= 0.0 {
        return Err(format!(
            "{text:?}: the mix sums to 0; give at least one operation more than 0 (e.g. {DEFAULT_MIX})"
        ));
    }
    Ok(Mix(weights))
}

/// Largest object `brisk bench mixed` writes: 5 GiB, the most one PUT may carry.
pub const MAX_MIXED_OBJECT: u64 = 5 << 30;

/// `--size`: one size, or the bounds of a range `MIN..MAX` (both included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectSizes {
    pub min: u64,
    pub max: u64,
}

/// `64KiB` (fixed) or `16KiB..1MiB`; at least 1 byte, at most [`MAX_MIXED_OBJECT`].
pub fn parse_object_sizes(text: &str) -> Result<ObjectSizes, String> {
    let one = |t: &str| -> Result<u64, String> {
        match parse_size(t.trim())? as u64 {
            0 => Err(format!("{t:?}: an object is at least 1 byte")),
            n if n > MAX_MIXED_OBJECT => {
                Err(format!("{t:?}: an object is at most 5 GiB (one PUT)"))
            }
            n => Ok(n),
        }
    };
    let sizes = match text.split_once("..") {
        Some((min, max)) => ObjectSizes {
            min: one(min)?,
            max: one(max)?,
        },
        None => {
            let n = one(text)?;
            ObjectSizes { min: n, max: n }
        }
    };
    if sizes.min > sizes.max {
        return Err(format!(
            "{text:?}: the smallest size is larger than the largest"
        ));
    }
    Ok(sizes)
}

/// How `brisk bench mixed` draws sizes between `--size`'s bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SizeDistribution {
    /// Log-uniform: every doubling between the bounds is as likely (as many 16-32 KiB objects as
    /// 512 KiB-1 MiB ones).
    Log,
    /// Uniform: every size between the bounds is as likely.
    Uniform,
}

fn parse_population(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?}: give a number of objects from 1 to 1000000"
        )),
    }
}

fn parse_workers(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_QUEUE_DEPTH).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?}: give a number of operations in flight from 1 to {MAX_QUEUE_DEPTH}"
        )),
    }
}

#[derive(Debug, Args)]
pub struct MixedArgs {
    /// Share of each operation, OP=PERCENT,... of get, put, head, delete, list (shares of their
    /// sum; an operation not named gets 0).
    #[arg(long, value_name = "OP=PERCENT,...", default_value = DEFAULT_MIX, value_parser = parse_mix)]
    pub mix: Mix,
    /// Object size, fixed (64KiB) or a range (16KiB..1MiB) drawn per object [default: 16KiB..1MiB;
    /// 4KiB..64KiB with --quick].
    #[arg(long, value_name = "SIZE|MIN..MAX", value_parser = parse_object_sizes)]
    pub size: Option<ObjectSizes>,
    /// How sizes are drawn from a range.
    #[arg(long, value_enum, default_value_t = SizeDistribution::Log)]
    pub size_distribution: SizeDistribution,
    /// Operations in flight (each in its own loop, as warp's --concurrent) [default: 20; 4 with --quick].
    #[arg(long, value_name = "N", value_parser = parse_workers)]
    pub concurrent: Option<usize>,
    /// How long the mix runs, e.g. 30s, 2m [default: 30s; 1s with --quick].
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Objects uploaded before the mix starts, which its GETs, HEADs and DELETEs pick from
    /// [default: 1000; 20 with --quick].
    #[arg(long, value_name = "N", value_parser = parse_population)]
    pub objects: Option<usize>,
    /// With --endpoint-url: the server's process, whose CPU is read from /proc/PID/stat (the
    /// embedded server's is read without it).
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// A short run (CI): 1s, 4 in flight, 20 objects of 4KiB..64KiB.
    #[arg(long)]
    pub quick: bool,
    /// Directory the HTML report (index.html) is written to.
    #[arg(long, value_name = "DIR", default_value = "brisk-bench-mixed-report")]
    pub report: PathBuf,
    /// Where it runs and what it writes besides the report.
    #[command(flatten)]
    pub place: BenchPlaceArgs,
}
