#include "api/core/shape.h"

#include <stdexcept>

namespace tower {

int Shape::normalize_axis(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r)
    throw std::out_of_range("axis " + std::to_string(axis) + " is out of range for shape " + to_string());
  return a;
}

Index Shape::numel() const {
  Index n = 1;
  for (Index d : dims_)
    if (d < 0) throw std::logic_error("numel() of shape " + to_string() + " with an unknown dimension");
  for (Index d : dims_)
    if (d == 0) return 0;  // before any product: (2^32, 2^32, 0) is empty, not an overflow
  for (Index d : dims_)
    if (__builtin_mul_overflow(n, d, &n))
      throw std::overflow_error("shape " + to_string() + " has more elements than an Index can count");
  return n;
}

bool Shape::fully_known() const {
  for (Index d : dims_)
    if (d < 0) return false;
  return true;
}

Shape Shape::with_batch(Index batch) const {
  Shape s = *this;
  if (s.rank() == 0) throw std::logic_error("with_batch() on a scalar shape");
  s.dims_[0] = batch;
  return s;
}

Shape Shape::without_batch() const {
  if (dims_.empty()) return {};
  return Shape(std::vector<Index>(dims_.begin() + 1, dims_.end()));
}

std::string Shape::to_string() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += dims_[i] < 0 ? "None" : std::to_string(dims_[i]);
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

}  // namespace tower
