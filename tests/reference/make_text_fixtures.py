#!/usr/bin/env python3
"""Writes tests/reference/data/text/text_fixtures.json, which tests/data/text_vectorization_test.cpp,
text_lines_test.cpp and timeseries_test.cpp read.

Inputs, committed beside the output in tests/reference/data/text/:
  corpus.txt          a small corpus with non-ASCII letters (accents, Greek, CJK, emoji), Keras' punctuation, tabs and
                      Unicode spaces, and tokens tied in count.
  lines_*.txt         files with "\\r\\n", lone "\\r", empty lines and no final line break.

  text_vectorization  per case: Keras' TextVectorization built from `kwargs`, its get_config() (which the C++ test
                      builds its layer from), adapted on the corpus' lines when `adapt`, its vocabulary, and its output
                      on `inputs` (int mode as int32, the other modes as float32).
  text_lines          tf.data.TextLineDataset's lines of each file list.
  timeseries          keras.utils.timeseries_dataset_from_array(data = arange(20) as [20] or [10, 2], ...) unbatched
                      and unshuffled: every window and target.

Needs keras 3 and tensorflow (pip install keras tensorflow). Output is deterministic.
"""
import json
import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = Path(__file__).resolve().parent / "data" / "text"

INPUTS = [
    "The cat sat on the log, said the bird.",
    "ÉCOLE Straße σοφός 😀 ok unknownword",
    "",
    "!!! ... ???",
    "zeta yak xray wolf the cat",
    "a\u00a0b tabs\there",
]

CASES = [
    ("default", dict(), True),
    ("max_tokens_sequence_length", dict(max_tokens=8, output_sequence_length=5), True),
    ("lower_character", dict(standardize="lower", split="character"), True),
    ("no_standardize_bigrams", dict(standardize=None, ngrams=2), True),
    ("strip_punctuation_only", dict(standardize="strip_punctuation", output_sequence_length=4), True),
    ("ngram_list_multi_hot", dict(ngrams=(1, 3), output_mode="multi_hot"), True),
    ("count_padded", dict(output_mode="count", max_tokens=12, pad_to_max_tokens=True), True),
    ("multi_hot_max_tokens", dict(output_mode="multi_hot", max_tokens=6), True),
    ("tf_idf", dict(output_mode="tf_idf"), True),
    ("tf_idf_padded", dict(output_mode="tf_idf", max_tokens=9, pad_to_max_tokens=True), True),
    ("no_split_int", dict(split=None, standardize="lower"), True),
    ("vocabulary_int", dict(vocabulary=["the", "cat", "sat", "bird"], output_sequence_length=3), False),
    ("vocabulary_with_special_tokens", dict(vocabulary=["", "[UNK]", "cat", "the"]), False),
    ("vocabulary_tf_idf", dict(output_mode="tf_idf", vocabulary=["the", "cat", "ok"], idf_weights=[0.5, 1.5, 2.0]),
     False),
    ("vocabulary_count_with_oov", dict(output_mode="count", vocabulary=["[UNK]", "the", "cat"]), False),
]


def jsonable(x):
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


def text_vectorization_cases(corpus):
    cases = []
    for name, kwargs, adapt in CASES:
        layer = keras.layers.TextVectorization(**kwargs)
        config = jsonable(layer.get_config())
        if adapt:
            layer.adapt(corpus)
        out = np.asarray(layer(INPUTS))
        int_mode = layer.get_config()["output_mode"] == "int"
        cases.append({
            "name": name,
            "config": config,
            "adapt": adapt,
            "vocabulary": [str(t) for t in layer.get_vocabulary()],
            "vocabulary_size": int(layer.vocabulary_size()),
            "inputs": INPUTS,
            "output": {
                "shape": list(out.shape),
                "dtype": "int32" if int_mode else "float32",
                "data": [int(v) if int_mode else float(v) for v in out.reshape(-1)],
            },
        })
    return cases


def text_lines_cases():
    lists = [["lines_crlf.txt"], ["lines_trailing.txt", "lines_crlf.txt", "lines_empty.txt"], ["lines_empty.txt"]]
    cases = []
    for files in lists:
        ds = tf.data.TextLineDataset([str(HERE / f) for f in files])
        cases.append({"files": files, "lines": [b.decode("utf-8") for b in ds.as_numpy_iterator()]})
    return cases


TIMESERIES = [
    ("basic", dict(sequence_length=5), [20], False),
    ("stride_rate", dict(sequence_length=3, sequence_stride=4, sampling_rate=2), [20], True),
    ("start_end", dict(sequence_length=4, sequence_stride=3, start_index=2, end_index=17), [20], True),
    ("rows", dict(sequence_length=3, sequence_stride=2), [10, 2], True),
]


def timeseries_cases():
    cases = []
    for name, kwargs, shape, with_targets in TIMESERIES:
        data = np.arange(20, dtype=np.float32).reshape(shape)
        targets = (100 + np.arange(shape[0])).astype(np.float32) if with_targets else None
        ds = keras.utils.timeseries_dataset_from_array(data, targets, batch_size=None, **kwargs)
        windows, window_targets = [], []
        for element in ds.as_numpy_iterator():
            if with_targets:
                windows.append(element[0].reshape(-1).tolist())
                window_targets.append(float(element[1]))
            else:
                windows.append(element.reshape(-1).tolist())
        cases.append({"name": name, "kwargs": kwargs, "data_shape": shape, "targets": with_targets,
                      "windows": windows, "window_targets": window_targets})
    return cases


def main():
    corpus = (HERE / "corpus.txt").read_text(encoding="utf-8").splitlines()
    doc = {
        "corpus": "corpus.txt",
        "text_vectorization": text_vectorization_cases(corpus),
        "text_lines": text_lines_cases(),
        "timeseries": timeseries_cases(),
    }
    (HERE / "text_fixtures.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
