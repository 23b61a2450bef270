#!/usr/bin/env python3
"""Random reads at queue depth: brisk next to boto3, awscrt and obstore, each client in its own process,
against one server.

Run through `bench/random.sh` (which makes the pinned venv and builds brisk); by hand:

    .bench-venv/bin/python bench/random_reads.py run [--server brisk|minio] [--quick] [--repeats N]
                           [--points 256KiB:1,256KiB:16,...] [--duration S] [--clients brisk,boto3,...]
                           [--rtt-ms 0.5,2,10 [--first-byte-ms 0.5,2,10] [--serial]]
    .bench-venv/bin/python bench/random_reads.py table bench/results/random-brisk-DATE.tsv
    .bench-venv/bin/python bench/random_reads.py drive CLIENT ENDPOINT BUCKET KEY BLOCK DEPTH SECONDS

`run` starts ONE server (`brisk serve` with fsync on, or MinIO; the start/stop logic of compare.py),
writes one object (1 GiB, 64 MiB with --quick) with `brisk cp`, then runs every point with every client,
REPEATS times, the clients in a rotated order in each repeat so that the machine's drift hits all of them
alike. A point is (block size, queue depth): for DURATION seconds, reads of one block at a random
block-aligned offset are kept QUEUE DEPTH in flight (a closed loop: each completion starts the next).
Default points: 256 KiB at queue depth 1, 16 and 64, and 4 KiB and 1 MiB at queue depth 64.

Latency mode (`--rtt-ms`, run through `bench/latency.sh`): for each round trip in the list (and the
first-byte latency at the same place of `--first-byte-ms`, or its one value), a `latency-proxy`
(bench/latency-proxy, release build) is started in front of the server and every client is pointed at
it: each direction is delayed by half the round trip, a new connection by one round trip, and each
response's first byte by the first-byte latency L from its own request's arrival (`--serial`: from the
end of the previous response on the connection, as a server that answers pipelined requests one at a
time would with a slow backend). The table then adds the Little's-law bound QD / (RTT + L) and each
client's share of it. The object is written directly, not through the proxy, and read once whole
(into the server's page cache) before the first client. The proxy's CPU is
recorded per run but charged to no one.

Each client is used the way its documentation shows for concurrent ranged reads:

  brisk    the release example `random_read` (brisk bench's `random_point`: one BatchReader with the
           library's default options for the queue depth, caller buffers reused)
  brisk-before
           (only with --before-example PATH) the same example built from an earlier commit, so that a
           change of the defaults is measured before and after in one run
  brisk-wide
           the same with `--connections QUEUE DEPTH`: one request per connection at every depth, none
           pipelined (the defaults are the same up to queue depth 64 and pipeline past it)
  boto3    a ThreadPoolExecutor of QUEUE DEPTH threads, each looping get_object(Range=...)["Body"].read();
           max_pool_connections = QUEUE DEPTH (its default, 10, would make threads wait for connections)
  awscrt   S3Client (default throughput target) GET_OBJECT meta-requests with a Range header, bodies
           written into one pre-sized buffer per slot; each completion submits the next request
  obstore  QUEUE DEPTH asyncio tasks, each looping get_range_async(store, key, start, length)

What is measured, and from where:

  - IOPS, MiB/s, p50/p99: inside the client process, reads completed within the window (the driver's
    output). Latency is from a read's start to its completion.
  - Client CPU over the window: the Python drivers print START when the window opens and END when it
    closes; this script reads utime + stime of the child's /proc/<pid>/stat at each mark (from
    outside). The brisk example reads the same counters of its own process at the same two moments
    (`/proc/self/stat`, in `measure`), so the two figures count the same thing.
  - Client CPU of the whole process (start-up, imports, connections, the window, shutdown) and its
    peak RSS: `/usr/bin/time -v`, from outside; a second column, to show what start-up adds.
  - Threads and sockets: /proc/<pid>/status and /proc/<pid>/fd at END (the brisk example reports its
    own the same way).
  - Server CPU: utime + stime of the server's /proc/<pid>/stat before and after each client process,
    per GiB read and per 1000 reads (it includes the few reads still in flight at the end).

Writes bench/results/random-SERVER-DATE.{tsv,md} and prints the table and the command line.
"""

