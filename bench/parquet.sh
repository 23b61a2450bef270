#!/usr/bin/env bash
# Parquet through fsspec: pyarrow's `pq.read_table` of one file on `brisk serve` through `brisk://`
# (as a PyFileSystem(FSSpecHandler) and as the fsspec filesystem itself), obstore's FsspecStore,
# s3fs and pyarrow's own C++ S3FileSystem, each read in its own fresh process
# (bench/parquet_read.py says how each is driven and measured). One command regenerates the
# "Parquet through fsspec" table of BENCHMARKS.md:
#
#   bench/parquet.sh             a 1 GiB file (16 row groups x 32 float64 columns), read whole and
#                                4 columns of it; 4 rounds, the first a warm-up (about 10 minutes)
#   bench/parquet.sh --quick     a 64 MiB file, 2 rounds (about a minute)
#   bench/parquet.sh profile     brisk's reads with every fsspec and brisk.Client call logged, then
#                                under perf (or py-spy), next to pyarrow's C++ client
#
# Further options (bench/parquet_read.py run --help): --cases whole,columns, --clients NAMES (also
# the experiments brisk-read_buffer, brisk-parts, brisk-buffer), --repeats N, --size 1GiB,
# --compression snappy, --rtt-ms N (bench/latency-proxy in front of the server), --scratch DIR,
# --out DIR. BRISK_REV=HEAD bench/parquet.sh: the package as committed (see below).
# PARQUET_BRISK_MAX_MEMORY=2GiB: every brisk reader's memory budget (`max_memory`).
# Writes bench/results/parquet-brisk-DATE.{tsv,json,md}; `bench/parquet_read.py table FILE.tsv`
# reprints it.
#
# obstore at the version pinned in bench/venv.sh, pyarrow as scripts/requirements-python.txt pins it,
# fsspec, numpy, py-spy and this checkout's brisk package (a release build) go into .bench-venv/;
# s3fs with the same pyarrow into .bench-venv-s3fs/ (its aiobotocore pins an older botocore than
# boto3 wants). Needs python3 with venv, cargo, /usr/bin/time; perf for `profile` (py-spy otherwise).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

peers=(numpy==2.4.6 fsspec==2026.9.0 pyarrow==26.0.1)

source bench/venv.sh
installed="$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null || true)"
for pin in "${peers[@]}" py-spy==0.4.3; do
  if ! grep -qx "$pin" <<<"$installed"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${peers[@]}" py-spy==0.4.3
    break
  fi
done
# The package from this checkout, rebuilt each time (a release build: pip's default for maturin).
# BRISK_REV=REV builds it as committed at REV instead (`git archive` into the scratch directory, in a
# target directory of its own there, kept for the next build): for a working tree that other edits
# are under way in.
scratch=/work/scratch-parquet
if [ -n "${BRISK_REV:-}" ]; then
  rev="$(git rev-parse --short "$BRISK_REV")"
  src="$scratch/brisk-$rev"
  rm -rf "$src" && mkdir -p "$src"
  git archive "$rev" | tar -x -C "$src"
  CARGO_TARGET_DIR="$scratch/target" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --force-reinstall --no-deps "$src/crates/brisk-py"
  rm -rf "$src"
  export BENCH_BRISK_PACKAGE="$rev (git archive)"
else
  CARGO_TARGET_DIR="$root/target" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --force-reinstall --no-deps ./crates/brisk-py
  dirty="$(git status --porcelain -- crates/brisk-py crates/brisk-client crates/brisk-wire crates/brisk-mem 2>/dev/null | head -1)"
  export BENCH_BRISK_PACKAGE="$(git rev-parse --short HEAD)${dirty:+ + uncommitted changes}"
fi

s3fs_venv="$root/.bench-venv-s3fs"
if [ ! -x "$s3fs_venv/bin/python" ]; then
  python3 -m venv "$s3fs_venv"
fi
installed="$("$s3fs_venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null || true)"
for pin in s3fs==2026.9.0 "${peers[@]}"; do
  if ! grep -qx "$pin" <<<"$installed"; then
    "$s3fs_venv/bin/python" -m pip install --quiet --disable-pip-version-check s3fs==2026.9.0 "${peers[@]}"
    break
  fi
done

cargo build --release --locked --quiet -p brisk-cli -p latency-proxy

mode=run
command_line="bench/parquet.sh"
if [ "${1:-}" = profile ]; then
  mode=profile
  command_line+=" profile"
  shift
fi
exec "$venv/bin/python" bench/parquet_read.py "$mode" --command-line "$command_line${*:+ $*}" "$@"
