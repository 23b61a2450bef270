"""Datasets of S3 (or Azure) objects for data-loader worker processes.

Two classes, with no dependency on any training framework: PyTorch's `DataLoader` takes any object
with these methods, and so does a plain `multiprocessing` pool.

- `ObjectDataset` is map-style: a fixed list of objects (given, or a prefix listed once when the
  dataset is built), `len(ds)`, `ds[i]`, and `ds.__getitems__(indices)`, which `DataLoader` calls
  with a whole batch of indices (PyTorch 2.1 and later) and which makes that batch one
  `Client.get_many`: the batch's objects are read concurrently on keep-alive connections instead
  of one after the other.
- `ObjectIterableDataset` streams a listing (or a list) through `Client.iter_many`, which reads
  `queue_depth` objects ahead of the consumer, and shards it by worker and by rank, so that the
  worker processes of every rank together see each object exactly once.

```python
from brisk.data import ObjectDataset, ObjectIterableDataset
ds = ObjectDataset.from_prefix("s3://bucket/train/", endpoint_url="http://127.0.0.1:9000",
                               max_memory="512MiB", transform=decode)
loader = torch.utils.data.DataLoader(ds, batch_size=64, num_workers=2)
```

`transform` is called on each object's `brisk.Buffer` (read-only, zero-copy; `numpy.frombuffer`
views it) and its result is the sample. The Buffer's memory counts against the worker's budget
until the transform's result lets go of it: a transform that decodes into new memory (an image
decoder, `bytes(buf)`) frees it at once; one that returns a view keeps it.

A dataset holds its client's configuration (the keyword arguments of `brisk.Client`), never a
client: each process builds its own client on first use, after `fork` as after `spawn`, and a
pickled dataset carries the configuration alone. So the memory each worker holds is bounded by its
own client's budget (`max_memory`, else the process-wide default: docs/memory.md).

Errors name what went wrong before anything is lost: an empty key list or prefix is a ValueError
when the dataset is built; duplicate keys in a key list are refused (a `DataLoader` sampler that
repeats an index is served from one read instead); a batch whose known sizes exceed the budget is
refused before any request, naming `ObjectIterableDataset`; a key that fails raises that key's
exception with a note naming the key, after every other Buffer of the batch has been given back.
docs/data.md says more.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from brisk._brisk import Buffer, Client, ObjectEntry
from brisk.errors import MemoryBudgetExceeded

__all__ = [
    "NUM_WORKERS_ENV",
    "RANK_ENV",
    "WORKER_ID_ENV",
    "WORLD_SIZE_ENV",
    "ObjectDataset",
    "ObjectIterableDataset",
]

#: Worker index and count when neither arguments nor PyTorch's `get_worker_info()` give them; a
#: pool that is not a `DataLoader` sets them in each worker before it iterates.
WORKER_ID_ENV = "BRISK_WORKER_ID"
NUM_WORKERS_ENV = "BRISK_NUM_WORKERS"
#: Rank and world size when neither arguments nor an initialised `torch.distributed` give them:
#: the variables `torchrun` (and most launchers) set in each rank's processes.
RANK_ENV = "RANK"
WORLD_SIZE_ENV = "WORLD_SIZE"

#: What an object is named by: an `s3://bucket/key` URI (any `scheme://`), a key of the dataset's
#: `bucket`, a `(bucket, key)` pair, or an `ObjectEntry` from `Client.list` (whose size is then
#: known).
ObjectRef = str | tuple[str, str] | ObjectEntry
Transform = Callable[[Buffer], Any]

_DUPLICATES_SHOWN = 5


class _ClientSource:
    """A client's configuration, and the client built from it in this process.

    Pickling keeps only the configuration (a `Client` holds threads and sockets and can not be
    pickled); a process that finds a client built by another (a `fork` copied it) builds its own,
    so no two processes share connections or a budget's accounting."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self._client: Client | None = None
        self._pid = 0

    def get(self) -> Client:
        pid = os.getpid()
        if self._client is None or self._pid != pid:
            self._client = Client(**self.options)
            self._pid = pid
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]


