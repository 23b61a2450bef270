#!/usr/bin/env bash
# brisk next to azure-storage-blob on one Azurite (bench/azure_compare.py says what is measured):
#
#   bench/azure.sh                    a 256 MiB blob, 3 rounds after a warm-up
#   bench/azure.sh --size 64MiB --repeats 1
#
# Installs Azurite (scripts/install-azurite) and azure-storage-blob into .bench-venv; builds brisk.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source bench/venv.sh
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check azure-storage-blob==12.31.1
scripts/install-azurite
cargo build --release --locked --quiet -p brisk-cli
exec "$venv/bin/python" bench/azure_compare.py --python "$venv/bin/python" "$@"
