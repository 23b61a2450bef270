#!/usr/bin/env python3
"""The Python package next to the Python clients people use: brisk against obstore, boto3 and s3fs,
each client in its own fresh process, against one `brisk serve`.

Run through `bench/python.sh` (which makes the pinned venvs, installs the package and builds the
server); by hand:

    .bench-venv/bin/python bench/python_clients.py run [--quick] [--repeats N] [--cases get,random,upload]
                           [--depths 1,8,64,128] [--duration S] [--clients brisk-get,obstore,...]
    .bench-venv/bin/python bench/python_clients.py table bench/results/python-brisk-DATE.tsv
    PYTHON bench/python_clients.py drive CLIENT CASE ENDPOINT BUCKET KEY SIZE DEPTH SECONDS [FILE]

`run` starts ONE server (`brisk serve`, fsync on; compare.py's start/stop), writes a 1 GiB object
(64 MiB with --quick) and a 1-byte one, then runs every case with every client, REPEATS times, the
clients in a rotated order in each repeat; round 1 is a warm-up, measured but left out of the medians
(the first processes after the upload pay the kernel's page reclaim). Cases and clients:

  get      the whole object into memory, once per fresh process:
             brisk-get       client.get(bucket, key) -> brisk.Buffer (one exact-size allocation)
             brisk-get_into  client.get_into(bucket, key, array): a numpy array allocated and written
                             once before the window (a reused buffer, as a loop over objects has)
             obstore         obstore.get(store, key).bytes()
             boto3           get_object()["Body"].read()
             s3fs            S3FileSystem().cat_file(path)
  random   random block-aligned 256 KiB ranges at queue depth 1, 8, 64 and 128, for DURATION seconds:
             brisk-ranges    client.get_ranges(offsets, lengths, queue_depth=QD): batches of
                             BATCH(QD) ranges, each batch's Buffers held until the batch is done
                             (what a data loader holding one batch of samples does)
             brisk-into      the same batches with into= one numpy array reused by every batch
             obstore-ranges  obstore.get_ranges(store, key, starts, lengths), the same batches
             obstore-tasks   QD asyncio tasks, each looping get_range_async (a semaphore of QD)
             boto3           QD threads (max_pool_connections=QD), each looping
                             get_object(Range=...)["Body"].read()
             s3fs-ranges     fs.cat_ranges(paths, starts, ends, batch_size=QD), the same batches
             s3fs-open       QD threads, each with its own fs.open(path) file (s3fs's defaults:
                             block_size 50 MiB, "readahead" cache) doing seek() + read(256 KiB);
                             at QD 1 and 8 only (S3FS_OPEN_MAX_DEPTH): each read fetches 50 MiB, so
                             64 threads' first reads alone would move 3.2 GiB past the window
  write    1 GiB written from Python 1 MiB at a time to a file object, closed inside the window:
             brisk-writer    client.open_writer(bucket, key) (8 MiB parts, 4 in flight)
             brisk-fsspec    fsspec.open("brisk://bucket/key", "wb") (an ObjectWriter beneath)
             brisk-spool     what brisk.fsspec did before: a temporary file, then client.upload
             obstore         obstore.open_writer(store, key)
             s3fs            fs.open(path, "wb") (5 MiB blocks)
  sequential       the object read front to back 256 KiB at a time: brisk open_reader, brisk's fsspec
                   file (and, as brisk-fsspec-blocks, with the former GET per 1 MiB block), obstore
                   open_reader, boto3's streaming body, s3fs open() (50 MiB blocks); --rtt-ms N puts
                   bench/latency-proxy in front of the server for every client
  upload_fileobj   the 1 GiB file, opened before the window: brisk upload_fileobj, obstore put(file),
                   boto3 upload_fileobj, s3fs open("wb") + shutil.copyfileobj
  download_fileobj the object into a file opened before the window: brisk download_fileobj, obstore
                   get() chunks, boto3 download_fileobj, s3fs open("rb") + shutil.copyfileobj
  upload   a 1 GiB file (64 MiB with --quick) from the page cache:
             brisk-upload    client.upload(path, bucket, key) (8 MiB parts, 4 in flight)
             obstore         obstore.put(store, key, Path) (5 MiB parts, 12 in flight)
             boto3           upload_file (8 MiB parts, 10 threads)
             s3fs            fs.put_file (50 MiB parts)

What is measured, and from where:
  - inside the driver, around the measured operation only (after imports, client set-up and, for
    random reads, the object's HEAD): wall time, CPU (user + sys from getrusage(RUSAGE_SELF)),
    VmRSS just before and VmHWM just after (/proc/self/status): the process's growth while it ran;
  - from outside: peak RSS of the whole process (`/usr/bin/time -v`), and the server's CPU (utime +
    stime of its /proc/<pid>/stat before and after).
Every figure is per process and the table gives medians over the repeats after the warm-up.

boto3 and obstore come from .bench-venv (bench/venv.sh pins them); s3fs runs in .bench-venv-s3fs
(its aiobotocore pins an older botocore than boto3 1.44 wants), with `--s3fs-python`.
Writes bench/results/python-SERVER-DATE.{tsv,json,md}.
"""

