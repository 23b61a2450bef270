"""A client used before `fork()` keeps working in the child (its runtime and connections are rebuilt
there) and in the parent; nothing hangs."""

from __future__ import annotations

import hashlib
import multiprocessing
import os

import pytest

import brisk

TIMEOUT = 60


def child_reads(client, bucket, queue):
    try:
        buf = client.get(bucket, "obj")
        ranges = client.get_ranges(bucket, "obj", [0, 1000], 100)
        queue.put((hashlib.sha256(buf).hexdigest(), [bytes(r) for r in ranges]))
    except BaseException as e:  # reported to the parent
        queue.put(("error", repr(e)))


@pytest.mark.parametrize("children", [1, 2])
def test_client_works_in_a_forked_child(server, children):
    client = server.client()
    bucket = "fork-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    data = os.urandom(3 * 1024 * 1024)
    client.put(bucket, "obj", data)
    # Use the client first: its runtime threads run and a connection sits in its pool.
    assert bytes(client.get(bucket, "obj")) == data
    ctx = multiprocessing.get_context("fork")
    for _ in range(children):
        queue = ctx.Queue()
        p = ctx.Process(target=child_reads, args=(client, bucket, queue))
        p.start()
        p.join(TIMEOUT)
        if p.is_alive():
            p.kill()
            pytest.fail(f"the child did not finish within {TIMEOUT} s")
        assert p.exitcode == 0
        digest, ranges = queue.get(timeout=10)
        assert digest == hashlib.sha256(data).hexdigest(), ranges
        assert ranges == [data[:100], data[1000:1100]]
    # The parent's client is untouched by its children.
    assert bytes(client.get(bucket, "obj")) == data
