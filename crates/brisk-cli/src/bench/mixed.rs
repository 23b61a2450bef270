//! `brisk bench mixed`: a mix of GET, PUT, HEAD, DELETE and LIST on a population of objects, in
//! the manner of warp's `mixed`. It uploads `--objects` objects first (not measured), then runs
//! `--concurrent` loops for `--duration`, each drawing its next operation from `--mix`:
//!
//! - **GET** reads a random object of the population whole, through [`Client::get_stream`] into
//!   one reused buffer per loop (nothing allocated per read); its time to first byte is when the
//!   first bytes of the body have arrived.
//! - **HEAD** asks for a random object's metadata.
//! - **PUT** writes a new object of a size drawn from `--size`, from one buffer of random bytes
//!   made before the run, and adds it to the population.
//! - **DELETE** removes a random object no GET or HEAD is reading, and takes it out of the
//!   population: the PUTs replace what the DELETEs remove (warp's default mix puts 15 % and
//!   deletes 10 %, so the population grows slowly). When the population is empty a GET, HEAD or
//!   DELETE is a PUT instead, counted as a PUT (`substituted` in the JSON).
//! - **LIST** lists one page of up to [`LIST_MAX_KEYS`] keys of the run's prefix.
//!
//! Every operation that completes within the duration counts; one still in flight at the end
//! finishes (so that the population stays known) but does not count. Per operation it reports the
//! count, errors, rate, bytes per second, and latency and time to first byte at p50, p90, p99 and
//! the worst; for the whole mix, client CPU per operation (user + system of this process over the
//! duration, divided by the operations completed: CPU is not split by kind of operation) and, with
//! the embedded server or `--server-pid`, the server's CPU per operation; and the rate of each
//! operation in 1 s buckets.
//!
//! Every key is under `brisk-bench/mixed-<random>/`, so that a bucket given with `--bucket` is
//! touched nowhere else; every object it wrote is deleted at the end (DeleteObjects), also after
//! an error or Ctrl-C, and the JSON says how many objects a listing of its prefix still finds
//! (`objects_left`, 0).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use brisk_client::{Client, ListOptions, PutOptions};
use serde_json::{Value, json};

use super::cases::{KEY_PREFIX, Target, Written};
use super::chart::{COLORS, Series, XAxis, YScale, line_chart_on};
use super::procfs::{Process, process_cpu_seconds};
use super::report::{Machine, STYLE, escape};
use super::server::ServerSettings;
use super::xorshift::XorShift;
use super::{BenchError, ClientSizing, Status, command_line, in_session};
use crate::args::{GlobalArgs, Mix, MixedArgs, MixedOp, ObjectSizes, SizeDistribution};
use crate::exit::CliError;
use crate::size::human;

pub const DEFAULT_SIZES: ObjectSizes = ObjectSizes {
    min: 16 << 10,
    max: 1 << 20,
};
pub const DEFAULT_CONCURRENT: usize = 20;
pub const DEFAULT_DURATION: Duration = Duration::from_secs(30);
pub const DEFAULT_OBJECTS: usize = 1000;
pub const QUICK_SIZES: ObjectSizes = ObjectSizes {
    min: 4 << 10,
    max: 64 << 10,
};
pub const QUICK_CONCURRENT: usize = 4;
pub const QUICK_DURATION: Duration = Duration::from_secs(1);
pub const QUICK_OBJECTS: usize = 20;
/// Keys per LIST: one page of this many.
pub const LIST_MAX_KEYS: u32 = 100;
/// Bytes each GET loop reads at a time: above the connection's 64 KiB read buffer, so the body
/// goes from the socket straight into it.
const READ_CHUNK: usize = 256 << 10;

/// The percentiles reported, and their names.
const PERCENTILES: [(f64, &str); 3] = [(0.50, "p50"), (0.90, "p90"), (0.99, "p99")];

/// What to run, from the options (explicit values win over `--quick`).
#[derive(Debug, Clone, PartialEq)]
pub struct MixedPlan {
    pub mix: Mix,
    pub sizes: ObjectSizes,
    pub distribution: SizeDistribution,
    pub concurrent: usize,
    pub duration: Duration,
    pub objects: usize,
    pub server_pid: Option<u32>,
}

impl MixedPlan {
    pub fn from_args(global: &GlobalArgs, args: &MixedArgs) -> Result<Self, CliError> {
        let quick = args.quick;
        if let Some(pid) = args.server_pid {
            if super::external_endpoint(global).is_none() {
                return Err(CliError::Usage(
                    "bench mixed: --server-pid is for the server of --endpoint-url; the embedded \
                     server's CPU is read without it"
                        .into(),
                ));
            }
            Process::Pid(pid).cpu_seconds().map_err(|e| {
                CliError::Usage(format!(
                    "bench mixed: --server-pid {pid}: cannot read /proc/{pid}/stat: {e}"
                ))
            })?;
        }
        Ok(Self {
            mix: args.mix,
            sizes: args
                .size
                .unwrap_or(if quick { QUICK_SIZES } else { DEFAULT_SIZES }),
            distribution: args.size_distribution,
            concurrent: args.concurrent.unwrap_or(if quick {
                QUICK_CONCURRENT
            } else {
                DEFAULT_CONCURRENT
            }),
            duration: args.duration.unwrap_or(if quick {
                QUICK_DURATION
            } else {
                DEFAULT_DURATION
            }),
            objects: args.objects.unwrap_or(if quick {
                QUICK_OBJECTS
            } else {
                DEFAULT_OBJECTS
            }),
            server_pid: args.server_pid,
        })
    }

