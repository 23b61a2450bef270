"""Column-chunk prefetch (brisk._column_prefetch): pyarrow reading some columns of a parquet file
through `brisk://` gets the same columns of the other row groups started side by side, with the
same bytes, the same GETs and no more bytes requested than without it; a filter that prunes row
groups costs at most the prefetch limit; a file that is not parquet reads as before."""

from __future__ import annotations

import gc

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow.fs import FSSpecHandler, PyFileSystem

import brisk._column_prefetch as prefetch_module
import brisk.fsspec as brisk_fsspec

ROWS_PER_GROUP = 16_384  # float64: 128 KiB per column chunk
GROUPS = 8
COLUMNS = 8
BLOCK = 64 * 1024  # reads of at least a block take the read_buffer path


@pytest.fixture
def fs(server, monkeypatch):
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    return fsspec.filesystem("brisk", endpoint_url=server.endpoint, skip_instance_cache=True,
                             block_size=BLOCK)


@pytest.fixture
def table():
    rng = np.random.default_rng(3)
    n = ROWS_PER_GROUP * GROUPS
    # c0 grows with the row, so a filter on it prunes whole row groups by their statistics.
    columns = {"c0": np.arange(n, dtype=np.float64)}
    columns.update({f"c{i}": rng.random(n) for i in range(1, COLUMNS)})
    return pa.table(columns)


@pytest.fixture
def path(fs, bucket, table):
    path = f"{bucket}/t.parquet"
    with fs.open(path, "wb") as f:
        pq.write_table(table, f, row_group_size=ROWS_PER_GROUP, compression="none", use_dictionary=False)
    return path


@pytest.fixture
def instances(monkeypatch):
    """Every ColumnPrefetch made, with counts of the ranges it started and the reads it served."""
    made = []
    original_init = prefetch_module.ColumnPrefetch.__init__
    original_take = prefetch_module.ColumnPrefetch.take
    original_start = prefetch_module.ColumnPrefetch._start

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self.started = self.hits = 0
        made.append(self)

    def take(self, start, length):
        got = original_take(self, start, length)
        self.hits += got is not None
        return got

    def start(self, lo, hi):
        self.started += 1
        return original_start(self, lo, hi)

    monkeypatch.setattr(prefetch_module.ColumnPrefetch, "__init__", init)
    monkeypatch.setattr(prefetch_module.ColumnPrefetch, "take", take)
    monkeypatch.setattr(prefetch_module.ColumnPrefetch, "_start", start)
    return made


def requests_of(fs, read):
    before = fs.client.metrics()["requests"]
    result = read()
    return result, fs.client.metrics()["requests"] - before


@pytest.mark.parametrize("wrap", [True, False], ids=["PyFileSystem", "fsspec"])
def test_some_columns_are_prefetched_with_the_same_bytes_and_requests(fs, path, table, instances,
                                                                      monkeypatch, wrap):
    filesystem = PyFileSystem(FSSpecHandler(fs)) if wrap else fs
    columns = ["c1", "c5"]
    got, with_prefetch = requests_of(fs, lambda: pq.read_table(path, columns=columns, filesystem=filesystem))
    assert got.equals(table.select(columns))
    started = sum(p.started for p in instances)
    hits = sum(p.hits for p in instances)
    # Each column's first chunk tells the pattern; the other row groups' chunks are prefetched.
    assert started >= GROUPS - 2, (started, hits)
    assert hits == started, (started, hits)
    gc.collect()
    assert all(not p.pending for p in instances), "a prefetched range was left behind"
    # The same reads without the prefetch: no more requests with it.
    fs._footers.layouts.clear()
    monkeypatch.setattr(brisk_fsspec, "footer_chunks", lambda tail: None)
    plain, without = requests_of(fs, lambda: pq.read_table(path, columns=columns, filesystem=filesystem))
    assert plain.equals(got)
    assert with_prefetch <= without, (with_prefetch, without)


