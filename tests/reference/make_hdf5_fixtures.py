"""Writes the HDF5 files that tests/io/hdf5_file_test.cpp reads with Tower's own HDF5 reader.

    python3 -m pip install h5py numpy
    python3 tests/reference/make_hdf5_fixtures.py

The same tree is written twice, with h5py's default file format (libver="earliest": superblock 0, version 1
object headers, symbol-table groups) and with libver="latest" (superblock 3, version 2 object headers, link
messages, chunk indexes of layout version 4, dense storage for groups of more than 8 members):

  /types/<name>, /layouts/<name>   datasets holding np.arange(n).reshape(shape) * scale + offset in many types
                    and layouts, at most 8 to a group (the test recomputes the values from the attributes "shape",
                    "scale" and "offset")
  /strings          attributes: fixed-length (numpy bytes), variable-length (str), an empty list, a scalar
  /links/soft       a soft link to /types/f4; /links/external an external link
  /many/m00..m11    12 empty groups (dense link storage under libver="latest")
  /filtered/fletcher32   a chunked dataset with the fletcher32 filter, which Tower does not decode
"""
import os

import h5py
import numpy as np

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hdf5")

# name: (dtype, shape, scale, offset, dataset options)
NUMBERS = {
    "f4": ("<f4", (2, 3), 0.5, -1.0, {}),
    "f4_big_endian": (">f4", (2, 3), 0.25, 3.0, {}),
    "f8": ("<f8", (4,), 1e-3, 0.5, {}),
    "f2": ("<f2", (3, 2), 0.125, -0.5, {}),
    "i1": ("i1", (5,), -3.0, 7.0, {}),
    "u2_big_endian": (">u2", (2, 2), 1000.0, 1.0, {}),
    "i4": ("<i4", (3,), -100000.0, 0.0, {}),
    "u8": ("<u8", (2,), 1.0, 2**40, {}),
}
LAYOUTS = {
    "scalar": ("<f4", (), 1.0, 42.0, {}),
    "empty": ("<f4", (0, 3), 1.0, 0.0, {}),
    "compact": ("<f4", (2, 2), 2.0, 1.0, {"compact": True}),
    "chunked": ("<f4", (5, 7), 1.0, 0.0, {"chunks": (2, 3)}),
    "chunked_3d": ("<f4", (3, 4, 5), 0.5, 0.0, {"chunks": (2, 3, 2)}),
    "gzip": ("<f4", (64, 9), 0.25, -8.0, {"chunks": (10, 4), "compression": "gzip"}),
    "shuffle_gzip": ("<i4", (33,), 3.0, -50.0, {"chunks": (8,), "compression": "gzip", "shuffle": True}),
    "chunk_larger_than_data": ("<f8", (3, 2), 1.5, 0.0, {"chunks": (16, 16), "maxshape": (None, None)}),
}


def values(dtype, shape, scale, offset):
    n = int(np.prod(shape)) if shape else 1
    return (np.arange(n, dtype=np.float64).reshape(shape) * scale + offset).astype(dtype)


def write_numbers(numbers, table):
    for name, (dtype, shape, scale, offset, options) in table.items():
        data = values(dtype, shape, scale, offset)
        if options.get("compact"):
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            space = h5py.h5s.create_simple(data.shape)
            dsid = h5py.h5d.create(numbers.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
            dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
            ds = numbers[name]
        else:
            ds = numbers.create_dataset(name, data=data, **options)
        ds.attrs["shape"] = np.asarray(shape, dtype=np.int64)
        ds.attrs["scale"] = scale
        ds.attrs["offset"] = float(offset)


def write(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        for group, table in (("types", NUMBERS), ("layouts", LAYOUTS)):
            write_numbers(f.create_group(group), table)

        strings = f.create_group("strings")
        strings.attrs["fixed"] = np.asarray([b"conv1", b"bn", b"dense_1"])
        strings.attrs["vlen"] = ["stem", "héad", ""]
        strings.attrs["vlen_scalar"] = "tensorflow"
        strings.attrs["fixed_scalar"] = np.bytes_(b"2.15.0")
        strings.attrs["empty_list"] = np.asarray([], dtype=np.float64)
        strings.attrs["number"] = 3.5
        links = f.create_group("links")
        links["soft"] = h5py.SoftLink("/types/f4")
        links["dangling"] = h5py.SoftLink("/types/nothing")
        links["external"] = h5py.ExternalLink("other.h5", "/x")
        many = f.create_group("many")
        for i in range(12):
            many.create_group("m%02d" % i)
        filtered = f.create_group("filtered")
        filtered.create_dataset("fletcher32", data=np.ones((4, 4), np.float32), chunks=(2, 2), fletcher32=True)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    write(os.path.join(OUT_DIR, "earliest.h5"), "earliest")
    write(os.path.join(OUT_DIR, "latest.h5"), "latest")


if __name__ == "__main__":
    main()
