//! `s3_load`: a bounded load generator for `brisk serve`, measuring the server from outside.
//!
//! It speaks S3 through brisk-wire's `HttpConnection` and SigV4 `Signer` (no SDK in the way), and
//! when given the server's pid it reads the server's CPU time (`/proc/<pid>/stat`, utime + stime) before
//! and after the load and samples its resident set (`/proc/<pid>/status`, VmRSS) every
//! [`RSS_SAMPLE_INTERVAL`] during it. The client runs on one thread (a current-thread runtime) so that
//! on a 2-core machine the server keeps the other core.
//!
//! ```text
//! s3_load <op> --endpoint 127.0.0.1:9000 --access-key AK --secret-key SK [--pid PID] [options]
//!   mkbucket  --bucket B
//!   put       --bucket B --key K --size 2GiB [--conns N] [--payload unsigned|streaming] [--chunk 64KiB]
//!   get       --bucket B --key K [--conns N]
//!   range     --bucket B --key K --object-size 2GiB [--range 256KiB] [--count 2000] [--conns N]
//!   delete    --bucket B --key K [--conns N]
//!   rmbucket  --bucket B
//!   soak      --bucket B [--conns 64] [--duration 600] [--max-requests N] [--min-size 4KiB]
//!             [--max-size 8MiB] [--slots 16] [--warmup SECS] [--seed S]
//! ```
//!
//! With `--conns N` > 1, `put`, `get` and `delete` work on the keys `K-0` … `K-(N-1)`, one connection
//! each, all at once; `range` spreads `--count` random ranged GETs of one key over N connections,
//! each at queue depth 1. Every run is bounded: by its byte count, its request count, and
//! [`RUN_DEADLINE`]. The result is one line of `name=value` pairs on stdout.
//!
//! `soak` is the long mixed run (see [`run_soak`]): `--conns` clients (64 by default), each on its own
//! keep-alive connection and in its own key prefix, loop over PUT, GET, ranged GET, LIST and DELETE
//! chosen by a seeded generator until `--duration` seconds or `--max-requests` have passed, verifying
//! every byte and every listing, then delete what they wrote. It samples the server every second and
//! reports latency percentiles per operation, errors, and the server's RSS after the warm-up.

// brisk bench's /proc reader (brisk-cli); this program reads another process with it.
#[allow(dead_code)]
#[path = "../../../crates/brisk-cli/src/bench/procfs.rs"]
mod procfs;

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use brisk_wire::checksum::{ChecksumAlgorithm, Checksummer};
use brisk_wire::http::{HttpConnection, RequestHead, ResponseHead};
use brisk_wire::sigv4::chunked::{CRLF, signed_encoded_length};
use brisk_wire::sigv4::{
    AmzDate, Credentials, PayloadHash, SignableRequest, SignedRequest, Signer,
};
use procfs::Process;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Size of the one body buffer every upload repeats: 1 MiB, large enough that the client's per-write
/// overhead is negligible, small enough to stay in cache. Uploads of any size send it again and again.
const BODY_PATTERN_SIZE: usize = 1 << 20;

/// Buffer GET bodies are read into and discarded: 1 MiB, at least the client's read buffer, so
/// brisk-wire reads the socket straight into it.
const GET_BUFFER_SIZE: usize = 1 << 20;

/// How often the server's resident set is sampled during a run. 10 ms: a 1 GiB upload at 1 GiB/s
/// gives 100 samples; a transient buffer that lives shorter than that could be missed, which is why
/// VmHWM (the kernel's own peak) is reported as well.
const RSS_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// No run may take longer than this: 10 minutes is 60 GiB at 0.1 GiB/s, more than any run here.
const RUN_DEADLINE: Duration = Duration::from_secs(600);

/// The region the signer scopes to: `brisk serve`'s default.
const REGION: &str = "us-east-1";

#[derive(Debug, Clone)]
struct Options {
    op: String,
    endpoint: SocketAddr,
    access_key: String,
    secret_key: String,
    pid: Option<u32>,
    bucket: String,
    key: String,
    size: u64,
    object_size: u64,
    range: u64,
    count: u64,
    conns: usize,
    streaming: bool,
    chunk: usize,
    seed: u64,
    duration: Duration,
    max_requests: u64,
    min_size: u64,
    max_size: u64,
    slots: usize,
    warmup: Option<Duration>,
}

fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        _ => return Err(format!("unknown unit in {text:?}")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

fn parse_options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let op = args.next().ok_or("missing operation")?;
    let mut o = Options {
        op,
        endpoint: "127.0.0.1:9000".parse().unwrap(),
        access_key: String::new(),
        secret_key: String::new(),
        pid: None,
        bucket: "bench".into(),
        key: "object".into(),
        size: 1 << 30,
        object_size: 0,
        range: 256 << 10,
        count: 2000,
        conns: 1,
        streaming: false,
        chunk: 64 << 10,
        seed: 0x9e37_79b9_7f4a_7c15,
        duration: SOAK_DEFAULT_DURATION,
        max_requests: SOAK_DEFAULT_MAX_REQUESTS,
        min_size: 4 << 10,
        max_size: 8 << 20,
        slots: 16,
        warmup: None,
    };
    let mut conns = None;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--endpoint" => o.endpoint = value.parse().map_err(|e| bad(&e))?,
            "--access-key" => o.access_key = value,
            "--secret-key" => o.secret_key = value,
            "--pid" => o.pid = Some(value.parse().map_err(|e| bad(&e))?),
            "--bucket" => o.bucket = value,
            "--key" => o.key = value,
            "--size" => o.size = parse_size(&value)?,
            "--object-size" => o.object_size = parse_size(&value)?,
            "--range" => o.range = parse_size(&value)?,
            "--count" => o.count = value.parse().map_err(|e| bad(&e))?,
            "--conns" => conns = Some(value.parse().map_err(|e| bad(&e))?),
            "--chunk" => o.chunk = parse_size(&value)? as usize,
            "--seed" => o.seed = value.parse().map_err(|e| bad(&e))?,
            "--duration" => o.duration = Duration::from_secs(value.parse().map_err(|e| bad(&e))?),
            "--max-requests" => o.max_requests = value.parse().map_err(|e| bad(&e))?,
            "--min-size" => o.min_size = parse_size(&value)?,
            "--max-size" => o.max_size = parse_size(&value)?,
            "--slots" => o.slots = value.parse().map_err(|e| bad(&e))?,
            "--warmup" => {
                o.warmup = Some(Duration::from_secs(value.parse().map_err(|e| bad(&e))?));
            }
            "--payload" => {
                o.streaming = match value.as_str() {
                    "unsigned" => false,
                    "streaming" => true,
                    _ => return Err(format!("--payload is unsigned or streaming, not {value}")),
                }
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    o.conns = conns.unwrap_or(if o.op == "soak" {
        SOAK_DEFAULT_CLIENTS
    } else {
        1
    });
    if o.conns == 0 || o.conns > 256 {
        return Err("--conns must be 1 to 256".into());
    }
    if o.chunk == 0 {
        return Err("--chunk must not be 0".into());
    }
    if o.op == "soak" {
        if o.min_size == 0 || o.min_size > o.max_size {
            return Err("--min-size must be at least 1 and at most --max-size".into());
        }
        if o.slots == 0 || o.slots > 1000 {
            return Err("--slots must be 1 to 1000 (a listing is one page)".into());
        }
        if o.duration.is_zero() || o.duration > SOAK_MAX_DURATION {
            return Err(format!(
                "--duration must be 1 to {} s",
                SOAK_MAX_DURATION.as_secs()
            ));
        }
        if o.chunk > SOAK_IO_BUFFER {
            return Err(format!("--chunk must be at most {SOAK_IO_BUFFER} for soak"));
        }
    }
    Ok(o)
}

/// What the server's process used, from `/proc`.
#[derive(Debug, Clone, Copy, Default)]
struct ProcSample {
    /// utime + stime of all its threads, dead ones included, in seconds.
    cpu_seconds: f64,
    rss_kib: u64,
    hwm_kib: u64,
}

fn read_proc(pid: u32) -> std::io::Result<ProcSample> {
    let cpu_seconds = Process::Pid(pid).cpu_seconds()?;
    let (rss_kib, hwm_kib) = read_rss(pid)?;
    Ok(ProcSample {
        cpu_seconds,
        rss_kib,
        hwm_kib,
    })
}

/// `VmRSS` and `VmHWM` in KiB (0 for a field the kernel does not show).
fn read_rss(pid: u32) -> std::io::Result<(u64, u64)> {
    let status = Process::Pid(pid).status()?;
    let field = |name: &str| status.value(name).unwrap_or(0);
    Ok((field("VmRSS"), field("VmHWM")))
}

/// Samples the server's RSS on its own thread until stopped; returns the largest value seen.
struct RssSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

impl RssSampler {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut peak = 0;
            while !flag.load(Ordering::Relaxed) {
                if let Ok((rss, _)) = read_rss(pid) {
                    peak = peak.max(rss);
                }
                std::thread::sleep(RSS_SAMPLE_INTERVAL);
            }
            peak
        });
        Self { stop, thread }
    }

    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

