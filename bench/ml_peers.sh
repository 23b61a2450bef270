#!/usr/bin/env bash
# Training data from Python: brisk against Mountpoint's CRT client (s3torchconnectorclient), s3dlio,
# obstore and boto3, each client in its own fresh process, on `brisk serve` and on MinIO
# (bench/ml_peers.py says how each is driven and measured). One command regenerates the tables of
# "Training data from Python" in BENCHMARKS.md:
#
#   bench/ml_peers.sh                 4,096 x 128 KiB and 8,192 x 16 KiB objects at 64 in flight, 1 GiB
#                                     into memory, random 256 KiB ranges at QD 64 (5 s), a 2 GiB
#                                     safetensors load; 4 rounds per server, the first a warm-up
#   bench/ml_peers.sh --quick         small counts and sizes, 2 rounds (a few minutes)
#
# Further options (bench/ml_peers.py run --help): --server brisk|minio|both (default both),
# --cases many128,many16,get,random,safetensors, --clients NAMES, --repeats N, --duration S.
# Writes bench/results/ml-peers-DATE.{tsv,md}; `bench/ml_peers.py table FILE.tsv` reprints it.
#
# The peers go into a venv of this benchmark's own, .bench-venv-ml/, at pinned versions (none of them
# is a dependency of the package), with numpy and this checkout's brisk package (a release build).
# PyTorch is never installed: s3torchconnectorclient (the Rust/CRT client under s3torchconnector) and
# s3dlio load without it. MinIO: .tools/bin/minio (scripts/install-minio). Needs python3 with venv,
# cargo, /usr/bin/time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Pinned so that reruns compare like with like; raise them deliberately, and rerun every table.
pins=(s3torchconnectorclient==1.5.0 s3dlio==0.10.0 obstore==0.12.1 boto3==1.44.5 numpy==2.4.6)

venv="$root/.bench-venv-ml"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
installed="$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null || true)"
for pin in "${pins[@]}"; do
  if ! grep -qx "$pin" <<<"$installed"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
    break
  fi
done
if "$venv/bin/python" -m pip freeze --disable-pip-version-check | grep -qi '^torch=='; then
  echo "torch is in $venv: remove it (this benchmark never installs it)" >&2
  exit 1
fi
# The package from this checkout, rebuilt each time (a release build: pip's default for maturin).
CARGO_TARGET_DIR="$root/target" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --force-reinstall --no-deps ./crates/brisk-py

cargo build --release --locked --quiet -p brisk-cli
if [ ! -x .tools/bin/minio ] && [[ " $* " != *" --server brisk "* ]]; then
  echo "MinIO not found at .tools/bin/minio: run scripts/install-minio, or pass --server brisk" >&2
  exit 1
fi

exec "$venv/bin/python" bench/ml_peers.py run --command-line "bench/ml_peers.sh${*:+ $*}" "$@"
