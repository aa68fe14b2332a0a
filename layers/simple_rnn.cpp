#include "layers/simple_rnn.h"

#include <string>

#include "api/engine/activation_op.h"
#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"

namespace tower::layers {

SimpleRNNImpl::SimpleRNNImpl(Options options)
    : RecurrentLayer("SimpleRNN", options.name, 1, 1, recurrent_settings(options)),
      options_(std::move(options)) {
  options_.name = name();
}

void SimpleRNNImpl::build(const std::vector<Shape>& in) {
  const Index f = in[0][2], u = options_.units;
  kernel_ = add_weight("kernel", {f, u}, options_.kernel_initializer, true, options_.kernel_regularizer);
  recurrent_kernel_ =
      add_weight("recurrent_kernel", {u, u}, options_.recurrent_initializer, true, options_.recurrent_regularizer);
  if (options_.use_bias) bias_ = add_weight("bias", {u}, options_.bias_initializer, true, options_.bias_regularizer);
  set_built_features(f);
}

SimpleRNNImpl::Result SimpleRNNImpl::run(const Tensor& x, const std::vector<Tensor>& states, bool,
                                         const StepDropout& dropout, StepMasking& masking) {
  Tensor projected = ops::matmul(x, kernel_->value);  // [N, T, units]
  if (bias_) projected = projected + bias_->value;
  Tensor h = states[0];
  std::vector<Tensor> outputs;
  const std::vector<Tensor> steps = unstack_steps(projected);
  for (std::size_t t = 0; t < steps.size(); ++t) {
    std::vector<Tensor> next{apply_activation(options_.activation, steps[t] + gate_matmul(h, recurrent_kernel_->value, dropout.recurrent))};
    outputs.push_back(masking.apply(t, next, {h}));
    h = next[0];
  }
  return {stack_steps(outputs), {h}};
}

TOWER_REGISTER_LAYER(SimpleRNNImpl, "SimpleRNN");

}  // namespace tower::layers
