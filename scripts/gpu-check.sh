#!/usr/bin/env bash
# Verifies everything GPU-side in one run, stage by stage, within the few minutes a lent GPU gives.
#
#   scripts/gpu-check.sh pack     on a build machine (no GPU needed): builds Tower with CUDA for the GPU
#                                 (CUDA_ARCH, default 90 = H100/H200), strips it and packs the programs, Tower's
#                                 libraries, the Debian libraries they need (never glibc's) and Fashion-MNIST
#                                 into build-gpu/bundle.tar.xz, refused above 50 MiB. GPU_BUILD=build packs the
#                                 Release build in build/ instead, when it was configured with CUDA for that GPU.
#   scripts/gpu-check.sh run      on the GPU machine, in the source tree with build-gpu/bundle.tar.xz: unpacks
#                                 it and runs the stages below, each in its own process under `timeout`.
#   scripts/gpu-check.sh dry-run  anywhere, without a bundle or a GPU: walks the same stages, each running a
#                                 stand-in that says what it would run, and writes the same report.
#
# The stages, in order (the whole run within GPU_CHECK_BUDGET seconds, default 360; the tests with
# TOWER_ALLOW_TF32=0, so the GPU's results are FP32's): the runtime versions
# (driver, cuDNN, cuBLAS, NCCL as loaded), a 90 s smoke stage (devices, allocator, one op-table pass), then every
# suite of *_CUDA tests in its own process (a sticky CUDA error ends one suite, not the run), the convnet on the
# GPU and on the CPU (test accuracies within 0.5 points), the MLP, logical-replica scaling, PyTorch beside it
# when installed, MobileNetV2 at batch 64 and 128 beside PyTorch, then LSTM / GRU and MultiHeadAttention (and the
# attention op alone) beside PyTorch. A stage that fails (not one that times
# out) is run once more with CUDA_LAUNCH_BLOCKING=1, so its log names the failing kernel. After each stage its
# status is appended to gpu-report.md and every log so far is packed into gpu-logs.tar.gz, both in $OUT when set
# (else the current folder): a run cut short still returns what it did, in two files with plain names.
#
# Only Tower's programs run with the bundle's LD_LIBRARY_PATH; python3, PyTorch and nvidia-smi see the machine's.
# The tests that read the source tree (the op table's coverage of backend.h) prove facts of the source, not of
# the GPU, and run in CI; here they are left out by the filters. GPU_CHECK_MAX_STAGE_SECONDS caps every stage's
# limit and GPU_CHECK_HANG_STAGE=<name> makes that stage's stand-in hang (dry-run only): the harness's own test
# (tests/scripts/gpu_check_dry_run_test.sh) uses both.
#
# The GPU machine needs the NVIDIA driver, the CUDA 13 runtime and cuBLAS (/usr/local/cuda), and cuDNN 9
# (CUDNN_LIB, else PyTorch's pip folder nvidia/cudnn/lib, else the system's), and NCCL 2 (NCCL_LIB, else
# PyTorch's nvidia/nccl/lib, else the system's). It needs no Debian package.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bundle_dir=$here/build-gpu
mode=${1:-}

