#!/usr/bin/env python3
"""Reference runs of tf.distribute.MirroredStrategy on two virtual CPU devices, for Tower's MirroredStrategy.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras             # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_distribute_fixtures.py      # rewrites tests/reference/distribute/*.json
    python3 tests/reference/make_distribute_fixtures.py syncbn  # only the named configuration(s)

The host CPU is split into two logical devices (tf.config.set_logical_device_configuration) and a
MirroredStrategy(["/cpu:0", "/cpu:1"]) trains, in its scope, the small convnet

    Input(8, 8, 2)
    -> Conv2D(6, 3, padding="same", use_bias=False) -> BatchNormalization -> ReLU -> MaxPooling2D
    -> Conv2D(8, 3, use_bias=False)                 -> BatchNormalization -> ReLU
    -> GlobalAveragePooling2D -> Dense(4, activation="softmax")

(the convolutions have no bias: a bias before a BatchNormalization has an exact gradient of 0, which each
library turns into different rounding noise), with Adam(1e-3) and sparse categorical cross-entropy:

    bn       BatchNormalization() with Keras' defaults: each replica normalises with its own batch statistics
    syncbn   BatchNormalization(synchronized=True): statistics of the global batch (Keras' SyncBN)

The training loop is tf.distribute's custom loop: the global batches come from one tf.data pipeline through
strategy.experimental_distribute_dataset (TensorFlow splits each batch between the replicas), every replica
computes tf.nn.compute_average_loss(per_example_loss, global_batch_size=<examples in the global batch>), and the
Keras optimizer sums the replicas' gradients (all-reduce SUM) and applies one update. The step's loss is
strategy.reduce(SUM) of the replicas' losses, the mean over the global batch. (Keras' own model.fit under a
strategy scales each replica's mean by 1 / num_replicas instead, which differs from the global mean on a short
batch; the custom loop is the semantics Tower implements.)

Data: 12 global batches: 45 seeded examples batched by 8 (five batches of 8, then a short one of 5, which
TensorFlow splits 3 + 2), then 43 more batched by 8 (five of 8, then 3, split 2 + 1). Labels are the brightest
of four quadrants of channel 0, so the loss falls. Initial weights are seeded (glorot-uniform-like kernels,
gamma and moving_variance in [0.8, 1.2], beta and moving_mean and the Dense bias in [-0.1, 0.1]).

Keras 3 keeps BatchNormalization's moving statistics as MirroredVariables with aggregation "none": each replica
updates its own copy from its own batch statistics, and model.weights reads the first replica's copy. The file
records those (what the model reports), and both replicas' copies for diagnosis.

One JSON file per configuration, tests/reference/distribute/<config>.json:

    config, keras_version, tensorflow_version
    replicas         2
    layers           [{"class_name", "config"}]  the Keras kwargs of each layer (Input excluded)
    weights          [{"name", "shape", "data"}] initial values, model.weights order, names "<layer>/<variable>"
    x_scale          every input value is x_scale * an integer (exact in float32)
    batches          [{"x": {"shape", "data"}, "y": [labels], "replica_sizes": [rows of replica 0, 1]}]
    losses           [12 floats]  each step's loss (the global batch's mean, before the step's update)
    weights_after_step1, weights_final   [{"name", "shape", "data"}]  model.weights after step 1 and at the end
    moving_statistics_per_replica  [{"name", "replica", "shape", "data"}]  both replicas' moving statistics at
                     the end (replica 0's are those in weights_final)

Floats are the shortest decimal strings that read back as the same float32. The C++ test
tests/distribute/tf_mirrored_strategy_test.cpp reads every file.
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

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distribute")

IMAGE = (8, 8, 2)
CLASSES = 4
GLOBAL_BATCH = 8
X_SCALE = 0.125
REPLICAS = 2


def layer_specs(synchronized):
    bn = {"momentum": 0.99, "epsilon": 1e-3}
    if synchronized:
        bn["synchronized"] = True
    return [
        ("Conv2D", {"filters": 6, "kernel_size": 3, "padding": "same", "use_bias": False, "name": "conv1"}),
        ("BatchNormalization", dict(bn, name="bn1")),
        ("ReLU", {"name": "relu1"}),
        ("MaxPooling2D", {"pool_size": 2, "name": "pool"}),
        ("Conv2D", {"filters": 8, "kernel_size": 3, "use_bias": False, "name": "conv2"}),
        ("BatchNormalization", dict(bn, name="bn2")),
        ("ReLU", {"name": "relu2"}),
        ("GlobalAveragePooling2D", {"name": "gap"}),
        ("Dense", {"units": CLASSES, "activation": "softmax", "name": "dense"}),
    ]


CONFIGS = {"bn": layer_specs(False), "syncbn": layer_specs(True)}


def seed_of(*parts):
    return zlib.crc32("/".join(parts).encode())


def f32_str(v):
    s = str(np.float32(v))
    if not np.isfinite(np.float32(v)):
        raise ValueError(f"non-finite value {s}")
    return s


def tensor_json(a, name=None):
    a = np.asarray(a, dtype=np.float32)
    d = {} if name is None else {"name": name}
    d["shape"] = list(a.shape)
    d["data"] = "[" + ", ".join(f32_str(v) for v in a.reshape(-1)) + "]"
    return d


def build_model(specs):
    inp = keras.Input(shape=IMAGE)
    h = inp
    for cls, kwargs in specs:
        h = getattr(keras.layers, cls)(**kwargs)(h)
    return keras.Model(inp, h)


def initial_weights(model):
    rng = np.random.default_rng(seed_of("distribute", "weights"))
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


def make_examples(count, seed):
    rng = np.random.default_rng(seed_of("distribute", "examples", str(seed)))
    xi = np.clip(np.rint(rng.normal(0.0, 8.0, size=(count,) + IMAGE)), -24, 24).astype(np.int32)
    c0 = xi[..., 0].astype(np.float64)
    quadrants = [c0[:, :4, :4], c0[:, :4, 4:], c0[:, 4:, :4], c0[:, 4:, 4:]]
    y = np.argmax(np.stack([q.mean(axis=(1, 2)) for q in quadrants], axis=1), axis=1).astype(np.int32)
    return xi, y


def make_config(name, strategy):
    specs = CONFIGS[name]
    keras.utils.clear_session()
    with strategy.scope():
        model = build_model(specs)
        weights = initial_weights(model)
        model.set_weights(weights)
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
        optimizer.build(model.trainable_variables)
    names = [v.path for v in model.weights]

    @tf.function
    def train_step(batch, global_batch):
        def step_fn(x, y):
            with tf.GradientTape() as tape:
                probs = model(x, training=True)
                per_example = keras.losses.sparse_categorical_crossentropy(y, probs)
                loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss, tf.shape(x)[0]

        losses, sizes = strategy.run(step_fn, args=batch)
        total = strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)
        return total, strategy.experimental_local_results(sizes)

    batches, losses, after1 = [], [], None
    for count, seed in ((45, 1), (43, 2)):
        xi, y = make_examples(count, seed)
        ds = tf.data.Dataset.from_tensor_slices((xi.astype(np.float32) * X_SCALE, y)).batch(GLOBAL_BATCH)
        for start, dist_batch in zip(range(0, count, GLOBAL_BATCH), strategy.experimental_distribute_dataset(ds)):
            stop = min(count, start + GLOBAL_BATCH)
            loss, sizes = train_step(dist_batch, tf.constant(stop - start))
            losses.append(float(loss.numpy()))
            x_text = "[" + ",".join(str(int(v)) for v in xi[start:stop].reshape(-1)) + "]"
            batches.append({"x": {"shape": [stop - start, *IMAGE], "data": x_text},
                            "y": [int(v) for v in y[start:stop]],
                            "replica_sizes": [int(s.numpy()) for s in sizes]})
            if after1 is None:
                after1 = [tensor_json(v.numpy(), v.path) for v in model.weights]
    per_replica = []
    for v in model.weights:
        if v.path.split("/")[-1] in ("moving_mean", "moving_variance"):
            for r, value in enumerate(strategy.experimental_local_results(v.value)):
                d = tensor_json(value.numpy(), v.path)
                d["replica"] = r
                per_replica.append(d)
    return {
        "config": name,
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
        "replicas": REPLICAS,
        "layers": [{"class_name": c, "config": k} for c, k in specs],
        "weights": [tensor_json(w, n) for w, n in zip(weights, names)],
        "x_scale": X_SCALE,
        "batches": batches,
        "losses": "[" + ", ".join(f32_str(v) for v in losses) + "]",
        "weights_after_step1": after1,
        "weights_final": [tensor_json(v.numpy(), v.path) for v in model.weights],
        "moving_statistics_per_replica": per_replica,
    }


def dump(doc):
    raw = {"data", "losses"}

    def render(v, indent):
        pad = "  " * indent
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if k in raw:
                    items.append(f"{pad}  {json.dumps(k)}: {x}")
                else:
                    items.append(f"{pad}  {json.dumps(k)}: {render(x, indent + 1).lstrip()}")
            return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return pad + "[\n" + ",\n".join(render(x, indent + 1) for x in v) + "\n" + pad + "]"
        return pad + json.dumps(v)

    return render(doc, 0) + "\n"


def main():
    cpu = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpu[0], [tf.config.LogicalDeviceConfiguration()] * REPLICAS)
    tf.config.experimental.enable_op_determinism()
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(REPLICAS)])
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])
    unknown = only - set(CONFIGS)
    if unknown:
        raise SystemExit(f"unknown configuration(s) {sorted(unknown)}; known: {sorted(CONFIGS)}")
    for name in CONFIGS:
        if only and name not in only:
            continue
        doc = make_config(name, strategy)
        text = dump(doc)
        json.loads(text)
        with open(os.path.join(OUT_DIR, name + ".json"), "w") as f:
            f.write(text)
        print(f"{name}: {len(text)} bytes; replica sizes {[b['replica_sizes'] for b in doc['batches']]}; "
              f"losses {doc['losses']}")


if __name__ == "__main__":
    main()
