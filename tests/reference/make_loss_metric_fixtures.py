#!/usr/bin/env python3
"""Reference values for Tower's losses and metrics, computed by Keras itself.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras          # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_loss_metric_fixtures.py  # rewrites tests/reference/losses_metrics/*.json

losses.json holds one entry per case of LOSS_CASES: the loss ({"class_name", "config"}, exactly the kwargs given to
the Keras class, which Tower reads with the same keys), y_true, y_pred and a sample weight per example, and what
Keras computes from them:

    per_example     loss(y_true, y_pred) with reduction=None, as Tower defines it where the two differ: with
                    ignore_class, Keras' mask weight (values / kept values) carried by the kept values; for Dice and
                    Tversky over the whole batch (axis=None), Keras' one value repeated per example
    loss            the sum_over_batch_size reduction (sum / number of per-example values)
    weighted_loss   the same with sample_weight
    grad            d loss / d y_pred (tf.GradientTape)
    weighted_grad   d weighted_loss / d y_pred

metrics.json holds one entry per case of METRIC_CASES: the metric ({"class_name", "config"}), two batches (y_true,
y_pred, sample_weight; for Mean "values" and sample_weight) and

    result           result() after update_state on both batches without sample weights
    weighted_result  result() of a fresh metric after update_state on both batches with their sample weights

Tensors are {"shape", "dtype", "data"}, data flattened row-major; floats are the shortest decimal strings that read
back as the same float32. The C++ tests tests/losses/keras_losses_test.cpp and tests/metrics/keras_metrics_test.cpp
read these files.
"""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "losses_metrics")


def f32(v):
    # numpy prints the shortest string that reads back as the same float32.
    x = np.float32(v)
    if not np.isfinite(x):
        raise ValueError(f"non-finite value {x}")
    return float(str(x))


def tensor_json(a, dtype="float32"):
    a = np.asarray(a)
    if dtype == "int32":
        data = [int(v) for v in a.reshape(-1)]
    else:
        data = [f32(v) for v in a.astype(np.float32).reshape(-1)]
    return {"shape": list(a.shape), "dtype": dtype, "data": data}


def arr(values, dtype=np.float32):
    return np.array(values, dtype=dtype)