    /// `get 45 %, head 30 %, put 15 %, delete 10 %`: the operations of the mix, in its order.
    fn mix_line(&self) -> String {
        let total: f64 = self.mix.0.iter().sum();
        MixedOp::ALL
            .iter()
            .zip(self.mix.0)
            .filter(|(_, w)| *w > 0.0)
            .map(|(op, w)| format!("{} {} %", op.name(), trim(w / total * 100.0)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn sizes_line(&self) -> String {
        let ObjectSizes { min, max } = self.sizes;
        if min == max {
            human(min)
        } else {
            format!(
                "{} .. {} ({})",
                human(min),
                human(max),
                distribution_name(self.distribution)
            )
        }
    }
}

fn distribution_name(d: SizeDistribution) -> &'static str {
    match d {
        SizeDistribution::Log => "log-uniform",
        SizeDistribution::Uniform => "uniform",
    }
}

/// `45` for 45.0, `33.3` for 33.33...
fn trim(v: f64) -> String {
    if (v - v.round()).abs() < 0.05 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The operation a draw of `r` in [0, 1) picks from `mix`.
fn pick(mix: &Mix, r: f64) -> MixedOp {
    let total: f64 = mix.0.iter().sum();
    let mut at = r * total;
    for (op, w) in MixedOp::ALL.iter().zip(mix.0) {
        if w > 0.0 && at < w {
            return *op;
        }
        at -= w;
    }
    // Rounding left `at` past the last weight: the last operation with a weight.
    MixedOp::ALL
        .iter()
        .zip(mix.0)
        .rev()
        .find(|(_, w)| *w > 0.0)
        .map_or(MixedOp::Get, |(op, _)| *op)
}

/// A size between the bounds, drawn as `distribution` says from a draw of `r` in [0, 1).
fn draw_size(sizes: ObjectSizes, distribution: SizeDistribution, r: f64) -> u64 {
    let ObjectSizes { min, max } = sizes;
    if min >= max {
        return min;
    }
    let size = match distribution {
        SizeDistribution::Uniform => min as f64 + r * (max - min + 1) as f64,
        SizeDistribution::Log => {
            let (lo, hi) = ((min as f64).ln(), ((max + 1) as f64).ln());
            (lo + r * (hi - lo)).exp()
        }
    };
    (size as u64).clamp(min, max)
}

/// The objects of the run: those that exist (`live`), those a GET or HEAD is reading (which no
/// DELETE picks), and those whose existence is not known (a PUT or DELETE in flight, or one that
/// failed), which the clean-up deletes too.
#[derive(Debug, Default)]
struct Population {
    live: Vec<(u64, u64)>,
    readers: HashMap<u64, u32>,
    unsure: HashSet<u64>,
    next_id: u64,
}

impl Population {
    /// A live object to read, marked as read until [`Population::read_done`].
    fn start_read(&mut self, random: &mut XorShift) -> Option<(u64, u64)> {
        if self.live.is_empty() {
            return None;
        }
        let (id, size) = self.live[random.below(self.live.len() as u64) as usize];
        *self.readers.entry(id).or_insert(0) += 1;
        Some((id, size))
    }

    fn read_done(&mut self, id: u64) {
        if let Some(n) = self.readers.get_mut(&id) {
            *n -= 1;
            if *n == 0 {
                self.readers.remove(&id);
            }
        }
    }

    /// A live object no one reads, taken out of the population; `None` if a few draws find none.
    fn start_delete(&mut self, random: &mut XorShift) -> Option<u64> {
        for _ in 0..8 {
            if self.live.is_empty() {
                return None;
            }
            let at = random.below(self.live.len() as u64) as usize;
            let id = self.live[at].0;
            if !self.readers.contains_key(&id) {
                self.live.swap_remove(at);
                self.unsure.insert(id);
                return Some(id);
            }
        }
        None
    }

    fn delete_done(&mut self, id: u64, ok: bool) {
        if ok {
            self.unsure.remove(&id);
        }
    }

    /// A new key for a PUT.
    fn start_put(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.unsure.insert(id);
        id
    }

    fn put_done(&mut self, id: u64, size: u64, end: PutEnd) {
        match end {
            PutEnd::Stored => {
                self.unsure.remove(&id);
                self.live.push((id, size));
            }
            PutEnd::Refused => {
                self.unsure.remove(&id);
            }
            PutEnd::Unknown => {}
        }
    }

    /// Every object that exists or may exist.
    fn take_all(&mut self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.live.drain(..).map(|(id, _)| id).collect();
        ids.extend(self.unsure.drain());
        ids
    }
}

/// How a PUT ended, for the population.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PutEnd {
    Stored,
    /// The server refused it (an error response that is not worth a retry: no such bucket, access
    /// denied, ...): nothing was stored.
    Refused,
    /// It failed otherwise (the connection, a server error): the object may exist.
    Unknown,
}

impl PutEnd {
    fn of<T>(outcome: &Result<T, brisk_client::Error>) -> Self {
        match outcome {
            Ok(_) => Self::Stored,
            Err(e) if e.service_error().is_some() && !e.is_retryable() => Self::Refused,
            Err(_) => Self::Unknown,
        }
    }
}

/// One kind of operation's raw figures, from one loop or merged.
#[derive(Debug, Clone, Default)]
struct Tally {
    count: u64,
    errors: u64,
    bytes: u64,
    /// Microseconds, one per completed operation.
    latency: Vec<u32>,
    /// GET only: microseconds to the first bytes of the body.
    ttfb: Vec<u32>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.count += other.count;
        self.errors += other.errors;
        self.bytes += other.bytes;
        self.latency.extend(other.latency);
        self.ttfb.extend(other.ttfb);
    }
}

/// What one loop measured.
#[derive(Debug, Default)]
struct LoopResult {
    tallies: [Tally; 5],
    /// Completions per 1 s bucket, per operation.
    timeline: Vec<[u64; 5]>,
    substituted: u64,
    first_error: Option<(MixedOp, brisk_client::Error)>,
}

/// What every loop shares.
struct Shared {
    client: Client,
    bucket: String,
    prefix: String,
    plan: MixedPlan,
    population: Mutex<Population>,
    /// Random bytes, as many as the largest object; a PUT sends a prefix of it.
    body: Vec<u8>,
    put_options: PutOptions,
}

/// When the mix started and when it ends.
#[derive(Debug, Clone, Copy)]
struct Clock {
    begin: Instant,
    deadline: Instant,
}

impl Clock {
    /// 1 s buckets of the rate over time: the duration's seconds, rounded up (an operation that
    /// ends on the deadline counts in the last one).
    fn buckets(&self) -> usize {
        ((self.deadline - self.begin).as_secs_f64().ceil() as usize).max(1)
    }
}

impl Shared {
    fn key(&self, id: u64) -> String {
        format!("{}obj-{id:08}", self.prefix)
    }

