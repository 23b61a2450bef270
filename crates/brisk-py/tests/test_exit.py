"""A process that read parquet through `brisk://` exits with status 0, every time.

pyarrow finishes a read on its own threads: after `read_table` returns, a pool thread may still drop
the last reference to a Python object the read used (the fsspec file, a buffer read from it, the
filesystem handler), which takes the GIL. Once the interpreter is finalising, CPython ends such a
thread inside a C++ destructor and the process aborts ("terminate called without an active
exception", status 134). Each read runs in a fresh interpreter, one after another: before `brisk`
waited for pyarrow's threads at exit, 10 to 16 of 20 such runs aborted here. A scan left
unfinished at exit (its read-ahead still calling into brisk) hung instead, every time."""

from __future__ import annotations

import subprocess
import sys
import uuid

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import brisk
from conftest import ACCESS_KEY, SECRET_KEY

RUNS = 20
ROWS = 1_000_000
ROW_GROUPS = 10
CHILD_TIMEOUT = 60
SCAN_TIMEOUT = 20  # a process that exits takes about 1 s

READ = """
import sys
import fsspec, pyarrow.fs, pyarrow.parquet as pq
endpoint, path, rows, how = sys.argv[1:5]
fs = fsspec.filesystem("brisk", endpoint_url=endpoint, key={key!r}, secret={secret!r}, region="us-east-1")
if how == "handler":
    table = pq.read_table(path, filesystem=pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(fs)))
    assert table.num_rows == int(rows), table.num_rows
elif how == "fs":
    table = pq.read_table(path, filesystem=fs)
    assert table.num_rows == int(rows), table.num_rows
else:  # the first batch of a scan, the rest left to pyarrow's read-ahead
    import pyarrow.dataset as ds
    batch = next(iter(ds.dataset(path, filesystem=fs, format="parquet").to_batches()))
    assert batch.num_rows > 0
""".format(key=ACCESS_KEY, secret=SECRET_KEY)


@pytest.fixture(scope="module")
def parquet_path(brisk_server):
    """A parquet file of 8 float64 columns in 10 row groups (80 MB), written through brisk://."""
    client = brisk_server.client()
    bucket = "exit-" + uuid.uuid4().hex[:12]
    client.create_bucket(bucket)
    fs = fsspec.filesystem("brisk", endpoint_url=brisk_server.endpoint, key=ACCESS_KEY, secret=SECRET_KEY,
                           region="us-east-1", skip_instance_cache=True)
    rng = np.random.default_rng(0)
    columns = {f"c{i}": rng.random(ROWS) for i in range(8)}
    path = f"{bucket}/x.parquet"
    with fs.open(path, "wb") as f:
        pq.write_table(pa.table(columns), f, row_group_size=ROWS // ROW_GROUPS)
    yield path
    try:
        client.delete_many(bucket, [e.key for e in client.list(bucket)])
        client.delete_bucket(bucket)
    except brisk.Error:
        pass


def read_in_a_child(endpoint: str, path: str, how: str, timeout: float = CHILD_TIMEOUT):
    return subprocess.run([sys.executable, "-c", READ, endpoint, path, str(ROWS), how], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("how", ["handler", "fs"])
def test_a_process_that_read_parquet_exits_cleanly(brisk_server, parquet_path, how):
    runs = [read_in_a_child(brisk_server.endpoint, parquet_path, how) for _ in range(RUNS)]
    failed = [r for r in runs if r.returncode != 0 or "terminate called" in r.stderr]
    assert not failed, (
        f"{len(failed)} of {RUNS} reads did not exit cleanly: "
        + "; ".join(f"status {r.returncode}: {r.stderr.strip()[-300:]!r}" for r in failed[:3])
    )


def test_a_process_that_left_a_scan_unfinished_exits(brisk_server, parquet_path):
    for _ in range(3):
        try:
            run = read_in_a_child(brisk_server.endpoint, parquet_path, "scan", SCAN_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the process did not exit within {SCAN_TIMEOUT} s")
        assert run.returncode == 0, run.stderr[-500:]


ASYNC_GETS = """
import asyncio, sys
import brisk
endpoint, bucket, count = sys.argv[1:4]
client = brisk.Client(endpoint, access_key_id={key!r}, secret_access_key={secret!r}, region="us-east-1")

async def main():
    gate = asyncio.Semaphore(64)

    async def one(i):
        async with gate:
            return await client.get_async(bucket, f"o/{{i}}")

    return await asyncio.gather(*(one(i) for i in range(int(count))))

assert len(asyncio.run(main())) == int(count)
""".format(key=ACCESS_KEY, secret=SECRET_KEY)


def test_a_process_whose_event_loop_got_many_results_exits_cleanly(brisk_server):
    """`asyncio.run` can return while a runtime worker is still inside `call_soon_threadsafe`'s
    wake-up write (the GIL released): before brisk's exit hook waited for such deliveries, the
    worker was ended by CPython during finalisation and 4 of 6 such processes aborted."""
    client = brisk_server.client()
    bucket = "exit-" + uuid.uuid4().hex[:12]
    client.create_bucket(bucket)
    count, body = 512, b"x" * 131072
    try:
        for i in range(count):
            client.put(bucket, f"o/{i}", body)
        for run in range(8):
            done = subprocess.run([sys.executable, "-c", ASYNC_GETS, brisk_server.endpoint, bucket, str(count)],
                                  capture_output=True, text=True, timeout=CHILD_TIMEOUT, stdin=subprocess.DEVNULL)
            assert done.returncode == 0, (run, done.returncode, done.stderr[-2000:])
    finally:
        client.delete_many(bucket, [f"o/{i}" for i in range(count)])
        client.delete_bucket(bucket)
