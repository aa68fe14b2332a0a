#include "layers/group_normalization.h"

#include <stdexcept>
#include <string>

#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"

namespace tower::layers {

GroupNormalizationImpl::GroupNormalizationImpl(Options options)
    : CustomLayer("GroupNormalization", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.groups == 0 || options_.groups < -1)
    throw std::invalid_argument(where() + "groups must be positive or -1 (one group per channel), got " +
                                std::to_string(options_.groups));
  if (!(options_.epsilon >= 0))
    throw std::invalid_argument(where() + "epsilon must be non-negative, got " + std::to_string(options_.epsilon));
}

int GroupNormalizationImpl::axis_for(const Shape& shape) const {
  const int rank = shape.rank();
  if (rank < 2) shape_error("expects an input of rank 2 or more, got shape " + shape.to_string());
  const int a = options_.axis < 0 ? options_.axis + rank : options_.axis;
  if (a < 0 || a >= rank)
    shape_error("axis " + std::to_string(options_.axis) + " is out of range for input shape " + shape.to_string());
  if (a == 0)
    shape_error("axis " + std::to_string(options_.axis) + " is the batch axis of input shape " + shape.to_string());
  const Index channels = shape[a];
  if (channels <= 0)
    shape_error("axis " + std::to_string(options_.axis) + " of input shape " + shape.to_string() +
                " must have a known size");
  const Index groups = groups_for(channels);
  if (channels < groups)
    shape_error("the number of groups (" + std::to_string(groups) + ") cannot be more than the number of channels (" +
                std::to_string(channels) + ") of input shape " + shape.to_string());
  if (channels % groups != 0)
    shape_error("the number of channels (" + std::to_string(channels) + ") of input shape " + shape.to_string() +
                " must be divisible by groups (" + std::to_string(groups) + ")");
  return a;
}

std::vector<Shape> GroupNormalizationImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const int a = axis_for(in[0]);
  const VariablePtr& built = gamma_ ? gamma_ : beta_;
  if (built && built->value.dim(0) != in[0][a])
    shape_error("was built for " + std::to_string(built->value.dim(0)) + " channels, got input shape " +
                in[0].to_string());
  return {in[0]};
}

void GroupNormalizationImpl::build(const std::vector<Shape>& in) {
  const Shape shape{in[0][axis_for(in[0])]};
  if (options_.scale) gamma_ = add_weight("gamma", shape, options_.gamma_initializer, true, options_.gamma_regularizer);
  if (options_.center) beta_ = add_weight("beta", shape, options_.beta_initializer, true, options_.beta_regularizer);
}

// As Keras: x viewed as [..., groups, channels / groups, ...] at the axis, moments over every axis but the batch
// and the group axis.
std::vector<Tensor> GroupNormalizationImpl::call(const std::vector<Tensor>& inputs, bool) {
  const Tensor& x = inputs[0];
  const int a = axis_for(x.shape());
  const Index channels = x.dim(a), groups = groups_for(channels);
  std::vector<Index> grouped = x.shape().dims();
  grouped[static_cast<std::size_t>(a)] = channels / groups;
  grouped.insert(grouped.begin() + a, groups);
  std::vector<Index> per_channel(grouped.size(), 1);
  per_channel[static_cast<std::size_t>(a)] = groups;
  per_channel[static_cast<std::size_t>(a) + 1] = channels / groups;
  std::vector<int> axes;
  for (int k = 1; k < static_cast<int>(grouped.size()); ++k)
    if (k != a) axes.push_back(k);

  const Tensor xg = ops::reshape(x, Shape(grouped));
  Tensor inv = ops::rsqrt(ops::var(xg, axes, true) + options_.epsilon);
  if (gamma_) inv = inv * ops::reshape(gamma_->value, Shape(per_channel));
  Tensor shift = -ops::mean(xg, axes, true) * inv;
  if (beta_) shift = shift + ops::reshape(beta_->value, Shape(per_channel));
  return {ops::reshape(xg * inv + shift, x.shape())};
}

TOWER_REGISTER_LAYER(GroupNormalizationImpl, "GroupNormalization");

}  // namespace tower::layers
