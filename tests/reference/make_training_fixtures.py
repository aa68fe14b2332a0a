#!/usr/bin/env python3
"""Reference training runs for Tower's trainer, computed by Keras itself.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras          # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_training_fixtures.py     # rewrites tests/reference/training/*.json
    python3 tests/reference/make_training_fixtures.py adam  # only the named configuration(s)

Each configuration builds, in Keras, the small convnet

    Input(12, 12, 1)
    -> Conv2D(8, 3, padding="same", use_bias=False) -> BatchNormalization -> ReLU -> MaxPooling2D
    -> Conv2D(16, 3)                                -> BatchNormalization -> ReLU
    -> GlobalAveragePooling2D -> Dense(5, activation="softmax")

(BatchNormalization with Keras' defaults: momentum 0.99, epsilon 1e-3), compiled with
loss="sparse_categorical_crossentropy" and

    adam     Adam(learning_rate=1e-3)
    sgd_l2   SGD(learning_rate=0.05, momentum=0.9), and the Dense layer has kernel_regularizer=L2(1e-3)

It sets deterministic initial weights (seeded numpy: kernels glorot-uniform-like, biases and beta in
[-0.1, 0.1], gamma and moving_variance in [0.8, 1.2], moving_mean in [-0.1, 0.1]), draws 20 seeded batches of
16 examples (the same batches for every configuration; the label of an image is the brightest of five
regions, so the loss can fall) and calls model.train_on_batch 20 times. In Keras 3
train_on_batch resets the metrics and returns the loss tracker's value for that one step: the loss of the
forward pass made with the weights BEFORE the step's update (the same pass whose gradients make the update),
plus the regularization losses (model.losses, from the same pre-update weights). The model is compiled with
jit_compile=False and TensorFlow op determinism on, so reruns give identical files.

One JSON file per configuration, tests/reference/training/<config>.json:

    config           "adam" | "sgd_l2"
    keras_version, tensorflow_version
    layers           [{"class_name", "config"}]   the Keras kwargs of each layer, in order (Input excluded);
                                                  the C++ test builds the same model by hand and checks this list
    optimizer        {"class_name", "config"}     the kwargs given to the Keras optimizer
    loss             "sparse_categorical_crossentropy"
    weights          [{"name", "shape", "data"}]  initial values, in model.weights order (per layer: kernel,
                                                  bias; BN gamma, beta, moving_mean, moving_variance); name is
                                                  "<layer>/<variable>", e.g. "bn2/moving_mean" (the layers carry
                                                  explicit names)
    x_scale          float; every input value is x_scale * an integer (exact in float32)
    batches          [{"x": {"shape", "data"}, "y": [labels]}]  x data are the integers (multiply by x_scale),
                                                  row-major NHWC; y are class indices 0..4
    losses           [20 floats]   what train_on_batch returned at each step
    reg_losses       [20 floats]   sum(model.losses) before each step (0 without regularizers), for diagnosis
    first_step_gradients [{"name", "shape", "data"}]   d loss / d weight of step 1 (tf.GradientTape, on a copy of
                                                  the model, training=True), model.trainable_weights order; for
                                                  diagnosis
    weights_after_step1  [{"name", "shape", "data"}]   every weight after step 1 (model.weights order)
    conv2_bias_before_step [{"name", "shape", "data"}]  conv2/bias before each of the 20 steps. That bias feeds
                                                  a BatchNormalization, so its exact gradient is 0 and Adam moves
                                                  it by rounding noise; the C++ test uses the trace to take the
                                                  bias out of bn2/moving_mean (see keras_training_test.cpp)
    weights_final    [{"name", "shape", "data"}]  every weight after step 20 (model.weights order)

Floats are written as the shortest decimal string that reads back as the same float32. The C++ test
tests/reference/keras_training_test.cpp reads every file.
"""
import json
import os
import sys
import zlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "training")

STEPS = 20
BATCH = 16
IMAGE = (12, 12, 1)
CLASSES = 5
X_SCALE = 0.125  # inputs are integers / 8, in [-3, 3]


