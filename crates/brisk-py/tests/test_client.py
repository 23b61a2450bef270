"""Every call of `brisk.Client` against brisk serve and MinIO, errors included."""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import io
import mmap
import os
import threading
import time
import urllib.request

import boto3
import numpy as np
import pytest

import brisk

from conftest import ACCESS_KEY, SECRET_KEY

MiB = 1024 * 1024


def payload(n: int, seed: int = 1) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


# ----- get / Buffer ---------------------------------------------------------------------------


def test_get_returns_a_buffer_over_the_object(client, bucket):
    data = payload(3 * MiB + 17)
    client.put(bucket, "obj", data)
    buf = client.get(bucket, "obj")
    assert isinstance(buf, brisk.Buffer)
    assert len(buf) == len(data)
    assert bytes(buf) == data
    assert buf == data
    view = memoryview(buf)
    assert view.readonly and view.nbytes == len(data) and view.format == "B"
    assert view[100:200].tobytes() == data[100:200]
    arr = np.frombuffer(buf, dtype=np.uint8)
    assert arr.nbytes == len(data) and not arr.flags.writeable
    # numpy sees the Rust memory itself, not a copy.
    assert arr.ctypes.data == np.frombuffer(buf, dtype=np.uint8).ctypes.data


def test_empty_object(client, bucket):
    client.put(bucket, "empty", b"")
    buf = client.get(bucket, "empty")
    assert len(buf) == 0 and bytes(buf) == b""
    assert client.get_into(bucket, "empty", bytearray(0)) == 0


def test_buffer_release_refuses_while_exported(client, bucket):
    client.put(bucket, "k", b"x" * 1000)
    buf = client.get(bucket, "k")
    view = memoryview(buf)
    with pytest.raises(BufferError):
        buf.release()
    view.release()
    buf.release()
    assert buf.released and len(buf) == 0


def test_buffer_is_read_only(client, bucket):
    client.put(bucket, "k", b"abc")
    buf = client.get(bucket, "k")
    with pytest.raises((BufferError, TypeError)):
        memoryview(buf)[0] = 1  # type: ignore[index]


