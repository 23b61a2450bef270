#!/usr/bin/env python3
"""The server's CPU per received GiB: builds of `brisk serve` next to MinIO, receiving the same boto3 upload.

Each case is one server process, started once on a fresh data root under /var/tmp: every `--brisk
NAME=BINARY` (or `--brisk "NAME=BINARY --flag value"`: serve flags after the binary) twice, as given
(by default MD5 ETags and fsync on) and with `--no-md5-etag`, and MinIO. In every round each case
receives the same `boto3` `upload_file` of one file from tmpfs (multipart, 8 MiB parts, 10 threads,
signed payload over plain HTTP, boto3's default CRC32). The order of the cases rotates from round to
round; the first round is a warm-up, printed as it runs but left out of the medians.

What is measured is the server process's CPU (user + sys from /proc/<pid>/stat) per GiB received. The
page cache cannot be dropped here (/proc/sys/vm/drop_caches is read-only), and reclaim of earlier uploads'
pages would otherwise be charged to whichever server writes next; so after every upload the object is
deleted (its pages are freed by the deleting server, outside the measured window), `sync` runs and the
script waits `--settle` seconds before the next case. Each figure is printed with the direct-reclaim
scans (`pgscan_direct` from /proc/vmstat) seen during its upload: if that is not zero the run was
charged some reclaim, machine-wide.

    .bench-venv/bin/python bench/server_receive.py --brisk before=/tmp/brisk.before \\
        --brisk after=target/release/brisk [--size 1GiB] [--rounds 4] [--minio .tools/bin/minio]

Prints a Markdown table: median CPU s/GiB (range), the ratio of its median to MinIO's, median GiB/s.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import benchlib
import server_peers as peers  # server start-up, client command

ROOT = peers.ROOT


def vmstat(field):
    with open("/proc/vmstat") as f:
        for line in f:
            name, value = line.split()
            if name == field:
                return int(value)
    return 0


class Case:
    """One server process: a brisk build with some flags, or MinIO."""

    def __init__(self, label, kind, binary=None, flags=(), minio=None):
        self.label = label
        self.server = peers.Server(kind, minio, brisk=binary, flags=list(flags))
        import boto3
        from botocore.config import Config
        self.s3 = boto3.client("s3", endpoint_url=self.server.endpoint, aws_access_key_id=peers.AK,
                               aws_secret_access_key=peers.SK, region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}))
        self.s3.create_bucket(Bucket="peers")
        self.runs = []
        self.warmup = None

    def upload(self, path, size):
        pid = self.server.proc.pid
        scans0, cpu0, t0 = vmstat("pgscan_direct"), benchlib.process_cpu_seconds(pid), time.monotonic()
        subprocess.run(peers.client_command("boto3", "put", path),
                       env=peers.client_env(self.server.endpoint), check=True, timeout=peers.TIMEOUT)
        wall = time.monotonic() - t0
        cpu = benchlib.process_cpu_seconds(pid) - cpu0
        scans = vmstat("pgscan_direct") - scans0
        self.s3.delete_object(Bucket="peers", Key="object")
        gib = size / (1 << 30)
        return {"cpu": cpu / gib, "gibps": gib / wall, "direct_scans": scans}

    def close(self):
        try:
            self.s3.delete_bucket(Bucket="peers")
        finally:
            self.server.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", action="append", default=[], metavar="NAME=BINARY [FLAG...]",
                    help="a build of brisk, with `brisk serve` flags after the binary (one argument)")
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--rounds", type=int, default=4, help="measured rounds, after one warm-up round")
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--minio", default=os.environ.get("BRISK_MINIO", os.path.join(ROOT, ".tools/bin/minio")))
    args = ap.parse_args()
    size = benchlib.parse_size(args.size)
    builds = [b.split("=", 1) for b in (args.brisk or [f"brisk={ROOT}/target/release/brisk"])]

    work = tempfile.mkdtemp(prefix="receive-", dir="/dev/shm")
    src = os.path.join(work, "src")
    with open(src, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(size >> 20):
            f.write(block)
    cases = []
    try:
        for name, command in builds:
            binary, *flags = command.split()
            cases.append(Case(name, "brisk", binary=os.path.abspath(binary), flags=flags))
            cases.append(Case(f"{name} --no-md5-etag", "brisk", binary=os.path.abspath(binary),
                              flags=[*flags, "--no-md5-etag"]))
        cases.append(Case("minio", "minio", minio=args.minio))
        for rnd in range(args.rounds + 1):
            order = cases[rnd % len(cases):] + cases[:rnd % len(cases)]
            for case in order:
                subprocess.run(["sync"], check=True, timeout=peers.TIMEOUT)
                time.sleep(args.settle)
                run = case.upload(src, size)
                if rnd == 0:
                    case.warmup = run
                else:
                    case.runs.append(run)
                print(f"round {rnd} {case.label}: {run['cpu']:.2f} CPU s/GiB, {run['gibps']:.2f} GiB/s, "
                      f"direct reclaim scans {run['direct_scans']}", file=sys.stderr)
    finally:
        for case in cases:
            case.close()
        shutil.rmtree(work, ignore_errors=True)

    minio = statistics.median(r["cpu"] for r in cases[-1].runs)
    print(f"\nboto3 upload_file of {args.size}, {args.rounds} rounds after a warm-up, order rotated; "
          "medians (range).\n")
    print("| server | CPU s/GiB received | ÷ MinIO | GiB/s | direct-reclaim scans (max) |")
    print("|---|---|---|---|---|")
    for case in cases:
        cpus = [r["cpu"] for r in case.runs]
        med = statistics.median(cpus)
        print(f"| {case.label} | {med:.2f} ({min(cpus):.2f}–{max(cpus):.2f}) | {med / minio:.2f} | "
              f"{statistics.median(r['gibps'] for r in case.runs):.2f} | "
              f"{max(r['direct_scans'] for r in case.runs)} |")


if __name__ == "__main__":
    main()
