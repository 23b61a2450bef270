//! The cases of the suite and how each one is run and measured.
//!
//! | case | what is timed | process measured |
//! |---|---|---|
//! | `loopback` | a plain TCP copy of the transfer size between two tasks over 127.0.0.1 | this one |
//! | `get` | `Client::get_bytes` of each `--size-get` object into one exact buffer | this one |
//! | `download` | `Client::download` of the transfer-size object to a file | this one |
//! | `upload` | `Client::upload` of that file | this one |
//! | `server` | the same uploads, seen from the embedded server | the server's child process |
//! | `random` | random 256 KiB reads of the transfer object at queue depth 64, for a fixed time | this one |

use std::path::Path;

use brisk_client::{Client, TransferOptions};

use super::BenchError;
use super::loopback;
use super::measure::{GIB, Probe, Sample, Stats};
use super::payload::PatternReader;
use super::procfs::Process;
use super::random_point::{Figures, MeasureOptions};
use crate::args::CaseKind;

/// The prefix of every key the benchmark writes, so that it never touches other objects of a
/// bucket it is given.
pub const KEY_PREFIX: &str = "brisk-bench/";

/// The repeated samples of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub kind: CaseKind,
    /// `get 256 MiB`, `download 4 GiB`, `random 256.0 KiB QD 64`, ...
    pub label: String,
    /// Bytes moved per run (for `random`: the block size; each run's bytes are in `random`).
    pub bytes: u64,
    pub samples: Vec<Sample>,
    /// `random` only: what each run measured, one per sample.
    pub random: Vec<Figures>,
}

impl CaseResult {
    fn new(kind: CaseKind, bytes: u64) -> Self {
        Self {
            kind,
            label: format!("{} {}", kind.name(), crate::size::human(bytes)),
            bytes,
            samples: Vec::new(),
            random: Vec::new(),
        }
    }

    fn stats(&self, figure: impl Fn(&Sample) -> f64) -> Option<Stats> {
        Stats::of(&self.samples.iter().map(figure).collect::<Vec<_>>())
    }

    /// A figure of each run that depends on the bytes it moved (the case's size, or what a
    /// `random` run read in its time).
    fn stats_of_bytes(&self, figure: impl Fn(&Sample, u64) -> f64) -> Option<Stats> {
        let values: Vec<f64> = self
            .samples
            .iter()
            .enumerate()
            .map(|(i, s)| figure(s, self.random.get(i).map_or(self.bytes, |f| f.bytes)))
            .collect();
        Stats::of(&values)
    }

    /// A figure of each `random` run (`None` for other cases).
    pub fn random_stats(&self, figure: impl Fn(&Figures) -> f64) -> Option<Stats> {
        Stats::of(&self.random.iter().map(figure).collect::<Vec<_>>())
    }

    /// GiB moved per wall-clock second.
    pub fn gib_per_s(&self) -> Option<Stats> {
        self.stats_of_bytes(|s, bytes| bytes as f64 / GIB / s.seconds.max(f64::MIN_POSITIVE))
    }

    /// CPU seconds (user + system) per GiB moved.
    pub fn cpu_s_per_gib(&self) -> Option<Stats> {
        self.stats_of_bytes(|s, bytes| s.cpu_seconds / (bytes as f64 / GIB))
    }

    /// Peak resident set, bytes.
    pub fn peak_rss(&self) -> Option<Stats> {
        self.stats(|s| s.peak_rss as f64)
    }

    /// Peak growth of the resident set over the run, bytes.
    pub fn rss_growth(&self) -> Option<Stats> {
        self.stats(|s| s.rss_growth() as f64)
    }

    /// Peak growth of the resident set per byte moved (1.0: the process grew by the object's size).
    pub fn amplification(&self) -> Option<Stats> {
        self.stats_of_bytes(|s, bytes| s.rss_growth() as f64 / bytes.max(1) as f64)
    }
}

/// Where the cases run.
#[derive(Debug)]
pub struct Target<'a> {
    pub client: &'a Client,
    pub bucket: &'a str,
    /// The embedded server's process, when the benchmark started it.
    pub server_pid: Option<u32>,
    /// A local directory for the downloaded and uploaded file.
    pub files: &'a Path,
    pub options: TransferOptions,
    pub repeat: usize,
}

impl Target<'_> {
    /// `key` in this target's bucket as a URL, for messages: `s3://` or `az://`.
    pub fn url(&self, key: &str) -> String {
        object_url(self.client, self.bucket, key)
    }
}

/// `bucket`/`key` as a URL of `client`'s service (`s3://bucket/key`, or `az://container/blob`
/// against Azure), as the rest of the CLI writes them; an empty key names the bucket.
pub fn object_url(client: &Client, bucket: &str, key: &str) -> String {
    use crate::location::{ObjectUrl, Service};
    let service = if client.is_azure() {
        Service::Azure
    } else {
        Service::S3
    };
    if key.is_empty() {
        return format!("{}{bucket}", service.prefix());
    }
    ObjectUrl {
        service,
        bucket: bucket.to_owned(),
        key: key.to_owned(),
    }
    .to_string()
}

