#include "layers/gru.h"

#include <string>

#include "api/engine/activation_op.h"
#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"
#include "api/ops/recurrent.h"

namespace tower::layers {

GRUImpl::GRUImpl(Options options)
    : RecurrentLayer("GRU", options.name, 1, 3, recurrent_settings(options)), options_(std::move(options)) {
  options_.name = name();
}

bool GRUImpl::uses_fused_op() const {
  return options_.fused && options_.reset_after && options_.activation.name() == "tanh" &&
         options_.recurrent_activation.name() == "sigmoid";
}

void GRUImpl::build(const std::vector<Shape>& in) {
  const Index f = in[0][2], u = options_.units;
  kernel_ = add_weight("kernel", {f, 3 * u}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {u, 3 * u}, options_.recurrent_initializer, true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias)
    bias_ = add_weight("bias", options_.reset_after ? Shape{2, 3 * u} : Shape{3 * u}, options_.bias_initializer, true,
                       options_.bias_regularizer);
  set_built_features(f);
}

GRUImpl::Result GRUImpl::run(const Tensor& x, const std::vector<Tensor>& states, bool, const StepDropout& dropout,
                             StepMasking& masking) {
  if (!uses_fused_op() || masking.active() || dropout.active()) return run_composed(x, states, dropout, masking);
  const Index n = x.dim(0), t = x.dim(1), u = options_.units;
  Result r;
  r.sequence = ops::gru(x, kernel_->value, recurrent_kernel_->value, bias_ ? bias_->value : Tensor(), states[0]);
  r.states = {ops::reshape(ops::slice(r.sequence, {0, t - 1, 0}, {n, 1, u}), Shape{n, u})};
  return r;
}

GRUImpl::Result GRUImpl::run_composed(const Tensor& x, const std::vector<Tensor>& states,
                                      const StepDropout& dropout, StepMasking& masking) const {
  const Index u = options_.units;
  const Tensor& kernel_u = recurrent_kernel_->value;
  Tensor projected = gate_matmul(x, kernel_->value, dropout.input);  // [N, T, 3u]
  Tensor recurrent_bias;
  if (bias_ && options_.reset_after) {
    const std::vector<Tensor> b = ops::split(bias_->value, 2, 0);
    projected = projected + ops::reshape(b[0], Shape{3 * u});
    recurrent_bias = ops::reshape(b[1], Shape{3 * u});
  } else if (bias_) {
    projected = projected + bias_->value;
  }
  // reset_after = false multiplies h by the reset gate before U_h: U splits into its z, r columns and its h columns.
  Tensor u_zr, u_h;
  std::vector<Tensor> zr_masks;  // recurrent dropout's masks of the z and r gates; the h gate's is the third
  if (!options_.reset_after) {
    u_zr = ops::slice(kernel_u, {0, 0}, {u, 2 * u});
    u_h = ops::slice(kernel_u, {0, 2 * u}, {u, u});
    if (!dropout.recurrent.empty()) zr_masks = {dropout.recurrent[0], dropout.recurrent[1]};
  }
  Tensor h = states[0];
  std::vector<Tensor> outputs;
  const std::vector<Tensor> steps = unstack_steps(projected);
  for (std::size_t t = 0; t < steps.size(); ++t) {
    const std::vector<Tensor> xs = ops::split(steps[t], 3, 1);
    Tensor z, r, candidate;
    if (options_.reset_after) {
      Tensor rec = gate_matmul(h, kernel_u, dropout.recurrent);
      if (recurrent_bias.defined()) rec = rec + recurrent_bias;
      const std::vector<Tensor> rs = ops::split(rec, 3, 1);
      z = apply_activation(options_.recurrent_activation, xs[0] + rs[0]);
      r = apply_activation(options_.recurrent_activation, xs[1] + rs[1]);
      candidate = apply_activation(options_.activation, xs[2] + r * rs[2]);
    } else {
      const std::vector<Tensor> rs = ops::split(gate_matmul(h, u_zr, zr_masks), 2, 1);
      z = apply_activation(options_.recurrent_activation, xs[0] + rs[0]);
      r = apply_activation(options_.recurrent_activation, xs[1] + rs[1]);
      const Tensor h_h = dropout.recurrent.empty() ? h : h * dropout.recurrent[2];
      candidate = apply_activation(options_.activation, xs[2] + ops::matmul(r * h_h, u_h));
    }
    std::vector<Tensor> next{z * h + (1.f - z) * candidate};
    outputs.push_back(masking.apply(t, next, {h}));
    h = next[0];
  }
  return {stack_steps(outputs), {h}};
}

TOWER_REGISTER_LAYER(GRUImpl, "GRU");

}  // namespace tower::layers
