#!/usr/bin/env python3
"""Medians and ranges of bench/server.sh output, one row per configuration.

Reads the lines `bench/server.sh` prints (`<group> <label>=<v> ... rep=<n> op=... gib_s=... ...`) on
stdin, groups them by everything before `rep=` and prints a Markdown table row per group: GiB/s,
server CPU s per GiB, server CPU ms per request and RSS growth, each as median (min-max).
"""

import re
import statistics
import sys

FIELDS = ["gib_s", "srv_cpu_s_per_gib", "srv_cpu_ms_per_req", "srv_rss_growth_mib"]


def cell(values):
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.3g}"
    return f"{med:.3g} ({min(values):.3g}-{max(values):.3g})"


def main():
    groups = {}
    for line in sys.stdin:
        m = re.match(r"^(.*?) rep=\d+ (op=.*)$", line.strip())
        if not m:
            continue
        values = dict(kv.split("=", 1) for kv in m.group(2).split())
        row = groups.setdefault(m.group(1), {f: [] for f in FIELDS})
        for f in FIELDS:
            if f in values:
                row[f].append(float(values[f]))
    print("| configuration | runs | GiB/s | server CPU s/GiB | server CPU ms/request | RSS growth MiB |")
    print("|---|---|---|---|---|---|")
    for name, row in groups.items():
        runs = len(row["gib_s"])
        print(f"| {name} | {runs} | " + " | ".join(cell(row[f]) for f in FIELDS) + " |")


if __name__ == "__main__":
    main()