import argparse
import datetime
import json
import os
import random
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

import benchlib
# The server, environment and /usr/bin/time helpers of bench/compare.py (no third-party imports at
# load time, so that the s3fs venv can load it too).
import compare
# bench/latency-proxy's driver, for --rtt-ms (stdlib only at load time, as compare.py).
import random_reads as random_bench
from benchlib import GIB, KIB, MIB, brisk_client, status_kib

ROOT = benchlib.ROOT
BUCKET = "python"
BLOCK = 256 * KIB
SEED = 0x5EED
CLIENTS = {
    "get": ("brisk-get", "brisk-get_into", "obstore", "boto3", "s3fs"),
    "random": ("brisk-ranges", "brisk-into", "obstore-ranges", "obstore-tasks", "boto3", "s3fs-ranges",
               "s3fs-open"),
    "upload": ("brisk-upload", "obstore", "boto3", "s3fs"),
    "write": ("brisk-writer", "brisk-fsspec", "brisk-spool", "obstore", "s3fs"),
    "upload_fileobj": ("brisk-fileobj", "obstore", "boto3", "s3fs"),
    "download_fileobj": ("brisk-fileobj", "brisk-reader", "obstore", "boto3", "s3fs"),
    "sequential": ("brisk-reader", "brisk-fsspec", "brisk-fsspec-blocks", "obstore", "boto3", "s3fs"),
}
LABELS = {
    ("get", "brisk-get"): "brisk `get` -> `Buffer`",
    ("get", "brisk-get_into"): "brisk `get_into` (reused numpy array)",
    ("get", "obstore"): "obstore `get().bytes()`",
    ("get", "boto3"): 'boto3 `get_object()["Body"].read()`',
    ("get", "s3fs"): "s3fs `cat_file`",
    ("random", "brisk-ranges"): "brisk `get_ranges` -> `Buffer`s",
    ("random", "brisk-into"): "brisk `get_ranges(into=array)`",
    ("random", "obstore-ranges"): "obstore `get_ranges`",
    ("random", "obstore-tasks"): "obstore QD tasks x `get_range_async`",
    ("random", "boto3"): "boto3, QD threads",
    ("random", "s3fs-ranges"): "s3fs `cat_ranges(batch_size=QD)`",
    ("random", "s3fs-open"): "s3fs QD threads x `open().read()`",
    ("upload", "brisk-upload"): "brisk `upload`",
    ("upload", "obstore"): "obstore `put(store, key, Path)`",
    ("upload", "boto3"): "boto3 `upload_file`",
    ("upload", "s3fs"): "s3fs `put_file`",
    ("write", "brisk-writer"): "brisk `open_writer().write()`",
    ("write", "brisk-fsspec"): "brisk `fsspec.open(\"brisk://...\", \"wb\")`",
    ("write", "brisk-spool"): "brisk's former fsspec write: temporary file, then `upload`",
    ("write", "obstore"): "obstore `open_writer().write()`",
    ("write", "s3fs"): "s3fs `open(\"wb\").write()`",
    ("upload_fileobj", "brisk-fileobj"): "brisk `upload_fileobj`",
    ("upload_fileobj", "obstore"): "obstore `put(store, key, file)`",
    ("upload_fileobj", "boto3"): "boto3 `upload_fileobj`",
    ("upload_fileobj", "s3fs"): "s3fs `open(\"wb\")` + `shutil.copyfileobj`",
    ("download_fileobj", "brisk-fileobj"): "brisk `download_fileobj`",
    ("download_fileobj", "brisk-reader"): "brisk `open_reader` + `shutil.copyfileobj` (one GET)",
    ("download_fileobj", "obstore"): "obstore `get()` chunks -> `file.write`",
    ("download_fileobj", "boto3"): "boto3 `download_fileobj`",
    ("download_fileobj", "s3fs"): "s3fs `open(\"rb\")` + `shutil.copyfileobj`",
}
LABELS.update({
    ("sequential", "brisk-reader"): "brisk `open_reader().read()`",
    ("sequential", "brisk-fsspec"): "brisk `fsspec.open(\"brisk://...\").read()`",
    ("sequential", "brisk-fsspec-blocks"): "brisk's former fsspec read: a GET per 1 MiB block",
    ("sequential", "obstore"): "obstore `open_reader().read()`",
    ("sequential", "boto3"): 'boto3 `get_object()["Body"].read()`',
    ("sequential", "s3fs"): "s3fs `open().read()` (50 MiB blocks)",
})
# What the sequential case reads per call: 256 KiB, as pandas' CSV reader asks a file for.
READ_CHUNK = 256 * KIB
# What the write case writes per call: 1 MiB, as a Parquet or CSV writer's buffered flushes do.
WRITE_CHUNK = MIB
FULL_SIZE, QUICK_SIZE = GIB, 64 * MIB
FULL_DEPTHS, QUICK_DEPTHS = (1, 8, 64, 128), (8, 64)
FULL_DURATION, QUICK_DURATION = 5.0, 1.0
RUN_SLACK_S = 120
S3FS_OPEN_MAX_DEPTH = 8


