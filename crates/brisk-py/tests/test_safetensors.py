"""`brisk.safetensors` against the reference `safetensors` package: its bytes loaded by brisk, brisk's
bytes loaded by it, zero copies, caller-allocated arrays, streaming under a cap, sharded models,
checkpoints, and hostile headers (each a ValueError naming its offset, never a large allocation)."""

from __future__ import annotations

import json
import struct
import time

import numpy
import pytest
import safetensors
import safetensors.numpy as reference

import brisk
import brisk.safetensors as st

# Every dtype numpy has a type for, as the reference's numpy module writes and reads them.
NUMPY_TENSORS = {
    "f64": numpy.linspace(-1, 1, 12).reshape(3, 4),
    "f32": numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4) / 7,
    "f16": numpy.arange(10, dtype=numpy.float16),
    "i64": numpy.array([-(2**62), 0, 2**62], dtype=numpy.int64),
    "u64": numpy.array([0, 2**64 - 1], dtype=numpy.uint64),
    "i32": numpy.arange(-5, 5, dtype=numpy.int32),
    "u32": numpy.arange(7, dtype=numpy.uint32),
    "i16": numpy.arange(-3, 3, dtype=numpy.int16).reshape(2, 3),
    "u16": numpy.arange(9, dtype=numpy.uint16),
    "i8": numpy.arange(-8, 8, dtype=numpy.int8),
    "u8": numpy.arange(256, dtype=numpy.uint8),
    "bool": numpy.array([True, False, True]),
    "c64": numpy.array([1 + 2j, -3j], dtype=numpy.complex64),
    "scalar": numpy.array(3.5, dtype=numpy.float32),
    "empty": numpy.zeros((0, 5), dtype=numpy.float32),
    "empty2": numpy.zeros((4, 0), dtype=numpy.int64),
}