    fn population(&self) -> std::sync::MutexGuard<'_, Population> {
        self.population.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn micros(d: Duration) -> u32 {
    d.as_micros().min(u32::MAX as u128) as u32
}

/// The outcome of one operation: bytes moved and time to first byte.
type Outcome = Result<(u64, Option<Duration>), brisk_client::Error>;

fn unexpected(what: String) -> brisk_client::Error {
    brisk_client::Error::UnexpectedResponse { what }
}

/// One loop: operations drawn from the mix, one at a time, until the deadline.
async fn run_loop(shared: Arc<Shared>, clock: Clock, seed: u64) -> LoopResult {
    let mut random = XorShift::new(seed);
    let mut result = LoopResult::default();
    let mut buffer = vec![0u8; READ_CHUNK];
    while Instant::now() < clock.deadline {
        let mut op = pick(&shared.plan.mix, random.unit());
        let started = Instant::now();
        let outcome: Outcome = match op {
            MixedOp::Get | MixedOp::Head => {
                let picked = shared.population().start_read(&mut random);
                match picked {
                    Some((id, size)) => {
                        let key = shared.key(id);
                        let outcome = if op == MixedOp::Get {
                            get(&shared, &key, size, &mut buffer, started).await
                        } else {
                            head(&shared, &key, size).await
                        };
                        shared.population().read_done(id);
                        outcome
                    }
                    None => {
                        op = MixedOp::Put;
                        result.substituted += 1;
                        put(&shared, &mut random).await
                    }
                }
            }
            MixedOp::Delete => {
                let picked = shared.population().start_delete(&mut random);
                match picked {
                    Some(id) => {
                        let outcome = shared
                            .client
                            .delete(&shared.bucket, &shared.key(id))
                            .await
                            .map(|()| (0, None));
                        shared.population().delete_done(id, outcome.is_ok());
                        outcome
                    }
                    None => {
                        op = MixedOp::Put;
                        result.substituted += 1;
                        put(&shared, &mut random).await
                    }
                }
            }
            MixedOp::Put => put(&shared, &mut random).await,
            MixedOp::List => list(&shared).await,
        };
        let done = Instant::now();
        if done > clock.deadline {
            break;
        }
        let at = MixedOp::ALL.iter().position(|o| *o == op).unwrap_or(0);
        let tally = &mut result.tallies[at];
        match outcome {
            Ok((bytes, ttfb)) => {
                tally.count += 1;
                tally.bytes += bytes;
                tally.latency.push(micros(done - started));
                if let Some(t) = ttfb {
                    tally.ttfb.push(micros(t));
                }
                let second = ((done - clock.begin).as_secs() as usize).min(clock.buckets() - 1);
                if result.timeline.len() <= second {
                    result.timeline.resize(second + 1, [0; 5]);
                }
                result.timeline[second][at] += 1;
            }
            Err(e) => {
                tally.errors += 1;
                if result.first_error.is_none() {
                    result.first_error = Some((op, e));
                }
            }
        }
    }
    result
}

async fn get(
    shared: &Shared,
    key: &str,
    size: u64,
    buffer: &mut [u8],
    started: Instant,
) -> Outcome {
    let mut stream = shared.client.get_stream(&shared.bucket, key).await?;
    let mut total = 0u64;
    let mut ttfb = None;
    loop {
        let n = stream.read(buffer).await?;
        if ttfb.is_none() {
            ttfb = Some(started.elapsed());
        }
        if n == 0 {
            break;
        }
        total += n as u64;
    }
    if total != size {
        return Err(unexpected(format!(
            "read {total} bytes of {key}, expected {size}"
        )));
    }
    Ok((total, ttfb))
}

async fn head(shared: &Shared, key: &str, size: u64) -> Outcome {
    let meta = shared.client.head(&shared.bucket, key).await?;
    if meta.content_length != size {
        return Err(unexpected(format!(
            "HEAD {key} says {} bytes, expected {size}",
            meta.content_length
        )));
    }
    Ok((0, None))
}

async fn put(shared: &Shared, random: &mut XorShift) -> Outcome {
    let size = draw_size(shared.plan.sizes, shared.plan.distribution, random.unit());
    let id = shared.population().start_put();
    let outcome = shared
        .client
        .put_with(
            &shared.bucket,
            &shared.key(id),
            &shared.body[..size as usize],
            &shared.put_options,
        )
        .await
        .map(|_| (size, None));
    shared.population().put_done(id, size, PutEnd::of(&outcome));
    outcome
}

async fn list(shared: &Shared) -> Outcome {
    let options = ListOptions {
        prefix: Some(shared.prefix.clone()),
        max_keys: Some(LIST_MAX_KEYS),
        ..ListOptions::default()
    };
    shared
        .client
        .list(&shared.bucket, options)
        .next_page()
        .await
        .map(|_| (0, None))
}

/// Random bytes (xorshift64 output, incompressible), `len` of them.
fn random_body(len: usize) -> Vec<u8> {
    let mut random = XorShift::new(0xb0d1);
    let mut body = Vec::with_capacity(len + 8);
    while body.len() < len {
        body.extend_from_slice(&random.next().to_le_bytes());
    }
    body.truncate(len);
    body
}

/// Latency or TTFB figures of one operation, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Spread {
    /// Nearest-rank percentiles of microsecond samples, in milliseconds; `None` for none.
    fn of(mut samples: Vec<u32>) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let at = |p: f64| {
            let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
            samples[rank - 1] as f64 / 1e3
        };
        Some(Self {
            p50: at(PERCENTILES[0].0),
            p90: at(PERCENTILES[1].0),
            p99: at(PERCENTILES[2].0),
            max: samples[n - 1] as f64 / 1e3,
        })
    }

    fn values(&self) -> [f64; 4] {
        [self.p50, self.p90, self.p99, self.max]
    }

