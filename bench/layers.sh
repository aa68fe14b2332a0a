#!/usr/bin/env bash
# Tower vs PyTorch, single layers, same machine, same thread count, one run. Usage: bench/layers.sh [build dir]
# [rounds=3]. The two frameworks take turns, `rounds` times (each turn times every layer, median of 20
# forward+backward passes); each cell is the median of its rounds, so a few seconds of load on a shared machine
# move one round, not the result.
# bench/recurrent.sh runs the same comparison on other programs: BENCH_PROGRAM (bench_layers), BENCH_TORCH
# (layers_torch.py) and BENCH_ITERS (20).
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
program=${BENCH_PROGRAM:-bench_layers}
torch_script=${BENCH_TORCH:-layers_torch.py}
iters=${BENCH_ITERS:-20}
threads=${OMP_NUM_THREADS:-2}
export OMP_NUM_THREADS=$threads
here=$(dirname "$0")
tower=""
torch=""
for ((r = 0; r < rounds; ++r)); do
  tower+=$("$build/bin/$program" "$iters")$'\n'
  torch+=$(python3 "$here/$torch_script" "$iters")$'\n'
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads=$threads, rounds=$rounds, $(date -u +%F)"
echo "$("$build/bin/bench_cpu_isa"); $(python3 "$here/torch_isa.py")"
python3 - "$tower" "$torch" <<'PY'
import json, statistics, sys
def medians(text):
    runs = {}
    for d in map(json.loads, filter(str.strip, text.splitlines())):
        runs.setdefault(d["layer"], []).append(d["ms"])
    return {k: (statistics.median(v), v) for k, v in runs.items()}
t, p = medians(sys.argv[1]), medians(sys.argv[2])
print(f"{'layer':24s} {'tower ms':>10s} {'torch ms':>10s} {'speedup':>8s}   rounds (tower / torch)")
for k in t:
    rounds = " ".join(f"{a:.2f}/{b:.2f}" for a, b in zip(t[k][1], p[k][1]))
    print(f"{k:24s} {t[k][0]:10.2f} {p[k][0]:10.2f} {p[k][0] / t[k][0]:7.2f}x   {rounds}")
PY