def batch_ranges(depth):
    """Ranges per batch for the batch APIs: eight queue depths, so the batch's tail (fewer than QD
    left in flight) is a small part of it; at least 64, at most 1,024 (256 MiB of results)."""
    return min(max(8 * depth, 64), 1024)


# ---------------------------------------------------------------------------------------------------
# Drivers: what runs inside one measured process. Each returns (operations, bytes); the frame around
# it measures wall time, CPU and memory and prints one JSON line.


def obstore_store(endpoint, bucket, size):
    """benchlib's obstore store with a request timeout that moving `size` bytes does not outlast
    (obstore's default is 30 s)."""
    return benchlib.obstore_store(endpoint, bucket, timeout_s=compare.run_timeout(size))


def s3fs_filesystem(endpoint):
    import s3fs

    return s3fs.S3FileSystem(endpoint_url=endpoint, key=benchlib.ACCESS_KEY, secret=benchlib.SECRET_KEY,
                             client_kwargs={"region_name": benchlib.REGION},
                             config_kwargs={"s3": {"addressing_style": "path"}})


class Measured:
    """The measured window: wall time, getrusage CPU, RSS before and the high-water mark after."""

    def __enter__(self):
        self.rss_before = status_kib("VmRSS")
        self.ru = resource.getrusage(resource.RUSAGE_SELF)
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.started
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu = (ru.ru_utime - self.ru.ru_utime) + (ru.ru_stime - self.ru.ru_stime)
        self.hwm_after = status_kib("VmHWM")
        return False


def get_whole(client, endpoint, bucket, key, size):
    """Set-up outside the window, then a callable that does the one measured GET."""
    if client == "brisk-get":
        c = brisk_client(endpoint)
        return lambda: len(c.get(bucket, key))
    if client == "brisk-get_into":
        import numpy as np

        c = brisk_client(endpoint)
        array = np.empty(size, dtype=np.uint8)
        array.fill(1)  # written once: a buffer reused from a previous object
        return lambda: c.get_into(bucket, key, array)
    if client == "obstore":
        import obstore

        store = obstore_store(endpoint, bucket, size)
        return lambda: len(obstore.get(store, key).bytes())
    if client == "boto3":
        s3 = benchlib.boto3_client(endpoint)
        return lambda: len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    if client == "s3fs":
        fs = s3fs_filesystem(endpoint)
        return lambda: len(fs.cat_file(f"{bucket}/{key}"))
    raise ValueError(client)


def upload_file(client, endpoint, bucket, key, size, path):
    if client == "brisk-upload":
        c = brisk_client(endpoint)
        return lambda: (c.upload(path, bucket, key), size)[1]
    if client == "obstore":
        import pathlib

        import obstore

        store = obstore_store(endpoint, bucket, size)
        return lambda: (obstore.put(store, key, pathlib.Path(path)), size)[1]
    if client == "boto3":
        s3 = benchlib.boto3_client(endpoint)
        return lambda: (s3.upload_file(path, bucket, key), size)[1]
    if client == "s3fs":
        fs = s3fs_filesystem(endpoint)
        return lambda: (fs.put_file(path, f"{bucket}/{key}"), size)[1]
    raise ValueError(client)


def write_stream(client, endpoint, bucket, key, size):
    """`size` bytes written from Python 1 MiB at a time (the same chunk again and again) to a file
    object of each client, closed (stored) inside the window."""
    chunk = os.urandom(WRITE_CHUNK)
    count = size // WRITE_CHUNK

    def write_all(f):
        for _ in range(count):
            f.write(chunk)

    if client == "brisk-writer":
        c = brisk_client(endpoint)

        def run():
            with c.open_writer(bucket, key) as f:
                write_all(f)
            return size
        return run
    if client == "brisk-fsspec":
        import fsspec

        fs = fsspec.filesystem("brisk", endpoint_url=endpoint, client_kwargs={"addressing_style": "path"})

        def run():
            with fs.open(f"{bucket}/{key}", "wb") as f:
                write_all(f)
            return size
        return run
    if client == "brisk-spool":
        import tempfile

        c = brisk_client(endpoint)

        def run():
            # What brisk.fsspec's files did before they wrote through open_writer (the same calls).
            spool = tempfile.NamedTemporaryFile(prefix="brisk-fsspec-", delete=False)
            write_all(spool)
            spool.close()
            try:
                c.upload(spool.name, bucket, key)
            finally:
                os.unlink(spool.name)
            return size
        return run
    if client == "obstore":
        import obstore

        store = obstore_store(endpoint, bucket, size)

        def run():
            with obstore.open_writer(store, key) as f:
                write_all(f)
            return size
        return run
    if client == "s3fs":
        fs = s3fs_filesystem(endpoint)

        def run():
            with fs.open(f"{bucket}/{key}", "wb") as f:
                write_all(f)
            return size
        return run
    raise ValueError(client)


