"""A 2 GiB safetensors file from a release `brisk serve` on 127.0.0.1: `brisk.safetensors.load`
against `Client.get` of the same bytes, `iter_tensors` under `max_memory=256MiB`, and `load` by
ranged GETs (`queue_depth=16`) into one numpy allocation (`load_ranges`).

    python bench/safetensors_load.py [--brisk target/release/brisk] [--repeats 3]
        [--ways load,get,iter_tensors,load_ranges]

Starts the server on a temporary directory and writes the file (32 tensors of 64 MiB, F32 and
BF16, and 64 small ones of 16 KiB, as a model's layers and norms), then runs each way in a fresh
Python process (`run` below), alternating the ways, for one round that is discarded (it fills
the server's page cache) and REPEATS rounds that are reported. A run reports GiB/s and the
process's CPU seconds per GiB over the read alone (the client built and the header's connection
not yet opened before the clock starts; the server's CPU is not counted), and its peak resident
memory (VmHWM) as a multiple of the file's size, over the whole process and over what it had
before the read. `iter_tensors` touches one byte per page of each array and drops it.

`run(way, endpoint, bucket, key)` is importable: a peer's benchmark measures its own ways the same.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import benchlib
import local_serve
from benchlib import ACCESS_KEY as ACCESS, SECRET_KEY as SECRET

BUCKET, KEY = "models", "model.safetensors"
CAP = 256 << 20
PART = 8 << 20


def status(field: str) -> int:
    """A VmRSS/VmHWM figure of this process, in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def client(endpoint: str, **kwargs):
    import brisk

    kwargs.setdefault("access_key_id", ACCESS)
    kwargs.setdefault("secret_access_key", SECRET)
    kwargs.setdefault("region", "us-east-1")
    kwargs.setdefault("max_memory", "3GiB")
    return brisk.Client(endpoint, **kwargs)


def run(way: str, endpoint: str, bucket: str = BUCKET, key: str = KEY, **client_kwargs) -> dict:
    """One way of reading the object, in this process (call it in a fresh one: peak RSS is the
    process's). Returns (and prints as JSON) its figures."""
    import numpy

    import brisk.safetensors as st

    c = client(endpoint, **client_kwargs)
    size = c.head(bucket, key).size
    base = status("VmRSS")
    cpu0, t0 = time.process_time(), time.perf_counter()
    stats: dict[str, int] = {}
    if way in ("load", "load_ranges"):
        tensors = st.load(c, bucket, key, queue_depth=16 if way == "load_ranges" else None)
        n = sum(a.nbytes for a in tensors.values())
    elif way == "get":
        buf = c.get(bucket, key)
        n = len(buf)
    elif way == "iter_tensors":
        n = 0
        page = numpy.uint8(0)
        for _name, array in st.iter_tensors(c, bucket, key, max_memory=CAP, part_size=PART, stats=stats):
            raw = array.reshape(-1).view(numpy.uint8)
            page ^= numpy.bitwise_xor.reduce(raw[::4096]) if raw.size else 0
            n += array.nbytes
            del array, raw
    else:
        raise ValueError(way)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    hwm = status("VmHWM")
    out = {"way": way, "bytes": n, "size": size, "wall": wall, "cpu": cpu, "gib_s": size / wall / 2**30,
           "cpu_s_per_gib": cpu / (size / 2**30), "rss_peak_x": hwm / size, "rss_growth_x": (hwm - base) / size,
           "rss_growth_mib": (hwm - base) / 2**20, "load_avg": os.getloadavg()[0]}
    if stats:
        out["held_peak_mib"] = stats["peak_bytes"] / 2**20
    print(json.dumps(out), flush=True)
    return out


def write_model(endpoint: str) -> int:
    """32 tensors of 64 MiB (30 F32, 2 BF16) and 64 of 16 KiB, from one 64 MiB random block (the
    same memory for every large tensor: the file is 2 GiB, the writer holds 64 MiB)."""
    import numpy

    import brisk.safetensors as st

    c = client(endpoint)
    c.create_bucket(BUCKET)
    block = numpy.frombuffer(os.urandom(64 << 20), numpy.uint8)
    tensors: dict[str, numpy.ndarray] = {}
    dtypes = {}
    for i in range(32):
        if i < 2:
            tensors[f"embed.{i}"] = block.view(numpy.uint16).reshape(8192, 4096)
            dtypes[f"embed.{i}"] = "BF16"
        else:
            tensors[f"layers.{i}.weight"] = block.view(numpy.float32).reshape(4096, 4096)
    for i in range(64):
        tensors[f"layers.{i}.norm"] = block[: 16 << 10].view(numpy.float32)
    return st.save(c, BUCKET, KEY, tensors, dtypes=dtypes).size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--brisk", default="target/release/brisk")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ways", default="load,get,iter_tensors,load_ranges")
    args = parser.parse_args()
    ways = args.ways.split(",")
    with local_serve.brisk_serve(args.brisk) as server:
        endpoint = server.endpoint
        size = write_model(endpoint)
        print(f"{size} B ({size / 2**30:.3f} GiB) safetensors file; {benchlib.host_line()}; "
              f"load average {os.getloadavg()[0]:.2f}", flush=True)
        runs: dict[str, list[dict]] = {w: [] for w in ways}
        for r in range(args.repeats + 1):
            for way in ways:
                child = subprocess.run([sys.executable, __file__, "run", way, endpoint],
                                       stdout=subprocess.PIPE, text=True)
                out = child.stdout.strip()
                print("discarded" if r == 0 else "", out,
                      f"(exit status {child.returncode})" if child.returncode else "", flush=True)
                local_serve.check_running(server)
                if r > 0 and child.returncode == 0:
                    runs[way].append(json.loads(out.splitlines()[-1]))
        for way, rs in runs.items():
            if not rs:
                continue
            med = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
            line = (f"{way}: median {med('gib_s'):.2f} GiB/s, {med('cpu_s_per_gib'):.2f} CPU s/GiB, "
                    f"peak RSS {med('rss_peak_x'):.3f}x the file ({med('rss_growth_x'):.3f}x grown, "
                    f"{med('rss_growth_mib'):.0f} MiB)")
            if way == "iter_tensors":
                line += f"; held at most {med('held_peak_mib'):.0f} MiB (cap {CAP >> 20} MiB + 2 parts = " \
                        f"{(CAP + 2 * PART) >> 20} MiB)"
            print(line, flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], *sys.argv[4:6])
    else:
        main()
