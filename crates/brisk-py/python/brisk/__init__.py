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
the `brisk://` protocol.
"""

from __future__ import annotations

from brisk._brisk import (
    AsyncObjectReader,
    AsyncObjectWriter,
    Buffer,
    Client,
    ListIterator,
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
    "AsyncObjectReader",
    "AsyncObjectWriter",
    "Buffer",
    "Client",
    "ListIterator",
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
