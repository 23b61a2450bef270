#!/usr/bin/env python3
"""What three production features cost, each measured against its absence in one run, rounds
interleaved (A, B, A, B, ...; the first round is a warm-up and left out of the medians):

    python3 bench/production_costs.py verify OLD_BRISK NEW_BRISK   download of 1 GiB with `brisk cp`:
        a binary without download verification against one with it (same server, same object)
    python3 bench/production_costs.py fsync      `brisk serve` with fsync on (the default) against
        `--no-fsync`: 500 files of 4 KiB uploaded with `brisk cp --recursive`, and one 256 MiB file
        with `brisk cp` (multipart), on the local disk
    python3 bench/production_costs.py log        random 256 KiB reads at QD 64 (the random_read
        example, 5 s): `brisk serve --log-format off` against `plain` (stderr to a file)
    python3 bench/production_costs.py tls        `brisk cp s3://... /dev/shm/...` of 1 GiB over
        plain HTTP against HTTPS (a self-signed certificate from `openssl req`), client and server CPU

Client CPU is user + sys of the client process (`/usr/bin/time -v`), server CPU is utime + stime of
`brisk serve` from /proc around each run. The server is this checkout's target/release/brisk
(`cargo build --release -p brisk-cli`, and `--example random_read -p brisk-client` for `log`), with
fsync on, on a fresh directory under /work/scratch-compare. Prints one line per run and the medians.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import GIB, ROOT, free_port, process_cpu_seconds

BRISK = os.path.join(ROOT, "target/release/brisk")
KEY, SECRET = "costkey", "costsecretcostsecret"
ROUNDS = 4


class Serve:
    def __init__(self, root, *extra):
        port = free_port()
        self.log = open(os.path.join(os.path.dirname(root), f"serve-{port}.log"), "wb")
        self.proc = subprocess.Popen([BRISK, "serve", "--root", root, "--listen", f"127.0.0.1:{port}",
                                      "--access-key", KEY, "--secret-key", SECRET, *extra],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.url = self.proc.stdout.readline().strip()

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


def env(ca=None):
    e = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
             AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
    if ca:
        e["AWS_CA_BUNDLE"] = ca
    return e


def timed(cmd, environ):
    """(wall s, client CPU s) of one command under /usr/bin/time -v."""
    started = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-v", *cmd], env=environ, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if out.returncode != 0:
        sys.exit(f"{cmd[:3]} failed: {out.stderr.split(chr(9) + 'Command being timed')[0][-500:]}")
    fields = dict(line.strip().rsplit(": ", 1) for line in out.stderr.splitlines() if ": " in line)
    return wall, float(fields["User time (seconds)"]) + float(fields["System time (seconds)"]), out.stdout


def upload_object(url, environ, work, size=GIB):
    src = os.path.join(work, "object")
    block = os.urandom(64 << 20)
    with open(src, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
    subprocess.run([BRISK, "--endpoint-url", url, "mb", "s3://cost"], env=environ, check=True, capture_output=True)
    subprocess.run([BRISK, "--endpoint-url", url, "cp", src, "s3://cost/object"], env=environ, check=True,
                   capture_output=True)
    os.unlink(src)


def report(rows):
    for label in dict.fromkeys(r[0] for r in rows):
        runs = [r for r in rows if r[0] == label and r[1] > 1]
        cols = list(runs[0][2])
        print(f"median {label}: " + ", ".join(f"{c} {statistics.median(r[2][c] for r in runs):.3f}" for c in cols))


def download_cost(serve, binaries, environ, work, modes):
    rows = []
    for rnd in range(1, ROUNDS + 1):
        order = modes if rnd % 2 else modes[::-1]
        for label in order:
            target = f"/dev/shm/brisk-cost-{os.getpid()}"
            s0 = process_cpu_seconds(serve[label].proc.pid)
            wall, client, _ = timed([binaries[label], "--endpoint-url", serve[label].url, "cp",
                                     "s3://cost/object", target], environ[label])
            server = process_cpu_seconds(serve[label].proc.pid) - s0
            os.unlink(target)
            row = {"GiB/s": 1 / wall, "client CPU s/GiB": client, "server CPU s/GiB": server}
            rows.append((label, rnd, row))
            print(f"round {rnd} {label}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    report(rows)


def main():
    what = sys.argv[1]
    os.makedirs("/work/scratch-compare", exist_ok=True)
    work = tempfile.mkdtemp(prefix="cost-", dir="/work/scratch-compare")
    print(f"host: {open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}, "
          f"THP {open('/sys/kernel/mm/transparent_hugepage/enabled').read().strip()}; command: "
          f"bench/production_costs.py {' '.join(sys.argv[1:])}", flush=True)
    servers = []
    try:
        if what == "verify":
            old, new = sys.argv[2], sys.argv[3]
            s = Serve(os.path.join(work, "data"), "--log-format", "off")
            servers.append(s)
            upload_object(s.url, env(), work)
            download_cost({"without verification": s, "with verification": s},
                          {"without verification": old, "with verification": new},
                          {"without verification": env(), "with verification": env()}, work,
                          ["without verification", "with verification"])
        elif what == "tls":
            # A CA and a leaf it signs (rustls refuses a CA certificate as the server's own).
            ca, ca_key = os.path.join(work, "ca.pem"), os.path.join(work, "ca.key")
            cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
            csr, ext = os.path.join(work, "leaf.csr"), os.path.join(work, "leaf.ext")
            ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
            with open(ext, "w") as f:
                f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
            for cmd in (["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1", "-subj", "/CN=cost-ca"],
                        ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
                        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                         "-days", "1", "-extfile", ext]):
                subprocess.run(["openssl", *cmd], check=True, capture_output=True)
            os.makedirs(os.path.join(work, "data"))
            plain = Serve(os.path.join(work, "data"), "--log-format", "off")
            servers.append(plain)
            upload_object(plain.url, env(), work)
            plain.close()
            servers.remove(plain)
            # The same directory served both ways, one server at a time would not interleave: two
            # servers on one directory are refused (the store's lock), so the object is written to
            # a second directory for the HTTPS server.
            tls_root = os.path.join(work, "tls-data")
            shutil.copytree(os.path.join(work, "data"), tls_root)
            plain = Serve(os.path.join(work, "data"), "--log-format", "off")
            tls = Serve(tls_root, "--log-format", "off", "--tls-cert", cert, "--tls-key", key)
            servers += [plain, tls]
            download_cost({"http": plain, "https": tls}, {"http": BRISK, "https": BRISK},
                          {"http": env(), "https": env(ca)}, work, ["http", "https"])
        elif what == "fsync":
            small = os.path.join(work, "small")
            os.makedirs(small)
            for i in range(500):
                with open(os.path.join(small, f"f{i:03d}"), "wb") as f:
                    f.write(os.urandom(4096))
            big = os.path.join(work, "big")
            with open(big, "wb") as f:
                f.write(os.urandom(64 << 20) * 4)
            serve = {"fsync on": Serve(os.path.join(work, "on"), "--log-format", "off"),
                     "--no-fsync": Serve(os.path.join(work, "off"), "--log-format", "off", "--no-fsync")}
            servers += serve.values()
            for s in serve.values():
                subprocess.run([BRISK, "--endpoint-url", s.url, "mb", "s3://cost"], env=env(), check=True,
                               capture_output=True)
            rows = []
            for rnd in range(1, ROUNDS + 1):
                for label in (["fsync on", "--no-fsync"] if rnd % 2 else ["--no-fsync", "fsync on"]):
                    s = serve[label]
                    s0 = process_cpu_seconds(s.proc.pid)
                    wall_small, _, _ = timed([BRISK, "--endpoint-url", s.url, "cp", "--recursive", small,
                                              f"s3://cost/small-{rnd}/"], env())
                    wall_big, _, _ = timed([BRISK, "--endpoint-url", s.url, "cp", big, f"s3://cost/big-{rnd}"], env())
                    row = {"small PUTs/s": 500 / wall_small, "256 MiB upload GiB/s": 0.25 / wall_big,
                           "server CPU s": process_cpu_seconds(s.proc.pid) - s0}
                    rows.append((label, rnd, row))
                    print(f"round {rnd} {label}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
            report(rows)
        elif what == "log":
            os.makedirs(os.path.join(work, "data"))
            s = Serve(os.path.join(work, "data"), "--log-format", "off")
            servers.append(s)
            upload_object(s.url, env(), work)
            s.close()
            servers.remove(s)
            rows = []
            example = os.path.join(ROOT, "target/release/examples/random_read")
            for rnd in range(1, ROUNDS + 1):
                for fmt in (["off", "plain"] if rnd % 2 else ["plain", "off"]):
                    s = Serve(os.path.join(work, "data"), "--log-format", fmt)
                    s0 = process_cpu_seconds(s.proc.pid)
                    _, _, out = timed([example, "--endpoint-url", s.url, "--bucket", "cost", "--key", "object",
                                       "--block-size", "262144", "--queue-depth", "64", "--duration", "5s",
                                       "--json"], env())
                    server = process_cpu_seconds(s.proc.pid) - s0
                    s.close()
                    import json
                    r = json.loads(out.strip().splitlines()[-1])
                    row = {"IOPS": r["iops"], "client CPU s/GiB": r["cpu_s_per_gib"],
                           "server CPU ms per 1000 reads": server / r["reads"] * 1e6}
                    rows.append((f"log {fmt}", rnd, row))
                    print(f"round {rnd} log {fmt}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
            report(rows)
    finally:
        for s in servers:
            s.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
