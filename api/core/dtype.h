#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tower {

enum class DType { float32, int32, int64, uint8 };

inline std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::float32: return 4;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::uint8: return 1;
  }
  return 0;
}

std::string dtype_name(DType t);
// Accepts Keras' names ("float32", "int32", "int64", "uint8"); throws std::invalid_argument otherwise.
DType dtype_from_name(const std::string& name);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::uint8; }

}  // namespace tower
