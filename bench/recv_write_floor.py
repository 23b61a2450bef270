#!/usr/bin/env python3
"""What downloading an object to a file costs the client's CPU with no HTTP library and no
parallelism: the floor under `brisk download` (PEERS.md: about 0.7 CPU s/GiB into a tmpfs file).

One plain HTTP/1.1 GET of the whole object from an anonymous `brisk serve` (which sends it with
sendfile), `recv_into` one reused 8 MiB buffer, each filled buffer written to FILE with `os.write`;
prints the process's user and sys CPU seconds per GiB (getrusage) and GiB/s. Setup, from the
repository root:

  target/release/brisk serve --root /var/tmp/fl --listen 127.0.0.1:9558 --anonymous \\
      --access-key AK --secret-key SKSKSKSKSK --no-fsync &
  target/release/brisk --endpoint-url http://127.0.0.1:9558 --no-sign-request mb s3://floor
  head -c 2147483648 /dev/urandom > /var/tmp/fl.bin
  target/release/brisk --endpoint-url http://127.0.0.1:9558 --no-sign-request cp /var/tmp/fl.bin s3://floor/obj
  python3 bench/recv_write_floor.py 127.0.0.1:9558 /floor/obj /dev/shm/floor.bin
"""
import os
import resource
import socket
import sys
import time

BUFFER = 8 << 20


def main(address, path, target):
    host, port = address.rsplit(":", 1)
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    s = socket.create_connection((host, int(port)))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {address}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    view = memoryview(bytearray(BUFFER))
    got = 0
    while got < length:
        filled = 0
        want = min(BUFFER, length - got)
        while filled < want:
            n = s.recv_into(view[filled:want])
            if n == 0:
                raise SystemExit("connection closed early")
            filled += n
        os.write(out, view[:filled])
        got += filled
    os.close(out)
    after, elapsed = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - started
    gib = length / 2**30
    print(f"floor\tuser {(after.ru_utime - before.ru_utime) / gib:.3f}\t"
          f"sys {(after.ru_stime - before.ru_stime) / gib:.3f} s/GiB\t{gib / elapsed:.2f} GiB/s")
    os.unlink(target)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
