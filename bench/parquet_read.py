#!/usr/bin/env python3
"""Parquet through fsspec: pyarrow's `pq.read_table` of one parquet file on `brisk serve`, through
`brisk://` and through each peer's filesystem, every client in its own fresh process.

Run through `bench/parquet.sh` (which makes the pinned venvs, installs the package and builds the
server); by hand:

    .bench-venv/bin/python bench/parquet_read.py run [--quick] [--size 1GiB] [--repeats N]
                           [--cases whole,columns] [--clients brisk-pyfs,pyarrow-s3,...]
    .bench-venv/bin/python bench/parquet_read.py table bench/results/parquet-brisk-DATE.tsv
    .bench-venv/bin/python bench/parquet_read.py profile [--quick] [--cases whole,columns] [--dir DIR]
    PYTHON bench/parquet_read.py drive JSON

`run` starts ONE server (`brisk serve`, fsync on; compare.py's start/stop) and writes the file once:
16 row groups x 32 float64 columns (`c00`..`c31`), uniform random values (seeded), uncompressed and
plain-encoded (`compression="none"`, no dictionary), so that the file is the table's size (1 GiB, 64
MiB with --quick: 2 MiB or 128 KiB per column chunk) and what is measured is the reading, not a
codec every client would share. pyarrow writes it through brisk's `open_writer`. Then every case with
every client, REPEATS times, the clients in a rotated order in each round; round 1 is a warm-up,
measured but left out of the medians. Cases:

  whole    pq.read_table(path, filesystem=FS): every column of every row group
  columns  pq.read_table(path, columns=["c00", "c08", "c16", "c24"], filesystem=FS): 4 columns
           spread over the file, so that each row group's column chunks are 4 ranges (2 MiB each,
           14 MiB apart), not one run pyarrow could coalesce

pyarrow's defaults throughout (`pre_buffer=True`, `use_threads=True`, the dataset API beneath
`read_table`). Clients (FS):

  brisk-pyfs    PyFileSystem(FSSpecHandler(brisk.fsspec.BriskFileSystem(...)))
  brisk-fsspec  the BriskFileSystem itself: pyarrow wraps it the same way (`_ensure_filesystem`), so
                the two rows differ by the noise alone
  obstore       obstore.fsspec.FsspecStore("s3", config=...): obstore's fsspec layer (its sync
                class; pyarrow calls a filesystem synchronously, so AsyncFsspecStore is not usable
                here) and its BufferedFile (`open_reader`, 1 MiB buffer)
  s3fs          s3fs.S3FileSystem(...) (its defaults: 50 MiB blocks, "readahead" cache)
  pyarrow-s3    pyarrow.fs.S3FileSystem(endpoint_override=..., scheme="http"): pyarrow's own C++
                client, which reads the pre-buffered ranges concurrently on its I/O threads

Ways brisk's fsspec layer could read, tried here without touching brisk/fsspec.py (only when named in
--clients; they use a 2 GiB memory budget, see below):

  brisk-read_buffer        BriskFile gets a `read_buffer` (pyarrow's PythonFile calls it instead of
                           `read` and wraps the result without a copy): one exact `get_range`
  brisk-read_buffer-split  the same, a read of more than 8 MiB as 8 MiB pieces in parallel
                           (`get_ranges` into one numpy array)
  brisk-parts              fsspec.parquet.open_parquet_file: the footer, then every range the read
                           needs in one `cat_ranges`, then pyarrow reads from those parts
  brisk-buffer             the whole object in one `get`, read from a `pa.BufferReader` (whole only)
  brisk-noprefetch         brisk-pyfs with `column_prefetch=False`: the column chunks one GET after
                           another, as before brisk._column_prefetch

brisk.Buffers handed to pyarrow stay charged to the client's memory budget (by default half of the
memory the process may use, at least 1 GiB; 1 GiB when these runs were measured) while
pyarrow holds them, and pre-buffering holds every range of the file: PARQUET_BRISK_MAX_MEMORY=2GiB
gives every brisk reader that budget (a whole read of the 1 GiB file through `read_buffer` otherwise
waits for memory forever). --rtt-ms N puts bench/latency-proxy in front of the server for every client.

What is measured, and from where:
  - inside the driver, around `read_table` only (after imports and the filesystem's construction):
    wall time, CPU (user + sys from getrusage(RUSAGE_SELF)), VmRSS just before and VmHWM just after
    (/proc/self/status): the process's growth while it ran; the table is checked afterwards (rows,
    columns and each column's sum against the writer's);
  - from outside: peak RSS of the whole process (`/usr/bin/time -v`), the server's CPU (utime + stime
    of its /proc/<pid>/stat) and, from its access log, the requests the read made: GETs, HEADs, other
    requests, bytes sent and distinct client connections.

`profile` runs brisk's read of each case once more with every call pyarrow makes on the fsspec file
(and every call the file makes on brisk.Client) logged with offsets, sizes and times (monkeypatched
here; brisk/fsspec.py is not touched), then under `perf record` (or `py-spy record --native` when
perf is missing) for brisk and pyarrow's C++ client, and prints where the calls, bytes and CPU go.

s3fs runs in .bench-venv-s3fs (its aiobotocore pins an older botocore than boto3 wants), with
`--s3fs-python`. Writes bench/results/parquet-brisk-DATE.{tsv,json,md}.
"""

import argparse
import collections
import datetime
import json
import math
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

import benchlib
# The server, environment and /usr/bin/time helpers of bench/compare.py, and the measured window,
# host line and s3fs set-up of bench/python_clients.py (both stdlib-only at load time).
import compare
import python_clients
from benchlib import GIB, MIB

