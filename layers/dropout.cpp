#include "layers/dropout.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"
#include "api/engine/replica_context.h"
#include "api/engine/step_values.h"

namespace tower::layers {

namespace {
struct DropoutState : LayerState {
  Tensor mask;          // 0 or 1 / (1 - rate) per element, from the last training forward
  bool masked = false;  // false when the last forward was the identity
  int seed_slot = -1;   // the node's seed among the plan's step values, once registered
};
}  // namespace

DropoutImpl::DropoutImpl(Options options) : Layer("Dropout", options.name), options_(std::move(options)) {
  options_.name = name();
  if (!(options_.rate >= 0.f && options_.rate < 1.f))
    throw std::invalid_argument(where() + "rate must be in [0, 1), got " + std::to_string(options_.rate));
}

std::vector<Shape> DropoutImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  return {in[0]};
}


void DropoutImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  DropoutState& st = ctx.get_state<DropoutState>();
  st.masked = ctx.training && options_.rate > 0.f;
  if (!st.masked) {
    y.copy_from(x);
    return;
  }
  if (!st.mask.defined() || st.mask.shape() != x.shape()) st.mask = Tensor(x.shape(), DType::float32, x.device());
  if (!ctx.step_values) throw std::logic_error(where() + "training forward outside a plan (no step values)");
  // The seed is a step value: drawn by the plan before each step, read by the op from device memory.
  if (st.seed_slot < 0)
    st.seed_slot = ctx.step_values->add_seed(options_.seed, ctx.replica, {static_cast<std::uint64_t>(x.numel())});
  backend::Backend& be = backend::get(x.device());
  be.dropout_mask(st.mask.data<float>(), x.numel(), options_.rate, ctx.step_values->device_value(st.seed_slot));
  be.mul(x.data<float>(), st.mask.data<float>(), y.data<float>(), x.numel());
}

void DropoutImpl::backward(const BackwardContext& ctx) {
  Tensor& dx = ctx.grad_inputs[0];
  if (!dx.defined()) return;
  const Tensor& dy = ctx.grad_outputs[0];
  const DropoutState& st = ctx.get_state<DropoutState>();
  if (!st.masked) {
    dx.copy_from(dy);
    return;
  }
  backend::get(dy.device()).mul(dy.data<float>(), st.mask.data<float>(), dx.data<float>(), dy.numel());
}

TOWER_REGISTER_LAYER(DropoutImpl, "Dropout");

}  // namespace tower::layers