# ----- get_into -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["bytearray", "numpy", "memoryview", "mmap", "numpy-float32"])
def test_get_into_fills_any_writable_buffer(client, bucket, kind):
    data = payload(2 * MiB)
    client.put(bucket, "obj", data)
    if kind == "bytearray":
        target = bytearray(len(data) + 10)
    elif kind == "numpy":
        target = np.zeros(len(data), dtype=np.uint8)
    elif kind == "memoryview":
        target = memoryview(bytearray(len(data)))
    elif kind == "mmap":
        target = mmap.mmap(-1, len(data))
    else:
        target = np.zeros(len(data) // 4, dtype=np.float32)
    n = client.get_into(bucket, "obj", target)
    assert n == len(data)
    assert bytes(memoryview(target).cast("B")[:n]) == data


def test_get_into_a_range(client, bucket):
    data = payload(MiB)
    client.put(bucket, "obj", data)
    buf = bytearray(4096)
    assert client.get_into(bucket, "obj", buf, offset=1000) == 4096
    assert buf == data[1000:5096]
    # At the end of the object: fewer bytes.
    assert client.get_into(bucket, "obj", buf, offset=len(data) - 10) == 10
    assert buf[:10] == data[-10:]
    # A length shorter than the buffer.
    assert client.get_into(bucket, "obj", buf, offset=5, length=7) == 7
    assert buf[:7] == data[5:12]


def test_get_into_refuses_read_only_and_bad_buffers(client, bucket):
    client.put(bucket, "obj", b"12345678")
    before = client.metrics()["requests"]
    with pytest.raises(ValueError, match="read-only"):
        client.get_into(bucket, "obj", b"\0" * 100)
    with pytest.raises(ValueError, match="read-only"):
        client.get_into(bucket, "obj", memoryview(bytearray(100)).toreadonly())
    with pytest.raises(ValueError, match="contiguous"):
        client.get_into(bucket, "obj", np.zeros((10, 10), dtype=np.uint8)[:, 1])
    with pytest.raises(ValueError, match="buffer protocol"):
        client.get_into(bucket, "obj", "not a buffer")
    with pytest.raises(ValueError, match="larger than the buffer"):
        client.get_into(bucket, "obj", bytearray(4), offset=1, length=5)
    assert client.metrics()["requests"] == before, "no request for a buffer refused up front"


def test_get_into_too_small_buffer_is_a_value_error_and_writes_nothing(client, bucket):
    client.put(bucket, "obj", b"x" * 100)
    target = bytearray(b"\xee" * 50)
    with pytest.raises(brisk.BufferTooSmall) as info:
        client.get_into(bucket, "obj", target)
    assert isinstance(info.value, ValueError)
    assert "100" in str(info.value)
    assert target == bytearray(b"\xee" * 50)


# ----- ranges -----------------------------------------------------------------------------------


def test_get_range(client, bucket):
    data = payload(MiB)
    client.put(bucket, "obj", data)
    assert bytes(client.get_range(bucket, "obj", 10, 100)) == data[10:110]
    tail = client.get_range(bucket, "obj", len(data) - 5, 100)
    assert len(tail) == 5 and bytes(tail) == data[-5:]
    with pytest.raises(brisk.InvalidRange) as info:
        client.get_range(bucket, "obj", len(data) + 1, 10)
    assert info.value.code == "InvalidRange" and info.value.status == 416


def test_get_ranges_returns_buffers_in_order(client, bucket):
    data = payload(4 * MiB)
    client.put(bucket, "obj", data)
    rng = np.random.default_rng(7)
    offsets = [int(o) for o in rng.integers(0, len(data) - 65536, 100)]
    lengths = [int(n) for n in rng.integers(1, 65536, 100)]
    bufs = client.get_ranges(bucket, "obj", offsets, lengths, queue_depth=16)
    assert len(bufs) == 100
    for buf, o, n in zip(bufs, offsets, lengths):
        assert bytes(buf) == data[o : o + n]


def test_get_ranges_into_one_array(client, bucket):
    data = payload(4 * MiB)
    client.put(bucket, "obj", data)
    offsets = list(range(0, 4 * MiB, 256 * 1024))[::-1]
    into = np.zeros(len(offsets) * 256 * 1024, dtype=np.uint8)
    n = client.get_ranges(bucket, "obj", offsets, 256 * 1024, into=into)
    assert n == into.nbytes
    expected = b"".join(data[o : o + 256 * 1024] for o in offsets)
    assert into.tobytes() == expected


def test_get_ranges_of_several_keys(client, bucket):
    a, b = payload(1000, 1), payload(1000, 2)
    client.put(bucket, "a", a)
    client.put(bucket, "b", b)
    bufs = client.get_ranges(bucket, ["a", "b", "a"], [0, 10, 500], [10, 20, 30])
    assert [bytes(x) for x in bufs] == [a[:10], b[10:30], a[500:530]]


def test_get_ranges_reads_whole_small_objects_of_many_keys(client, bucket):
    """A data loader's batch of whole objects: offset 0 and a length above the largest; each range
    stops at its object's end, so each Buffer is exactly its object."""
    objects = {f"img/{i}": payload(1000 + 700 * i, i) for i in range(5)}
    for key, data in objects.items():
        client.put(bucket, key, data)
    keys = list(objects)
    bufs = client.get_ranges(bucket, keys, [0] * len(keys), 1 << 20)
    assert [bytes(b) for b in bufs] == [objects[k] for k in keys]


def test_get_ranges_names_the_failing_indices(client, bucket):
    data = payload(10000)
    client.put(bucket, "obj", data)
    with pytest.raises(brisk.RangeErrors) as info:
        client.get_ranges(bucket, ["obj", "missing", "obj", "obj"], [0, 0, 20000, 100], [10, 10, 10, 10])
    err = info.value
    assert set(err.errors) == {1, 2}
    assert isinstance(err.errors[1], brisk.NoSuchKey)
    assert isinstance(err.errors[2], brisk.InvalidRange)
    assert "1, 2" in str(err)
    assert bytes(err.results[0]) == data[:10] and bytes(err.results[3]) == data[100:110]
    assert err.results[1] is None and err.results[2] is None


def test_get_ranges_into_says_when_a_range_was_short(client, bucket):
    client.put(bucket, "obj", b"0123456789")
    into = bytearray(20)
    with pytest.raises(brisk.RangeErrors) as info:
        client.get_ranges(bucket, "obj", [0, 5], 10, into=into)
    assert set(info.value.errors) == {1}
    assert info.value.results[0] == 10


def test_get_ranges_argument_errors(client, bucket):
    with pytest.raises(ValueError, match="holds 10 bytes"):
        client.get_ranges(bucket, "obj", [0, 10], 10, into=bytearray(10))
    with pytest.raises(ValueError, match="read-only"):
        client.get_ranges(bucket, "obj", [0], 10, into=b"\0" * 10)
    with pytest.raises(ValueError, match="lengths"):
        client.get_ranges(bucket, "obj", [0, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="queue_depth"):
        client.get_ranges(bucket, "obj", [0], 1, queue_depth=0)


# ----- get_many, iter_many ----------------------------------------------------------------------


def mixed_size(i: int) -> int:
    return [0, 1 + i, 4096 * (i % 7) + 3, 65536 + i, MiB + 17 * i, 300_000 + i][i % 6]


def test_get_many_reads_every_byte_and_reports_missing_keys_in_place(server, bucket):
    client = server.client(max_memory="512MiB", kept_buffers=0)
    objects = {f"obj/{i:03}": payload(mixed_size(i), i) for i in range(300)}
    for key, data in objects.items():
        client.put(bucket, key, data)
    keys = list(objects)
    for i in range(0, 300, 37):
        keys.insert(i, f"missing/{i}")
    results = client.get_many(bucket, keys, queue_depth=16)
    assert len(results) == len(keys)
    for key, result in zip(keys, results):
        if key.startswith("missing/"):
            assert isinstance(result, brisk.NoSuchKey), (key, result)
        else:
            assert isinstance(result, brisk.Buffer), (key, result)
            assert len(result) == len(objects[key]) and result == objects[key], key
    assert client.metrics()["connections_opened"] <= 16
    del results, result
    assert client.memory()["reserved"] == 0


def test_get_many_takes_bucket_key_pairs_across_buckets(server, client, bucket):
    other = "t-" + bucket[2:][::-1]
    client.create_bucket(other)
    try:
        client.put(bucket, "same", b"first")
        client.put(other, "same", b"second")
        results = client.get_many(None, [(bucket, "same"), (other, "same"), (other, "nope")])
        assert bytes(results[0]) == b"first" and bytes(results[1]) == b"second"
        assert isinstance(results[2], brisk.NoSuchKey)
        # Mixed: str keys are of `bucket`.
        results = client.get_many(bucket, ["same", (other, "same")], queue_depth=1)
        assert [bytes(r) for r in results] == [b"first", b"second"]
    finally:
        client.delete_many(other, ["same"])
        client.delete_bucket(other)


def test_get_many_argument_errors(client, bucket):
    with pytest.raises(ValueError, match="queue_depth"):
        client.get_many(bucket, ["a"], queue_depth=0)
    with pytest.raises(ValueError, match="no bucket"):
        client.get_many(None, ["a"])
    with pytest.raises(TypeError, match="keys must be"):
        client.get_many(bucket, [b"a"])
    with pytest.raises(ValueError, match="queue_depth"):
        client.iter_many(bucket, ["a"], queue_depth=0)
    assert client.get_many(bucket, []) == []
    assert list(client.iter_many(bucket, [])) == []


def test_get_many_reads_a_key_given_twice_once(server, client, bucket):
    client.put(bucket, "a", b"first")
    client.put(bucket, "b", b"second")
    before = client.metrics()["requests"]
    results = client.get_many(bucket, ["a", "b", "a", (bucket, "a"), "nope", "nope"])
    assert client.metrics()["requests"] - before == 3  # a, b and nope, once each
    assert [bytes(r) for r in results[:4]] == [b"first", b"second", b"first", b"first"]
    assert results[0] is results[2] is results[3]
    assert isinstance(results[4], brisk.NoSuchKey) and results[4] is results[5]
    into = bytearray(64)
    before = client.metrics()["requests"]
    places = client.get_many(bucket, ["b", "a", "b"], into=into)
    assert client.metrics()["requests"] - before == 2
    assert places[0] == places[2] and places[0][1] == 6
    assert sum(n for _, n in set(places)) == 11  # each object placed once
    assert bytes(into[places[1][0]: places[1][0] + 5]) == b"first"


def test_get_many_gives_an_object_larger_than_the_budget_its_error(server, bucket):
    client = server.client(max_memory="1MiB", kept_buffers=0)
    client.put(bucket, "big", payload(2 * MiB))
    client.put(bucket, "small", payload(1000))
    results = client.get_many(bucket, ["small", "big", "small", "missing", "small"], queue_depth=1)
    assert [type(r) for r in results] == [
        brisk.Buffer, brisk.MemoryBudgetExceeded, brisk.Buffer, brisk.NoSuchKey, brisk.Buffer,
    ]
    assert all(bytes(results[i]) == payload(1000) for i in (0, 2, 4))


def test_get_many_fails_the_objects_past_the_budget_instead_of_waiting(server, bucket):
    """The list keeps every object: the ones that would not fit beside the others are errors in
    place, where waiting for memory only the list would free would never end."""
    client = server.client(max_memory="3MiB", kept_buffers=0)
    data = payload(900 * 1024)
    for i in range(5):
        client.put(bucket, f"k{i}", data)
    results = client.get_many(bucket, [f"k{i}" for i in range(5)], queue_depth=4)
    buffers = [r for r in results if isinstance(r, brisk.Buffer)]
    refused = [r for r in results if isinstance(r, brisk.MemoryBudgetExceeded)]
    assert (len(buffers), len(refused)) == (3, 2)
    assert all(b == data for b in buffers)
    assert all("iter_many" in str(r) and "into=" in str(r) for r in refused), refused


def test_get_many_into_one_buffer_back_to_back(server, bucket):
    client = server.client(max_memory="4MiB", kept_buffers=0)  # smaller than what is read
    objects = {f"obj/{i:02}": payload(mixed_size(i), i) for i in range(40)}
    for key, data in objects.items():
        client.put(bucket, key, data)
    keys = list(objects) + ["missing"]
    total = sum(len(d) for d in objects.values())
    into = np.zeros(total, dtype=np.uint8)
    results = client.get_many(bucket, keys, queue_depth=8, into=into)
    assert isinstance(results[-1], brisk.NoSuchKey)
    places = results[:-1]
    regions = sorted((o, o + n) for o, n in places if n)
    assert all(a[1] <= b[0] for a, b in zip(regions, regions[1:]))  # no two objects overlap
    for key, (offset, length) in zip(objects, places):
        assert length == len(objects[key])
        assert into[offset : offset + length].tobytes() == objects[key], key
    assert sum(n for _, n in places) == total
    assert client.memory()["reserved"] == 0
    # Too little room: the objects that do not fit are BufferTooSmall in place.
    small = bytearray(3 * MiB)
    results = client.get_many(bucket, [k for k in objects if len(objects[k]) > MiB], into=small)
    fitted = [r for r in results if isinstance(r, tuple)]
    assert fitted and all(isinstance(r, (tuple, brisk.BufferTooSmall)) for r in results)
    assert sum(n for _, n in fitted) <= len(small)
    with pytest.raises(ValueError, match="read-only"):
        client.get_many(bucket, keys, into=b"\0" * 10)

    async def main():
        out = bytearray(total)
        results = await client.get_many_async(bucket, list(objects), into=out)
        return out, results

    out, results = asyncio.run(main())
    for key, (offset, length) in zip(objects, results):
        assert out[offset : offset + length] == objects[key]


def test_iter_many_holds_at_most_queue_depth_objects_and_takes_keys_lazily(server, bucket):
    client = server.client(max_memory="256MiB", kept_buffers=0)
    size = 200_000
    data = payload(size)
    for i in range(20):
        client.put(bucket, f"k{i}", data)
    taken = 0

    def keys():  # a listing of a million keys, 20 of them distinct
        nonlocal taken
        for i in range(1_000_000):
            taken += 1
            yield f"k{i % 20}"

    depth = 4
    held = []
    seen = set()
    it = client.iter_many(bucket, keys(), queue_depth=depth)
    for n, (index, key, result) in enumerate(it):
        assert key == f"k{index % 20}" and index not in seen
        seen.add(index)
        assert isinstance(result, brisk.Buffer) and result == data
        held.append(result)
        time.sleep(0.02)  # a slow consumer: the reads it left room for finish meanwhile
        assert taken <= len(held) + depth
        assert client.memory()["reserved"] <= (len(held) + depth) * size
        if n == 30:
            break
    it.close()
    assert taken <= 31 + depth
    assert client.metrics()["connections_opened"] <= depth
    del held, result
    assert client.memory()["reserved"] == 0


def test_iter_many_yields_errors_in_place_at_queue_depth_one(client, bucket):
    client.put(bucket, "a", b"aa")
    client.put(bucket, "b", b"bbb")
    out = list(client.iter_many(bucket, iter(["a", "nope", (bucket, "b")]), queue_depth=1))
    assert [(i, k) for i, k, _ in out] == [(0, "a"), (1, "nope"), (2, (bucket, "b"))]
    assert bytes(out[0][2]) == b"aa" and bytes(out[2][2]) == b"bbb"
    assert isinstance(out[1][2], brisk.NoSuchKey)
    assert client.metrics()["connections_opened"] <= 1 + 1  # the puts' connection, kept


def test_get_many_async(client, bucket):
    client.put(bucket, "a", b"async")

    async def main():
        return await client.get_many_async(bucket, ["a", "missing", "a"], queue_depth=2)

    results = asyncio.run(main())
    assert bytes(results[0]) == b"async" and bytes(results[2]) == b"async"
    assert isinstance(results[1], brisk.NoSuchKey)


def test_iter_many_async_yields_as_reads_complete_and_takes_keys_lazily(server, bucket):
    client = server.client(max_memory="256MiB", kept_buffers=0)
    size = 100_000
    data = payload(size)
    for i in range(10):
        client.put(bucket, f"k{i}", data)
    taken = 0

    def keys():
        nonlocal taken
        for i in range(1_000_000):
            taken += 1
            yield f"k{i % 10}" if i % 9 else f"missing{i}"

    async def main():
        got = []
        it = client.iter_many_async(bucket, keys(), queue_depth=3)
        async for index, key, result in it:
            got.append((index, key, result))
            assert taken <= len(got) + 3
            await asyncio.sleep(0.01)
            if len(got) == 25:
                break
        it.close()
        with pytest.raises(StopAsyncIteration):
            await it.__anext__()
        return got

    got = asyncio.run(main())
    for index, key, result in got:
        if index % 9 == 0:
            assert key == f"missing{index}" and isinstance(result, brisk.NoSuchKey)
        else:
            assert key == f"k{index % 10}" and result == data
    assert taken <= 25 + 3
    assert client.metrics()["connections_opened"] <= 3
    del got, result
    assert client.memory()["reserved"] == 0

    async def everything():
        return [(i, bytes(r)) async for i, _, r in client.iter_many_async(bucket, ["k1", "k2"], queue_depth=1)]

    assert sorted(asyncio.run(everything())) == [(0, data), (1, data)]


# ----- head, put, delete, copy, list, presign, buckets -----------------------------------------


def test_head(client, bucket):
    client.put(bucket, "obj", b"hello", content_type="text/plain")
    meta = client.head(bucket, "obj")
    assert meta.size == 5
    assert meta.content_type == "text/plain"
    assert meta.etag == '"' + hashlib.md5(b"hello").hexdigest() + '"'
    assert meta.last_modified is not None and meta.last_modified.tzinfo is not None
    assert abs(time.time() - meta.last_modified.timestamp()) < 600


def test_put_from_any_buffer(client, bucket):
    arr = np.arange(1000, dtype=np.float64)
    result = client.put(bucket, "arr", arr)
    assert result.etag == '"' + hashlib.md5(arr.tobytes()).hexdigest() + '"'
    assert bytes(client.get(bucket, "arr")) == arr.tobytes()
    client.put(bucket, "ba", bytearray(b"abc"))
    client.put(bucket, "mv", memoryview(b"xyzw")[1:3])
    assert bytes(client.get(bucket, "mv")) == b"yz"
    # A Buffer goes back up without passing through bytes.
    client.put(bucket, "again", client.get(bucket, "arr"))
    assert bytes(client.get(bucket, "again")) == arr.tobytes()
    with pytest.raises(ValueError, match="buffer protocol"):
        client.put(bucket, "bad", "a str is not bytes")


def test_put_if_none_match(client, bucket):
    client.put(bucket, "once", b"1", if_none_match="*")
    with pytest.raises(brisk.PreconditionFailed):
        client.put(bucket, "once", b"2", if_none_match="*")
    with pytest.raises(ValueError):
        client.put(bucket, "once", b"2", if_none_match="etag")


@pytest.mark.parametrize("signing", ["signed", "unsigned"])
@pytest.mark.parametrize("size", [1000, 12 * MiB])  # one PUT, and a multipart upload of 8 MiB parts
def test_uploads_with_if_none_match_create_only(server, bucket, tmp_path, signing, size):
    """`if_none_match="*"` on every upload path: a free key is stored; an existing one raises
    PreconditionFailed (checked on the PUT, or on the multipart upload's completion), leaves the
    object that was there and no multipart upload behind."""
    client = server.client(payload_signing=signing)
    blob = payload(size, seed=5)
    path = tmp_path / "src.bin"
    path.write_bytes(blob)

    async def upload_async(key):
        return await client.upload_async(path, bucket, key, if_none_match="*")

    def writer(key):
        with client.open_writer(bucket, key, if_none_match="*") as f:
            f.write(blob)
        return f.result

    ways = {
        "upload": lambda key: client.upload(path, bucket, key, if_none_match="*"),
        "upload_async": lambda key: asyncio.run(upload_async(key)),
        "upload_fileobj": lambda key: client.upload_fileobj(io.BytesIO(blob), bucket, key, if_none_match="*"),
        "open_writer": writer,
    }
    for how, upload in ways.items():
        key = f"{how}-{size}"
        assert upload(key).size == size, how
        assert bytes(client.get(bucket, key)) == blob, how
        client.put(bucket, key, b"there before")
        with pytest.raises(brisk.PreconditionFailed):
            upload(key)
        assert bytes(client.get(bucket, key)) == b"there before", how
    s3 = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                      aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    with pytest.raises(ValueError, match="only"):
        client.upload(path, bucket, "refused", if_none_match='"etag"')
    with pytest.raises(ValueError, match="only"):
        client.open_writer(bucket, "refused", if_none_match='"etag"')
    with pytest.raises(ValueError, match="only"):
        client.upload_fileobj(io.BytesIO(blob), bucket, "refused", if_none_match="etag")


def test_delete_and_missing_keys(client, bucket):
    client.put(bucket, "obj", b"x")
    client.delete(bucket, "obj")
    client.delete(bucket, "obj")  # deleting a missing key succeeds, as in S3
    with pytest.raises(brisk.NoSuchKey) as info:
        client.get(bucket, "obj")
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.code == "NoSuchKey" and info.value.status == 404
    with pytest.raises(FileNotFoundError):
        client.head(bucket, "obj")
    with pytest.raises(FileNotFoundError):
        client.get_into(bucket, "obj", bytearray(10))


def test_missing_bucket(client):
    with pytest.raises(brisk.NoSuchBucket) as info:
        client.get("no-such-bucket-brisk", "k")
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.code == "NoSuchBucket"
    with pytest.raises(brisk.NoSuchBucket):
        list(client.list("no-such-bucket-brisk"))


def test_bad_credentials(server, bucket):
    bad = server.client(secret_access_key="wrong-secret")
    with pytest.raises(brisk.AccessDenied) as info:
        bad.get(bucket, "k")
    assert isinstance(info.value, PermissionError)
    assert info.value.code == "SignatureDoesNotMatch"
    assert info.value.hint
    unknown = server.client(access_key_id="nobody", secret_access_key="x")
    with pytest.raises(PermissionError):
        unknown.put(bucket, "k", b"x")


def test_delete_many_and_list_pages(client, bucket):
    keys = [f"dir/{i:04d}" for i in range(25)] + ["top"]
    for k in keys:
        client.put(bucket, k, k.encode())
    it = client.list(bucket, "dir/", page_size=10)
    listed = [e.key for e in it]
    assert listed == sorted(k for k in keys if k.startswith("dir/"))
    assert it.pages_fetched == 3
    entries = list(client.list(bucket, delimiter="/"))
    assert [(e.key, e.is_prefix) for e in entries] == [("dir/", True), ("top", False)]
    assert entries[1].size == 3 and entries[1].etag
    assert client.delete_many(bucket, keys) == []
    assert list(client.list(bucket)) == []


def test_copy(client, bucket):
    client.put(bucket, "src", b"payload")
    etag = client.copy(bucket, "src", bucket, "dst")
    assert etag and bytes(client.get(bucket, "dst")) == b"payload"
    with pytest.raises(FileNotFoundError):
        client.copy(bucket, "missing", bucket, "dst2")


def test_presign(client, bucket):
    client.put(bucket, "obj", b"presigned bytes")
    url = client.presign(bucket, "obj", expires_in=60)
    assert "X-Amz-Signature=" in url
    assert urllib.request.urlopen(url, timeout=10).read() == b"presigned bytes"
    put_url = client.presign(bucket, "up", method="PUT", expires_in=60)
    req = urllib.request.Request(put_url, data=b"via url", method="PUT")
    urllib.request.urlopen(req, timeout=10).read()
    assert bytes(client.get(bucket, "up")) == b"via url"
    with pytest.raises(ValueError):
        client.presign(bucket, "obj", method="POST")
    with pytest.raises(brisk.Error):
        client.presign(bucket, "obj", expires_in=8 * 24 * 3600)


def test_buckets(server, client):
    name = "b-" + os.urandom(6).hex()
    client.create_bucket(name)
    assert name in client.list_buckets()
    if server.name == "brisk":
        # S3 in us-east-1 (brisk serve's region here) answers 200 to creating a bucket you own.
        client.create_bucket(name)
    else:
        with pytest.raises(brisk.BucketAlreadyExists) as info:
            client.create_bucket(name)
        assert isinstance(info.value, FileExistsError)
    client.put(name, "k", b"x")
    with pytest.raises(brisk.BucketNotEmpty):
        client.delete_bucket(name)
    client.delete(name, "k")
    client.delete_bucket(name)
    assert name not in client.list_buckets()


def test_invalid_arguments_and_configuration(server):
    with pytest.raises(brisk.ConfigError):
        brisk.Client("ftp://127.0.0.1:1")
    with pytest.raises(ValueError):
        brisk.Client(server.endpoint, access_key_id="only-the-id")
    with pytest.raises(ValueError):
        brisk.Client(server.endpoint, max_memory="12 parsecs")
    client = server.client()
    with pytest.raises(brisk.InvalidArgument):
        client.get("", "k")
    assert brisk.parse_size("64MiB") == 64 * MiB


def test_configuration_from_the_environment(server, bucket, monkeypatch):
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    client = brisk.Client()
    assert client.endpoint_url.rstrip("/") == server.endpoint
    client.put(bucket, "env", b"from the environment")
    assert bytes(client.get(bucket, "env")) == b"from the environment"


def test_connection_refused_is_a_connection_error():
    client = brisk.Client("http://127.0.0.1:9", access_key_id="a", secret_access_key="b", connect_timeout=2)
    with pytest.raises(brisk.ConnectionFailed) as info:
        client.get("bucket", "key")
    assert isinstance(info.value, ConnectionError)


# ----- transfers --------------------------------------------------------------------------------


def test_upload_and_download_with_progress(client, bucket, tmp_path):
    src = tmp_path / "src.bin"
    data = payload(20 * MiB + 3)
    src.write_bytes(data)
    calls = []
    result = client.upload(src, bucket, "big", progress=lambda done, total: calls.append((done, total)))
    assert result.size == len(data) and result.parts == 3
    assert calls[-1] == (len(data), len(data))
    assert all(t == len(data) for _, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)

    dst = tmp_path / "dst.bin"
    calls.clear()
    assert client.download(bucket, "big", dst, progress=lambda d, t: calls.append((d, t))) == len(data)
    assert dst.read_bytes() == data
    assert calls[-1] == (len(data), len(data))
    assert client.download(bucket, "big", str(tmp_path / "plain.bin")) == len(data)


def test_measure_streams_is_a_flag_of_the_client(server, client, bucket, tmp_path):
    data = payload(12 * MiB + 5)
    client.put(bucket, "obj", data)
    fixed = server.client(measure_streams=False, parts_in_flight=3)
    dst = tmp_path / "fixed.bin"
    assert fixed.download(bucket, "obj", dst) == len(data)
    assert dst.read_bytes() == data
    with pytest.raises(TypeError):
        server.client(measure_streams="no")


def test_a_download_of_known_size_is_one_get(client, bucket, tmp_path):
    data = payload(3 * MiB + 5)
    client.put(bucket, "small", data)
    size = next(o.size for o in client.list(bucket, prefix="small"))
    before = client.metrics()["requests"]
    calls = []
    dst = tmp_path / "small.bin"
    got = client.download(bucket, "small", dst, size=size, progress=lambda d, t: calls.append((d, t)))
    assert got == len(data) and dst.read_bytes() == data
    assert client.metrics()["requests"] - before == 1, "one GET: no HEAD for the size or the total"
    assert calls[-1] == (len(data), len(data))
    # Without the size: a HEAD for the progress total, a HEAD for the download, and its GET.
    before = client.metrics()["requests"]
    client.download(bucket, "small", dst, progress=lambda d, t: None)
    assert client.metrics()["requests"] - before == 3
    # The coroutine takes it too.
    async def download_async():
        return await client.download_async(bucket, "small", dst, size=size)

    before = client.metrics()["requests"]
    assert asyncio.run(download_async()) == len(data)
    assert client.metrics()["requests"] - before == 1


def test_unsigned_uploads_send_a_file_from_the_page_cache(server, client, bucket, tmp_path):
    src = tmp_path / "src.bin"
    data = payload(20 * MiB + 3)
    src.write_bytes(data)
    # Over plain HTTP an unsigned upload sends each part's bytes from the page cache (sendfile),
    # with its CRC32C as an aws-chunked trailer the server checks.
    unsigned = server.client(payload_signing="unsigned")
    result = unsigned.upload(src, bucket, "unsigned")
    assert result.size == len(data) and result.parts == 3
    sent = unsigned.metrics()
    assert (sent["file_bytes_sent"], sent["file_bytes_read"]) == (len(data), len(data)), sent
    assert bytes(client.get(bucket, "unsigned")) == data
    # Signed (the default over plain HTTP) reads each part into a block to hash it first.
    signed = server.client(payload_signing="signed")
    signed.upload(src, bucket, "signed")
    assert signed.metrics()["file_bytes_sent"] == 0
    assert bytes(client.get(bucket, "signed")) == data
    unsigned.put(bucket, "small", b"small and unsigned")
    assert bytes(client.get(bucket, "small")) == b"small and unsigned"
    with pytest.raises(ValueError, match="payload_signing"):
        server.client(payload_signing="sometimes")


def test_a_slow_progress_callback_does_not_stall_the_transfer(brisk_server, tmp_path):
    client = brisk_server.client()
    bucket = "slow-progress-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    src = tmp_path / "src.bin"
    src.write_bytes(payload(40 * MiB))
    reports = []

    def slow(done, total):
        reports.append(done)
        time.sleep(0.5)

    started = time.monotonic()
    client.upload(src, bucket, "k", progress=slow)
    # The transfer ran while the callback slept: far fewer reports than parts, all bounded by 0.5 s
    # each, and the last one says everything arrived.
    assert reports[-1] == 40 * MiB
    assert len(reports) <= max(2, (time.monotonic() - started) / 0.5 + 1)


def test_download_failure_leaves_no_file(client, bucket, tmp_path):
    dst = tmp_path / "never.bin"
    with pytest.raises(FileNotFoundError):
        client.download(bucket, "missing", dst)
    assert not dst.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(brisk.LocalFileError):
        client.upload(tmp_path / "no-such-file", bucket, "k")


def test_a_callback_error_stops_the_transfer(client, bucket, tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(payload(30 * MiB))

    def boom(done, total):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        client.upload(src, bucket, "k", progress=boom)


class _SlowObjectHandler(http.server.BaseHTTPRequestHandler):
    """Answers HEAD and ranged GETs for one object, sending 64 KiB every 5 ms (about 12 MiB/s), and
    ignores the path, the signature and the preconditions: a stand-in that is slow by construction."""

    protocol_version = "HTTP/1.1"
    body = payload(8 * MiB, 7)

    def log_message(self, *args):
        pass

    def _head(self, status, first, last):
        self.send_response(status)
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("ETag", '"slow-object"')
        self.send_header("Last-Modified", "Thu, 26 Nov 2026 12:00:00 GMT")
        if status == 206:
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(self.body)}")
        self.end_headers()

    def do_HEAD(self):
        self._head(200, 0, len(self.body) - 1)

    def do_GET(self):
        first, last = 0, len(self.body) - 1
        spec = self.headers.get("Range", "")
        if spec.startswith("bytes="):
            lo, _, hi = spec[len("bytes="):].partition("-")
            first, last = int(lo), min(int(hi) if hi else last, last)
        self._head(206 if spec else 200, first, last)
        try:
            for at in range(first, last + 1, 64 * 1024):
                self.wfile.write(self.body[at:min(at + 64 * 1024, last + 1)])
                time.sleep(0.005)
        except (BrokenPipeError, ConnectionResetError):
            pass


def test_an_interrupted_download_leaves_no_temporary_file(tmp_path):
    # A progress callback that raises part way: the first report comes after 0.1 s, and the slow
    # stand-in takes about 0.7 s to send the 8 MiB.
    stand_in = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowObjectHandler)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    try:
        client = brisk.Client(
            f"http://127.0.0.1:{stand_in.server_address[1]}",
            access_key_id="a",
            secret_access_key="b",
            region="us-east-1",
        )
        out = tmp_path / "out"
        out.mkdir()
        reports = []

        def boom(done, total):
            reports.append((done, total))
            if done < total:
                raise RuntimeError("stop here")

        with pytest.raises(RuntimeError, match="stop here"):
            client.download("bucket", "slow", out / "slow.bin", progress=boom)
        assert list(out.iterdir()) == []
        assert len(reports) == 1 and 0 <= reports[0][0] < reports[0][1] == 8 * MiB, reports
        # The stand-in serves a whole download when nothing interrupts it.
        assert client.download("bucket", "slow", out / "whole.bin") == 8 * MiB
        assert (out / "whole.bin").read_bytes() == _SlowObjectHandler.body
    finally:
        stand_in.shutdown()
        stand_in.server_close()


class _SlowUploadHandler(_SlowObjectHandler):
    """The slow object, and multipart uploads whose creation is answered after 0.3 s (then aborted)."""

    aborted = []

    def do_POST(self):
        time.sleep(0.3)
        body = b"<InitiateMultipartUploadResult><UploadId>UP1</UploadId></InitiateMultipartUploadResult>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self):
        self.aborted.append(self.path)
        self.send_response(204)
        self.end_headers()


def test_async_readers_and_writers_take_one_operation_at_a_time():
    """An operation in flight (a read of a slow stream, a write waiting for its multipart upload to
    be created) refuses the next with RuntimeError until it is awaited; a write cancelled while the
    upload is created still has that upload aborted."""
    stand_in = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SlowUploadHandler)
    threading.Thread(target=stand_in.serve_forever, daemon=True).start()
    body = _SlowObjectHandler.body
    try:
        client = brisk.Client(f"http://127.0.0.1:{stand_in.server_address[1]}", access_key_id="a",
                              secret_access_key="b", region="us-east-1", part_size="5MiB")

        async def main():
            async with await client.open_reader_async("bucket", "slow") as f:
                assert await f.read(10) == body[:10]
                pending = f.read(3 * MiB)  # about 0.25 s at the stand-in's pace
                for refused in (lambda: f.read(1), lambda: f.readinto(bytearray(1)), lambda: f.seek(0)):
                    with pytest.raises(RuntimeError, match="in flight"):
                        refused()
                assert await pending == body[10 : 10 + 3 * MiB]
                assert f.tell() == 10 + 3 * MiB

            f = await client.open_writer_async("bucket", "key")
            first = asyncio.ensure_future(f.write(payload(6 * MiB)))
            await asyncio.sleep(0.05)  # the write waits for the upload's creation
            with pytest.raises(RuntimeError, match="in flight"):
                f.write(b"x")
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            with pytest.raises(brisk.Error, match="cancelled"):
                await f.close()

        asyncio.run(main())
        assert _SlowUploadHandler.aborted == ["/bucket/key?uploadId=UP1"]
    finally:
        stand_in.shutdown()
        stand_in.server_close()


