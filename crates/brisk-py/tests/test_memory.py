"""Memory, asserted: what `get` and `get_into` cost the process (RSS of a fresh process, and
tracemalloc for Python-side allocations), and the memory budget's hold on Buffers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import brisk

MiB = 1024 * 1024

# Run in a fresh interpreter: imports, the runtime and one connection are set up before the
# measurement (a 1-byte GET), then RSS is read around the one call measured.
MEASURE = textwrap.dedent(
    """
    import json, sys, tracemalloc
    import numpy as np
    import brisk

    def rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024

    endpoint, bucket, key, mode = sys.argv[1:5]
    client = brisk.Client(endpoint, access_key_id="brisktestroot",
                          secret_access_key="brisk-test-secret-key", region="us-east-1")
    client.get(bucket, "one-byte")
    size = client.head(bucket, key).size
    if mode == "get_into":
        target = np.ones(size, dtype=np.uint8)  # allocated and touched before the measurement
    tracemalloc.start()
    before = rss()
    if mode == "get":
        buf = client.get(bucket, key)
        n = len(buf)
    else:
        n = client.get_into(bucket, key, target)
    after = rss()
    _, traced_peak = tracemalloc.get_traced_memory()
    print(json.dumps({"size": size, "n": n, "growth": after - before, "traced_peak": traced_peak}))
    """
)


def measure(server, bucket, key, mode):
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, server.endpoint, bucket, key, mode],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def big_object(brisk_server, tmp_path_factory):
    client = brisk_server.client()
    bucket = "memory-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    client.put(bucket, "one-byte", b"x")
    path = tmp_path_factory.mktemp("big") / "256MiB.bin"
    with open(path, "wb") as f:
        chunk = np.random.default_rng(3).integers(0, 256, 8 * MiB, dtype=np.uint8).tobytes()
        for _ in range(32):
            f.write(chunk)
    client.upload(path, bucket, "256MiB")
    path.unlink()
    return bucket, "256MiB"


def test_get_grows_the_process_by_the_object_and_no_more(brisk_server, big_object):
    bucket, key = big_object
    r = measure(brisk_server, bucket, key, "get")
    assert r["n"] == r["size"] == 256 * MiB
    assert r["growth"] <= 1.05 * r["size"], r
    # No object-sized allocation on the Python side: the bytes live in the Rust buffer.
    assert r["traced_peak"] < MiB, r


def test_get_into_a_preallocated_buffer_grows_the_process_by_almost_nothing(brisk_server, big_object):
    bucket, key = big_object
    r = measure(brisk_server, bucket, key, "get_into")
    assert r["n"] == r["size"]
    assert r["growth"] < 16 * MiB, r
    assert r["traced_peak"] < MiB, r


def test_buffers_count_against_the_budget_until_released(brisk_server):
    client = brisk_server.client(max_memory="64MiB")
    bucket = "budget-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    data = os.urandom(40 * MiB)
    client.put(bucket, "40MiB", data)
    assert client.memory()["capacity"] == 64 * MiB

    first = client.get(bucket, "40MiB")
    assert client.memory()["reserved"] >= 40 * MiB

    # A second 40 MiB does not fit while the first is held: the call waits.
    done = threading.Event()
    result = {}

    def second():
        result["buf"] = client.get(bucket, "40MiB")
        done.set()

    t = threading.Thread(target=second)
    t.start()
    deadline = time.monotonic() + 30
    while client.memory()["waiting"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.memory()["waiting"] == 1
    assert not done.wait(0.5), "the second get must wait while the first buffer is held"

    # Releasing the first Buffer gives its bytes back; the second get then fits.
    del first
    assert done.wait(30), "the second get did not complete after the first buffer was released"
    t.join()
    assert bytes(result["buf"]) == data
    result.clear()
    # The released Buffer's memory is kept for the next get of its size, still reserved.
    memory = client.memory()
    assert memory["reserved"] - memory["kept"] < MiB


def test_release_gives_the_bytes_back_at_once(brisk_server):
    client = brisk_server.client(max_memory="16MiB", kept_buffers=0)
    bucket = "release-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    client.put(bucket, "k", os.urandom(10 * MiB))
    buf = client.get(bucket, "k")
    assert client.memory()["reserved"] >= 10 * MiB
    buf.release()
    assert client.memory()["reserved"] < MiB
    again = client.get(bucket, "k")
    assert len(again) == 10 * MiB
    assert client.memory()["kept_reuses"] == 0


def test_a_released_buffer_is_kept_for_the_next_get_of_its_size(brisk_server):
    """A data loader's loop: get, use, release, get the next object of about the same size. The
    released Buffer's memory is kept (still reserved) and the next get reads into it; a call that
    needs the bytes takes them back at once."""
    client = brisk_server.client(max_memory="32MiB")
    bucket = "kept-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    first, second = os.urandom(10 * MiB), os.urandom(9 * MiB)
    client.put(bucket, "first", first)
    client.put(bucket, "second", second)
    buf = client.get(bucket, "first")
    buf.release()
    memory = client.memory()
    assert memory["kept"] == 10 * MiB and memory["reserved"] == 10 * MiB
    again = client.get(bucket, "second")
    assert bytes(again) == second, "every byte is the second object's, none the first's"
    assert client.memory()["kept_reuses"] == 1
    del again
    # Four ranges' 24 MiB (in 8 MiB blocks: 32) do not fit beside the 10 kept: the kept memory is
    # given up, and nothing waits.
    offsets = [0, MiB, 2 * MiB, 3 * MiB]
    ranges = client.get_ranges(bucket, "first", offsets, 6 * MiB)
    assert client.memory()["kept"] == 0
    assert [bytes(r) == first[o : o + 6 * MiB] for r, o in zip(ranges, offsets)] == [True] * 4


def test_an_object_larger_than_the_budget_fails_at_once(brisk_server):
    client = brisk_server.client(max_memory="4MiB")
    bucket = "toolarge-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    client.put(bucket, "k", os.urandom(5 * MiB))
    with pytest.raises(brisk.MemoryBudgetExceeded) as info:
        client.get(bucket, "k")
    assert isinstance(info.value, MemoryError)
    # The error names the settings that raise the budget.
    assert "max_memory=" in str(info.value) and "BRISK_MAX_MEMORY" in str(info.value), info.value
    # get_into needs no budget: the memory is the caller's.
    target = bytearray(5 * MiB)
    assert client.get_into(bucket, "k", target) == 5 * MiB
    with pytest.raises(brisk.MemoryBudgetExceeded):
        client.get_ranges(bucket, "k", list(range(0, 5 * MiB, 1 * MiB)), MiB)
    assert client.get_ranges(bucket, "k", list(range(0, 5 * MiB, MiB)), MiB, into=target) == 5 * MiB


def test_get_ranges_buffers_go_back_to_the_pool(brisk_server):
    client = brisk_server.client(max_memory="64MiB")
    bucket = "pool-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    client.put(bucket, "k", os.urandom(8 * MiB))
    bufs = client.get_ranges(bucket, "k", list(range(0, 8 * MiB, 256 * 1024)), 256 * 1024)
    assert client.memory()["reserved"] >= 8 * MiB
    del bufs
    # Blocks return to the pool's free lists (still reserved while cached, up to the pool's retention),
    # and a second batch reuses them without growing the reservation.
    reserved = client.memory()["reserved"]
    bufs = client.get_ranges(bucket, "k", list(range(0, 8 * MiB, 256 * 1024)), 256 * 1024)
    assert client.memory()["reserved"] <= max(reserved, 8 * MiB + MiB)


def test_a_freed_batch_is_kept_for_the_next_within_the_retention(brisk_server):
    """Blocks of a freed batch stay in the pool (a quarter of the budget by default), so the next
    batch reuses them instead of mapping and faulting in fresh memory; what is kept stays reserved."""
    bucket = "retain-" + os.urandom(4).hex()
    setup = brisk_server.client()
    setup.create_bucket(bucket)
    setup.put(bucket, "k", os.urandom(8 * MiB))
    block = 256 * 1024
    offsets = [(i % 32) * block for i in range(512)]  # 512 x 256 KiB = 128 MiB held at once

    client = brisk_server.client(max_memory="1GiB")
    for _ in range(2):
        buffers = client.get_ranges(bucket, "k", offsets, block)
        assert client.memory()["reserved"] >= 128 * MiB
        del buffers
        # All 128 MiB kept (the retention is 256 MiB), and the second batch reused them.
        assert client.memory()["reserved"] == 128 * MiB

    small = brisk_server.client(max_memory="1GiB", pool_retention="32MiB")
    buffers = small.get_ranges(bucket, "k", offsets, block)
    del buffers
    assert small.memory()["reserved"] == 32 * MiB


# The default budget: read in a fresh interpreter, since the process-wide budget is sized once.
DEFAULT_BUDGET = textwrap.dedent(
    """
    import json, sys
    import brisk
    try:
        client = brisk.Client(sys.argv[1], access_key_id="a", secret_access_key="b", region="us-east-1")
    except brisk.ConfigError as e:
        print(json.dumps({"error": str(e)}))
    else:
        print(json.dumps(client.memory()))
    """
)


def default_memory(server, env_value=None):
    env = {k: v for k, v in os.environ.items() if k != "BRISK_MAX_MEMORY"}
    if env_value is not None:
        env["BRISK_MAX_MEMORY"] = env_value
    out = subprocess.run(
        [sys.executable, "-c", DEFAULT_BUDGET, server.endpoint],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_default_budget_is_sized_to_the_machine_and_says_where_from(brisk_server):
    memory = default_memory(brisk_server)
    assert memory["source"] in ("cgroup memory.max", "cgroup memory.limit_in_bytes", "MemTotal", "default")
    assert memory["capacity"] >= 1024 * MiB
    if memory["source"] == "MemTotal":
        with open("/proc/meminfo") as f:
            total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
        assert memory["capacity"] == max(total // 2, 1024 * MiB)
    # BRISK_MAX_MEMORY sets it, and an explicit max_memory= wins over both.
    assert default_memory(brisk_server, "3GiB")["capacity"] == 3 * 1024 * MiB
    assert default_memory(brisk_server, "3GiB")["source"] == "BRISK_MAX_MEMORY"
    explicit = brisk_server.client(max_memory="64MiB").memory()
    assert (explicit["capacity"], explicit["source"]) == (64 * MiB, "max_memory")
    # A variable that is not a size is a configuration error, not a silent default.
    assert "BRISK_MAX_MEMORY" in default_memory(brisk_server, "lots")["error"]


# A fresh interpreter gets the object with a default client: its length, a few bytes (each 8-byte
# word holds its own index), the time taken and the process's peak RSS.
GET_DEFAULT = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    import brisk

    endpoint, bucket, key = sys.argv[1:4]
    client = brisk.Client(endpoint, access_key_id="brisktestroot",
                          secret_access_key="brisk-test-secret-key", region="us-east-1")
    start = time.perf_counter()
    buf = client.get(bucket, key)
    seconds = time.perf_counter() - start
    words = np.frombuffer(memoryview(buf), dtype=np.uint64)
    picks = [0, 1, len(words) // 3, len(words) // 2, len(words) - 1]
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    print(json.dumps({"n": len(buf), "picks": picks, "words": [int(words[i]) for i in picks],
                      "seconds": seconds, "peak_rss": hwm, "memory": client.memory()}))
    """
)


