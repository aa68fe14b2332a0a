#!/usr/bin/env bash
# Runs a benchmark script as an AVX2-only x86 machine (no AVX-512) would run it, on an AVX-512 machine:
#   bench/as_avx2.sh <avx2 backend build> bench/train.sh build 1
# restricts every library each framework computes with: oneDNN (Tower's and the one PyTorch bundles) by
# ONEDNN_MAX_CPU_ISA, PyTorch's ATen kernels by ATEN_CPU_CAPABILITY, MKL (PyTorch's matrix products) by
# MKL_ENABLE_INSTRUCTIONS, and Tower's own loops by loading the backend of a build made without the AVX-512 clones:
#   cmake -S . -B build-avx2 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-DTOWER_VECTOR_CLONES_UP_TO_AVX2
#   cmake --build build-avx2 --target tower_backend
# The scripts print the ISA each library chose (bench_cpu_isa, bench/torch_isa.py), so a result says what ran.
set -euo pipefail
avx2_build=${1:?usage: bench/as_avx2.sh <avx2 backend build> <script> [args...]}
shift
[ -e "$avx2_build/lib/libtower_backend.so" ] || {
  echo "as_avx2.sh: $avx2_build/lib/libtower_backend.so is missing (build it as this script's header says)" >&2
  exit 2
}
export ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2
export LD_LIBRARY_PATH="$(cd "$avx2_build/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$@"
