"""`brisk.data` in one worker process against two, as PyTorch's `DataLoader` runs them, against one
release `brisk serve` on 127.0.0.1.

    .venv/bin/python bench/data_workers.py [--brisk target/release/brisk] [--count 4096]
        [--size 131072] [--batch 64] [--repeats 3] [--kinds map,iter] [--context fork]
        [--decode-passes 0]

Starts the server on a temporary directory and writes COUNT objects of SIZE bytes. Each run is a
fresh Python process (`run` below) that builds the dataset (`ObjectDataset` over the prefix, read
in batches of BATCH through `__getitems__`, or `ObjectIterableDataset`, sharded by worker), starts
WORKERS worker processes with the given multiprocessing start method, lets each build its client,
and then times, from one start signal to the last worker's report, the reading of every object
once: batches given out in turn as `DataLoader` does, each sample's bytes checksummed
(`zlib.crc32`, a transform that reads every byte) and only the checksums sent back. With
`--decode-passes N` the transform also hashes the bytes N times with SHA-256, standing in for the
CPU a real decoder (JPEG, a tokenizer) spends per sample: the work worker processes exist to
spread over cores. Runs of one
and of two workers alternate, REPEATS times each. Besides objects per second, a run reports the CPU
seconds the workers and the server spent over the timed part (from /proc), so that a ratio below
2x can be set against what two cores can give.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
import zlib

import benchlib
import local_serve
from benchlib import ACCESS_KEY as ACCESS, SECRET_KEY as SECRET

BUCKET = "dataworkers"


def options(endpoint: str) -> dict:
    return {"endpoint_url": endpoint, "access_key_id": ACCESS, "secret_access_key": SECRET,
            "region": "us-east-1", "max_memory": "256MiB"}


def checksum(passes: int, buf) -> int:
    """The transform: CRC32 of the sample, after `passes` SHA-256 passes over it (decode work)."""
    for _ in range(passes):
        hashlib.sha256(buf).digest()
    return zlib.crc32(buf)


def map_worker(ds, batches, ready, go, results):
    _ = ds.client  # the client built before the clock starts, as a DataLoader's workers are warm
    ready.put(os.getpid())
    go.wait()
    cpu0 = time.process_time()
    n = 0
    for batch in batches:
        sums = ds.__getitems__(batch)
        n += len(sums)
    results.put((n, time.process_time() - cpu0))


def iter_worker(ds, ready, go, results):
    _ = ds.client
    ready.put(os.getpid())
    go.wait()
    cpu0 = time.process_time()
    n = sum(1 for _ in ds)
    results.put((n, time.process_time() - cpu0))


def run(kind, workers, endpoint, count, batch, context, server_pid, passes):
    from brisk.data import ObjectDataset, ObjectIterableDataset

    transform = functools.partial(checksum, passes)
    ctx = multiprocessing.get_context(context)
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    if kind == "map":
        ds = ObjectDataset.from_prefix(f"s3://{BUCKET}/o/", transform=transform, **options(endpoint))
        batches = [list(range(i, min(i + batch, count))) for i in range(0, count, batch)]
        procs = [ctx.Process(target=map_worker, args=(ds, batches[w::workers], ready, go, results))
                 for w in range(workers)]
    else:
        ds = ObjectIterableDataset.from_prefix(f"s3://{BUCKET}/o/", transform=transform, queue_depth=batch,
                                               **options(endpoint))
        procs = [ctx.Process(target=iter_worker,
                             args=(ds.shard(worker_id=w, num_workers=workers), ready, go, results))
                 for w in range(workers)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=120)
    server0 = benchlib.process_cpu_seconds(server_pid)
    t0 = time.perf_counter()
    go.set()
    reports = [results.get(timeout=600) for _ in procs]
    wall = time.perf_counter() - t0
    server_cpu = benchlib.process_cpu_seconds(server_pid) - server0
    for p in procs:
        p.join()
    n = sum(r[0] for r in reports)
    assert n == count, (n, count)
    print(json.dumps({"kind": kind, "workers": workers, "wall": wall, "objects_per_s": count / wall,
                      "worker_cpu": sum(r[1] for r in reports), "server_cpu": server_cpu,
                      "load": os.getloadavg()[0]}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brisk", default="target/release/brisk")
    parser.add_argument("--count", type=int, default=4096)
    parser.add_argument("--size", type=int, default=131072)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", default="map,iter")
    parser.add_argument("--context", default="fork", choices=["fork", "spawn", "forkserver"])
    parser.add_argument("--decode-passes", type=int, default=0)
    args = parser.parse_args()
    with local_serve.brisk_serve(args.brisk) as server:
        endpoint = server.endpoint
        import brisk

        c = brisk.Client(**options(endpoint))
        c.create_bucket(BUCKET)
        body = os.urandom(args.size)
        for i in range(args.count):
            c.put(BUCKET, f"o/{i:05}", body)
        del c
        print(f"{args.count} objects of {args.size} B, batches of {args.batch}, {args.context}, "
              f"{args.decode_passes} SHA-256 passes per sample; "
              f"{benchlib.host_line()}; brisk {brisk.__version__} "
              f"from {os.path.dirname(brisk.__file__)}", flush=True)
        runs = {(kind, w): [] for kind in args.kinds.split(",") for w in (1, 2)}
        for repeat in range(args.repeats):
            # Alternate the order: 1 then 2 workers, then 2 then 1.
            order = list(runs) if repeat % 2 == 0 else [(k, w) for k, w in reversed(list(runs))]
            for kind, workers in order:
                child = subprocess.run(
                    [sys.executable, __file__, "run", kind, str(workers), endpoint, str(args.count),
                     str(args.batch), args.context, str(server.proc.pid), str(args.decode_passes)],
                    stdout=subprocess.PIPE, text=True, check=False,
                )
                out = child.stdout
                print(out.strip(), f"(exit status {child.returncode})" if child.returncode else "",
                      flush=True)
                runs[kind, workers].append(json.loads(out))
        for kind in args.kinds.split(","):
            medians, cores = {}, {}
            for w in (1, 2):
                rs = runs[kind, w]
                medians[w] = statistics.median(r["objects_per_s"] for r in rs)
                per_object = statistics.median((r["worker_cpu"] + r["server_cpu"]) / args.count for r in rs)
                server_share = statistics.median(r["server_cpu"] / (r["worker_cpu"] + r["server_cpu"])
                                                 for r in rs)
                cores[w] = statistics.median((r["worker_cpu"] + r["server_cpu"]) / r["wall"] for r in rs)
                print(f"{kind}, {w} worker{'s' if w > 1 else ''}: median {medians[w]:.0f} objects/s "
                      f"({medians[w] * args.size / 2**20:.0f} MiB/s); {per_object * 1e6:.0f} CPU us "
                      f"per object, workers and server, {server_share:.0%} of it the server's; "
                      f"{cores[w]:.2f} cores busy; load average {statistics.median(r['load'] for r in rs):.2f}")
            # What two workers could reach at most: the machine's cores over the cores one
            # worker's run keeps busy (itself and the server).
            bound = min(2.0, os.cpu_count() / cores[1])
            print(f"{kind}: two workers / one = {medians[2] / medians[1]:.2f}x "
                  f"(the CPU bound: {os.cpu_count()} cores / {cores[1]:.2f} = {bound:.2f}x)", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        kind, workers, endpoint, count, batch, context, server_pid, passes = sys.argv[2:10]
        run(kind, int(workers), endpoint, int(count), int(batch), context, int(server_pid), int(passes))
    else:
        main()
