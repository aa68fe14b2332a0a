#!/usr/bin/env python3
"""Keras weight files written by Keras itself, for Tower's Keras .weights.h5 / .h5 reader and writer.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras h5py       # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_keras_weights_fixtures.py  # rewrites tests/reference/keras_weights/*

Five models, each built in Keras here and in Tower by the C++ tests with the same layer names:

  convnet        Input 8x8x3 -> Conv2D "stem" (3x3, stride 2, no bias) -> BatchNormalization "stem_bn" ->
                 ReLU(6) -> DepthwiseConv2D "dw" (3x3) -> BatchNormalization "dw_bn" -> ReLU, then two
                 Conv2D 1x1 branches "branch_a" and "branch_b" -> Subtract (a - b, so swapping the branches'
                 weights changes the output) -> GlobalAveragePooling2D -> Dense "logits" (5).
                 Weights: seeded uniform, kernels and biases in [-0.5, 0.5], BatchNormalization gamma and
                 moving_variance in [0.5, 1.5], beta and moving_mean in [-0.2, 0.2].
  nested         Input 6x6x2 -> Conv2D "outer_conv" (1x1) -> the model "inner" (Conv2D "inner_conv" 3x3 ->
                 BatchNormalization "inner_bn") -> GlobalAveragePooling2D -> Dense "head" (3): a model inside
                 a model (Keras 3 files nest its groups under layers/functional/; the legacy layout keeps all
                 its weights in one group "inner"). Weights as convnet's.
  resnet         Input 6x6x3 "image" -> Conv2D "shortcut" (1x1, 4) created first, then the residual branch
                 Conv2D "conv_a" (1x1, 4) -> BatchNormalization "bn_a" -> ReLU "relu_a" -> Conv2D "conv_b" (1x1, 4)
                 -> BatchNormalization "bn_b", Add "add" ([branch, shortcut]) -> ReLU "relu" ->
                 GlobalAveragePooling2D "pool" -> Dense "logits" (3): a ResNet-style block. Keras orders
                 model.layers by depth from the outputs, so "shortcut" comes after "conv_b" although it was made
                 first; "shortcut" and "conv_a" have one shape, so a file read in creation order swaps them
                 silently. Weights as convnet's.
  branched       Input 5 "features" -> the model "block" (Input 5 "block_in" -> Dense "a1" (5) -> Dense "a2" (5),
                 Dense "b1" (5) on block_in, Add "block_add" ([b1, a2])) -> Dense "head" (2): a nested branched
                 model, whose layers Keras orders block_in, a1, b1, a2, block_add (not in creation order); the
                 legacy layout keeps the nested model's weights in one group in that order. Weights as
                 convnet's.
  recurrent      Input (6, 4) "sequence" -> SimpleRNN "rnn" (4, return_sequences) -> LSTM "lstm" (5,
                 return_sequences) -> GRU "gru" (3) -> Dense "head" (2): the recurrent layers, whose weights Keras 3
                 files keep in their cell's group (layers/lstm/cell/vars/<i>). Weights as convnet's.
  wrappers       Input (5, 3) "sequence" -> TimeDistributed "per_step" (Dense "step_dense" 4) -> Bidirectional "bi_lstm"
                 (LSTM 3, return_sequences, concat) -> Bidirectional "bi_gru" (GRU 2, sum) -> Dense "head" (2): the
                 wrappers, whose layers' weights Keras keeps in layers/time_distributed/layer and
                 layers/bidirectional/{forward,backward}_layer/cell. Weights as convnet's.
  mobilenet_v2   keras.applications.MobileNetV2(alpha=0.35, input_shape=(96, 96, 3), include_top=False,
                 pooling="avg", weights=None): Keras' own initialisers under keras.utils.set_random_seed, then
                 every BatchNormalization's statistics and affine parameters randomised as above, so the
                 layers do more than pass values through. include_top=False keeps each file near 2 MB.

Files in tests/reference/keras_weights/:

  convnet.weights.h5        model.save_weights (Keras 3 layout: layers/<class>[_k]/vars/<i>)
  convnet.h5                Keras' legacy writer (keras.src.legacy.saving.legacy_h5_format.
                            save_weights_to_hdf5_group) at the file's root: the layout of Keras 2
                            save_weights and of Keras' applications weight files
  convnet_model.h5          model.save("x.h5"): the same layout below a model_weights group
  convnet_keras2.h5         the Keras 2.x layout byte for byte as far as Tower reads it (fixed-length
                            byte-string attributes, weight names "stem/kernel:0", "dw/depthwise_kernel:0"),
                            written here with h5py since Keras 2 is not installed; this is how
                            mobilenet_v2_weights_tf_dim_ordering_tf_kernels_*.h5 are stored
  convnet_chunked.h5        convnet.h5 with layer_names split into layer_names0 and layer_names1, as Keras'
                            legacy writer splits lists too long for one HDF5 attribute (64 KB)
  convnet.json              {"layers": Keras' model.layers names, "inputs": {shape, data},
                             "outputs": {shape, data}} (inference mode; data flattened row-major, NHWC)
  nested.weights.h5, nested.h5, nested.json      as convnet's
  resnet.weights.h5, resnet.h5, resnet.json      as convnet's
  resnet_unnamed.weights.h5 resnet.weights.h5 without the vars groups' "name" attributes (Keras 3 before 3.6
                            wrote none; Keras loads either by its group names alone)
  branched.weights.h5, branched.h5, branched.json as convnet's ("inputs" and "outputs" are [batch, features]),
                            with "nested_layers": {"block": Keras' block.layers names, in order}
  recurrent.weights.h5, recurrent.h5, recurrent.json   as convnet's ("inputs" are [batch, steps, features])
  wrappers.weights.h5, wrappers.h5, wrappers.json      as recurrent's
  mobilenet_v2.weights.h5   model.save_weights
  mobilenet_v2.h5           Keras' legacy writer at the root
  mobilenet_v2.json         as convnet.json (two 96x96x3 images in [-1, 1] on a 1/128 grid; outputs are the
                            1280 pooled features of each image)

The C++ tests tests/io/keras_weights_test.cpp and tests/applications/mobilenet_v2_keras_test.cpp load every
file into Tower's models and compare Tower's outputs with Keras'.

Checking that Keras reads what Tower writes (needs a Tower build; run after the fixtures exist):

    mkdir -p /tmp/tower_keras_check
    TOWER_KERAS_CHECK_DIR=/tmp/tower_keras_check build/bin/tower_tests --gtest_filter='*WritesFilesForKeras*'
    python3 tests/reference/make_keras_weights_fixtures.py --check-tower /tmp/tower_keras_check

The tests give Tower's models their own random weights (Tower's random generator: every weight for convnet and
nested, for MobileNetV2 Tower's initialisers and randomised BatchNormalization parameters), save them with
Model::save_weights to <dir>/tower_<model>.weights.h5, and write Tower's outputs on the fixture inputs to
<dir>/tower_<model>.json. --check-tower builds each Keras model, calls model.load_weights on Tower's file, runs
it on the same inputs and compares with Tower's outputs (|keras - tower| <= 1e-5 + 1e-4 |keras|); it exits
non-zero on any mismatch and skips models whose files are not there.
"""
import argparse
import json
import os
import shutil
import sys
import zlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras.src.legacy.saving import legacy_h5_format  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_weights")
ATOL, RTOL = 1e-5, 1e-4


