#!/usr/bin/env bash
# Tower vs PyTorch vs Keras (TensorFlow) training on the real Fashion-MNIST, CPU, same thread count, one run.
# Usage: bench/train.sh [build dir] [epochs]
set -euo pipefail
build=${1:-build}
epochs=${2:-2}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
here=$(dirname "$0")
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads=$OMP_NUM_THREADS, epochs=$epochs, batch=128, $(date -u +%F)"
echo "$("$build/bin/bench_cpu_isa"); $(python3 "$here/torch_isa.py")"
# Keras runs when TensorFlow is installed; without it the table has Tower and PyTorch only.
frameworks="torch keras"
python3 -c "import tensorflow, keras" 2>/dev/null || { frameworks=torch; echo "keras: skipped (pip install tensorflow-cpu keras)"; }
results=""
for model in mlp convnet se_convnet; do
  results+=$("$build/bin/bench_train" "$model" "$epochs")$'\n'
  for fw in $frameworks; do
    results+=$(python3 "$here/train_reference.py" "$fw" "$model" "$epochs" 2>/dev/null)$'\n'
  done
done
floor=$("$build/bin/bench_mlp_gemm_floor")
python3 - "$results" "$floor" <<'PY'
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
floor = json.loads(sys.argv[2])
by = {(r["model"], r["framework"]): r for r in rows}
print(f"{'model':8s} {'framework':9s} {'examples/s':>11s} {'test acc':>9s} {'tower speedup':>14s}")
for (model, fw), r in by.items():
    speed = by[(model, "tower")]["examples_per_sec"] / r["examples_per_sec"]
    print(f"{model:8s} {fw:9s} {r['examples_per_sec']:11.0f} {r['test_accuracy']:9.4f} {speed:13.2f}x")
torch_mlp = by[("mlp", "torch")]["examples_per_sec"]
print(f"MLP GEMM floor (bench_mlp_gemm_floor): {floor['best_ms']:.3f} ms per step of {floor['batch']} "
      f"({floor['gflops_median']:.0f} GFLOP/s), so no framework can exceed {floor['max_examples_per_sec']:.0f} "
      f"examples/s = {floor['max_examples_per_sec'] / torch_mlp:.2f}x PyTorch's MLP")
print(f"MLP step / GEMM floor (medians of {floor['rounds']} rounds, taking turns): forward+backward "
      f"{floor['forward_backward_over_floor']:.2f}x, SGD step {floor['sgd_step_over_floor']:.2f}x, "
      f"Adam step (bench_train's) {floor['adam_step_over_floor']:.2f}x")
PY
