#!/usr/bin/env bash
# Tower vs PyTorch, LSTM and GRU layers (batch 64, 100 steps, 128 features, 128 units), same machine, same thread
# count, one run: bench/layers.sh's comparison (rounds taking turns, medians) on bench_recurrent and
# recurrent_torch.py, 10 forward+backward passes a turn. Usage: bench/recurrent.sh [build dir] [rounds=3].
BENCH_PROGRAM=bench_recurrent BENCH_TORCH=recurrent_torch.py BENCH_ITERS=10 exec bash "$(dirname "$0")/layers.sh" "$@"
