#pragma once
// Writes HDF5 files with Debian's libhdf5 (serial), in memory: groups, float32 datasets and UTF-8 string
// attributes, what a Keras weight file needs. image() gives the bytes for io::write_file_atomically, so a file
// on disk is never seen half written. The HDF5 headers stay out of this header. Reading is io::Hdf5File.
//
// Every failure throws std::runtime_error naming the file, the object's path inside it and HDF5's own message.
// HDF5 prints nothing to stderr.
#include <cstdint>
#include <memory>
#include <string>

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

class Hdf5WriteGroup {
 public:
  // Creates the group and any missing groups on its path (relative to this group: "layers/conv2d/vars").
  Hdf5WriteGroup create_group(const std::string& name);
  // A variable-length UTF-8 scalar string, as h5py writes a Python str; replaces an existing attribute.
  void set_string_attribute(const std::string& name, const std::string& value);
  // Writes a float32 tensor (on any device) as a new little-endian float32 dataset of the same shape.
  void write_dataset(const std::string& name, const Tensor& value);

  const std::string& file_name() const { return file_name_; }
  // The absolute path inside the file: "/" for the root, "/layers/dense" below it.
  const std::string& path() const { return path_; }

 protected:
  friend class Hdf5Writer;
  Hdf5WriteGroup(std::shared_ptr<detail::Hdf5Handle> handle, std::string file_name, std::string path);
  [[noreturn]] void fail(const std::string& what) const;
  std::string child_path(const std::string& name) const;
  const detail::Hdf5Handle& handle() const { return *handle_; }

 private:
  std::shared_ptr<detail::Hdf5Handle> handle_;
  std::string file_name_;
  std::string path_;
};

// An HDF5 file being built in memory; as a group it is the file's root group.
class Hdf5Writer : public Hdf5WriteGroup {
 public:
  // `name` only names the file in errors; nothing touches the disk.
  explicit Hdf5Writer(const std::string& name);
  // The bytes of the whole file as it stands (flushed first).
  std::string image() const;

 private:
  static Hdf5WriteGroup create(const std::string& name);
};

}  // namespace tower::io
