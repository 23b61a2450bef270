//! How many streams a large download runs: all of them, or one when one carries it as fast.
//!
//! A download from a distant store needs several streams: one TCP stream does not fill a real
//! link's bandwidth-delay product, and stores cap what one connection carries. From a server that
//! is the bound itself (one on the same machine or rack whose CPU is the limit), more streams carry
//! no more bytes and cost CPU on both ends: each stream's socket buffers are one more working set
//! for the caches (BENCHMARKS-log.md, "the floor by connections": 0.50 CPU s/GiB with one stream, 0.58
//! with two or four). Nothing known before the download tells the two apart, so a large download
//! measures: its rate and the process's CPU time per byte with all its streams, then with one,
//! which writes its own blocks (no writer thread: the client needs one core, and leaves the other
//! to a server on the same machine). It goes on with one if one carries at least 90 % of the rate
//! for at most 93 % of the CPU per byte ([`StreamMeasure`]), else with all of them, measuring no
//! more; if, while the others end, a window carries less than 60 % of all streams' rate, or if
//! the first eighth of one stream's window shows less than half of it (a link that caps each
//! connection), all streams come back at once. A client that kept less than half a core busy
//! with all streams (a slow link) is not measured further: what one stream could save is small
//! there. From a server on the same machine that costs the client nothing, one stream carries
//! 70–81 % of four: the client is the bound, and four streams keep two threads busy. While one
//! stream runs its rate is watched, window by window; if a window falls below 60 % of the rate it
//! was measured at, the streams come back and the measuring starts over.
//!
//! Streams change only between GETs: a worker ends when it finishes a span and fewer streams are
//! wanted, and the download starts new workers when more are wanted. The measuring windows are in
//! bytes, so that a slow link measures over as many bytes as a fast one.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// While one stream runs alone, a window at less than this share of its measured rate, in
/// percent, brings the other streams back.
const FALL_PERCENT: u32 = 60;

/// One stream that carries less than this share of all streams' rate, in percent, over its early
/// window ([`StreamMeasure::early_window`]) brings the others back at once. Far below what one stream carries next
/// to four from a server on the same machine (70 % and more), and above what it carries over a
/// real link (25–50 %), where the whole window at one stream's rate would cost seconds.
const EARLY_GIVE_UP_PERCENT: u32 = 50;

/// While streams end for one to be measured, an early window (see
/// [`StreamMeasure::early_window`]) at less than this share of all streams' rate, in percent, brings them back: the streams each
/// carried their share, as over a link that caps each connection, and measuring one would cost
/// the time of the others ending one by one. From a server that is the bound, or a client that
/// is, the streams left carry what all did.
const NARROWING_GIVE_UP_PERCENT: u32 = 60;

/// How a large download measures whether one stream carries it as fast as all of them
/// ([`TransferOptions::measure_streams`](crate::TransferOptions::measure_streams)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamMeasure {
    /// Objects smaller than this are downloaded with all their streams, unmeasured (by default
    /// 2 GiB: the measuring takes about 800 MiB with four streams of 64 MiB spans).
    pub min_size: u64,
    /// Bytes landed after all streams start before they are measured, while connections warm up
    /// (16 MiB); one stream left alone, warm already, is measured after a quarter of it, while the
    /// others' last writes end.
    pub settle: u64,
    /// Bytes over which all streams are measured, and each window of one stream's rate while
    /// it runs alone (384 MiB). Windows of 256 and 128 MiB chose one stream from MinIO in only
    /// half the downloads, though it was the cheaper in every whole download.
    pub all_window: u64,
    /// Bytes over which one stream is measured (256 MiB).
    pub one_window: u64,
    /// One stream goes on alone if it carries at least this share of all streams' rate, in
    /// percent (90): below 100 because windows of a few hundred MiB differ by several percent on
    /// a busy machine; far above what one stream of a real link carries next to four (a quarter
    /// to a half), and above what one stream writing its own blocks carried from `brisk serve` on
    /// the same machine, where the client is the bound (70–81 %).
    pub keep_one_percent: u32,
    /// One stream is measured only if the process kept at least this share of a core busy while
    /// all streams ran, in percent (50): below it the CPU one stream could save is small, and on a
    /// slow link a window at one stream's rate costs time (through a proxy giving each connection
    /// a 40 ms round trip, 4 GiB at 745 MiB/s kept a third of a core busy, and measuring one
    /// stream cost 0.2 s).
    pub min_busy_percent: u32,
    /// One stream goes on alone only if its CPU per byte is also at most this share of all
    /// streams', in percent (93). From a server that was the bound, one stream cost 0.37–0.47 CPU
    /// s/GiB against four's 0.43–0.56 in the same downloads; from one that cost the client
    /// nothing, one stream handing its blocks to the writer thread cost the same as four within
    /// 5 % in the windows, and was the slower over whole downloads (BENCHMARKS-log.md).
    pub cheaper_percent: u32,
}