# ----- threads and asyncio ------------------------------------------------------------------------


def test_threads_share_one_client_in_parallel(brisk_server):
    client = brisk_server.client()
    bucket = "threads-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    data = payload(32 * MiB)
    client.put(bucket, "obj", data)
    barrier = threading.Barrier(8)
    spans: list[tuple[float, float]] = []
    errors = []

    def worker():
        try:
            barrier.wait()
            t0 = time.monotonic()
            buf = client.get(bucket, "obj")
            spans.append((t0, time.monotonic()))
            assert len(buf) == len(data)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ticks = 0
    stop = threading.Event()

    def ticker():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    tick_thread = threading.Thread(target=ticker)
    tick_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    stop.set()
    tick_thread.join()
    assert not errors, errors
    assert len(spans) == 8
    # The calls overlap in time: the latest start comes before the earliest end.
    assert max(s for s, _ in spans) < min(e for _, e in spans)
    assert ticks > 10, "Python ran while the reads waited on the network"


def test_asyncio_variants(client, bucket, tmp_path):
    data = payload(3 * MiB)

    async def main():
        await client.put_async(bucket, "a", data)
        buf = await client.get_async(bucket, "a")
        assert bytes(buf) == data
        target = bytearray(len(data))
        assert await client.get_into_async(bucket, "a", target) == len(data)
        assert target == data
        assert bytes(await client.get_range_async(bucket, "a", 5, 10)) == data[5:15]
        bufs = await client.get_ranges_async(bucket, "a", [0, 100], [10, 10])
        assert [bytes(b) for b in bufs] == [data[:10], data[100:110]]
        meta = await client.head_async(bucket, "a")
        assert meta.size == len(data)
        await client.copy_async(bucket, "a", bucket, "b")
        assert [e.key for e in await client.list_async(bucket)] == ["a", "b"]
        path = tmp_path / "x.bin"
        assert await client.download_async(bucket, "b", path) == len(data)
        up = await client.upload_async(path, bucket, "c")
        assert up.size == len(data)
        await client.delete_async(bucket, "c")
        with pytest.raises(brisk.NoSuchKey):
            await client.get_async(bucket, "c")
        # Many at once on one loop.
        results = await asyncio.gather(*(client.get_range_async(bucket, "a", i, 1) for i in range(50)))
        assert [bytes(r) for r in results] == [data[i : i + 1] for i in range(50)]

    asyncio.run(main())


