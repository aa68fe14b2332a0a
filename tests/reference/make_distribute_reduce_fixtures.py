#!/usr/bin/env python3
"""tf.distribute's Strategy.reduce over per-replica values, for Tower's distribute::reduce.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras                  # TensorFlow 2
    python3 tests/reference/make_distribute_reduce_fixtures.py    # rewrites tests/reference/distribute/reduce.json

The host CPU is split into two logical devices and a MirroredStrategy(["/cpu:0", "/cpu:1"]) runs, on each
global batch of CASES, fn(x) = tf.reduce_sum(x, axis=0) per replica (TensorFlow splits a batch into consecutive
chunks; a replica without rows sums an empty batch, zeros), then reduces the per-replica values:

    mean    strategy.reduce("MEAN", values, axis=None)  (sum over the replicas / num_replicas_in_sync)
    sum     strategy.reduce("SUM", values, axis=None)
    mean_axis0   strategy.reduce("MEAN", x per replica, axis=0): the mean over every replica's rows (Tower has no
                 axis; recorded for the documentation's comparison)

tests/reference/distribute/reduce.json: {"tensorflow_version", "replicas": 2, "cases": [{"name", "x": {"shape",
"data"}, "values": [{"shape", "data"}, ...] (the replicas with rows, in order), "mean", "sum", "mean_axis0"}]}.
The C++ test is CustomLoop.ReduceMeanDividesByTheReplicasInSync (tests/distribute/custom_loop_test.cpp).
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distribute", "reduce.json")

# name -> global batch [rows, 2]: a full batch, and a short one that leaves the second replica without rows.
CASES = {
    "full_batch": [[1.0, 2.0], [3.0, 6.0], [0.5, -1.0], [2.0, 4.0]],
    "one_row": [[7.0, -3.0]],
}


def tensor_json(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def main():
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    cases = []
    for name, rows in CASES.items():
        x = np.asarray(rows, dtype=np.float32)
        data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(x).batch(len(rows)))
        batch = next(iter(data))
        sums, parts = strategy.run(lambda b: (tf.reduce_sum(b, axis=0), tf.identity(b)), args=(batch,))
        local = strategy.experimental_local_results(sums)
        with_rows = [v for v, p in zip(local, strategy.experimental_local_results(parts)) if p.shape[0] > 0]
        cases.append({
            "name": name,
            "x": tensor_json(x),
            "values": [tensor_json(v) for v in with_rows],
            "mean": tensor_json(strategy.reduce("MEAN", sums, axis=None)),
            "sum": tensor_json(strategy.reduce("SUM", sums, axis=None)),
            "mean_axis0": tensor_json(strategy.reduce("MEAN", parts, axis=0)),
        })
    doc = {"tensorflow_version": tf.__version__, "replicas": strategy.num_replicas_in_sync, "cases": cases}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
