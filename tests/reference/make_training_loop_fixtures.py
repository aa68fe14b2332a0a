#!/usr/bin/env python3
"""What Keras' fit / evaluate loop does around the steps, recorded by Keras itself for Tower's trainer tests.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras          # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_training_loop_fixtures.py   # rewrites tests/reference/training/loop.json

The C++ tests tests/training/training_loop_test.cpp and tests/models/training_test.cpp (validation_split) read
the file. Every model has fixed weights (given in the
file) and the optimizer SGD(learning_rate=0), so every loss and metric is that of the given weights. Cases
(the "cases" list; each has a "name"):

  class_weight      Dense(3, softmax) on 4 features, sparse_categorical_crossentropy. evaluate(x, y) before fit,
                    fit(x, y, batch_size=4, class_weight={0: 10}, validation_data=(x, y), shuffle=False), then
                    evaluate(x, y) again: "evaluate_before", "history" {key: [per epoch]}, "evaluate_after".
  weighted_metrics  Dense(1, sigmoid) on 4 features, binary_crossentropy, metrics=[BinaryAccuracy()],
                    weighted_metrics=[BinaryAccuracy()]. "evaluate": evaluate(x, y, sample_weight=sw)'s logs;
                    "fit_history": fit(x, y, batch_size=8, class_weight={0: 3}, shuffle=False)'s History.
  steps_per_epoch   Dense(1) on 1 feature, mse, 3 epochs on a dataset of `examples` examples in batches of
                    `batch_size`, with `steps_per_epoch`; "cardinality" "known" (a batched tensor dataset) or
                    "unknown" (the same through filter(True)). "batches": the training batches of each epoch
                    (on_train_batch_end calls between on_epoch_begin and on_epoch_end).
  initial_epoch     fit(epochs=2, initial_epoch=3): "history" (History.history), "epochs" (History.epoch) and
                    "train_end_logs" (what on_train_end received).
  train_end_logs    fit(x, y, epochs=2, validation_data=(x, y)) of the Dense(1) model: "train_end_logs" and
                    "last_epoch_logs" (what on_epoch_end received last).
  validation_split  fit(x, y, batch_size=1, validation_split=0.25) on 10 examples: "train_batches" and
                    "validation_batches" of the one epoch (batches of one example).
  no_trainable      Input(3) -> BatchNormalization(center=False, scale=False): no trainable weights. fit(x, y,
                    batch_size=4, epochs=1, shuffle=False) with SGD(0.1) and mse: "history", "iterations" (the
                    optimizer's, after fit), "moving_mean" and "moving_variance" after fit.

Floats are written as the shortest decimal string that reads back as the same float32 (or float64 for logs).
"""
import json
import os
import warnings

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "training", "loop.json")


def tensor_json(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float(str(v)) for v in a.reshape(-1)]}


def int_tensor_json(a):
    a = np.asarray(a, dtype=np.int32)
    return {"shape": list(a.shape), "data": [int(v) for v in a.reshape(-1)], "dtype": "int32"}


def logs_json(logs):
    return {k: float(v) for k, v in (logs or {}).items()}


def grid(rows, cols, scale, offset):
    # Small exact values: (i * 7 + 3) mod 11, scaled.
    v = (np.arange(rows * cols) * 7 + 3) % 11
    return (v.astype(np.float32) * scale + offset).reshape(rows, cols)


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches, self.test_batches, self.train_end_logs, self.last_epoch_logs = [], [], None, None

    def on_epoch_begin(self, epoch, logs=None):
        self.batches.append(0)
        self.test_batches.append(0)

    def on_train_batch_end(self, batch, logs=None):
        self.batches[-1] += 1

    def on_test_batch_end(self, batch, logs=None):
        if self.test_batches:
            self.test_batches[-1] += 1

    def on_epoch_end(self, epoch, logs=None):
        self.last_epoch_logs = dict(logs or {})

    def on_train_end(self, logs=None):
        self.train_end_logs = dict(logs or {})


def dense_model(units, features, activation, kernel, bias):
    model = keras.Sequential([keras.Input((features,)), keras.layers.Dense(units, activation=activation)])
    model.layers[0].set_weights([kernel, bias])
    return model


