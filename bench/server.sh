#!/usr/bin/env bash
# Measures `brisk serve` (release build, its own process) from outside with s3_load (bench/s3-load):
# server CPU from /proc/<pid>/stat, resident set from /proc/<pid>/status. Every run is bounded by its
# byte or request count and by s3_load's own deadline; every object written is deleted and the data
# root removed at the end. fsync is off in every run (throughput of the data path, not of the disk).
#
#   bench/server.sh sweep     read-buffer sweep: PUT of $SIZE, MD5 ETag on and off, $REPS runs each
#   bench/server.sh memory    idle RSS; RSS growth during one $BIG_SIZE PUT and $CONNS x $MANY_SIZE PUTs
#   bench/server.sh cpu       CPU per GiB received: unsigned and aws-chunked signed, MD5 on and off
#   bench/server.sh get       whole GET of $SIZE; random 256 KiB ranged GETs at queue depth 1 and 8
#   bench/server.sh all       all of the above
#
# Environment: BENCH_ROOT (data root, default /var/tmp/brisk-servebench: the local disk, not tmpfs),
# SIZE (2GiB), BIG_SIZE (4GiB), MANY_SIZE (1GiB), CONNS (16), REPS (3), RANGE_COUNT (2000),
# SWEEP_BUFFERS ("4KiB 16KiB 64KiB 256KiB 1MiB"), SWEEP_MD5 ("on off").
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=${BENCH_ROOT:-/var/tmp/brisk-servebench}
SIZE=${SIZE:-2GiB}
BIG_SIZE=${BIG_SIZE:-4GiB}
MANY_SIZE=${MANY_SIZE:-1GiB}
CONNS=${CONNS:-16}
REPS=${REPS:-3}
RANGE_COUNT=${RANGE_COUNT:-2000}
SWEEP_BUFFERS=${SWEEP_BUFFERS:-4KiB 16KiB 64KiB 256KiB 1MiB}
SWEEP_MD5=${SWEEP_MD5:-on off}
AK=benchkey
SK=benchsecret

cargo build --release --locked -q -p brisk-cli
cargo build --release --locked -q -p s3-load
BRISK=${BRISK_BIN:-target/release/brisk} # BRISK_BIN: another build, for before/after runs
LOAD=target/release/s3_load

PID=
ENDPOINT=
LOG=$(mktemp)

start_server() {
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    "$BRISK" serve --root "$ROOT" --listen 127.0.0.1:0 --access-key "$AK" --secret-key "$SK" \
        --no-fsync "$@" >"$LOG" 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        if [ -s "$LOG" ]; then break; fi
        sleep 0.05
    done
    ENDPOINT=$(head -n1 "$LOG" | sed -e 's#^http://##' -e 's#/$##')
    sleep 0.5 # let it settle before the idle RSS is read
    load mkbucket --bucket bench >/dev/null
}

stop_server() {
    if [ -n "$PID" ]; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
        PID=
    fi
    rm -rf "$ROOT"
}
trap 'stop_server; rm -f "$LOG"' EXIT

load() {
    local op=$1
    shift
    "$LOAD" "$op" --endpoint "$ENDPOINT" --access-key "$AK" --secret-key "$SK" --pid "$PID" "$@"
}

idle_rss() {
    awk '/^VmRSS/ {print $2}' "/proc/$PID/status"
}

echo "# $(date -u +%FT%TZ) $(uname -r) load: $(cut -d' ' -f1-3 /proc/loadavg) free disk: $(df -h --output=avail /var/tmp | tail -1)"

sweep() {
    for rb in $SWEEP_BUFFERS; do
        for md5 in $SWEEP_MD5; do
            local flags=(--read-buffer-size "$rb")
            [ "$md5" = off ] && flags+=(--no-md5-etag)
            start_server "${flags[@]}"
            for rep in $(seq "$REPS"); do
                echo "sweep rb=$rb md5=$md5 rep=$rep $(load put --bucket bench --key sweep --size "$SIZE")"
            done
            load delete --bucket bench --key sweep >/dev/null
            stop_server
        done
    done
}

memory() {
    start_server
    echo "memory idle_rss_kib=$(idle_rss)"
    echo "memory one $(load put --bucket bench --key big --size "$BIG_SIZE")"
    load delete --bucket bench --key big >/dev/null
    echo "memory after_one_rss_kib=$(idle_rss)"
    echo "memory many $(load put --bucket bench --key many --size "$MANY_SIZE" --conns "$CONNS")"
    load delete --bucket bench --key many --conns "$CONNS" >/dev/null
    echo "memory after_many_rss_kib=$(idle_rss)"
    stop_server
}

cpu() {
    for md5 in on off; do
        local flags=()
        [ "$md5" = off ] && flags+=(--no-md5-etag)
        start_server "${flags[@]}"
        for rep in $(seq "$REPS"); do
            echo "cpu md5=$md5 payload=unsigned rep=$rep $(load put --bucket bench --key cpu --size "$SIZE")"
            echo "cpu md5=$md5 payload=streaming rep=$rep $(load put --bucket bench --key cpu --size "$SIZE" --payload streaming --chunk 64KiB)"
        done
        load delete --bucket bench --key cpu >/dev/null
        stop_server
    done
}

get() {
    start_server
    load put --bucket bench --key src --size "$SIZE" >/dev/null
    load get --bucket bench --key src >/dev/null # page cache warm: the disk is not what is measured
    for rep in $(seq "$REPS"); do
        echo "get whole rep=$rep $(load get --bucket bench --key src)"
        echo "get range qd=1 rep=$rep $(load range --bucket bench --key src --object-size "$SIZE" --count "$RANGE_COUNT" --seed "$rep")"
        echo "get range qd=8 rep=$rep $(load range --bucket bench --key src --object-size "$SIZE" --count "$((RANGE_COUNT * 2))" --conns 8 --seed "$rep")"
    done
    load delete --bucket bench --key src >/dev/null
    stop_server
}

case "${1:-all}" in
sweep) sweep ;;
memory) memory ;;
cpu) cpu ;;
get) get ;;
all) sweep; memory; cpu; get ;;
*) echo "usage: $0 [sweep|memory|cpu|get|all]" >&2; exit 2 ;;
esac
