"""The engines brisk's users read and write with, each through `brisk://` on a small partitioned
dataset, against brisk serve and MinIO: pandas (parquet, CSV), pyarrow datasets, DuckDB, Polars,
Dask on a `LocalCluster` of worker processes (brisk serve only: the cluster is the slow part), and
zarr v3 with chunked arrays.

Every test writes the dataset through the engine, reads it back through the engine (with a filter
and a column subset where the engine has them) and compares the values exactly with what was
written. Credentials go in as fsspec storage options (`endpoint_url`, `key`, `secret`, `region`),
not the environment, so that Dask's workers get them the way a user's would.
"""

from __future__ import annotations

import uuid

import dask.dataframe as dd
import distributed
import duckdb
import fsspec
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
import zarr
from pyarrow.fs import FSSpecHandler, PyFileSystem
from zarr.storage import FsspecStore

ROWS = 3000
PARTS = ["a", "b", "c"]
COLUMNS = ["id", "part", "value", "label"]


def frame() -> pd.DataFrame:
    """The dataset: `ROWS` rows in three partitions (`part`), an exact float column and strings."""
    i = np.arange(ROWS, dtype=np.int64)
    return pd.DataFrame({
        "id": i,
        "part": np.array(PARTS)[i % len(PARTS)],
        "value": np.random.default_rng(32).random(ROWS),
        "label": [f"row-{n}" for n in i],
    })


def rows(df: pd.DataFrame, columns: list[str]) -> list[tuple]:
    """`columns` of `df` as plain Python tuples in `id` order, whatever dtypes the engine read them
    as (a hive partition column comes back as a category or dictionary)."""
    df = df.sort_values("id")
    return list(zip(*(df[c].tolist() for c in columns)))


def expected(columns: list[str] = COLUMNS, part: str | None = None, below: float | None = None) -> list[tuple]:
    df = frame()
    if part is not None:
        df = df[df["part"] == part]
    if below is not None:
        df = df[df["value"] < below]
    return rows(df, columns)


@pytest.fixture
def options(server) -> dict[str, str]:
    """fsspec storage options for `server`."""
    env = server.env()
    return {"endpoint_url": server.endpoint, "key": env["AWS_ACCESS_KEY_ID"],
            "secret": env["AWS_SECRET_ACCESS_KEY"], "region": env["AWS_REGION"]}


@pytest.fixture
def fs(options):
    return fsspec.filesystem("brisk", skip_instance_cache=True, **options)


def objects(fs, prefix: str, suffix: str) -> list[str]:
    return sorted(p for p in fs.find(prefix) if p.endswith(suffix))


def test_pandas_parquet_partitioned(options, fs, bucket):
    url = f"brisk://{bucket}/pandas.parquet"
    frame().to_parquet(url, partition_cols=["part"], storage_options=options, index=False)
    files = objects(fs, f"{bucket}/pandas.parquet", ".parquet")
    assert [f.split("/")[-2] for f in files] == [f"part={p}" for p in PARTS]

    back = pd.read_parquet(url, storage_options=options)
    assert rows(back, COLUMNS) == expected()
    subset = pd.read_parquet(url, storage_options=options, columns=["id", "value"],
                             filters=[("part", "==", "b"), ("value", "<", 0.5)])
    assert list(subset.columns) == ["id", "value"]
    assert rows(subset, ["id", "value"]) == expected(["id", "value"], part="b", below=0.5)


def test_pandas_csv_partitioned(options, fs, bucket):
    df = frame()
    for part, group in df.groupby("part"):
        # One plain file and one gzip'd per partition: text mode and compression through brisk://.
        half = len(group) // 2
        group.iloc[:half].to_csv(f"brisk://{bucket}/csv/part={part}/0.csv", storage_options=options, index=False)
        group.iloc[half:].to_csv(f"brisk://{bucket}/csv/part={part}/1.csv.gz", storage_options=options,
                                 index=False, compression="gzip")
    files = objects(fs, f"{bucket}/csv", "")
    assert len(files) == 2 * len(PARTS)

    back = pd.concat(pd.read_csv(f"brisk://{f}", storage_options=options) for f in files)
    assert rows(back, COLUMNS) == expected()
    b = pd.concat(pd.read_csv(f"brisk://{f}", storage_options=options, usecols=["id", "value"])
                  for f in files if "/part=b/" in f)
    assert list(b.columns) == ["id", "value"]
    assert rows(b, ["id", "value"]) == expected(["id", "value"], part="b")