def sequential_read(client, endpoint, bucket, key, size):
    """The object read front to back READ_CHUNK at a time through each client's file object (or
    streaming body), opened inside the window."""

    def drain(f):
        n = 0
        while chunk := f.read(READ_CHUNK):
            n += len(chunk)
        return n

    if client == "brisk-reader":
        c = brisk_client(endpoint)

        def run():
            with c.open_reader(bucket, key) as f:
                return drain(f)
        return run
    if client in ("brisk-fsspec", "brisk-fsspec-blocks"):
        import fsspec

        fs = fsspec.filesystem("brisk", endpoint_url=endpoint, client_kwargs={"addressing_style": "path"})
        if client == "brisk-fsspec-blocks":
            from brisk.fsspec import BriskFile

            BriskFile._sequential = lambda self, start: None  # every fetch a ranged GET, as before

        def run():
            with fs.open(f"{bucket}/{key}", "rb") as f:
                return drain(f)
        return run
    if client == "obstore":
        import obstore

        store = obstore_store(endpoint, bucket, size)

        def run():
            f = obstore.open_reader(store, key)  # not a context manager in 0.12
            try:
                return drain(f)
            finally:
                f.close()
        return run
    if client == "boto3":
        s3 = benchlib.boto3_client(endpoint)
        return lambda: drain(s3.get_object(Bucket=bucket, Key=key)["Body"])
    if client == "s3fs":
        fs = s3fs_filesystem(endpoint)

        def run():
            with fs.open(f"{bucket}/{key}", "rb") as f:
                return drain(f)
        return run
    raise ValueError(client)


def upload_fileobj(client, endpoint, bucket, key, size, path):
    """A file opened before the window, uploaded through each client's file-object call."""
    f = open(path, "rb")
    if client == "brisk-fileobj":
        c = brisk_client(endpoint)
        return lambda: c.upload_fileobj(f, bucket, key).size
    if client == "obstore":
        import obstore

        store = obstore_store(endpoint, bucket, size)
        return lambda: (obstore.put(store, key, f), size)[1]
    if client == "boto3":
        s3 = benchlib.boto3_client(endpoint)
        return lambda: (s3.upload_fileobj(f, bucket, key), size)[1]
    if client == "s3fs":
        fs = s3fs_filesystem(endpoint)

        def run():
            with fs.open(f"{bucket}/{key}", "wb") as out:
                shutil.copyfileobj(f, out, 8 * MIB)
            return size
        return run
    raise ValueError(client)


def download_fileobj(client, endpoint, bucket, key, size, path):
    """The object written to a file opened before the window (`path`, removed by the caller)."""
    out = open(path, "wb")
    if client == "brisk-fileobj":
        c = brisk_client(endpoint)
        return lambda: c.download_fileobj(bucket, key, out)
    if client == "brisk-reader":
        c = brisk_client(endpoint)

        def run():
            with c.open_reader(bucket, key) as src:
                shutil.copyfileobj(src, out, 8 * MIB)
            return out.tell()
        return run
    if client == "obstore":
        import obstore

        store = obstore_store(endpoint, bucket, size)

        def run():
            n = 0
            for chunk in obstore.get(store, key):
                out.write(chunk)
                n += len(chunk)
            return n
        return run
    if client == "boto3":
        s3 = benchlib.boto3_client(endpoint)
        def run():
            s3.download_fileobj(bucket, key, out)
            out.flush()  # its threads write parts out of order: the size is the file's, not tell()
            return os.fstat(out.fileno()).st_size
        return run
    if client == "s3fs":
        fs = s3fs_filesystem(endpoint)

        def run():
            with fs.open(f"{bucket}/{key}", "rb") as src:
                shutil.copyfileobj(src, out, 8 * MIB)
            return out.tell()
        return run
    raise ValueError(client)


def random_offsets(rng, blocks, n):
    return [rng.randrange(blocks) * BLOCK for _ in range(n)]


