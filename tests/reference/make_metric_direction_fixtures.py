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

CLASSES = ["AUC", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "Mean", "MeanAbsoluteError",
           "MeanSquaredError", "Precision", "Recall", "SparseCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
           "TopKCategoricalAccuracy"]
# The means of losses' values.
CLASSES += ["CategoricalHinge", "CosineSimilarity", "Hinge", "KLDivergence", "LogCoshError",
            "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "Poisson", "SquaredHinge"]


def main():
    directions = {name: getattr(getattr(keras.metrics, name)(), "_direction", None) for name in CLASSES}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "losses_metrics", "metric_directions.json")
    with open(out, "w") as f:
        json.dump({"keras_version": keras.__version__, "directions": directions}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(out, directions)


if __name__ == "__main__":
    main()
