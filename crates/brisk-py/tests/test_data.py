"""`brisk.data`: the map-style and iterable datasets, in this process and in worker processes run
the way PyTorch's `DataLoader` runs them (an index queue per worker, one result queue, a parent
that watches its workers), with the `fork` and the `spawn` start methods. torch itself is not
needed: the datasets are plain objects, and the loader below does what `DataLoader` does with them.
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import time
import types

import pytest

import brisk
import brisk.data
from brisk.data import ObjectDataset, ObjectIterableDataset
from conftest import ACCESS_KEY, SECRET_KEY

TIMEOUT = 60.0
STALL = b"STALL"


def options(server, **extra) -> dict:
    """The client configuration a dataset carries to its workers."""
    return dict(endpoint_url=server.endpoint, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
                region="us-east-1", **extra)


def body(i: int, size: int = 4096) -> bytes:
    seed = f"{i:06}".encode()
    return (seed * (size // len(seed) + 1))[:size]


def digest(buf) -> str:
    """A sample small enough to send back through a queue, that still names the bytes."""
    return hashlib.sha256(buf).hexdigest()


def populate(client, bucket, count, size=4096, prefix="d/") -> dict[str, str]:
    """`count` objects under `prefix`; their keys and digests."""
    out = {}
    for i in range(count):
        key = f"{prefix}{i:05}"
        data = body(i, size)
        client.put(bucket, key, data)
        out[key] = hashlib.sha256(data).hexdigest()
    return out


class Counting:
    """A `brisk.Client` that records the calls made on it (it stands in for `brisk.data.Client`)."""

    def __init__(self, **kwargs) -> None:
        self._client = brisk.Client(**kwargs)
        self.calls: list[str] = []

    def __getattr__(self, name):
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.calls.append(name)
            return attr(*args, **kwargs)

        return call


# ----- map-style, in this process -------------------------------------------------------------


def test_map_dataset_over_a_key_list(server, client, bucket):
    objects = populate(client, bucket, 12)
    keys = sorted(objects)
    ds = ObjectDataset.from_objects(keys, bucket=bucket, transform=digest, **options(server))
    assert len(ds) == 12
    assert [ds[i] for i in range(12)] == [objects[k] for k in keys]
    assert ds[-1] == objects[keys[-1]]
    with pytest.raises(IndexError, match="out of range"):
        ds[12]
    # URIs and (bucket, key) pairs name the same objects.
    by_uri = ObjectDataset.from_objects([f"s3://{bucket}/{k}" for k in keys], **options(server))
    by_pair = ObjectDataset.from_objects([(bucket, k) for k in keys], **options(server))
    assert by_uri.objects == by_pair.objects == [(bucket, k) for k in keys]
    assert bytes(by_uri[3]) == body(3)  # no transform: the Buffer itself
    assert isinstance(by_uri[3], brisk.Buffer)


def test_map_dataset_over_a_prefix_lists_once_with_sizes(server, client, bucket):
    objects = populate(client, bucket, 7, size=1000)
    client.put(bucket, "other/x", b"not in the prefix")
    ds = ObjectDataset.from_prefix(f"s3://{bucket}/d/", with_key=True, transform=bytes, **options(server))
    assert len(ds) == 7
    assert [ds.size(i) for i in range(7)] == [1000] * 7
    assert [ds[i] for i in range(7)] == [(k, body(i, 1000)) for i, k in enumerate(sorted(objects))]
    # The list was taken once: an object added later is not in it.
    client.put(bucket, "d/99999", b"late")
    assert len(ds) == 7


def test_getitems_is_one_get_many(server, client, bucket, monkeypatch):
    objects = populate(client, bucket, 16)
    keys = sorted(objects)
    monkeypatch.setattr(brisk.data, "Client", Counting)
    ds = ObjectDataset.from_objects(keys, bucket=bucket, transform=digest, **options(server))
    batch = [5, 0, 15, 7, 3]
    assert ds.__getitems__(batch) == [objects[keys[i]] for i in batch]
    reads = [c for c in ds.client.calls if c.startswith("get")]
    assert reads == ["get_many"]
    ds.__getitems__([1, 2])
    assert [c for c in ds.client.calls if c.startswith("get")] == ["get_many", "get_many"]
    assert ds.__getitems__([]) == []


def test_repeated_index_in_a_batch_is_read_once(server, client, bucket):
    objects = populate(client, bucket, 4)
    keys = sorted(objects)
    seen = []

    def transform(buf):
        seen.append(buf)
        return digest(buf)

    ds = ObjectDataset.from_objects(keys, bucket=bucket, transform=transform, **options(server))
    requests = ds.client.metrics()["requests"]
    assert ds.__getitems__([2, 1, 2, 2]) == [objects[keys[i]] for i in (2, 1, 2, 2)]
    assert ds.client.metrics()["requests"] - requests == 2  # two distinct objects, two GETs
    assert len(seen) == 4 and seen[0] is seen[2] is seen[3]  # one Buffer, a transform call each


def test_empty_and_duplicate_key_lists_are_refused(server, client, bucket):
    with pytest.raises(ValueError, match="key list is empty"):
        ObjectDataset.from_objects([], bucket=bucket, **options(server))
    with pytest.raises(ValueError, match="key list is empty"):
        ObjectIterableDataset.from_objects([], bucket=bucket, **options(server))
    with pytest.raises(ValueError, match=rf"nothing is listed under s3://{bucket}/none/"):
        ObjectDataset.from_prefix(f"s3://{bucket}/none/", **options(server))
    with pytest.raises(ValueError, match=rf"nothing is listed under s3://{bucket}/none/"):
        ObjectIterableDataset.from_prefix(f"s3://{bucket}/none/", **options(server))
    with pytest.raises(ValueError, match=rf"duplicate keys .*s3://{bucket}/a"):
        ObjectDataset.from_objects(["a", "b", "a"], bucket=bucket, **options(server))
    with pytest.raises(ValueError, match="duplicate keys"):
        ObjectIterableDataset.from_objects([f"s3://{bucket}/a", (bucket, "a")], **options(server))
    with pytest.raises(ValueError, match="neither a URI"):
        ObjectDataset.from_objects(["a"], **options(server))
    with pytest.raises(TypeError, match="not one string"):
        ObjectDataset.from_objects("abc", bucket=bucket, **options(server))


def test_a_missing_key_names_itself_and_gives_the_batch_back(server, client, bucket):
    populate(client, bucket, 6)
    keys = [f"d/{i:05}" for i in range(6)] + ["d/missing"]
    # A budget of its own: without max_memory the client shares the process's budget with every
    # other client of the test run, whose Buffers would show in `reserved`.
    ds = ObjectDataset.from_objects(keys, bucket=bucket, **options(server, max_memory="64MiB", pool_retention=0,
                                                                   kept_buffers=0))
    with pytest.raises(brisk.NoSuchKey) as one:
        ds[6]
    assert f"s3://{bucket}/d/missing" in "".join(one.value.__notes__)
    with pytest.raises(FileNotFoundError) as batch:
        ds.__getitems__([0, 1, 6, 2])
    assert isinstance(batch.value, brisk.NoSuchKey)
    assert f"s3://{bucket}/d/missing" in "".join(batch.value.__notes__)
    # The batch's other Buffers went back to the budget: nothing is held.
    assert ds.client.memory()["reserved"] == 0
    assert bytes(ds.__getitems__([0, 1])[1]) == body(1)  # and the dataset goes on


def test_a_batch_larger_than_the_budget_is_refused_before_any_request(server, client, bucket):
    populate(client, bucket, 12, size=128 * 1024)
    ds = ObjectDataset.from_prefix(f"s3://{bucket}/d/", **options(server, max_memory="1MiB"))
    requests = ds.client.metrics()["requests"]
    with pytest.raises(brisk.MemoryBudgetExceeded, match="ObjectIterableDataset") as refused:
        ds.__getitems__(list(range(9)))  # 9 x 128 KiB > 1 MiB
    assert isinstance(refused.value, MemoryError)
    assert ds.client.metrics()["requests"] == requests  # refused before any request
    assert [len(b) for b in ds.__getitems__(list(range(8)))] == [128 * 1024] * 8  # exactly the budget
    # Sizes unknown (a plain key list): get_many refuses the objects past the budget, and the
    # error names the iterator form too.
    by_keys = ObjectDataset.from_objects([f"d/{i:05}" for i in range(12)], bucket=bucket,
                                         **options(server, max_memory="1MiB"))
    with pytest.raises(brisk.MemoryBudgetExceeded) as late:
        by_keys.__getitems__(list(range(12)))
    assert "ObjectIterableDataset" in "".join(late.value.__notes__)


def test_the_dataset_pickles_its_configuration_not_its_client(server, client, bucket):
    populate(client, bucket, 3)
    ds = ObjectDataset.from_prefix(f"s3://{bucket}/d/", transform=bytes, **options(server))
    assert ds[0] == body(0)  # the client is built
    copy = pickle.loads(pickle.dumps(ds))
    assert copy._source._client is None  # a pickled dataset builds its own
    assert copy[2] == body(2)
    assert copy.client is not ds.client
    assert copy.client_options == options(server)


# ----- iterable, in this process ----------------------------------------------------------------


def test_iterable_streams_a_prefix(server, client, bucket):
    objects = populate(client, bucket, 40)
    ds = ObjectIterableDataset.from_prefix(f"s3://{bucket}/d/", transform=digest, with_key=True,
                                           queue_depth=8, **options(server))
    got = list(ds)
    assert sorted(k for k, _ in got) == sorted(objects)
    assert dict(got) == objects
    assert sorted(ds) == sorted(got)  # iterable again


@pytest.mark.parametrize("source", ["prefix", "objects"])
def test_shards_by_worker_and_rank_are_disjoint_and_complete(server, client, bucket, source):
    objects = populate(client, bucket, 50)
    if source == "prefix":
        ds = ObjectIterableDataset.from_prefix(f"s3://{bucket}/d/", with_key=True, transform=len,
                                               **options(server))
    else:
        ds = ObjectIterableDataset.from_objects(sorted(objects), bucket=bucket, with_key=True, transform=len,
                                                **options(server))
    shards = {}
    for rank in range(2):
        for worker in range(3):
            shard = ds.shard(rank=rank, world_size=2, worker_id=worker, num_workers=3)
            assert shard.shard_info() == (rank * 3 + worker, 6)
            shards[rank, worker] = [k for k, _ in shard]
    every = [k for keys in shards.values() for k in keys]
    assert sorted(every) == sorted(objects)  # complete, and no key twice
    assert all(8 <= len(keys) <= 9 for keys in shards.values())  # 50 over 6, by position
    # Arguments in the constructor do the same.
    two = ObjectIterableDataset.from_objects(sorted(objects), bucket=bucket, worker_id=1, num_workers=2,
                                             with_key=True, **options(server))
    assert sorted(k for k, _ in two) == sorted(objects)[1::2]
    # Without sharding, every worker sees everything.
    whole = ObjectIterableDataset.from_objects(sorted(objects), bucket=bucket, enable_sharding=False,
                                               worker_id=1, num_workers=2, **options(server))
    assert sum(1 for _ in whole) == 50


def test_shard_from_environment_and_from_torch(server, client, bucket, monkeypatch):
    objects = populate(client, bucket, 20)
    ds = ObjectIterableDataset.from_objects(sorted(objects), bucket=bucket, with_key=True,
                                            **options(server))
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert ds.shard_info() == (0, 1)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("BRISK_WORKER_ID", "0")
    monkeypatch.setenv("BRISK_NUM_WORKERS", "2")
    assert ds.shard_info() == (2, 4)
    assert sorted(k for k, _ in ds) == sorted(objects)[2::4]
    # A DataLoader worker has torch.utils.data imported; its get_worker_info() comes before the
    # environment (a stand-in module: torch is not installed for these tests).
    fake = types.ModuleType("torch.utils.data")
    fake.get_worker_info = lambda: types.SimpleNamespace(id=1, num_workers=3)
    monkeypatch.setitem(sys.modules, "torch.utils.data", fake)
    assert ds.shard_info() == (1 * 3 + 1, 6)
    fake.get_worker_info = lambda: None  # the main process: back to the environment
    assert ds.shard_info() == (2, 4)
    monkeypatch.setenv("BRISK_NUM_WORKERS", "x")
    with pytest.raises(ValueError, match="expected integers"):
        ds.shard_info()
    monkeypatch.setenv("BRISK_NUM_WORKERS", "2")
    monkeypatch.setenv("BRISK_WORKER_ID", "2")
    with pytest.raises(ValueError, match="need 0 <= BRISK_WORKER_ID < BRISK_NUM_WORKERS"):
        ds.shard_info()
    with pytest.raises(ValueError, match="together"):
        ds.shard(worker_id=1)


def test_iterable_memory_stays_within_a_small_budget(server, client, bucket):
    populate(client, bucket, 48, size=128 * 1024)
    ds = ObjectIterableDataset.from_prefix(f"s3://{bucket}/d/", queue_depth=32,
                                           **options(server, max_memory="1MiB"))
    held, count, peak = [], 0, 0
    for buf in ds:
        held.append(buf)  # a consumer that keeps the last four samples
        if len(held) > 4:
            held.pop(0)
        memory = ds.client.memory()
        peak = max(peak, memory["reserved"])
        assert memory["reserved"] <= memory["capacity"] == 1 << 20
        count += 1
    assert count == 48


def test_a_failed_read_in_the_stream_names_its_key(server, client, bucket):
    populate(client, bucket, 5)
    ds = ObjectIterableDataset.from_objects([f"d/{i:05}" for i in range(5)] + ["d/gone"], bucket=bucket,
                                            **options(server))
    with pytest.raises(brisk.NoSuchKey) as missing:
        list(ds)
    assert f"s3://{bucket}/d/gone" in "".join(missing.value.__notes__)


# ----- worker processes, as DataLoader runs them ------------------------------------------------


class WorkerDied(RuntimeError):
    """A worker process ended while batches it had been given were not delivered."""


def map_worker(dataset, worker_id, indices, results, started):
    """DataLoader's worker loop for a map-style dataset with automatic batching: take
    `(batch number, indices)`, deliver `(batch number, samples)` (through `__getitems__`)."""
    while True:
        task = indices.get()
        if task is None:
            return
        number, batch = task
        if started is not None:
            started.set()
        try:
            results.put((number, dataset.__getitems__(batch)))
        except Exception as e:  # DataLoader sends the exception to the parent
            results.put((number, e))


def iter_worker(dataset, worker_id, num_workers, results, mode):
    """DataLoader's worker loop for an iterable dataset: each worker iterates its own copy and
    sends its samples; `None` at the end. `mode` says how the worker learns its shard."""
    try:
        if mode == "env":
            os.environ["BRISK_WORKER_ID"], os.environ["BRISK_NUM_WORKERS"] = str(worker_id), str(num_workers)
        else:
            dataset = dataset.shard(worker_id=worker_id, num_workers=num_workers)
        chunk = []
        for sample in dataset:
            chunk.append(sample)
            if len(chunk) == 8:
                results.put(chunk)
                chunk = []
        results.put(chunk)
        results.put(None)
    except Exception as e:
        results.put(e)


class Loader:
    """The parent side of DataLoader: a worker process per `num_workers`, each with its own index
    queue, batches given out in turn, results gathered from one queue while the workers are watched
    (a dead worker is an error naming it, not a wait for ever)."""

    def __init__(self, context, dataset, num_workers, started=None):
        self.ctx = multiprocessing.get_context(context)
        self.owner = {}
        self.results = self.ctx.Queue()
        self.queues = [self.ctx.Queue() for _ in range(num_workers)]
        self.workers = [
            self.ctx.Process(target=map_worker, args=(dataset, i, q, self.results, started), daemon=True)
            for i, q in enumerate(self.queues)
        ]
        for w in self.workers:
            w.start()

    def give(self, number, batch, worker=None):
        """Queue batch `number` for `worker` (in turn when None)."""
        worker = number % len(self.queues) if worker is None else worker
        self.owner[number] = worker
        self.queues[worker].put((number, batch))

    def gather(self, timeout=TIMEOUT):
        """Every batch given, its samples by batch number; `WorkerDied` (carrying the batches
        delivered and the dead worker's lost ones) as soon as a worker is seen dead."""
        done = {}
        deadline = time.monotonic() + timeout
        while len(done) < len(self.owner):
            try:
                number, samples = self.results.get(timeout=0.2)
            except queue.Empty:
                for i, w in enumerate(self.workers):
                    if not w.is_alive():
                        lost = sorted(n for n, o in self.owner.items() if o == i and n not in done)
                        raise WorkerDied(f"worker {i} (pid {w.pid}) exited with {w.exitcode}; "
                                         f"batches {lost} not delivered", done, lost) from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"batches not delivered within {timeout} s") from None
                continue
            if isinstance(samples, BaseException):
                raise samples
            done[number] = samples
        return done

    def run(self, batches, timeout=TIMEOUT):
        """The batches given out in turn; their samples by batch number."""
        for number, batch in enumerate(batches):
            self.give(number, batch)
        return self.gather(timeout)

    def close(self):
        for q, w in zip(self.queues, self.workers):
            if w.is_alive():
                q.put(None)
        for w in self.workers:
            w.join(10)
            if w.is_alive():
                w.kill()
                w.join(10)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_map_dataset_in_worker_processes_delivers_each_sample_once(server, client, bucket, context):
    objects = populate(client, bucket, 96)
    keys = sorted(objects)
    ds = ObjectDataset.from_prefix(f"s3://{bucket}/d/", transform=digest, with_key=True,
                                   **options(server, max_memory="4MiB"))
    assert ds[0] == (keys[0], objects[keys[0]])  # the parent's client is built before the fork
    order = list(range(96))
    order = order[1::2] + order[::2]  # a shuffle, as a sampler gives
    batches = [order[i:i + 16] for i in range(0, 96, 16)]
    loader = Loader(context, ds, 2)
    try:
        done = loader.run(batches)
    finally:
        loader.close()
    samples = [s for n in sorted(done) for s in done[n]]
    assert [k for k, _ in samples] == [keys[i] for i in order]
    assert dict(samples) == objects
    assert all(w.exitcode == 0 for w in loader.workers)