def test_pyarrow_dataset_filter_and_columns(fs, bucket):
    pafs = PyFileSystem(FSSpecHandler(fs))
    table = pa.Table.from_pandas(frame(), preserve_index=False)
    ds.write_dataset(table, f"{bucket}/arrow", format="parquet", filesystem=pafs,
                     partitioning=ds.partitioning(pa.schema([("part", pa.string())]), flavor="hive"),
                     max_rows_per_file=400, max_rows_per_group=400)
    files = objects(fs, f"{bucket}/arrow", ".parquet")
    # 1000 rows a partition, 400 a file: three files in each.
    assert len(files) == 3 * len(PARTS)

    dataset = ds.dataset(f"{bucket}/arrow", format="parquet", partitioning="hive", filesystem=pafs)
    assert sorted(dataset.files) == files
    whole = dataset.to_table()
    assert rows(whole.to_pandas(), COLUMNS) == expected()
    subset = dataset.to_table(columns=["id", "value"], filter=(pc.field("part") == "c") & (pc.field("value") < 0.5))
    assert subset.column_names == ["id", "value"]
    assert rows(subset.to_pandas(), ["id", "value"]) == expected(["id", "value"], part="c", below=0.5)


def test_duckdb_copy_and_read_parquet(fs, bucket):
    con = duckdb.connect()
    try:
        con.register_filesystem(fs)
        df = frame()  # noqa: F841 (DuckDB reads the local frame by its name)
        # A partitioned COPY into a directory that does not exist yet makes it, then lists it to
        # check that it is empty: in an object store a prefix exists only once a key is below it,
        # and fsspec's contract for such stores (its conformance suite, which s3fs passes too)
        # has `ls` of it raise FileNotFoundError. OVERWRITE_OR_IGNORE skips that check.
        con.execute(f"COPY df TO 'brisk://{bucket}/duck' (FORMAT parquet, PARTITION_BY (part), OVERWRITE_OR_IGNORE)")
        files = objects(fs, f"{bucket}/duck", ".parquet")
        assert sorted({f.split("/")[-2] for f in files}) == [f"part={p}" for p in PARTS]

        source = f"read_parquet('brisk://{bucket}/duck/*/*.parquet', hive_partitioning = true)"
        whole = con.execute(f"SELECT id, part, value, label FROM {source} ORDER BY id").fetchall()
        assert whole == expected()
        subset = con.execute(f"SELECT id, value FROM {source} WHERE part = 'a' AND value < 0.5 ORDER BY id").fetchall()
        assert subset == expected(["id", "value"], part="a", below=0.5)

        # A single file written and read by its own URL, as well.
        con.execute(f"COPY (SELECT id, label FROM df WHERE id % 7 = 0) TO 'brisk://{bucket}/sevens.parquet'")
        sevens = con.execute(f"SELECT id, label FROM 'brisk://{bucket}/sevens.parquet' ORDER BY id").fetchall()
        assert sevens == [(r[0], r[1]) for r in expected(["id", "label"]) if r[0] % 7 == 0]
    finally:
        con.close()


def test_polars_through_file_objects(options, fs, bucket):
    # Polars reads URLs with its own object store, which knows no brisk:// (it takes one for a local
    # path); what it takes from fsspec is file objects, and storage_options with use_pyarrow=True.
    df = pl.from_pandas(frame())
    for (part,), group in df.partition_by("part", as_dict=True).items():
        with fs.open(f"{bucket}/polars/part={part}/data.parquet", "wb") as f:
            group.drop("part").write_parquet(f, row_group_size=300)
        with fs.open(f"{bucket}/polars-csv/part={part}/data.csv", "wb") as f:
            group.write_csv(f)
    files = objects(fs, f"{bucket}/polars", ".parquet")
    assert len(files) == len(PARTS)

    handles = [fs.open(f, "rb") for f in files]
    try:
        scanned = (pl.scan_parquet(handles)
                   .filter(pl.col("value") < 0.5)
                   .select("id", "value")
                   .collect())
    finally:
        for h in handles:
            h.close()
    assert scanned.columns == ["id", "value"]
    assert sorted(scanned.rows()) == expected(["id", "value"], below=0.5)

    with fs.open(f"{bucket}/polars/part=b/data.parquet", "rb") as f:
        b = pl.read_parquet(f, columns=["id", "label"])
    assert sorted(b.rows()) == expected(["id", "label"], part="b")

    # A URL with storage_options is opened with fsspec.open and handed to pyarrow: one file, not a
    # directory of them.
    c = pl.read_parquet(f"brisk://{bucket}/polars/part=c/data.parquet", storage_options=options, use_pyarrow=True,
                        columns=["id", "value", "label"])
    assert sorted(c.rows()) == expected(["id", "value", "label"], part="c")

    csv = []
    for f in objects(fs, f"{bucket}/polars-csv", ".csv"):
        with fs.open(f, "rb") as h:
            csv.append(pl.read_csv(h, schema_overrides={"value": pl.Float64}))
    assert sorted(pl.concat(csv).select(COLUMNS).rows()) == expected()


