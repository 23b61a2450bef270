"""N in-memory reads in turn, in one Python process, each copy dropped before the next: the steady
state of a loop that reads large objects (a data loader's shards, checkpoint loads) or batches of
large ranges.

    python bench/python_get_rounds.py CLIENT ENDPOINT BUCKET KEY N [COUNT SIZE]

Without COUNT and SIZE each read is the whole object: CLIENT is brisk (`Client.get`), brisk-nokeep
(the same with `kept_buffers=0`), obstore (`get(...).bytes()`) or minio-py
(`get_object(...).read()`). With them each read is one batch of COUNT ranges of SIZE bytes from the
object's start: brisk (`Client.get_ranges`) or obstore (`get_ranges`). The keys are compare.py's
(comparebenchkey / comparebenchsecret); brisk's budget is 2 GiB. One read first, not counted
(imports, the connection, the first buffers); then CPU (getrusage, user + sys) and wall time over N
reads, per GiB. BENCHMARKS.md ("Reading large objects one after another") has the runs: brisk
from the venv of `./scripts/test` (.venv), the peers from bench/venv.sh's (.bench-venv), against
`brisk serve` or MinIO holding a 1 GiB object written by the upload example.
"""
import resource
import sys
import time

from benchlib import ACCESS_KEY, REGION, SECRET_KEY
from benchlib import brisk_client as _brisk_client
from benchlib import obstore_store as _obstore_store


def brisk_client(ep, **kwargs):
    return _brisk_client(ep, max_memory="2GiB", **kwargs)


def obstore_store(ep, bucket):
    return _obstore_store(ep, bucket, timeout_s=600)


def whole_reader(client, ep, bucket, key):
    if client == "brisk":
        c = brisk_client(ep)
        return lambda: len(c.get(bucket, key))
    if client == "brisk-nokeep":
        c = brisk_client(ep, kept_buffers=0)
        return lambda: len(c.get(bucket, key))
    if client == "obstore":
        import obstore

        s = obstore_store(ep, bucket)
        return lambda: len(obstore.get(s, key).bytes())
    if client == "minio-py":
        from minio import Minio

        m = Minio(ep.split("://")[1], access_key=ACCESS_KEY, secret_key=SECRET_KEY, secure=False, region=REGION)

        def get():
            r = m.get_object(bucket, key)
            try:
                return len(r.read())
            finally:
                r.close()
                r.release_conn()

        return get
    sys.exit(f"unknown client {client!r}")


def batch_reader(client, ep, bucket, key, count, size):
    starts = [i * size for i in range(count)]
    if client == "brisk":
        c = brisk_client(ep)
        return lambda: sum(len(b) for b in c.get_ranges(bucket, key, starts, size))
    if client == "obstore":
        import obstore

        s = obstore_store(ep, bucket)
        return lambda: sum(len(b) for b in obstore.get_ranges(s, key, starts=starts, lengths=[size] * count))
    sys.exit(f"no batch reads for {client!r}: brisk or obstore")


def main():
    if len(sys.argv) not in (6, 8):
        sys.exit(__doc__)
    client, ep, bucket, key, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    if len(sys.argv) == 8:
        read = batch_reader(client, ep, bucket, key, int(sys.argv[6]), int(sys.argv[7]))
    else:
        read = whole_reader(client, ep, bucket, key)
    read()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    total = sum(read() for _ in range(n))
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    gib = total / (1 << 30)
    print(f"{client}: {gib:.1f} GiB in {t1 - t0:.2f} s ({gib / (t1 - t0):.2f} GiB/s), {cpu / gib:.3f} CPU s/GiB, "
          f"maxrss {r1.ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