def rng_probs(seed, shape):
    """Rows of positive values that sum to 1 (a softmax of seeded uniform logits)."""
    z = np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def rng_uniform(seed, shape, low=-1.0, high=1.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def loss_case(name, class_name, config, y_true, y_pred, sample_weight, y_true_dtype="float32"):
    return dict(name=name, class_name=class_name, config=config, y_true=y_true, y_pred=y_pred,
                sample_weight=sample_weight, y_true_dtype=y_true_dtype)


# One weight per example. Keras multiplies per-example values [N, ...] by the weights after squeezing or expanding
# the trailing axis, so the rank-3 cases pass [N, 1] (Tower's training loop broadcasts [N] over the positions).
W4 = arr([1.0, 0.5, 2.0, 0.0])
W3 = arr([0.25, 1.5, 1.0])

# Probabilities that sum to 1 per row, with a row that puts exactly 0 on its label and one that puts exactly 1 there.
PROBS = rng_probs(1, (4, 3))
PROBS_CLIPPED = arr([[0.0, 0.3, 0.7], [0.2, 0.5, 0.3], [1.0, 0.0, 0.0], [0.1, 0.6, 0.3]])
ONE_HOT = arr([[1, 0, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0]])
LABELS = arr([0, 2, 0, 1], np.int32)

LOSS_CASES = [
    # SparseCategoricalCrossentropy
    loss_case("SCCE_probs", "SparseCategoricalCrossentropy", {}, LABELS, PROBS, W4, "int32"),
    loss_case("SCCE_probs_float_labels", "SparseCategoricalCrossentropy", {}, LABELS.astype(np.float32), PROBS, W4),
    loss_case("SCCE_probs_clipped", "SparseCategoricalCrossentropy", {}, LABELS, PROBS_CLIPPED, W4, "int32"),
    loss_case("SCCE_probs_unnormalized", "SparseCategoricalCrossentropy", {}, LABELS,
              rng_uniform(2, (4, 3), 0.05, 0.6), W4, "int32"),
    loss_case("SCCE_logits", "SparseCategoricalCrossentropy", {"from_logits": True}, LABELS,
              rng_uniform(3, (4, 3), -3, 3), W4, "int32"),
    loss_case("SCCE_labels_with_trailing_one", "SparseCategoricalCrossentropy", {}, LABELS.reshape(4, 1), PROBS, W4,
              "int32"),
    loss_case("SCCE_rank3_logits", "SparseCategoricalCrossentropy", {"from_logits": True},
              arr([[0, 3, 1], [2, 2, 0]], np.int32), rng_uniform(4, (2, 3, 4), -2, 2), W4[:2].reshape(2, 1), "int32"),
    # CategoricalCrossentropy
    loss_case("CCE_probs", "CategoricalCrossentropy", {}, ONE_HOT, PROBS, W4),
    loss_case("CCE_probs_clipped", "CategoricalCrossentropy", {}, ONE_HOT, PROBS_CLIPPED, W4),
    loss_case("CCE_probs_unnormalized", "CategoricalCrossentropy", {}, ONE_HOT, rng_uniform(5, (4, 3), 0.05, 0.6),
              W4),
    loss_case("CCE_soft_labels", "CategoricalCrossentropy", {}, rng_probs(6, (4, 3)), PROBS, W4),
    loss_case("CCE_label_smoothing", "CategoricalCrossentropy", {"label_smoothing": 0.2}, ONE_HOT, PROBS, W4),
    loss_case("CCE_logits", "CategoricalCrossentropy", {"from_logits": True}, ONE_HOT, rng_uniform(7, (4, 3), -3, 3),
              W4),
    loss_case("CCE_logits_label_smoothing", "CategoricalCrossentropy", {"from_logits": True, "label_smoothing": 0.1},
              ONE_HOT, rng_uniform(8, (4, 3), -3, 3), W4),
    # BinaryCrossentropy
    loss_case("BCE_probs", "BinaryCrossentropy", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              rng_uniform(9, (4, 3), 0.05, 0.95), W4),
    loss_case("BCE_probs_clipped", "BinaryCrossentropy", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              arr([[0.0, 0.2, 1.0], [1.0, 0.0, 0.4], [0.9, 0.6, 0.1], [0.3, 0.0, 0.5]]), W4),
    loss_case("BCE_logits", "BinaryCrossentropy", {"from_logits": True},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(10, (4, 3), -4, 4), W4),
    loss_case("BCE_label_smoothing", "BinaryCrossentropy", {"label_smoothing": 0.1},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(11, (4, 3), 0.05, 0.95), W4),
    loss_case("BCE_logits_label_smoothing", "BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.2},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(12, (4, 3), -4, 4), W4),
    loss_case("BCE_labels_without_trailing_one", "BinaryCrossentropy", {}, arr([1, 0, 0, 1]),
              arr([[0.8], [0.3], [0.6], [0.1]]), W4),
    # Regression
    loss_case("MSE", "MeanSquaredError", {}, rng_uniform(13, (4, 3)), rng_uniform(14, (4, 3)), W4),
    loss_case("MSE_rank3", "MeanSquaredError", {}, rng_uniform(15, (2, 3, 2)), rng_uniform(16, (2, 3, 2)),
              W4[:2].reshape(2, 1)),
    loss_case("MAE", "MeanAbsoluteError", {}, rng_uniform(17, (4, 3)), rng_uniform(18, (4, 3)), W4),
    loss_case("Huber", "Huber", {}, rng_uniform(19, (4, 3), -2, 2), rng_uniform(20, (4, 3), -2, 2), W4),
    loss_case("Huber_delta_0_5", "Huber", {"delta": 0.5}, rng_uniform(21, (4, 3), -1, 1),
              rng_uniform(22, (4, 3), -1, 1), W4),
    loss_case("KLD", "KLDivergence", {}, rng_probs(23, (4, 3)), PROBS, W4),
    loss_case("KLD_clipped", "KLDivergence", {}, arr([[0.0, 0.4, 0.6], [0.2, 0.5, 0.3], [1.0, 0.0, 0.0],
                                                      [0.1, 0.6, 0.3]]), PROBS_CLIPPED, W4),
    # SparseCategoricalCrossentropy's ignore_class
    loss_case("SCCE_ignore_class", "SparseCategoricalCrossentropy", {"ignore_class": -1}, arr([0, -1, 2, 1], np.int32),
              PROBS, W4, "int32"),
    loss_case("SCCE_ignore_class_logits", "SparseCategoricalCrossentropy", {"from_logits": True, "ignore_class": 255},
              arr([255, 2, 255, 1], np.int32), rng_uniform(50, (4, 3), -3, 3), W4, "int32"),
    loss_case("SCCE_ignore_class_in_range", "SparseCategoricalCrossentropy", {"ignore_class": 0},
              LABELS.astype(np.float32), PROBS, W4),
    loss_case("SCCE_ignore_class_rank3", "SparseCategoricalCrossentropy", {"from_logits": True, "ignore_class": -1},
              arr([[0, -1, 1], [-1, 3, 0]], np.int32), rng_uniform(51, (2, 3, 4), -2, 2), W4[:2].reshape(2, 1),
              "int32"),
    loss_case("SCCE_ignore_class_every_row", "SparseCategoricalCrossentropy", {"ignore_class": -1},
              arr([-1, -1, -1, -1], np.int32), PROBS, W4, "int32"),
    # Hinge family: 0/1 labels become -1/1 only when every label of the batch is 0 or 1
    loss_case("Hinge_binary_labels", "Hinge", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              rng_uniform(52, (4, 3), -2, 2), W4),
    loss_case("Hinge_signed_labels", "Hinge", {}, arr([[1, -1, 1], [-1, -1, 1], [1, 1, -1], [-1, 1, -1]]),
              rng_uniform(53, (4, 3), -2, 2), W4),
    loss_case("Hinge_mixed_labels_unconverted", "Hinge", {}, arr([[1, 0, -1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              rng_uniform(54, (4, 3), -2, 2), W4),
    loss_case("Hinge_int_labels", "Hinge", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]], np.int32),
              rng_uniform(55, (4, 3), -2, 2), W4, "int32"),
    loss_case("SquaredHinge_binary_labels", "SquaredHinge", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              rng_uniform(56, (4, 3), -2, 2), W4),
    loss_case("SquaredHinge_signed_labels", "SquaredHinge", {}, arr([[1, -1, 1], [-1, -1, 1], [1, 1, -1],
                                                                    [-1, 1, -1]]), rng_uniform(57, (4, 3), -2, 2), W4),
    loss_case("CategoricalHinge", "CategoricalHinge", {}, ONE_HOT, rng_uniform(58, (4, 3), -1, 1), W4),
    # Row 0 ties two negatives at the maximum; row 2 is confident enough for a margin below 0.
    loss_case("CategoricalHinge_ties_and_inactive", "CategoricalHinge", {}, ONE_HOT,
              arr([[0.1, 0.5, 0.5], [0.2, 0.3, 0.4], [3.0, 0.5, 0.25], [0.4, 0.1, 0.2]]), W4),
    # Regression
    loss_case("LogCosh", "LogCosh", {}, rng_uniform(59, (4, 3), -2, 2), rng_uniform(60, (4, 3), -2, 2), W4),
    loss_case("LogCosh_large_errors", "LogCosh", {}, arr([[0, 0, 0], [1, 2, 3], [-40, 0, 5], [0, 0, 0]]),
              arr([[30, -30, 0.5], [1, 2, 3], [40, 0.25, -5], [0, 0, 0]]), W4),
    loss_case("Poisson", "Poisson", {}, arr([[0, 1, 3], [2, 0, 1], [4, 1, 0], [1, 1, 2]]),
              rng_uniform(61, (4, 3), 0.1, 3), W4),
    loss_case("Poisson_rank3", "Poisson", {}, arr([[[0, 1], [3, 2]], [[1, 0], [2, 5]]]),
              rng_uniform(62, (2, 2, 2), 0.2, 4), W4[:2].reshape(2, 1)),
    loss_case("MSLE", "MeanSquaredLogarithmicError", {}, rng_uniform(63, (4, 3), 0, 3), rng_uniform(64, (4, 3), 0, 3),
              W4),
    loss_case("MSLE_negative_predictions", "MeanSquaredLogarithmicError", {}, rng_uniform(65, (4, 3), -0.5, 3),
              rng_uniform(66, (4, 3), -0.5, 3), W4),
    loss_case("MAPE", "MeanAbsolutePercentageError", {}, rng_uniform(67, (4, 3), 0.5, 3),
              rng_uniform(68, (4, 3), -1, 3), W4),
    loss_case("MAPE_signed_targets", "MeanAbsolutePercentageError", {},
              arr([[-2, 1, 0.5], [3, -0.25, 1], [1, 1, 1], [-1, 2, -3]]), rng_uniform(69, (4, 3), -2, 2), W4),
    loss_case("CosineSimilarity", "CosineSimilarity", {}, rng_uniform(70, (4, 3)), rng_uniform(71, (4, 3)), W4),
    loss_case("CosineSimilarity_zero_vector", "CosineSimilarity", {"axis": -1},
              arr([[0, 0, 0], [1, 2, 3], [0.5, -1, 0], [1, 0, 0]]), arr([[1, 2, 3], [0, 0, 0], [2, 1, 0.5],
                                                                         [-1, 0.5, 2]]), W4),
    loss_case("CosineSimilarity_rank3", "CosineSimilarity", {}, rng_uniform(72, (2, 3, 4)),
              rng_uniform(73, (2, 3, 4)), W4[:2].reshape(2, 1)),
    # Focal crossentropies
    loss_case("BinaryFocal", "BinaryFocalCrossentropy", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              rng_uniform(74, (4, 3), 0.05, 0.95), W4),
    loss_case("BinaryFocal_balanced", "BinaryFocalCrossentropy", {"apply_class_balancing": True, "alpha": 0.35,
                                                                  "gamma": 3.0},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(75, (4, 3), 0.05, 0.95), W4),
    loss_case("BinaryFocal_gamma_0", "BinaryFocalCrossentropy", {"gamma": 0.0},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(76, (4, 3), 0.05, 0.95), W4),
    loss_case("BinaryFocal_clipped", "BinaryFocalCrossentropy", {"gamma": 1.5},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              arr([[0.0, 0.2, 1.0], [1.0, 0.0, 0.4], [0.9, 0.6, 0.1], [0.3, 0.0, 0.5]]), W4),
    loss_case("BinaryFocal_logits", "BinaryFocalCrossentropy", {"from_logits": True},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(77, (4, 3), -4, 4), W4),
    loss_case("BinaryFocal_logits_smoothing_balanced", "BinaryFocalCrossentropy",
              {"from_logits": True, "label_smoothing": 0.1, "apply_class_balancing": True, "alpha": 0.6},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(78, (4, 3), -4, 4), W4),
    loss_case("CategoricalFocal", "CategoricalFocalCrossentropy", {}, ONE_HOT, PROBS, W4),
    loss_case("CategoricalFocal_clipped", "CategoricalFocalCrossentropy", {"gamma": 1.0}, ONE_HOT, PROBS_CLIPPED, W4),
    loss_case("CategoricalFocal_unnormalized", "CategoricalFocalCrossentropy", {"alpha": 0.5, "gamma": 3.0}, ONE_HOT,
              rng_uniform(79, (4, 3), 0.05, 0.6), W4),
    loss_case("CategoricalFocal_logits", "CategoricalFocalCrossentropy", {"from_logits": True}, ONE_HOT,
              rng_uniform(80, (4, 3), -3, 3), W4),
    loss_case("CategoricalFocal_logits_smoothing", "CategoricalFocalCrossentropy",
              {"from_logits": True, "label_smoothing": 0.2, "alpha": 1.0, "gamma": 0.0}, ONE_HOT,
              rng_uniform(81, (4, 3), -3, 3), W4),
    loss_case("CategoricalFocal_rank3", "CategoricalFocalCrossentropy", {"label_smoothing": 0.1},
              arr([[[1, 0, 0], [0, 1, 0]], [[0, 0, 1], [1, 0, 0]]]), rng_probs(82, (2, 2, 3)), W4[:2].reshape(2, 1)),
    # Segmentation overlaps: the whole batch (axis=None) or each example (every non-batch axis)
    loss_case("Dice", "Dice", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              rng_uniform(83, (4, 3), 0, 1), W4),
    loss_case("Dice_per_example", "Dice", {"axis": [1, 2, 3]},
              arr([[[[1], [1]], [[0], [0]]], [[[1], [1]], [[0], [0]]]]),
              arr([[[[0.0], [1.0]], [[0.0], [1.0]]], [[[0.4], [0.0]], [[0.0], [0.9]]]]), W4[:2]),
    loss_case("Dice_rank3_whole_batch", "Dice", {}, (rng_uniform(84, (3, 2, 2), 0, 1) > 0.5).astype(np.float32),
              rng_uniform(85, (3, 2, 2), 0, 1), W3),
    loss_case("Tversky", "Tversky", {}, arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]),
              rng_uniform(86, (4, 3), 0, 1), W4),
    loss_case("Tversky_alpha_beta", "Tversky", {"alpha": 0.7, "beta": 0.3},
              arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0]]), rng_uniform(87, (4, 3), 0, 1), W4),
    loss_case("Tversky_per_example", "Tversky", {"alpha": 0.2, "beta": 0.8, "axis": [1, 2]},
              (rng_uniform(88, (3, 2, 2), 0, 1) > 0.5).astype(np.float32), rng_uniform(89, (3, 2, 2), 0, 1), W3),
]


