#!/usr/bin/env python3
"""A Keras weight file of a small model with MultiHeadAttention, written by Keras itself, for Tower's Keras
weight-file reader (tests/io/keras_weights_attention_test.cpp).

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras h5py            # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_attention_weights_fixtures.py   # rewrites tests/reference/keras_weights/mha.*

The model, built in Tower by the C++ test with the same layers:

  mha            Input [6, 8] "tokens" -> Dense "embed" (8) -> MultiHeadAttention "mha" (num_heads 2, key_dim 4,
                 value_dim 3, output_shape 5) on [embed, embed] with use_causal_mask=True -> Dense "head" (4).
                 Weights: seeded uniform in [-0.5, 0.5].

Files in tests/reference/keras_weights/:

  mha.weights.h5   model.save_weights: the MultiHeadAttention's weights lie in the sub-groups query_dense,
                   key_dense, value_dense and output_dense of layers/multi_head_attention (vars/0 the kernel,
                   vars/1 the bias)
  mha.h5           Keras' legacy writer at the file's root (all eight weights in the layer's one group)
  mha.json         {"layers", "inputs", "outputs"} as make_keras_weights_fixtures.py writes them: two sequences,
                   and Keras' model(inputs) on them
"""
import json
import os
import zlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras.src.legacy.saving import legacy_h5_format  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_weights")


def seed_of(name, salt):
    return zlib.crc32(f"{name}/{salt}".encode())


def tensor_json(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def model():
    x = keras.Input((6, 8), name="tokens")
    h = keras.layers.Dense(8, name="embed")(x)
    y = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, value_dim=3, output_shape=5, name="mha")(
        h, h, use_causal_mask=True)
    y = keras.layers.Dense(4, name="head")(y)
    return keras.Model(x, y, name="mha_model")


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    keras.utils.clear_session()
    m = model()
    rng = np.random.default_rng(seed_of("mha", "weights"))
    for v in m.weights:
        v.assign(rng.uniform(-0.5, 0.5, size=v.shape).astype(np.float32))
    x = np.random.default_rng(seed_of("mha", "inputs")).uniform(-1, 1, size=(2, 6, 8)).astype(np.float32)
    y = np.asarray(m(x, training=False))
    m.save_weights(os.path.join(OUT_DIR, "mha.weights.h5"))
    with h5py.File(os.path.join(OUT_DIR, "mha.h5"), "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, m)
    doc = {"layers": [layer.name for layer in m.layers], "inputs": tensor_json(x), "outputs": tensor_json(y)}
    with open(os.path.join(OUT_DIR, "mha.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print("wrote mha.weights.h5, mha.h5, mha.json in", OUT_DIR)


if __name__ == "__main__":
    main()