import argparse
import asyncio
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
import compare  # the server, environment and set-up helpers of bench/compare.py
from benchlib import GIB, KIB, MIB, size_label

ROOT = benchlib.ROOT
BUCKET = "random"
KEY = "random-object"
BRISK_CLIENTS = ("brisk", "brisk-wide", "brisk-before")  # the random_read example
CLIENTS = (*BRISK_CLIENTS, "boto3", "awscrt", "obstore")
# The example of an earlier build (`--before-example`), for client "brisk-before".
BEFORE_EXAMPLE = [None]
DEFAULT_POINTS = ((256 * KIB, 1), (256 * KIB, 16), (256 * KIB, 64), (4 * KIB, 64), (MIB, 64))
QUICK_POINTS = ((256 * KIB, 16), (4 * KIB, 16))
FULL_OBJECT, QUICK_OBJECT = GIB, 64 * MIB
FULL_DURATION, QUICK_DURATION = 5.0, 1.0
# A run is killed after its duration plus this much (start-up, the object's HEAD, shutdown).
RUN_SLACK_S = 120
SEED = 0x5EED
HEADLINE = (256 * KIB, 64)


# ---------------------------------------------------------------------------------------------------
# Drivers: what runs inside one measured process. Each prints START when its window opens, END when it
# closes, then one JSON line.


class Window:
    """The measured window: START/END marks on stdout, reads and latencies within it."""

    def __init__(self, duration):
        self.duration = duration
        self.latencies = []
        self.reads = self.bytes = self.errors = 0
        self.lock = threading.Lock()

    def open(self):
        print("START", flush=True)
        self.started = time.monotonic()
        self.deadline = self.started + self.duration

    def close(self):
        self.ended = min(time.monotonic(), self.deadline + 1.0)
        print("END", flush=True)

    def done(self, begun, n, ok=True):
        now = time.monotonic()
        if now >= self.deadline:
            return False
        with self.lock:
            if ok:
                self.reads += 1
                self.bytes += n
                self.latencies.append(now - begun)
            else:
                self.errors += 1
        return True

    def report(self, block):
        lat = sorted(self.latencies)
        pick = (lambda p: lat[min(int(len(lat) * p), len(lat) - 1)] * 1e3) if lat else (lambda p: 0.0)
        seconds = self.duration
        print(json.dumps({"reads": self.reads, "errors": self.errors, "bytes": self.bytes, "seconds": seconds,
                          "iops": self.reads / seconds, "mib_per_s": self.bytes / MIB / seconds,
                          "p50_ms": pick(0.5), "p99_ms": pick(0.99), "block_size": block}))


def drive_boto3(endpoint, bucket, key, block, depth, window):
    s3 = benchlib.boto3_client(endpoint, max_pool_connections=depth)
    size = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
    blocks = size // block

    def worker(seed):
        rng = random.Random(seed)
        while True:
            off = rng.randrange(blocks) * block
            begun = time.monotonic()
            if begun >= window.deadline:
                return
            try:
                n = len(s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={off}-{off + block - 1}")["Body"].read())
                ok = n == block
            except Exception:  # counted, as the other clients' failed reads are
                n, ok = 0, False
            window.done(begun, n, ok)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=depth) as pool:
        window.open()
        futures = [pool.submit(worker, SEED + i) for i in range(depth)]
        time.sleep(max(0.0, window.deadline - time.monotonic()))
        window.close()
        for f in futures:
            f.result()


