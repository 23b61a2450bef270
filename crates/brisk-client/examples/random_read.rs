//! Random reads of one object at a fixed block size and queue depth, for a fixed time: prints
//! IOPS, MiB/s, client CPU seconds per GiB, p50/p99 latency, threads and sockets.
//!
//! `cargo run --release -p brisk-client --example random_read -- --endpoint-url http://127.0.0.1:9000 --bucket b --key k --block-size 256KiB --queue-depth 64 --duration 15s [--connections 64] [--pipelining auto|on|off] [--json]`
//!
//! The runtime has one worker thread per core, as a default tokio runtime does. The measurement is
//! `brisk bench random`'s own (`random_point`, with its `/proc` reader), included from brisk-cli.

// Only this process's CPU time, threads and sockets are read here.
#[allow(dead_code)]
#[path = "../../brisk-cli/src/bench/procfs.rs"]
mod procfs;
#[path = "../../brisk-cli/src/bench/random_point.rs"]
mod random_point;
// Its offsets; the choices the mixed load also draws are not used here.
#[allow(dead_code)]
#[path = "../../brisk-cli/src/bench/xorshift.rs"]
mod xorshift;

use std::time::Duration;

use brisk_client::batch::Pipelining;
use random_point::{Figures, MeasureOptions, measure};

const USAGE: &str = "random_read --endpoint-url URL --bucket NAME --key KEY [--block-size 256KiB] \
                     [--queue-depth 64] [--duration 15s] [--connections 64] \
                     [--pipelining auto|on|off] [--json]";

fn main() {
    let args = parse_args();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(&args)) {
        Ok(figures) => print(&args, &figures),
        Err(e) => {
            eprintln!("random_read: {e}");
            std::process::exit(1);
        }
    }
}

struct Args {
    endpoint: Option<String>,
    bucket: String,
    options: MeasureOptions,
    json: bool,
}

async fn run(args: &Args) -> Result<Figures, brisk_client::Error> {
    // The client's own limit unless `--connections` asks for more, so that with no flags the batch
    // runs with the library's defaults.
    let mut builder = brisk_client::Client::builder().max_connections_per_host(
        args.options
            .connections
            .max(brisk_client::config::DEFAULT_MAX_CONNECTIONS_PER_HOST),
    );
    if let Some(url) = &args.endpoint {
        builder = builder.endpoint(url);
    }
    let client = builder.build()?;
    measure(&client, &args.bucket, &args.options).await
}

fn print(args: &Args, f: &Figures) {
    let o = &args.options;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    if args.json {
        println!(
            "{{\"block_size\":{},\"queue_depth\":{},\"connections\":{},\"pipelining\":\"{:?}\",\"duration_s\":{:.3},\"reads\":{},\"errors\":{},\"bytes\":{},\"iops\":{:.1},\"mib_per_s\":{:.1},\"cpu_s\":{:.3},\"cpu_s_per_gib\":{:.4},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"threads\":{},\"sockets\":{},\"max_connections\":{},\"pipelined\":{},\"fell_back\":{}}}",
            o.block_size,
            o.queue_depth,
            o.connections,
            o.pipelining,
            f.elapsed.as_secs_f64(),
            f.reads,
            f.errors,
            f.bytes,
            f.iops,
            f.mib_per_s,
            f.cpu_seconds,
            f.cpu_s_per_gib,
            ms(f.latency_p50),
            ms(f.latency_p99),
            f.threads,
            f.sockets,
            f.connections,
            f.pipelined,
            f.fell_back
        );
        return;
    }
    println!(
        "random_read: {} B blocks, queue depth {}, {} connections, pipelining {:?}, {:.1} s",
        o.block_size,
        o.queue_depth,
        o.connections,
        o.pipelining,
        f.elapsed.as_secs_f64()
    );
    println!(
        "  {:.0} IOPS, {:.1} MiB/s, {} reads, {} errors",
        f.iops, f.mib_per_s, f.reads, f.errors
    );
    println!(
        "  client CPU {:.2} s ({:.3} s/GiB), latency p50 {:.2} ms p99 {:.2} ms",
        f.cpu_seconds,
        f.cpu_s_per_gib,
        ms(f.latency_p50),
        ms(f.latency_p99)
    );
    println!(
        "  threads {}, sockets {}, connections {} (pipelined responses {}, fell back {})",
        f.threads, f.sockets, f.connections, f.pipelined, f.fell_back
    );
}

fn parse_args() -> Args {
    let mut endpoint = None;
    let mut bucket = None;
    let mut options = MeasureOptions::default();
    let mut json = false;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--json" {
            json = true;
            continue;
        }
        let Some(value) = args.next() else {
            usage(&format!("{flag} needs a value"));
        };
        match flag.as_str() {
            "--endpoint-url" => endpoint = Some(value),
            "--bucket" => bucket = Some(value),
            "--key" => options.key = value,
            "--block-size" => {
                options.block_size = parse_size(&value).unwrap_or_else(|| usage(&value)) as usize
            }
            "--queue-depth" => {
                options.queue_depth = value.parse().unwrap_or_else(|_| usage(&value))
            }
            "--connections" => {
                options.connections = value.parse().unwrap_or_else(|_| usage(&value))
            }
            "--duration" => {
                options.duration = parse_duration(&value).unwrap_or_else(|| usage(&value))
            }
            "--seed" => options.seed = value.parse().unwrap_or_else(|_| usage(&value)),
            "--pipelining" => {
                options.pipelining = match value.as_str() {
                    "auto" => Pipelining::Auto,
                    "on" => Pipelining::On,
                    "off" => Pipelining::Off,
                    _ => usage(&value),
                }
            }
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    let bucket = bucket.unwrap_or_else(|| usage("missing --bucket"));
    if options.key.is_empty() {
        usage("missing --key");
    }
    Args {
        endpoint,
        bucket,
        options,
        json,
    }
}

fn usage(problem: &str) -> ! {
    eprintln!("random_read: {problem}\nusage: {USAGE}");
    std::process::exit(2);
}

/// `262144`, `256KiB`, `4MiB`, `1GiB` (binary units; `KB`/`K` are taken as KiB too).
fn parse_size(text: &str) -> Option<u64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let n: u64 = digits.parse().ok()?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// `15s`, `500ms`, `2m`, or seconds.
fn parse_duration(text: &str) -> Option<Duration> {
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.parse().ok().map(Duration::from_millis);
    }
    if let Some(s) = text.strip_suffix('s') {
        return s.parse().ok().map(Duration::from_secs_f64);
    }
    if let Some(m) = text.strip_suffix('m') {
        return m.parse::<u64>().ok().map(|m| Duration::from_secs(m * 60));
    }
    text.parse().ok().map(Duration::from_secs_f64)
}
