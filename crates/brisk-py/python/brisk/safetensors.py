"""Safetensors files over S3 (or Azure) with brisk: load, stream, save, sharded models, checkpoints.

```python
import brisk, brisk.safetensors as st
client = brisk.Client("http://127.0.0.1:9000", max_memory="8GiB")
tensors = st.load(client, "models", "model.safetensors")         # views over one exact Buffer
for name, array in st.iter_tensors(client, "models", "model.safetensors", max_memory="256MiB"):
    device_copy(name, array)                                       # at most 256 MiB buffered
st.save(client, "models", "out.safetensors", tensors)              # through open_writer
model = st.load_sharded(client, "models", "llama/model.safetensors.index.json")
```

The format (https://github.com/huggingface/safetensors, "Format"): 8 bytes, an unsigned
little-endian header length N; N bytes of UTF-8 JSON mapping each tensor name to
`{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative to the first byte after the
header) and optionally `"__metadata__"` to a map of strings; then the tensors' bytes, little-endian,
C order. The header is parsed here, not by the reference package, and held to the reference's
rules: N at most 100,000,000 and within the object, JSON that starts with `{`, known dtypes, offsets
that cover the data region exactly (sorted, no gap, no overlap, ending at the object's end) and a
byte length equal to the shape's product times the dtype's size. Anything else is a `ValueError`
naming the offset in the object where the fault is; nothing is allocated from the header before it
is checked against the object's size.

Arrays come back as numpy arrays of the tensor's dtype. numpy has no bfloat16 or 8-bit floats, and
this module adds no dependency for them: BF16 comes back as `uint16` with the tensor's shape,
F8_E4M3, F8_E5M2, F8_E8M0 (and the FNUZ variants) as `uint8` with its shape, and the packed
sub-byte floats (F4, F6_E2M3, F6_E3M2) as a flat `uint8` array of their bytes. `header()` gives
each tensor's safetensors dtype string (`TensorInfo.dtype`), and `.view(ml_dtypes.bfloat16)` (or
`torch.frombuffer(..., dtype=torch.bfloat16)`) reinterprets the bits without a copy.
"""

from __future__ import annotations

import json
import math
import mmap
import posixpath
import sys
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy

from brisk._brisk import parse_size

if TYPE_CHECKING:
    from brisk._brisk import Client, UploadResult

__all__ = [
    "DTYPES",
    "MAX_HEADER_SIZE",
    "Header",
    "TensorInfo",
    "header",
    "iter_tensors",
    "load",
    "load_checkpoint",
    "load_into",
    "load_sharded",
    "parse_header",
    "save",
    "save_checkpoint",
    "serialize_header",
]

# The reference implementation's cap on the header (`safetensors::tensor::MAX_HEADER_SIZE`): a
# header length above it is refused before anything is read or allocated for it.
MAX_HEADER_SIZE = 100_000_000

# The first read of a file: the 8-byte length and, for every model seen in practice, the whole
# header (a 7B model's header is about 30 KiB; 1 MiB is one round trip either way).
_PREFIX = 1 << 20

# The size of one ranged GET. 8 MiB is brisk's part size: large enough that the request's cost is
# lost in the transfer, small enough that many are in flight on a 2 GiB file.
_PART = 8 << 20

# Ranged GETs in flight for one file.
_QUEUE_DEPTH = 16

# Each safetensors dtype: (numpy dtype it comes back as, bits per element). BF16 and the 8-bit
# floats come back as unsigned integers of their width; the sub-byte floats as flat bytes.
DTYPES: dict[str, tuple[numpy.dtype, int]] = {
    "BOOL": (numpy.dtype(numpy.bool_), 8),
    "U8": (numpy.dtype(numpy.uint8), 8),
    "I8": (numpy.dtype(numpy.int8), 8),
    "U16": (numpy.dtype("<u2"), 16),
    "I16": (numpy.dtype("<i2"), 16),
    "F16": (numpy.dtype("<f2"), 16),
    "BF16": (numpy.dtype("<u2"), 16),
    "U32": (numpy.dtype("<u4"), 32),
    "I32": (numpy.dtype("<i4"), 32),
    "F32": (numpy.dtype("<f4"), 32),
    "U64": (numpy.dtype("<u8"), 64),
    "I64": (numpy.dtype("<i8"), 64),
    "F64": (numpy.dtype("<f8"), 64),
    "C64": (numpy.dtype("<c8"), 64),
    "F8_E4M3": (numpy.dtype(numpy.uint8), 8),
    "F8_E5M2": (numpy.dtype(numpy.uint8), 8),
    "F8_E4M3FNUZ": (numpy.dtype(numpy.uint8), 8),
    "F8_E5M2FNUZ": (numpy.dtype(numpy.uint8), 8),
    "F8_E8M0": (numpy.dtype(numpy.uint8), 8),
    "F4": (numpy.dtype(numpy.uint8), 4),
    "F6_E2M3": (numpy.dtype(numpy.uint8), 6),
    "F6_E3M2": (numpy.dtype(numpy.uint8), 6),
}