type Conn = HttpConnection<TcpStream>;

struct Client {
    opts: Options,
    signer: Signer,
    host: String,
}

impl Client {
    async fn connect(&self) -> Result<Conn, String> {
        let stream = TcpStream::connect(self.opts.endpoint)
            .await
            .map_err(|e| format!("connect {}: {e}", self.opts.endpoint))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(HttpConnection::new(stream))
    }

    /// A signed request head; `extra` headers are signed too.
    fn head(
        &self,
        method: &str,
        path: &str,
        extra: &[(&str, String)],
        payload: PayloadHash,
        content_length: Option<u64>,
    ) -> Result<RequestHead, String> {
        self.signed_head(method, path, "", extra, payload, content_length)
            .map(|(head, _)| head)
    }

    /// A signed request head for `path?query` (`query` raw, already percent-encoded, may be empty),
    /// and the signature (an aws-chunked body's chunk signer starts from it).
    fn signed_head(
        &self,
        method: &str,
        path: &str,
        query: &str,
        extra: &[(&str, String)],
        payload: PayloadHash,
        content_length: Option<u64>,
    ) -> Result<(RequestHead, SignedRequest), String> {
        let mut signed_headers: Vec<(&str, &[u8])> = vec![("host", self.host.as_bytes())];
        signed_headers.extend(extra.iter().map(|(n, v)| (*n, v.as_bytes())));
        let request = SignableRequest {
            method,
            path,
            query,
            headers: &signed_headers,
        };
        let now = AmzDate::from_system_time(SystemTime::now()).map_err(|e| e.to_string())?;
        let signed = self
            .signer
            .sign(&request, payload, now)
            .map_err(|e| e.to_string())?;
        let target = if query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{query}")
        };
        let mut head =
            RequestHead::with_request_line(method, &target).map_err(|e| e.to_string())?;
        let h = head.headers_mut();
        let err = |e: brisk_wire::http::HttpError| e.to_string();
        h.append("host", &self.host).map_err(err)?;
        for (n, v) in extra {
            h.append(n, v).map_err(err)?;
        }
        for (n, v) in signed.headers() {
            h.append(n, v).map_err(err)?;
        }
        if let Some(len) = content_length {
            h.set_content_length(len);
        }
        Ok((head, signed))
    }

    /// Reads a response; fails unless its status is `expect`. The body is read into `sink` again and
    /// again (an error document fits in one read and is shown) and its length returned.
    async fn response(
        &self,
        conn: &mut Conn,
        method: &str,
        expect: u16,
        sink: &mut [u8],
    ) -> Result<u64, String> {
        let mut head = ResponseHead::new();
        conn.read_response_head(&mut head, method)
            .await
            .map_err(|e| format!("{method} response: {e}"))?;
        let (mut total, mut first) = (0u64, 0);
        loop {
            let n = conn
                .read_body(sink)
                .await
                .map_err(|e| format!("{method} body: {e}"))?;
            if n == 0 {
                break;
            }
            if total == 0 {
                first = n;
            }
            total += n as u64;
        }
        if head.status() != expect {
            let shown = String::from_utf8_lossy(&sink[..first.min(600)]).into_owned();
            return Err(format!("{method}: status {} {shown}", head.status()));
        }
        Ok(total)
    }

    async fn put(&self, conn: &mut Conn, key: &str, pattern: &[u8]) -> Result<(), String> {
        let path = format!("/{}/{key}", self.opts.bucket);
        let size = self.opts.size;
        if self.opts.streaming {
            let chunk = self.opts.chunk as u64;
            let extra = [
                ("content-encoding", "aws-chunked".to_owned()),
                ("x-amz-decoded-content-length", size.to_string()),
            ];
            let encoded = signed_encoded_length(size, chunk);
            let mut signed_headers: Vec<(&str, &[u8])> = vec![("host", self.host.as_bytes())];
            signed_headers.extend(extra.iter().map(|(n, v)| (*n, v.as_bytes())));
            let now = AmzDate::from_system_time(SystemTime::now()).map_err(|e| e.to_string())?;
            let request = SignableRequest {
                method: "PUT",
                path: &path,
                query: "",
                headers: &signed_headers,
            };
            let signed = self
                .signer
                .sign(&request, PayloadHash::StreamingSigned, now)
                .map_err(|e| e.to_string())?;
            let mut head =
                RequestHead::with_request_line("PUT", &path).map_err(|e| e.to_string())?;
            let h = head.headers_mut();
            let err = |e: brisk_wire::http::HttpError| e.to_string();
            h.append("host", &self.host).map_err(err)?;
            for (n, v) in &extra {
                h.append(n, v).map_err(err)?;
            }
            for (n, v) in signed.headers() {
                h.append(n, v).map_err(err)?;
            }
            h.set_content_length(encoded);
            conn.queue_request_head(&head);
            conn.flush().await.map_err(|e| e.to_string())?;
            let mut chain = signed.chunk_signer();
            let mut left = size;
            let mut at = 0usize;
            while left > 0 {
                let n = (chunk.min(left) as usize).min(pattern.len() - at);
                let data = &pattern[at..at + n];
                let header = chain.sign_chunk(data);
                let mut slices = [
                    IoSlice::new(header.as_bytes()),
                    IoSlice::new(data),
                    IoSlice::new(CRLF),
                ];
                write_vectored_all(conn.get_mut(), &mut slices).await?;
                left -= n as u64;
                at = (at + n) % pattern.len();
            }
            let last = chain.final_chunk();
            conn.get_mut()
                .write_all(last.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
        } else {
            let head = self.head("PUT", &path, &[], PayloadHash::Unsigned, Some(size))?;
            conn.queue_request_head(&head);
            let mut left = size;
            while left > 0 {
                let n = left.min(pattern.len() as u64) as usize;
                conn.write_body(&pattern[..n])
                    .await
                    .map_err(|e| format!("PUT body: {e}"))?;
                left -= n as u64;
            }
            conn.flush().await.map_err(|e| e.to_string())?;
        }
        let mut sink = [0u8; 4096];
        self.response(conn, "PUT", 200, &mut sink).await?;
        Ok(())
    }

    async fn simple(
        &self,
        conn: &mut Conn,
        method: &str,
        path: &str,
        extra: &[(&str, String)],
        expect: u16,
        sink: &mut [u8],
    ) -> Result<u64, String> {
        let length = (method == "PUT").then_some(0);
        let head = self.head(method, path, extra, PayloadHash::of(b""), length)?;
        conn.queue_request_head(&head);
        conn.flush().await.map_err(|e| e.to_string())?;
        self.response(conn, method, expect, sink).await
    }
}

