#!/usr/bin/env python3
"""Training data from Python: brisk against the clients ML loaders are built on (Mountpoint's CRT client
as `s3torchconnectorclient` ships it, s3dlio, obstore, boto3), each client in its own fresh process,
against `brisk serve` and against MinIO.

Run through `bench/ml_peers.sh` (which makes the pinned venv `.bench-venv-ml/`, installs this
checkout's package and builds the server); by hand:

    .bench-venv-ml/bin/python bench/ml_peers.py run [--server brisk|minio|both] [--quick]
                              [--cases many128,many16,get,random,safetensors] [--clients NAMES]
                              [--repeats N] [--duration S] [--scratch DIR] [--out DIR]
    .bench-venv-ml/bin/python bench/ml_peers.py table bench/results/ml-peers-DATE.tsv
    PYTHON bench/ml_peers.py drive CLIENT CASE ENDPOINT BUCKET KEY SIZE COUNT DEPTH SECONDS

`run` starts one server at a time (bench/compare.py's `Server`: `brisk serve` with fsync on, or MinIO,
on 127.0.0.1 with a free port, stopped and its data removed at the end, also on failure), writes the
objects once, then runs every case with every client REPEATS times (4 by default), the clients in a
rotated order in each round; round 1 is a warm-up, measured but left out of the medians. Cases:

  many128      4,096 objects of 128 KiB, 64 in flight, every object read whole once
  many16       8,192 objects of 16 KiB, the same
                 brisk-get_many   client.get_many(bucket, keys, queue_depth=64): one call, a list of
                                  Buffers (all of them held until it returns: its API)
                 brisk-get_many_into  the same call with into= one numpy array of COUNT x SIZE,
                                  allocated and written once before the window (a loader's batch
                                  buffer, reused from one batch to the next)
                 brisk-iter_many  client.iter_many(bucket, keys, queue_depth=64): each Buffer dropped
                                  as it is counted (a loader consuming samples)
                 mountpoint       one MountpointS3Client (s3torchconnectorclient), 64 threads each
                                  taking the next key and joining get_object()'s chunks (what
                                  s3torchconnector's map-style dataset does per sample)
                 s3dlio           s3dlio.get_many(uris, max_in_flight=64): one call, a list
                 obstore          64 asyncio tasks, each taking the next key: get_async().bytes_async()
                 boto3            64 threads (max_pool_connections=64): get_object()["Body"].read()
               Peers other than the two batch calls drop each object after counting it (their
               cheapest way).
  get          the 1 GiB object into memory: brisk get -> Buffer; mountpoint get_object() chunks
               copied into a bytearray of the object's size (its best case: no growing buffer);
               s3dlio get(uri); obstore get().bytes(); boto3 get_object()["Body"].read()
  random       random block-aligned 256 KiB ranges of the 1 GiB object at queue depth 64 for
               DURATION s (5): brisk get_ranges batches of 512 (bench/python_clients.py's
               brisk-ranges); mountpoint 64 threads x get_object(start, end); s3dlio 64 asyncio tasks
               x get_range_async; obstore 64 tasks x get_range_async (python_clients's obstore-tasks);
               boto3 64 threads x ranged get_object (python_clients's boto3)
  safetensors  a 2 GiB safetensors file of 32 float32 tensors [4096, 4096] loaded into numpy arrays:
               brisk-safetensors: brisk.safetensors.load(client, bucket, key) (skipped, and said so,
               while the module is not importable); every other client: its whole-object GET as in
               `get`, then the header parsed and each tensor a zero-copy np.frombuffer view of the
               bytes (what safetensors' own loader would copy once more)

What is measured: inside the driver, around the operation alone (client set-up, key lists and, for the
range case, a HEAD before the clock): wall time, CPU (getrusage user + sys of the whole process, so
every thread of the client's runtime counts), VmRSS before and VmHWM after; from outside, the process's
peak RSS (`/usr/bin/time -v`) and the server's CPU (utime + stime of its /proc/<pid>/stat before and
after the process), and the whole machine's busy CPU over the window (/proc/stat). On a 2-core
machine the client and the server share the cores: the tables give each one's CPU per wall second
("cores"), and "others' cores" what everything else on the machine used meanwhile, so a run bound by
the server, or by a machine that others were using, shows as such.

Writes bench/results/ml-peers-DATE.{tsv,md}.
"""

