"""PyTorch side of bench/layers.cpp: the same layers, shapes and thread count, channels_last, fp32.

Prints one JSON object per line: {"layer": ..., "ms": median milliseconds per forward+backward}.
Needs `pip install torch`.
"""
import json
import os
import statistics
import sys
import time

import torch

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20


def cases():
    cl = torch.channels_last
    yield "conv2d_1x1", torch.nn.Conv2d(24, 144, 1, bias=False).to(memory_format=cl), (16, 24, 56, 56)
    yield "conv2d_3x3", torch.nn.Conv2d(32, 32, 3, padding=1, bias=False).to(memory_format=cl), (16, 32, 56, 56)
    yield "depthwise_conv2d_3x3", torch.nn.Conv2d(144, 144, 3, padding=1, groups=144, bias=False).to(memory_format=cl), (16, 144, 56, 56)
    yield "batch_normalization", torch.nn.BatchNorm2d(144, eps=1e-3, momentum=0.001), (16, 144, 56, 56)
    yield "dense", torch.nn.Linear(1280, 1000), (64, 1280)
    yield "max_pooling2d", torch.nn.MaxPool2d(2), (128, 32, 26, 26)


for name, module, shape in cases():
    module.train()
    x = torch.rand(shape) * 2 - 1
    if len(shape) == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    x.requires_grad_(True)
    times = []
    for i in range(3 + iters):
        t0 = time.perf_counter()
        y = module(x)
        y.backward(torch.full_like(y, 0.01))
        ms = (time.perf_counter() - t0) * 1000
        x.grad = None
        module.zero_grad(set_to_none=True)
        if i >= 3:
            times.append(ms)
    print(json.dumps({"layer": name, "ms": round(statistics.median(times), 3), "threads": torch.get_num_threads()}), flush=True)