def equal(a: numpy.ndarray, b: numpy.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and numpy.array_equal(a, b)


def root(array: numpy.ndarray) -> object:
    """The object at the end of an array's `.base` chain: the memory it views."""
    obj: object = array
    while True:
        if isinstance(obj, numpy.ndarray) and obj.base is not None:
            obj = obj.base
        elif isinstance(obj, memoryview):
            obj = obj.obj
        else:
            return obj


@pytest.fixture
def small_parts(monkeypatch):
    """Small files read by ranged GETs take several parts after a header range that holds part
    of the data, so the tests cover those paths without gigabytes."""
    monkeypatch.setattr(st, "_PREFIX", 64)
    monkeypatch.setattr(st, "_PART", 1000)


# ----- both ways against the reference ---------------------------------------------------------


@pytest.mark.parametrize("path", ["single_get", "ranges"])
def test_reference_bytes_load(server, client, bucket, path, monkeypatch):
    depth = None
    if path == "ranges":
        monkeypatch.setattr(st, "_PREFIX", 64)
        monkeypatch.setattr(st, "_PART", 100)
        depth = 4
    data = reference.save(NUMPY_TENSORS, metadata={"format": "np", "step": "7"})
    client.put(bucket, "m.safetensors", data)
    loaded = st.load(client, bucket, "m.safetensors", queue_depth=depth)
    assert loaded.keys() == NUMPY_TENSORS.keys()
    for name, array in NUMPY_TENSORS.items():
        assert equal(loaded[name], array), name
    hdr = st.header(client, bucket, "m.safetensors")
    assert hdr.metadata == {"format": "np", "step": "7"}
    assert hdr.size == len(data)
    assert hdr.tensors["f32"].dtype == "F32" and hdr.tensors["f32"].shape == (2, 3, 4)


def test_brisk_save_is_the_reference_bytes(server, client, bucket):
    result = st.save(client, bucket, "s.safetensors", NUMPY_TENSORS, metadata={"a": "b"})
    stored = bytes(client.get(bucket, "s.safetensors"))
    assert result.size == len(stored)
    # The same order, header and padding as the reference writes.
    assert stored == reference.save(NUMPY_TENSORS, metadata={"a": "b"})
    back = reference.load(stored)
    for name, array in NUMPY_TENSORS.items():
        assert equal(back[name], array), name


def test_types_numpy_lacks_round_trip(server, client, bucket):
    """BF16 and the 8-bit floats come back as unsigned integers of their width (the bits as
    stored), F4 as its packed bytes; the reference reads brisk's file with the dtypes named, and
    brisk reads the reference's."""
    bits = numpy.array([0x3F80, 0xC000, 0x7F80], dtype=numpy.uint16)  # bfloat16 1, -2, inf
    f8 = numpy.array([0x38, 0x40], dtype=numpy.uint8)
    f4 = numpy.array([0x21, 0x43], dtype=numpy.uint8)  # four packed F4 values
    st.save(client, bucket, "b.safetensors", {"w": bits, "e4": f8, "e5": f8, "q": f4},
            dtypes={"w": "BF16", "e4": "F8_E4M3", "e5": "F8_E5M2", "q": ("F4", (2, 2))})
    stored = bytes(client.get(bucket, "b.safetensors"))
    ref = dict(safetensors.deserialize(stored))
    assert ref["w"]["dtype"] == "BF16" and ref["w"]["shape"] == [3] and bytes(ref["w"]["data"]) == bits.tobytes()
    assert ref["e4"]["dtype"] == "F8_E4M3" and ref["e5"]["dtype"] == "F8_E5M2"
    assert ref["q"]["dtype"] == "F4" and ref["q"]["shape"] == [2, 2] and bytes(ref["q"]["data"]) == f4.tobytes()
    loaded = st.load(client, bucket, "b.safetensors")
    assert equal(loaded["w"], bits) and equal(loaded["e4"], f8) and equal(loaded["q"], f4)
    hdr = st.header(client, bucket, "b.safetensors")
    assert [hdr.tensors[n].dtype for n in ("w", "e4", "e5", "q")] == ["BF16", "F8_E4M3", "F8_E5M2", "F4"]
    assert hdr.tensors["q"].shape == (2, 2) and hdr.tensors["q"].array_shape == (2,)


def test_big_endian_and_strided_arrays_are_saved_as_little_endian_c_order(server, client, bucket):
    big = numpy.arange(6, dtype=">i4").reshape(2, 3)
    strided = numpy.arange(20, dtype=numpy.float64).reshape(4, 5)[:, ::2]
    st.save(client, bucket, "e.safetensors", {"big": big, "strided": strided})
    back = reference.load(bytes(client.get(bucket, "e.safetensors")))
    assert numpy.array_equal(back["big"], big) and back["big"].dtype == numpy.dtype("<i4")
    assert numpy.array_equal(back["strided"], strided)


# ----- zero copies, exact size -----------------------------------------------------------------


@pytest.mark.parametrize("path", ["single_get", "ranges"])
def test_load_views_one_exact_buffer(server, client, bucket, path, monkeypatch):
    depth = None
    if path == "ranges":
        monkeypatch.setattr(st, "_PART", 4096)
        depth = 8
    tensors = {f"t{i}": numpy.full((100, i + 1), i, dtype=numpy.float32) for i in range(8)}
    data = reference.save(tensors)
    client.put(bucket, "z.safetensors", data)
    hdr = st.header(client, bucket, "z.safetensors")
    loaded = st.load(client, bucket, "z.safetensors", queue_depth=depth)
    roots = {id(root(a)) for a in loaded.values()}
    assert len(roots) == 1, "every array views the same allocation"
    whole = root(next(iter(loaded.values())))
    # The one allocation is exactly the file (one GET's Buffer) or exactly its tensors' bytes.
    assert len(memoryview(whole).cast("B")) == (len(data) if path == "single_get" else len(data) - hdr.data_start)
    if path == "single_get":
        assert isinstance(whole, brisk.Buffer)
    arrays = list(loaded.values())
    assert all(numpy.shares_memory(arrays[0], a) is False for a in arrays[1:])  # disjoint views...
    base = numpy.frombuffer(whole, numpy.uint8)
    assert all(numpy.shares_memory(base, a) for a in arrays)  # ...of one buffer
    for name, array in tensors.items():
        assert equal(loaded[name], array)


def test_load_counts_in_the_budget_until_the_arrays_are_freed(brisk_server):
    client = brisk_server.client(max_memory="64MiB", kept_buffers=0)  # freed memory returns at once
    client.create_bucket("st-budget")
    data = reference.save({"x": numpy.ones(1 << 20, numpy.float32)})
    client.put("st-budget", "x.safetensors", data)
    before = client.memory()["reserved"]
    loaded = st.load(client, "st-budget", "x.safetensors")
    assert client.memory()["reserved"] - before >= len(data)
    assert client.memory()["available"] <= (64 << 20) - len(data)
    del loaded
    assert client.memory()["available"] > (64 << 20) - len(data)
    client.delete("st-budget", "x.safetensors")
    client.delete_bucket("st-budget")


# ----- load_into -------------------------------------------------------------------------------


def test_load_into_fills_callers_arrays(server, client, bucket, small_parts):
    tensors = {"a": numpy.arange(3000, dtype=numpy.float32).reshape(30, 100), "b": numpy.arange(10, dtype=numpy.int16),
               "c": numpy.zeros((0,), numpy.float64), "skip": numpy.ones(500, numpy.float64)}
    client.put(bucket, "i.safetensors", reference.save(tensors))
    a = numpy.full((30, 100), -1, numpy.float32)
    b = numpy.empty(20, numpy.uint8)  # another dtype, the same bytes: filled raw
    c = numpy.empty(0, numpy.float64)
    hdr = st.load_into(client, bucket, "i.safetensors", {"a": a, "b": b, "c": c})
    assert numpy.array_equal(a, tensors["a"])
    assert b.tobytes() == tensors["b"].tobytes()
    assert hdr.tensors["skip"].nbytes == 4000
    with pytest.raises(ValueError, match="has 16 bytes"):
        st.load_into(client, bucket, "i.safetensors", {"b": numpy.empty(16, numpy.uint8)})
    with pytest.raises(ValueError, match="shape"):
        st.load_into(client, bucket, "i.safetensors", {"a": numpy.empty((100, 30), numpy.float32)})
    with pytest.raises(ValueError, match="no tensor 'nope'"):
        st.load_into(client, bucket, "i.safetensors", {"nope": a})
    with pytest.raises(ValueError, match="writable"):
        st.load_into(client, bucket, "i.safetensors", {"b": numpy.empty(20, numpy.uint8)[::-1]})


# ----- streaming under a cap -------------------------------------------------------------------


def test_iter_tensors_stays_under_the_cap(server, client, bucket):
    part = 64 << 10
    cap = 1 << 20
    tensors = {f"w{i:02}": numpy.full(40_000 + 1000 * i, i, dtype=numpy.float32) for i in range(24)}
    tensors.update({f"s{i:02}": numpy.full(10 + i, i, dtype=numpy.int8) for i in range(30)})
    data = reference.save(tensors)
    assert len(data) > 3 * cap
    client.put(bucket, "big.safetensors", data)
    stats: dict[str, int] = {}
    seen = []
    for name, array in st.iter_tensors(client, bucket, "big.safetensors", max_memory=cap, part_size=part,
                                       stats=stats):
        assert equal(array, tensors[name]), name
        seen.append(name)
        del array  # a streaming consumer lets go of each array
    hdr = st.header(client, bucket, "big.safetensors")
    assert seen == [t.name for t in hdr._order]  # file order
    assert stats["peak_bytes"] <= cap + part, stats
    assert stats["peak_bytes"] > 2 * part, stats  # several parts were in flight at once
    # Parts of at most `part` bytes, past the first MiB (read with the header).
    assert stats["requests"] >= (len(data) - st._PREFIX) // part


def test_iter_tensors_cap_counts_what_the_caller_holds(server, client, bucket):
    """A consumer that keeps every array is not deadlocked: past the cap, parts are read one at a
    time, and the held bytes are the arrays it holds plus at most one part."""
    part = 32 << 10
    cap = 256 << 10
    tensors = {f"w{i:02}": numpy.full(20_000, i, dtype=numpy.float32) for i in range(20)}
    client.put(bucket, "keep.safetensors", reference.save(tensors))
    stats: dict[str, int] = {}
    kept = dict(st.iter_tensors(client, bucket, "keep.safetensors", max_memory=cap, part_size=part, stats=stats))
    total = sum(a.nbytes for a in tensors.values())
    assert all(equal(kept[n], a) for n, a in tensors.items())
    assert total <= stats["peak_bytes"] <= total + part


def test_iter_tensors_reads_only_the_named_tensors(server, client, bucket, small_parts):
    tensors = {f"t{i}": numpy.full(100, i, numpy.int32) for i in range(10)}
    client.put(bucket, "few.safetensors", reference.save(tensors))
    stats: dict[str, int] = {}
    got = dict(st.iter_tensors(client, bucket, "few.safetensors", names=["t3", "t7"], part_size=4096, stats=stats))
    assert got.keys() == {"t3", "t7"} and equal(got["t3"], tensors["t3"]) and equal(got["t7"], tensors["t7"])
    # Two GETs of 400 bytes: the tensors between them are not read.
    assert stats["requests"] == 2 and stats["peak_bytes"] == 800, stats


def test_iter_tensors_refuses_a_tensor_over_the_cap(server, client, bucket):
    client.put(bucket, "one.safetensors", reference.save({"big": numpy.zeros(1 << 16, numpy.float32)}))
    with pytest.raises(ValueError, match="larger than max_memory.*load_into"):
        next(st.iter_tensors(client, bucket, "one.safetensors", max_memory="64KiB"))


def test_iter_tensors_names_and_early_close(server, client, bucket):
    tensors = {f"t{i}": numpy.full(5000, i, numpy.int32) for i in range(10)}
    client.put(bucket, "n.safetensors", reference.save(tensors))
    got = dict(st.iter_tensors(client, bucket, "n.safetensors", names=["t3", "t7"], part_size=4096))
    assert got.keys() == {"t3", "t7"} and equal(got["t7"], tensors["t7"])
    it = st.iter_tensors(client, bucket, "n.safetensors", max_memory=40_000, part_size=4096)
    name, first = next(it)
    it.close()  # in-flight reads finish, the rest are not started
    assert equal(first, tensors[name])


# ----- sharded models and checkpoints ----------------------------------------------------------


def test_load_sharded(server, client, bucket, small_parts):
    shards = {
        "model-00001-of-00003.safetensors": {"embed": numpy.arange(300, dtype=numpy.float32).reshape(30, 10)},
        "model-00002-of-00003.safetensors": {"l0.w": numpy.ones((8, 8), numpy.float16), "l0.b": numpy.zeros(8, numpy.float16)},
        "model-00003-of-00003.safetensors": {"head": numpy.arange(40, dtype=numpy.int64)},
    }
    weight_map = {}
    for shard, tensors in shards.items():
        client.put(bucket, f"llm/{shard}", reference.save(tensors))
        weight_map.update({name: shard for name in tensors})
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    client.put(bucket, "llm/model.safetensors.index.json", json.dumps(index).encode())
    model = st.load_sharded(client, bucket, "llm/model.safetensors.index.json")
    assert model.keys() == weight_map.keys()
    for tensors in shards.values():
        for name, array in tensors.items():
            assert equal(model[name], array)
    # A weight map naming a tensor its shard lacks.
    index["weight_map"]["ghost"] = "model-00003-of-00003.safetensors"
    client.put(bucket, "llm/bad.index.json", json.dumps(index).encode())
    with pytest.raises(ValueError, match="'ghost'"):
        st.load_sharded(client, bucket, "llm/bad.index.json")


def test_many_files_are_checked_against_one_budget(brisk_server):
    client = brisk_server.client(max_memory="1MiB")
    client.create_bucket("st-many")
    for i in range(3):
        client.put("st-many", f"c/{i}.safetensors", reference.save({"x": numpy.zeros(100_000, numpy.float32)}))
    client.put("st-many", "c/checkpoint.json", json.dumps(
        {"format": "safetensors", "shards": {str(i): {"key": f"{i}.safetensors"} for i in range(3)}}).encode())
    with pytest.raises(brisk.MemoryBudgetExceeded):
        st.load_checkpoint(client, "st-many", "c")
    assert len(st.load_checkpoint(client, "st-many", "c", shards=["1", "2"])) == 2
    client.delete_many("st-many", [e.key for e in client.list("st-many")])
    client.delete_bucket("st-many")


def test_checkpoint_round_trip(server, client, bucket):
    ranks = {f"rank{r}": {"w": numpy.full((64, 64), r, numpy.float32), "step": numpy.array(r, numpy.int64)}
             for r in range(4)}
    keys = st.save_checkpoint(client, bucket, "ckpt/step-100", ranks, metadata={"step": "100"})
    assert keys[-1] == "ckpt/step-100/checkpoint.json"
    assert sorted(e.key for e in client.list(bucket, "ckpt/")) == sorted(keys)
    # Each file is a plain safetensors file the reference reads.
    ref = reference.load(bytes(client.get(bucket, "ckpt/step-100/rank2.safetensors")))
    assert equal(ref["w"], ranks["rank2"]["w"])
    back = st.load_checkpoint(client, bucket, "ckpt/step-100")
    assert back.keys() == ranks.keys()
    for r, tensors in ranks.items():
        for name, array in tensors.items():
            assert equal(back[r][name], array)
    mine = st.load_checkpoint(client, bucket, "ckpt/step-100", shards=["rank3"])
    assert list(mine) == ["rank3"]
    with pytest.raises(brisk.NoSuchKey):
        st.load_checkpoint(client, bucket, "ckpt/never-finished")


# ----- hostile headers -------------------------------------------------------------------------


def header_file(doc: object, data: bytes = b"", *, raw: bytes | None = None, length: int | None = None) -> bytes:
    text = raw if raw is not None else json.dumps(doc).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


HOSTILE = {
    "shorter than 8": (b"\x01\x00\x00", 0),
    "length past the object": (header_file({}, length=1000), 0),
    "length 2**63": (header_file({}, length=2**63), 0),
    "length 2**64-1": (header_file({}, length=2**64 - 1), 0),
    "length over 100 MB": (header_file({}, length=100_000_001) + b" " * 64, 0),
    "truncated JSON": (header_file(None, raw=b'{"a":{"dtype":"F32","sha'), 8 + 20),  # the open string
    "not an object": (header_file(None, raw=b'[1, 2, 3]'), 8),
    "not UTF-8": (header_file(None, raw=b'{"a\xff":1}'), 8 + 3),
    "unknown dtype": (header_file({"a": {"dtype": "F128", "shape": [1], "data_offsets": [0, 16]}}, b"\0" * 16), 8 + 1),
    "negative offset": (header_file({"a": {"dtype": "U8", "shape": [1], "data_offsets": [-1, 0]}}), 8 + 1),
    "reversed offsets": (header_file({"a": {"dtype": "U8", "shape": [0], "data_offsets": [4, 0]}}, b"\0" * 4), 8 + 1),
    "bad shape": (header_file({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}}, b"\0"), 8 + 1),
    "metadata not strings": (header_file({"__metadata__": {"a": 1}}), 8 + 1),
    "integer past the digit limit": (header_file(None, raw=b'{"a":{"dtype":"U8","shape":[' + b"9" * 5000
                                                    + b'],"data_offsets":[0,0]}}'), 8),
    "nested past the parser's stack": (header_file(None, raw=b'{"a":' + b"[" * 200_000 + b"]" * 200_000 + b"}"), 8),
    "duplicate name": (header_file(None, raw=b'{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},'
                                             b'"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}'), 8 + 1),
}