def layer_specs(dense_regularizer):
    # Explicit names, so that weight paths ("conv2/bias") are the same in Keras and in the C++ test.
    dense = {"units": CLASSES, "activation": "softmax", "name": "dense"}
    if dense_regularizer is not None:
        dense["kernel_regularizer"] = dense_regularizer
    return [
        ("Conv2D", {"filters": 8, "kernel_size": 3, "padding": "same", "use_bias": False, "name": "conv1"}),
        ("BatchNormalization", {"momentum": 0.99, "epsilon": 1e-3, "name": "bn1"}),
        ("ReLU", {"name": "relu1"}),
        ("MaxPooling2D", {"pool_size": 2, "name": "pool"}),
        ("Conv2D", {"filters": 16, "kernel_size": 3, "name": "conv2"}),
        ("BatchNormalization", {"momentum": 0.99, "epsilon": 1e-3, "name": "bn2"}),
        ("ReLU", {"name": "relu2"}),
        ("GlobalAveragePooling2D", {"name": "gap"}),
        ("Dense", dense),
    ]


CONFIGS = {
    "adam": dict(layers=layer_specs(None), optimizer=("Adam", {"learning_rate": 1e-3})),
    "sgd_l2": dict(
        layers=layer_specs({"class_name": "L2", "config": {"l2": 1e-3}}),
        optimizer=("SGD", {"learning_rate": 0.05, "momentum": 0.9}),
    ),
}


def seed_of(*parts):
    return zlib.crc32("/".join(parts).encode())


def f32_str(v):
    # numpy prints the shortest string that reads back as the same float32.
    s = str(np.float32(v))
    if not np.isfinite(np.float32(v)):
        raise ValueError(f"non-finite value {s}")
    return s


def tensor_json(a, name=None):
    a = np.asarray(a, dtype=np.float32)
    d = {}
    if name is not None:
        d["name"] = name
    d["shape"] = list(a.shape)
    d["data"] = "[" + ", ".join(f32_str(v) for v in a.reshape(-1)) + "]"
    return d


