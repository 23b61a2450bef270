"""fsspec's own conformance suite (`fsspec.tests.abstract`: copy, get, put, pipe, open) run against
`brisk://`, on `brisk serve` and on MinIO, as s3fs and gcsfs run it in their own tests.

The fixtures follow s3fs's (`s3fs/tests/derived/s3fs_fixtures.py`): the path is a fresh bucket, and
object stores have no empty directories (a "directory" is a prefix that some key has).
"""

from __future__ import annotations

import fsspec.tests.abstract as abstract
import pytest

from brisk.fsspec import BriskFileSystem
from conftest import ACCESS_KEY, SECRET_KEY


class BriskFixtures(abstract.AbstractFixtures):
    @pytest.fixture
    def fs(self, server):
        return BriskFileSystem(endpoint_url=server.endpoint, key=ACCESS_KEY, secret=SECRET_KEY,
                               region="us-east-1", skip_instance_cache=True)

    @pytest.fixture
    def fs_path(self, bucket):
        return bucket

    @pytest.fixture
    def supports_empty_directories(self):
        return False


class TestBriskCopy(abstract.AbstractCopyTests, BriskFixtures):
    pass


class TestBriskGet(abstract.AbstractGetTests, BriskFixtures):
    pass


class TestBriskPut(abstract.AbstractPutTests, BriskFixtures):
    pass


class TestBriskPipe(abstract.AbstractPipeTests, BriskFixtures):
    pass


class TestBriskOpen(abstract.AbstractOpenTests, BriskFixtures):
    pass
