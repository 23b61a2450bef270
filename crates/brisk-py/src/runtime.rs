//! The tokio runtime the module's calls run on, and the waits that keep Python responsive.
//!
//! # One runtime per process, rebuilt after `fork()`
//!
//! A multi-thread runtime with one worker per core (principle 4: threads = cores) is created on first
//! use. A child created by `fork()` (multiprocessing's default on Linux, DataLoader workers) inherits
//! the runtime's memory but none of its threads, so waiting on it there would hang for ever. Every
//! call therefore checks the process id: in a child the parent's runtime is abandoned (leaked, never
//! dropped: dropping would try to join threads that do not exist in the child) and a new one is
//! built. Clients do the same with their connections (see `client.rs`).
//!
//! # At exit
//!
//! The runtime lives in a static and is never dropped: its workers are not joined, they end with
//! the process. A thread that takes the GIL back (in [`wait`], or a worker delivering an asyncio
//! result) once the interpreter has begun finalising is parked for good by PyO3 rather than ended
//! by CPython. For the runtime's workers that is harmless; a pyarrow pool thread parked inside
//! [`wait`] would hang the exit, since libarrow joins its pools at `exit()`. An `atexit` hook in
//! `python/brisk/__init__.py` therefore waits for pyarrow's pools to go idle before finalisation
//! (docs/python.md, "At exit").
//!
//! # Waiting with the GIL released
//!
//! A call releases the GIL ([`Python::detach`]) and waits for its future in slices of
//! [`TICK`]; between slices it takes the GIL back for a moment to let Python deliver signals
//! (Ctrl-C raises `KeyboardInterrupt` and cancels the call) and to report progress. Work that must
//! not pause while Python runs (transfers with a progress callback) is spawned on the runtime's
//! workers, so a slow callback delays only the next report.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::{Builder, Runtime};

/// How often a waiting call looks at Python's signals and reports progress: 100 ms, short enough
/// for Ctrl-C to feel immediate, long enough that the checks cost nothing measurable.
pub const TICK: Duration = Duration::from_millis(100);

/// How long an interrupted call waits for its aborted task to be dropped: a task is dropped at its
/// next await, which on a healthy runtime is microseconds away.
const ABORT_WAIT: Duration = Duration::from_secs(5);

struct ProcessRuntime {
    pid: u32,
    runtime: Arc<Runtime>,
}

static RUNTIME: Mutex<Option<ProcessRuntime>> = Mutex::new(None);

/// The runtime of this process, built on first use and again in a forked child.
pub fn runtime() -> Arc<Runtime> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    match slot.as_ref() {
        Some(current) if current.pid == pid => Arc::clone(&current.runtime),
        _ => {
            if let Some(inherited) = slot.take() {
                // The parent's runtime: its threads do not exist here. Never drop it.
                std::mem::forget(inherited);
            }
            let runtime = Arc::new(build());
            *slot = Some(ProcessRuntime {
                pid,
                runtime: Arc::clone(&runtime),
            });
            runtime
        }
    }
}

fn build() -> Runtime {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("brisk-io")
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("starting brisk's I/O runtime failed: {e}"))
}

/// Runs `future` to completion on the calling thread with the GIL released, taking the GIL back
/// every [`TICK`] to deliver signals: a `KeyboardInterrupt` (or any exception a signal handler
/// raises) drops the future, which cancels its requests, and is returned as the error.
///
/// For futures that borrow from the caller (a slice of a Python buffer the caller holds).
pub fn wait<F>(py: Python<'_>, future: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = runtime();
    // In the runtime's context until return, so that a future dropped here (interrupted) can
    // spawn what its drop hands off (an abandoned upload's abort).
    let _context = runtime.enter();
    let mut future = std::pin::pin!(future);
    loop {
        let slice = py.detach(|| {
            // The timer is made inside `block_on`: it needs the runtime's context.
            runtime.block_on(async { tokio::time::timeout(TICK, future.as_mut()).await })
        });
        match slice {
            Ok(output) => return Ok(output),
            Err(_elapsed) => py.check_signals()?,
        }
    }
}

/// Spawns `future` on the runtime's workers and waits for it as [`wait`] does, calling `tick` with
/// the GIL held between slices (progress reports). An error from `tick` or a signal aborts the task.
pub fn spawn_wait<F, T>(
    py: Python<'_>,
    future: F,
    mut tick: impl FnMut(Python<'_>) -> PyResult<()>,
) -> PyResult<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let runtime = runtime();
    let mut handle = runtime.spawn(future);
    loop {
        let slice =
            py.detach(|| runtime.block_on(async { tokio::time::timeout(TICK, &mut handle).await }));
        match slice {
            Ok(Ok(output)) => return Ok(output),
            Ok(Err(join_error)) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                    "brisk's I/O task failed: {join_error}"
                )));
            }
            Err(_elapsed) => {
                if let Err(e) = py.check_signals().and_then(|()| tick(py)) {
                    // Wait (briefly) for the task to be dropped, so that what it holds (a
                    // download's temporary file, budget reservations, connections) is released
                    // before the caller sees the error.
                    handle.abort();
                    py.detach(|| {
                        runtime.block_on(async {
                            let _ = tokio::time::timeout(ABORT_WAIT, &mut handle).await;
                        })
                    });
                    return Err(e);
                }
            }
        }
    }
}
