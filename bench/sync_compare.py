"""`brisk sync` and `brisk cp --recursive` next to `aws s3 sync` (AWS CLI v1, the version in the test
venv) with many small objects, against one `brisk serve` (release build, --no-fsync so the disk does not
set the pace) or MinIO (`--server minio`): a tree of N files synced up to an empty prefix, synced again
(nothing to do; not for cp, which copies everything again), and synced down into an empty directory. Each client runs in its own process; the figures are wall seconds, objects per second,
the client's CPU seconds and its peak RSS (from wait4). The order of the clients rotates each round;
round 1 is a warm-up.

  bench/sync.sh [--files 2000] [--size 4096] [--repeats 3] [--server brisk|minio]
"""

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import free_port

ROOT = Path(__file__).resolve().parent.parent
KEY, SECRET = "bench", "bench-secret-key"


def timed(argv, env):
    """Runs argv; returns (seconds, cpu seconds, peak RSS bytes)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - start
    if status != 0:
        sys.exit(f"{argv} failed: {proc.stderr.read().decode()}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--aws", default=str(ROOT / ".venv/bin/aws"))
    ap.add_argument("--server", choices=["brisk", "minio"], default="brisk")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="brisk-sync-bench-"))
    port = free_port()
    if args.server == "brisk":
        server = subprocess.Popen(
            [str(ROOT / "target/release/brisk"), "serve", "--root", str(work / "data"), "--listen",
             f"127.0.0.1:{port}", "--access-key", KEY, "--secret-key", SECRET, "--no-fsync",
             "--log-format", "off"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        server = subprocess.Popen(
            [str(ROOT / ".tools/bin/minio"), "server", "--quiet", "--address", f"127.0.0.1:{port}",
             "--console-address", "127.0.0.1:0", str(work / "data")],
            env=dict(os.environ, MINIO_ROOT_USER=KEY, MINIO_ROOT_PASSWORD=SECRET, MINIO_BROWSER="off",
                     MINIO_UPDATE="off"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
               AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    env.pop("AWS_CA_BUNDLE", None)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        src = work / "tree"
        for i in range(args.files):
            p = src / f"d{i % 20:02d}" / f"file-{i:06d}.bin"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(os.urandom(args.size))
        brisk = [str(ROOT / "target/release/brisk"), "--endpoint-url", url, "-q"]
        aws = [args.aws, "--endpoint-url", url, "s3"]
        subprocess.run(brisk + ["mb", "s3://sync"], env=env, check=True)
        clients = {
            "brisk sync": lambda s, d: brisk + ["sync", s, d],
            "brisk cp --recursive": lambda s, d: brisk + ["cp", "--recursive", s, d],
            "aws s3 sync": lambda s, d: aws + ["sync", "--quiet", s, d],
        }
        results = {}
        for round_ in range(args.repeats + 1):
            names = list(clients)
            names = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in names:
                tag = f"{name.split()[0]}-{name.split()[1]}-{round_}"
                down = work / f"down-{tag}"
                cmd = clients[name]
                runs = {"up (empty prefix)": timed(cmd(str(src), f"s3://sync/{tag}"), env)}
                if "cp" not in name:
                    runs["up again (nothing to do)"] = timed(cmd(str(src), f"s3://sync/{tag}"), env)
                runs["down (empty directory)"] = timed(cmd(f"s3://sync/{tag}", str(down)), env)
                assert sum(1 for _ in down.rglob("*.bin")) == args.files, f"{name} left files behind"
                if round_ == 0:
                    continue
                for case, r in runs.items():
                    results.setdefault((case, name), []).append(r)
        server_name = "brisk serve --no-fsync" if args.server == "brisk" else "MinIO"
        print(f"\n{args.files} files of {args.size} bytes, {server_name} on 127.0.0.1, "
              f"{args.repeats} rounds (medians); command: bench/sync.sh --files {args.files} "
              f"--size {args.size} --repeats {args.repeats} --server {args.server}\n")
        print("| case | client | seconds | objects/s | CPU s | peak RSS MiB |")
        print("|---|---|---|---|---|---|")
        for (case, name), runs in sorted(results.items()):
            sec = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            rss = statistics.median(r[2] for r in runs) / (1 << 20)
            print(f"| {case} | {name} | {sec:.2f} | {args.files / sec:,.0f} | {cpu:.2f} | {rss:.0f} |")
    finally:
        server.kill()
        server.wait()
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
