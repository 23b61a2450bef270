#!/usr/bin/env python3
"""brisk serve next to MinIO, driven by the same independent clients (boto3, the AWS CLI).

For each server (each started fresh, data on the local disk, default settings: fsync and MD5 ETags on
for both), each client uploads a file from tmpfs and downloads it back to tmpfs, REPS times. Measured from
outside: the client's wall time (GiB/s), the server's CPU seconds (user + sys from /proc/<pid>/stat) per
GiB moved, and the server's resident set (idle after start, and the peak growth sampled every 20 ms
during the transfer). Every run is bounded by a timeout; objects, files and data roots are removed at the
end.

    .venv/bin/python bench/server_peers.py [--size 4GiB] [--reps 3] [--minio .tools/bin/minio]

Prints a Markdown table of medians (and ranges) for BENCHMARKS.md.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from benchlib import free_port, parse_size, process_cpu_seconds, process_rss_kib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AK, SK = "peersbenchkey", "peersbenchsecret"
TIMEOUT = 900


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, process_rss_kib(self.pid) * 1024)
            except OSError:
                return
            time.sleep(0.02)


class Server:
    def __init__(self, kind, minio, brisk=None, flags=()):
        self.kind = kind
        self.port = free_port()
        self.data = tempfile.mkdtemp(prefix=f"peers-{kind}-", dir="/var/tmp")
        self.endpoint = f"http://127.0.0.1:{self.port}"
        if kind == "brisk":
            cmd = [brisk or os.path.join(ROOT, "target/release/brisk"), "serve", "--root", self.data,
                   "--listen", f"127.0.0.1:{self.port}", "--access-key", AK, "--secret-key", SK, *flags]
            env = dict(os.environ)
        else:
            cmd = [minio, "server", "--quiet", "--address", f"127.0.0.1:{self.port}",
                   "--console-address", f"127.0.0.1:{free_port()}", self.data]
            env = dict(os.environ, MINIO_ROOT_USER=AK, MINIO_ROOT_PASSWORD=SK)
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            self.close()
            raise RuntimeError(f"{kind} did not start")
        if kind == "minio":
            # Ready only once its health endpoint answers.
            while time.time() < deadline:
                try:
                    urllib.request.urlopen(f"{self.endpoint}/minio/health/ready", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
        time.sleep(1.0)
        self.idle_rss = process_rss_kib(self.proc.pid) * 1024

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.data, ignore_errors=True)


def client_env(endpoint):
    return dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
                AWS_ENDPOINT_URL=endpoint)


BOTO3 = """
import sys, boto3
from botocore.config import Config
op, path = sys.argv[1], sys.argv[2]
s3 = boto3.client("s3", config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
if op == "put":
    s3.upload_file(path, "peers", "object")
else:
    s3.download_file("peers", "object", path)
"""


def client_command(client, op, path):
    py = sys.executable
    if client == "boto3":
        return [py, "-c", BOTO3, op, path]
    aws = os.path.join(os.path.dirname(py), "aws")
    src, dst = (path, "s3://peers/object") if op == "put" else ("s3://peers/object", path)
    return [aws, "s3", "cp", "--only-show-errors", src, dst]


def run_case(server, client, op, path, size):
    sampler = RssSampler(server.proc.pid)
    base_rss = process_rss_kib(server.proc.pid) * 1024
    cpu0 = process_cpu_seconds(server.proc.pid)
    sampler.start()
    t0 = time.monotonic()
    subprocess.run(client_command(client, op, path), env=client_env(server.endpoint), check=True,
                   timeout=TIMEOUT)
    wall = time.monotonic() - t0
    sampler.stop.set()
    sampler.join()
    cpu = process_cpu_seconds(server.proc.pid) - cpu0
    gib = size / (1 << 30)
    return {"gibps": gib / wall, "server_cpu_per_gib": cpu / gib,
            "rss_growth_mib": max(0, sampler.peak - base_rss) / (1 << 20)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="4GiB")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--minio", default=os.environ.get("BRISK_MINIO", os.path.join(ROOT, ".tools/bin/minio")))
    ap.add_argument("--servers", default="brisk,minio")
    ap.add_argument("--clients", default="boto3,awscli")
    args = ap.parse_args()
    size = parse_size(args.size)

    subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "brisk-cli"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="peers-", dir="/dev/shm")
    src, dst = os.path.join(work, "src"), os.path.join(work, "dst")
    with open(src, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(size >> 20):
            f.write(block)
    results = {}
    try:
        for kind in args.servers.split(","):
            server = Server(kind, args.minio)
            try:
                import boto3  # noqa: F401  (the venv's boto3 creates the bucket)
                from botocore.config import Config
                s3 = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=AK,
                                  aws_secret_access_key=SK, region_name="us-east-1",
                                  config=Config(s3={"addressing_style": "path"}))
                s3.create_bucket(Bucket="peers")
                results[(kind, "idle")] = server.idle_rss / (1 << 20)
                for client in args.clients.split(","):
                    for op in ("put", "get"):
                        runs = []
                        for _ in range(args.reps):
                            runs.append(run_case(server, client, op, src if op == "put" else dst, size))
                            if op == "get":
                                os.unlink(dst)
                        results[(kind, client, op)] = runs
                        med = statistics.median(r["gibps"] for r in runs)
                        print(f"{kind} {client} {op}: {med:.2f} GiB/s", file=sys.stderr)
                s3.delete_object(Bucket="peers", Key="object")
                s3.delete_bucket(Bucket="peers")
            finally:
                server.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def cell(runs, field, fmt):
        values = [r[field] for r in runs]
        return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"

    print(f"\nObject size {args.size}, {args.reps} runs each, medians (range).\n")
    print("| server | client | op | GiB/s | server CPU s/GiB | server RSS growth MiB |")
    print("|---|---|---|---|---|---|")
    for key, runs in results.items():
        if key[1] == "idle":
            continue
        kind, client, op = key
        print(f"| {kind} | {client} | {op.upper()} | {cell(runs, 'gibps', '{:.2f}')} | "
              f"{cell(runs, 'server_cpu_per_gib', '{:.2f}')} | {cell(runs, 'rss_growth_mib', '{:.1f}')} |")
    print()
    for key, idle in results.items():
        if key[1] == "idle":
            print(f"- {key[0]} idle RSS after start: {idle:.1f} MiB")


if __name__ == "__main__":
    main()
