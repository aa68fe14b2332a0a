#!/usr/bin/env bash
# Verifies everything GPU-side in one run and writes one report.
#
#   scripts/gpu-check.sh pack   on a build machine (no GPU needed): builds Tower with CUDA for the GPU
#                               (CUDA_ARCH, default 90 = H100/H200), strips it and packs the programs, Tower's
#                               libraries, the Debian libraries they need and Fashion-MNIST into
#                               build-gpu/bundle.tar.xz (about 45 MiB). GPU_BUILD=build packs the Release
#                               build in build/ instead, when it was configured with CUDA for that GPU.
#   scripts/gpu-check.sh run    on the GPU machine, in the source tree with build-gpu/bundle.tar.xz: unpacks
#                               it, runs the op table on every GPU, every *_CUDA test, the Fashion-MNIST convnet
#                               on the GPU and on the CPU (test accuracies must agree within 0.5 points), the
#                               examples/sec of 1, 2 and 4 replicas on logical GPUs of GPU 0, and the training
#                               benchmarks beside PyTorch on the GPU when PyTorch is installed, and writes
#                               gpu-report.md (into $OUT when set, else the current folder).
#
# The GPU machine needs the NVIDIA driver, the CUDA 13 runtime and cuBLAS (/usr/local/cuda), and cuDNN 9
# (CUDNN_LIB, else PyTorch's pip folder nvidia/cudnn/lib, else the system's), and NCCL 2 (NCCL_LIB, else
# PyTorch's nvidia/nccl/lib, else the system's). It needs no Debian package:
# what the programs link besides glibc, libstdc++ and CUDA travels in the bundle. Takes about 5 minutes.
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
        fashion_mnist_convnet
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib" "$stage/data"
  cp "$build/bin/tower_tests" "$build/bin/bench_train" "$build/bin/bench_mobilenet_v2" \
     "$build/bin/bench_distribute_scaling" "$build/bin/fashion_mnist_convnet" "$stage/bin/"
  cp -P "$build"/lib/libtower_*.so* "$stage/lib/"
  # The libraries the programs need that a bare CUDA machine lacks: everything ldd finds except glibc, the
  # compiler's runtime and CUDA's own.
  ldd "$stage"/bin/* "$stage"/lib/*.so | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|/libtower_|/libcud|/libcublas|/libnccl|/libcuda' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* 2>/dev/null || true
  cp /usr/share/datasets/fashion-mnist/*.gz "$stage/data/"
  git -C "$here" rev-parse HEAD > "$stage/COMMIT" 2>/dev/null || echo unknown > "$stage/COMMIT"
  git -C "$here" status --porcelain | grep -q . && echo "(with uncommitted changes)" >> "$stage/COMMIT" || true
  cp "$here/bench/train_reference.py" "$here/bench/mobilenet_v2_torch.py" "$stage/"
  tar -C "$stage" -cf - . | xz -T0 -6 > "$bundle_dir/bundle.tar.xz"
  ls -la "$bundle_dir/bundle.tar.xz"
  echo "carry build-gpu/bundle.tar.xz and run: bash scripts/gpu-check.sh run"
}

report=""
say() { echo "$*"; report+="$*"$'\n'; }
failures=0
check() {  # check NAME COMMAND...: runs it, records pass/fail and the output's tail in the report
  local name=$1; shift
  local log=$work/$(echo "$name" | tr ' /' '__').log start=$SECONDS rc=0
  "$@" >"$log" 2>&1 || rc=$?
  local status=PASS
  [ $rc -eq 0 ] || { status="FAIL (exit $rc)"; failures=$((failures + 1)); }
  say "### $name: $status ($((SECONDS - start)) s)"
  say '```'
  say "$ $*"
  say "$(tail -n 40 "$log")"
  say '```'
}

# The lib folder of NVIDIA's pip package nvidia.<name> (a namespace package: no __file__), if installed.
pip_lib() {
  python3 -c "import nvidia.$1 as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))" 2>/dev/null
}

run() {
  local out=${OUT:-$PWD}
  work=$(mktemp -d)
  [ -f "$bundle_dir/bundle.tar.xz" ] || { echo "no $bundle_dir/bundle.tar.xz: run 'scripts/gpu-check.sh pack' first" >&2; exit 2; }
  xz -dc "$bundle_dir/bundle.tar.xz" | tar -C "$work" -xf -
  local cudnn=${CUDNN_LIB:-$(pip_lib cudnn)}
  # NCCL (about 250 MiB) does not fit in the bundle: NCCL_LIB, else PyTorch's pip folder nvidia/nccl/lib.
  local nccl=${NCCL_LIB:-$(pip_lib nccl)}
  export LD_LIBRARY_PATH="$work/lib:${cudnn:+$cudnn:}${nccl:+$nccl:}/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}"
  export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
  say "# Tower GPU check, $(date -u '+%F %H:%M UTC')"
  say ""
  say "- commit: $(cat "$work/COMMIT" | tr '\n' ' ')"
  say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tr '\n' ';' || echo none)"
  say "- CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  say "- cuDNN from: ${cudnn:-the system}; NCCL from: ${nccl:-the system}"
  say ""
  local missing
  missing=$(ldd "$work"/bin/* 2>&1 | grep 'not found' | sort -u)
  if [ -n "$missing" ]; then say "### libraries: FAIL"; say '```'; say "$missing"; say '```'; failures=$((failures + 1)); fi
  cd "$work"
  check "op table and every *_CUDA test" env -u TOWER_DEVICE bin/tower_tests --gtest_filter='*_CUDA*:OpTable.*:CachingAllocator.*:ModelDevice.*'
  check "convnet on cuda:0 (2 epochs)" env TOWER_DEVICE=cuda:0 bin/bench_train convnet 2 128 data
  check "convnet on the CPU (2 epochs)" env TOWER_DEVICE=cpu bin/bench_train convnet 2 128 data
  local gpu_acc cpu_acc
  gpu_acc=$(grep -ho '"test_accuracy": [0-9.]*' convnet_on_cuda:0_*.log 2>/dev/null | awk '{print $2}')
  cpu_acc=$(grep -ho '"test_accuracy": [0-9.]*' convnet_on_the_CPU_*.log 2>/dev/null | awk '{print $2}')
  if [ -n "$gpu_acc" ] && [ -n "$cpu_acc" ] &&
     python3 -c "import sys; sys.exit(0 if abs($gpu_acc - $cpu_acc) <= 0.005 else 1)"; then
    say "### convnet accuracy, GPU $gpu_acc vs CPU $cpu_acc: PASS (within 0.5 points)"
  else
    say "### convnet accuracy, GPU ${gpu_acc:-none} vs CPU ${cpu_acc:-none}: FAIL (must agree within 0.5 points)"
    failures=$((failures + 1))
  fi
  check "MLP on cuda:0 (2 epochs)" env TOWER_DEVICE=cuda:0 bin/bench_train mlp 2 128 data
  # MirroredStrategy on 1, 2 and 4 logical GPUs of GPU 0 (the *_CUDA tests above check that they train alike).
  check "examples/sec of 1, 2, 4 logical GPUs" bin/bench_distribute_scaling gpu 1,2,4 64 30
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    for model in convnet mlp; do
      check "PyTorch $model on cuda:0" env TOWER_TORCH_DEVICE=cuda python3 train_reference.py torch "$model" 2 128 data
    done
  else
    say "### PyTorch: not run (no PyTorch with CUDA here)"
  fi
  # MobileNetV2 224x224, 10 classes, SGD momentum 0.9: Tower beside PyTorch (eager, channels_last) on one GPU.
  for batch in 64 128; do
    check "MobileNetV2 batch $batch, Tower on cuda:0" env TOWER_DEVICE=cuda:0 bin/bench_mobilenet_v2 "$batch" 30 5
    check "MobileNetV2 batch $batch, PyTorch on cuda" python3 mobilenet_v2_torch.py "$batch" 30 5
    local tower torch
    tower=$(grep -ho '"images_per_sec": [0-9.]*' "MobileNetV2_batch_${batch},_Tower_on_cuda:0.log" 2>/dev/null | awk '{print $2}')
    torch=$(grep -ho '"images_per_sec": [0-9.]*' "MobileNetV2_batch_${batch},_PyTorch_on_cuda.log" 2>/dev/null | awk '{print $2}')
    [ -n "$tower" ] && [ -n "$torch" ] && say "MobileNetV2 batch $batch: Tower / PyTorch = $(python3 -c "print(f'{$tower / $torch:.2f}x')")"
  done
  say ""
  say "failures: $failures"
  cd - >/dev/null
  printf '%s' "$report" > "$out/gpu-report.md"
  mkdir -p "$out/gpu-logs" && cp "$work"/*.log "$out/gpu-logs/" 2>/dev/null
  echo "report: $out/gpu-report.md"
  [ $failures -eq 0 ]
}

case "$mode" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: scripts/gpu-check.sh pack|run" >&2; exit 2 ;;
esac
