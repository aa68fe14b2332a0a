#pragma once
// SimpleRNN (keras.layers.SimpleRNN): h_t = activation(x_t W + b + h_{t-1} U) over a sequence [N, T, F], with Keras'
// options, defaults and weights: kernel [F, units], recurrent_kernel [units, units], bias [units]. One state, h (the
// initial state, when given, is the second input). Its steps are composed of tower::ops. What the sequence options
// do: layers/recurrent.h.
#include <cstdint>
#include <optional>

#include "api/engine/layer_options.h"
#include "layers/recurrent.h"

namespace tower::layers {

struct SimpleRNNOptions {
  int units = 0;
  activations::Activation activation = "tanh";
  bool use_bias = true;
  initializers::Initializer kernel_initializer = "glorot_uniform";
  initializers::Initializer recurrent_initializer = "orthogonal";
  initializers::Initializer bias_initializer = "zeros";
  regularizers::Regularizer kernel_regularizer;
  regularizers::Regularizer recurrent_regularizer;
  regularizers::Regularizer bias_regularizer;
  double dropout = 0.0;
  double recurrent_dropout = 0.0;
  bool return_sequences = false;
  bool return_state = false;
  bool go_backwards = false;
  bool stateful = false;
  bool unroll = false;
  bool zero_output_for_mask = false;  // what masked steps output (layers/recurrent.h)
  std::optional<std::int64_t> seed;   // the dropout masks' seed
  std::string name;
  template <class V> void visit(V&& v) {
    v("units", units);
    v("activation", activation);
    v("use_bias", use_bias);
    v("kernel_initializer", kernel_initializer);
    v("recurrent_initializer", recurrent_initializer);
    v("bias_initializer", bias_initializer);
    v("kernel_regularizer", kernel_regularizer);
    v("recurrent_regularizer", recurrent_regularizer);
    v("bias_regularizer", bias_regularizer);
    v("dropout", dropout);
    v("recurrent_dropout", recurrent_dropout);
    v("return_sequences", return_sequences);
    v("return_state", return_state);
    v("go_backwards", go_backwards);
    v("stateful", stateful);
    v("unroll", unroll);
    v("zero_output_for_mask", zero_output_for_mask);
    v("seed", seed);
    v("name", name);
  }
};

class SimpleRNNImpl final : public RecurrentLayer {
 public:
  using Options = SimpleRNNOptions;
  // Throws std::invalid_argument for units <= 0 and what layers/recurrent.h refuses.
  explicit SimpleRNNImpl(Options options);
  const Options& options() const { return options_; }
  const VariablePtr& kernel() const { return kernel_; }
  const VariablePtr& recurrent_kernel() const { return recurrent_kernel_; }
  const VariablePtr& bias() const { return bias_; }

  void build(const std::vector<Shape>& input_shapes) override;
  Config get_config() const override { return options_to_config(options_); }

 private:
  Result run(const Tensor& x, const std::vector<Tensor>& states, bool need_sequence,
             const StepDropout& dropout, StepMasking& masking) override;

  Options options_;
  VariablePtr kernel_, recurrent_kernel_, bias_;
};

class SimpleRNN : public LayerHolder<SimpleRNNImpl> {
 public:
  using LayerHolder::LayerHolder;
};

}  // namespace tower::layers
