#!/usr/bin/env bash
# In-memory GET of 1 GiB with and without transparent huge pages, alternating in one run: the
# `get_bytes` release example with BRISK_HUGE_PAGES `on`, `off` and unset (the default, which is `off`
# on VMs with free page reporting of 2 MiB blocks, see crates/brisk-mem/src/mapping.rs), against one `brisk serve
# --no-fsync` on 127.0.0.1. Prints user/sys CPU, peak RSS and the kernel's THP counters
# (/proc/vmstat thp_fault_alloc, thp_fault_fallback, compact_stall) around each run.
#
#   bench/huge_pages.sh [ROUNDS]      (default 4; the first round pays for memory the kernel had not
#                                      handed out recently, see BENCHMARKS.md "Huge pages")
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds="${1:-4}"
cd "$root"
cargo build --release --locked --quiet -p brisk-cli -p brisk-client --bin brisk --example get_bytes
scratch="$(mktemp -d /var/tmp/brisk-huge-pages.XXXXXX)"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export AWS_ACCESS_KEY_ID=hugepagesbench AWS_SECRET_ACCESS_KEY=hugepagesbenchsecret AWS_REGION=us-east-1
unset AWS_CA_BUNDLE
target/release/brisk serve --root "$scratch/data" --listen "127.0.0.1:$port" --no-fsync \
  --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY" > "$scratch/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$scratch"' EXIT
endpoint="http://127.0.0.1:$port"
for _ in $(seq 50); do curl -s -o /dev/null "$endpoint" && break; sleep 0.1; done
head -c 1073741824 /dev/urandom > "$scratch/object"
target/release/brisk --endpoint-url "$endpoint" mb s3://huge > /dev/null
target/release/brisk --endpoint-url "$endpoint" cp "$scratch/object" s3://huge/object > /dev/null
rm "$scratch/object"

counters() { awk '/^(thp_fault_alloc|thp_fault_fallback|compact_stall) /{printf "%s=%s ", $1, $2}' /proc/vmstat; }
echo "host: $(lscpu | sed -n 's/^Model name: *//p'), THP $(cat /sys/kernel/mm/transparent_hugepage/enabled), $(uname -r)"
for round in $(seq "$rounds"); do
  for mode in on off default; do
    before="$(counters)"
    usage="$(env $([ "$mode" = default ] || echo "BRISK_HUGE_PAGES=$mode") /usr/bin/time -f "user=%U sys=%S peak_rss_kib=%M wall=%e" \
      target/release/examples/get_bytes --endpoint-url "$endpoint" --bucket huge --key object 2>&1 >/dev/null)"
    echo "round $round huge_pages=$mode $usage | before: $before| after: $(counters)"
  done
done
