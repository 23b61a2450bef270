#!/usr/bin/env bash
# brisk's Python package next to obstore, boto3 and s3fs, each client in its own fresh process against
# one `brisk serve` (bench/python_clients.py says how each is driven and measured). One command
# regenerates the "Python clients" tables of BENCHMARKS.md:
#
#   bench/python.sh              1 GiB into memory, random 256 KiB reads at QD 1/8/64/128 (5 s), 1 GiB upload;
#                                4 rounds, the first a warm-up (about 20 minutes)
#   bench/python.sh --quick      a 64 MiB object, QD 8 and 64 for 1 s, 2 rounds (two minutes)
#
# Further options (bench/python_clients.py run --help): --cases get,random,upload (and write,
# upload_fileobj, download_fileobj, sequential: Python file objects), --rtt-ms N (a latency proxy), --clients NAMES,
# --depths 1,64, --duration S, --repeats N, --size 1GiB, --scratch DIR, --out DIR.
# Writes bench/results/python-brisk-DATE.{tsv,json,md}; `bench/python_clients.py table FILE.tsv` reprints it.
#
# boto3, awscrt and obstore at the versions pinned in bench/venv.sh, numpy and this checkout's brisk
# package (a release build) go into .bench-venv/; s3fs, whose aiobotocore pins an older botocore than
# boto3 wants, into .bench-venv-s3fs/. Needs python3 with venv, cargo, /usr/bin/time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

source bench/venv.sh
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check numpy==2.4.6 fsspec==2026.9.0
# The package from this checkout, rebuilt each time (a release build: pip's default for maturin).
CARGO_TARGET_DIR="$root/target" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --force-reinstall --no-deps ./crates/brisk-py

s3fs_venv="$root/.bench-venv-s3fs"
if [ ! -x "$s3fs_venv/bin/python" ]; then
  python3 -m venv "$s3fs_venv"
fi
if ! "$s3fs_venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null | grep -qx 's3fs==2026.9.0'; then
  "$s3fs_venv/bin/python" -m pip install --quiet --disable-pip-version-check s3fs==2026.9.0
fi

cargo build --release --locked --quiet -p brisk-cli -p latency-proxy

exec "$venv/bin/python" bench/python_clients.py run --command-line "bench/python.sh${*:+ $*}" "$@"
