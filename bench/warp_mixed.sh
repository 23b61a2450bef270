#!/usr/bin/env bash
# warp mixed and `brisk bench mixed`, side by side against one MinIO started here (127.0.0.1, a free port),
# 4 rounds alternating which goes first (discard round 1); each client in its own process under
# /usr/bin/time (client CPU = user + sys, preparation included). Usage: WARP=/path/to/warp DUR=30s bench/warp_mixed.sh
# warp does not install from the Go module proxy here (403); it was built from its v1.4.0 source
# (`go build` in a checkout), whose dependencies the proxy serves.
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=${OUT:-$(mktemp -d /tmp/warp-mixed.XXXX)}; cd "$out"; echo "results in $out"
WARP=${WARP:?set WARP to a warp binary}
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
rm -rf data && mkdir data
MINIO_ROOT_USER=warpcmpuser MINIO_ROOT_PASSWORD=warpcmp-secret-key MINIO_BROWSER=off MINIO_UPDATE=off \
  "$root"/.tools/bin/minio server --quiet --address 127.0.0.1:$PORT --console-address 127.0.0.1:0 "$out/data" > minio.log 2>&1 &
MPID=$!
trap 'kill $MPID; wait $MPID 2>/dev/null' EXIT
for i in $(seq 50); do curl -sf http://127.0.0.1:$PORT/minio/health/live && break; sleep 0.2; done
export AWS_ACCESS_KEY_ID=warpcmpuser AWS_SECRET_ACCESS_KEY=warpcmp-secret-key AWS_REGION=us-east-1
"$root"/target/release/brisk --endpoint-url http://127.0.0.1:$PORT mb s3://brisk-mixed
DUR=${DUR:-30s}
warp() {
  /usr/bin/time -f "CPU %U %S RSS %M" "$WARP" mixed --host 127.0.0.1:$PORT --access-key warpcmpuser \
    --secret-key warpcmp-secret-key --obj.size 16KiB,1MiB --obj.randsize --concurrent 20 --duration $DUR \
    --objects 1000 --bucket warp-benchmark-bucket --benchdata "$out"/warp-$1 > warp-$1.txt 2> warp-$1.time
}
brisk() {
  /usr/bin/time -f "CPU %U %S RSS %M" "$root"/target/release/brisk bench mixed --endpoint-url http://127.0.0.1:$PORT \
    --bucket brisk-mixed --size 16KiB..1MiB --concurrent 20 --duration $DUR --objects 1000 --server-pid $MPID \
    --json-file brisk-$1.json -q > brisk-$1.txt 2> brisk-$1.time
}
for r in 1 2 3 4; do
  echo "round $r load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ $((r % 2)) = 1 ]; then warp $r; brisk $r; else brisk $r; warp $r; fi
  tail -1 warp-$r.time; tail -1 brisk-$r.time
done
# Per round: each client's operations/s, and its CPU per operation (the whole process's CPU over the
# objects it prepared plus the operations of the mix; warp's count is its reported rate x its trimmed run).
for r in 2 3 4; do python3 - "$r" <<'PY'
import json, re, sys
r = sys.argv[1]
w = open(f"warp-{r}.txt").read()
m = re.search(r"Report: Total\. Concurrency: \d+\. Ran: (\d+)s\n \* Average: ([\d.]+) MiB/s, ([\d.]+) obj/s", w)
ran, mib, ops = int(m.group(1)), float(m.group(2)), float(m.group(3))
def cpu(name):
    t = open(name).read().split()
    return float(t[t.index("CPU") + 1]) + float(t[t.index("CPU") + 2])
wcpu, bcpu = cpu(f"warp-{r}.time"), cpu(f"brisk-{r}.time")
d = json.load(open(f"brisk-{r}.json"))
t = d["total"]
bmib = sum(o["bytes"] for o in d["ops"]) / d["duration_s"] / 2**20
wops, bops = ops * ran + 1000, t["count"] + 1000
print(f"round {r}: warp {ops:.0f} ops/s {mib:.0f} MiB/s (ran {ran}s), CPU {wcpu:.2f} s = {wcpu / wops * 1e6:.0f} us/op"
      f" | brisk {t['ops_per_s']:.0f} ops/s {bmib:.0f} MiB/s, CPU {bcpu:.2f} s = {bcpu / bops * 1e6:.0f} us/op"
      f" | brisk/warp: ops {t['ops_per_s'] / ops:.2f}x, CPU per op {bcpu / bops / (wcpu / wops):.2f}x")
PY
done
