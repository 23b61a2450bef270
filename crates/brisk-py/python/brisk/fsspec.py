"""`brisk://bucket/key` for fsspec (and so pandas, pyarrow, dask, duckdb, polars, zarr): brisk's
client behind fsspec's `AsyncFileSystem`, checked by fsspec's own conformance suite
(`fsspec.tests.abstract`, in `tests/test_fsspec_abstract.py`).

The filesystem is asynchronous as s3fs's is: each `_name` coroutine (`_cat_file`, `_cat_ranges`,
`_info`, `_ls`, `_find`, `_get_file`, `_put_file`, `_pipe_file`, `_rm`, ...) awaits the client's
`*_async` call on brisk's runtime, so async callers (zarr, kerchunk, fsspec's own bulk `get`, `put`,
`cat` and `copy`, which gather many of them) need no thread per call. The small reads' sync
methods (`cat_file`, `cat_ranges` and files from `open`) call the client directly, releasing the
GIL, instead of hopping to fsspec's event-loop thread and back (a hop is a fair share of a small
read); the rest, transfers among them, reach the coroutines through fsspec's loop as s3fs's do.

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
- Exclusive creation (`open(path, "xb")`, `pipe_file(..., mode="create")`, `put_file(...,
  mode="create")`) is checked up front and again, atomically, by the server (`If-None-Match: *` on
  the PUT or on the multipart upload's completion); either way it raises `FileExistsError`.
- Appending (`mode="ab"`) and object versions (`version_aware=True`) are refused with a clear error:
  S3 objects cannot be appended to, and brisk does not address versions.
"""

from __future__ import annotations

import mimetypes
import mmap
import os
import re
from contextvars import ContextVar
from typing import Any

from fsspec.asyn import AbstractAsyncStreamedFile, AsyncFileSystem, get_loop
from fsspec.callbacks import NoOpCallback
from fsspec.spec import AbstractBufferedFile

import brisk
from brisk._column_prefetch import ColumnPrefetch, FooterCache, footer_chunks

DEFAULT_BLOCK_SIZE = 1024 * 1024

# Set while `_put` runs: each `_put_file` records its outcome here instead of raising, so that one
# failed file does not cancel the uploads beside it (a context variable: each task fsspec gathers
# inherits it, and concurrent `put` calls each see their own).
_put_outcomes: ContextVar[list | None] = ContextVar("brisk_fsspec_put_outcomes", default=None)

# Keys a single DeleteObjects request takes (S3's limit); `Client.delete_many` batches by it too.
DELETE_BATCH = 1000


# s3fs options that change what a request does: refused rather than silently dropped.
_S3FS_REFUSED = {
    "requester_pays": "requests are not sent with x-amz-request-payer",
    "s3_additional_kwargs": "extra request parameters such as server-side encryption are not sent",
    "config_kwargs": "botocore settings; brisk.Client's own go in client_kwargs",
    "session": "an aiobotocore session; credentials come from key/secret/token or the AWS chain",
}
# s3fs options that only tune s3fs's own machinery, which brisk does differently (the endpoint's
# scheme says whether TLS is used; the client's connections and parts in flight bound concurrency).
_S3FS_IGNORED = ("use_ssl", "cache_regions", "max_concurrency", "fixed_upload_size", "default_fill_cache",
                 "default_cache_type", "local_expiry_check")


def _progress_of(callback):
    """brisk's `progress(done, total)` for an fsspec `Callback`, or None for none (fsspec passes a
    no-op one by default: asking for progress would cost a download a HEAD for its total)."""
    if callback is None or isinstance(callback, NoOpCallback):
        return None

    def progress(done: int, total: int) -> None:
        callback.set_size(total)
        callback.absolute_update(done)

    return progress


def _exists_error(path: str, error: Exception | None = None) -> FileExistsError:
    e = FileExistsError(f"{path} exists and the write asked for exclusive creation")
    e.__cause__ = error
    return e


def _if_none_match(mode: str) -> str | None:
    if mode == "create":
        return "*"
    if mode == "overwrite":
        return None
    raise ValueError(f"mode must be 'overwrite' or 'create', not {mode!r}")


def _file_entry(name: str, size: int, etag, last_modified, **more: Any) -> dict[str, Any]:
    """An fsspec info dict for an object, with s3fs's extra keys (`Key`, `Size`, `ETag`,
    `LastModified`) so that code written against s3fs finds them."""
    return {"name": name, "size": size, "type": "file", "Key": name, "Size": size, "ETag": etag,
            "LastModified": last_modified, **more}


def _dir_entry(name: str) -> dict[str, Any]:
    return {"name": name, "size": 0, "type": "directory", "Key": name, "Size": 0,
            "StorageClass": "DIRECTORY"}


