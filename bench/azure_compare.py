"""brisk next to Microsoft's Azure Blob SDK (azure-storage-blob) on one Azurite: in-memory GET, download
to a file, upload from it, random 256 KiB reads at QD 64. Azurite is single-threaded JavaScript, so
throughput says little here; the figures are client CPU per GiB and memory amplification (the
client's RSS growth over the blob's size).

  bench/azure.sh [--size 256MiB] [--repeats 3]

brisk is measured by `brisk bench` with --azure-endpoint-url (the client in its own process, the
server apart); the SDK by bench/azure_sdk_client.py, one fresh process per run. The order of the
clients rotates each round; round 1 is a warm-up and is not counted.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import GIB, free_port, parse_size

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def start_azurite(location):
    port = free_port()
    binary = ROOT / ".tools/azurite/node_modules/.bin/azurite-blob"
    proc = subprocess.Popen(
        [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", str(location),
         # --loose: Azurite then accepts x-ms-content-crc64 (strict mode refuses it, and brisk falls
         # back to Content-MD5), so brisk's uploads cost what they cost against Azure itself.
         "--skipApiVersionCheck", "--disableTelemetry", "--silent", "--loose"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/{ACCOUNT}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    sys.exit("Azurite did not start")


def brisk_round(url, conn, size, work):
    out = work / "brisk.json"
    env = dict(os.environ, AZURE_STORAGE_CONNECTION_STRING=conn)
    subprocess.run(
        [str(ROOT / "target/release/brisk"), "--azure-endpoint-url", url, "bench",
         "--cases", "get,download,upload,random", "--size-get", str(size), "--size-transfer", str(size),
         "--repeat", "1", "--work-dir", str(work), "--json-file", str(out), "--report", str(work / "report")],
        env=env, check=True, stdout=subprocess.DEVNULL)
    doc = json.loads(out.read_text())
    rows = {}
    for case in doc["cases"]:
        name = case["case"]
        if name not in ("get", "download", "upload", "random"):
            continue
        med = lambda k: (case.get(k) or {}).get("median")
        rows[name] = {"gib_per_s": med("gib_per_s"), "cpu_s_per_gib": med("cpu_s_per_gib"),
                      "amplification": med("amplification")}
    return rows


def sdk_run(python, conn, container, blob, case, path=None):
    args = [python, str(ROOT / "bench/azure_sdk_client.py"), conn, container, blob, case]
    if path:
        args.append(str(path))
    r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    gib = r["bytes"] / GIB
    return {"gib_per_s": gib / r["seconds"], "cpu_s_per_gib": r["cpu_seconds"] / gib,
            "amplification": (r["peak_rss"] - r["rss_before"]) / r["bytes"] if case != "random" else None}


SDK_CASES = [("get", "readall"), ("get", "readall4"), ("get", "readinto"), ("download", "download"),
             ("upload", "upload"), ("random", "random")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="256MiB")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    size = parse_size(args.size)
    work = Path(tempfile.mkdtemp(prefix="brisk-azure-bench-"))
    proc, url = start_azurite(work / "azurite")
    conn = f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};BlobEndpoint={url};"
    try:
        from azure.storage.blob import BlobServiceClient
        service = BlobServiceClient.from_connection_string(conn)
        service.create_container("sdk")
        source = work / "source.bin"
        with open(source, "wb") as f:
            f.write(os.urandom(size))
        with open(source, "rb") as f:
            service.get_blob_client("sdk", "blob").upload_blob(f, max_concurrency=4, length=size)
        results = {}
        for round_ in range(args.repeats + 1):
            order = ["brisk", "sdk"] if round_ % 2 == 0 else ["sdk", "brisk"]
            for client in order:
                if client == "brisk":
                    rows = {("brisk", c): v for c, v in brisk_round(url, conn, size, work).items()}
                else:
                    rows = {}
                    for case, how in SDK_CASES:
                        path = work / ("down.bin" if case == "download" else "source.bin")
                        blob = "blob" if case != "upload" else "uploaded"
                        rows[(f"azure-storage-blob {how}", case)] = sdk_run(args.python, conn, "sdk", blob, how,
                                                                           path if case in ("download", "upload") else None)
                if round_ == 0:
                    continue  # warm-up
                for key, value in rows.items():
                    results.setdefault(key, []).append(value)
        print(f"\nAzurite 3.35.0, blob of {size / (1 << 20):.0f} MiB, {args.repeats} rounds (medians), "
              f"command: bench/azure.sh --size {args.size} --repeats {args.repeats}\n")
        print("| case | client | GiB/s | client CPU s/GiB | RSS growth / bytes |")
        print("|---|---|---|---|---|")
        for case in ("get", "download", "upload", "random"):
            for (client, c), runs in sorted(results.items()):
                if c != case:
                    continue
                med = lambda k: statistics.median([r[k] for r in runs if r[k] is not None]) if any(r[k] is not None for r in runs) else None
                fmt = lambda v, spec: "–" if v is None else format(v, spec)
                print(f"| {case} | {client} | {fmt(med('gib_per_s'), '.3f')} | {fmt(med('cpu_s_per_gib'), '.2f')} "
                      f"| {fmt(med('amplification'), '.2f')}x |")
    finally:
        proc.kill()
        proc.wait()
        subprocess.run(["rm", "-rf", str(work)])


if __name__ == "__main__":
    main()
