#!/usr/bin/env python3
"""What receiving 1 GiB into memory costs the client's CPU depending on how the destination was mapped.

Reads one 1 GiB object from an anonymous `brisk serve` (plain HTTP GET, `recv_into` 1 MiB at a time,
no HTTP library) into an anonymous mapping that is

  fresh     untouched: every 4 KiB page faults on first write inside the kernel's copy
  huge      untouched, with MADV_HUGEPAGE (this kernel's THP mode is `madvise`)
  populate  mapped with MAP_POPULATE: the kernel faults every page in at once (counted in the figure)
  reused    touched before the clock starts: the cost of the copy alone (a reused buffer)

and prints user and sys CPU seconds (getrusage). Setup, from the repository root:

  target/release/brisk serve --root /var/tmp/hp --listen 127.0.0.1:9557 --anonymous --no-fsync &
  head -c 1073741824 /dev/zero > /dev/shm/hp.bin
  target/release/brisk --endpoint-url http://127.0.0.1:9557 --no-sign-request mb s3://hpbench
  target/release/brisk --endpoint-url http://127.0.0.1:9557 --no-sign-request cp /dev/shm/hp.bin s3://hpbench/one
  for m in fresh huge populate reused; do python3 bench/fresh_buffer_recv.py $m; done
"""
import mmap
import resource
import socket
import sys
import time

N = 1 << 30
PORT = 9557


def get(buf):
    s = socket.create_connection(("127.0.0.1", PORT))
    s.sendall(b"GET /hpbench/one HTTP/1.1\r\nHost: x\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    mv = memoryview(buf)
    got = 0
    while got < N:
        n = s.recv_into(mv[got:], min(N - got, 1 << 20))
        if n == 0:
            raise SystemExit("connection closed early")
        got += n
    s.close()


def main():
    mode = sys.argv[1]
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.time()
    if mode == "fresh":
        buf = mmap.mmap(-1, N)
    elif mode == "huge":
        buf = mmap.mmap(-1, N)
        buf.madvise(mmap.MADV_HUGEPAGE)
    elif mode == "populate":
        buf = mmap.mmap(-1, N, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
    elif mode == "reused":
        buf = mmap.mmap(-1, N)
        for i in range(0, N, 4096):
            buf[i] = 1
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.time()
    else:
        raise SystemExit(f"unknown mode {mode}")
    get(buf)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{mode}: {time.time() - t0:.2f} s wall, user {r1.ru_utime - r0.ru_utime:.2f} s, "
          f"sys {r1.ru_stime - r0.ru_stime:.2f} s per GiB")


if __name__ == "__main__":
    main()