ROOT = benchlib.ROOT
BUCKET = "parquet"
KEY = "table.parquet"
ROW_GROUPS = 16
COLUMNS = 32
SUBSET = ("c00", "c08", "c16", "c24")
SEED = 0x5EED
FULL_SIZE, QUICK_SIZE = GIB, 64 * MIB
CASES = ("whole", "columns")
CLIENTS = ("brisk-pyfs", "brisk-fsspec", "obstore", "s3fs", "pyarrow-s3")
# Ways brisk's fsspec layer could read, tried from this driver (brisk/fsspec.py untouched); run only
# when named in --clients, and by `profile`. brisk-buffer reads the whole object, so whole only.
EXPERIMENTS = ("brisk-read_buffer", "brisk-read_buffer-split", "brisk-parts", "brisk-buffer", "brisk-noprefetch")
EXPERIMENT_CASES = {"brisk-buffer": ("whole",)}
BRISK = ("brisk-pyfs", "brisk-fsspec") + EXPERIMENTS
LABELS = {
    "brisk-pyfs": "brisk `PyFileSystem(FSSpecHandler(fs))`",
    "brisk-fsspec": "brisk `filesystem=fs`",
    "brisk-read_buffer": "(try) brisk file + `read_buffer` = one exact `get_range`",
    "brisk-read_buffer-split": "(try) brisk file + `read_buffer` = `get_ranges` of 8 MiB pieces `into=` one array",
    "brisk-parts": "(try) brisk + `fsspec.parquet.open_parquet_file` (`cat_ranges`)",
    "brisk-buffer": "(try) brisk `get` -> `pa.BufferReader`",
    "brisk-noprefetch": "(try) brisk `PyFileSystem(FSSpecHandler(fs))`, `column_prefetch=False`",
    "obstore": "obstore `FsspecStore`",
    "s3fs": "s3fs `S3FileSystem`",
    "pyarrow-s3": "pyarrow C++ `S3FileSystem`",
}
# A read is killed after this floor plus the file at 16 MiB/s (1 GiB: 124 s), ten times the
# slowest client seen (s3fs, 9 s), so only a hung read reaches it.
RUN_TIMEOUT_FLOOR_S = 60
RUN_TIMEOUT_RATE = 16 * MIB
# Lines of the access log reach its file within 100 ms of their request (brisk-server's
# access_log.rs, FLUSH_INTERVAL); waited for after each run before the log is read.
LOG_FLUSH_WAIT_S = 0.4


def column_names():
    return [f"c{i:02d}" for i in range(COLUMNS)]


# ---------------------------------------------------------------------------------------------------
# The file: written once per run by a process of its own (the table is the file's size).


def generate(endpoint, bucket, key, size, compression):
    """Writes the table through brisk's `open_writer` and prints what the readers check."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import brisk

    rows = size // (COLUMNS * 8)
    group = rows // ROW_GROUPS
    rng = np.random.default_rng(SEED)
    table = pa.table({name: rng.random(rows) for name in column_names()})
    sums = {name: float(np.sum(table.column(name).to_numpy())) for name in column_names()}
    client = brisk.Client(endpoint, addressing_style="path")
    with client.open_writer(bucket, key) as f:
        pq.write_table(table, f, row_group_size=group, compression=compression, use_dictionary=False)
    meta = pq.read_metadata(f"{bucket}/{key}", filesystem=brisk_fs(endpoint))
    print(json.dumps({"rows": rows, "row_groups": meta.num_row_groups, "columns": meta.num_columns,
                      "file_bytes": client.head(bucket, key).size, "table_bytes": table.nbytes,
                      "sums": sums}), flush=True)


# ---------------------------------------------------------------------------------------------------
# One measured read (inside a fresh process).


def brisk_fs(endpoint, **kwargs):
    import fsspec

    if os.environ.get("PARQUET_BRISK_MAX_MEMORY") and "max_memory" not in kwargs:
        # The client's memory budget for every brisk reader of this run (default: brisk's own).
        kwargs["max_memory"] = os.environ["PARQUET_BRISK_MAX_MEMORY"]
    return fsspec.filesystem("brisk", endpoint_url=endpoint, client_kwargs={"addressing_style": "path"}, **kwargs)


# What the experiments that hold the whole file in one brisk buffer give the client: the default
# memory budget of 1 GiB (the default when these runs were measured, and still on a machine of up to
# 2 GiB) refuses a single `get` of the 1 GiB table's file (1 GiB + its footer).
WHOLE_FILE_BUDGET = "2GiB"


def filesystem(client, endpoint):
    """pyarrow's `filesystem=` argument for a client, constructed before the window."""
    if client == "brisk-pyfs":
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        return PyFileSystem(FSSpecHandler(brisk_fs(endpoint)))
    if client in ("brisk-read_buffer", "brisk-read_buffer-split"):
        # Buffers handed to pyarrow stay charged to the client's memory budget until pyarrow drops
        # them, and pre_buffer holds every range of the file: at the default budget a whole read of
        # the 1 GiB file waits for memory forever (BENCHMARKS.md, "Parquet through fsspec").
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        return PyFileSystem(FSSpecHandler(brisk_fs(endpoint, max_memory=WHOLE_FILE_BUDGET)))
    if client == "brisk-noprefetch":
        from pyarrow.fs import FSSpecHandler, PyFileSystem

        return PyFileSystem(FSSpecHandler(brisk_fs(endpoint, column_prefetch=False)))
    if client == "brisk-fsspec":
        return brisk_fs(endpoint)
    if client == "obstore":
        from obstore.fsspec import FsspecStore

        config = {"endpoint": endpoint, "region": benchlib.REGION, "access_key_id": benchlib.ACCESS_KEY,
                  "secret_access_key": benchlib.SECRET_KEY, "virtual_hosted_style_request": False}
        return FsspecStore("s3", config=config, client_options={"allow_http": True, "timeout": "300s"})
    if client == "s3fs":
        return python_clients.s3fs_filesystem(endpoint)
    if client == "pyarrow-s3":
        from pyarrow.fs import S3FileSystem

        host = endpoint.split("://", 1)[1]
        return S3FileSystem(access_key=benchlib.ACCESS_KEY, secret_key=benchlib.SECRET_KEY,
                            region=benchlib.REGION, endpoint_override=host, scheme="http")
    raise ValueError(client)


def read_buffer(self, length=-1):
    """What `brisk-read_buffer` adds to BriskFile (here, not in brisk/fsspec.py): pyarrow's
    PythonFile calls a file's `read_buffer` when it has one and wraps what it returns without a copy,
    so each read is one `get_range` of exactly the bytes asked, handed over as the brisk.Buffer (no
    read-ahead block, no `bytes` copy, no slice of a cache)."""
    if length is None or length < 0:
        length = self.size - self.loc
    length = min(length, self.size - self.loc)
    if length <= 0:
        return b""
    buf = self.fs.client.get_range(self.bucket, self.key, self.loc, length)
    self.loc += len(buf)
    return buf