def _range_of(start: int | None, end: int | None, size: int | None) -> tuple[int, int]:
    """`[start, end)` with negative values counted from `size` and clamped at 0; `end` None means
    the end of the object (`size` must be known when `_needs_size` says so)."""
    if start is not None and start < 0:
        start = max(0, size + start)
    if end is None:
        end = size
    elif end < 0:
        end = max(0, size + end)
    return start or 0, end


def _needs_size(start: int | None, end: int | None) -> bool:
    """Whether a range needs the object's size first: an open end, or an offset from the end (a
    range is read into a buffer of exactly its length, so the length must be known)."""
    return end is None or end < 0 or (start is not None and start < 0)


class BriskFileSystem(AsyncFileSystem):
    """fsspec filesystem over `brisk.Client`. Credentials and endpoint come from the arguments, else
    the AWS environment and profiles (as `brisk.Client` reads them).

    s3fs's names are accepted where they mean the same: `key`, `secret`, `token`, `anon`,
    `endpoint_url` (also inside `client_kwargs`, with `region_name`), `use_listings_cache`,
    `listings_expiry_time`, `max_paths`, `version_aware` (refused when true). `azure=True` (or any
    `azure_*` client argument in `client_kwargs`) makes it a filesystem over Azure Blob Storage,
    containers for buckets; the `brisk+az://` protocol is the same with `azure=True` implied.
    Other `client_kwargs` go to `brisk.Client` (`max_connections`, `part_size`, ...)."""

    protocol = ("brisk",)
    root_marker = ""
    async_impl = True
    mirror_sync_methods = True

    def __init__(
        self,
        endpoint_url: str | None = None,
        *,
        key: str | None = None,
        secret: str | None = None,
        token: str | None = None,
        anon: bool = False,
        region: str | None = None,
        max_memory: int | str | None = None,
        block_size: int = DEFAULT_BLOCK_SIZE,
        column_prefetch: bool = True,
        azure: bool = False,
        version_aware: bool = False,
        client_kwargs: dict[str, Any] | None = None,
        asynchronous: bool = False,
        loop=None,
        batch_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        if version_aware:
            raise NotImplementedError(
                "version_aware=True: brisk:// does not address object versions (each path is the "
                "object's current version); use s3fs for versioned buckets")
        for name in _S3FS_REFUSED:
            if kwargs.pop(name, None):
                raise NotImplementedError(f"{name}: an s3fs option brisk:// does not have ({_S3FS_REFUSED[name]})")
        for name in _S3FS_IGNORED:
            kwargs.pop(name, None)
        key = key or kwargs.pop("username", None)
        secret = secret or kwargs.pop("password", None)
        block_size = kwargs.pop("default_block_size", None) or block_size
        client_kwargs = dict(client_kwargs or {})
        endpoint_url = endpoint_url or client_kwargs.pop("endpoint_url", None)
        region = region or client_kwargs.pop("region_name", None)
        super().__init__(asynchronous=asynchronous, loop=loop, batch_size=batch_size, **kwargs)
        azure = azure or self._azure_protocol
        if azure:
            if key or secret or token or region:
                raise ValueError("key, secret, token and region are S3 settings; an Azure filesystem "
                                 "takes azure_connection_string, azure_account, azure_key or "
                                 "azure_sas_token in client_kwargs (or the AZURE_STORAGE_* variables)")
            self.client = brisk.Client(endpoint_url, max_memory=max_memory, azure=True, **client_kwargs)
        else:
            self.client = brisk.Client(
                endpoint_url,
                access_key_id=key,
                secret_access_key=secret,
                session_token=token,
                anonymous=anon,
                region=region,
                max_memory=max_memory,
                **client_kwargs,
            )
        self.block_size = block_size
        # Parquet layouts of objects read lately (see brisk._column_prefetch); off with
        # column_prefetch=False.
        self._footers = FooterCache()
        self.column_prefetch = column_prefetch

    _azure_protocol = False

    @property
    def loop(self):
        """fsspec's event-loop thread; after `fork()` (DataLoader and Dask workers) the child's
        own, where fsspec's base class refuses to go on ("not fork-safe")."""
        if self._pid != os.getpid():
            self._loop = get_loop()
            self._pid = os.getpid()
        return self._loop

    # ----- paths -------------------------------------------------------------------------------

    def split_path(self, path: str) -> tuple[str, str]:
        """`(bucket, key)` of a path with or without the protocol; the key may be empty."""
        path = self._strip_protocol(path)
        bucket, _, key = path.partition("/")
        return bucket, key

    def _object(self, path: str) -> tuple[str, str]:
        """`(bucket, key)` of a path that must name an object."""
        bucket, key = self.split_path(path)
        if not bucket:
            raise ValueError(f"brisk:// path without a bucket: {path!r}")
        if not key:
            raise IsADirectoryError(f"{path!r} is a bucket, not an object")
        return bucket, key

    # ----- reads -------------------------------------------------------------------------------

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        """The object's bytes, or `[start, end)` of them (negative values count from the end)."""
        bucket, key = self._object(path)
        if start is None and end is None:
            return bytes(self.client.get(bucket, key))
        size = self.client.head(bucket, key).size if _needs_size(start, end) else None
        start, end = _range_of(start, end, size)
        if end <= start:
            return b""
        try:
            return bytes(self.client.get_range(bucket, key, start, end - start))
        except brisk.InvalidRange:
            return b""

    async def _cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        bucket, key = self._object(path)
        if start is None and end is None:
            return bytes(await self.client.get_async(bucket, key))
        size = (await self.client.head_async(bucket, key)).size if _needs_size(start, end) else None
        start, end = _range_of(start, end, size)
        if end <= start:
            return b""
        try:
            return bytes(await self.client.get_range_async(bucket, key, start, end - start))
        except brisk.InvalidRange:
            return b""

    def _plan_ranges(self, paths, starts, ends):
        """Groups the ranges by bucket for one `get_ranges` batch each; ranges that need the
        object's size first (an open end or negative offsets) are left to `cat_file`."""
        if not isinstance(paths, list):
            raise TypeError("paths must be a list")
        n = len(paths)
        starts = starts if isinstance(starts, list) else [starts] * n
        ends = ends if isinstance(ends, list) else [ends] * n
        if not (len(starts) == len(ends) == n):
            raise ValueError("paths, starts and ends must have the same length")
        results: list[Any] = [None] * n
        batches: dict[str, tuple[list[str], list[int], list[int], list[int]]] = {}
        single: list[int] = []
        for i, path in enumerate(paths):
            start, end = starts[i], ends[i]
            if _needs_size(start, end):
                single.append(i)
                continue
            start = start or 0
            if end <= start:
                results[i] = b""
                continue
            bucket, key = self._object(path)
            keys, offsets, lengths, index = batches.setdefault(bucket, ([], [], [], []))
            keys.append(key)
            offsets.append(start)
            lengths.append(end - start)
            index.append(i)
        return results, batches, single, starts, ends

    @staticmethod
    def _settle_batch(results, index, bufs, errors, on_error) -> None:
        for j, i in enumerate(index):
            err = errors.get(j)
            if err is None:
                results[i] = bytes(bufs[j])
            elif isinstance(err, brisk.InvalidRange):
                results[i] = b""
            elif on_error == "return":
                results[i] = err
            else:
                raise err

    def cat_ranges(self, paths, starts, ends, max_gap=None, on_error="return", **kwargs):
        """Many ranges, one `get_ranges` batch per bucket; with `on_error="return"` a failed range's
        exception takes its place in the result."""
        results, batches, single, starts, ends = self._plan_ranges(paths, starts, ends)
        for i in single:
            try:
                results[i] = self.cat_file(paths[i], starts[i], ends[i])
            except Exception as e:
                if on_error != "return":
                    raise
                results[i] = e
        for bucket, (keys, offsets, lengths, index) in batches.items():
            try:
                bufs, errors = self.client.get_ranges(bucket, keys, offsets, lengths), {}
            except brisk.RangeErrors as e:
                bufs, errors = e.results, e.errors
            self._settle_batch(results, index, bufs, errors, on_error)
        return results

    async def _cat_ranges(self, paths, starts, ends, max_gap=None, batch_size=None, on_error="return", **kwargs):
        results, batches, single, starts, ends = self._plan_ranges(paths, starts, ends)
        for i in single:
            try:
                results[i] = await self._cat_file(paths[i], starts[i], ends[i])
            except Exception as e:
                if on_error != "return":
                    raise
                results[i] = e
        for bucket, (keys, offsets, lengths, index) in batches.items():
            try:
                bufs, errors = await self.client.get_ranges_async(bucket, keys, offsets, lengths), {}
            except brisk.RangeErrors as e:
                bufs, errors = e.results, e.errors
            self._settle_batch(results, index, bufs, errors, on_error)
        return results

    async def _get_file(self, rpath, lpath, callback=None, **kwargs: Any) -> None:
        """Downloads to a file (its directory created if missing); a directory makes a local
        directory. fsspec's `callback` sees the bytes written (the size from a HEAD made only
        when there is a callback to tell, or from the listing cache)."""
        if self._is_known_dir(rpath):
            os.makedirs(lpath, exist_ok=True)
            return
        bucket, key = self._object(rpath)
        if os.path.isdir(lpath):
            return
        os.makedirs(os.path.dirname(os.path.abspath(lpath)), exist_ok=True)
        try:
            await self.client.download_async(bucket, key, lpath, size=self._known_size(rpath),
                                             progress=_progress_of(callback))
        except FileNotFoundError:
            if await self._isdir(rpath):
                os.makedirs(lpath, exist_ok=True)
                return
            raise

    def _open(self, path, mode="rb", block_size=None, autocommit=True, cache_options=None, **kwargs):
        if "a" in mode:
            raise NotImplementedError(
                f"mode {mode!r}: S3 objects cannot be appended to; read the object and write it "
                "anew (open(path, 'wb')), or write the new part under a key of its own")
        if "x" in mode and self.exists(path):
            raise _exists_error(path)
        return BriskFile(self, path, mode, block_size=block_size or self.block_size,
                         autocommit=autocommit, cache_options=cache_options, **kwargs)

    async def open_async(self, path, mode: str = "rb", **kwargs: Any):
        """An async file: `await f.read(n)` reads by ranged GETs on brisk's runtime; `await
        f.write(data)` writes to an `AsyncObjectWriter` (pooled parts, nothing spooled), stored at
        `await f.close()` or the end of an `async with` block (an exception in it stores nothing).
        `xb` is exclusive as in `open`; `ContentType=` sets the Content-Type."""
        if "b" not in mode or kwargs.get("compression"):
            raise ValueError(f"open_async opens binary files without compression, not mode {mode!r}")
        if "a" in mode:
            raise NotImplementedError(f"mode {mode!r}: S3 objects cannot be appended to")
        path = self._strip_protocol(path)
        bucket, key = self._object(path)
        if mode == "rb":
            info = await self._info(path)
            if info["type"] != "file":
                raise IsADirectoryError(f"{path} is a directory (a prefix), not an object")
            return BriskAsyncFile(self, path, mode, size=info["size"])
        if mode not in ("wb", "xb"):
            raise ValueError(f"mode must be 'rb', 'wb' or 'xb', not {mode!r}")
        if mode == "xb" and await self._exists(path):
            raise _exists_error(path)
        writer = await self.client.open_writer_async(bucket, key, content_type=kwargs.get("ContentType"),
                                                     if_none_match="*" if mode == "xb" else None)
        return BriskAsyncFile(self, path, mode, writer=writer)

    # ----- metadata ----------------------------------------------------------------------------

    def _cached_entry(self, path: str) -> dict[str, Any] | None | bool:
        """What the listing cache says of `path`: its entry, False when its directory is cached
        and does not hold it, None when the cache does not know."""
        parent = self._parent(path)
        try:
            listing = self.dircache[parent]
        except KeyError:
            return None
        for entry in listing:
            if entry["name"] == path:
                return entry
        return False

    def _is_known_dir(self, path: str) -> bool:
        path = self._strip_protocol(path)
        if path in self.dircache:
            return True
        entry = self._cached_entry(path)
        return bool(entry) and entry["type"] == "directory"

    def _known_size(self, path: str) -> int | None:
        entry = self._cached_entry(self._strip_protocol(path))
        return entry["size"] if entry and entry["type"] == "file" else None

    def _entries(self, bucket: str, entries) -> list[dict[str, Any]]:
        out = []
        for e in entries:
            name = f"{bucket}/{e.key}".rstrip("/")
            if e.is_prefix:
                out.append(_dir_entry(name))
            else:
                out.append(_file_entry(name, e.size, e.etag, e.last_modified, StorageClass=e.storage_class))
        return out

    async def _lsdir(self, path: str, refresh: bool = False) -> list[dict[str, Any]]:
        """The entries right below `path` (a bucket or a prefix), from one listing with the
        delimiter `/`, kept in the listing cache. A key ending in `/` that equals the prefix (a
        "folder" marker other tools create) is not an entry of its own directory."""
        path = self._strip_protocol(path)
        if not refresh and path in self.dircache:
            return self.dircache[path]
        bucket, key = self.split_path(path)
        prefix = key + "/" if key else None
        entries = [e for e in await self.client.list_async(bucket, prefix, delimiter="/")
                   if e.key != prefix]
        listing = self._entries(bucket, entries)
        if listing:
            self.dircache[path] = listing
        return listing

    async def _ls(self, path: str, detail: bool = True, refresh: bool = False, **kwargs: Any):
        path = self._strip_protocol(path)
        if not path:
            entries = [_dir_entry(b) for b in await self._buckets()]
        else:
            entries = await self._lsdir(path, refresh=refresh)
            if not entries:
                bucket, key = self.split_path(path)
                if key:
                    info = await self._info(path)  # FileNotFoundError when nothing is there
                    entries = [info] if info["type"] == "file" else []
                else:
                    await self._first_key(bucket, None)
        return entries if detail else [e["name"] for e in entries]

    async def _buckets(self) -> list[str]:
        return await self.client.list_buckets_async()

    async def _first_key(self, bucket: str, prefix: str | None):
        """At most one key under `prefix`, from one request (NoSuchBucket when the bucket is
        missing)."""
        return await self.client.list_async(bucket, prefix, limit=1)

    async def _info(self, path: str, refresh: bool = False, **kwargs: Any) -> dict[str, Any]:
        path = self._strip_protocol(path)
        bucket, key = self.split_path(path)
        if not bucket:
            return _dir_entry("")
        if not refresh:
            entry = self._cached_entry(path)
            if entry:
                return entry
            if entry is False and path not in self.dircache:
                raise FileNotFoundError(path)
            if path in self.dircache:
                return _dir_entry(path)
        if not key:
            try:
                await self._first_key(bucket, None)
            except brisk.AccessDenied:
                pass  # the bucket exists; we may not list it
            return _dir_entry(bucket)
        try:
            meta = await self.client.head_async(bucket, key)
            return _file_entry(path, meta.size, meta.etag, meta.last_modified, ContentType=meta.content_type,
                               Metadata=meta.metadata)
        except FileNotFoundError:
            pass
        if await self._first_key(bucket, key + "/"):
            return _dir_entry(path)
        raise FileNotFoundError(path)

    async def _isdir(self, path: str) -> bool:
        if self._is_known_dir(path):
            return True
        try:
            return (await self._info(path))["type"] == "directory"
        except (FileNotFoundError, ValueError):
            return False

    async def _exists(self, path: str, **kwargs: Any) -> bool:
        try:
            await self._info(path, **kwargs)
            return True
        except FileNotFoundError:
            return False

    async def _find(self, path: str, maxdepth: int | None = None, withdirs: bool = False,
                    detail: bool = False, prefix: str = "", **kwargs: Any):
        """Everything below `path`, from one listing without a delimiter (as s3fs does), which
        also fills the listing cache for every directory it passes; with `maxdepth`, fsspec's
        walk over delimited listings. `prefix` keeps the names that start with `path/prefix`."""
        path = self._strip_protocol(path)
        bucket, key = self.split_path(path)
        if not bucket:
            raise ValueError("find needs a bucket: brisk:// does not walk every bucket of an account")
        if maxdepth:
            out = await super()._find(path, maxdepth=maxdepth, withdirs=withdirs, detail=True, **kwargs)
            if prefix:
                stem = f"{path}/{prefix}" if path else prefix
                out = {k: v for k, v in out.items() if k.startswith(stem)}
        else:
            out = await self._find_flat(path, bucket, key, prefix, withdirs)
        names = sorted(out)
        return {n: out[n] for n in names} if detail else names

    async def _find_flat(self, path: str, bucket: str, key: str, prefix: str, withdirs: bool):
        list_prefix = (key + "/" if key else "") + prefix
        entries = [e for e in await self.client.list_async(bucket, list_prefix or None)
                   if not e.key.endswith("/")]
        files = self._entries(bucket, entries)
        out: dict[str, dict[str, Any]] = {}
        if not files and key and not prefix:
            try:
                info = await self._info(path, refresh=True)
            except FileNotFoundError:
                return out
            if info["type"] == "file":
                out[path] = info
            elif withdirs:
                out[path] = info
            return out
        # Each directory's entries, for the listing cache: its files, and its subdirectories once
        # each (a directory is added to its parent's listing, and to `out` with `withdirs`, the
        # first time a key below it is seen; the walk up stops at a directory already seen).
        listings: dict[str, list[dict[str, Any]]] = {}
        seen: set[str] = set()
        for f in files:
            out[f["name"]] = f
            d = self._parent(f["name"])
            listings.setdefault(d, []).append(f)
            while len(d) > len(path) and d not in seen:
                seen.add(d)
                if withdirs:
                    out[d] = _dir_entry(d)
                parent = self._parent(d)
                listings.setdefault(parent, []).append(_dir_entry(d))
                d = parent
        if not prefix:
            for d, listing in listings.items():
                self.dircache[d] = sorted(listing, key=lambda e: e["name"])
        if withdirs and path and files and key and not prefix:
            out.setdefault(path, _dir_entry(path))
        return out

    async def _du(self, path: str, total: bool = True, maxdepth: int | None = None, **kwargs: Any):
        """Sizes from the listing itself (no HEAD per object)."""
        found = await self._find(path, maxdepth=maxdepth, detail=True, **kwargs)
        sizes = {name: info["size"] for name, info in found.items() if info["type"] == "file"}
        return sum(sizes.values()) if total else sizes

    def invalidate_cache(self, path: str | None = None) -> None:
        """Forgets the listings of `path` and of every directory above it (all listings with no
        path)."""
        if path is None:
            self.dircache.clear()
            return
        path = self._strip_protocol(path)
        self.dircache.pop(path, None)
        while path:
            path = self._parent(path)
            self.dircache.pop(path, None)

    def modified(self, path: str):
        """Last-Modified of the object (S3 keeps no other time); a directory has none."""
        info = self.info(path)
        if info["type"] != "file":
            raise IsADirectoryError(f"{path}: a directory (a prefix) has no modification time")
        return info["LastModified"]

    def created(self, path: str):
        """S3 keeps no creation time: an object's is its last write, so this is `modified`, as
        s3fs answers."""
        return self.modified(path)

    def checksum(self, path: str) -> int:
        """The ETag as an integer (changes whenever the object is written), as s3fs does."""
        info = self.info(path)
        etag = (info.get("ETag") or "").strip('"')
        return int(re.sub(r"[^0-9a-f]", "", etag.lower())[:32] or "0", 16) if etag else hash(str(info))

    def ukey(self, path: str) -> str:
        return self.info(path).get("ETag") or super().ukey(path)

    def sign(self, path: str, expiration: int = 100, **kwargs: Any) -> str:
        """A presigned GET URL valid for `expiration` seconds (`method="PUT"` for an upload)."""
        bucket, key = self._object(path)
        return self.client.presign(bucket, key, method=kwargs.get("method", "GET"), expires_in=expiration)

    def url(self, path: str, expires: int = 3600, client_method: str = "get_object", **kwargs: Any) -> str:
        """s3fs's name for a presigned URL: `client_method="put_object"` for an upload."""
        methods = {"get_object": "GET", "put_object": "PUT", "head_object": "HEAD"}
        if client_method not in methods:
            raise ValueError(f"client_method must be one of {sorted(methods)}, not {client_method!r}")
        return self.sign(path, expiration=expires, method=methods[client_method])

    # ----- writes ------------------------------------------------------------------------------

    async def _pipe_file(self, path: str, value, mode: str = "overwrite", **kwargs: Any) -> None:
        """Stores `value`; `ContentType=` (s3fs's keyword) sets the object's Content-Type;
        `mode="create"` stores only if nothing is there (else FileExistsError)."""
        bucket, key = self._object(path)
        try:
            await self.client.put_async(bucket, key, value, content_type=kwargs.get("ContentType"),
                                        if_none_match=_if_none_match(mode))
        except brisk.PreconditionFailed as e:
            raise _exists_error(path, e) from e
        finally:
            self.invalidate_cache(self._parent(path))

    async def _put(self, lpath, rpath, recursive: bool = False, **kwargs: Any):
        """fsspec's `put` (many files uploaded at once), except that a failed file does not cancel
        the others: they finish, and the first failure is raised with a note of what was stored
        and what was not (in its `stored` and `failed` attributes too). Each object is stored
        whole or not at all, so nothing half-written is visible either way."""
        outcomes: list[tuple[str, str, BaseException | None]] = []
        token = _put_outcomes.set(outcomes)
        try:
            await super()._put(lpath, rpath, recursive=recursive, **kwargs)
        finally:
            _put_outcomes.reset(token)
        failed = [(lp, rp, e) for lp, rp, e in outcomes if e is not None]
        if failed:
            stored = sorted(rp for _, rp, e in outcomes if e is None)
            error = failed[0][2]
            error.stored = stored
            error.failed = [(lp, rp) for lp, rp, _ in failed]
            shown = ", ".join(f"{lp} ({type(e).__name__})" for lp, _, e in failed[:5])
            error.add_note(f"put: {len(stored)} of {len(outcomes)} files were stored (listed in this "
                           f"exception's `stored`), {len(failed)} were not: {shown}")
            raise error

    async def _put_file(self, lpath, rpath, callback=None, mode: str = "overwrite", **kwargs: Any) -> None:
        outcomes = _put_outcomes.get()
        if outcomes is None:
            return await self._put_one(lpath, rpath, callback, mode, **kwargs)
        try:
            await self._put_one(lpath, rpath, callback, mode, **kwargs)
        except Exception as e:
            outcomes.append((lpath, rpath, e))
        else:
            outcomes.append((lpath, rpath, None))

    async def _put_one(self, lpath, rpath, callback, mode: str, **kwargs: Any) -> None:
        """Uploads a file with the Content-Type `ContentType=` gives, else the one its name
        suggests (`mimetypes`), as s3fs does; fsspec's `callback` sees the bytes sent. A local
        directory makes nothing (S3 has no empty directories)."""
        if os.path.isdir(lpath):
            return
        bucket, key = self._object(rpath)
        content_type = kwargs.get("ContentType") or mimetypes.guess_type(str(lpath))[0]
        try:
            await self.client.upload_async(lpath, bucket, key, content_type=content_type,
                                           if_none_match=_if_none_match(mode), progress=_progress_of(callback))
        except brisk.PreconditionFailed as e:
            raise _exists_error(rpath, e) from e
        finally:
            self.invalidate_cache(self._parent(rpath))

    async def _cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """Server-side copy (multipart copy above 5 GiB); a directory copies nothing."""
        b1, k1 = self.split_path(path1)
        b2, k2 = self._object(path2)
        if not k1 or self._is_known_dir(path1):
            return
        try:
            await self.client.copy_async(b1, k1, b2, k2)
        except FileNotFoundError:
            if await self._isdir(path1):
                return
            raise
        finally:
            self.invalidate_cache(self._parent(path2))

    async def _rm_file(self, path: str, **kwargs: Any) -> None:
        bucket, key = self._object(path)
        try:
            await self.client.delete_async(bucket, key)
        finally:
            self.invalidate_cache(self._parent(path))

    async def _rm(self, path, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any):
        """Deletes the objects `path` expands to, 1,000 keys per DeleteObjects request; a bucket
        named itself with `recursive=True` is deleted too once empty. Raises OSError naming the
        keys that were not deleted."""
        paths = await self._expand_path(path, recursive=recursive, maxdepth=maxdepth)
        by_bucket: dict[str, list[str]] = {}
        buckets = []
        for p in paths:
            bucket, key = self.split_path(p)
            if not key:
                buckets.append(bucket)
            elif not self._is_known_dir(p) or recursive:
                by_bucket.setdefault(bucket, []).append(key)
        failed = []
        for bucket, keys in by_bucket.items():
            for i in range(0, len(keys), DELETE_BATCH):
                failed += [(bucket, k, code) for k, code in
                           await self.client.delete_many_async(bucket, keys[i:i + DELETE_BATCH])
                           if code != "NoSuchKey"]
        for p in paths:
            self.invalidate_cache(p)
        if failed:
            shown = ", ".join(f"{b}/{k} ({code})" for b, k, code in failed[:10])
            raise OSError(f"{len(failed)} objects were not deleted: {shown}")
        for bucket in buckets:
            if recursive:
                await self._rmdir(bucket)

    async def _mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """Creates the bucket when `path` is a bucket (FileExistsError if it exists); a prefix
        needs no creating in S3, but its bucket must exist."""
        bucket, key = self.split_path(path)
        if not bucket:
            raise ValueError(f"brisk:// path without a bucket: {path!r}")
        if not key:
            await self.client.create_bucket_async(bucket)
            self.invalidate_cache("")
        elif create_parents and not await self._exists(bucket):
            await self.client.create_bucket_async(bucket)
            self.invalidate_cache("")
        else:
            await self._first_key(bucket, None)

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        bucket, key = self.split_path(path)
        try:
            await self._mkdir(path, create_parents=True)
        except FileExistsError:
            if not exist_ok and not key:
                raise

    async def _rmdir(self, path: str) -> None:
        """Deletes a bucket (it must be empty); a prefix is not a thing of its own in S3."""
        bucket, key = self.split_path(path)
        if key:
            return
        await self.client.delete_bucket_async(bucket)
        self.invalidate_cache(bucket)
        self.invalidate_cache("")

    def touch(self, path: str, truncate: bool = True, **kwargs: Any) -> None:
        """An empty object; S3 cannot change an existing object's time, so `truncate=False` on an
        existing one is refused (as s3fs does)."""
        if not truncate and self.exists(path):
            raise ValueError("S3 cannot update an object's time without writing it: use truncate=True")
        self.pipe_file(path, b"", **kwargs)


class BriskAzureFileSystem(BriskFileSystem):
    """`brisk+az://container/blob`: a `BriskFileSystem` over Azure Blob Storage."""

    protocol = ("brisk+az",)
    _azure_protocol = True


class BriskAsyncFile(AbstractAsyncStreamedFile):
    """A file from `BriskFileSystem.open_async`: reads are ranged GETs of what is asked (no
    read-ahead), writes go to a `brisk.AsyncObjectWriter`."""

    def __init__(self, fs: BriskFileSystem, path: str, mode: str, size: int | None = None, writer=None) -> None:
        self.bucket, self.key = fs._object(path)
        self._writer = writer
        super().__init__(fs, path, mode, size=size, cache_type="none")

    async def _fetch_range(self, start: int, end: int) -> bytes:
        return await self.fs._cat_file(self.path, start, min(end, self.size))

    async def write(self, data) -> int:
        if self.mode not in ("wb", "xb"):
            raise ValueError("File not in write mode")
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        n = await self._writer.write(data)
        self.loc += n
        return n

    async def flush(self, force: bool = False) -> None:
        """Nothing to do: full parts are sent as they fill, the rest at `close`."""

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._writer is None:
            return
        try:
            await self._writer.close()
        except brisk.PreconditionFailed as e:
            raise _exists_error(self.path, e) from e
        finally:
            self.fs.invalidate_cache(self.fs._parent(self.path))

    async def __aexit__(self, exc_type, exc_value, traceback) -> None:
        if exc_type is not None and self._writer is not None and not self.closed:
            self.closed = True
            await self._writer.abort()
            return
        await self.close()


class BriskFile(AbstractBufferedFile):
    """A file of a `BriskFileSystem`: reads through a read-ahead cache of at most `block_size` bytes,
    or straight into the caller's buffer; writes go to a `brisk.ObjectWriter` (see the module docs)."""

    def __init__(self, fs: BriskFileSystem, path: str, mode: str = "rb", block_size: int = DEFAULT_BLOCK_SIZE,
                 autocommit: bool = True, cache_options=None, **kwargs: Any) -> None:
        self.bucket, self.key = fs._object(path)
        self._writer = None
        if mode == "rb" and "size" not in kwargs:
            known = fs._known_size(path)
            if known is None:
                details = fs.info(path)
                if details["type"] != "file":
                    raise IsADirectoryError(f"{path} is a directory (a prefix), not an object")
                known = details["size"]
            kwargs["size"] = known
        super().__init__(fs, path, mode, block_size=block_size, autocommit=autocommit, cache_type="readahead",
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
        self._note_tail(start, data)
        return data

    def _note_tail(self, start: int, data) -> None:
        """A read that ends at the end of the file may hold a parquet footer: its column-chunk
        layout then steers prefetching (see brisk._column_prefetch)."""
        if (start + len(data) != self.size or getattr(self, "_prefetch", None) is not None
                or not self.fs.column_prefetch):
            return
        groups = footer_chunks(data)
        if groups:
            # pyarrow's dataset API reads the footer through one file and the columns through
            # another: the layout is kept on the filesystem for the next file of this object.
            self.fs._footers.remember((self.bucket, self.key, self.size), groups)
            self._prefetch = ColumnPrefetch(self.fs.client, self.bucket, self.key, self.fs.loop, groups)

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

    def read_buffer(self, nbytes: int = -1):
        """What pyarrow's Python file wrapper calls instead of `read` when a file has it: a read of
        at least a block comes back as the `brisk.Buffer` the body was received into, which
        pyarrow wraps without a copy (no `bytes`, no read-ahead cache in between); smaller reads
        go through the cache as `read` does.

        pyarrow may hold every buffer it was given until it has decoded the whole file (it caches
        the column chunks of all the row groups it reads), so this never waits for the memory
        budget: when the budget has no room now, the range is read into an anonymous mapping of its
        own (outside the budget, as pyarrow's own memory is; its pages are made resident by the
        read itself, where a `bytearray` would first be zeroed in a pass of its own) instead of waiting for Buffers that only
        pyarrow would give back, which for a file larger than the budget would be forever."""
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        n = self.size - self.loc if nbytes is None or nbytes < 0 else min(nbytes, self.size - self.loc)
        if n < self.blocksize:
            return self.read(n)
        prefetch = getattr(self, "_prefetch", None)
        if prefetch is None:
            groups = self.fs._footers.get((self.bucket, self.key, self.size))
            if groups:
                prefetch = self._prefetch = ColumnPrefetch(self.fs.client, self.bucket, self.key, self.fs.loop,
                                                           groups)
        if prefetch is not None:
            # A parquet file: this read tells which columns are read; the same columns of the
            # other row groups start now, side by side (see brisk._column_prefetch).
            prefetch.after_read(self.loc, n)
            hit = prefetch.take(self.loc, n)
            if hit is not None:
                self.loc += n
                self._fetched_to = self.loc
                return hit
        buf = self.fs.client.get_range(self.bucket, self.key, self.loc, n, wait=False)
        if buf is None:
            buf = mmap.mmap(-1, n)
            got = self.fs.client.get_into(self.bucket, self.key, buf, offset=self.loc, length=n)
            if got < n:
                buf = memoryview(buf)[:got]
        self._note_tail(self.loc, buf)
        self.loc += len(buf)
        self._fetched_to = self.loc
        return buf

    def close(self) -> None:
        stream = getattr(self, "_stream", None)
        if stream is not None:
            stream.close()
            self._stream = None
        prefetch = getattr(self, "_prefetch", None)
        if prefetch is not None:
            prefetch.close()
            self._prefetch = None
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
                self.bucket, self.key, content_type=self.kwargs.get("ContentType"),
                if_none_match="*" if "x" in self.mode else None)

    def _upload_chunk(self, final: bool = False) -> bool:
        self._initiate_upload()
        # fsspec's own buffer is empty unless something wrote to it past `write`.
        if self.buffer.tell():
            self._writer.write(self.buffer.getbuffer())
        if final and self.autocommit:
            self.commit()
        return True

    def commit(self) -> None:
        """Completes the object (in a transaction, when the transaction ends)."""
        try:
            self._writer.close()
        except brisk.PreconditionFailed as e:
            raise _exists_error(self.path, e) from e
        finally:
            self.fs.invalidate_cache(self.fs._parent(self.path))

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
