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
  be.gemm(false, false, m, n, k, 1.f, x.data<float>(), k, kernel_->value.data<float>(), n, 0.f, z.data<float>(), n);
  if (bias_) be.add_bias(z.data<float>(), bias_->value.data<float>(), m, n);
  if (!act.is_linear()) act.forward(z, y);
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
    be.gemm(true, false, k, n, m, 1.f, x.data<float>(), k, dz.data<float>(), n, 0.f,
            ctx.weight_grads[0].data<float>(), n);
    if (bias_) be.bias_grad(dz.data<float>(), ctx.weight_grads[1].data<float>(), m, n);
  }
  if (ctx.grad_inputs[0].defined())
    be.gemm(false, true, m, k, n, 1.f, dz.data<float>(), n, kernel_->value.data<float>(), n, 0.f,
            ctx.grad_inputs[0].data<float>(), k);
}

TOWER_REGISTER_LAYER(DenseImpl, "Dense");

}  // namespace tower::layers
