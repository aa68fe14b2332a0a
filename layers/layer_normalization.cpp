#include "layers/layer_normalization.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"

namespace tower::layers {

LayerNormalizationImpl::LayerNormalizationImpl(Options options)
    : CustomLayer("LayerNormalization", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.axis.empty()) throw std::invalid_argument(where() + "axis names no axis");
  if (!(options_.epsilon >= 0))
    throw std::invalid_argument(where() + "epsilon must be non-negative, got " + std::to_string(options_.epsilon));
}

std::vector<int> LayerNormalizationImpl::axes_for(const Shape& shape) const {
  const int rank = shape.rank();
  std::vector<int> axes;
  for (int a : options_.axis) {
    const int k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank)
      shape_error("axis " + std::to_string(a) + " is out of range for input shape " + shape.to_string());
    if (k == 0) shape_error("axis " + std::to_string(a) + " is the batch axis of input shape " + shape.to_string());
    if (shape[k] <= 0)
      shape_error("axis " + std::to_string(a) + " of input shape " + shape.to_string() + " must have a known size");
    axes.push_back(k);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

std::vector<Shape> LayerNormalizationImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const std::vector<int> axes = axes_for(in[0]);
  if (gamma_ || beta_) {
    const Shape& built = (gamma_ ? gamma_ : beta_)->value.shape();
    std::vector<Index> dims;
    for (int k : axes) dims.push_back(in[0][k]);
    if (Shape(dims) != built)
      shape_error("was built for normalized axes of shape " + built.to_string() + ", got input shape " +
                  in[0].to_string());
  }
  return {in[0]};
}

void LayerNormalizationImpl::build(const std::vector<Shape>& in) {
  std::vector<Index> dims;
  for (int k : axes_for(in[0])) dims.push_back(in[0][k]);
  const Shape shape(dims);
  if (options_.scale || options_.rms_scaling)
    gamma_ = add_weight("gamma", shape, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center && !options_.rms_scaling)
    beta_ = add_weight("beta", shape, options_.beta_initializer, true, options_.beta_regularizer);
}

std::vector<Tensor> LayerNormalizationImpl::call(const std::vector<Tensor>& inputs, bool) {
  const Tensor& x = inputs[0];
  const std::vector<int> axes = axes_for(x.shape());
  // gamma and beta with size-1 axes where x's are not normalized, so they broadcast against x.
  std::vector<Index> dims(static_cast<std::size_t>(x.rank()), 1);
  for (int k : axes) dims[static_cast<std::size_t>(k)] = x.dim(k);
  const auto along_axes = [&](const VariablePtr& w) { return ops::reshape(w->value, Shape(dims)); };

  const Tensor inv = ops::rsqrt(ops::var(x, axes, true) + options_.epsilon);
  Tensor y = options_.rms_scaling ? x * inv : (x - ops::mean(x, axes, true)) * inv;
  if (gamma_) y = y * along_axes(gamma_);
  if (beta_) y = y + along_axes(beta_);
  return {y};
}

TOWER_REGISTER_LAYER(LayerNormalizationImpl, "LayerNormalization");

}  // namespace tower::layers
