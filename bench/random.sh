#!/usr/bin/env bash
# Random reads at queue depth: brisk next to boto3, awscrt and obstore against one server, each client in
# its own process (bench/random_reads.py says how each is driven and measured). One command regenerates the
# "Random reads" table of BENCHMARKS.md:
#
#   bench/random.sh                    brisk serve (fsync on), 1 GiB object, 5 points x 5 clients x 3 repeats of 5 s
#                                      (brisk twice: 8 pipelined connections, and brisk-wide, one per read)
#   bench/random.sh --server minio     the same against MinIO (.tools/bin/minio, or $BRISK_MINIO)
#   bench/random.sh --quick            2 points of 1 s, a 64 MiB object, 1 repeat (a minute)
#
# Further options (bench/random_reads.py run --help): --points 256KiB:64,4KiB:64, --duration S, --repeats N,
# --clients brisk,obstore, --object-size 1GiB, --scratch DIR (default /work/scratch-compare), --out DIR.
# Writes bench/results/random-SERVER-DATE.{tsv,md}; `bench/random_reads.py table FILE.tsv` reprints the table.
#
# The Python clients are installed at the versions pinned in bench/venv.sh into .bench-venv/ (reused
# when the versions match). Needs python3 with venv and cargo.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

source bench/venv.sh

cargo build --release --locked --quiet -p brisk-client --example random_read
cargo build --release --locked --quiet -p brisk-cli

exec "$venv/bin/python" bench/random_reads.py run --command-line "bench/random.sh${*:+ $*}" "$@"