SPLIT_PIECE = 8 * MIB


def read_buffer_split(self, length=-1):
    """`brisk-read_buffer-split`: as `read_buffer`, but a read of more than SPLIT_PIECE goes out as
    that many pieces in flight at once (`get_ranges` into one numpy array, which pyarrow wraps
    without a copy): pyarrow's coalesced 32 MiB reads come one at a time through its Python file,
    so the file is the only place left to read one of them over several connections."""
    import numpy as np

    if length is None or length < 0:
        length = self.size - self.loc
    length = min(length, self.size - self.loc)
    if length <= 0:
        return b""
    if length <= SPLIT_PIECE:
        buf = self.fs.client.get_range(self.bucket, self.key, self.loc, length)
    else:
        offsets = list(range(self.loc, self.loc + length, SPLIT_PIECE))
        lengths = [min(SPLIT_PIECE, self.loc + length - o) for o in offsets]
        buf = np.empty(length, dtype=np.uint8)
        self.fs.client.get_ranges(self.bucket, self.key, offsets, lengths, into=buf)
    self.loc += len(buf)
    return buf


def reader(client, endpoint, columns):
    """Set-up outside the window, then a callable that does the one measured read."""
    import pyarrow.parquet as pq

    path = f"{BUCKET}/{KEY}"
    if client == "brisk-buffer":
        # The whole object in one `get` (parallel ranges), then parquet from memory, zero-copy.
        import pyarrow as pa

        c = brisk_fs(endpoint, max_memory=WHOLE_FILE_BUDGET).client
        return lambda: pq.read_table(pa.BufferReader(pa.py_buffer(c.get(BUCKET, KEY))), columns=columns)
    if client == "brisk-parts":
        # fsspec's parquet helper: the footer, then every byte range the read needs in one
        # `cat_ranges` (brisk: one `get_ranges` batch), then pyarrow reads from those parts.
        import fsspec.parquet

        fs = brisk_fs(endpoint, max_memory=WHOLE_FILE_BUDGET)

        def run():
            with fsspec.parquet.open_parquet_file(path, fs=fs, columns=columns, engine="pyarrow") as f:
                return pq.read_table(f, columns=columns)
        return run
    if client == "brisk-read_buffer":
        from brisk.fsspec import BriskFile

        BriskFile.read_buffer = read_buffer
    if client == "brisk-read_buffer-split":
        from brisk.fsspec import BriskFile

        BriskFile.read_buffer = read_buffer_split
    fs = filesystem(client, endpoint)
    return lambda: pq.read_table(path, columns=columns, filesystem=fs)


def drive(spec):
    """Reads the file once as `spec` says and prints one JSON line of what it measured."""
    spec = json.loads(spec)
    import pyarrow  # noqa: F401
    import pyarrow.dataset  # noqa: F401  (read_table's machinery, imported before the window)

    columns = list(SUBSET) if spec["case"] == "columns" else None
    op = reader(spec["client"], spec["endpoint"], columns)
    tracer = Tracer() if spec.get("trace") else None
    if tracer:
        tracer.install()
    perf = PerfControl(*spec["perf_ctl"]) if spec.get("perf_ctl") else None
    if perf:
        perf.send("enable")
    with python_clients.Measured() as m:
        table = op()
    if perf:
        perf.send("disable")
    if tracer:
        tracer.uninstall()
        tracer.write(spec["trace"], m.seconds)
    expect = spec["expect"]
    names = columns or column_names()
    problems = []
    if table.num_rows != expect["rows"]:
        problems.append(f"{table.num_rows} rows, expected {expect['rows']}")
    if table.column_names != names:
        problems.append(f"columns {table.column_names[:6]}..., expected {names[:6]}...")
    else:
        import pyarrow.compute as pc

        for name in names:
            got = pc.sum(table.column(name)).as_py()
            if not math.isclose(got, expect["sums"][name], rel_tol=1e-9):
                problems.append(f"{name} sums to {got!r}, expected {expect['sums'][name]!r}")
                break
    print(json.dumps({"seconds": m.seconds, "cpu_s": m.cpu, "rss_before_kib": m.rss_before,
                      "hwm_after_kib": m.hwm_after, "table_bytes": table.nbytes,
                      "problems": problems}), flush=True)
    os._exit(0)  # no interpreter teardown (client threads): the window is over


class PerfControl:
    """`perf record -D -1 --control fifo:CTL,ACK`: sampling only inside the measured window."""

    def __init__(self, ctl, ack):
        self.ctl = open(ctl, "w")
        self.ack = open(ack, "r")

    def send(self, command):
        self.ctl.write(command + "\n")
        self.ctl.flush()
        self.ack.readline()


# ---------------------------------------------------------------------------------------------------
# The call log of `profile`: what pyarrow asks brisk's fsspec file for, and what the file asks
# brisk.Client for. Monkeypatched here, so that brisk/fsspec.py is measured as it is.


