#!/usr/bin/env python3
"""Reference values for Keras' masks (Embedding's mask_zero, Masking) through whole models, computed by Keras.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras      # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_mask_fixtures.py    # rewrites tests/reference/masks/*.json

Each case in CASES is a small functional model written as a list of nodes (name, Keras class, kwargs, the names of
the nodes it is called on), padded inputs (id 0, or all-zero feature rows for Masking) and targets. The script builds
it in Keras, sets seeded weights in [-0.5, 0.5], and writes tests/reference/masks/<case>.json:

    model          the model in Tower's functional config form ({"class_name": "Functional", "config": {"layers":
                   [{"class_name", "config", "name", "inbound_nodes": [[[name, 0, 0], ...]]}], "input_layers",
                   "output_layers"}}), the layers' configs being the kwargs given to Keras
    loss, metrics  the compile arguments (Keras names)
    inputs, targets, sample_weight (optional)   [{"shape", "data"}]
    weights        [{"name", "shape", "data"}]  model.weights order, "<layer>/<variable>"
    outputs        model.predict(inputs)
    output_masks   the masks Keras attached to the outputs (1 kept, 0 masked), or null where none
    evaluate       {"loss": ..., "<metric>": ...}: model.evaluate on the whole batch (masked steps skipped)
    gradients      [{"name", "shape", "data"}]  d loss / d weight (tf.GradientTape on the compiled loss,
                   model.trainable_weights order), the loss being Keras' masked sum_over_batch_size mean

tests/models/mask_test.cpp (MasksLikeKeras.*) reads every file.
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

from make_layer_fixtures import f32_str, seed_of  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "masks")

N, T, VOCAB = 4, 6, 9
LENGTHS = [6, 3, 1, 4]  # kept steps per example: the rest is padding


def ids_input():
    rng = np.random.default_rng(7)
    x = np.zeros((N, T), np.float32)
    for i, n in enumerate(LENGTHS):
        x[i, :n] = rng.integers(1, VOCAB, size=n)
    return x


def features_input(f):
    rng = np.random.default_rng(8)
    x = np.zeros((N, T, f), np.float32)
    for i, n in enumerate(LENGTHS):
        x[i, :n] = rng.uniform(-1, 1, size=(n, f))
    return x


def sparse_targets(classes):
    return np.random.default_rng(9).integers(0, classes, size=(N, T)).astype(np.float32)


def dense_targets(shape):
    return np.random.default_rng(10).uniform(-1, 1, size=shape).astype(np.float32)


EMB = {"input_dim": VOCAB, "output_dim": 4, "mask_zero": True}

CASES = [
    dict(name="embedding_lstm_sequences",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("lstm", "LSTM", {"units": 3, "return_sequences": True}, ["emb"]),
                ("out", "Dense", {"units": 5, "activation": "softmax"}, ["lstm"])],
         outputs=["out"], loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"],
         targets=[sparse_targets(5)]),
    dict(name="embedding_lstm_sequences_sample_weight",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("lstm", "LSTM", {"units": 3, "return_sequences": True}, ["emb"]),
                ("out", "Dense", {"units": 5, "activation": "softmax"}, ["lstm"])],
         outputs=["out"], loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"],
         targets=[sparse_targets(5)], sample_weight=np.array([[1.0], [0.5], [2.0], [0.0]], np.float32)),
    dict(name="embedding_gru_last",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("gru", "GRU", {"units": 3}, ["emb"]),
                ("out", "Dense", {"units": 2}, ["gru"])],
         outputs=["out"], loss="mse", metrics=["mae"], targets=[dense_targets((N, 2))]),
    dict(name="embedding_simple_rnn_backwards_zero_output",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("rnn", "SimpleRNN", {"units": 3, "return_sequences": True, "go_backwards": True,
                                      "zero_output_for_mask": True}, ["emb"]),
                ("out", "Dense", {"units": 2}, ["rnn"])],
         outputs=["out"], loss="mse", metrics=["mae"], targets=[dense_targets((N, T, 2))]),
    dict(name="masking_lstm_global_average",
         inputs=[("x", features_input(3))],
         nodes=[("masking", "Masking", {"mask_value": 0.0}, ["x"]),
                ("lstm", "LSTM", {"units": 4, "return_sequences": True}, ["masking"]),
                ("pool", "GlobalAveragePooling1D", {}, ["lstm"]),
                ("out", "Dense", {"units": 3, "activation": "softmax"}, ["pool"])],
         outputs=["out"], loss="categorical_crossentropy", metrics=["categorical_accuracy"],
         targets=[np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]]),
    dict(name="embedding_bidirectional_gru",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("bi", "Bidirectional", {"layer": {"class_name": "GRU", "config": {"units": 3, "return_sequences": True}}},
                 ["emb"]),
                ("out", "Dense", {"units": 4, "activation": "softmax"}, ["bi"])],
         outputs=["out"], loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"],
         targets=[sparse_targets(4)]),
    dict(name="embedding_add_concatenate",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("dense", "Dense", {"units": 3}, ["emb"]),
                ("lstm", "LSTM", {"units": 3, "return_sequences": True}, ["emb"]),
                ("add", "Add", {}, ["dense", "lstm"]),
                ("concat", "Concatenate", {}, ["add", "emb"]),
                ("gru", "GRU", {"units": 2, "return_sequences": True}, ["concat"]),
                ("out", "Dense", {"units": 2}, ["gru"])],
         outputs=["out"], loss="mse", metrics=["mae"], targets=[dense_targets((N, T, 2))]),
    dict(name="embedding_multi_head_attention",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("mha", "MultiHeadAttention", {"num_heads": 2, "key_dim": 2}, ["emb", "emb"]),
                ("pool", "GlobalAveragePooling1D", {}, ["mha"]),
                ("out", "Dense", {"units": 3, "activation": "softmax"}, ["pool"])],
         outputs=["out"], loss="categorical_crossentropy", metrics=["categorical_accuracy"],
         targets=[np.eye(3, dtype=np.float32)[[1, 0, 2, 2]]]),
    dict(name="embedding_causal_multi_head_attention_sequences",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("mha", "MultiHeadAttention", {"num_heads": 2, "key_dim": 3, "use_causal_mask": True},
                 ["emb", "emb"]),
                ("out", "Dense", {"units": 4, "activation": "softmax"}, ["mha"])],
         outputs=["out"], loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"],
         targets=[sparse_targets(4)]),
    dict(name="embedding_attention",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("query", "Dense", {"units": 4}, ["emb"]),
                ("att", "Attention", {}, ["query", "emb"]),
                ("out", "Dense", {"units": 2}, ["att"])],
         outputs=["out"], loss="mse", metrics=["mae"], targets=[dense_targets((N, T, 2))]),
    dict(name="embedding_additive_attention",
         inputs=[("ids", ids_input())],
         nodes=[("emb", "Embedding", EMB, ["ids"]),
                ("query", "Dense", {"units": 4}, ["emb"]),
                ("att", "AdditiveAttention", {}, ["query", "emb"]),
                ("out", "Dense", {"units": 2}, ["att"])],
         outputs=["out"], loss="mse", metrics=["mae"], targets=[dense_targets((N, T, 2))]),
]

# Layers Keras calls with positional tensors (query, value) rather than a list; Tower takes the list, and its
# MultiHeadAttention reads Keras' call arguments (use_causal_mask) as options.
POSITIONAL = {"MultiHeadAttention"}
CALL_ARGUMENTS = {"use_causal_mask", "return_attention_scores"}


def tensor_json(a, name=None):
    a = np.asarray(a, dtype=np.float32)
    d = {}
    if name is not None:
        d["name"] = name
    d["shape"] = list(a.shape)
    d["data"] = [float(f32_str(v)) for v in a.reshape(-1)]
    return d


def make_layer(class_name, kwargs, name):
    kwargs = dict(kwargs)
    if isinstance(kwargs.get("layer"), dict):
        inner = kwargs["layer"]
        kwargs["layer"] = getattr(keras.layers, inner["class_name"])(**inner["config"])
    return getattr(keras.layers, class_name)(name=name, **kwargs)


def tower_model_config(c):
    layers = []
    for name, x in c["inputs"]:
        layers.append({"class_name": "InputLayer", "name": name, "inbound_nodes": [],
                       "config": {"shape": list(x.shape[1:]), "name": name}})
    for name, cls, kwargs, args in c["nodes"]:
        layers.append({"class_name": cls, "name": name, "config": dict(kwargs, name=name),
                       "inbound_nodes": [[[a, 0, 0] for a in args]]})
    return {"class_name": "Functional",
            "config": {"name": c["name"], "layers": layers,
                       "input_layers": [[name, 0, 0] for name, _ in c["inputs"]],
                       "output_layers": [[name, 0, 0] for name in c["outputs"]]}}


def make_case(c):
    keras.utils.clear_session()
    tensors = {}
    inputs = []
    for name, x in c["inputs"]:
        t = keras.Input(shape=x.shape[1:], name=name, dtype="int32" if name == "ids" else "float32")
        tensors[name] = t
        inputs.append(t)
    for name, cls, kwargs, args in c["nodes"]:
        call = {k: v for k, v in kwargs.items() if cls in POSITIONAL and k in CALL_ARGUMENTS}
        layer = make_layer(cls, {k: v for k, v in kwargs.items() if k not in call}, name)
        xs = [tensors[a] for a in args]
        if cls in POSITIONAL:
            tensors[name] = layer(*xs, **call)
        else:
            tensors[name] = layer(xs if len(xs) > 1 else xs[0])
    model = keras.Model(inputs, [tensors[o] for o in c["outputs"]], name=c["name"])
    rng = np.random.default_rng(seed_of(c["name"], "weights"))
    for v in model.weights:
        v.assign(rng.uniform(-0.5, 0.5, size=v.shape).astype(np.float32))
    model.compile(optimizer="sgd", loss=c["loss"], metrics=c["metrics"])

    xs = [x if name != "ids" else x.astype(np.int32) for name, x in c["inputs"]]
    ys = c["targets"]
    sw = c.get("sample_weight")
    outputs = model.predict(xs, batch_size=N, verbose=0)
    outputs = outputs if isinstance(outputs, list) else [outputs]
    y_pred = model(xs, training=False)
    y_preds = y_pred if isinstance(y_pred, (list, tuple)) else [y_pred]
    masks = []
    for y in y_preds:
        m = keras.backend.get_keras_mask(y) if hasattr(keras.backend, "get_keras_mask") else getattr(y, "_keras_mask", None)
        masks.append(None if m is None else tensor_json(np.asarray(m, np.float32)))
    evaluate = model.evaluate(xs, ys[0] if len(ys) == 1 else ys, sample_weight=sw, batch_size=N, verbose=0,
                              return_dict=True)

    with tf.GradientTape() as tape:
        y_pred = model(xs, training=True)
        loss = model.compute_loss(x=xs, y=ys[0], y_pred=y_pred, sample_weight=sw, training=True)
    grads = tape.gradient(loss, model.trainable_weights)

    def weight_name(v):
        return v.path

    doc = {
        "keras_version": keras.__version__,
        "model": tower_model_config(c),
        "loss": c["loss"],
        "metrics": c["metrics"],
        "inputs": [tensor_json(x) for _, x in c["inputs"]],
        "targets": [tensor_json(y) for y in ys],
        "weights": [tensor_json(v.numpy(), weight_name(v)) for v in model.weights],
        "outputs": [tensor_json(o) for o in outputs],
        "output_masks": masks,
        "evaluate": {k: float(v) for k, v in evaluate.items()},
        "loss_value": float(loss),
        "gradients": [tensor_json(np.asarray(tf.convert_to_tensor(g)), weight_name(v)) for g, v in zip(grads, model.trainable_weights)],
    }
    if sw is not None:
        doc["sample_weight"] = tensor_json(sw)
    return doc


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])
    for c in CASES:
        if only and c["name"] not in only:
            continue
        doc = make_case(c)
        with open(os.path.join(OUT_DIR, c["name"] + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print(c["name"], doc["evaluate"])


if __name__ == "__main__":
    main()
