#!/usr/bin/env bash
# Fuzzes Tower's file readers and the parameter server's request handlers with libFuzzer under AddressSanitizer + UndefinedBehaviorSanitizer
# (tests/fuzz/README.md).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Configures and builds $BUILD_DIR (default build-fuzz: Clang, TOWER_FUZZ=ON, CPU only), then runs each target
# (default: all) in turn for SECONDS (default 600) on a copy of its corpus tests/fuzz/corpus/<target>, so the
# repository is never written. One fuzzing process at a time. Per target, under $OUT (default
# $BUILD_DIR/fuzz-runs/<date>), <target>/ holds the log, the grown corpus and any crash-*, leak-*, timeout-* or
# oom-* input; summary.txt gets one line of final statistics per target. Exits 1 when any target found something.
#
# Environment: BUILD_DIR, OUT, JOBS (build parallelism, default 2), FUZZ_FLAGS (more libFuzzer flags),
# MERGE=1 (after a clean run, merge the inputs that add coverage into tests/fuzz/corpus/<target>, minimised by
# libFuzzer's -merge=1), KEEP_GOING=1 (libFuzzer's -fork=1 with crashes, OOMs and timeouts recorded but not
# stopping the run, so the whole time is still spent; every artifact then needs triage).
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-600}
shift || true
ALL_TARGETS=(idx cifar10 image experiment weights_file keras_weights parameter_server)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL_TARGETS[@]}")
BUILD_DIR=${BUILD_DIR:-build-fuzz}
OUT=${OUT:-$BUILD_DIR/fuzz-runs/$(date +%Y%m%d-%H%M%S)}
JOBS=${JOBS:-2}

# The longest input each target tries: room for a header and some data, or for a small image / HDF5 file.
max_len() {
  case $1 in
    idx) echo 8192 ;;
    cifar10) echo 10000 ;;          # three 3073-byte records
    experiment | weights_file) echo 16384 ;;
    image | keras_weights) echo 65536 ;;
    parameter_server) echo 4096 ;;    # a request for the whole shard of the fuzz model is about 300 bytes
  esac
}

for t in "${TARGETS[@]}"; do
  [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || { echo "unknown target '$t' (targets: ${ALL_TARGETS[*]})" >&2; exit 2; }
done

CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTOWER_WITH_CUDA=OFF -DTOWER_BUILD_GUI=OFF -DTOWER_BUILD_BENCH=OFF -DTOWER_BUILD_EXAMPLES=OFF \
  -DTOWER_SANITIZE=address,undefined,fuzzer-no-link -DTOWER_FUZZ=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]/#/fuzz_}"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
printf '%-14s %8s %12s %8s %7s %7s %8s %9s  %s\n' target seconds execs exec/s cov ft corpus bytes findings \
  >"$SUMMARY"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
status=0
for t in "${TARGETS[@]}"; do
  dir=$OUT/$t
  mkdir -p "$dir/artifacts"
  rm -rf "$dir/corpus"
  cp -r "tests/fuzz/corpus/$t" "$dir/corpus"
  flags=(-max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 -max_len="$(max_len "$t")"
         -print_final_stats=1 -artifact_prefix="$dir/artifacts/")
  [ -f "tests/fuzz/$t.dict" ] && flags+=(-dict="tests/fuzz/$t.dict")
  if [ "${KEEP_GOING:-0}" = 1 ]; then
    flags+=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
  fi
  echo "== fuzz_$t for ${SECONDS_PER_TARGET}s (log: $dir/fuzz.log)"
  set +e
  # shellcheck disable=SC2086
  "$BUILD_DIR/bin/fuzz_$t" "${flags[@]}" ${FUZZ_FLAGS:-} "$dir/corpus" >"$dir/fuzz.log" 2>&1
  rc=$?
  set -e
  # Final statistics: the last status line (#N DONE/pulse cov: ft: corp: exec/s:, or in fork mode
  # #N: cov: ft: corp: exec/s) and -print_final_stats.
  last=$(grep -E '^#[0-9]+' "$dir/fuzz.log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/fuzz.log" | tail -1)
  [ -z "$execs" ] && execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
  [ -z "$speed" ] && [ -n "$execs" ] && speed=$((execs / SECONDS_PER_TARGET))  # fork mode: the mean rate
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  files=$(find "$dir/corpus" -type f | wc -l)
  bytes=$(du -sb "$dir/corpus" | cut -f1)
  findings=$(find "$dir/artifacts" -type f | wc -l)
  if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
    status=1
    echo "   FINDING (exit $rc): $(ls "$dir/artifacts" | tr '\n' ' ')"
    grep -m3 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|fuzz finding' "$dir/fuzz.log" || true
  elif [ "${MERGE:-0}" = 1 ]; then
    "$BUILD_DIR/bin/fuzz_$t" -merge=1 -max_len="$(max_len "$t")" -rss_limit_mb=2048 -timeout=10 \
      "tests/fuzz/corpus/$t" "$dir/corpus" >"$dir/merge.log" 2>&1
    echo "   merged into tests/fuzz/corpus/$t: $(grep -o 'added [0-9]* new files' "$dir/merge.log" || echo '?')"
  fi
  printf '%-14s %8s %12s %8s %7s %7s %8s %9s  %s\n' "$t" "$SECONDS_PER_TARGET" "${execs:-?}" "${speed:-?}" \
    "${cov:-?}" "${ft:-?}" "$files" "$bytes" "$findings" | tee -a "$SUMMARY"
done
echo "summary: $SUMMARY"
exit $status