import argparse
import datetime
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

import benchlib
import compare  # the server and the environment
# bench/python_clients.py: the measured window, /usr/bin/time's parser and the range drivers shared
# with it.
import python_clients as pc
from benchlib import GIB, KIB, MIB, brisk_client

ROOT = benchlib.ROOT
BUCKET = "mlpeers"
BLOCK = pc.BLOCK  # 256 KiB
DEPTH = 64
SEED = pc.SEED
# (object size, count, key prefix) of the many-objects cases.
MANY = {"many128": (128 * KIB, 4096, "m128/"), "many16": (16 * KIB, 8192, "m16/")}
QUICK_MANY = {"many128": (128 * KIB, 512, "m128/"), "many16": (16 * KIB, 1024, "m16/")}
GET_KEY, ST_KEY = "object-1g", "model.safetensors"
FULL_SIZE, QUICK_SIZE = GIB, 64 * MIB
# The safetensors file: ST_TENSORS tensors of float32 [ST_DIM, ST_DIM] (64 MiB each: 2 GiB).
ST_TENSORS, ST_DIM, QUICK_ST_TENSORS, QUICK_ST_DIM = 32, 4096, 4, 2048
CASES = ("many128", "many16", "get", "random", "safetensors")
CLIENTS = {
    "many128": ("brisk-get_many", "brisk-get_many_into", "brisk-iter_many", "mountpoint", "s3dlio", "obstore",
                "boto3"),
    "many16": ("brisk-get_many", "brisk-get_many_into", "brisk-iter_many", "mountpoint", "s3dlio", "obstore",
               "boto3"),
    "get": ("brisk", "mountpoint", "s3dlio", "obstore", "boto3"),
    "random": ("brisk", "mountpoint", "s3dlio", "obstore", "boto3"),
    "safetensors": ("brisk-safetensors", "brisk", "mountpoint", "s3dlio", "obstore", "boto3"),
}
LABELS = {
    "brisk-get_many": "brisk `get_many` (one call, 64 in flight)",
    "brisk-get_many_into": "brisk `get_many(into=array)` (a reused numpy array)",
    "brisk-iter_many": "brisk `iter_many` (64 in flight)",
    "s3dlio-many": "s3dlio `get_many(max_in_flight=64)`",
    ("many", "mountpoint"): "Mountpoint `MountpointS3Client.get_object`, 64 threads",
    ("many", "s3dlio"): "s3dlio `get_many(uris, max_in_flight=64)`",
    ("many", "obstore"): "obstore 64 tasks x `get_async().bytes_async()`",
    ("many", "boto3"): "boto3 64 threads x `get_object`",
    ("get", "brisk"): "brisk `get` -> `Buffer`",
    ("get", "mountpoint"): "Mountpoint `get_object` chunks -> pre-sized `bytearray`",
    ("get", "s3dlio"): "s3dlio `get(uri)`",
    ("get", "obstore"): "obstore `get().bytes()`",
    ("get", "boto3"): 'boto3 `get_object()["Body"].read()`',
    ("random", "brisk"): "brisk `get_ranges` (batches of 512, QD 64)",
    ("random", "mountpoint"): "Mountpoint 64 threads x `get_object(start, end)`",
    ("random", "s3dlio"): "s3dlio 64 tasks x `get_range_async`",
    ("random", "obstore"): "obstore 64 tasks x `get_range_async`",
    ("random", "boto3"): "boto3 64 threads x ranged `get_object`",
    ("safetensors", "brisk-safetensors"): "brisk `brisk.safetensors.load`",
    ("safetensors", "brisk"): "brisk `get` + `np.frombuffer` views",
}
for _c in ("mountpoint", "s3dlio", "obstore", "boto3"):
    LABELS[("safetensors", _c)] = LABELS[("get", _c)] + " + views"
RUN_SLACK_S = 120


def label(case, client):
    kind = "many" if case.startswith("many") else case
    return LABELS.get((kind, client)) or LABELS.get(client) or client


# ---------------------------------------------------------------------------------------------------
# Clients, set up outside the measured window.


def mountpoint_client(endpoint):
    # Credentials from the environment (the CRT's default chain: AWS_ACCESS_KEY_ID and
    # AWS_SECRET_ACCESS_KEY, set by compare.client_env); path-style for 127.0.0.1; every other
    # setting s3torchconnector's default (10 Gbps target, 8 MiB parts).
    from s3torchconnectorclient._mountpoint_s3_client import MountpointS3Client

    return MountpointS3Client(benchlib.REGION, endpoint=endpoint, force_path_style=True)


