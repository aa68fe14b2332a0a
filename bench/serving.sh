#!/usr/bin/env bash
# Serving latency, CPU: Tower (Model::predict_on_batch) vs ONNX Runtime vs PyTorch eager (torch.inference_mode) on
# Keras' MobileNetV2 224 and the Fashion-MNIST convnet, same weights, same machine, same thread count, one run.
# Usage: bench/serving.sh [build dir] [calls=1000] [throughput_calls=200] [rounds=1]
#   calls: batch-1 calls per latency measurement (median, p99); throughput_calls: calls in all per client count
#   (1, 2, 4 threads calling one model at batch 1). With rounds > 1 the three frameworks take turns `rounds` times
#   and each cell is the median of its rounds.
# bench_serving writes the weights (Keras 3 .weights.h5), an input and Tower's output into a temporary folder;
# serving_reference.py builds the models in PyTorch from those weights, checks them against Tower's outputs
# (max abs difference <= 1e-4), exports ONNX (opset 17, dynamic batch) and times PyTorch and ONNX Runtime.
# Python: bench/.venv when present (python3 -m venv bench/.venv; bench/.venv/bin/pip install torch onnxruntime
# onnx h5py numpy), else python3.
set -euo pipefail
build=${1:-build}
calls=${2:-1000}
throughput_calls=${3:-200}
rounds=${4:-1}
threads=${OMP_NUM_THREADS:-2}
export OMP_NUM_THREADS=$threads
here=$(dirname "$0")
python=python3
[[ -x "$here/.venv/bin/python" ]] && python="$here/.venv/bin/python"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

plans=$("$build/bin/bench_serving" dump "$work")
check_rc=0
check=$("$python" "$here/serving_reference.py" check "$work" 2>"$work/check.err") || check_rc=$?
if ((check_rc != 0)); then
  echo "serving_reference.py check failed (exit $check_rc):" >&2
  echo "$check" >&2
  tail -20 "$work/check.err" >&2
  [[ -z "$check" ]] && exit 1
fi
results=""
for ((r = 0; r < rounds; ++r)); do
  results+=$("$build/bin/bench_serving" bench "$calls" "$throughput_calls")$'\n'
  results+=$("$python" "$here/serving_reference.py" ort "$work" "$calls" "$throughput_calls" 2>/dev/null)$'\n'
  for part in latency-nchw latency-channels_last throughput; do  # one process each: serving_reference.py's bench_torch
    results+=$("$python" "$here/serving_reference.py" torch "$work" "$calls" "$throughput_calls" "" "$part" 2>/dev/null)$'\n'
  done
done

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads=$threads, calls=$calls," \
  "throughput_calls=$throughput_calls, rounds=$rounds, $(date -u +%F)"
echo "$("$build/bin/bench_cpu_isa"); $("$python" "$here/torch_isa.py")"
echo "$("$python" -c 'import torch, onnxruntime; print(f"PyTorch {torch.__version__}, ONNX Runtime {onnxruntime.__version__}")')"
"$python" - "$plans" "$check" "$results" <<'PY'
import json, statistics, sys
lines = lambda text: [json.loads(l) for l in text.splitlines() if l.strip()]
plans, checks, rows = lines(sys.argv[1]), lines(sys.argv[2]), lines(sys.argv[3])
for p in plans:
    print(f"{p['model']}: batch-1 plan activations {p['activation_bytes'] / 2**20:.2f} MiB, {p['params']:,} params")
for c in checks:
    print(f"{c['check']}: PyTorch vs Tower max |diff| {c['torch_vs_tower_max_abs']:.2e} "
          f"(relative {c['torch_vs_tower_max_rel']:.1e}), ONNX Runtime vs PyTorch {c['ort_vs_torch_max_abs']:.2e}, "
          f"same argmax {c['same_argmax']}: {'match' if c['passed'] else 'MISMATCH'}")

cells = {}
for r in rows:
    key = (r["model"], r["framework"], r["config"], r["measure"], r.get("clients", 1))
    cells.setdefault(key, []).append(r)
def med(key, field):
    return statistics.median(r[field] for r in cells[key])

print()
print(f"{'batch 1 latency':34s} {'median ms':>10s} {'p99 ms':>9s} {'mean ms':>9s} {'cpu':>5s} "
      f"{'1 client/s':>11s} {'2 clients/s':>12s} {'4 clients/s':>12s}")
models = list(dict.fromkeys(k[0] for k in cells))
best = {}
for model in models:
    configs = [k for k in cells if k[0] == model and k[3] == "latency"]
    for k in configs:
        _, fw, config, _, _ = k
        tp = [f"{med((model, fw, config, 'throughput', c), 'calls_per_s'):11.1f}"
              if (model, fw, config, "throughput", c) in cells else f"{'-':>11s}" for c in (1, 2, 4)]
        print(f"{model + ' ' + fw + ' ' + config:34s} {med(k, 'median_ms'):10.3f} {med(k, 'p99_ms'):9.3f} "
              f"{med(k, 'mean_ms'):9.3f} {med(k, 'cpu_util'):5.2f} {tp[0]} {tp[1]:>12s} {tp[2]:>12s}")
        b = best.setdefault((model, fw), (config, med(k, "median_ms")))
        if med(k, "median_ms") < b[1]:
            best[(model, fw)] = (config, med(k, "median_ms"))

print()
for model in models:
    tower_default = [k for k in cells if k[:2] == (model, "tower") and k[2].startswith("ctb=default") and k[3] == "latency"]
    if not tower_default or (model, "ort") not in best or (model, "torch") not in best:
        continue
    t = med(tower_default[0], "median_ms")
    o, (pc, p) = best[(model, "ort")][1], best[(model, "torch")]
    tb = best[(model, "tower")]
    print(f"{model}: Tower (default options) {t:.3f} ms vs ONNX Runtime {o:.3f} ms: "
          f"{'met' if t <= o else 'NOT met'} (<= ORT); vs PyTorch ({pc}) {p:.3f} ms: {t / p:.2f}x, "
          f"{'met' if t <= 0.7 * p else 'NOT met'} (<= 0.7x); fastest Tower setting at batch 1: {tb[0]} "
          f"({tb[1]:.3f} ms)")
PY
