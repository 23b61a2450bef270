//! asyncio variants of the client's calls: the work runs on brisk's runtime, and its result is
//! handed to an `asyncio.Future` of the caller's loop with `call_soon_threadsafe`, so the event
//! loop's thread never blocks on I/O. Cancelling the asyncio future aborts the Rust task (its
//! requests are dropped and their connections closed).

use std::future::Future;
use std::sync::Mutex;

use pyo3::prelude::*;
use tokio::task::AbortHandle;

use crate::errors;
use crate::runtime::runtime;

/// Spawns `future` and returns an `asyncio.Future` that gets `convert`'s value of its output, or
/// the exception of its error.
pub fn spawn<'py, R, F, C>(py: Python<'py>, future: F, convert: C) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<R, brisk_client::Error>> + Send + 'static,
    R: Send + 'static,
    C: for<'a> FnOnce(Python<'a>, R) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let py_future = event_loop.call_method0("create_future")?;
    let settle = py.import("brisk._aio")?.getattr("settle")?.unbind();
    let loop_ref = event_loop.unbind();
    let future_ref = py_future.clone().unbind();
    let task = runtime().spawn(async move {
        let output = future.await;
        Python::attach(|py| {
            let (ok, value) = match output.map_err(|e| errors::to_py(py, e)) {
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
