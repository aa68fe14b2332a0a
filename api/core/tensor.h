#pragma once
// Tensor: an N-d array on one device, row-major, with shared storage. Copying a Tensor copies the handle
// (both refer to the same memory); clone() copies the data. Images are channels-last (NHWC).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/core/device.h"
#include "api/core/dtype.h"
#include "api/core/shape.h"

namespace tower {

class Allocator;

// A block of device memory. Owned blocks go back to their allocator when the last tensor using them dies.
class Storage {
 public:
  Storage(std::size_t bytes, Device device);  // allocates from allocator_for(device)
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  // Uninitialised memory of the given shape. Requires a fully known shape.
  explicit Tensor(Shape shape, DType dtype = DType::float32, Device device = Device::cpu());
  // A view of `bytes_offset` bytes into existing storage (used by the plan's arena).
  Tensor(std::shared_ptr<Storage> storage, std::size_t bytes_offset, Shape shape, DType dtype);

  static Tensor zeros(Shape shape, DType dtype = DType::float32, Device device = Device::cpu());
  static Tensor full(Shape shape, float value, Device device = Device::cpu());
  // Requires values.size() == shape.numel(); throws std::invalid_argument otherwise.
  static Tensor from_vector(const std::vector<float>& values, Shape shape);
  static Tensor from_vector(const std::vector<std::int32_t>& values, Shape shape);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  Index dim(int axis) const { return shape_[axis]; }
  Index numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  Device device() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

  // Typed pointer to the first element; throws std::logic_error if T does not match dtype().
  template <class T> T* data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }
  void* raw_data() const;

  // A tensor sharing this one's memory with another shape of the same numel (-1 allowed once).
  Tensor reshape(Shape shape) const;
  // Rows [begin, end) along axis 0, sharing memory.
  Tensor slice(Index begin, Index end) const;
  Tensor clone() const;
  // Copies `src` into this tensor; shapes' numel and dtypes must match (devices may differ).
  void copy_from(const Tensor& src);
  Tensor to(Device device) const;
  void fill(float value);
  void zero();

  std::vector<float> to_vector() const;  // float32 only, copied to the host
  float item() const;                    // the value of a one-element float32 tensor
  std::string to_string(int max_elements = 8) const;

  // True when both refer to the same memory.
  bool same_storage(const Tensor& other) const { return storage_ == other.storage_; }

 private:
  void check_dtype(DType expected) const;

  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;
  Shape shape_;
  DType dtype_ = DType::float32;
};

}  // namespace tower
