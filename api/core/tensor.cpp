#include "api/core/tensor.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "api/core/allocator.h"
#include "api/core/capture_check.h"
#include "api/core/device_memory.h"

namespace tower {

Storage::Storage(std::size_t bytes, Device device)
    : bytes_(bytes), device_(device), allocator_(&allocator_for(device)) {
  charge_allocation_limit(bytes);
  detail::report_to_capture_check("allocating " + std::to_string(bytes) + " bytes on " + device.to_string());
  ptr_ = allocator_->allocate(bytes);
}

Storage::~Storage() { allocator_->deallocate(ptr_, bytes_); }

Tensor::Tensor(Shape shape, DType dtype, Device device) : shape_(std::move(shape)), dtype_(dtype) {
  if (!shape_.fully_known())
    throw std::invalid_argument("cannot allocate a tensor of shape " + shape_.to_string() +
                                " with an unknown dimension");
  storage_ = std::make_shared<Storage>(nbytes(), device);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, std::size_t bytes_offset, Shape shape, DType dtype)
    : storage_(std::move(storage)), offset_(bytes_offset), shape_(std::move(shape)), dtype_(dtype) {
  if (offset_ + nbytes() > storage_->bytes())
    throw std::out_of_range("tensor view of shape " + shape_.to_string() + " at byte " +
                            std::to_string(offset_) + " does not fit its storage of " +
                            std::to_string(storage_->bytes()) + " bytes");
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device) {
  Tensor t(std::move(shape), dtype, device);
  t.zero();
  return t;
}

Tensor Tensor::full(Shape shape, float value, Device device) {
  Tensor t(std::move(shape), DType::float32, device);
  t.fill(value);
  return t;
}

template <class T>
static Tensor from_values(const std::vector<T>& values, Shape shape) {
  if (static_cast<Index>(values.size()) != shape.numel())
    throw std::invalid_argument("from_vector: " + std::to_string(values.size()) +
                                " values do not fill shape " + shape.to_string());
  Tensor t(std::move(shape), dtype_of<T>());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, Shape shape) {
  return from_values(values, std::move(shape));
}
Tensor Tensor::from_vector(const std::vector<std::int32_t>& values, Shape shape) {
  return from_values(values, std::move(shape));
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

void* Tensor::raw_data() const {
  if (!storage_) throw std::logic_error("access to the data of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_;
}

void Tensor::check_dtype(DType expected) const {
  if (dtype_ != expected)
    throw std::logic_error("tensor of dtype " + dtype_name(dtype_) + " accessed as " + dtype_name(expected));
}

Tensor Tensor::reshape(Shape shape) const {
  std::vector<Index> dims = shape.dims();
  Index known = 1;
  int unknown = -1;
  for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0) throw std::invalid_argument("reshape: more than one -1 in " + shape.to_string());
      unknown = i;
    } else {
      known *= dims[i];
    }
  }
  if (unknown >= 0 && known > 0) dims[unknown] = numel() / known;
  Shape target{std::vector<Index>(dims)};
  if (target.numel() != numel())
    throw std::invalid_argument("cannot reshape a tensor of shape " + shape_.to_string() + " to " +
                                shape.to_string());
  Tensor t = *this;
  t.shape_ = target;
  return t;
}

Tensor Tensor::slice(Index begin, Index end) const {
  if (rank() == 0 || begin < 0 || end < begin || end > shape_[0])
    throw std::out_of_range("slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                            ") of a tensor of shape " + shape_.to_string());
  Tensor t = *this;
  const Index row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  t.shape_[0] = end - begin;
  t.offset_ = offset_ + static_cast<std::size_t>(begin * row) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(shape_, dtype_, device());
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.numel() != numel() || src.dtype() != dtype_)
    throw std::invalid_argument("copy_from: source " + src.shape().to_string() + " " + dtype_name(src.dtype()) +
                                " does not match destination " + shape_.to_string() + " " + dtype_name(dtype_));
  copy_bytes(raw_data(), device(), src.raw_data(), src.device(), nbytes());
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  Tensor t(shape_, dtype_, target);
  t.copy_from(*this);
  return t;
}

void Tensor::fill(float value) {
  if (dtype_ != DType::float32) throw std::logic_error("fill() on a " + dtype_name(dtype_) + " tensor");
  fill_floats(data<float>(), device(), static_cast<std::size_t>(numel()), value);
}

void Tensor::zero() { fill_bytes(raw_data(), device(), nbytes(), 0); }

std::vector<float> Tensor::to_vector() const {
  // A GPU tensor's read is reported by its copy to the host.
  if (device().is_cpu()) detail::report_to_capture_check("reading " + std::to_string(nbytes()) + " bytes on the host");
  const Tensor host = to(Device::cpu());
  const float* p = host.data<float>();
  return std::vector<float>(p, p + numel());
}

float Tensor::item() const {
  if (numel() != 1) throw std::logic_error("item() of a tensor with " + std::to_string(numel()) + " elements");
  return to_vector()[0];
}

std::string Tensor::to_string(int max_elements) const {
  std::ostringstream os;
  os << "Tensor" << shape_.to_string() << " " << dtype_name(dtype_) << " on " << device().to_string();
  if (defined() && dtype_ == DType::float32) {
    const std::vector<float> v = to_vector();
    os << " [";
    for (int i = 0; i < std::min<Index>(max_elements, numel()); ++i) os << (i ? ", " : "") << v[i];
    if (numel() > max_elements) os << ", ...";
    os << "]";
  }
  return os.str();
}

}  // namespace tower
