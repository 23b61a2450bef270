"""The Azure Blob client (`brisk.Client(azure=True, ...)`) against Azurite: the same methods as for S3,
Buffers of exactly the blob's size, errors by meaning, and Microsoft's SDK reading what brisk wrote."""

from __future__ import annotations

import hashlib
import os
import uuid

import numpy
import pytest

import brisk
from conftest import AZURITE_ACCOUNT, AZURITE_KEY


def azure_client(azurite, **kwargs) -> brisk.Client:
    return brisk.Client(azurite.endpoint, azure_account=AZURITE_ACCOUNT, azure_key=AZURITE_KEY, **kwargs)


@pytest.fixture
def container(azurite):
    c = azure_client(azurite)
    name = "py-" + uuid.uuid4().hex[:12]
    c.create_bucket(name)
    yield name
    keys = [e.key for e in c.list(name)]
    if keys:
        c.delete_many(name, keys)
    c.delete_bucket(name)


def test_put_get_ranges_and_list(azurite, container, tmp_path):
    c = azure_client(azurite, max_memory="64MiB", part_size="5MiB")
    assert c.service == "azure"
    body = os.urandom(3 * 1024 * 1024 + 5)
    c.put(container, "dir/a.bin", body)
    buf = c.get(container, "dir/a.bin")
    assert len(buf) == len(body) and bytes(buf) == body
    arr = numpy.zeros(len(body), dtype=numpy.uint8)
    assert c.get_into(container, "dir/a.bin", arr) == len(body)
    assert arr.tobytes() == body
    offsets = [0, 1000, 2 * 1024 * 1024]
    got = c.get_ranges(container, "dir/a.bin", offsets, 4096)
    assert [bytes(b) for b in got] == [body[o:o + 4096] for o in offsets]
    head = c.head(container, "dir/a.bin")
    assert head.size == len(body)
    assert [e.key for e in c.list(container, "dir/")] == ["dir/a.bin"]

    # Files move in blocks (Put Block + Put Block List), and come back whole.
    src = tmp_path / "src.bin"
    big = os.urandom(12 * 1024 * 1024 + 7)
    src.write_bytes(big)
    seen = []
    c.upload(str(src), container, "big.bin", progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(big), len(big))
    dst = tmp_path / "dst.bin"
    c.download(container, "big.bin", str(dst))
    assert hashlib.sha256(dst.read_bytes()).digest() == hashlib.sha256(big).digest()


def test_errors_by_meaning_and_bad_settings(azurite, container):
    c = azure_client(azurite)
    with pytest.raises(brisk.NoSuchKey):
        c.get(container, "missing")
    with pytest.raises(brisk.NoSuchBucket):
        c.get("no-such-container", "k")
    with pytest.raises(ValueError, match="S3 setting"):
        brisk.Client(azurite.endpoint, azure=True, region="us-east-1")


def test_the_azure_sdk_reads_what_brisk_wrote_and_a_presigned_url(azurite, container):
    from azure.storage.blob import BlobClient, BlobServiceClient

    c = brisk.Client(
        azure_connection_string=(
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
            f"BlobEndpoint={azurite.endpoint};"
        )
    )
    body = os.urandom(1024 * 1024 + 3)
    c.put(container, "shared.bin", body)
    service = BlobServiceClient(account_url=azurite.endpoint, credential={"account_name": AZURITE_ACCOUNT,
                                                                           "account_key": AZURITE_KEY})
    blob = service.get_blob_client(container, "shared.bin")
    assert blob.download_blob(validate_content=True).readall() == body
    url = c.presign(container, "shared.bin", expires_in=600)
    assert BlobClient.from_blob_url(url).download_blob().readall() == body


def test_streams_write_read_and_copy_blobs(azurite, container):
    import io

    c = azure_client(azurite, part_size="5MiB")
    body = os.urandom(11 * 1024 * 1024 + 3)
    with c.open_writer(container, "w.bin", content_type="application/x-test") as f:
        for i in range(0, len(body), 1024 * 1024 + 1):
            f.write(body[i : i + 1024 * 1024 + 1])
    assert f.result.parts == 3 and f.result.size == len(body)
    assert c.head(container, "w.bin").content_type == "application/x-test"
    with c.open_reader(container, "w.bin") as r:
        assert r.read(100) == body[:100]
        assert r.seek(7 * 1024 * 1024) == 7 * 1024 * 1024
        assert r.read() == body[7 * 1024 * 1024 :]
    out = io.BytesIO()
    assert c.download_fileobj(container, "w.bin", out) == len(body)
    assert out.getvalue() == body
    assert c.upload_fileobj(io.BytesIO(body[:1000]), container, "small.bin").parts == 1
    assert bytes(c.get(container, "small.bin")) == body[:1000]
    with pytest.raises(ZeroDivisionError):
        with c.open_writer(container, "aborted.bin") as f:
            f.write(body)
            1 / 0
    with pytest.raises(brisk.NoSuchKey):
        c.head(container, "aborted.bin")


def test_if_none_match_creates_only(azurite, container, tmp_path):
    """`if_none_match="*"` on Put Blob (within a part) and on Put Block List (past it): a free name
    is stored, an existing blob raises PreconditionFailed and keeps its bytes."""
    import asyncio
    import io

    c = azure_client(azurite, part_size="5MiB")
    for size in (1000, 6 * 1024 * 1024):
        body = os.urandom(size)
        path = tmp_path / "src.bin"
        path.write_bytes(body)

        async def upload_async(key):
            return await c.upload_async(path, container, key, if_none_match="*")

        def writer(key):
            with c.open_writer(container, key, if_none_match="*") as f:
                f.write(body)
            return f.result

        ways = {
            "upload": lambda key: c.upload(path, container, key, if_none_match="*"),
            "upload_async": lambda key: asyncio.run(upload_async(key)),
            "upload_fileobj": lambda key: c.upload_fileobj(io.BytesIO(body), container, key, if_none_match="*"),
            "open_writer": writer,
        }
        for how, upload in ways.items():
            key = f"{how}-{size}"
            assert upload(key).size == size, how
            assert bytes(c.get(container, key)) == body, how
            c.put(container, key, b"there before")
            with pytest.raises(brisk.PreconditionFailed):
                upload(key)
            assert bytes(c.get(container, key)) == b"there before", how
