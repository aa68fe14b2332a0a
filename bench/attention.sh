#!/usr/bin/env bash
# Tower vs PyTorch, MultiHeadAttention forward + backward (batch 32, length 256, 8 heads of 64), same machine, same
# thread count, one run. Usage: bench/attention.sh [build dir] [rounds=3] [iterations=10]. The two frameworks take
# turns, `rounds` times (each a median of `iterations` steps); each side's result is the median of its rounds.
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
iters=${3:-10}
threads=${OMP_NUM_THREADS:-2}
export OMP_NUM_THREADS=$threads
here=$(dirname "$0")
tower=""
torch=""
for ((r = 0; r < rounds; ++r)); do
  tower+=$("$build/bin/bench_attention" "$iters")$'\n'
  torch+=$(python3 "$here/attention_torch.py" "$iters")$'\n'
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads=$threads, rounds=$rounds, $(date -u +%F)"
echo "$("$build/bin/bench_cpu_isa"); $(python3 "$here/torch_isa.py")"
python3 - "$tower" "$torch" <<'PY'
import json, statistics, sys
def runs(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]
t, p = runs(sys.argv[1]), runs(sys.argv[2])
tm, pm = statistics.median(d["ms"] for d in t), statistics.median(d["ms"] for d in p)
te, pe = statistics.median(d["ex_per_s"] for d in t), statistics.median(d["ex_per_s"] for d in p)
print(f"{'multi_head_attention':24s} tower {tm:9.1f} ms ({te:6.1f} ex/s)   torch {pm:9.1f} ms "
      f"({pe:6.1f} ex/s)   tower/torch speed {te / pe:5.2f}x")
print("rounds (tower / torch ms): " + " ".join(f"{a['ms']:.0f}/{b['ms']:.0f}" for a, b in zip(t, p)))
PY