pack() {
  set -e
  # GPU_BUILD=build packs an existing Release build with CUDA for the same architecture (no second build).
  local build=${GPU_BUILD:-$bundle_dir/build} stage=$bundle_dir/stage
  [ "${build#/}" != "$build" ] || build=$here/$build
  if [ -z "${GPU_BUILD:-}" ]; then
    cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOWER_WITH_CUDA=ON -DTOWER_BUILD_GUI=OFF \
          -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" >/dev/null
  fi
  grep -q "arch=compute_${CUDA_ARCH:-90}," "$build/build.ninja" ||
    { echo "$build does not build CUDA code for architecture ${CUDA_ARCH:-90}" >&2; exit 2; }
  cmake --build "$build" --target tower_tests bench_train bench_mobilenet_v2 bench_distribute_scaling \
        bench_recurrent bench_attention fashion_mnist_convnet
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
  cp "$build/bin/tower_tests" "$build/bin/bench_train" "$build/bin/bench_mobilenet_v2" \
     "$build/bin/bench_distribute_scaling" "$build/bin/bench_recurrent" "$build/bin/bench_attention" \
     "$build/bin/fashion_mnist_convnet" \
     "$stage/bin/"
  cp -P "$build"/lib/libtower_*.so* "$stage/lib/"
  # The libraries the programs need that a bare CUDA machine lacks: everything ldd finds except glibc (all of
  # it: libresolv, reached through hdf5 -> curl -> krb5, must match the machine's libc), the compiler's runtime
  # and CUDA's own.
  ldd "$stage"/bin/* "$stage"/lib/*.so | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libresolv|libnss_[a-z]+|libanl|libutil|libBrokenLocale|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|/libtower_|/libcud|/libcublas|/libnccl|/libcuda' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* 2>/dev/null || true
  # Unpacked: xz packs the images to less than their .gz files, which it cannot shrink (Tower's IDX reader and
  # train_reference.py read either).
  for f in /usr/share/datasets/fashion-mnist/*.gz; do gunzip -c "$f" > "$stage/data/$(basename "${f%.gz}")"; done
  git -C "$here" rev-parse HEAD > "$stage/COMMIT" 2>/dev/null || echo unknown > "$stage/COMMIT"
  git -C "$here" status --porcelain | grep -q . && echo "(with uncommitted changes)" >> "$stage/COMMIT" || true
  cp "$here/bench/train_reference.py" "$here/bench/mobilenet_v2_torch.py" "$here/bench/recurrent_torch.py" \
     "$here/bench/attention_torch.py" "$stage/"
  tar -C "$stage" -cf - . | xz -T0 -6 > "$bundle_dir/bundle.tar.xz"
  ls -la "$bundle_dir/bundle.tar.xz"
  # The bundle travels beside the source tree in the 64 MiB a lent machine takes.
  local size
  size=$(stat -c %s "$bundle_dir/bundle.tar.xz")
  [ "$size" -le $((50 << 20)) ] || { echo "the bundle is $((size >> 20)) MiB, more than 50" >&2; exit 2; }
  echo "carry build-gpu/bundle.tar.xz and run: bash scripts/gpu-check.sh run"
}

out=${OUT:-$PWD}
dry=0
budget=${GPU_CHECK_BUDGET:-360}
deadline=0
failures=0
stage_no=0
work=""
tower_libs=""
tower=()

# Appends a line to the report at once, so a run cut short keeps what it did.
say() { echo "$*"; printf '%s\n' "$*" >> "$out/gpu-report.md"; }

# Letters, digits, '.', '_' and '-' only: the names a lent machine returns.
plain_name() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_' | tr -s '_'; }

pack_logs() { tar -C "$work" -czf "$out/gpu-logs.tar.gz" logs 2>/dev/null || true; }

# Runs COMMAND... as stage NAME for at most LIMIT seconds (less when the run's budget is nearly spent), appends
# its status and the tail of its log to the report, and packs the logs. A failure (not a timeout) is rerun once
# with CUDA_LAUNCH_BLOCKING=1. Returns the command's status.
stage() {
  local name=$1 limit=$2; shift 2
  stage_no=$((stage_no + 1))
  local log="$work/logs/$(printf '%02d' "$stage_no")-$(plain_name "$name").log"
  local left=$((deadline - SECONDS))
  [ -z "${GPU_CHECK_MAX_STAGE_SECONDS:-}" ] || [ "$limit" -le "$GPU_CHECK_MAX_STAGE_SECONDS" ] ||
    limit=$GPU_CHECK_MAX_STAGE_SECONDS
  [ "$limit" -le "$left" ] || limit=$left
  if [ "$limit" -lt 3 ]; then
    say "### $name: SKIPPED (the run's ${budget} s are spent)"
    failures=$((failures + 1))
    return 125
  fi
  if [ $dry -eq 1 ]; then
    if [ "$name" = "${GPU_CHECK_HANG_STAGE:-}" ]; then set -- sleep 100000; else set -- echo "would run: $*"; fi
  fi
  local start=$SECONDS rc=0
  timeout -k 5 "$limit" "$@" >"$log" 2>&1 || rc=$?
  local status=PASS
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    status="TIMEOUT (${limit} s)"
  elif [ $rc -ne 0 ]; then
    status="FAIL (exit $rc)"
    left=$((deadline - SECONDS))
    if [ $dry -eq 0 ] && [ "$left" -ge 10 ]; then
      [ "$limit" -le "$left" ] || limit=$left
      local rerun=0
      timeout -k 5 "$limit" env CUDA_LAUNCH_BLOCKING=1 "$@" >"${log%.log}-blocking.log" 2>&1 || rerun=$?
      status+="; rerun with CUDA_LAUNCH_BLOCKING=1: exit $rerun"
    fi
  fi
  [ $rc -eq 0 ] || failures=$((failures + 1))
  say "### $name: $status ($((SECONDS - start)) s)"
  say '```'
  say "$ $*"
  say "$(tail -n 25 "$log")"
  say '```'
  pack_logs
  return $rc
}


# The lib folder of NVIDIA's pip package nvidia.<name> (a namespace package: no __file__), if installed.
pip_lib() {
  python3 -c "import nvidia.$1 as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null
}

# The libraries' versions as Tower's programs load them (the build's headers may be newer): python3 opens each
# library from the folders of LD_PATH (the programs' path, given as an argument, not as python3's own
# LD_LIBRARY_PATH), else from the system's.
write_versions_probe() {
  cat > "$work/versions.py" <<'PY'
import ctypes, os, subprocess, sys
def load(name):
    for folder in sys.argv[1].split(":"):
        if folder and os.path.exists(os.path.join(folder, name)):
            return ctypes.CDLL(os.path.join(folder, name))
    return ctypes.CDLL(name)
def version(lib, fn, pointer):
    try:
        f = getattr(load(lib), fn)
        if pointer:
            v = ctypes.c_int()
            f(ctypes.byref(v))
            return v.value
        f.restype = ctypes.c_size_t
        return f()
    except (OSError, AttributeError) as e:
        return "not loaded (%s)" % e
for name, lib, fn, pointer in [("CUDA driver", "libcuda.so.1", "cuDriverGetVersion", True),
                               ("CUDA runtime", "libcudart.so.13", "cudaRuntimeGetVersion", True),
                               ("cuDNN", "libcudnn.so.9", "cudnnGetVersion", False),
                               ("cuBLASLt", "libcublasLt.so.13", "cublasLtGetVersion", False),
                               ("NCCL", "libnccl.so.2", "ncclGetVersion", True)]:
    print("%s: %s" % (name, version(lib, fn, pointer)))
subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
PY
}

# The suites that hold *_CUDA tests, one a line.
cuda_suites() {
  if [ $dry -eq 1 ]; then
    grep -rhoE '^TEST(_F|_P)?\(\w+, \w*_CUDA\)' "$here/tests" | sed -E 's/^TEST(_F|_P)?\((\w+),.*/\2/' | sort -u
  else
    "${tower[@]}" bin/tower_tests --gtest_list_tests --gtest_filter='*_CUDA*' | awk '/^[A-Za-z0-9_\/]+\.$/ {sub(/\.$/, ""); print}' |
      sed 's#/.*##' | sort -u
  fi
}