def random_reads(client, endpoint, bucket, key, size, depth, seconds):
    """Set-up outside the window, then a callable reading random blocks for `seconds`; it returns
    (reads, bytes)."""
    blocks = size // BLOCK
    batch = batch_ranges(depth)
    rng = random.Random(SEED)

    def batches(read_batch):
        def run():
            reads = got = 0
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                got += read_batch(random_offsets(rng, blocks, batch))
                reads += batch
            return reads, got
        return run

    if client == "brisk-ranges":
        c = brisk_client(endpoint)
        c.head(bucket, key)  # the connection and the object, before the window

        def read_batch(offsets):
            buffers = c.get_ranges(bucket, key, offsets, BLOCK, queue_depth=depth)
            n = sum(len(b) for b in buffers)
            del buffers  # the batch's blocks go back to the pool
            return n
        return batches(read_batch)
    if client == "brisk-into":
        import numpy as np

        c = brisk_client(endpoint)
        c.head(bucket, key)
        array = np.empty(batch * BLOCK, dtype=np.uint8)
        return batches(lambda offsets: c.get_ranges(bucket, key, offsets, BLOCK, into=array, queue_depth=depth))
    if client == "obstore-ranges":
        import obstore

        store = obstore_store(endpoint, bucket, size)
        obstore.head(store, key)
        return batches(lambda offsets: sum(len(b) for b in obstore.get_ranges(
            store, key, starts=offsets, lengths=[BLOCK] * len(offsets))))
    if client == "s3fs-ranges":
        fs = s3fs_filesystem(endpoint)
        path = f"{bucket}/{key}"
        fs.info(path)
        return batches(lambda offsets: sum(len(b) for b in fs.cat_ranges(
            [path] * len(offsets), offsets, [o + BLOCK for o in offsets], batch_size=depth)))
    if client == "obstore-tasks":
        import asyncio

        import obstore

        store = obstore_store(endpoint, bucket, size)
        obstore.head(store, key)

        def run():
            counts = [0, 0]

            async def worker(seed, deadline):
                r = random.Random(seed)
                while time.monotonic() < deadline:
                    off = r.randrange(blocks) * BLOCK
                    n = len(await obstore.get_range_async(store, key, start=off, length=BLOCK))
                    counts[0] += 1  # after the await: a `+=` across it would lose other tasks' updates
                    counts[1] += n

            async def main():
                deadline = time.monotonic() + seconds
                await asyncio.gather(*(worker(SEED + i, deadline) for i in range(depth)))

            asyncio.run(main())
            return tuple(counts)
        return run
    if client in ("boto3", "s3fs-open"):
        if client == "boto3":
            s3 = benchlib.boto3_client(endpoint, max_pool_connections=depth)
            s3.head_object(Bucket=bucket, Key=key)

            def reader():
                def read(off):
                    return len(s3.get_object(Bucket=bucket, Key=key,
                                             Range=f"bytes={off}-{off + BLOCK - 1}")["Body"].read())
                return read, lambda: None
        else:
            fs = s3fs_filesystem(endpoint)
            path = f"{bucket}/{key}"
            fs.info(path)

            def reader():
                f = fs.open(path, "rb")

                def read(off):
                    f.seek(off)
                    return len(f.read(BLOCK))
                return read, f.close

        def run():
            from concurrent.futures import ThreadPoolExecutor

            deadline = time.monotonic() + seconds

            def worker(seed):
                r = random.Random(seed)
                read, close = reader()
                reads = got = 0
                while time.monotonic() < deadline:
                    got += read(r.randrange(blocks) * BLOCK)
                    reads += 1
                close()
                return reads, got

            with ThreadPoolExecutor(max_workers=depth) as pool:
                results = list(pool.map(worker, range(SEED, SEED + depth)))
            return sum(r for r, _ in results), sum(g for _, g in results)
        return run
    raise ValueError(client)


def drive(client, case, endpoint, bucket, key, size, depth, seconds, path=None):
    size, depth, seconds = int(size), int(depth), float(seconds)
    if case == "get":
        op = get_whole(client, endpoint, bucket, key, size)
    elif case == "upload":
        op = upload_file(client, endpoint, bucket, key, size, path)
    elif case == "write":
        op = write_stream(client, endpoint, bucket, key, size)
    elif case == "sequential":
        op = sequential_read(client, endpoint, bucket, key, size)
    elif case == "upload_fileobj":
        op = upload_fileobj(client, endpoint, bucket, key, size, path)
    elif case == "download_fileobj":
        op = download_fileobj(client, endpoint, bucket, key, size, path)
    else:
        op = random_reads(client, endpoint, bucket, key, size, depth, seconds)
    with Measured() as m:
        result = op()
    ops, moved = result if isinstance(result, tuple) else (1, result)
    print(json.dumps({"ops": ops, "bytes": moved, "seconds": m.seconds, "cpu_s": m.cpu,
                      "rss_before_kib": m.rss_before, "hwm_after_kib": m.hwm_after}), flush=True)
    os._exit(0)  # no interpreter teardown (client threads): the window is over