async fn write_vectored_all(
    stream: &mut TcpStream,
    slices: &mut [IoSlice<'_>],
) -> Result<(), String> {
    let mut slices = &mut slices[..];
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        let n = stream
            .write_vectored(slices)
            .await
            .map_err(|e| format!("PUT body: {e}"))?;
        if n == 0 {
            return Err("PUT body: connection closed".into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

fn key_of(opts: &Options, index: usize) -> String {
    if opts.conns == 1 {
        opts.key.clone()
    } else {
        format!("{}-{index}", opts.key)
    }
}

/// A small deterministic generator (splitmix64) for range offsets: reproducible runs, no dependency.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs the operation; returns (payload bytes moved, requests made).
async fn run(client: Arc<Client>) -> Result<(u64, u64), String> {
    let opts = client.opts.clone();
    let bucket_path = format!("/{}", opts.bucket);
    match opts.op.as_str() {
        "mkbucket" | "rmbucket" => {
            let mut conn = client.connect().await?;
            let mut sink = vec![0u8; 4096];
            let (method, expect) = if opts.op == "mkbucket" {
                ("PUT", 200)
            } else {
                ("DELETE", 204)
            };
            client
                .simple(&mut conn, method, &bucket_path, &[], expect, &mut sink)
                .await?;
            Ok((0, 1))
        }
        "put" | "get" | "delete" => {
            let pattern: Arc<Vec<u8>> = Arc::new(
                (0..BODY_PATTERN_SIZE)
                    .map(|i| (i * 131 % 251) as u8)
                    .collect(),
            );
            let mut tasks = tokio::task::JoinSet::new();
            for index in 0..opts.conns {
                let client = client.clone();
                let pattern = pattern.clone();
                let key = key_of(&opts, index);
                tasks.spawn(async move {
                    let mut conn = client.connect().await?;
                    let path = format!("/{}/{key}", client.opts.bucket);
                    match client.opts.op.as_str() {
                        "put" => client
                            .put(&mut conn, &key, &pattern)
                            .await
                            .map(|()| client.opts.size),
                        "get" => {
                            let mut sink = vec![0u8; GET_BUFFER_SIZE];
                            client
                                .simple(&mut conn, "GET", &path, &[], 200, &mut sink)
                                .await
                        }
                        _ => {
                            let mut sink = vec![0u8; 4096];
                            client
                                .simple(&mut conn, "DELETE", &path, &[], 204, &mut sink)
                                .await
                                .map(|_| 0)
                        }
                    }
                });
            }
            let mut bytes = 0;
            while let Some(done) = tasks.join_next().await {
                bytes += done.map_err(|e| e.to_string())??;
            }
            Ok((bytes, opts.conns as u64))
        }
        "range" => {
            if opts.object_size < opts.range || opts.range == 0 {
                return Err("range needs --object-size at least --range, and --range > 0".into());
            }
            let mut tasks = tokio::task::JoinSet::new();
            let per_conn = opts.count.div_ceil(opts.conns as u64);
            for index in 0..opts.conns {
                let client = client.clone();
                tasks.spawn(async move {
                    let o = &client.opts;
                    let mut state = o.seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f);
                    let mut conn = client.connect().await?;
                    let path = format!("/{}/{}", o.bucket, o.key);
                    let mut sink = vec![0u8; GET_BUFFER_SIZE.max(o.range as usize)];
                    let slots = o.object_size / o.range;
                    let mut bytes = 0;
                    for _ in 0..per_conn {
                        let start = next_random(&mut state) % slots * o.range;
                        let range = [("range", format!("bytes={start}-{}", start + o.range - 1))];
                        bytes += client
                            .simple(&mut conn, "GET", &path, &range, 206, &mut sink)
                            .await?;
                    }
                    Ok::<_, String>((bytes, per_conn))
                });
            }
            let (mut bytes, mut requests) = (0, 0);
            while let Some(done) = tasks.join_next().await {
                let (b, r) = done.map_err(|e| e.to_string())??;
                bytes += b;
                requests += r;
            }
            Ok((bytes, requests))
        }
        other => Err(format!("unknown operation {other}")),
    }
}

// ----- soak ----------------------------------------------------------------------------------------

/// Clients of a soak unless `--conns` says otherwise.
const SOAK_DEFAULT_CLIENTS: usize = 64;

/// Length of a soak unless `--duration` says otherwise: 10 minutes.
const SOAK_DEFAULT_DURATION: Duration = Duration::from_secs(600);

/// Longest soak accepted: a day.
const SOAK_MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Requests a soak makes at most unless `--max-requests` says otherwise: far more than 10 minutes make
/// on a 2-core machine, so the duration ends a default run. Each request keeps 4 bytes (its latency).
const SOAK_DEFAULT_MAX_REQUESTS: u64 = 20_000_000;

/// Time the deletes at the end may take, after the load, before the run is called failed.
const SOAK_CLEANUP_DEADLINE: Duration = Duration::from_secs(300);

/// How often the server's RSS, threads, descriptors and CPU time are sampled during a soak.
const SOAK_SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Each client's three buffers (bodies generated to send, bytes received, bytes expected): 256 KiB
/// each, 48 MiB for 64 clients. Bodies are generated and checked in pieces of this size at most.
const SOAK_IO_BUFFER: usize = 256 << 10;

/// Longest ranged GET.
const SOAK_MAX_RANGE: u64 = 1 << 20;

/// Longest listing or error document read: a listing of 1,000 keys is about 300 KiB.
const SOAK_MAX_DOCUMENT: usize = 1 << 20;

/// Errors printed as they happen; later ones are only counted.
const SOAK_ERRORS_SHOWN: u64 = 10;

/// The operations of a soak, in the order they are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SoakOp {
    Put,
    Get,
    Range,
    List,
    Delete,
}

impl SoakOp {
    const ALL: [SoakOp; 5] = [
        SoakOp::Put,
        SoakOp::Get,
        SoakOp::Range,
        SoakOp::List,
        SoakOp::Delete,
    ];

    fn name(self) -> &'static str {
        match self {
            SoakOp::Put => "put",
            SoakOp::Get => "get",
            SoakOp::Range => "range",
            SoakOp::List => "list",
            SoakOp::Delete => "delete",
        }
    }

    /// The mix, in percent: PUT 30, whole GET 25, ranged GET 20, LIST 10, DELETE 15. With more PUTs
    /// than DELETEs most of a client's slots hold an object, so most PUTs are overwrites.
    fn choose(r: u64) -> Self {
        match r % 100 {
            0..30 => SoakOp::Put,
            30..55 => SoakOp::Get,
            55..75 => SoakOp::Range,
            75..85 => SoakOp::List,
            _ => SoakOp::Delete,
        }
    }
}

/// How a soak PUT's body is signed: half `UNSIGNED-PAYLOAD`, a quarter with the body's SHA-256 in
/// `x-amz-content-sha256` (the server hashes and compares), a quarter aws-chunked with signed chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PutKind {
    Unsigned,
    Sha256,
    Chunked,
}