def s3dlio_module():
    # s3dlio reads AWS_ENDPOINT_URL, AWS_REGION and the key pair from the environment; configure_s3
    # says the same in code, before the first request.
    import s3dlio

    s3dlio.configure_s3(endpoint_url=os.environ["AWS_ENDPOINT_URL"], region=benchlib.REGION)
    return s3dlio


def in_threads(depth, items, work):
    """`work(item)` for every item on `depth` threads that each take the next item; the sum of what
    it returned."""
    it = iter(items)
    lock = threading.Lock()
    totals = []

    def worker():
        n = 0
        while True:
            with lock:
                item = next(it, None)
            if item is None:
                break
            n += work(item)
        totals.append(n)

    threads = [threading.Thread(target=worker) for _ in range(depth)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(totals)


def in_tasks(depth, items, work):
    """`await work(item)` for every item on `depth` asyncio tasks; the sum."""
    import asyncio

    async def main():
        it = iter(items)

        async def worker():
            n = 0
            for item in it:  # the shared iterator: each task takes the next item
                n += await work(item)
            return n

        return sum(await asyncio.gather(*(worker() for _ in range(depth))))

    return asyncio.run(main())


def many_reader(client, endpoint, bucket, keys, size, depth):
    """A callable reading every key whole, `depth` in flight; returns (objects, bytes)."""
    n = len(keys)
    if client == "brisk-get_many":
        c = brisk_client(endpoint)

        def run():
            got = c.get_many(bucket, keys, queue_depth=depth)
            for b in got:
                if isinstance(b, BaseException):
                    raise b
            return n, sum(len(b) for b in got)
        return run
    if client == "brisk-get_many_into":
        import numpy as np

        c = brisk_client(endpoint)
        array = np.empty(n * size, dtype=np.uint8)
        array.fill(1)  # written once: a batch buffer reused from the previous batch

        def run():
            got = c.get_many(bucket, keys, queue_depth=depth, into=array)
            for item in got:
                if isinstance(item, BaseException):
                    raise item
            return n, sum(length for _, length in got)
        return run
    if client == "brisk-iter_many":
        c = brisk_client(endpoint)

        def run():
            total = count = 0
            for _, _, b in c.iter_many(bucket, keys, queue_depth=depth):
                if isinstance(b, BaseException):
                    raise b
                total += len(b)
                count += 1
            return count, total
        return run
    if client == "mountpoint":
        mp = mountpoint_client(endpoint)
        return lambda: (n, in_threads(depth, keys, lambda k: len(b"".join(mp.get_object(bucket, k)))))
    if client == "s3dlio":
        s3dlio = s3dlio_module()
        uris = [f"s3://{bucket}/{k}" for k in keys]

        def run():
            got = s3dlio.get_many(uris, max_in_flight=depth)
            return len(got), sum(len(item[1]) if isinstance(item, tuple) else len(item) for item in got)
        return run
    if client == "obstore":
        import obstore

        store = pc.obstore_store(endpoint, bucket, GIB)

        async def one(k):
            r = await obstore.get_async(store, k)
            return len(await r.bytes_async())
        return lambda: (n, in_tasks(depth, keys, one))
    if client == "boto3":
        s3 = benchlib.boto3_client(endpoint, max_pool_connections=depth)
        return lambda: (n, in_threads(depth, keys, lambda k: len(s3.get_object(Bucket=bucket, Key=k)["Body"].read())))
    raise ValueError(client)


def whole_reader(client, endpoint, bucket, key, size):
    """A callable returning the whole object as something with the buffer protocol."""
    if client == "brisk":
        c = brisk_client(endpoint)
        return lambda: c.get(bucket, key)
    if client == "mountpoint":
        mp = mountpoint_client(endpoint)

        def run():
            out = bytearray(size)
            view = memoryview(out)
            at = 0
            for chunk in mp.get_object(bucket, key):
                view[at:at + len(chunk)] = chunk
                at += len(chunk)
            if at != size:
                raise RuntimeError(f"mountpoint read {at} bytes, expected {size}")
            return out
        return run
    if client == "s3dlio":
        s3dlio = s3dlio_module()
        return lambda: s3dlio.get(f"s3://{bucket}/{key}")
    if client == "obstore":
        import obstore

        store = pc.obstore_store(endpoint, bucket, size)
        return lambda: obstore.get(store, key).bytes()
    if client == "boto3":
        s3 = benchlib.boto3_client(endpoint)
        return lambda: s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    raise ValueError(client)


ST_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "F64": "<f8", "I64": "<i8", "I32": "<i4",
             "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def safetensors_views(data):
    """Every tensor of a safetensors file held in `data` (any buffer) as a zero-copy numpy view."""
    import numpy as np

    view = memoryview(data)
    (header_len,) = np.frombuffer(view[:8], dtype="<u8")
    header = json.loads(bytes(view[8:8 + int(header_len)]))
    base = 8 + int(header_len)
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        start, end = t["data_offsets"]
        dtype = np.dtype(ST_DTYPES[t["dtype"]])
        out[name] = np.frombuffer(view, dtype=dtype, count=(end - start) // dtype.itemsize,
                                  offset=base + start).reshape(t["shape"])
    return out


def safetensors_loader(client, endpoint, bucket, key, size):
    if client == "brisk-safetensors":
        import brisk.safetensors

        c = brisk_client(endpoint)
        return lambda: brisk.safetensors.load(c, bucket, key)
    read = whole_reader(client, endpoint, bucket, key, size)
    return lambda: safetensors_views(read())


def range_reader(client, endpoint, bucket, key, size, depth, seconds):
    """A callable reading random BLOCK ranges for `seconds`; returns (reads, bytes)."""
    if client in ("brisk", "obstore", "boto3"):
        name = {"brisk": "brisk-ranges", "obstore": "obstore-tasks", "boto3": "boto3"}[client]
        return pc.random_reads(name, endpoint, bucket, key, size, depth, seconds)
    blocks = size // BLOCK

    def offsets(seed, deadline):
        r = random.Random(seed)
        while time.monotonic() < deadline:
            yield r.randrange(blocks) * BLOCK

    if client == "mountpoint":
        mp = mountpoint_client(endpoint)
        mp.head_object(bucket, key)

        def run():
            deadline = time.monotonic() + seconds
            counts = []

            def worker(seed):
                reads = got = 0
                for off in offsets(seed, deadline):
                    got += len(b"".join(mp.get_object(bucket, key, start=off, end=off + BLOCK)))
                    reads += 1
                counts.append((reads, got))

            threads = [threading.Thread(target=worker, args=(SEED + i,)) for i in range(depth)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return sum(r for r, _ in counts), sum(g for _, g in counts)
        return run
    if client == "s3dlio":
        import asyncio

        s3dlio = s3dlio_module()
        uri = f"s3://{bucket}/{key}"
        s3dlio.stat(uri)

        def run():
            counts = [0, 0]

            async def worker(seed, deadline):
                for off in offsets(seed, deadline):
                    n = len(await s3dlio.get_range_async(uri, off, BLOCK))
                    counts[0] += 1
                    counts[1] += n

            async def main():
                deadline = time.monotonic() + seconds
                await asyncio.gather(*(worker(SEED + i, deadline) for i in range(depth)))

            asyncio.run(main())
            return tuple(counts)
        return run
    raise ValueError(client)


def machine_busy_seconds():
    """CPU seconds every core of the machine spent busy (not idle, not waiting on I/O) since boot:
    /proc/stat's first line."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / benchlib.CLK_TCK


def drive(client, case, endpoint, bucket, key, size, count, depth, seconds):
    size, count, depth, seconds = int(size), int(count), int(depth), float(seconds)
    if case.startswith("many"):
        keys = [f"{key}{i:05}" for i in range(count)]
        op = many_reader(client, endpoint, bucket, keys, size, depth)
    elif case == "get":
        read = whole_reader(client, endpoint, bucket, key, size)

        def op():
            return 1, len(memoryview(read()).cast("B"))
    elif case == "safetensors":
        load = safetensors_loader(client, endpoint, bucket, key, size)

        def op():
            tensors = load()
            return len(tensors), sum(t.nbytes for t in tensors.values())
    else:
        op = range_reader(client, endpoint, bucket, key, size, depth, seconds)
    busy0 = machine_busy_seconds()
    with pc.Measured() as m:
        ops, moved = op()
    busy = machine_busy_seconds() - busy0
    print(json.dumps({"ops": ops, "bytes": moved, "seconds": m.seconds, "cpu_s": m.cpu, "machine_busy_s": busy,
                      "rss_before_kib": m.rss_before, "hwm_after_kib": m.hwm_after}), flush=True)
    os._exit(0)  # no interpreter teardown (client threads): the window is over


# ---------------------------------------------------------------------------------------------------
# The run.


def write_safetensors(path, tensors, dim):
    """A safetensors file of `tensors` float32 [dim, dim] tensors of random bytes; returns the bytes
    of tensor data in it."""
    each = dim * dim * 4
    header = {f"layers.{i}.weight": {"dtype": "F32", "shape": [dim, dim],
                                     "data_offsets": [i * each, (i + 1) * each]} for i in range(tensors)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    block = os.urandom(min(each, 64 * MIB))
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for _ in range(tensors):
            left = each
            while left:
                n = min(left, len(block))
                f.write(block[:n])
                left -= n
    return tensors * each


def populate(server, work, many, size, st_tensors, st_dim, cases):
    """The objects every case reads, written once with brisk (not measured). Returns what the
    safetensors case expects: (file size, tensor bytes)."""
    import asyncio

    c = brisk_client(server.endpoint)
    c.create_bucket(BUCKET)
    for case in cases:
        if case in many:
            obj_size, count, prefix = many[case]
            body = os.urandom(obj_size)

            async def put_all():
                gate = asyncio.Semaphore(32)

                async def one(i):
                    async with gate:
                        await c.put_async(BUCKET, f"{prefix}{i:05}", body)
                await asyncio.gather(*(one(i) for i in range(count)))
            asyncio.run(put_all())
    st = (0, 0)
    if "get" in cases or "random" in cases:
        source = os.path.join(work, "source")
        compare.write_random_file(source, size)
        c.upload(source, BUCKET, GET_KEY)
        os.unlink(source)
    if "safetensors" in cases:
        source = os.path.join(work, ST_KEY)
        data = write_safetensors(source, st_tensors, st_dim)
        st = (os.path.getsize(source), data)
        c.upload(source, BUCKET, ST_KEY)
        os.unlink(source)
    return st


def brisk_safetensors_importable(python):
    proc = subprocess.run([python, "-c", "import brisk.safetensors"], capture_output=True, text=True)
    return proc.returncode == 0, (proc.stderr.strip().splitlines() or [""])[-1]


def measure(server, python, client, case, key, size, count, depth, seconds, expect_bytes):
    row = {"server": server.kind, "case": case, "client": client, "size": size, "count": count, "depth": depth}
    cmd = ["/usr/bin/time", "-v", python, os.path.abspath(__file__), "drive", client, case, server.endpoint,
           BUCKET, key, str(size), str(count), str(depth), str(seconds)]
    timeout = compare.run_timeout(max(size, size * count if case.startswith("many") else size)) + seconds + RUN_SLACK_S
    cpu0 = server.cpu_seconds()
    try:
        proc = subprocess.run(cmd, env=compare.client_env(server.endpoint), capture_output=True, text=True,
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
               growth_kib=out["hwm_after_kib"] - out["rss_before_kib"], max_rss_kib=outside["max_rss_kib"],
               process_cpu_s=outside["user_s"] + outside["sys_s"], machine_busy_s=out.get("machine_busy_s"))
    expected = out["ops"] * BLOCK if case == "random" else expect_bytes
    if out["bytes"] != expected or out["ops"] == 0:
        return {**row, "status": f"moved {out['bytes']} bytes in {out['ops']} operations, expected {expected}"}
    return {**row, "status": "ok"}


TSV_FIELDS = ("server", "case", "client", "size", "count", "depth", "repeat", "status", "ops", "bytes", "seconds",
              "cpu_s", "growth_kib", "max_rss_kib", "process_cpu_s", "server_cpu_s", "machine_busy_s")


def versions():
    from importlib.metadata import version

    found = {"python": sys.version.split()[0]}
    for name in ("s3torchconnectorclient", "s3dlio", "obstore", "boto3", "botocore", "numpy"):
        try:
            found[name] = version(name)
        except Exception:  # noqa: BLE001 - a missing peer is reported, not fatal
            found[name] = "missing"
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    found["brisk"] = git.stdout.strip()
    return found


def progress_line(row):
    what = f"{row['server']} {row['repeat']} {row['case']} {row['client']}"
    if row["status"] != "ok":
        return f"{what}: {row['status']}"
    gib = row["bytes"] / GIB
    return (f"{what}: {row['ops'] / row['seconds']:,.0f} op/s, {gib / row['seconds']:.2f} GiB/s, "
            f"{row['cpu_s'] / gib:.2f} CPU s/GiB, client {row['cpu_s'] / row['seconds']:.2f} cores, "
            f"server {row['server_cpu_s'] / row['seconds']:.2f} cores, peak {row['max_rss_kib'] / 1024:.0f} MiB")


def run_server(kind, args, meta, rows, partial, minio):
    quick = args.quick
    many = QUICK_MANY if quick else MANY
    size = QUICK_SIZE if quick else FULL_SIZE
    st_tensors, st_dim = (QUICK_ST_TENSORS, QUICK_ST_DIM) if quick else (ST_TENSORS, ST_DIM)
    cases = args.cases.split(",")
    wanted = set(args.clients.split(",")) if args.clients else None
    work = os.path.join(args.scratch, f"ml-peers-{kind}-{os.getpid()}")
    os.makedirs(work)
    server = None
    try:
        server = compare.Server(kind, os.path.join(work, "data"), minio)
        print(f"{kind} on {server.endpoint}: writing the objects", file=sys.stderr)
        st_size, st_bytes = populate(server, work, many, size, st_tensors, st_dim, cases)
        for rep in range(meta["repeats"]):
            for case in cases:
                clients = [n for n in CLIENTS[case] if wanted is None or n in wanted]
                if case == "safetensors" and not meta["brisk_safetensors"] and "brisk-safetensors" in clients:
                    clients.remove("brisk-safetensors")
                order = clients[rep % len(clients):] + clients[: rep % len(clients)]
                for client in order:
                    if case in many:
                        obj_size, count, key = many[case]
                        expect = obj_size * count
                    elif case == "safetensors":
                        obj_size, count, key, expect = st_size, 1, ST_KEY, st_bytes
                    else:
                        obj_size, count, key, expect = size, 1, GET_KEY, size
                    row = measure(server, sys.executable, client, case, key, obj_size, count, DEPTH,
                                  args.duration, expect)
                    row["repeat"] = rep + 1
                    rows.append(row)
                    partial.write(benchlib.tsv_line(row, TSV_FIELDS))
                    partial.flush()
                    print(progress_line(row), file=sys.stderr)
    finally:
        if server:
            server.close()
        shutil.rmtree(work, ignore_errors=True)


def run(args):
    servers = ("brisk", "minio") if args.server == "both" else (args.server,)
    minio = compare.find_minio(args.minio) if "minio" in servers else None
    for case in args.cases.split(","):
        if case not in CASES:
            sys.exit(f"unknown case {case!r}: one of {', '.join(CASES)}")
    repeats = args.repeats or (2 if args.quick else 4)
    if args.duration is None:
        args.duration = 1.0 if args.quick else 5.0
    os.makedirs(args.scratch, exist_ok=True)
    importable, why = brisk_safetensors_importable(sys.executable)
    started_at = datetime.datetime.now(datetime.timezone.utc)
    meta = {"command": args.command_line, "started": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": benchlib.host_line(), "servers": list(servers), "repeats": repeats, "quick": args.quick,
            "seconds": args.duration, "depth": DEPTH, "load_before": open("/proc/loadavg").read().split()[:3],
            "versions": versions(), "brisk_safetensors": importable,
            "brisk_safetensors_why": "" if importable else why}
    if not importable and "safetensors" in args.cases:
        print(f"brisk.safetensors is not importable ({why}): brisk-safetensors skipped", file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"ml-peers-{started_at.strftime('%Y-%m-%dT%H%M%S')}")
    rows = []
    with open(stem + ".partial.tsv", "w") as partial:
        partial.write(f"# {json.dumps(meta)}\n" + "\t".join(TSV_FIELDS) + "\n")
        for kind in servers:
            run_server(kind, args, meta, rows, partial, minio)
    meta["load_after"] = open("/proc/loadavg").read().split()[:3]
    os.unlink(stem + ".partial.tsv")
    benchlib.write_results(stem, meta, rows, TSV_FIELDS, tables(meta, rows), with_json=False)
    print(f"rows in {stem}.tsv; tables in {stem}.md", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------
# Tables: medians over the rounds after the warm-up.


def tables(meta, rows):
    warmup = 1 if meta["repeats"] > 1 else 0
    groups, failed = {}, {}
    for r in rows:
        if r["repeat"] <= warmup:
            continue
        key = (r["server"], r["case"], r["client"])
        if r["status"] == "ok":
            groups.setdefault(key, []).append(r)
        else:
            failed.setdefault(key, []).append(r["status"])

    def med(runs, f):
        return statistics.median(f(r) for r in runs)

    out = [f"Command: `{meta['command']}`", "",
           f"Host: {meta['host']}. {meta['started']}, {meta['repeats']} rounds per server, the first a "
           f"warm-up; medians of the other {meta['repeats'] - warmup}. Load average before "
           f"{' '.join(meta['load_before'])}, after {' '.join(meta.get('load_after', ['?']))}. Versions: "
           + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".", ""]
    if not meta.get("brisk_safetensors"):
        out += [f"`brisk.safetensors` was not importable in this run ({meta.get('brisk_safetensors_why')}): "
                "its row is missing.", ""]
    verdicts = []
    for server in meta["servers"]:
        present = [c for c in CASES if any(r["case"] == c and r["server"] == server for r in rows)]
        for case in present:
            runs_of = {c: groups.get((server, case, c)) for c in CLIENTS[case]}
            sample = next((r for rs in runs_of.values() if rs for r in rs), None)
            if sample is None:
                continue
            if case.startswith("many"):
                title = (f"{server}: {sample['count']:,} objects of {sample['size'] // KIB} KiB, {DEPTH} in flight")
                head = "| client | objects/s | MiB/s | client CPU s/GiB | client cores | server cores | peak RSS MiB |"
            elif case == "random":
                title = f"{server}: random {BLOCK // KIB} KiB ranges of a 1 GiB object, QD {DEPTH}, {meta['seconds']:g} s"
                head = "| client | reads/s | MiB/s | client CPU s/GiB | client cores | server cores | peak RSS MiB |"
            elif case == "get":
                title = f"{server}: a {benchlib.size_label(sample['size'])} object into memory"
                head = "| client | GiB/s | client CPU s/GiB | RSS growth / object | client cores | server cores | peak RSS MiB |"
            else:
                title = (f"{server}: safetensors load of a {sample['size'] / GIB:.2f} GiB file "
                         f"({sample['ops']} tensors) into numpy arrays")
                head = "| client | GiB/s | client CPU s/GiB | RSS growth / file | client cores | server cores | peak RSS MiB |"
            with_others = all(r.get("machine_busy_s") is not None for rs in runs_of.values() if rs for r in rs)
            if with_others:
                head = head.replace("| server cores |", "| server cores | others' cores |")
            out += [title, "", head, "|---" * (8 if with_others else 7) + "|"]
            for client, runs in runs_of.items():
                key = (server, case, client)
                note = f" ({len(failed[key])} run(s) failed: {failed[key][0][:120]})" if key in failed else ""
                if not runs:
                    if note:
                        out.append(f"| {label(case, client)} | failed{note} | | | | | |")
                    continue
                cpu_gib = med(runs, lambda r: r["cpu_s"] / (r["bytes"] / GIB))
                ccores = med(runs, lambda r: r["cpu_s"] / r["seconds"])
                scores = med(runs, lambda r: r["server_cpu_s"] / r["seconds"])
                peak = med(runs, lambda r: r["max_rss_kib"]) / 1024
                others = ""
                if all(r.get("machine_busy_s") is not None for r in runs):
                    others = f" | {med(runs, lambda r: (r['machine_busy_s'] - r['cpu_s'] - r['server_cpu_s']) / r['seconds']):.2f}"
                if case in ("get", "safetensors"):
                    rate = med(runs, lambda r: r["bytes"] / GIB / r["seconds"])
                    growth = med(runs, lambda r: r["growth_kib"] * KIB / r["size"])
                    out.append(f"| {label(case, client)} | {rate:.2f} | {cpu_gib:.2f} | {growth:.2f} | "
                               f"{ccores:.2f} | {scores:.2f}{others} | {peak:.0f}{note} |")
                else:
                    ops = med(runs, lambda r: r["ops"] / r["seconds"])
                    mib = med(runs, lambda r: r["bytes"] / MIB / r["seconds"])
                    out.append(f"| {label(case, client)} | {ops:,.0f} | {mib:,.0f} | {cpu_gib:.2f} | "
                               f"{ccores:.2f} | {scores:.2f}{others} | {peak:.0f}{note} |")
            out.append("")
            if case.startswith("many"):
                for mine in ("brisk-get_many", "brisk-get_many_into"):
                    if runs_of.get(mine):
                        verdicts.append(goal_line(server, case, sample, runs_of, med, mine))
    if verdicts:
        out += ["The get_many goal (at least 2x the best peer's objects/s at no more than half its CPU per GiB):", ""]
        out += [f"- {v}" for v in verdicts] + [""]
    return "\n".join(out)


def goal_line(server, case, sample, runs_of, med, name):
    peers = {c: rs for c, rs in runs_of.items() if rs and not c.startswith("brisk")}
    mine = runs_of.get(name)
    what = f"{server}, {sample['size'] // KIB} KiB"
    if not mine or not peers:
        return f"{what}: not measured"
    rate = {c: med(rs, lambda r: r["ops"] / r["seconds"]) for c, rs in peers.items()}
    best = max(rate, key=rate.get)
    best_cpu = med(peers[best], lambda r: r["cpu_s"] / (r["bytes"] / GIB))
    my_rate = med(mine, lambda r: r["ops"] / r["seconds"])
    my_cpu = med(mine, lambda r: r["cpu_s"] / (r["bytes"] / GIB))
    server_cores = med(mine, lambda r: r["server_cpu_s"] / r["seconds"])
    client_cores = med(mine, lambda r: r["cpu_s"] / r["seconds"])
    met = my_rate >= 2 * rate[best] and my_cpu <= best_cpu / 2
    others = ""
    if all(r.get("machine_busy_s") is not None for r in mine):
        others = (f", everything else on the machine "
                  f"{med(mine, lambda r: (r['machine_busy_s'] - r['cpu_s'] - r['server_cpu_s']) / r['seconds']):.2f}")
    way = "get_many(into=array)" if name.endswith("_into") else "get_many"
    return (f"{what}: {way} {my_rate:,.0f} objects/s at {my_cpu:.2f} CPU s/GiB against the best peer "
            f"({best}) {rate[best]:,.0f} at {best_cpu:.2f}: {my_rate / rate[best]:.2f}x the objects/s at "
            f"{my_cpu / best_cpu:.2f}x the CPU per GiB: goal {'met' if met else 'not met'}; while it ran, "
            f"the server used {server_cores:.2f} cores and the client {client_cores:.2f}{others} (of 2)")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "drive":
        if len(sys.argv) != 11:
            sys.exit("usage: ml_peers.py drive CLIENT CASE ENDPOINT BUCKET KEY SIZE COUNT DEPTH SECONDS")
        drive(*sys.argv[2:])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        meta, rows = benchlib.read_tsv(sys.argv[2], ints=("size", "count", "depth", "repeat", "ops", "bytes",
                                                         "growth_kib", "max_rss_kib"),
                                      floats=("seconds", "cpu_s", "process_cpu_s", "server_cpu_s", "machine_busy_s"))
        print(tables(meta, rows))
        return
    ap = argparse.ArgumentParser(description="brisk against Mountpoint's CRT client, s3dlio, obstore and boto3")
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--server", choices=("brisk", "minio", "both"), default="both")
    r.add_argument("--quick", action="store_true",
                   help="512 / 1,024 small objects, a 64 MiB object, a 64 MiB safetensors file, 1 s, 2 rounds")
    r.add_argument("--cases", default=",".join(CASES))
    r.add_argument("--clients", help="only these client names (default all of each case)")
    r.add_argument("--repeats", type=int, help="rounds per server, the first a warm-up (default 4)")
    r.add_argument("--duration", type=float, help="seconds per range run (default 5)")
    r.add_argument("--minio", help="the MinIO binary (default .tools/bin/minio)")
    r.add_argument("--scratch", default="/work/scratch-compare")
    r.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    r.add_argument("--command-line", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.command_line:
        args.command_line = shlex.join(["bench/ml_peers.py", *sys.argv[1:]])
    run(args)


if __name__ == "__main__":
    main()
