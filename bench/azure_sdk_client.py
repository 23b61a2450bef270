"""One measured run of Microsoft's Azure Blob SDK (azure-storage-blob), in a fresh process, as users
call it. Prints one JSON line: seconds, CPU seconds, the process's peak RSS and its RSS before the
transfer (after imports and the client's set-up), and the bytes moved.

  azure_sdk_client.py CONN CONTAINER BLOB CASE [FILE]

CASE: readall (download_blob().readall()), readall4 (max_concurrency=4), readinto (max_concurrency=4,
into a preallocated bytearray through a seekable stream over it), download (readinto an open file, max_concurrency=4), upload (upload_blob of
FILE, max_concurrency=4), random (QD 64 of 256 KiB ranges for 5 s: 64 threads, download_blob with
offset/length).
"""

import io
import json
import os
import random
import resource
import sys
import threading
import time

from azure.storage.blob import BlobServiceClient


class IntoBuffer(io.RawIOBase):
    """A preallocated buffer as the seekable stream `readinto` writes to (the SDK takes a stream)."""

    def __init__(self, buf):
        self.view = memoryview(buf)
        self.pos = 0

    def writable(self):
        return True

    def seekable(self):
        return True

    def seek(self, pos, whence=io.SEEK_SET):
        self.pos = pos if whence == io.SEEK_SET else self.pos + pos
        return self.pos

    def tell(self):
        return self.pos

    def write(self, b):
        n = len(b)
        self.view[self.pos:self.pos + n] = b
        self.pos += n
        return n


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    conn, container, blob_name, case = sys.argv[1:5]
    path = sys.argv[5] if len(sys.argv) > 5 else None
    blob = BlobServiceClient.from_connection_string(conn).get_blob_client(container, blob_name)
    size = blob.get_blob_properties().size if case != "upload" else os.path.getsize(path)
    before_rss, before_cpu, start = rss_bytes(), cpu_seconds(), time.monotonic()
    moved = size
    if case == "readall":
        data = blob.download_blob().readall()
        assert len(data) == size
    elif case == "readall4":
        data = blob.download_blob(max_concurrency=4).readall()
        assert len(data) == size
    elif case == "readinto":
        buf = bytearray(size)
        n = blob.download_blob(max_concurrency=4).readinto(IntoBuffer(buf))
        assert n == size
    elif case == "download":
        with open(path, "wb") as f:
            n = blob.download_blob(max_concurrency=4).readinto(f)
        assert n == size
    elif case == "upload":
        with open(path, "rb") as f:
            blob.upload_blob(f, overwrite=True, max_concurrency=4, length=size)
    elif case == "random":
        block, depth, duration = 256 * 1024, 64, 5.0
        stop = time.monotonic() + duration
        counts = [0] * depth

        def worker(i):
            rng = random.Random(i)
            while time.monotonic() < stop:
                offset = rng.randrange(0, size - block) // 4096 * 4096
                data = blob.download_blob(offset=offset, length=block).readall()
                assert len(data) == block
                counts[i] += 1

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(depth)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        moved = sum(counts) * block
    else:
        sys.exit(f"unknown case {case}")
    seconds = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({
        "case": case, "bytes": moved, "seconds": seconds, "cpu_seconds": cpu_seconds() - before_cpu,
        "peak_rss": peak, "rss_before": before_rss,
    }))


if __name__ == "__main__":
    main()
