#pragma once
// Conversions the loaders share.
#include "api/core/tensor.h"

namespace tower::data::detail {

// uint8 values times `scale` as float32, with `shape` (same numel as x).
Tensor uint8_to_float(const Tensor& x, Shape shape, float scale);
// uint8 labels as int32, same shape.
Tensor uint8_to_int32(const Tensor& y);

}  // namespace tower::data::detail
