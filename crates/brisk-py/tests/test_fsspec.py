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
from conftest import ACCESS_KEY, SECRET_KEY

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


# ----- what s3fs users call (docs/python.md, "brisk:// next to s3fs") -----------------------------


class Spy:
    """Forwards to the client and records the names of the calls made through it."""

    def __init__(self, client, fail=None):
        self._client, self.calls, self._fail = client, [], fail or {}

    def __getattr__(self, name):
        real = getattr(self._client, name)
        if not callable(real):
            return real

        def call(*args, **kwargs):
            self.calls.append(name)
            check = self._fail.get(name)
            if check is not None:
                check(*args, **kwargs)
            return real(*args, **kwargs)

        return call


def tree(fs, bucket, n_dirs=3, per_dir=4):
    """bucket/data/dN/fM and bucket/data/dN/sub/fM, plus bucket/data/top."""
    paths = {f"{bucket}/data/top": b"top"}
    for d in range(n_dirs):
        for f in range(per_dir):
            paths[f"{bucket}/data/d{d}/f{f}"] = f"{d}{f}".encode()
            paths[f"{bucket}/data/d{d}/sub/f{f}"] = f"{d}sub{f}".encode()
    fs.pipe(paths)
    return paths


def test_find_glob_walk_du_are_one_listing_and_fill_the_cache(fs, bucket):
    paths = tree(fs, bucket)
    fs.invalidate_cache()
    before = fs.client.metrics()["requests"]
    assert fs.find(f"{bucket}/data") == sorted(paths)
    assert fs.client.metrics()["requests"] - before == 1, "find is one listing without a delimiter"
    # What find listed answers info, isdir, isfile and ls below it without a request.
    before = fs.client.metrics()["requests"]
    assert fs.isdir(f"{bucket}/data/d1/sub") and fs.isfile(f"{bucket}/data/d1/sub/f2")
    assert fs.info(f"{bucket}/data/d2/f0")["size"] == 2
    assert fs.ls(f"{bucket}/data/d0", detail=False) == [f"{bucket}/data/d0/f{i}" for i in range(4)] + [
        f"{bucket}/data/d0/sub"]
    assert not fs.exists(f"{bucket}/data/d0/nope")
    assert fs.client.metrics()["requests"] == before
    fs.invalidate_cache(f"{bucket}/data/d0/sub")
    assert f"{bucket}/data/d0" not in fs.dircache and f"{bucket}/data/d1" in fs.dircache
    fs.invalidate_cache()
    before = fs.client.metrics()["requests"]
    assert fs.glob(f"{bucket}/data/**/f1") == sorted(p for p in paths if p.endswith("/f1"))
    assert fs.du(f"{bucket}/data") == sum(len(v) for v in paths.values())
    assert fs.client.metrics()["requests"] - before == 2, "glob and du are one listing each"
    walked = {root: (sorted(dirs), sorted(files)) for root, dirs, files in fs.walk(f"{bucket}/data")}
    assert walked[f"{bucket}/data"] == (["d0", "d1", "d2"], ["top"])
    assert walked[f"{bucket}/data/d2/sub"] == ([], ["f0", "f1", "f2", "f3"])
    assert fs.find(f"{bucket}/data", maxdepth=1) == [f"{bucket}/data/top"]
    assert fs.find(f"{bucket}/data", withdirs=True, detail=True)[f"{bucket}/data/d1"]["type"] == "directory"
    assert fs.glob(f"{bucket}/nothing*") == []


def test_prefixes_are_directories(fs, bucket):
    fs.pipe_file(f"{bucket}/a/b/c.txt", b"c")
    for d in (f"{bucket}/a", f"{bucket}/a/b", bucket):
        assert fs.exists(d) and fs.isdir(d) and not fs.isfile(d), d
        assert fs.info(d)["type"] == "directory"
    assert fs.isfile(f"{bucket}/a/b/c.txt") and not fs.isdir(f"{bucket}/a/b/c.txt")
    assert not fs.exists(f"{bucket}/a/b/c") and not fs.exists(f"{bucket}/a/bb")
    with pytest.raises(FileNotFoundError):
        fs.info(f"{bucket}/missing")
    with pytest.raises(FileNotFoundError):
        fs.ls(f"{bucket}/missing")
    assert not fs.exists("no-such-bucket-" + bucket)
    with pytest.raises(FileNotFoundError):
        fs.ls("no-such-bucket-" + bucket)
    # A "folder" object some tools create (a key ending in /) is not an entry of its own folder.
    fs.client.put(bucket, "marked/", b"")
    fs.pipe_file(f"{bucket}/marked/x", b"x")
    assert fs.ls(f"{bucket}/marked", detail=False) == [f"{bucket}/marked/x"]
    assert fs.find(f"{bucket}/marked") == [f"{bucket}/marked/x"]


