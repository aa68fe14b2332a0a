#!/usr/bin/env bash
# Tower vs PyTorch, single layers, same machine, same thread count, one run. Usage: bench/layers.sh [build dir]
set -euo pipefail
build=${1:-build}
threads=${OMP_NUM_THREADS:-2}
export OMP_NUM_THREADS=$threads
here=$(dirname "$0")
tower=$("$build/bin/bench_layers" 20)
torch=$(python3 "$here/layers_torch.py" 20)
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads=$threads, $(date -u +%F)"
echo "$("$build/bin/bench_cpu_isa"); PyTorch isa: $(python3 -c 'import torch; print(torch.backends.cpu.get_cpu_capability())')"
python3 - "$tower" "$torch" <<'PY'
import json, sys
t = {d["layer"]: d["ms"] for d in map(json.loads, sys.argv[1].splitlines())}
p = {d["layer"]: d["ms"] for d in map(json.loads, sys.argv[2].splitlines())}
print(f"{'layer':24s} {'tower ms':>10s} {'torch ms':>10s} {'speedup':>8s}")
for k in t:
    print(f"{k:24s} {t[k]:10.2f} {p[k]:10.2f} {p[k]/t[k]:7.2f}x")
PY
