#!/usr/bin/env bash
# oneDNN against oneDNN: the primitives Tower's layers run through Debian's oneDNN (bench_layers) beside those
# PyTorch runs for the same layers through the oneDNN it bundles (layers_torch.py), timed by oneDNN itself
# (ONEDNN_VERBOSE=1 for 2.x, profile_exec for 3.x), so framework overhead is left out. Median milliseconds per primitive call,
# matched by primitive kind, propagation kind and problem. Usage: bench/onednn_versions.sh [build dir] [iterations]
set -euo pipefail
build=${1:-build}
iters=${2:-10}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
here=$(dirname "$0")
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc --all) cores, threads=$OMP_NUM_THREADS, $(date -u +%F)"
echo "$("$build/bin/bench_cpu_isa"); $(python3 "$here/torch_isa.py")"
tower=$(ONEDNN_VERBOSE=1 "$build/bin/bench_layers" "$iters" | grep '^onednn_verbose' || true)
torch=$(ONEDNN_VERBOSE=profile_exec python3 "$here/layers_torch.py" "$iters" | grep '^onednn_verbose' || true)
python3 - "$tower" "$torch" <<'PY'
import statistics, sys

def parse(text):
    """{(kind, prop, problem): (implementations, [ms])} from ONEDNN_VERBOSE lines of oneDNN 2.x or 3.x."""
    version, calls = "?", {}
    for line in text.splitlines():
        f = line.split(",")
        if "info" in f and any(x.startswith("oneDNN v") for x in f):
            version = next(x for x in f if x.startswith("oneDNN v")).split()[1]
        if "exec" not in f:
            continue
        engine, kind, impl, prop, _, _, _, problem, ms = f[f.index("exec") + 1:][:9]
        if kind == "reorder":
            problem = "weights " + problem
        impls, times = calls.setdefault((kind, prop, problem), (set(), []))
        impls.add(impl)
        times.append(float(ms))
    return version, calls

tv, t = parse(sys.argv[1])
pv, p = parse(sys.argv[2])
print(f"Tower: oneDNN {tv}; PyTorch: oneDNN {pv}; median ms per call")
print(f"{'primitive':18s} {'prop':17s} {'problem':58s} {'Tower impl':18s} {'ms':>8s} {'PyTorch impl':28s} {'ms':>8s}")
for key in sorted(set(t) & set(p)):
    (ti, tt), (pi, pt) = t[key], p[key]
    print(f"{key[0]:18s} {key[1]:17s} {key[2][:58]:58s} {'/'.join(sorted(ti))[:18]:18s} {statistics.median(tt):8.3f} "
          f"{'/'.join(sorted(pi))[:28]:28s} {statistics.median(pt):8.3f}")
only = sorted(set(t) ^ set(p))
if only:
    print("run by one side only:")
    for key in only:
        side, (impls, times) = ("Tower", t[key]) if key in t else ("PyTorch", p[key])
        print(f"  {side:8s} {key[0]} {key[1]} {key[2][:70]} {'/'.join(sorted(impls))} {statistics.median(times):.3f} ms")
PY