def test_a_default_client_gets_a_1_5_gib_object(brisk_server, tmp_path):
    """Issue 37: a new user's first `get` of a large checkpoint works without max_memory."""
    size = 1536 * MiB
    memory = default_memory(brisk_server)
    if memory["capacity"] < size:
        pytest.skip(f"the default budget here is {memory['capacity']} bytes ({memory['source']})")
    client = brisk_server.client()
    bucket = "default-budget-" + os.urandom(4).hex()
    client.create_bucket(bucket)
    path = tmp_path / "1.5GiB.bin"
    chunk_words = 8 * MiB
    with open(path, "wb") as f:
        for i in range(size // (8 * chunk_words)):
            f.write(np.arange(i * chunk_words, (i + 1) * chunk_words, dtype=np.uint64).tobytes())
    try:
        client.upload(path, bucket, "checkpoint")
        path.unlink()
        env = {k: v for k, v in os.environ.items() if k != "BRISK_MAX_MEMORY"}
        out = subprocess.run(
            [sys.executable, "-c", GET_DEFAULT, brisk_server.endpoint, bucket, "checkpoint"],
            capture_output=True, text=True, timeout=300, env=env,
        )
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"1.5 GiB get with the default budget: {r['seconds']:.2f} s, peak RSS "
              f"{r['peak_rss'] / MiB:.0f} MiB, budget {r['memory']['capacity']} ({r['memory']['source']})")
        assert r["n"] == size
        assert r["words"] == r["picks"]
        assert r["peak_rss"] < size + 256 * MiB, r
    finally:
        path.unlink(missing_ok=True)
        client.delete(bucket, "checkpoint")
        client.delete_bucket(bucket)
