#pragma once
// Reads HDF5 files, as Keras and h5py write them, with a parser of Tower's own: no libhdf5 code runs on the
// bytes of a file being read, so a damaged or hostile file gives an exception, never a crash, a hang or an
// allocation its size does not justify (fuzzed: tests/fuzz, target keras_weights). Writing is io::Hdf5Writer.
//
// What is read (HDF5 file format specification 3.0):
//   superblock versions 0 to 3, at offset 0 or after a user block of 512, 1024, ... bytes;
//   object headers version 1 and 2, with continuation blocks;
//   groups as symbol tables (version 1 B-trees, local heaps; what libhdf5 writes by default, and so h5py and
//     Keras) and as link messages in the object header (the compact groups of libver="latest"); hard and soft
//     links;
//   attributes stored in the object header (message versions 1 to 3);
//   datasets stored compact, contiguous or chunked (version 1 B-tree index) with the deflate (gzip) and
//     shuffle filters; any little- or big-endian integer of 1, 2, 4 or 8 bytes and IEEE float of 2, 4
//     or 8 bytes, converted to float32;
//   strings fixed length (null- or space-padded) or variable length (global heap).
// What is not read, with an error that says so: groups and attributes in dense storage (fractal heaps: more
// than 8 links or large attributes under libver="latest"), chunk indexes of layout version 4, other filters
// (fletcher32, szip, ...), shared or committed datatypes, external links. The checksums of version 2 metadata
// are not verified (every field is still checked against the file before it is used).
//
// Every failure throws std::runtime_error naming the file, the object's path inside it and what is wrong,
// e.g. "HDF5 file 'm.h5': no group '/layers/dense'" or "HDF5 file 'm.h5': dataset '/layers/dense/vars/0': data:
// 0x1f00 + 4096 bytes is past the end of the file (3000 bytes)".
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/core/tensor.h"

namespace tower::io {

namespace detail {
class Hdf5Image;
}  // namespace detail

class Hdf5Group {
 public:
  // `name` arguments below may be paths relative to this group ("layers/conv2d/vars").

  // The names of this group's members, sorted.
  std::vector<std::string> children() const;
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  // Throws when there is no group of that name.
  Hdf5Group group(const std::string& name) const;

  bool has_attribute(const std::string& name) const;
  // A string attribute holding one string (a scalar or a one-element array), fixed or variable length.
  std::string string_attribute(const std::string& name) const;
  // A string attribute holding a list: a 1-d array (or a scalar) of fixed- or variable-length strings, as h5py
  // writes numpy arrays of bytes or str. An empty array of any type (h5py writes an empty list as float64)
  // reads as an empty list. Throws for other types.
  std::vector<std::string> string_list_attribute(const std::string& name) const;

  Shape dataset_shape(const std::string& name) const;
  // Any integer or floating-point dataset, converted to float32. Throws for other types.
  Tensor read_dataset(const std::string& name) const;

  const std::string& file_name() const;
  // The absolute path inside the file: "/" for the root, "/layers/dense" below it.
  const std::string& path() const { return path_; }

 protected:
  Hdf5Group(std::shared_ptr<const detail::Hdf5Image> file, std::uint64_t address, std::string path);
  std::string child_path(const std::string& name) const;

 private:
  std::shared_ptr<const detail::Hdf5Image> file_;
  std::uint64_t address_;  // of the group's object header
  std::string path_;
};

// An HDF5 file opened for reading; as a group it is the file's root group. The whole file is read into memory
// when opened (Keras weight files are tens of MB at most).
class Hdf5File : public Hdf5Group {
 public:
  // Throws std::runtime_error naming the path when it is missing, unreadable, not an HDF5 file, or when its
  // superblock or root group is damaged.
  static Hdf5File open(const std::string& path);
  // The same for bytes already in memory; `name` names them in errors.
  static Hdf5File from_bytes(std::string bytes, const std::string& name);

 private:
  using Hdf5Group::Hdf5Group;
};

}  // namespace tower::io