# numpy dtype names (and ml_dtypes' names, which numpy reports for its types) to safetensors codes,
# for `save`. numpy's own bool, ints and floats, then the types ml_dtypes adds.
_FROM_NUMPY: dict[str, str] = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "uint16": "U16",
    "int16": "I16",
    "float16": "F16",
    "uint32": "U32",
    "int32": "I32",
    "float32": "F32",
    "uint64": "U64",
    "int64": "I64",
    "float64": "F64",
    "complex64": "C64",
    "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "float8_e4m3fnuz": "F8_E4M3FNUZ",
    "float8_e5m2fnuz": "F8_E5M2FNUZ",
    "float8_e8m0fnu": "F8_E8M0",
}

# The reference's `Dtype` enum in its declared order, which orders the tensors of a file it writes.
_RANK = {code: i for i, code in enumerate(
    "BOOL F4 F6_E2M3 F6_E3M2 U8 I8 F8_E5M2 F8_E4M3 F8_E8M0 F8_E4M3FNUZ F8_E5M2FNUZ "
    "I16 U16 F16 BF16 I32 U32 F32 C64 F64 I64 U64".split())}

Tensors = Mapping[str, numpy.ndarray]
Size = Union[int, str]


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a header: its safetensors `dtype` string, `shape`, and where its bytes are in
    the object (`start`, `end`: absolute offsets, the header's `data_offsets` plus `8 + N`)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start

    @property
    def numpy_dtype(self) -> numpy.dtype:
        """The numpy dtype the tensor comes back as (see the module's note on BF16 and F8)."""
        return DTYPES[self.dtype][0]

    @property
    def array_shape(self) -> tuple[int, ...]:
        """The shape of the array it comes back as: its shape, or `(nbytes,)` for the sub-byte
        floats, whose elements are not whole bytes."""
        return self.shape if DTYPES[self.dtype][1] % 8 == 0 else (self.nbytes,)


@dataclass(frozen=True)
class Header:
    """A parsed, checked header: `tensors` in the order of their bytes in the object, `metadata`
    (the `__metadata__` map, or None), `data_start` (8 + N, where the tensors' bytes begin) and
    `size` (the object's size, which the last tensor ends at)."""

    tensors: dict[str, TensorInfo]
    metadata: dict[str, str] | None
    data_start: int
    size: int
    _order: list[TensorInfo] = field(default_factory=list, repr=False, compare=False)


def _fault(offset: int, what: str) -> ValueError:
    return ValueError(f"safetensors header: {what} (at offset {offset})")


def header_length(prefix: bytes | memoryview, size: int) -> int:
    """N, from the object's first 8 bytes, checked against the object's `size` and the reference's
    100 MB cap before anything is allocated for it."""
    if size < 8 or len(prefix) < 8:
        raise _fault(0, f"object of {size} bytes is shorter than the 8-byte header length")
    n = int.from_bytes(bytes(prefix[:8]), "little")
    if n > MAX_HEADER_SIZE:
        raise _fault(0, f"header length {n} is over the limit of {MAX_HEADER_SIZE} bytes")
    if 8 + n > size:
        raise _fault(0, f"header length {n} runs past the end of the {size}-byte object")
    return n


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for k, v in pairs:
        if k in seen:
            raise KeyError(k)
        seen[k] = v
    return seen


def _nonneg_ints(value: Any) -> bool:
    return isinstance(value, list) and all(type(v) is int and v >= 0 for v in value)


def _bits(shape: Sequence[int], width: int, nbytes: int) -> int:
    """The bits a shape's elements take, or just past `8 * nbytes` once the product exceeds it: a
    hostile shape of many huge dimensions is not multiplied out."""
    if 0 in shape:
        return 0
    bits = width
    for d in shape:
        bits *= d
        if bits > 8 * nbytes:
            return 8 * nbytes + 1
    return bits


def parse_header(data: bytes | bytearray | memoryview | numpy.ndarray, size: int) -> Header:
    """Parse and check the header held in `data` (at least the object's first `8 + N` bytes) of an
    object of `size` bytes. Every fault is a `ValueError` naming its offset in the object."""
    view = memoryview(data).cast("B")  # type: ignore[arg-type]
    n = header_length(view, size)
    if len(view) < 8 + n:
        raise _fault(len(view), f"header of {n} bytes is truncated after {len(view) - 8}")
    raw = bytes(view[8 : 8 + n])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fault(8 + e.start, "header is not UTF-8") from None
    if not text.startswith("{"):
        raise _fault(8, "header does not start with '{'")
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        # e.pos counts characters; the offset is in bytes.
        raise _fault(8 + len(text[: e.pos].encode()), f"header is not valid JSON ({e.msg})") from None
    except KeyError as e:
        raise _fault(8 + raw.find(json.dumps(e.args[0]).encode()), f"name {e.args[0]!r} appears twice") from None
    except (ValueError, RecursionError) as e:
        # An integer literal past Python's digit limit, or nesting deeper than the parser's stack.
        raise _fault(8, f"header is not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise _fault(8, "header is not a JSON object")
    data_start = 8 + n
    metadata = doc.pop("__metadata__", None)
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())
    ):
        raise _fault(8 + raw.find(b'"__metadata__"'), "__metadata__ is not a map of strings")

    def where(name: str) -> int:
        return 8 + max(raw.find(json.dumps(name).encode()), raw.find(json.dumps(name, ensure_ascii=False).encode()))

    infos = []
    for name, entry in doc.items():
        if not isinstance(entry, dict):
            raise _fault(where(name), f"tensor {name!r} is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in DTYPES:
            raise _fault(where(name), f"tensor {name!r} has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or not _nonneg_ints(shape):
            raise _fault(where(name), f"tensor {name!r} has a bad shape {shape!r:.200}")
        if not (isinstance(offsets, list) and _nonneg_ints(offsets) and len(offsets) == 2
                and offsets[0] <= offsets[1]):
            raise _fault(where(name), f"tensor {name!r} has bad data_offsets {offsets!r:.200}")
        infos.append(TensorInfo(name, dtype, tuple(shape), data_start + offsets[0], data_start + offsets[1]))
    # The reference sorts by offsets and requires each tensor to start where the one before ended:
    # no gap, no overlap, no byte read twice or never.
    infos.sort(key=lambda t: (t.start, t.end))
    at = data_start
    for t in infos:
        if t.start != at:
            kind = "overlaps the tensor before it" if t.start < at else "leaves a gap before it"
            raise _fault(t.start, f"tensor {t.name!r} at data_offsets "
                         f"[{t.start - data_start}, {t.end - data_start}] {kind} (expected {at - data_start})")
        bits = _bits(t.shape, DTYPES[t.dtype][1], t.nbytes)
        if bits != 8 * t.nbytes:
            need = "more" if bits > 8 * t.nbytes else f"{bits / 8:g}"
            raise _fault(t.start, f"tensor {t.name!r} of dtype {t.dtype} and shape {list(t.shape)!r:.200} "
                         f"needs {need} bytes, its data_offsets give {t.nbytes}")
        at = t.end
    if at != size:
        raise _fault(at, f"tensors end at offset {at} but the object has {size} bytes")
    return Header({t.name: t for t in infos}, metadata, data_start, size, infos)


def _read_header(client: Client, bucket: str, key: str, size: int | None = None) -> tuple[Header, Any]:
    """The header, and the prefix read (a Buffer of the object's first bytes) for reuse."""
    if size is None:
        size = client.head(bucket, key).size
    if size < 8:
        raise _fault(0, f"object of {size} bytes is shorter than the 8-byte header length")
    prefix = client.get_range(bucket, key, 0, min(size, _PREFIX))
    n = header_length(memoryview(prefix), size)
    if 8 + n > len(prefix):
        # A header over 1 MiB: its length is checked against the cap and the object, read the rest.
        rest = client.get_range(bucket, key, len(prefix), 8 + n - len(prefix))
        whole = bytearray(8 + n)
        whole[: len(prefix)] = memoryview(prefix)
        whole[len(prefix) :] = memoryview(rest)
        return parse_header(whole, size), whole
    return parse_header(memoryview(prefix)[: 8 + n], size), prefix


def header(client: Client, bucket: str, key: str) -> Header:
    """The object's parsed and checked header, from a HEAD and one ranged GET of its first MiB
    (more only for a header larger than that)."""
    return _read_header(client, bucket, key)[0]


def _alloc(n: int) -> tuple[numpy.ndarray, object]:
    """A writable uint8 array of exactly `n` bytes and the object that owns its memory (freed when
    the last array over it is).

    From 4 MiB up this is an anonymous mapping of its own rather than `numpy.empty`: numpy asks
    the kernel for transparent huge pages on such allocations (`madvise(MADV_HUGEPAGE)`), and on a
    host whose memory is fragmented (a large page cache) each 2 MiB fault can wait for compaction.
    Filling a 2 GiB buffer by ranged GETs took 1.2-2.4 CPU s/GiB with numpy's allocation and 0.7
    with the plain mapping (docs/safetensors.md). Either way pages are faulted in as bytes land."""
    if n < 4 << 20:
        a = numpy.empty(n, numpy.uint8)
        return a, a
    m = mmap.mmap(-1, n)
    return numpy.frombuffer(m, numpy.uint8), m


def _views(hdr: Header, buf: numpy.ndarray, base: int) -> dict[str, numpy.ndarray]:
    """Arrays over `buf`, which holds the object's bytes from offset `base`: views, no copy; each
    keeps `buf` alive."""
    out = {}
    for t in hdr._order:
        dtype = t.numpy_dtype
        raw = buf[t.start - base : t.end - base]
        out[t.name] = raw.view(dtype).reshape(t.array_shape)
    return out


def _parts(offset: int, length: int, part: int) -> Iterator[tuple[int, int]]:
    end = offset + length
    while offset < end:
        n = min(part, end - offset)
        yield offset, n
        offset += n


def _check_read(got: int, want: int, bucket: str, key: str) -> None:
    if got != want:
        raise ValueError(f"{bucket}/{key}: read {got} bytes where {want} were expected "
                         "(the object changed while it was read?)")


def _read_into(client: Client, bucket: str, key: str, offset: int, dest: numpy.ndarray,
               queue_depth: int = _QUEUE_DEPTH) -> None:
    """The object's bytes `[offset, offset + len(dest))` into `dest`, by ranged GETs of a part each
    written straight from the socket, `queue_depth` at a time.

    Each part is its own `get_into` on a thread of a pool, as `load_into` and `iter_tensors` read:
    one `get_ranges(into=...)` batch measured the same within the noise of a loaded two-core host
    (bench/safetensors_load.py), and a part per call lets each land in its own destination."""
    spans = list(_parts(offset, len(dest), _PART))
    _run_spans(client, bucket, key, spans, [dest[o - offset : o - offset + n].data for o, n in spans], queue_depth)


def _views_of_object(buf: Any) -> dict[str, numpy.ndarray]:
    """The tensors of a whole object held in a `brisk.Buffer`, as views over it."""
    view = memoryview(buf)
    return _views(parse_header(view, len(view)), numpy.frombuffer(view, numpy.uint8), 0)


def _load_ranges(client: Client, bucket: str, key: str, queue_depth: int) -> dict[str, numpy.ndarray]:
    hdr, prefix = _read_header(client, bucket, key)
    # One exact-size allocation for the tensors' bytes (the header is not kept). Its pages are
    # faulted in as the bytes land, so the process grows by the data's size and no more.
    buf, _owner = _alloc(hdr.size - hdr.data_start)
    have = max(0, min(len(prefix), hdr.size) - hdr.data_start)
    if have:
        buf[:have] = numpy.frombuffer(prefix, numpy.uint8, have, hdr.data_start)
    del prefix
    _read_into(client, bucket, key, hdr.data_start + have, buf[have:], queue_depth)
    return _views(hdr, buf, hdr.data_start)


def load(client: Client, bucket: str, key: str, *, queue_depth: int | None = None) -> dict[str, numpy.ndarray]:
    """Every tensor of the object, as numpy arrays that are views over one buffer (no copy; each
    array keeps the buffer alive).

    By default one `Client.get`: the buffer is the `brisk.Buffer` of exactly the object's size,
    counted in the client's memory budget until the last array is freed, and the load costs what
    the GET costs (the header is parsed from the buffer; there is no HEAD and no second read).
    The header is checked once the bytes are in: an object that is not a safetensors file is read
    whole before its `ValueError` (never more than its size, which the budget bounds).

    With `queue_depth=N`: a HEAD, a ranged GET of the first MiB for the header (checked before
    anything else is read), then ranged GETs of 8 MiB, N in flight, written from the socket into
    one anonymous mapping of exactly the tensors' bytes (not counted in the client's budget), for
    links where one connection carries less than the link can. On loopback on a loaded two-core
    host the one GET took less CPU per GiB and was as fast or faster (docs/safetensors.md)."""
    if queue_depth is not None:
        if queue_depth < 1:
            raise ValueError("queue_depth must be at least 1")
        return _load_ranges(client, bucket, key, queue_depth)
    return _views_of_object(client.get(bucket, key))


def load_into(client: Client, bucket: str, key: str, arrays: Mapping[str, Any], *,
              queue_depth: int = _QUEUE_DEPTH) -> Header:
    """Fill arrays the caller allocated (pinned, preallocated, reused between loads) with the
    tensors of the same names, straight from the socket; returns the header.

    `arrays` may name a subset of the tensors: only their bytes are read. Each must be a writable
    C-contiguous buffer of exactly the tensor's byte length; an array of the tensor's numpy dtype
    must also have its shape (another dtype, such as a bfloat16 array for BF16, is filled with the
    raw bytes). A name not in the file, or a size that does not match, is a `ValueError` before any
    tensor's bytes are read."""
    hdr, prefix = _read_header(client, bucket, key)
    targets = []
    for name, array in arrays.items():
        t = hdr.tensors.get(name)
        if t is None:
            raise ValueError(f"{bucket}/{key} has no tensor {name!r}")
        view = memoryview(array)
        if not view.c_contiguous or view.readonly:
            raise ValueError(f"array for {name!r} must be writable and C-contiguous")
        if view.nbytes != t.nbytes:
            raise ValueError(f"array for {name!r} has {view.nbytes} bytes, the tensor {t.nbytes}")
        if isinstance(array, numpy.ndarray) and array.dtype == t.numpy_dtype and array.shape != t.array_shape:
            raise ValueError(f"array for {name!r} has shape {array.shape}, the tensor {t.array_shape}")
        targets.append((t, view.cast("B")))
    spans_all: list[tuple[int, int]] = []
    dests = []
    for t, dest in targets:
        # Bytes already read with the header are copied, not read again.
        have = max(0, min(len(prefix), t.end) - t.start)
        if have:
            dest[:have] = memoryview(prefix)[t.start : t.start + have]
        for o, n in _parts(t.start + have, t.nbytes - have, _PART):
            spans_all.append((o, n))
            dests.append(dest[o - t.start : o - t.start + n])
    del prefix
    _run_spans(client, bucket, key, spans_all, dests, queue_depth)
    return hdr


def _run_spans(client: Client, bucket: str, key: str, spans: Sequence[tuple[int, int]],
               dests: Sequence[memoryview], workers: int) -> None:
    """Each span into its own destination, `workers` ranged GETs at a time."""
    if not spans:
        return

    def one(i: int) -> None:
        o, n = spans[i]
        _check_read(client.get_into(bucket, key, dests[i], offset=o, length=n), n, bucket, key)

    with ThreadPoolExecutor(max(1, min(workers, len(spans)))) as pool:
        for f in [pool.submit(one, i) for i in range(len(spans))]:
            f.result()


class _Group:
    """Tensors next to each other in the file read into one buffer: a run of small tensors up to a
    part, or one larger tensor alone (read in parts). Its buffer is allocated when its first part
    is started; the pages are faulted in as bytes land, so only bytes started count."""

    def __init__(self, tensors: list[TensorInfo], part: int) -> None:
        self.tensors = tensors
        self.start = tensors[0].start
        self.end = tensors[-1].end
        self.parts = list(_parts(self.start, self.end - self.start, part))
        self.buf: numpy.ndarray | None = None
        self.counted = 0  # bytes of this group's buffer counted as held
        self.left = len(self.parts)  # parts not yet landed


def _groups(order: Iterable[TensorInfo], part: int) -> list[_Group]:
    groups: list[_Group] = []
    run: list[TensorInfo] = []
    for t in order:
        if t.nbytes >= part:
            if run:
                groups.append(_Group(run, part))
                run = []
            groups.append(_Group([t], part))
            continue
        if run and (t.start != run[-1].end or t.end - run[0].start > part):
            groups.append(_Group(run, part))
            run = []
        run.append(t)
    if run:
        groups.append(_Group(run, part))
    return groups


class _Held:
    """Bytes read (or being read) into group buffers that are still alive: in flight, landed, or
    yielded and still referenced by the caller. A buffer's bytes leave the count when numpy frees
    it (`weakref.finalize`), whichever thread drops the last array."""

    def __init__(self) -> None:
        # Re-entrant: a garbage collection run while this thread holds the lock may free a
        # buffer, whose finalizer takes it again.
        self.lock = threading.RLock()
        self.bytes = 0
        self.peak = 0

    def add(self, g: _Group, n: int) -> None:
        with self.lock:
            g.counted += n
            self.bytes += n
            self.peak = max(self.peak, self.bytes)

    def free(self, g: _Group) -> None:
        with self.lock:
            self.bytes -= g.counted
            g.counted = 0

    def room(self, n: int, cap: int) -> bool:
        with self.lock:
            return self.bytes + n <= cap


def iter_tensors(client: Client, bucket: str, key: str, *, max_memory: Size = "256MiB",
                 names: Iterable[str] | None = None, part_size: Size = _PART,
                 queue_depth: int = _QUEUE_DEPTH, stats: dict[str, int] | None = None,
                 ) -> Iterator[tuple[str, numpy.ndarray]]:
    """Yield `(name, array)` for each tensor in file order as soon as its bytes have landed, with
    at most `max_memory` bytes read and held: for a file larger than memory, or to copy tensors to
    a device while the rest are still arriving.

    The bytes are read by ranged GETs of `part_size` (8 MiB), `queue_depth` (16) in flight: a run
    of small neighbouring tensors in one GET, a large tensor in parts, each written from the socket
    into the buffer its array will view. A part is started only while the bytes held stay within
    `max_memory`, and bytes are held from when their read starts until the caller lets go of every
    array over them (a run of small tensors shares one buffer). So the process holds at most
    `max_memory` plus one part, whatever the consumer does: a consumer that drops each array
    after use streams at full speed; one that keeps them is never deadlocked, but past the cap
    each part is read alone once nothing else is in flight (for everything in memory, `load` is
    the call). Give `max_memory` a few times the largest tensor: the array the caller is still
    holding while it asks for the next one counts.

    A tensor larger than `max_memory` is a `ValueError` before any tensor is read: it can not be
    streamed under that cap (`load_into` fills an array of any size the caller allocated). `names`
    restricts the read to those tensors. `stats`, if given, receives `peak_bytes` (the most bytes
    held at once) and `requests` (ranged GETs, the header's not counted) at the end."""
    cap = parse_size(max_memory)
    part = parse_size(part_size)
    if part <= 0 or cap <= 0:
        raise ValueError("max_memory and part_size must be positive")
    if queue_depth < 1:
        raise ValueError("queue_depth must be at least 1")
    hdr, prefix = _read_header(client, bucket, key)
    order = hdr._order
    if names is not None:
        wanted = set(names)
        missing = wanted - hdr.tensors.keys()
        if missing:
            raise ValueError(f"{bucket}/{key} has no tensor {sorted(missing)[0]!r}")
        order = [t for t in order if t.name in wanted]
    for t in order:
        if t.nbytes > cap:
            raise ValueError(f"tensor {t.name!r} of {t.nbytes} bytes is larger than max_memory={cap}: "
                             "raise max_memory, or read it with load_into into an array you allocate")
    part = min(part, cap)
    groups = _groups(order, part)
    prefix_view = numpy.frombuffer(prefix, numpy.uint8)
    del prefix
    held = _Held()
    in_flight: dict[Future[int], tuple[_Group, int]] = {}
    requests = 0
    gi = pi = 0  # the next part to start: groups[gi].parts[pi]
    head = 0  # the next group to yield

    def read(dest: numpy.ndarray, o: int, n: int) -> int:
        return client.get_into(bucket, key, dest.data, offset=o, length=n)

    pool = ThreadPoolExecutor(queue_depth)
    try:
        while head < len(groups):
            # Start parts while they fit; with nothing in flight, start one regardless, so that a
            # caller holding arrays past the cap slows the stream but never stops it.
            while gi < len(groups):
                g = groups[gi]
                o, n = g.parts[pi] if g.parts else (g.start, 0)
                if not held.room(n, cap) and (in_flight or groups[head].left == 0):
                    break
                if g.buf is None:
                    g.buf, owner = _alloc(g.end - g.start)
                    weakref.finalize(owner, held.free, g)
                    del owner
                have = max(0, min(len(prefix_view), o + n) - o)
                held.add(g, n)
                if have:
                    # Bytes that came with the header are copied, not read again.
                    g.buf[o - g.start : o - g.start + have] = prefix_view[o : o + have]
                if have < n:
                    dest = g.buf[o - g.start + have : o - g.start + n]
                    in_flight[pool.submit(read, dest, o + have, n - have)] = (g, n - have)
                    requests += 1
                else:
                    g.left -= 1 if g.parts else 0
                pi += 1
                if pi >= len(g.parts):
                    gi, pi = gi + 1, 0
                if not held.room(0, cap):
                    break
            g = groups[head]
            if g.left == 0:
                assert g.buf is not None
                buf, g.buf = g.buf, None
                arrays = _views(Header({}, None, 0, 0, g.tensors), buf, g.start)
                del buf
                head += 1
                for t in g.tensors:
                    a = arrays.pop(t.name)
                    yield t.name, a
                    del a
                del arrays
                continue
            done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for f in done:
                lg, n = in_flight.pop(f)
                _check_read(f.result(), n, bucket, key)
                lg.left -= 1
    finally:
        for f in in_flight:
            f.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        for g in groups:
            g.buf = None  # the finalizers hold the groups; a stream closed early frees its buffers
        if stats is not None:
            stats["peak_bytes"] = held.peak
            stats["requests"] = requests


# ----- writing -----------------------------------------------------------------------------------


def _code(name: str, array: numpy.ndarray, dtypes: Mapping[str, Any] | None) -> tuple[str, tuple[int, ...]]:
    given = (dtypes or {}).get(name)
    if given is None:
        code = _FROM_NUMPY.get(array.dtype.name)
        if code is None:
            raise ValueError(f"tensor {name!r}: no safetensors dtype for numpy {array.dtype}")
        return code, tuple(array.shape)
    code, shape = (given, tuple(array.shape)) if isinstance(given, str) else (given[0], tuple(given[1]))
    if code not in DTYPES:
        raise ValueError(f"tensor {name!r}: unknown safetensors dtype {code!r}")
    return code, shape


def _prepare(tensors: Tensors, dtypes: Mapping[str, Any] | None) -> list[tuple[str, str, tuple[int, ...], numpy.ndarray]]:
    items = []
    for name, array in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"bad tensor name {name!r}")
        array = numpy.asarray(array)
        code, shape = _code(name, array, dtypes)
        if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and sys.byteorder == "big"):
            array = array.byteswap().view(array.dtype.newbyteorder("<"))
        bits = math.prod(shape) * DTYPES[code][1]
        if bits % 8 or bits // 8 != array.nbytes:
            raise ValueError(f"tensor {name!r}: {code} of shape {list(shape)} is {bits / 8:g} bytes, "
                             f"the array {array.nbytes}")
        items.append((name, code, shape, array))
    # The reference's order (its `Dtype` enum, last first, then by name): wider dtypes come first,
    # so each tensor starts aligned to its element size (the header is padded to 8 bytes), and the
    # bytes are the same as the reference's for the same tensors.
    items.sort(key=lambda i: (-_RANK[i[1]], i[0]))
    return items