def drive_awscrt(endpoint, bucket, key, block, depth, window):
    from awscrt import http, s3

    host = endpoint.split("://", 1)[1]
    client = benchlib.awscrt_client(endpoint)
    # The object's size only (not measured: before the window).
    size = benchlib.boto3_client(endpoint).head_object(Bucket=bucket, Key=key)["ContentLength"]
    blocks = size // block
    rng = random.Random(SEED)
    in_flight = [0]
    idle = threading.Condition()
    keep = set()  # meta-requests alive until done

    def submit(slot):
        buf = memoryview(bytearray(block))
        off = rng.randrange(blocks) * block
        got = [0]
        begun = time.monotonic()

        def on_body(chunk, offset, **kwargs):
            # offset is the position in the object; the range starts at off.
            at = offset - off
            if not 0 <= at <= block - len(chunk):
                at = got[0]
            buf[at:at + len(chunk)] = chunk
            got[0] += len(chunk)

        def on_done(error=None, **kwargs):
            ok = error is None and got[0] == block
            more = window.done(begun, got[0], ok)
            with idle:
                keep.discard(holder[0])
                if more:
                    submit(slot)
                else:
                    in_flight[0] -= 1
                    idle.notify_all()

        headers = http.HttpHeaders([("host", host), ("range", f"bytes={off}-{off + block - 1}")])
        request = http.HttpRequest("GET", f"/{bucket}/{key}", headers)
        holder = [None]
        holder[0] = client.make_request(type=s3.S3RequestType.GET_OBJECT, request=request,
                                        on_body=on_body, on_done=on_done)
        keep.add(holder[0])

    window.open()
    with idle:
        for slot in range(depth):
            in_flight[0] += 1
            submit(slot)
    time.sleep(max(0.0, window.deadline - time.monotonic()))
    window.close()
    with idle:
        idle.wait_for(lambda: in_flight[0] == 0, timeout=60)


def drive_obstore(endpoint, bucket, key, block, depth, window):
    import obstore

    store = benchlib.obstore_store(endpoint, bucket)

    async def main():
        size = (await obstore.head_async(store, key))["size"]
        blocks = size // block

        async def worker(seed):
            rng = random.Random(seed)
            while True:
                off = rng.randrange(blocks) * block
                begun = time.monotonic()
                if begun >= window.deadline:
                    return
                try:
                    n = len(await obstore.get_range_async(store, key, start=off, length=block))
                    ok = n == block
                except Exception:
                    n, ok = 0, False
                window.done(begun, n, ok)

        async def closer():
            await asyncio.sleep(max(0.0, window.deadline - time.monotonic()))
            window.close()

        window.open()
        await asyncio.gather(closer(), *(worker(SEED + i) for i in range(depth)))

    asyncio.run(main())


DRIVERS = {"boto3": drive_boto3, "awscrt": drive_awscrt, "obstore": drive_obstore}


def drive(client, endpoint, bucket, key, block, depth, seconds):
    block, depth = int(block), int(depth)
    window = Window(float(seconds))
    DRIVERS[client](endpoint, bucket, key, block, depth, window)
    window.report(block)
    sys.stdout.flush()
    os._exit(0)  # no interpreter teardown (awscrt's threads): the window is over


# ---------------------------------------------------------------------------------------------------
# The run.


def proc_threads_sockets(pid):
    threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
    sockets = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                sockets += 1
        except OSError:
            pass
    return threads, sockets


def client_command(client, endpoint, block, depth, seconds):
    if client in BRISK_CLIENTS:
        wide = ["--connections", str(depth)] if client == "brisk-wide" else []
        example = BEFORE_EXAMPLE[0] if client == "brisk-before" else compare.brisk_example("random_read")
        return [example, "--endpoint-url", endpoint, "--bucket", BUCKET,
                "--key", KEY, "--block-size", str(block), "--queue-depth", str(depth), "--duration",
                f"{seconds}s", "--json", *wide]
    return [sys.executable, os.path.abspath(__file__), "drive", client, endpoint, BUCKET, KEY, str(block),
            str(depth), str(seconds)]


