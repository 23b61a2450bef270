#!/usr/bin/env python3
"""What idle keep-alive connections cost `brisk serve` in memory: builds of the server (NAME=BINARY),
each started on a fresh data root under /var/tmp (fsync on, anonymous), get CONNECTIONS connections
that each upload one object of SIZE (a durable PUT: of a read buffer or more, it is staged for
`O_DIRECT`) and then stay open, idle. The server's resident set (VmRSS from /proc) is read before the
connections, once they are all idle (after --settle seconds), and again after they closed.

    .bench-venv/bin/python bench/idle_connections.py before=/tmp/brisk.before after=target/release/brisk \\
        [--connections 200] [--size 1MiB] [--settle 2] [--rounds 2]

Plain sockets and HTTP/1.1, no client library: the figure is the server's. Rounds alternate the
builds; every figure is printed, then the medians per build.
"""

import argparse
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import free_port, parse_size, process_rss_kib


def receive_response(sock):
    """Reads one response with a Content-Length body; returns its status."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed before a response head")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed inside a body")
        rest += chunk
    return status


def request(sock, method, path, body=b""):
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n"
                 .encode() + body)
    return receive_response(sock)


def measure(name, binary, connections, size, settle):
    data = tempfile.mkdtemp(prefix="idle-connections-", dir="/var/tmp")
    port = free_port()
    proc = subprocess.Popen([binary, "serve", "--root", data, "--listen", f"127.0.0.1:{port}", "--anonymous"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socks = []
    try:
        deadline = time.time() + 60
        while True:
            try:
                first = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError(f"{name}: the server did not start")
                time.sleep(0.1)
        first.settimeout(60)
        assert request(first, "PUT", "/idle") == 200
        time.sleep(settle)
        before = process_rss_kib(proc.pid)
        body = bytes(range(256)) * (size // 256)
        for i in range(connections):
            sock = socket.create_connection(("127.0.0.1", port), timeout=60)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            status = request(sock, "PUT", f"/idle/k{i}", body)
            if status != 200:
                raise RuntimeError(f"{name}: PUT answered {status}")
            socks.append(sock)
        time.sleep(settle)
        idle = process_rss_kib(proc.pid)
        for sock in socks:
            sock.close()
        socks.clear()
        time.sleep(settle)
        closed = process_rss_kib(proc.pid)
        return before, idle, closed
    finally:
        for sock in socks:
            sock.close()
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("builds", nargs="+", help="NAME=BINARY (a brisk CLI)")
    parser.add_argument("--connections", type=int, default=200, help="idle connections (the server allows 256)")
    parser.add_argument("--size", default="1MiB", help="each connection's upload")
    parser.add_argument("--settle", type=float, default=2.0, help="seconds before each reading")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    builds = [b.split("=", 1) for b in args.builds]
    size = parse_size(args.size)
    results = {name: [] for name, _ in builds}
    for round_ in range(args.rounds):
        order = builds[round_ % len(builds):] + builds[:round_ % len(builds)]
        for name, binary in order:
            before, idle, closed = measure(name, binary, args.connections, size, args.settle)
            per = (idle - before) / args.connections
            results[name].append((before, idle, closed, per))
            print(f"round {round_ + 1} {name}: RSS {before / 1024:.1f} MiB before, {idle / 1024:.1f} with "
                  f"{args.connections} idle connections ({per:.0f} KiB each), {closed / 1024:.1f} after they closed",
                  flush=True)
    print(f"\n{args.connections} connections, each after one PUT of {args.size} (fsync on), idle; medians of "
          f"{args.rounds} round(s)\n")
    print("| server | RSS before, MiB | with the idle connections, MiB | KiB per idle connection | after they closed, MiB |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        med = lambda i: statistics.median(r[i] for r in runs)
        print(f"| {name} | {med(0) / 1024:.1f} | {med(1) / 1024:.1f} | {med(3):.0f} | {med(2) / 1024:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