def offsets_case(name: str) -> tuple[bytes, int]:
    u8 = lambda s, e: {"dtype": "U8", "shape": [e - s], "data_offsets": [s, e]}  # noqa: E731
    if name == "overlapping":
        blob = header_file({"a": u8(0, 8), "b": u8(4, 12)}, b"\0" * 12)
        return blob, len(blob) - 12 + 4
    if name == "gap":
        blob = header_file({"a": u8(0, 4), "b": u8(8, 12)}, b"\0" * 12)
        return blob, len(blob) - 12 + 8
    if name == "past the data":
        blob = header_file({"a": u8(0, 16)}, b"\0" * 8)
        return blob, len(blob) + 8  # where the tensors claim to end, 8 bytes past the object
    if name == "data left over":
        blob = header_file({"a": u8(0, 4)}, b"\0" * 8)
        return blob, len(blob) - 4
    if name == "shape mismatch":
        blob = header_file({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8)
        return blob, len(blob) - 8
    if name == "many huge dimensions":
        # Multiplied out, this shape's product would have 62 million bits; it is not.
        blob = header_file({"a": {"dtype": "U8", "shape": [2**62] * 1_000_000, "data_offsets": [0, 8]}}, b"\0" * 8)
        return blob, len(blob) - 8
    if name == "huge shape":
        blob = header_file({"a": {"dtype": "F64", "shape": [2**62, 2**62], "data_offsets": [0, 8]}}, b"\0" * 8)
        return blob, len(blob) - 8
    raise AssertionError(name)


OFFSET_CASES = ["overlapping", "gap", "past the data", "data left over", "shape mismatch", "huge shape",
                "many huge dimensions"]


@pytest.mark.parametrize("case", [*HOSTILE, *OFFSET_CASES])
def test_hostile_header_is_a_value_error_naming_the_offset(case):
    blob, offset = HOSTILE[case] if case in HOSTILE else offsets_case(case)
    started = time.perf_counter()
    with pytest.raises(ValueError, match=rf"\(at offset {offset}\)"):
        st.parse_header(blob, len(blob))
    assert time.perf_counter() - started < 5
    # The reference refuses each as well (it agrees these are not safetensors files), except a
    # name given twice, where its JSON parser keeps one of the two.
    if case != "duplicate name":
        with pytest.raises(Exception):
            safetensors.deserialize(blob)


class Recording:
    """A client that records the ranges asked for, to show a hostile length reads nothing more."""

    def __init__(self, client: brisk.Client) -> None:
        self.client = client
        self.asked: list[int] = []

    def __getattr__(self, name: str):
        return getattr(self.client, name)

    def get_range(self, bucket, key, offset, length, **kw):
        self.asked.append(length)
        return self.client.get_range(bucket, key, offset, length, **kw)

    def get(self, bucket, key):
        self.asked.append(self.client.head(bucket, key).size)
        return self.client.get(bucket, key)


@pytest.mark.parametrize("case", ["length 2**63", "length past the object", "length over 100 MB", "truncated JSON"])
@pytest.mark.parametrize("call", ["load", "load_ranges", "iter_tensors", "load_into"])
def test_hostile_object_fails_before_any_large_read(server, client, bucket, case, call, monkeypatch):
    blob, offset = HOSTILE[case]
    client.put(bucket, "h.safetensors", blob)
    rec = Recording(client)
    with pytest.raises(ValueError, match=rf"\(at offset {offset}\)"):
        if call.startswith("load_into"):
            st.load_into(rec, bucket, "h.safetensors", {})
        elif call == "iter_tensors":
            next(st.iter_tensors(rec, bucket, "h.safetensors"))
        else:
            st.load(rec, bucket, "h.safetensors", queue_depth=4 if call == "load_ranges" else None)
    assert max(rec.asked) <= len(blob), rec.asked


def test_large_header_is_read_past_the_first_range(server, client, bucket, monkeypatch):
    monkeypatch.setattr(st, "_PREFIX", 256)
    tensors = {f"tensor.with.a.long.name.{i:04}": numpy.full(3, i, numpy.int16) for i in range(50)}
    client.put(bucket, "wide.safetensors", reference.save(tensors))
    hdr = st.header(client, bucket, "wide.safetensors")
    assert hdr.data_start > 256 * 4
    got = dict(st.iter_tensors(client, bucket, "wide.safetensors"))
    assert all(equal(got[n], a) for n, a in tensors.items())