# ---------------------------------------------------------------------------------------------------
# The run.


def measure(server, python, client, case, key, size, depth, seconds, path=None, endpoint=None):
    """One client's run in a fresh process; `endpoint` (a latency proxy's) instead of the server's."""
    endpoint = endpoint or server.endpoint
    row = {"server": server.kind, "case": case, "client": client, "size": size, "depth": depth}
    cmd = ["/usr/bin/time", "-v", python, os.path.abspath(__file__), "drive", client, case, endpoint,
           BUCKET, key, str(size), str(depth), str(seconds)] + ([path] if path else [])
    timeout = compare.run_timeout(size) + seconds + RUN_SLACK_S
    cpu0 = server.cpu_seconds()
    try:
        proc = subprocess.run(cmd, env=compare.client_env(endpoint), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**row, "status": f"timed out after {timeout:.0f} s"}
    row["server_cpu_s"] = server.cpu_seconds() - cpu0
    if proc.returncode != 0:
        said = " ".join(proc.stderr.split("\tCommand being timed:")[0].strip().splitlines()[-3:])
        return {**row, "status": f"exit {proc.returncode}: {said[-300:]}"}
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        outside = compare.parse_time_v(proc.stderr)
    except (IndexError, ValueError, KeyError) as e:
        return {**row, "status": f"unreadable output: {e}"}
    row.update(ops=out["ops"], bytes=out["bytes"], seconds=out["seconds"], cpu_s=out["cpu_s"],
               growth_kib=out["hwm_after_kib"] - out["rss_before_kib"], max_rss_kib=outside["max_rss_kib"])
    expected = out["ops"] * BLOCK if case == "random" else size
    if out["bytes"] != expected or out["ops"] == 0:
        return {**row, "status": f"moved {out['bytes']} bytes in {out['ops']} operations, expected {expected}"}
    return {**row, "status": "ok"}


TSV_FIELDS = ("server", "case", "client", "size", "depth", "repeat", "status", "ops", "bytes", "seconds",
              "cpu_s", "growth_kib", "max_rss_kib", "server_cpu_s")


def run(args):
    size = benchlib.parse_size(args.size) if args.size else (QUICK_SIZE if args.quick else FULL_SIZE)
    depths = tuple(int(d) for d in args.depths.split(",")) if args.depths else (
        QUICK_DEPTHS if args.quick else FULL_DEPTHS)
    seconds = args.duration or (QUICK_DURATION if args.quick else FULL_DURATION)
    repeats = args.repeats or (2 if args.quick else 4)
    cases = args.cases.split(",")
    for case in cases:
        if case not in CLIENTS:
            sys.exit(f"unknown case {case!r}: one of {', '.join(CLIENTS)}")
    wanted = set(args.clients.split(",")) if args.clients else None
    pythons = {"s3fs": args.s3fs_python or os.path.join(ROOT, ".bench-venv-s3fs/bin/python")}
    if not os.access(pythons["s3fs"], os.X_OK):
        sys.exit(f"s3fs's Python {pythons['s3fs']} not found (bench/python.sh makes .bench-venv-s3fs)")

    os.makedirs(args.scratch, exist_ok=True)
    work = os.path.join(args.scratch, f"python-{os.getpid()}")
    os.makedirs(work)
    source = os.path.join(work, "source")
    started_at = datetime.datetime.now(datetime.timezone.utc)
    meta = {"command": args.command_line, "started": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": benchlib.host_line(), "server": "brisk", "repeats": repeats, "size": size, "depths": list(depths),
            "seconds": seconds, "load_before": open("/proc/loadavg").read().split()[:3],
            "versions": versions(pythons["s3fs"])}
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"python-brisk-{started_at.strftime('%Y-%m-%dT%H%M%S')}")
    rows = []
    partial = open(stem + ".partial.tsv", "w")
    partial.write(f"# {json.dumps(meta)}\n" + "\t".join(TSV_FIELDS) + "\n")
    server = compare.Server("brisk", os.path.join(work, "data"), None)
    proxy = None
    try:
        if args.rtt_ms:
            # Half the round trip each way, a round trip per new connection, no added first-byte
            # latency (random_reads.py's LatencyProxy; its CPU is charged to no one).
            proxy = random_bench.LatencyProxy(server.port, args.rtt_ms, 0, False)
            meta["rtt_ms"] = args.rtt_ms
        c = brisk_client(server.endpoint)
        c.create_bucket(BUCKET)
        compare.write_random_file(source, size)
        c.upload(source, BUCKET, "object")
        print(f"brisk serve on {server.endpoint}; {meta['host']}", file=sys.stderr)
        for rep in range(repeats):
            for case in cases:
                clients = [n for n in CLIENTS[case] if wanted is None or n in wanted]
                order = clients[rep % len(clients):] + clients[: rep % len(clients)]
                points = depths if case == "random" else (0,)
                for depth in points:
                    for client in order:
                        if client == "s3fs-open" and depth > S3FS_OPEN_MAX_DEPTH:
                            continue
                        python = pythons["s3fs"] if client.startswith("s3fs") else sys.executable
                        writes = case in ("upload", "write", "upload_fileobj")
                        key = f"{case}-{client}" if writes else "object"
                        path = {"upload": source, "upload_fileobj": source,
                                "download_fileobj": os.path.join(work, "downloaded")}.get(case)
                        row = measure(server, python, client, case, key, size, depth, seconds, path,
                                      proxy.endpoint if proxy else None)
                        row["repeat"] = rep + 1
                        rows.append(row)
                        if writes:
                            c.delete(BUCKET, key)
                        if case == "download_fileobj" and os.path.exists(path):
                            os.unlink(path)
                        partial.write(benchlib.tsv_line(row, TSV_FIELDS))
                        partial.flush()
                        print(progress_line(row), file=sys.stderr)
    finally:
        if proxy:
            proxy.close()
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    meta["load_after"] = open("/proc/loadavg").read().split()[:3]
    benchlib.write_results(stem, meta, rows, TSV_FIELDS, tables(meta, rows), partial)
    print(f"rows in {stem}.tsv; tables in {stem}.md", file=sys.stderr)