accuracy_of() { grep -ho '"test_accuracy": [0-9.]*' "$work"/logs/*-"$1".log 2>/dev/null | awk '{print $2}' | head -1; }

unpack() {
  [ -f "$bundle_dir/bundle.tar.xz" ] || { echo "no $bundle_dir/bundle.tar.xz: run 'scripts/gpu-check.sh pack' first" >&2; exit 2; }
  xz -dc "$bundle_dir/bundle.tar.xz" | tar -C "$work" -xf -
}

# Sets tower_libs and tower (the command prefix of Tower's programs): only they get the bundle's libraries.
cudnn=""
nccl=""
libraries() {
  cudnn=${CUDNN_LIB:-$(pip_lib cudnn)}
  # NCCL (about 250 MiB) does not fit in the bundle: NCCL_LIB, else PyTorch's pip folder nvidia/nccl/lib.
  nccl=${NCCL_LIB:-$(pip_lib nccl)}
  tower_libs="$work/lib:${cudnn:+$cudnn:}${nccl:+$nccl:}/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
  tower=(env "LD_LIBRARY_PATH=$tower_libs")
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
}

# profile PROGRAM ARGS...: the bundle's PROGRAM (bin/...) under Nsight Compute, each kernel's duration (the
# clocks left as they are), summed by kernel name into $out/profile-summary.txt (largest first, with the count of
# launches), the raw CSV (and the program's output) in $out/profile.csv. CUDA graphs are off (TOWER_CUDA_GRAPHS=0) so each launch is seen.
profile() {
  [ $# -gt 0 ] || { echo "usage: scripts/gpu-check.sh profile bin/PROGRAM [ARGS...]" >&2; exit 2; }
  mkdir -p "$out"
  work=$(mktemp -d)
  unpack
  libraries
  cd "$work"
  local ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "no ncu (Nsight Compute) on this machine" >&2; exit 2; }
  "${tower[@]}" TOWER_CUDA_GRAPHS=0 TOWER_ALLOW_TF32="${TOWER_ALLOW_TF32:-1}" "$ncu" --clock-control none \
    --metrics gpu__time_duration.sum --csv --print-units base "$@" > "$out/profile.csv"
  python3 - "$out/profile.csv" > "$out/profile-summary.txt" <<'PY'
import csv, collections, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
cols = rows[head]
name, metric, value = cols.index("Kernel Name"), cols.index("Metric Name"), cols.index("Metric Value")
total, count = collections.Counter(), collections.Counter()
for r in rows[head + 1:]:
    if len(r) == len(cols) and r[metric] == "gpu__time_duration.sum":
        k = r[name][:140]
        total[k] += float(r[value].replace(",", "")) / 1000.0
        count[k] += 1
whole = sum(total.values())
print("all kernels: %.1f us in %d launches" % (whole, sum(count.values())))
for k, us in total.most_common():
    print("%10.1f us %5.1f%% %6d x %8.1f us  %s" % (us, 100 * us / whole, count[k], us / count[k], k))
PY
  head -60 "$out/profile-summary.txt"
}

run() {
  [ "$mode" = dry-run ] && dry=1
  mkdir -p "$out"
  work=$(mktemp -d)
  mkdir -p "$work/logs"
  : > "$out/gpu-report.md"
  deadline=$((SECONDS + budget))
  [ $dry -eq 1 ] || unpack
  libraries
  say "# Tower GPU check$([ $dry -eq 1 ] && echo ' (dry run: no GPU, stand-ins for every stage)'), $(date -u '+%F %H:%M UTC')"
  say ""
  say "- commit: $(cat "$work/COMMIT" 2>/dev/null | tr '\n' ' ' || echo unknown)"
  say "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  say "- cuDNN from: ${cudnn:-the system}; NCCL from: ${nccl:-the system}"
  say ""
  if [ $dry -eq 0 ]; then
    local missing
    missing=$("${tower[@]}" ldd "$work"/bin/* 2>&1 | grep 'not found' | sort -u)
    if [ -n "$missing" ]; then say "### libraries: FAIL"; say '```'; say "$missing"; say '```'; failures=$((failures + 1)); fi
  fi
  cd "$work"
  write_versions_probe
  stage "versions" 20 python3 versions.py "$tower_libs"
  stage "smoke" 90 "${tower[@]}" TOWER_ALLOW_TF32=0 bin/tower_tests --gtest_filter='Device*:CachingAllocator.*:OpTable.EveryGpuMatchesTheCpu_CUDA'
  local suite
  for suite in $(cuda_suites); do
    [ "$suite" = OpTable ] && continue  # in the smoke stage
    stage "suite $suite" 120 "${tower[@]}" TOWER_ALLOW_TF32=0 bin/tower_tests --gtest_filter="$suite.*_CUDA*:$suite/*.*_CUDA*"
  done
  stage "convnet on cuda0" 60 "${tower[@]}" TOWER_DEVICE=cuda:0 bin/bench_train convnet 2 128 data
  stage "convnet on cpu" 90 "${tower[@]}" TOWER_DEVICE=cpu bin/bench_train convnet 2 128 data
  local gpu_acc cpu_acc
  gpu_acc=$(accuracy_of convnet_on_cuda0)
  cpu_acc=$(accuracy_of convnet_on_cpu)
  if [ $dry -eq 1 ]; then
    say "### convnet accuracy: not compared (dry run)"
  elif [ -n "$gpu_acc" ] && [ -n "$cpu_acc" ] &&
     python3 -c "import sys; sys.exit(0 if abs($gpu_acc - $cpu_acc) <= 0.005 else 1)"; then
    say "### convnet accuracy, GPU $gpu_acc vs CPU $cpu_acc: PASS (within 0.5 points)"
  else
    say "### convnet accuracy, GPU ${gpu_acc:-none} vs CPU ${cpu_acc:-none}: FAIL (must agree within 0.5 points)"
    failures=$((failures + 1))
  fi
  stage "mlp on cuda0" 40 "${tower[@]}" TOWER_DEVICE=cuda:0 bin/bench_train mlp 2 128 data
  # MirroredStrategy on 1, 2 and 4 logical GPUs of GPU 0 (the *_CUDA suites check that they train alike).
  stage "logical gpus 1 2 4" 60 "${tower[@]}" bin/bench_distribute_scaling gpu 1,2,4 64 30
  local torch=0
  if [ $dry -eq 1 ] || python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then torch=1; fi
  [ $torch -eq 1 ] || say "### PyTorch: not run (no PyTorch with CUDA here)"
  # MobileNetV2 224x224, 10 classes, SGD momentum 0.9: Tower beside PyTorch (eager, channels_last) on one GPU.
  local batch tower_ips torch_ips
  for batch in 64 128; do
    stage "mobilenet_v2 batch $batch tower" 60 "${tower[@]}" TOWER_DEVICE=cuda:0 bin/bench_mobilenet_v2 "$batch" 30 5
    [ $torch -eq 1 ] || continue
    stage "mobilenet_v2 batch $batch pytorch" 60 python3 mobilenet_v2_torch.py "$batch" 30 5
    tower_ips=$(grep -ho '"images_per_sec": [0-9.]*' logs/*-mobilenet_v2_batch_${batch}_tower.log 2>/dev/null | awk '{print $2}')
    torch_ips=$(grep -ho '"images_per_sec": [0-9.]*' logs/*-mobilenet_v2_batch_${batch}_pytorch.log 2>/dev/null | awk '{print $2}')
    [ -n "$tower_ips" ] && [ -n "$torch_ips" ] &&
      say "MobileNetV2 batch $batch: Tower / PyTorch = $(python3 -c "print(f'{$tower_ips / $torch_ips:.2f}x')")"
  done
  if [ $torch -eq 1 ]; then
    stage "pytorch convnet on cuda" 60 env TOWER_TORCH_DEVICE=cuda python3 train_reference.py torch convnet 2 128 data
  fi
  # LSTM and GRU (batch 64, 100 steps, 128 units) forward+backward, beside torch.nn.LSTM / GRU (cuDNN).
  stage "recurrent tower on cuda0" 60 "${tower[@]}" TOWER_DEVICE=cuda:0 bin/bench_recurrent 10
  if [ $torch -eq 1 ]; then
    stage "recurrent pytorch on cuda" 60 env TOWER_TORCH_DEVICE=cuda python3 recurrent_torch.py 10
  fi
  # MultiHeadAttention (batch 32, length 256, 8 heads of 64) forward+backward through the fused attention kernel, and
  # the kernel alone, beside torch's projections + scaled_dot_product_attention and scaled_dot_product_attention.
  stage "attention tower on cuda0" 40 "${tower[@]}" TOWER_DEVICE=cuda:0 bin/bench_attention 10
  stage "attention op tower on cuda0" 40 "${tower[@]}" TOWER_DEVICE=cuda:0 bin/bench_attention 10 32 op
  if [ $torch -eq 1 ]; then
    stage "attention pytorch on cuda" 40 env TOWER_TORCH_DEVICE=cuda python3 attention_torch.py 10
    stage "attention op pytorch on cuda" 40 env TOWER_TORCH_DEVICE=cuda python3 attention_torch.py 10 32 op
  fi
  say ""
  say "failures: $failures (run took $SECONDS s)"
  pack_logs
  cd - >/dev/null
  echo "report: $out/gpu-report.md, logs: $out/gpu-logs.tar.gz"
  [ $failures -eq 0 ]
}

case "$mode" in
  pack) pack ;;
  run | dry-run) run ;;
  profile) shift; profile "$@" ;;
  *) echo "usage: scripts/gpu-check.sh pack|run|dry-run|profile bin/PROGRAM [ARGS...]" >&2; exit 2 ;;
esac
