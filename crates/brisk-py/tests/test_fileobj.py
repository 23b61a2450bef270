"""Python file objects in and out: `open_writer` (`brisk.ObjectWriter`), `upload_fileobj`,
`download_fileobj`, against brisk serve and MinIO, with boto3 reading what brisk wrote and listing
the multipart uploads left behind (none, whatever went wrong)."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import subprocess
import sys
import textwrap
import threading
import time

import boto3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import brisk

from conftest import ACCESS_KEY, SECRET_KEY

MiB = 1024 * 1024


def data(n: int, seed: int = 7) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


@pytest.fixture
def s3(server):
    return boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


def uploads_in_progress(s3, bucket: str) -> list[str]:
    return [u["Key"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]


def no_upload_lingers(s3, bucket: str, within: float = 5.0) -> None:
    """An abort made in the background (a collected writer) lands within a moment."""
    deadline = time.monotonic() + within
    while uploads_in_progress(s3, bucket) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert uploads_in_progress(s3, bucket) == []


@pytest.mark.parametrize("size, parts", [(0, 1), (1000, 1), (8 * MiB, 1), (20 * MiB + 3, 3)])
def test_a_writer_stores_exactly_what_was_written(client, s3, bucket, size, parts):
    blob = data(size)
    with client.open_writer(bucket, "w") as f:
        assert f.writable() and not f.readable() and not f.seekable()
        # One byte, a few, more than a part at once, then the rest, from different buffer types.
        at = 0
        for step, kind in [(1, bytes), (7, bytearray), (9 * MiB + 1, memoryview), (size, np.frombuffer)]:
            piece = blob[at : at + min(step, size - at)]
            assert f.write(kind(piece) if kind is not np.frombuffer else np.frombuffer(piece, np.uint8)) == len(piece)
            at += len(piece)
        assert f.tell() == size
        assert f.result is None and not f.closed
    assert f.closed and f.tell() == size
    assert (f.result.size, f.result.parts) == (size, parts)
    got = s3.get_object(Bucket=bucket, Key="w")
    assert got["ContentLength"] == size and got["Body"].read() == blob
    assert got["ETag"] == f.result.etag
    with pytest.raises(ValueError, match="closed"):
        f.write(b"more")
    f.close()  # again: nothing happens


def test_an_exception_in_the_with_block_stores_nothing(client, s3, bucket):
    with pytest.raises(RuntimeError, match="half way"):
        with client.open_writer(bucket, "half") as f:
            f.write(data(12 * MiB))  # a part has been sent: a multipart upload exists
            raise RuntimeError("half way")
    assert f.closed and f.result is None
    with pytest.raises(brisk.NoSuchKey):
        client.head(bucket, "half")
    assert uploads_in_progress(s3, bucket) == []


def test_abort_and_an_unclosed_writer_store_nothing(client, s3, bucket):
    f = client.open_writer(bucket, "aborted")
    f.write(data(12 * MiB))
    f.abort()
    assert f.closed
    with pytest.raises(ValueError, match="closed"):
        f.write(b"x")

    f = client.open_writer(bucket, "dropped")
    f.write(data(12 * MiB))
    del f
    gc.collect()
    no_upload_lingers(s3, bucket)
    for key in ("aborted", "dropped"):
        with pytest.raises(brisk.NoSuchKey):
            client.head(bucket, key)


def test_parquet_written_by_pyarrow_into_a_writer(client, bucket):
    table = pa.table({"x": np.arange(300_000), "y": np.random.default_rng(2).random(300_000)})
    with client.open_writer(bucket, "t.parquet") as f:
        pq.write_table(table, f)
    back = pq.read_table(io.BytesIO(bytes(client.get(bucket, "t.parquet"))))
    assert back.equals(table)


class ReadOnly:
    """A stream with `read` and no `readinto` (a generator-backed reader, some decompressors)."""

    def __init__(self, blob: bytes, step: int) -> None:
        self.blob, self.at, self.step = blob, 0, step

    def read(self, n: int = -1) -> bytes:
        n = min(n, self.step)
        out = self.blob[self.at : self.at + n]
        self.at += len(out)
        return out


class KeepsTheView(io.RawIOBase):
    """A broken file object: it keeps a slice of the buffer its readinto was given."""

    def __init__(self) -> None:
        self.kept = []

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        b[:3] = b"abc"
        self.kept.append(b[:3])
        return 3


@pytest.mark.parametrize("source", ["file", "bytesio", "read-only"])
def test_upload_fileobj(client, s3, bucket, tmp_path, source):
    blob = data(13 * MiB + 11, seed=3)
    if source == "file":
        path = tmp_path / "src.bin"
        path.write_bytes(blob)
        fileobj = open(path, "rb")
    elif source == "bytesio":
        fileobj = io.BytesIO(blob)
    else:
        fileobj = ReadOnly(blob, 1 * MiB + 5)
    result = client.upload_fileobj(fileobj, bucket, "up")
    if hasattr(fileobj, "close"):
        fileobj.close()
    assert (result.size, result.parts) == (len(blob), 2)
    assert s3.get_object(Bucket=bucket, Key="up")["Body"].read() == blob


def test_upload_fileobj_refuses_what_it_cannot_use_and_stores_nothing(client, s3, bucket, tmp_path):
    path = tmp_path / "text.txt"
    path.write_text("text\n" * 1000)
    with open(path) as text, pytest.raises(TypeError, match="binary mode"):
        client.upload_fileobj(ReadOnlyText(text), bucket, "text")
    with pytest.raises(TypeError, match="readinto"):
        client.upload_fileobj(object(), bucket, "nothing")
    broken = KeepsTheView()
    with pytest.raises(BufferError, match="kept a view"):
        client.upload_fileobj(broken, bucket, "kept")
    assert bytes(broken.kept[0]) == b"abc"  # still valid memory: the block was not reused
    for key in ("text", "nothing", "kept"):
        with pytest.raises(brisk.NoSuchKey):
            client.head(bucket, key)
    assert uploads_in_progress(s3, bucket) == []


class ReadOnlyText:
    def __init__(self, f) -> None:
        self.f = f

    def read(self, n: int = -1):
        return self.f.read(n)


class ShortWrites(io.RawIOBase):
    """A raw file object that takes at most 100,000 bytes per write, as a raw file may."""

    def __init__(self) -> None:
        self.out = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        n = min(len(b), 100_000)
        self.out += memoryview(b)[:n]
        return n


@pytest.mark.parametrize("size", [0, 5, 9 * MiB + 7])
def test_download_fileobj(client, bucket, tmp_path, size):
    blob = data(size, seed=9)
    client.put(bucket, "down", blob)
    out = io.BytesIO()
    assert client.download_fileobj(bucket, "down", out) == size
    assert out.getvalue() == blob
    with open(tmp_path / "down.bin", "wb") as f:
        assert client.download_fileobj(bucket, "down", f) == size
    assert (tmp_path / "down.bin").read_bytes() == blob
    short = ShortWrites()
    assert client.download_fileobj(bucket, "down", short) == size
    assert bytes(short.out) == blob


def test_download_fileobj_of_a_missing_key(client, bucket):
    with pytest.raises(brisk.NoSuchKey):
        client.download_fileobj(bucket, "missing", io.BytesIO())


# A fresh interpreter streams 256 MiB through each call; RSS is read around the call.
STREAM = textwrap.dedent(
    """
    import json, sys
    import brisk

    def rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024

    endpoint, bucket, path, mode = sys.argv[1:5]
    client = brisk.Client(endpoint, access_key_id=sys.argv[5], secret_access_key=sys.argv[6],
                          region="us-east-1", part_size="8MiB", parts_in_flight=4)
    client.put(bucket, "warm", b"x")
    chunk = bytes(range(256)) * 4096  # 1 MiB
    before = rss()
    if mode == "writer":
        with client.open_writer(bucket, "streamed") as f:
            for _ in range(256):
                f.write(chunk)
        size = f.result.size
    elif mode == "upload_fileobj":
        with open(path, "rb") as f:
            size = client.upload_fileobj(f, bucket, "streamed").size
    else:
        with open(path, "wb") as f:
            size = client.download_fileobj(bucket, "streamed", f)
    print(json.dumps({"size": size, "growth": rss() - before}))
    """
)


@pytest.mark.parametrize("mode", ["writer", "upload_fileobj", "download_fileobj"])
def test_256_mib_streams_through_a_few_parts_of_memory(brisk_server, tmp_path, mode):
    client = brisk_server.client()
    bucket = "stream-" + mode.replace("_", "-")
    client.create_bucket(bucket)
    path = tmp_path / "256MiB.bin"
    if mode == "upload_fileobj":
        with open(path, "wb") as f:
            for i in range(32):
                f.write(data(8 * MiB, seed=i))
    if mode == "download_fileobj":
        with client.open_writer(bucket, "streamed") as f:
            for i in range(32):
                f.write(data(8 * MiB, seed=i))
    out = subprocess.run(
        [sys.executable, "-c", STREAM, brisk_server.endpoint, bucket, str(path), mode, ACCESS_KEY, SECRET_KEY],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    assert measured["size"] == 256 * MiB
    # 4 parts in flight and one filling, 8 MiB each, is 40 MiB; the rest is connections and slack.
    assert measured["growth"] < 64 * MiB, measured


def test_a_reader_reads_seeks_and_ends_like_a_file(client, bucket):
    blob = data(5 * MiB + 17, seed=11)
    client.put(bucket, "r", blob)
    before = client.metrics()["requests"]
    with client.open_reader(bucket, "r") as f:
        assert (f.size, f.readable(), f.seekable(), f.writable()) == (len(blob), True, True, False)
        assert f.read(10) == blob[:10]
        buf = bytearray(1 * MiB)
        assert f.readinto(buf) == len(buf) and buf == blob[10 : 10 + MiB]
        at = 10 + MiB
        pieces = []
        while piece := f.read(300_000):
            pieces.append(piece)
        assert b"".join(pieces) == blob[at:]
        assert f.read() == b"" and f.tell() == len(blob)
    assert f.closed
    # Read front to back in pieces of any size: one GET.
    assert client.metrics()["requests"] - before == 1

    with client.open_reader(bucket, "r") as f:
        assert f.seek(1000) == 1000 and f.read(5) == blob[1000:1005]  # forward: read through
        assert f.seek(-7, 2) == len(blob) - 7 and f.read() == blob[-7:]  # from the end
        assert f.seek(3 * MiB) == 3 * MiB and f.read(4) == blob[3 * MiB : 3 * MiB + 4]  # back
        assert f.seek(2, 1) == 3 * MiB + 6 and f.read(2) == blob[3 * MiB + 6 : 3 * MiB + 8]
        assert f.seek(len(blob) + 5) == len(blob) + 5 and f.read(10) == b""
        with pytest.raises(ValueError):
            f.seek(-1)
    with pytest.raises(ValueError, match="closed"):
        f.read(1)
    with client.open_reader(bucket, "r", offset=5 * MiB) as f:
        assert f.tell() == 5 * MiB and f.read() == blob[5 * MiB :]
    with pytest.raises(brisk.NoSuchKey):
        client.open_reader(bucket, "missing")
    with pytest.raises(brisk.InvalidRange):
        client.open_reader(bucket, "r", offset=len(blob))


def test_pandas_reads_csv_through_a_reader(client, bucket):
    import pandas as pd

    frame = pd.DataFrame({"a": np.arange(200_000), "b": np.random.default_rng(4).random(200_000)})
    client.put(bucket, "t.csv", frame.to_csv(index=False).encode())
    with client.open_reader(bucket, "t.csv") as f:
        back = pd.read_csv(f)
    pd.testing.assert_frame_equal(back, frame)


def test_fsspec_reads_front_to_back_over_one_stream(server, bucket, monkeypatch):
    import fsspec

    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    fs = fsspec.filesystem("brisk", endpoint_url=server.endpoint, skip_instance_cache=True)
    blob = data(20 * MiB + 3, seed=12)
    fs.pipe_file(f"{bucket}/seq", blob)
    before = fs.client.metrics()["requests"]
    pieces = []
    with fs.open(f"{bucket}/seq", "rb") as f:
        while piece := f.read(64 * 1024):
            pieces.append(piece)
    assert b"".join(pieces) == blob
    # A HEAD for the size, one ranged GET, then one stream for the rest: not one GET per 1 MiB block.
    assert fs.client.metrics()["requests"] - before <= 3
    with fs.open(f"{bucket}/seq", "rb") as f:  # random reads still work, and drop the stream
        f.read(2 * MiB)
        f.seek(15 * MiB)
        assert f.read(100) == blob[15 * MiB : 15 * MiB + 100]
        f.seek(1)
        big = bytearray(3 * MiB)
        assert f.readinto(big) == len(big) and big == blob[1 : 1 + 3 * MiB]


def test_uploads_store_the_content_type_given(client, s3, bucket, tmp_path):
    path = tmp_path / "page.html"
    for size in (100, 12 * MiB):  # one PUT, and multipart
        blob = data(size, seed=5)
        path.write_bytes(blob)
        client.upload(path, bucket, f"file-{size}", content_type="text/html")
        client.upload_fileobj(io.BytesIO(blob), bucket, f"fileobj-{size}", content_type="text/csv")
        with client.open_writer(bucket, f"writer-{size}", content_type="application/x-parquet") as f:
            f.write(blob)
        for key, kind in [(f"file-{size}", "text/html"), (f"fileobj-{size}", "text/csv"),
                          (f"writer-{size}", "application/x-parquet")]:
            head = s3.head_object(Bucket=bucket, Key=key)
            assert (head["ContentType"], head["ContentLength"]) == (kind, size), key


def test_uploads_store_user_metadata(client, s3, bucket, tmp_path):
    path = tmp_path / "m.bin"
    meta = {"Origin": "test", "run": "7"}
    for size in (100, 12 * MiB):
        blob = data(size, seed=6)
        path.write_bytes(blob)
        client.upload(path, bucket, f"file-{size}", metadata=meta)
        client.upload_fileobj(io.BytesIO(blob), bucket, f"fileobj-{size}", metadata=meta)
        with client.open_writer(bucket, f"writer-{size}", metadata=meta) as f:
            f.write(blob)
        client.put(bucket, f"put-{size}", blob, metadata=meta)
        for how in ("file", "fileobj", "writer", "put"):
            key = f"{how}-{size}"
            assert s3.head_object(Bucket=bucket, Key=key)["Metadata"] == {"origin": "test", "run": "7"}, key
            assert client.head(bucket, key).metadata == {"origin": "test", "run": "7"}, key
    # Headers another client stored come back on HEAD.
    s3.put_object(Bucket=bucket, Key="h", Body=b"x", CacheControl="max-age=60", ContentDisposition="inline",
                  ContentEncoding="identity", ContentLanguage="en")
    head = client.head(bucket, "h")
    assert (head.cache_control, head.content_disposition, head.content_encoding, head.content_language) == (
        "max-age=60", "inline", "identity", "en")


class Slow(io.RawIOBase):
    """A stream of `n` bytes that takes a moment per read, so that progress is reported on the way."""

    def __init__(self, blob: bytes) -> None:
        self.blob, self.at = blob, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        time.sleep(0.02)
        n = min(len(b), len(self.blob) - self.at, 1 * MiB)
        b[:n] = self.blob[self.at : self.at + n]
        self.at += n
        return n


def test_fileobj_progress(client, bucket):
    blob = data(16 * MiB + 5, seed=21)
    seen = []
    result = client.upload_fileobj(Slow(blob), bucket, "p", progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(blob), len(blob)) and result.size == len(blob)
    assert len(seen) >= 2, seen  # 17 reads of 20 ms: reports on the way
    assert all(total is None for _, total in seen[:-1])
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)

    seen.clear()

    class SlowSink(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, b) -> int:
            time.sleep(0.05)
            return len(b)

    assert client.download_fileobj(bucket, "p", SlowSink(), progress=lambda d, t: seen.append((d, t))) == len(blob)
    assert seen[-1] == (len(blob), len(blob)) and len(seen) >= 2, seen
    assert all(t == len(blob) for _, t in seen)


def test_uploads_store_the_headers_given(client, s3, bucket, tmp_path):
    headers = {"Cache-Control": "max-age=60", "content-disposition": "attachment", "Content-Language": "en",
               "Expires": "Wed, 21 Oct 2037 07:28:00 GMT"}
    path = tmp_path / "h.bin"
    for size in (100, 12 * MiB):
        blob = data(size, seed=8)
        path.write_bytes(blob)
        client.upload(path, bucket, f"file-{size}", headers=headers)
        client.upload_fileobj(io.BytesIO(blob), bucket, f"fileobj-{size}", headers=headers)
        with client.open_writer(bucket, f"writer-{size}", headers=headers) as f:
            f.write(blob)
        client.put(bucket, f"put-{size}", blob, headers=headers)
        for how in ("file", "fileobj", "writer", "put"):
            key = f"{how}-{size}"
            head = s3.head_object(Bucket=bucket, Key=key)
            assert (head["CacheControl"], head["ContentDisposition"], head["ContentLanguage"]) == (
                "max-age=60", "attachment", "en"), key
            ours = client.head(bucket, key)
            assert (ours.cache_control, ours.expires) == ("max-age=60", "Wed, 21 Oct 2037 07:28:00 GMT"), key
    for bad in ({"Content-Type": "text/plain"}, {"x-amz-meta-a": "1"}, {"Range": "bytes=0-1"}):
        with pytest.raises(ValueError):
            client.put(bucket, "refused", b"x", headers=bad)
        with pytest.raises(ValueError):
            client.open_writer(bucket, "refused", headers=bad)
    with pytest.raises(brisk.NoSuchKey):
        client.head(bucket, "refused")


# ----- asyncio ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size, parts", [(0, 1), (1000, 1), (20 * MiB + 3, 3)])
def test_an_async_writer_stores_exactly_what_was_written(client, s3, bucket, size, parts):
    blob = data(size)

    async def main():
        async with await client.open_writer_async(bucket, "w", content_type="text/csv") as f:
            assert isinstance(f, brisk.AsyncObjectWriter)
            assert f.writable() and not f.readable() and not f.seekable()
            at = 0
            for step, kind in [(1, bytes), (7, bytearray), (9 * MiB + 1, memoryview), (size, bytes)]:
                piece = blob[at : at + min(step, size - at)]
                assert await f.write(kind(piece)) == len(piece)
                at += len(piece)
            await f.flush()
            assert f.tell() == size and f.result is None and not f.closed
        return f

    f = asyncio.run(main())
    assert f.closed and (f.result.size, f.result.parts) == (size, parts)
    got = s3.get_object(Bucket=bucket, Key="w")
    assert got["Body"].read() == blob and got["ContentType"] == "text/csv"
    assert got["ETag"] == f.result.etag


def test_an_async_writer_that_fails_or_is_cancelled_stores_nothing(client, s3, bucket):
    async def main():
        with pytest.raises(RuntimeError, match="half way"):
            async with await client.open_writer_async(bucket, "half") as f:
                await f.write(data(12 * MiB))  # a part has been sent: a multipart upload exists
                raise RuntimeError("half way")
        assert f.closed and f.result is None
        with pytest.raises(ValueError, match="closed"):
            await f.write(b"more")

        f = await client.open_writer_async(bucket, "aborted")
        await f.write(data(12 * MiB))
        await f.abort()
        assert f.closed

        # A write cancelled on its way fails the writer, so close() aborts instead of storing
        # what the write may have lost (unless the write had finished before the cancel landed:
        # then close() stores all of it).
        f = await client.open_writer_async(bucket, "cancelled")
        task = asyncio.ensure_future(f.write(data(12 * MiB, seed=4)))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        try:
            await f.close()
            stored = True
        except brisk.Error as e:
            assert "cancelled" in str(e)
            stored = False
        await f.close()  # again: nothing happens

        # abort() after a cancelled write gives up without a second error.
        f = await client.open_writer_async(bucket, "cancelled-then-aborted")
        task = asyncio.ensure_future(f.write(data(12 * MiB)))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await f.abort()
        assert f.closed and f.result is None
        return stored

    stored = asyncio.run(main())
    for key in ("half", "aborted", "cancelled-then-aborted") + (() if stored else ("cancelled",)):
        with pytest.raises(brisk.NoSuchKey):
            client.head(bucket, key)
    if stored:
        assert bytes(client.get(bucket, "cancelled")) == data(12 * MiB, seed=4)
    no_upload_lingers(s3, bucket)


def test_an_async_writer_with_if_none_match(client, s3, bucket):
    async def write(key, blob):
        async with await client.open_writer_async(bucket, key, if_none_match="*") as f:
            await f.write(blob)
        return f.result

    async def main():
        for size in (100, 12 * MiB):
            blob = data(size, seed=2)
            key = f"once-{size}"
            assert (await write(key, blob)).size == size
            with pytest.raises(brisk.PreconditionFailed):
                await write(key, data(size, seed=3))
            assert bytes(await client.get_async(bucket, key)) == blob
        with pytest.raises(ValueError):
            await client.open_writer_async(bucket, "x", if_none_match="etag")

    asyncio.run(main())
    assert uploads_in_progress(s3, bucket) == []


def test_an_async_reader_reads_seeks_and_ends_like_a_file(client, bucket):
    blob = data(5 * MiB + 17, seed=11)
    client.put(bucket, "r", blob)

    async def main():
        before = client.metrics()["requests"]
        async with await client.open_reader_async(bucket, "r") as f:
            assert isinstance(f, brisk.AsyncObjectReader)
            assert (f.size, f.readable(), f.seekable(), f.writable()) == (len(blob), True, True, False)
            assert f.etag == client.head(bucket, "r").etag
            assert await f.read(10) == blob[:10]
            buf = bytearray(1 * MiB)
            assert await f.readinto(buf) == len(buf) and buf == blob[10 : 10 + MiB]
            at = 10 + MiB
            pieces = []
            while piece := await f.read(300_000):
                pieces.append(piece)
            assert b"".join(pieces) == blob[at:]
            assert await f.read() == b"" and f.tell() == len(blob)
        assert f.closed
        # Front to back in pieces of any size: one GET (and one HEAD above).
        assert client.metrics()["requests"] - before == 2

        async with await client.open_reader_async(bucket, "r") as f:
            assert f.seek(1000) == 1000 and await f.read(5) == blob[1000:1005]  # forward: read through
            assert f.seek(-7, 2) == len(blob) - 7 and await f.readall() == blob[-7:]  # from the end
            assert f.seek(3 * MiB) == 3 * MiB and await f.read(4) == blob[3 * MiB : 3 * MiB + 4]  # back
            assert f.seek(2, 1) == 3 * MiB + 6 and await f.read(2) == blob[3 * MiB + 6 : 3 * MiB + 8]
            assert f.seek(len(blob) + 5) == len(blob) + 5 and await f.read(10) == b""
            with pytest.raises(ValueError):
                f.seek(-1)
        with pytest.raises(ValueError, match="closed"):
            f.read(1)
        async with await client.open_reader_async(bucket, "r", offset=5 * MiB) as f:
            assert f.tell() == 5 * MiB and await f.read() == blob[5 * MiB :]
        with pytest.raises(brisk.NoSuchKey):
            await client.open_reader_async(bucket, "missing")
        with pytest.raises(brisk.InvalidRange):
            await client.open_reader_async(bucket, "r", offset=len(blob))
        # A cancelled read drops the response (unless it had finished already); the next read
        # goes on from the position, which counts only what arrived.
        async with await client.open_reader_async(bucket, "r") as f:
            assert await f.read(100) == blob[:100]
            task = asyncio.ensure_future(f.read(4 * MiB))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await f.close()  # waits for the cancelled task to let go of the reader
        async with await client.open_reader_async(bucket, "r") as f:
            assert await f.read(100) == blob[:100]
            task = asyncio.ensure_future(f.read(4 * MiB))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for _ in range(100):  # the task is dropped on the runtime
                try:
                    at = f.tell()
                    break
                except RuntimeError:
                    await asyncio.sleep(0.01)
            assert at in (100, 100 + 4 * MiB)
            assert await f.read(1000) == blob[at : at + 1000]

    asyncio.run(main())


@pytest.mark.parametrize("source", ["file", "bytesio", "read-only"])
def test_upload_fileobj_async(client, s3, bucket, tmp_path, source):
    blob = data(13 * MiB + 11, seed=3)
    if source == "file":
        path = tmp_path / "src.bin"
        path.write_bytes(blob)
        fileobj = open(path, "rb")
    elif source == "bytesio":
        fileobj = io.BytesIO(blob)
    else:
        fileobj = ReadOnly(blob, 1 * MiB + 5)

    async def main():
        return await client.upload_fileobj_async(fileobj, bucket, "up", content_type="text/plain",
                                                 metadata={"a": "1"}, headers={"Cache-Control": "no-cache"})

    result = asyncio.run(main())
    if hasattr(fileobj, "close"):
        fileobj.close()
    assert (result.size, result.parts) == (len(blob), 2)
    got = s3.get_object(Bucket=bucket, Key="up")
    assert got["Body"].read() == blob
    assert (got["ContentType"], got["Metadata"], got["CacheControl"]) == ("text/plain", {"a": "1"}, "no-cache")


def test_upload_fileobj_async_refusals_failures_and_progress(client, s3, bucket):
    blob = data(16 * MiB + 5, seed=21)
    seen = []
    loop_thread = threading.get_ident()

    async def main():
        result = await client.upload_fileobj_async(
            Slow(blob), bucket, "p", progress=lambda done, total: seen.append((done, total, threading.get_ident())))
        assert result.size == len(blob)
        with pytest.raises(TypeError, match="readinto"):
            client.upload_fileobj_async(object(), bucket, "nothing")
        broken = KeepsTheView()
        with pytest.raises(BufferError, match="kept a view"):
            await client.upload_fileobj_async(broken, bucket, "kept")
        assert bytes(broken.kept[0]) == b"abc"

        def boom(done, total):
            raise RuntimeError("stop here")

        with pytest.raises(RuntimeError, match="stop here"):
            await client.upload_fileobj_async(Slow(blob), bucket, "stopped", progress=boom)
        # Create-only, as upload_fileobj.
        with pytest.raises(brisk.PreconditionFailed):
            await client.upload_fileobj_async(io.BytesIO(blob), bucket, "p", if_none_match="*")
        assert (await client.upload_fileobj_async(io.BytesIO(blob[:10]), bucket, "new", if_none_match="*")).size == 10

    asyncio.run(main())
    assert seen[-1][:2] == (len(blob), len(blob)) and len(seen) >= 2, seen
    assert all(total is None for _, total, _ in seen[:-1])
    assert all(thread != loop_thread for _, _, thread in seen)
    assert s3.get_object(Bucket=bucket, Key="p")["Body"].read() == blob
    for key in ("nothing", "kept", "stopped"):
        with pytest.raises(brisk.NoSuchKey):
            client.head(bucket, key)
    assert uploads_in_progress(s3, bucket) == []


@pytest.mark.parametrize("size", [0, 5, 9 * MiB + 7])
def test_download_fileobj_async(client, bucket, tmp_path, size):
    blob = data(size, seed=9)
    client.put(bucket, "down", blob)
    seen = []

    async def main():
        out = io.BytesIO()
        assert await client.download_fileobj_async(bucket, "down", out, progress=lambda d, t: seen.append((d, t))) == size
        assert out.getvalue() == blob
        with open(tmp_path / "down.bin", "wb") as f:
            assert await client.download_fileobj_async(bucket, "down", f) == size
        short = ShortWrites()
        assert await client.download_fileobj_async(bucket, "down", short) == size
        assert bytes(short.out) == blob
        with pytest.raises(brisk.NoSuchKey):
            await client.download_fileobj_async(bucket, "missing", io.BytesIO())
        with pytest.raises(TypeError, match="write"):
            client.download_fileobj_async(bucket, "down", object())

    asyncio.run(main())
    assert (tmp_path / "down.bin").read_bytes() == blob
    assert seen[-1] == (size, size)


def test_the_loop_runs_while_async_file_calls_wait(client, bucket):
    """While upload_fileobj_async and download_fileobj_async run, the event loop's thread is free:
    another coroutine ticks on it meanwhile."""
    blob = data(16 * MiB + 5, seed=22)
    ticks = 0

    async def ticker(stop):
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    async def main():
        stop = asyncio.Event()
        tick = asyncio.ensure_future(ticker(stop))
        await client.upload_fileobj_async(Slow(blob), bucket, "slow")
        stop.set()
        await tick

    asyncio.run(main())
    assert ticks > 10, ticks
