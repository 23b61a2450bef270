"""Servers for the Python package's tests: `brisk serve` and MinIO, each started once per session on
127.0.0.1 with a free port, and stopped (their data removed) when the session ends.

- `brisk serve`: `BRISK_BIN`, else the newer of `target/release/brisk` and `target/debug/brisk`.
- MinIO: `BRISK_MINIO`, else `.tools/bin/minio` (`scripts/install-minio`).
- Azurite (Microsoft's Azure Storage emulator, for the Azure client): `BRISK_AZURITE`, else
  `.tools/azurite/node_modules/.bin/azurite-blob` (`scripts/install-azurite`), with --disableTelemetry.

`server` is parametrised over both, so every test that takes it runs against each; `brisk_server`
is `brisk serve` alone (for tests whose subject is not the protocol, such as memory).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

import brisk

ROOT = Path(__file__).resolve().parents[3]
ACCESS_KEY = "brisktestroot"
SECRET_KEY = "brisk-test-secret-key"
STARTUP_TIMEOUT = 60.0


@dataclass
class Server:
    name: str
    endpoint: str
    process: subprocess.Popen
    data: str
    log: str | None = None

    def env(self) -> dict[str, str]:
        """Environment variables a client (brisk, boto3, fsspec) reads its configuration from."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def client(self, **kwargs) -> brisk.Client:
        kwargs.setdefault("access_key_id", ACCESS_KEY)
        kwargs.setdefault("secret_access_key", SECRET_KEY)
        kwargs.setdefault("region", "us-east-1")
        return brisk.Client(self.endpoint, **kwargs)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        shutil.rmtree(self.data, ignore_errors=True)
        if self.log:
            os.unlink(self.log)


def die_with_parent(argv: list[str]) -> list[str]:
    """`argv` wrapped so that the server gets SIGTERM when the test process dies, however that happens
    (a killed pytest must not leave servers behind).

    `setpriv --pdeathsig` (util-linux, on every Debian) sets the signal and execs the server. It is
    not done with `preexec_fn`: that runs Python in the forked child, and once the brisk client's
    runtime threads exist, a lock one of them held at the fork (malloc's, the GIL's) can deadlock the
    child before exec, and `Popen` waits for that child forever."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def brisk_binary() -> Path:
    explicit = os.environ.get("BRISK_BIN")
    candidates = [Path(explicit)] if explicit else [ROOT / "target/release/brisk", ROOT / "target/debug/brisk"]
    found = [c for c in candidates if c.is_file()]
    if found:
        return max(found, key=lambda c: c.stat().st_mtime)
    pytest.fail(f"brisk binary not found at {candidates}: run `cargo build --release -p brisk-cli` or set BRISK_BIN")


def start_brisk() -> Server:
    data = tempfile.mkdtemp(prefix="brisk-py-serve-")
    port = free_port()
    log_path = data + ".log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            die_with_parent([str(brisk_binary()), "serve", "--listen", f"127.0.0.1:{port}", "--root", data,
                             "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, "--region", "us-east-1"]),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    endpoint = f"http://127.0.0.1:{port}"
    wait_for(endpoint + "/", process, "brisk serve", log_path)
    return Server("brisk", endpoint, process, data, log_path)


def start_minio() -> Server:
    binary = Path(os.environ.get("BRISK_MINIO", ROOT / ".tools/bin/minio"))
    if not binary.is_file():
        pytest.fail(f"MinIO not found at {binary}: run scripts/install-minio (or set BRISK_MINIO)")
    data = tempfile.mkdtemp(prefix="brisk-py-minio-")
    port = free_port()
    env = dict(os.environ, MINIO_ROOT_USER=ACCESS_KEY, MINIO_ROOT_PASSWORD=SECRET_KEY,
               MINIO_SITE_REGION="us-east-1", MINIO_BROWSER="off", MINIO_UPDATE="off")
    process = subprocess.Popen(
        die_with_parent([str(binary), "server", "--quiet", "--address", f"127.0.0.1:{port}",
                         "--console-address", "127.0.0.1:0", data]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env,
    )
    endpoint = f"http://127.0.0.1:{port}"
    wait_for(endpoint + "/minio/health/live", process, "MinIO")
    return Server("minio", endpoint, process, data)


def wait_for(url: str, process: subprocess.Popen, name: str, log: str | None = None) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = open(log).read() if log else ""
            pytest.fail(f"{name} exited with {process.returncode} while starting\n{output}")
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers (403 for an unsigned request is an answer)
        except OSError:
            time.sleep(0.1)
    process.kill()
    pytest.fail(f"{name} did not answer {url} within {STARTUP_TIMEOUT} s")


AZURITE_ACCOUNT = "devstoreaccount1"
# The emulator's well-known development key, published by Microsoft (not a secret).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def start_azurite() -> Server:
    binary = Path(os.environ.get("BRISK_AZURITE", ROOT / ".tools/azurite/node_modules/.bin/azurite-blob"))
    if not binary.is_file():
        pytest.fail(f"Azurite not found at {binary}: run scripts/install-azurite (or set BRISK_AZURITE)")
    data = tempfile.mkdtemp(prefix="brisk-py-azurite-")
    port = free_port()
    process = subprocess.Popen(
        die_with_parent([str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--location", data,
                         "--skipApiVersionCheck", "--disableTelemetry", "--silent"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    wait_for(endpoint + "?comp=list", process, "Azurite")
    return Server("azurite", endpoint, process, data)


_servers: dict[str, Server] = {}


def get_server(name: str) -> Server:
    if name not in _servers:
        start = {"brisk": start_brisk, "minio": start_minio, "azurite": start_azurite}[name]
        _servers[name] = start()
    return _servers[name]


@pytest.fixture(scope="session")
def azurite() -> Server:
    return get_server("azurite")


def pytest_sessionfinish(session, exitstatus):
    for s in _servers.values():
        s.stop()


@pytest.fixture(params=["brisk", "minio"], scope="session")
def server(request) -> Server:
    return get_server(request.param)


@pytest.fixture(scope="session")
def brisk_server() -> Server:
    return get_server("brisk")


@pytest.fixture
def client(server) -> brisk.Client:
    return server.client()


@pytest.fixture
def bucket(server, client) -> str:
    """A fresh bucket (removed with its objects after the test)."""
    name = "t-" + uuid.uuid4().hex[:16]
    client.create_bucket(name)
    yield name
    try:
        keys = [e.key for e in client.list(name)]
        if keys:
            client.delete_many(name, keys)
        client.delete_bucket(name)
    except brisk.Error:
        pass
