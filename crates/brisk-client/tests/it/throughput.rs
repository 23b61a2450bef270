//! Throughput against the test server, next to boto3 against the same server on the same machine.
//! Ignored by default (it moves a few GiB); run it with
//!
//! ```text
//! cargo test --release -p brisk-client --test it throughput -- --ignored --nocapture
//! ```
//!
//! boto3 comes from `BRISK_PYTHON` (else `<workspace>/.venv/bin/python`); without it only brisk's
//! numbers are printed. Each figure is the median of [`RUNS`] runs. On loopback the server's own
//! cost dominates, so this compares clients against one server, not absolute link speed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{ACCESS_KEY, SECRET_KEY, bounded, client, new_bucket, pattern, server};
use brisk_client::{PayloadSigning, PutOptions, TransferOptions};

const MIB: usize = 1024 * 1024;
const SIZE: usize = 128 * MIB;
const RUNS: usize = 3;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn rate(d: Duration) -> String {
    format!("{:7.0} MiB/s", SIZE as f64 / MIB as f64 / d.as_secs_f64())
}

fn python() -> Option<PathBuf> {
    let path = std::env::var_os("BRISK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python")
        });
    path.is_file().then_some(path)
}

const BOTO3: &str = r#"
import sys, time, io, boto3
from botocore.config import Config
endpoint, key, secret, bucket, name, runs, target = sys.argv[1:8]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
def median(xs): return sorted(xs)[len(xs) // 2]
t = []
for _ in range(int(runs)):
    s = time.perf_counter(); s3.get_object(Bucket=bucket, Key=name)["Body"].read(); t.append(time.perf_counter() - s)
print("get_object().read()", median(t))
t = []
for _ in range(int(runs)):
    s = time.perf_counter(); s3.download_fileobj(bucket, name, io.BytesIO()); t.append(time.perf_counter() - s)
print("download_fileobj into memory (10 threads)", median(t))
t = []
for _ in range(int(runs)):
    s = time.perf_counter(); s3.download_file(bucket, name, target); t.append(time.perf_counter() - s)
print("download_file to a file, no fsync (10 threads)", median(t))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "moves a few GiB; run with --release --ignored --nocapture"]
async fn throughput_against_the_test_server() {
    bounded(Duration::from_secs(600), async {
        let c = client();
        let bucket = new_bucket(&c, "throughput").await;
        let body = pattern(SIZE, 13);
        let unsigned = PutOptions {
            payload_signing: PayloadSigning::Unsigned,
            ..PutOptions::default()
        };
        let mut puts = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            c.put_with(&bucket, "big", &body, &unsigned).await.unwrap();
            puts.push(start.elapsed());
        }
        println!("{} brisk put (one PUT, CRC32C, unsigned payload)", rate(median(puts)));

        let mut dst = vec![0u8; SIZE];
        let mut times = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            c.get_into(&bucket, "big", &mut dst).await.unwrap();
            times.push(start.elapsed());
        }
        println!("{} brisk get_into (one GET into the caller's buffer)", rate(median(times)));
        assert!(dst == body);

        let mut times = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            let buf = c.get_bytes(&bucket, "big").await.unwrap();
            times.push(start.elapsed());
            drop(buf);
        }
        println!("{} brisk get_bytes (one GET into a fresh exact buffer)", rate(median(times)));

        let dir = tempfile::tempdir().unwrap();
        for in_flight in [1, 4, 8] {
            let options = TransferOptions {
                parts_in_flight: in_flight,
                ..TransferOptions::default()
            };
            let mut times = Vec::new();
            for _ in 0..RUNS {
                let target = dir.path().join("download");
                let start = Instant::now();
                c.download(&bucket, "big", &target, options.clone()).await.unwrap();
                times.push(start.elapsed());
            }
            println!(
                "{} brisk download to a file (fsync before rename), 8 MiB parts, {in_flight} in flight",
                rate(median(times))
            );
        }

        match python() {
            None => println!("(no Python with boto3: set BRISK_PYTHON to compare)"),
            Some(python) => {
                let output = Command::new(python)
                    .args(["-c", BOTO3, &server().endpoint, ACCESS_KEY, SECRET_KEY])
                    .args([bucket.as_str(), "big", &RUNS.to_string()])
                    .arg(dir.path().join("boto3-download"))
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&output.stdout);
                for line in text.lines() {
                    let (what, secs) = line.rsplit_once(' ').unwrap();
                    let secs: f64 = secs.parse().unwrap();
                    println!("{} boto3 {what}", rate(Duration::from_secs_f64(secs)));
                }
                if !output.status.success() {
                    println!("boto3 failed: {}", String::from_utf8_lossy(&output.stderr));
                }
            }
        }
    })
    .await;
}
