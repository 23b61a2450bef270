"""`brisk://bucket/key` for fsspec (and so pandas, pyarrow, dask): brisk's client behind fsspec's
`AbstractFileSystem`.

What differs from s3fs, and why:

- `cat_ranges` is one `Client.get_ranges` batch per bucket (ranges in flight over pipelined
  keep-alive connections), not one request after another.
- A file opened for reading reads ahead at most `block_size` bytes (default 1 MiB; s3fs reads 50 MiB
  ahead of a random read), and `readinto` of at least a block goes from the socket straight into the
  caller's buffer (`Client.get_into`), with no intermediate `bytes`. Once two fetches follow one
  another, the file reads on from one streamed GET (`Client.open_reader`) instead of a request per
  block, until a read elsewhere drops it: a CSV read front to back is two requests.
- A file opened for writing is a `brisk.ObjectWriter`: each `write` is copied into a pooled part and
  full parts are sent while Python goes on writing (s3fs buffers 5 MiB in a `BytesIO` and sends it
  from Python), so memory stays within the client's parts in flight whatever the size, with no
  temporary file. An exception in the `with` block that wrote the file aborts the upload: nothing is
  stored, where fsspec's base class would store what was written up to the exception.
"""

from __future__ import annotations

import mimetypes
import os
from typing import Any

from fsspec.callbacks import NoOpCallback
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

import brisk

DEFAULT_BLOCK_SIZE = 1024 * 1024


def _split(path: str) -> tuple[str, str]:
    path = path.strip("/")
    bucket, _, key = path.partition("/")
    return bucket, key


def _progress_of(callback):
    """brisk's `progress(done, total)` for an fsspec `Callback`, or None for none (fsspec passes a
    no-op one by default: asking for progress would cost a download a HEAD for its total)."""
    if callback is None or isinstance(callback, NoOpCallback):
        return None

    def progress(done: int, total: int) -> None:
        callback.set_size(total)
        callback.absolute_update(done)

    return progress


