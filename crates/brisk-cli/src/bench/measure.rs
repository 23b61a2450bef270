//! Measured regions of code: wall time, CPU time and peak resident memory of one process over a
//! region ([`Probe`], read through [`procfs`](super::procfs)), and medians over repeats.
//!
//! Peak memory is the kernel's own high-water mark (`VmHWM`), not a sample: writing `5` to
//! `/proc/<pid>/clear_refs` resets it to the current resident set (Linux ≥ 4.0), so the peak of one
//! measured region is `VmHWM` read at its end, and its growth is that minus `VmRSS` read at its start.

use std::io;
use std::time::Instant;

use super::procfs::Process;

/// One measured run of a region of code in one process.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Sample {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// User + system CPU seconds of the process over the region.
    pub cpu_seconds: f64,
    /// Resident set at the start, bytes.
    #[serde(rename = "rss_before_bytes")]
    pub rss_before: u64,
    /// Peak resident set during the region, bytes.
    #[serde(rename = "peak_rss_bytes")]
    pub peak_rss: u64,
}

impl Sample {
    /// Peak growth of the resident set over the region, bytes.
    pub fn rss_growth(&self) -> u64 {
        self.peak_rss.saturating_sub(self.rss_before)
    }
}

/// A region being measured in one process: started by [`Probe::start`], ended by [`Probe::finish`].
#[derive(Debug)]
pub struct Probe {
    process: Process,
    started: Instant,
    cpu_before: f64,
    rss_before: u64,
}

impl Probe {
    /// Resets the process's peak and notes its resident set and CPU time.
    pub fn start(process: Process) -> io::Result<Self> {
        process.reset_peak()?;
        Ok(Self {
            process,
            rss_before: process.status_bytes("VmRSS")?,
            cpu_before: process.cpu_seconds()?,
            started: Instant::now(),
        })
    }

    /// The wall time, CPU time and peak resident set since [`Probe::start`].
    pub fn finish(self) -> io::Result<Sample> {
        let seconds = self.started.elapsed().as_secs_f64();
        Ok(Sample {
            seconds,
            cpu_seconds: (self.process.cpu_seconds()? - self.cpu_before).max(0.0),
            rss_before: self.rss_before,
            peak_rss: self.process.status_bytes("VmHWM")?,
        })
    }
}

/// Median, smallest and largest of repeated figures (in JSON: `{"median", "min", "max"}`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    /// The figures' median (the mean of the middle two for an even count), min and max; `None` for
    /// no figures.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Self {
            median,
            min: sorted[0],
            max: sorted[n - 1],
        })
    }
}

/// Bytes per GiB, for rates and CPU per GiB.
pub const GIB: f64 = (1u64 << 30) as f64;

// The tests of `procfs` are here: other crates include that file with `#[path]`, and tests in it
// would run in their test binaries too (brisk-client's batch tests count their own sockets).
#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::procfs::{
        Status, parse_stat_ticks, process_cpu_seconds, sockets_now, threads_now,
    };

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = Status::from(
            "Name:\tbrisk\nVmHWM:\t  20480 kB\nVmRSS:\t   10240 kB\nThreads:\t5\n".to_owned(),
        );
        assert_eq!(status.value("VmHWM"), Some(20480));
        assert_eq!(status.value("VmRSS"), Some(10240));
        assert_eq!(status.value("Threads"), Some(5));
        assert_eq!(status.value("VmSwap"), None);
    }

    #[test]
    fn stat_ticks_skip_a_command_name_with_spaces_and_parentheses() {
        // Fields 14 and 15 are 7 and 5.
        let stat = "1234 (a b) c) S 1 2 3 4 5 6 7 8 9 10 7 5 0 0 20 0 1 0 100";
        assert_eq!(parse_stat_ticks(stat), Some(12));
        assert_eq!(parse_stat_ticks("garbage"), None);
    }

    #[test]
    fn this_process_reads_its_own_memory_and_cpu() {
        let me = Process::Current;
        let rss = me.status_bytes("VmRSS").unwrap();
        assert!(rss > 0);
        let probe = Probe::start(me).unwrap();
        // Touch 32 MiB so the peak must grow by about that much.
        let touched = vec![1u8; 32 << 20];
        std::hint::black_box(&touched);
        let sample = probe.finish().unwrap();
        drop(touched);
        assert!(sample.rss_growth() >= 30 << 20, "{sample:?}");
        assert!(sample.cpu_seconds >= 0.0);
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        let s = Stats::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Stats::of(&[4.0, 1.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert_eq!(Stats::of(&[]), None);
        assert_eq!(Stats::of(&[f64::NAN]), None);
    }

    #[test]
    fn process_figures_are_read() {
        assert!(threads_now() >= 1);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let before = sockets_now();
        let second = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(sockets_now() > before);
        drop((listener, second));
        // Spin until the process's CPU time moves (one 10 ms tick), within 10 s of wall time.
        let start = process_cpu_seconds();
        let begin = Instant::now();
        let mut x = 0u64;
        while process_cpu_seconds() == start && begin.elapsed() < std::time::Duration::from_secs(10)
        {
            for _ in 0..100_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
        }
        assert!(x > 0);
        assert!(process_cpu_seconds() > start);
    }
}
