#include "api/data/detail/convert.h"

#include <cstdint>

namespace tower::data::detail {

Tensor uint8_to_float(const Tensor& x, Shape shape, float scale) {
  Tensor out = Tensor(x.shape(), DType::float32).reshape(std::move(shape));
  const std::uint8_t* src = x.data<std::uint8_t>();
  float* dst = out.data<float>();
  for (Index i = 0, n = x.numel(); i < n; ++i) dst[i] = static_cast<float>(src[i]) * scale;
  return out;
}

Tensor uint8_to_int32(const Tensor& y) {
  Tensor out(y.shape(), DType::int32);
  const std::uint8_t* src = y.data<std::uint8_t>();
  std::int32_t* dst = out.data<std::int32_t>();
  for (Index i = 0, n = y.numel(); i < n; ++i) dst[i] = src[i];
  return out;
}

}  // namespace tower::data::detail
