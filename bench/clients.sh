#!/usr/bin/env bash
# In-memory GET of 256 MiB and 1 GiB objects with brisk (the `get_bytes` example), boto3, awscrt and
# obstore against one MinIO on loopback. Per client and size: GiB/s (median of RUNS), peak RSS growth
# over the client's own footprint (a 1-byte GET) per object byte, and CPU seconds (user + sys, less
# that of the 1-byte GET) per GiB,
# all from `/usr/bin/time -v`. Prints a markdown table (the "Clients" section of BENCHMARKS.md).
#
#   bench/clients.sh [RUNS]        (default 3; about 5 minutes on a 2-core machine)
#
# Needs: MinIO (BRISK_MINIO or .tools/bin/minio, scripts/install-minio), python3, /usr/bin/time.
# The Python clients are pip-installed into .tools/venv-clients (ignored by git).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
runs="${1:-3}"
sizes=(268435456 1073741824)

minio="${BRISK_MINIO:-$root/.tools/bin/minio}"
[ -x "$minio" ] || { echo "MinIO not found at $minio: run scripts/install-minio or set BRISK_MINIO" >&2; exit 1; }
venv="$root/.tools/venv-clients"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check boto3 awscrt obstore
py="$venv/bin/python"

cargo build --release --quiet -p brisk-client --example get_bytes --example upload
brisk_get="$root/target/release/examples/get_bytes"
brisk_upload="$root/target/release/examples/upload"

work="$(mktemp -d)"
port=$(( 20000 + RANDOM % 20000 ))
export AWS_ACCESS_KEY_ID=briskbench AWS_SECRET_ACCESS_KEY=brisk-bench-secret AWS_REGION=us-east-1
MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY \
  "$minio" server "$work/data" --address "127.0.0.1:$port" >"$work/minio.log" 2>&1 &
minio_pid=$!
trap 'kill $minio_pid 2>/dev/null; wait $minio_pid 2>/dev/null; rm -rf "$work"' EXIT
endpoint="http://127.0.0.1:$port"
for _ in $(seq 100); do
  curl -sf "$endpoint/minio/health/live" >/dev/null && break
  sleep 0.2
done

"$py" -c "import boto3; boto3.client('s3', endpoint_url='$endpoint').create_bucket(Bucket='bench')"
head -c 1 /dev/urandom >"$work/obj-baseline"
"$brisk_upload" --endpoint-url "$endpoint" --bucket bench --key baseline --file "$work/obj-baseline" >/dev/null
for size in "${sizes[@]}"; do
  head -c "$size" /dev/urandom >"$work/obj"
  "$brisk_upload" --endpoint-url "$endpoint" --bucket bench --key "obj-$size" --file "$work/obj" >/dev/null
done
rm -f "$work/obj"

results="$work/results.tsv"
# measure CLIENT SIZE-LABEL KEY SIZE RUN: one process under /usr/bin/time -v.
measure() {
  local client=$1 label=$2 key=$3 size=$4 run=$5 out
  if [ "$client" = brisk ]; then
    out=$(/usr/bin/time -v "$brisk_get" --endpoint-url "$endpoint" --bucket bench --key "$key" 2>"$work/time")
    seconds=$(sed -E 's/.* in ([0-9.]+) s .*/\1/' <<<"$out")
  else
    out=$(/usr/bin/time -v "$py" bench/clients.py get "$client" "$endpoint" bench "$key" "$size" 2>"$work/time")
    seconds=$(cut -d' ' -f2 <<<"$out")
  fi
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
  cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$work/time")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$client" "$label" "$run" "$seconds" "$rss" "$cpu" >>"$results"
}

for client in brisk boto3 awscrt obstore; do
  for run in $(seq "$runs"); do
    measure "$client" baseline baseline 1 "$run"
    for size in "${sizes[@]}"; do
      measure "$client" "$size" "obj-$size" "$size" "$run"
    done
  done
done
cp "$results" "$root/bench/clients-results.tsv"
"$py" bench/clients.py table "$results"
