"""Many whole objects from Python: `Client.get_many` against a loop of `get_async` under an
asyncio semaphore, and `Client.put_many` against a loop of `put_async` the same way, all at queue
depth 64, against one release `brisk serve` on 127.0.0.1.

    .venv/bin/python bench/get_many.py [--brisk target/release/brisk] [--count 4096]
        [--size 131072] [--depth 64] [--repeats 3] [--no-fsync] [--ways get_many,get_async_loop,put_many,put_async_loop]

Starts the server on a temporary directory, writes COUNT objects of SIZE bytes, then runs each
way REPEATS times, each run in a fresh Python process (`run` below), alternating the two. A run
reports the objects per second and the process's CPU seconds per GiB over the reads alone (the
client built and the connections not yet opened before the clock starts); the server's CPU is
not counted. Prints one line per run and the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

import benchlib
import local_serve
from benchlib import ACCESS_KEY as ACCESS, SECRET_KEY as SECRET



def client(endpoint):
    import brisk

    return brisk.Client(
        endpoint, access_key_id=ACCESS, secret_access_key=SECRET, region="us-east-1", max_memory="1GiB"
    )


def run(way, endpoint, bucket, count, size, depth):
    c = client(endpoint)
    keys = [f"o/{i:05}" for i in range(count)]
    if way.startswith("put"):
        body = os.urandom(size)
        cpu0, t0 = time.process_time(), time.perf_counter()
        if way == "put_many":
            results = c.put_many(bucket, {f"p/{i:05}": body for i in range(count)}, queue_depth=depth)
        else:

            async def main():
                gate = asyncio.Semaphore(depth)

                async def one(i):
                    async with gate:
                        return await c.put_async(bucket, f"p/{i:05}", body)

                return await asyncio.gather(*(one(i) for i in range(count)))

            results = asyncio.run(main())
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        assert len(results) == count and not any(isinstance(r, BaseException) for r in results)
        print(json.dumps({"way": way, "wall": wall, "cpu": cpu, "objects_per_s": count / wall,
                          "cpu_s_per_gib": cpu / (count * size / 2**30)}), flush=True)
        return
    cpu0, t0 = time.process_time(), time.perf_counter()
    if way == "get_many":
        results = c.get_many(bucket, keys, queue_depth=depth)
        n = sum(len(r) for r in results)
    else:

        async def main():
            gate = asyncio.Semaphore(depth)

            async def one(key):
                async with gate:
                    return await c.get_async(bucket, key)

            return await asyncio.gather(*(one(k) for k in keys))

        results = asyncio.run(main())
        n = sum(len(r) for r in results)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    assert n == count * size, n
    print(json.dumps({"way": way, "wall": wall, "cpu": cpu, "objects_per_s": count / wall,
                      "cpu_s_per_gib": cpu / (n / 2**30)}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--brisk", default="target/release/brisk")
    parser.add_argument("--count", type=int, default=4096)
    parser.add_argument("--size", type=int, default=131072)
    parser.add_argument("--depth", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-fsync", action="store_true",
                        help="start the server with --no-fsync (writes not bound by the disk)")
    parser.add_argument("--ways", default="get_many,get_async_loop,put_many,put_async_loop")
    args = parser.parse_args()
    extra = ["--no-fsync"] if args.no_fsync else []
    with local_serve.brisk_serve(args.brisk, *extra) as server:
        endpoint = server.endpoint
        c = client(endpoint)
        c.create_bucket("many")
        body = os.urandom(args.size)
        for i in range(args.count):
            c.put("many", f"o/{i:05}", body)
        del c
        print(f"{args.count} objects of {args.size} B, queue depth {args.depth}; "
              f"{benchlib.host_line()}", flush=True)
        runs = {way: [] for way in args.ways.split(",")}
        for _ in range(args.repeats):
            for way in runs:
                child = subprocess.run(
                    [sys.executable, __file__, "run", way, endpoint, "many", str(args.count),
                     str(args.size), str(args.depth)],
                    stdout=subprocess.PIPE, text=True,
                )
                out = child.stdout
                # The run's figures are printed before the interpreter exits; an exit status
                # other than 0 is shown, not hidden.
                print(out.strip(), f"(exit status {child.returncode})" if child.returncode else "",
                      flush=True)
                runs[way].append(json.loads(out))
        for way, rs in runs.items():
            print(f"{way}: median {statistics.median(r['objects_per_s'] for r in rs):.0f} objects/s, "
                  f"{statistics.median(r['cpu_s_per_gib'] for r in rs):.2f} CPU s/GiB")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        way, endpoint, bucket, count, size, depth = sys.argv[2:8]
        run(way, endpoint, bucket, int(count), int(size), int(depth))
    else:
        main()