    fn to_json(self) -> Value {
        json!({"p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.max})
    }
}

/// One operation's figures over the run.
#[derive(Debug, Clone, PartialEq)]
pub struct OpFigures {
    pub op: MixedOp,
    pub count: u64,
    pub errors: u64,
    pub bytes: u64,
    pub ops_per_s: f64,
    pub bytes_per_s: f64,
    pub latency_ms: Option<Spread>,
    /// GET only.
    pub ttfb_ms: Option<Spread>,
}

/// Everything one run found.
#[derive(Debug, Clone)]
pub struct MixedReport {
    pub command: String,
    /// `embedded` or the `--endpoint-url`.
    pub endpoint: String,
    pub server: Option<ServerSettings>,
    pub machine: Machine,
    pub bucket: String,
    pub prefix: String,
    pub plan: MixedPlan,
    /// The client's memory budget, bytes, and where it came from.
    pub memory_budget: (usize, String),
    /// Seconds the population took to upload.
    pub prepare_seconds: f64,
    /// Operations of the mix that are in the figures (those with a weight, or substituted).
    pub ops: Vec<OpFigures>,
    /// Completions per 1 s bucket, per operation in [`MixedOp::ALL`]'s order.
    pub timeline: Vec<[u64; 5]>,
    pub client_cpu_seconds: f64,
    /// The server's CPU seconds over the duration (embedded server or `--server-pid`).
    pub server_cpu_seconds: Option<f64>,
    /// GETs, HEADs and DELETEs that found the population empty and were PUTs instead.
    pub substituted: u64,
    /// Objects in the population when the mix ended.
    pub objects_at_end: usize,
    /// Objects a listing of the run's prefix found after the clean-up.
    pub objects_left: usize,
    pub first_error: Option<String>,
}

impl MixedReport {
    pub fn total_ops(&self) -> u64 {
        self.ops.iter().map(|o| o.count).sum()
    }

    fn seconds(&self) -> f64 {
        self.plan.duration.as_secs_f64()
    }

    /// Client CPU microseconds per operation.
    pub fn client_cpu_us_per_op(&self) -> Option<f64> {
        let n = self.total_ops();
        (n > 0).then(|| self.client_cpu_seconds * 1e6 / n as f64)
    }

    /// Server CPU microseconds per operation.
    pub fn server_cpu_us_per_op(&self) -> Option<f64> {
        let n = self.total_ops();
        self.server_cpu_seconds
            .filter(|_| n > 0)
            .map(|s| s * 1e6 / n as f64)
    }

    fn server_line(&self) -> String {
        match (&self.server, self.plan.server_pid) {
            (Some(s), _) => s.describe(),
            (None, Some(pid)) => format!("endpoint {} (server process {pid})", self.endpoint),
            (None, None) => format!("endpoint {}", self.endpoint),
        }
    }

    fn settings_line(&self) -> String {
        format!(
            "mix {}; objects {}; {} in flight for {:.1} s; {} objects uploaded first ({:.1} s), \
             {} at the end, {} left after the clean-up; keys s3://{}/{}; memory budget {} ({}); {}",
            self.plan.mix_line(),
            self.plan.sizes_line(),
            self.plan.concurrent,
            self.seconds(),
            self.plan.objects,
            self.prepare_seconds,
            self.objects_at_end,
            self.objects_left,
            self.bucket,
            self.prefix,
            human(self.memory_budget.0 as u64),
            self.memory_budget.1,
            self.server_line(),
        )
    }

    fn cpu_line(&self) -> String {
        let opt = |v: Option<f64>| v.map_or_else(|| "–".to_owned(), |v| format!("{v:.0}"));
        format!(
            "{} operations, {:.1} per second; client CPU {:.2} s, {} µs per operation; server CPU {}, \
             {} µs per operation{}",
            self.total_ops(),
            self.total_ops() as f64 / self.seconds(),
            self.client_cpu_seconds,
            opt(self.client_cpu_us_per_op()),
            self.server_cpu_seconds
                .map_or_else(|| "not measured".to_owned(), |s| format!("{s:.2} s")),
            opt(self.server_cpu_us_per_op()),
            if self.substituted > 0 {
                format!(
                    "; {} operations found no object and were PUTs",
                    self.substituted
                )
            } else {
                String::new()
            }
        )
    }

    /// The table printed at the end of a run.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let header: Vec<String> = TABLE_HEADER
            .iter()
            .zip(TEXT_WIDTHS)
            .map(|(name, width)| format!("{name:>width$}"))
            .collect();
        let _ = writeln!(out, "{}", header.join(" "));
        for o in &self.ops {
            let line: Vec<String> = op_cells(o)
                .iter()
                .zip(TEXT_WIDTHS)
                .map(|(cell, width)| format!("{cell:>width$}"))
                .collect();
            let _ = writeln!(out, "{}", line.join(" "));
        }
        let _ = writeln!(out, "{}", self.cpu_line());
        if let Some(e) = &self.first_error {
            let _ = writeln!(out, "first error: {e}");
        }
        let _ = writeln!(out, "{}", self.settings_line());
        out
    }

    /// The JSON document of `--json` and `--json-file`.
    pub fn to_json(&self) -> Value {
        let seconds = self.seconds();
        let ops: Vec<Value> = self
            .ops
            .iter()
            .map(|o| {
                json!({
                    "op": o.op.name(),
                    "count": o.count,
                    "errors": o.errors,
                    "bytes": o.bytes,
                    "ops_per_s": o.ops_per_s,
                    "bytes_per_s": o.bytes_per_s,
                    "latency_ms": o.latency_ms.map(Spread::to_json),
                    "ttfb_ms": o.ttfb_ms.map(Spread::to_json),
                })
            })
            .collect();
        let timeline: Vec<Value> = self
            .timeline
            .iter()
            .enumerate()
            .map(|(i, counts)| {
                let mut entry = serde_json::Map::new();
                entry.insert("second".into(), json!(i + 1));
                for (op, n) in MixedOp::ALL.iter().zip(counts) {
                    entry.insert(op.name().into(), json!(n));
                }
                Value::Object(entry)
            })
            .collect();
        let mix: serde_json::Map<String, Value> = MixedOp::ALL
            .iter()
            .zip(self.plan.mix.0)
            .map(|(op, w)| (op.name().to_owned(), json!(w)))
            .collect();
        json!({
            "brisk_version": env!("CARGO_PKG_VERSION"),
            "benchmark": "mixed",
            "command": self.command,
            "endpoint": self.endpoint,
            "server": self.server.as_ref().map(ServerSettings::to_json),
            "server_pid": self.plan.server_pid,
            "machine": self.machine,
            "bucket": self.bucket,
            "prefix": self.prefix,
            "mix": mix,
            "size_min": self.plan.sizes.min,
            "size_max": self.plan.sizes.max,
            "size_distribution": distribution_name(self.plan.distribution),
            "concurrent": self.plan.concurrent,
            "duration_s": seconds,
            "objects": self.plan.objects,
            "prepare_seconds": self.prepare_seconds,
            "memory_budget": self.memory_budget.0,
            "memory_budget_source": self.memory_budget.1,
            "ops": ops,
            "total": {
                "count": self.total_ops(),
                "errors": self.ops.iter().map(|o| o.errors).sum::<u64>(),
                "ops_per_s": self.total_ops() as f64 / seconds,
                "client_cpu_seconds": self.client_cpu_seconds,
                "client_cpu_us_per_op": self.client_cpu_us_per_op(),
                "server_cpu_seconds": self.server_cpu_seconds,
                "server_cpu_us_per_op": self.server_cpu_us_per_op(),
            },
            "substituted": self.substituted,
            "objects_at_end": self.objects_at_end,
            "objects_left": self.objects_left,
            "first_error": self.first_error,
            "timeline": timeline,
        })
    }

    /// The HTML page: latency percentiles per operation, the rate over time, then the table, the
    /// settings and the command.
    pub fn html(&self) -> String {
        use std::fmt::Write as _;
        let mut page = String::new();
        let _ = write!(
            page,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>brisk bench mixed</title><style>{STYLE}</style></head><body>\n\
             <h1>brisk bench mixed</h1>\n<p class=\"sub\">{}</p>\n",
            escape(&format!(
                "{} · {} · objects {} · {} in flight for {:.1} s",
                self.machine.describe(),
                self.plan.mix_line(),
                self.plan.sizes_line(),
                self.plan.concurrent,
                self.seconds()
            ))
        );
        let percentiles: Vec<(f64, String)> = ["p50", "p90", "p99", "worst"]
            .iter()
            .enumerate()
            .map(|(i, name)| ((i + 1) as f64, (*name).to_owned()))
            .collect();
        let mut latency: Vec<Series> = Vec::new();
        for (i, o) in self.ops.iter().enumerate() {
            let mut add = |label: String, spread: Spread, color: &'static str| {
                let points = spread
                    .values()
                    .iter()
                    .zip(&percentiles)
                    .map(|(&v, (x, name))| (*x, v, format!("{label} {name}: {v:.2} ms")))
                    .collect();
                latency.push(Series {
                    label,
                    color,
                    points,
                });
            };
            // Each operation keeps its colour of the rate chart; GET's TTFB takes the sixth, which
            // no operation has.
            if let Some(l) = o.latency_ms {
                add(o.op.name().to_uppercase(), l, COLORS[i % COLORS.len()]);
            }
            if let Some(t) = o.ttfb_ms {
                add(format!("{} TTFB", o.op.name().to_uppercase()), t, COLORS[5]);
            }
        }
        page.push_str(&line_chart_on(
            "Latency per operation at p50, p90, p99 and the worst (lower is better)",
            "percentile",
            "ms",
            &XAxis::Linear(&percentiles),
            &latency,
            YScale::LogIfWide,
        ));
        let seconds = self.timeline.len();
        let step = (seconds / 10).max(1);
        let ticks: Vec<(f64, String)> = (1..=seconds)
            .filter(|s| (s - 1) % step == 0 || *s == seconds)
            .map(|s| (s as f64, format!("{s}")))
            .collect();
        let mut rates: Vec<Series> = self
            .ops
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let at = MixedOp::ALL.iter().position(|x| *x == o.op).unwrap_or(0);
                Series {
                    label: o.op.name().to_uppercase(),
                    color: COLORS[i % COLORS.len()],
                    points: self
                        .timeline
                        .iter()
                        .enumerate()
                        .map(|(s, counts)| {
                            let n = counts[at] as f64;
                            (
                                (s + 1) as f64,
                                n,
                                format!("{} in second {}: {n}", o.op.name(), s + 1),
                            )
                        })
                        .collect(),
                }
            })
            .collect();
        rates.push(Series {
            label: "all".into(),
            color: COLORS[6],
            points: self
                .timeline
                .iter()
                .enumerate()
                .map(|(s, counts)| {
                    let n = counts.iter().sum::<u64>() as f64;
                    ((s + 1) as f64, n, format!("all in second {}: {n}", s + 1))
                })
                .collect(),
        });
        page.push_str(&line_chart_on(
            "Operations completed per second, in 1 s buckets",
            "second of the run",
            "operations/s",
            &XAxis::Linear(&ticks),
            &rates,
            YScale::Linear,
        ));
        page.push_str("<h2>Figures</h2><table><tr>");
        for name in TABLE_HEADER {
            let _ = write!(page, "<th>{}</th>", escape(name));
        }
        page.push_str("</tr>\n");
        for o in &self.ops {
            let cells: String = op_cells(o)
                .iter()
                .map(|cell| format!("<td>{}</td>", escape(cell)))
                .collect();
            let _ = writeln!(page, "<tr>{cells}</tr>");
        }
        page.push_str("</table>\n");
        let _ = write!(
            page,
            "<p>{}</p>\n<h2>Settings</h2><p>{}</p>\n<h2>Command</h2><pre>{}</pre>\n\
             <p class=\"sub\">Each of the loops runs one operation at a time, drawn from the mix, \
             for the duration (a closed loop); latency is from the request's start to the end of \
             its response, time to first byte (GET) to the first bytes of the body. Client CPU is \
             this process's user + system time over the duration, divided by the operations \
             completed in it; the server's is read from /proc. See docs/bench.md.</p>\n\
             </body></html>\n",
            escape(&self.cpu_line()),
            escape(&self.settings_line()),
            escape(&self.command)
        );
        page
    }
}

