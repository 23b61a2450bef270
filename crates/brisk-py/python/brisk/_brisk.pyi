"""Types of brisk's native module (`brisk._brisk`); import them from `brisk`."""

from __future__ import annotations

import datetime
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypedDict, overload

from typing_extensions import Buffer as _BufferProtocol

_Path = str | os.PathLike[str]
_Progress = Callable[[int, int], object]

class _Readable(Protocol):
    def read(self, size: int = ..., /) -> bytes: ...

class _Writable(Protocol):
    def write(self, data: Buffer, /) -> object: ...

class _Memory(TypedDict):
    capacity: int
    source: str
    reserved: int
    available: int
    waiting: int
    kept: int
    kept_reuses: int

__version__: str

class Buffer:
    """Bytes of an object held in one exact-size Rust allocation, lent to Python without a copy.

    Supports the buffer protocol (read-only): `memoryview(buf)`, `numpy.frombuffer(buf)`,
    `bytes(buf)` (a copy), `len(buf)`, slicing through a memoryview. Its memory counts against the
    client's memory budget until the object is released (garbage-collected, or `release()`).
    """

    def __len__(self) -> int: ...
    def __bytes__(self) -> bytes: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...
    def __release_buffer__(self, view: memoryview, /) -> None: ...
    def __eq__(self, other: object) -> bool: ...
    def release(self) -> None:
        """Give the memory back to the budget now. Raises `BufferError` while a memoryview (or a
        numpy array) still exports it; a released Buffer has length 0."""
    @property
    def released(self) -> bool: ...

class ObjectMeta:
    """What HEAD says about an object."""

    size: int
    etag: str | None
    last_modified: datetime.datetime | None
    content_type: str | None
    cache_control: str | None
    content_disposition: str | None
    content_encoding: str | None
    content_language: str | None
    expires: str | None
    checksum_crc32c: str | None
    metadata: dict[str, str]

class ObjectEntry:
    """One entry of a listing: an object, or (with a delimiter) a common prefix (`is_prefix`,
    size 0, no etag)."""

    key: str
    size: int
    etag: str | None
    last_modified: datetime.datetime | None
    storage_class: str | None
    is_prefix: bool

class ListIterator(Iterator[ObjectEntry]):
    """Iterates a listing page by page (1,000 keys per request); one page is held at a time."""

    def __iter__(self) -> ListIterator: ...
    def __next__(self) -> ObjectEntry: ...
    @property
    def pages_fetched(self) -> int: ...

class ManyIterator(Iterator[tuple[int, Any, Buffer | BaseException]]):
    """What `Client.iter_many` returns: `(index, key, result)` as each read completes, where
    `index` is the key's position in `keys`, `key` the item as given and `result` a Buffer or the
    key's exception (not raised). Keys are taken from the iterable only as slots free up."""

    def __iter__(self) -> ManyIterator: ...
    def __next__(self) -> tuple[int, Any, Buffer | BaseException]: ...
    def close(self) -> None:
        """Stops the reads in flight and drops the objects not yet taken."""

class AsyncManyIterator:
    """What `Client.iter_many_async` returns: `ManyIterator` for `async for`, each `__anext__`
    completed on brisk's runtime. One `__anext__` at a time (a second while one is in flight is a
    `RuntimeError`); a cancelled one loses no result."""

    def __aiter__(self) -> AsyncManyIterator: ...
    def __anext__(self) -> Awaitable[tuple[int, Any, Buffer | BaseException]]: ...
    def close(self) -> None:
        """Stops the reads in flight, drops the objects not yet taken and takes no more keys."""

class PutResult:
    etag: str | None
    checksum: str
    checksum_algorithm: str

class UploadResult:
    etag: str | None
    size: int
    parts: int