def _register_with_torch() -> None:
    """Make `ObjectIterableDataset` an `isinstance` of `torch.utils.data.IterableDataset` when
    torch is loaded already (never importing it): `DataLoader` takes a dataset that is not one for
    map-style, and calls `len()` and a sampler on it. That class is an ABC (it derives from
    `collections.abc.Iterable`), so registering is enough; the map-style dataset needs nothing."""
    torch_data = sys.modules.get("torch.utils.data")
    base = getattr(torch_data, "IterableDataset", None)
    if base is not None and hasattr(base, "register") and not issubclass(ObjectIterableDataset, base):
        base.register(ObjectIterableDataset)


def _split_uri(uri: str) -> tuple[str, str]:
    """`(bucket, rest)` of `scheme://bucket/rest` (or `bucket/rest`)."""
    _, sep, tail = uri.partition("://")
    bucket, _, rest = (tail if sep else uri).partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri!r}: expected s3://bucket/key")
    return bucket, rest


def _resolve(objects: Iterable[ObjectRef], bucket: str | None) -> tuple[list[tuple[str, str]], list[int]]:
    """The `(bucket, key)` pairs and sizes (-1 where unknown) of `objects`, duplicates refused."""
    pairs: list[tuple[str, str]] = []
    sizes: list[int] = []
    if isinstance(objects, (str, bytes)):
        raise TypeError("objects must be a list of keys or URIs, not one string")
    for ref in objects:
        size = -1
        if isinstance(ref, ObjectEntry):
            if bucket is None:
                raise ValueError("ObjectEntry objects need bucket=: a listing entry does not name its bucket")
            pair, size = (bucket, ref.key), ref.size
        elif isinstance(ref, tuple):
            if len(ref) != 2 or not all(isinstance(part, str) for part in ref):
                raise TypeError(f"an object pair is (bucket, key), both str: {ref!r}")
            pair = (ref[0], ref[1])
        elif isinstance(ref, str):
            if bucket is not None:
                pair = (bucket, ref)  # with a bucket, a string is a key, taken verbatim
            elif "://" in ref:
                pair = _split_uri(ref)
            else:
                raise ValueError(f"{ref!r} is neither a URI (s3://bucket/key) nor a key of a bucket= given")
        else:
            raise TypeError(f"an object is a URI, a key, a (bucket, key) pair or an ObjectEntry: {ref!r}")
        if not pair[1]:
            raise ValueError(f"empty key in {ref!r}")
        pairs.append(pair)
        sizes.append(size)
    if not pairs:
        raise ValueError("the dataset has no objects: the key list is empty")
    if len(set(pairs)) != len(pairs):
        seen: set[tuple[str, str]] = set()
        dupes: list[tuple[str, str]] = []
        for pair in pairs:
            if pair in seen and pair not in dupes:
                dupes.append(pair)
            seen.add(pair)
        shown = ", ".join(f"s3://{b}/{k}" for b, k in dupes[:_DUPLICATES_SHOWN])
        more = f" and {len(dupes) - _DUPLICATES_SHOWN} more" if len(dupes) > _DUPLICATES_SHOWN else ""
        raise ValueError(
            f"duplicate keys in the object list ({len(pairs) - len(set(pairs))} repeats): {shown}{more}; "
            "list each object once (a sampler draws an index more than once where that is wanted)"
        )
    return pairs, sizes


def _list_prefix(client: Client, bucket: str, prefix: str) -> Iterator[ObjectEntry]:
    return (entry for entry in client.list(bucket, prefix or None) if not entry.is_prefix)


def _failed(exc: BaseException, pair: tuple[str, str], position: str) -> BaseException:
    """`exc`, noted with the object it is about (the exception itself is kept, so callers still
    catch `NoSuchKey`, `FileNotFoundError`, ...)."""
    exc.add_note(f"brisk.data: reading s3://{pair[0]}/{pair[1]} ({position})")
    return exc