def seed_of(name, salt):
    return zlib.crc32(f"{name}/{salt}".encode())


def tensor_json(a):
    a = np.asarray(a, dtype=np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite value")
    # str(np.float32) is the shortest string that reads back as the same float32.
    return {"shape": list(a.shape), "data": [float(str(v)) for v in a.reshape(-1)]}


def tensor_from_json(d):
    return np.asarray(d["data"], dtype=np.float32).reshape(d["shape"])


def convnet():
    x = keras.Input((8, 8, 3), name="image")
    y = keras.layers.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="stem")(x)
    y = keras.layers.BatchNormalization(name="stem_bn")(y)
    y = keras.layers.ReLU(6.0, name="stem_relu")(y)
    y = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(y)
    y = keras.layers.BatchNormalization(name="dw_bn")(y)
    y = keras.layers.ReLU(name="dw_relu")(y)
    a = keras.layers.Conv2D(6, 1, name="branch_a")(y)
    b = keras.layers.Conv2D(6, 1, name="branch_b")(y)
    y = keras.layers.Subtract(name="subtract")([a, b])
    y = keras.layers.GlobalAveragePooling2D(name="pool")(y)
    y = keras.layers.Dense(5, name="logits")(y)
    return keras.Model(x, y, name="convnet")


def nested():
    x = keras.Input((6, 6, 2), name="inner_image")
    y = keras.layers.Conv2D(4, 3, padding="same", name="inner_conv")(x)
    y = keras.layers.BatchNormalization(name="inner_bn")(y)
    inner = keras.Model(x, y, name="inner")
    z_in = keras.Input((6, 6, 2), name="image")
    z = keras.layers.Conv2D(2, 1, name="outer_conv")(z_in)
    z = inner(z)
    z = keras.layers.GlobalAveragePooling2D(name="pool")(z)
    z = keras.layers.Dense(3, name="head")(z)
    return keras.Model(z_in, z, name="outer")


