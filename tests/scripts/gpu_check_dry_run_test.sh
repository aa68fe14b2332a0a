#!/usr/bin/env bash
# scripts/gpu-check.sh dry-run, without a GPU: every stage writes its status to the report as it goes, a stage
# that hangs is ended by its timeout and the stages after it still run, and what comes back is two files with
# plain names. Usage: gpu_check_dry_run_test.sh <path of gpu-check.sh>
set -u
script=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; echo "--- report:"; cat "$out/gpu-report.md" 2>/dev/null; exit 1; }

start=$SECONDS
OUT=$out GPU_CHECK_MAX_STAGE_SECONDS=3 GPU_CHECK_HANG_STAGE="suite CapturedSteps" \
  timeout 120 bash "$script" dry-run > "$out/stdout" 2>&1
rc=$?
took=$((SECONDS - start))
[ $rc -ne 124 ] || fail "the dry run itself hung"
[ $rc -ne 0 ] || fail "a hung stage must make the run fail"
[ $took -lt 60 ] || fail "the dry run took $took s"
report=$out/gpu-report.md
[ -f "$report" ] || fail "no gpu-report.md"
grep -q '^### suite CapturedSteps: TIMEOUT (3 s)' "$report" || fail "the hung stage did not time out"
for s in versions smoke "suite ModelDevice" "suite LossesOnTheGpu" "convnet on cuda0" "convnet on cpu" \
         "mlp on cuda0" "logical gpus 1 2 4" "mobilenet_v2 batch 64 tower" "mobilenet_v2 batch 128 tower" \
         "mobilenet_v2 batch 128 pytorch"; do
  grep -q "^### $s: PASS" "$report" || fail "no PASS for stage '$s'"
done
# Stages after the hung one ran.
hung=$(grep -n '^### suite CapturedSteps' "$report" | cut -d: -f1)
last=$(grep -n '^### mobilenet_v2 batch 128 tower' "$report" | cut -d: -f1)
[ "$last" -gt "$hung" ] || fail "the stages after the hung one did not run"
grep -q '^failures: 1 ' "$report" || fail "failures are not counted as 1"
[ -f "$out/gpu-logs.tar.gz" ] || fail "no gpu-logs.tar.gz"
tar -tzf "$out/gpu-logs.tar.gz" | grep -q 'logs/[0-9]*-suite_CapturedSteps.log' || fail "the hung stage's log is not packed"
files=$(ls "$out" | grep -v '^stdout$')
[ "$(echo "$files" | wc -l)" -le 8 ] || fail "more than 8 files: $files"
! echo "$files" | grep -q '[^A-Za-z0-9._-]' || fail "a file name outside [A-Za-z0-9._-]: $files"
! tar -tzf "$out/gpu-logs.tar.gz" | grep -q '[^A-Za-z0-9._/-]' || fail "a log name outside [A-Za-z0-9._-]"
echo "PASS ($took s)"
