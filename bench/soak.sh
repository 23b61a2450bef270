#!/usr/bin/env bash
# Soak of `brisk serve` (release build, its own process): CLIENTS concurrent clients of mixed PUT, GET,
# ranged GET, LIST and DELETE for DURATION seconds, run by the `soak` mode of s3_load (bench/s3-load). Every
# byte read back and every listing is checked; any failed request or wrong byte is an error. The
# server's RSS, threads and descriptors are sampled every second from /proc/<pid>, its CPU time read
# before and after. The server runs with its defaults (fsync on, MD5 ETags on) and the access log off.
# Everything written is deleted by the clients at the end, the bucket removed, the data root deleted.
#
#   bench/soak.sh [s3_load soak options...]     e.g. --max-requests 100000 --max-size 1MiB
#
# Environment: DURATION (600 s), CLIENTS (64), BENCH_ROOT (data root, default /var/tmp/brisk-soak:
# the local disk; tmpfs is refused), SERVE_FLAGS (more `brisk serve` flags, e.g. --no-fsync),
# BRISK_BIN (another server build), SOAK_OUT (output file, default
# bench/results/soak-<UTC date and time>.txt), NOTE (a line of context written into the output).
# Exit status: the soak's (non-zero when any request failed).
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-600}
CLIENTS=${CLIENTS:-64}
ROOT=${BENCH_ROOT:-/var/tmp/brisk-soak}
OUT=${SOAK_OUT:-bench/results/soak-$(date -u +%Y-%m-%dT%H%M%S).txt}
read -r -a EXTRA_SERVE <<<"${SERVE_FLAGS:-}"
# Credentials through the environment `brisk serve` reads, not its command line.
export BRISK_ACCESS_KEY=soakkey
export BRISK_SECRET_KEY=soaksecret

cargo build --release --locked -q -p brisk-cli
cargo build --release --locked -q -p s3-load
TARGET=${CARGO_TARGET_DIR:-target}
BRISK=${BRISK_BIN:-$TARGET/release/brisk}
LOAD=$TARGET/release/s3_load

mkdir -p "$(dirname "$ROOT")" "$(dirname "$OUT")"
FSTYPE=$(findmnt -no FSTYPE -T "$(dirname "$ROOT")")
if [ "$FSTYPE" = tmpfs ] || [ "$FSTYPE" = ramfs ]; then
    echo "soak.sh: $ROOT is on $FSTYPE; the soak wants the local disk (set BENCH_ROOT)" >&2
    exit 2
fi

WORK=$(mktemp -d)
PID=
stop_server() {
    if [ -n "$PID" ]; then
        kill -TERM "$PID" 2>/dev/null || true
        # Close the stdin pipe as well: the server reads its stdin on a blocking thread that its
        # runtime waits for when it exits, so with the pipe open it would not exit after SIGTERM.
        exec 3>&-
        SERVER_STATUS=0
        wait "$PID" 2>/dev/null || SERVER_STATUS=$?
        PID=
    fi
}
trap 'stop_server; rm -rf "$ROOT" "$WORK"' EXIT

rm -rf "$ROOT"
mkdir -p "$ROOT"
# The server's stdin is a pipe this script holds open (fd 3): if the script dies, even by SIGKILL,
# the pipe ends and --stop-on-stdin-eof stops the server.
mkfifo "$WORK/stdin"
"$BRISK" serve --root "$ROOT" --listen 127.0.0.1:0 --log-format off --stop-on-stdin-eof \
    "${EXTRA_SERVE[@]}" <"$WORK/stdin" >"$WORK/server.out" 2>"$WORK/server.err" &
PID=$!
exec 3>"$WORK/stdin"
for _ in $(seq 100); do
    if [ -s "$WORK/server.out" ]; then break; fi
    sleep 0.05
done
ENDPOINT=$(head -n1 "$WORK/server.out" | sed -e 's#^http://##' -e 's#/$##')
if [ -z "$ENDPOINT" ]; then
    echo "soak.sh: the server did not start:" >&2
    cat "$WORK/server.err" >&2
    exit 1
fi
sleep 0.5 # let it settle before the starting RSS is read

load() {
    local op=$1
    shift
    "$LOAD" "$op" --endpoint "$ENDPOINT" --access-key "$BRISK_ACCESS_KEY" \
        --secret-key "$BRISK_SECRET_KEY" --pid "$PID" "$@"
}

{
    echo "# soak of brisk serve: $CLIENTS clients, $DURATION s, $(date -u +%FT%TZ)"
    echo "# command: DURATION=$DURATION CLIENTS=$CLIENTS SERVE_FLAGS='${SERVE_FLAGS:-}' bench/soak.sh $*"
    echo "# commit: $(git describe --always --dirty 2>/dev/null || echo unknown)"
    echo "# host: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) CPUs, $(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo) RAM, kernel $(uname -r)"
    echo "# THP: enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?'), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null || echo '?')"
    echo "# data root: $ROOT ($FSTYPE on $(findmnt -no SOURCE -T "$(dirname "$ROOT")"), $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') free)"
    echo "# server: $BRISK serve --log-format off ${SERVE_FLAGS:-} (fsync and MD5 ETags as configured), pid $PID, $ENDPOINT"
    echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    env | grep -E '^(GLIBC_TUNABLES|MALLOC_[A-Z_]+)=' | sed 's/^/# malloc environment: /' || true
    if [ -n "${NOTE:-}" ]; then echo "# note: $NOTE"; fi
} | tee "$OUT"

load mkbucket --bucket soak >/dev/null
STATUS=0
load soak --bucket soak --conns "$CLIENTS" --duration "$DURATION" "$@" 2>&1 | tee -a "$OUT" ||
    STATUS=${PIPESTATUS[0]}
# The bucket can only be removed when the clients left it empty.
if ! load rmbucket --bucket soak >/dev/null 2>>"$OUT"; then
    echo "# the bucket could not be removed (not empty?)" | tee -a "$OUT"
    STATUS=1
fi
SERVER_STATUS=
stop_server
{
    echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# server exit status after SIGTERM: $SERVER_STATUS"
    if [ -s "$WORK/server.err" ]; then
        echo "# server stderr:"
        sed 's/^/#   /' "$WORK/server.err"
    fi
} | tee -a "$OUT"
echo "soak.sh: written to $OUT" >&2
exit "$STATUS"
