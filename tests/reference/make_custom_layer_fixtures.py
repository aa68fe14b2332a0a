#!/usr/bin/env python3
"""Keras 3 layers written with keras.ops, trained from fixed weights, for Tower's CustomLayer.

    python3 -m pip install tensorflow-cpu keras
    python3 tests/reference/make_custom_layer_fixtures.py    # rewrites tests/reference/models/custom_layers.json

Two models, each with a layer subclassed from keras.layers.Layer whose call() uses keras.ops only:
  - squeeze_excite: Input(5, 5, 4) -> Conv2D(4, 3, relu) -> SqueezeExcite(ratio 2: the channel means, a matmul with
    ReLU, a matmul with sigmoid, the feature map scaled per channel) -> Flatten -> Dense(3, softmax);
  - gated_dense: Input(6) -> GatedDense(4: (x W) * sigmoid(x V)) -> Dense(3, softmax).
Weights seeded uniform in [-0.5, 0.5] in model.weights order, 16 seeded examples with labels i % 3, compiled with
SGD(0.1, momentum 0.9) and sparse categorical cross-entropy, fit for 5 epochs of 2 batches of 8 without shuffling.
Each case: initial_weights and final_weights (model.weights order: Tower's get_weights order for the same model),
x, y, and the 5 epoch losses. tests/layers/custom_layer_test.cpp reads it.
"""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers, ops  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


class SqueezeExcite(layers.Layer):
    def __init__(self, ratio=2, **kwargs):
        super().__init__(**kwargs)
        self.ratio = ratio

    def build(self, shape):
        c = shape[-1]
        self.squeeze = self.add_weight(name="squeeze", shape=(c, c // self.ratio))
        self.excite = self.add_weight(name="excite", shape=(c // self.ratio, c))

    def call(self, x):
        s = ops.mean(x, axis=(1, 2))
        gate = ops.sigmoid(ops.matmul(ops.relu(ops.matmul(s, self.squeeze)), self.excite))
        return x * ops.reshape(gate, (-1, 1, 1, gate.shape[-1]))


class GatedDense(layers.Layer):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, shape):
        self.value = self.add_weight(name="value", shape=(shape[-1], self.units))
        self.gate = self.add_weight(name="gate", shape=(shape[-1], self.units))

    def call(self, x):
        return ops.matmul(x, self.value) * ops.sigmoid(ops.matmul(x, self.gate))


def tensor(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def run(name, model, x_shape, seed):
    rng = np.random.default_rng(seed)
    for v in model.weights:
        v.assign(rng.uniform(-0.5, 0.5, size=v.shape).astype(np.float32))
    initial = [tensor(v.numpy()) for v in model.weights]
    x = rng.uniform(-1.0, 1.0, size=(16,) + x_shape).astype(np.float32)
    y = (np.arange(16) % 3).astype(np.int32)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy")
    history = model.fit(x, y, epochs=5, batch_size=8, shuffle=False, verbose=0)
    return {"name": name, "keras_version": keras.__version__, "initial_weights": initial, "x": tensor(x),
            "y": {"shape": [16], "dtype": "int32", "data": [int(v) for v in y]},
            "losses": [float(v) for v in history.history["loss"]],
            "final_weights": [tensor(v.numpy()) for v in model.weights]}


def main():
    keras.utils.set_random_seed(0)
    x = keras.Input((5, 5, 4))
    h = layers.Conv2D(4, 3, activation="relu")(x)
    h = SqueezeExcite(2)(h)
    se = keras.Model(x, layers.Dense(3, activation="softmax")(layers.Flatten()(h)))
    x2 = keras.Input((6,))
    glu = keras.Model(x2, layers.Dense(3, activation="softmax")(GatedDense(4)(x2)))
    doc = {"cases": [run("squeeze_excite", se, (5, 5, 4), 1), run("gated_dense", glu, (6,), 2)]}
    os.makedirs(HERE, exist_ok=True)
    with open(os.path.join(HERE, "custom_layers.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
