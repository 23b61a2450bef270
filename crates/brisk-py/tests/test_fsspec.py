"""`brisk://` through fsspec, pandas and pyarrow, against brisk serve and MinIO."""

from __future__ import annotations

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import brisk
from brisk.fsspec import BriskFileSystem

MiB = 1024 * 1024


@pytest.fixture
def fs(server, monkeypatch):
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return fsspec.filesystem("brisk", endpoint_url=server.endpoint, skip_instance_cache=True)


def data(n: int) -> bytes:
    return np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8).tobytes()


def test_registered_protocol(fs):
    assert isinstance(fs, BriskFileSystem)


def test_cat_file_and_ranges(fs, bucket):
    blob = data(3 * MiB)
    fs.pipe_file(f"{bucket}/obj", blob)
    assert fs.cat_file(f"brisk://{bucket}/obj") == blob
    assert fs.cat_file(f"{bucket}/obj", start=10, end=100) == blob[10:100]
    assert fs.cat_file(f"{bucket}/obj", start=-50) == blob[-50:]
    with pytest.raises(FileNotFoundError):
        fs.cat_file(f"{bucket}/missing")


def test_cat_ranges_is_one_batch(fs, bucket, monkeypatch):
    blob = data(8 * MiB)
    fs.pipe_file(f"{bucket}/obj", blob)
    calls = []
    real = fs.client.get_ranges
    monkeypatch.setattr(fs, "client", type("Spy", (), {})())
    fs.client.get_ranges = lambda *a, **k: calls.append(a) or real(*a, **k)
    starts = [i * 256 * 1024 for i in range(32)][::-1]
    ends = [s + 1000 for s in starts]
    out = fs.cat_ranges([f"{bucket}/obj"] * 32, starts, ends)
    assert out == [blob[s:e] for s, e in zip(starts, ends)]
    assert len(calls) == 1, "all ranges of a bucket go in one get_ranges batch"


def test_cat_ranges_returns_errors_in_place(fs, bucket):
    fs.pipe_file(f"{bucket}/obj", b"0123456789")
    out = fs.cat_ranges([f"{bucket}/obj", f"{bucket}/missing"], [0, 0], [4, 4])
    assert out[0] == b"0123" and isinstance(out[1], FileNotFoundError)


def test_open_read_seek_readinto(fs, bucket):
    blob = data(5 * MiB)
    fs.pipe_file(f"{bucket}/obj", blob)
    with fs.open(f"{bucket}/obj", "rb") as f:
        f.seek(1000)
        assert f.read(10) == blob[1000:1010]
        # The read-ahead after a small random read is bounded by the block size.
        assert len(f.cache.cache) <= f.blocksize + 10
        target = bytearray(2 * MiB)
        f.seek(100)
        assert f.readinto(target) == len(target)
        assert target == blob[100 : 100 + len(target)]
        assert f.tell() == 100 + len(target)


def test_write_mode_above_the_multipart_threshold(fs, bucket):
    blob = data(20 * MiB)
    with fs.open(f"{bucket}/written", "wb") as f:
        for i in range(0, len(blob), 3 * MiB):
            f.write(blob[i : i + 3 * MiB])
    assert fs.info(f"{bucket}/written")["size"] == len(blob)
    assert fs.cat_file(f"{bucket}/written") == blob


def test_ls_info_rm_mkdir(fs, bucket, tmp_path):
    fs.pipe_file(f"{bucket}/dir/a", b"a")
    fs.pipe_file(f"{bucket}/top", b"top")
    names = sorted(fs.ls(bucket, detail=False))
    assert names == [f"{bucket}/dir", f"{bucket}/top"]
    assert fs.info(f"{bucket}/dir")["type"] == "directory"
    assert fs.info(f"{bucket}/top")["size"] == 3
    assert fs.exists(f"{bucket}/top") and not fs.exists(f"{bucket}/nope")
    with pytest.raises(FileNotFoundError):
        fs.info(f"{bucket}/nope")
    local = tmp_path / "f.bin"
    local.write_bytes(b"local bytes")
    fs.put_file(str(local), f"{bucket}/put")
    fs.get_file(f"{bucket}/put", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == b"local bytes"
    fs.cp_file(f"{bucket}/put", f"{bucket}/copied")
    assert fs.cat_file(f"{bucket}/copied") == b"local bytes"
    fs.rm(f"{bucket}/dir", recursive=True)
    fs.rm_file(f"{bucket}/top")
    assert sorted(fs.ls(bucket, detail=False)) == [f"{bucket}/copied", f"{bucket}/put"]
    new = bucket[:-1] + "z"
    fs.mkdir(new)
    assert new in fs.ls("", detail=False)
    fs.rmdir(new)


def test_parquet_through_pandas_and_pyarrow(fs, server, bucket):
    df = pd.DataFrame({"x": np.arange(100_000), "y": np.random.default_rng(1).random(100_000)})
    path = f"brisk://{bucket}/table.parquet"
    df.to_parquet(path, storage_options={"endpoint_url": server.endpoint})
    back = pd.read_parquet(path, storage_options={"endpoint_url": server.endpoint})
    pd.testing.assert_frame_equal(back, df)
    table = pq.read_table(f"{bucket}/table.parquet", filesystem=fs)
    assert table.equals(pa.Table.from_pandas(df, preserve_index=False))


def test_content_types_as_s3fs_sets_them(fs, bucket, tmp_path):
    page = tmp_path / "page.html"
    page.write_bytes(b"<p>hi</p>")
    fs.put_file(str(page), f"{bucket}/guessed.html")
    fs.put_file(str(page), f"{bucket}/given", ContentType="text/plain")
    fs.pipe_file(f"{bucket}/piped", b"{}", ContentType="application/json")
    with fs.open(f"{bucket}/opened", "wb", ContentType="text/csv") as f:
        f.write(b"a,b\n1,2\n")
    client = fs.client
    assert client.head(bucket, "guessed.html").content_type == "text/html"
    assert client.head(bucket, "given").content_type == "text/plain"
    assert client.head(bucket, "piped").content_type == "application/json"
    assert client.head(bucket, "opened").content_type == "text/csv"


def test_get_and_put_report_to_fsspec_callbacks(fs, bucket, tmp_path):
    from fsspec.callbacks import Callback

    class Seen(Callback):
        def __init__(self):
            super().__init__()
            self.updates = []

        def call(self, *args, **kwargs):
            self.updates.append((self.value, self.size))

    blob = data(9 * MiB + 1)
    local = tmp_path / "up.bin"
    local.write_bytes(blob)
    up = Seen()
    fs.put_file(str(local), f"{bucket}/cb", callback=up)
    down = Seen()
    fs.get_file(f"{bucket}/cb", str(tmp_path / "down.bin"), callback=down)
    assert (tmp_path / "down.bin").read_bytes() == blob
    for seen in (up, down):
        assert seen.updates and seen.updates[-1] == (len(blob), len(blob)), seen.updates