impl PutKind {
    const NAMES: [&'static str; 3] = ["unsigned", "sha256", "chunked"];

    fn choose(r: u64) -> Self {
        match r % 4 {
            0 | 1 => PutKind::Unsigned,
            2 => PutKind::Sha256,
            _ => PutKind::Chunked,
        }
    }
}

/// One 64-bit word of an object's content: a splitmix64 mix of the seed and the word's index.
fn content_word(seed: u64, index: u64) -> u64 {
    let mut z = seed.wrapping_add(index.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The content seed of version `version` of a client's slot: the bytes of every version of every
/// key are known from its name and version alone, so a GET is checked without a stored copy.
fn content_seed(client: usize, slot: usize, version: u64) -> u64 {
    let mut state = ((client as u64) << 48) ^ ((slot as u64) << 32) ^ version;
    next_random(&mut state)
}

/// Fills `out` with the object's bytes at `offset..`: byte `i` is byte `i % 8` (little-endian) of
/// content word `i / 8`, so any range is computed on its own.
fn fill_content(seed: u64, offset: u64, out: &mut [u8]) {
    let within = (offset % 8) as usize;
    let lead = if within == 0 {
        0
    } else {
        (8 - within).min(out.len())
    };
    let (head, rest) = out.split_at_mut(lead);
    if lead > 0 {
        let word = content_word(seed, offset / 8).to_le_bytes();
        head.copy_from_slice(&word[within..within + lead]);
    }
    let mut index = (offset + lead as u64) / 8;
    let mut words = rest.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&content_word(seed, index).to_le_bytes());
        index += 1;
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let n = tail.len();
        tail.copy_from_slice(&content_word(seed, index).to_le_bytes()[..n]);
    }
}

/// What a client knows it stored in a slot.
#[derive(Debug, Clone, Copy)]
struct Stored {
    version: u64,
    size: u64,
}

/// One operation's figures.
#[derive(Debug, Default)]
struct OpStats {
    /// Latency of every request, failed ones included, in microseconds.
    latencies_us: Vec<u32>,
    errors: u64,
    /// Payload bytes sent (PUT) or received and checked (GET, ranged GET, listing documents).
    bytes: u64,
}

#[derive(Debug, Default)]
struct ClientReport {
    ops: [OpStats; 5],
    put_kinds: [u64; 3],
    /// Connections replaced because the server ended one without an error.
    reconnects: u64,
    cleanup_deletes: u64,
    cleanup_errors: u64,
    /// Objects a listing still showed after the cleanup (must be 0).
    left_over: u64,
}

/// What the clients share: the request cap and the error count, and the end of the load.
#[derive(Debug)]
struct SoakShared {
    requests: AtomicU64,
    errors: AtomicU64,
    started: Instant,
    load_end: std::sync::Mutex<Option<(Instant, Option<ProcSample>)>>,
    pid: Option<u32>,
}

impl SoakShared {
    fn error(&self, what: &str) {
        let n = self.errors.fetch_add(1, Ordering::Relaxed);
        if n < SOAK_ERRORS_SHOWN {
            let at = self.started.elapsed().as_secs_f64();
            eprintln!("s3_load soak: error at {at:.1} s: {what}");
        } else if n == SOAK_ERRORS_SHOWN {
            eprintln!("s3_load soak: more errors; only counted from here");
        }
    }
}

/// One soak client: its connection's requests, its key prefix and what it stored there.
struct SoakClient {
    client: Arc<Client>,
    shared: Arc<SoakShared>,
    index: usize,
    rng: u64,
    /// The object in each slot, when known.
    live: Vec<Option<Stored>>,
    /// Slots whose PUT or DELETE failed: the key may or may not exist.
    uncertain: Vec<bool>,
    version: u64,
    out: Vec<u8>,
    got: Vec<u8>,
    want: Vec<u8>,
    document: Vec<u8>,
    /// Whether the last response let the connection stay open.
    keep_alive: bool,
    report: ClientReport,
}

impl SoakClient {
    fn new(client: Arc<Client>, shared: Arc<SoakShared>, index: usize) -> Self {
        let slots = client.opts.slots;
        let rng = client.opts.seed ^ (index as u64 + 1).wrapping_mul(0xa076_1d64_78bd_642f);
        Self {
            client,
            shared,
            index,
            rng,
            live: vec![None; slots],
            uncertain: vec![false; slots],
            version: 0,
            out: vec![0; SOAK_IO_BUFFER],
            got: vec![0; SOAK_IO_BUFFER],
            want: vec![0; SOAK_IO_BUFFER],
            document: Vec::new(),
            keep_alive: true,
            report: ClientReport::default(),
        }
    }

    fn prefix(&self) -> String {
        format!("soak/c{:03}/", self.index)
    }

    fn key(&self, slot: usize) -> String {
        format!("{}k{slot:03}", self.prefix())
    }

    fn path(&self, slot: usize) -> String {
        format!("/{}/{}", self.client.opts.bucket, self.key(slot))
    }

    fn random(&mut self) -> u64 {
        next_random(&mut self.rng)
    }

    /// A size between `--min-size` and `--max-size`, uniform in its logarithm: as many objects of
    /// 4–8 KiB as of 4–8 MiB.
    fn random_size(&mut self) -> u64 {
        let (lo, hi) = (
            self.client.opts.min_size as f64,
            self.client.opts.max_size as f64,
        );
        let u = (self.random() >> 11) as f64 / (1u64 << 53) as f64;
        ((lo * (hi / lo).powf(u)) as u64)
            .clamp(self.client.opts.min_size, self.client.opts.max_size)
    }

