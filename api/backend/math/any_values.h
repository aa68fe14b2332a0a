#pragma once
// AnyValues (backend.h) read one element at a time, as both backends read them: as a double (labels, weights,
// predictions compared for equality) or as an index (take's indices); and the first-index reduction behind
// find_invalid_class and find_invalid_index.
#include <cstdint>

#include "api/backend/backend.h"
#include "api/backend/math/hd.h"

namespace tower::backend::math {

TOWER_HD double value_at(AnyValues v, Index i) {
  switch (v.dtype) {
    case DType::float32: return static_cast<const float*>(v.data)[i];
    case DType::int32: return static_cast<const std::int32_t*>(v.data)[i];
    case DType::int64: return static_cast<double>(static_cast<const std::int64_t*>(v.data)[i]);
    case DType::uint8: return static_cast<const std::uint8_t*>(v.data)[i];
  }
  return 0;
}

// An index no axis holds: what index_at gives for NaN and for floats too large for an int64.
inline constexpr std::int64_t kNotAnIndex = -(std::int64_t{1} << 62);

// v[i] as an index: an integer as it is, a float truncated toward zero (NaN and floats beyond +-2^62:
// kNotAnIndex).
TOWER_HD std::int64_t index_at(AnyValues v, Index i) {
  switch (v.dtype) {
    case DType::float32: {
      const float f = static_cast<const float*>(v.data)[i];
      return f > -4.6e18f && f < 4.6e18f ? static_cast<std::int64_t>(f) : kNotAnIndex;  // NaN fails both
    }
    case DType::int32: return static_cast<const std::int32_t*>(v.data)[i];
    case DType::int64: return static_cast<const std::int64_t*>(v.data)[i];
    case DType::uint8: return static_cast<const std::uint8_t*>(v.data)[i];
  }
  return kNotAnIndex;
}

struct IndexMin {
  TOWER_HD std::int64_t operator()(std::int64_t a, std::int64_t b) const { return b < a ? b : a; }
};

struct StoreIndex {
  std::int64_t* out;
  TOWER_HD void operator()(std::int64_t v) const { *out = v; }
};

}  // namespace tower::backend::math