class ObjectReader:
    """An object opened as a binary file for reading (`Client.open_reader`), over one streamed GET.

    Each `read`/`readinto` continues the same response, so sequential reads of any size make one
    request; `readinto` reads from the socket straight into the caller's buffer. `seek` forward by
    at most 1 MiB reads through; any other seek drops the response and the next read starts one
    from there, pinned to the object's ETag. Read from the start to the end without a seek, the
    stored checksum is checked at the end. One thread at a time."""

    def read(self, size: int = -1, /) -> bytes:
        """Up to `size` bytes (all that is left if negative); `b""` at the end."""
    def readall(self) -> bytes:
        """Everything left."""
    def readinto(self, buffer: _BufferProtocol, /) -> int:
        """Fill a writable buffer (fewer bytes only at the end); returns the bytes read."""
    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Move to `offset` from the start (0), the position (1) or the end (2)."""
    def tell(self) -> int: ...
    def readable(self) -> bool: ...
    def seekable(self) -> bool: ...
    def writable(self) -> bool: ...
    def close(self) -> None:
        """Drop the response."""
    @property
    def closed(self) -> bool: ...
    @property
    def size(self) -> int: ...
    @property
    def etag(self) -> str | None: ...
    @property
    def bucket(self) -> str: ...
    @property
    def key(self) -> str: ...
    def __enter__(self) -> ObjectReader: ...
    def __exit__(self, exc_type: object, exc_value: object, traceback: object) -> bool: ...

class ObjectWriter:
    """A binary file opened for writing whose bytes become an object (`Client.open_writer`).

    `write()` copies into a pooled part; full parts are sent while Python goes on writing, so
    memory stays within the client's `parts_in_flight` parts whatever the size, with no temporary
    file. Only `close()` (or leaving a `with` block normally) stores the object: an exception in
    the `with` block, `abort()`, a failed write or garbage collection of an unclosed writer aborts
    the upload, and nothing is stored. One thread at a time."""

    def write(self, data: _BufferProtocol, /) -> int:
        """Append `data` (any C-contiguous buffer); returns its length."""
    def close(self) -> None:
        """Send what is left and store the object (later calls do nothing)."""
    def abort(self) -> None:
        """Give up: nothing is stored."""
    def tell(self) -> int: ...
    def flush(self) -> None:
        """Nothing to do: parts go when full, the rest on `close()`."""
    def writable(self) -> bool: ...
    def readable(self) -> bool: ...
    def seekable(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def result(self) -> UploadResult | None:
        """What `close()` stored, or None before it."""
    @property
    def bucket(self) -> str: ...
    @property
    def key(self) -> str: ...
    def __enter__(self) -> ObjectWriter: ...
    def __exit__(self, exc_type: object, exc_value: object, traceback: object) -> bool: ...

class AsyncObjectReader:
    """`ObjectReader` for asyncio (`await Client.open_reader_async(...)`): the same one streamed
    GET, its reads awaitables that run on brisk's runtime. `seek` and `tell` do no I/O (a forward
    seek of at most 1 MiB is read through by the next read). One operation at a time: a second
    read while one is in flight raises `RuntimeError`. `async with` closes it."""

    def read(self, size: int = -1, /) -> Awaitable[bytes]:
        """Up to `size` bytes (all that is left if negative); `b""` at the end."""
    def readall(self) -> Awaitable[bytes]:
        """Everything left."""
    def readinto(self, buffer: _BufferProtocol, /) -> Awaitable[int]:
        """Fill a writable buffer (held until done; fewer bytes only at the end) straight from the
        socket; the bytes read."""
    def seek(self, offset: int, whence: int = 0, /) -> int:
        """Move to `offset` from the start (0), the position (1) or the end (2); no I/O."""
    def tell(self) -> int: ...
    def readable(self) -> bool: ...
    def seekable(self) -> bool: ...
    def writable(self) -> bool: ...
    def close(self) -> Awaitable[None]:
        """Drop the response (after an operation in flight)."""
    @property
    def closed(self) -> bool: ...
    @property
    def size(self) -> int: ...
    @property
    def etag(self) -> str | None: ...
    @property
    def bucket(self) -> str: ...
    @property
    def key(self) -> str: ...
    def __aenter__(self) -> Awaitable[AsyncObjectReader]: ...
    def __aexit__(self, exc_type: object, exc_value: object, traceback: object) -> Awaitable[None]: ...

class AsyncObjectWriter:
    """`ObjectWriter` for asyncio (`await Client.open_writer_async(...)`): a write that fits in the
    part being filled is copied at once (its awaitable already done); one that fills a part sends
    it on brisk's runtime. Only `close()` (or leaving an `async with` block normally) stores the
    object; an exception in the block, `abort()`, a failed or cancelled write, or garbage
    collection of an unclosed writer stores nothing. Await each write before the next (a second
    one in flight raises `RuntimeError`)."""

    def write(self, data: _BufferProtocol, /) -> Awaitable[int]:
        """Append `data` (any C-contiguous buffer, held until done); its length."""
    def close(self) -> Awaitable[None]:
        """Send what is left and store the object (later calls do nothing)."""
    def abort(self) -> Awaitable[None]:
        """Give up: nothing is stored."""
    def flush(self) -> Awaitable[None]:
        """Nothing to do: parts go when full, the rest on `close()`."""
    def tell(self) -> int: ...
    def writable(self) -> bool: ...
    def readable(self) -> bool: ...
    def seekable(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def result(self) -> UploadResult | None:
        """What `close()` stored, or None before it."""
    @property
    def bucket(self) -> str: ...
    @property
    def key(self) -> str: ...
    def __aenter__(self) -> Awaitable[AsyncObjectWriter]: ...
    def __aexit__(self, exc_type: object, exc_value: object, traceback: object) -> Awaitable[None]: ...

class Client:
    """An S3 client with a memory budget.

    Configuration follows the AWS chain: explicit arguments, then the environment
    (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`,
    `AWS_ENDPOINT_URL[_S3]`, `AWS_PROFILE`, `AWS_CA_BUNDLE`), then `~/.aws/config` and
    `~/.aws/credentials`.

    `max_memory` (bytes, or a string such as "256MiB") is a hard cap on the buffers the client
    allocates: `get` buffers held by Python, `get_ranges` buffers, transfer parts. Without it the
    client shares the process-wide budget: `BRISK_MAX_MEMORY` if set, else half of the memory the
    process may use (its cgroup's limit, else the machine's memory), at least 1 GiB;
    `memory()["source"]` says which. A call that needs more than is free waits until
    Buffers are released (Ctrl-C interrupts the wait); a call that needs more than the whole cap
    fails at once with `MemoryBudgetExceeded`. Freed Buffers' blocks are kept for reuse up to
    `pool_retention` bytes (default: a quarter of `max_memory`; without it, a quarter of the
    default budget up to 256 MiB), so a loop over batches does not fault its memory in again each
    time; kept blocks stay counted in `memory()["reserved"]`.
    Likewise a released `get` Buffer of 1 MiB or more is kept resident for the next `get` (or
    large `get_ranges` range) it exceeds by at most a quarter, which then costs no fresh
    pages: up to `kept_buffers` bytes (default: the whole budget; 0 keeps none; on the shared
    budget when there is no `max_memory`), each for at most 10 s idle, and given up at once when a
    call would otherwise wait; `memory()["kept"]` counts them (inside `reserved`).

    `payload_signing` says how `put` and `upload` protect the bytes they send: "auto" (the default)
    signs the payload's SHA-256 over plain HTTP, where nothing else protects it, and sends it
    unsigned over HTTPS; "signed" always signs; "unsigned" never does. Every upload also carries a
    checksum (CRC32C) the server verifies. Unsigned over plain HTTP, `upload` sends a file's parts
    from the page cache (`sendfile`) with the checksum as an aws-chunked trailer, the least CPU per
    byte (BENCHMARKS-log.md, "Upload"). Any other value is a ValueError.

    Every call releases the GIL while it does I/O; one client may be shared by many threads. After
    `fork()` the child rebuilds the client's runtime and connections on first use.

    `azure=True` (or any `azure_*` argument) makes an Azure Blob Storage client instead: buckets are
    containers, keys are blob names, and every method works the same. Its configuration is the
    Azure way: `azure_connection_string` (or `AZURE_STORAGE_CONNECTION_STRING`), or `azure_account`
    with `azure_key` or `azure_sas_token` (or `AZURE_STORAGE_ACCOUNT`, `AZURE_STORAGE_KEY`,
    `AZURE_STORAGE_SAS_TOKEN`); `endpoint_url` names an emulator's endpoint
    (`http://127.0.0.1:10000/devstoreaccount1`). The S3 settings (`region`, `profile`, keys,
    `addressing_style`) are refused with it.
    """

    def __init__(
        self,
        endpoint_url: str | None = None,
        *,
        region: str | None = None,
        profile: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        anonymous: bool = False,
        max_memory: int | str | None = None,
        max_connections: int | None = None,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        ca_bundle: _Path | None = None,
        addressing_style: str | None = None,
        part_size: int | str | None = None,
        parts_in_flight: int | None = None,
        pool_retention: int | str | None = None,
        kept_buffers: int | str | None = None,
        payload_signing: str | None = None,
        measure_streams: bool = True,
        azure: bool = False,
        azure_connection_string: str | None = None,
        azure_account: str | None = None,
        azure_key: str | None = None,
        azure_sas_token: str | None = None,
    ) -> None: ...
    @property
    def endpoint_url(self) -> str: ...
    @property
    def service(self) -> str:
        """The service the client speaks: "s3" or "azure"."""
    @property
    def region(self) -> str: ...
    def memory(self) -> _Memory:
        """The budget: `capacity`, where it came from (`source`: "max_memory", "BRISK_MAX_MEMORY",
        "cgroup memory.max", "cgroup memory.limit_in_bytes", "MemTotal", or "default" when the
        machine's memory could not be read), `reserved`, `available` bytes, `waiting` calls, `kept`
        bytes of released Buffers kept for reuse (part of `reserved`) and `kept_reuses` (Buffers
        made from them)."""
    def metrics(self) -> dict[str, int]:
        """Counters since the client was built: `requests`, `connections_opened`,
        `connections_reused`, `retries`, `resumed_reads`, `file_bytes_read` (file bytes an upload
        read into memory) and `file_bytes_sent` (file bytes the kernel sent from the page cache)."""

    # --- reads ---
    def get(self, bucket: str, key: str) -> Buffer:
        """The whole object in one buffer of exactly its size (no copy into `bytes`)."""
    def get_into(
        self,
        bucket: str,
        key: str,
        buffer: _BufferProtocol,
        *,
        offset: int = 0,
        length: int | None = None,
    ) -> int:
        """Read into a writable C-contiguous buffer the caller owns; returns the bytes read.

        With `offset=0` and no `length`: the whole object (it must fit: `ValueError` before any
        request if the buffer is read-only or smaller than the object). With an `offset` or a
        `length`: the bytes `[offset, offset + (length or len(buffer)))`, fewer at the end of the
        object; an offset at or past the end is `InvalidRange`. An object larger than the buffer is
        `BufferTooSmall` (a ValueError) once the response's head arrives, before any byte is
        written."""
    @overload
    def get_range(self, bucket: str, key: str, offset: int, length: int) -> Buffer: ...
    @overload
    def get_range(self, bucket: str, key: str, offset: int, length: int, *, wait: bool) -> Buffer | None: ...
    def get_range(self, bucket: str, key: str, offset: int, length: int, *, wait: bool = True) -> Buffer | None:
        """`length` bytes from `offset` (fewer at the end) in one exact buffer. With `wait=False`,
        None (and no request) when the memory budget would make the call wait: for a reader whose
        consumer may hold every Buffer it was given, which must not wait for them."""
    def get_ranges(
        self,
        bucket: str,
        key: str | Sequence[str],
        offsets: Sequence[int],
        lengths: Sequence[int] | int,
        *,
        into: _BufferProtocol | None = None,
        queue_depth: int = 64,
        connections: int | None = None,
    ) -> list[Buffer] | int:
        """Many ranges at once, `queue_depth` in flight over keep-alive connections (one per range
        in flight up to 64 by default, pipelined past that).

        Without `into`: one Buffer per range, in the order given. With `into` (a writable buffer of
        at least `sum(lengths)` bytes): the ranges are written one after another in the order given,
        straight from the socket, and the total written is returned. Ranges up to 8 MiB land in
        pooled blocks, larger ones in exact buffers; a batch whose Buffers could never fit the memory
        budget together fails at once. `key` may be one key for all
        ranges or one per range. Ranges that fail raise `RangeErrors` after the whole batch has run:
        its `errors` maps each failing index to its exception, and its `results` holds what did
        arrive (Buffers, or byte counts with `into`; None where the range failed)."""
    @overload
    def get_many(
        self,
        bucket: str | None,
        keys: Iterable[str | tuple[str, str]],
        *,
        queue_depth: int = 64,
        into: None = None,
    ) -> list[Buffer | BaseException]: ...
    @overload
    def get_many(
        self,
        bucket: str | None,
        keys: Iterable[str | tuple[str, str]],
        *,
        queue_depth: int = 64,
        into: _BufferProtocol,
    ) -> list[tuple[int, int] | BaseException]: ...
    def get_many(
        self,
        bucket: str | None,
        keys: Iterable[str | tuple[str, str]],
        *,
        queue_depth: int = 64,
        into: _BufferProtocol | None = None,
    ) -> list[Buffer | BaseException] | list[tuple[int, int] | BaseException]:
        """Whole objects of many keys, each in a Buffer of exactly its size, at most `queue_depth`
        at a time on as many keep-alive connections. `keys` are str (keys of `bucket`) or
        `(bucket, key)` pairs (then `bucket` may be None). Returns a list in the order of `keys`:
        each item a Buffer, or the exception for that key (`NoSuchKey`, `MemoryBudgetExceeded` for
        an object larger than the whole budget, ...), returned, not raised. The list holds every
        object: an object that would take them past the budget's capacity is
        `MemoryBudgetExceeded` in its place (not a wait for memory only the list would free); for
        more than the budget holds, use `iter_many`. A key given twice is read once: both places
        hold the same Buffer (or the same exception; with `into`, the same region).

        With `into` (a writable C-contiguous buffer), the objects are read straight from the
        socket into it, back to back in the order their responses arrive, and each item is the
        `(offset, length)` of its object's bytes in `into` instead of a Buffer; nothing is taken
        from the memory budget. An object larger than what is left of `into` is `BufferTooSmall`
        in its place; a read that fails after its region was given leaves those bytes unwritten."""
    def iter_many(
        self,
        bucket: str | None,
        keys: Iterable[str | tuple[str, str]],
        *,
        queue_depth: int = 64,
    ) -> ManyIterator:
        """`get_many` as an iterator of `(index, key, Buffer or exception)` in the order reads
        complete. Keys are taken from `keys` (any iterable, a generator of millions of keys) only
        as slots free up: at most `queue_depth` objects are in flight or finished and not yet
        yielded, whatever the length of `keys`. Each key is read as given: one given twice is
        read twice."""
    def put_many(
        self,
        bucket: str | None,
        items: Mapping[str, _BufferProtocol | os.PathLike[str]]
        | Iterable[
            tuple[str, _BufferProtocol | os.PathLike[str]]
            | tuple[str, str, _BufferProtocol | os.PathLike[str]]
        ],
        *,
        queue_depth: int = 64,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> list[UploadResult | BaseException]:
        """Many objects stored, at most `queue_depth` at a time on as many keep-alive connections.
        `items` is a mapping `{key: data}` or an iterable of `(key, data)` or `(bucket, key, data)`
        (then `bucket` may be None); `data` is a buffer (bytes, memoryview, numpy array, Buffer;
        sent straight from its memory in one PUT) or an `os.PathLike` (a file, uploaded as `upload`
        does: multipart past 8 MiB, from pooled blocks on the budget). A str is refused: encode
        it, or pass a `pathlib.Path`.

        Returns a list in the order of `items`: each an UploadResult, or the exception for that
        item (`PreconditionFailed` under `if_none_match="*"`, `NoSuchBucket`, an unreadable file,
        ...), returned, not raised. `content_type`, `metadata`, `headers` and `if_none_match`
        apply to every object.

        A sized `items` (list, tuple, dict) is checked whole first: a malformed item raises
        `TypeError`/`ValueError` naming its index with nothing sent. Any other iterable (a
        generator) is taken an item at a time as slots free up, so at most `queue_depth` bodies
        are held however many it yields; a malformed item there stops the taking, the writes
        started finish, and the error is raised naming the item. Two items for one key are
        written in their order (the later starts when the earlier has finished): the last wins."""
    def head(self, bucket: str, key: str) -> ObjectMeta: ...
    def download(
        self,
        bucket: str,
        key: str,
        path: _Path,
        *,
        progress: _Progress | None = None,
        size: int | None = None,
    ) -> int:
        """Download to a file with parallel ranged GETs into pooled blocks (bounded memory); the
        file appears complete or not at all. `progress(bytes_done, total)` is called from the calling
        thread at most every 0.1 s and once at the end; the transfer does not wait for it. `size`,
        when known (from `list`), makes an object of at most one part (8 MiB) a single GET with no
        HEAD first, and is the progress total. Returns the size."""
    def upload(
        self,
        path: _Path,
        bucket: str,
        key: str,
        *,
        progress: _Progress | None = None,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> UploadResult:
        """Upload a file (one PUT, or multipart from pooled blocks with bounded memory), stored
        with `content_type`, user `metadata` (x-amz-meta-*) and `headers` (Cache-Control,
        Content-Disposition, Content-Encoding, Content-Language, Expires) if given.
        `if_none_match="*"` stores it only if the key is free (checked on the PUT, or on the
        multipart upload's completion): `PreconditionFailed` otherwise, with the upload aborted
        and the existing object untouched. No other value is accepted."""
    def upload_fileobj(
        self,
        fileobj: _Readable,
        bucket: str,
        key: str,
        *,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        progress: Callable[[int, int | None], object] | None = None,
    ) -> UploadResult:
        """Upload everything a binary file object yields, to its end: `readinto()` reads straight
        into pooled parts (`read()` if it has no `readinto`), full parts are sent while the next is
        read. One PUT if it fits in a part, else multipart; a failure aborts it, nothing is stored.
        `if_none_match="*"` stores it only if the key is free when it completes (as `upload`).
        `progress(bytes_sent, total)` at most every 0.1 s: `total` is None until the last call."""
    def download_fileobj(
        self, bucket: str, key: str, fileobj: _Writable, *, progress: _Progress | None = None
    ) -> int:
        """Write the object to a binary file object (anything with `write()`) front to back, in
        `Buffer`s of a part each, read by parallel ranged GETs ahead of Python and handed over
        in order (a HEAD first, its ETag pinning the ranges); returns its size. `progress(bytes_written,
        size)` at most every 0.1 s and once at the end."""
    def open_reader(self, bucket: str, key: str, *, offset: int = 0) -> ObjectReader:
        """The object opened as a binary file for reading over one streamed GET from `offset`."""
    def open_writer(
        self,
        bucket: str,
        key: str,
        *,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ObjectWriter:
        """A binary file opened for writing whose bytes become `bucket`/`key` on `close()`.
        With `if_none_match="*"`, `close()` stores them only if the key is free then
        (`PreconditionFailed` otherwise, and nothing is stored)."""

    # --- writes and the rest ---
    def put(
        self,
        bucket: str,
        key: str,
        data: _BufferProtocol,
        *,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> PutResult:
        """Store `data` (any C-contiguous buffer: bytes, bytearray, memoryview, numpy array,
        Buffer) in one PUT, written from where it is (no copy)."""
    def delete(self, bucket: str, key: str) -> None: ...
    def delete_many(self, bucket: str, keys: Sequence[str]) -> list[tuple[str, str]]:
        """Delete keys in batches of 1,000; returns `(key, error code)` for keys not deleted."""
    def copy(
        self, src_bucket: str, src_key: str, dst_bucket: str, dst_key: str
    ) -> str | None:
        """Server-side copy (multipart copy above 5 GiB); returns the new ETag."""
    def list(
        self,
        bucket: str,
        prefix: str | None = None,
        *,
        delimiter: str | None = None,
        start_after: str | None = None,
        page_size: int | None = None,
        limit: int | None = None,
    ) -> ListIterator:
        """The entries under `prefix` in key order (with `delimiter`, the common prefixes among
        them), fetched a page at a time as iteration reaches them: pages of `page_size` keys (the
        service's most, 1,000, by default). With `limit`, at most that many entries, asked for in
        as few pages as that takes (pages of at most `limit` keys)."""
    def presign(
        self, bucket: str, key: str, *, method: str = "GET", expires_in: float = 3600
    ) -> str: ...
    def create_bucket(self, bucket: str) -> None: ...
    def delete_bucket(self, bucket: str) -> None: ...
    def list_buckets(self) -> list[str]: ...

    # --- asyncio: the same calls as coroutines (they run on brisk's runtime, not the loop) ---
    def get_async(self, bucket: str, key: str) -> Awaitable[Buffer]: ...
    def get_into_async(
        self,
        bucket: str,
        key: str,
        buffer: _BufferProtocol,
        *,
        offset: int = 0,
        length: int | None = None,
    ) -> Awaitable[int]: ...
    @overload
    def get_range_async(self, bucket: str, key: str, offset: int, length: int) -> Awaitable[Buffer]: ...
    @overload
    def get_range_async(
        self, bucket: str, key: str, offset: int, length: int, *, wait: bool
    ) -> Awaitable[Buffer | None]: ...
    def get_range_async(
        self, bucket: str, key: str, offset: int, length: int, *, wait: bool = True
    ) -> Awaitable[Buffer | None]:
        """`get_range`; with `wait=False`, None (and no request) when the memory budget would make
        the read wait."""
    def get_ranges_async(
        self,
        bucket: str,
        key: str | Sequence[str],
        offsets: Sequence[int],
        lengths: Sequence[int] | int,
        *,
        into: _BufferProtocol | None = None,
        queue_depth: int = 64,
        connections: int | None = None,
    ) -> Awaitable[list[Buffer] | int]: ...
    def get_many_async(
        self,
        bucket: str | None,
        keys: Iterable[str | tuple[str, str]],
        *,
        queue_depth: int = 64,
        into: _BufferProtocol | None = None,
    ) -> Awaitable[list[Buffer | BaseException] | list[tuple[int, int] | BaseException]]: ...
    def iter_many_async(
        self,
        bucket: str | None,
        keys: Iterable[str | tuple[str, str]],
        *,
        queue_depth: int = 64,
    ) -> AsyncManyIterator:
        """`iter_many` for `async for`: keys from a plain iterable, taken on the loop's thread as
        slots free up; the reads run on brisk's runtime and the loop never waits on I/O."""
    def put_many_async(
        self,
        bucket: str | None,
        items: Mapping[str, _BufferProtocol | os.PathLike[str]]
        | Iterable[
            tuple[str, _BufferProtocol | os.PathLike[str]]
            | tuple[str, str, _BufferProtocol | os.PathLike[str]]
        ],
        *,
        queue_depth: int = 64,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Awaitable[list[UploadResult | BaseException]]:
        """`put_many` as a coroutine: `items` (any iterable) is checked whole when it is called,
        and its buffers are held until it completes."""
    def head_async(self, bucket: str, key: str) -> Awaitable[ObjectMeta]: ...
    def put_async(
        self,
        bucket: str,
        key: str,
        data: _BufferProtocol,
        *,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Awaitable[PutResult]: ...
    def delete_async(self, bucket: str, key: str) -> Awaitable[None]: ...
    def copy_async(
        self, src_bucket: str, src_key: str, dst_bucket: str, dst_key: str
    ) -> Awaitable[str | None]: ...
    def list_async(
        self,
        bucket: str,
        prefix: str | None = None,
        *,
        delimiter: str | None = None,
        start_after: str | None = None,
        page_size: int | None = None,
        limit: int | None = None,
    ) -> Awaitable[list[ObjectEntry]]:
        """`list`: the whole listing (or its first `limit` entries) as a list, its pages of
        `page_size` keys fetched one after another."""
    def download_async(
        self,
        bucket: str,
        key: str,
        path: _Path,
        *,
        progress: _Progress | None = None,
        size: int | None = None,
    ) -> Awaitable[int]:
        """`download`. `progress(bytes_done, total)` is called as `download` calls it (at most every
        0.1 s and once at the end; an exception from it stops the download and is raised), from
        the task on brisk's runtime with the GIL taken for the call, never on the event loop."""
    def upload_async(
        self,
        path: _Path,
        bucket: str,
        key: str,
        *,
        progress: _Progress | None = None,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Awaitable[UploadResult]:
        """`upload`. `progress(bytes_sent, total)` is called as `upload` calls it (at most every
        0.1 s and once at the end; an exception from it aborts the upload and is raised), from the
        task on brisk's runtime with the GIL taken for the call, never on the event loop."""
    def upload_fileobj_async(
        self,
        fileobj: _Readable,
        bucket: str,
        key: str,
        *,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        progress: Callable[[int, int | None], object] | None = None,
    ) -> Awaitable[UploadResult]:
        """`upload_fileobj`: the file object's `readinto` (or `read`) and `progress` are called
        from brisk's runtime with the GIL, not from the event loop; leave the file object alone
        until it completes."""
    def download_fileobj_async(
        self, bucket: str, key: str, fileobj: _Writable, *, progress: _Progress | None = None
    ) -> Awaitable[int]:
        """`download_fileobj`: the file object's `write` and `progress` are called from brisk's
        runtime with the GIL, in order, not from the event loop."""
    def open_reader_async(self, bucket: str, key: str, *, offset: int = 0) -> Awaitable[AsyncObjectReader]:
        """`open_reader`: an `AsyncObjectReader` once the response head has arrived."""
    def open_writer_async(
        self,
        bucket: str,
        key: str,
        *,
        content_type: str | None = None,
        if_none_match: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Awaitable[AsyncObjectWriter]:
        """`open_writer`: an `AsyncObjectWriter` (nothing is sent until a part is full)."""
    def delete_many_async(self, bucket: str, keys: Sequence[str]) -> Awaitable[list[tuple[str, str]]]: ...
    def create_bucket_async(self, bucket: str) -> Awaitable[None]: ...
    def delete_bucket_async(self, bucket: str) -> Awaitable[None]: ...
    def list_buckets_async(self) -> Awaitable[list[str]]: ...

def parse_size(text: int | str) -> int:
    """Bytes from an int or a size such as "64MiB", "1.5GiB", "100kB"."""
