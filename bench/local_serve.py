"""What the small Python benchmarks share (`get_many.py`, `data_workers.py`,
`safetensors_load.py`) beyond bench/benchlib.py: one release `brisk serve` on 127.0.0.1 with a
free port, through bench/compare.py's `Server` (a fresh data directory, waited for, stopped and
removed), with benchlib's credentials.

    with local_serve.brisk_serve("target/release/brisk") as server:
        client = brisk.Client(server.endpoint, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, ...)
        ...
        local_serve.check_running(server)   # after each run: a server that died is reported
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator

import compare


@contextlib.contextmanager
def brisk_serve(binary: str, *extra_args: str) -> Iterator[compare.Server]:
    """`binary serve` on a temporary directory and a free port of 127.0.0.1 (`extra_args` after
    its own), stopped and removed on the way out."""
    with tempfile.TemporaryDirectory() as root:
        server = compare.Server("brisk", os.path.join(root, "data"), None, binary=binary,
                                extra_args=extra_args)
        try:
            yield server
        finally:
            server.close()


def check_running(server: compare.Server) -> None:
    """Exits the benchmark with the server's last log lines if the server is gone."""
    if server.proc.poll() is not None:
        server.log.flush()
        with open(server.log.name, "rb") as log:
            tail = log.read()[-4000:].decode(errors="replace")
        sys.exit(f"brisk serve exited with {server.proc.returncode}:\n{tail}")
