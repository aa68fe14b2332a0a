"""PyTorch and Keras (TensorFlow) sides of bench/train.cpp: same models, data, optimizer, batch and threads.

    python3 bench/train_reference.py torch|keras mlp|convnet|se_convnet [epochs=2] [batch=128] [data folder]

Prints one JSON line. Needs `pip install torch tensorflow-cpu keras numpy`. Reads the real Fashion-MNIST from
Debian's dataset-fashion-mnist package, or from the folder given. PyTorch runs on the CPU, or on the device
named by TOWER_TORCH_DEVICE ("cuda"): the data is moved there once, each step reads its batch there, and the
clock stops after a synchronize.
"""
import gzip
import json
import os
import sys
import time

import numpy as np

DATA = "/usr/share/datasets/fashion-mnist"
THREADS = int(os.environ.get("OMP_NUM_THREADS", "2"))


def idx(name):
    path = os.path.join(DATA, name)
    if os.path.exists(path):
        with gzip.open(path) as f:
            raw = f.read()
    else:  # scripts/gpu-check.sh's bundle carries the files unpacked (its xz packs them smaller than gzip did)
        with open(path[:-len(".gz")], "rb") as f:
            raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load():
    x = idx("train-images-idx3-ubyte.gz").astype(np.float32)[..., None] / 255.0
    y = idx("train-labels-idx1-ubyte.gz").astype(np.int64)
    xt = idx("t10k-images-idx3-ubyte.gz").astype(np.float32)[..., None] / 255.0
    yt = idx("t10k-labels-idx1-ubyte.gz").astype(np.int64)
    return x, y, xt, yt


def run_torch(which, epochs, batch):
    import torch
    from torch import nn

    torch.set_num_threads(THREADS)
    torch.manual_seed(1)
    if which == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
    elif which == "convnet":
        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.5), nn.Linear(1600, 10))
    else:
        class SqueezeExcite(nn.Module):  # examples/custom_layer.cpp's block: no biases, ratio 4
            def __init__(self, channels, ratio=4):
                super().__init__()
                self.squeeze = nn.Linear(channels, channels // ratio, bias=False)
                self.excite = nn.Linear(channels // ratio, channels, bias=False)

            def forward(self, x):  # NCHW
                gate = torch.sigmoid(self.excite(torch.relu(self.squeeze(x.mean(dim=(2, 3))))))
                return x * gate[:, :, None, None]

        model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                              SqueezeExcite(64), nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.5), nn.Linear(1600, 10))
    device = torch.device(os.environ.get("TOWER_TORCH_DEVICE", "cpu"))
    model = model.to(device)
    x, y, xt, yt = load()
    x = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous().to(device)
    xt = torch.from_numpy(xt).permute(0, 3, 1, 2).contiguous().to(device)
    y, yt = torch.from_numpy(y).to(device), torch.from_numpy(yt).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    for _ in range(epochs):
        model.train()
        perm = torch.randperm(len(x), device=device)
        for i in range(0, len(x), batch):
            idx_ = perm[i:i + batch]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x[idx_]), y[idx_])
            loss.backward()
            opt.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    model.eval()
    with torch.no_grad():
        acc = float((model(xt).argmax(1) == yt).float().mean())
    return seconds, acc


def run_keras(which, epochs, batch):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras
    from keras import layers

    keras.utils.set_random_seed(1)
    from keras import ops

    class SqueezeExcite(layers.Layer):
        def build(self, shape):
            c = shape[-1]
            self.squeeze = self.add_weight(shape=(c, c // 4), initializer="glorot_uniform")
            self.excite = self.add_weight(shape=(c // 4, c), initializer="glorot_uniform")

        def call(self, x):
            gate = ops.sigmoid(ops.matmul(ops.relu(ops.matmul(ops.mean(x, axis=(1, 2)), self.squeeze)), self.excite))
            return x * gate[:, None, None, :]

    if which == "mlp":
        body = [layers.Flatten(), layers.Dense(256, activation="relu"), layers.Dense(256, activation="relu")]
    else:
        body = [layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu")]
        body += [SqueezeExcite()] if which == "se_convnet" else []
        body += [layers.MaxPooling2D(), layers.Flatten(), layers.Dropout(0.5)]
    model = keras.Sequential([keras.Input((28, 28, 1))] + body + [layers.Dense(10, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
                  metrics=["sparse_categorical_accuracy"])
    x, y, xt, yt = load()
    t0 = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0)
    seconds = time.perf_counter() - t0
    acc = model.evaluate(xt, yt, batch_size=1000, verbose=0)[1]
    return seconds, float(acc)


def main():
    framework, which = sys.argv[1], sys.argv[2]
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 128
    if len(sys.argv) > 5:
        global DATA
        DATA = sys.argv[5]
    seconds, acc = (run_torch if framework == "torch" else run_keras)(which, epochs, batch)
    print(json.dumps({"framework": framework, "model": which, "examples_per_sec": round(60000 * epochs / seconds, 1),
                      "test_accuracy": round(acc, 4), "seconds": round(seconds, 2), "threads": THREADS}), flush=True)


if __name__ == "__main__":
    main()
