#include "layers/unit_normalization.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"

namespace tower::layers {

UnitNormalizationImpl::UnitNormalizationImpl(Options options)
    : CustomLayer("UnitNormalization", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.axis.empty()) throw std::invalid_argument(where() + "axis names no axis");
}

std::vector<int> UnitNormalizationImpl::axes_for(const Shape& shape) const {
  const int rank = shape.rank();
  std::vector<int> axes;
  for (int a : options_.axis) {
    const int k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank)
      shape_error("axis " + std::to_string(a) + " is out of range for input shape " + shape.to_string());
    if (k == 0) shape_error("axis " + std::to_string(a) + " is the batch axis of input shape " + shape.to_string());
    axes.push_back(k);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

std::vector<Shape> UnitNormalizationImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  axes_for(in[0]);
  return {in[0]};
}

std::vector<Tensor> UnitNormalizationImpl::call(const std::vector<Tensor>& inputs, bool) {
  const Tensor& x = inputs[0];
  const Tensor inv_norm = ops::rsqrt(ops::sum(ops::square(x), axes_for(x.shape()), true));
  return {x * ops::minimum(inv_norm, ops::scalar(1e12f, x.device()))};
}

TOWER_REGISTER_LAYER(UnitNormalizationImpl, "UnitNormalization");

}  // namespace tower::layers
