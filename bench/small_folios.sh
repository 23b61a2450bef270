#!/usr/bin/env bash
# Run a command with the kernel's anonymous folios of one size below 2 MiB on for `madvise` and the
# 2 MiB size off, then put both settings back as they were: how BENCHMARKS.md "Small folios on a VM
# that reports free memory" measures brisk's large buffers in 64 KiB folios. Needs root and a
# kernel with multi-size THP (6.8 and up).
#
#   bench/small_folios.sh [--size 64] COMMAND...
#   e.g. bench/small_folios.sh bench/compare.sh --clients brisk,brisk-4k --cases get --get-sizes 1GiB
set -euo pipefail
size=64
if [ "${1:-}" = "--size" ]; then size="$2"; shift 2; fi
[ $# -gt 0 ] || { echo "usage: $0 [--size KIB] COMMAND..." >&2; exit 2; }
thp=/sys/kernel/mm/transparent_hugepage
small="$thp/hugepages-${size}kB/enabled" pmd="$thp/hugepages-2048kB/enabled"
for f in "$small" "$pmd"; do
  [ -w "$f" ] || { echo "$f is missing or not writable (root and kernel 6.8+ needed)" >&2; exit 1; }
done
selected() { sed -n 's/.*\[\([a-z]*\)\].*/\1/p' "$1"; }
was_small="$(selected "$small")" was_pmd="$(selected "$pmd")"
trap 'echo "$was_small" > "$small"; echo "$was_pmd" > "$pmd"' EXIT
echo madvise > "$small"
echo never > "$pmd"
echo "hugepages-${size}kB: $(selected "$small"), hugepages-2048kB: $(selected "$pmd") (were $was_small, $was_pmd)" >&2
"$@"
