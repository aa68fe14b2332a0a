#!/usr/bin/env python3
"""Reference behaviour of models (freezing, output names), computed by Keras itself.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras     # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_model_fixtures.py  # rewrites tests/reference/models/*.json

freezing.json: inner = Input(3) -> Dense(2, name="d0") -> Dense(4, name="d1"), outer = Input(3) -> inner ->
Dense(1, name="head"); then inner.trainable = False and inner.get_layer("d1").trainable = True. It records the
paths of outer's trainable and non-trainable weights, the trainable and non-trainable parameter counts of
outer.summary(), inner's trainable weights, and the same after outer.save / keras.models.load_model (Keras'
functional_from_config restores inner's own flag, not its layers'); then a frozen top-level functional model's
flag after save / load.

shared_outputs.json: x = Input(3); shared = Dense(2, name="shared") with a kernel of ones; pre = Dense(3,
name="pre") with a kernel of zeros; Model(x, [shared(x), shared(pre(x))]) compiled with losses [mse, mae] and
metrics [["mae"], ["mae"]], evaluated on ones((4, 3)) against zeros: the returned logs (Keras names both outputs
"shared": the per-output losses share "shared_loss", the metrics get unique names).
"""
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


def count(variables):
    return int(sum(int(np.prod(v.shape)) for v in variables))


def trainable_state(outer, inner):
    return {
        "outer_trainable": [v.path for v in outer.trainable_weights],
        "outer_non_trainable": [v.path for v in outer.non_trainable_weights],
        "trainable_params": count(outer.trainable_weights),
        "non_trainable_params": count(outer.non_trainable_weights),
        "inner_trainable": inner.trainable,
        "inner_trainable_weights": [v.path for v in inner.trainable_weights],
    }


def freezing(tmp):
    i = keras.Input((3,), name="ii")
    h = layers.Dense(2, name="d0")(i)
    inner = keras.Model(i, layers.Dense(4, name="d1")(h), name="inner")
    x = keras.Input((3,), name="x")
    outer = keras.Model(x, layers.Dense(1, name="head")(inner(x)), name="outer")
    inner.trainable = False
    inner.get_layer("d1").trainable = True
    out = {"before_save": trainable_state(outer, inner)}
    path = os.path.join(tmp, "outer.keras")
    outer.save(path)
    loaded = keras.models.load_model(path)
    out["after_load"] = trainable_state(loaded, loaded.get_layer("inner"))
    y = keras.Input((3,))
    top = keras.Model(y, layers.Dense(1)(y))
    top.trainable = False
    top.save(os.path.join(tmp, "top.keras"))
    out["frozen_top_after_load"] = keras.models.load_model(os.path.join(tmp, "top.keras")).trainable
    return out


def shared_outputs():
    x = keras.Input((3,), name="x")
    shared = layers.Dense(2, name="shared", kernel_initializer="ones")
    pre = layers.Dense(3, name="pre", kernel_initializer="zeros")
    model = keras.Model(x, [shared(x), shared(pre(x))])
    model.compile(keras.optimizers.SGD(0.0), ["mse", "mae"], metrics=[["mae"], ["mae"]])
    logs = model.evaluate(np.ones((4, 3)), [np.zeros((4, 2)), np.zeros((4, 2))], verbose=0, return_dict=True)
    return {"output_names": list(model.output_names), "logs": {k: float(v) for k, v in logs.items()}}


def main():
    os.makedirs(HERE, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        docs = {"freezing.json": freezing(tmp), "shared_outputs.json": shared_outputs()}
    for name, doc in docs.items():
        doc["keras_version"] = keras.__version__
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
        print("wrote", os.path.join(HERE, name))


if __name__ == "__main__":
    main()
