#!/usr/bin/env bash
# Client CPU per GiB of uploading one file from tmpfs to `brisk serve --no-fsync --no-md5-etag` on
# 127.0.0.1: builds of brisk's `upload` example (given as NAME=BINARY, e.g. a build of main and one of
# a branch) with a signed and with an unsigned payload, and awscrt's `S3Client` PUT_OBJECT with
# `send_filepath` (bench/compare.py's driver), one process each under /usr/bin/time, in an order
# rotated every round. Round 1 is a warm-up and is printed but not counted in the medians.
#
#   bench/upload_cpu.sh SIZE_MIB ROUNDS NAME=BINARY [NAME=BINARY ...]
#
# BRISK (default target/release/brisk) is the server; SCRATCH (default /var/tmp/upload-cpu) holds its
# data, the source file is /dev/shm/upload-cpu.bin (random bytes). Prints one line per run
# (name, payload, user s, sys s, CPU s/GiB, GiB/s inside the client, peak RSS MiB) and the medians.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
size_mib=$1 rounds=$2
shift 2
brisk=${BRISK:-$root/target/release/brisk}
python=${PYTHON:-$root/.bench-venv/bin/python}
scratch=${SCRATCH:-/var/tmp/upload-cpu}
src=/dev/shm/upload-cpu.bin
export AWS_ACCESS_KEY_ID=comparebenchkey AWS_SECRET_ACCESS_KEY=comparebenchsecret AWS_REGION=us-east-1
rm -rf "$scratch" && mkdir -p "$scratch/data" && printf x > "$scratch/one"
[ "$(stat -c %s "$src" 2>/dev/null || echo 0)" = $((size_mib * 1048576)) ] ||
  head -c $((size_mib * 1048576)) /dev/urandom > "$src"
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ep=http://127.0.0.1:$port
"$brisk" serve --root "$scratch/data" --listen 127.0.0.1:$port --access-key $AWS_ACCESS_KEY_ID \
  --secret-key $AWS_SECRET_ACCESS_KEY --no-fsync --no-md5-etag > "$scratch/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$src"' EXIT
for _ in $(seq 50); do "$python" -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null && break; sleep 0.2; done
"$python" -c "import boto3; boto3.client('s3', endpoint_url='$ep').create_bucket(Bucket='compare')"
runs=()
for spec in "$@"; do for p in signed unsigned; do runs+=("$spec $p"); done; done
runs+=("awscrt=- none" "awscrt-startup=- none")
gib=$("$python" -c "print($size_mib/1024)")
results=$scratch/results.tsv
: > "$results"
for round in $(seq "$rounds"); do
  n=${#runs[@]}
  for i in $(seq 0 $((n - 1))); do
    run=${runs[$(((i + round) % n))]}
    name=${run%%=*} rest=${run#*=} bin=${rest% *} payload=${rest#* }
    if [ "$name" = awscrt ]; then
      cmd=("$python" "$root/bench/compare.py" drive awscrt upload "$ep" compare k $((size_mib * 1048576)) "$src")
    elif [ "$name" = awscrt-startup ]; then
      # The interpreter, the imports and the client's set-up, with a 1-byte upload.
      cmd=("$python" "$root/bench/compare.py" drive awscrt upload "$ep" compare one 1 "$scratch/one")
    else
      cmd=("$bin" --endpoint-url "$ep" --bucket compare --key k --file "$src" --payload "$payload")
    fi
    out=$(/usr/bin/time -f "TIME %U %S %M" "${cmd[@]}" 2>&1) || { echo "$name $payload failed: $out"; exit 1; }
    read -r u s m <<< "$(grep '^TIME' <<< "$out" | cut -d' ' -f2-)"
    secs=$(grep -oE '"seconds": [0-9.e-]+|in [0-9.]+ s' <<< "$out" | grep -oE '[0-9][0-9.e-]*' | head -1)
    line=$(printf '%s\t%s\t%d\t%s\t%s\t%.3f\t%.2f\t%d' "$name" "$payload" "$round" "$u" "$s" \
      "$("$python" -c "print(($u+$s)/$gib)")" "$("$python" -c "print($gib/$secs)")" $((m / 1024)))
    echo "$line"
    echo "$line" >> "$results"
  done
done
echo "medians of rounds 2..$rounds: CPU s/GiB (each round's), GiB/s, peak RSS MiB; awscrt net = awscrt less"
echo "awscrt-startup's CPU seconds of the same round"
"$python" - "$results" "$gib" <<'PY'
import statistics, sys, collections
gib = float(sys.argv[2])
rows, rates, rss, secs = (collections.defaultdict(list) for _ in range(4))
for line in open(sys.argv[1]):
    name, payload, rnd, u, s, cpu, rate, m = line.rstrip("\n").split("\t")
    if int(rnd) > 1:
        rows[(name, payload)].append(float(cpu))
        rates[(name, payload)].append(float(rate))
        rss[(name, payload)].append(int(m))
        secs[(name, int(rnd))] = float(u) + float(s)
net = [(secs[("awscrt", r)] - secs[("awscrt-startup", r)]) / gib for (n, r) in list(secs) if n == "awscrt"]
if net:
    rows[("awscrt net", "none")] = net
for key, v in rows.items():
    if key[0] == "awscrt-startup":
        continue
    extra = f"\t{statistics.median(rates[key]):.2f} GiB/s\t{max(rss[key])} MiB" if key in rates else ""
    print(f"{key[0]}\t{key[1]}\t{statistics.median(v):.3f}\t({', '.join(f'{x:.3f}' for x in v)}){extra}")
PY
