#!/usr/bin/env bash
# How fast uploads from a file reach `brisk serve` as compare.sh runs it (fsync and MD5 ETags on,
# data on the local disk), and how many parts the server had at once: builds of brisk's `upload`
# example (NAME=BINARY, e.g. main and a branch; extra example flags after a comma:
# NAME=BINARY,--parts-in-flight,8) next to obstore's `put(store, key, Path)` (bench/compare.py's
# driver), one process each under /usr/bin/time, the order rotated every round, round 1 printed
# but left out of the medians. From the server's access log: each upload's span (CreateMultipartUpload
# to CompleteMultipartUpload), median and p90 part time and the mean count of parts at the server.
#
#   bench/upload_rate.sh [--rtt-ms MS] SIZE_MIB ROUNDS NAME=BINARY[,FLAG...] [...]
#
# --rtt-ms puts bench/latency-proxy (built with the workspace) in front of the server, each
# direction delayed by half of MS. BRISK (default target/release/brisk) is the server; SCRATCH
# (default /work/scratch-upload-rate) holds its data; the source is /dev/shm/upload-rate.bin.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rtt=""
if [ "${1:-}" = "--rtt-ms" ]; then rtt=$2; shift 2; fi
[ $# -ge 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
size_mib=$1 rounds=$2
shift 2
brisk=${BRISK:-$root/target/release/brisk}
python=${PYTHON:-$root/.bench-venv/bin/python}
scratch=${SCRATCH:-/work/scratch-upload-rate}
src=/dev/shm/upload-rate.bin
export AWS_ACCESS_KEY_ID=comparebenchkey AWS_SECRET_ACCESS_KEY=comparebenchsecret AWS_REGION=us-east-1
rm -rf "$scratch" && mkdir -p "$scratch/data"
head -c $((size_mib * 1048576)) /dev/urandom > "$src"
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$brisk" serve --root "$scratch/data" --listen 127.0.0.1:$port --access-key $AWS_ACCESS_KEY_ID \
  --secret-key $AWS_SECRET_ACCESS_KEY > "$scratch/serve.log" 2>&1 &
pids=$!
trap 'kill $pids 2>/dev/null; rm -f "$src"' EXIT
ep=http://127.0.0.1:$port
if [ -n "$rtt" ]; then
  "$root/target/release/latency-proxy" --upstream 127.0.0.1:$port --rtt-ms "$rtt" > "$scratch/proxy.log" 2>&1 &
  pids="$pids $!"
  for _ in $(seq 50); do grep -q LISTENING "$scratch/proxy.log" 2>/dev/null && break; sleep 0.1; done
  ep=http://$(grep -o '127.0.0.1:[0-9]*' "$scratch/proxy.log" | head -1)
fi
for _ in $(seq 50); do curl -s -o /dev/null "$ep" && break; sleep 0.1; done
"$brisk" --endpoint-url "$ep" mb s3://rate > /dev/null
clients=("$@" "obstore")
n=${#clients[@]}
for round in $(seq "$rounds"); do
  for i in $(seq 0 $((n - 1))); do
    spec=${clients[$(((i + round) % n))]}
    name=${spec%%=*} key="key-$round-$i"
    if [ "$name" = obstore ]; then
      cmd=("$python" "$root/bench/compare.py" drive obstore upload "$ep" rate "$key" $((size_mib * 1048576)) "$src")
    else
      IFS=, read -r -a parts <<< "${spec#*=}"
      cmd=("${parts[0]}" --endpoint-url "$ep" --bucket rate --key "$key" --file "$src" "${parts[@]:1}")
    fi
    line=$( { /usr/bin/time -f "%e %U %S %M" "${cmd[@]}" > /dev/null; } 2>&1 | tail -1)
    echo "$round $name $key $line"
  done
done | tee "$scratch/runs.txt"
sleep 2 # the access log is written by its own thread, a moment behind the responses
"$python" - "$scratch/serve.log" "$scratch/runs.txt" "$size_mib" <<'PY'
import datetime, statistics, sys
log, runs, size_mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
uploads = {}
for line in open(log):
    f = line.split()
    if len(f) < 10 or not f[0][:4].isdigit():
        continue
    end = datetime.datetime.fromisoformat(f[0].replace("Z", "+00:00")).timestamp()
    method, key, ms = f[3], f[5], float(f[-1])
    u = uploads.setdefault(key, {"parts": [], "start": None, "end": None})
    if method == "POST" and u["start"] is None:
        u["start"] = end - ms / 1000
    elif method == "POST":
        u["end"] = end
    elif method == "PUT":
        u["parts"].append(ms)
rows = {}
for line in open(runs):
    rnd, name, key, wall, user, sys_, rss = line.split()
    u = uploads.get(key, {})
    parts = sorted(u.get("parts", []))
    span = (u["end"] - u["start"]) if u.get("end") and u.get("start") else float("nan")
    if rnd == "1":
        continue
    rows.setdefault(name, []).append((float(wall), float(user) + float(sys_), int(rss) / 1024, span,
                                      parts[len(parts) // 2] if parts else float("nan"),
                                      parts[int(len(parts) * 0.9)] if parts else float("nan"),
                                      sum(parts) / 1000 / span if parts and span == span else float("nan")))
print(f"\nmedians of rounds 2+ ({size_mib} MiB): client wall s, GiB/s, client CPU s/GiB, peak RSS MiB, "
      "server span s, part ms median / p90, parts at the server")
gib = size_mib / 1024
for name, r in rows.items():
    m = [statistics.median(col) for col in zip(*r)]
    print(f"{name}: {m[0]:.2f} s, {gib / m[0]:.2f} GiB/s, {m[1] / gib:.2f}, {m[2]:.0f} MiB, "
          f"{m[3]:.2f} s, {m[4]:.1f} / {m[5]:.1f} ms, {m[6]:.1f} ({len(r)} runs)")
PY
