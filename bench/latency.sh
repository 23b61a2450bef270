#!/usr/bin/env bash
# Random reads under latency: brisk next to obstore and awscrt with a round trip and a first-byte
# latency added by bench/latency-proxy (this kernel has no netem), 256 KiB blocks. One command
# regenerates the "Random reads under latency" tables of BENCHMARKS.md:
#
#   bench/latency.sh                  both sweeps below, 3 repeats of 4 s a point, clients rotated
#   bench/latency.sh --before-example PATH --clients brisk-before,brisk,brisk-wide,obstore,awscrt
#                                     the same with the random_read example of an earlier build as a
#                                     fifth client (a change of defaults measured before and after in
#                                     one run)
#
# 1. `brisk serve` (fsync on), RTT 0.5, 2 and 10 ms with a first-byte latency L equal to the RTT,
#    queue depth 16, 64 and 256. The proxy delays each pipelined response from its own request's
#    arrival (a server that works on a connection's requests at once).
# 2. MinIO (.tools/bin/minio), the same latencies at queue depth 16 and 64, with `--serial`: L counts
#    from the end of the previous response on the connection, as it does for a server that answers a
#    connection's requests one at a time (Go's net/http; brisk serve too) behind a slow backend.
#
# Environment: RTTS (default 0.5,2,10), REPEATS (3), DURATION (4). Further options go to both runs
# (bench/random_reads.py run --help). Writes bench/results/random-SERVER-DATE.{tsv,md}.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

source bench/venv.sh

cargo build --release --locked --quiet -p brisk-client --example random_read
cargo build --release --locked --quiet -p brisk-cli
cargo build --release --locked --quiet -p latency-proxy

rtts="${RTTS:-0.5,2,10}"
common=(--rtt-ms "$rtts" --first-byte-ms "$rtts" --repeats "${REPEATS:-3}" --duration "${DURATION:-4}"
        --clients brisk,brisk-wide,obstore,awscrt)
"$venv/bin/python" bench/random_reads.py run --command-line "bench/latency.sh${*:+ $*} (brisk serve)" \
    --server brisk --points 256KiB:16,256KiB:64,256KiB:256 "${common[@]}" "$@"
"$venv/bin/python" bench/random_reads.py run --command-line "bench/latency.sh${*:+ $*} (MinIO)" \
    --server minio --serial --points 256KiB:16,256KiB:64 "${common[@]}" "$@"
