"""ONNX Runtime and PyTorch side of bench/serving.cpp: the same two models (Keras' MobileNetV2 224, alpha 1.0, 1000
classes; bench_convnet.h's Fashion-MNIST convnet) built in PyTorch, with the weights Tower wrote
(`bench_serving dump DIR`: Keras 3 .weights.h5 files), checked against Tower's outputs, exported to ONNX, and
timed at batch 1 exactly as bench_serving times Tower: the latency of `calls` calls one after another (median, p99,
mean), then the throughput of 1, 2 and 4 client threads calling one model (one InferenceSession for ONNX Runtime,
one module under torch.inference_mode for PyTorch), `throughput_calls` calls in all per client count.

    python3 bench/serving_reference.py check DIR                 outputs vs Tower's, ONNX export, ORT vs torch
    python3 bench/serving_reference.py torch DIR [calls=1000] [throughput_calls=200] [models] [part]
      part: latency-nchw, latency-channels_last (default) or throughput (see bench_torch)
    python3 bench/serving_reference.py ort DIR [calls=1000] [throughput_calls=200] [models]

Threads: OMP_NUM_THREADS (default 2) for torch.set_num_threads and ONNX Runtime's intra_op_num_threads (sequential
execution, one inter-op thread). PyTorch eager's latency is timed in both memory formats (contiguous NCHW
and channels_last, the input given in the module's format before the clock starts), its throughput in
channels_last. ONNX Runtime gets the contiguous NCHW input its graph takes. One JSON line per measurement.
"""
import contextlib
import json
import math
import os
import resource
import statistics
import sys
import threading
import time

import numpy as np

THREADS = int(os.environ.get("OMP_NUM_THREADS", "2"))
MODELS = ("mobilenet_v2", "convnet")


def cpu_seconds():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


# ---- the models in PyTorch, with Keras' layer names for the weights ----

def build_torch(name):
    import torch
    from torch import nn

    class KerasModel(nn.Module):
        """A module whose Keras layers are kept by their Keras names (self.keras) for load_keras_weights."""

        def __init__(self):
            super().__init__()
            self.keras = {}

        def keep(self, keras_name, module):
            self.keras[keras_name] = module
            return module

    def make_divisible(v, divisor=8):
        new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
        return new_v + divisor if new_v < 0.9 * v else new_v

    class InvertedResidual(nn.Module):
        # Keras' _inverted_res_block. A stride-2 depthwise convolution follows ZeroPadding2D(correct_pad): for even
        # sizes (0, 1) rows and columns, the extra one at the bottom and right, as "same" pads in TensorFlow.
        def __init__(self, owner, cin, expansion, stride, filters, block_id):
            super().__init__()
            prefix = f"block_{block_id}_" if block_id else "expanded_conv_"
            hidden = cin * expansion
            out = make_divisible(filters)
            layers = []
            if block_id:
                layers += [owner.keep(prefix + "expand", nn.Conv2d(cin, hidden, 1, bias=False)),
                           owner.keep(prefix + "expand_BN", nn.BatchNorm2d(hidden, eps=1e-3)), nn.ReLU6()]
            else:
                hidden = cin
            if stride == 2:
                layers.append(nn.ZeroPad2d((0, 1, 0, 1)))
            layers += [owner.keep(prefix + "depthwise", nn.Conv2d(hidden, hidden, 3, stride, 1 if stride == 1 else 0,
                                                                  groups=hidden, bias=False)),
                       owner.keep(prefix + "depthwise_BN", nn.BatchNorm2d(hidden, eps=1e-3)), nn.ReLU6(),
                       owner.keep(prefix + "project", nn.Conv2d(hidden, out, 1, bias=False)),
                       owner.keep(prefix + "project_BN", nn.BatchNorm2d(out, eps=1e-3))]
            self.body = nn.Sequential(*layers)
            self.residual = cin == out and stride == 1

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    class MobileNetV2(KerasModel):
        def __init__(self, classes=1000):
            super().__init__()
            blocks = [(16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6), (64, 1, 6),
                      (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6), (160, 1, 6),
                      (160, 1, 6), (320, 1, 6)]
            layers = [nn.ZeroPad2d((0, 1, 0, 1)), self.keep("Conv1", nn.Conv2d(3, 32, 3, 2, 0, bias=False)),
                      self.keep("bn_Conv1", nn.BatchNorm2d(32, eps=1e-3)), nn.ReLU6()]
            cin = 32
            for block_id, (filters, stride, expansion) in enumerate(blocks):
                layers.append(InvertedResidual(self, cin, expansion, stride, filters, block_id))
                cin = make_divisible(filters)
            layers += [self.keep("Conv_1", nn.Conv2d(cin, 1280, 1, bias=False)),
                       self.keep("Conv_1_bn", nn.BatchNorm2d(1280, eps=1e-3)), nn.ReLU6(),
                       nn.AdaptiveAvgPool2d(1), nn.Flatten(), self.keep("predictions", nn.Linear(1280, classes)),
                       nn.Softmax(dim=1)]
            self.net = nn.Sequential(*layers)

        def forward(self, x):
            return self.net(x)

    class Convnet(KerasModel):
        # bench_convnet.h. The Dense after Flatten takes Keras' NHWC order; load_keras_weights permutes its rows
        # for PyTorch's NCHW Flatten, so nothing is transposed per call.
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                self.keep("conv2d", nn.Conv2d(1, 32, 3, padding=1, bias=False)),
                self.keep("batch_normalization", nn.BatchNorm2d(32, eps=1e-3)), nn.ReLU(), nn.MaxPool2d(2),
                self.keep("conv2d_1", nn.Conv2d(32, 64, 3, padding=1, bias=False)),
                self.keep("batch_normalization_1", nn.BatchNorm2d(64, eps=1e-3)), nn.ReLU(), nn.MaxPool2d(2),
                nn.Flatten(), self.keep("dense", nn.Linear(7 * 7 * 64, 128)), nn.ReLU(),
                self.keep("dense_1", nn.Linear(128, 10)), nn.Softmax(dim=1))
            self.flatten_hwc = {"dense": (7, 7, 64)}

        def forward(self, x):
            return self.net(x)

    return {"mobilenet_v2": MobileNetV2, "convnet": Convnet}[name]()