class Tracer:
    def __init__(self):
        self.calls = []
        self.depth = threading.local()
        self.undo = []
        self.t0 = time.perf_counter()

    def wrap(self, owner, name, describe):
        original = getattr(owner, name)
        tracer = self

        def traced(*args, **kwargs):
            depth = getattr(tracer.depth, "n", 0)
            tracer.depth.n = depth + 1
            started = time.perf_counter()
            try:
                result = original(*args, **kwargs)
            finally:
                tracer.depth.n = depth
            ended = time.perf_counter()
            entry = {"call": f"{getattr(owner, '__name__', type(owner).__name__)}.{name}", "depth": depth,
                     "thread": threading.current_thread().name, "t": started - tracer.t0,
                     "ms": (ended - started) * 1e3}
            entry.update(describe(args, kwargs, result))
            tracer.calls.append(entry)
            return result

        setattr(owner, name, traced)
        self.undo.append((owner, name, original))

    def install(self):
        from brisk.fsspec import BriskFile, BriskFileSystem

        def size_of(x):
            try:
                return len(x)
            except TypeError:
                return x if isinstance(x, int) else None

        def file_read(args, kwargs, result):
            f = args[0]
            length = args[1] if len(args) > 1 else kwargs.get("length", -1)
            return {"offset": f.loc - size_of(result), "asked": length, "bytes": size_of(result)}

        def file_readinto(args, kwargs, result):
            return {"offset": args[0].loc - result, "asked": memoryview(args[1]).nbytes, "bytes": result}

        def fetch_range(args, kwargs, result):
            return {"offset": args[1], "asked": args[2] - args[1], "bytes": size_of(result)}

        def seek(args, kwargs, result):
            return {"offset": args[1], "whence": args[2] if len(args) > 2 else kwargs.get("whence", 0)}

        def cat_ranges(args, kwargs, result):
            starts, ends = args[2], args[3]
            return {"ranges": len(starts), "asked": sum(e - s for s, e in zip(starts, ends)),
                    "bytes": sum(size_of(r) or 0 for r in result)}

        def plain(args, kwargs, result):
            return {"bytes": size_of(result) if isinstance(result, (bytes, bytearray)) else None}

        self.wrap(BriskFile, "read", file_read)
        if hasattr(BriskFile, "read_buffer"):
            self.wrap(BriskFile, "read_buffer", file_read)
        self.wrap(BriskFile, "readinto", file_readinto)
        self.wrap(BriskFile, "_fetch_range", fetch_range)
        self.wrap(BriskFile, "seek", seek)
        self.wrap(BriskFileSystem, "cat_ranges", cat_ranges)
        self.wrap(BriskFileSystem, "cat_file", plain)
        self.wrap(BriskFileSystem, "info", plain)
        self.wrap(BriskFileSystem, "_open", plain)
        self.install_client()

    def install_client(self):
        """brisk.Client is a Rust class: each filesystem's client is swapped for a logging proxy when
        the filesystem is made (fsspec caches instances, so every later open sees the proxy)."""
        from brisk.fsspec import BriskFileSystem

        tracer = self
        init = BriskFileSystem.__init__

        def patched_init(fs, *args, **kwargs):
            init(fs, *args, **kwargs)
            if not isinstance(fs.client, ClientProxy):
                fs.client = ClientProxy(fs.client, tracer)

        BriskFileSystem.__init__ = patched_init
        self.undo.append((BriskFileSystem, "__init__", init))
        # The filesystem was made before the window (fsspec's instance cache): wrap it now.
        for fs in list(BriskFileSystem._cache.values()):
            if not isinstance(fs.client, ClientProxy):
                fs.client = ClientProxy(fs.client, tracer)

    def record(self, call, started, **fields):
        ended = time.perf_counter()
        self.calls.append({"call": call, "depth": getattr(self.depth, "n", 0),
                           "thread": threading.current_thread().name, "t": started - self.t0,
                           "ms": (ended - started) * 1e3, **fields})

    def uninstall(self):
        for owner, name, original in reversed(self.undo):
            setattr(owner, name, original)

    def write(self, path, seconds):
        with open(path, "w") as f:
            json.dump({"seconds": seconds, "calls": sorted(self.calls, key=lambda c: c["t"])}, f)


class ClientProxy:
    """brisk.Client with its data calls logged (everything else passed through)."""

    def __init__(self, client, tracer):
        self._client, self._tracer = client, tracer

    def __getattr__(self, name):
        return getattr(self._client, name)

    def get_range(self, bucket, key, offset, length):
        started = time.perf_counter()
        result = self._client.get_range(bucket, key, offset, length)
        self._tracer.record("Client.get_range", started, offset=offset, asked=length, bytes=len(result))
        return result

    def get_into(self, bucket, key, view, offset=0, length=None):
        started = time.perf_counter()
        n = self._client.get_into(bucket, key, view, offset=offset, length=length)
        self._tracer.record("Client.get_into", started, offset=offset, asked=length, bytes=n)
        return n

    def get_ranges(self, bucket, keys, offsets, lengths, **kwargs):
        started = time.perf_counter()
        result = self._client.get_ranges(bucket, keys, offsets, lengths, **kwargs)
        self._tracer.record("Client.get_ranges", started, ranges=len(offsets),
                            asked=sum(lengths) if isinstance(lengths, list) else lengths * len(offsets),
                            bytes=sum(len(b) for b in result))
        return result

    def head(self, bucket, key):
        started = time.perf_counter()
        result = self._client.head(bucket, key)
        self._tracer.record("Client.head", started)
        return result

    def get(self, bucket, key, *args, **kwargs):
        started = time.perf_counter()
        result = self._client.get(bucket, key, *args, **kwargs)
        self._tracer.record("Client.get", started, bytes=len(result))
        return result

    def open_reader(self, bucket, key, offset=0, **kwargs):
        started = time.perf_counter()
        reader = self._client.open_reader(bucket, key, offset=offset, **kwargs)
        self._tracer.record("Client.open_reader", started, offset=offset)
        return ReaderProxy(reader, self._tracer)


class ReaderProxy:
    def __init__(self, reader, tracer):
        self._reader, self._tracer = reader, tracer

    def __getattr__(self, name):
        return getattr(self._reader, name)

    def read(self, n=-1):
        started = time.perf_counter()
        offset = self._reader.tell()
        data = self._reader.read(n)
        self._tracer.record("ObjectReader.read", started, offset=offset, asked=n, bytes=len(data))
        return data

    def readinto(self, view):
        started = time.perf_counter()
        offset = self._reader.tell()
        n = self._reader.readinto(view)
        self._tracer.record("ObjectReader.readinto", started, offset=offset, asked=len(view), bytes=n)
        return n


