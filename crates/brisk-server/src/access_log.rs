//! The access log: one line per request on standard error, plain (the default) or JSON
//! (`--log-format json`), or none (`--log-format off`).
//!
//! A line is: time (RFC 3339, UTC, milliseconds), request id (the `x-amz-request-id` the client
//! saw), remote address, method, bucket, key, status, S3 error code (`-` when none), bytes in
//! (request body), bytes out (response body), duration in milliseconds; for a 5xx, the error's
//! message too, so that a server error is never silent.
//!
//! Writing never waits on the reader of standard error: lines are appended to a bounded buffer that
//! one writer thread writes out every 100 ms, and a line that finds the buffer full is counted and
//! dropped (the count is logged with the next write), so a stalled terminal or pipe slows no
//! request.

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, SystemTime};

/// How the access log is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// `2026-11-24T23:10:00.123Z 0000…1 127.0.0.1:53422 GET bucket key 200 - 0 1048576 3.2`
    #[default]
    Plain,
    /// One JSON object per line.
    Json,
    /// No access log.
    Off,
}

/// One request, as the log records it.
#[derive(Debug)]
pub struct AccessRecord<'a> {
    pub time: SystemTime,
    pub request_id: &'a str,
    pub remote: Option<SocketAddr>,
    pub method: &'a str,
    pub bucket: &'a str,
    pub key: &'a str,
    pub status: u16,
    pub error_code: Option<&'a str>,
    /// The error's message, written for 5xx answers only.
    pub error_message: Option<&'a str>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub duration: Duration,
}

impl AccessRecord<'_> {
    /// Appends the record's line (with its newline) in `format` to `out`, allocating nothing
    /// unless `out` must grow or the key needs escaping: the server writes one per request.
    pub fn write_line(&self, format: LogFormat, out: &mut String) {
        let time = Rfc3339Millis(self.time);
        let ms = self.duration.as_secs_f64() * 1e3;
        let remote = Remote(self.remote);
        match format {
            LogFormat::Off => return,
            LogFormat::Plain => {
                let _ = write!(
                    out,
                    "{time} {} {remote} {} {} {} {} {} {} {} {ms:.1}",
                    self.request_id,
                    self.method,
                    or_dash(self.bucket),
                    or_dash(&escape_plain(self.key)),
                    self.status,
                    self.error_code.unwrap_or("-"),
                    self.bytes_in,
                    self.bytes_out,
                );
                if let Some(message) = self.error_message {
                    let _ = write!(out, " {:?}", message);
                }
            }
            LogFormat::Json => {
                out.push('{');
                let _ = write!(out, "\"time\":\"{time}\",\"request_id\":");
                json_string(out, self.request_id);
                let _ = write!(out, ",\"remote\":\"{remote}\",\"method\":");
                json_string(out, self.method);
                out.push_str(",\"bucket\":");
                json_string(out, self.bucket);
                out.push_str(",\"key\":");
                json_string(out, self.key);
                let _ = write!(out, ",\"status\":{},\"error_code\":", self.status);
                match self.error_code {
                    Some(code) => json_string(out, code),
                    None => out.push_str("null"),
                }
                if let Some(message) = self.error_message {
                    out.push_str(",\"error_message\":");
                    json_string(out, message);
                }
                let _ = write!(
                    out,
                    ",\"bytes_in\":{},\"bytes_out\":{},\"duration_ms\":{ms:.3}}}",
                    self.bytes_in, self.bytes_out
                );
            }
        }
        out.push('\n');
    }
}

/// The remote address, or `-` when there is none.
struct Remote(Option<SocketAddr>);

impl std::fmt::Display for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(address) => address.fmt(f),
            None => f.write_str("-"),
        }
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// A key in a plain line: spaces and control characters would split or break the line, so they
/// are percent-encoded (and `%` itself, so the encoding can be undone).
fn escape_plain(key: &str) -> std::borrow::Cow<'_, str> {
    if !key.chars().any(|c| c == ' ' || c == '%' || c.is_control()) {
        return key.into();
    }
    let mut out = String::with_capacity(key.len() + 8);
    for c in key.chars() {
        if c == ' ' || c == '%' || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        } else {
            out.push(c);
        }
    }
    out.into()
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `2026-11-24T23:10:00.123Z`.
struct Rfc3339Millis(SystemTime);

impl std::fmt::Display for Rfc3339Millis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = time::OffsetDateTime::from(self.0);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        )
    }
}

/// The log's writer: lines are appended to one shared buffer and a writer thread hands the
/// buffer to standard error every `FLUSH_INTERVAL` (or as soon as it holds `FLUSH_BYTES`):
/// one `write` per flush instead of one per request, and no thread wake-up per request. A first
/// version sent each line through a channel to the thread (one wake-up and one `write` per line):
/// 32 µs of server CPU per request, a third of a 256 KiB GET's cost (BENCHMARKS-log.md, "Server").
#[derive(Debug)]
pub struct AccessLog {
    format: LogFormat,
    shared: Option<Arc<Pending>>,
}

/// Lines not written yet, and what was dropped.
#[derive(Debug, Default)]
struct Pending {
    lines: Mutex<Vec<u8>>,
    full: Condvar,
    dropped: AtomicU64,
    closed: AtomicBool,
}

/// How often buffered lines are written: 100 ms, so a line is on standard error within that of
/// its request.
const FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Buffered bytes that wake the writer before its interval is up.
const FLUSH_BYTES: usize = 256 * 1024;

/// Buffered bytes at most: lines beyond this (a reader of standard error that stopped) are counted
/// and dropped, never waited for.
const MAX_BUFFERED: usize = 8 << 20;