def measure(server, client, block, depth, seconds, proxy=None):
    """One measured process; returns a result row (status "ok" or what went wrong). With a
    LatencyProxy, the client talks to the server through it."""
    row = {"server": server.kind, "client": client, "block": block, "depth": depth,
           "rtt_ms": proxy.rtt_ms if proxy else 0.0, "first_byte_ms": proxy.first_byte_ms if proxy else 0.0,
           "proxy_mode": proxy.mode if proxy else ""}
    endpoint = proxy.endpoint if proxy else server.endpoint
    # Under /usr/bin/time -v, as in compare.py: a small parent, so the client's peak RSS is its own
    # (ru_maxrss survives exec, and this script's would be inherited otherwise).
    cmd = ["/usr/bin/time", "-v", *client_command(client, endpoint, block, depth, seconds)]
    server_cpu0 = server.cpu_seconds()
    proxy_cpu0 = proxy.cpu_seconds() if proxy else 0.0
    proc = subprocess.Popen(cmd, env=compare.client_env(endpoint), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    killer = threading.Timer(seconds + RUN_SLACK_S, proc.kill)
    killer.start()
    marks, lines = {}, []
    try:
        for line in proc.stdout:
            line = line.strip()
            if line in ("START", "END"):
                # The client is the only child of `time`.
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                    pid = int(f.read().split()[0])
                marks[line] = benchlib.process_cpu_seconds(pid)
                if line == "END":
                    row["threads"], row["sockets"] = proc_threads_sockets(pid)
            elif line:
                lines.append(line)
        stderr = proc.stderr.read()
        proc.wait()
    finally:
        killer.cancel()
    row["server_cpu_s"] = server.cpu_seconds() - server_cpu0
    row["proxy_cpu_s"] = proxy.cpu_seconds() - proxy_cpu0 if proxy else 0.0
    if proc.returncode != 0:
        said = " ".join(stderr.split("\tCommand being timed:")[0].strip().splitlines()[-3:])[-300:]
        return {**row, "status": f"exit {proc.returncode}: {said}"}
    try:
        out = json.loads(lines[-1])
        outside = compare.parse_time_v(stderr)
    except (IndexError, ValueError, KeyError) as e:
        return {**row, "status": f"unreadable output: {e}"}
    row["process_cpu_s"] = outside["user_s"] + outside["sys_s"]
    row["max_rss_kib"] = outside["max_rss_kib"]
    row.update(reads=out["reads"], errors=out["errors"], bytes=out["bytes"], seconds=out["duration_s"]
               if "duration_s" in out else out["seconds"], p50_ms=out["p50_ms"], p99_ms=out["p99_ms"])
    if client in BRISK_CLIENTS:
        row["window_cpu_s"] = out["cpu_s"]
        row["threads"], row["sockets"] = out["threads"], out["sockets"]
    else:
        if "START" not in marks or "END" not in marks:
            return {**row, "status": "no START/END marks"}
        row["window_cpu_s"] = marks["END"] - marks["START"]
    if row["reads"] == 0:
        return {**row, "status": f"no reads ({row['errors']} errors)"}
    if row["bytes"] != row["reads"] * block:
        return {**row, "status": f"read {row['bytes']} bytes in {row['reads']} reads of {block}"}
    return {**row, "status": "ok" if row["errors"] == 0 else f"ok, {row['errors']} errors"}


class LatencyProxy:
    """bench/latency-proxy in front of the server, for one (round trip, first-byte latency, mode)."""

    # LATENCY_PROXY: another build of the proxy (its own cost measured before and after a change).
    BINARY = os.environ.get("LATENCY_PROXY") or os.path.join(ROOT, "target/release/latency-proxy")

    def __init__(self, upstream_port, rtt_ms, first_byte_ms, serial):
        self.rtt_ms, self.first_byte_ms = rtt_ms, first_byte_ms
        self.mode = "serial" if serial else "parallel"
        cmd = [self.BINARY, "--upstream", f"127.0.0.1:{upstream_port}", "--rtt-ms", str(rtt_ms),
               "--first-byte-ms", str(first_byte_ms)] + (["--serial"] if serial else [])
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        killer = threading.Timer(30, self.proc.kill)  # the LISTENING line comes at once
        killer.start()
        try:
            line = self.proc.stdout.readline().split()
        finally:
            killer.cancel()
        if len(line) != 2 or line[0] != "LISTENING":
            self.close()
            raise RuntimeError(f"latency-proxy did not start: {line}")
        self.endpoint = f"http://{line[1]}"

    def cpu_seconds(self):
        return benchlib.process_cpu_seconds(self.proc.pid)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def latency_points(args):
    """(rtt_ms, first_byte_ms) pairs, or [None] for no proxy."""
    if not args.rtt_ms:
        return [None]
    rtts = [float(x) for x in args.rtt_ms.split(",")]
    firsts = [float(x) for x in (args.first_byte_ms or "0").split(",")]
    if len(firsts) == 1:
        firsts = firsts * len(rtts)
    if len(firsts) != len(rtts):
        sys.exit("--first-byte-ms: one value, or one per --rtt-ms value")
    return list(zip(rtts, firsts))


TSV_FIELDS = ("server", "client", "block", "depth", "repeat", "status", "reads", "errors", "bytes", "seconds",
              "p50_ms", "p99_ms", "window_cpu_s", "process_cpu_s", "max_rss_kib", "threads", "sockets",
              "server_cpu_s", "rtt_ms", "first_byte_ms", "proxy_mode", "proxy_cpu_s")


def parse_points(text):
    points = []
    for item in text.split(","):
        size, _, depth = item.partition(":")
        points.append((benchlib.parse_size(size), int(depth)))
    return tuple(points)


def run(args):
    points = parse_points(args.points) if args.points else (QUICK_POINTS if args.quick else DEFAULT_POINTS)
    seconds = args.duration or (QUICK_DURATION if args.quick else FULL_DURATION)
    object_size = benchlib.parse_size(args.object_size) if args.object_size else (
        QUICK_OBJECT if args.quick else FULL_OBJECT)
    repeats = args.repeats or (1 if args.quick else 3)
    clients = args.clients.split(",")
    for name in clients:
        if name not in CLIENTS:
            sys.exit(f"unknown client {name!r}: one of {', '.join(CLIENTS)}")
    if "brisk-before" in clients:
        if not args.before_example:
            sys.exit("client brisk-before needs --before-example PATH")
        BEFORE_EXAMPLE[0] = os.path.abspath(args.before_example)
    latencies = latency_points(args)
    minio = compare.find_minio(args.minio) if args.server == "minio" else None
    os.makedirs(args.scratch, exist_ok=True)
    work = os.path.join(args.scratch, f"random-{os.getpid()}")
    os.makedirs(work)
    started_at = datetime.datetime.now(datetime.timezone.utc)
    meta = {
        "command": args.command_line,
        "started": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "server": args.server,
        "repeats": repeats,
        "seconds": seconds,
        "object_size": object_size,
        "points": [list(p) for p in points],
        "latencies": [list(l) if l else None for l in latencies],
        "proxy_mode": ("serial" if args.serial else "parallel") if args.rtt_ms else None,
        "load_before": open("/proc/loadavg").read().split()[:3],
        "versions": compare.versions(minio),
    }
    rows = []
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"random-{args.server}-{started_at.strftime('%Y-%m-%dT%H%M%S')}")
    partial = open(stem + ".partial.tsv", "w")
    partial.write("\t".join(TSV_FIELDS) + "\n")
    server = compare.Server(args.server, os.path.join(work, "data"), minio)
    loads = []
    try:
        compare.admin_client(server).create_bucket(Bucket=BUCKET)
        source = os.path.join(work, "source")
        compare.write_random_file(source, object_size)
        subprocess.run([os.path.join(ROOT, "target/release/brisk"), "cp", "-q", source, f"s3://{BUCKET}/{KEY}"],
                       env=compare.client_env(server.endpoint), check=True, timeout=600)
        os.unlink(source)
        # A durable server writes large bodies past the page cache (O_DIRECT), so without this read
        # the first client measured would read the object from the disk: p99 21-24 ms against 5-6
        # for the same client measured second (2026-11-27).
        subprocess.run([os.path.join(ROOT, "target/release/brisk"), "cat", f"s3://{BUCKET}/{KEY}"],
                       env=compare.client_env(server.endpoint), check=True, timeout=600,
                       stdout=subprocess.DEVNULL)
        print(f"{args.server} on {server.endpoint}; {object_size // MIB} MiB object written and read once",
              file=sys.stderr)
        for rep in range(repeats):
            order = clients[rep % len(clients):] + clients[: rep % len(clients)]
            for latency in latencies:
                proxy = LatencyProxy(server.port, *latency, args.serial) if latency else None
                try:
                    for block, depth in points:
                        for client in order:
                            row = measure(server, client, block, depth, seconds, proxy)
                            row["repeat"] = rep + 1
                            rows.append(row)
                            partial.write(benchlib.tsv_line(row, TSV_FIELDS))
                            partial.flush()
                            print(progress_line(row), file=sys.stderr)
                finally:
                    if proxy:
                        proxy.close()
            loads.append(open("/proc/loadavg").read().split()[:3])
    finally:
        server.close()
        shutil.rmtree(work, ignore_errors=True)
    meta["load_after_each_repeat"] = loads
    benchlib.write_results(stem, meta, rows, TSV_FIELDS, table(meta, rows), partial, with_json=False)
    print(f"rows in {stem}.tsv; table in {stem}.md", file=sys.stderr)


