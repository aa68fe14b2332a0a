#include "api/core/dtype.h"

#include <stdexcept>

namespace tower {

std::string dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::uint8: return "uint8";
  }
  return "unknown";
}

DType dtype_from_name(const std::string& name) {
  if (name == "float32") return DType::float32;
  if (name == "int32") return DType::int32;
  if (name == "int64") return DType::int64;
  if (name == "uint8") return DType::uint8;
  throw std::invalid_argument("unknown dtype '" + name + "' (known: float32, int32, int64, uint8)");
}

}  // namespace tower