def make_loss_case(c):
    cls = getattr(keras.losses, c["class_name"])
    y_true = tf.constant(c["y_true"])
    y_pred = tf.constant(c["y_pred"])
    sw = tf.constant(c["sample_weight"])
    per_example = cls(reduction=None, **c["config"])(y_true, y_pred)
    if c["config"].get("ignore_class") is not None:
        kept = np.asarray(c["y_true"]) != c["config"]["ignore_class"]
        if kept.any():
            per_example = per_example * (kept.size / kept.sum())
    if c["class_name"] in ("Dice", "Tversky") and c["config"].get("axis") is None:
        per_example = tf.fill([len(c["y_true"])], per_example)
    loss_fn = cls(**c["config"])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(y_pred)
        loss = loss_fn(y_true, y_pred)
        weighted = loss_fn(y_true, y_pred, sample_weight=sw)
    grad = tape.gradient(loss, y_pred)
    weighted_grad = tape.gradient(weighted, y_pred)
    del tape
    return {
        "name": c["name"],
        "loss_config": {"class_name": c["class_name"], "config": c["config"]},
        "y_true": tensor_json(c["y_true"], c["y_true_dtype"]),
        "y_pred": tensor_json(c["y_pred"]),
        "sample_weight": tensor_json(c["sample_weight"]),
        "per_example": tensor_json(per_example.numpy()),
        "loss": f32(loss.numpy()),
        "weighted_loss": f32(weighted.numpy()),
        "grad": tensor_json(grad.numpy()),
        "weighted_grad": tensor_json(weighted_grad.numpy()),
    }


