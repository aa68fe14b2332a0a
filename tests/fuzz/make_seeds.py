#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets: tests/fuzz/corpus/<target>/seed-*.

Small valid files of every kind each reader accepts, so fuzzing starts from deep inside the formats:

  idx            IDX arrays of every value type (uint8 images and labels, int8, int16, int32, float32,
                 float64), plain and gzip-compressed
  cifar10        CIFAR-10 binary batches of one and two records
  image          PNG (gray, gray+alpha, RGB, RGBA, palette, 16-bit, interlaced), BMP (24-bit, 32-bit, 8-bit
                 palette), the JPEG and GIF of tests/reference/data/images, progressive, grayscale and subsampled
                 JPEGs (with Pillow, when installed), and PGM/PPM, TGA and HDR files, which decode_image refuses
  experiment     the example experiments (examples/experiments) and a few shorter ones using YAML anchors,
                 tags and flow style
  keras_weights  HDF5 files laid out as Keras writes them, Keras 3 (.weights.h5) and legacy (.h5), for the
                 fuzz target's model (tests/fuzz/fuzz_models.h); needs h5py and numpy
  parameter_server  a parameter server's requests (distribute/detail/parameter_server.proto, encoded by hand)
                 for shard 0 of 2 of that model: an Initialize, Pulls, Pushes of the current fit and of an ended
                 one, and a cluster token

The Tower weights files (corpus/weights_file) and one Tower-written .weights.h5 come from Tower itself:
build the target fuzz_make_tower_seeds and run it with the corpus folder (tests/fuzz/README.md).

