#!/usr/bin/env python3
"""What sending a file over loopback TCP costs the sender, with no HTTP at all: the floor under any
upload client's CPU on this machine.

    python3 bench/send_floor.py FILE [MODE ...]     MODE: sendfile, read_send, pread_crc_sendfile

A forked child accepts one connection on 127.0.0.1 and drains it with recv_into into one reused
1 MiB buffer (its CPU is not counted). The parent sends FILE (put it on tmpfs, /dev/shm, so the
file system costs nothing) in 8 MiB parts:

- sendfile:            os.sendfile of each part (no user-space copy);
- read_send:           pread of each part into one reused 8 MiB buffer, then sendall (one copy);
- pread_crc_sendfile:  a pread pass over each part through a 256 KiB buffer (what computing a
                       checksum before the head needs), then sendfile of the part.

It prints the sender's user and system CPU seconds per GiB (getrusage) and GiB/s. On loopback the
sender's system time includes the TCP receive processing the kernel does in the sender's context,
which is why sendfile does not come out cheaper than a copy here.
"""
import os
import resource
import socket
import sys
import time

PART = 8 << 20


def send(path, mode):
    size = os.path.getsize(path)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    child = os.fork()
    if child == 0:
        conn, _ = listener.accept()
        buf = bytearray(1 << 20)
        while conn.recv_into(buf):
            pass
        os._exit(0)
    sock = socket.create_connection(("127.0.0.1", port))
    fd = os.open(path, os.O_RDONLY)
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    offset = 0
    if mode == "sendfile":
        while offset < size:
            offset += os.sendfile(sock.fileno(), fd, offset, min(PART, size - offset))
    elif mode == "read_send":
        view = memoryview(bytearray(PART))
        while offset < size:
            n = os.preadv(fd, [view], offset)
            sock.sendall(view[:n])
            offset += n
    elif mode == "pread_crc_sendfile":
        small = memoryview(bytearray(256 << 10))
        while offset < size:
            end, at = min(offset + PART, size), offset
            while at < end:
                at += os.preadv(fd, [small[: min(len(small), end - at)]], at)
            while offset < end:
                offset += os.sendfile(sock.fileno(), fd, offset, end - offset)
    else:
        raise SystemExit(f"unknown mode {mode}")
    sock.close()
    os.waitpid(child, 0)
    after, elapsed = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - started
    gib = size / 2**30
    print(f"{mode}\tuser {(after.ru_utime - before.ru_utime) / gib:.3f}\t"
          f"sys {(after.ru_stime - before.ru_stime) / gib:.3f} s/GiB\t{gib / elapsed:.2f} GiB/s", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for mode in sys.argv[2:] or ["sendfile", "read_send", "pread_crc_sendfile"]:
        send(sys.argv[1], mode)