/// Keys written so far, deleted at the end.
#[derive(Debug, Default)]
pub struct Written {
    pub keys: Vec<String>,
}

fn s3_error(action: String) -> impl FnOnce(brisk_client::Error) -> BenchError {
    move |e| BenchError::Cli(crate::exit::CliError::s3(action, e))
}

fn local_error(what: String) -> impl FnOnce(std::io::Error) -> BenchError {
    move |e| BenchError::Cli(crate::exit::CliError::local(what, e))
}

fn measurement_error(e: std::io::Error) -> BenchError {
    BenchError::Measure(e)
}

impl Target<'_> {
    /// Stores `bytes` bytes of the pattern at `key` (not timed).
    pub async fn store(
        &self,
        key: &str,
        bytes: u64,
        written: &mut Written,
    ) -> Result<(), BenchError> {
        let mut reader = PatternReader::new(bytes);
        if !written.keys.iter().any(|k| k == key) {
            written.keys.push(key.to_owned());
        }
        let stored = self
            .client
            .upload_reader(self.bucket, key, &mut reader, self.options.clone())
            .await
            .map_err(s3_error(format!("store {}", self.url(key))))?;
        check_count(&format!("store {key}"), stored.size, bytes)
    }

    /// The loopback ceiling for `bytes` bytes.
    pub async fn loopback(
        &self,
        bytes: u64,
        progress: &dyn Fn(usize),
    ) -> Result<CaseResult, BenchError> {
        let mut result = CaseResult::new(CaseKind::Loopback, bytes);
        for run in 0..self.repeat {
            progress(run);
            let probe = Probe::start(Process::Current).map_err(measurement_error)?;
            let received = loopback::copy(bytes)
                .await
                .map_err(local_error("loopback copy over 127.0.0.1".into()))?;
            let sample = probe.finish().map_err(measurement_error)?;
            check_count("loopback copy", received, bytes)?;
            result.samples.push(sample);
        }
        Ok(result)
    }

    /// `get_bytes` of the object at `key`, `bytes` long.
    pub async fn get(
        &self,
        key: &str,
        bytes: u64,
        progress: &dyn Fn(usize),
    ) -> Result<CaseResult, BenchError> {
        let mut result = CaseResult::new(CaseKind::Get, bytes);
        // Each run after the first reads into the buffer the run before it freed, which the budget
        // keeps for the next read of its size (docs/memory.md), as in a process that reads objects
        // in turn. That memory is the case's: every run's growth counts from the resident set
        // before the first, and the case ends with nothing kept.
        let budget = self.client.memory_budget();
        budget.free_kept();
        let mut case_rss_before = None;
        for run in 0..self.repeat {
            progress(run);
            let probe = Probe::start(Process::Current).map_err(measurement_error)?;
            let body = self
                .client
                .get_bytes(self.bucket, key)
                .await
                .map_err(s3_error(format!("get {}", self.url(key))))?;
            let mut sample = probe.finish().map_err(measurement_error)?;
            sample.rss_before = *case_rss_before.get_or_insert(sample.rss_before);
            let received = body.len() as u64;
            // Freed outside the measured region.
            drop(body);
            check_count("get_bytes", received, bytes)?;
            result.samples.push(sample);
        }
        budget.free_kept();
        Ok(result)
    }

    /// `download` of `key` to `file`, a fresh file each run.
    pub async fn download(
        &self,
        key: &str,
        bytes: u64,
        file: &Path,
        progress: &dyn Fn(usize),
    ) -> Result<CaseResult, BenchError> {
        let mut result = CaseResult::new(CaseKind::Download, bytes);
        for run in 0..self.repeat {
            progress(run);
            remove_if_present(file)?;
            let probe = Probe::start(Process::Current).map_err(measurement_error)?;
            let received = self
                .client
                .download(self.bucket, key, file, self.options.clone())
                .await
                .map_err(s3_error(format!("download {}", self.url(key))))?;
            let sample = probe.finish().map_err(measurement_error)?;
            check_count("download", received, bytes)?;
            result.samples.push(sample);
        }
        Ok(result)
    }

    /// Downloads `key` to `file` once, not timed (the upload's source when `download` is not run).
    pub async fn fetch(&self, key: &str, file: &Path) -> Result<(), BenchError> {
        remove_if_present(file)?;
        self.client
            .download(self.bucket, key, file, self.options.clone())
            .await
            .map_err(s3_error(format!("download {}", self.url(key))))?;
        Ok(())
    }

    /// `upload` of `file` to `key`, the key deleted before each run so that every run creates a new
    /// object. Returns the client's figures and, with the embedded server, the server's.
    pub async fn upload(
        &self,
        key: &str,
        bytes: u64,
        file: &Path,
        progress: &dyn Fn(usize),
    ) -> Result<(CaseResult, Option<CaseResult>), BenchError> {
        let mut client_side = CaseResult::new(CaseKind::Upload, bytes);
        let mut server_side = self
            .server_pid
            .map(|_| CaseResult::new(CaseKind::Server, bytes));
        for run in 0..self.repeat {
            progress(run);
            self.client
                .delete(self.bucket, key)
                .await
                .map_err(s3_error(format!("delete {}", self.url(key))))?;
            let server_probe = match self.server_pid {
                Some(pid) => Some(Probe::start(Process::Pid(pid)).map_err(measurement_error)?),
                None => None,
            };
            let probe = Probe::start(Process::Current).map_err(measurement_error)?;
            let sent = self
                .client
                .upload(self.bucket, key, file, self.options.clone())
                .await
                .map_err(s3_error(format!("upload to {}", self.url(key))))?;
            let sample = probe.finish().map_err(measurement_error)?;
            if let (Some(probe), Some(result)) = (server_probe, server_side.as_mut()) {
                result
                    .samples
                    .push(probe.finish().map_err(measurement_error)?);
            }
            check_count("upload", sent.size, bytes)?;
            client_side.samples.push(sample);
        }
        Ok((client_side, server_side))
    }
}