@pytest.mark.parametrize("context", ["fork", "spawn"])
@pytest.mark.parametrize("mode", ["env", "argument"])
def test_iterable_dataset_in_worker_processes_delivers_each_sample_once(server, client, bucket, context, mode):
    objects = populate(client, bucket, 90)
    ds = ObjectIterableDataset.from_prefix(f"s3://{bucket}/d/", transform=digest, with_key=True,
                                           queue_depth=16, **options(server, max_memory="2MiB"))
    ctx = multiprocessing.get_context(context)
    results = ctx.Queue()
    workers = [ctx.Process(target=iter_worker, args=(ds, i, 2, results, mode), daemon=True) for i in range(2)]
    for w in workers:
        w.start()
    samples, finished = [], 0
    try:
        while finished < 2:
            item = results.get(timeout=TIMEOUT)
            if item is None:
                finished += 1
            elif isinstance(item, BaseException):
                raise item
            else:
                samples.extend(item)
    finally:
        for w in workers:
            w.join(10)
            if w.is_alive():
                w.kill()
    assert len(samples) == 90
    assert dict(samples) == objects
    assert all(w.exitcode == 0 for w in workers)


def stall_once(event, buf):
    """A transform that, for the one object marked STALL, says so and waits to be killed."""
    if bytes(memoryview(buf)[:len(STALL)]) == STALL and not event.is_set():
        event.set()
        time.sleep(TIMEOUT)
    return digest(buf)


