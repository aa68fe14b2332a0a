#!/usr/bin/env python3
"""Which way each Keras metric improves, as Keras 3's monitoring callbacks read it (Metric._direction).

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras
    python3 tests/reference/make_metric_direction_fixtures.py   # rewrites tests/reference/losses_metrics/metric_directions.json

EarlyStopping, ModelCheckpoint and ReduceLROnPlateau in mode="auto" (keras/src/callbacks/monitor_callback.py)
look the monitored name (without "val_") up among the model's compiled metrics and maximize it when the metric's
_direction is "up", minimize it when "down", and raise when the metric has none. This script records _direction
("up", "down" or null for none) of a fresh instance of every Keras metric class Tower has.

tests/reference/losses_metrics/metric_directions.json:

    keras_version
    directions   {class name: "up" | "down" | null}
"""
import json
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402

CLASSES = ["AUC", "Accuracy", "BinaryAccuracy", "BinaryIoU", "CategoricalAccuracy", "F1Score", "FBetaScore",
           "FalseNegatives", "FalsePositives", "IoU", "Mean", "MeanAbsoluteError", "MeanIoU", "MeanSquaredError",
           "OneHotIoU", "OneHotMeanIoU", "Precision", "PrecisionAtRecall", "R2Score", "Recall", "RecallAtPrecision",
           "RootMeanSquaredError", "SensitivityAtSpecificity", "SparseCategoricalAccuracy",
           "SparseTopKCategoricalAccuracy", "SpecificityAtSensitivity", "TopKCategoricalAccuracy", "TrueNegatives",
           "TruePositives"]

# The arguments of the classes that have required ones.
ARGUMENTS = {"IoU": {"num_classes": 2, "target_class_ids": [0]}, "MeanIoU": {"num_classes": 2},
             "OneHotIoU": {"num_classes": 2, "target_class_ids": [0]}, "OneHotMeanIoU": {"num_classes": 2},
             "PrecisionAtRecall": {"recall": 0.5}, "RecallAtPrecision": {"precision": 0.5},
             "SensitivityAtSpecificity": {"specificity": 0.5}, "SpecificityAtSensitivity": {"sensitivity": 0.5}}
# The means of losses' values.
CLASSES += ["CategoricalHinge", "CosineSimilarity", "Hinge", "KLDivergence", "LogCoshError",
            "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Poisson", "SquaredHinge"]


def main():
    directions = {name: getattr(getattr(keras.metrics, name)(**ARGUMENTS.get(name, {})), "_direction", None)
                  for name in CLASSES}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "losses_metrics", "metric_directions.json")
    with open(out, "w") as f:
        json.dump({"keras_version": keras.__version__, "directions": directions}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(out, directions)


if __name__ == "__main__":
    main()