const TABLE_HEADER: [&str; 13] = [
    "op", "count", "errors", "ops/s", "MiB/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "TTFB p50",
    "TTFB p90", "TTFB p99", "TTFB max",
];

/// Column widths of the printed table, in the order of [`op_cells`].
const TEXT_WIDTHS: [usize; 13] = [6, 7, 6, 8, 7, 7, 7, 7, 8, 8, 8, 8, 8];

/// One operation's figures as the cells of a table row.
fn op_cells(o: &OpFigures) -> [String; 13] {
    let spread = |s: Option<Spread>| -> [String; 4] {
        match s {
            Some(s) => s.values().map(|v| format!("{v:.2}")),
            None => std::array::from_fn(|_| "–".to_owned()),
        }
    };
    let [l50, l90, l99, lmax] = spread(o.latency_ms);
    let [t50, t90, t99, tmax] = spread(o.ttfb_ms);
    [
        o.op.name().to_uppercase(),
        o.count.to_string(),
        o.errors.to_string(),
        format!("{:.1}", o.ops_per_s),
        if o.bytes > 0 {
            format!("{:.1}", o.bytes_per_s / (1u64 << 20) as f64)
        } else {
            "–".to_owned()
        },
        l50,
        l90,
        l99,
        lmax,
        t50,
        t90,
        t99,
        tmax,
    ]
}