def test_asyncio_buckets_delete_many_and_progress(server, client, tmp_path):
    """The asyncio forms of the bucket calls and of delete_many, and progress on upload_async and
    download_async, called from brisk's runtime (not the loop's thread) as the totals move."""
    name = "t-async-" + os.urandom(6).hex()
    data = payload(20 * MiB + 5)
    path = tmp_path / "up.bin"
    path.write_bytes(data)
    loop_thread = threading.get_ident()
    seen = {"up": [], "down": []}

    def recorder(which):
        return lambda done, total: seen[which].append((done, total, threading.get_ident()))

    async def main():
        assert await client.create_bucket_async(name) is None
        assert name in await client.list_buckets_async()
        up = await client.upload_async(path, name, "big", progress=recorder("up"))
        assert (up.size, up.parts) == (len(data), 3)
        target = tmp_path / "down.bin"
        assert await client.download_async(name, "big", target, progress=recorder("down")) == len(data)
        assert target.read_bytes() == data
        for i in range(3):
            await client.put_async(name, f"k{i}", b"x")
        assert await client.delete_many_async(name, ["k0", "k1", "k2", "big", "never-was"]) == []
        assert await client.list_async(name) == []
        await client.delete_bucket_async(name)
        assert name not in await client.list_buckets_async()
        with pytest.raises(brisk.NoSuchBucket):
            await client.delete_bucket_async(name)

    asyncio.run(main())
    for which in ("up", "down"):
        calls = seen[which]
        assert calls[-1][:2] == (len(data), len(data)), which
        assert [d for d, _, _ in calls] == sorted(d for d, _, _ in calls), which
        assert all(t == len(data) for _, t, _ in calls), which
        assert all(thread != loop_thread for _, _, thread in calls), which


