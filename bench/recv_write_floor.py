#!/usr/bin/env python3
"""What downloading an object to a file costs the client's CPU with no HTTP library: the floor under
`brisk download` and under every other client's download to a file on this machine.

    python3 bench/recv_write_floor.py ADDRESS PATH TARGET [--mode M] [--connections N] [--buffer-mib B]

N plain HTTP/1.1 GETs (default 1; with more than one, each asks for an even share of the object
with a Range) from an anonymous `brisk serve` (which sends with sendfile), one thread each, into
TARGET at the share's offset, B MiB at a time (default 8). How the bytes go from the socket to the
file, by --mode:

- copy (default): `recv_into` one reused buffer, then `pwrite` it: two copies, socket → buffer →
  page cache. What brisk and every peer do.
- splice: `splice` socket → pipe → file. The kernel moves page references into the pipe and copies
  once, into the page cache; nothing is seen in user space, so a checksum would need another pass.
- mmap: map each B MiB window of the file, populate it with MADV_POPULATE_WRITE, `recv_into` the
  mapping: one copy, socket → page cache.

Prints the process's user and sys CPU seconds per GiB (getrusage) and GiB/s. No checksum is taken.
Set-up, from the repository root:

  target/release/brisk serve --root /var/tmp/fl --listen 127.0.0.1:9558 --anonymous \\
      --access-key AK --secret-key SKSKSKSKSK --no-fsync &
  target/release/brisk --endpoint-url http://127.0.0.1:9558 --no-sign-request mb s3://floor
  head -c 2147483648 /dev/urandom > /var/tmp/fl.bin
  target/release/brisk --endpoint-url http://127.0.0.1:9558 --no-sign-request cp /var/tmp/fl.bin s3://floor/obj
  python3 bench/recv_write_floor.py 127.0.0.1:9558 /floor/obj /dev/shm/floor.bin --connections 4
"""
import argparse
import mmap
import os
import resource
import socket
import threading
import time

MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)


def get(address, path, first=None, last=None):
    """Sends the GET and reads its head byte by byte (so no body byte is read into Python);
    returns the socket, the body's length and the object's."""
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    ranged = "" if first is None else f"Range: bytes={first}-{last}\r\n"
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {address}\r\n{ranged}\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    status = int(head.split(b" ", 2)[1])
    if status not in (200, 206):
        raise SystemExit(f"GET {path}: status {status}")
    fields = dict(line.lower().split(b":", 1) for line in head.split(b"\r\n")[1:] if b":" in line)
    length = int(fields[b"content-length"])
    total = int(fields[b"content-range"].rsplit(b"/", 1)[1]) if status == 206 else length
    return s, length, total


def receive_copy(s, out, at, length, buffer):
    view = memoryview(bytearray(buffer))
    end = at + length
    while at < end:
        want, filled = min(buffer, end - at), 0
        while filled < want:
            n = s.recv_into(view[filled:want])
            if n == 0:
                raise SystemExit("connection closed early")
            filled += n
        os.pwrite(out, view[:filled], at)
        at += filled


def receive_splice(s, out, at, length, buffer):
    read_end, write_end = os.pipe()
    try:
        end = at + length
        while at < end:
            # A pipe holds 16 pieces by default whatever their size, and a socket's pieces can be
            # small: drain each splice before the next, so the pipe never fills and blocks.
            n = os.splice(s.fileno(), write_end, min(buffer, end - at))
            if n == 0:
                raise SystemExit("connection closed early")
            left = n
            while left:
                m = os.splice(read_end, out, left, offset_dst=at + n - left)
                left -= m
            at += n
    finally:
        os.close(read_end)
        os.close(write_end)


def receive_mmap(s, out, at, length, buffer):
    end = at + length
    while at < end:
        want, filled = min(buffer, end - at), 0
        window = mmap.mmap(out, want, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE, offset=at)
        window.madvise(MADV_POPULATE_WRITE)
        view = memoryview(window)
        while filled < want:
            n = s.recv_into(view[filled:want])
            if n == 0:
                raise SystemExit("connection closed early")
            filled += n
        view.release()
        window.close()
        at += filled


MODES = {"copy": receive_copy, "splice": receive_splice, "mmap": receive_mmap}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("address")
    parser.add_argument("path")
    parser.add_argument("target")
    parser.add_argument("--mode", choices=sorted(MODES), default="copy")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--buffer-mib", type=int, default=8)
    args = parser.parse_args()
    buffer, receive = args.buffer_mib << 20, MODES[args.mode]
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    out = os.open(args.target, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    if args.connections == 1:
        s, size, _ = get(args.address, args.path)
        shares = [(s, 0, size)]
    else:
        s, _, size = get(args.address, args.path, 0, 0)
        s.recv(1)
        s.close()
        step = -(-size // args.connections)
        # Shares start on a page boundary, which the mmap mode needs for its windows.
        step = -(-step // mmap.PAGESIZE) * mmap.PAGESIZE
        shares = []
        for first in range(0, size, step):
            last = min(first + step, size) - 1
            s, length, _ = get(args.address, args.path, first, last)
            shares.append((s, first, length))
    os.ftruncate(out, size)
    threads = [threading.Thread(target=receive, args=(s, out, at, length, buffer))
               for s, at, length in shares]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    os.close(out)
    after, elapsed = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - started
    gib = size / 2**30
    print(f"floor {args.mode} x{len(shares)}\tuser {(after.ru_utime - before.ru_utime) / gib:.3f}\t"
          f"sys {(after.ru_stime - before.ru_stime) / gib:.3f} s/GiB\t{gib / elapsed:.2f} GiB/s")
    os.unlink(args.target)


if __name__ == "__main__":
    main()
