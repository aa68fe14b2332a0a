#include "layers/dense.h"

#include "api/backend/backend.h"
#include "api/engine/layer_registry.h"

namespace tower::layers {

namespace {
struct DenseState : LayerState {
  Tensor pre;  // pre-activation output, kept when the activation's gradient needs its input
  Tensor dz;   // gradient before the activation
};
}  // namespace

DenseImpl::DenseImpl(Options options) : Layer("Dense", options.name), options_(std::move(options)) {
  options_.name = name();
  if (options_.units <= 0)
    throw std::invalid_argument(where() + "units must be positive, got " + std::to_string(options_.units));
}

std::vector<Shape> DenseImpl::compute_output_shape(const std::vector<Shape>& in) const {
  check_num_inputs(in, 1);
  const Shape& s = in[0];
  if (s.rank() < 2) shape_error("expects input of rank >= 2, got shape " + s.to_string());
  if (s[-1] <= 0) shape_error("the last axis of the input must be known, got shape " + s.to_string());
  if (kernel_ && s[-1] != kernel_->value.dim(0))
    shape_error("expected axis -1 of the input to have value " + std::to_string(kernel_->value.dim(0)) +
                ", got input shape " + s.to_string());
  Shape out = s;
  out[-1] = options_.units;
  return {out};
}

void DenseImpl::build(const std::vector<Shape>& in) {
  const Index input_dim = in[0][-1];
  kernel_ = add_weight("kernel", {input_dim, options_.units}, options_.kernel_initializer, true,
                       options_.kernel_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", {options_.units}, options_.bias_initializer, true, options_.bias_regularizer);
}

void DenseImpl::forward(const ForwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  backend::Backend& be = backend::get(x.device());
  const Index k = kernel_->value.dim(0), n = options_.units, m = x.numel() / k;
  const activations::Activation& act = options_.activation;
  Tensor z = y;
  if (!act.is_linear() && !act.output_suffices()) {
    DenseState& st = ctx.get_state<DenseState>();
    if (!st.pre.defined() || st.pre.shape() != y.shape()) st.pre = Tensor(y.shape(), DType::float32, y.device());
    z = st.pre;
  }
  // The bias, and the activation where it may run in place (z is y), in the product's own pass.
  backend::DenseEpilogue epilogue;
  if (bias_) epilogue.bias = bias_->value.data<float>();
  const bool fused = !act.is_linear() && act.is_elementwise() && act.output_suffices();
  if (fused) {
    epilogue.activation = act.kind();
    epilogue.params = act.params();
  }
  be.dense_product(backend::DenseProduct::forward, m, k, n, x.data<float>(), kernel_->value.data<float>(),
                   z.data<float>(), epilogue);
  if (!act.is_linear() && !fused) act.forward(z, y);
}

void DenseImpl::backward(const BackwardContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& dy = ctx.grad_outputs[0];
  backend::Backend& be = backend::get(dy.device());
  const Index k = kernel_->value.dim(0), n = options_.units, m = dy.numel() / n;
  const activations::Activation& act = options_.activation;
  Tensor dz = dy;
  if (!act.is_linear() && !ctx.output_grad_is_logits) {
    DenseState& st = ctx.get_state<DenseState>();
    if (!st.dz.defined() || st.dz.shape() != dy.shape()) st.dz = Tensor(dy.shape(), DType::float32, dy.device());
    const Tensor& y = ctx.outputs[0];
    act.backward(act.output_suffices() ? y : st.pre, y, dy, st.dz);
    dz = st.dz;
  }
  if (!ctx.weight_grads.empty()) {
    be.dense_product(backend::DenseProduct::kernel_grad, m, k, n, x.data<float>(), dz.data<float>(),
                     ctx.weight_grads[0].data<float>(), {});
    if (bias_) be.bias_grad(dz.data<float>(), ctx.weight_grads[1].data<float>(), m, n);
  }
  if (ctx.grad_inputs[0].defined())
    be.dense_product(backend::DenseProduct::input_grad, m, k, n, dz.data<float>(), kernel_->value.data<float>(),
                     ctx.grad_inputs[0].data<float>(), {});
}

TOWER_REGISTER_LAYER(DenseImpl, "Dense");

}  // namespace tower::layers