def test_asyncio_progress_errors_reach_the_caller(client, bucket, tmp_path):
    path = tmp_path / "up.bin"
    path.write_bytes(payload(30 * MiB))

    def boom(done, total):
        raise RuntimeError("stop here")

    async def main():
        with pytest.raises(RuntimeError, match="stop here"):
            await client.upload_async(path, bucket, "k", progress=boom)
        client.put(bucket, "d", b"x" * 1000)
        with pytest.raises(RuntimeError, match="stop here"):
            await client.download_async(bucket, "d", tmp_path / "d.bin", progress=boom)

    asyncio.run(main())


def test_list_async_takes_page_size_and_list_takes_limit(client, bucket):
    """`list_async(page_size=)` asks for pages of that many keys, as `list` does, and `list(limit=)`
    stops at that many entries in as few pages as that takes, as `list_async` does."""
    keys = [f"k{i:02d}" for i in range(7)]
    for k in keys:
        client.put(bucket, k, b"x")

    async def listed(**kwargs):
        before = client.metrics()["requests"]
        entries = await client.list_async(bucket, **kwargs)
        return [e.key for e in entries], client.metrics()["requests"] - before

    assert asyncio.run(listed(page_size=3)) == (keys, 3)
    assert asyncio.run(listed(page_size=3, limit=4)) == (keys[:4], 2)
    assert asyncio.run(listed(limit=2)) == (keys[:2], 1)
    assert asyncio.run(listed()) == (keys, 1)
    it = client.list(bucket, page_size=3, limit=5)
    assert [e.key for e in it] == keys[:5]
    assert it.pages_fetched == 2
    it = client.list(bucket, limit=1)
    assert [e.key for e in it] == keys[:1]
    assert it.pages_fetched == 1
    with pytest.raises(ValueError, match="limit"):
        client.list(bucket, limit=0)