def latency_label(row):
    if not row.get("rtt_ms") and not row.get("first_byte_ms"):
        return ""
    return f"RTT {row['rtt_ms']:g} ms L {row['first_byte_ms']:g} ms "


def progress_line(row):
    head = f"{row['repeat']} {latency_label(row)}{row['block'] // KIB} KiB QD {row['depth']} {row['client']}"
    if not row["status"].startswith("ok"):
        return f"{head}: {row['status']}"
    return (f"{head}: {row['reads'] / row['seconds']:.0f} IOPS, "
            f"{row['window_cpu_s'] / (row['bytes'] / GIB):.2f} CPU s/GiB, p99 {row['p99_ms']:.1f} ms, "
            f"{row['threads']} threads, {row['sockets']} sockets")


def read_tsv(path):
    return benchlib.read_tsv(
        path,
        ints=("block", "depth", "repeat", "reads", "errors", "bytes", "max_rss_kib", "threads", "sockets"),
        floats=("seconds", "p50_ms", "p99_ms", "window_cpu_s", "process_cpu_s", "server_cpu_s", "rtt_ms",
                "first_byte_ms", "proxy_cpu_s"))


def latency_table(meta, rows):
    """The latency sweep: per (RTT, L, block, QD) and client, IOPS against Little's law's bound
    QD / (RTT + L) and against obstore's, client CPU per GiB, latency, sockets; then the goal."""
    clients = list(dict.fromkeys(r["client"] for r in rows))
    groups = {}
    for r in rows:
        if r["status"].startswith("ok"):
            key = (r["rtt_ms"] or 0.0, r["first_byte_ms"] or 0.0, r["block"], r["depth"])
            groups.setdefault(key, {}).setdefault(r["client"], []).append(r)
    failed = [r for r in rows if not r["status"].startswith("ok")]
    med = statistics.median
    out = [f"Command: `{meta['command']}`", "",
           f"Server `{meta['server']}` behind latency-proxy ({meta.get('proxy_mode')} first-byte latency), "
           f"{meta['started']}, {meta['repeats']} repeat(s) of {meta['seconds']} s per point, medians, a "
           f"{meta['object_size'] // MIB} MiB object; load average before {' '.join(meta['load_before'])}, after "
           f"each repeat {'; '.join(' '.join(l) for l in meta.get('load_after_each_repeat', []))}; versions: "
           + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".", "",
           "| RTT ms | L ms | block | QD | bound QD/(RTT+L) | client | IOPS (range) | % of bound | x obstore | "
           "client CPU s/GiB | p50 / p99 ms | sockets | server CPU s/GiB | proxy CPU s/GiB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    goals = []
    for (rtt, first, block, depth), by_client in sorted(groups.items()):
        bound = depth / ((rtt + first) / 1e3) if rtt + first > 0 else float("inf")
        iops = {c: med([r["reads"] / r["seconds"] for r in runs]) for c, runs in by_client.items()}
        base = iops.get("obstore")
        for client in clients:
            runs = by_client.get(client)
            if not runs:
                continue
            rates = [r["reads"] / r["seconds"] for r in runs]
            rng = f" ({min(rates):.0f}–{max(rates):.0f})" if len(rates) > 1 else ""
            gib = lambda r: r["bytes"] / GIB  # noqa: E731
            times = f"{iops[client] / base:.2f}" if base else "–"
            out.append(f"| {rtt:g} | {first:g} | {size_label(block)} | {depth} | {bound:.0f} | {client} | "
                       f"{iops[client]:.0f}{rng} | {100 * iops[client] / bound:.0f} % | {times} | ")
            out[-1] += (f"{med([r['window_cpu_s'] / gib(r) for r in runs]):.3f} | "
                        f"{med([r['p50_ms'] for r in runs]):.1f} / {med([r['p99_ms'] for r in runs]):.1f} | "
                        f"{med([r['sockets'] for r in runs]):.0f} | "
                        f"{med([r['server_cpu_s'] / gib(r) for r in runs]):.2f} | "
                        f"{med([(r['proxy_cpu_s'] or 0.0) / gib(r) for r in runs]):.2f} |")
        if "brisk" in iops and base:
            share, ratio = iops["brisk"] / bound, iops["brisk"] / base
            goals.append(f"- RTT {rtt:g} ms, L {first:g} ms, QD {depth}: brisk {100 * share:.0f} % of the bound, "
                         f"{ratio:.2f}x obstore: "
                         f"{'reached' if share >= 0.9 and ratio >= 2 else 'not reached'}")
    out += ["", "Goal (brisk with its defaults at least 90 % of QD / (RTT + L) and at least 2x obstore's IOPS):",
            *goals, ""]
    for r in failed:
        out.append(f"- failed: {latency_label(r)}QD {r['depth']} {r['client']} repeat {r['repeat']}: {r['status']}")
    return "\n".join(out)


def table(meta, rows):
    if any(meta.get("latencies") or []):
        return latency_table(meta, rows)
    clients = list(dict.fromkeys(r["client"] for r in rows))
    ok, failed = {}, {}
    for r in rows:
        key = (r["client"], r["block"], r["depth"])
        (ok if r["status"].startswith("ok") else failed).setdefault(key, []).append(r)
    med = lambda runs, f: statistics.median(f(r) for r in runs)  # noqa: E731
    iops = lambda r: r["reads"] / r["seconds"]  # noqa: E731
    gib = lambda r: r["bytes"] / GIB  # noqa: E731
    cpu = lambda r: r["window_cpu_s"] / gib(r)  # noqa: E731
    out = [f"Command: `{meta['command']}`", "",
           f"Server `{meta['server']}`, {meta['started']}, {meta['repeats']} repeat(s) of {meta['seconds']} s per "
           f"point, medians, a {meta['object_size'] // MIB} MiB object; load average before "
           f"{' '.join(meta['load_before'])}, after each repeat "
           f"{'; '.join(' '.join(l) for l in meta.get('load_after_each_repeat', []))}; versions: "
           + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + ".", "",
           "| block | QD | client | IOPS (range) | MiB/s | client CPU s/GiB (window) | whole process CPU s | "
           "p50 / p99 ms | threads | sockets | peak RSS MiB | server CPU s/GiB | server CPU ms per 1000 reads |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    headline = {}
    for block, depth in [tuple(p) for p in meta["points"]]:
        for client in clients:
            key = (client, block, depth)
            runs = ok.get(key)
            if not runs:
                why = failed.get(key, [{"status": "not run"}])[0]["status"]
                out.append(f"| {size_label(block)} | {depth} | {client} | failed: {why} | | | | | | | | | |")
                continue
            rates = [iops(r) for r in runs]
            note = f" ({len(failed[key])} failed)" if key in failed else ""
            rng = f" ({min(rates):.0f}–{max(rates):.0f})" if len(rates) > 1 else ""
            if (block, depth) == HEADLINE:
                headline[client] = (statistics.median(rates), med(runs, cpu))
            out.append(
                f"| {size_label(block)} | {depth} | {client} | {statistics.median(rates):.0f}{rng}{note} | "
                f"{med(runs, lambda r: r['bytes'] / MIB / r['seconds']):.0f} | {med(runs, cpu):.3f} | "
                f"{med(runs, lambda r: r['process_cpu_s']):.2f} | "
                f"{med(runs, lambda r: r['p50_ms']):.1f} / {med(runs, lambda r: r['p99_ms']):.1f} | "
                f"{med(runs, lambda r: r['threads']):.0f} | {med(runs, lambda r: r['sockets']):.0f} | "
                f"{med(runs, lambda r: r['max_rss_kib']) / 1024:.0f} | "
                f"{med(runs, lambda r: r['server_cpu_s'] / gib(r)):.2f} | "
                f"{med(runs, lambda r: r['server_cpu_s'] * 1e6 / r['reads']):.0f} |")
    out.append("")
    others = {c: v for c, v in headline.items() if c not in BRISK_CLIENTS}
    if others:
        best = max(others, key=lambda c: others[c][0])
        o_iops, o_cpu = others[best]
        out += [f"Goal at 256 KiB, queue depth 64 (at least 2x the IOPS of the best other client, at most a "
                f"third of its client CPU per GiB): best other client {best}, {o_iops:.0f} IOPS at "
                f"{o_cpu:.3f} CPU s/GiB."]
        for name in BRISK_CLIENTS:
            if name in headline:
                b_iops, b_cpu = headline[name]
                reached = b_iops >= 2 * o_iops and b_cpu <= o_cpu / 3
                out.append(f"{name}: {b_iops:.0f} IOPS ({b_iops / o_iops:.2f}x) at {b_cpu:.3f} CPU s/GiB "
                           f"({b_cpu / o_cpu:.2f}x): {'reached' if reached else 'not reached'}.")
        out.append("")
    return "\n".join(out)


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "drive":
        if len(sys.argv) != 9:
            sys.exit("usage: random_reads.py drive CLIENT ENDPOINT BUCKET KEY BLOCK DEPTH SECONDS")
        drive(*sys.argv[2:])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "table":
        print(table(*read_tsv(sys.argv[2])))
        return
    ap = argparse.ArgumentParser(description="random reads: brisk next to boto3, awscrt and obstore")
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("--server", choices=("brisk", "minio"), default="brisk")
    r.add_argument("--minio", help="MinIO binary (default .tools/bin/minio, then $BRISK_MINIO)")
    r.add_argument("--quick", action="store_true", help="2 points of 1 s, a 64 MiB object, 1 repeat")
    r.add_argument("--points", help="BLOCK:DEPTH,... e.g. 256KiB:64,4KiB:64")
    r.add_argument("--duration", type=float, help="seconds per point and client (default 5)")
    r.add_argument("--object-size", help="e.g. 1GiB")
    r.add_argument("--repeats", type=int, help="repeats of every point (default 3)")
    r.add_argument("--clients", default=",".join(CLIENTS))
    r.add_argument("--rtt-ms", help="latency mode: round trips to sweep, e.g. 0.5,2,10 (a latency-proxy each)")
    r.add_argument("--first-byte-ms", help="first-byte latency: one value, or one per --rtt-ms value (default 0)")
    r.add_argument("--serial", action="store_true",
                   help="the proxy counts L from the end of the previous response on a connection")
    r.add_argument("--before-example", help="random_read example of an earlier build, run as client brisk-before")
    r.add_argument("--scratch", default="/work/scratch-compare", help="server data and the source file")
    r.add_argument("--out", default=os.path.join(ROOT, "bench/results"))
    r.add_argument("--command-line", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.command_line:
        args.command_line = shlex.join(["bench/random_reads.py", *sys.argv[1:]])
    run(args)


if __name__ == "__main__":
    main()
