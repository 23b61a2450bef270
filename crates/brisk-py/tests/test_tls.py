"""The Python package over HTTPS: `brisk serve --tls-cert/--tls-key` with a certificate made for the
test, trusted through `ca_bundle=` or `AWS_CA_BUNDLE`; every read and write path works, and a client
that does not trust the certificate is refused with a clear error."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import brisk

from conftest import ACCESS_KEY, SECRET_KEY, brisk_binary, die_with_parent

MIB = 1 << 20


@pytest.fixture(scope="module")
def tls_server():
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl binary on this machine to make a test certificate")
    work = Path(tempfile.mkdtemp(prefix="brisk-py-tls-"))
    cert, key, config = work / "cert.pem", work / "key.pem", work / "openssl.cnf"
    # A leaf certificate (not a CA: webpki refuses a CA certificate as the server's), self-signed.
    config.write_text(
        "[req]\ndistinguished_name = dn\nx509_extensions = leaf\nprompt = no\n"
        "[dn]\nCN = 127.0.0.1\n"
        "[leaf]\nsubjectAltName = IP:127.0.0.1, DNS:localhost\nbasicConstraints = critical, CA:FALSE\n"
        "keyUsage = digitalSignature\nextendedKeyUsage = serverAuth\n"
    )
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-config", str(config)],
        check=True, capture_output=True,
    )
    process = subprocess.Popen(
        die_with_parent([str(brisk_binary()), "serve", "--listen", "127.0.0.1:0", "--root", str(work / "data"),
                         "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, "--region", "us-east-1",
                         "--tls-cert", str(cert), "--tls-key", str(key), "--log-format", "off"]),
        stdout=subprocess.PIPE, text=True,
    )
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("https://127.0.0.1:"), url
        yield url, cert
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(work, ignore_errors=True)


def client(url: str, **kwargs) -> brisk.Client:
    return brisk.Client(url, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY, region="us-east-1",
                        **kwargs)


def test_every_path_over_https(tls_server, tmp_path):
    url, cert = tls_server
    c = client(url, ca_bundle=str(cert))
    c.create_bucket("tls")
    body = np.random.default_rng(7).integers(0, 256, 12 * MIB + 3, dtype=np.uint8).tobytes()
    c.put("tls", "small", body[:100_000])
    assert bytes(c.get("tls", "small")) == body[:100_000]

    source = tmp_path / "source"
    source.write_bytes(body)
    c.upload(source, "tls", "big")  # multipart: 12 MiB in 8 MiB parts
    assert bytes(c.get("tls", "big")) == body
    into = np.zeros(len(body), dtype=np.uint8)
    assert c.get_into("tls", "big", into) == len(body)
    assert into.tobytes() == body
    offsets, lengths = [0, 5 * MIB, 12 * MIB], [256 << 10, 256 << 10, 3]
    blocks = c.get_ranges("tls", "big", offsets, lengths)
    assert [bytes(b) for b in blocks] == [body[o:o + n] for o, n in zip(offsets, lengths)]
    target = tmp_path / "copy"
    assert c.download("tls", "big", target) == len(body)
    assert target.read_bytes() == body
    assert [e.key for e in c.list("tls")] == ["big", "small"]


def test_ca_bundle_from_the_environment(tls_server, monkeypatch):
    url, cert = tls_server
    monkeypatch.setenv("AWS_CA_BUNDLE", str(cert))
    c = client(url)
    c.create_bucket("tls-env")
    c.put("tls-env", "k", b"through AWS_CA_BUNDLE")
    assert bytes(c.get("tls-env", "k")) == b"through AWS_CA_BUNDLE"


def test_an_untrusted_certificate_is_refused(tls_server, monkeypatch):
    url, _ = tls_server
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)
    c = client(url)
    with pytest.raises(brisk.ConnectionFailed) as refused:
        c.get("tls", "small")
    assert "certificate" in str(refused.value).lower(), str(refused.value)