def trace_summary(path):
    """The call log as lines: per call, count, bytes asked and got, time; pyarrow's own reads in order."""
    with open(path) as f:
        log = json.load(f)
    calls = log["calls"]
    out = [f"read_table: {log['seconds']:.2f} s; {len(calls)} calls logged"]
    by = collections.OrderedDict()
    for c in calls:
        by.setdefault((c["call"], c["depth"]), []).append(c)
    out.append(f"{'call (nesting depth)':<34} {'count':>6} {'asked MiB':>10} {'got MiB':>9} "
               f"{'sizes MiB (min/median/max)':>28} {'ms total':>9} {'threads':>8}")
    for (call, depth), cs in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        asked = [c["asked"] for c in cs if isinstance(c.get("asked"), int) and c["asked"] >= 0]
        got = [c["bytes"] for c in cs if isinstance(c.get("bytes"), int)]
        sizes = (f"{min(got) / MIB:.2f}/{statistics.median(got) / MIB:.2f}/{max(got) / MIB:.2f}"
                 if got else "-")
        out.append(f"{'  ' * depth + call + f' ({depth})':<34} {len(cs):>6} "
                   f"{sum(asked) / MIB:>10.1f} {sum(got) / MIB:>9.1f} {sizes:>28} "
                   f"{sum(c['ms'] for c in cs):>9.0f} {len({c['thread'] for c in cs}):>8}")
    top = [c for c in calls if c["depth"] == 0 and c["call"] in ("BriskFile.read", "BriskFile.read_buffer",
                                                                "BriskFile.readinto", "BriskFile.seek")]
    reads = [c for c in top if c["call"] != "BriskFile.seek"]
    if reads:
        out.append(f"pyarrow's reads of the file, in order ({len(reads)}; offset MiB +length MiB, ms, thread):")
        shown = reads if len(reads) <= 24 else reads[:16] + [None] + reads[-6:]
        for c in shown:
            if c is None:
                out.append("  ...")
                continue
            out.append(f"  {c['offset'] / MIB:9.3f} +{(c['bytes'] or 0) / MIB:8.3f}  {c['ms']:7.1f} ms  {c['thread']}")
        # How many reads were in flight at once: pyarrow's I/O threads against the file's lock.
        events = sorted([(c["t"], 1) for c in reads] + [(c["t"] + c["ms"] / 1e3, -1) for c in reads])
        level = peak = 0
        for _, d in events:
            level += d
            peak = max(peak, level)
        out.append(f"  at most {peak} read(s) of the file in flight at once; "
                   f"{len({c['thread'] for c in reads})} thread(s) made them")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------
# The run.


def access_log_since(server, offset):
    """(requests seen in the server's access log after `offset`, the new offset): GETs, HEADs and
    other requests, bytes sent, distinct client connections (remote address and port)."""
    time.sleep(LOG_FLUSH_WAIT_S)
    with open(server.log.name, "rb") as f:
        f.seek(offset)
        text = f.read()
        end = f.tell()
    gets = heads = other = sent = 0
    remotes = set()
    sizes = []
    for line in text.decode("utf-8", "replace").splitlines():
        fields = line.split()
        # time id remote METHOD bucket key status error in out ms
        if len(fields) < 11 or not fields[0][:4].isdigit():
            continue
        method, out_bytes = fields[3], int(fields[9])
        remotes.add(fields[2])
        sent += out_bytes
        if method == "GET" and fields[5] == KEY:
            gets += 1
            sizes.append(out_bytes)
        elif method == "HEAD":
            heads += 1
        else:
            other += 1
    return {"gets": gets, "heads": heads, "other_requests": other, "bytes_out": sent,
            "connections": len(remotes), "get_sizes": sizes}, end