def int_tensor_json(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": "[" + ",".join(str(int(v)) for v in a.reshape(-1)) + "]"}


def variable_name(v):
    # Keras 3: v.path is "<layer>/<variable>" (e.g. "conv2d/kernel").
    return v.path


def build_model(cfg):
    keras.utils.clear_session()
    inp = keras.Input(shape=IMAGE, batch_size=None)
    h = inp
    for i, (cls, kwargs) in enumerate(cfg["layers"]):
        kw = dict(kwargs)
        if "kernel_regularizer" in kw:
            r = kw["kernel_regularizer"]
            assert r["class_name"] == "L2"
            kw["kernel_regularizer"] = keras.regularizers.L2(**r["config"])
        h = getattr(keras.layers, cls)(**kw)(h)
    model = keras.Model(inp, h)
    cls, kwargs = cfg["optimizer"]
    model.compile(optimizer=getattr(keras.optimizers, cls)(**kwargs), loss="sparse_categorical_crossentropy",
                  jit_compile=False)
    return model


def initial_weights(model):
    rng = np.random.default_rng(seed_of("training", "weights"))
    values = []
    for v in model.weights:
        name = v.path.split("/")[-1]
        shape = tuple(v.shape)
        if name == "kernel":
            fan_in = int(np.prod(shape[:-1]))
            fan_out = shape[-1] * (int(np.prod(shape[:-2])) if len(shape) > 2 else 1)
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            val = rng.uniform(-limit, limit, size=shape)
        elif name in ("gamma", "moving_variance"):
            val = rng.uniform(0.8, 1.2, size=shape)
        elif name in ("bias", "beta", "moving_mean"):
            val = rng.uniform(-0.1, 0.1, size=shape)
        else:
            raise ValueError(f"unexpected weight {v.path}")
        values.append(val.astype(np.float32))
    return values


def make_batches():
    rng = np.random.default_rng(seed_of("training", "batches"))
    batches = []
    for _ in range(STEPS):
        xi = np.clip(np.rint(rng.normal(0.0, 8.0, size=(BATCH,) + IMAGE)), -24, 24).astype(np.int32)
        # A learnable label: the brightest of five regions (four quadrants and the centre).
        xf = xi[..., 0].astype(np.float64)
        regions = [xf[:, :6, :6], xf[:, :6, 6:], xf[:, 6:, :6], xf[:, 6:, 6:], xf[:, 3:9, 3:9]]
        y = np.argmax(np.stack([r.mean(axis=(1, 2)) for r in regions], axis=1), axis=1).astype(np.int32)
        batches.append((xi, y))
    return batches


def first_step_gradients(cfg, weights, x, y):
    # A fresh copy of the model at the initial weights; the gradient of the same loss train_on_batch minimises.
    model = build_model(cfg)
    model.set_weights(weights)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = loss_fn(y, pred)
        if model.losses:
            loss = loss + tf.add_n(model.losses)
    tw = list(model.trainable_weights)
    grads = tape.gradient(loss, tw)
    return [tensor_json(g.numpy(), variable_name(v)) for g, v in zip(grads, tw)], float(loss.numpy())


def make_config(name, batches):
    cfg = CONFIGS[name]
    model = build_model(cfg)
    weights = initial_weights(model)
    model.set_weights(weights)
    names = [variable_name(v) for v in model.weights]
    assert len(set(names)) == len(names), names

    x0 = batches[0][0].astype(np.float32) * X_SCALE
    grads, grad_loss = first_step_gradients(cfg, weights, x0, batches[0][1])
    # first_step_gradients built its own model (clear_session), so build the one to train again.
    model = build_model(cfg)
    model.set_weights(weights)
    assert [variable_name(v) for v in model.weights] == names

    losses, reg_losses, bias_trace = [], [], []
    after1 = None
    conv2_bias = next(v for v in model.weights if variable_name(v) == "conv2/bias")
    for step, (xi, y) in enumerate(batches):
        x = xi.astype(np.float32) * X_SCALE
        bias_trace.append(tensor_json(conv2_bias.numpy(), "conv2/bias"))
        reg_losses.append(float(np.sum([np.asarray(l) for l in model.losses])) if model.losses else 0.0)
        loss = model.train_on_batch(x, y)
        losses.append(float(np.float32(loss)))
        if step == 0:
            after1 = [tensor_json(v.numpy(), variable_name(v)) for v in model.weights]
    if abs(grad_loss - losses[0]) > 1e-5 * abs(losses[0]):
        raise RuntimeError(f"{name}: the tape's step-1 loss {grad_loss} differs from train_on_batch's {losses[0]}")

    opt_cls, opt_kwargs = cfg["optimizer"]
    return {
        "config": name,
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        "layers": [{"class_name": c, "config": k} for c, k in cfg["layers"]],
        "optimizer": {"class_name": opt_cls, "config": opt_kwargs},
        "loss": "sparse_categorical_crossentropy",
        "weights": [tensor_json(w, n) for w, n in zip(weights, names)],
        "x_scale": X_SCALE,
        "batches": [{"x": int_tensor_json(xi), "y": [int(v) for v in y]} for xi, y in batches],
        "losses": "[" + ", ".join(f32_str(v) for v in losses) + "]",
        "reg_losses": "[" + ", ".join(f32_str(v) for v in reg_losses) + "]",
        "first_step_gradients": grads,
        "weights_after_step1": after1,
        "conv2_bias_before_step": bias_trace,
        "weights_final": [tensor_json(v.numpy(), variable_name(v)) for v in model.weights],
    }


def dump(doc):
    # Compact, one entry per line; "data", "losses" and "reg_losses" were pre-rendered as strings to control
    # float formatting.
    raw = {"data", "losses", "reg_losses"}

    def render(v, indent):
        pad = "  " * indent
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if k in raw:
                    items.append(f'{pad}  {json.dumps(k)}: {x}')
                else:
                    items.append(f"{pad}  {json.dumps(k)}: {render(x, indent + 1).lstrip()}")
            return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return pad + "[\n" + ",\n".join(render(x, indent + 1) for x in v) + "\n" + pad + "]"
        return pad + json.dumps(v)

    return render(doc, 0) + "\n"


def main():
    tf.config.experimental.enable_op_determinism()
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])
    unknown = only - set(CONFIGS)
    if unknown:
        raise SystemExit(f"unknown configuration(s) {sorted(unknown)}; known: {sorted(CONFIGS)}")
    batches = make_batches()
    for name in CONFIGS:
        if only and name not in only:
            continue
        doc = make_config(name, batches)
        text = dump(doc)
        json.loads(text)  # must be valid JSON
        path = os.path.join(OUT_DIR, name + ".json")
        with open(path, "w") as f:
            f.write(text)
        print(f"{name}: {len(text)} bytes; losses {doc['losses']}")


if __name__ == "__main__":
    main()