Only the Python standard library is needed, except for the HDF5 seeds (h5py and numpy) and three JPEG seeds
(Pillow), each skipped with a note when missing. Run from anywhere: python3 tests/fuzz/make_seeds.py [TARGET...]
(default: every target).
"""
import gzip
import pathlib
import shutil
import struct
import sys
import zlib

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"


def write(target, name, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ("seed-" + name)).write_bytes(data)


def pattern(n, offset=0):
    return bytes((i * 37 + offset) % 256 for i in range(n))


# ---- IDX ---------------------------------------------------------------------------------------------------------

def idx(type_code, dims, payload):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


def idx_seeds():
    write("idx", "images-idx3-ubyte", idx(0x08, [2, 4, 3], pattern(24)))
    write("idx", "labels-idx1-ubyte", idx(0x08, [5], bytes([0, 1, 9, 3, 7])))
    write("idx", "int8.idx", idx(0x09, [4], struct.pack(">4b", -128, -1, 0, 127)))
    write("idx", "int16.idx", idx(0x0B, [2, 2], struct.pack(">4h", -32768, -1, 0, 32767)))
    write("idx", "int32.idx", idx(0x0C, [3], struct.pack(">3i", -(2 ** 31), 0, 2 ** 31 - 1)))
    write("idx", "float32.idx", idx(0x0D, [2, 3], struct.pack(">6f", 0.5, -1.25, 3.0, 1e-3, 100.0, -0.0)))
    write("idx", "float64.idx", idx(0x0E, [1, 1, 2], struct.pack(">2d", 1e300, -2.5)))
    write("idx", "empty-idx2", idx(0x08, [0, 7], b""))
    write("idx", "images-idx3-ubyte.gz", gzip.compress(idx(0x08, [3, 2, 2], pattern(12, 5)), mtime=0))


# ---- CIFAR-10 ----------------------------------------------------------------------------------------------------

def cifar10_seeds():
    record = lambda label, offset: bytes([label]) + pattern(3072, offset)
    write("cifar10", "one-record.bin", record(3, 0))
    write("cifar10", "two-records.bin", record(0, 1) + record(9, 2))


# ---- images ------------------------------------------------------------------------------------------------------

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def png(width, height, color_type, bit_depth, rows, palette=None, interlace=0):
    """rows: the scanlines, unfiltered. Interlaced images (8-bit only here) are split into the Adam7 passes."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, interlace)
    if interlace:
        pixel = len(rows[0]) // width
        passes = []
        for x0, y0, dx, dy in ADAM7:
            passes += [b"".join(rows[y][x * pixel:(x + 1) * pixel] for x in range(x0, width, dx))
                       for y in range(y0, height, dy) if x0 < width]
        rows = passes
    raw = b"".join(b"\0" + row for row in rows)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    if palette:
        out += chunk(b"PLTE", palette)
    return out + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def bmp(width, height, bits, pixels, palette=b""):
    row_bytes = (width * bits // 8 + 3) // 4 * 4
    rows = b""
    for y in range(height):
        row = pixels[y * width * bits // 8:(y + 1) * width * bits // 8]
        rows += row + b"\0" * (row_bytes - len(row))
    offset = 14 + 40 + len(palette)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, bits, 0, len(rows), 2835, 2835,
                       len(palette) // 4, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(rows), 0, 0, offset) + info + palette + rows


def tga(width, height, pixels, rle=False):
    header = struct.pack("<BBBHHBHHHHBB", 0, 0, 10 if rle else 2, 0, 0, 0, 0, 0, width, height, 24, 0)
    if not rle:
        return header + pixels
    body = b""
    for i in range(0, len(pixels), 3 * 2):  # packets of two pixels: one run, one raw
        px = pixels[i:i + 6]
        if len(px) == 6 and px[:3] == px[3:]:
            body += bytes([0x81]) + px[:3]
        else:
            body += bytes([len(px) // 3 - 1]) + px
    return header + body


def hdr(width, height):
    text = b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n" % (height, width)
    return text + bytes((i * 11) % 200 + 1 if i % 4 != 3 else 128 for i in range(width * height * 4))


def image_seeds():
    w, h = 3, 2
    write("image", "gray.png", png(w, h, 0, 8, [pattern(w, y) for y in range(h)]))
    write("image", "gray-alpha.png", png(w, h, 4, 8, [pattern(2 * w, y) for y in range(h)]))
    write("image", "rgb.png", png(w, h, 2, 8, [pattern(3 * w, y) for y in range(h)]))
    write("image", "rgba.png", png(w, h, 6, 8, [pattern(4 * w, y) for y in range(h)]))
    write("image", "rgb16.png", png(w, h, 2, 16, [pattern(6 * w, y) for y in range(h)]))
    write("image", "palette.png", png(4, 2, 3, 2, [bytes([0b00011011]), bytes([0b11100100])],
                                      palette=bytes([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255])))
    write("image", "gray1.png", png(9, 2, 0, 1, [bytes([0b10101010, 0b10000000])] * 2))
    write("image", "interlaced.png", png(4, 4, 2, 8, [pattern(12, y) for y in range(4)], interlace=1))
    write("image", "rgb24.bmp", bmp(w, h, 24, pattern(3 * w * h)))
    write("image", "rgba32.bmp", bmp(w, h, 32, pattern(4 * w * h)))
    write("image", "palette8.bmp", bmp(w, h, 8, bytes([0, 1, 2, 2, 1, 0]),
                                       palette=bytes([255, 0, 0, 0, 0, 255, 0, 0, 0, 0, 255, 0])))
    write("image", "gray.pgm", b"P5\n# a comment\n3 2\n255\n" + pattern(w * h))
    write("image", "rgb.ppm", b"P6\n3 2\n255\n" + pattern(3 * w * h))
    write("image", "rgb.tga", tga(w, h, pattern(3 * w * h)))
    write("image", "rle.tga", tga(4, 1, bytes([9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6]), rle=True))
    write("image", "flat.hdr", hdr(w, h))
    try:  # JPEG variants stb_image decodes by other paths: progressive, grayscale, 4:2:0 subsampled
        import io
        from PIL import Image
        picture = Image.frombytes("RGB", (16, 12), pattern(16 * 12 * 3))
        for name, image, options in [("progressive.jpg", picture, {"progressive": True}),
                                     ("gray.jpg", picture.convert("L"), {}),
                                     ("subsampled.jpg", picture, {"subsampling": 2, "optimize": True})]:
            out = io.BytesIO()
            image.save(out, "JPEG", quality=80, **options)
            write("image", name, out.getvalue())
    except ImportError:
        print("Pillow missing: no extra JPEG seeds written", file=sys.stderr)
    images = ROOT / "tests" / "reference" / "data" / "images"
    for name, source in [("photo.jpg", images / "cats" / "c0.jpg"), ("anim.gif", images / "cats" / "c1.gif")]:
        write("image", name, source.read_bytes())


# ---- experiments -------------------------------------------------------------------------------------------------

SMALL_EXPERIMENTS = {
    "anchors.yaml": """\
name: anchors
seed: 3
data:
  source: fashion_mnist
  train: {split: train, take: 64}
  test: {split: test, take: 32}
model:
  layers:
    - &dense {type: Dense, units: 8, activation: relu}
    - *dense
    - {type: Dense, units: 10, activation: softmax}
compile:
  optimizer: {type: Adam, learning_rate: 1.0e-3}
  loss: sparse_categorical_crossentropy
  metrics: [sparse_categorical_accuracy]
fit: {epochs: 1, batch_size_per_replica: 16}
""",
    "tags.yaml": """\
%YAML 1.2
---
name: !!str tags
seed: !!int 0x10
data: {source: fashion_mnist, train: {split: train}}
model:
  name: "quoted 'name'"
  layers: [{type: Flatten}, {type: Dense, units: !!int 10}]
compile: {optimizer: sgd, loss: sparse_categorical_crossentropy}
fit: {epochs: !!int "2", batch_size_per_replica: 8}
callbacks: [{type: ReduceLROnPlateau, factor: .5, min_lr: -.inf}]
...
""",
    "block-scalars.yaml": """\
# comments, block scalars and nulls
name: >-
  folded
  name
description: |
  literal text
seed: ~
data:
  source: fashion_mnist
  train:
    split: train
  validation:
    fraction: 0.25
model:
  layers:
  - type: Conv2D
    filters: 4
    kernel_size: [3, 3]
    strides: 2
    padding: same
  - type: GlobalAveragePooling2D
  - type: Dense
    units: 10
compile:
  optimizer:
    type: RMSprop
    learning_rate: {type: ExponentialDecay, initial_learning_rate: 0.01, decay_steps: 10, decay_rate: 0.5}
  loss: sparse_categorical_crossentropy
callbacks:
  - {type: EarlyStopping, monitor: val_loss, patience: 1}
  - {type: ModelCheckpoint}
""",
    "empty.yaml": "",
    "mobilenet.yaml": """\
name: mnv2
data: {source: fashion_mnist, train: {split: train}}
model: {application: MobileNetV2, alpha: 0.35, weights: null}
compile: {optimizer: adam, loss: sparse_categorical_crossentropy}
strategy: {type: mirrored, devices: [cpu, cpu]}
""",
}


def experiment_seeds():
    for source in sorted((ROOT / "examples" / "experiments").glob("*.yaml")):
        write("experiment", source.name, source.read_bytes())
    for name, text in SMALL_EXPERIMENTS.items():
        write("experiment", name, text.encode())


# ---- Keras weight files (HDF5) -----------------------------------------------------------------------------------

# The fuzz target's model (tests/fuzz/fuzz_models.h), layer by layer: Keras 3 group, layer name, weights.
KERAS_LAYERS = [
    ("conv2d", "conv", [("kernel", (3, 3, 2, 3)), ("bias", (3,))]),
    ("batch_normalization", "bn", [("gamma", (3,)), ("beta", (3,)), ("moving_mean", (3,)), ("moving_variance", (3,))]),
    ("dense", "dense", [("kernel", (3, 2)), ("bias", (2,))]),
]


def keras_weights_seeds():
    try:
        import h5py
        import numpy as np
    except ImportError:
        print("h5py or numpy missing: no keras_weights seeds written", file=sys.stderr)
        return
    folder = CORPUS / "keras_weights"
    folder.mkdir(parents=True, exist_ok=True)

    def values(shape, k):
        return (np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 0.1 + k).astype(np.float32)

    # Keras 3: layers/<group>/vars/<i>, the vars group named by attribute "name"; the root's vars too. Also in
    # the newer file format (libver="latest": superblock 3, version 2 object headers, link messages).
    for seed, libver in (("seed-keras3.weights.h5", "earliest"), ("seed-keras3-latest.weights.h5", "latest")):
        with h5py.File(folder / seed, "w", libver=libver) as f:
            f.create_group("vars").attrs["name"] = "fuzz"
            for group, name, weights in KERAS_LAYERS:
                g = f.create_group(f"layers/{group}/vars")
                g.attrs["name"] = name
                for i, (_, shape) in enumerate(weights):
                    g.create_dataset(str(i), data=values(shape, i))
            f.create_group("layers/global_average_pooling2d/vars").attrs["name"] = "pool"
    # The HDF5 format fixtures of tests/io/hdf5_file_test.cpp: every number type, layout and filter Tower reads.
    for name in ("earliest", "latest"):
        shutil.copyfile(ROOT / "tests" / "reference" / "hdf5" / f"{name}.h5", folder / f"seed-format-{name}.h5")
    # Legacy (Keras 2 save_weights): root attribute layer_names, per layer weight_names and nested datasets;
    # float64 data and a chunked, deflated dataset, as other writers produce.
    with h5py.File(folder / "seed-legacy.h5", "w", libver="earliest") as f:
        f.attrs["layer_names"] = np.array([b"image", b"conv", b"bn", b"pool", b"dense"])
        f.attrs["backend"] = b"tensorflow"
        f.create_group("image").attrs["weight_names"] = np.array([], dtype="S1")
        f.create_group("pool").attrs["weight_names"] = np.array([], dtype="S1")
        for _, name, weights in KERAS_LAYERS:
            g = f.create_group(name)
            g.attrs["weight_names"] = np.array([f"{name}/{w}:0".encode() for w, _ in weights])
            for i, (w, shape) in enumerate(weights):
                if name == "dense" and w == "kernel":
                    g.create_dataset(f"{name}/{w}:0", data=values(shape, i), chunks=(1, 2), compression="gzip")
                else:
                    g.create_dataset(f"{name}/{w}:0", data=values(shape, i).astype(np.float64))
    # A whole-model file (model.save("x.h5")): the weights below model_weights, names as variable-length str.
    with h5py.File(folder / "seed-model.h5", "w", libver="earliest") as f:
        mw = f.create_group("model_weights")
        mw.attrs["layer_names"] = np.array(["conv", "bn", "dense"], dtype=h5py.string_dtype())
        for _, name, weights in KERAS_LAYERS:
            g = mw.create_group(name)
            g.attrs["weight_names"] = np.array([f"{w}:0" for w, _ in weights], dtype=h5py.string_dtype())
            for i, (w, shape) in enumerate(weights):
                g.create_dataset(f"{w}:0", data=values(shape, i).astype(np.int32 if w == "bias" else np.float32))


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    """A protobuf field: an int as a varint, bytes as length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def tensor(index, floats):
    return field(1, index) + field(2, struct.pack(f"<{len(floats)}f", *floats))


def parameter_server_seeds():
    # Shard 0 of 2 of fuzz::keras_model(): conv/kernel (3x3x2x3), bn/gamma, bn/moving_mean (not trainable),
    # dense/kernel (3x2): the model's weights 0, 2, 4 and 6. The target's current fit is 1; fit 7 has ended.
    shard = {0: 54, 2: 3, 4: 3, 6: 6}
    values = b"".join(field(1, tensor(k, [0.25] * n)) for k, n in shard.items())
    write("parameter_server", "initialize", bytes([0]) + values + field(2, 1))
    write("parameter_server", "pull", bytes([1]) + field(1, 1))
    write("parameter_server", "pull-ended-fit", bytes([1]) + field(1, 7))
    gradients = b"".join(field(1, tensor(k, [0.5] * n)) for k, n in shard.items() if k != 4)
    push = gradients + field(2, tensor(4, [1.0, 2.0, 3.0])) + field(3, 1)
    write("parameter_server", "push", bytes([2]) + push)
    write("parameter_server", "push-then-pull", bytes([3]) + push)
    write("parameter_server", "push-other-shard", bytes([2]) + field(1, tensor(1, [1.0] * 3)) + field(3, 1))
    write("parameter_server", "push-ended-fit", bytes([2]) + gradients + field(3, 7))
    write("parameter_server", "token", bytes([4]) + b"cluster-token")


SEEDS = {"idx": idx_seeds, "cifar10": cifar10_seeds, "image": image_seeds, "experiment": experiment_seeds,
         "keras_weights": keras_weights_seeds, "parameter_server": parameter_server_seeds}


def main():
    for target in sys.argv[1:] or SEEDS:
        if target not in SEEDS:
            sys.exit(f"unknown target {target!r} (targets: {', '.join(SEEDS)})")
        SEEDS[target]()
    total = sum(p.stat().st_size for p in CORPUS.rglob("seed-*"))
    print(f"seeds written under {CORPUS} ({total} bytes)")


if __name__ == "__main__":
    main()