def resnet():
    x = keras.Input((6, 6, 3), name="image")
    shortcut = keras.layers.Conv2D(4, 1, name="shortcut")(x)
    y = keras.layers.Conv2D(4, 1, name="conv_a")(x)
    y = keras.layers.BatchNormalization(name="bn_a")(y)
    y = keras.layers.ReLU(name="relu_a")(y)
    y = keras.layers.Conv2D(4, 1, name="conv_b")(y)
    y = keras.layers.BatchNormalization(name="bn_b")(y)
    y = keras.layers.Add(name="add")([y, shortcut])
    y = keras.layers.ReLU(name="relu")(y)
    y = keras.layers.GlobalAveragePooling2D(name="pool")(y)
    y = keras.layers.Dense(3, name="logits")(y)
    return keras.Model(x, y, name="resnet")


def branched():
    x = keras.Input((5,), name="block_in")
    a = keras.layers.Dense(5, name="a1")(x)
    a = keras.layers.Dense(5, name="a2")(a)
    b = keras.layers.Dense(5, name="b1")(x)
    y = keras.layers.Add(name="block_add")([b, a])
    block = keras.Model(x, y, name="block")
    z_in = keras.Input((5,), name="features")
    z = keras.layers.Dense(2, name="head")(block(z_in))
    return keras.Model(z_in, z, name="branched")


def recurrent():
    x = keras.Input((6, 4), name="sequence")
    y = keras.layers.SimpleRNN(4, return_sequences=True, name="rnn")(x)
    y = keras.layers.LSTM(5, return_sequences=True, name="lstm")(y)
    y = keras.layers.GRU(3, name="gru")(y)
    y = keras.layers.Dense(2, name="head")(y)
    return keras.Model(x, y, name="recurrent")


def wrappers():
    x = keras.Input((5, 3), name="sequence")
    y = keras.layers.TimeDistributed(keras.layers.Dense(4, name="step_dense"), name="per_step")(x)
    y = keras.layers.Bidirectional(keras.layers.LSTM(3, return_sequences=True, name="lstm"), name="bi_lstm")(y)
    y = keras.layers.Bidirectional(keras.layers.GRU(2, name="gru"), merge_mode="sum", name="bi_gru")(y)
    y = keras.layers.Dense(2, name="head")(y)
    return keras.Model(x, y, name="wrappers")


def mobilenet_v2():
    return keras.applications.MobileNetV2(alpha=0.35, input_shape=(96, 96, 3), include_top=False, pooling="avg",
                                          weights=None)