    fn random_live_slot(&mut self) -> Option<usize> {
        let live: Vec<usize> = (0..self.live.len())
            .filter(|&s| self.live[s].is_some())
            .collect();
        if live.is_empty() {
            return None;
        }
        Some(live[(self.random() % live.len() as u64) as usize])
    }

    /// The load: operations until the deadline or the request cap, then the deletes.
    async fn run(mut self, end: Instant, barrier: Arc<tokio::sync::Barrier>) -> ClientReport {
        let mut conn: Option<Conn> = None;
        let max_requests = self.client.opts.max_requests;
        while Instant::now() < end
            && self.shared.requests.fetch_add(1, Ordering::Relaxed) < max_requests
        {
            let mut op = SoakOp::choose(self.random());
            let slot = match op {
                SoakOp::Get | SoakOp::Range | SoakOp::Delete => self.random_live_slot(),
                SoakOp::Put => Some((self.random() % self.live.len() as u64) as usize),
                SoakOp::List => Some(0),
            };
            let slot = slot.unwrap_or_else(|| {
                op = SoakOp::Put;
                (self.random() % self.live.len() as u64) as usize
            });
            let c = match conn.as_mut() {
                Some(c) => c,
                None => match self.client.connect().await {
                    Ok(c) => conn.insert(c),
                    Err(e) => {
                        self.report.ops[op as usize].errors += 1;
                        self.shared
                            .error(&format!("client {} {}: {e}", self.index, op.name()));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let started = Instant::now();
            let result = match op {
                SoakOp::Put => self.put(c, slot).await,
                SoakOp::Get => self.get(c, slot, false).await,
                SoakOp::Range => self.get(c, slot, true).await,
                SoakOp::List => self.list(c).await,
                SoakOp::Delete => self.delete(c, slot).await,
            };
            let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
            let reusable = c.is_reusable();
            let stats = &mut self.report.ops[op as usize];
            stats.latencies_us.push(micros);
            match result {
                Ok(bytes) => {
                    stats.bytes += bytes;
                    if !(self.keep_alive && reusable) {
                        conn = None;
                        self.report.reconnects += 1;
                    }
                }
                Err(e) => {
                    stats.errors += 1;
                    let what = if op == SoakOp::List {
                        self.prefix()
                    } else {
                        self.key(slot)
                    };
                    self.shared
                        .error(&format!("client {} {} {what}: {e}", self.index, op.name()));
                    conn = None;
                }
            }
        }
        if barrier.wait().await.is_leader() {
            let sample = self.shared.pid.and_then(|pid| read_proc(pid).ok());
            *self.shared.load_end.lock().unwrap() = Some((Instant::now(), sample));
        }
        self.cleanup(conn).await;
        self.report
    }

    /// Deletes every key the client may have written, then checks with a listing that its prefix
    /// is empty.
    async fn cleanup(&mut self, mut conn: Option<Conn>) {
        for slot in 0..self.live.len() {
            if self.live[slot].is_none() && !self.uncertain[slot] {
                continue;
            }
            for _attempt in 0..3 {
                let c = match conn.as_mut() {
                    Some(c) => c,
                    None => match self.client.connect().await {
                        Ok(c) => conn.insert(c),
                        Err(e) => {
                            self.report.cleanup_errors += 1;
                            self.shared
                                .error(&format!("client {} cleanup: {e}", self.index));
                            continue;
                        }
                    },
                };
                self.report.cleanup_deletes += 1;
                let result = self.delete(c, slot).await;
                if result.is_err() || !(self.keep_alive && c.is_reusable()) {
                    conn = None;
                }
                match result {
                    Ok(_) => break,
                    Err(e) => {
                        self.report.cleanup_errors += 1;
                        self.shared.error(&format!(
                            "client {} cleanup delete {}: {e}",
                            self.index,
                            self.key(slot)
                        ));
                    }
                }
            }
        }
        let mut c = match conn {
            Some(c) => c,
            None => match self.client.connect().await {
                Ok(c) => c,
                Err(e) => {
                    self.report.cleanup_errors += 1;
                    self.shared
                        .error(&format!("client {} cleanup: {e}", self.index));
                    return;
                }
            },
        };
        // Every slot is now known to be empty, so the listing check wants no key at all.
        match self.list(&mut c).await {
            Ok(_) => {}
            Err(e) => {
                self.report.cleanup_errors += 1;
                self.report.left_over += 1;
                self.shared
                    .error(&format!("client {} listing after cleanup: {e}", self.index));
            }
        }
    }

    /// Reads a response head; a status other than `expect` is an error that shows the document.
    async fn response(
        &mut self,
        conn: &mut Conn,
        method: &str,
        expect: u16,
    ) -> Result<ResponseHead, String> {
        let mut head = ResponseHead::new();
        conn.read_response_head(&mut head, method)
            .await
            .map_err(|e| format!("response: {e}"))?;
        self.keep_alive = head.keep_alive();
        if head.status() != expect {
            let shown = match self.read_document(conn).await {
                // On one line: an error document may hold a canonical request of several.
                Ok(()) => String::from_utf8_lossy(&self.document[..self.document.len().min(400)])
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                Err(e) => e,
            };
            return Err(format!(
                "status {} (expected {expect}) {shown}",
                head.status()
            ));
        }
        Ok(head)
    }

    /// Reads the whole body into `self.document` (at most [`SOAK_MAX_DOCUMENT`]).
    async fn read_document(&mut self, conn: &mut Conn) -> Result<(), String> {
        self.document.clear();
        loop {
            let n = conn
                .read_body(&mut self.got)
                .await
                .map_err(|e| format!("body: {e}"))?;
            if n == 0 {
                return Ok(());
            }
            if self.document.len() + n > SOAK_MAX_DOCUMENT {
                return Err(format!("document longer than {SOAK_MAX_DOCUMENT} bytes"));
            }
            self.document.extend_from_slice(&self.got[..n]);
        }
    }

    /// Reads a body that must be bytes `start..start + len` of the object with content `seed`.
    async fn read_verified(
        &mut self,
        conn: &mut Conn,
        seed: u64,
        start: u64,
        len: u64,
    ) -> Result<u64, String> {
        let mut at = 0u64;
        loop {
            let n = conn
                .read_body(&mut self.got)
                .await
                .map_err(|e| format!("body after {at} bytes: {e}"))?;
            if n == 0 {
                break;
            }
            if at + n as u64 > len {
                return Err(format!("body longer than {len} bytes"));
            }
            fill_content(seed, start + at, &mut self.want[..n]);
            if self.got[..n] != self.want[..n] {
                let i = (self.got[..n].iter())
                    .zip(&self.want[..n])
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                return Err(format!("wrong byte at offset {}", start + at + i as u64));
            }
            at += n as u64;
        }
        if at != len {
            return Err(format!("body of {at} bytes, {len} expected"));
        }
        Ok(len)
    }

    async fn put(&mut self, conn: &mut Conn, slot: usize) -> Result<u64, String> {
        let size = self.random_size();
        let kind = PutKind::choose(self.random());
        self.report.put_kinds[kind as usize] += 1;
        self.version += 1;
        let version = self.version;
        let seed = content_seed(self.index, slot, version);
        // Until the answer is read the slot's state is unknown: a failure after the body was sent
        // may or may not have replaced the object.
        self.live[slot] = None;
        self.uncertain[slot] = true;
        let path = self.path(slot);
        let client = self.client.clone();
        match kind {
            PutKind::Unsigned | PutKind::Sha256 => {
                let payload = if kind == PutKind::Sha256 {
                    let mut hasher = Checksummer::new(ChecksumAlgorithm::Sha256);
                    let mut at = 0;
                    while at < size {
                        let n = (size - at).min(self.out.len() as u64) as usize;
                        fill_content(seed, at, &mut self.out[..n]);
                        hasher.update(&self.out[..n]);
                        at += n as u64;
                    }
                    let digest = hasher.finalize();
                    PayloadHash::Sha256(
                        digest
                            .as_bytes()
                            .try_into()
                            .map_err(|_| "a SHA-256 of other than 32 bytes")?,
                    )
                } else {
                    PayloadHash::Unsigned
                };
                let (head, _) = client.signed_head("PUT", &path, "", &[], payload, Some(size))?;
                conn.queue_request_head(&head);
                let mut at = 0;
                while at < size {
                    let n = (size - at).min(self.out.len() as u64) as usize;
                    fill_content(seed, at, &mut self.out[..n]);
                    conn.write_body(&self.out[..n])
                        .await
                        .map_err(|e| format!("body: {e}"))?;
                    at += n as u64;
                }
                conn.flush().await.map_err(|e| format!("body: {e}"))?;
            }
            PutKind::Chunked => {
                let chunk = client.opts.chunk as u64;
                let extra = [
                    ("content-encoding", "aws-chunked".to_owned()),
                    ("x-amz-decoded-content-length", size.to_string()),
                ];
                let (head, signed) = client.signed_head(
                    "PUT",
                    &path,
                    "",
                    &extra,
                    PayloadHash::StreamingSigned,
                    Some(signed_encoded_length(size, chunk)),
                )?;
                conn.queue_request_head(&head);
                conn.flush().await.map_err(|e| format!("head: {e}"))?;
                let mut chain = signed.chunk_signer();
                let mut at = 0;
                while at < size {
                    let n = (size - at).min(chunk) as usize;
                    let data = &mut self.out[..n];
                    fill_content(seed, at, data);
                    let header = chain.sign_chunk(data);
                    let mut slices = [
                        IoSlice::new(header.as_bytes()),
                        IoSlice::new(data),
                        IoSlice::new(CRLF),
                    ];
                    write_vectored_all(conn.get_mut(), &mut slices).await?;
                    at += n as u64;
                }
                let last = chain.final_chunk();
                conn.get_mut()
                    .write_all(last.as_bytes())
                    .await
                    .map_err(|e| format!("body: {e}"))?;
            }
        }
        self.response(conn, "PUT", 200).await?;
        self.read_document(conn).await?;
        self.live[slot] = Some(Stored { version, size });
        self.uncertain[slot] = false;
        Ok(size)
    }

    /// A whole GET (200, every byte checked), or a ranged one (206, `Content-Range` and every byte
    /// checked): three of four ranges `bytes=a-b`, one a suffix `bytes=-n`.
    async fn get(&mut self, conn: &mut Conn, slot: usize, ranged: bool) -> Result<u64, String> {
        let stored = self.live[slot].ok_or("no object in the slot")?;
        let seed = content_seed(self.index, slot, stored.version);
        let path = self.path(slot);
        let (start, len, extra, expect) = if ranged {
            let len = 1 + self.random() % stored.size.min(SOAK_MAX_RANGE);
            let (start, spec) = if self.random().is_multiple_of(4) {
                (stored.size - len, format!("bytes=-{len}"))
            } else {
                let start = self.random() % (stored.size - len + 1);
                (start, format!("bytes={start}-{}", start + len - 1))
            };
            (start, len, vec![("range", spec)], 206)
        } else {
            (0, stored.size, Vec::new(), 200)
        };
        let (head, _) =
            self.client
                .signed_head("GET", &path, "", &extra, PayloadHash::of(b""), None)?;
        conn.queue_request_head(&head);
        conn.flush().await.map_err(|e| format!("request: {e}"))?;
        let head = self.response(conn, "GET", expect).await?;
        let length = head.headers().get_str("content-length").unwrap_or("");
        if length != len.to_string() {
            return Err(format!("content-length {length:?}, {len} expected"));
        }
        if ranged {
            let want = format!("bytes {start}-{}/{}", start + len - 1, stored.size);
            let got = head.headers().get_str("content-range").unwrap_or("");
            if got != want {
                return Err(format!("content-range {got:?}, {want:?} expected"));
            }
        }
        self.read_verified(conn, seed, start, len).await
    }

    /// ListObjectsV2 of the client's prefix: one page, not truncated, every stored key listed with
    /// its size, and no other key but those whose last PUT or DELETE failed.
    async fn list(&mut self, conn: &mut Conn) -> Result<u64, String> {
        let prefix = self.prefix();
        let query = format!("list-type=2&prefix={}", prefix.replace('/', "%2F"));
        let path = format!("/{}", self.client.opts.bucket);
        let (head, _) =
            self.client
                .signed_head("GET", &path, &query, &[], PayloadHash::of(b""), None)?;
        conn.queue_request_head(&head);
        conn.flush().await.map_err(|e| format!("request: {e}"))?;
        self.response(conn, "GET", 200).await?;
        self.read_document(conn).await?;
        let doc = std::str::from_utf8(&self.document).map_err(|_| "listing is not UTF-8")?;
        if !doc.contains("<IsTruncated>false</IsTruncated>") {
            return Err("listing truncated or without IsTruncated".into());
        }
        let mut seen = vec![false; self.live.len()];
        for entry in doc.split("<Contents>").skip(1) {
            let field = |name: &str| {
                let open = format!("<{name}>");
                let start = entry.find(&open)? + open.len();
                let end = start + entry[start..].find('<')?;
                Some(&entry[start..end])
            };
            let key = field("Key").ok_or("a listing entry without Key")?;
            let size: u64 = field("Size")
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("{key}: no Size"))?;
            let slot = key
                .strip_prefix(prefix.as_str())
                .and_then(|k| k.strip_prefix('k'))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&s| s < self.live.len())
                .ok_or_else(|| format!("listed key {key} is not one of the client's"))?;
            if std::mem::replace(&mut seen[slot], true) {
                return Err(format!("{key} listed twice"));
            }
            match self.live[slot] {
                Some(stored) if stored.size != size => {
                    return Err(format!(
                        "{key} listed with size {size}, {} stored",
                        stored.size
                    ));
                }
                None if !self.uncertain[slot] => {
                    return Err(format!("{key} listed but deleted"));
                }
                _ => {}
            }
        }
        if let Some(slot) = (0..self.live.len()).find(|&s| self.live[s].is_some() && !seen[s]) {
            return Err(format!("{} stored but not listed", self.key(slot)));
        }
        Ok(self.document.len() as u64)
    }

    async fn delete(&mut self, conn: &mut Conn, slot: usize) -> Result<u64, String> {
        let path = self.path(slot);
        self.live[slot] = None;
        self.uncertain[slot] = true;
        let (head, _) =
            self.client
                .signed_head("DELETE", &path, "", &[], PayloadHash::of(b""), None)?;
        conn.queue_request_head(&head);
        conn.flush().await.map_err(|e| format!("request: {e}"))?;
        self.response(conn, "DELETE", 204).await?;
        self.read_document(conn).await?;
        self.uncertain[slot] = false;
        Ok(0)
    }
}

/// The server as sampled once a second during a soak.
#[derive(Debug, Clone, Copy)]
struct SoakSample {
    secs: f64,
    rss_kib: u64,
    threads: u64,
    fds: u64,
}

fn read_threads_and_fds(pid: u32) -> (u64, u64) {
    let process = Process::Pid(pid);
    let threads = process
        .status()
        .ok()
        .and_then(|s| s.value("Threads"))
        .unwrap_or(0);
    let fds = process.fds().map_or(0, |d| d.count() as u64);
    (threads, fds)
}

/// Samples the server every [`SOAK_SAMPLE_INTERVAL`] on its own thread and prints a progress line
/// every `progress`.
struct SoakSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<SoakSample>>,
}

impl SoakSampler {
    fn start(pid: u32, shared: Arc<SoakShared>, progress: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::new();
            let mut next_progress = progress;
            let mut next = shared.started;
            while !flag.load(Ordering::Relaxed) {
                let at = shared.started.elapsed();
                if let Ok((rss_kib, _)) = read_rss(pid) {
                    let (threads, fds) = read_threads_and_fds(pid);
                    samples.push(SoakSample {
                        secs: at.as_secs_f64(),
                        rss_kib,
                        threads,
                        fds,
                    });
                    if at >= next_progress {
                        next_progress += progress;
                        eprintln!(
                            "s3_load soak: {:.0} s, {} requests, {} errors, server RSS {:.1} MiB, {threads} threads, {fds} fds",
                            at.as_secs_f64(),
                            shared.requests.load(Ordering::Relaxed),
                            shared.errors.load(Ordering::Relaxed),
                            rss_kib as f64 / 1024.0,
                        );
                    }
                }
                next += SOAK_SAMPLE_INTERVAL;
                // Short sleeps, so that stopping does not wait for a whole interval.
                while !flag.load(Ordering::Relaxed) && Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            samples
        });
        Self { stop, thread }
    }