def read_keras_weights(path):
    """Keras 3 .weights.h5: {group key: (vars' "name" attribute, [arrays "0", "1", ...])} for every layer group."""
    import h5py
    out = {}
    with h5py.File(path, "r") as f:
        def visit(group):
            for key, g in group.items():
                if not isinstance(g, h5py.Group):
                    continue
                if "vars" in g:
                    v = g["vars"]
                    name = v.attrs.get("name", key)
                    name = name.decode() if isinstance(name, bytes) else str(name)
                    out[key] = (name, [np.asarray(v[str(i)][()], dtype=np.float32) for i in range(len(v))])
                if "layers" in g:
                    visit(g["layers"])
        visit(f["layers"])
    return out


def load_keras_weights(model, path, by):
    """Copies the file's weights into `model` (by "name": the vars' name attribute = Keras layer name, as for
    MobileNetV2's named layers; by "key": the per-class group name, conv2d, conv2d_1, ..., for auto-named layers)."""
    import torch
    from torch import nn
    groups = read_keras_weights(path)
    by_name = {name if by == "name" else key: arrays for key, (name, arrays) in groups.items()}
    loaded = 0
    for keras_name, m in model.keras.items():
        arrays = by_name.get(keras_name)
        if arrays is None:
            raise KeyError(f"{path}: no weights for layer {keras_name}; the file has {sorted(by_name)}")
        t = [torch.from_numpy(a) for a in arrays]
        with torch.no_grad():
            if isinstance(m, nn.Conv2d) and m.groups > 1:  # DepthwiseConv2D [kh, kw, in, mult] -> [in*mult, 1, kh, kw]
                kh, kw, cin, mult = t[0].shape
                m.weight.copy_(t[0].permute(2, 3, 0, 1).reshape(cin * mult, 1, kh, kw))
            elif isinstance(m, nn.Conv2d):  # Conv2D [kh, kw, in, out] -> [out, in, kh, kw]
                m.weight.copy_(t[0].permute(3, 2, 0, 1))
            elif isinstance(m, nn.Linear):  # Dense [in, out] -> [out, in]
                k = t[0]
                hwc = getattr(model, "flatten_hwc", {}).get(keras_name)
                if hwc:  # rows in Keras' (h, w, c) order -> PyTorch's (c, h, w)
                    h, w, c = hwc
                    k = k.reshape(h, w, c, -1).permute(2, 0, 1, 3).reshape(h * w * c, -1)
                m.weight.copy_(k.t())
            elif isinstance(m, nn.BatchNorm2d):  # gamma, beta, moving_mean, moving_variance
                m.weight.copy_(t[0]); m.bias.copy_(t[1]); m.running_mean.copy_(t[2]); m.running_var.copy_(t[3])
            else:
                raise TypeError(f"layer {keras_name}: no rule for {type(m).__name__}")
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                if m.bias is not None:
                    m.bias.copy_(t[1])
                elif len(t) != 1:
                    raise ValueError(f"layer {keras_name}: {len(t)} arrays for a layer without bias")
        loaded += 1
    return loaded


