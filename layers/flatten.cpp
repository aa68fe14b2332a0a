#include "layers/flatten.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

namespace {
struct FlattenState : LayerState {
  Shape input;                          // the input shape the permutations below are for
  std::vector<int> to_last, from_last;  // channels_first: (0, 2, ..., k, 1) and its inverse
  Shape moved;                          // the input's shape in channels-last order
};

// Prepares the permutations for an input of this shape (only when it changes, so steady state allocates nothing).
const FlattenState& prepare(FlattenState& st, const Shape& x) {
  if (st.input == x) return st;
  const auto r = static_cast<std::size_t>(x.rank());
  st.input = x;
  st.to_last.assign(r, 0);
  st.from_last.assign(r, 0);
  std::vector<Index> dims(r);
  for (std::size_t i = 0; i < r; ++i) {
    if (i > 0) st.to_last[i] = i + 1 < r ? static_cast<int>(i) + 1 : 1;
    st.from_last[static_cast<std::size_t>(st.to_last[i])] = static_cast<int>(i);
    dims[i] = x[st.to_last[i]];
  }
  st.moved = Shape(dims);
  return st;
}
}  // namespace

FlattenImpl::FlattenImpl(Options options) : Layer("Flatten", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.data_format != "channels_last" && options_.data_format != "channels_first")
    throw std::invalid_argument(where() + "data_format must be 'channels_last' or 'channels_first', got '" +
                                options_.data_format + "'");
}

std::vector<Shape> FlattenImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() < 1) shape_error("expects an input with a batch axis, got shape " + s.to_string());
  Index features = 1;
  for (int i = 1; i < s.rank(); ++i) features = (features < 0 || s[i] < 0) ? -1 : features * s[i];
  return {Shape{s[0], features}};
}

void FlattenImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (!moves_channels(x.rank())) {
    y.copy_from(x);
    return;
  }
  const FlattenState& st = prepare(ctx.get_state<FlattenState>(), x.shape());
  backend::get(x.device()).transpose(x.data<float>(), y.data<float>(), x.shape(), st.to_last);
}

void FlattenImpl::backward(const BackwardContext& ctx) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  if (!moves_channels(dx.rank())) {
    dx.copy_from(dy);
    return;
  }
  const FlattenState& st = prepare(ctx.get_state<FlattenState>(), dx.shape());
  backend::get(dy.device()).transpose(dy.data<float>(), dx.data<float>(), st.moved, st.from_last);
}

TOWER_REGISTER_LAYER(FlattenImpl, "Flatten");

}  // namespace tower::layers
