#!/usr/bin/env python3
"""PyTorch's side of bench/attention.sh: Linear projections (query, key, value) + scaled_dot_product_attention +
output projection, forward + backward (input gradient too) at batch 32, length 256, 8 heads of 64, float32 on the
CPU, the thread count of OMP_NUM_THREADS; with a third argument "op", scaled_dot_product_attention alone on q, k, v
[32, 8, 256, 64] and the gradients of all three. On the device TOWER_TORCH_DEVICE names (default cpu). Prints one JSON
object as bench/attention.cpp does."""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 32
op_only = len(sys.argv) > 3 and sys.argv[3] == "op"
length, heads, head_dim = 256, 8, 64
dim = heads * head_dim
torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
torch.manual_seed(1)
device = torch.device(os.environ.get("TOWER_TORCH_DEVICE", "cpu"))
q_proj, k_proj, v_proj, o_proj = (torch.nn.Linear(dim, dim).to(device) for _ in range(4))
x = torch.empty(batch, length, dim, device=device).uniform_(-1, 1).requires_grad_(True)
grad = torch.full((batch, length, dim), 0.01, device=device)


def step():
    def split(t):
        return t.view(batch, length, heads, head_dim).transpose(1, 2)
    q, k, v = split(q_proj(x)), split(k_proj(x)), split(v_proj(x))
    y = F.scaled_dot_product_attention(q, k, v)
    y = o_proj(y.transpose(1, 2).reshape(batch, length, dim))
    y.backward(grad)


q_op, k_op, v_op = (torch.empty(batch, heads, length, head_dim, device=device).uniform_(-1, 1).requires_grad_(True)
                    for _ in range(3))
grad_op = torch.full((batch, heads, length, head_dim), 0.01, device=device)


def op_step():
    for t in (q_op, k_op, v_op):
        t.grad = None
    F.scaled_dot_product_attention(q_op, k_op, v_op).backward(grad_op)


if op_only:
    step = op_step  # noqa: F811
times = []
for i in range(2 + iters):
    t0 = time.perf_counter()
    step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1000
    if i >= 2:
        times.append(ms)
times.sort()
ms = times[len(times) // 2]
print(json.dumps({"layer": "scaled_dot_product_attention" if op_only else "multi_head_attention",
                  "ms": round(ms, 3), "ex_per_s": round(1000 * batch / ms, 2), "threads": torch.get_num_threads()}))
