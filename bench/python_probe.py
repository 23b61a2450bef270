#!/usr/bin/env python3
"""Two probes of brisk's Python `get_ranges` at one point (random 256 KiB ranges of an object, queue
depth 64, 5 s), each figure from one process: IOPS, client CPU per GiB (getrusage) and minor page
faults during the window.

    python bench/python_probe.py batch ENDPOINT BUCKET KEY RANGES_PER_BATCH [POOL_RETENTION]
        Buffers of one batch held until the batch is done, then freed (the pool keeps up to
        POOL_RETENTION bytes of them for the next batch; default: the client's).
    python bench/python_probe.py into ENDPOINT BUCKET KEY numpy|aligned
        into= one reused numpy array of 512 ranges: as numpy allocates it (16 bytes past a page
        boundary), or a view of it that starts on a page boundary.

Credentials and region come from the environment (AWS_ACCESS_KEY_ID, ...). bench/python.sh's
`.bench-venv` has brisk and numpy.
"""

import random
import resource
import sys
import time

import brisk

BLOCK, DEPTH, SECONDS = 256 * 1024, 64, 5.0


def main():
    mode, endpoint, bucket, key, arg = sys.argv[1:6]
    kwargs = {"pool_retention": sys.argv[6]} if len(sys.argv) > 6 else {}
    client = brisk.Client(endpoint, addressing_style="path", **kwargs)
    blocks = client.head(bucket, key).size // BLOCK
    rng = random.Random(1)
    if mode == "batch":
        batch = int(arg)

        def one(offsets):
            buffers = client.get_ranges(bucket, key, offsets, BLOCK, queue_depth=DEPTH)
            del buffers
    else:
        import numpy as np

        batch = 512
        raw = np.empty(batch * BLOCK + 4096, dtype=np.uint8)
        start = (-raw.ctypes.data) % 4096 if arg == "aligned" else 0
        array = raw[start:start + batch * BLOCK]
        array.fill(1)

        def one(offsets):
            client.get_ranges(bucket, key, offsets, BLOCK, into=array, queue_depth=DEPTH)
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    reads = 0
    while time.perf_counter() - started < SECONDS:
        one([rng.randrange(blocks) * BLOCK for _ in range(batch)])
        reads += batch
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(f"{mode} {arg} {' '.join(sys.argv[6:])}: {reads / elapsed:,.0f} IOPS, "
          f"{cpu / (reads * BLOCK / 2**30):.2f} client CPU s/GiB, {after.ru_minflt - before.ru_minflt:,} minor faults")


if __name__ == "__main__":
    main()