@pytest.fixture
def brisk_bucket(brisk_server) -> str:
    """A fresh bucket on brisk serve (removed with its objects after the test)."""
    client = brisk_server.client()
    name = "t-" + uuid.uuid4().hex[:16]
    client.create_bucket(name)
    yield name
    keys = [e.key for e in client.list(name)]
    if keys:
        client.delete_many(name, keys)
    client.delete_bucket(name)


def test_dask_local_cluster(brisk_server, brisk_bucket):
    env = brisk_server.env()
    # The workers get the endpoint and credentials from these options alone (the tests set no AWS
    # variables for them to inherit).
    options = {"endpoint_url": brisk_server.endpoint, "key": env["AWS_ACCESS_KEY_ID"],
               "secret": env["AWS_SECRET_ACCESS_KEY"], "region": env["AWS_REGION"]}
    bucket = brisk_bucket
    url = f"brisk://{bucket}/dask"
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit="1GiB",
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        workers = set(client.scheduler_info()["workers"])
        assert len(workers) == 2
        with distributed.get_task_stream(client) as stream:
            dd.from_pandas(frame(), npartitions=4).to_parquet(url, partition_on=["part"], storage_options=options,
                                                              write_index=False)
            subset = dd.read_parquet(url, storage_options=options, columns=["id", "value"],
                                     filters=[("part", "==", "b"), ("value", "<", 0.5)]).compute()
            whole = dd.read_parquet(url, storage_options=options).compute()
        ran_on = {t["worker"] for t in stream.data}
        assert ran_on and ran_on <= workers, "the reads and writes ran on the cluster's workers"
    fs = fsspec.filesystem("brisk", skip_instance_cache=True, **options)
    files = objects(fs, f"{bucket}/dask", ".parquet")
    assert sorted({f.split("/")[-2] for f in files}) == [f"part={p}" for p in PARTS]
    assert list(subset.columns) == ["id", "value"]
    assert rows(subset, ["id", "value"]) == expected(["id", "value"], part="b", below=0.5)
    assert rows(whole, COLUMNS) == expected()


def test_zarr_v3_chunked_arrays(options, fs, bucket):
    cube = np.random.default_rng(3).random((60, 70))
    counts = np.full(1000, -1, dtype=np.int32)
    counts[300:700] = np.arange(400, dtype=np.int32) * 3

    # Written through the store zarr makes from the URL...
    store = FsspecStore.from_url(f"brisk://{bucket}/cube.zarr", storage_options=options)
    root = zarr.create_group(store=store, zarr_format=3, attributes={"seed": 32})
    a = root.create_array("cube", shape=cube.shape, chunks=(16, 25), dtype="float64")
    a[:] = cube
    c = root.create_array("counts", shape=counts.shape, chunks=(128,), dtype="int32", fill_value=-1)
    c[300:700] = counts[300:700]

    # One object a chunk, under zarr v3's default keys; chunks left at the fill value are not stored.
    assert objects(fs, f"{bucket}/cube.zarr/cube/c", "") == sorted(
        f"{bucket}/cube.zarr/cube/c/{i}/{j}" for i in range(4) for j in range(3))
    assert objects(fs, f"{bucket}/cube.zarr/counts/c", "") == [
        f"{bucket}/cube.zarr/counts/c/{i}" for i in range(2, 6)]

    # ...and read through one made from a filesystem object, as zarr's docs make one from s3fs.
    afs = fsspec.filesystem("brisk", asynchronous=True, skip_instance_cache=True, **options)
    back = zarr.open_group(FsspecStore(afs, path=f"{bucket}/cube.zarr", read_only=True), mode="r")
    assert dict(back.attrs) == {"seed": 32}
    assert sorted(back.array_keys()) == ["counts", "cube"]
    assert back["cube"].chunks == (16, 25)
    np.testing.assert_array_equal(back["cube"][:], cube)
    np.testing.assert_array_equal(back["cube"][5:40, 10:60], cube[5:40, 10:60])
    np.testing.assert_array_equal(back["counts"][:], counts)
    np.testing.assert_array_equal(back["counts"][250:320], counts[250:320])
