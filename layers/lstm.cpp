#include "layers/lstm.h"

#include <string>

#include "api/engine/activation_op.h"
#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"
#include "api/ops/recurrent.h"

namespace tower::layers {

namespace {

// Keras' unit_forget_bias: the forget gate's quarter of the bias [4 * units] starts at 1.
void set_forget_bias(Tensor& bias, Index units) {
  std::vector<float> b = bias.to_vector();
  for (Index j = units; j < 2 * units; ++j) b[static_cast<std::size_t>(j)] = 1.f;
  bias.copy_from(Tensor::from_vector(b, bias.shape()));
}

}  // namespace

LSTMImpl::LSTMImpl(Options options)
    : RecurrentLayer("LSTM", options.name, 2, 4, recurrent_settings(options)), options_(std::move(options)) {
  options_.name = name();
}

bool LSTMImpl::uses_fused_op() const {
  return options_.fused && options_.activation.name() == "tanh" && options_.recurrent_activation.name() == "sigmoid";
}

void LSTMImpl::build(const std::vector<Shape>& in) {
  const Index f = in[0][2], u = options_.units;
  kernel_ = add_weight("kernel", {f, 4 * u}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ = add_weight("recurrent_kernel", {u, 4 * u}, options_.recurrent_initializer, true,
                                 options_.recurrent_regularizer);
  if (options_.use_bias) {
    bias_ = add_weight("bias", {4 * u}, options_.bias_initializer, true, options_.bias_regularizer);
    if (options_.unit_forget_bias) set_forget_bias(bias_->value, u);
  }
  set_built_features(f);
}

LSTMImpl::Result LSTMImpl::run(const Tensor& x, const std::vector<Tensor>& states, bool need_sequence,
                               const StepDropout& dropout, StepMasking& masking) {
  if (!uses_fused_op() || masking.active() || dropout.active()) return run_composed(x, states, dropout, masking);
  const Index n = x.dim(0), t = x.dim(1), u = options_.units;
  const Tensor all = ops::lstm(x, kernel_->value, recurrent_kernel_->value, bias_ ? bias_->value : Tensor(),
                               states[0], states[1]);  // [N, T, 2, u]
  Result r;
  if (need_sequence) r.sequence = ops::reshape(ops::slice(all, {0, 0, 0, 0}, {n, t, 1, u}), Shape{n, t, u});
  const Tensor last = ops::reshape(ops::slice(all, {0, t - 1, 0, 0}, {n, 1, 2, u}), Shape{n, 2, u});
  r.states = {ops::reshape(ops::slice(last, {0, 0, 0}, {n, 1, u}), Shape{n, u}),
              ops::reshape(ops::slice(last, {0, 1, 0}, {n, 1, u}), Shape{n, u})};
  return r;
}

LSTMImpl::Result LSTMImpl::run_composed(const Tensor& x, const std::vector<Tensor>& states,
                                        const StepDropout& dropout, StepMasking& masking) const {
  Tensor projected = gate_matmul(x, kernel_->value, dropout.input);  // [N, T, 4u]
  if (bias_) projected = projected + bias_->value;
  Tensor h = states[0], c = states[1];
  std::vector<Tensor> outputs;
  const std::vector<Tensor> steps = unstack_steps(projected);
  for (std::size_t t = 0; t < steps.size(); ++t) {
    const std::vector<Tensor> z = ops::split(steps[t] + gate_matmul(h, recurrent_kernel_->value, dropout.recurrent), 4, 1);
    const Tensor i = apply_activation(options_.recurrent_activation, z[0]);
    const Tensor f = apply_activation(options_.recurrent_activation, z[1]);
    const Tensor g = apply_activation(options_.activation, z[2]);
    const Tensor o = apply_activation(options_.recurrent_activation, z[3]);
    const Tensor c_next = f * c + i * g;
    std::vector<Tensor> next{o * apply_activation(options_.activation, c_next), c_next};
    outputs.push_back(masking.apply(t, next, {h, c}));
    h = next[0];
    c = next[1];
  }
  return {stack_steps(outputs), {h, c}};
}

TOWER_REGISTER_LAYER(LSTMImpl, "LSTM");

}  // namespace tower::layers