/// Runs `brisk bench mixed` and prints or writes what it found.
pub async fn run(global: &GlobalArgs, args: &MixedArgs) -> Result<(), BenchError> {
    let plan = MixedPlan::from_args(global, args)?;
    let status = Status::new(global.quiet);
    let report = session(global, args, &plan, &status).await;
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

/// What [`mix`] returns to the session.
struct Mixed {
    prefix: String,
    prepare_seconds: f64,
    ops: Vec<OpFigures>,
    timeline: Vec<[u64; 5]>,
    client_cpu_seconds: f64,
    server_cpu_seconds: Option<f64>,
    substituted: u64,
    objects_at_end: usize,
    objects_left: usize,
    first_error: Option<String>,
}

async fn session(
    global: &GlobalArgs,
    args: &MixedArgs,
    plan: &MixedPlan,
    status: &Status,
) -> Result<MixedReport, BenchError> {
    let sizing = ClientSizing {
        largest_get: 0,
        connections: plan.concurrent,
        repeat: 1,
    };
    let put_options = PutOptions {
        payload_signing: global.payload_signing.into(),
        ..PutOptions::default()
    };
    let ran = in_session(
        global,
        &args.place,
        sizing,
        status,
        async |target, written| mix(target, plan, put_options, written, status).await,
    )
    .await?;
    let m = ran.outcome;
    Ok(MixedReport {
        command: command_line(),
        endpoint: ran.endpoint,
        server: ran.server,
        machine: Machine::current(),
        bucket: ran.bucket,
        prefix: m.prefix,
        plan: plan.clone(),
        memory_budget: ran.memory_budget,
        prepare_seconds: m.prepare_seconds,
        ops: m.ops,
        timeline: m.timeline,
        client_cpu_seconds: m.client_cpu_seconds,
        server_cpu_seconds: m.server_cpu_seconds,
        substituted: m.substituted,
        objects_at_end: m.objects_at_end,
        objects_left: m.objects_left,
        first_error: m.first_error,
    })
}

/// Hands every object the run may have written to the session's clean-up when it is dropped
/// before the run deleted them itself (an error, Ctrl-C).
struct Leftovers<'a> {
    shared: Arc<Shared>,
    written: &'a mut Written,
}

impl Drop for Leftovers<'_> {
    fn drop(&mut self) {
        let ids = self.shared.population().take_all();
        self.written
            .keys
            .extend(ids.into_iter().map(|id| self.shared.key(id)));
    }
}

/// Uploads the population, runs the loops for the duration, deletes every object written, and
/// lists the prefix to count what is left.
async fn mix(
    target: &Target<'_>,
    plan: &MixedPlan,
    put_options: PutOptions,
    written: &mut Written,
    status: &Status,
) -> Result<Mixed, BenchError> {
    let (suffix, _) = super::server::generate_keys();
    let prefix = format!("{KEY_PREFIX}mixed-{}/", suffix[10..].to_ascii_lowercase());
    status.show(&format!(
        "uploading {} objects of {}",
        plan.objects,
        plan.sizes_line()
    ));
    let shared = Arc::new(Shared {
        client: target.client.clone(),
        bucket: target.bucket.to_owned(),
        prefix: prefix.clone(),
        plan: plan.clone(),
        population: Mutex::new(Population::default()),
        body: random_body(plan.sizes.max as usize),
        put_options,
    });
    let leftovers = Leftovers {
        shared: shared.clone(),
        written,
    };
    let prepare_started = Instant::now();
    prepare(&shared, target).await?;
    let prepare_seconds = prepare_started.elapsed().as_secs_f64();

    status.show(&format!(
        "running {} for {:.1} s",
        plan.mix_line(),
        plan.duration.as_secs_f64()
    ));
    let server_pid = target.server_pid.or(plan.server_pid);
    let server_cpu = move || -> Result<Option<f64>, BenchError> {
        server_pid
            .map(|pid| Process::Pid(pid).cpu_seconds())
            .transpose()
            .map_err(BenchError::Measure)
    };
    let server_before = server_cpu()?;
    let client_before = process_cpu_seconds();
    let begin = Instant::now();
    let clock = Clock {
        begin,
        deadline: begin + plan.duration,
    };
    let mut loops = tokio::task::JoinSet::new();
    for seed in 0..plan.concurrent {
        loops.spawn(run_loop(shared.clone(), clock, seed as u64 + 1));
    }
    tokio::time::sleep_until(tokio::time::Instant::from_std(clock.deadline)).await;
    let client_cpu_seconds = process_cpu_seconds() - client_before;
    let server_after = server_cpu()?;
    status.show("waiting for the operations in flight");
    let mut merged = LoopResult::default();
    while let Some(done) = loops.join_next().await {
        let result = done.map_err(|e| {
            CliError::local("run the mixed loops", std::io::Error::other(e.to_string()))
        })?;
        for (all, one) in merged.tallies.iter_mut().zip(result.tallies) {
            all.merge(one);
        }
        if merged.timeline.len() < result.timeline.len() {
            merged.timeline.resize(result.timeline.len(), [0; 5]);
        }
        for (all, one) in merged.timeline.iter_mut().zip(&result.timeline) {
            for (a, b) in all.iter_mut().zip(one) {
                *a += b;
            }
        }
        merged.substituted += result.substituted;
        if merged.first_error.is_none() {
            merged.first_error = result.first_error;
        }
    }
    merged.timeline.resize(clock.buckets(), [0; 5]);

    status.show("deleting the objects written");
    let objects_at_end = shared.population().live.len();
    let ids = shared.population().take_all();
    let keys: Vec<String> = ids.iter().map(|&id| shared.key(id)).collect();
    let failed = delete_all(&shared.client, &shared.bucket, &keys).await;
    leftovers.written.keys.extend(failed);
    drop(leftovers);
    let objects_left = shared
        .client
        .list(
            &shared.bucket,
            ListOptions {
                prefix: Some(prefix.clone()),
                ..ListOptions::default()
            },
        )
        .collect_objects()
        .await
        .map_err(|e| CliError::s3(format!("list {}", target.url(&prefix)), e))?
        .len();

    let seconds = plan.duration.as_secs_f64();
    let ops: Vec<OpFigures> = MixedOp::ALL
        .iter()
        .zip(merged.tallies)
        .zip(plan.mix.0)
        .filter(|((_, t), w)| *w > 0.0 || t.count + t.errors > 0)
        .map(|((&op, t), _)| OpFigures {
            op,
            count: t.count,
            errors: t.errors,
            bytes: t.bytes,
            ops_per_s: t.count as f64 / seconds,
            bytes_per_s: t.bytes as f64 / seconds,
            latency_ms: Spread::of(t.latency),
            ttfb_ms: Spread::of(t.ttfb),
        })
        .collect();
    let first_error = match merged.first_error {
        // Not one operation completed: the run failed, with the first error's exit code.
        Some((op, e)) if ops.iter().all(|o| o.count == 0) => {
            return Err(
                CliError::s3(format!("{} under {}", op.name(), target.url(&prefix)), e).into(),
            );
        }
        Some((op, e)) => Some(format!("{}: {e}", op.name())),
        None => None,
    };
    Ok(Mixed {
        prefix,
        prepare_seconds,
        ops,
        timeline: merged.timeline,
        client_cpu_seconds,
        server_cpu_seconds: server_before
            .zip(server_after)
            .map(|(b, a)| (a - b).max(0.0)),
        substituted: merged.substituted,
        objects_at_end,
        objects_left,
        first_error,
    })
}

