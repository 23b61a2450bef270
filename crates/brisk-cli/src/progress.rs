//! Progress bars on stderr: bytes, rate and ETA, one aggregate bar for a recursive copy. Hidden when
//! stderr is not a terminal or with `--quiet`, and drawn only after [`SHOW_AFTER`] so that quick
//! transfers leave no trace.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Transfers shorter than this draw nothing.
pub const SHOW_AFTER: Duration = Duration::from_millis(500);

/// Redraws per second (indicatif's default is 20; 4 is plenty for bytes and costs less).
const REFRESH_HZ: u8 = 4;

/// A byte counter that may be drawn as a bar.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    /// A bar for `total` bytes (`None`: unknown, a spinner with bytes and rate), labelled `label`.
    /// Hidden when `quiet` or stderr is not a terminal.
    pub fn new(total: Option<u64>, label: &str, quiet: bool) -> Self {
        let started = Instant::now();
        if quiet || !std::io::stderr().is_terminal() {
            return Self { bar: None, started };
        }
        let bar = match total {
            Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::hidden()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()),
        };
        let template = if total.is_some() {
            "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}"
        } else {
            "{msg} {spinner} {bytes} {binary_bytes_per_sec}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(label.to_owned());
        Self {
            bar: Some(bar),
            started,
        }
    }

    /// Counts `n` more bytes done.
    pub fn add(&self, n: u64) {
        if let Some(bar) = &self.bar {
            if bar.is_hidden() && self.started.elapsed() >= SHOW_AFTER {
                bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(REFRESH_HZ));
            }
            bar.inc(n);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Prints a line above the bar (or to stderr when there is none).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) if !bar.is_hidden() => bar.println(line),
            _ => eprintln!("{line}"),
        }
    }
}