class _Base:
    """What both datasets share: the objects' client, the transform, the sample's shape."""

    def __init__(
        self,
        transform: Transform | None,
        with_key: bool,
        queue_depth: int,
        client_options: dict[str, Any],
    ) -> None:
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be callable, not {type(transform).__name__}")
        if queue_depth < 1:
            raise ValueError(f"queue_depth must be at least 1, not {queue_depth}")
        self.transform = transform
        self.with_key = with_key
        self.queue_depth = queue_depth
        self._source = _ClientSource(dict(client_options))

    @property
    def client(self) -> Client:
        """This process's client (built on first use in each process)."""
        return self._source.get()

    @property
    def client_options(self) -> dict[str, Any]:
        """The keyword arguments each process's `brisk.Client` is built with."""
        return dict(self._source.options)

    def _sample(self, pair: tuple[str, str], buf: Buffer) -> Any:
        value = buf if self.transform is None else self.transform(buf)
        return (pair[1], value) if self.with_key else value


class ObjectDataset(_Base):
    """A map-style dataset of whole objects: `len(ds)`, `ds[i]`, and `ds.__getitems__(indices)`
    for a batch in one `Client.get_many`.

    Build it with `from_objects` (a key list) or `from_prefix` (every object under a prefix, listed
    once, in the building process; the list, with each object's size, is what workers receive).
    `ds[i]` is `transform(buffer)` (the `brisk.Buffer` itself without a transform), or
    `(key, transform(buffer))` with `with_key=True`.

    Duplicate objects in the list are refused (ValueError naming them): a dataset is a set of
    samples, and a repeated key there is usually a listing concatenated twice. A batch that names
    one index more than once (a sampler with replacement) reads the object once and gives every
    position the same Buffer (each through its own `transform` call).

    The remaining keyword arguments configure `brisk.Client` in each process (`endpoint_url`,
    `max_memory`, `access_key_id`, ...; anything not given comes from the environment as
    `brisk.Client` reads it).
    """

    def __init__(
        self,
        objects: Iterable[ObjectRef],
        *,
        bucket: str | None = None,
        transform: Transform | None = None,
        with_key: bool = False,
        queue_depth: int = 64,
        **client_options: Any,
    ) -> None:
        super().__init__(transform, with_key, queue_depth, client_options)
        self._objects, self._sizes = _resolve(objects, bucket)

    @classmethod
    def from_objects(
        cls,
        objects: Iterable[ObjectRef],
        *,
        bucket: str | None = None,
        transform: Transform | None = None,
        with_key: bool = False,
        queue_depth: int = 64,
        **client_options: Any,
    ) -> ObjectDataset:
        """A dataset of the objects named: `s3://bucket/key` URIs, keys of `bucket`, `(bucket,
        key)` pairs, or `ObjectEntry`s of a listing of `bucket` (their sizes let a batch too large
        for the budget be refused before any request)."""
        return cls(objects, bucket=bucket, transform=transform, with_key=with_key,
                   queue_depth=queue_depth, **client_options)

    @classmethod
    def from_prefix(
        cls,
        uri: str,
        *,
        transform: Transform | None = None,
        with_key: bool = False,
        queue_depth: int = 64,
        **client_options: Any,
    ) -> ObjectDataset:
        """Every object under `s3://bucket/prefix`, listed once now (in key order), with its size.
        An empty listing is a ValueError."""
        bucket, prefix = _split_uri(uri)
        ds = cls.__new__(cls)
        _Base.__init__(ds, transform, with_key, queue_depth, client_options)
        entries = list(_list_prefix(ds.client, bucket, prefix))
        if not entries:
            raise ValueError(f"the dataset has no objects: nothing is listed under s3://{bucket}/{prefix}")
        ds._objects, ds._sizes = _resolve(entries, bucket)
        return ds

    def __len__(self) -> int:
        return len(self._objects)

    def __repr__(self) -> str:
        return f"ObjectDataset({len(self._objects)} objects, transform={self.transform!r})"

    @property
    def objects(self) -> list[tuple[str, str]]:
        """The `(bucket, key)` of each index."""
        return list(self._objects)

    def size(self, index: int) -> int | None:
        """The object's size when known (from a listing), else None."""
        size = self._sizes[index]
        return None if size < 0 else size

    def _pair(self, index: int) -> tuple[str, str]:
        try:
            return self._objects[index]
        except TypeError:
            raise TypeError(f"dataset indices are integers, not {type(index).__name__}") from None
        except IndexError:
            raise IndexError(f"index {index} out of range for a dataset of {len(self._objects)} objects") from None

    def __getitem__(self, index: int) -> Any:
        """One object (one GET)."""
        pair = self._pair(index)
        try:
            buf = self.client.get(*pair)
        except Exception as exc:
            raise _failed(exc, pair, f"index {index}") from None
        return self._sample(pair, buf)

    def __getitems__(self, indices: Sequence[int]) -> list[Any]:
        """The samples of a batch of indices, in their order, read by one `get_many`.

        An index repeated in the batch is read once. When every size is known and the batch's
        objects together exceed the budget's capacity, `MemoryBudgetExceeded` is raised before any
        request (a list holds all its Buffers at once; `ObjectIterableDataset` streams instead).
        A key that fails raises its exception (with a note naming the key), after the batch's other
        Buffers have been given back to the budget."""
        indices = list(indices)
        if not indices:
            return []
        pairs = [self._pair(i) for i in indices]
        unique = list(dict.fromkeys(pairs))
        client = self.client
        sizes = {self._objects[i]: self._sizes[i] for i in indices}
        if all(s >= 0 for s in sizes.values()):
            total = sum(sizes.values())
            capacity = client.memory()["capacity"]
            if total > capacity:
                raise MemoryBudgetExceeded(
                    f"a batch of {len(unique)} objects ({total} bytes) exceeds the memory budget "
                    f"({capacity} bytes) and would be held at once: use a smaller batch, a larger "
                    "max_memory, or ObjectIterableDataset (Client.iter_many), which streams within it",
                    code=None,
                )
        results = client.get_many(None, unique, queue_depth=self.queue_depth)
        failed = [(pair, r) for pair, r in zip(unique, results) if isinstance(r, BaseException)]
        if failed:
            for r in results:
                if isinstance(r, Buffer):
                    r.release()
            pair, exc = failed[0]
            others = f"; {len(failed) - 1} other keys of the batch failed too" if len(failed) > 1 else ""
            if isinstance(exc, MemoryBudgetExceeded):
                others += ("; a list holds all its Buffers at once: use a smaller batch, a larger "
                           "max_memory, or ObjectIterableDataset (Client.iter_many)")
            raise _failed(exc, pair, f"a batch of {len(indices)} indices{others}")
        by_pair = dict(zip(unique, results))
        return [self._sample(pair, by_pair[pair]) for pair in pairs]  # type: ignore[arg-type]


