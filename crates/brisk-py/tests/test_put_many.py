"""`Client.put_many` and `put_many_async` against `brisk serve` and MinIO: every object stored
whole from each kind of buffer and from files (read back with boto3, an independent client),
failures in place, malformed items refused with nothing sent, a generator taken lazily with at
most `queue_depth` bodies held, two items for one key written in order."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import weakref

import boto3
import numpy as np
import pytest

import brisk
from conftest import ACCESS_KEY, SECRET_KEY

MiB = 1024 * 1024


def payload(n: int, seed: int = 1) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def boto(server):
    return boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


def stored(s3, bucket: str) -> dict[str, bytes]:
    listing = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {o["Key"]: s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read() for o in listing}


def test_every_kind_of_buffer_and_files_are_stored_whole(server, client, bucket, tmp_path):
    small = tmp_path / "small.bin"
    small.write_bytes(payload(70_000, 5))
    big = tmp_path / "big.bin"
    big.write_bytes(payload(9 * MiB + 3, 6))  # two parts
    client.put(bucket, "source", payload(1000, 7))
    a_buffer = client.get(bucket, "source")
    items = {
        "bytes": payload(16 * 1024, 1),
        "empty": b"",
        "bytearray": bytearray(payload(5, 2)),
        "memoryview": memoryview(payload(300_000, 3))[1000:200_000],
        "numpy": np.arange(1000, dtype=np.float32),
        "buffer": a_buffer,
        "file": small,
        "multipart": big,
    }
    results = client.put_many(bucket, items, queue_depth=4, content_type="application/x-test",
                              metadata={"batch": "one"})
    assert len(results) == len(items)
    s3 = boto(server)
    for (key, data), result in zip(items.items(), results):
        assert isinstance(result, brisk.UploadResult), (key, result)
        expected = data.read_bytes() if hasattr(data, "read_bytes") else bytes(memoryview(data))
        assert result.size == len(expected), key
        head = s3.head_object(Bucket=bucket, Key=key)
        assert head["ETag"] == result.etag, key
        assert head["ContentType"] == "application/x-test", key
        assert head["Metadata"] == {"batch": "one"}, key
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert hashlib.sha256(body).digest() == hashlib.sha256(expected).digest(), key
    assert results[list(items).index("multipart")].parts == 2
    assert client.metrics()["connections_opened"] <= 4 + 2


def test_triples_across_buckets_and_failures_stay_in_place(server, client, bucket, tmp_path):
    other = "t-" + bucket[2:][::-1]
    client.create_bucket(other)
    try:
        client.put(bucket, "taken", b"there before")
        results = client.put_many(None, [
            (bucket, "a", b"to the first"),
            (other, "a", b"to the other"),
            ("brisk-no-such-bucket-put-many", "a", b"lost"),
            (bucket, "gone", tmp_path / "no such file"),
            (bucket, "taken", b"not over it"),
        ], if_none_match="*")
        assert isinstance(results[0], brisk.UploadResult)
        assert isinstance(results[1], brisk.UploadResult)
        assert isinstance(results[2], brisk.NoSuchBucket), results[2]
        assert isinstance(results[3], brisk.Error) and "no such file" in str(results[3]), results[3]
        assert isinstance(results[4], brisk.PreconditionFailed), results[4]
        assert bytes(client.get(bucket, "a")) == b"to the first"
        assert bytes(client.get(other, "a")) == b"to the other"
        assert bytes(client.get(bucket, "taken")) == b"there before"
        assert sorted(e.key for e in client.list(bucket)) == ["a", "taken"]
    finally:
        client.delete_many(other, ["a"])
        client.delete_bucket(other)


@pytest.mark.parametrize("items, error, message", [
    ([("a", b"1"), ("b", "text")], TypeError, "item 1: data is a str"),
    ([("a", b"1"), ["b", b"2"]], TypeError, "item 1: items must be"),
    ([("a", b"1"), ("b", b"2", b"3", b"4")], ValueError, "item 1: .*4-tuples"),
    ([("a", b"1"), (7, b"2")], TypeError, "item 1: a key must be a str"),
    ([("a", b"1"), ("b", object())], ValueError, "item 1: data must support the buffer protocol"),
    ({"a": b"1", "b": 2}, ValueError, "item 1: data must support"),
    (b"not items", TypeError, "mapping"),
])
def test_a_malformed_item_in_a_collection_is_refused_with_nothing_sent(client, bucket, items,
                                                                        error, message):
    before = client.metrics()["requests"]
    with pytest.raises(error, match=message):
        client.put_many(bucket, items)
    assert client.metrics()["requests"] == before
    assert list(client.list(bucket)) == []


def test_bad_arguments(client, bucket):
    with pytest.raises(ValueError, match="queue_depth"):
        client.put_many(bucket, {"a": b"1"}, queue_depth=0)
    with pytest.raises(ValueError, match="no bucket"):
        client.put_many(None, [("a", b"1")])
    with pytest.raises(ValueError, match="only"):
        client.put_many(bucket, {"a": b"1"}, if_none_match='"etag"')
    assert client.put_many(bucket, {}) == []
    assert client.put_many(bucket, iter(())) == []
    assert list(client.list(bucket)) == []


def test_a_generator_is_taken_lazily_with_at_most_queue_depth_bodies_held(server, client, bucket):
    depth = 4
    count = 60
    alive: list[weakref.ref] = []
    most_held = 0
    s3 = boto(server)

    def stored_count() -> int:
        return s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0)

    def items():
        nonlocal most_held
        for i in range(count):
            gc.collect()
            held = sum(1 for r in alive if r() is not None)
            most_held = max(most_held, held)
            # Taken lazily: when item i is asked for, at most `depth` of the items before it are
            # still being written, so at least i - depth are stored (a put_many that drained the
            # generator first would have stored none).
            if i > depth and i % 8 == 0:
                assert stored_count() >= i - depth, (i, stored_count())
            body = np.full(200_000, i, dtype=np.uint8)
            alive.append(weakref.ref(body))
            yield f"g/{i:03}", body
            del body

    results = client.put_many(bucket, items(), queue_depth=depth)
    assert all(isinstance(r, brisk.UploadResult) for r in results), results
    # The generator's own body is dropped after each yield; brisk holds the ones in flight.
    assert most_held <= depth, most_held
    gc.collect()
    assert all(r() is None for r in alive), "put_many kept a body after it returned"
    got = stored(s3, bucket)
    assert sorted(got) == [f"g/{i:03}" for i in range(count)]
    assert all(got[f"g/{i:03}"] == bytes([i]) * 200_000 for i in range(count))


def test_a_malformed_item_in_a_generator_stops_it_after_the_writes_started(client, bucket):
    taken = []

    def items():
        for i in range(10):
            taken.append(i)
            yield (f"k{i}", b"x" * i) if i != 5 else (f"k{i}", "a str")

    with pytest.raises(TypeError, match="item 5: data is a str"):
        client.put_many(bucket, items(), queue_depth=2)
    assert taken == [0, 1, 2, 3, 4, 5]
    # The items before it were written (none is left half-done); none after it was taken.
    assert sorted(e.key for e in client.list(bucket)) == [f"k{i}" for i in range(5)]


@pytest.mark.parametrize("lazy", [False, True])
def test_items_for_one_key_are_written_in_order(client, bucket, lazy):
    items = [("same", payload(300_000 - 1000 * i, i)) for i in range(12)]
    items += [(f"other{i}", b"o") for i in range(6)]
    results = client.put_many(bucket, iter(items) if lazy else items, queue_depth=8)
    assert all(isinstance(r, brisk.UploadResult) for r in results)
    assert bytes(client.get(bucket, "same")) == items[11][1]
    assert [r.size for r in results[:12]] == [len(d) for _, d in items[:12]]


def test_put_many_async(client, bucket, tmp_path):
    path = tmp_path / "f"
    path.write_bytes(payload(100_000, 9))

    async def main():
        return await client.put_many_async(bucket, [("a", b"first"), ("f", path), ("a", b"last")],
                                           queue_depth=2)

    results = asyncio.run(main())
    assert [type(r) for r in results] == [brisk.UploadResult] * 3
    assert bytes(client.get(bucket, "a")) == b"last"
    assert bytes(client.get(bucket, "f")) == path.read_bytes()
    with pytest.raises(TypeError, match="item 0: data is a str"):
        asyncio.run(client.put_many_async(bucket, [("b", "text")]))


def test_put_many_then_get_many_round_trip_of_small_objects(client, bucket):
    objects = {f"s/{i:04}": payload(16 * 1024, i) for i in range(256)}
    results = client.put_many(bucket, objects)
    assert all(isinstance(r, brisk.UploadResult) for r in results)
    back = client.get_many(bucket, list(objects))
    assert all(bytes(b) == objects[k] for k, b in zip(objects, back))
