//! asyncio variants of the client's calls: the work runs on brisk's runtime, and its result is
//! handed to an `asyncio.Future` of the caller's loop with `call_soon_threadsafe`, so the event
//! loop's thread never blocks on I/O. Cancelling the asyncio future aborts the Rust task (its
//! requests are dropped and their connections closed).
//!
//! Work that calls back into Python (a file object's `readinto` or `write`, a progress callback)
//! does so from the runtime's worker with the GIL taken for the call ([`in_python`]), as the
//! blocking calls do from the caller's thread: the event loop is never asked to run it.

use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use brisk_client::TransferProgress;
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use tokio::task::AbortHandle;

use crate::errors;
use crate::progress::Progress;
use crate::runtime::{TICK, runtime};

/// The error of a task spawned for asyncio: a client error (made the matching exception of
/// `brisk.errors` once the GIL is held) or an exception already.
pub trait TaskError: Send + 'static {
    fn into_py(self, py: Python<'_>) -> PyErr;
}

impl TaskError for brisk_client::Error {
    fn into_py(self, py: Python<'_>) -> PyErr {
        errors::to_py(py, self)
    }
}

impl TaskError for PyErr {
    fn into_py(self, _py: Python<'_>) -> PyErr {
        self
    }
}

/// Spawns `future` and returns an `asyncio.Future` that gets `convert`'s value of its output, or
/// the exception of its error.
pub fn spawn<'py, R, F, C>(py: Python<'py>, future: F, convert: C) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<R, brisk_client::Error>> + Send + 'static,
    R: Send + 'static,
    C: for<'a> FnOnce(Python<'a>, R) -> PyResult<Py<PyAny>> + Send + 'static,
{
    spawn_with(py, future, convert)
}

/// [`spawn`] for a future whose error is another [`TaskError`] (an exception: work that calls
/// Python).
pub fn spawn_with<'py, R, E, F, C>(
    py: Python<'py>,
    future: F,
    convert: C,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<R, E>> + Send + 'static,
    R: Send + 'static,
    E: TaskError,
    C: for<'a> FnOnce(Python<'a>, R) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let py_future = event_loop.call_method0("create_future")?;
    let settle = py.import("brisk._aio")?.getattr("settle")?.unbind();
    let loop_ref = event_loop.unbind();
    let future_ref = py_future.clone().unbind();
    let task = runtime().spawn(async move {
        let output = future.await;
        let _delivering = Delivering::start();
        Python::attach(|py| {
            let (ok, value) = match output.map_err(|e| e.into_py(py)) {
                Ok(r) => match convert(py, r) {
                    Ok(v) => (true, v),
                    Err(e) => (false, e.into_value(py).into_any()),
                },
                Err(e) => (false, e.into_value(py).into_any()),
            };
            // A closed loop has nobody waiting for the result any more.
            let _ = loop_ref
                .bind(py)
                .call_method1("call_soon_threadsafe", (settle, future_ref, ok, value));
        });
    });
    let canceller = AbortOnCancel {
        task: Mutex::new(Some(task.abort_handle())),
    };
    py_future.call_method1("add_done_callback", (canceller,))?;
    Ok(py_future)
}

/// Results being handed to an event loop now (see [`deliveries_in_flight`]).
static DELIVERING: AtomicUsize = AtomicUsize::new(0);

/// Counts one delivery in [`DELIVERING`] while it lives.
struct Delivering;

impl Delivering {
    fn start() -> Self {
        DELIVERING.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for Delivering {
    fn drop(&mut self) {
        DELIVERING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How many results a runtime worker is handing to an event loop right now. `call_soon_threadsafe`
/// wakes the loop by writing to its self-pipe, which releases the GIL: the loop may run the
/// callback, `asyncio.run` return and the interpreter begin to finalise before the worker takes
/// the GIL back, and CPython (up to 3.13) then ends that thread with `pthread_exit` through Rust
/// frames, which aborts the process after its work was done. `brisk`'s exit hook waits for this to
/// reach 0 before finalisation.
#[pyfunction]
#[pyo3(name = "_deliveries_in_flight")]
pub fn deliveries_in_flight() -> usize {
    DELIVERING.load(Ordering::SeqCst)
}

/// A `convert` of [`spawn`] for outputs that are Python values as they are (numbers, strings,
/// lists of them, classes of this module): the output's Python object.
pub fn value<T>(py: Python<'_>, output: T) -> PyResult<Py<PyAny>>
where
    T: for<'py> IntoPyObject<'py>,
{
    output.into_py_any(py)
}

/// An `asyncio.Future` of the running loop that already holds `value`: what an awaitable method
/// returns when it had nothing to wait for (a write that fit in the part being filled).
pub fn ready<'py>(py: Python<'py>, value: Py<PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let future = py
        .import("asyncio")?
        .call_method0("get_running_loop")?
        .call_method0("create_future")?;
    future.call_method1("set_result", (value,))?;
    Ok(future)
}

/// Runs `f` with the GIL from a task on the runtime's workers, telling the runtime that this
/// worker blocks meanwhile (its other tasks move to another worker): Python code (a file object,
/// a callback) may take as long as it likes, and the GIL may be busy.
pub fn in_python<T>(f: impl FnOnce(Python<'_>) -> T) -> T {
    tokio::task::block_in_place(|| Python::attach(f))
}

/// A client error as its exception, from a task on the runtime's workers.
pub fn py_error(error: brisk_client::Error) -> PyErr {
    in_python(|py| errors::to_py(py, error))
}

/// Awaits `job`, reporting the bytes `counter` has counted to `progress` every [`TICK`] while it
/// runs (from the runtime's worker, with the GIL taken for the call). An exception from the
/// callback is the outcome, and drops the job (which aborts its upload, or removes its download's
/// temporary file). The final report is the caller's, who knows the size.
pub async fn report_while<T>(
    job: impl Future<Output = Result<T, brisk_client::Error>>,
    counter: &TransferProgress,
    progress: &mut Progress,
) -> PyResult<T> {
    if !progress.has_callback() {
        return job.await.map_err(py_error);
    }
    let mut job = std::pin::pin!(job);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + TICK, TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            outcome = &mut job => return outcome.map_err(py_error),
            _ = ticks.tick() => in_python(|py| progress.report(py, counter.bytes()))?,
        }
    }
}

/// The done-callback of an asyncio future: aborts its Rust task when the future was cancelled.
#[pyclass(module = "brisk")]
struct AbortOnCancel {
    task: Mutex<Option<AbortHandle>>,
}

#[pymethods]
impl AbortOnCancel {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.is_truthy()?
            && let Some(task) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take()
        {
            task.abort();
        }
        Ok(())
    }
}