class ObjectIterableDataset(_Base):
    """An iterable dataset of whole objects, read `queue_depth` ahead through `Client.iter_many`.

    Build it with `from_prefix` (the listing is streamed page by page in each worker as it
    iterates, never held whole) or `from_objects` (a key list). Samples come in the order their
    reads complete, not the listing's; `with_key=True` pairs each with its key.

    With `enable_sharding` (the default), a worker process iterates only its shard: the objects
    whose position in the listing (or list) is `shard_index` modulo `shard_count`, where
    `shard_index = rank * num_workers + worker_id` and `shard_count = world_size * num_workers`.
    The workers of every rank together see each object exactly once. Each of the four comes from,
    first found:

    - the constructor's argument (or `shard()`);
    - for the worker, PyTorch's `torch.utils.data.get_worker_info()`, if `torch.utils.data` is
      already imported (a `DataLoader` worker has it; brisk never imports torch); for the rank,
      `torch.distributed` if imported and initialised;
    - the environment: `BRISK_WORKER_ID` and `BRISK_NUM_WORKERS` for the worker, `RANK` and
      `WORLD_SIZE` (as `torchrun` sets them) for the rank;
    - else worker 0 of 1, rank 0 of 1.

    Memory: at most `queue_depth` objects are in flight or read and not yet taken, and every
    Buffer, taken or not, stays within the worker's client budget (a read waits for memory the
    consumer gives back, so a consumer must not hold a whole budget's worth of samples).

    `DataLoader` runs a dataset as iterable only if it is an `IterableDataset`: when
    `torch.utils.data` is loaded, building one registers this class as a virtual subclass of it
    (torch is never imported here).
    """

    def __init__(
        self,
        objects: Iterable[ObjectRef] | None = None,
        *,
        bucket: str | None = None,
        prefix: str | None = None,
        transform: Transform | None = None,
        with_key: bool = False,
        queue_depth: int = 64,
        enable_sharding: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        worker_id: int | None = None,
        num_workers: int | None = None,
        **client_options: Any,
    ) -> None:
        _register_with_torch()
        super().__init__(transform, with_key, queue_depth, client_options)
        if (objects is None) == (prefix is None):
            raise ValueError("give either objects or a bucket and prefix")
        self._objects: list[tuple[str, str]] | None = None
        self._bucket = bucket
        self._prefix = prefix
        if objects is not None:
            self._objects = _resolve(objects, bucket)[0]
        elif not bucket:
            raise ValueError("a prefix needs bucket=")
        self.enable_sharding = enable_sharding
        self.rank, self.world_size = _pair_of(rank, world_size, "rank", "world_size")
        self.worker_id, self.num_workers = _pair_of(worker_id, num_workers, "worker_id", "num_workers")

    @classmethod
    def from_objects(
        cls,
        objects: Iterable[ObjectRef],
        *,
        bucket: str | None = None,
        transform: Transform | None = None,
        with_key: bool = False,
        queue_depth: int = 64,
        enable_sharding: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        worker_id: int | None = None,
        num_workers: int | None = None,
        **client_options: Any,
    ) -> ObjectIterableDataset:
        """A dataset of the objects named (as `ObjectDataset.from_objects` takes them)."""
        return cls(objects, bucket=bucket, transform=transform, with_key=with_key,
                   queue_depth=queue_depth, enable_sharding=enable_sharding, rank=rank,
                   world_size=world_size, worker_id=worker_id, num_workers=num_workers,
                   **client_options)

    @classmethod
    def from_prefix(
        cls,
        uri: str,
        *,
        transform: Transform | None = None,
        with_key: bool = False,
        queue_depth: int = 64,
        enable_sharding: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        worker_id: int | None = None,
        num_workers: int | None = None,
        **client_options: Any,
    ) -> ObjectIterableDataset:
        """Every object under `s3://bucket/prefix`, listed by each worker as it iterates. One
        request (a listing page of one key) checks now that the prefix is not empty: an empty
        one is a ValueError here rather than workers that yield nothing."""
        bucket, prefix = _split_uri(uri)
        ds = cls(bucket=bucket, prefix=prefix, transform=transform, with_key=with_key,
                 queue_depth=queue_depth, enable_sharding=enable_sharding, rank=rank,
                 world_size=world_size, worker_id=worker_id, num_workers=num_workers,
                 **client_options)
        if next(iter(ds.client.list(bucket, prefix or None, page_size=1)), None) is None:
            raise ValueError(f"the dataset has no objects: nothing is listed under s3://{bucket}/{prefix}")
        return ds

    def __repr__(self) -> str:
        source = (f"{len(self._objects)} objects" if self._objects is not None
                  else f"s3://{self._bucket}/{self._prefix}")
        return f"ObjectIterableDataset({source}, transform={self.transform!r})"

    def shard(
        self,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        worker_id: int | None = None,
        num_workers: int | None = None,
    ) -> ObjectIterableDataset:
        """A copy of this dataset with its shard set (a pool's initialiser, or a `DataLoader`'s
        `worker_init_fn`, can give each worker its own); None leaves a setting as it is."""
        copy = self.__class__.__new__(self.__class__)
        copy.__dict__.update(self.__dict__)
        copy._source = _ClientSource(dict(self._source.options))
        if rank is not None or world_size is not None:
            copy.rank, copy.world_size = _pair_of(rank, world_size, "rank", "world_size")
        if worker_id is not None or num_workers is not None:
            copy.worker_id, copy.num_workers = _pair_of(worker_id, num_workers, "worker_id", "num_workers")
        return copy

    def shard_info(self) -> tuple[int, int]:
        """`(shard_index, shard_count)` of this process, resolved as the class says; `(0, 1)`
        without sharding."""
        if not self.enable_sharding:
            return 0, 1
        worker_id, num_workers = self._worker()
        rank, world_size = self._rank()
        return rank * num_workers + worker_id, world_size * num_workers

    def _worker(self) -> tuple[int, int]:
        if self.worker_id is not None and self.num_workers is not None:
            return self.worker_id, self.num_workers
        torch_data = sys.modules.get("torch.utils.data")
        if torch_data is not None:
            info = torch_data.get_worker_info()
            if info is not None:
                return int(info.id), int(info.num_workers)
        return _from_env(WORKER_ID_ENV, NUM_WORKERS_ENV)

    def _rank(self) -> tuple[int, int]:
        if self.rank is not None and self.world_size is not None:
            return self.rank, self.world_size
        dist = sys.modules.get("torch.distributed")
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
        return _from_env(RANK_ENV, WORLD_SIZE_ENV)

    def _pairs(self, client: Client) -> Iterator[tuple[str, str]]:
        if self._objects is not None:
            return iter(self._objects)
        bucket, prefix = self._bucket, self._prefix or ""
        assert bucket is not None
        return ((bucket, entry.key) for entry in _list_prefix(client, bucket, prefix))

    def __iter__(self) -> Iterator[Any]:
        index, count = self.shard_info()
        client = self.client
        pairs = self._pairs(client)
        mine = pairs if count == 1 else (p for i, p in enumerate(pairs) if i % count == index)
        reads = client.iter_many(None, mine, queue_depth=self.queue_depth)
        try:
            for _, pair, result in reads:
                if isinstance(result, BaseException):
                    if isinstance(result, MemoryBudgetExceeded):
                        result.add_note("brisk.data: the object is larger than the worker's whole "
                                        "budget: raise max_memory")
                    raise _failed(result, pair, f"shard {index} of {count}")
                yield self._sample(pair, result)
        finally:
            reads.close()


def _pair_of(index: int | None, count: int | None, index_name: str, count_name: str) -> tuple[int | None, int | None]:
    """Both or neither of an index and its count, checked."""
    if (index is None) != (count is None):
        raise ValueError(f"give {index_name} and {count_name} together")
    if index is not None and count is not None:
        _check(index, count, index_name, count_name)
    return index, count


def _check(index: int, count: int, index_name: str, count_name: str) -> None:
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"{index_name}={index} with {count_name}={count}: need 0 <= {index_name} < {count_name}")


def _from_env(index_var: str, count_var: str) -> tuple[int, int]:
    """An index and a count from the environment (both or neither), else 0 of 1."""
    index_text, count_text = os.environ.get(index_var), os.environ.get(count_var)
    if index_text is None and count_text is None:
        return 0, 1
    if index_text is None or count_text is None:
        raise ValueError(f"{index_var} and {count_var} must be set together")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise ValueError(f"{index_var}={index_text!r}, {count_var}={count_text!r}: expected integers") from None
    _check(index, count, index_var, count_var)
    return index, count
