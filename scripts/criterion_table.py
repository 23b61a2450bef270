#!/usr/bin/env python3
"""Summarise the criterion results under target/criterion as one table: each case's median throughput in
GiB/s and as a fraction of the memcpy baseline measured in the same run. Standard library only."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
rows = []
for bench in sorted(root.glob("**/new/benchmark.json")):
    meta = json.loads(bench.read_text())
    throughput = (meta.get("throughput") or {}).get("Bytes")
    if not throughput:
        continue
    estimates = json.loads((bench.parent / "estimates.json").read_text())
    median_ns = estimates["median"]["point_estimate"]
    rows.append((meta["full_id"], throughput / median_ns * 1e9 / 2**30))

baseline = next((g for name, g in rows if name.startswith("memcpy/")), None)
print(f"| case | GiB/s (median) | x memcpy |")
print(f"|---|---|---|")
for name, gib in rows:
    ratio = f"{gib / baseline:.3f}" if baseline else "-"
    print(f"| {name} | {gib:.2f} | {ratio} |")