def randomize(model, name, all_weights):
    """BatchNormalization's four vectors always; with all_weights, every other weight too."""
    rng = np.random.default_rng(seed_of(name, "weights"))
    for layer in model.layers:
        for v in layer.weights:
            short = v.path.split("/")[-1]
            if short in ("gamma", "moving_variance"):
                v.assign(rng.uniform(0.5, 1.5, size=v.shape).astype(np.float32))
            elif short in ("beta", "moving_mean"):
                v.assign(rng.uniform(-0.2, 0.2, size=v.shape).astype(np.float32))
            elif all_weights:
                v.assign(rng.uniform(-0.5, 0.5, size=v.shape).astype(np.float32))


def images(name, shape):
    rng = np.random.default_rng(seed_of(name, "inputs"))
    return (rng.integers(-128, 129, size=shape) / 128.0).astype(np.float32)


def save_legacy(model, path):
    with h5py.File(path, "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, model)


def save_keras2_style(model, path):
    # keras 2.x saving/legacy/hdf5_format.save_weights_to_hdf5_group: numpy byte-string arrays (fixed-length
    # HDF5 strings) and TF variable names with the layer prefix and ":0".
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = np.array([layer.name.encode("utf8") for layer in model.layers])
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.13.1"
        for layer in model.layers:
            g = f.create_group(layer.name)
            weights = layer.trainable_weights + layer.non_trainable_weights
            names = []
            for v in weights:
                short = v.path.split("/")[-1]
                if isinstance(layer, keras.layers.DepthwiseConv2D) and short == "kernel":
                    short = "depthwise_kernel"
                names.append(f"{layer.name}/{short}:0".encode("utf8"))
            g.attrs["weight_names"] = np.array(names) if names else np.array([])
            for n, v in zip(names, weights):
                g.create_dataset(n, data=np.asarray(v.numpy(), dtype=np.float32))


def split_layer_names(source, path):
    shutil.copyfile(source, path)
    with h5py.File(path, "r+") as f:
        names = f.attrs["layer_names"]
        del f.attrs["layer_names"]
        half = len(names) // 2
        f.attrs["layer_names0"] = names[:half]
        f.attrs["layer_names1"] = names[half:]


def write_json(path, model, x, y):
    doc = {"layers": [layer.name for layer in model.layers], "inputs": tensor_json(x), "outputs": tensor_json(y)}
    nested_layers = {layer.name: [inner.name for inner in layer.layers] for layer in model.layers
                     if isinstance(layer, keras.Model)}
    if nested_layers:
        doc["nested_layers"] = nested_layers
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def make_convnet():
    keras.utils.clear_session()
    keras.utils.set_random_seed(seed_of("convnet", "init"))
    model = convnet()
    randomize(model, "convnet", all_weights=True)
    x = images("convnet", (2, 8, 8, 3))
    y = model(x, training=False).numpy()
    model.save_weights(os.path.join(OUT_DIR, "convnet.weights.h5"))
    save_legacy(model, os.path.join(OUT_DIR, "convnet.h5"))
    split_layer_names(os.path.join(OUT_DIR, "convnet.h5"), os.path.join(OUT_DIR, "convnet_chunked.h5"))
    model.save(os.path.join(OUT_DIR, "convnet_model.h5"))
    save_keras2_style(model, os.path.join(OUT_DIR, "convnet_keras2.h5"))
    write_json(os.path.join(OUT_DIR, "convnet.json"), model, x, y)
    print(f"convnet: outputs {y.shape}, |y| max {np.abs(y).max():.4g}")


def make_nested():
    keras.utils.clear_session()
    keras.utils.set_random_seed(seed_of("nested", "init"))
    model = nested()
    randomize(model, "nested", all_weights=True)
    x = images("nested", (2, 6, 6, 2))
    y = model(x, training=False).numpy()
    model.save_weights(os.path.join(OUT_DIR, "nested.weights.h5"))
    save_legacy(model, os.path.join(OUT_DIR, "nested.h5"))
    write_json(os.path.join(OUT_DIR, "nested.json"), model, x, y)
    print(f"nested: outputs {y.shape}, |y| max {np.abs(y).max():.4g}")


def strip_name_attributes(source, path):
    shutil.copyfile(source, path)
    with h5py.File(path, "r+") as f:
        groups = []
        f.visititems(lambda name, obj: groups.append(obj) if isinstance(obj, h5py.Group) else None)
        for g in groups:
            if "name" in g.attrs:
                del g.attrs["name"]


def make_branched_models():
    for name, build, shape in (("resnet", resnet, (2, 6, 6, 3)), ("branched", branched, (3, 5)),
                               ("recurrent", recurrent, (3, 6, 4)), ("wrappers", wrappers, (3, 5, 3))):
        keras.utils.clear_session()
        keras.utils.set_random_seed(seed_of(name, "init"))
        model = build()
        randomize(model, name, all_weights=True)
        x = images(name, shape)
        y = model(x, training=False).numpy()
        model.save_weights(os.path.join(OUT_DIR, f"{name}.weights.h5"))
        save_legacy(model, os.path.join(OUT_DIR, f"{name}.h5"))
        write_json(os.path.join(OUT_DIR, f"{name}.json"), model, x, y)
        print(f"{name}: layers {[layer.name for layer in model.layers]}, outputs {y.shape}")
    strip_name_attributes(os.path.join(OUT_DIR, "resnet.weights.h5"), os.path.join(OUT_DIR, "resnet_unnamed.weights.h5"))


def make_mobilenet_v2():
    keras.utils.clear_session()
    keras.utils.set_random_seed(seed_of("mobilenet_v2", "init"))
    model = mobilenet_v2()
    randomize(model, "mobilenet_v2", all_weights=False)
    x = images("mobilenet_v2", (2, 96, 96, 3))
    y = model(x, training=False).numpy()
    model.save_weights(os.path.join(OUT_DIR, "mobilenet_v2.weights.h5"))
    save_legacy(model, os.path.join(OUT_DIR, "mobilenet_v2.h5"))
    write_json(os.path.join(OUT_DIR, "mobilenet_v2.json"), model, x, y)
    print(f"mobilenet_v2: {model.count_params()} parameters, outputs {y.shape}, mean {y.mean():.4g}, "
          f"std {y.std():.4g}, zeros {np.mean(y == 0):.3f}, at 6 {np.mean(y == 6):.3f}")


def check_tower(directory):
    ok = True
    checked = 0
    for name, build in (("convnet", convnet), ("nested", nested), ("resnet", resnet), ("branched", branched),
                        ("recurrent", recurrent), ("wrappers", wrappers), ("mobilenet_v2", mobilenet_v2)):
        weights = os.path.join(directory, f"tower_{name}.weights.h5")
        outputs = os.path.join(directory, f"tower_{name}.json")
        if not (os.path.exists(weights) and os.path.exists(outputs)):
            print(f"{name}: no {weights} and {outputs}, skipped")
            continue
        keras.utils.clear_session()
        model = build()
        model.load_weights(weights)
        with open(outputs) as f:
            doc = json.load(f)
        x, want = tensor_from_json(doc["inputs"]), tensor_from_json(doc["outputs"])
        got = model(x, training=False).numpy()
        err = np.abs(got - want)
        bad = int(np.sum(~(err <= ATOL + RTOL * np.abs(got))))
        checked += 1
        print(f"{name}: Keras loaded Tower's {weights}; {bad} of {got.size} outputs differ from Tower's "
              f"(largest |difference| {err.max():.3g}, largest |output| {np.abs(got).max():.3g})")
        ok = ok and bad == 0
    if checked == 0:
        print("nothing to check")
        return 1
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check-tower", metavar="DIR", help="check Tower-written files in DIR instead")
    args = parser.parse_args()
    if args.check_tower:
        return check_tower(args.check_tower)
    os.makedirs(OUT_DIR, exist_ok=True)
    make_convnet()
    make_nested()
    make_branched_models()
    make_mobilenet_v2()
    return 0


if __name__ == "__main__":
    sys.exit(main())