def versions(s3fs_python):
    import boto3
    import brisk  # noqa: F401
    import numpy
    import obstore

    found = {"python": sys.version.split()[0], "obstore": obstore.__version__, "boto3": boto3.__version__,
             "numpy": numpy.__version__}
    out = subprocess.run([s3fs_python, "-c", "import s3fs, botocore; print(s3fs.__version__, botocore.__version__)"],
                         capture_output=True, text=True).stdout.split()
    if len(out) == 2:
        found["s3fs"], found["s3fs's botocore"] = out
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    found["brisk"] = git.stdout.strip()
    return found


def progress_line(row):
    what = f"{row['repeat']} {row['case']}{'@' + str(row['depth']) if row['case'] == 'random' else ''} {row['client']}"
    if row["status"] != "ok":
        return f"{what}: {row['status']}"
    gib = row["bytes"] / GIB
    return (f"{what}: {row['ops'] / row['seconds']:.0f} op/s, {gib / row['seconds']:.2f} GiB/s, "
            f"{row['cpu_s'] / gib:.2f} CPU s/GiB, growth {row['growth_kib'] / 1024:.0f} MiB, "
            f"peak {row['max_rss_kib'] / 1024:.0f} MiB")


# ---------------------------------------------------------------------------------------------------
# Tables: medians over the repeats after the warm-up round.


