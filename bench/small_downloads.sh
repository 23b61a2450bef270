#!/usr/bin/env bash
# `brisk cp --recursive` of many small objects down from `brisk serve --no-fsync` on 127.0.0.1, for
# builds of brisk given as NAME=BINARY (e.g. a build of main and one of a branch), one process per
# run under /usr/bin/time, alternating, every round; round 1 is a warm-up. Prints wall, user and sys
# seconds, peak RSS, the files that arrived, and the server's CPU for each run (from /proc).
#
#   bench/small_downloads.sh ROUNDS DEST_DIR NAME=BINARY [NAME=BINARY ...]
#
# FILES (default 2000) objects of SIZE (default 16384) random bytes; DEST_DIR is where each run's
# tree goes (/dev/shm to leave the disk out, a directory on disk to count its fsyncs in). The first
# binary is also the server.
set -euo pipefail
rounds=$1 dest=$2
shift 2
files=${FILES:-2000} size=${SIZE:-16384}
first=${1#*=}
work=$(mktemp -d /var/tmp/small-downloads.XXXXXX)
mkdir -p "$work/data" "$work/src"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export AWS_ACCESS_KEY_ID=smallkey AWS_SECRET_ACCESS_KEY=smallsecretkey AWS_REGION=us-east-1
"$first" serve --root "$work/data" --listen 127.0.0.1:$port --access-key $AWS_ACCESS_KEY_ID \
  --secret-key $AWS_SECRET_ACCESS_KEY --no-fsync > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work" "$dest"/small-downloads-*' EXIT
for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null && break; sleep 0.2; done
ep=http://127.0.0.1:$port
python3 -c "
import os
for i in range($files):
    open('$work/src/f%06d' % i, 'wb').write(os.urandom($size))"
"$first" --endpoint-url $ep mb s3://small > /dev/null
"$first" --endpoint-url $ep cp --recursive --quiet "$work/src" s3://small/tree/ > /dev/null
server_cpu() { awk '{print $14 + $15}' /proc/$server/stat; }
for round in $(seq "$rounds"); do
  for spec in "$@"; do
    name=${spec%%=*} bin=${spec#*=} out="$dest/small-downloads-$name"
    rm -rf "$out"; sync
    before=$(server_cpu)
    res=$(/usr/bin/time -f "wall %e user %U sys %S rss %MKiB" "$bin" --endpoint-url $ep cp --recursive \
      --quiet s3://small/tree/ "$out" 2>&1 | tail -1)
    echo "$round $name $res files $(ls "$out" | wc -l) server $(( $(server_cpu) - before ))cs"
  done
done
