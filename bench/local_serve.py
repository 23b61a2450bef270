"""What the small Python benchmarks share (`get_many.py`, `data_workers.py`,
`safetensors_load.py`): one release `brisk serve` on 127.0.0.1 with a free port, on a temporary
directory, stopped (and its data removed) when the benchmark ends, and the host described the same
way in each one's report.

    with local_serve.brisk_serve("target/release/brisk") as server:
        client = brisk.Client(server.endpoint, access_key_id=ACCESS, secret_access_key=SECRET, ...)
        ...
        server.check_running()   # after each run: a server that died is reported with its log
"""

from __future__ import annotations

import contextlib
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

ACCESS, SECRET = "benchaccess", "benchsecret-benchsecret"
STARTUP_TIMEOUT = 30.0


@dataclass
class LocalServe:
    endpoint: str
    process: subprocess.Popen
    log: IO[bytes]

    def check_running(self) -> None:
        """Exits the benchmark with the server's last log lines if the server is gone."""
        if self.process.poll() is not None:
            self.log.seek(0)
            sys.exit(f"brisk serve exited with {self.process.returncode}:\n"
                     + self.log.read()[-4000:].decode(errors="replace"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def brisk_serve(binary: str, *extra_args: str) -> Iterator[LocalServe]:
    """`binary serve` on a temporary directory and a free port of 127.0.0.1, with the benchmarks'
    credentials and no access log (its output kept in a temporary file for `check_running`);
    waits until it accepts connections, and stops it on the way out."""
    port = free_port()
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [binary, "serve", "--root", os.path.join(root, "data"), "--listen", f"127.0.0.1:{port}",
             "--access-key", ACCESS, "--secret-key", SECRET, "--log-format", "off", *extra_args],
            stdout=log, stderr=subprocess.STDOUT,
        )
        server = LocalServe(f"http://127.0.0.1:{port}", process, log)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while True:
                server.check_running()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        sys.exit(f"brisk serve did not accept connections on port {port} within "
                                 f"{STARTUP_TIMEOUT:.0f} s")
                    time.sleep(0.05)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def thp() -> str:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().strip()
    except OSError:
        return "unknown"