class BriskFileSystem(AbstractFileSystem):
    """fsspec filesystem over `brisk.Client`. Credentials and endpoint come from the arguments, else
    the AWS environment and profiles (as `brisk.Client` reads them)."""

    protocol = ("brisk",)
    root_marker = ""

    def __init__(
        self,
        endpoint_url: str | None = None,
        *,
        key: str | None = None,
        secret: str | None = None,
        token: str | None = None,
        region: str | None = None,
        max_memory: int | str | None = None,
        block_size: int = DEFAULT_BLOCK_SIZE,
        client_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.client = brisk.Client(
            endpoint_url,
            access_key_id=key,
            secret_access_key=secret,
            session_token=token,
            region=region,
            max_memory=max_memory,
            **(client_kwargs or {}),
        )
        self.block_size = block_size

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith("brisk://"):
            path = path[len("brisk://") :]
        return path.rstrip("/")

    # ----- reads -----------------------------------------------------------------------------

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        """The object's bytes, or `[start, end)` of them (negative values count from the end)."""
        bucket, key = _split(self._strip_protocol(path))
        if start is None and end is None:
            return bytes(self.client.get(bucket, key))
        if (start is not None and start < 0) or (end is not None and end < 0):
            size = self.client.head(bucket, key).size
            start = size + start if start is not None and start < 0 else start
            end = size + end if end is not None and end < 0 else end
        start = start or 0
        if end is None:
            end = self.client.head(bucket, key).size
        if end <= start:
            return b""
        try:
            return bytes(self.client.get_range(bucket, key, start, end - start))
        except brisk.InvalidRange:
            return b""

    def cat_ranges(self, paths, starts, ends, max_gap=None, on_error="return", **kwargs):
        """Many ranges, one `get_ranges` batch per bucket; with `on_error="return"` a failed range's
        exception takes its place in the result."""
        if not (len(paths) == len(starts) == len(ends)):
            raise ValueError("paths, starts and ends must have the same length")
        results: list[Any] = [None] * len(paths)
        by_bucket: dict[str, list[int]] = {}
        for i, p in enumerate(paths):
            by_bucket.setdefault(_split(self._strip_protocol(p))[0], []).append(i)
        for bucket, indices in by_bucket.items():
            keys, offsets, lengths, batch = [], [], [], []
            for i in indices:
                start, end = starts[i] or 0, ends[i]
                key = _split(self._strip_protocol(paths[i]))[1]
                if end is None or start < 0 or end < 0:
                    try:
                        results[i] = self.cat_file(paths[i], start, end)
                    except Exception as e:
                        if on_error != "return":
                            raise
                        results[i] = e
                    continue
                if end <= start:
                    results[i] = b""
                    continue
                keys.append(key)
                offsets.append(start)
                lengths.append(end - start)
                batch.append(i)
            if not batch:
                continue
            try:
                bufs = self.client.get_ranges(bucket, keys, offsets, lengths)
                errors: dict[int, Exception] = {}
            except brisk.RangeErrors as e:
                bufs, errors = e.results, e.errors
            for j, i in enumerate(batch):
                if j in errors:
                    err = errors[j]
                    if isinstance(err, brisk.InvalidRange):
                        results[i] = b""
                    elif on_error == "return":
                        results[i] = err
                    else:
                        raise err
                else:
                    results[i] = bytes(bufs[j])
        return results

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, **kwargs):
        return BriskFile(self, path, mode, block_size=block_size or self.block_size,
                         cache_options=cache_options, **kwargs)

    # ----- metadata ----------------------------------------------------------------------------

    def ls(self, path: str, detail: bool = True, **kwargs: Any):
        path = self._strip_protocol(path)
        if not path:
            entries = [{"name": b, "size": 0, "type": "directory"} for b in self.client.list_buckets()]
        else:
            bucket, key = _split(path)
            prefix = key + "/" if key else ""
            entries = []
            for e in self.client.list(bucket, prefix or None, delimiter="/"):
                name = f"{bucket}/{e.key}".rstrip("/")
                if e.is_prefix:
                    entries.append({"name": name, "size": 0, "type": "directory"})
                else:
                    entries.append({"name": name, "size": e.size, "type": "file", "ETag": e.etag,
                                    "LastModified": e.last_modified})
            if not entries and key:
                info = self.info(path)
                if info["type"] == "file":
                    entries = [info]
        return entries if detail else [e["name"] for e in entries]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        path = self._strip_protocol(path)
        bucket, key = _split(path)
        if not key:
            if bucket and bucket not in self.client.list_buckets():
                raise FileNotFoundError(path)
            return {"name": bucket, "size": 0, "type": "directory"}
        try:
            meta = self.client.head(bucket, key)
            return {"name": path, "size": meta.size, "type": "file", "ETag": meta.etag,
                    "LastModified": meta.last_modified, "ContentType": meta.content_type}
        except brisk.NoSuchKey:
            pass
        for _ in self.client.list(bucket, key + "/", page_size=1):
            return {"name": path, "size": 0, "type": "directory"}
        raise FileNotFoundError(path)

    def modified(self, path: str):
        return self.info(path)["LastModified"]

    # ----- writes ------------------------------------------------------------------------------

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        """Stores `value`; `ContentType=` (s3fs's keyword) sets the object's Content-Type."""
        bucket, key = _split(self._strip_protocol(path))
        self.client.put(bucket, key, value, content_type=kwargs.get("ContentType"))

    def put_file(self, lpath, rpath, callback=None, **kwargs: Any) -> None:
        """Uploads a file with the Content-Type `ContentType=` gives, else the one its name
        suggests (`mimetypes`), as s3fs does; fsspec's `callback` sees the bytes sent."""
        if os.path.isdir(lpath):
            return
        bucket, key = _split(self._strip_protocol(rpath))
        content_type = kwargs.get("ContentType") or mimetypes.guess_type(str(lpath))[0]
        self.client.upload(lpath, bucket, key, content_type=content_type, progress=_progress_of(callback))

    def get_file(self, rpath, lpath, callback=None, **kwargs: Any) -> None:
        """Downloads to a file; fsspec's `callback` sees the bytes written (the size from a HEAD
        made only when there is a callback to tell)."""
        bucket, key = _split(self._strip_protocol(rpath))
        self.client.download(bucket, key, lpath, progress=_progress_of(callback))

    def cp_file(self, path1, path2, **kwargs: Any) -> None:
        b1, k1 = _split(self._strip_protocol(path1))
        b2, k2 = _split(self._strip_protocol(path2))
        self.client.copy(b1, k1, b2, k2)

    def rm_file(self, path: str) -> None:
        bucket, key = _split(self._strip_protocol(path))
        self.client.delete(bucket, key)

    def _rm(self, path: str) -> None:
        self.rm_file(path)

    def rm(self, path, recursive=False, maxdepth=None):
        paths = path if isinstance(path, list) else [path]
        for p in paths:
            bucket, key = _split(self._strip_protocol(p))
            if recursive:
                keys = [e.key for e in self.client.list(bucket, key + "/" if key else None)]
                if key:
                    keys.append(key)
                self.client.delete_many(bucket, keys)
                if not key:
                    self.client.delete_bucket(bucket)
            else:
                self.client.delete(bucket, key)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """Creates the bucket when `path` is a bucket; prefixes need no creating in S3."""
        bucket, key = _split(self._strip_protocol(path))
        if not key:
            self.client.create_bucket(bucket)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        try:
            self.mkdir(path)
        except brisk.BucketAlreadyExists:
            if not exist_ok:
                raise

    def rmdir(self, path: str) -> None:
        bucket, key = _split(self._strip_protocol(path))
        if not key:
            self.client.delete_bucket(bucket)


