#include "layers/time_distributed.h"

#include "layers/view_utils.h"

namespace tower::layers {

namespace {

// [batch, time, rest...] -> [batch * time, rest...] (unknown when batch or time is).
Shape merge_time(const Shape& s) {
  std::vector<Index> dims = s.dims();
  const Index merged = dims[0] < 0 || dims[1] < 0 ? -1 : dims[0] * dims[1];
  dims.erase(dims.begin());
  dims[0] = merged;
  return Shape(dims);
}

// [batch * time, rest...] of the layer's output -> [batch, time, rest...].
Shape split_time(const Shape& inner, Index batch, Index time) {
  std::vector<Index> dims = inner.dims();
  dims[0] = time;
  dims.insert(dims.begin(), batch);
  return Shape(dims);
}

}  // namespace

TimeDistributedImpl::TimeDistributedImpl(Options options)
    : Layer("TimeDistributed", options.name), options_(std::move(options)) {
  options_.name = name();
  if (!options_.layer) throw std::invalid_argument(where() + "layer is required");
  if (options_.layer->graph())
    throw std::invalid_argument(where() + "wrapping a model ('" + options_.layer->name() + "') is not supported");
  if (options_.layer->num_inputs() != 1)
    throw std::invalid_argument(where() + "the wrapped layer '" + options_.layer->name() + "' must take one input");
  Layer::set_trainable(options_.layer->trainable());
}

std::vector<Shape> TimeDistributedImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() < 3) shape_error("expects an input of rank 3 or more (batch, time, ...), got shape " + s.to_string());
  const std::vector<Shape> out = options_.layer->compute_output_shape({merge_time(s)});
  if (out.size() != 1)
    shape_error("the wrapped layer '" + options_.layer->name() + "' must give one output, gives " +
                std::to_string(out.size()));
  if (out[0].rank() < 1) shape_error("the wrapped layer '" + options_.layer->name() + "' gives no batch axis");
  return {split_time(out[0], s[0], s[1])};
}

void TimeDistributedImpl::build(const std::vector<Shape>& in) { options_.layer->ensure_built({merge_time(in[0])}); }

void TimeDistributedImpl::forward(const ForwardContext& ctx) {
  detail::forward_on_views(ctx, merge_time(ctx.inputs[0].shape()), merge_time(ctx.outputs[0].shape()),
                           [&](const ForwardContext& v) { options_.layer->forward(v); });
}

void TimeDistributedImpl::backward(const BackwardContext& ctx) {
  // Neither the input nor its gradient is there when the layer needs no input and no input gradient is wanted.
  const Tensor& x = ctx.inputs[0].defined() ? ctx.inputs[0] : ctx.grad_inputs[0];
  detail::backward_on_views(ctx, x.defined() ? merge_time(x.shape()) : Shape{}, merge_time(ctx.grad_outputs[0].shape()),
                            [&](const BackwardContext& v) { options_.layer->backward(v); });
}

std::vector<VariablePtr> TimeDistributedImpl::trainable_weights() const {
  return trainable() ? options_.layer->trainable_weights() : std::vector<VariablePtr>{};
}

std::vector<VariablePtr> TimeDistributedImpl::non_trainable_weights() const {
  return trainable() ? options_.layer->non_trainable_weights() : options_.layer->weights();
}

void TimeDistributedImpl::set_trainable(bool trainable) {
  Layer::set_trainable(trainable);
  options_.layer->set_trainable(trainable);
}

std::vector<KerasWeightGroup> TimeDistributedImpl::keras_weight_groups() const {
  std::vector<KerasWeightGroup> groups{{"", name(), {}}};
  for (KerasWeightGroup& g : keras_weight_groups_below("layer", *options_.layer)) groups.push_back(std::move(g));
  return groups;
}

TOWER_REGISTER_LAYER(TimeDistributedImpl, "TimeDistributed");

}  // namespace tower::layers