@pytest.mark.parametrize("moment", ["reading", "transforming"])
def test_a_worker_killed_mid_batch_is_a_clear_failure_and_the_batch_can_be_read_again(
        server, client, bucket, moment):
    objects = populate(client, bucket, 64, size=64 * 1024)
    stall_key = "d/00040"  # in batch 2, which worker 0 is given
    stall_body = STALL + body(40, 64 * 1024)[len(STALL):]
    client.put(bucket, stall_key, stall_body)
    objects[stall_key] = hashlib.sha256(stall_body).hexdigest()
    ctx = multiprocessing.get_context("fork")
    stalled, started = ctx.Event(), ctx.Event()
    transform = functools.partial(stall_once, stalled) if moment == "transforming" else digest
    ds = ObjectDataset.from_prefix(f"s3://{bucket}/d/", transform=transform, with_key=True,
                                   **options(server))
    batches = [list(range(i, i + 16)) for i in range(0, 64, 16)]
    loader = Loader("fork", ds, 2, started=started)
    victim = loader.workers[0]
    try:
        loader.give(2, batches[2], worker=0)
        if moment == "reading":
            assert started.wait(TIMEOUT)  # it has taken the batch: its client and reads are starting
        else:
            assert stalled.wait(TIMEOUT)  # its reads are done, its Buffers held, half transformed
        os.kill(victim.pid, signal.SIGKILL)
        for n in (0, 1, 3):
            loader.give(n, batches[n])
        t0 = time.monotonic()
        with pytest.raises(WorkerDied, match=rf"worker 0 \(pid {victim.pid}\) exited with -9") as died:
            loader.gather()
        assert time.monotonic() - t0 < TIMEOUT  # noticed, not waited on
        done, lost = died.value.args[1], died.value.args[2]
        assert 2 in lost and 0 in lost and 2 not in done
    finally:
        loader.close()
    # Nothing is lost: what was not delivered is read again by a fresh worker.
    again = Loader("fork", ObjectDataset.from_prefix(f"s3://{bucket}/d/", transform=digest, with_key=True,
                                                     **options(server)), 1)
    try:
        redo = [n for n in range(4) if n not in done]
        for n in redo:
            again.give(n, batches[n])
        redone = again.gather()
    finally:
        again.close()
    samples = [s for part in (done, redone) for n in sorted(part) for s in part[n]]
    assert sorted(k for k, _ in samples) == sorted(objects)
    assert dict(samples) == objects
    # The server and the parent's client are unaffected.
    assert bytes(client.get(bucket, "d/00003")) == body(3, 64 * 1024)