impl StreamMeasure {
    /// The window of the quick looks, an eighth of [`one_window`](Self::one_window) (32 MiB): the
    /// rate while the other streams end, and the start of one stream's measurement.
    fn early_window(&self) -> u64 {
        self.one_window / 8
    }
}

/// Whether `value` is less than `percent` % of `of`.
fn below(value: f64, percent: u32, of: f64) -> bool {
    value * 100.0 < f64::from(percent) * of
}

/// Whether `value` is at most `percent` % of `of`.
fn at_most(value: f64, percent: u32, of: f64) -> bool {
    value * 100.0 <= f64::from(percent) * of
}

impl Default for StreamMeasure {
    fn default() -> Self {
        const MIB: u64 = 1024 * 1024;
        Self {
            min_size: 2048 * MIB,
            settle: 16 * MIB,
            all_window: 384 * MIB,
            one_window: 256 * MIB,
            keep_one_percent: 90,
            min_busy_percent: 50,
            cheaper_percent: 93,
        }
    }
}

/// One download's stream count: how many run, how many are wanted, and the measuring.
pub(crate) struct StreamCount {
    all: usize,
    measure: StreamMeasure,
    /// Bytes landed in the file so far, by every stream.
    landed: AtomicU64,
    /// The landed count at which the phase next needs a look (`u64::MAX`: none), so that a block
    /// landing costs two atomic operations and no lock.
    next_look: AtomicU64,
    inner: Mutex<Inner>,
    more: Notify,
    /// Whether one stream runs alone, measured or chosen: its worker then writes its blocks itself.
    alone: AtomicBool,
}

struct Inner {
    running: usize,
    wanted: usize,
    phase: Phase,
}

/// A point of the download: when, the process's CPU time then, and how many bytes had landed.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: Instant,
    cpu: Duration,
    landed: u64,
}

impl Mark {
    fn now(landed: u64) -> Self {
        Self {
            at: Instant::now(),
            cpu: process_cpu_time(),
            landed,
        }
    }

    /// From this mark to `later`: bytes per second, and CPU seconds per GiB.
    fn to(self, later: Mark) -> Measured {
        let bytes = (later.landed - self.landed).max(1) as f64;
        let seconds = later.at.saturating_duration_since(self.at).as_secs_f64();
        let cpu = later.cpu.saturating_sub(self.cpu).as_secs_f64();
        Measured {
            rate: bytes / seconds.max(1e-9),
            cpu_per_gib: cpu * (1u64 << 30) as f64 / bytes,
        }
    }
}

/// What a measuring window found.
#[derive(Debug, Clone, Copy)]
struct Measured {
    /// Bytes per second.
    rate: f64,
    /// The process's CPU seconds per GiB landed.
    cpu_per_gib: f64,
}

/// The CPU time this process has spent, all threads (`CLOCK_PROCESS_CPUTIME_ID`); zero where it
/// cannot be read, which makes one stream never cheaper.
#[allow(unsafe_code)]
fn process_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through the pointer, which points at `ts`, a
    // `timespec` alive on this frame for the whole call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Not measured (a small object, one stream, measuring off) or measured no more.
    Fixed,
    /// All streams run; measuring starts at the next look.
    AllSettling,
    AllMeasuring {
        from: Mark,
    },
    /// One stream is wanted; the last worker to end moves on. The rate is watched from `from`
    /// while the others end.
    Narrowing {
        all: Measured,
        from: Mark,
    },
    OneSettling {
        all: Measured,
    },
    /// One stream is measured from `from`; `early` until the first eighth of the window has been
    /// looked at.
    OneMeasuring {
        all: Measured,
        from: Mark,
        early: bool,
    },
    /// One stream runs alone at about `rate`; watched window by window.
    One {
        rate: f64,
        from: Mark,
    },
    /// All streams are wanted back; once they run, measuring starts over if `measure_again`.
    Widening {
        measure_again: bool,
    },
}