def test_a_filter_that_prunes_row_groups_reads_the_right_rows(fs, path, table, instances):
    filesystem = PyFileSystem(FSSpecHandler(fs))
    cut = ROWS_PER_GROUP * (GROUPS - 2)
    got = pq.read_table(path, columns=["c0", "c3"], filesystem=filesystem, filters=[("c0", ">=", cut)])
    expected = table.select(["c0", "c3"]).slice(cut)
    assert got.equals(expected)
    # Only the row groups after the first one read are prefetched: none that the filter pruned.
    assert sum(p.started for p in instances) <= 2
    assert sum(p.hits for p in instances) == sum(p.started for p in instances)
    cut = ROWS_PER_GROUP * 2
    got = pq.read_table(path, columns=["c0", "c3"], filesystem=filesystem, filters=[("c0", "<", cut)])
    assert got.equals(table.select(["c0", "c3"]).slice(0, cut))
    # Row groups 2..7 are pruned: what was prefetched for them is the one over-read, within the
    # limit, and held only until the file is closed.
    unread = sum(p.outstanding() for p in instances)
    assert 0 < unread <= prefetch_module.PREFETCH_LIMIT
    assert unread <= (GROUPS - 2) * 2 * (ROWS_PER_GROUP * 8 + 4096)  # chunks and page headers
    for p in instances:
        p.close()
    assert all(not p.pending for p in instances)


def test_the_whole_file_and_a_small_limit(fs, path, table, instances, monkeypatch):
    monkeypatch.setattr(prefetch_module, "PREFETCH_LIMIT", 3 * ROWS_PER_GROUP * 8)
    got = pq.read_table(path, filesystem=PyFileSystem(FSSpecHandler(fs)))
    assert got.equals(table)
    got = pq.read_table(path, columns=["c2", "c4", "c6"], filesystem=PyFileSystem(FSSpecHandler(fs)))
    assert got.equals(table.select(["c2", "c4", "c6"]))


def test_a_file_that_is_not_parquet_reads_as_before(fs, bucket, instances):
    data = np.random.default_rng(1).integers(0, 256, 5 * BLOCK, dtype=np.uint8).tobytes()
    fs.pipe(f"{bucket}/plain", data + b"PAR1")
    with fs.open(f"{bucket}/plain") as f:
        f.seek(len(data) - 100)
        assert f.read() == data[-100:] + b"PAR1"
        f.seek(0)
        assert bytes(f.read_buffer(2 * BLOCK)) == data[: 2 * BLOCK]
    assert instances == []


def test_footer_chunks_refuses_what_is_not_a_whole_footer():
    assert prefetch_module.footer_chunks(b"") is None
    assert prefetch_module.footer_chunks(b"x" * 20 + b"PAR1") is None
    # A footer length past the bytes given.
    assert prefetch_module.footer_chunks(b"x" * 20 + (1000).to_bytes(4, "little") + b"PAR1") is None
    # A length that fits but bytes that are not a footer: pyarrow refuses them, no prefetch.
    assert prefetch_module.footer_chunks(b"x" * 20 + (8).to_bytes(4, "little") + b"PAR1") is None


def test_a_read_spanning_prefetched_ranges_is_assembled_without_asking_twice(fs, bucket):
    data = np.random.default_rng(2).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    bucket_name, key = bucket, "spans"
    fs.pipe(f"{bucket}/{key}", data)
    prefetch = prefetch_module.ColumnPrefetch(fs.client, bucket_name, key, fs.loop, groups=[])
    prefetch._start(1000, 5000)
    prefetch._start(5000, 9000)
    prefetch._start(20_000, 30_000)
    for p in prefetch.pending:
        p.future.result()
    before = fs.client.metrics()["requests"]
    # Inside one range: a view, no request.
    assert bytes(prefetch.take(1500, 100)) == data[1500:1600]
    # Across two adjacent ranges: assembled, no request.
    assert bytes(prefetch.take(4000, 3000)) == data[4000:7000]
    assert fs.client.metrics()["requests"] == before
    # From a range, through a gap, into another, and past it: the gap and the tail are GETs.
    assert bytes(prefetch.take(8000, 30_000)) == data[8000:38_000]
    assert fs.client.metrics()["requests"] == before + 2
    # Nothing prefetched there: the caller reads.
    assert prefetch.take(100_000, 10) is None
    # The ranges with bytes never read stay (until close); the one read whole is dropped.
    assert [(p.start, p.end) for p in prefetch.pending] == [(1000, 5000), (5000, 9000)]
    assert prefetch.outstanding() == (4000 - 100 - 1000) + (4000 - 2000 - 1000)
    prefetch.close()
    assert prefetch.pending == []