def measure(server, python, client, case, expect, log_offset, trace=None, wrap=(), perf_ctl=None, endpoint=None):
    """One read in a fresh process; `endpoint` (a latency proxy's) instead of the server's."""
    endpoint = endpoint or server.endpoint
    row = {"server": server.kind, "case": case, "client": client, "size": expect["file_bytes"]}
    spec = json.dumps({"client": client, "case": case, "endpoint": endpoint, "expect": expect,
                       **({"trace": trace} if trace else {}), **({"perf_ctl": perf_ctl} if perf_ctl else {})})
    cmd = ["/usr/bin/time", "-v", *wrap, python, os.path.abspath(__file__), "drive", spec]
    timeout = RUN_TIMEOUT_FLOOR_S + expect["file_bytes"] / RUN_TIMEOUT_RATE
    cpu0 = server.cpu_seconds()
    # A session of its own, so that a timed-out run is killed whole (the reader under /usr/bin/time
    # and a profiler's child too), not only its first process.
    proc = subprocess.Popen(cmd, env=compare.client_env(endpoint), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {**row, "status": f"timed out after {timeout:.0f} s"}, access_log_since(server, log_offset)[1]
    proc = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    row["server_cpu_s"] = server.cpu_seconds() - cpu0
    requests, log_offset = access_log_since(server, log_offset)
    row.update({k: v for k, v in requests.items() if k != "get_sizes"})
    row["get_sizes"] = requests["get_sizes"]
    if proc.returncode != 0:
        said = " ".join(proc.stderr.split("\tCommand being timed:")[0].strip().splitlines()[-3:])
        return {**row, "status": f"exit {proc.returncode}: {said[-300:]}"}, log_offset
    try:
        out = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
        outside = compare.parse_time_v(proc.stderr)
    except (IndexError, ValueError, KeyError) as e:
        return {**row, "status": f"unreadable output: {e}"}, log_offset
    row.update(seconds=out["seconds"], cpu_s=out["cpu_s"], table_bytes=out["table_bytes"],
               growth_kib=out["hwm_after_kib"] - out["rss_before_kib"], max_rss_kib=outside["max_rss_kib"])
    if out["problems"]:
        return {**row, "status": "wrong table: " + "; ".join(out["problems"])}, log_offset
    return {**row, "status": "ok"}, log_offset


TSV_FIELDS = ("server", "case", "client", "size", "repeat", "status", "seconds", "cpu_s", "growth_kib",
              "max_rss_kib", "table_bytes", "gets", "heads", "other_requests", "bytes_out", "connections",
              "server_cpu_s")


class Setup:
    """One server with the file on it (written once), torn down by close()."""

    def __init__(self, args):
        self.size = benchlib.parse_size(args.size) if args.size else (QUICK_SIZE if args.quick else FULL_SIZE)
        os.makedirs(args.scratch, exist_ok=True)
        self.work = os.path.join(args.scratch, f"parquet-{os.getpid()}")
        os.makedirs(self.work)
        self.server = compare.Server("brisk", os.path.join(self.work, "data"), None)
        try:
            c = benchlib.brisk_client(self.server.endpoint)
            c.create_bucket(BUCKET)
            started = time.monotonic()
            gen = subprocess.run([sys.executable, os.path.abspath(__file__), "generate", self.server.endpoint,
                                  BUCKET, KEY, str(self.size), args.compression],
                                 env=compare.client_env(self.server.endpoint), capture_output=True, text=True,
                                 timeout=compare.run_timeout(self.size) * 4)
            if gen.returncode != 0:
                raise RuntimeError(f"writing the file failed: {gen.stderr[-2000:]}")
            self.expect = json.loads(gen.stdout.strip().splitlines()[-1])
            self.expect["compression"] = args.compression
            print(f"brisk serve on {self.server.endpoint}; {self.expect['file_bytes']:,} bytes of parquet "
                  f"({self.expect['row_groups']} row groups x {self.expect['columns']} columns, "
                  f"{args.compression}) written in {time.monotonic() - started:.0f} s", file=sys.stderr)
        except BaseException:
            self.close()
            raise

    def log_offset(self):
        time.sleep(LOG_FLUSH_WAIT_S)
        return os.path.getsize(self.server.log.name)

    def close(self):
        self.server.close()
        shutil.rmtree(self.work, ignore_errors=True)


def s3fs_python(args):
    python = args.s3fs_python or os.path.join(ROOT, ".bench-venv-s3fs/bin/python")
    if not os.access(python, os.X_OK):
        sys.exit(f"s3fs's Python {python} not found (bench/parquet.sh makes .bench-venv-s3fs)")
    return python


def run(args):
    repeats = args.repeats or (2 if args.quick else 4)
    cases = args.cases.split(",")
    for case in cases:
        if case not in CASES:
            sys.exit(f"unknown case {case!r}: one of {', '.join(CASES)}")
    named = args.clients.split(",") if args.clients else CLIENTS
    for client in named:
        if client not in CLIENTS + EXPERIMENTS:
            sys.exit(f"unknown client {client!r}: one of {', '.join(CLIENTS + EXPERIMENTS)}")
    clients = [c for c in CLIENTS + EXPERIMENTS if c in named]
    pythons = {"s3fs": s3fs_python(args)}
    started_at = datetime.datetime.now(datetime.timezone.utc)
    meta = {"command": args.command_line, "started": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": benchlib.host_line(), "server": "brisk", "repeats": repeats,
            "load_before": open("/proc/loadavg").read().split()[:3], "versions": versions(pythons["s3fs"]),
            "subset": list(SUBSET)}
    if os.environ.get("PARQUET_BRISK_MAX_MEMORY"):
        meta["versions"]["brisk"] += f", max_memory={os.environ['PARQUET_BRISK_MAX_MEMORY']}"
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"parquet-brisk-{started_at.strftime('%Y-%m-%dT%H%M%S')}")
    rows = []
    partial = open(stem + ".partial.tsv", "w")
    partial.write(f"# {json.dumps(meta)}\n" + "\t".join(TSV_FIELDS) + "\n")
    setup = Setup(args)
    meta["file"] = {k: v for k, v in setup.expect.items() if k != "sums"}
    print(meta["host"], file=sys.stderr)
    proxy = None
    try:
        if args.rtt_ms:
            # Half the round trip each way, a round trip per new connection, no added first-byte
            # latency (random_reads.py's LatencyProxy, as python_clients.py --rtt-ms).
            proxy = python_clients.random_bench.LatencyProxy(setup.server.port, args.rtt_ms, 0, False)
            meta["rtt_ms"] = args.rtt_ms
        offset = setup.log_offset()
        for rep in range(repeats):
            order = clients[rep % len(clients):] + clients[: rep % len(clients)]
            for case in cases:
                for client in order:
                    if case not in EXPERIMENT_CASES.get(client, CASES):
                        continue
                    python = pythons["s3fs"] if client == "s3fs" else sys.executable
                    row, offset = measure(setup.server, python, client, case, setup.expect, offset,
                                          endpoint=proxy.endpoint if proxy else None)
                    row["repeat"] = rep + 1
                    rows.append(row)
                    partial.write(benchlib.tsv_line(row, TSV_FIELDS))
                    partial.flush()
                    print(progress_line(row), file=sys.stderr)
    finally:
        if proxy:
            proxy.close()
        setup.close()
    meta["load_after"] = open("/proc/loadavg").read().split()[:3]
    benchlib.write_results(stem, meta, rows, TSV_FIELDS, tables(meta, rows), partial)
    print(f"rows in {stem}.tsv; tables in {stem}.md", file=sys.stderr)


def versions(s3fs_python_path):
    import fsspec
    import numpy
    import obstore
    import pyarrow

    import brisk  # noqa: F401

    found = {"python": sys.version.split()[0], "pyarrow": pyarrow.__version__, "fsspec": fsspec.__version__,
             "obstore": obstore.__version__, "numpy": numpy.__version__}
    out = subprocess.run([s3fs_python_path, "-c", "import s3fs, fsspec, botocore, pyarrow; "
                          "print(s3fs.__version__, fsspec.__version__, botocore.__version__, pyarrow.__version__)"],
                         capture_output=True, text=True).stdout.split()
    if len(out) == 4:
        found["s3fs"], found["s3fs's fsspec"], found["s3fs's botocore"], found["s3fs's pyarrow"] = out
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    # bench/parquet.sh says what it installed (a commit, or the working tree at HEAD).
    found["brisk"] = os.environ.get("BENCH_BRISK_PACKAGE") or git.stdout.strip()
    return found


def progress_line(row):
    what = f"{row['repeat']} {row['case']} {row['client']}"
    if row["status"] != "ok":
        return f"{what}: {row['status']}"
    return (f"{what}: {row['seconds']:.2f} s, CPU {row['cpu_s']:.2f} s, growth {row['growth_kib'] / 1024:.0f} MiB, "
            f"peak {row['max_rss_kib'] / 1024:.0f} MiB, {row['gets']} GETs ({row['bytes_out'] / MIB:.0f} MiB) "
            f"on {row['connections']} connection(s), server CPU {row['server_cpu_s']:.2f} s")


