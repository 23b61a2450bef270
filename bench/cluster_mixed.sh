#!/usr/bin/env bash
# `brisk bench mixed` against a 4-node MinIO cluster (distributed mode, 2 drives a node, one erasure
# set at EC:4) and against one MinIO, in the same run, rounds alternating which goes first (discard
# round 1). MinIO refuses to form a cluster on loopback where it sees a container marker, so the
# nodes run in a network namespace made here (10.77.0.1 on its lo, ports 9001-9004) and the client
# runs in it too (`ip netns exec`); the single MinIO runs in it as well (port 9010), so both are
# reached the same way. The client talks to node 1 (one endpoint). The servers' CPU per operation
# is the sum over their processes from /proc. Needs root and iproute2; the namespace, processes and
# drives are removed at the end, also on failure or Ctrl-C.
#
#   bench/cluster_mixed.sh [DURATION=20s] [ROUNDS=3]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DUR=${1:-20s}; ROUNDS=${2:-3}
MINIO="$root/.tools/bin/minio"; BRISK="$root/target/release/brisk"
NS="brisk-bench-$$"; DATA=$(mktemp -d /tmp/cluster-mixed.XXXX); pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT INT TERM
ip netns add "$NS"; ip -n "$NS" link set lo up; ip -n "$NS" addr add 10.77.0.1/32 dev lo
export MINIO_ROOT_USER=clusterbench MINIO_ROOT_PASSWORD=cluster-bench-secret MINIO_BROWSER=off \
  MINIO_UPDATE=off MINIO_CI_CD=1 MINIO_SITE_REGION=us-east-1 MINIO_STORAGE_CLASS_STANDARD=EC:4
drives=(); for n in 1 2 3 4; do for d in 1 2; do drives+=("http://10.77.0.1:900$n$DATA/n$n/d$d"); done; done
cluster=()
for n in 1 2 3 4; do
  mkdir -p "$DATA/n$n/d1" "$DATA/n$n/d2"
  ip netns exec "$NS" "$MINIO" server --quiet --address 10.77.0.1:900$n --console-address 10.77.0.1:0 \
    "${drives[@]}" > "$DATA/node$n.log" 2>&1 &
  pids+=($!); cluster+=($!)
done
mkdir -p "$DATA/single"
MINIO_STORAGE_CLASS_STANDARD= ip netns exec "$NS" "$MINIO" server --quiet --address 10.77.0.1:9010 --console-address 10.77.0.1:0 \
  "$DATA/single" > "$DATA/single.log" 2>&1 &
pids+=($!); single=($!)
for port in 9001 9010; do
  for i in $(seq 120); do
    ip netns exec "$NS" curl -sf "http://10.77.0.1:$port/minio/health/cluster" >/dev/null && break; sleep 0.5
  done
done
export AWS_ACCESS_KEY_ID=$MINIO_ROOT_USER AWS_SECRET_ACCESS_KEY=$MINIO_ROOT_PASSWORD AWS_REGION=us-east-1
cpu_ticks() { # user + system ticks of these processes; a dead one stops the run
  local t=0; for p in "$@"; do
    [ -r /proc/$p/stat ] || { echo "server process $p exited; its log is in $DATA" >&2; exit 1; }
    t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo $t; }
one() { # name port pids...
  local name=$1 port=$2; shift 2
  local before; before=$(cpu_ticks "$@")
  ip netns exec "$NS" "$BRISK" --endpoint-url "http://10.77.0.1:$port" -q bench mixed --size 16KiB..1MiB \
    --concurrent 20 --duration "$DUR" --objects 1000 --json-file "$DATA/$name.json" --report "$DATA/report"
  local after; after=$(cpu_ticks "$@")
  python3 - "$DATA/$name.json" "$name" "$((after - before))" "$(getconf CLK_TCK)" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); t = d["total"]; ticks, hz = int(sys.argv[3]), int(sys.argv[4])
ops = t["count"] + d["objects"]  # the mix and the population uploaded first
p99 = ", ".join(f"{o['op']} {o['latency_ms']['p99']:.1f}" for o in d["ops"])
print(f"{sys.argv[2]}: {t['ops_per_s']:.0f} ops/s, errors {t['errors']}, server CPU {ticks / hz:.2f} s = "
      f"{ticks / hz / ops * 1e6:.0f} us/op (incl. the population), client {t['client_cpu_us_per_op']:.0f} us/op; p99 ms: {p99}")
PY
}
echo "host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
for r in $(seq "$ROUNDS"); do
  echo "round $r (load $(cut -d' ' -f1-3 /proc/loadavg))"
  if [ $((r % 2)) = 1 ]; then one cluster 9001 "${cluster[@]}"; one single 9010 "${single[@]}"
  else one single 9010 "${single[@]}"; one cluster 9001 "${cluster[@]}"; fi
done