def test_checksum_ukey_sign_modified(fs, bucket):
    import urllib.request

    path = f"{bucket}/obj"
    fs.pipe_file(path, b"one")
    first, key1 = fs.checksum(path), fs.ukey(path)
    fs.pipe_file(path, b"two")
    assert fs.checksum(path) != first and fs.ukey(path) != key1
    assert fs.checksum(path) == fs.checksum(path)
    with urllib.request.urlopen(fs.sign(path, expiration=60)) as r:
        assert r.read() == b"two"
    put = urllib.request.Request(fs.url(f"{bucket}/by-url", expires=60, client_method="put_object"),
                                 data=b"sent", method="PUT")
    with urllib.request.urlopen(put) as r:
        assert r.status == 200
    assert fs.cat_file(f"{bucket}/by-url") == b"sent"
    modified = fs.modified(path)
    assert modified.tzinfo is not None and fs.created(path) == modified
    fs.pipe_file(f"{bucket}/dir/x", b"x")
    with pytest.raises(IsADirectoryError):
        fs.modified(f"{bucket}/dir")


def test_rm_recursive_deletes_in_batches(fs, bucket, monkeypatch):
    import brisk.fsspec

    monkeypatch.setattr(brisk.fsspec, "DELETE_BATCH", 10)
    fs.pipe({f"{bucket}/many/{i:02}": b"x" for i in range(25)})
    fs.pipe_file(f"{bucket}/keep", b"k")
    spy = Spy(fs.client)
    fs.client = spy
    fs.rm(f"{bucket}/many", recursive=True)
    assert spy.calls.count("delete_many_async") + spy.calls.count("delete_many") == 3
    assert "delete_async" not in spy.calls
    assert fs.find(bucket) == [f"{bucket}/keep"]
    with pytest.raises(FileNotFoundError):
        fs.rm(f"{bucket}/many", recursive=True)


def test_mv_and_cp_are_server_side(fs, bucket):
    fs.pipe({f"{bucket}/src/a": b"a", f"{bucket}/src/sub/b": b"b"})
    spy = Spy(fs.client)
    fs.client = spy
    fs.cp_file(f"{bucket}/src/a", f"{bucket}/copy/a")
    fs.mv(f"{bucket}/src", f"{bucket}/dst", recursive=True)
    assert not any(name.startswith(("get", "download")) for name in spy.calls), spy.calls
    assert fs.find(bucket) == [f"{bucket}/copy/a", f"{bucket}/dst/a", f"{bucket}/dst/sub/b"]
    assert fs.cat(f"{bucket}/dst/sub/b") == b"b"


def test_expand_path(fs, bucket):
    tree(fs, bucket, n_dirs=2, per_dir=2)
    assert fs.expand_path(f"{bucket}/data/d*/f1") == [f"{bucket}/data/d0/f1", f"{bucket}/data/d1/f1"]
    assert f"{bucket}/data/d0/sub" in fs.expand_path(f"{bucket}/data/d0", recursive=True)
    with pytest.raises(FileNotFoundError):
        fs.expand_path(f"{bucket}/nothing*")


def test_refused_clearly(fs, server, bucket):
    fs.pipe_file(f"{bucket}/obj", b"x")
    with pytest.raises(NotImplementedError, match="appended"):
        fs.open(f"{bucket}/obj", "ab")
    with pytest.raises(NotImplementedError, match="version"):
        BriskFileSystem(server.endpoint, version_aware=True, skip_instance_cache=True)
    with pytest.raises(ValueError, match="without a bucket"):
        fs.pipe_file("", b"x")
    with pytest.raises(ValueError, match="without a bucket"):
        fs.cat_file("/")
    with pytest.raises(FileNotFoundError):
        fs.pipe_file(f"no-such-bucket-{bucket}/x", b"x")
    with pytest.raises(ValueError, match="overwrite"):
        fs.pipe_file(f"{bucket}/obj", b"x", mode="append")


