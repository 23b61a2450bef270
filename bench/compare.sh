#!/usr/bin/env bash
# brisk next to boto3, awscrt, obstore and minio-py against one server, each client in its own process measured
# from outside (/usr/bin/time -v). One command regenerates the "Clients" tables of BENCHMARKS.md:
#
#   bench/compare.sh                   brisk serve (fsync on), 256 MiB + 1 GiB in memory, 4 GiB files, 3 repeats
#   bench/compare.sh --server minio    the same against MinIO (.tools/bin/minio, or $BRISK_MINIO)
#   bench/compare.sh --quick           16 + 64 MiB in memory, 256 MiB files, 1 repeat (a minute or two)
#   bench/compare.sh --tls             brisk serve over HTTPS (a self-signed certificate every client trusts)
#
# Further options (bench/compare.py run --help): --repeats N, --get-sizes 256MiB,1GiB, --get-rounds N
# (in-memory GETs of the object per process, each copy dropped before the next), --file-size 4GiB,
# --clients brisk,boto3, --cases get,download,upload, --download-dir DIR (e.g. /dev/shm: downloads to
# tmpfs, as PEERS.md measured them), --scratch DIR (default /work/scratch-compare:
# server data, the source file and downloads; up to 5 times the file size at once), --out DIR.
# Writes bench/results/compare-SERVER-DATE.{tsv,json,md}; `bench/compare.py table FILE.tsv` reprints
# the tables from the raw rows.
#
# The Python clients are installed, at the versions pinned in bench/venv.sh, into .bench-venv/ (reused when the
# versions match). Needs python3 with venv, cargo, /usr/bin/time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

source bench/venv.sh

cargo build --release --locked --quiet -p brisk-client --example get_bytes --example download --example upload
cargo build --release --locked --quiet -p brisk-cli

exec "$venv/bin/python" bench/compare.py run --command-line "bench/compare.sh${*:+ $*}" "$@"