# ---------------------------------------------------------------------------------------------------
# Tables: medians over the rounds after the warm-up.


def tables(meta, rows):
    warmup = 1 if meta["repeats"] > 1 else 0
    groups, failed = {}, {}
    for r in rows:
        if r["repeat"] <= warmup:
            continue
        key = (r["case"], r["client"])
        if r["status"] == "ok":
            groups.setdefault(key, []).append(r)
        else:
            failed.setdefault(key, []).append(r["status"])

    def med(runs, field):
        return statistics.median(r[field] for r in runs)

    f = meta["file"]
    out = [f"Command: `{meta['command']}`", "",
           f"Host: {meta['host']}. {meta['started']}, {meta['repeats']} rounds, the first a warm-up; medians "
           f"of the other {meta['repeats'] - warmup}. Load average before {' '.join(meta['load_before'])}, "
           f"after {' '.join(meta.get('load_after', ['?']))}. Versions: "
           + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".", "",
           f"The file: {f['file_bytes'] / MIB:,.0f} MiB, {f['row_groups']} row groups x {f['columns']} float64 "
           f"columns, {f['rows']:,} rows, {f['compression']}, plain encoding; the table in memory "
           f"{f['table_bytes'] / MIB:,.0f} MiB. `columns`: {', '.join(meta['subset'])}."
           + (f" Every client through a {meta['rtt_ms']:g} ms round trip (bench/latency-proxy)."
              if meta.get("rtt_ms") else ""), ""]
    for case in CASES:
        if not any(r["case"] == case for r in rows):
            continue
        what = "every column" if case == "whole" else f"{len(meta['subset'])} of {f['columns']} columns"
        out.extend([f"`pq.read_table`, {what}:", "",
                    "| client | wall s | CPU s | peak RSS MiB | RSS growth MiB | GETs | MiB requested "
                    "| connections | server CPU s |",
                    "|---|---|---|---|---|---|---|---|---|"])
        for client in CLIENTS + EXPERIMENTS:
            key = (case, client)
            runs = groups.get(key)
            if not runs:
                if key in failed:
                    out.append(f"| {LABELS[client]} | failed ({len(failed[key])}: {failed[key][0][:120]}) "
                               "| | | | | | | |")
                continue
            note = f" ({len(failed[key])} run(s) failed)" if key in failed else ""
            out.append(f"| {LABELS[client]} | {med(runs, 'seconds'):.2f} | {med(runs, 'cpu_s'):.2f} | "
                       f"{med(runs, 'max_rss_kib') / 1024:,.0f} | {med(runs, 'growth_kib') / 1024:,.0f} | "
                       f"{med(runs, 'gets'):.0f} | {med(runs, 'bytes_out') / MIB:,.0f} | "
                       f"{med(runs, 'connections'):.0f} | {med(runs, 'server_cpu_s'):.2f}{note} |")
        out.extend(["", "(GETs, MiB requested and connections from the server's access log: the GETs' "
                    "Content-Length summed, so an open-ended GET dropped early counts in full.)", ""])
        peers = [c for c in CLIENTS if c not in BRISK and groups.get((case, c))]
        if not peers:
            continue
        fastest = min(peers, key=lambda c: med(groups[(case, c)], "seconds"))
        lowest = min(peers, key=lambda c: med(groups[(case, c)], "max_rss_kib"))
        fw, fc = med(groups[(case, fastest)], "seconds"), med(groups[(case, fastest)], "cpu_s")
        lr = med(groups[(case, lowest)], "max_rss_kib")
        for client in BRISK:
            runs = groups.get((case, client))
            if not runs:
                continue
            speed = fw / med(runs, "seconds")
            cpu = med(runs, "cpu_s") / fc
            rss = med(runs, "max_rss_kib") / lr
            met = speed >= 1.5 and cpu <= 0.5 and rss <= 1.0
            out.append(f"- {LABELS[client]} against the fastest peer ({LABELS[fastest]}): {speed:.2f}x its "
                       f"speed at {cpu:.2f}x its CPU; peak RSS {rss:.2f}x the lowest peer's "
                       f"({LABELS[lowest]}). Goal (>= 1.5x, <= 0.5x, <= 1.0x): {'met' if met else 'not met'}.")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------
# profile: the calls, the requests and the CPU of brisk's reads, next to pyarrow's C++ client.


def perf_summary(data, lines=28):
    """Self time inside the window by shared object, then by function."""
    def report(sort, limit):
        text = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", sort, "--stdio",
                               "-g", "none", "--percent-limit", limit], capture_output=True, text=True).stdout
        return [ln.rstrip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]

    text = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "dso", "-g", "none"],
                          capture_output=True, text=True).stdout
    total = next((ln.lstrip("# ").strip() for ln in text.splitlines() if ln.startswith("# Samples")), "")
    return "\n".join([f"perf, inside the window only ({total}); self time by shared object:",
                      *report("dso", "0.5")[:14], "by function:", *report("dso,sym", "0.6")[:lines]])


def pyspy_summary(raw, lines=24):
    """Self and inclusive samples per function from py-spy's collapsed stacks, inside the window: the
    main thread's stacks under the measured call, and every other thread's (pyarrow's I/O and CPU
    pools, brisk's runtime)."""
    own, total = collections.Counter(), collections.Counter()
    samples = 0
    with open(raw) as f:
        stacks = [line.rstrip().rpartition(" ") for line in f if line.strip()]
    main = next((st.split(";")[0].split(":")[0] for st, _, _ in stacks if "<module> (parquet_read.py" in st), None)
    for stack, _, count in stacks:
        frames = stack.split(";")
        thread = frames[0].split(":")[0]
        if thread == main and not any("read_table" in fr or "reader.<locals>" in fr for fr in frames):
            continue
        count = int(count)
        samples += count
        own[frames[-1]] += count
        for frame in set(frames[1:]):
            total[frame] += count
    if not samples:
        return "py-spy: no samples inside the window"
    out = [f"py-spy, inside the window: {samples} samples (at 250 Hz, so about {samples / 250:.2f} CPU s); self:"]
    out += [f"  {n / samples:6.1%}  {frame[:140]}" for frame, n in own.most_common(lines)]
    out.append("inclusive, frames of brisk, fsspec and pyarrow's Python layer:")
    picked = [(fr, n) for fr, n in total.most_common()
              if any(s in fr for s in ("brisk/", "fsspec/", "pyarrow/fs.py", "PyReadableFile", "parquet_read.py"))]
    out += [f"  {n / samples:6.1%}  {frame[:140]}" for frame, n in picked[:lines]]
    return "\n".join(out)