def batch(y_true, y_pred, sample_weight, y_true_dtype="float32"):
    return dict(y_true=y_true, y_pred=y_pred, sample_weight=sample_weight, y_true_dtype=y_true_dtype)


def metric_case(name, class_name, config, batches):
    return dict(name=name, class_name=class_name, config=config, batches=batches)


# Scores on a grid of odd multiples of 1/400 (plus a few outside [0, 1]), so none lies on one of AUC's 200
# thresholds i/199 or on a threshold of Precision/Recall: float32 rounding cannot move a score across one.
def scores(seed, shape):
    rng = np.random.default_rng(seed)
    return ((2 * rng.integers(0, 200, size=shape) + 1) / 400.0).astype(np.float32)


BIN_TRUE_1 = arr([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 0, 0]])
BIN_TRUE_2 = arr([[0, 1, 1], [1, 0, 0], [0, 0, 0]])
SW5 = arr([1.0, 0.5, 2.0, 0.0, 1.5])
SW3 = arr([0.25, 1.5, 1.0])
CAT_TRUE_1 = arr([[0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 1, 0, 0]])
CAT_TRUE_2 = arr([[1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
# Row 2 of batch 1 ties classes 1 and 3 at the top: argmax takes class 1, in_top_k counts both.
CAT_PRED_1 = arr([[0.1, 0.2, 0.6, 0.1], [0.3, 0.4, 0.2, 0.1], [0.1, 0.4, 0.1, 0.4], [0.5, 0.1, 0.1, 0.3],
                  [0.25, 0.2, 0.3, 0.25]])
CAT_PRED_2 = arr([[0.2, 0.5, 0.2, 0.1], [0.05, 0.15, 0.7, 0.1], [0.4, 0.3, 0.2, 0.1]])
SPARSE_1 = arr([2, 0, 1, 3, 1], np.int32)
SPARSE_2 = arr([0, 2, 3], np.int32)


def categorical_batches(sparse=False, trailing_one=False):
    if not sparse:
        return [batch(CAT_TRUE_1, CAT_PRED_1, SW5), batch(CAT_TRUE_2, CAT_PRED_2, SW3)]
    l1, l2 = (SPARSE_1.reshape(-1, 1), SPARSE_2.reshape(-1, 1)) if trailing_one else (SPARSE_1, SPARSE_2)
    return [batch(l1, CAT_PRED_1, SW5, "int32"), batch(l2, CAT_PRED_2, SW3, "int32")]


def regression_batches():
    return [batch(rng_uniform(53, (5, 3)), rng_uniform(54, (5, 3)), SW5),
            batch(rng_uniform(55, (3, 3)), rng_uniform(56, (3, 3)), SW3)]


# Class labels and predicted classes at two positions per example, with a weight per position (Keras' IoU wants
# sample_weight of y_true's shape); with `ignored`, two labels are -1, the class the ignore_class case ignores.
def iou_sparse_batches(ignored=False):
    x = -1 if ignored else 1
    return [batch(arr([[2, 0], [1, x], [3, 3], [0, 1], [2, 2]], np.int32),
                  arr([[2, 1], [1, 0], [3, 0], [0, 1], [1, 2]], np.int32),
                  arr([[1.0, 2.0], [0.5, 1.0], [2.0, 3.0], [0.0, 1.0], [1.5, 1.0]]), "int32"),
            batch(arr([[0, 1], [3, 2], [x, 0]], np.int32), arr([[0, 1], [3, 3], [2, 0]], np.int32),
                  arr([[1.0, 0.0], [2.0, 1.0], [1.0, 1.0]]), "int32")]


def binary_batches(logits=False, element_weights=False):
    p1, p2 = scores(31, (5, 3)), scores(32, (3, 3))
    if logits:
        p1, p2 = (rng_uniform(33, (5, 3), -3, 3), rng_uniform(34, (3, 3), -3, 3))
    if element_weights:  # BinaryIoU wants sample_weight of y_true's shape
        return [batch(BIN_TRUE_1, p1, np.outer(SW5, arr([1.0, 2.0, 1.0]))),
                batch(BIN_TRUE_2, p2, np.outer(SW3 * 4, arr([1.0, 0.0, 1.0])))]
    return [batch(BIN_TRUE_1, p1, SW5), batch(BIN_TRUE_2, p2, SW3)]


METRIC_CASES = [
    metric_case("Mean", "Mean", {}, [dict(values=arr([1.0, 3.0, 5.0, 7.0, -2.0]), sample_weight=SW5),
                                     dict(values=arr([[2.0, 4.0], [0.5, 1.5], [-1.0, 3.0]]), sample_weight=SW3)]),
    metric_case("Accuracy", "Accuracy", {},
                [batch(arr([[1], [2], [3], [4], [5]]), arr([[1], [2], [0], [4], [1]]), SW5),
                 batch(arr([[0], [2], [2]]), arr([[0], [1], [2]]), SW3)]),
    metric_case("BinaryAccuracy", "BinaryAccuracy", {}, binary_batches()),
    metric_case("BinaryAccuracy_threshold", "BinaryAccuracy", {"threshold": 0.7}, binary_batches()),
    metric_case("CategoricalAccuracy", "CategoricalAccuracy", {}, categorical_batches()),
    metric_case("SparseCategoricalAccuracy", "SparseCategoricalAccuracy", {}, categorical_batches(sparse=True)),
    metric_case("SparseCategoricalAccuracy_trailing_one", "SparseCategoricalAccuracy", {},
                categorical_batches(sparse=True, trailing_one=True)),
    metric_case("TopKCategoricalAccuracy_k1", "TopKCategoricalAccuracy", {"k": 1}, categorical_batches()),
    metric_case("TopKCategoricalAccuracy_k2", "TopKCategoricalAccuracy", {"k": 2}, categorical_batches()),
    metric_case("TopKCategoricalAccuracy_default", "TopKCategoricalAccuracy", {}, categorical_batches()),
    metric_case("SparseTopKCategoricalAccuracy_k2", "SparseTopKCategoricalAccuracy", {"k": 2},
                categorical_batches(sparse=True)),
    metric_case("Precision", "Precision", {}, binary_batches()),
    metric_case("Precision_threshold", "Precision", {"thresholds": 0.3}, binary_batches()),
    metric_case("Precision_top_k", "Precision", {"top_k": 2}, binary_batches()),
    metric_case("Precision_class_id", "Precision", {"class_id": 1}, binary_batches()),
    metric_case("Recall", "Recall", {}, binary_batches()),
    metric_case("Recall_threshold", "Recall", {"thresholds": 0.7}, binary_batches()),
    metric_case("Recall_top_k_class_id", "Recall", {"top_k": 1, "class_id": 2}, binary_batches()),
    metric_case("AUC", "AUC", {}, binary_batches()),
    metric_case("AUC_PR", "AUC", {"curve": "PR"}, binary_batches()),
    metric_case("AUC_ROC_minoring", "AUC", {"summation_method": "minoring"}, binary_batches()),
    metric_case("AUC_PR_majoring", "AUC", {"curve": "PR", "summation_method": "majoring"}, binary_batches()),
    metric_case("AUC_few_thresholds", "AUC", {"num_thresholds": 7}, binary_batches()),
    metric_case("AUC_from_logits", "AUC", {"from_logits": True}, binary_batches(logits=True)),
    metric_case("MeanSquaredError", "MeanSquaredError", {},
                [batch(rng_uniform(41, (5, 3)), rng_uniform(42, (5, 3)), SW5),
                 batch(rng_uniform(43, (3, 3)), rng_uniform(44, (3, 3)), SW3)]),
    metric_case("MeanAbsoluteError", "MeanAbsoluteError", {},
                [batch(rng_uniform(45, (5, 3)), rng_uniform(46, (5, 3)), SW5),
                 batch(rng_uniform(47, (3, 3)), rng_uniform(48, (3, 3)), SW3)]),
    metric_case("TruePositives", "TruePositives", {}, binary_batches()),
    metric_case("TruePositives_threshold", "TruePositives", {"thresholds": 0.3}, binary_batches()),
    metric_case("FalsePositives", "FalsePositives", {}, binary_batches()),
    metric_case("FalsePositives_threshold", "FalsePositives", {"thresholds": 0.7}, binary_batches()),
    metric_case("TrueNegatives", "TrueNegatives", {}, binary_batches()),
    metric_case("TrueNegatives_threshold", "TrueNegatives", {"thresholds": 0.2}, binary_batches()),
    metric_case("FalseNegatives", "FalseNegatives", {}, binary_batches()),
    metric_case("FalseNegatives_threshold", "FalseNegatives", {"thresholds": 0.6}, binary_batches()),
    metric_case("SensitivityAtSpecificity", "SensitivityAtSpecificity", {"specificity": 0.5}, binary_batches()),
    metric_case("SensitivityAtSpecificity_few_thresholds_class_id", "SensitivityAtSpecificity",
                {"specificity": 0.4, "num_thresholds": 7, "class_id": 1}, binary_batches()),
    metric_case("SpecificityAtSensitivity", "SpecificityAtSensitivity", {"sensitivity": 0.6}, binary_batches()),
    metric_case("SpecificityAtSensitivity_one_threshold", "SpecificityAtSensitivity",
                {"sensitivity": 0.3, "num_thresholds": 1}, binary_batches()),
    metric_case("PrecisionAtRecall", "PrecisionAtRecall", {"recall": 0.4}, binary_batches()),
    metric_case("PrecisionAtRecall_class_id", "PrecisionAtRecall", {"recall": 0.5, "class_id": 2}, binary_batches()),
    metric_case("RecallAtPrecision", "RecallAtPrecision", {"precision": 0.5}, binary_batches()),
    metric_case("RecallAtPrecision_unreachable", "RecallAtPrecision", {"precision": 1.0, "num_thresholds": 11},
                binary_batches()),
    metric_case("AUC_multi_label", "AUC", {"multi_label": True}, binary_batches()),
    metric_case("AUC_multi_label_PR_num_labels", "AUC", {"multi_label": True, "num_labels": 3, "curve": "PR"},
                binary_batches()),
    metric_case("AUC_multi_label_label_weights", "AUC",
                {"multi_label": True, "label_weights": [0.5, 2.0, 1.0], "summation_method": "majoring"},
                binary_batches()),
    metric_case("AUC_label_weights", "AUC", {"label_weights": [1.0, 0.25, 3.0]}, binary_batches()),
    metric_case("F1Score", "F1Score", {}, categorical_batches()),
    metric_case("F1Score_micro", "F1Score", {"average": "micro"}, categorical_batches()),
    metric_case("F1Score_macro_threshold", "F1Score", {"average": "macro", "threshold": 0.5}, binary_batches()),
    metric_case("F1Score_weighted", "F1Score", {"average": "weighted"}, categorical_batches()),
    metric_case("FBetaScore_beta2_macro", "FBetaScore", {"average": "macro", "beta": 2.0}, categorical_batches()),
    metric_case("FBetaScore_weighted_threshold", "FBetaScore",
                {"average": "weighted", "beta": 0.5, "threshold": 0.4}, binary_batches()),
    metric_case("FBetaScore_none_threshold", "FBetaScore", {"beta": 1.5, "threshold": 0.3}, binary_batches()),
    metric_case("RootMeanSquaredError", "RootMeanSquaredError", {},
                [batch(rng_uniform(49, (5, 3)), rng_uniform(50, (5, 3)), SW5),
                 batch(rng_uniform(51, (3, 3)), rng_uniform(52, (3, 3)), SW3)]),
    metric_case("R2Score", "R2Score", {}, regression_batches()),
    metric_case("R2Score_variance_weighted", "R2Score", {"class_aggregation": "variance_weighted_average"},
                regression_batches()),
    metric_case("R2Score_per_output", "R2Score", {"class_aggregation": None}, regression_batches()),
    metric_case("R2Score_num_regressors", "R2Score", {"num_regressors": 2}, regression_batches()),
    metric_case("IoU", "IoU", {"num_classes": 4, "target_class_ids": [0, 2], "sparse_y_pred": False},
                categorical_batches(sparse=True)),
    metric_case("IoU_sparse_predictions", "IoU", {"num_classes": 4, "target_class_ids": [1, 3]}, iou_sparse_batches()),
    metric_case("MeanIoU", "MeanIoU", {"num_classes": 4, "sparse_y_pred": False}, categorical_batches(sparse=True)),
    metric_case("MeanIoU_ignore_class", "MeanIoU", {"num_classes": 4, "ignore_class": -1},
                iou_sparse_batches(ignored=True)),
    metric_case("MeanIoU_dense", "MeanIoU", {"num_classes": 4, "sparse_y_true": False, "sparse_y_pred": False},
                categorical_batches()),
    metric_case("OneHotIoU", "OneHotIoU", {"num_classes": 4, "target_class_ids": [1, 3]}, categorical_batches()),
    metric_case("OneHotMeanIoU", "OneHotMeanIoU", {"num_classes": 4}, categorical_batches()),
    metric_case("OneHotMeanIoU_ignore_class", "OneHotMeanIoU", {"num_classes": 4, "ignore_class": 2},
                categorical_batches()),
    metric_case("BinaryIoU", "BinaryIoU", {}, binary_batches(element_weights=True)),
    metric_case("BinaryIoU_threshold_target", "BinaryIoU", {"target_class_ids": [1], "threshold": 0.3},
                binary_batches(element_weights=True)),
    # The means of losses' values
    metric_case("Hinge", "Hinge", {}, [batch(BIN_TRUE_1, rng_uniform(90, (5, 3), -2, 2), SW5),
                                       batch(BIN_TRUE_2 * 2 - 1, rng_uniform(91, (3, 3), -2, 2), SW3)]),
    metric_case("SquaredHinge", "SquaredHinge", {}, [batch(BIN_TRUE_1, rng_uniform(92, (5, 3), -2, 2), SW5),
                                                     batch(BIN_TRUE_2, rng_uniform(93, (3, 3), -2, 2), SW3)]),
    metric_case("CategoricalHinge", "CategoricalHinge", {}, categorical_batches()),
    metric_case("Poisson", "Poisson", {},
                [batch(arr(np.arange(15).reshape(5, 3) % 4), rng_uniform(94, (5, 3), 0.1, 3), SW5),
                 batch(arr([[0, 2, 1], [3, 0, 0], [1, 1, 5]]), rng_uniform(95, (3, 3), 0.1, 3), SW3)]),
    metric_case("KLDivergence", "KLDivergence", {}, [batch(rng_probs(96, (5, 3)), rng_probs(97, (5, 3)), SW5),
                                                     batch(rng_probs(98, (3, 3)), rng_probs(99, (3, 3)), SW3)]),
    metric_case("LogCoshError", "LogCoshError", {}, [batch(rng_uniform(100, (5, 3), -2, 2),
                                                           rng_uniform(101, (5, 3), -2, 2), SW5),
                                                     batch(rng_uniform(102, (3, 3), -2, 2),
                                                           rng_uniform(103, (3, 3), -2, 2), SW3)]),
    metric_case("MeanAbsolutePercentageError", "MeanAbsolutePercentageError", {},
                [batch(rng_uniform(104, (5, 3), 0.5, 2), rng_uniform(105, (5, 3), 0, 2), SW5),
                 batch(rng_uniform(106, (3, 3), -2, -0.5), rng_uniform(107, (3, 3), -2, 0), SW3)]),
    metric_case("MeanSquaredLogarithmicError", "MeanSquaredLogarithmicError", {},
                [batch(rng_uniform(108, (5, 3), 0, 3), rng_uniform(109, (5, 3), -0.5, 3), SW5),
                 batch(rng_uniform(110, (3, 3), 0, 3), rng_uniform(111, (3, 3), 0, 3), SW3)]),
    metric_case("CosineSimilarity", "CosineSimilarity", {},
                [batch(rng_uniform(112, (5, 3)), rng_uniform(113, (5, 3)), SW5),
                 batch(rng_uniform(114, (3, 3)), rng_uniform(115, (3, 3)), SW3)]),
    metric_case("CosineSimilarity_axis", "CosineSimilarity", {"axis": -1},
                [batch(rng_uniform(116, (5, 2, 3)), rng_uniform(117, (5, 2, 3)), SW5),
                 batch(rng_uniform(118, (3, 2, 3)), rng_uniform(119, (3, 2, 3)), SW3)]),
]


def make_metric_case(c):
    cls = getattr(keras.metrics, c["class_name"])
    plain, weighted = cls(**c["config"]), cls(**c["config"])
    batches = []
    for b in c["batches"]:
        sw = tf.constant(b["sample_weight"])
        if c["class_name"] == "Mean":
            plain.update_state(tf.constant(b["values"]))
            weighted.update_state(tf.constant(b["values"]), sample_weight=sw)
            batches.append({"values": tensor_json(b["values"]), "sample_weight": tensor_json(b["sample_weight"])})
            continue
        y_true, y_pred = tf.constant(b["y_true"]), tf.constant(b["y_pred"])
        plain.update_state(y_true, y_pred)
        weighted.update_state(y_true, y_pred, sample_weight=sw)
        y_pred_dtype = "int32" if b["y_pred"].dtype == np.int32 else "float32"
        batches.append({"y_true": tensor_json(b["y_true"], b["y_true_dtype"]),
                        "y_pred": tensor_json(b["y_pred"], y_pred_dtype),
                        "sample_weight": tensor_json(b["sample_weight"])})
    return {
        "name": c["name"],
        "metric_config": {"class_name": c["class_name"], "config": c["config"]},
        "batches": batches,
        "result": result_json(plain.result()),
        "weighted_result": result_json(weighted.result()),
    }


def result_json(r):
    """A number, or a list where Keras' result() is a vector (one value per class)."""
    a = np.asarray(r.numpy(), dtype=np.float64)
    return float(a) if a.ndim == 0 else [float(v) for v in a.reshape(-1)]


def dump(v, indent=0):
    """JSON with one key per line and lists of numbers on one line."""
    pad = "  " * indent
    if isinstance(v, dict) and v:
        items = [f'{pad}  {json.dumps(k)}: {dump(x, indent + 1)}' for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return "[\n" + ",\n".join(pad + "  " + dump(x, indent + 1) for x in v) + "\n" + pad + "]"
    return json.dumps(v)


def write(name, cases):
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    doc = {"keras_version": keras.__version__, "tensorflow_version": tf.__version__, "cases": cases}
    text = dump(doc) + "\n"
    json.loads(text)
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        f.write(text)
    print(f"{path}: {len(cases)} cases, {len(text)} bytes")


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    write("losses.json", [make_loss_case(c) for c in LOSS_CASES])
    write("metrics.json", [make_metric_case(c) for c in METRIC_CASES])


if __name__ == "__main__":
    main()