def torch_model(name, d):
    import torch
    torch.manual_seed(0)
    model = build_torch(name).eval()
    n = load_keras_weights(model, os.path.join(d, f"{name}.weights.h5"), "name" if name == "mobilenet_v2" else "key")
    return model, n


def nhwc_to_nchw(x):
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def ort_session(path):
    import onnxruntime as ort
    o = ort.SessionOptions()
    o.intra_op_num_threads = THREADS
    o.inter_op_num_threads = 1
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])


# ---- check and export ----

def check(d):
    import torch
    torch.set_num_threads(THREADS)
    ok = True
    for name in MODELS:
        model, layers = torch_model(name, d)
        x = np.load(os.path.join(d, f"{name}_input.npy"))
        tower = np.load(os.path.join(d, f"{name}_output.npy"))
        with torch.inference_mode():
            ref = model(torch.from_numpy(nhwc_to_nchw(x))).numpy()
        diff = float(np.abs(ref - tower).max())
        rel = diff / float(np.abs(ref).max())
        same_top = bool((ref.argmax(1) == tower.argmax(1)).all())
        # Near-uniform softmax outputs (random weights, 1000 classes) are small numbers: their logarithms differ by
        # the logits' difference, which no output can hide.
        log_diff = float(np.abs(np.log(ref) - np.log(tower)).max())
        # ONNX, batch dimension dynamic; ORT checked against torch at batch 1 and at batch 3.
        onnx_path = os.path.join(d, f"{name}.onnx")
        sample = torch.from_numpy(nhwc_to_nchw(x))
        torch.onnx.export(model, (sample,), onnx_path, opset_version=17, dynamo=False, input_names=["input"],
                          output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        sess = ort_session(onnx_path)
        rng = np.random.default_rng(5)
        x3 = rng.uniform(-1, 1, size=(3,) + sample.shape[1:]).astype(np.float32)
        ort_diff = 0.0
        for xi in (nhwc_to_nchw(x), x3):
            with torch.inference_mode():
                r = model(torch.from_numpy(xi)).numpy()
            ort_diff = max(ort_diff, float(np.abs(sess.run(None, {"input": xi})[0] - r).max()))
        passed = diff <= 1e-4 and log_diff <= 1e-4 and ort_diff <= 1e-4 and same_top
        ok &= passed
        print(json.dumps({"check": name, "layers_loaded": layers, "torch_vs_tower_max_abs": diff,
                          "torch_vs_tower_max_rel": rel,
                          "torch_vs_tower_log_prob_max_abs": log_diff, "same_argmax": same_top, "ort_vs_torch_max_abs": ort_diff,
                          "output_sum_torch": float(ref.sum()), "onnx": onnx_path, "passed": passed}), flush=True)
    return 0 if ok else 1


# ---- timing ----

def latency(framework, name, config, call, calls, context=contextlib.nullcontext, in_thread=True):
    """Times `calls` calls, entering `context` once: on a thread of its own, as bench_serving does (the OpenMP
    pool a thread keeps while it lives would slow the client threads below), or on the calling thread."""
    ms, cpu = [], []

    def run():
        with context():
            for _ in range(max(20, calls // 20)):
                call()
            cpu.append(cpu_seconds())
            t0 = time.perf_counter()
            for _ in range(calls):
                s = time.perf_counter()
                call()
                ms.append(1e3 * (time.perf_counter() - s))
            cpu.append(time.perf_counter() - t0)
            cpu.append(cpu_seconds())

    if in_thread:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    else:
        run()
    wall, used = cpu[1], cpu[2] - cpu[0]
    p99 = sorted(ms)[math.ceil(0.99 * calls) - 1]
    median = sorted(ms)[calls // 2]  # as bench_stats.h: the upper middle for an even count
    print(json.dumps({"framework": framework, "model": name, "config": config, "measure": "latency", "batch": 1,
                      "calls": calls, "median_ms": round(median, 4), "p99_ms": round(p99, 4),
                      "mean_ms": round(statistics.fmean(ms), 4), "cpu_util": round(used / wall, 2),
                      "threads": THREADS}), flush=True)
    return median


def run_clients(make_worker, clients, warm_up, per_client):
    """`clients` threads, each making `warm_up` calls, then (all starting together) `per_client` timed calls."""
    barrier = threading.Barrier(clients + 1)
    workers = [threading.Thread(target=make_worker(barrier, warm_up, per_client)) for _ in range(clients)]
    for w in workers:
        w.start()
    barrier.wait()
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    return wall, (cpu_seconds() - cpu0) / wall


def throughput(framework, name, config, make_worker, total):
    for clients in (1, 2, 4):
        per_client = max(1, total // clients)
        wall, util = run_clients(make_worker, clients, max(5, per_client // 10), per_client)
        print(json.dumps({"framework": framework, "model": name, "config": config, "measure": "throughput",
                          "batch": 1, "clients": clients, "calls": clients * per_client,
                          "calls_per_s": round(clients * per_client / wall, 2), "cpu_util": round(util, 2),
                          "threads": THREADS}), flush=True)


def bench_torch(d, calls, total, models, part):
    """One part per process (`part`: latency-nchw, latency-channels_last or throughput, which runs channels_last,
    the faster format in every run here). PyTorch's calls run OpenMP pools per calling thread like Tower's, and
    libgomp makes every pool wait with throttled spinning once a process has more OpenMP threads than cores: a pool
    kept by one thread (the main thread after its calls, or a finished thread's) made the next thread's calls 1.5-3x
    slower here. So latency runs on the main thread of a fresh process, as PyTorch is usually timed, and the
    throughput clients in a fresh process whose main thread loads the model on one thread and keeps no pool."""
    import torch
    variant = "nchw" if part == "latency-nchw" else "channels_last"
    torch.set_num_threads(THREADS if part.startswith("latency") else 1)
    own_threads = lambda: (torch.set_num_threads(THREADS), torch.inference_mode())[1]
    for name in models:
        m, _ = torch_model(name, d)
        x = torch.from_numpy(np.load(os.path.join(d, f"{name}_input.npy"))).permute(0, 3, 1, 2)
        if variant == "channels_last":  # the same bytes as Tower's NHWC input, seen as NCHW: channels_last
            m = m.to(memory_format=torch.channels_last)
        else:
            x = x.contiguous()
        if part.startswith("latency"):
            latency("torch", name, variant, lambda: m(x), calls, torch.inference_mode, in_thread=False)
        elif total > 0:
            def make_worker(barrier, warm_up, n):
                def work():
                    with own_threads():
                        for _ in range(warm_up):
                            m(x)
                        barrier.wait()
                        for _ in range(n):
                            m(x)
                return work
            throughput("torch", name, variant, make_worker, total)


def bench_ort(d, calls, total, models):
    for name in models:
        sess = ort_session(os.path.join(d, f"{name}.onnx"))
        x = nhwc_to_nchw(np.load(os.path.join(d, f"{name}_input.npy")))
        feed = {"input": x}
        config = f"intra_op={THREADS},sequential"
        latency("ort", name, config, lambda: sess.run(None, feed), calls)
        if total > 0:
            def make_worker(barrier, warm_up, n):
                def work():
                    for _ in range(warm_up):
                        sess.run(None, feed)
                    barrier.wait()
                    for _ in range(n):
                        sess.run(None, feed)
                return work
            throughput("ort", name, config, make_worker, total)


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("check", "torch", "ort"):
        sys.exit(__doc__)
    mode, d = sys.argv[1], sys.argv[2]
    if mode == "check":
        sys.exit(check(d))
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    total = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    models = sys.argv[5].split(",") if len(sys.argv) > 5 and sys.argv[5] else MODELS
    if mode == "torch":
        bench_torch(d, calls, total, models, sys.argv[6] if len(sys.argv) > 6 else "latency-channels_last")
    else:
        bench_ort(d, calls, total, models)


if __name__ == "__main__":
    main()
