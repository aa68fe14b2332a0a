#pragma once
// Shape: the dimensions of a tensor, outermost first (row-major). A dimension of -1 means "unknown"
// (the batch dimension of a symbolic tensor, printed as None as Keras does).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tower {

using Index = std::int64_t;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<Index> dims) : dims_(dims) {}
  explicit Shape(std::vector<Index> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  // Negative axes count from the end. Throws std::out_of_range for an axis outside [-rank, rank).
  Index operator[](int axis) const { return dims_[normalize_axis(axis)]; }
  Index& operator[](int axis) { return dims_[normalize_axis(axis)]; }
  int normalize_axis(int axis) const;

  // Product of all dimensions; requires every dimension to be known; std::overflow_error past an Index.
  Index numel() const;
  bool fully_known() const;
  const std::vector<Index>& dims() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  // Returns a copy with dimension 0 replaced (used to bind a symbolic batch dimension).
  Shape with_batch(Index batch) const;
  // Dimensions after the first.
  Shape without_batch() const;

  bool operator==(const Shape& other) const = default;
  // "(None, 26, 26, 32)" like Keras' summary.
  std::string to_string() const;

 private:
  std::vector<Index> dims_;
};

}  // namespace tower
