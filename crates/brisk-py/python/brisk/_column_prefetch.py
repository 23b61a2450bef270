"""Column-chunk prefetch for parquet files read through `brisk://` by pyarrow.

pyarrow reads a file of an fsspec filesystem through its Python file wrapper, which takes one lock
per file for every read: the column chunks it pre-buffers (all the ranges of the columns asked
for, issued at once to its I/O threads) therefore reach `BriskFile.read_buffer` one after another,
each a GET that waits for the one before. pyarrow's own C++ S3 client sends them side by side.

This module lets the file see the ranges coming. When the file's tail holds a parquet footer
(read by pyarrow first, whatever it reads next), it is parsed with pyarrow itself (already
imported: nothing happens unless `pyarrow.parquet` is) into the byte range of every column chunk
of every row group. A large read that covers some columns' chunks of one row group (less than half its bytes, and
nothing of another: a scan of every column is left to pyarrow's own large reads), once it has
been read so in two row groups, is then taken as the pattern of the reads to come: the same columns of the row groups after it, which
`read_table(columns=...)` and the dataset scanner read, in order, unless a filter prunes row
groups. Those
ranges are started at once, `IN_FLIGHT` at a time, each into a Buffer of the client's budget when
the budget has room to spare (else an anonymous mapping outside it, so that a prefetch never waits
for memory pyarrow holds), on the client's pooled keep-alive connections, from the filesystem's event loop. A later read that falls inside one range waits for
it and gets a view of it, with no copy; one that spans ranges (pyarrow merges adjacent chunks, also
across row groups) is assembled from them and ranged GETs of any bytes between, so no byte that was
prefetched is requested twice.

Bounded: at most `PREFETCH_LIMIT` bytes are prefetched and not yet read. A range prefetched and
never read (a later row group a filter pruned: the one cost of guessing) is dropped when the file
is closed; a read that matches
nothing is read as before. A footer that does not parse leaves the file as it was.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import mmap
import sys
from dataclasses import dataclass, field
from typing import Any

#: Prefetched bytes not yet read, at most.
PREFETCH_LIMIT = 256 * 1024 * 1024
#: Smaller unrequested pieces are left to the read that needs them.
MIN_PREFETCH = 64 * 1024
#: A file's prefetches in flight at once, each on a connection of the client's pool: as many as
#: pyarrow's own S3 client keeps (its I/O pool's 8 threads), enough to cover a round trip.
IN_FLIGHT = 8


@dataclass
class _Prefetch:
    start: int
    end: int
    future: concurrent.futures.Future | None = field(repr=False)
    #: The bytes once they landed: a brisk.Buffer, or an anonymous mapping.
    buffer: Any = field(repr=False)
    #: Bytes of it handed out so far: it is dropped once every byte has been.
    served: int = 0


def footer_chunks(tail) -> list[dict[int, tuple[int, int]]] | None:
    """Each row group's column chunks (`{column: (start, end)}`) from a file's last bytes (any
    buffer), if they hold a whole parquet footer and pyarrow is already imported; else None."""
    pq = sys.modules.get("pyarrow.parquet")
    tail = memoryview(tail).cast("B")
    if pq is None or len(tail) < 12 or tail[-4:] != b"PAR1":
        return None
    footer_length = int.from_bytes(tail[-8:-4], "little")
    if footer_length + 8 > len(tail):
        return None
    try:
        metadata = pq.ParquetFile(io.BytesIO(tail[-(footer_length + 8):])).metadata
        groups = []
        for r in range(metadata.num_row_groups):
            row_group = metadata.row_group(r)
            chunks = {}
            for c in range(row_group.num_columns):
                column = row_group.column(c)
                start = column.data_page_offset
                if column.has_dictionary_page and column.dictionary_page_offset is not None:
                    start = min(start, column.dictionary_page_offset)
                chunks[c] = (start, start + column.total_compressed_size)
            groups.append(chunks)
        return groups
    except Exception:  # a footer pyarrow cannot read: no prefetch, the reads go on as before
        return None


class FooterCache:
    """The column-chunk layouts of the last `capacity` parquet objects a filesystem read the
    footer of, by (bucket, key, size): pyarrow's dataset API reads a file's footer through one
    open file and its columns through another. A layout only steers prefetching: the bytes a read
    returns always come from a GET made for it, so an object rewritten meanwhile costs misses,
    never wrong bytes."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.layouts: dict[tuple[str, str, int], list[dict[int, tuple[int, int]]]] = {}

    def remember(self, object_id: tuple[str, str, int], groups: list[dict[int, tuple[int, int]]]) -> None:
        self.layouts.pop(object_id, None)
        self.layouts[object_id] = groups
        while len(self.layouts) > self.capacity:
            del self.layouts[next(iter(self.layouts))]

    def get(self, object_id: tuple[str, str, int]) -> list[dict[int, tuple[int, int]]] | None:
        return self.layouts.get(object_id)


