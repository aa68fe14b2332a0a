#!/usr/bin/env bash
# Screenshots of the real tower-monitor window on an Xvfb display while a real Fashion-MNIST run trains and
# feeds it through a LiveMonitor (examples/fashion_mnist_monitor.cpp), then the README picture of the
# finished run made with `tower-monitor --snapshot`. Installs Xvfb, xwd and netpbm when they are missing. CI
# does not run this.
# Usage: scripts/monitor_screenshot.sh [build dir] [epochs]
# Writes docs/images/monitor_live_1.png and monitor_live_2.png (the window at steps 250 and 700 of the run)
# and docs/images/monitor.png (the snapshot of the finished run).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
epochs=${2:-3}
out=docs/images
mkdir -p "$out"
TOWER_EXTRA_PACKAGES="xvfb x11-apps netpbm" bash scripts/install-deps.sh

work=$(mktemp -d)
run_dir=$work/fashion_mnist_cnn
display=:$((90 + RANDOM % 9))
port=$((20000 + RANDOM % 20000))
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

Xvfb "$display" -screen 0 1440x900x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
sleep 1
DISPLAY=$display "$build/bin/tower-monitor" --port "$port" >"$work/monitor.log" 2>&1 &
pids+=($!)
sleep 2
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$build/bin/fashion_mnist_monitor" "$run_dir" "$epochs" "$port" >"$work/train.log" 2>&1 &
trainer=$!
pids+=($trainer)

# The last step the run has written to its events file.
step() { tail -n 1 "$run_dir/events.jsonl" 2>/dev/null | sed -n 's/.*"step": \([0-9]*\).*/\1/p' | tail -n 1; }
wait_for_step() {
  while [ "$(step || true)" = "" ] || [ "$(step)" -lt "$1" ]; do
    kill -0 "$trainer" 2>/dev/null || { echo "the training run ended early:"; cat "$work/train.log"; exit 1; }
    sleep 0.5
  done
}
shot() {
  sleep 0.5  # the monitor redraws at most every 200 ms
  xwd -root -silent -display "$display" | xwdtopnm 2>/dev/null | pnmtopng >"$1"
  echo "$1: step $(step)"
}
wait_for_step 250
shot "$out/monitor_live_1.png"
wait_for_step 700
shot "$out/monitor_live_2.png"
wait "$trainer"
cat "$work/train.log"
"$build/bin/tower-monitor" --snapshot "$run_dir" "$out/monitor.png" --size 1200x760
ls -l "$out"/monitor*.png