    fn finish(self) -> Vec<SoakSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// The `q` quantile of sorted latencies (nearest rank), in milliseconds.
fn percentile_ms(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    f64::from(sorted[rank - 1]) / 1000.0
}

/// The least-squares slope of RSS over time, in KiB per minute.
fn rss_slope_kib_per_min(samples: &[SoakSample]) -> f64 {
    let n = samples.len() as f64;
    if samples.len() < 2 {
        return 0.0;
    }
    let mean_t = samples.iter().map(|s| s.secs / 60.0).sum::<f64>() / n;
    let mean_r = samples.iter().map(|s| s.rss_kib as f64).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for s in samples {
        let dt = s.secs / 60.0 - mean_t;
        num += dt * (s.rss_kib as f64 - mean_r);
        den += dt * dt;
    }
    if den == 0.0 { 0.0 } else { num / den }
}

/// Runs the soak and prints its summary: one line of `name=value` pairs on stdout, a table on
/// stderr. Fails when any request failed or the run overran its deadline.
fn run_soak(opts: Options) -> std::process::ExitCode {
    let client = Arc::new(Client {
        signer: Signer::new(Credentials::new(&opts.access_key, &opts.secret_key), REGION),
        host: opts.endpoint.to_string(),
        opts: opts.clone(),
    });
    let warmup = opts
        .warmup
        .unwrap_or_else(|| (opts.duration / 10).min(Duration::from_secs(60)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let before = match opts.pid.map(read_proc).transpose() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("s3_load: cannot read /proc of the server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let shared = Arc::new(SoakShared {
        requests: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        started: Instant::now(),
        load_end: std::sync::Mutex::new(None),
        pid: opts.pid,
    });
    let progress = (opts.duration / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let sampler = opts
        .pid
        .map(|pid| SoakSampler::start(pid, shared.clone(), progress));
    let end = shared.started + opts.duration;
    let deadline = opts.duration + SOAK_CLEANUP_DEADLINE;
    let reports = runtime.block_on(async {
        let barrier = Arc::new(tokio::sync::Barrier::new(opts.conns));
        let mut tasks = tokio::task::JoinSet::new();
        for index in 0..opts.conns {
            let me = SoakClient::new(client.clone(), shared.clone(), index);
            tasks.spawn(me.run(end, barrier.clone()));
        }
        tokio::time::timeout(deadline, async {
            let mut reports = Vec::new();
            while let Some(done) = tasks.join_next().await {
                reports.push(done.map_err(|e| e.to_string())?);
            }
            Ok::<_, String>(reports)
        })
        .await
        .unwrap_or_else(|_| Err(format!("soak exceeded {deadline:?}")))
    });
    let total_secs = shared.started.elapsed().as_secs_f64();
    // The server's resident set once the deletes are done and it has had a moment to settle.
    std::thread::sleep(Duration::from_secs(1));
    let after_cleanup = opts.pid.and_then(|pid| read_proc(pid).ok());
    let samples = sampler.map(SoakSampler::finish).unwrap_or_default();
    let reports = match reports {
        Ok(r) => r,
        Err(e) => {
            eprintln!("s3_load soak: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let (load_end, at_load_end) = shared
        .load_end
        .lock()
        .unwrap()
        .unwrap_or((Instant::now(), None));
    let load_secs = load_end.duration_since(shared.started).as_secs_f64();

    let mut ops: [OpStats; 5] = Default::default();
    let mut put_kinds = [0u64; 3];
    let (mut reconnects, mut cleanup_deletes, mut cleanup_errors, mut left_over) = (0, 0, 0, 0);
    for report in reports {
        for (all, one) in ops.iter_mut().zip(report.ops) {
            all.latencies_us.extend(one.latencies_us);
            all.errors += one.errors;
            all.bytes += one.bytes;
        }
        for (all, one) in put_kinds.iter_mut().zip(report.put_kinds) {
            *all += one;
        }
        reconnects += report.reconnects;
        cleanup_deletes += report.cleanup_deletes;
        cleanup_errors += report.cleanup_errors;
        left_over += report.left_over;
    }
    let requests: u64 = ops.iter().map(|o| o.latencies_us.len() as u64).sum();
    let errors = shared.errors.load(Ordering::Relaxed);
    let rate = |n: f64| if load_secs > 0.0 { n / load_secs } else { 0.0 };
    let mut line = format!(
        "op=soak clients={} secs={load_secs:.1} total_secs={total_secs:.1} warmup_s={} requests={requests} rps={:.1} errors={errors} reconnects={reconnects}",
        opts.conns,
        warmup.as_secs(),
        rate(requests as f64),
    );
    let mut table =
        String::from("op        requests    req/s   errors   p50 ms   p99 ms   max ms    MiB/s\n");
    for (op, stats) in SoakOp::ALL.iter().zip(ops.iter_mut()) {
        stats.latencies_us.sort_unstable();
        let n = stats.latencies_us.len();
        let (p50, p99) = (
            percentile_ms(&stats.latencies_us, 0.50),
            percentile_ms(&stats.latencies_us, 0.99),
        );
        let max = percentile_ms(&stats.latencies_us, 1.0);
        let mib_s = rate(stats.bytes as f64 / (1u64 << 20) as f64);
        let name = op.name();
        line.push_str(&format!(
            " {name}_n={n} {name}_rps={:.1} {name}_errors={} {name}_p50_ms={p50:.2} {name}_p99_ms={p99:.2} {name}_max_ms={max:.1} {name}_mib_s={mib_s:.1}",
            rate(n as f64),
            stats.errors,
        ));
        table.push_str(&format!(
            "{name:<8}{n:>10}{:>9.1}{:>9}{p50:>9.2}{p99:>9.2}{max:>9.1}{mib_s:>9.1}\n",
            rate(n as f64),
            stats.errors,
        ));
    }
    for (name, n) in PutKind::NAMES.iter().zip(put_kinds) {
        line.push_str(&format!(" put_{name}={n}"));
    }
    line.push_str(&format!(
        " cleanup_deletes={cleanup_deletes} cleanup_errors={cleanup_errors} left_over={left_over}"
    ));
    if let (Some(before), Some(last)) = (before, samples.last()) {
        let window: Vec<SoakSample> = samples
            .iter()
            .copied()
            .filter(|s| s.secs >= warmup.as_secs_f64() && s.secs <= load_secs)
            .collect();
        let window = if window.is_empty() {
            vec![*last]
        } else {
            window
        };
        let min = window.iter().map(|s| s.rss_kib).min().unwrap_or(0);
        let max = window.iter().map(|s| s.rss_kib).max().unwrap_or(0);
        let first = window[0].rss_kib;
        let end_rss = window[window.len() - 1].rss_kib;
        let slope = rss_slope_kib_per_min(&window);
        let threads_max = samples.iter().map(|s| s.threads).max().unwrap_or(0);
        let fds_min = window.iter().map(|s| s.fds).min().unwrap_or(0);
        let fds_max = window.iter().map(|s| s.fds).max().unwrap_or(0);
        let cpu = at_load_end.map_or(0.0, |a| a.cpu_seconds - before.cpu_seconds);
        let (rss_cleanup, hwm) = after_cleanup.map_or((0, 0), |a| (a.rss_kib, a.hwm_kib));
        line.push_str(&format!(
            " srv_cpu_s={cpu:.1} srv_cpu_ms_per_req={:.3} srv_rss_start_kib={} srv_rss_warm_first_kib={first} srv_rss_warm_min_kib={min} srv_rss_warm_max_kib={max} srv_rss_last_kib={end_rss} srv_rss_slope_kib_per_min={slope:.1} srv_rss_after_cleanup_kib={rss_cleanup} srv_hwm_kib={hwm} srv_threads_max={threads_max} srv_fds_min={fds_min} srv_fds_max={fds_max} rss_samples={}",
            if requests > 0 {
                cpu * 1000.0 / requests as f64
            } else {
                0.0
            },
            before.rss_kib,
            window.len(),
        ));
        let mib = |kib: u64| kib as f64 / 1024.0;
        table.push_str(&format!(
            "server: {cpu:.1} CPU s ({:.3} ms per request); RSS {:.1} MiB at the start; after the {} s warm-up \
             first {:.1}, min {:.1}, max {:.1}, last {:.1} MiB, slope {slope:+.1} KiB/min; {:.1} MiB after the \
             deletes (peak {:.1}); threads at most {threads_max}; fds {fds_min}..{fds_max}\n",
            if requests > 0 {
                cpu * 1000.0 / requests as f64
            } else {
                0.0
            },
            mib(before.rss_kib),
            warmup.as_secs(),
            mib(first),
            mib(min),
            mib(max),
            mib(end_rss),
            mib(rss_cleanup),
            mib(hwm),
        ));
    }
    table.push_str(&format!(
        "{requests} requests in {load_secs:.1} s ({:.1}/s) over {} connections, {errors} errors, {reconnects} reconnects; \
         PUT bodies {} unsigned, {} SHA-256, {} aws-chunked; {cleanup_deletes} deletes at the end\n",
        rate(requests as f64),
        opts.conns,
        put_kinds[0],
        put_kinds[1],
        put_kinds[2],
    ));
    eprint!("{table}");
    println!("{line}");
    if errors > 0 || left_over > 0 {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

fn main() -> std::process::ExitCode {
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("s3_load: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if opts.op == "soak" {
        return run_soak(opts);
    }
    let client = Arc::new(Client {
        signer: Signer::new(Credentials::new(&opts.access_key, &opts.secret_key), REGION),
        host: opts.endpoint.to_string(),
        opts: opts.clone(),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let before = opts.pid.map(read_proc).transpose();
    let before = match before {
        Ok(b) => b,
        Err(e) => {
            eprintln!("s3_load: cannot read /proc of the server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let sampler = opts.pid.map(RssSampler::start);
    let started = Instant::now();
    let result = runtime.block_on(async {
        tokio::time::timeout(RUN_DEADLINE, run(client))
            .await
            .unwrap_or_else(|_| Err(format!("run exceeded {RUN_DEADLINE:?}")))
    });
    let secs = started.elapsed().as_secs_f64();
    let peak_rss = sampler.map(RssSampler::finish);
    let (bytes, requests) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("s3_load: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let gib = bytes as f64 / (1u64 << 30) as f64;
    let mut line = format!(
        "op={} conns={} bytes={bytes} requests={requests} secs={secs:.3} gib_s={:.3}",
        opts.op,
        opts.conns,
        if secs > 0.0 { gib / secs } else { 0.0 }
    );
    if let (Some(pid), Some(before), Some(peak)) = (opts.pid, before, peak_rss) {
        let after = read_proc(pid).unwrap_or_default();
        let cpu = after.cpu_seconds - before.cpu_seconds;
        line.push_str(&format!(
            " srv_cpu_s={cpu:.2} srv_rss_before_kib={} srv_rss_peak_kib={} srv_rss_growth_mib={:.1} srv_hwm_kib={}",
            before.rss_kib,
            peak.max(after.rss_kib),
            (peak.max(after.rss_kib) as f64 - before.rss_kib as f64) / 1024.0,
            after.hwm_kib
        ));
        if gib > 0.0 {
            line.push_str(&format!(" srv_cpu_s_per_gib={:.3}", cpu / gib));
        }
        if requests > 0 {
            line.push_str(&format!(
                " srv_cpu_ms_per_req={:.4}",
                cpu * 1000.0 / requests as f64
            ));
        }
    }
    println!("{line}");
    std::process::ExitCode::SUCCESS
}