def peak_worker(dataset, results):
    """A worker that iterates its dataset holding two samples (half its budget), and reports its
    client's peak."""
    try:
        held, peak, count = [], 0, 0
        for buf in dataset:
            held.append(buf)
            if len(held) > 2:
                held.pop(0)
            peak = max(peak, dataset.client.memory()["reserved"])
            count += 1
        results.put((count, peak, dataset.client.memory()["capacity"]))
    except Exception as e:
        results.put(e)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_each_worker_is_bounded_by_its_own_budget(brisk_server, context):
    client = brisk_server.client()
    bucket = "data-mem-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    populate(client, bucket, 40, size=256 * 1024)
    ds = ObjectIterableDataset.from_prefix(f"s3://{bucket}/d/", queue_depth=64,
                                           **options(brisk_server, max_memory="1MiB"))
    ctx = multiprocessing.get_context(context)
    results = ctx.Queue()
    workers = [ctx.Process(target=peak_worker, args=(ds.shard(worker_id=i, num_workers=2), results))
               for i in range(2)]
    for w in workers:
        w.start()
    try:
        reports = [results.get(timeout=TIMEOUT) for _ in workers]
    finally:
        for w in workers:
            w.join(10)
            if w.is_alive():
                w.kill()
    for report in reports:
        if isinstance(report, BaseException):
            raise report
    assert sorted(count for count, _, _ in reports) == [20, 20]
    for _, peak, capacity in reports:
        assert capacity == 1 << 20
        assert 0 < peak <= capacity


def test_an_iterable_dataset_is_a_torch_iterable_dataset_when_torch_is_loaded(server, monkeypatch):
    import abc

    class IterableDataset(abc.ABC):  # torch's is an ABC through collections.abc.Iterable
        pass

    fake = types.ModuleType("torch.utils.data")
    fake.IterableDataset = IterableDataset
    monkeypatch.setitem(sys.modules, "torch.utils.data", fake)
    ds = ObjectIterableDataset.from_objects(["s3://b/k"], **options(server))
    assert isinstance(ds, IterableDataset)