def class_weight_case():
    x = grid(8, 4, 0.25, -1.0)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1], dtype=np.int32)
    kernel = grid(4, 3, 0.1, -0.5)
    bias = np.array([0.1, -0.2, 0.05], dtype=np.float32)
    model = dense_model(3, 4, "softmax", kernel, bias)
    model.compile(keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")
    before = model.evaluate(x, y, verbose=0, return_dict=True)
    h = model.fit(x, y, batch_size=4, epochs=1, class_weight={0: 10.0}, validation_data=(x, y), shuffle=False,
                  verbose=0)
    after = model.evaluate(x, y, verbose=0, return_dict=True)
    return {"name": "class_weight", "x": tensor_json(x), "y": int_tensor_json(y), "kernel": tensor_json(kernel),
            "bias": tensor_json(bias), "evaluate_before": logs_json(before),
            "history": {k: [float(v) for v in vs] for k, vs in h.history.items()}, "evaluate_after": logs_json(after)}


def weighted_metrics_case():
    x = grid(8, 4, 0.25, -1.0)
    y = np.array([[1], [0], [1], [1], [0], [0], [1], [0]], dtype=np.float32)
    sw = np.array([1, 0, 0, 2, 1, 0, 0.5, 1], dtype=np.float32)
    kernel = grid(4, 1, 0.2, -1.0)
    bias = np.array([0.1], dtype=np.float32)
    model = dense_model(1, 4, "sigmoid", kernel, bias)
    model.compile(keras.optimizers.SGD(0.0), "binary_crossentropy", metrics=[keras.metrics.BinaryAccuracy()],
                  weighted_metrics=[keras.metrics.BinaryAccuracy()])
    logs = model.evaluate(x, y, sample_weight=sw, verbose=0, return_dict=True)
    h = model.fit(x, y, batch_size=8, epochs=1, class_weight={0: 3.0}, shuffle=False, verbose=0)
    return {"name": "weighted_metrics", "x": tensor_json(x), "y": tensor_json(y), "sample_weight": tensor_json(sw),
            "kernel": tensor_json(kernel), "bias": tensor_json(bias), "evaluate": logs_json(logs),
            "fit_history": {k: [float(v) for v in vs] for k, vs in h.history.items()}}


def steps_per_epoch_case(examples, batch_size, steps, cardinality, epochs):
    x = np.arange(examples, dtype=np.float32).reshape(examples, 1)
    y = np.zeros((examples, 1), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if cardinality == "unknown":
        ds = ds.filter(lambda a, b: True)
    ds = ds.batch(batch_size)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    rec = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(ds, epochs=epochs, steps_per_epoch=steps, verbose=0, callbacks=[rec])
    return {"name": f"steps_per_epoch_{cardinality}_{examples}_{batch_size}_{steps}", "examples": examples,
            "batch_size": batch_size, "steps_per_epoch": steps, "cardinality": cardinality, "epochs": epochs,
            "batches": rec.batches}


def small_regression():
    x = grid(10, 1, 0.5, -2.0)
    y = grid(10, 1, 0.25, 0.0)
    model = dense_model(1, 1, None, np.array([[0.5]], np.float32), np.array([0.25], np.float32))
    model.compile(keras.optimizers.SGD(0.0), "mse")
    return x, y, model


def initial_epoch_case():
    x, y, model = small_regression()
    rec = Recorder()
    h = model.fit(x, y, epochs=2, initial_epoch=3, verbose=0, callbacks=[rec])
    return {"name": "initial_epoch", "history": {k: list(v) for k, v in h.history.items()}, "epochs": list(h.epoch),
            "train_end_logs": logs_json(rec.train_end_logs)}


def train_end_logs_case():
    x, y, model = small_regression()
    rec = Recorder()
    model.fit(x, y, epochs=2, validation_data=(x, y), verbose=0, callbacks=[rec])
    return {"name": "train_end_logs", "x": tensor_json(x), "y": tensor_json(y),
            "train_end_logs": logs_json(rec.train_end_logs), "last_epoch_logs": logs_json(rec.last_epoch_logs)}


def validation_split_case():
    x, y, model = small_regression()
    rec = Recorder()
    model.fit(x, y, batch_size=1, epochs=1, validation_split=0.25, verbose=0, callbacks=[rec])
    return {"name": "validation_split", "examples": 10, "validation_split": 0.25, "train_batches": rec.batches[0],
            "validation_batches": rec.test_batches[0]}


def no_trainable_case():
    x = grid(8, 3, 0.5, -1.0)
    y = grid(8, 3, 0.25, 0.0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.BatchNormalization(center=False, scale=False)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    bn = model.layers[0]
    return {"name": "no_trainable", "x": tensor_json(x), "y": tensor_json(y),
            "history": {k: [float(v) for v in vs] for k, vs in h.history.items()},
            "iterations": int(model.optimizer.iterations.numpy()),
            "moving_mean": tensor_json(bn.moving_mean.numpy()),
            "moving_variance": tensor_json(bn.moving_variance.numpy())}


def main():
    keras.utils.set_random_seed(0)
    cases = [class_weight_case(), weighted_metrics_case()]
    for cardinality in ["known", "unknown"]:
        for examples, batch_size, steps in [(10, 4, 5), (10, 4, 2), (16, 4, 2), (16, 4, 3)]:
            cases.append(steps_per_epoch_case(examples, batch_size, steps, cardinality, 4))
    cases += [initial_epoch_case(), train_end_logs_case(), validation_split_case(), no_trainable_case()]
    doc = {"keras_version": keras.__version__, "tensorflow_version": tf.__version__, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