class ColumnPrefetch:
    """The prefetch state of one open file (see the module docs). Not thread-safe: pyarrow's file
    wrapper serializes the calls into it."""

    def __init__(self, client: Any, bucket: str, key: str, loop: asyncio.AbstractEventLoop,
                 groups: list[dict[int, tuple[int, int]]]) -> None:
        self.client = client
        self.bucket = bucket
        self.key = key
        self.loop = loop
        self.groups = groups
        self.pending: list[_Prefetch] = []
        # The (row group, columns) whose ranges were started or read already.
        self.seen: set[tuple[int, frozenset[int]]] = set()
        # For each set of columns read alone within a row group, the row groups it was read in.
        self.read_in: dict[frozenset[int], set[int]] = {}
        # The byte ranges requested so far, by reads and prefetches (sorted, disjoint).
        self.claimed: list[tuple[int, int]] = []
        # Prefetches in flight at once (each holds a connection while it runs).
        self.gate = asyncio.Semaphore(IN_FLIGHT)

    def outstanding(self) -> int:
        return sum(p.end - p.start - p.served for p in self.pending)

    def take(self, start: int, length: int):
        """The `length` bytes at `start` if prefetched ranges hold any of them (waiting for those
        to land), else None: a view when one range holds them all, else a mapping of their
        length assembled from the ranges' bytes and ranged GETs of the rest (pyarrow coalesces
        adjacent chunks, so a read may span two ranges, or a range and bytes never prefetched).
        A range that failed is dropped; its bytes are read again."""
        end = start + length
        overlapping = [p for p in self.pending if p.start < end and start < p.end]
        if not overlapping:
            return None
        landed = []
        for p in overlapping:
            try:
                p.future.result()
                landed.append(p)
            except Exception:
                self.pending.remove(p)
        if not landed:
            return None
        for p in landed:
            p.served += min(end, p.end) - max(start, p.start)
            if p.served >= p.end - p.start:
                self.pending.remove(p)
        if len(landed) == 1 and landed[0].start <= start and end <= landed[0].end:
            p = landed[0]
            if start == p.start and end == p.end:
                return p.buffer
            return memoryview(p.buffer)[start - p.start: end - p.start]
        out = mmap.mmap(-1, length)
        view = memoryview(out)
        at = start
        for p in sorted(landed, key=lambda p: p.start):
            lo, hi = max(start, p.start), min(end, p.end)
            if at < lo:
                self._read_into(view[at - start: lo - start], at)
            view[lo - start: hi - start] = memoryview(p.buffer)[lo - p.start: hi - p.start]
            at = max(at, hi)
        if at < end:
            self._read_into(view[at - start:], at)
        return out

    def _read_into(self, view: memoryview, offset: int) -> None:
        got = self.client.get_into(self.bucket, self.key, view, offset=offset, length=len(view))
        if got != len(view):
            raise EOFError(f"{self.key}: {got} bytes at {offset}, expected {len(view)}")

    def after_read(self, start: int, length: int) -> None:
        """Starts the ranges that follow the pattern of a read of `length` bytes at `start`: the
        same columns of the row groups after its own (pyarrow reads row groups in order; one
        before it was either read already or pruned by a filter), less every byte requested
        already, by a read or a prefetch (pyarrow's reads merge chunks differently from one row
        group to the next, so patterns overlap)."""
        end = start + length
        self._claim(start, end)
        touched = [(r, frozenset(c for c, (s, e) in chunks.items() if start < e and s < end))
                   for r, chunks in enumerate(self.groups)]
        touched = [(r, columns) for r, columns in touched if columns]
        # A read over two row groups, or over half of one or more, is a scan of (nearly) every
        # column: pyarrow's own reads are then large and few, and prefetching would only add
        # copies (its merged ranges do not fall on row groups).
        if len(touched) != 1:
            return
        r, columns = touched[0]
        chunks = self.groups[r]
        if not all(start <= chunks[c][0] and chunks[c][1] <= end for c in columns):
            return
        group_bytes = sum(e - s for s, e in chunks.values())
        if 2 * sum(chunks[c][1] - chunks[c][0] for c in columns) >= group_bytes:
            return
        self.seen.add((r, columns))
        # The pattern is trusted once pyarrow has read it in two row groups: a scan's merged
        # ranges fall differently in each row group, a column selection's chunks do not.
        read_in = self.read_in.setdefault(columns, set())
        read_in.add(r)
        if len(read_in) < 2:
            return
        for other in range(r + 1, len(self.groups)):
            chunks = self.groups[other]
            if (other, columns) in self.seen or not all(c in chunks for c in columns):
                continue
            lo = min(chunks[c][0] for c in columns)
            hi = max(chunks[c][1] for c in columns)
            self.seen.add((other, columns))
            for a, b in self._unclaimed(lo, hi):
                if b - a < MIN_PREFETCH:
                    continue  # a sliver between claimed bytes: the read that needs it gets it
                if self.outstanding() + (b - a) > PREFETCH_LIMIT:
                    return
                self._start(a, b)

    def _claim(self, start: int, end: int) -> None:
        """Notes that the bytes `start..end` are requested (merged into `claimed`)."""
        merged = []
        for s, e in self.claimed:
            if e < start or end < s:
                merged.append((s, e))
            else:
                start, end = min(s, start), max(e, end)
        merged.append((start, end))
        merged.sort()
        self.claimed = merged

    def _unclaimed(self, start: int, end: int) -> list[tuple[int, int]]:
        """The parts of `start..end` no read or prefetch has requested."""
        parts = []
        at = start
        for s, e in self.claimed:
            if e <= at or s >= end:
                continue
            if s > at:
                parts.append((at, s))
            at = max(at, e)
        if at < end:
            parts.append((at, end))
        return parts

    def _start(self, start: int, end: int) -> None:
        self._claim(start, end)
        length = end - start
        prefetch = _Prefetch(start, end, None, None)
        # A Buffer of the client's budget (its pages made resident as the body arrives) when the
        # budget has room for it and every other prefetch besides, so it never waits for memory
        # pyarrow holds; else an anonymous mapping outside the budget (as read_buffer's fallback).
        use_budget = self.client.memory()["available"] >= length + PREFETCH_LIMIT
        prefetch.future = asyncio.run_coroutine_threadsafe(
            _fetch(self.client, self.bucket, self.key, start, length, self.gate, prefetch, use_budget),
            self.loop)
        self.pending.append(prefetch)

    def close(self) -> None:
        for p in self.pending:
            p.future.cancel()
        self.pending.clear()


async def _fetch(client: Any, bucket: str, key: str, start: int, length: int, gate: asyncio.Semaphore,
                 prefetch: _Prefetch, use_budget: bool) -> None:
    """`length` bytes at `start` into `prefetch.buffer`, on the event loop (where brisk's coroutines
    are made), at most `IN_FLIGHT` of a file's at a time."""
    async with gate:
        if use_budget:
            prefetch.buffer = await client.get_range_async(bucket, key, start, length)
            return
        buffer = mmap.mmap(-1, length)
        got = await client.get_into_async(bucket, key, buffer, offset=start, length=length)
        if got != length:
            raise EOFError(f"{key}: {got} bytes at {start}, expected {length}")
        prefetch.buffer = buffer
