"""PyTorch side of bench/recurrent.cpp: torch.nn.LSTM / GRU (batch_first) on the same shapes and thread count.

On the device TOWER_TORCH_DEVICE names (default cpu; "cuda": cuDNN's RNNs). Prints one JSON object per line: {"layer": ..., "ms": median milliseconds per forward+backward}. "_last" cases take
the gradient of the last step's output only, as a Keras layer without return_sequences returns it.
Needs `pip install torch`.
"""
import json
import os
import statistics
import sys
import time

import torch

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
BATCH, STEPS, FEATURES, UNITS = 64, 100, 128, 128
device = torch.device(os.environ.get("TOWER_TORCH_DEVICE", "cpu"))

for name in ["lstm_last", "lstm_sequences", "gru_last", "gru_sequences"]:
    cls = torch.nn.LSTM if name.startswith("lstm") else torch.nn.GRU
    module = cls(FEATURES, UNITS, batch_first=True).to(device)
    module.train()
    x = (torch.rand(BATCH, STEPS, FEATURES, device=device) * 2 - 1).requires_grad_(True)
    times = []
    for i in range(2 + iters):
        t0 = time.perf_counter()
        y, _ = module(x)
        if name.endswith("_last"):
            y = y[:, -1]
        y.backward(torch.full_like(y, 0.01))
        if device.type == "cuda":
            torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1000
        x.grad = None
        module.zero_grad(set_to_none=True)
        if i >= 2:
            times.append(ms)
    print(json.dumps({"layer": name, "ms": round(statistics.median(times), 3), "threads": torch.get_num_threads()}),
          flush=True)
