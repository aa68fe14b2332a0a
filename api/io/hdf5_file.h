#pragma once
// A small RAII wrapper over the HDF5 C API (Debian's serial libhdf5), with what Keras weight files need:
// groups, numeric datasets read as float32, float32 datasets written, and string attributes. The HDF5 headers
// stay out of this header. Handles close themselves; a file stays open while any group of it is alive.
//
// Every failure throws std::runtime_error naming the file, the object's path inside it and HDF5's own
// message, e.g. "HDF5 file 'm.h5': no group '/layers/dense'". HDF5 prints nothing to stderr.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/core/tensor.h"

namespace tower::io {

namespace detail {
// Owns one HDF5 identifier (hid_t) and closes it with the function its type needs.
class Hdf5Handle {
 public:
  explicit Hdf5Handle(std::int64_t id) : id_(id) {}
  ~Hdf5Handle();
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  std::int64_t id() const { return id_; }

 private:
  std::int64_t id_;
};
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
  // Creates the group and any missing groups on its path.
  Hdf5Group create_group(const std::string& name);

  bool has_attribute(const std::string& name) const;
  // A string attribute holding one string (a scalar or a one-element array), fixed or variable length.
  std::string string_attribute(const std::string& name) const;
  // A string attribute holding a list: a 1-d array (or a scalar) of fixed- or variable-length strings, as h5py
  // writes numpy arrays of bytes or str. An empty array of any type (h5py writes an empty list as float64)
  // reads as an empty list. Throws for other types.
  std::vector<std::string> string_list_attribute(const std::string& name) const;
  // A variable-length UTF-8 scalar string, as h5py writes a Python str; replaces an existing attribute.
  void set_string_attribute(const std::string& name, const std::string& value);

  Shape dataset_shape(const std::string& name) const;
  // Any integer or floating-point dataset, converted to float32 on the host. Throws for other types.
  Tensor read_dataset(const std::string& name) const;
  // Writes a float32 tensor (on any device) as a new little-endian float32 dataset of the same shape.
  void write_dataset(const std::string& name, const Tensor& value);

  const std::string& file_name() const { return file_name_; }
  // The absolute path inside the file: "/" for the root, "/layers/dense" below it.
  const std::string& path() const { return path_; }

 protected:
  Hdf5Group(std::shared_ptr<detail::Hdf5Handle> handle, std::string file_name, std::string path);
  // "HDF5 file '<file>': <what>" with HDF5's innermost error message appended when there is one.
  [[noreturn]] void fail(const std::string& what) const;
  std::string child_path(const std::string& name) const;
  const detail::Hdf5Handle& handle() const { return *handle_; }

 private:
  std::shared_ptr<detail::Hdf5Handle> handle_;
  std::string file_name_;
  std::string path_;
};

// An HDF5 file; as a group it is the file's root group.
class Hdf5File : public Hdf5Group {
 public:
  // Opens an existing file read-only. Throws std::runtime_error naming the path when it is missing,
  // unreadable, or not an HDF5 file.
  static Hdf5File open(const std::string& path);
  // Creates an empty file in memory; `name` only names it in errors. image() returns its bytes, for
  // io::write_file_atomically, so a file on disk is never seen half written.
  static Hdf5File create_in_memory(const std::string& name);
  // The bytes of the whole file as it stands (flushed first).
  std::string image() const;

 private:
  using Hdf5Group::Hdf5Group;
};

}  // namespace tower::io