/// Uploads the population: `plan.objects` objects of drawn sizes, `plan.concurrent` at a time.
async fn prepare(shared: &Arc<Shared>, target: &Target<'_>) -> Result<(), BenchError> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut loops = tokio::task::JoinSet::new();
    for seed in 0..shared.plan.concurrent.min(shared.plan.objects) {
        let (shared, next) = (shared.clone(), next.clone());
        loops.spawn(async move {
            let mut random = XorShift::new(0x9e9a_0000 + seed as u64);
            use std::sync::atomic::Ordering::Relaxed;
            while next.fetch_add(1, Relaxed) < shared.plan.objects {
                if let Err(e) = put(&shared, &mut random).await {
                    // The other loops stop after the PUT they are sending.
                    next.store(shared.plan.objects, Relaxed);
                    return Err(e);
                }
            }
            Ok::<(), brisk_client::Error>(())
        });
    }
    // After an error every loop ends; all are awaited, so that no PUT is left in flight (whose
    // object the clean-up would have to guess at).
    let mut first = None;
    while let Some(done) = loops.join_next().await {
        let done = done.map_err(|e| {
            CliError::local("upload the objects", std::io::Error::other(e.to_string()))
        })?;
        if let Err(e) = done {
            first.get_or_insert(e);
        }
    }
    if let Some(e) = first {
        let at = target.url(&shared.prefix);
        return Err(CliError::s3(format!("upload the objects under {at}"), e).into());
    }
    Ok(())
}

