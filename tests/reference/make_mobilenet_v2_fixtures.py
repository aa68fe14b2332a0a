#!/usr/bin/env python3
"""Reference tables and numbers for tower::applications::MobileNetV2, computed by Keras itself.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras         # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_mobilenet_v2_fixtures.py   # rewrites tests/reference/applications/*.json

Every model is built with keras.applications.MobileNetV2(weights=None, ...) after keras.backend.clear_session(),
so automatic names start from zero ("input_layer", "global_average_pooling2d"), as in a fresh C++ process after
tower::clear_session(). Nothing is downloaded.

mobilenet_v2_alpha_<alpha>.json, one per alpha in ALPHAS: the architecture of each case in CASES.

    keras_version, alpha
    cases   [{"input_shape", "include_top", "pooling", "classes",
              "name"                    the model's default name ("mobilenetv2_1.00_224")
              "total_params", "trainable_params", "non_trainable_params"
              "layers"                  [[name, class_name, output_shape, params, [inbound layer names]]] in
                                        model.layers order; output_shape with null for the batch dimension
              "freezing" (first case only)  {"block_3_expand": [trainable, non_trainable] after
                                        get_layer("block_3_expand").trainable = False,
                                        "block_3_expand_BN": the same after also freezing that layer,
                                        "model": after model.trainable = False,
                                        "model_unfrozen": after model.trainable = True again}}]

mobilenet_v2_numerics.json: one small model, run. MobileNetV2(input_shape=NUM_INPUT, alpha=0.35, classes=5,
classifier_activation=None, weights=None); its weights are set by the formula in deterministic_weights()
(so the C++ test makes the same values without a weights file), the inputs by deterministic_inputs().

    weight_paths        model.weights paths in order (the C++ test checks its own order against this)
    labels              the batch's integer labels
    inference_logits    model(x, training=False)
    frozen              every layer but "predictions" frozen (layer.trainable = False), compiled with
                        SGD(learning_rate=0.01) and SparseCategoricalCrossentropy(from_logits=True), then
                        model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False):
                          loss            the fit loss (equal to the inference loss: frozen BatchNormalization
                                          layers use their moving statistics)
                          logits_after    model(x, training=False) after the step
    full                a fresh model with the same weights, everything trainable, the same compile and fit:
                          loss            the fit loss (BatchNormalization with batch statistics)
                          moving_mean, moving_variance   of bn_Conv1 and Conv_1_bn after the step
                          logits_after    model(x, training=False) after the step

The models are compiled with jit_compile=False and TensorFlow op determinism on, so reruns give identical files.
"""
import json
import math
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "applications")

ALPHAS = [0.35, 0.5, 0.75, 1.0, 1.3, 1.4]
# (input_shape, include_top, pooling, classes)
CASES = [
    ((224, 224, 3), True, None, 1000),
    ((224, 224, 3), False, None, 1000),
    ((96, 96, 3), False, "avg", 1000),
    ((96, 96, 3), True, None, 17),
    ((32, 32, 1), True, None, 10),
    ((75, 57, 2), False, "max", 1000),  # odd and uneven sizes: correct_pad's symmetric branch
]

NUM_INPUT = (40, 36, 2)
NUM_ALPHA = 0.35
NUM_CLASSES = 5
BATCH = 4
LABELS = [1, 3, 0, 4]
INPUT_STREAM = 1000


def f32_str(v):
    s = str(np.float32(v))
    if not np.isfinite(np.float32(v)):
        raise ValueError(f"non-finite value {s}")
    return s


def floats(a):
    return "[" + ", ".join(f32_str(v) for v in np.asarray(a, dtype=np.float32).reshape(-1)) + "]"


def shape_list(shape):
    return [None if d is None else int(d) for d in shape]


def layer_rows(model):
    rows = []
    for layer in model.layers:
        inbound = []
        for node in layer._inbound_nodes:
            for t in keras.tree.flatten(node.input_tensors):
                inbound.append(t._keras_history.operation.name)
        rows.append([layer.name, type(layer).__name__, shape_list(layer.output.shape), int(layer.count_params()),
                     inbound])
    return rows


def param_counts(model):
    trainable = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    non_trainable = int(sum(np.prod(w.shape) for w in model.non_trainable_weights))
    return [trainable, non_trainable]


def build(input_shape, include_top, pooling, classes, alpha, **kwargs):
    keras.backend.clear_session()
    return keras.applications.MobileNetV2(input_shape=input_shape, alpha=alpha, include_top=include_top,
                                          weights=None, pooling=pooling, classes=classes, **kwargs)


def architecture(alpha):
    cases = []
    for index, (input_shape, include_top, pooling, classes) in enumerate(CASES):
        model = build(input_shape, include_top, pooling, classes, alpha)
        trainable, non_trainable = param_counts(model)
        case = {
            "input_shape": list(input_shape),
            "include_top": include_top,
            "pooling": pooling,
            "classes": classes,
            "name": model.name,
            "total_params": int(model.count_params()),
            "trainable_params": trainable,
            "non_trainable_params": non_trainable,
            "layers": layer_rows(model),
        }
        if index == 0:
            freezing = {}
            model.get_layer("block_3_expand").trainable = False
            freezing["block_3_expand"] = param_counts(model)
            model.get_layer("block_3_expand_BN").trainable = False
            freezing["block_3_expand_BN"] = param_counts(model)
            model.trainable = False
            freezing["model"] = param_counts(model)
            model.trainable = True
            freezing["model_unfrozen"] = param_counts(model)
            case["freezing"] = freezing
        cases.append(case)
    return {"keras_version": keras.__version__, "alpha": alpha, "cases": cases}


