#!/usr/bin/env bash
# Tower vs PyTorch, MultiHeadAttention forward + backward (batch 32, length 256, 8 heads of 64), and the attention op
# alone (ops::dot_product_attention vs F.scaled_dot_product_attention, the same shapes), same machine, same thread
# count, one run. Usage: bench/attention.sh [build dir] [rounds=3] [iterations=10]. The two frameworks take
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
tower_op=""
torch_op=""
for ((r = 0; r < rounds; ++r)); do
  tower+=$("$build/bin/bench_attention" "$iters")$'\n'
  torch+=$(python3 "$here/attention_torch.py" "$iters")$'\n'
  tower_op+=$("$build/bin/bench_attention" "$iters" 32 op)$'\n'
  torch_op+=$(python3 "$here/attention_torch.py" "$iters" 32 op)$'\n'
done
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads=$threads, rounds=$rounds, $(date -u +%F)"
echo "$("$build/bin/bench_cpu_isa"); $(python3 "$here/torch_isa.py")"
python3 - "$tower" "$torch" "$tower_op" "$torch_op" <<'PY'
import json, statistics, sys
def runs(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]
for name, t, p in (("multi_head_attention", runs(sys.argv[1]), runs(sys.argv[2])),
                   ("dot_product_attention", runs(sys.argv[3]), runs(sys.argv[4]))):
    tm, pm = statistics.median(d["ms"] for d in t), statistics.median(d["ms"] for d in p)
    te, pe = statistics.median(d["ex_per_s"] for d in t), statistics.median(d["ex_per_s"] for d in p)
    print(f"{name:24s} tower {tm:9.1f} ms ({te:6.1f} ex/s)   torch {pm:9.1f} ms "
          f"({pe:6.1f} ex/s)   tower/torch speed {te / pe:5.2f}x")
    print("  rounds (tower / torch ms): " + " ".join(f"{a['ms']:.0f}/{b['ms']:.0f}" for a, b in zip(t, p)))
PY