impl AccessLog {
    /// A log in `format` (no thread for [`LogFormat::Off`]).
    pub fn new(format: LogFormat) -> Self {
        let shared = (format != LogFormat::Off).then(|| {
            let shared = Arc::new(Pending::default());
            let weak = Arc::downgrade(&shared);
            std::thread::Builder::new()
                .name("brisk-access-log".into())
                .spawn(move || write_lines(&weak))
                .expect("the access log's thread starts");
            shared
        });
        Self { format, shared }
    }

    /// Whether lines are written at all.
    pub fn enabled(&self) -> bool {
        self.shared.is_some()
    }

    /// Buffers `record`'s line; drops it (and counts it) when the buffer is full.
    pub fn record(&self, record: &AccessRecord<'_>) {
        let Some(shared) = &self.shared else {
            return;
        };
        thread_local! {
            /// The line being formatted, its buffer kept from one request to the next.
            static LINE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        LINE.with_borrow_mut(|line| {
            line.clear();
            record.write_line(self.format, line);
            let mut lines = shared.lines.lock().unwrap_or_else(|e| e.into_inner());
            if lines.len() + line.len() > MAX_BUFFERED {
                shared.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            lines.extend_from_slice(line.as_bytes());
            if lines.len() >= FLUSH_BYTES {
                shared.full.notify_one();
            }
        });
    }

    /// Writes what is buffered now (at shutdown).
    pub fn flush(&self) {
        if let Some(shared) = &self.shared {
            write_pending(shared, &mut Vec::new());
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
        if let Some(shared) = &self.shared {
            shared.closed.store(true, Ordering::Relaxed);
            shared.full.notify_one();
        }
    }
}

/// The writer thread: flushes every interval until the log is dropped.
fn write_lines(shared: &Weak<Pending>) {
    let mut spare = Vec::new();
    loop {
        let Some(pending) = shared.upgrade() else {
            return;
        };
        if pending.closed.load(Ordering::Relaxed) {
            return;
        }
        {
            let lines = pending.lines.lock().unwrap_or_else(|e| e.into_inner());
            let _ = pending
                .full
                .wait_timeout_while(lines, FLUSH_INTERVAL, |l| {
                    l.len() < FLUSH_BYTES && !pending.closed.load(Ordering::Relaxed)
                })
                .unwrap_or_else(|e| e.into_inner());
        }
        write_pending(&pending, &mut spare);
    }
}

/// Swaps the buffered lines out (the lock is held for the swap only) and writes them.
fn write_pending(pending: &Pending, spare: &mut Vec<u8>) {
    spare.clear();
    {
        let mut lines = pending.lines.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::swap(&mut *lines, spare);
    }
    let lost = pending.dropped.swap(0, Ordering::Relaxed);
    if spare.is_empty() && lost == 0 {
        return;
    }
    let mut out = std::io::stderr().lock();
    if lost > 0 {
        let _ = writeln!(
            out,
            "brisk: {lost} access log lines dropped (standard error was not read fast enough)"
        );
    }
    let _ = out.write_all(spare);
}

#[cfg(test)]
mod tests {
    use super::*;

    impl AccessRecord<'_> {
        /// The record as one line (with its newline) in `format`.
        fn line(&self, format: LogFormat) -> String {
            let mut out = String::new();
            self.write_line(format, &mut out);
            out
        }
    }

    fn record() -> AccessRecord<'static> {
        AccessRecord {
            time: SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_025_800_123),
            request_id: "0000000100000002",
            remote: Some("127.0.0.1:53422".parse().unwrap()),
            method: "GET",
            bucket: "photos",
            key: "2026/a b%.jpg",
            status: 200,
            error_code: None,
            error_message: None,
            bytes_in: 0,
            bytes_out: 1_048_576,
            duration: Duration::from_micros(3_250),
        }
    }

    #[test]
    fn plain_lines_have_one_field_per_column() {
        let line = record().line(LogFormat::Plain);
        assert_eq!(
            line,
            "2025-11-24T23:10:00.123Z 0000000100000002 127.0.0.1:53422 GET photos 2026/a%20b%25.jpg 200 - 0 1048576 3.2\n"
        );
        let mut failed = record();
        failed.status = 500;
        failed.error_code = Some("InternalError");
        failed.error_message = Some("disk \"full\"");
        failed.bucket = "";
        failed.key = "";
        let line = failed.line(LogFormat::Plain);
        assert!(
            line.ends_with(" GET - - 500 InternalError 0 1048576 3.2 \"disk \\\"full\\\"\"\n"),
            "{line}"
        );
    }

    #[test]
    fn json_lines_are_json() {
        let mut r = record();
        r.key = "line\nbreak \"quoted\"";
        r.status = 503;
        r.error_code = Some("SlowDown");
        r.error_message = Some("busy");
        let line = r.line(LogFormat::Json);
        assert_eq!(
            line,
            "{\"time\":\"2025-11-24T23:10:00.123Z\",\"request_id\":\"0000000100000002\",\"remote\":\"127.0.0.1:53422\",\"method\":\"GET\",\"bucket\":\"photos\",\"key\":\"line\\nbreak \\\"quoted\\\"\",\"status\":503,\"error_code\":\"SlowDown\",\"error_message\":\"busy\",\"bytes_in\":0,\"bytes_out\":1048576,\"duration_ms\":3.250}\n"
        );
    }

    #[test]
    fn off_writes_nothing() {
        assert_eq!(record().line(LogFormat::Off), "");
        assert!(!AccessLog::new(LogFormat::Off).enabled());
    }
}
