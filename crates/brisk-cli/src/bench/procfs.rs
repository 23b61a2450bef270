//! What the kernel says a process used, read from `/proc`: CPU time (`/proc/<pid>/stat`), resident
//! memory and threads (`/proc/<pid>/status`), open file descriptors and sockets (`/proc/<pid>/fd`).
//!
//! The one `/proc` reader of the workspace's measurements. `brisk bench` uses it (its probes and the
//! random-read points); so do the programs that cannot depend on brisk-cli and include this file
//! with `#[path]`: `bench/s3-load`'s `s3_load` (the server's CPU, RSS, threads and
//! descriptors), brisk-client's `random_read` example and its batch tests (threads and sockets of
//! their own process). It therefore uses nothing but `std`.

use std::io;

/// Clock ticks per second of `/proc/<pid>/stat`'s `utime` and `stime` (`USER_HZ`): fixed at 100 by
/// the kernel's ABI on every architecture Linux exposes to user space, whatever `CONFIG_HZ` is.
pub const USER_HZ: f64 = 100.0;

/// Which process to read: this one or another (a child, a server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    Current,
    Pid(u32),
}

impl Process {
    fn proc_path(self, file: &str) -> String {
        match self {
            Self::Current => format!("/proc/self/{file}"),
            Self::Pid(pid) => format!("/proc/{pid}/{file}"),
        }
    }

    /// Resets the peak resident set (`VmHWM`) to the current one.
    pub fn reset_peak(self) -> io::Result<()> {
        std::fs::write(self.proc_path("clear_refs"), "5")
    }

    /// `/proc/<pid>/status`, read once.
    pub fn status(self) -> io::Result<Status> {
        std::fs::read_to_string(self.proc_path("status")).map(Status::from)
    }

    /// `VmRSS` (`field = "VmRSS"`) or `VmHWM` (`"VmHWM"`) in bytes.
    pub fn status_bytes(self, field: &str) -> io::Result<u64> {
        self.status()?
            .value(field)
            .map(|kib| kib * 1024)
            .ok_or_else(|| io::Error::other(format!("no {field} in {}", self.proc_path("status"))))
    }

    /// User + system CPU seconds of every thread of the process so far.
    pub fn cpu_seconds(self) -> io::Result<f64> {
        let stat = std::fs::read_to_string(self.proc_path("stat"))?;
        parse_stat_ticks(&stat)
            .map(|ticks| ticks as f64 / USER_HZ)
            .ok_or_else(|| io::Error::other(format!("{} is not readable", self.proc_path("stat"))))
    }

    /// The process's open file descriptors (the entries of `/proc/<pid>/fd`).
    pub fn fds(self) -> io::Result<std::fs::ReadDir> {
        std::fs::read_dir(self.proc_path("fd"))
    }

    /// The file descriptors that are sockets (links to `socket:[…]`).
    pub fn sockets(self) -> io::Result<u64> {
        Ok(self
            .fds()?
            .filter_map(|e| e.ok())
            .filter(|e| {
                std::fs::read_link(e.path())
                    .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
            })
            .count() as u64)
    }
}

/// The text of a `/proc/<pid>/status`, whose fields are looked up by name.
#[derive(Debug, Clone)]
pub struct Status(String);

impl From<String> for Status {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl Status {
    /// The number after `field:` (`VmHWM:    1234 kB` is 1234, in KiB; `Threads:  5` is 5).
    pub fn value(&self, field: &str) -> Option<u64> {
        self.0.lines().find_map(|line| {
            let rest = line.strip_prefix(field)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
    }
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line. The command name (field 2) may
/// hold spaces and parentheses, so the fields are counted from the last `)`.
pub fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // after_name starts at field 3 (state); utime is field 14, stime field 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// User + system CPU of this process so far, in seconds (0 where `/proc` is missing).
pub fn process_cpu_seconds() -> f64 {
    Process::Current.cpu_seconds().unwrap_or(0.0)
}

/// Threads of this process now (`Threads:` in `/proc/self/status`; 0 where it is missing).
pub fn threads_now() -> u64 {
    Process::Current
        .status()
        .ok()
        .and_then(|s| s.value("Threads"))
        .unwrap_or(0)
}

/// Sockets this process holds now (0 where `/proc` is missing).
pub fn sockets_now() -> u64 {
    Process::Current.sockets().unwrap_or(0)
}
