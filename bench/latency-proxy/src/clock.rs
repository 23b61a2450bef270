//! Sleeps with sub-millisecond precision. Tokio's timer rounds every deadline up to the next
//! millisecond tick, which would turn a 0.25 ms half round trip into 1 ms or more; this one thread
//! holds the deadlines in a heap and waits on a condition variable with the exact timeout (a futex
//! wait on a high-resolution timer, with the thread's timer slack set to the least).

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

use tokio::sync::oneshot;

struct Entry {
    at: Instant,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    // Reversed: the heap's top is the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Default)]
struct Timers {
    heap: BinaryHeap<Entry>,
    seq: u64,
}

struct Clock {
    timers: Mutex<Timers>,
    changed: Condvar,
}

fn clock() -> &'static Clock {
    static CLOCK: OnceLock<&'static Clock> = OnceLock::new();
    CLOCK.get_or_init(|| {
        let clock: &'static Clock = Box::leak(Box::new(Clock {
            timers: Mutex::new(Timers::default()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("latency-clock".into())
            .spawn(move || run(clock))
            .expect("the clock thread starts");
        clock
    })
}

fn run(clock: &Clock) {
    // The kernel may wake a sleeper up to its timer slack late (50 µs by default), and every
    // exchange sleeps twice (the request's way, the answer's gate): at RTT = L = 0.5 ms that is up
    // to a tenth more than the model. A nanosecond asks for none; the clock thread sleeps little.
    // SAFETY: PR_SET_TIMERSLACK takes a number, no pointers; it applies to this thread only.
    #[allow(unsafe_code)]
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    let mut timers = clock.timers.lock().expect("clock lock");
    loop {
        let now = Instant::now();
        while timers.heap.peek().is_some_and(|e| e.at <= now) {
            let entry = timers.heap.pop().expect("peeked");
            let _ = entry.wake.send(());
        }
        timers = match timers.heap.peek().map(|e| e.at - now) {
            Some(wait) => {
                clock
                    .changed
                    .wait_timeout(timers, wait)
                    .expect("clock lock")
                    .0
            }
            None => clock.changed.wait(timers).expect("clock lock"),
        };
    }
}

/// Returns at `at` (at once if it has passed).
pub async fn sleep_until(at: Instant) {
    if at <= Instant::now() {
        return;
    }
    let clock = clock();
    let (wake, woken) = oneshot::channel();
    {
        let mut timers = clock.timers.lock().expect("clock lock");
        let earliest = timers.heap.peek().is_none_or(|e| at < e.at);
        timers.seq += 1;
        let seq = timers.seq;
        timers.heap.push(Entry { at, seq, wake });
        if earliest {
            clock.changed.notify_one();
        }
    }
    let _ = woken.await;
}
