"""N in-memory GETs of one object in turn, in one Python process, each copy dropped before the next:
the steady state of a loop that reads large objects (a data loader's shards, checkpoint loads).

    python bench/python_get_rounds.py CLIENT ENDPOINT BUCKET KEY N

CLIENT is brisk (`Client.get`), brisk-nokeep (the same with `kept_buffers=0`), obstore
(`get(...).bytes()`) or minio-py (`get_object(...).read()`); the keys are compare.py's
(comparebenchkey / comparebenchsecret). One read first, not counted (imports, the connection, the
first buffer); then CPU (getrusage, user + sys) and wall time over N reads, per GiB.
BENCHMARKS.md ("Reading large objects one after another") has the runs: brisk from the venv of
`./scripts/test` (.venv), the peers from bench/venv.sh's (.bench-venv), against `brisk serve` or
MinIO holding a 1 GiB object written by the upload example.
"""
import resource
import sys
import time

client, ep, bucket, key, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
AK, SK = "comparebenchkey", "comparebenchsecret"
if client == "brisk":
    import brisk
    c = brisk.Client(ep, access_key_id=AK, secret_access_key=SK, region="us-east-1", max_memory="2GiB")
    get = lambda: len(c.get(bucket, key))
elif client == "brisk-nokeep":
    import brisk
    c = brisk.Client(ep, access_key_id=AK, secret_access_key=SK, region="us-east-1", max_memory="2GiB", kept_buffers=0)
    get = lambda: len(c.get(bucket, key))
elif client == "obstore":
    from obstore.store import S3Store
    import obstore
    s = S3Store(bucket, endpoint=ep, region="us-east-1", access_key_id=AK, secret_access_key=SK,
                virtual_hosted_style_request=False, client_options={"allow_http": True, "timeout": "600s"})
    get = lambda: len(obstore.get(s, key).bytes())
elif client == "minio-py":
    from minio import Minio
    m = Minio(ep.split("://")[1], access_key=AK, secret_key=SK, secure=False, region="us-east-1")
    def get():
        r = m.get_object(bucket, key)
        try:
            return len(r.read())
        finally:
            r.close(); r.release_conn()
get()  # warm: imports, connection, first buffer excluded from the figures
r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
total = sum(get() for _ in range(n))
t1 = time.perf_counter(); r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
gib = total / (1 << 30)
print(f"{client}: {gib:.0f} GiB in {t1-t0:.2f} s ({gib/(t1-t0):.2f} GiB/s), {cpu/gib:.3f} CPU s/GiB, maxrss {r1.ru_maxrss/1024:.0f} MiB")