/// What [`StreamCount`] decided, for the download's log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    One,
    All,
}

impl StreamCount {
    /// A download of `size` bytes that starts `all` streams; measured if `measure` is given and the
    /// object is large enough.
    pub(crate) fn new(size: u64, all: usize, measure: Option<StreamMeasure>) -> Self {
        let measured = measure.filter(|m| all > 1 && size >= m.min_size);
        let measure = measured.unwrap_or_default();
        let (phase, next_look) = match measured {
            Some(m) => (Phase::AllSettling, m.settle),
            None => (Phase::Fixed, u64::MAX),
        };
        Self {
            all,
            measure,
            landed: AtomicU64::new(0),
            next_look: AtomicU64::new(next_look),
            inner: Mutex::new(Inner {
                running: all,
                wanted: all,
                phase,
            }),
            more: Notify::new(),
            alone: AtomicBool::new(false),
        }
    }

    /// Whether one stream runs alone, being measured or chosen.
    pub(crate) fn alone(&self) -> bool {
        self.alone.load(Ordering::Relaxed)
    }

    /// `n` more bytes have landed in the file.
    pub(crate) fn landed(&self, n: u64) {
        self.landed_marked(n, Mark::now);
    }

    /// [`landed`](Self::landed), with the mark of a look that is due made by `mark` (the clocks, or
    /// a test's).
    fn landed_marked(&self, n: u64, mark: impl FnOnce(u64) -> Mark) {
        let landed = self.landed.fetch_add(n, Ordering::Relaxed) + n;
        if landed >= self.next_look.load(Ordering::Relaxed) {
            self.look(mark(landed));
        }
    }

    /// Whether a worker that has finished a span should end instead of taking the next: fewer
    /// streams are wanted than run. A worker told so has ended, as far as the count goes.
    pub(crate) fn retire(&self) -> bool {
        let mut inner = self.lock();
        if inner.running <= inner.wanted {
            return false;
        }
        inner.running -= 1;
        if let Phase::Narrowing { all, .. } = inner.phase
            && inner.running <= 1
        {
            inner.phase = Phase::OneSettling { all };
            self.alone.store(true, Ordering::Relaxed);
            let landed = self.landed.load(Ordering::Relaxed);
            // The stream left is warm already: a quarter of the settling lets the others' last
            // writes end.
            self.look_after(landed + self.measure.settle / 4);
            tracing::trace!(landed, "one download stream left");
        }
        true
    }

    /// A worker ended because no span is left.
    pub(crate) fn ended(&self) {
        let mut inner = self.lock();
        inner.running = inner.running.saturating_sub(1);
    }

    /// How many streams' spans one GET should ask for: all of them while one stream runs alone,
    /// else 1.
    pub(crate) fn span_scale(&self) -> usize {
        match self.lock().phase {
            Phase::One { .. } => self.all,
            _ => 1,
        }
    }

    /// Waits until more streams are wanted than run.
    pub(crate) async fn wants_more(&self) {
        self.more.notified().await;
    }