class BriskFile(AbstractBufferedFile):
    """A file of a `BriskFileSystem`: reads through a read-ahead cache of at most `block_size` bytes,
    or straight into the caller's buffer; writes go to a `brisk.ObjectWriter` (see the module docs)."""

    def __init__(self, fs: BriskFileSystem, path: str, mode: str = "rb", block_size: int = DEFAULT_BLOCK_SIZE,
                 cache_options=None, **kwargs: Any) -> None:
        self.bucket, self.key = _split(fs._strip_protocol(path))
        self._writer = None
        super().__init__(fs, path, mode, block_size=block_size, cache_type="readahead",
                         cache_options=cache_options, **kwargs)

    def _fetch_range(self, start: int, end: int) -> bytes:
        """One ranged GET, or, once the reads follow one another, the next bytes of one streamed
        GET (`brisk.ObjectReader`) that all later sequential fetches continue."""
        if end <= start:
            return b""
        stream = self._sequential(start)
        if stream is not None:
            data = stream.read(end - start)
        else:
            data = bytes(self.fs.client.get_range(self.bucket, self.key, start, end - start))
        self._fetched_to = start + len(data)
        return data

    def _sequential(self, start: int):
        """The stream to read `start` from: the open one if it is there, a new one if `start` is
        where the last fetch ended (a second read in a row), else none (a random read, which
        drops a stream left behind)."""
        stream = getattr(self, "_stream", None)
        if stream is not None and stream.tell() == start:
            return stream
        if stream is not None:
            stream.close()
            self._stream = None
        if start > 0 and start == getattr(self, "_fetched_to", None) and start < self.size:
            self._stream = self.fs.client.open_reader(self.bucket, self.key, offset=start)
            return self._stream
        return None

    def readinto(self, b) -> int:
        """Reads of at least a block go from the socket straight into `b`: from the open stream
        when they continue it, else by a ranged GET."""
        view = memoryview(b).cast("B")
        n = min(len(view), self.size - self.loc)
        if n <= 0:
            return 0
        if n < self.blocksize:
            data = self.read(n)
            view[: len(data)] = data
            return len(data)
        stream = getattr(self, "_stream", None)
        if stream is not None and stream.tell() == self.loc:
            got = stream.readinto(view[:n])
        else:
            got = self.fs.client.get_into(self.bucket, self.key, view[:n], offset=self.loc, length=n)
        self.loc += got
        self._fetched_to = self.loc
        return got

    def close(self) -> None:
        stream = getattr(self, "_stream", None)
        if stream is not None:
            stream.close()
            self._stream = None
        super().close()

    def write(self, data) -> int:
        """Copies `data` into the writer's current part (no `BytesIO` in between)."""
        if not self.writable():
            raise ValueError("File not in write mode")
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if self.forced:
            raise ValueError("This file has been force-flushed, can only close")
        self._initiate_upload()
        n = self._writer.write(data)
        self.loc += n
        return n

    def _initiate_upload(self) -> None:
        if self._writer is None:
            self._writer = self.fs.client.open_writer(
                self.bucket, self.key, content_type=self.kwargs.get("ContentType"))

    def _upload_chunk(self, final: bool = False) -> bool:
        # fsspec's own buffer is empty unless something wrote to it past `write`.
        if self.buffer.tell():
            self._writer.write(self.buffer.getbuffer())
        if final:
            self._writer.close()
        return True

    def discard(self) -> None:
        """Gives up a file being written: nothing is stored."""
        if self._writer is not None:
            self._writer.abort()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if exc_type is not None and self.writable() and not self.closed:
            self.discard()
            self.closed = True
            return
        self.close()