def serialize_header(tensors: Tensors, metadata: Mapping[str, str] | None = None, *,
                     dtypes: Mapping[str, Any] | None = None) -> bytes:
    """The 8-byte length and JSON header `save` writes for `tensors` (padded with spaces so the
    data starts at a multiple of 8, as the reference writes it)."""
    return _header_bytes(_prepare(tensors, dtypes), metadata)


def _header_bytes(items: list[tuple[str, str, tuple[int, ...], numpy.ndarray]],
                  metadata: Mapping[str, str] | None) -> bytes:
    doc: dict[str, Any] = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise ValueError("metadata must map strings to strings")
        doc["__metadata__"] = dict(metadata)
    at = 0
    for name, code, shape, array in items:
        doc[name] = {"dtype": code, "shape": list(shape), "data_offsets": [at, at + array.nbytes]}
        at += array.nbytes
    text = json.dumps(doc, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    return len(text).to_bytes(8, "little") + text


def save(client: Client, bucket: str, key: str, tensors: Tensors, *,
         metadata: Mapping[str, str] | None = None, dtypes: Mapping[str, Any] | None = None,
         ) -> UploadResult:
    """Write `tensors` (name to array) as a safetensors object through `Client.open_writer`: the
    header, then each array's bytes written from where they are (a non-contiguous array is copied
    one at a time), in parts of the client's part size, so memory stays within the writer's parts
    in flight whatever the size. Nothing is stored unless every byte was written.

    `dtypes` names a safetensors dtype for arrays whose numpy dtype does not say it, such as
    `{"w": "BF16"}` for a uint16 array of bfloat16 bits; for the sub-byte floats give the logical
    shape too, `{"w": ("F4", (4, 8))}`, the array holding the packed bytes."""
    items = _prepare(tensors, dtypes)
    head = _header_bytes(items, metadata)
    with client.open_writer(bucket, key) as w:
        w.write(head)
        for _name, _code, _shape, array in items:
            if array.nbytes:
                w.write(numpy.ascontiguousarray(array).data.cast("B"))
    assert w.result is not None
    return w.result


# ----- many files ------------------------------------------------------------------------------


def _load_many(client: Client, bucket: str, keys: Sequence[str], queue_depth: int) -> list[dict[str, numpy.ndarray]]:
    """Several files at once, each as `load` does, by one `Client.get_many`: `queue_depth` GETs in
    flight, every Buffer from the client's one memory budget. Files that together would pass the
    budget's capacity fail (`MemoryBudgetExceeded`, raised here) rather than wait for memory
    only the result would free."""
    results = client.get_many(bucket, keys, queue_depth=max(1, queue_depth))
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        # The other files' Buffers go back to the budget now, not when the traceback (which holds
        # this frame) is dropped.
        del results
        raise errors[0]
    return [_views_of_object(r) for r in results]


def load_sharded(client: Client, bucket: str, index_key: str, *, queue_depth: int = 16) -> dict[str, numpy.ndarray]:
    """A sharded model: the index (`model.safetensors.index.json`, whose `weight_map` maps each
    tensor to its shard's file name, relative to the index) and its shards, loaded in parallel
    (one `get_many`, `queue_depth` shards at a time, each as `load`, all from the client's one
    memory budget). Every tensor of the weight map must be in the
    shard it names, and no name in two shards: otherwise a `ValueError`."""
    index = json.loads(bytes(client.get(bucket, index_key)))
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise ValueError(f"{bucket}/{index_key}: no weight_map of tensor names to shard files")
    directory = posixpath.dirname(index_key)
    shards = sorted(set(weight_map.values()))
    keys = [posixpath.join(directory, s) if directory else s for s in shards]
    loaded = _load_many(client, bucket, keys, queue_depth)
    out: dict[str, numpy.ndarray] = {}
    for shard, tensors in zip(shards, loaded):
        for name, array in tensors.items():
            if name in out:
                raise ValueError(f"tensor {name!r} is in more than one shard (again in {shard})")
            out[name] = array
    for name, shard in weight_map.items():
        if name not in out:
            raise ValueError(f"tensor {name!r} of the weight_map is not in its shard {shard}")
    return out


_MANIFEST = "checkpoint.json"


def save_checkpoint(client: Client, bucket: str, prefix: str, shards: Mapping[str, Tensors], *,
                    metadata: Mapping[str, str] | None = None, workers: int = 8) -> list[str]:
    """A checkpoint of many files, one per shard (per rank, or per group of tensors): `shards` maps
    a shard name to its tensors; each becomes `{prefix}/{shard}.safetensors`, written in parallel
    (`workers` at a time, each through `open_writer`, all drawing their parts from the client's one
    memory budget). Then `{prefix}/checkpoint.json` lists the shards: it is written last, so a
    checkpoint whose save failed part way has no manifest and `load_checkpoint` refuses it. Returns
    the keys written, the manifest last."""
    prefix = prefix.rstrip("/")
    names = list(shards)
    for s in names:
        if not s or "/" in s or s.startswith("."):
            raise ValueError(f"bad shard name {s!r}")
    keys = [f"{prefix}/{s}.safetensors" for s in names]
    with ThreadPoolExecutor(max(1, min(workers, len(names) or 1))) as pool:
        results = list(pool.map(lambda i: save(client, bucket, keys[i], shards[names[i]], metadata=metadata),
                                range(len(names))))
    manifest = {"format": "safetensors", "shards": {s: {"key": posixpath.basename(k), "size": r.size}
                                                    for s, k, r in zip(names, keys, results)}}
    if metadata:
        manifest["metadata"] = dict(metadata)
    client.put(bucket, f"{prefix}/{_MANIFEST}", json.dumps(manifest, indent=1).encode(),
               content_type="application/json")
    return [*keys, f"{prefix}/{_MANIFEST}"]


def load_checkpoint(client: Client, bucket: str, prefix: str, *, shards: Iterable[str] | None = None,
                    queue_depth: int = 16) -> dict[str, dict[str, numpy.ndarray]]:
    """A checkpoint `save_checkpoint` wrote: shard name to its tensors, the files loaded in
    parallel by one `get_many` (`queue_depth` at a time, each as `load`), all from the client's
    one memory budget: files that together pass its capacity are `MemoryBudgetExceeded`, raised
    before any array is returned. `shards` loads only those (a rank's own). No manifest (a save
    that did not finish) is the client's `NoSuchKey`."""
    prefix = prefix.rstrip("/")
    manifest = json.loads(bytes(client.get(bucket, f"{prefix}/{_MANIFEST}")))
    listed = manifest.get("shards") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict):
        raise ValueError(f"{bucket}/{prefix}/{_MANIFEST} lists no shards")
    names = list(listed) if shards is None else list(shards)
    for s in names:
        if s not in listed:
            raise ValueError(f"checkpoint {prefix} has no shard {s!r}")
    keys = [f"{prefix}/{listed[s]['key']}" for s in names]
    return dict(zip(names, _load_many(client, bucket, keys, queue_depth)))