    /// How many workers to start now, counted as running from here on.
    pub(crate) fn to_start(&self) -> usize {
        let mut inner = self.lock();
        let n = inner.wanted.saturating_sub(inner.running);
        inner.running += n;
        if let Phase::Widening { measure_again } = inner.phase
            && inner.running >= self.all
        {
            if measure_again {
                inner.phase = Phase::AllSettling;
                self.look_after(self.landed.load(Ordering::Relaxed) + self.measure.settle);
            } else {
                inner.phase = Phase::Fixed;
            }
        }
        n
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn look_after(&self, landed: u64) {
        self.next_look.store(landed, Ordering::Relaxed);
    }

    /// The phase's next step, at `now` (a look is due, or was, if another worker took it first).
    fn look(&self, now: Mark) {
        let mut inner = self.lock();
        if now.landed < self.next_look.load(Ordering::Relaxed) {
            return;
        }
        let m = self.measure;
        match inner.phase {
            Phase::AllSettling => {
                inner.phase = Phase::AllMeasuring { from: now };
                self.look_after(now.landed + m.all_window);
            }
            Phase::AllMeasuring { from } => {
                let all = from.to(now);
                // CPU seconds per second: the share of a core the process kept busy.
                let busy = all.cpu_per_gib * all.rate / (1u64 << 30) as f64;
                if below(busy, m.min_busy_percent, 1.0) {
                    tracing::debug!(
                        all_streams = self.all,
                        all_mib_s = all.rate / 1048576.0,
                        busy,
                        "download streams not narrowed: the client is not busy"
                    );
                    inner.phase = Phase::Fixed;
                    self.look_after(u64::MAX);
                } else {
                    inner.phase = Phase::Narrowing { all, from: now };
                    inner.wanted = 1;
                    self.look_after(now.landed + m.early_window());
                }
            }
            Phase::Narrowing { all, from } => {
                // Streams that each carry their share (a link that caps each connection) lose
                // rate as they end: then the rest need not end too before one is measured.
                let window = from.to(now);
                if below(window.rate, NARROWING_GIVE_UP_PERCENT, all.rate) {
                    tracing::debug!(
                        all_streams = self.all,
                        running = inner.running,
                        all_mib_s = all.rate / 1048576.0,
                        window_mib_s = window.rate / 1048576.0,
                        "download streams measured: fewer streams are slower"
                    );
                    self.widen(&mut inner, false);
                } else {
                    inner.phase = Phase::Narrowing { all, from: now };
                    self.look_after(now.landed + m.early_window());
                }
            }
            Phase::OneSettling { all } => {
                inner.phase = Phase::OneMeasuring {
                    all,
                    from: now,
                    early: true,
                };
                self.look_after(now.landed + m.early_window());
            }
            Phase::OneMeasuring {
                all,
                from,
                early: true,
            } => {
                // Over a real link one stream carries a quarter to a half of four: an eighth of
                // the window says so, and the rest is not spent at that rate.
                let one = from.to(now);
                if below(one.rate, EARLY_GIVE_UP_PERCENT, all.rate) {
                    tracing::debug!(
                        all_streams = self.all,
                        all_mib_s = all.rate / 1048576.0,
                        one_mib_s = one.rate / 1048576.0,
                        landed = now.landed,
                        "download streams measured: one stream is far slower"
                    );
                    self.widen(&mut inner, false);
                } else {
                    inner.phase = Phase::OneMeasuring {
                        all,
                        from,
                        early: false,
                    };
                    self.look_after(from.landed + m.one_window);
                }
            }
            Phase::OneMeasuring {
                all,
                from,
                early: false,
            } => {
                let one = from.to(now);
                let decision = if !below(one.rate, m.keep_one_percent, all.rate)
                    && at_most(one.cpu_per_gib, m.cheaper_percent, all.cpu_per_gib)
                {
                    inner.phase = Phase::One {
                        rate: one.rate,
                        from: now,
                    };
                    self.look_after(now.landed + m.all_window);
                    Decision::One
                } else {
                    self.widen(&mut inner, false);
                    Decision::All
                };
                tracing::debug!(
                    all_streams = self.all,
                    all_mib_s = all.rate / 1048576.0,
                    all_cpu_s_per_gib = all.cpu_per_gib,
                    one_mib_s = one.rate / 1048576.0,
                    one_cpu_s_per_gib = one.cpu_per_gib,
                    ?decision,
                    landed = now.landed,
                    "download streams measured"
                );
            }
            Phase::One { rate, from } => {
                let window = from.to(now).rate;
                if below(window, FALL_PERCENT, rate) {
                    tracing::debug!(
                        measured_mib_s = rate / 1048576.0,
                        window_mib_s = window / 1048576.0,
                        "one download stream slowed down: all streams again"
                    );
                    self.widen(&mut inner, true);
                } else {
                    inner.phase = Phase::One { rate, from: now };
                    self.look_after(now.landed + m.all_window);
                }
            }
            Phase::Fixed | Phase::Widening { .. } => self.look_after(u64::MAX),
        }
    }

    fn widen(&self, inner: &mut Inner, measure_again: bool) {
        inner.phase = Phase::Widening { measure_again };
        self.alone.store(false, Ordering::Relaxed);
        inner.wanted = self.all;
        self.look_after(u64::MAX);
        self.more.notify_one();
    }

    #[cfg(test)]
    fn landed_at(&self, n: u64, at: Instant, cpu: Duration) {
        self.landed_marked(n, |landed| Mark { at, cpu, landed });
    }

    #[cfg(test)]
    fn counts(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.running, inner.wanted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    /// A download driven by hand, 1 MiB blocks, each worker finishing a span every `span` MiB it
    /// lands, at what `cost(streams)` says: MiB/s in all, and CPU s per GiB.
    struct Drive {
        count: StreamCount,
        now: Instant,
        cpu: Duration,
        span: u64,
        /// MiB each running worker has landed in its current span.
        workers: Vec<u64>,
        /// (MiB landed, streams running) at each change.
        log: Vec<(u64, usize)>,
    }

    impl Drive {
        fn new(size_mib: u64, all: usize, span: u64) -> Self {
            Self {
                count: StreamCount::new(size_mib * MIB, all, Some(StreamMeasure::default())),
                now: Instant::now(),
                cpu: Duration::ZERO,
                span,
                // Staggered, as workers' spans are once they have run a while.
                workers: (0..all as u64).map(|i| i * span / all as u64).collect(),
                log: Vec::new(),
            }
        }

        /// Lands `mib` MiB, round robin over the running workers.
        fn run(&mut self, mib: u64, cost: impl Fn(usize) -> (f64, f64)) {
            let mut i = 0;
            for _ in 0..mib {
                if self.workers.is_empty() {
                    break;
                }
                let n = self.workers.len();
                let (rate, cpu_per_gib) = cost(n);
                self.now += Duration::from_secs_f64(1.0 / rate);
                self.cpu += Duration::from_secs_f64(cpu_per_gib / 1024.0);
                i %= n;
                self.count.landed_at(MIB, self.now, self.cpu);
                self.workers[i] += 1;
                if self.workers[i] == self.span {
                    if self.count.retire() {
                        self.workers.remove(i);
                    } else {
                        self.workers[i] = 0;
                        i += 1;
                    }
                } else {
                    i += 1;
                }
                for _ in 0..self.count.to_start() {
                    self.workers.push(0);
                }
                let n = self.workers.len();
                if self.log.last().map(|&(_, last)| last) != Some(n) {
                    self.log
                        .push((self.count.landed.load(Ordering::Relaxed) / MIB, n));
                }
            }
        }

        fn streams(&self) -> usize {
            self.workers.len()
        }
    }

    #[test]
    fn one_stream_as_fast_as_four_and_cheaper_goes_on_alone() {
        let mut d = Drive::new(4096, 4, 64);
        d.run(4096, |n| (2000.0, if n == 1 { 0.45 } else { 0.5 }));
        assert_eq!(d.streams(), 1, "{:?}", d.log);
        // Four streams until measured (16 + 384 MiB) and until the others' spans end (each lands
        // a quarter of the bytes): one from then on.
        assert_eq!(d.log.first(), Some(&(1, 4)));
        let (narrowed_at, one) = d.log[d.log.len() - 1];
        assert_eq!(one, 1);
        assert!(narrowed_at <= 400 + 4 * 64, "{:?}", d.log);
        assert_eq!(d.count.counts(), (1, 1));
        assert_eq!(
            d.count.span_scale(),
            4,
            "one stream asks for all streams' spans"
        );
    }

    #[test]
    fn one_stream_a_bit_slower_within_the_noise_but_cheaper_goes_on_alone() {
        let mut d = Drive::new(4096, 4, 64);
        d.run(4096, |n| {
            if n == 1 {
                (1950.0, 0.45)
            } else {
                (2000.0, 0.5)
            }
        });
        assert_eq!(d.streams(), 1, "{:?}", d.log);
    }

    #[test]
    fn one_stream_as_fast_but_dearer_brings_all_back() {
        // A server that costs the client nothing: one stream's worker waits on the writer block
        // by block.
        let mut d = Drive::new(4096, 4, 64);
        d.run(4096, |n| {
            if n == 1 {
                (2000.0, 0.55)
            } else {
                (2000.0, 0.5)
            }
        });
        assert_eq!(d.streams(), 4, "{:?}", d.log);
        assert_eq!(d.count.span_scale(), 1);
    }

    #[test]
    fn a_client_that_is_not_busy_keeps_its_streams_unmeasured() {
        // About 100 MB/s per stream, as a store caps each connection: a fifth of a core.
        let mut d = Drive::new(4096, 4, 64);
        d.run(4096, |n| (95.0 * n as f64, 0.3 + 0.05 * n as f64));
        assert_eq!(d.log, [(1, 4)]);
        assert_eq!(d.count.counts(), (4, 4));
    }

    #[test]
    fn streams_of_a_fast_capped_link_come_back_as_they_slow_and_for_good() {
        // 600 MiB/s per connection, over a core busy with four.
        let mut d = Drive::new(4096, 4, 64);
        d.run(4096, |n| (600.0 * n as f64, 0.5));
        assert_eq!(d.streams(), 4, "{:?}", d.log);
        // Back when two of four were left (half the rate), never down to one, and never
        // narrowed again.
        let counts: Vec<usize> = d.log.iter().map(|&(_, n)| n).collect();
        assert_eq!(counts, [4, 3, 2, 4], "{:?}", d.log);
    }

    #[test]
    fn one_stream_far_slower_brings_all_back_after_an_eighth_of_its_window() {
        // Two or more streams carry what four do; one alone carries 40 %.
        let mut d = Drive::new(4096, 4, 64);
        d.run(4096, |n| if n == 1 { (800.0, 0.5) } else { (2000.0, 0.5) });
        assert_eq!(d.streams(), 4, "{:?}", d.log);
        let ones = d.log.iter().filter(|&&(_, n)| n == 1).count();
        assert_eq!(ones, 1, "{:?}", d.log);
        // Back after the others' spans have ended (400 + up to 4 × 64 MiB), 4 MiB of settling and
        // an eighth of the 256 MiB window: 36 MiB at one stream's rate, not 260.
        let (narrowed_at, _) = *d.log.iter().find(|&&(_, n)| n == 1).unwrap();
        let (back_at, _) = *d.log.iter().rev().find(|&&(_, n)| n == 4).unwrap();
        assert!(narrowed_at <= 400 + 4 * 64, "{:?}", d.log);
        assert_eq!(back_at - narrowed_at, 36, "{:?}", d.log);
    }

    #[test]
    fn streams_that_each_carry_their_share_come_back_before_one_is_left() {
        // Eight streams of a link that caps each at 300 MiB/s, with a core busy.
        let mut d = Drive::new(8192, 8, 64);
        d.run(8192, |n| (300.0 * n as f64, 0.5));
        assert_eq!(d.streams(), 8, "{:?}", d.log);
        let fewest = d.log.iter().map(|&(_, n)| n).min().unwrap();
        assert!(fewest >= 3, "back before one was left: {:?}", d.log);
        assert_eq!(d.count.span_scale(), 1);
    }

    #[test]
    fn one_stream_at_two_thirds_of_the_rate_is_measured_over_the_whole_window() {
        let mut d = Drive::new(4096, 4, 64);
        d.run(4096, |n| if n == 1 { (1300.0, 0.4) } else { (2000.0, 0.5) });
        assert_eq!(d.streams(), 4, "{:?}", d.log);
        let (narrowed_at, _) = *d.log.iter().find(|&&(_, n)| n == 1).unwrap();
        let (back_at, _) = *d.log.iter().rev().find(|&&(_, n)| n == 4).unwrap();
        assert_eq!(back_at - narrowed_at, 4 + 256, "{:?}", d.log);
    }

    #[test]
    fn one_stream_that_slows_down_brings_all_back_and_measures_again() {
        let mut d = Drive::new(8192, 4, 64);
        d.run(1024, |n| (2000.0, if n == 1 { 0.45 } else { 0.5 }));
        assert_eq!(d.streams(), 1, "{:?}", d.log);
        // The server gets busy with others: one stream now carries a quarter, four the same as
        // before.
        d.run(1024, |n| if n == 1 { (500.0, 0.45) } else { (2000.0, 0.5) });
        assert_eq!(d.streams(), 4, "{:?}", d.log);
        d.run(1024, |n| if n == 1 { (500.0, 0.45) } else { (2000.0, 0.5) });
        assert_eq!(d.streams(), 4, "measured again, and four won: {:?}", d.log);
    }

    #[test]
    fn small_objects_one_stream_and_measuring_off_keep_their_streams() {
        for (size, all, measure) in [
            (2047 * MIB, 4, Some(StreamMeasure::default())),
            (4096 * MIB, 1, Some(StreamMeasure::default())),
            (4096 * MIB, 4, None),
        ] {
            let count = StreamCount::new(size, all, measure);
            let now = Instant::now();
            for i in 0..4096 {
                let ms = Duration::from_millis(i);
                count.landed_at(MIB, now + ms, ms / 2);
                assert!(!count.retire());
            }
            assert_eq!(count.to_start(), 0);
            assert_eq!(count.counts(), (all, all));
        }
    }

    #[test]
    fn the_process_cpu_time_grows() {
        let before = process_cpu_time();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_time() > before);
    }
}