def tables(meta, rows):
    warmup = 1 if meta["repeats"] > 1 else 0
    groups, failed = {}, {}
    for r in rows:
        if r["repeat"] <= warmup:
            continue
        key = (r["case"], r["client"], r["depth"])
        if r["status"] == "ok":
            groups.setdefault(key, []).append(r)
        else:
            failed.setdefault(key, []).append(r["status"])

    def med(runs, f):
        return statistics.median(f(r) for r in runs)

    def note(key):
        if key not in failed:
            return ""
        return f" ({len(failed[key])} run(s) failed: {failed[key][0][:120]})"

    size = meta["size"]
    size_text = benchlib.size_label(size)
    out = [f"Command: `{meta['command']}`", "",
           f"Host: {meta['host']}. {meta['started']}, {meta['repeats']} rounds, the first a warm-up; medians "
           f"of the other {meta['repeats'] - warmup}. Load average before {' '.join(meta['load_before'])}, "
           f"after {' '.join(meta.get('load_after', ['?']))}. Versions: "
           + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".", ""]

    def whole_table(case, title):
        out.extend([title, "",
                    "| client | GiB/s | client CPU s/GiB | RSS growth / object | peak RSS MiB | server CPU s/GiB |",
                    "|---|---|---|---|---|---|"])
        for client in CLIENTS[case]:
            key = (case, client, 0)
            runs = groups.get(key)
            if not runs:
                if key in failed:
                    out.append(f"| {LABELS[(case, client)]} | failed{note(key)} | | | | |")
                continue
            gib = size / GIB
            out.append(f"| {LABELS[(case, client)]} | {med(runs, lambda r: gib / r['seconds']):.2f} | "
                       f"{med(runs, lambda r: r['cpu_s']) / gib:.2f} | "
                       f"{med(runs, lambda r: r['growth_kib']) * KIB / size:.2f} | "
                       f"{med(runs, lambda r: r['max_rss_kib']) / 1024:.0f} | "
                       f"{med(runs, lambda r: r['server_cpu_s']) / gib:.2f}{note(key)} |")
        out.append("")

    if any(r["case"] == "get" for r in rows):
        whole_table("get", f"The whole {size_text} object into memory. RSS growth: the process's high-water "
                    "mark after the call less its RSS before it, per object byte (`get_into`'s array is "
                    "allocated and written before).")
    if any(r["case"] == "random" for r in rows):
        out.extend([f"Random {BLOCK // KIB} KiB ranges of the {size_text} object, {meta['seconds']:.0f} s per "
                    "run. Batch APIs read batches of 8 x QD ranges (64 to 1,024). CPU and bytes are the "
                    "client's own, inside the window.", "",
                    "| client | QD | IOPS | MiB/s | client CPU s/GiB | peak RSS MiB | server CPU s/GiB |",
                    "|---|---|---|---|---|---|---|"])
        for depth in meta["depths"]:
            for client in CLIENTS["random"]:
                key = ("random", client, depth)
                runs = groups.get(key)
                if not runs:
                    if key in failed:
                        out.append(f"| {LABELS[('random', client)]} | {depth} | failed{note(key)} | | | | |")
                    continue
                out.append(
                    f"| {LABELS[('random', client)]} | {depth} | {med(runs, lambda r: r['ops'] / r['seconds']):,.0f} | "
                    f"{med(runs, lambda r: r['bytes'] / MIB / r['seconds']):,.0f} | "
                    f"{med(runs, lambda r: r['cpu_s'] / (r['bytes'] / GIB)):.2f} | "
                    f"{med(runs, lambda r: r['max_rss_kib']) / 1024:.0f} | "
                    f"{med(runs, lambda r: r['server_cpu_s'] / (r['bytes'] / GIB)):.2f}{note(key)} |")
        out.append("")
    if any(r["case"] == "upload" for r in rows):
        whole_table("upload", f"Upload of a {size_text} file (in the page cache).")
    if any(r["case"] == "write" for r in rows):
        whole_table("write", f"{size_text} written from Python 1 MiB at a time to each client's file object, "
                    "closed (stored) inside the window.")
    if any(r["case"] == "upload_fileobj" for r in rows):
        whole_table("upload_fileobj", f"Upload of an open {size_text} file (in the page cache) through each "
                    "client's file-object call.")
    if any(r["case"] == "sequential" for r in rows):
        rtt = f", through a {meta['rtt_ms']:g} ms round trip (bench/latency-proxy)" if meta.get("rtt_ms") else ""
        whole_table("sequential", f"The {size_text} object read front to back {READ_CHUNK // KIB} KiB at a time "
                    f"through each client's file object{rtt}.")
    if any(r["case"] == "download_fileobj" for r in rows):
        whole_table("download_fileobj", f"The {size_text} object written to an open file (on the scratch "
                    "directory's file system) through each client's file-object call.")
    return "\n".join(out)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "drive":
        if len(sys.argv) not in (10, 11):
            sys.exit("usage: python_clients.py drive CLIENT CASE ENDPOINT BUCKET KEY SIZE DEPTH SECONDS [FILE]")
        drive(*sys.argv[2:])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        meta, rows = benchlib.read_tsv(sys.argv[2], ints=("size", "depth", "repeat", "ops", "bytes", "growth_kib",
                                                         "max_rss_kib"),
                                      floats=("seconds", "cpu_s", "server_cpu_s"))
        print(tables(meta, rows))
        return
    ap = argparse.ArgumentParser(description="brisk's Python package next to obstore, boto3 and s3fs")
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--quick", action="store_true", help="a 64 MiB object, QD 8 and 64, 1 s, 2 rounds")
    r.add_argument("--size", help="object and file size (default 1GiB)")
    r.add_argument("--depths", help="queue depths for random reads (default 1,8,64,128)")
    r.add_argument("--duration", type=float, help="seconds per random-read run (default 5)")
    r.add_argument("--repeats", type=int, help="rounds, the first a warm-up (default 4)")
    r.add_argument("--cases", default="get,random,upload")
    r.add_argument("--clients", help="only these client names (default all of each case)")
    r.add_argument("--rtt-ms", type=float, help="clients go through bench/latency-proxy with this round trip")
    r.add_argument("--s3fs-python", help="the Python with s3fs (default .bench-venv-s3fs/bin/python)")
    r.add_argument("--scratch", default="/work/scratch-compare")
    r.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    r.add_argument("--command-line", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.command_line:
        args.command_line = shlex.join(["bench/python_clients.py", *sys.argv[1:]])
    run(args)


if __name__ == "__main__":
    main()
