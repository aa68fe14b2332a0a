#!/usr/bin/env bash
# The training monitor's cost (bench/monitor.cpp): examples/sec without a LiveMonitor, with one sending to a
# monitor that reads (a reader process, and the real tower-monitor drawing offscreen when it is built), to
# one that never reads, and to none: whole runs interleaved, then the same in turns within one run.
# Usage: [NICE=-10] bench/monitor.sh [build dir] [rounds of whole runs] [cycles of segments]
# NICE runs the benchmark and the monitor at that priority (negative needs root), so that other work on a
# shared machine disturbs the comparison less.
set -euo pipefail
build=${1:-build}
rounds=${2:-11}
cycles=${3:-61}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
run=(nice -n "${NICE:-0}")
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, threads=$OMP_NUM_THREADS, nice=${NICE:-0}, $(date -u +%F)"
monitor_args=()
if [ -x "$build/bin/tower-monitor" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 7471)
  QT_QPA_PLATFORM=offscreen "${run[@]}" "$build/bin/tower-monitor" --port "$port" >/dev/null 2>&1 &
  monitor_pid=$!
  trap 'kill $monitor_pid 2>/dev/null || true' EXIT
  sleep 1
  monitor_args=(--monitor-port "$port")
fi
for model in mlp convnet; do
  # Whole runs interleaved, then the configurations taking turns within one run.
  steps=$([ "$model" = mlp ] && echo 1000 || echo 200)
  segment=$([ "$model" = mlp ] && echo 200 || echo 20)
  "${run[@]}" "$build/bin/bench_monitor" "$model" runs "$rounds" "$steps" "${monitor_args[@]}"
  "${run[@]}" "$build/bin/bench_monitor" "$model" segments "$cycles" "$segment" "${monitor_args[@]}"
done
