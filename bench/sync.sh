#!/usr/bin/env bash
# brisk sync next to aws s3 sync with many small objects (bench/sync_compare.py says what is measured):
#
#   bench/sync.sh                          2,000 files of 4 KiB, 3 rounds after a warm-up
#   bench/sync.sh --files 500 --repeats 1
#
# The AWS CLI is the one in the test venv (.venv, set up by scripts/test); brisk is built for release.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ ! -x .venv/bin/aws ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
fi
cargo build --release --locked --quiet -p brisk-cli
exec .venv/bin/python bench/sync_compare.py "$@"
