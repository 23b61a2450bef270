#!/usr/bin/env python3
"""In-memory GET with each S3 client, one process per measurement.

`clients.py get CLIENT ENDPOINT BUCKET KEY SIZE` reads one object of SIZE bytes into memory with
CLIENT (boto3, awscrt or obstore) and prints `bytes seconds` (seconds of the transfer, after the
client is set up); `bench/clients.sh` runs it (and brisk's
`get_bytes` example) under `/usr/bin/time -v` for peak RSS and CPU time, and
`clients.py table RESULTS.tsv` turns the measurements into the markdown table of BENCHMARKS.md.

Each client is used the way its documentation shows for reading an object into memory:
- boto3: `get_object(...)["Body"].read()`;
- awscrt: `S3Client.make_request(GET_OBJECT)` (parallel ranged parts, 8 MiB), bodies written by offset
  into one `bytearray` of the object's size, given in advance (the best case for it);
- obstore: `obstore.get(store, key).bytes()`.
Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, region from AWS_REGION.
"""

import os
import statistics
import sys
import time


def get_boto3(endpoint, bucket, key, size):
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint)
    started = time.perf_counter()
    n = len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    return n, time.perf_counter() - started


def get_awscrt(endpoint, bucket, key, size):
    from awscrt import auth, http, io, s3

    host = endpoint.split("://", 1)[1]
    region = os.environ.get("AWS_REGION", "us-east-1")
    elg = io.EventLoopGroup(2)
    bootstrap = io.ClientBootstrap(elg, io.DefaultHostResolver(elg))
    credentials = auth.AwsCredentialsProvider.new_static(
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    )
    client = s3.S3Client(
        bootstrap=bootstrap,
        region=region,
        tls_mode=s3.S3RequestTlsMode.DISABLED,
        signing_config=s3.create_default_s3_signing_config(
            region=region, credential_provider=credentials
        ),
        part_size=8 * 1024 * 1024,
        throughput_target_gbps=10,
    )
    started = time.perf_counter()
    buf = bytearray(size)
    view = memoryview(buf)

    def on_body(chunk, offset, **kwargs):
        view[offset : offset + len(chunk)] = chunk

    request = http.HttpRequest("GET", f"/{bucket}/{key}", http.HttpHeaders([("host", host)]))
    done = client.make_request(
        type=s3.S3RequestType.GET_OBJECT, request=request, on_body=on_body
    )
    done.finished_future.result(timeout=600)
    return len(buf), time.perf_counter() - started


def get_obstore(endpoint, bucket, key, size):
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        bucket,
        endpoint=endpoint,
        region=os.environ.get("AWS_REGION", "us-east-1"),
        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        client_options={"allow_http": True},
        virtual_hosted_style_request=False,
    )
    started = time.perf_counter()
    n = len(obstore.get(store, key).bytes())
    return n, time.perf_counter() - started


CLIENTS = {"boto3": get_boto3, "awscrt": get_awscrt, "obstore": get_obstore}


def get(client, endpoint, bucket, key, size):
    size = int(size)
    n, elapsed = CLIENTS[client](endpoint, bucket, key, size)
    if n != size:
        sys.exit(f"{client}: read {n} bytes, expected {size}")
    print(f"{n} {elapsed:.6f}")


def table(path):
    """RESULTS.tsv rows: client, size, run, seconds, max_rss_kib, cpu_seconds. "baseline" runs read a
    1-byte object: the process's own footprint and start-up CPU (the interpreter, imports, client
    setup), which are subtracted, so the figures are per object byte."""
    rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
    by = {}
    for client, size, run, seconds, rss_kib, cpu in rows:
        by.setdefault((client, size), []).append((float(seconds), int(rss_kib), float(cpu)))
    gib = 1 << 30
    clients = list(dict.fromkeys(r[0] for r in rows))
    sizes = sorted({int(r[1]) for r in rows if r[1] != "baseline"})
    print("| client | object | GiB/s (median) | peak RSS growth / size | CPU s / GiB | runs |")
    print("|---|---|---|---|---|---|")
    for client in clients:
        baseline = statistics.median(r[1] for r in by[(client, "baseline")]) * 1024
        baseline_cpu = statistics.median(r[2] for r in by[(client, "baseline")])
        for size in sizes:
            runs = by.get((client, str(size)))
            if not runs:
                continue
            seconds = statistics.median(r[0] for r in runs)
            rss = statistics.median(r[1] for r in runs) * 1024
            cpu = statistics.median(r[2] for r in runs)
            print(
                f"| {client} | {size // (1 << 20)} MiB | {size / gib / seconds:.2f} | "
                f"{(rss - baseline) / size:.2f} | {(cpu - baseline_cpu) / (size / gib):.2f} | {len(runs)} |"
            )


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "get":
        get(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