/// Deletes `keys` with DeleteObjects; returns those it could not delete.
async fn delete_all(client: &Client, bucket: &str, keys: &[String]) -> Vec<String> {
    match client.delete_many(bucket, keys).await {
        Ok(result) => result.errors.into_iter().map(|e| e.key).collect(),
        Err(_) => keys.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{DEFAULT_MIX, parse_mix, parse_object_sizes};
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<(GlobalArgs, MixedArgs), clap::Error> {
        let cli = crate::args::Cli::try_parse_from(["brisk"].iter().chain(args))?;
        match cli.command {
            crate::args::Command::Bench(crate::args::BenchArgs {
                command: Some(crate::args::BenchCommand::Mixed(m)),
                ..
            }) => Ok((cli.global, *m)),
            _ => unreachable!(),
        }
    }

    fn plan(args: &[&str]) -> Result<MixedPlan, CliError> {
        let (g, m) = parse(args).unwrap();
        MixedPlan::from_args(&g, &m)
    }

    #[test]
    fn defaults_are_warps_mix_on_16_kib_to_1_mib() {
        let p = plan(&["bench", "mixed"]).unwrap();
        assert_eq!(p.mix, parse_mix(DEFAULT_MIX).unwrap());
        assert_eq!(p.mix.0, [45.0, 15.0, 30.0, 10.0, 0.0]);
        assert_eq!(p.sizes, DEFAULT_SIZES);
        assert_eq!(p.distribution, SizeDistribution::Log);
        assert_eq!(
            (p.concurrent, p.duration, p.objects),
            (20, Duration::from_secs(30), 1000)
        );
        assert_eq!(p.mix_line(), "get 45 %, put 15 %, head 30 %, delete 10 %");
        assert_eq!(p.sizes_line(), "16.0 KiB .. 1.0 MiB (log-uniform)");
        let q = plan(&["bench", "mixed", "--quick", "--objects", "7"]).unwrap();
        assert_eq!((q.sizes, q.concurrent, q.objects), (QUICK_SIZES, 4, 7));
        let chosen = plan(&[
            "bench",
            "mixed",
            "--mix",
            "get=1,list=1",
            "--size",
            "64KiB",
            "--size-distribution",
            "uniform",
            "--duration",
            "2m",
            "--concurrent",
            "8",
        ])
        .unwrap();
        assert_eq!(chosen.mix.0, [1.0, 0.0, 0.0, 0.0, 1.0]);
        assert_eq!(chosen.mix_line(), "get 50 %, list 50 %");
        assert_eq!(
            chosen.sizes,
            ObjectSizes {
                min: 65536,
                max: 65536
            }
        );
        assert_eq!(chosen.sizes_line(), "64.0 KiB");
        assert_eq!(
            (chosen.duration, chosen.concurrent),
            (Duration::from_secs(120), 8)
        );
    }

    #[test]
    fn bad_mixes_and_sizes_say_why() {
        let mix_error = |t: &str| parse_mix(t).unwrap_err();
        assert!(mix_error("get=0,put=0").contains("sums to 0"));
        assert!(mix_error("").contains("sums to 0"));
        assert!(
            mix_error("get=lots").contains("not a number")
                || mix_error("get=lots").contains("a number")
        );
        assert!(mix_error("get=-5").contains("a number of 0 or more"));
        assert!(mix_error("copy=5").contains("not an operation"));
        assert!(mix_error("get").contains("OPERATION=PERCENT"));
        assert!(mix_error("get=1,GET=2").contains("twice"));
        assert_eq!(
            parse_mix(" GET = 2.5 , put=1").unwrap().0,
            [2.5, 1.0, 0.0, 0.0, 0.0]
        );
        let size_error = |t: &str| parse_object_sizes(t).unwrap_err();
        assert!(size_error("1MiB..16KiB").contains("larger than the largest"));
        assert!(size_error("0").contains("at least 1 byte"));
        assert!(size_error("6GiB").contains("at most 5 GiB"));
        assert!(!size_error("big").is_empty());
        assert!(!size_error("1KiB..").is_empty());
        assert_eq!(
            parse_object_sizes("16KiB..1MiB").unwrap(),
            ObjectSizes {
                min: 16 << 10,
                max: 1 << 20
            }
        );
        for bad in [
            &["bench", "mixed", "--mix", "get=x"][..],
            &["bench", "mixed", "--size", "1MiB..1KiB"],
            &["bench", "mixed", "--duration", "forever"],
            &["bench", "mixed", "--concurrent", "0"],
            &["bench", "mixed", "--objects", "0"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let err = plan(&["bench", "mixed", "--server-pid", "1"]).unwrap_err();
        assert!(err.to_string().contains("--endpoint-url"), "{err}");
        assert_eq!(err.exit_code(), crate::exit::code::USAGE);
    }

    #[test]
    fn draws_follow_the_mix_and_the_size_bounds() {
        let mix = parse_mix("get=45,head=30,put=15,delete=10").unwrap();
        let mut random = XorShift::new(1);
        let mut counts = [0u32; 5];
        for _ in 0..100_000 {
            let op = pick(&mix, random.unit());
            counts[MixedOp::ALL.iter().position(|o| *o == op).unwrap()] += 1;
        }
        // get, put, head, delete, list: within 1 point of 45, 15, 30, 10, 0 %.
        for (n, want) in counts.iter().zip([45.0, 15.0, 30.0, 10.0, 0.0]) {
            assert!((*n as f64 / 1000.0 - want).abs() < 1.0, "{counts:?}");
        }
        assert_eq!(pick(&mix, 0.999_999_999), MixedOp::Delete);
        let sizes = ObjectSizes {
            min: 16 << 10,
            max: 1 << 20,
        };
        for distribution in [SizeDistribution::Log, SizeDistribution::Uniform] {
            assert_eq!(draw_size(sizes, distribution, 0.0), 16 << 10);
            assert_eq!(draw_size(sizes, distribution, 0.999_999_999), 1 << 20);
        }
        // Log-uniform: half of the draws below the geometric mean (128 KiB), uniform: far fewer.
        let below = |d| {
            let mut r = XorShift::new(2);
            (0..10_000)
                .filter(|_| draw_size(sizes, d, r.unit()) < 128 << 10)
                .count()
        };
        assert!((4_800..5_200).contains(&below(SizeDistribution::Log)));
        assert!(below(SizeDistribution::Uniform) < 1_500);
        let fixed = ObjectSizes { min: 10, max: 10 };
        assert_eq!(draw_size(fixed, SizeDistribution::Log, 0.5), 10);
    }

    #[test]
    fn the_population_never_deletes_what_is_read_and_forgets_nothing() {
        let mut p = Population::default();
        let mut random = XorShift::new(3);
        assert_eq!(p.start_read(&mut random), None);
        assert_eq!(p.start_delete(&mut random), None);
        let a = p.start_put();
        let b = p.start_put();
        let c = p.start_put();
        p.put_done(a, 100, PutEnd::Stored);
        p.put_done(b, 200, PutEnd::Unknown);
        p.put_done(c, 300, PutEnd::Refused);
        // b failed: not live, but it may exist, so the clean-up still deletes it; c was refused.
        assert_eq!(p.live, vec![(a, 100)]);
        assert_eq!(p.start_read(&mut random), Some((a, 100)));
        assert_eq!(p.start_delete(&mut random), None, "a is being read");
        p.read_done(a);
        assert_eq!(p.start_delete(&mut random), Some(a));
        assert!(p.live.is_empty());
        p.delete_done(a, false);
        let mut all = p.take_all();
        all.sort_unstable();
        assert_eq!(all, vec![a, b]);
        assert!(p.take_all().is_empty());
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let s = Spread::of((1..=1000).collect()).unwrap();
        assert_eq!((s.p50, s.p90, s.p99, s.max), (0.5, 0.9, 0.99, 1.0));
        let one = Spread::of(vec![2500]).unwrap();
        assert_eq!(one.values(), [2.5; 4]);
        assert_eq!(Spread::of(Vec::new()), None);
    }

    fn report() -> MixedReport {
        let spread = Spread {
            p50: 1.0,
            p90: 2.0,
            p99: 5.0,
            max: 9.0,
        };
        let op = |op, count, bytes| OpFigures {
            op,
            count,
            errors: 0,
            bytes,
            ops_per_s: count as f64 / 2.0,
            bytes_per_s: bytes as f64 / 2.0,
            latency_ms: Some(spread),
            ttfb_ms: (op == MixedOp::Get).then_some(spread),
        };
        MixedReport {
            command: "brisk bench mixed <x>".into(),
            endpoint: "embedded".into(),
            server: Some(ServerSettings::from_args(&[])),
            machine: Machine::current(),
            bucket: "b".into(),
            prefix: "brisk-bench/mixed-x/".into(),
            plan: plan(&["bench", "mixed", "--duration", "2s"]).unwrap(),
            memory_budget: (1 << 30, "--max-memory".into()),
            prepare_seconds: 0.5,
            ops: vec![
                op(MixedOp::Get, 90, 90 << 20),
                op(MixedOp::Put, 30, 30 << 20),
                op(MixedOp::Head, 60, 0),
                op(MixedOp::Delete, 20, 0),
            ],
            timeline: vec![[40, 10, 30, 10, 0], [50, 20, 30, 10, 0]],
            client_cpu_seconds: 0.4,
            server_cpu_seconds: Some(0.8),
            substituted: 0,
            objects_at_end: 1010,
            objects_left: 0,
            first_error: None,
        }
    }

    #[test]
    fn the_report_has_a_row_per_operation_and_two_charts() {
        let r = report();
        let json = r.to_json();
        assert_eq!(json["ops"].as_array().unwrap().len(), 4);
        assert_eq!(json["total"]["count"], 200);
        assert_eq!(json["total"]["ops_per_s"], 100.0);
        assert_eq!(json["total"]["client_cpu_us_per_op"], 2000.0);
        assert_eq!(json["total"]["server_cpu_us_per_op"], 4000.0);
        assert_eq!(json["ops"][0]["ttfb_ms"]["p99"], 5.0);
        assert!(json["ops"][1]["ttfb_ms"].is_null());
        assert_eq!(json["timeline"][1]["get"], 50);
        assert_eq!(json["mix"]["head"], 30.0);
        let table = r.table();
        assert_eq!(table.lines().count(), 7, "{table}");
        assert!(
            table.contains("200 operations, 100.0 per second"),
            "{table}"
        );
        assert!(table.contains("2000 µs per operation"), "{table}");
        let page = r.html();
        assert_eq!(page.matches("<svg").count(), 2);
        // Latency: 4 operations and GET's TTFB; rate: 4 operations and all.
        assert_eq!(page.matches("<path").count(), 10);
        assert!(page.contains("brisk bench mixed &lt;x&gt;"));
        assert!(page.contains(">p99<") && page.contains(">worst<"));
    }
}