def profile(args):
    cases = args.cases.split(",")
    directory = args.dir or os.path.join(args.scratch, f"parquet-profile-{os.getpid()}")
    os.makedirs(directory, exist_ok=True)
    perf = bool(shutil.which("perf")) and not args.py_spy
    py_spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    setup = Setup(args)
    report = [f"Host: {benchlib.host_line()}",
              f"File: {setup.expect['file_bytes']:,} bytes, table {setup.expect['table_bytes']:,} bytes"]

    def one(client, case, offset, **kw):
        row, offset = measure(setup.server, sys.executable, client, case, setup.expect, offset, **kw)
        report.append(f"{client}: {progress_line({**row, 'repeat': '-'})}")
        sizes = row.get("get_sizes") or []
        if sizes:
            report.append(f"  GETs: {len(sizes)}, Content-Length MiB min {min(sizes) / MIB:.3f}, median "
                          f"{statistics.median(sizes) / MIB:.3f}, max {max(sizes) / MIB:.3f}; table "
                          f"{row.get('table_bytes', 0) / MIB:.0f} MiB, peak RSS {row.get('max_rss_kib', 0) / 1024:.0f} "
                          f"MiB, growth {row.get('growth_kib', 0) / 1024:.0f} MiB")
        return offset

    try:
        offset = setup.log_offset()
        for case in cases:
            report.append(f"\n=== {case} ===")
            trace = os.path.join(directory, f"trace-{case}.json")
            report.append("with every call logged (slower by the logging):")
            offset = one("brisk-fsspec", case, offset, trace=trace)
            if os.path.exists(trace):
                report.append(trace_summary(trace))
            report.append("\nrequests per client (one run each, unprofiled):")
            for client in ("brisk-fsspec", "pyarrow-s3", "obstore", "s3fs") + EXPERIMENTS:
                if case not in EXPERIMENT_CASES.get(client, CASES):
                    continue
                if client == "s3fs":
                    row, offset = measure(setup.server, s3fs_python(args), client, case, setup.expect, offset)
                    report.append(f"{client}: {progress_line({**row, 'repeat': '-'})}")
                    continue
                offset = one(client, case, offset)
            for client in ("brisk-fsspec", "pyarrow-s3", "brisk-read_buffer"):
                report.append("")
                if perf:
                    data = os.path.join(directory, f"perf-{client}-{case}.data")
                    ctl, ack = (os.path.join(directory, f"perf-{n}.fifo") for n in ("ctl", "ack"))
                    for fifo in (ctl, ack):
                        if not os.path.exists(fifo):
                            os.mkfifo(fifo)
                    wrap = ["perf", "record", "-F", "999", "-g", "-D", "-1", "--control", f"fifo:{ctl},{ack}",
                            "-o", data, "--"]
                    offset = one(client, case, offset, wrap=wrap, perf_ctl=[ctl, ack])
                    if os.path.exists(data):
                        report.append(perf_summary(data))
                if not perf or args.py_spy_too:
                    data = os.path.join(directory, f"pyspy-{client}-{case}.txt")
                    wrap = [py_spy, "record", "--native", "--threads", "--rate", "250", "--format", "raw",
                            "-o", data, "--"]
                    offset = one(client, case, offset, wrap=wrap)
                    if os.path.exists(data):
                        report.append(pyspy_summary(data))
    finally:
        setup.close()
    text = "\n".join(report)
    with open(os.path.join(directory, "profile.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"call logs, profiles and this report in {directory}", file=sys.stderr)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "drive":
        drive(sys.argv[2])
        return
    if len(sys.argv) == 7 and sys.argv[1] == "generate":
        generate(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        meta, rows = benchlib.read_tsv(sys.argv[2], ints=("size", "repeat", "growth_kib", "max_rss_kib",
                                                         "table_bytes", "gets", "heads", "other_requests",
                                                         "bytes_out", "connections"),
                                      floats=("seconds", "cpu_s", "server_cpu_s"))
        print(tables(meta, rows))
        return
    ap = argparse.ArgumentParser(description="pyarrow's parquet reads through brisk:// and its peers")
    sub = ap.add_subparsers(dest="mode", required=True)
    for name in ("run", "profile"):
        r = sub.add_parser(name)
        r.add_argument("--quick", action="store_true", help="a 64 MiB file (and 2 rounds)")
        r.add_argument("--size", help="the table's (and so the file's) size (default 1GiB)")
        r.add_argument("--cases", default=",".join(CASES))
        r.add_argument("--compression", default="none", help="the parquet codec (default none)")
        r.add_argument("--s3fs-python", help="the Python with s3fs (default .bench-venv-s3fs/bin/python)")
        r.add_argument("--scratch", default="/work/scratch-parquet")
        r.add_argument("--command-line", help=argparse.SUPPRESS)
        if name == "run":
            r.add_argument("--repeats", type=int, help="rounds, the first a warm-up (default 4)")
            r.add_argument("--clients", help="only these clients (default " + ",".join(CLIENTS) + "; also "
                           + ",".join(EXPERIMENTS) + ")")
            r.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
            r.add_argument("--rtt-ms", type=float, help="clients go through bench/latency-proxy with this round trip")
        else:
            r.add_argument("--dir", help="where the call logs and profiles go (default under --scratch)")
            r.add_argument("--py-spy", action="store_true", help="py-spy instead of perf")
            r.add_argument("--py-spy-too", action="store_true", help="py-spy of brisk after perf as well")
    args = ap.parse_args()
    if not args.command_line:
        args.command_line = shlex.join(["bench/parquet_read.py", *sys.argv[1:]])
    if args.mode == "run":
        run(args)
    else:
        profile(args)


if __name__ == "__main__":
    main()
