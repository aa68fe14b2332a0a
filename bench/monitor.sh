#!/usr/bin/env bash
# The training monitor's cost (bench/monitor.cpp): examples/sec without a LiveMonitor, with one sending to a
# monitor that reads (a reader process, and the real tower-monitor drawing offscreen when it is built), to
# one that never reads, and to none, interleaved.
# Usage: bench/monitor.sh [build dir] [rounds]
set -euo pipefail
build=${1:-build}
rounds=${2:-11}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, threads=$OMP_NUM_THREADS, $(date -u +%F)"
monitor_args=()
if [ -x "$build/bin/tower-monitor" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 7471)
  QT_QPA_PLATFORM=offscreen "$build/bin/tower-monitor" --port "$port" >/dev/null 2>&1 &
  monitor_pid=$!
  trap 'kill $monitor_pid 2>/dev/null || true' EXIT
  sleep 1
  monitor_args=(--monitor-port "$port")
fi
"$build/bin/bench_monitor" mlp "$rounds" ${MLP_STEPS:-1000} "${monitor_args[@]}"
"$build/bin/bench_monitor" convnet "$rounds" ${CONVNET_STEPS:-200} "${monitor_args[@]}"