def test_exclusive_creation_on_every_write_path(fs, bucket, tmp_path):
    local = tmp_path / "f"
    local.write_bytes(b"local")
    fs.put_file(str(local), f"{bucket}/put", mode="create")
    with pytest.raises(FileExistsError):
        fs.put_file(str(local), f"{bucket}/put", mode="create")
    with pytest.raises(FileExistsError):
        fs.pipe_file(f"{bucket}/put", b"x", mode="create")
    assert fs.cat_file(f"{bucket}/put") == b"local"
    # The check at open is not the only one: the completion of a multipart write is conditional
    # too, so an object created meanwhile is not overwritten.
    blob = data(12 * MiB)
    f = fs.open(f"{bucket}/raced", "xb")
    f.write(blob)
    fs.pipe_file(f"{bucket}/raced", b"first")
    with pytest.raises(FileExistsError):
        f.close()
    assert fs.cat_file(f"{bucket}/raced") == b"first"
    with fs.open(f"{bucket}/fresh", "xb") as f:
        f.write(blob)
    assert fs.cat_file(f"{bucket}/fresh") == blob


def test_interrupted_put_of_a_directory_lists_what_was_stored(fs, bucket, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for i in range(5):
        (src / f"f{i}").write_bytes(b"x" * (i + 1))
    # A file that vanishes between the listing and its upload fails as a real one would.
    (src / "gone").symlink_to(tmp_path / "does-not-exist")
    with pytest.raises(OSError) as raised:
        fs.put(str(src), f"{bucket}/dst", recursive=True)
    error = raised.value
    assert sorted(error.stored) == [f"{bucket}/dst/f{i}" for i in range(5)]
    assert [lp for lp, _ in error.failed] == [str(src / "gone")]
    assert "5 of 6 files were stored" in "\n".join(error.__notes__)
    assert fs.find(f"{bucket}/dst") == error.stored


def test_async_api_needs_no_thread_per_call(server, bucket, tmp_path):
    import asyncio
    import threading

    async def main():
        fs = BriskFileSystem(server.endpoint, key=ACCESS_KEY, secret=SECRET_KEY, region="us-east-1",
                             asynchronous=True, skip_instance_cache=True)
        threads = threading.active_count()
        await asyncio.gather(*[fs._pipe_file(f"{bucket}/a/{i}", bytes([i]) * 100) for i in range(64)])
        got = await asyncio.gather(*[fs._cat_file(f"{bucket}/a/{i}", start=10, end=12) for i in range(64)])
        assert got == [bytes([i]) * 2 for i in range(64)]
        assert await fs._cat_ranges([f"{bucket}/a/1", f"{bucket}/a/2"], [0, 98], [2, 100]) == [b"\1\1", b"\2\2"]
        assert (await fs._info(f"{bucket}/a/3"))["size"] == 100
        assert len(await fs._find(f"{bucket}/a")) == 64
        assert await fs._ls(bucket, detail=False) == [f"{bucket}/a"]
        await fs._get_file(f"{bucket}/a/5", str(tmp_path / "new" / "5"))
        await fs._put_file(str(tmp_path / "new" / "5"), f"{bucket}/b/5")
        assert await fs._cat_file(f"{bucket}/b/5") == bytes([5]) * 100
        await fs._rm(f"{bucket}/a", recursive=True)
        assert not await fs._exists(f"{bucket}/a/0")
        assert threading.active_count() == threads, "no thread was started for the calls"
        assert fs._loop is None

    asyncio.run(main())


def test_filesystem_used_before_fork_works_in_the_child(fs, bucket):
    import multiprocessing

    fs.pipe_file(f"{bucket}/obj", b"before fork")
    assert fs.ls(bucket, detail=False) == [f"{bucket}/obj"]
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()

    def child():
        try:
            fs.invalidate_cache()
            queue.put((fs.ls(bucket, detail=False), fs.cat(f"{bucket}/obj")))
        except BaseException as e:
            queue.put(repr(e))

    p = ctx.Process(target=child)
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert queue.get(timeout=10) == ([f"{bucket}/obj"], b"before fork")


def test_brisk_az_protocol_on_azurite(azurite):
    from conftest import AZURITE_ACCOUNT, AZURITE_KEY

    fs = fsspec.filesystem("brisk+az", endpoint_url=azurite.endpoint, skip_instance_cache=True,
                           client_kwargs={"azure_account": AZURITE_ACCOUNT, "azure_key": AZURITE_KEY})
    container = "fs-" + np.random.default_rng().integers(1 << 40).__format__("x")
    fs.mkdir(container)
    try:
        fs.pipe({f"{container}/d/a": b"a", f"{container}/d/e/b": b"bb"})
        assert fs.cat(f"brisk+az://{container}/d/e/b") == b"bb"
        assert fs.find(container) == [f"{container}/d/a", f"{container}/d/e/b"]
        assert fs.isdir(f"{container}/d/e") and fs.du(container) == 3
        with pytest.raises(FileExistsError):
            fs.pipe_file(f"{container}/d/a", b"x", mode="create")
        with fs.open(f"{container}/big", "wb") as f:
            f.write(data(9 * MiB))
        assert fs.cat_file(f"{container}/big", start=-3) == data(9 * MiB)[-3:]
    finally:
        fs.rm(container, recursive=True)


def test_read_buffer_hands_pyarrow_the_received_buffer(fs, bucket):
    blob = data(3 * MiB)
    fs.pipe_file(f"{bucket}/obj", blob)
    with fs.open(f"{bucket}/obj", "rb") as f:
        f.seek(100)
        small = f.read_buffer(10)
        assert isinstance(small, bytes) and small == blob[100:110]
        big = f.read_buffer(2 * MiB)
        assert isinstance(big, brisk.Buffer), "a read of a block or more is the Buffer itself"
        assert bytes(big) == blob[110 : 110 + 2 * MiB] and f.tell() == 110 + 2 * MiB
        rest = f.read_buffer(-1)
        assert bytes(rest) == blob[110 + 2 * MiB :] and f.read_buffer(5) == b""
    # pyarrow's file wrapper calls read_buffer, so what it reads is those same bytes.
    with pa.PythonFile(fs.open(f"{bucket}/obj", "rb"), mode="r") as f:
        f.seek(1000)
        assert f.read_buffer(2 * MiB).to_pybytes() == blob[1000 : 1000 + 2 * MiB]


def test_open_of_a_directory_for_reading_is_refused(fs, bucket):
    fs.pipe_file(f"{bucket}/dir/x", b"x")
    with pytest.raises(IsADirectoryError):
        fs.open(f"{bucket}/dir", "rb")
    with pytest.raises(FileNotFoundError):
        fs.open(f"{bucket}/nothing", "rb")


def test_parquet_larger_than_the_memory_budget_reads_without_waiting(server, bucket):
    # pyarrow holds the column chunks of every row group it reads until the table is decoded: a
    # reader that waited for the budget to give those Buffers back would wait forever.
    fs = BriskFileSystem(server.endpoint, key=ACCESS_KEY, secret=SECRET_KEY, region="us-east-1",
                         max_memory="8MiB", skip_instance_cache=True)
    rng = np.random.default_rng(7)
    table = pa.table({f"c{i:02}": rng.random(1 << 17) for i in range(24)})  # 24 MiB
    with fs.open(f"{bucket}/big.parquet", "wb") as f:
        pq.write_table(table, f, row_group_size=1 << 15)
    assert pq.read_table(f"{bucket}/big.parquet", filesystem=fs).equals(table)
    assert pq.read_table(f"{bucket}/big.parquet", filesystem=fs, columns=["c03", "c17"]).equals(
        table.select(["c03", "c17"]))
    assert fs.client.memory()["waiting"] == 0


def test_open_async_reads_and_writes(server, bucket):
    import asyncio

    blob = data(11 * MiB)

    async def main():
        fs = BriskFileSystem(server.endpoint, key=ACCESS_KEY, secret=SECRET_KEY, region="us-east-1",
                             asynchronous=True, skip_instance_cache=True)
        async with await fs.open_async(f"{bucket}/w", "wb", ContentType="application/x-test") as f:
            for i in range(0, len(blob), 3 * MiB):
                await f.write(blob[i : i + 3 * MiB])
        f = await fs.open_async(f"{bucket}/w", "rb")
        assert f.size == len(blob)
        f.seek(1000)
        assert await f.read(10) == blob[1000:1010]
        assert await f.read() == blob[1010:]
        await f.close()
        assert fs.client.head(bucket, "w").content_type == "application/x-test"
        with pytest.raises(FileExistsError):
            await fs.open_async(f"{bucket}/w", "xb")
        with pytest.raises(RuntimeError):
            async with await fs.open_async(f"{bucket}/aborted", "wb") as f:
                await f.write(blob)
                raise RuntimeError("stop")
        assert not await fs._exists(f"{bucket}/aborted")
        with pytest.raises(NotImplementedError):
            await fs.open_async(f"{bucket}/w", "ab")

    asyncio.run(main())
