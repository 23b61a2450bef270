//! Progress bars on stderr: bytes, rate and ETA, one aggregate bar for a recursive copy. Hidden when
//! stderr is not a terminal or with `--quiet`, and drawn only after [`SHOW_AFTER`] so that quick
//! transfers leave no trace.
//!
//! The bar reads a [`TransferProgress`] counter that the client's transfers advance part by part
//! (several transfers at once share it), polled [`POLL`] times a second: a 4 GiB upload moves its
//! bar every 8 MiB part, not once at the end.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use brisk_client::TransferProgress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Transfers shorter than this draw nothing.
pub const SHOW_AFTER: Duration = Duration::from_millis(500);

/// Redraws per second (indicatif's default is 20; 4 is plenty for bytes and costs less).
const REFRESH_HZ: u8 = 4;

/// How often the counter is read into the bar: as often as it is redrawn.
const POLL: Duration = Duration::from_millis(1000 / REFRESH_HZ as u64);

/// A byte counter that may be drawn as a bar.
#[derive(Debug, Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    done: TransferProgress,
}

impl Progress {
    /// A bar for `total` bytes (`None`: unknown, a spinner with bytes and rate), labelled `label`.
    /// Hidden when `quiet` or stderr is not a terminal.
    pub fn new(total: Option<u64>, label: &str, quiet: bool) -> Self {
        let started = Instant::now();
        let done = TransferProgress::new();
        if quiet || !std::io::stderr().is_terminal() {
            return Self {
                bar: None,
                started,
                done,
            };
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
        let progress = Self {
            bar: Some(bar),
            started,
            done,
        };
        // Transfers advance the counter from their own tasks; a poller moves the bar until it is
        // finished (outside a runtime only `add` moves it).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let poller = progress.clone();
            runtime.spawn(async move {
                let mut tick = tokio::time::interval(POLL);
                while poller.bar.as_ref().is_some_and(|bar| !bar.is_finished()) {
                    tick.tick().await;
                    poller.refresh();
                }
            });
        }
        progress
    }

    /// The counter transfers advance (shared: every clone counts into this bar).
    pub fn counter(&self) -> TransferProgress {
        self.done.clone()
    }

    /// Moves the bar to the counter, drawing it once the work has lasted [`SHOW_AFTER`].
    fn refresh(&self) {
        if let Some(bar) = &self.bar {
            if bar.is_finished() {
                return;
            }
            if bar.is_hidden() && self.started.elapsed() >= SHOW_AFTER {
                bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(REFRESH_HZ));
            }
            bar.set_position(self.done.bytes());
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Prints a result line on stdout, with the bar (on stderr) out of the way while it is written.
    pub fn print_result(&self, line: &str) {
        match &self.bar {
            Some(bar) if !bar.is_hidden() => bar.suspend(|| println!("{line}")),
            _ => println!("{line}"),
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