def hash_uniform(n, stream):
    """n values in [-1, 1): the lowbias32 hash of (j * 0x9E3779B1 + stream * 0x85EBCA77) mod 2^32, for j < n, as
    2 h / 2^32 - 1. Plain uint32 arithmetic, so the C++ test computes bit-identical values."""
    with np.errstate(over="ignore"):
        h = np.arange(n, dtype=np.uint32) * np.uint32(0x9E3779B1) + np.uint32((stream * 0x85EBCA77) & 0xFFFFFFFF)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x7FEB352D)
        h ^= h >> np.uint32(15)
        h *= np.uint32(0x846CA68B)
        h ^= h >> np.uint32(16)
    return h.astype(np.float64) * (2.0 / 4294967296.0) - 1.0


def deterministic_values(k, shape, path):
    """Weight number k (model.weights order) of `shape`, from hash_uniform(numel, stream k)."""
    base = hash_uniform(int(np.prod(shape)), k)
    name = path.split("/")[-1]
    if name == "kernel":
        # He-uniform scale. Depthwise kernels [kh, kw, channels, 1] see kh * kw inputs per output; others every
        # axis but the last.
        fan_in = shape[0] * shape[1] if len(shape) == 4 and shape[3] == 1 else int(np.prod(shape[:-1]))
        values = base * math.sqrt(6.0 / fan_in)
    elif name == "gamma":
        values = 1.0 + 0.25 * base
    elif name == "moving_variance":
        values = 1.0 + 0.5 * base
    elif name in ("beta", "moving_mean", "bias"):
        values = 0.1 * base
    else:
        raise ValueError(f"no rule for weight {path}")
    return values.astype(np.float32).reshape(shape)


def deterministic_weights(model):
    for k, w in enumerate(model.weights):
        w.assign(deterministic_values(k, tuple(w.shape), w.path))


def deterministic_inputs():
    x = hash_uniform(BATCH * int(np.prod(NUM_INPUT)), INPUT_STREAM).astype(np.float32)
    return x.reshape((BATCH,) + NUM_INPUT), np.array(LABELS, dtype=np.int32)


def numeric_model():
    model = build(NUM_INPUT, True, None, NUM_CLASSES, NUM_ALPHA, classifier_activation=None)
    deterministic_weights(model)
    return model


def fit_once(model, x, y):
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    history = model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    return float(history.history["loss"][0])


def numerics():
    x, y = deterministic_inputs()
    model = numeric_model()
    doc = {
        "keras_version": keras.__version__,
        "input_shape": list(NUM_INPUT),
        "alpha": NUM_ALPHA,
        "classes": NUM_CLASSES,
        "weight_paths": [w.path for w in model.weights],
        "labels": LABELS,
    }
    logits = model(x, training=False).numpy()
    doc["inference_logits"] = floats(logits)

    for layer in model.layers:
        if layer.name != "predictions":
            layer.trainable = False
    before = {w.path: w.numpy().copy() for w in model.weights}
    loss = fit_once(model, x, y)
    inference_loss = float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits))
    if not math.isclose(loss, inference_loss, rel_tol=1e-5):
        raise AssertionError(f"frozen fit loss {loss} differs from the inference loss {inference_loss}")
    for w in model.weights:
        if not w.path.startswith("predictions/") and not np.array_equal(before[w.path], w.numpy()):
            raise AssertionError(f"{w.path} changed while frozen")
    doc["frozen"] = {"loss": f32_str(loss), "logits_after": floats(model(x, training=False).numpy())}

    model = numeric_model()
    loss = fit_once(model, x, y)
    full = {"loss": f32_str(loss)}
    for name in ("bn_Conv1", "Conv_1_bn"):
        layer = model.get_layer(name)
        full[name + "/moving_mean"] = floats(layer.moving_mean.numpy())
        full[name + "/moving_variance"] = floats(layer.moving_variance.numpy())
    full["logits_after"] = floats(model(x, training=False).numpy())
    doc["full"] = full
    return doc


def dump(doc):
    # One entry per line; float lists were pre-rendered as strings (shortest float32 form) and are written raw.
    def render(v, indent):
        pad = "  " * indent
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                text = x if isinstance(x, str) and x.startswith("[") else render(x, indent + 1).lstrip()
                items.append(f"{pad}  {json.dumps(k)}: {text}")
            return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(v, list) and v and isinstance(v[0], (dict, list)):
            return pad + "[\n" + ",\n".join(render(x, indent + 1) for x in v) + "\n" + pad + "]"
        if isinstance(v, str) and not v.startswith("["):
            try:
                float(v)
                return pad + v
            except ValueError:
                pass
        return pad + json.dumps(v)

    return render(doc, 0) + "\n"


def write(name, doc):
    text = dump(doc)
    json.loads(text)  # must be valid JSON
    with open(os.path.join(OUT_DIR, name), "w") as f:
        f.write(text)
    print(f"{name}: {len(text)} bytes")


def main():
    tf.config.experimental.enable_op_determinism()
    os.makedirs(OUT_DIR, exist_ok=True)
    for alpha in ALPHAS:
        write(f"mobilenet_v2_alpha_{alpha}.json", architecture(alpha))
    write("mobilenet_v2_numerics.json", numerics())


if __name__ == "__main__":
    main()
