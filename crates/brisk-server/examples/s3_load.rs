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
//! ```
//!
//! With `--conns N` > 1, `put`, `get` and `delete` work on the keys `K-0` … `K-(N-1)`, one connection
//! each, all at once; `range` spreads `--count` random ranged GETs of one key over N connections,
//! each at queue depth 1. Every run is bounded: by its byte count, its request count, and
//! [`RUN_DEADLINE`]. The result is one line of `name=value` pairs on stdout.

use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use brisk_wire::http::{HttpConnection, RequestHead, ResponseHead};
use brisk_wire::sigv4::chunked::{CRLF, signed_encoded_length};
use brisk_wire::sigv4::{AmzDate, Credentials, PayloadHash, SignableRequest, Signer};
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
    };
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
            "--conns" => o.conns = value.parse().map_err(|e| bad(&e))?,
            "--chunk" => o.chunk = parse_size(&value)? as usize,
            "--seed" => o.seed = value.parse().map_err(|e| bad(&e))?,
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
    if o.conns == 0 || o.conns > 256 {
        return Err("--conns must be 1 to 256".into());
    }
    if o.chunk == 0 {
        return Err("--chunk must not be 0".into());
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

fn clock_ticks_per_second() -> f64 {
    // CLK_TCK is 100 on every Linux this runs on (it is fixed by the kernel's ABI for /proc).
    100.0
}

fn read_proc(pid: u32) -> std::io::Result<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks: u64 =
        fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0);
    let (rss_kib, hwm_kib) = read_rss(pid)?;
    Ok(ProcSample {
        cpu_seconds: ticks as f64 / clock_ticks_per_second(),
        rss_kib,
        hwm_kib,
    })
}

fn read_rss(pid: u32) -> std::io::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
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
        let mut signed_headers: Vec<(&str, &[u8])> = vec![("host", self.host.as_bytes())];
        signed_headers.extend(extra.iter().map(|(n, v)| (*n, v.as_bytes())));
        let request = SignableRequest {
            method,
            path,
            query: "",
            headers: &signed_headers,
        };
        let now = AmzDate::from_system_time(SystemTime::now()).map_err(|e| e.to_string())?;
        let signed = self
            .signer
            .sign(&request, payload, now)
            .map_err(|e| e.to_string())?;
        let mut head = RequestHead::with_request_line(method, path).map_err(|e| e.to_string())?;
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
        Ok(head)
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

fn main() -> std::process::ExitCode {
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("s3_load: {e}");
            return std::process::ExitCode::from(2);
        }
    };
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
