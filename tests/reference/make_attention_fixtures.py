#!/usr/bin/env python3
"""torch.nn.functional.scaled_dot_product_attention's values and gradients, for ops::dot_product_attention
(tests/ops/attention_test.cpp).

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install torch                         # PyTorch 2.5 or later
    python3 tests/reference/make_attention_fixtures.py   # rewrites tests/reference/ops/attention.json

Each case draws query [B, Tq, N, H], key [B, Tk, N, H], value [B, Tk, N, Hv] (Keras' layout; torch's is
[B, N, T, H], so they are transposed around the call), an optional float bias and boolean mask broadcastable to
[B, N, Tq, Tk] (the mask written as 0 / 1), scale (null: torch's and Keras' 1 / sqrt(H)) and is_causal. torch
computes in float64 from the float32 inputs: the output y and the gradients of sum(y * r) for a random r (dquery,
dkey, dvalue, dbias of the bias' own shape). One case masks every key of a query row: Keras' result there (the mean of the values), which torch does not give.
"""
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops", "attention.json")


def tensor_json(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def case(name, rng, b, tq, tk, n, h, hv=None, bias_shape=None, mask_shape=None, scale=None, causal=False,
         masked_row=False):
    hv = hv or h
    f32 = lambda *s: rng.uniform(-1, 1, s).astype(np.float32)
    q, k, v = f32(b, tq, n, h), f32(b, tk, n, h), f32(b, tk, n, hv)
    bias = f32(*bias_shape) if bias_shape else None
    mask = (rng.uniform(0, 1, mask_shape) < 0.7) if mask_shape else None
    if masked_row:
        mask[..., 1, :] = False
    tq_, tk_, tv_ = (torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in (q, k, v))
    tb = torch.tensor(bias, dtype=torch.float64, requires_grad=True) if bias is not None else None
    attn = None
    if mask is not None:
        keep = torch.tensor(mask)
        # torch takes one attn_mask: a boolean one, or a float one added; both at once as the float -inf where masked.
        attn = keep if tb is None else tb + torch.where(keep, 0.0, float("-inf"))
    elif tb is not None:
        attn = tb
    y = F.scaled_dot_product_attention(tq_.transpose(1, 2), tk_.transpose(1, 2), tv_.transpose(1, 2), attn_mask=attn,
                                       is_causal=causal, scale=scale).transpose(1, 2)
    if masked_row:
        # keras.ops.dot_product_attention replaces masked logits by a large finite negative, so a row with every key
        # masked spreads its weights evenly (torch gives it 0): Keras' formula, in float64 with torch's autograd.
        logits = torch.einsum("bqnh,bknh->bnqk", tq_, tk_) * (scale if scale is not None else h ** -0.5)
        if tb is not None:
            logits = logits + tb
        allowed = torch.tensor(mask).expand_as(logits)
        if causal:
            allowed = allowed & torch.ones(tq, tk, dtype=torch.bool).tril()
        weights = torch.softmax(torch.where(allowed, logits, torch.tensor(-1e9, dtype=torch.float64)), -1)
        y = torch.einsum("bnqk,bknh->bqnh", weights, tv_)
    r = rng.uniform(-1, 1, tuple(y.shape)).astype(np.float32)
    (y * torch.tensor(r, dtype=torch.float64)).sum().backward()
    out = {"name": name, "query": tensor_json(q), "key": tensor_json(k), "value": tensor_json(v),
           "scale": scale, "is_causal": causal, "r": tensor_json(r), "y": tensor_json(y.detach().numpy()),
           "dquery": tensor_json(tq_.grad.numpy()), "dkey": tensor_json(tk_.grad.numpy()),
           "dvalue": tensor_json(tv_.grad.numpy())}
    if bias is not None:
        out["bias"] = tensor_json(bias)
        out["dbias"] = tensor_json(tb.grad.numpy())
    if mask is not None:
        out["mask"] = tensor_json(mask.astype(np.float32))
    return out


def main():
    rng = np.random.default_rng(31)
    cases = [
        case("plain", rng, 2, 5, 7, 3, 6),
        case("value_dim", rng, 1, 4, 6, 2, 5, hv=3),
        case("mask", rng, 2, 5, 6, 2, 4, mask_shape=(2, 1, 5, 6), masked_row=True),
        case("causal_query_shorter", rng, 1, 4, 6, 2, 4, causal=True),
        case("causal_query_longer", rng, 1, 6, 4, 2, 4, causal=True),
        case("bias_and_scale", rng, 2, 3, 5, 2, 4, bias_shape=(2, 3, 5), scale=0.3),
        case("bias_and_mask", rng, 1, 5, 5, 2, 3, bias_shape=(1, 2, 5, 5), mask_shape=(5, 5)),
    ]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f)
        f.write("\n")
    print(f"wrote {OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
