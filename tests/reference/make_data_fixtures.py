#!/usr/bin/env python3
"""Writes the small data-loader fixtures under tests/reference/data/ that tests/data/*_test.cpp read.

Every value follows a formula the C++ tests recompute, so the fixtures check the file formats, not numbers
copied from here. Needs numpy and Pillow (pip install numpy pillow). Output is deterministic (gzip mtime 0).

  idx/         MNIST-style IDX files: train-* plain (6 images), t10k-* gzipped (4 images), plus float32.idx
               (2x3, type 0x0D) and int16.idx (4 values, type 0x0B) for the type conversions.
               image i of a split: pixel (r, c) = (i * 31 + r * 7 + c * 3 + offset) % 256, offset 0 for train
               and 100 for t10k; label of image i = (3 * i + 1) % 10 (train), (3 * i + 2) % 10 (t10k).
  cifar10/     CIFAR-10 binary batches: data_batch_1..5.bin with 2 records each (records k = 0..9),
               test_batch.bin with 3 (k = 100..102). Record k: label k % 10, then channel-major
               pixel (ch, r, c) = (k * 13 + ch * 50 + r * 3 + c) % 256.
  images/      one folder per class for image_dataset_from_directory (see IMAGES below).
"""
import gzip
import struct
from pathlib import Path

import numpy as np
from PIL import Image

OUT = Path(__file__).resolve().parent / "data"


def idx_bytes(array: np.ndarray, type_code: int, big_endian_dtype: str) -> bytes:
    header = bytes([0, 0, type_code, array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(big_endian_dtype).tobytes()


def mnist_split(count: int, offset: int, label_shift: int):
    i, r, c = np.meshgrid(np.arange(count), np.arange(28), np.arange(28), indexing="ij")
    images = ((i * 31 + r * 7 + c * 3 + offset) % 256).astype(np.uint8)
    labels = ((3 * np.arange(count) + label_shift) % 10).astype(np.uint8)
    return images, labels


def write_idx():
    out = OUT / "idx"
    out.mkdir(parents=True, exist_ok=True)
    x, y = mnist_split(6, 0, 1)
    (out / "train-images-idx3-ubyte").write_bytes(idx_bytes(x, 0x08, "u1"))
    (out / "train-labels-idx1-ubyte").write_bytes(idx_bytes(y, 0x08, "u1"))
    x, y = mnist_split(4, 100, 2)
    (out / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_bytes(x, 0x08, "u1"), mtime=0))
    (out / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_bytes(y, 0x08, "u1"), mtime=0))
    floats = np.array([[0.5, -1.25, 3.0], [1e-3, 100.0, -0.0]], dtype=np.float32)
    (out / "float32.idx").write_bytes(idx_bytes(floats, 0x0D, ">f4"))
    shorts = np.array([-32768, -1, 0, 32767], dtype=np.int16)
    (out / "int16.idx").write_bytes(idx_bytes(shorts, 0x0B, ">i2"))


def cifar_record(k: int) -> bytes:
    ch, r, c = np.meshgrid(np.arange(3), np.arange(32), np.arange(32), indexing="ij")
    pixels = ((k * 13 + ch * 50 + r * 3 + c) % 256).astype(np.uint8)
    return bytes([k % 10]) + pixels.tobytes()


def write_cifar10():
    out = OUT / "cifar10"
    out.mkdir(parents=True, exist_ok=True)
    for b in range(5):
        (out / f"data_batch_{b + 1}.bin").write_bytes(b"".join(cifar_record(2 * b + j) for j in range(2)))
    (out / "test_batch.bin").write_bytes(b"".join(cifar_record(k) for k in range(100, 103)))


def gradient_rgb(h, w):
    r, c = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    return np.stack([r * 40, c * 30, 200 - r * 10 - c * 5], axis=-1).astype(np.uint8)


# path -> (array, PIL save arguments). Classes sort as birds, cats, dogs.
IMAGES = {
    "birds/b0.png": (gradient_rgb(6, 8), {}),  # exact RGB, 6x8
    "birds/b1.bmp": (np.stack([*np.meshgrid(np.arange(5) * 10, np.arange(5) * 10, indexing="ij"),
                               np.full((5, 5), 77)], axis=-1).astype(np.uint8), {}),  # pixel (10r, 10c, 77)
    "cats/c0.jpg": (np.full((8, 8, 3), (200, 40, 40), dtype=np.uint8), {"quality": 95}),  # solid, lossy
    "cats/c1.gif": (np.full((4, 4, 3), (0, 128, 255), dtype=np.uint8), {}),  # solid, palette
    "dogs/d0.png": ((np.add.outer(np.arange(6) * 20, np.arange(8) * 10)).astype(np.uint8), {}),  # grey 6x8
    "dogs/d1.png": (np.concatenate([np.full((4, 4, 3), (255, 0, 0)),
                                    np.repeat(np.arange(4)[:, None] * 64, 4, axis=1)[..., None]],
                                   axis=-1).astype(np.uint8), {}),  # red, alpha 64 * row
    "dogs/more/d2.png": (np.full((2, 2, 3), (10, 20, 30), dtype=np.uint8), {}),  # nested folder
}


def write_images():
    out = OUT / "images"
    for name, (array, save_args) in IMAGES.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(array).save(path, **save_args)
    (out / "dogs" / "notes.txt").write_text("not an image: image_dataset_from_directory skips it\n")


if __name__ == "__main__":
    write_idx()
    write_cifar10()
    write_images()
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"wrote {OUT} ({total} bytes)")