def test_get_range_without_waiting_for_memory(server, bucket):
    """`wait=False`, on `get_range` and `get_range_async`: None and no request when the memory
    budget would make the read wait, the bytes when it has room."""
    client = server.client(max_memory="4MiB", kept_buffers=0)
    data = payload(MiB)
    client.put(bucket, "a", data)
    held = client.get(bucket, "a")
    too_much = client.memory()["available"] + 1  # under the capacity: it would wait for `held`
    assert too_much < 4 * MiB
    before = client.metrics()["requests"]
    assert client.get_range(bucket, "a", 0, too_much, wait=False) is None

    async def main():
        assert await client.get_range_async(bucket, "a", 0, too_much, wait=False) is None
        assert client.metrics()["requests"] == before
        assert bytes(await client.get_range_async(bucket, "a", 5, 10, wait=False)) == data[5:15]

    asyncio.run(main())
    assert bytes(client.get_range(bucket, "a", 5, 10, wait=False)) == data[5:15]
    del held


def test_async_transfers_report_progress_as_the_blocking_ones_do(client, bucket, tmp_path):
    """`progress=` on `upload_async` and `download_async` (with and without `size=`) is told what
    `upload` and `download` tell it: rising counts against the size, ending at (size, size); it is
    called with the GIL from brisk's runtime, not on the loop's thread."""
    data = payload(20 * MiB + 5)
    path = tmp_path / "up.bin"
    path.write_bytes(data)
    calls = {}

    def recorder(which):
        calls[which] = []
        return lambda done, total: calls[which].append((done, total, threading.get_ident()))

    assert client.upload(path, bucket, "sync", progress=recorder("upload")).size == len(data)
    assert client.download(bucket, "sync", tmp_path / "d1", progress=recorder("download")) == len(data)

    async def main():
        loop_thread = threading.get_ident()
        up = await client.upload_async(path, bucket, "async", progress=recorder("upload_async"))
        assert up.size == len(data)
        target = tmp_path / "d2"
        n = await client.download_async(bucket, "async", target, progress=recorder("download_async"))
        assert n == len(data) and target.read_bytes() == data
        n = await client.download_async(
            bucket, "async", tmp_path / "d3", progress=recorder("download_async_sized"), size=len(data)
        )
        assert n == len(data)
        return loop_thread

    loop_thread = asyncio.run(main())
    for which, seen in calls.items():
        assert seen, which
        assert seen[-1][:2] == (len(data), len(data)), which
        assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen), which
        assert all(total == len(data) for _, total, _ in seen), which
        if which.endswith(("_async", "_sized")):
            assert all(thread != loop_thread for _, _, thread in seen), which


def test_asyncio_cancellation(client, bucket):
    client.put(bucket, "a", payload(MiB))

    async def main():
        task = asyncio.ensure_future(client.get_async(bucket, "a"))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The client still works after a cancelled call.
        assert len(await client.get_async(bucket, "a")) == MiB

    asyncio.run(main())


def test_get_ranges_larger_than_a_pooled_block(client, bucket):
    data = payload(20 * MiB)
    client.put(bucket, "big", data)
    offsets, lengths = [0, 9 * MiB, 100, 19 * MiB], [9 * MiB, 11 * MiB, 1000, 2 * MiB]
    bufs = client.get_ranges(bucket, "big", offsets, lengths)
    assert [len(b) for b in bufs] == [9 * MiB, 11 * MiB, 1000, MiB]
    for b, o, n in zip(bufs, offsets, lengths):
        assert bytes(b) == data[o : o + n]
