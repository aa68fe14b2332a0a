#!/usr/bin/env python3
"""What tf.data's padded_batch and bucket_by_sequence_length yield, for tests/data/padded_batch_test.cpp.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu
    python3 tests/reference/make_dataset_fixtures.py   # rewrites tests/reference/data/padded_batch.json

Each case feeds a list of elements with components of varying shapes to tf.data through from_generator with
shapes of unknown dimensions (None, as a Tower pipeline's elements are) and records every batch of one pass.

tests/reference/data/padded_batch.json:

    tensorflow_version
    cases[]   name
              op                  "padded_batch" | "bucket_by_sequence_length"
              elements            [[{shape, data, dtype} per component] per element]
              batch_size          (padded_batch)
              bucket_boundaries, bucket_batch_sizes, pad_to_bucket_boundary, no_padding
                                  (bucket_by_sequence_length; the element's length is dimension 0 of component 0)
              padded_shapes       null, or one shape per component (-1: the longest in the batch, tf's None)
              padding_values      null, or one number per component
              drop_remainder
              cardinality         tf.data's cardinality() of the result
              batches             [[{shape, data, dtype} per component] per batch], in tf.data's order
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def tensor_json(a):
    a = np.asarray(a)
    dtype = "int32" if a.dtype == np.int32 else "float32"
    return {"shape": list(a.shape), "data": a.astype(dtype).reshape(-1).tolist(), "dtype": dtype}


def sequence(start, length, dtype=np.int32):
    return np.arange(start, start + length).astype(dtype)


def matrix(start, rows, cols):
    return (np.arange(rows * cols).reshape(rows, cols) * 0.5 + start).astype(np.float32)


def make_dataset(elements):
    signature = tuple(tf.TensorSpec([None] * np.ndim(c), tf.as_dtype(np.asarray(c).dtype)) for c in elements[0])

    def gen():
        for e in elements:
            yield tuple(e)

    return tf.data.Dataset.from_generator(gen, output_signature=signature)


def tf_shapes(padded_shapes):
    if padded_shapes is None:
        return None
    return tuple([None if d == -1 else d for d in shape] for shape in padded_shapes)


def tf_values(padding_values, elements):
    if padding_values is None:
        return None
    return tuple(tf.constant(v, dtype=tf.as_dtype(np.asarray(c).dtype)) for v, c in zip(padding_values, elements[0]))


def padded_batch_case(name, elements, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False):
    ds = make_dataset(elements).padded_batch(batch_size, tf_shapes(padded_shapes), tf_values(padding_values, elements),
                                             drop_remainder=drop_remainder)
    return finish({"name": name, "op": "padded_batch", "batch_size": batch_size}, ds, elements, padded_shapes,
                  padding_values, drop_remainder)


def bucket_case(name, elements, boundaries, batch_sizes, padded_shapes=None, padding_values=None,
                pad_to_bucket_boundary=False, no_padding=False, drop_remainder=False):
    ds = make_dataset(elements).bucket_by_sequence_length(
        lambda *c: tf.shape(c[0])[0], boundaries, batch_sizes, padded_shapes=tf_shapes(padded_shapes),
        padding_values=tf_values(padding_values, elements), pad_to_bucket_boundary=pad_to_bucket_boundary,
        no_padding=no_padding, drop_remainder=drop_remainder)
    case = {"name": name, "op": "bucket_by_sequence_length", "bucket_boundaries": boundaries,
            "bucket_batch_sizes": batch_sizes, "pad_to_bucket_boundary": pad_to_bucket_boundary,
            "no_padding": no_padding}
    return finish(case, ds, elements, padded_shapes, padding_values, drop_remainder)


def finish(case, ds, elements, padded_shapes, padding_values, drop_remainder):
    case.update({
        "elements": [[tensor_json(c) for c in e] for e in elements],
        "padded_shapes": padded_shapes,
        "padding_values": padding_values,
        "drop_remainder": drop_remainder,
        "cardinality": int(ds.cardinality()),
        "batches": [[tensor_json(c.numpy()) for c in batch] for batch in ds],
    })
    return case


def sequences(lengths):
    return [(sequence(10 * i, n), np.int32(i)) for i, n in enumerate(lengths)]


def main():
    mixed = sequences([3, 1, 4, 2, 5, 2, 3])
    grids = [(matrix(i, r, c), np.int32(i)) for i, (r, c) in enumerate([(2, 3), (1, 1), (3, 2), (2, 2), (1, 4)])]
    # Lengths arrive in a scrambled bucket order so the order of the partial buckets at the end shows.
    bucketed = sequences([7, 1, 4, 6, 2, 9, 3, 4, 0, 5, 8, 1, 6, 12, 2, 3])
    cases = [
        padded_batch_case("padded_batch_mixed_lengths", mixed, 3),
        padded_batch_case("padded_batch_2d_components", grids, 2),
        padded_batch_case("padded_batch_given_shapes_and_values", grids, 3, padded_shapes=[[-1, 5], []],
                          padding_values=[-1.5, 7]),
        padded_batch_case("padded_batch_fixed_length", mixed, 4, padded_shapes=[[6], []], padding_values=[-1, 0]),
        padded_batch_case("padded_batch_drop_remainder", mixed, 2, drop_remainder=True),
        bucket_case("bucket_several_buckets", bucketed, [3, 5, 8], [2, 2, 3, 2]),
        bucket_case("bucket_pad_to_bucket_boundary", [e for e in bucketed if len(e[0]) < 8], [3, 5, 8], [2, 3, 2, 1],
                    pad_to_bucket_boundary=True),
        bucket_case("bucket_padded_shapes_and_values", bucketed, [4, 7], [3, 2, 2], padded_shapes=[[-1], []],
                    padding_values=[-3, 0]),
        bucket_case("bucket_drop_remainder", bucketed, [3, 5, 8], [2, 2, 3, 2], drop_remainder=True),
        bucket_case("bucket_no_padding", sequences([2, 1, 3, 2, 1, 1, 3, 2]), [2, 3], [2, 2, 2], no_padding=True),
        bucket_case("bucket_2d_components", [(matrix(i, r, 2), np.int32(i)) for i, r in enumerate([1, 4, 2, 5, 3, 1])],
                    [3], [2, 2]),
    ]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "padded_batch.json")
    with open(out, "w") as f:
        json.dump({"tensorflow_version": tf.__version__, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(out, [(c["name"], len(c["batches"])) for c in cases])


if __name__ == "__main__":
    main()