impl Target<'_> {
    /// Random reads of `options.key` for `options.duration`, `repeat` times. The sample's time and
    /// CPU are the reads' own (from the first request to the end of the duration); its peak RSS is
    /// the process's over the run.
    pub async fn random(
        &self,
        options: &MeasureOptions,
        progress: &dyn Fn(usize),
    ) -> Result<CaseResult, BenchError> {
        let block = options.block_size as u64;
        let mut result = CaseResult::new(CaseKind::Random, block);
        result.label = format!(
            "random {} QD {}",
            crate::size::human(block),
            options.queue_depth
        );
        for run in 0..self.repeat {
            progress(run);
            let probe = Probe::start(Process::Current).map_err(measurement_error)?;
            let figures = super::random_point::measure(self.client, self.bucket, options)
                .await
                .map_err(s3_error(format!(
                    "random reads of {}",
                    self.url(&options.key)
                )))?;
            let mut sample = probe.finish().map_err(measurement_error)?;
            check_random(&figures, block)?;
            sample.seconds = figures.elapsed.as_secs_f64();
            sample.cpu_seconds = figures.cpu_seconds;
            result.samples.push(sample);
            result.random.push(figures);
        }
        Ok(result)
    }
}

/// A random-read run that read nothing, or other than whole blocks, measured nothing.
pub fn check_random(figures: &Figures, block: u64) -> Result<(), BenchError> {
    if figures.reads == 0 {
        return Err(BenchError::NoReads {
            errors: figures.errors,
        });
    }
    check_count("random reads", figures.bytes, figures.reads * block)
}

fn remove_if_present(file: &Path) -> Result<(), BenchError> {
    match std::fs::remove_file(file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(local_error(format!("remove {}", file.display()))(e))
        }
        _ => Ok(()),
    }
}

fn check_count(what: &str, got: u64, expected: u64) -> Result<(), BenchError> {
    if got == expected {
        Ok(())
    } else {
        Err(BenchError::WrongCount {
            what: what.to_owned(),
            got,
            expected,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages name objects with the client's service, as `cp` and `ls` do.
    #[test]
    fn object_urls_name_the_service() {
        let s3 = Client::builder()
            .endpoint("http://127.0.0.1:9")
            .anonymous(true)
            .build()
            .unwrap();
        assert_eq!(object_url(&s3, "b", "k/1"), "s3://b/k/1");
        let azure = Client::builder()
            .endpoint("http://127.0.0.1:9/devstoreaccount1")
            .azure(brisk_client::AzureSettings::new())
            .anonymous(true)
            .build()
            .unwrap();
        assert_eq!(object_url(&azure, "c", "blob"), "az://c/blob");
        assert_eq!(object_url(&azure, "c", ""), "az://c");
    }

    fn sample(seconds: f64, cpu_seconds: f64, rss_before: u64, peak_rss: u64) -> Sample {
        Sample {
            seconds,
            cpu_seconds,
            rss_before,
            peak_rss,
        }
    }

    #[test]
    fn figures_are_per_gib_and_per_byte() {
        let mut r = CaseResult::new(CaseKind::Get, 2 << 30);
        r.samples = vec![
            sample(1.0, 0.5, 100 << 20, (100 << 20) + (2 << 30)),
            sample(2.0, 1.0, 100 << 20, (100 << 20) + (3 << 30)),
            sample(4.0, 2.0, 100 << 20, (100 << 20) + (2 << 30)),
        ];
        assert_eq!(r.label, "get 2.0 GiB");
        let rate = r.gib_per_s().unwrap();
        assert_eq!((rate.median, rate.min, rate.max), (1.0, 0.5, 2.0));
        assert_eq!(r.cpu_s_per_gib().unwrap().median, 0.5);
        let amp = r.amplification().unwrap();
        assert_eq!((amp.median, amp.max), (1.0, 1.5));
        assert_eq!(r.rss_growth().unwrap().median, (2u64 << 30) as f64);
    }

    #[test]
    fn a_case_without_samples_has_no_figures() {
        let r = CaseResult::new(CaseKind::Server, 1 << 20);
        assert!(r.gib_per_s().is_none() && r.amplification().is_none());
    }
}
