"""brisk: S3 from Python with memory known in advance.

```python
import brisk
client = brisk.Client("http://127.0.0.1:9000", max_memory="2GiB")
buf = client.get("bucket", "checkpoint.bin")          # one exact-size buffer, no copy
arr = numpy.frombuffer(buf, dtype=numpy.float32)      # a view of that same memory
blocks = client.get_ranges("bucket", "data.bin", offsets, 262144)  # 64 reads in flight
with client.open_writer("bucket", "out.parquet") as f:  # multipart from pooled parts, no temp file
    pyarrow.parquet.write_table(table, f)
```

`Client` calls release the GIL; `brisk.Buffer` lends Rust memory to Python through the buffer
protocol and counts against the client's memory budget until released; exceptions are in
`brisk.errors` (and re-exported here); `brisk.fsspec.BriskFileSystem` is registered with fsspec as
the `brisk://` protocol. Imported on their own (so that `import brisk` loads neither numpy nor
anything else): `brisk.data` (datasets for data-loader workers) and `brisk.safetensors` (model
weights and checkpoints as numpy views).
"""

from __future__ import annotations

import atexit
import sys
import time

from brisk._brisk import (
    AsyncManyIterator,
    AsyncObjectReader,
    AsyncObjectWriter,
    Buffer,
    Client,
    ListIterator,
    ManyIterator,
    ObjectEntry,
    ObjectMeta,
    ObjectReader,
    ObjectWriter,
    PutResult,
    UploadResult,
    __version__,
    parse_size,
)
from brisk.errors import *  # noqa: F403
from brisk.errors import __all__ as _errors

__all__ = [
    "AsyncManyIterator",
    "AsyncObjectReader",
    "AsyncObjectWriter",
    "Buffer",
    "Client",
    "ListIterator",
    "ManyIterator",
    "ObjectEntry",
    "ObjectMeta",
    "ObjectReader",
    "ObjectWriter",
    "PutResult",
    "UploadResult",
    "__version__",
    "parse_size",
    *_errors,
]

# How long exit waits at most for pyarrow's threads (see `_wait_for_arrow_threads`); 0 does not wait.
EXIT_WAIT = 10.0

# pyarrow's two thread pools and their count of tasks queued or running, by their C++ names:
# arrow::internal::GetCpuThreadPool(), arrow::io::internal::GetIOThreadPool(),
# arrow::internal::ThreadPool::GetNumTasks() (exported by libarrow, which pyarrow.lib links).
_ARROW_POOLS = ("_ZN5arrow8internal16GetCpuThreadPoolEv", "_ZN5arrow2io8internal15GetIOThreadPoolEv")
_ARROW_NUM_TASKS = "_ZN5arrow8internal10ThreadPool11GetNumTasksEv"


def _wait_for_arrow_threads(timeout: float | None = None) -> bool:
    """Called at exit, before the interpreter finalises: waits, with the GIL free, until pyarrow's
    thread pools have no task queued or running (two looks 1 ms apart), at most `timeout` seconds
    (`EXIT_WAIT` by default). True when they are idle (or pyarrow is not loaded, or its pools can
    not be found).

    pyarrow ends a read (`read_table`, a dataset scan, a parquet write) on its pool threads: after
    the call has returned, a pool thread still drops the last references to the Python objects the
    read used (the fsspec file, the buffers it returned, the filesystem handler), and each drop
    takes the GIL. A thread that asks for the GIL once finalisation has begun is ended by CPython
    (`pthread_exit`, up to 3.13) inside that C++ destructor, and the process aborts with
    "terminate called without an active exception", status 134, after its work was done
    (apache/arrow#33975, #34314; any Python file object does it, `io.BytesIO` too). A pool thread
    still inside a brisk call then (a scan's read-ahead) is parked by PyO3 instead, and libarrow,
    shutting its pools down at `exit()`, waits for it for ever. A pool's task count falls only once
    the task's closure, and what it held, is gone."""
    lib = sys.modules.get("pyarrow.lib")
    if lib is None:
        return True
    import ctypes

    try:
        # pyarrow.lib is loaded already: this is its handle, and libarrow is among its dependencies.
        arrow = ctypes.CDLL(lib.__file__)
        num_tasks = arrow[_ARROW_NUM_TASKS]
        getters = [arrow[name] for name in _ARROW_POOLS]
    except (OSError, AttributeError):
        return True  # not found under these names (MSVC mangles them otherwise): nothing to wait on
    num_tasks.argtypes, num_tasks.restype = [ctypes.c_void_p], ctypes.c_int
    for get in getters:
        get.argtypes, get.restype = [], ctypes.c_void_p
    pools = [get() for get in getters]
    deadline = time.monotonic() + (EXIT_WAIT if timeout is None else timeout)
    idle = 0
    while True:
        # ctypes calls and the sleep free the GIL, so a pool thread waiting for it gets it here.
        idle = idle + 1 if not any(num_tasks(pool) for pool in pools) else 0
        if idle == 2:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)




def _wait_for_deliveries(timeout: float | None = None) -> bool:
    """Called at exit, before the interpreter finalises: waits, with the GIL free, until no
    runtime worker is handing an asyncio result to an event loop, at most `timeout` seconds
    (`EXIT_WAIT` by default). True when none is.

    A worker delivers a `*_async` result with the loop's `call_soon_threadsafe`, whose wake-up
    write to the loop's self-pipe releases the GIL; meanwhile the loop can run the result's
    callback and `asyncio.run` return. A worker that asks for the GIL back once finalisation has
    begun is ended by CPython (`pthread_exit`, up to 3.13) inside Rust frames, and the process
    aborts (status 134) after its work was done."""
    from brisk._brisk import _deliveries_in_flight

    deadline = time.monotonic() + (EXIT_WAIT if timeout is None else timeout)
    while _deliveries_in_flight():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)
    return True


atexit.register(_wait_for_arrow_threads)
atexit.register(_wait_for_deliveries)
